"""The worked examples of docs/derivations.md, recomputed with our ops: the page's numbers
(printed to 6 decimals) must be what the code gives."""

import numpy as np

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)

X = [1.0, 2.0, 4.0]
G = np.array([1.0, -1.0, 0.5])
W = [2.0, 1.0, 0.5]


def leaf(values):
    return tg.Tensor(np.array(values, dtype=np.float64), requires_grad=True)


def close(actual, printed):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(printed), atol=1.5e-6)


def test_softmax_and_log_softmax_examples():
    x = leaf(X)
    y = F.softmax(x, axis=0)
    y.backward(G)
    close(y.numpy(), [0.042010, 0.114195, 0.843795])
    close(x.grad.numpy(), [0.027319, -0.154131, 0.126812])
    x = leaf(X)
    y = F.log_softmax(x, axis=0)
    y.backward(G)
    close(y.numpy(), [-3.169846, -2.169846, -0.169846])
    close(x.grad.numpy(), [0.978995, -1.057098, 0.078103])


def test_cross_entropy_example():
    z = leaf([[1.0, 2.0, 4.0], [0.5, 0.5, 0.5]])
    target = np.array([0, 2])
    close(F.cross_entropy(z, target, reduction="none").numpy(), [3.169846, 1.098612])
    loss = F.cross_entropy(z, target)
    loss.backward()
    close(loss.item(), 2.134229)
    close(z.grad.numpy(), [[-0.478995, 0.057098, 0.421898], [1 / 6, 1 / 6, -1 / 3]])


def test_layer_norm_example():
    x, w, b = leaf(X), leaf(W), leaf([0.0, 0.0, 1.0])
    y = F.layer_norm(x, (3,), w, b, eps=0.0)
    y.backward(G)
    close(y.numpy(), [-2.138090, -0.267261, 1.668153])
    close(x.grad.numpy(), [0.830419, -1.245628, 0.415209])
    close(w.grad.numpy(), [-1.069045, 0.267261, 0.668153])
    close(b.grad.numpy(), G)
    assert abs(x.grad.numpy().sum()) < 1e-12  # no component along (1, 1, 1)


def test_batch_norm_example():
    x, w = leaf([[1.0], [2.0], [4.0]]), leaf([2.0])
    mean, var = tg.zeros(1, dtype=np.float64), tg.ones(1, dtype=np.float64)
    y = F.batch_norm(x, mean, var, w, training=True, momentum=0.1, eps=0.0)
    y.backward(G.reshape(3, 1))
    close(x.grad.numpy().ravel(), [1.259946, -1.889919, 0.629973])
    close(mean.numpy(), [0.233333])
    close(var.numpy(), [1.133333])


def test_rms_norm_example():
    x, w = leaf(X), leaf(W)
    y = F.rms_norm(x, (3,), w, eps=0.0)
    y.backward(G)
    close(y.numpy(), [0.755929, 0.755929, 0.755929])
    close(x.grad.numpy(), [0.737931, -0.413961, 0.022498])
    close(w.grad.numpy(), [0.377964, -0.755929, 0.755929])


def test_linear_and_gelu_examples():
    x = leaf([[1.0, 2.0], [3.0, -1.0]])
    weight = leaf([[1.0, 0.0], [2.0, 1.0], [-1.0, 1.0]])
    bias = leaf([0.0, 1.0, 2.0])
    y = F.linear(x, weight, bias)
    y.backward(np.array([[1.0, 0.0, -1.0], [0.0, 2.0, 1.0]]))
    close(y.numpy(), [[1, 5, 3], [3, 6, -2]])
    close(x.grad.numpy(), [[2, -1], [3, 3]])
    close(weight.grad.numpy(), [[1, 2], [6, -2], [2, -3]])
    close(bias.grad.numpy(), [1, 2, 0])
    x = leaf([1.0])
    y = F.gelu(x)
    y.backward(np.ones(1))
    close(y.numpy(), [0.841345])
    close(x.grad.numpy(), [1.083315])


def test_conv2d_and_pooling_examples():
    x_values = [[1.0, 2.0, 0.0], [0.0, 1.0, 3.0], [2.0, 1.0, 1.0]]
    upstream = np.array([[[[1.0, 0.0], [-1.0, 2.0]]]])
    x, w, b = leaf([[x_values]]), leaf([[[[1.0, -1.0], [2.0, 0.0]]]]), leaf([0.5])
    y = F.conv2d(x, w, b)
    y.backward(upstream)
    close(y.numpy(), [[[[-0.5, 4.5], [3.5, 0.5]]]])
    close(w.grad.numpy(), [[[[3, 7], [0, 2]]]])
    close(b.grad.numpy(), [2])
    close(x.grad.numpy(), [[[[1, -1, 0], [1, 3, -2], [-2, 4, 0]]]])
    x = leaf([[x_values]])
    y = F.max_pool2d(x, 2, stride=1)
    y.backward(upstream)
    close(y.numpy(), [[[[2, 3], [2, 3]]]])
    close(x.grad.numpy(), [[[[0, 1, 0], [0, 0, 2], [-1, 0, 0]]]])
    x = leaf([[x_values]])
    y = F.avg_pool2d(x, 2, stride=1)
    y.backward(upstream)
    close(y.numpy(), [[[[1, 1.5], [1, 1.5]]]])
    close(x.grad.numpy(), [[[[0.25, 0.25, 0], [0, 0.5, 0.5], [-0.25, 0.25, 0.5]]]])


def test_binary_cross_entropy_example():
    p = leaf([0.2, 0.0])
    loss = F.binary_cross_entropy(p, tg.Tensor(np.array([0.0, 1.0])), reduction="none")
    loss.backward(np.ones(2))
    close(loss.numpy()[0], 0.223144)
    close(p.grad.numpy()[0], 1.25)
    assert loss.numpy()[1] == 100.0  # log 0 clamped at -100
    np.testing.assert_allclose(p.grad.numpy()[1], -1 / float(np.float32(1e-12)), rtol=1e-12)
