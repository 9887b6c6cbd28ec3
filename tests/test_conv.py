"""Convolution and pooling against PyTorch (float64), the loop reference and finite differences.

One line per case through `check_op`: the output and the gradient of every input, over
strides, padding (ints, pairs, 'same', 'valid'), dilation, groups, unbatched inputs, an
empty batch and size-1 images and kernels.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as torch_functional
from helpers import check_op, random_inputs

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)
from tinygrad_ops import nn, reference


def case(name, ours, theirs, *specs, marks=(), **options):
    return pytest.param(ours, theirs, specs, options, id=name, marks=marks)


# PyTorch warns that it copies the input for 'same' with an even kernel (a note, not an error)
EVEN_SAME = pytest.mark.filterwarnings("ignore:Using padding='same':UserWarning")


def conv_case(name, x, w, bias=True, **options):
    """conv2d for a 4-d kernel w, conv1d for a 3-d one (x may be unbatched)."""
    function = "conv2d" if len(w) == 4 else "conv1d"
    specs = (x, w, (w[0],)) if bias else (x, w)
    return case(
        name,
        lambda *t: getattr(F, function)(*t, **options),
        lambda *t: getattr(torch_functional, function)(*t, **options),
        *specs,
        marks=EVEN_SAME if options.get("padding") == "same" else (),
    )


def pool_case(name, function, shape, *args, **options):
    """`function` ("max_pool2d", ...) of F and of torch's functional, on one input."""
    ours, theirs = getattr(F, function), getattr(torch_functional, function)
    return case(
        name, lambda x: ours(x, *args, **options), lambda x: theirs(x, *args, **options), shape
    )


CASES = [
    conv_case("plain", (2, 3, 5, 6), (4, 3, 3, 3)),
    conv_case("no_bias", (2, 3, 5, 6), (4, 3, 3, 3), bias=False),
    conv_case("stride2", (2, 3, 7, 6), (4, 3, 3, 2), stride=2),
    conv_case("stride_pair", (1, 2, 7, 8), (3, 2, 2, 3), stride=(2, 3)),
    conv_case("padding1", (2, 3, 5, 5), (2, 3, 3, 3), padding=1),
    conv_case("padding_pair", (2, 3, 5, 4), (2, 3, 3, 3), padding=(2, 0)),
    conv_case("dilation2", (2, 2, 9, 8), (3, 2, 3, 3), dilation=2, padding=1),
    conv_case("groups2", (2, 4, 6, 6), (6, 2, 3, 3), groups=2, padding=1),
    conv_case("depthwise", (2, 3, 5, 5), (3, 1, 3, 3), groups=3),
    conv_case("everything", (2, 4, 9, 8), (4, 2, 3, 2), stride=2, padding=2, dilation=2, groups=2),
    conv_case("same_even_kernel", (1, 2, 5, 6), (3, 2, 2, 4), padding="same"),
    conv_case("same_dilated", (1, 2, 6, 6), (2, 2, 3, 3), padding="same", dilation=2),
    conv_case("valid", (1, 2, 5, 6), (3, 2, 2, 2), padding="valid"),
    conv_case("unbatched", (3, 5, 6), (4, 3, 3, 3)),
    conv_case("empty_batch", (0, 3, 5, 6), (4, 3, 3, 3)),
    conv_case("size1_image", (2, 3, 1, 1), (4, 3, 1, 1)),
    conv_case("kernel_is_image", (2, 1, 3, 3), (2, 1, 3, 3)),
    conv_case("conv1d", (2, 3, 7), (4, 3, 3)),
    conv_case("conv1d_options", (2, 4, 11), (2, 2, 3), stride=2, padding=1, dilation=2, groups=2),
    conv_case("conv1d_same", (2, 3, 6), (2, 3, 4), padding="same", bias=False),
    conv_case("conv1d_unbatched", (3, 7), (4, 3, 3)),
    pool_case("max2", "max_pool2d", (2, 3, 6, 6), 2),
    pool_case("max_odd", "max_pool2d", (2, 3, 7, 5), 2),
    pool_case("max_overlap", "max_pool2d", (2, 2, 6, 7), 3, stride=1, padding=1),
    pool_case(
        "max_dilated", "max_pool2d", (1, 2, 9, 9), (3, 2), stride=(2, 1), dilation=2, padding=(1, 1)
    ),
    pool_case("max_ceil", "max_pool2d", (2, 2, 7, 8), 3, stride=2, padding=1, ceil_mode=True),
    pool_case("max_unbatched", "max_pool2d", (3, 4, 4), 2),
    pool_case("max_empty_batch", "max_pool2d", (0, 3, 4, 4), 2),
    pool_case("max_size1", "max_pool2d", (2, 3, 1, 1), 1),
    pool_case("avg2", "avg_pool2d", (2, 3, 6, 6), 2),
    pool_case("avg_pad", "avg_pool2d", (2, 2, 5, 6), 3, stride=2, padding=1),
    pool_case(
        "avg_exclude_pad",
        "avg_pool2d",
        (2, 2, 5, 6),
        3,
        stride=2,
        padding=1,
        count_include_pad=False,
    ),
    pool_case("avg_ceil", "avg_pool2d", (2, 2, 7, 8), 3, stride=2, padding=1, ceil_mode=True),
    pool_case(
        "avg_ceil_exclude", "avg_pool2d", (1, 2, 6, 5), 2, ceil_mode=True, count_include_pad=False
    ),
    pool_case("avg_divisor", "avg_pool2d", (2, 2, 4, 4), 2, divisor_override=3),
    pool_case("avg_unbatched", "avg_pool2d", (3, 4, 4), 2),
    pool_case("max_ceil_small", "max_pool2d", (1, 2, 2, 2), 3, ceil_mode=True),  # < kernel
    pool_case("max_ceil_small_pad", "max_pool2d", (1, 1, 2, 5), (3, 2), padding=1, ceil_mode=True),
    pool_case("avg_ceil_small", "avg_pool2d", (1, 2, 2, 2), 3, ceil_mode=True),
    pool_case("avg_ceil_small_1", "avg_pool2d", (2, 1, 1, 1), 2, ceil_mode=True),
    pool_case("max1d", "max_pool1d", (2, 3, 7), 3, stride=2),
    pool_case("avg1d", "avg_pool1d", (2, 3, 7), 2, padding=1),
]


@pytest.mark.parametrize(("ours", "theirs", "specs", "options"), CASES)
def test_against_torch(ours, theirs, specs, options):
    check_op(ours, theirs, *specs, **options)


def test_max_pool_ties_go_to_the_first_maximum_as_in_torch():
    x = np.array([[[[1.0, 1.0, 0.0], [1.0, 1.0, 2.0], [2.0, 0.0, 2.0]]]])
    check_op(
        lambda t: F.max_pool2d(t, 2, stride=1),
        lambda t: torch_functional.max_pool2d(t, 2, stride=1),
        x,
    )


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
def test_max_pool_of_integers_matches_torch(dtype):
    x = np.random.default_rng(4).integers(0, 100, size=(2, 3, 7, 6)).astype(dtype)
    out, indices = F.max_pool2d(tg.Tensor(x), 3, stride=2, padding=1, return_indices=True)
    expected, expected_indices = torch_functional.max_pool2d(
        torch.tensor(x), 3, stride=2, padding=1, return_indices=True
    )
    assert out.dtype == expected.numpy().dtype
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())


def test_max_pool_return_indices_match_torch():
    (x,) = random_inputs((2, 3, 7, 6))
    out, indices = F.max_pool2d(tg.Tensor(x), 3, stride=2, padding=1, return_indices=True)
    expected, expected_indices = torch_functional.max_pool2d(
        torch.tensor(x), 3, stride=2, padding=1, return_indices=True
    )
    np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    _, indices_1d = F.max_pool1d(tg.Tensor(x[:, 0]), 2, return_indices=True)
    _, torch_1d = torch_functional.max_pool1d(torch.tensor(x[:, 0]), 2, return_indices=True)
    np.testing.assert_array_equal(indices_1d.numpy(), torch_1d.numpy())


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"stride": 2, "padding": 1},
        {"dilation": 2, "padding": 2},
        {"groups": 2, "stride": 2},
    ],
)
def test_loop_reference_agrees(options):
    x, w, b, upstream_seed = *random_inputs((2, 4, 6, 5), (4, 2, 3, 3), (4,)), 3
    groups = options.get("groups", 1)
    w = w if groups == 2 else np.concatenate([w, w], axis=1)
    expected = reference.conv2d(x, w, b, **options)
    upstream = np.random.default_rng(upstream_seed).standard_normal(expected.shape)
    tensors = [tg.Tensor(array, requires_grad=True) for array in (x, w, b)]
    out = F.conv2d(*tensors, **options)
    out.backward(upstream)
    np.testing.assert_allclose(out.numpy(), expected, atol=1e-12)
    for mine, theirs in zip(
        tensors, reference.conv2d_backward(x, w, upstream, **options), strict=True
    ):
        np.testing.assert_allclose(mine.grad.numpy(), theirs, atol=1e-12)


@pytest.mark.parametrize(
    ("function", "specs"),
    [
        (lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, dilation=1, groups=2), None),
        (
            lambda x, w, b: F.conv2d(x, w, b, dilation=2, padding="same"),
            ((1, 2, 5, 5), (2, 2, 3, 3), (2,)),
        ),
        (lambda x: F.max_pool2d(x, 2, stride=1, padding=1), ((1, 2, 4, 4),)),
        (lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True), ((1, 2, 5, 5),)),
    ],
)
def test_finite_differences(function, specs):
    specs = specs or ((1, 4, 5, 5), (2, 2, 3, 3), (2,))
    arrays = random_inputs(*specs, seed=5)
    tensors = [tg.Tensor(array, requires_grad=True) for array in arrays]
    assert tg.gradcheck(function, tensors)


@pytest.mark.parametrize("options", [{"padding": 1, "groups": 2}, {"stride": 2, "dilation": 2}])
def test_second_order_gradients_match_torch(options):
    """create_graph=True: dx and dw are themselves differentiable (grad of |dx|² + |dw|²)."""
    arrays = random_inputs((2, 4, 6, 6), (2, 2, 3, 3), (2,), seed=7)
    if "groups" not in options:
        arrays[1] = np.concatenate([arrays[1], arrays[1]], axis=1)
    ours = [tg.Tensor(array, requires_grad=True) for array in arrays]
    theirs = [torch.tensor(array, requires_grad=True) for array in arrays]
    out = (F.conv2d(*ours, **options) ** 2).sum()
    dx, dw = tg.grad(out, ours[:2], create_graph=True)
    ((dx * dx).sum() + (dw * dw).sum()).backward()
    expected = (torch_functional.conv2d(*theirs, **options) ** 2).sum()
    tx, tw = torch.autograd.grad(expected, theirs[:2], create_graph=True)
    ((tx * tx).sum() + (tw * tw).sum()).backward()
    for mine, reference_tensor in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), reference_tensor.grad.numpy(), rtol=1e-9)


def test_second_order_through_pooling():
    (x,) = random_inputs((1, 2, 5, 5), seed=2)
    for ours, theirs in ((F.max_pool2d, torch_functional.max_pool2d), (F.avg_pool2d, None)):
        mine = tg.Tensor(x, requires_grad=True)
        reference_tensor = torch.tensor(x, requires_grad=True)
        theirs = theirs or torch_functional.avg_pool2d
        (grad,) = tg.grad((ours(mine, 2, stride=1) ** 3).sum(), [mine], create_graph=True)
        (grad * grad).sum().backward()
        expected = (theirs(reference_tensor, 2, stride=1) ** 3).sum()
        (torch_grad,) = torch.autograd.grad(expected, [reference_tensor], create_graph=True)
        (torch_grad * torch_grad).sum().backward()
        np.testing.assert_allclose(mine.grad.numpy(), reference_tensor.grad.numpy(), rtol=1e-9)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_lower_precision_keeps_its_dtype(dtype):
    x = tg.Tensor(np.ones((1, 2, 4, 4)), dtype=dtype, requires_grad=True)
    w = tg.Tensor(np.ones((3, 2, 3, 3)), dtype=dtype, requires_grad=True)
    out = F.max_pool2d(F.conv2d(x, w, padding=1), 2)
    assert out.dtype == dtype
    out.sum().backward()
    assert x.grad.dtype == dtype
    assert w.grad.dtype == dtype
    np.testing.assert_allclose(out.numpy(), 18.0)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: F.conv2d(tg.zeros(1, 3, 5, 5), tg.zeros(4, 2, 3, 3)), ValueError, "groups"),
        (
            lambda: F.conv2d(tg.zeros(1, 4, 5, 5), tg.zeros(3, 2, 3, 3), groups=2),
            ValueError,
            "divide",
        ),
        (lambda: F.conv2d(tg.zeros(3, 5), tg.zeros(4, 3, 3, 3)), ValueError, r"\(N, C, H, W\)"),
        (lambda: F.conv2d(tg.zeros(1, 3, 2, 2), tg.zeros(4, 3, 3, 3)), ValueError, "smaller"),
        (lambda: F.conv2d(tg.zeros(1, 3, 5, 5), tg.zeros(4, 3, 3)), ValueError, "weight"),
        (
            lambda: F.conv2d(tg.zeros(1, 3, 5, 5), tg.zeros(4, 3, 3, 3), tg.zeros(3)),
            ValueError,
            "bias",
        ),
        (
            lambda: F.conv2d(tg.zeros(1, 3, 5, 5), tg.zeros(4, 3, 3, 3).double()),
            TypeError,
            "one dtype",
        ),
        (
            lambda: F.conv2d(tg.zeros(1, 3, 5, 5), tg.zeros(4, 3, 3, 3), stride=0),
            ValueError,
            "stride",
        ),
        (
            lambda: F.conv2d(tg.zeros(1, 3, 5, 5), tg.zeros(4, 3, 3, 3), padding="same", stride=2),
            ValueError,
            "same",
        ),
        (
            lambda: F.conv2d(tg.zeros(1, 3, 5, 5), tg.zeros(4, 3, 3, 3), padding="full"),
            ValueError,
            "padding",
        ),
        (lambda: F.max_pool2d(tg.zeros(1, 1, 4, 4), 2, padding=2), ValueError, "half"),
        (lambda: F.max_pool2d(tg.zeros(1, 1, 1, 4), 2), ValueError, "smaller"),
        (lambda: F.avg_pool2d(tg.zeros(1, 1, 4, 4), 2, divisor_override=0), ValueError, "divisor"),
        (
            lambda: F.avg_pool2d(tg.Tensor(np.zeros((1, 1, 4, 4), dtype=np.int64)), 2),
            TypeError,
            "float",
        ),
        (lambda: nn.Conv2d(3, 4, 3, groups=2), ValueError, "groups"),
    ],
)
def test_errors_name_the_op_and_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_modules_load_a_torch_state_dict_and_agree():
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(
        torch.nn.Conv2d(2, 4, 3, padding=1, groups=2),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.AvgPool2d(2),
        torch.nn.Flatten(),
    ).double()
    ours = nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1, groups=2, dtype=np.float64),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.AvgPool2d(2),
        nn.Flatten(),
    )
    ours.load_state_dict({key: value.numpy() for key, value in theirs.state_dict().items()})
    (x,) = random_inputs((3, 2, 8, 8))
    np.testing.assert_allclose(ours(tg.Tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy())
    layer = nn.Conv1d(3, 5, 2, stride=2, dtype=np.float64)
    torch_layer = torch.nn.Conv1d(3, 5, 2, stride=2).double()
    layer.load_state_dict({key: value.numpy() for key, value in torch_layer.state_dict().items()})
    (x,) = random_inputs((2, 3, 9))
    np.testing.assert_allclose(
        layer(tg.Tensor(x)).numpy(), torch_layer(torch.tensor(x)).detach().numpy()
    )


def test_default_init_bound_is_torchs():
    """U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in / groups * kH * kW."""
    tg.manual_seed(0)
    layer = nn.Conv2d(8, 16, (3, 5), groups=2)
    bound = 1.0 / np.sqrt(4 * 3 * 5)
    assert layer.weight.shape == (16, 4, 3, 5)
    assert np.abs(layer.weight.numpy()).max() <= bound
    assert np.abs(layer.weight.numpy()).max() > 0.95 * bound  # 960 draws reach the bound
    assert np.abs(layer.bias.numpy()).max() <= bound
    assert nn.Conv2d(2, 3, 3, bias=False).bias is None


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize(("dims", "padding"), [(2, 1), (2, (2, 1)), (1, 2), (2, "same")])
def test_padding_modes_of_the_layers_match_torch(mode, dims, padding):
    layer_class = nn.Conv2d if dims == 2 else nn.Conv1d
    torch_class = torch.nn.Conv2d if dims == 2 else torch.nn.Conv1d
    ours = layer_class(2, 3, 3, padding=padding, padding_mode=mode, dtype=np.float64)
    theirs = torch_class(2, 3, 3, padding=padding, padding_mode=mode).double()
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    (x,) = random_inputs((2, 2, 5, 6)[: dims + 2])
    mine, reference = tg.Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, expected = ours(mine), theirs(reference)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-12)
    upstream = np.random.default_rng(1).standard_normal(out.shape)
    out.backward(upstream)
    expected.backward(torch.tensor(upstream))
    np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize(
    "options", [{"padding": 1}, {"padding": 1, "padding_mode": "reflect", "bias": False}]
)
def test_the_layers_print_as_torchs(options):
    assert repr(nn.Conv2d(2, 3, 3, **options)) == repr(torch.nn.Conv2d(2, 3, 3, **options))


def test_an_unknown_padding_mode_is_an_error():
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv2d(1, 1, 3, padding_mode="mirror")


@pytest.mark.parametrize(
    ("shape", "output_size"),
    [((2, 3, 5, 7), (2, 3)), ((2, 3, 4, 4), 1), ((3, 6, 5), (None, 2)), ((1, 2, 3, 3), (5, 4)),
     ((2, 1, 8, 6), (4, 3))],
    ids=["uneven", "global", "unbatched-none", "larger-than-input", "even"],
)  # fmt: skip
def test_adaptive_avg_pool2d_matches_torch(shape, output_size):
    """PyTorch's bins (floor and ceil of i L / n, overlapping where they must), values and
    gradients, through the functional and the layer."""
    check_op(
        lambda x: F.adaptive_avg_pool2d(x, output_size),
        lambda x: torch_functional.adaptive_avg_pool2d(x, output_size),
        shape,
    )
    check_op(
        lambda x: tg.nn.AdaptiveAvgPool2d(output_size)(x),
        lambda x: torch.nn.AdaptiveAvgPool2d(output_size)(x),
        shape,
    )


def test_adaptive_avg_pool2d_names_bad_sizes():
    with pytest.raises(ValueError, match="adaptive_avg_pool2d: output_size must be an int"):
        F.adaptive_avg_pool2d(tg.ones(1, 1, 4, 4), 0)
    with pytest.raises(ValueError, match=r"adaptive_avg_pool2d: the input must be \(N, C, H, W\)"):
        F.adaptive_avg_pool2d(tg.ones(4, 4), 2)
