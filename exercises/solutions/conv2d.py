"""The backward of a 2-D convolution (cross-correlation, as PyTorch's conv2d), stride 1,
no padding.

    forward:   y[n, f, i, j] = Σ_c Σ_p Σ_q x[n, c, i + p, j + q] w[f, c, p, q]
               x (N, C, H, W), w (F, C, kH, kW) -> y (N, F, H - kH + 1, W - kW + 1)
    backward:  dw[f, c, p, q] = Σ_n Σ_i Σ_j g[n, f, i, j] x[n, c, i + p, j + q]
               dx[n, c, i + p, j + q] += Σ_f g[n, f, i, j] w[f, c, p, q]   for every i, j, p, q

Every input pixel x[n, c, a, b] is used by each output (i, j) whose window covers it, so
its gradient is the sum over those windows (a "full" convolution of g with the flipped
kernel, if you like). Loop over the kernel offsets (p, q) and let numpy do the rest:
each offset is one slice of x and one (F, C) matrix of w. dw sums over the batch.
"""

import numpy as np


def forward(x, w):
    """y = conv2d(x, w), stride 1, no padding (for reference: nothing to write here)."""
    kernel_h, kernel_w = w.shape[2:]
    out_h, out_w = x.shape[2] - kernel_h + 1, x.shape[3] - kernel_w + 1
    y = np.zeros((x.shape[0], w.shape[0], out_h, out_w), dtype=np.result_type(x, w))
    for p in range(kernel_h):
        for q in range(kernel_w):
            window = x[:, :, p : p + out_h, q : q + out_w]  # (N, C, out_h, out_w)
            y += np.einsum("nchw,fc->nfhw", window, w[:, :, p, q])
    return y


def backward(x, w, grad_output):
    """(dx, dw) of y = forward(x, w): dx has x's shape, dw has w's."""
    # BEGIN SOLUTION
    kernel_h, kernel_w = w.shape[2:]
    out_h, out_w = grad_output.shape[2:]
    dx = np.zeros_like(x, dtype=np.result_type(x, w, grad_output))
    dw = np.zeros_like(w, dtype=dx.dtype)
    for p in range(kernel_h):
        for q in range(kernel_w):
            window = x[:, :, p : p + out_h, q : q + out_w]
            dw[:, :, p, q] = np.einsum("nfhw,nchw->fc", grad_output, window)
            dx[:, :, p : p + out_h, q : q + out_w] += np.einsum(
                "nfhw,fc->nchw", grad_output, w[:, :, p, q]
            )
    return dx, dw
    # END SOLUTION
