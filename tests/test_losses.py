"""The losses against PyTorch (float64): cross_entropy with weight, ignore_index,
label_smoothing and probability targets, nll_loss, binary_cross_entropy (and with logits,
pos_weight), l1, huber, smooth_l1, kl_div; values and every input's gradient through
`check_op`, finite differences, the errors, and the fused path still taken where it can be."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF  # noqa: N812 (the conventional alias)
import torch.nn.functional as torch_functional
from helpers import check_op, random_inputs

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)
from tinygrad_ops.ops import CrossEntropy

TARGET = np.array([0, 2, 1, 2])
IGNORED = np.array([0, -100, 1, 2])
IGNORED_IN_RANGE = np.array([0, 1, 1, 2])
TARGET_3D = np.array([[0, 2, 1], [1, 1, -100]])  # for logits (2, 3, 3)
WEIGHT = np.array([0.5, 1.0, 2.0])


def case(name, ours, theirs, *specs, low=None, high=None, marks=()):
    return pytest.param(ours, theirs, specs, {"low": low, "high": high}, id=name, marks=marks)


def as_torch_options(options):
    """The same keyword options for PyTorch: numpy arrays as torch tensors."""
    return {
        key: torch.tensor(value) if isinstance(value, np.ndarray) else value
        for key, value in options.items()
    }


def both(name, function, *specs, low=None, high=None, marks=(), **options):
    """Our F.<function> and PyTorch's, with the same options."""
    ours = getattr(F, function)
    theirs = getattr(torch_functional, function)
    torch_options = as_torch_options(options)
    return case(
        name,
        lambda *t: ours(*t, **options),
        lambda *t: theirs(*t, **torch_options),
        *specs,
        low=low,
        high=high,
        marks=marks,
    )


def with_target(name, function, logits_shape, target, reduction="mean", **options):
    torch_options = as_torch_options(options)
    return case(
        name,
        lambda z: getattr(F, function)(z, target, reduction=reduction, **options),
        lambda z: getattr(torch_functional, function)(
            z, torch.tensor(target), reduction=reduction, **torch_options
        ),
        logits_shape,
    )


# PyTorch warns when a target is broadcast to the input (a note here, not a mistake) and
# that kl_div's "mean" is not the KL divergence.
# PyTorch's warnings and ours (tested below): a target of another shape, kl_div's "mean"
BROADCAST = pytest.mark.filterwarnings("ignore:.*that is different to the input:UserWarning")
KL_MEAN = pytest.mark.filterwarnings("ignore:.*reduction.{1,2}'mean' divides:UserWarning")

CASES = [
    with_target("ce_fused", "cross_entropy", (4, 3), TARGET),
    with_target("ce_weight", "cross_entropy", (4, 3), TARGET, weight=WEIGHT),
    with_target("ce_weight_sum", "cross_entropy", (4, 3), TARGET, "sum", weight=WEIGHT),
    with_target("ce_ignore", "cross_entropy", (4, 3), IGNORED),
    with_target("ce_ignore_none", "cross_entropy", (4, 3), IGNORED, "none"),
    with_target("ce_ignore_3d", "cross_entropy", (2, 3, 3), TARGET_3D, "sum"),
    with_target("ce_all_ignored_sum", "cross_entropy", (2, 3), np.array([-100, -100]), "sum"),
    with_target("ce_ignore_1", "cross_entropy", (4, 3), IGNORED_IN_RANGE, ignore_index=1),
    with_target("ce_smooth", "cross_entropy", (4, 3), TARGET, label_smoothing=0.1),
    with_target("ce_smooth_none", "cross_entropy", (4, 3), TARGET, "none", label_smoothing=0.2),
    with_target(
        "ce_everything", "cross_entropy", (4, 3), IGNORED, weight=WEIGHT, label_smoothing=0.3
    ),
    with_target(
        "ce_everything_sum",
        "cross_entropy",
        (4, 3),
        IGNORED,
        "sum",
        weight=WEIGHT,
        label_smoothing=0.3,
    ),
    with_target("ce_3d", "cross_entropy", (2, 3, 3), TARGET_3D, weight=WEIGHT, label_smoothing=0.1),
    with_target("ce_1d", "cross_entropy", (3,), np.array(2), label_smoothing=0.1),
    both("ce_probabilities", "cross_entropy", (4, 3), (4, 3), low=0.0, high=1.0),
    both(
        "ce_probabilities_options",
        "cross_entropy",
        (2, 3, 2),
        (2, 3, 2),
        low=0.0,
        high=1.0,
        weight=WEIGHT,
        label_smoothing=0.2,
        reduction="sum",
    ),
    with_target("nll", "nll_loss", (4, 3), TARGET),
    with_target("nll_weight_ignore", "nll_loss", (4, 3), IGNORED, weight=WEIGHT),
    with_target("nll_none", "nll_loss", (4, 3), IGNORED, "none", weight=WEIGHT),
    with_target("nll_3d_sum", "nll_loss", (2, 3, 3), TARGET_3D, "sum"),
    both("bce", "binary_cross_entropy", (2, 3), (2, 3), low=0.05, high=0.95),
    both(
        "bce_weight_sum",
        "binary_cross_entropy",
        (2, 3),
        (2, 3),
        low=0.05,
        high=0.95,
        weight=WEIGHT,
        reduction="sum",
    ),
    both("bce_0d", "binary_cross_entropy", (), (), low=0.05, high=0.95),
    both("bce_logits", "binary_cross_entropy_with_logits", (2, 3), (2, 3)),
    case(
        "bce_logits_at_zero",
        F.binary_cross_entropy_with_logits,
        torch_functional.binary_cross_entropy_with_logits,
        np.array([0.0, 0.0, 40.0, -40.0, 1.0]),
        np.array([0.0, 1.0, 0.0, 1.0, 0.5]),
    ),
    case(
        "bce_logits_pos_weight",
        lambda x, t: F.binary_cross_entropy_with_logits(x, t, WEIGHT, pos_weight=WEIGHT[::-1]),
        lambda x, t: torch_functional.binary_cross_entropy_with_logits(
            x, t, torch.tensor(WEIGHT), pos_weight=torch.tensor(WEIGHT[::-1].copy())
        ),
        (2, 3),
        (2, 3),
        low=0.1,
        high=2.0,
    ),
    both(
        "bce_logits_none",
        "binary_cross_entropy_with_logits",
        (4,),
        (4,),
        reduction="none",
        pos_weight=np.array(3.0),
    ),
    both("l1", "l1_loss", (2, 3), (2, 3)),
    both("l1_broadcast_sum", "l1_loss", (2, 3), (3,), reduction="sum", marks=BROADCAST),
    both("huber", "huber_loss", (3, 4), (3, 4)),
    both("huber_delta", "huber_loss", (3, 4), (3, 4), delta=0.4, reduction="none"),
    both("smooth_l1", "smooth_l1_loss", (3, 4), (3, 4)),
    both("smooth_l1_beta", "smooth_l1_loss", (3, 4), (3, 4), beta=0.3, reduction="sum"),
    both("smooth_l1_beta0", "smooth_l1_loss", (3, 4), (3, 4), beta=0.0),
    both("l1_empty", "l1_loss", (0, 3), (0, 3), reduction="sum"),
    both("kl", "kl_div", (2, 4), (2, 4), low=0.05, high=1.0, reduction="batchmean"),
    both("kl_mean", "kl_div", (2, 4), (2, 4), low=0.05, high=1.0, marks=KL_MEAN),
    both("kl_sum", "kl_div", (2, 4), (2, 4), low=0.05, high=1.0, reduction="sum"),
    both("kl_none_log", "kl_div", (2, 4), (2, 4), reduction="none", log_target=True),
]


@pytest.mark.parametrize(("ours", "theirs", "specs", "domain"), CASES)
def test_against_torch(ours, theirs, specs, domain):
    check_op(ours, theirs, *specs, **domain)


def test_kl_div_with_zero_targets_is_zero_there():
    x = np.log(np.array([[0.25, 0.25, 0.5]]))
    t = np.array([[0.0, 0.5, 0.5]])
    expected = torch_functional.kl_div(torch.tensor(x), torch.tensor(t), reduction="none")
    np.testing.assert_allclose(
        F.kl_div(tg.Tensor(x), tg.Tensor(t), reduction="none").numpy(), expected
    )


def test_integer_valued_float_targets_are_class_indices(monkeypatch):
    """tg.Tensor([0, 1]) is float32 here (an int64 tensor in PyTorch): it is taken as the
    class indices, by the fused op."""
    logits = tg.Tensor([[2.0, 0.0], [0.0, 1.0]])
    calls = []
    original = CrossEntropy.forward

    def counted(self, *arrays, **options):
        calls.append(arrays[1].dtype)
        return original(self, *arrays, **options)

    monkeypatch.setattr(CrossEntropy, "forward", counted)
    loss = F.cross_entropy(logits, tg.Tensor([0, 1]))
    expected = torch_functional.cross_entropy(
        torch.tensor([[2.0, 0.0], [0.0, 1.0]]), torch.tensor([0, 1])
    )
    np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-6)
    assert calls == [np.dtype(np.int64)]


def test_the_fused_op_is_kept_for_plain_integer_targets():
    logits = tg.Tensor(np.zeros((3, 4)), requires_grad=True)
    assert type(F.cross_entropy(logits, np.array([0, 1, 3])).grad_fn).__name__ == "CrossEntropy"
    ignored = F.cross_entropy(logits, np.array([0, -100, 3]))  # -100 found by the bounds check
    assert type(ignored.grad_fn).__name__ == "CrossEntropy"
    in_range = F.cross_entropy(logits, np.array([0, 1, 3]), ignore_index=1)
    assert type(in_range.grad_fn).__name__ != "CrossEntropy"


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"label_smoothing": 0.1},
        {"weight": WEIGHT},
        {"weight": WEIGHT, "label_smoothing": 0.3},
        {"ignore_index": 1, "label_smoothing": 0.2},
    ],
)
def test_every_target_ignored_gives_nan_and_zero_gradients_as_torch(options):
    (z,) = random_inputs((3, 3), seed=5)
    target = np.full(3, options.get("ignore_index", -100))
    torch_options = {
        k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in options.items()
    }
    ours, theirs = tg.Tensor(z, requires_grad=True), torch.tensor(z, requires_grad=True)
    loss = F.cross_entropy(ours, target, **options)
    expected = torch_functional.cross_entropy(theirs, torch.tensor(target), **torch_options)
    loss.backward()
    expected.backward()
    assert np.isnan(loss.item())
    assert np.isnan(expected.item())
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())  # zeros
    ours.grad = None
    F.nll_loss(
        F.log_softmax(ours, dim=1),
        target,
        **{k: v for k, v in options.items() if k != "label_smoothing"},
    ).backward()
    np.testing.assert_array_equal(ours.grad.numpy(), np.zeros((3, 3)))


@pytest.mark.parametrize(
    "options", [{}, {"weight": WEIGHT}, {"label_smoothing": 0.2}, {"reduction": "none"}]
)
def test_second_order_with_ignored_targets_matches_torch(options):
    """create_graph=True through the fused op (ignored targets) and the composed path."""
    (z,) = random_inputs((4, 3), seed=11)
    torch_options = {
        k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in options.items()
    }
    ours, theirs = tg.Tensor(z, requires_grad=True), torch.tensor(z, requires_grad=True)
    (grad,) = tg.grad(
        (F.cross_entropy(ours, IGNORED, **options) ** 2).sum(), [ours], create_graph=True
    )
    (grad * grad).sum().backward()
    expected = (
        torch_functional.cross_entropy(theirs, torch.tensor(IGNORED), **torch_options) ** 2
    ).sum()
    (torch_grad,) = torch.autograd.grad(expected, [theirs], create_graph=True)
    (torch_grad * torch_grad).sum().backward()
    np.testing.assert_allclose(grad.numpy(), torch_grad.detach().numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    "function",
    [
        lambda z, p: F.cross_entropy(z, IGNORED[:2], weight=WEIGHT, label_smoothing=0.2) * p.sum(),
        lambda z, p: F.cross_entropy(z, F.softmax(p, axis=1)),
        lambda z, p: F.binary_cross_entropy(z.sigmoid(), p.sigmoid()),
        lambda z, p: F.binary_cross_entropy_with_logits(z, p.sigmoid(), pos_weight=p[0].abs()),
        lambda z, p: F.huber_loss(z, p, delta=0.5) + F.smooth_l1_loss(z, p, beta=2.0),
        lambda z, p: F.kl_div(
            F.log_softmax(z, axis=1), F.softmax(p, axis=1), reduction="batchmean"
        ),
    ],
)
def test_finite_differences(function):
    """Also the gradients PyTorch does not give: pos_weight's, a probability target's."""
    z, p = (tg.Tensor(array, requires_grad=True) for array in random_inputs((2, 3), (2, 3), seed=9))
    assert tg.gradcheck(function, (z, p))


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda z: F.cross_entropy(z, tg.Tensor([0.5, 1.0])), TypeError, "must hold integers"),
        (
            lambda z: F.cross_entropy(z, np.array([0, 3]), weight=WEIGHT),
            IndexError,
            "out of bounds",
        ),
        (lambda z: F.cross_entropy(z, np.array([0, 1]), weight=np.ones(2)), ValueError, "weight"),
        (
            lambda z: F.cross_entropy(z, np.array([0, 1]), label_smoothing=1.5),
            ValueError,
            "label_smoothing",
        ),
        (
            lambda z: F.cross_entropy(z, np.array([0, 1]), weight=WEIGHT, reduction="avg"),
            ValueError,
            "reduction",
        ),
        (lambda z: F.nll_loss(z, np.array([0, 1, 2])), ValueError, "target of shape"),
        (lambda z: F.binary_cross_entropy(z + 2.0, z * 0.0), ValueError, r"\[0, 1\]"),
        (lambda z: F.binary_cross_entropy(z.sigmoid(), np.zeros(3)), ValueError, "shape"),
        (lambda z: F.huber_loss(z, z, delta=0.0), ValueError, "delta"),
        (lambda z: F.smooth_l1_loss(z, z, beta=-1.0), ValueError, "beta"),
        (lambda z: F.kl_div(z, z, reduction="average"), ValueError, "batchmean"),
    ],
)
def test_errors_name_the_op_and_argument(call, error, message):
    with pytest.raises(error, match=message):
        call(tg.Tensor(np.zeros((2, 3))))


# Probabilities at and near the ends, where log is clamped at -100 and PyTorch's gradient
# is (p - t) / max(p (1 - p), 1e-12), not the derivative of the clamped form.
EDGE_P = [0.0, 0.0, 1.0, 1.0, 0.0, 1e-13, 1e-50, 0.5, 1 - 1e-17, 1e-10, 0.999]
EDGE_T = [0.0, 1.0, 0.0, 1.0, 0.3, 0.5, 0.2, 0.2, 0.2, 0.7, 0.1]


@pytest.mark.parametrize(("dtype", "rtol"), [(np.float64, 1e-12), (np.float32, 1e-6)])
def test_binary_cross_entropy_at_probabilities_0_and_1_matches_torch(dtype, rtol):
    torch_dtype = getattr(torch, np.dtype(dtype).name)
    weight = np.linspace(0.5, 2.0, len(EDGE_P)).astype(dtype)
    upstream = np.linspace(-1.0, 1.5, len(EDGE_P)).astype(dtype)
    p, t = (tg.Tensor(np.array(v, dtype), requires_grad=True) for v in (EDGE_P, EDGE_T))
    torch_p, torch_t = (
        torch.tensor(v, dtype=torch_dtype, requires_grad=True) for v in (EDGE_P, EDGE_T)
    )
    loss = F.binary_cross_entropy(p, t, weight=tg.Tensor(weight), reduction="none")
    torch_loss = torch_functional.binary_cross_entropy(
        torch_p, torch_t, weight=torch.tensor(weight), reduction="none"
    )
    (loss * tg.Tensor(upstream)).sum().backward()
    (torch_loss * torch.tensor(upstream)).sum().backward()
    for ours, theirs in [(loss, torch_loss), (p.grad, torch_p.grad), (t.grad, torch_t.grad)]:
        assert ours.dtype == dtype
        np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=rtol)


def test_float16_binary_cross_entropy_at_0_and_1_has_infinite_gradients_as_torch():
    p = tg.Tensor(np.array([0.2, 0.0, 1.0], np.float16), requires_grad=True)
    loss = F.binary_cross_entropy(p, tg.Tensor(np.array([0.0, 1.0, 0.0], np.float16)))
    loss.backward()
    torch_p = torch.tensor([0.2, 0.0, 1.0], dtype=torch.float16, requires_grad=True)
    torch_loss = torch_functional.binary_cross_entropy(
        torch_p, torch.tensor([0.0, 1.0, 0.0], dtype=torch.float16)
    )
    torch_loss.backward()
    assert loss.dtype == np.float16
    assert loss.item() == torch_loss.item()
    np.testing.assert_allclose(p.grad.numpy(), torch_p.grad.numpy(), rtol=1e-3)


def test_binary_cross_entropy_is_twice_differentiable_as_torch():
    values, target = np.array([0.2, 0.7, 0.4]), np.array([0.0, 1.0, 0.5])
    p, torch_p = tg.Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    t, torch_t = tg.Tensor(target, requires_grad=True), torch.tensor(target, requires_grad=True)
    grads = tg.grad(F.binary_cross_entropy(p, t), [p, t], create_graph=True)
    torch_grads = torch.autograd.grad(
        torch_functional.binary_cross_entropy(torch_p, torch_t), [torch_p, torch_t],
        create_graph=True,
    )  # fmt: skip
    (second,) = tg.grad(sum((grad * grad).sum() for grad in grads), [p])
    (torch_second,) = torch.autograd.grad(sum((g * g).sum() for g in torch_grads), [torch_p])
    np.testing.assert_allclose(second.numpy(), torch_second.numpy(), rtol=1e-10)


@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_target_gradient_at_zero_negative_and_nan_targets_matches_torch(log_target):
    """kl_div is xlogy(t, t) - t x, as PyTorch's: at t = 0 the target's gradient is NaN
    (log 0 + 0/0), a negative target's loss is NaN (the formula dropped them before)."""
    x = np.log(np.array([[0.3, 0.7, 0.2, 0.5], [0.1, 0.1, 0.8, 0.4]]))
    t = np.array([[0.0, 1.0, 0.5, -0.5], [0.2, 0.0, 0.8, np.nan]])
    ours = [tg.Tensor(v, requires_grad=True) for v in (x, t)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (x, t)]
    loss = F.kl_div(*ours, reduction="none", log_target=log_target)
    expected = torch_functional.kl_div(*theirs, reduction="none", log_target=log_target)
    loss.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(loss.numpy(), expected.detach().numpy(), rtol=1e-12)
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-12)


# -- cross_entropy and mse_loss through tg.functional, and their errors ------------------------


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize(
    ("logits_shape", "target_shape"), [((5, 4), (5,)), ((3, 4, 2, 3), (3, 2, 3)), ((4,), ())]
)
def test_cross_entropy_matches_torch(reduction, logits_shape, target_shape):
    classes = logits_shape[1] if len(logits_shape) > 1 else logits_shape[0]
    target = np.random.default_rng(7).integers(0, classes, target_shape)
    check_op(
        lambda z, t: F.cross_entropy(z, t, reduction=reduction),
        lambda z, t: TF.cross_entropy(z, t, reduction=reduction),
        logits_shape,
        target,
    )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_matches_torch(reduction):
    check_op(
        lambda a, b: F.mse_loss(a, b, reduction),
        lambda a, b: TF.mse_loss(a, b, reduction=reduction),
        (3, 4),
        (3, 4),
    )


def test_cross_entropy_errors():
    logits = tg.zeros(2, 3)
    with pytest.raises(IndexError, match="target 3 is out of bounds for 3 classes"):
        F.cross_entropy(logits, np.array([0, 3]))
    with pytest.raises(IndexError, match="target -1"):
        F.cross_entropy(logits, np.array([-1, 0]))
    with pytest.raises(TypeError, match="must hold integers"):  # whole floats are indices
        F.cross_entropy(logits, np.array([0.5, 1.0]))
    with pytest.raises(ValueError, match=r"target of shape \(2,\), got \(3,\)"):
        F.cross_entropy(logits, np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(logits, np.array([0, 1]), reduction="avg")


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss"])
def test_a_target_of_another_shape_warns_as_torch_and_broadcasts(name):
    """A (N, 1) prediction against (N,) targets: an (N, N) loss, silently wrong but for
    PyTorch's warning, which we give too (pointing at the caller's line)."""
    prediction, target = np.arange(4.0).reshape(4, 1) / 10, np.arange(4.0) / 5
    with pytest.warns(UserWarning, match=f"{name}: using a target of shape") as caught:
        loss = getattr(F, name)(tg.Tensor(prediction), tg.Tensor(target))
    assert caught[0].filename == __file__
    with pytest.warns(UserWarning, match="Using a target size"):
        expected = getattr(torch_functional, name)(torch.tensor(prediction), torch.tensor(target))
    assert loss.item() == pytest.approx(expected.item(), rel=1e-12)


@pytest.mark.parametrize("name", ["l1_loss", "huber_loss", "smooth_l1_loss"])
def test_shapes_that_do_not_broadcast_are_an_error_naming_the_loss(name):
    with pytest.raises(ValueError, match=rf"{name}: input of shape \(3,\) and target of shape"):
        getattr(F, name)(tg.ones(3), tg.ones(4))


def test_kl_div_with_reduction_mean_warns_as_torch():
    x, t = tg.Tensor(np.log([[0.5, 0.5]])), tg.Tensor(np.array([[0.25, 0.75]]))
    with pytest.warns(UserWarning, match="kl_div: reduction='mean' divides"):
        F.kl_div(x, t)


@pytest.mark.parametrize(
    "target", [np.array(0), np.array(0.0), tg.Tensor(np.array(0.0))], ids=["int", "float", "tensor"]
)
def test_cross_entropy_of_0d_logits_is_an_error_naming_the_logits(target):
    with pytest.raises(ValueError, match=r"cross_entropy: logits must be .* got a 0-d tensor"):
        F.cross_entropy(tg.Tensor(np.array(1.0)), target)
