"""Bad input gets a clear error that names what was wrong, not a numpy traceback."""

import re

import numpy as np
import pytest

import tinygrad_ops as tg


def ones(*shape):
    return tg.Tensor(np.ones(shape))


def grad_ones(*shape):
    return tg.Tensor(np.ones(shape), requires_grad=True)


CASES = [
    pytest.param(lambda: ones(2, 3) @ ones(4, 5), ValueError, [r"\(2, 3\)", r"\(4, 5\)"],
                 id="matmul-inner"),
    pytest.param(lambda: ones(3) @ ones(4), ValueError, [r"\(3,\)", r"\(4,\)"],
                 id="matmul-vectors"),
    pytest.param(lambda: ones(2, 2, 3) @ ones(3, 3, 4), ValueError,
                 [r"\(2, 2, 3\)", r"\(3, 3, 4\)", "batch"], id="matmul-batch"),
    pytest.param(lambda: ones(2, 3) @ tg.Tensor(2.0), ValueError, ["matmul", r"\(\)"],
                 id="matmul-0d"),
    pytest.param(lambda: ones(2, 3) + ones(4, 5), ValueError, ["add", r"\(2, 3\)", r"\(4, 5\)"],
                 id="add"),
    pytest.param(lambda: ones(2, 3) - ones(2), ValueError, ["sub", r"\(2, 3\)", r"\(2,\)"],
                 id="sub"),
    pytest.param(lambda: ones(3) * ones(2), ValueError, ["mul", r"\(3,\)", r"\(2,\)"], id="mul"),
    pytest.param(lambda: ones(3) / ones(2), ValueError, ["div", r"\(3,\)", r"\(2,\)"], id="div"),
    pytest.param(lambda: ones(3) ** ones(2), ValueError, ["pow", r"\(3,\)", r"\(2,\)"], id="pow"),
    pytest.param(lambda: tg.maximum(ones(3), ones(2)), ValueError,
                 ["maximum", r"\(3,\)", r"\(2,\)"], id="maximum"),
    pytest.param(lambda: tg.where(np.array([True, False]), ones(3), 0.0), ValueError,
                 ["where", r"\(2,\)", r"\(3,\)"], id="where"),
    pytest.param(lambda: ones(3) < ones(2), ValueError, [r"\(3,\)", r"\(2,\)"], id="compare"),
    pytest.param(lambda: ones(2, 3).reshape(4, 2), ValueError, [r"\(2, 3\)", r"\(4, 2\)"],
                 id="reshape"),
    pytest.param(lambda: ones(2, 3).broadcast_to((4, 3)), ValueError, [r"\(2, 3\)", r"\(4, 3\)"],
                 id="broadcast_to"),
    pytest.param(lambda: tg.stack([ones(2), ones(3)]), ValueError, [r"\(2,\)", r"\(3,\)"],
                 id="stack"),
    pytest.param(lambda: tg.stack([]), ValueError, ["stack"], id="stack-empty"),
    pytest.param(lambda: tg.concatenate([ones(2, 2), ones(3, 3)]), ValueError,
                 [r"\(2, 2\)", r"\(3, 3\)"], id="concatenate"),
    pytest.param(lambda: ones(2, 3).sum(axis=2), ValueError, ["sum", "axis 2"], id="sum-axis"),
    pytest.param(lambda: ones(2, 3).max(axis=-3), ValueError, ["max", "axis -3"], id="max-axis"),
    pytest.param(lambda: ones(2, 3).sum(axis=(0, 0)), ValueError, ["repeats"],
                 id="repeated-axis"),
    pytest.param(lambda: ones(2, 3).sum(axis=1.5), TypeError, ["axis"], id="float-axis"),
    pytest.param(lambda: ones(0, 3).max(axis=0), ValueError, ["empty", r"\(0, 3\)"],
                 id="max-empty"),
    pytest.param(lambda: ones(0, 3).min(), ValueError, ["empty", r"\(0, 3\)"], id="min-empty"),
    pytest.param(lambda: ones(2, 3, 4).transpose(0, 0, 1), ValueError,
                 [r"\(0, 0, 1\)", r"\(2, 3, 4\)"],
                 id="transpose"),
    pytest.param(lambda: ones(2, 3).swapaxes(0, 5), ValueError,
                 ["swapaxes", "axis 5", "2-d tensor"], id="swapaxes"),
    pytest.param(lambda: ones(2, 3)[5], IndexError, ["5", r"\(2, 3\)"], id="index-out-of-range"),
    pytest.param(lambda: ones(2, 3)[0, 0, 0], IndexError, [r"\(2, 3\)"], id="too-many-indices"),
    pytest.param(lambda: ones(3)[tg.Tensor([0.0, 1.0])], IndexError, ["integer or boolean"],
                 id="float-index"),
    pytest.param(lambda: ones(3)["a"], IndexError, ["str"], id="string-index"),
    pytest.param(lambda: ones(2, 3).item(), ValueError, [r"\(2, 3\)"], id="item"),
    pytest.param(lambda: bool(ones(2, 3)), ValueError, ["ambiguous", r"\(2, 3\)"], id="bool"),
    pytest.param(lambda: len(tg.Tensor(1.0)), TypeError, ["0-d"], id="len-0d"),
    pytest.param(lambda: ones(2) + "a", TypeError, ["str"], id="add-string"),
    pytest.param(lambda: tg.stack([ones(2), "a"]), TypeError, ["str"], id="stack-string"),
    pytest.param(lambda: (grad_ones(2) * 2).backward(), RuntimeError, ["scalar", r"\(2,\)"],
                 id="backward-non-scalar"),
    pytest.param(lambda: (grad_ones(2) * 2).backward(np.ones(3)), RuntimeError,
                 [r"\(3,\)", r"\(2,\)"], id="backward-gradient-shape"),
    pytest.param(lambda: (ones(2) * 2).sum().backward(), RuntimeError, ["requires_grad=True"],
                 id="backward-without-grad"),
    pytest.param(lambda: tg.grad((grad_ones(2) * 2).sum(), [ones(2)]), RuntimeError,
                 ["inputs\\[0\\]", "does not require grad"], id="grad-input-without-grad"),
    pytest.param(lambda: tg.grad((grad_ones(2) * 2).sum(), [np.ones(2)]), TypeError,
                 ["inputs\\[0\\]", "ndarray"], id="grad-input-not-tensor"),
    pytest.param(lambda: tg.grad([(grad_ones(1) * 2).sum()], [grad_ones(1)],
                                 grad_outputs=[None, None]), ValueError, ["grad_outputs"],
                 id="grad-outputs-count"),
    pytest.param(lambda: (grad_ones(2) * 1).add_(ones(3, 2)), ValueError,
                 [r"\(3, 2\)", r"\(2,\)"], id="inplace-shape"),
    pytest.param(lambda: tg.set_default_scheduler("nope"), ValueError, ["nope", "sequential"],
                 id="unknown-scheduler"),
    pytest.param(lambda: tg.Tensor([[1.0, 2.0], [3.0]]), ValueError, ["ragged"], id="ragged"),
    pytest.param(lambda: tg.Tensor("abc"), TypeError, ["str"], id="string-data"),
    pytest.param(lambda: tg.Tensor([1, 2], dtype=np.int64, requires_grad=True), TypeError,
                 ["floating-point", "int64"], id="int-requires-grad"),
]  # fmt: skip


@pytest.mark.parametrize(("action", "error_type", "patterns"), CASES)
def test_error_message(action, error_type, patterns):
    with pytest.raises(error_type) as error:
        action()
    message = str(error.value)
    for pattern in patterns:
        assert re.search(pattern, message), (pattern, message)


@pytest.mark.parametrize(
    "action",
    [
        pytest.param(lambda: ones(2, 3) @ ones(4, 5), id="matmul"),
        pytest.param(lambda: ones(2, 3) + ones(4, 5), id="add"),
        pytest.param(lambda: ones(2, 3).reshape(4, 2), id="reshape"),
        pytest.param(lambda: ones(2, 3).broadcast_to((4, 3)), id="broadcast_to"),
        pytest.param(lambda: tg.concatenate([ones(2, 2), ones(3, 3)]), id="concatenate"),
        pytest.param(lambda: ones(2, 3)[5], id="getitem"),
        pytest.param(lambda: tg.Tensor([[1.0, 2.0], [3.0]]), id="ragged"),
    ],
)
def test_errors_do_not_chain_a_numpy_traceback(action):
    with pytest.raises((ValueError, IndexError)) as error:
        action()
    assert error.value.__cause__ is None
    assert error.value.__suppress_context__ or error.value.__context__ is None


def test_backward_rule_with_a_wrong_shape_names_the_op():
    class Broken(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad_output):
            return tg.Tensor(np.ones((2, 2)))

    with pytest.raises(RuntimeError, match=r"Broken.*\(2, 2\).*input 0.*\(3,\)"):
        Broken.apply(grad_ones(3)).sum().backward()


def test_second_backward_says_to_pass_retain_graph():
    x = grad_ones(2)
    loss = (x * x).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match=r"retain_graph=True"):
        loss.backward()


def test_inplace_error_names_the_op():
    y = grad_ones(2) * 1
    out = y * y.exp()
    y.zero_()
    with pytest.raises(RuntimeError, match=r"Mul.*in-place"):
        out.sum().backward()
