"""Naive reference kernels: forward and backward passes written as loops, for reading.

Each function takes and returns plain numpy arrays and spells out one formula with
explicit loops, the way you would derive it on paper. They are slow on purpose: their
job is to be obviously right, so that the tests can use them as a second oracle next to
PyTorch, and so that a student can read the backward rule of each op in one screen.

Notation: `g` (or `grad_output`) is dL/d(output); every `*_backward` returns dL/d(input)
for each differentiable input, in the order of the forward's arguments.

>>> import numpy as np
>>> from tinygrad_ops import reference
>>> reference.matmul(np.array([[1.0, 2.0]]), np.array([[3.0], [4.0]]))
array([[11.]])
"""

import math

import numpy as np

__all__ = [
    "batch_norm",
    "batch_norm_backward",
    "conv2d",
    "conv2d_backward",
    "layer_norm",
    "layer_norm_backward",
    "matmul",
    "matmul_backward",
    "rms_norm",
    "rms_norm_backward",
    "softmax",
    "softmax_backward",
]


# ----------------------------------------------------------------------------------------------
# Matrix multiplication


def matmul(A, B):
    """C = A B as the triple loop of the definition: C[i, j] = sum_k A[i, k] B[k, j].

    >>> import numpy as np
    >>> matmul(np.array([[1.0, 2.0], [3.0, 4.0]]), np.eye(2))
    array([[1., 2.],
           [3., 4.]])
    """
    rows, inner = A.shape
    inner_b, columns = B.shape
    if inner != inner_b:
        raise ValueError(f"matmul: shapes {A.shape} and {B.shape} are not aligned")
    C = np.zeros((rows, columns), dtype=np.result_type(A, B))
    for i in range(rows):
        for j in range(columns):
            total = 0.0
            for k in range(inner):
                total += A[i, k] * B[k, j]
            C[i, j] = total
    return C


def matmul_backward(A, B, grad_output):
    """dA = dC B^T and dB = A^T dC, as loops.

    C[i, j] = sum_k A[i, k] B[k, j], so dC[i, j]/dA[i, k] = B[k, j] and
    dC[i, j]/dB[k, j] = A[i, k]. Summing over every output element that an input touches:

        dA[i, k] = sum_j dC[i, j] B[k, j]   (that is dC B^T, shape (m, n) (n, k) -> (m, k))
        dB[k, j] = sum_i A[i, k] dC[i, j]   (that is A^T dC, shape (k, m) (m, n) -> (k, n))

    >>> import numpy as np
    >>> dA, dB = matmul_backward(np.array([[1.0, 2.0]]), np.array([[3.0], [4.0]]), np.ones((1, 1)))
    >>> dA, dB
    (array([[3., 4.]]), array([[1.],
           [2.]]))
    """
    rows, inner = A.shape
    columns = B.shape[1]
    grad_A = np.zeros(A.shape, dtype=np.result_type(A, grad_output))
    grad_B = np.zeros(B.shape, dtype=np.result_type(B, grad_output))
    for i in range(rows):
        for k in range(inner):
            for j in range(columns):
                grad_A[i, k] += grad_output[i, j] * B[k, j]
                grad_B[k, j] += A[i, k] * grad_output[i, j]
    return grad_A, grad_B


# ----------------------------------------------------------------------------------------------
# Softmax over the last axis


def _rows(x, trailing_dims):
    """View `x` as (rows, features), the features being the last `trailing_dims` dims."""
    features = math.prod(x.shape[x.ndim - trailing_dims :])
    return x.reshape(-1, features)


def softmax(x):
    """y_i = exp(x_i - m) / sum_j exp(x_j - m) over the last axis, m = max_j x_j.

    Subtracting m changes nothing mathematically (it multiplies the numerator and the
    denominator by exp(-m)); it keeps every exponent <= 0, so exp never overflows.

    >>> import numpy as np
    >>> softmax(np.array([1000.0, 1000.0]))
    array([0.5, 0.5])
    """
    rows = _rows(x, 1)
    out = np.zeros(rows.shape, dtype=rows.dtype)
    for r in range(rows.shape[0]):
        largest = max(rows[r])
        exps = [math.exp(value - largest) for value in rows[r]]
        total = sum(exps)
        for i in range(rows.shape[1]):
            out[r, i] = exps[i] / total
    return out.reshape(x.shape)


def softmax_backward(y, grad_output):
    """dx_i = y_i (g_i - sum_j g_j y_j), from the output y of the forward pass.

    The Jacobian is dy_i/dx_j = y_i (delta_ij - y_j); multiplying g by it gives the rule,
    without ever building the (n, n) matrix.

    >>> import numpy as np
    >>> y = softmax(np.array([0.0, 0.0]))
    >>> softmax_backward(y, np.array([1.0, 0.0]))
    array([ 0.25, -0.25])
    """
    y_rows = _rows(y, 1)
    g_rows = _rows(grad_output, 1)
    grad_x = np.zeros(y_rows.shape, dtype=np.result_type(y, grad_output))
    for r in range(y_rows.shape[0]):
        dot = sum(g_rows[r, j] * y_rows[r, j] for j in range(y_rows.shape[1]))
        for i in range(y_rows.shape[1]):
            grad_x[r, i] = y_rows[r, i] * (g_rows[r, i] - dot)
    return grad_x.reshape(y.shape)


# ----------------------------------------------------------------------------------------------
# Normalisations. All three share one backward shape: for x_hat = (x - mu) * rstd over a
# group of n values, dx = rstd * (d_x_hat - mean(d_x_hat) - x_hat * mean(d_x_hat * x_hat)).
# RMSNorm has no mean to subtract, so its rule drops the middle term.


def _normalize_shape(normalized_shape):
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(normalized_shape)


def _layer_norm_row(row, eps):
    """mu, rstd and x_hat of one group of values."""
    n = len(row)
    mean = sum(row) / n
    variance = sum((value - mean) ** 2 for value in row) / n  # biased: divide by n
    rstd = 1.0 / math.sqrt(variance + eps)
    return mean, rstd, [(value - mean) * rstd for value in row]


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """y = (x - mu) / sqrt(var + eps) * weight + bias over the last len(normalized_shape) dims.

    mu and var (biased, divided by n) are taken per sample, over those trailing dims.

    >>> import numpy as np
    >>> layer_norm(np.array([[1.0, 3.0]]), (2,), eps=0.0)
    array([[-1.,  1.]])
    """
    normalized_shape = _normalize_shape(normalized_shape)
    rows = _rows(x, len(normalized_shape))
    w = np.ones(rows.shape[1]) if weight is None else np.reshape(weight, -1)
    b = np.zeros(rows.shape[1]) if bias is None else np.reshape(bias, -1)
    out = np.zeros(rows.shape, dtype=rows.dtype)
    for r in range(rows.shape[0]):
        _, _, x_hat = _layer_norm_row(list(rows[r]), eps)
        for i in range(rows.shape[1]):
            out[r, i] = x_hat[i] * w[i] + b[i]
    return out.reshape(x.shape)


def _norm_backward_rows(x, grad_output, normalized_shape, weight):
    """What the norms' backward walks: x and grad_output as rows of the n normalised values,
    and the weight as n numbers (ones where there is none)."""
    rows = _rows(x, len(normalized_shape))
    g_rows = _rows(grad_output, len(normalized_shape))
    n = rows.shape[1]
    w = np.ones(n) if weight is None else np.reshape(weight, -1)
    return rows, g_rows, w


def layer_norm_backward(x, grad_output, normalized_shape, weight=None, eps=1e-5):
    """(dx, dweight, dbias) of `layer_norm`.

    With d_x_hat = g * weight, over each group of n values:

        dx      = rstd * (d_x_hat - mean(d_x_hat) - x_hat * mean(d_x_hat * x_hat))
        dweight = sum over samples of g * x_hat
        dbias   = sum over samples of g

    The two means are the two paths through which every x_i also moves mu and var.

    >>> import numpy as np
    >>> x, g = np.array([[1.0, 2.0, 6.0]]), np.array([[1.0, 0.0, 0.0]])
    >>> dx, dweight, dbias = layer_norm_backward(x, g, (3,))
    >>> np.round(dx, 4)
    array([[ 0.1763, -0.2204,  0.0441]])
    >>> bool(abs(dx.sum()) < 1e-12)  # shifting x leaves y unchanged, so dx sums to 0
    True
    """
    normalized_shape = _normalize_shape(normalized_shape)
    rows, g_rows, w = _norm_backward_rows(x, grad_output, normalized_shape, weight)
    samples, n = rows.shape
    grad_x = np.zeros(rows.shape, dtype=rows.dtype)
    grad_weight = np.zeros(n, dtype=rows.dtype)
    grad_bias = np.zeros(n, dtype=rows.dtype)
    for r in range(samples):
        _, rstd, x_hat = _layer_norm_row(list(rows[r]), eps)
        d_x_hat = [g_rows[r, i] * w[i] for i in range(n)]
        mean_d = sum(d_x_hat) / n
        mean_d_x_hat = sum(d_x_hat[i] * x_hat[i] for i in range(n)) / n
        for i in range(n):
            grad_x[r, i] = rstd * (d_x_hat[i] - mean_d - x_hat[i] * mean_d_x_hat)
            grad_weight[i] += g_rows[r, i] * x_hat[i]
            grad_bias[i] += g_rows[r, i]
    return (
        grad_x.reshape(x.shape),
        grad_weight.reshape(normalized_shape),
        grad_bias.reshape(normalized_shape),
    )


def _channel_values(x, channel):
    """Every value of `channel` in a batch of shape (N, C) or (N, C, L), as a flat list."""
    return list(np.asarray(x)[:, channel].reshape(-1))


def batch_norm(
    x,
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training=False,
    momentum=0.1,
    eps=1e-5,
):
    """y = (x - mu) / sqrt(var + eps) * weight + bias per channel, for x of shape (N, C[, L]).

    Training: mu and var are the batch statistics of each channel, over N (and L); the
    batch is normalised with the *biased* variance (divide by m = N*L), and the running
    statistics are updated in place with the *unbiased* one (divide by m - 1):

        running_mean = (1 - momentum) * running_mean + momentum * mu
        running_var  = (1 - momentum) * running_var  + momentum * var * m / (m - 1)

    Evaluation: mu and var are running_mean and running_var; nothing is updated.

    >>> import numpy as np
    >>> running_mean, running_var = np.zeros(1), np.ones(1)
    >>> batch_norm(np.array([[1.0], [3.0]]), running_mean, running_var, training=True, eps=0.0)
    array([[-1.],
           [ 1.]])
    >>> running_mean, running_var  # 0.9 * 0 + 0.1 * 2 and 0.9 * 1 + 0.1 * 2
    (array([0.2]), array([1.1]))
    """
    channels = x.shape[1]
    w = np.ones(channels) if weight is None else weight
    b = np.zeros(channels) if bias is None else bias
    out = np.zeros(x.shape, dtype=x.dtype)
    for c in range(channels):
        values = _channel_values(x, c)
        if training:
            m = len(values)
            mean, rstd, _ = _layer_norm_row(values, eps)
            biased_var = sum((value - mean) ** 2 for value in values) / m
            running_mean[c] = (1 - momentum) * running_mean[c] + momentum * mean
            running_var[c] = (1 - momentum) * running_var[c] + momentum * biased_var * m / (m - 1)
        else:
            mean = running_mean[c]
            rstd = 1.0 / math.sqrt(running_var[c] + eps)
        out[:, c] = (x[:, c] - mean) * rstd * w[c] + b[c]
    return out


def batch_norm_backward(
    x, grad_output, running_mean=None, running_var=None, weight=None, training=True, eps=1e-5
):
    """(dx, dweight, dbias) of `batch_norm`.

    Training: the LayerNorm rule, over each channel's m values of the batch instead of
    over each sample's features,

        dx = rstd * (d_x_hat - mean(d_x_hat) - x_hat * mean(d_x_hat * x_hat)),
        d_x_hat = g * weight.

    Evaluation: mu and var are constants, so the layer is affine and dx = g * weight * rstd.
    In both cases dweight = sum of g * x_hat and dbias = sum of g, per channel.

    >>> import numpy as np
    >>> x, g = np.array([[1.0], [2.0], [6.0]]), np.array([[1.0], [0.0], [0.0]])
    >>> dx, dweight, dbias = batch_norm_backward(x, g)
    >>> np.round(dx.T, 4)  # the LayerNorm example above, turned on its side
    array([[ 0.1763, -0.2204,  0.0441]])
    """
    channels = x.shape[1]
    w = np.ones(channels) if weight is None else weight
    grad_x = np.zeros(x.shape, dtype=x.dtype)
    grad_weight = np.zeros(channels, dtype=x.dtype)
    grad_bias = np.zeros(channels, dtype=x.dtype)
    for c in range(channels):
        values = _channel_values(x, c)
        grads = _channel_values(grad_output, c)
        m = len(values)
        if training:
            _, rstd, x_hat = _layer_norm_row(values, eps)
        else:
            rstd = 1.0 / math.sqrt(running_var[c] + eps)
            x_hat = [(value - running_mean[c]) * rstd for value in values]
        d_x_hat = [grads[i] * w[c] for i in range(m)]
        if training:
            mean_d = sum(d_x_hat) / m
            mean_d_x_hat = sum(d_x_hat[i] * x_hat[i] for i in range(m)) / m
            channel_grad = [
                rstd * (d_x_hat[i] - mean_d - x_hat[i] * mean_d_x_hat) for i in range(m)
            ]
        else:
            channel_grad = [rstd * d_x_hat[i] for i in range(m)]
        grad_x[:, c] = np.reshape(channel_grad, grad_x[:, c].shape)
        grad_weight[c] = sum(grads[i] * x_hat[i] for i in range(m))
        grad_bias[c] = sum(grads)
    return grad_x, grad_weight, grad_bias


def _rms_eps(eps, dtype):
    # PyTorch's default for RMSNorm: the machine epsilon of the input's dtype.
    return float(np.finfo(dtype).eps) if eps is None else eps


def rms_norm(x, normalized_shape, weight=None, eps=None):
    """y = x / sqrt(mean(x^2) + eps) * weight over the last len(normalized_shape) dims.

    LayerNorm without the centring: no mean subtracted, no bias. eps=None uses the
    machine epsilon of x's dtype (as PyTorch).

    >>> import numpy as np
    >>> rms_norm(np.array([[3.0, 4.0]]), (2,), eps=0.0) * np.sqrt(12.5)
    array([[3., 4.]])
    """
    normalized_shape = _normalize_shape(normalized_shape)
    eps = _rms_eps(eps, x.dtype)
    rows = _rows(x, len(normalized_shape))
    w = np.ones(rows.shape[1]) if weight is None else np.reshape(weight, -1)
    out = np.zeros(rows.shape, dtype=rows.dtype)
    for r in range(rows.shape[0]):
        n = rows.shape[1]
        rstd = 1.0 / math.sqrt(sum(value**2 for value in rows[r]) / n + eps)
        for i in range(n):
            out[r, i] = rows[r, i] * rstd * w[i]
    return out.reshape(x.shape)


def rms_norm_backward(x, grad_output, normalized_shape, weight=None, eps=None):
    """(dx, dweight) of `rms_norm`.

    With rstd = 1 / sqrt(mean(x^2) + eps), x_hat = x * rstd and d_x_hat = g * weight:

        dx      = rstd * (d_x_hat - x_hat * mean(d_x_hat * x_hat))
        dweight = sum over samples of g * x_hat

    >>> import numpy as np
    >>> dx, dw = rms_norm_backward(np.array([[3.0, 4.0]]), np.array([[4.0, -3.0]]), (2,), eps=0.0)
    >>> np.round(dx * np.sqrt(12.5), 6), np.round(dw * np.sqrt(12.5), 6)
    (array([[ 4., -3.]]), array([ 12., -12.]))
    """
    normalized_shape = _normalize_shape(normalized_shape)
    eps = _rms_eps(eps, x.dtype)
    rows, g_rows, w = _norm_backward_rows(x, grad_output, normalized_shape, weight)
    samples, n = rows.shape
    grad_x = np.zeros(rows.shape, dtype=rows.dtype)
    grad_weight = np.zeros(n, dtype=rows.dtype)
    for r in range(samples):
        rstd = 1.0 / math.sqrt(sum(value**2 for value in rows[r]) / n + eps)
        x_hat = [rows[r, i] * rstd for i in range(n)]
        d_x_hat = [g_rows[r, i] * w[i] for i in range(n)]
        mean_d_x_hat = sum(d_x_hat[i] * x_hat[i] for i in range(n)) / n
        for i in range(n):
            grad_x[r, i] = rstd * (d_x_hat[i] - x_hat[i] * mean_d_x_hat)
            grad_weight[i] += g_rows[r, i] * x_hat[i]
    return grad_x.reshape(x.shape), grad_weight.reshape(normalized_shape)


# ----------------------------------------------------------------------------------------------
# 2-D convolution (cross-correlation, as PyTorch's conv2d), with zero padding


def _conv_sizes(x, weight, stride, padding, dilation):
    out_h = (x.shape[2] + 2 * padding - dilation * (weight.shape[2] - 1) - 1) // stride + 1
    out_w = (x.shape[3] + 2 * padding - dilation * (weight.shape[3] - 1) - 1) // stride + 1
    return out_h, out_w


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """out[n, o, i, j] = b[o] + sum_{c, p, q} w[o, c, p, q] x[n, g C' + c, i s + p d - pad,
    j s + q d - pad], where g = o // O' is o's group (C' = C / groups, O' = O / groups) and
    x is 0 outside the image.

    >>> import numpy as np
    >>> conv2d(np.arange(9.0).reshape(1, 1, 3, 3), np.ones((1, 1, 2, 2)))
    array([[[[ 8., 12.],
             [20., 24.]]]])
    """
    batch, _, height, width = x.shape
    out_channels, group_channels, kernel_h, kernel_w = weight.shape
    out_h, out_w = _conv_sizes(x, weight, stride, padding, dilation)
    out = np.zeros((batch, out_channels, out_h, out_w), dtype=np.result_type(x, weight))
    for n, o, i, j in np.ndindex(*out.shape):
        group = o // (out_channels // groups)
        total = 0.0 if bias is None else bias[o]
        for c, p, q in np.ndindex(group_channels, kernel_h, kernel_w):
            row = i * stride + p * dilation - padding
            column = j * stride + q * dilation - padding
            if 0 <= row < height and 0 <= column < width:
                total += weight[o, c, p, q] * x[n, group * group_channels + c, row, column]
        out[n, o, i, j] = total
    return out


def conv2d_backward(x, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """(dx, dw, db): every product w[o, c, p, q] x[n, c', r, s] in the forward sum sends
    g[n, o, i, j] times the other factor to each factor, and db[o] sums g over n, i, j:

        dx[n, c', r, s] += g[n, o, i, j] w[o, c, p, q]
        dw[o, c, p, q]  += g[n, o, i, j] x[n, c', r, s]

    >>> import numpy as np
    >>> dx, dw, db = conv2d_backward(np.ones((1, 1, 2, 2)), np.ones((1, 1, 2, 2)),
    ...                              np.ones((1, 1, 1, 1)))
    >>> dx.ravel(), dw.ravel(), db
    (array([1., 1., 1., 1.]), array([1., 1., 1., 1.]), array([1.]))
    """
    height, width = x.shape[2:]
    out_channels, group_channels, kernel_h, kernel_w = weight.shape
    grad_x = np.zeros(x.shape, dtype=np.result_type(x, grad_output))
    grad_weight = np.zeros(weight.shape, dtype=np.result_type(weight, grad_output))
    grad_bias = grad_output.sum(axis=(0, 2, 3))
    for n, o, i, j in np.ndindex(*grad_output.shape):
        group = o // (out_channels // groups)
        for c, p, q in np.ndindex(group_channels, kernel_h, kernel_w):
            row = i * stride + p * dilation - padding
            column = j * stride + q * dilation - padding
            if 0 <= row < height and 0 <= column < width:
                channel = group * group_channels + c
                grad_x[n, channel, row, column] += grad_output[n, o, i, j] * weight[o, c, p, q]
                grad_weight[o, c, p, q] += grad_output[n, o, i, j] * x[n, channel, row, column]
    return grad_x, grad_weight, grad_bias
