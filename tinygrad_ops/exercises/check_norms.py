"""Checks of layer_norm.py, rms_norm.py, batch_norm.py and matmul.py."""

from __future__ import annotations

import inspect
import re

import numpy as np

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops import reference

from .checking import Case, MismatchError, close, engine_gradients, numerical_gradient, random

EPS_HINT = "divide by sqrt(var + eps) (rstd), never by the standard deviation alone"


def _norm_input(shape, near_constant, seed=10):
    x = random(shape, seed)
    if near_constant:
        x[0] = 1.0 + 1e-7 * random(shape[1:], seed + 1)
    return x


def layer_norm_cases():
    def case(shape, k, weighted=True, near_constant=False, dtype=np.float64):
        def run(module):
            x = _norm_input(shape, near_constant)
            normalized = shape[len(shape) - k :]
            weight = random(normalized, 11) if weighted else None
            bias = random(normalized, 12)
            grad_output = random(shape, 13)

            def engine(x_t, w_t, b_t):
                return F.layer_norm(x_t, normalized, w_t if weighted else None, b_t)

            _, (dx, dw, db) = engine_gradients(
                engine, [x, weight if weighted else np.ones(normalized), bias], grad_output
            )
            got = module.backward(x.astype(dtype), grad_output.astype(dtype), k, weight)
            if not isinstance(got, tuple) or len(got) != 3:
                raise MismatchError("backward must return (dx, dweight, dbias)")
            rtol = 1e-4 if dtype == np.float32 else 1e-7
            close(got[0], dx, "dx vs the engine", rtol=rtol, atol=1e-6)
            close(got[2], db, "dbias vs the engine", rtol=rtol)
            if weighted:
                close(got[1], dw, "dweight vs the engine", rtol=rtol, atol=1e-6)
            if dtype == np.float64:
                ref = reference.layer_norm_backward(x, grad_output, normalized, weight)
                close(got[0], ref[0], "dx vs tinygrad_ops.reference", rtol=1e-7, atol=1e-6)
            if not near_constant and x.size <= 24:
                numeric = numerical_gradient(
                    lambda v: float((module.forward(v, k, weight, bias) * grad_output).sum()), x
                )
                close(got[0], numeric, "dx vs finite differences", rtol=1e-5, atol=1e-6)

        return run

    means = "dx has two extra terms: -mean(d x̂) and -x̂ mean(d x̂ x̂), means over the last k dims"
    return [
        Case("shape (4, 5), k = 1", means, case((4, 5), 1)),
        Case(
            "shape (2, 3, 4), k = 2",
            means + "; sum dweight over the leading dims only",
            case((2, 3, 4), 2),
        ),
        Case("no weight", "weight None means d x̂ = g", case((3, 4), 1, weighted=False)),
        Case("near-zero variance", EPS_HINT, case((3, 4), 1, near_constant=True)),
        Case("float32", "keep the input's dtype", case((3, 4), 1, dtype=np.float32)),
    ]


def rms_norm_cases():
    def case(shape, k, weighted=True, zero_row=False):
        def run(module):
            x = random(shape, 14)
            if zero_row:
                x[0] = 0.0
            normalized = shape[len(shape) - k :]
            weight = random(normalized, 15) if weighted else None
            grad_output = random(shape, 16)

            def engine(x_t, w_t):
                return F.rms_norm(x_t, normalized, w_t if weighted else None, eps=1e-6)

            _, (dx, dw) = engine_gradients(
                engine, [x, weight if weighted else np.ones(normalized)], grad_output
            )
            got = module.backward(x.copy(), grad_output.copy(), k, weight, 1e-6)
            if not isinstance(got, tuple) or len(got) != 2:
                raise MismatchError("backward must return (dx, dweight)")
            close(got[0], dx, "dx vs the engine", rtol=1e-7, atol=1e-6)
            if weighted:
                close(got[1], dw, "dweight vs the engine", rtol=1e-7, atol=1e-8)
            ref = reference.rms_norm_backward(x, grad_output, normalized, weight, eps=1e-6)
            close(got[0], ref[0], "dx vs tinygrad_ops.reference", rtol=1e-7, atol=1e-6)

        return run

    path = "every x_i also moves r: dx = r (d x̂ - x r² mean(d x̂ x))"
    return [
        Case("shape (4, 5), k = 1", path, case((4, 5), 1)),
        Case("shape (2, 3, 4), k = 2", path + ", over the last k dims", case((2, 3, 4), 2)),
        Case("no weight", "weight None means d x̂ = g and dweight None", case((3, 4), 1, False)),
        Case(
            "an all-zero row",
            "r = 1 / sqrt(0 + eps) is large but finite",
            case((3, 4), 1, zero_row=True),
        ),
    ]


def batch_norm_cases():
    def case(shape, training, near_constant=False):
        def run(module):
            x = _norm_input(shape, near_constant, seed=17)
            channels = shape[1]
            weight, bias = random((channels,), 18), random((channels,), 19)
            start_mean, start_var = random((channels,), 20), 1.0 + np.abs(random((channels,), 21))
            grad_output = random(shape, 22)
            mean_t, var_t = tg.Tensor(start_mean.copy()), tg.Tensor(start_var.copy())

            def engine(x_t, w_t, b_t):
                return F.batch_norm(x_t, mean_t, var_t, w_t, b_t, training=training)

            expected, (dx, dw, db) = engine_gradients(engine, [x, weight, bias], grad_output)
            running_mean, running_var = start_mean.copy(), start_var.copy()
            got = module.forward(x.copy(), running_mean, running_var, weight, bias, training)
            close(got, expected, "forward vs the engine", rtol=1e-7, atol=1e-7)
            close(running_mean, mean_t.numpy(), "running_mean after forward vs the engine")
            close(running_var, var_t.numpy(), "running_var after forward vs the engine")
            grads = module.backward(
                x.copy(), grad_output.copy(), start_mean, start_var, weight, training
            )
            if not isinstance(grads, tuple) or len(grads) != 3:
                raise MismatchError("backward must return (dx, dweight, dbias)")
            for got_grad, expected_grad, name in zip(
                grads, (dx, dw, db), ("dx", "dweight", "dbias")
            ):
                close(got_grad, expected_grad, f"{name} vs the engine", rtol=1e-6, atol=1e-6)
            if len(shape) <= 3:
                ref = reference.batch_norm_backward(
                    x, grad_output, start_mean, start_var, weight, training
                )
                close(grads[0], ref[0], "dx vs tinygrad_ops.reference", rtol=1e-6, atol=1e-6)

        return run

    unbiased = (
        "normalise with the biased variance (divide by m) but keep the unbiased one "
        "(× m / (m - 1)) in running_var; update the running statistics in place"
    )
    return [
        Case("training, shape (6, 3)", unbiased, case((6, 3), True)),
        Case(
            "training, shape (4, 3, 5)",
            unbiased + "; statistics over N and L (axes 0 and 2)",
            case((4, 3, 5), True),
        ),
        Case("training, a batch of 2", unbiased + " (here m / (m - 1) = 2)", case((2, 3), True)),
        Case(
            "eval, shape (6, 3)",
            "eval normalises with the running statistics and updates "
            "nothing; then dx = g w / sqrt(running_var + eps)",
            case((6, 3), False),
        ),
        Case(
            "eval, shape (4, 3, 5)",
            "broadcast the (C,) statistics as (1, C, 1)",
            case((4, 3, 5), False),
        ),
        Case("training, near-zero variance", EPS_HINT, case((6, 3), True, near_constant=True)),
    ]


_BANNED = re.compile(r"@|\bmatmul\b|\beinsum\b|\bdot\b|\btensordot\b|\binner\b")


def _matmul_loops(shape_a, shape_b):
    def run(module):
        A, B = random(shape_a, 23), random(shape_b, 24)
        close(module.matmul_loops(A, B), reference.matmul(A, B), "matmul_loops vs reference")

    return run


def _matmul_vectorised(shape_a, shape_b):
    def run(module):
        body = inspect.getsource(module.matmul).split('"""')[-1]
        if _BANNED.search(body):
            raise MismatchError("matmul uses @, matmul, dot or einsum: broadcast and sum instead")
        A, B = random(shape_a, 25), random(shape_b, 26)
        expected, _ = engine_gradients(
            lambda a, b: a @ b,
            [A, B],
            np.ones(np.broadcast_shapes(shape_a[:-2], shape_b[:-2]) + (shape_a[-2], shape_b[-1])),
        )
        close(module.matmul(A, B), expected, "matmul vs the engine", rtol=1e-10)

    return run


def _matmul_backward(shape_a, shape_b):
    def run(module):
        A, B = random(shape_a, 27), random(shape_b, 28)
        out_shape = np.broadcast_shapes(shape_a[:-2], shape_b[:-2]) + (shape_a[-2], shape_b[-1])
        grad_output = random(out_shape, 29)
        _, (dA, dB) = engine_gradients(lambda a, b: a @ b, [A, B], grad_output)
        got = module.matmul_backward(A, B, grad_output)
        if not isinstance(got, tuple) or len(got) != 2:
            raise MismatchError("matmul_backward must return (dA, dB)")
        close(got[0], dA, "dA vs the engine", rtol=1e-10)
        close(got[1], dB, "dB vs the engine", rtol=1e-10)
        if len(shape_a) == len(shape_b) == 2:
            ref = reference.matmul_backward(A, B, grad_output)
            close(got[0], ref[0], "dA vs tinygrad_ops.reference", rtol=1e-10)
        numeric = numerical_gradient(lambda v: float((np.matmul(v, B) * grad_output).sum()), A)
        close(got[0], numeric, "dA vs finite differences", rtol=1e-6, atol=1e-8)

    return run


def matmul_cases():
    shapes = "dA = dC Bᵀ (m, n)(n, k) and dB = Aᵀ dC: check the shapes"
    summed = "then sum over the batch dims an operand was broadcast along (sum_to_shape)"
    return [
        Case(
            "loops, (3, 4) @ (4, 2)", "C[i, j] = Σ_k A[i, k] B[k, j]", _matmul_loops((3, 4), (4, 2))
        ),
        Case("loops, (1, 1) @ (1, 1)", "start every C[i, j] at 0", _matmul_loops((1, 1), (1, 1))),
        Case(
            "vectorised, (3, 4) @ (4, 2)",
            "A[..., :, :, None] * B[..., None, :, :], summed over axis -2",
            _matmul_vectorised((3, 4), (4, 2)),
        ),
        Case(
            "vectorised, batch (2, 3, 4) @ (2, 4, 5)",
            "index from the end (...), so batch dims come along",
            _matmul_vectorised((2, 3, 4), (2, 4, 5)),
        ),
        Case(
            "vectorised, broadcast batch (2, 1, 3, 4) @ (5, 4, 6)",
            "batch dims broadcast",
            _matmul_vectorised((2, 1, 3, 4), (5, 4, 6)),
        ),
        Case("backward, (3, 4) @ (4, 2)", shapes, _matmul_backward((3, 4), (4, 2))),
        Case(
            "backward, batch (2, 3, 4) @ (2, 4, 5)",
            shapes + "; swap the last two dims only",
            _matmul_backward((2, 3, 4), (2, 4, 5)),
        ),
        Case(
            "backward, B shared by a batch: (2, 3, 4) @ (4, 5)",
            summed,
            _matmul_backward((2, 3, 4), (4, 5)),
        ),
        Case(
            "backward, broadcast batch (2, 1, 3, 4) @ (5, 4, 2)",
            summed + " (size-1 dims too)",
            _matmul_backward((2, 1, 3, 4), (5, 4, 2)),
        ),
    ]
