"""Creation functions (tinygrad_ops/creation.py): clear errors where PyTorch raises."""

import math

import numpy as np
import pytest
import torch

import tinygrad_ops as tg


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((0, 1, 0), "step must be nonzero"),
        ((0.0, 1.0, 0.0), "step must be nonzero"),
        ((0, 1, -1), "inconsistent with step sign"),
        ((1, 0, 1), "inconsistent with step sign"),
        ((0.0, math.inf, 1.0), "stop must be finite"),
        ((0.0, math.nan, 1.0), "stop must be finite"),
    ],
)
def test_arange_refuses_what_torch_refuses(arguments, message):
    # The class torch raises (RuntimeError), still a ValueError for older code.
    with pytest.raises(RuntimeError, match=f"arange: .*{message}"):
        tg.arange(*arguments)
    with pytest.raises(ValueError):
        tg.arange(*arguments)
    with pytest.raises(RuntimeError):
        torch.arange(*arguments)


@pytest.mark.parametrize(("arguments"), [(3,), (0, 0), (2, 7, 2), (1.0, 0.0, -0.25), (5, 1, -2)])
def test_arange_matches_torch(arguments):
    np.testing.assert_allclose(tg.arange(*arguments).numpy(), torch.arange(*arguments).numpy())


def test_creation_wraps_its_own_arrays():
    tensor = tg.zeros(2, 3, requires_grad=True)
    assert tensor.requires_grad
    assert tensor.numpy().flags.owndata
    with pytest.raises(TypeError, match="floating-point"):
        tg.arange(3).requires_grad = True


def test_creation_functions():
    assert tg.zeros(2, 3).shape == (2, 3)
    assert tg.zeros(2, 3).dtype == np.float32
    assert tg.ones((2,), dtype=np.float64).dtype == np.float64
    np.testing.assert_array_equal(tg.randn(3, seed=1).numpy(), tg.randn(3, seed=1).numpy())
    assert not np.array_equal(tg.randn(3, seed=1).numpy(), tg.randn(3, seed=2).numpy())
    assert tg.randn(2, requires_grad=True).requires_grad
    np.testing.assert_array_equal(tg.arange(1, 7, 2).numpy(), [1, 3, 5])
    assert tg.arange(0.0, 1.0, 0.5).dtype == np.float32


@pytest.mark.parametrize(
    ("action", "error", "message"),
    [
        (lambda: tg.eye(-1), RuntimeError, "eye: n must be greater or equal to 0, got -1"),
        (lambda: tg.eye(2, -3), RuntimeError, "eye: m must be greater or equal to 0, got -3"),
        (lambda: tg.eye(2.5), TypeError, "eye: n must be an int"),
        (lambda: tg.randn(-2), ValueError, r"randn: negative size -2 in shape \(-2,\)"),
        (lambda: tg.rand(2, -1), ValueError, r"rand: negative size -1 in shape \(2, -1\)"),
        (lambda: tg.zeros(2.0), TypeError, "zeros: sizes must be ints"),
        (lambda: tg.ones((2, -1)), ValueError, "ones: negative size -1"),
        (lambda: tg.full((-1,), 1.0), ValueError, "full: negative size -1"),
        (lambda: tg.full((2,), "a"), TypeError, "full: fill_value must be a number, got str"),
        (lambda: tg.randn(2, seed=0, generator=np.random.default_rng()), TypeError, "not both"),
    ],
)
def test_bad_shapes_and_values_are_errors_naming_the_function(action, error, message):
    with pytest.raises(error, match=message):
        action()


@pytest.mark.parametrize(("value", "dtype"), [(7, torch.int64), (7.0, None), (True, torch.bool)])
def test_full_infers_its_dtype_from_the_value_as_torch(value, dtype):
    ours, theirs = tg.full((2,), value), torch.full((2,), value, dtype=dtype)
    expected = np.float32 if dtype is None else theirs.numpy().dtype
    assert ours.dtype == expected
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_eye_with_two_sizes_matches_torch():
    np.testing.assert_array_equal(tg.eye(2, 3).numpy(), torch.eye(2, 3).numpy())


@pytest.mark.parametrize(
    "draw",
    [
        lambda: tg.randn(3).numpy(),
        lambda: tg.rand(2, 2).numpy(),
        lambda: tg.functional.dropout(tg.ones(8)).numpy(),
        lambda: tg.nn.Linear(2, 2).weight.numpy(),
    ],
    ids=["randn", "rand", "dropout", "Linear"],
)
def test_manual_seed_makes_every_draw_repeat_as_torch(draw):
    """`torch.manual_seed(0); torch.randn(3)` repeats: so must ours (randn, rand and
    F.dropout drew from fresh or private generators that manual_seed did not reach)."""
    tg.manual_seed(0)
    first = draw().copy()
    tg.manual_seed(0)
    np.testing.assert_array_equal(draw(), first)


LINSPACE_CASES = [(0, 1, 5), (0, 10, 4), (-3.5, 7.25, 11), (2, 2, 3), (5, -5, 7), (0, 1, 1)]
LINSPACE_CASES += [(0, 1, 0), (1e-3, 1e8, 100), (0.1, 0.7, 33)]


@pytest.mark.parametrize("arguments", LINSPACE_CASES)
@pytest.mark.parametrize(
    ("dtype", "torch_dtype", "tolerance"),
    [
        (np.float64, torch.float64, 1e-15),
        (np.float32, torch.float32, 3e-7),
        (np.int64, torch.int64, 0),
        (np.int32, torch.int32, 0),
    ],
)
def test_linspace_against_torch(arguments, dtype, torch_dtype, tolerance):
    ours = tg.linspace(*arguments, dtype=dtype)
    theirs = torch.linspace(*arguments, dtype=torch_dtype)
    assert ours.dtype == dtype
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tolerance, atol=tolerance)
    assert ours.numpy()[:1].tolist() == theirs.numpy()[:1].tolist()  # the ends are exact
    assert ours.numpy()[-1:].tolist() == theirs.numpy()[-1:].tolist()


def test_linspace_default_dtype_tensor_ends_and_refusals():
    assert tg.linspace(0, 1, 3).dtype == np.float32
    assert tg.linspace(tg.Tensor(0.0), tg.Tensor(2.0), 3).tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(RuntimeError, match="non-negative"):
        tg.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="steps must be an int"):
        tg.linspace(0, 1, 2.0)
    for function in (tg.linspace, tg.logspace):  # as torch's: no bool ranges
        with pytest.raises(NotImplementedError, match="bool"):
            function(5, 10, 3, dtype=np.bool_)


@pytest.mark.parametrize("arguments", [(0, 2, 3), (-2, 3, 9), (-2.3, 3.1, 17), (1, 1, 1)])
@pytest.mark.parametrize("base", [10.0, 2, 0.5])
def test_logspace_against_torch(arguments, base):
    ours = tg.logspace(*arguments, base=base, dtype=np.float64)
    theirs = torch.logspace(*arguments, base=base, dtype=torch.float64)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-14)
    assert tg.logspace(*arguments, base=base).dtype == np.float32


@pytest.mark.parametrize("name", ["randn_like", "rand_like"])
def test_random_like_takes_shape_and_dtype(name):
    function = getattr(tg, name)
    base = tg.zeros(3, 4, dtype=np.float64)
    assert function(base).shape == (3, 4)
    assert function(base).dtype == np.float64
    assert function(base, dtype=np.float32).dtype == np.float32
    assert function(base, seed=0).tolist() == function(base, seed=0).tolist()
    tg.manual_seed(2)
    first = function(base).tolist()
    tg.manual_seed(2)
    assert function(base).tolist() == first
    with pytest.raises(NotImplementedError, match="floating-point"):
        function(tg.tensor([1, 2]))
    assert function(base, requires_grad=True).requires_grad


def test_randint_as_torch():
    sample = tg.randint(3, 7, (200,), seed=0)
    assert sample.dtype == np.int64
    assert set(sample.tolist()) == {3, 4, 5, 6}
    assert set(tg.randint(2, (50,), seed=1).tolist()) == {0, 1}
    assert torch.randint(3, 7, (2,)).dtype == torch.int64
    with pytest.raises(RuntimeError, match="less than"):
        tg.randint(5, 2, (3,))
    with pytest.raises(TypeError, match="size"):
        tg.randint(5)
