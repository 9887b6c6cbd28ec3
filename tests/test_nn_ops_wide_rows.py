"""The fused nn ops on rows of 512 to 8191 elements, where they run numpy's broadcast
updates with a ufunc buffer of one row (`RowBuffers`): the same numbers as PyTorch, in
float64, float32 and float16, with and without the affine parameters, through
create_graph; and the buffer size and error state are restored afterwards."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF  # noqa: N812 (the conventional alias)
from helpers import check_op

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)
from tinygrad_ops.ops import kernels


@pytest.mark.parametrize(("shape", "axis"), [((3, 600), -1), ((600, 3), 0), ((2, 520, 2), 1)])
def test_softmax_and_log_softmax_of_wide_rows_match_torch(shape, axis):
    check_op(lambda x: F.softmax(x, axis), lambda x: torch.softmax(x, axis), shape)
    check_op(lambda x: F.log_softmax(x, axis), lambda x: torch.log_softmax(x, axis), shape)


@pytest.mark.parametrize(("shape", "normalized"), [((3, 1024), (1024,)), ((2, 3, 200), (3, 200))])
@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
def test_layer_norm_of_wide_rows_matches_torch(shape, normalized, affine):
    def ours(x, *parameters):
        weight = parameters[0] if affine in ("both", "weight") else None
        bias = parameters[-1] if affine in ("both", "bias") else None
        return F.layer_norm(x, normalized, weight, bias)

    def theirs(x, *parameters):
        weight = parameters[0] if affine in ("both", "weight") else None
        bias = parameters[-1] if affine in ("both", "bias") else None
        return TF.layer_norm(x, normalized, weight, bias)

    parameters = {"both": 2, "weight": 1, "bias": 1, "none": 0}[affine]
    check_op(ours, theirs, shape, *[normalized] * parameters)


@pytest.mark.parametrize("with_weight", [True, False])
def test_rms_norm_of_wide_rows_matches_torch(with_weight):
    shapes = [(3, 700), (700,)] if with_weight else [(3, 700)]
    check_op(
        lambda x, *w: F.rms_norm(x, (700,), *w, eps=1e-6),
        lambda x, *w: TF.rms_norm(x, (700,), *w, eps=1e-6),
        *shapes,
    )


@pytest.mark.parametrize("shape", [(4, 600), (3, 520, 2)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_of_many_channels_matches_torch(shape, training):
    channels = shape[1]
    generator = np.random.default_rng(3)
    mean, var = generator.standard_normal(channels), generator.uniform(0.5, 2.0, channels)
    ours_stats = (tg.Tensor(mean.copy()), tg.Tensor(var.copy()))
    theirs_stats = (torch.tensor(mean.copy()), torch.tensor(var.copy()))
    check_op(
        lambda x, w, b: F.batch_norm(x, *ours_stats, w, b, training=training),
        lambda x, w, b: TF.batch_norm(x, *theirs_stats, w, b, training=training),
        shape,
        (channels,),
        (channels,),
    )
    np.testing.assert_allclose(ours_stats[0].numpy(), theirs_stats[0].numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours_stats[1].numpy(), theirs_stats[1].numpy(), rtol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_over_many_classes_matches_torch(reduction):
    target = np.random.default_rng(4).integers(0, 700, 5)
    check_op(
        lambda z: F.cross_entropy(z, target, reduction),
        lambda z: TF.cross_entropy(z, torch.tensor(target), reduction=reduction),
        (5, 700),
    )


def float32_cases(columns):
    return [
        (lambda x, w, b: F.softmax(x), lambda x, w, b: torch.softmax(x, -1)),
        (lambda x, w, b: F.log_softmax(x), lambda x, w, b: torch.log_softmax(x, -1)),
        (
            lambda x, w, b: F.layer_norm(x, (columns,), w, b),
            lambda x, w, b: TF.layer_norm(x, (columns,), w, b),
        ),
        (
            lambda x, w, b: F.rms_norm(x, (columns,), w),
            lambda x, w, b: TF.rms_norm(x, (columns,), w, eps=float(np.finfo("f4").eps)),
        ),
        (
            lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
            lambda x, w, b: TF.batch_norm(x, None, None, w, b, training=True),
        ),
        (
            lambda x, w, b: F.cross_entropy(x, TARGETS % columns, "none"),
            lambda x, w, b: TF.cross_entropy(x, torch.tensor(TARGETS % columns), reduction="none"),
        ),
    ]


TARGETS = np.random.default_rng(7).integers(0, 1 << 20, 16)  # taken modulo the class count


@pytest.mark.parametrize("case", range(6))
def test_float32_wide_rows_are_accurate_to_float32(case):
    """The benchmark's shape class: float32 in, float32 out, close to float64 PyTorch."""
    columns = 1024
    generator = np.random.default_rng(case)
    arrays = [
        (generator.standard_normal((16, columns)) * 3 + 1).astype(np.float32),
        generator.uniform(0.5, 1.5, columns).astype(np.float32),
        generator.standard_normal(columns).astype(np.float32),
    ]
    ours, theirs = float32_cases(columns)[case]
    inputs = [tg.Tensor(array, requires_grad=True) for array in arrays]
    out = ours(*inputs)
    upstream = generator.standard_normal(out.shape).astype(np.float32)
    out.backward(upstream)
    exact = [torch.tensor(array.astype(np.float64), requires_grad=True) for array in arrays]
    expected = theirs(*exact)
    expected.backward(torch.tensor(upstream.astype(np.float64)))
    assert out.dtype == np.float32
    scale = float(np.abs(expected.detach().numpy()).max())
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=2e-6 * scale)
    for mine, reference in zip(inputs, exact):
        if reference.grad is None:  # softmax, rms_norm, cross_entropy: no weight or bias
            continue
        assert mine.grad.dtype == np.float32
        grad_scale = float(np.abs(reference.grad.numpy()).max())
        np.testing.assert_allclose(
            mine.grad.numpy(), reference.grad.numpy(), atol=1e-5 * grad_scale
        )


@pytest.mark.parametrize("case", range(5))
def test_float16_wide_rows_are_computed_in_float32(case):
    columns = 1024
    generator = np.random.default_rng(10 + case)
    arrays = [
        (generator.standard_normal((4, columns)) * 8).astype(np.float16),
        generator.uniform(0.5, 1.5, columns).astype(np.float16),
        generator.standard_normal(columns).astype(np.float16),
    ]
    upstream = generator.standard_normal((4, columns)).astype(np.float16)
    ours, theirs = float32_cases(columns)[case]
    if case == 3:  # rms_norm's default eps is the machine epsilon of the input's dtype

        def theirs(x, w, b):
            return TF.rms_norm(x, (columns,), w, eps=float(np.finfo("f2").eps))

    inputs = [tg.Tensor(array, requires_grad=True) for array in arrays]
    out = ours(*inputs)
    out.backward(upstream)
    exact = [torch.tensor(array.astype(np.float64), requires_grad=True) for array in arrays]
    expected = theirs(*exact)
    expected.backward(torch.tensor(upstream.astype(np.float64)))
    assert out.dtype == np.float16
    assert np.all(np.isfinite(out.numpy()))
    scale = max(1.0, float(np.abs(expected.detach().numpy()).max()))
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=2e-3 * scale)
    for mine, reference in zip(inputs, exact):
        if reference.grad is None:
            continue
        assert mine.grad.dtype == np.float16
        grad_scale = max(1.0, float(np.abs(reference.grad.numpy()).max()))
        np.testing.assert_allclose(
            mine.grad.numpy(), reference.grad.numpy(), atol=4e-3 * grad_scale
        )


@pytest.mark.parametrize(
    ("ours", "theirs", "shapes"),
    [
        (lambda x: F.softmax(x), lambda x: torch.softmax(x, -1), [(2, 600)]),
        (
            lambda x, w, b: F.layer_norm(x, (600,), w, b),
            lambda x, w, b: TF.layer_norm(x, (600,), w, b),
            [(2, 600), (600,), (600,)],
        ),
        (
            lambda x, w: F.rms_norm(x, (600,), w, eps=1e-6),
            lambda x, w: TF.rms_norm(x, (600,), w, eps=1e-6),
            [(2, 600), (600,)],
        ),
        (
            lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
            lambda x, w, b: TF.batch_norm(x, None, None, w, b, training=True),
            [(3, 600), (600,), (600,)],
        ),
    ],
)
def test_double_backward_through_wide_rows_matches_torch(ours, theirs, shapes):
    """create_graph takes the composed rule; its gradients equal the fast rule's too."""
    generator = np.random.default_rng(5)
    arrays = [generator.standard_normal(shape) for shape in shapes]
    vectors = [generator.standard_normal(shape) for shape in shapes]
    upstream = generator.standard_normal(shapes[0])

    inputs = [tg.Tensor(array, requires_grad=True) for array in arrays]
    grads = tg.grad((ours(*inputs) * upstream).sum(), inputs, create_graph=True)
    fast = tg.grad((ours(*inputs) * upstream).sum(), inputs)
    total = (grads[0] * vectors[0]).sum()
    for grad, vector in zip(grads[1:], vectors[1:]):
        total = total + (grad * vector).sum()
    products = tg.grad(total, inputs, allow_unused=True)  # the bias enters linearly

    exact = [torch.tensor(array, requires_grad=True) for array in arrays]
    expected_grads = torch.autograd.grad(
        (theirs(*exact) * torch.tensor(upstream)).sum(), exact, create_graph=True
    )
    inner = sum((g * torch.tensor(v)).sum() for g, v in zip(expected_grads, vectors))
    expected_products = torch.autograd.grad(inner, exact, allow_unused=True)
    for mine, quick, reference in zip(grads, fast, expected_grads):
        np.testing.assert_allclose(mine.numpy(), reference.detach().numpy(), rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(quick.numpy(), reference.detach().numpy(), rtol=1e-8, atol=1e-10)
    for mine, reference, array in zip(products, expected_products, arrays):
        mine = np.zeros_like(array) if mine is None else mine.numpy()
        reference = np.zeros_like(array) if reference is None else reference.numpy()
        np.testing.assert_allclose(mine, reference, rtol=1e-7, atol=1e-9)


# ----------------------------------------------------------------------------------------------
# RowBuffers itself


@pytest.mark.parametrize(
    ("length", "inside"), [(511, 8192), (512, 512), (1000, 992), (1024, 1024), (8192, 8192)]
)
def test_row_buffers_sets_a_buffer_of_one_row_and_restores_it(length, inside):
    before = np.getbufsize()
    with kernels.RowBuffers(length):
        assert np.getbufsize() == inside
    assert np.getbufsize() == before


def test_row_buffers_restores_the_buffer_and_error_state_after_an_exception():
    before_size, before_errors = np.getbufsize(), np.geterr()
    seen = {}

    def fail_inside():
        with kernels.RowBuffers(1024, divide="ignore"):
            seen.update(size=np.getbufsize(), divide=np.geterr()["divide"])
            raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        fail_inside()
    assert seen == {"size": 1024, "divide": "ignore"}
    assert np.getbufsize() == before_size
    assert np.geterr() == before_errors


def test_the_ops_leave_numpy_settings_as_they_found_them():
    before_size, before_errors = np.getbufsize(), np.geterr()
    x = tg.Tensor(np.random.default_rng(0).standard_normal((2, 1024)), requires_grad=True)
    for function in (F.softmax, F.log_softmax, lambda t: F.layer_norm(t, (1024,))):
        function(x).sum().backward()
        assert np.getbufsize() == before_size
        assert np.geterr() == before_errors
