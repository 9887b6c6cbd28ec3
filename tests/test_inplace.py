"""In-place operators (tinygrad_ops/autograd/inplace.py): `+= -= *= /=` change the tensor
itself, with version counters, PyTorch's leaf rule and PyTorch's casting rule."""

import numpy as np
import pytest
import torch
from helpers import close, pair

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812


def test_manual_sgd_under_no_grad_updates_the_parameter_itself():
    p = tg.Tensor([1.0, 2.0], requires_grad=True)
    (p * p).sum().backward()
    same = p
    with tg.no_grad():
        p -= 0.5 * p.grad
    assert p is same
    np.testing.assert_allclose(p.numpy(), [0.0, 0.0])
    assert p.is_leaf
    assert p.requires_grad


@pytest.mark.parametrize(
    "update",
    [
        lambda t: t.__iadd__(1.0),
        lambda t: t.__isub__(1.0),
        lambda t: t.__imul__(2.0),
        lambda t: t.__itruediv__(2.0),
    ],
)
def test_leaf_that_requires_grad_refuses_in_place_outside_no_grad(update):
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    message = "a leaf Variable that requires grad is being used in an in-place operation."
    with pytest.raises(RuntimeError, match=message):
        update(x)
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])
    xt = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=message):
        update(xt)


def test_version_counters_count_like_torch():
    ours, theirs = tg.Tensor([1.0, 2.0]), torch.tensor([1.0, 2.0])
    versions = []
    for tensor in (ours, theirs):
        tensor += 1
        tensor *= 2
        tensor -= tg.Tensor([1.0, 1.0]) if tensor is ours else torch.tensor([1.0, 1.0])
        tensor /= 4
        versions.append(tensor._version[0] if tensor is ours else tensor._version)
    assert versions[0] == versions[1] == 4
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())


def test_non_leaf_in_place_operators_are_recorded_like_torch():
    generator = np.random.default_rng(0)
    x_values = generator.standard_normal((3, 4))
    w_values = generator.standard_normal((4,))

    def run(module, x, w):
        y = x * 2
        y += x
        y *= w
        y -= 1.5
        y /= w * w + 1
        y += 3
        return (y * y).sum()

    x = tg.Tensor(x_values, requires_grad=True, dtype=np.float64)
    w = tg.Tensor(w_values, requires_grad=True, dtype=np.float64)
    run(tg, x, w).backward()
    xt = torch.tensor(x_values, requires_grad=True)
    wt = torch.tensor(w_values, requires_grad=True)
    run(torch, xt, wt).backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-10)


def test_in_place_operator_on_a_saved_tensor_makes_backward_refuse():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = (y * y).sum()  # saves y
    y += 1
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        z.backward()


@pytest.mark.parametrize(
    ("dtype", "torch_dtype", "value", "result"),
    [
        (np.int64, torch.int64, 1.5, "Float"),
        (np.int32, torch.int32, 0.5, "Float"),
        (np.bool_, torch.bool, 1, "Long"),
    ],
)
def test_in_place_result_that_cannot_be_cast_raises_as_torch(dtype, torch_dtype, value, result):
    ours = tg.Tensor(np.array([1, 0], dtype=dtype))
    theirs = torch.tensor([1, 0], dtype=torch_dtype)
    for tensor in (ours, theirs):
        with pytest.raises(RuntimeError, match=f"result type {result} can't be cast"):
            tensor += value
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours._version[0] == 0


def test_integer_true_division_in_place_raises_as_torch():
    ours = tg.Tensor(np.array([4, 2], dtype=np.int64))
    with pytest.raises(RuntimeError, match=r"result type Float can.t be cast .* type Long"):
        ours /= 2
    theirs = torch.tensor([4, 2])
    with pytest.raises(RuntimeError, match=r"result type Float can.t be cast .* type Long"):
        theirs /= 2


def test_in_place_result_is_cast_to_the_tensors_own_dtype():
    ours = tg.Tensor(np.array([1.0, 2.0], dtype=np.float32))
    ours += tg.Tensor(np.array([0.5, 0.25]), dtype=np.float64)
    assert ours.dtype == np.float32
    counts = tg.Tensor(np.array([1, 2], dtype=np.int32))
    counts += tg.Tensor(np.array([3, 4], dtype=np.int64))
    assert counts.dtype == np.int32
    np.testing.assert_array_equal(counts.numpy(), [4, 6])


def test_unsupported_operand_is_a_type_error():
    x = tg.Tensor([1.0])
    with pytest.raises(TypeError):
        x += object()


# -- in-place operations ------------------------------------------------------------------------


def test_inplace_on_a_saved_input_makes_backward_raise_naming_the_op():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = y.log()
    y.mul_(2)
    with pytest.raises(RuntimeError, match=r"Log.*in-place"):
        z.sum().backward()


def test_inplace_on_a_saved_output_makes_backward_raise_naming_the_op():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.add_(1.0)
    with pytest.raises(RuntimeError, match=r"Exp.*in-place"):
        y.sum().backward()


def test_inplace_through_a_view_is_detected():
    x = tg.Tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    z = y.log()
    with tg.no_grad():
        y[0:2].mul_(2)
    with pytest.raises(RuntimeError, match=r"Log.*in-place"):
        z.sum().backward()


@pytest.mark.parametrize(
    "view",
    [
        pytest.param(lambda t: t[0:2], id="getitem-of-leaf"),
        pytest.param(lambda t: t.reshape(3), id="reshape-of-leaf"),
        pytest.param(lambda t: (t * 1)[1:], id="getitem-of-non-leaf"),
        pytest.param(lambda t: (t * 1).T, id="transpose-of-non-leaf"),
    ],
)
def test_inplace_on_a_view_that_requires_grad_is_refused(view):
    """Its new node would not reach the viewed tensor's gradient (and a leaf's data would
    change under its gradient): refused, instead of silently wrong gradients."""
    x = tg.Tensor(np.array([1.0, -2.0, 3.0]), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Mul in place.*view"):
        view(x).mul_(2.0)
    np.testing.assert_array_equal(x.numpy(), [1.0, -2.0, 3.0])


@pytest.mark.parametrize(
    "modify",
    [
        pytest.param(lambda t: t.relu_(), id="relu_"),
        pytest.param(lambda t: t.add_(1.0), id="add_"),
        pytest.param(lambda t: t.mul_(2.0), id="mul_"),
        pytest.param(lambda t: t.zero_(), id="zero_"),
        pytest.param(lambda t: t.clamp_(0.0, 1.0), id="clamp_"),
    ],
)
def test_inplace_on_a_leaf_that_requires_grad_is_refused(modify):
    x = tg.Tensor([1.0, -2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        modify(x)
    np.testing.assert_array_equal(x.numpy(), [1.0, -2.0])


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        pytest.param(lambda t: t.relu_(), lambda t: t.relu_(), id="relu_"),
        pytest.param(lambda t: t.add_(1.5), lambda t: t.add_(1.5), id="add_"),
        pytest.param(lambda t: t.mul_(-2.0), lambda t: t.mul_(-2.0), id="mul_"),
        pytest.param(lambda t: t.zero_(), lambda t: t.zero_(), id="zero_"),
        pytest.param(lambda t: t.clamp_(-1.0, 1.0), lambda t: t.clamp_(-1.0, 1.0), id="clamp_"),
    ],
)
def test_inplace_on_a_non_leaf_gives_torch_gradients(ours, theirs):
    x, xt = pair([0.5, -2.0, 3.0])
    w, wt = pair([1.0, 2.0, -1.5])
    y, yt = x * w, xt * wt
    assert ours(y) is y
    theirs(yt)
    (y * y * w).sum().backward()
    (yt * yt * wt).sum().backward()
    close(y, yt)
    close(x.grad, xt.grad)
    close(w.grad, wt.grad)


def test_inplace_with_a_tensor_operand_gives_torch_gradients():
    x, xt = pair([0.5, -2.0])
    other, other_t = pair([3.0, 4.0])
    y, yt = x.exp(), xt.exp()
    y = y * 1
    yt = yt * 1
    y.mul_(other)
    yt.mul_(other_t)
    y.add_(other)
    yt.add_(other_t)
    y.sum().backward()
    yt.sum().backward()
    close(x.grad, xt.grad)
    close(other.grad, other_t.grad)


def test_consumers_recorded_before_an_inplace_op_keep_the_old_history():
    # z consumed y before y.mul_(5): z's gradient must not pass through the in-place op.
    x, xt = pair([1.0, 2.0])
    for engine_x in (x, xt):
        y = engine_x * 2
        z = y * 3
        y.mul_(5)
        w = y * 7
        y.add_(1)
        (z.sum() + w.sum() + y.sum()).backward()
    close(x.grad, xt.grad)  # 6 + 5 * 7 * 2 + 5 * 2 = 86 per element
    np.testing.assert_allclose(x.grad.numpy(), [86.0, 86.0])


def test_inplace_on_a_leaf_is_allowed_under_no_grad():
    x = tg.Tensor([1.0, -2.0], requires_grad=True)
    with tg.no_grad():
        x.mul_(2.0)
        x.relu_()
        x.add_(1.0)
    np.testing.assert_array_equal(x.numpy(), [3.0, 1.0])
    assert x.is_leaf
    assert x.requires_grad
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 2.0])


def test_inplace_under_no_grad_on_a_saved_tensor_is_still_detected():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    with tg.no_grad():
        x.add_(1.0)
    with pytest.raises(RuntimeError, match=r"Mul.*in-place"):
        loss.backward()


def test_version_checks_look_only_at_what_the_node_saved():
    """The check is lazy (ops/base.bump_version): a change anywhere makes backward look, and
    only a change of a saved input or output after the node was recorded refuses."""
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    other = tg.Tensor([5.0, 6.0])
    mask_input = tg.Tensor([1.0, -1.0], requires_grad=True)
    with tg.no_grad():
        other += 1.0  # before the nodes: nothing they saved
    y = (x * x).sum() + F.relu(mask_input).sum()
    unsaved = x + 1.0  # Add saves nothing: changing its output is harmless
    with tg.no_grad():
        other *= 2.0  # after the nodes, but not theirs
        unsaved *= 3.0
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
    np.testing.assert_allclose(mask_input.grad.numpy(), [1.0, 0.0])


def test_version_check_sees_a_change_after_an_unrelated_one():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    first = x * 1.0
    y = first.exp()  # saves its output
    with tg.no_grad():
        tg.Tensor([0.0]).add_(1.0)  # the newest change is not y's...
        y.mul_(2.0)  # ...but this one is
        tg.Tensor([0.0]).add_(1.0)
    with pytest.raises(RuntimeError, match="Exp has been modified by an in-place operation"):
        y.sum().backward()


@pytest.mark.parametrize("method", ["zero_", "fill_"])
def test_zero_and_fill_overwrite_nans_and_infs_as_torch(method):
    """They were recorded as a * 0 (+ value): a NaN or an inf stayed NaN, silently."""
    values = np.array([np.nan, np.inf, -np.inf, 1.5])
    arguments = () if method == "zero_" else (2.0,)
    ours, theirs = tg.Tensor(values.copy()), torch.tensor(values.copy())
    getattr(ours, method)(*arguments)
    getattr(theirs, method)(*arguments)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    # Recorded on a non-leaf: no gradient reaches the old values, as torch's.
    leaf = tg.Tensor(values.copy(), requires_grad=True)
    torch_leaf = torch.tensor(values.copy(), requires_grad=True)
    hidden, torch_hidden = leaf * 1, torch_leaf * 1
    getattr(hidden, method)(*arguments)
    getattr(torch_hidden, method)(*arguments)
    (hidden * 3 + leaf).sum().backward()
    (torch_hidden * 3 + torch_leaf).sum().backward()
    np.testing.assert_array_equal(hidden.numpy(), torch_hidden.detach().numpy())
    np.testing.assert_array_equal(leaf.grad.numpy(), torch_leaf.grad.numpy())


def test_fill_refuses_what_is_not_a_number():
    with pytest.raises(TypeError, match="fill_: value must be a number, got str"):
        tg.zeros(2).fill_("one")


def test_changing_relus_output_in_place_is_detected_as_pytorch_does():
    # Relu saves its output (as PyTorch's ReluBackward0), whose mask out != 0 is the
    # gradient's: changing that output in place before the backward would change the mask.
    x, xt = pair([-1.0, 2.0, -3.0, 4.0])
    for engine_x in (x, xt):
        y = engine_x.relu()
        y.add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an in"):
            y.sum().backward()
    x = tg.Tensor([-1.0, 2.0, -3.0, 4.0], requires_grad=True)
    y = x.relu()
    y.mul_(2.0)
    with pytest.raises(RuntimeError, match=r"Relu.*in-place"):
        y.sum().backward()
    # An in-place relu_ of a non-leaf is its own saved output: allowed, as in PyTorch.
    x, xt = pair([-1.0, 2.0, -3.0, 4.0])
    for engine_x in (x, xt):
        y = (engine_x * 1.0).relu_()
        (y * y).sum().backward()
    close(x.grad, xt.grad)
