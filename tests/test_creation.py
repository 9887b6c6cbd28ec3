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
    with pytest.raises(ValueError, match=f"arange: .*{message}"):
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
