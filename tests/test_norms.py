"""The fused norms (ops/norms.py: layer_norm, rms_norm, batch_norm) against PyTorch in float64:
values and gradients over every normalized rank, batch_norm's running statistics, constant
and near-constant inputs, and the errors."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF  # noqa: N812 (the conventional alias)
from helpers import check_affine_norm, check_op

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)

SHAPES = [(5,), (3, 4), (2, 3, 4), (2, 1, 3, 2)]


def normalized_cases():
    """(shape, k) for every shape and every normalized rank k = 1..ndim."""
    return [(shape, k) for shape in SHAPES for k in range(1, len(shape) + 1)]


@pytest.mark.parametrize(("shape", "k"), normalized_cases())
def test_layer_norm_matches_torch(shape, k):
    normalized = shape[len(shape) - k :]
    check_affine_norm("layer_norm", shape, normalized)
    check_op(
        lambda x: F.layer_norm(x, normalized, eps=1e-3),
        lambda x: TF.layer_norm(x, normalized, eps=1e-3),
        shape,
    )


@pytest.mark.parametrize(("shape", "k"), normalized_cases())
def test_rms_norm_matches_torch(shape, k):
    normalized = shape[len(shape) - k :]
    check_affine_norm("rms_norm", shape, normalized)
    check_op(
        lambda x: F.rms_norm(x, normalized, eps=0.1),
        lambda x: TF.rms_norm(x, normalized, eps=0.1),
        shape,
    )


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 2, 1), (2, 3, 2, 2), (2, 2, 1, 3, 2)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_training_matches_torch_over_several_steps(shape, affine):
    generator = np.random.default_rng(3)
    channels = shape[1]
    ours_stats = [tg.zeros(channels, dtype=np.float64), tg.ones(channels, dtype=np.float64)]
    theirs_stats = [torch.zeros(channels, dtype=torch.float64), torch.ones(channels).double()]
    weight = generator.standard_normal(channels) if affine else None
    bias = generator.standard_normal(channels) if affine else None
    ours_affine = [tg.Tensor(v, requires_grad=True) if affine else None for v in (weight, bias)]
    theirs_affine = [
        torch.tensor(v, requires_grad=True) if affine else None for v in (weight, bias)
    ]
    for step in range(3):
        x = generator.standard_normal(shape) * (step + 1) + step
        upstream = generator.standard_normal(shape)
        ours_x = tg.Tensor(x, requires_grad=True)
        theirs_x = torch.tensor(x, requires_grad=True)
        out = F.batch_norm(ours_x, *ours_stats, *ours_affine, training=True, momentum=0.3)
        expected = TF.batch_norm(
            theirs_x, *theirs_stats, *theirs_affine, training=True, momentum=0.3
        )
        np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
        out.backward(upstream)
        expected.backward(torch.tensor(upstream))
        np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), atol=1e-10)
        for ours_stat, theirs_stat in zip(ours_stats, theirs_stats):
            np.testing.assert_allclose(ours_stat.numpy(), theirs_stat.numpy(), rtol=1e-12)
    for ours_parameter, theirs_parameter in zip(ours_affine, theirs_affine):
        if affine:  # accumulated over the three steps
            np.testing.assert_allclose(
                ours_parameter.grad.numpy(), theirs_parameter.grad.numpy(), atol=1e-10
            )


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 2, 2)])
def test_batch_norm_eval_matches_torch(shape):
    channels = shape[1]
    mean = np.linspace(-1, 1, channels)
    var = np.linspace(0.5, 2, channels)
    check_op(
        lambda x, w, b: F.batch_norm(x, tg.Tensor(mean), tg.Tensor(var), w, b, training=False),
        lambda x, w, b: TF.batch_norm(
            x, torch.tensor(mean), torch.tensor(var), w, b, training=False
        ),
        shape,
        (channels,),
        (channels,),
    )


@pytest.mark.parametrize("width", [6, 1024])  # 1024: the one-row ufunc buffer path
@pytest.mark.parametrize("offset", [0.0, 1e-9, 1e-4])
def test_norms_of_constant_and_near_constant_inputs(offset, width):
    base = np.full((3, width), 7.0)
    base[:, 0] += offset
    upstream = np.random.default_rng(0).standard_normal(base.shape)
    for ours, theirs in [
        (lambda x: F.layer_norm(x, (width,)), lambda x: TF.layer_norm(x, (width,))),
        (
            lambda x: F.batch_norm(x.T, None, None, training=True).T,
            lambda x: TF.batch_norm(x.T, None, None, training=True).T,
        ),
        (lambda x: F.rms_norm(x, (width,)), lambda x: TF.rms_norm(x, (width,))),
    ]:
        x = tg.Tensor(base, requires_grad=True)
        out = ours(x)
        out.backward(upstream)
        reference_x = torch.tensor(base, requires_grad=True)
        expected = theirs(reference_x)
        expected.backward(torch.tensor(upstream))
        assert np.all(np.isfinite(out.numpy()))
        assert np.all(np.isfinite(x.grad.numpy()))
        np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-9)
        np.testing.assert_allclose(x.grad.numpy(), reference_x.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_batch_norm_updates_running_stats_in_place_and_bumps_their_versions():
    mean, var = tg.zeros(2), tg.ones(2)
    mean_array, versions = mean.data, (mean._version[0], var._version[0])
    x = tg.Tensor([[1.0, 2.0], [3.0, 6.0], [5.0, 10.0]])
    F.batch_norm(x, mean, var, training=True, momentum=0.5)
    assert mean.data is mean_array
    np.testing.assert_allclose(mean.numpy(), [1.5, 3.0])
    np.testing.assert_allclose(var.numpy(), [0.5 + 0.5 * 4.0, 0.5 + 0.5 * 16.0])  # unbiased
    assert (mean._version[0], var._version[0]) == (versions[0] + 1, versions[1] + 1)
    before = mean.numpy().copy()
    F.batch_norm(x, mean, var, training=False)
    np.testing.assert_array_equal(mean.numpy(), before)


def test_batch_norm_errors():
    stats = (tg.zeros(3), tg.ones(3))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(tg.ones(1, 3), *stats, training=True)
    with pytest.raises(ValueError, match="empty batch"):
        F.batch_norm(tg.zeros(0, 3), *stats, training=True)
    assert F.batch_norm(tg.zeros(0, 3), *stats, training=False).shape == (0, 3)
    # one sample but several positions along L is fine in training, as in PyTorch
    assert F.batch_norm(tg.randn(1, 3, 4, seed=0), *stats, training=True).shape == (1, 3, 4)
    with pytest.raises(ValueError, match=r"\(N, C\) or \(N, C, ...\)"):
        F.batch_norm(tg.ones(3), *stats)
    with pytest.raises(ValueError, match="running_mean has shape"):
        F.batch_norm(tg.ones(2, 4), *stats)
    with pytest.raises(ValueError, match="momentum=None"):
        F.batch_norm(tg.ones(2, 3), *stats, training=True, momentum=None)
    with pytest.raises(TypeError, match="running_mean must be a Tensor"):
        F.batch_norm(tg.ones(2, 3), np.zeros(3), stats[1])


def test_wrong_normalized_shape_names_both_shapes():
    x = tg.ones(2, 3)
    for function in (F.layer_norm, F.rms_norm):
        with pytest.raises(ValueError, match=r"\(4,\).*\(2, 3\)"):
            function(x, (4,))
    with pytest.raises(ValueError, match=r"weight has shape \(2,\), expected \(3,\)"):
        F.layer_norm(x, (3,), tg.ones(2))


def test_batch_norm_2d_module_matches_torch_in_training_and_eval():
    """nn.BatchNorm2d: per channel over (N, H, W), running statistics, the state dict."""
    generator = np.random.default_rng(0)
    ours = tg.nn.BatchNorm2d(3, momentum=0.2, dtype=np.float64)
    theirs = torch.nn.BatchNorm2d(3, momentum=0.2)
    theirs.double()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for _ in range(2):
        x = generator.standard_normal((4, 3, 2, 5)) * 3 + 1
        upstream = generator.standard_normal(x.shape)
        ours_x, theirs_x = tg.Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        out, expected = ours(ours_x), theirs(theirs_x)
        np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-10)
        out.backward(upstream)
        expected.backward(torch.tensor(upstream))
        np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), atol=1e-10)
    for name, tensor in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[name].numpy(), tensor.numpy(), rtol=1e-10)
    ours.eval()
    theirs.eval()
    x = generator.standard_normal((2, 3, 2, 2))
    np.testing.assert_allclose(
        ours(tg.Tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), atol=1e-10
    )
    with pytest.raises(ValueError, match=r"BatchNorm2d\(3\): expected an input of shape"):
        ours(tg.ones(2, 3))


def test_batch_norm_of_images_second_derivatives_match_torch():
    x0 = np.random.default_rng(1).standard_normal((2, 2, 3, 2))
    x = tg.Tensor(x0.copy(), requires_grad=True)
    (grad,) = tg.grad(
        (F.batch_norm(x, None, None, training=True) ** 3).sum(), [x], create_graph=True
    )
    (grad * grad).sum().backward()
    xt = torch.tensor(x0.copy(), requires_grad=True)
    (grad_t,) = torch.autograd.grad(
        (TF.batch_norm(xt, None, None, training=True) ** 3).sum(), [xt], create_graph=True
    )
    (grad_t * grad_t).sum().backward()
    np.testing.assert_allclose(grad.numpy(), grad_t.detach().numpy(), atol=1e-9)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), atol=1e-8)


@pytest.mark.parametrize(
    ("shape", "groups", "affine"),
    [((2, 4, 3), 2, True), ((2, 6, 2, 3), 3, True), ((3, 4), 4, False), ((2, 4, 5), 1, True)],
)
def test_group_norm_matches_torch(shape, groups, affine):
    channels = shape[1]
    if affine:
        check_op(
            lambda x, w, b: F.group_norm(x, groups, w, b, eps=1e-3),
            lambda x, w, b: TF.group_norm(x, groups, w, b, eps=1e-3),
            shape,
            (channels,),
            (channels,),
        )
    else:
        check_op(lambda x: F.group_norm(x, groups), lambda x: TF.group_norm(x, groups), shape)


def test_group_norm_layer_matches_torch_and_names_bad_groups():
    ours, theirs = tg.nn.GroupNorm(2, 4, dtype=np.float64), torch.nn.GroupNorm(2, 4).double()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x = np.random.default_rng(0).standard_normal((3, 4, 2, 2))
    np.testing.assert_allclose(
        ours(tg.Tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), atol=1e-12
    )
    with pytest.raises(ValueError, match="num_groups 3 must divide num_channels 4"):
        tg.nn.GroupNorm(3, 4)
    with pytest.raises(ValueError, match="divides the 4 channels"):
        F.group_norm(tg.ones(2, 4), 3)
