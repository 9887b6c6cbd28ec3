"""F.instance_norm, nn.InstanceNorm1d and nn.InstanceNorm2d against torch in float64:
values, the gradients of input, weight and bias, running statistics in training and
eval, state dicts, unbatched inputs and the refusals."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF  # noqa: N812 (the conventional alias)
from helpers import check_op

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)

RNG = np.random.default_rng(11)


@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 5), (1, 2, 3, 2, 2), (4, 1, 2)])
def test_instance_norm_against_torch(shape):
    channels = (shape[1],)
    check_op(F.instance_norm, TF.instance_norm, shape)
    check_op(
        lambda x, w, b: F.instance_norm(x, weight=w, bias=b, eps=1e-3),
        lambda x, w, b: TF.instance_norm(x, weight=w, bias=b, eps=1e-3),
        shape,
        channels,
        channels,
    )


@pytest.mark.parametrize(
    ("ours_class", "theirs_class", "shape"),
    [
        (tg.nn.InstanceNorm1d, torch.nn.InstanceNorm1d, (4, 3, 6)),
        (tg.nn.InstanceNorm1d, torch.nn.InstanceNorm1d, (3, 6)),
        (tg.nn.InstanceNorm2d, torch.nn.InstanceNorm2d, (4, 3, 5, 2)),
        (tg.nn.InstanceNorm2d, torch.nn.InstanceNorm2d, (3, 5, 2)),
    ],
)
@pytest.mark.parametrize(
    "options",
    [{}, {"affine": True}, {"affine": True, "track_running_stats": True, "momentum": 0.3}],
)
def test_instance_norm_layers_against_torch(ours_class, theirs_class, shape, options):
    theirs = theirs_class(3, **options).double()
    ours = ours_class(3, dtype=np.float64, **options)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    if options.get("affine"):
        with torch.no_grad():
            theirs.weight.uniform_(0.5, 1.5)
            theirs.bias.uniform_(-0.5, 0.5)
        ours.load_state_dict(theirs.state_dict())
    for training in (True, True, False):
        ours.train(training)
        theirs.train(training)
        x = RNG.standard_normal(shape) * 2 + 1
        our_x, their_x = tg.Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        out, expected = ours(our_x), theirs(their_x)
        np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-12)
        upstream = RNG.standard_normal(out.shape)
        out.backward(upstream)
        expected.backward(torch.tensor(upstream))
        np.testing.assert_allclose(our_x.grad.numpy(), their_x.grad.numpy(), atol=1e-12)
        for name, value in theirs.state_dict().items():
            np.testing.assert_allclose(ours.state_dict()[name].numpy(), value.numpy(), atol=1e-12)
    if options.get("affine"):
        np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), atol=1e-11)


def test_instance_norm_finite_differences():
    x = tg.Tensor(RNG.standard_normal((2, 2, 4)), requires_grad=True)
    w = tg.Tensor(RNG.standard_normal(2), requires_grad=True)
    assert tg.gradcheck(lambda x, w: F.instance_norm(x, weight=w), (x, w))


def test_instance_norm_refusals():
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        F.instance_norm(tg.ones(2, 3, 1))
    with pytest.raises(ValueError, match="size at dim 1"):
        tg.nn.InstanceNorm1d(4, affine=True)(tg.ones(2, 3, 5))
    with pytest.raises(ValueError, match="3-d"):
        tg.nn.InstanceNorm1d(3)(tg.ones(2, 3, 5, 5))
