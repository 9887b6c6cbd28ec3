"""F.conv_transpose2d and nn.ConvTranspose2d against torch in float64 (values and the
gradients of input, weight and bias), central finite differences, the layer's state dict
and output_size, and the refusals."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF  # noqa: N812 (the conventional alias)
from helpers import check_op

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)


def transposed_case(name, input_shape, weight_shape, **options):
    groups = options.get("groups", 1)
    return pytest.param(input_shape, weight_shape, weight_shape[1] * groups, options, id=name)


@pytest.mark.parametrize(
    ("input_shape", "weight_shape", "channels", "options"),
    [
        transposed_case("plain", (2, 4, 5, 6), (4, 3, 3, 3)),
        transposed_case("stride", (2, 4, 5, 6), (4, 3, 3, 2), stride=2),
        transposed_case(
            "stride-pair-padding", (2, 4, 5, 6), (4, 3, 3, 3), stride=(2, 3), padding=1
        ),
        transposed_case(
            "output-padding", (2, 4, 5, 6), (4, 3, 3, 3), stride=2, padding=1, output_padding=1
        ),
        transposed_case(
            "output-padding-pair",
            (2, 4, 5, 6),
            (4, 3, 3, 3),
            stride=3,
            padding=(2, 1),
            output_padding=(2, 1),
        ),
        transposed_case("groups", (2, 4, 5, 6), (4, 1, 3, 3), groups=2),
        transposed_case("groups-dilation", (2, 4, 5, 6), (4, 3, 3, 3), groups=2, dilation=2),
        transposed_case("dilation-padding", (2, 4, 5, 6), (4, 3, 2, 3), dilation=(2, 1), padding=2),
        transposed_case("crop", (2, 4, 5, 6), (4, 3, 3, 3), padding=3),
        transposed_case(
            "dilation-output-padding", (1, 4, 3, 3), (4, 2, 3, 3), dilation=3, output_padding=2
        ),
        transposed_case("unbatched", (4, 5, 6), (4, 3, 3, 3), stride=2),
        transposed_case("one-pixel", (1, 2, 1, 1), (2, 2, 3, 3), stride=2, padding=1),
        transposed_case("kernel-1", (2, 3, 4, 4), (3, 5, 1, 1), stride=2),
    ],
)
def test_conv_transpose2d_against_torch(input_shape, weight_shape, channels, options):
    check_op(
        lambda x, w, b: F.conv_transpose2d(x, w, b, **options),
        lambda x, w, b: TF.conv_transpose2d(x, w, b, **options),
        input_shape,
        weight_shape,
        (channels,),
        atol=1e-12,
    )


def test_conv_transpose2d_without_bias_and_in_float32():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 3, 4, 4)), rng.standard_normal((3, 2, 3, 3))
    check_op(
        lambda x, w: F.conv_transpose2d(x, w, stride=2),
        lambda x, w: TF.conv_transpose2d(x, w, stride=2),
        x,
        w,
        atol=1e-12,
    )
    ours = F.conv_transpose2d(tg.Tensor(x.astype(np.float32)), tg.Tensor(w.astype(np.float32)))
    theirs = TF.conv_transpose2d(torch.tensor(x).float(), torch.tensor(w).float())
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-5)


def test_conv_transpose2d_finite_differences():
    rng = np.random.default_rng(1)
    x = tg.Tensor(rng.standard_normal((1, 2, 3, 3)), requires_grad=True)
    w = tg.Tensor(rng.standard_normal((2, 2, 2, 2)), requires_grad=True)
    b = tg.Tensor(rng.standard_normal(2), requires_grad=True)
    options = {"stride": 2, "padding": 1, "output_padding": 1}
    assert tg.gradcheck(lambda x, w, b: F.conv_transpose2d(x, w, b, **options), (x, w, b))


def test_conv_transpose2d_is_the_adjoint_of_conv2d():
    """<conv2d(y, w), x> = <y, conv_transpose2d(x, w)> for the same stride and padding."""
    rng = np.random.default_rng(2)
    y, w = (
        tg.Tensor(rng.standard_normal((1, 3, 7, 7))),
        tg.Tensor(rng.standard_normal((2, 3, 3, 3))),
    )
    x = tg.Tensor(rng.standard_normal((1, 2, 4, 4)))
    left = (F.conv2d(y, w, stride=2, padding=1) * x).sum().item()
    right = (y * F.conv_transpose2d(x, w, stride=2, padding=1)).sum().item()
    assert abs(left - right) < 1e-4


def test_conv_transpose2d_layer_against_torch():
    torch.manual_seed(0)
    theirs = torch.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, groups=2).double()
    ours = tg.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, groups=2, dtype=np.float64)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict(theirs.state_dict())
    x = np.random.default_rng(3).standard_normal((2, 4, 5, 5))
    for size in (None, (10, 10), (2, 6, 9, 10)):
        out = ours(tg.Tensor(x), output_size=size)
        expected = theirs(torch.tensor(x), output_size=size)
        np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-12)
    assert repr(ours) == repr(theirs)


def test_conv_transpose2d_layer_init_bound():
    """PyTorch's bound 1/sqrt(fan_in), fan_in = out_channels / groups * kH * kW."""
    layer = tg.nn.ConvTranspose2d(16, 8, 3, groups=2)
    bound = 1 / np.sqrt(4 * 9)
    assert 0.9 * bound < np.abs(layer.weight.numpy()).max() <= bound
    assert np.abs(layer.bias.numpy()).max() <= bound


def test_conv_transpose2d_refusals():
    x, w = tg.ones(1, 2, 3, 3), tg.ones(2, 1, 3, 3)
    with pytest.raises(RuntimeError, match="smaller than either stride or dilation"):
        F.conv_transpose2d(x, w, output_padding=1)
    with pytest.raises(RuntimeError, match="channels"):
        F.conv_transpose2d(tg.ones(1, 3, 3, 3), w)
    with pytest.raises(RuntimeError, match="weight must be"):
        F.conv_transpose2d(x, tg.ones(2, 1, 3))
    with pytest.raises(ValueError, match="valid sizes"):
        tg.nn.ConvTranspose2d(2, 1, 3, stride=2)(x, output_size=(9, 9))
    with pytest.raises(ValueError, match="zeros"):
        tg.nn.ConvTranspose2d(2, 1, 3, padding_mode="reflect")
