"""User-defined ops, tg.Function (autograd/function.py), against PyTorch (float64)."""

import numpy as np
import pytest
from helpers import Cube, close, pair

import tinygrad_ops as tg

# -- custom Function ----------------------------------------------------------------------------


class ScaledExp(tg.Function):
    """out = scale * exp(x) * y, with a plain-number argument."""

    @staticmethod
    def forward(ctx, x, y, scale):
        out = x.exp() * y * scale
        ctx.save_for_backward(out, y)
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx, grad_output):
        out, y = ctx.saved_tensors
        return grad_output * out, grad_output * out / y, None


def test_custom_function_against_torch():
    x, xt = pair([0.5, -1.0])
    y, yt = pair([2.0, 3.0])
    out = ScaledExp.apply(x, y, 1.5)
    assert out.requires_grad
    assert not out.is_leaf
    (out * out).sum().backward()
    expected = xt.exp() * yt * 1.5
    (expected * expected).sum().backward()
    close(out, expected)
    close(x.grad, xt.grad)
    close(y.grad, yt.grad)


def test_custom_function_needs_input_grad_and_constants():
    seen = []

    class Recorder(tg.Function):
        @staticmethod
        def forward(ctx, a, b):
            seen.append(ctx.needs_input_grad)
            return a * b

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * 2, None

    x = tg.Tensor([1.0], requires_grad=True)
    Recorder.apply(x, tg.Tensor([3.0])).sum().backward()
    assert seen == [(True, False)]
    np.testing.assert_allclose(x.grad.numpy(), [2.0])
    with tg.no_grad():
        assert not Recorder.apply(x, x).requires_grad


def test_custom_function_forward_is_not_recorded():
    class Inspect(tg.Function):
        @staticmethod
        def forward(ctx, a):
            inner = a * 2
            assert not inner.requires_grad
            return inner

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * 2

    x = tg.Tensor([1.0], requires_grad=True)
    Inspect.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0])


def test_custom_function_with_create_graph():
    x = tg.Tensor(np.array([2.0, -1.0]), requires_grad=True)
    (first,) = tg.grad(Cube.apply(x).sum(), [x], create_graph=True)
    assert first.requires_grad
    np.testing.assert_allclose(first.numpy(), [12.0, 3.0])
    (second,) = tg.grad(first.sum(), [x])
    np.testing.assert_allclose(second.numpy(), [12.0, -6.0])


def test_custom_function_wrong_gradient_count_is_an_error():
    class TooMany(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, grad_output

    x = tg.Tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"TooMany.*2 gradients.*1 input"):
        TooMany.apply(x).sum().backward()


def test_custom_function_wrong_gradient_shape_names_the_op():
    class BadShape(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad_output):
            return tg.Tensor(np.ones((3, 3)))

    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"BadShape.*\(3, 3\).*\(2,\)"):
        BadShape.apply(x).sum().backward()


def test_custom_function_saved_tensor_modified_in_place_is_an_error():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    middle = x * 1
    out = Cube.apply(middle)
    middle.add_(1.0)
    with pytest.raises(RuntimeError, match="in-place"):
        out.sum().backward()


def test_custom_function_second_backward_says_to_retain_graph():
    x = tg.Tensor(np.array([1.0]), requires_grad=True)
    loss = Cube.apply(x).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match=r"retain_graph=True"):
        loss.backward()


def test_custom_function_may_return_numpy_arrays():
    class Doubler(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x.numpy() * 2

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output.numpy() * 2

    x = tg.Tensor(np.array([1.0, 3.0]), requires_grad=True)
    out = Doubler.apply(x)
    assert isinstance(out, tg.Tensor)
    (out * out).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [8.0, 24.0])


def test_anomaly_report_names_a_custom_function():
    class NanGradient(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * np.nan

    x = tg.Tensor(np.array([1.0]), requires_grad=True)
    with tg.detect_anomaly():
        out = NanGradient.apply(x)
        with pytest.raises(RuntimeError, match="NanGradient") as error:
            out.sum().backward()
    assert "test_anomaly_report_names_a_custom_function" in str(error.value)
