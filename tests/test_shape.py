"""The shape primitives (ops/shape.py: reshape, transpose, broadcast, stack, concatenate,
indexing) against PyTorch in float64, one line per case through `check_op`."""

import math

import numpy as np
import pytest
import torch
from helpers import case, check_op, same_case

import tinygrad_ops as tg

MASK = np.array([[True, False, True], [False, True, True]])
REPEATED = np.array([0, 2, 0, 0])


def joined_case(name, function, *shapes, axis=None):
    """tg.stack or tg.concatenate (`function`) of the inputs beside torch.stack or torch.cat,
    along `axis` (None: the default axis, not passed)."""
    ours = getattr(tg, function)
    theirs = {"stack": torch.stack, "concatenate": torch.cat}[function]
    if axis is None:
        return case(name, lambda *t: ours(list(t)), lambda *t: theirs(list(t)), *shapes)
    return case(
        name,
        lambda *t: ours(list(t), axis=axis),
        lambda *t: theirs(list(t), dim=axis),
        *shapes,
    )


def reversed_permute(x):
    return x.permute(tuple(reversed(range(x.ndim))))


SHAPE_CASES = [
    same_case("reshape", lambda a: a.reshape(3, 2), (2, 3)),
    same_case("reshape-minus1", lambda a: a.reshape(-1), (2, 3, 4)),
    case("reshape-tuple", lambda a: a.reshape((4, 1, 6)), lambda a: a.reshape(4, 1, 6), (2, 3, 4)),
    same_case("reshape-0d-to-size1", lambda a: a.reshape(1, 1), ()),
    same_case("reshape-to-0d", lambda a: a.reshape(()), (1, 1)),
    same_case("reshape-empty", lambda a: a.reshape(0, 4), (2, 0)),
    case("transpose", lambda a: a.transpose(), reversed_permute, (2, 3)),
    case("transpose-axes", lambda a: a.transpose(1, 2, 0), lambda a: a.permute(1, 2, 0), (2, 3, 4)),
    case(
        "transpose-neg-axes",
        lambda a: a.transpose((-1, 0, 1)),
        lambda a: a.permute(2, 0, 1),
        (2, 3, 4),
    ),
    case("swapaxes", lambda a: a.swapaxes(0, 2), lambda a: a.transpose(0, 2), (2, 3, 4)),
    case("swapaxes-neg", lambda a: a.swapaxes(-1, -2), lambda a: a.transpose(-1, -2), (2, 3, 4)),
    case("T-matrix", lambda a: a.T, reversed_permute, (2, 3)),
    case("T-3d", lambda a: a.T, reversed_permute, (2, 3, 4)),
    case("T-vector", lambda a: a.T, reversed_permute, (3,)),
    case("T-0d", lambda a: a.T, reversed_permute, ()),
    same_case("broadcast_to-row", lambda a: a.broadcast_to((2, 3)), (3,)),
    same_case("broadcast_to-size1", lambda a: a.broadcast_to((4, 3)), (1, 3)),
    same_case("broadcast_to-0d", lambda a: a.broadcast_to((2, 2)), ()),
    same_case("broadcast_to-inner", lambda a: a.broadcast_to((5, 2, 3, 4)), (2, 1, 1)),
    same_case("broadcast_to-empty", lambda a: a.broadcast_to((0, 3)), (1, 3)),
    same_case("broadcast_to-same", lambda a: a.broadcast_to((2, 3)), (2, 3)),
    joined_case("stack", "stack", (2, 3), (2, 3)),
    joined_case("stack-axis1", "stack", (2, 3), (2, 3), (2, 3), axis=1),
    joined_case("stack-axis-neg", "stack", (2, 3), (2, 3), axis=-1),
    joined_case("stack-0d", "stack", (), ()),
    joined_case("stack-one", "stack", (3,)),
    case(
        "stack-same-tensor-twice",
        lambda a: tg.stack([a, a * 2]),
        lambda a: torch.stack([a, a * 2]),
        (3,),
    ),
    joined_case("concatenate", "concatenate", (2, 3), (4, 3)),
    joined_case("concatenate-axis-neg", "concatenate", (2, 3), (2, 1), axis=-1),
    joined_case("concatenate-empty-piece", "concatenate", (2, 0), (2, 3), (2, 2), axis=1),
    case(
        "concatenate-same-tensor",
        lambda a: tg.concatenate([a, a]),
        lambda a: torch.cat([a, a]),
        (3,),
    ),
]


GETITEM_CASES = [
    same_case("int", lambda a: a[1], (3, 4)),
    same_case("negative-int", lambda a: a[-1, -2], (3, 4)),
    same_case("slice", lambda a: a[1:3], (4, 2)),
    same_case("slice-step", lambda a: a[:, ::2], (3, 5)),
    case("negative-step", lambda a: a[::-1], lambda a: torch.flip(a, [0]), (4, 2)),
    case("negative-step-2", lambda a: a[:, ::-2], lambda a: torch.flip(a, [1])[:, ::2], (3, 5)),
    same_case("none", lambda a: a[None], (2, 3)),
    same_case("none-middle", lambda a: a[:, None, 1:], (2, 3)),
    same_case("ellipsis", lambda a: a[..., 1], (2, 3, 4)),
    same_case("ellipsis-none", lambda a: a[0, ..., None], (2, 3, 4)),
    same_case("empty-slice", lambda a: a[2:2], (4, 3)),
    same_case("0d-empty-tuple", lambda a: a[()], ()),
    case("int-array", lambda a: a[np.array([2, 0])], lambda a: a[torch.tensor([2, 0])], (3, 2)),
    case(
        "int-array-repeated", lambda a: a[REPEATED], lambda a: a[torch.as_tensor(REPEATED)], (3, 2)
    ),
    same_case("int-list-repeated", lambda a: a[[1, 1, 1]], (3,)),
    case(
        "int-array-2d-repeated",
        lambda a: a[np.array([[0, 1], [1, 1]])],
        lambda a: a[torch.tensor([[0, 1], [1, 1]])],
        (2, 3),
    ),
    case(
        "int-arrays-pair-repeated",
        lambda a: a[np.array([0, 0, 1]), np.array([2, 2, 0])],
        lambda a: a[torch.tensor([0, 0, 1]), torch.tensor([2, 2, 0])],
        (2, 3),
    ),
    case(
        "int-array-second-axis",
        lambda a: a[:, np.array([1, 1, 0])],
        lambda a: a[:, torch.tensor([1, 1, 0])],
        (2, 3),
    ),
    case(
        "int-array-negative",
        lambda a: a[np.array([-1, -1, 0])],
        lambda a: a[torch.tensor([-1, -1, 0])],
        (3,),
    ),
    case(
        "tensor-index",
        lambda a: a[tg.Tensor(np.array([2, 2, 1]))],
        lambda a: a[torch.tensor([2, 2, 1])],
        (3, 2),
    ),
    case("arange-index", lambda a: a[tg.arange(2)], lambda a: a[torch.arange(2)], (3,)),
    case("bool-mask", lambda a: a[MASK], lambda a: a[torch.as_tensor(MASK)], (2, 3)),
    case(
        "bool-mask-rows",
        lambda a: a[np.array([True, False, True])],
        lambda a: a[torch.tensor([True, False, True])],
        (3, 2),
    ),
    case(
        "int-arrays-not-adjacent",
        lambda a: a[np.array([0, 1]), :, np.array([1, 1])],
        lambda a: a[torch.tensor([0, 1]), :, torch.tensor([1, 1])],
        (2, 3, 4),
    ),
    case(
        "int-arrays-broadcast",
        lambda a: a[np.array([[0], [1]]), np.array([1, 1, 0])],
        lambda a: a[torch.tensor([[0], [1]]), torch.tensor([1, 1, 0])],
        (2, 3),
    ),
    case(
        "empty-int-array",
        lambda a: a[np.array([], dtype=np.int64)],
        lambda a: a[torch.tensor([], dtype=torch.int64)],
        (3, 2),
    ),
    case(
        "mask-all-false",
        lambda a: a[np.zeros((3, 2), dtype=bool)],
        lambda a: a[torch.zeros((3, 2), dtype=torch.bool)],
        (3, 2),
    ),
    same_case("0d-none", lambda a: a[None], ()),
    same_case("0d-ellipsis", lambda a: a[...], ()),
    case("numpy-int-scalar", lambda a: a[np.int64(1)], lambda a: a[1], (3, 2)),
    same_case("bool-tensor-mask", lambda a: a[a > 0], (3, 4)),
]


@pytest.mark.parametrize(("ours", "theirs", "specs", "options"), SHAPE_CASES)
def test_shape(ours, theirs, specs, options):
    check_op(ours, theirs, *specs, **options)


@pytest.mark.parametrize(("ours", "theirs", "specs", "options"), GETITEM_CASES)
def test_getitem(ours, theirs, specs, options):
    check_op(ours, theirs, *specs, **options)


@pytest.mark.parametrize(
    ("shape", "dims"),
    [((2, 3, 4), ()), ((2, 3, 4), (1,)), ((2, 3, 4), (0, 1)), ((2, 3, 4), (-2, -1)),
     ((0, 3, 4), (1,)), ((), ()), ((5,), (0, 0))],
    ids=str,
)  # fmt: skip
def test_flatten_with_start_and_end_dims_matches_torch(shape, dims):
    x = tg.Tensor(np.arange(math.prod(shape), dtype=np.float64).reshape(shape), requires_grad=True)
    out = x.flatten(*dims)
    expected = torch.arange(math.prod(shape), dtype=torch.float64).reshape(shape).flatten(*dims)
    assert out.shape == tuple(expected.shape)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    out.sum().backward()
    assert x.grad.shape == shape


@pytest.mark.parametrize(
    ("shape", "dim", "sizes"),
    [((4, 3, 6), 0, (2, 2)), ((4, 3, 6), -1, (3, 2, 1)), ((4, 6), 1, (-1, 2)), ((0, 6), 0, (0, 5))],
    ids=str,
)
def test_unflatten_matches_torch(shape, dim, sizes):
    check_op(lambda x: x.unflatten(dim, sizes), lambda x: x.unflatten(dim, sizes), shape)


@pytest.mark.parametrize("sizes", [(4, 2), (-1, -1), ()])
def test_unflatten_to_sizes_that_do_not_fit_is_torchs_runtime_error(sizes):
    with pytest.raises(RuntimeError):
        torch.zeros(4, 6).unflatten(1, sizes)
    with pytest.raises(RuntimeError, match="unflatten: sizes"):
        tg.zeros(4, 6).unflatten(1, sizes)


@pytest.mark.parametrize(
    ("dims", "error", "message"),
    [((2, 1), ValueError, "flatten: start_dim 2 comes after end_dim 1"),
     ((5,), ValueError, "flatten: start_dim 5 is out of range for a 3-d tensor"),
     ((0, True), TypeError, "flatten: end_dim must be an int")],
)  # fmt: skip
def test_bad_flatten_dims_are_errors_naming_the_argument(dims, error, message):
    with pytest.raises(error, match=message):
        tg.zeros(2, 3, 4).flatten(*dims)


@pytest.mark.parametrize(
    ("shape", "sizes"), [((3, 1), (-1, 4)), ((3, 1), (2, 3, -1)), ((1,), (5,))], ids=str
)
def test_expand_and_view_match_torch(shape, sizes):
    values = np.arange(math.prod(shape), dtype=np.float64).reshape(shape)
    x, torch_x = tg.Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    out, expected = x.expand(*sizes), torch_x.expand(*sizes)
    np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())
    out.view(-1).sum().backward()
    expected.reshape(-1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), torch_x.grad.numpy())


def test_mm_t_dim_and_numel_as_pytorch():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    check_op(lambda x, y: x.mm(y), lambda x, y: x.mm(y), a, b)
    check_op(lambda x: x.t(), lambda x: x.t(), a)
    check_op(lambda x: x.t(), lambda x: x.t(), np.arange(3.0))
    x = tg.Tensor(np.zeros((2, 3, 4)))
    assert (x.dim(), x.numel()) == (3, 24)
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions"):
        x.t()
    with pytest.raises(RuntimeError, match="mm: both arguments must be matrices"):
        x.mm(x)


@pytest.mark.parametrize("shape", [(2, 3), (4,), (1, 5, 1), (0, 3), ()])
def test_size_is_numpys_count_and_pytorchs_call(shape):
    ours, theirs = tg.zeros(shape), torch.zeros(shape)
    assert ours.size == np.zeros(shape).size
    assert isinstance(ours.size, int)
    assert ours.size() == tuple(theirs.size())
    for dim in range(-len(shape), len(shape)):
        assert ours.size(dim) == theirs.size(dim)
        assert ours.size(dim=dim) == theirs.size(dim=dim)


def test_size_of_a_dim_that_is_not_there_raises_naming_it():
    x = tg.zeros((2, 3))
    with pytest.raises(ValueError, match="size: dim 2 is out of range for a 2-d tensor"):
        x.size(2)
    with pytest.raises(TypeError, match="size: dim must be an int, got True"):
        x.size(True)
    with pytest.raises(IndexError, match="a 0-d tensor has no dims"):
        tg.Tensor(1.0).size(0)
