"""tinygrad_ops/nn/init.py: torch.nn.init's in-place initialisers (the bounds and spreads
of PyTorch's formulas, checked on large tensors; the gains against torch's)."""

import math

import numpy as np
import pytest
import torch

import tinygrad_ops as tg
from tinygrad_ops.nn import init


@pytest.mark.parametrize(
    ("nonlinearity", "param"),
    [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
     ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)],
)  # fmt: skip
def test_calculate_gain_matches_torch(nonlinearity, param):
    expected = torch.nn.init.calculate_gain(nonlinearity, param)
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("shape", [(400, 300), (64, 32, 3, 3)])
def test_xavier_and_kaiming_have_pytorchs_bounds_and_spreads(shape):
    receptive = math.prod(shape[2:])
    fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
    weight = tg.nn.Parameter(tg.zeros(*shape))
    array = weight.data
    version = weight._version[0]
    assert init.xavier_uniform_(weight, gain=2.0) is weight
    assert weight.data is array
    assert weight._version[0] == version + 1
    bound = 2.0 * math.sqrt(6.0 / (fan_in + fan_out))
    assert np.abs(array).max() <= bound
    assert np.abs(array).max() > 0.95 * bound
    init.xavier_normal_(weight)
    assert array.std() == pytest.approx(math.sqrt(2.0 / (fan_in + fan_out)), rel=0.03)
    init.kaiming_uniform_(weight, a=math.sqrt(5))  # PyTorch's Linear default: 1/sqrt(fan_in)
    assert np.abs(array).max() <= 1.0 / math.sqrt(fan_in) + 1e-7
    init.kaiming_normal_(weight, mode="fan_out", nonlinearity="relu")
    assert array.std() == pytest.approx(math.sqrt(2.0 / fan_out), rel=0.03)


def test_simple_fills_and_the_shared_generator():
    weight = tg.nn.Parameter(tg.zeros(3, 4))
    np.testing.assert_array_equal(init.ones_(weight).numpy(), np.ones((3, 4)))
    np.testing.assert_array_equal(init.zeros_(weight).numpy(), np.zeros((3, 4)))
    np.testing.assert_array_equal(init.constant_(weight, 0.5).numpy(), np.full((3, 4), 0.5))
    tg.manual_seed(3)
    first = init.normal_(weight, 1.0, 0.1).numpy().copy()
    tg.manual_seed(3)
    np.testing.assert_array_equal(init.normal_(weight, 1.0, 0.1).numpy(), first)
    values = init.uniform_(weight, -2.0, -1.0).numpy()
    assert values.min() >= -2.0
    assert values.max() < -1.0
    assert weight.dtype == np.float32  # the parameter keeps its dtype


def test_initialisers_name_their_errors():
    with pytest.raises(ValueError, match="xavier_uniform_: fan in and fan out"):
        init.xavier_uniform_(tg.zeros(5))
    with pytest.raises(ValueError, match="mode must be 'fan_in' or 'fan_out'"):
        init.kaiming_normal_(tg.zeros(2, 2), mode="fan")
    with pytest.raises(ValueError, match="unsupported nonlinearity 'swish'"):
        init.calculate_gain("swish")
