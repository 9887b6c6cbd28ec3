"""Checks and diagnoses of layer_norm.py, rms_norm.py, batch_norm.py and matmul.py."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops import reference

from . import screen
from .checking import (
    Check,
    Diagnosis,
    MismatchError,
    close,
    engine_gradients,
    gives,
    matches,
    numerical_gradient,
    random,
)


def _norm_input(shape, near_constant, seed=10):
    x = random(shape, seed)
    if near_constant:
        x[0] = 1.0 + 1e-7 * random(shape[1:], seed + 1)
    return x


def _layer_norm_case(shape, k, weighted=True, near_constant=False, dtype=np.float64):
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


def layer_norm_checks():
    return [
        Check(
            "dx, dweight, dbias equal the engine's over the last dim, (4, 5)",
            "backward",
            _layer_norm_case((4, 5), 1),
        ),
        Check(
            "dx, dweight, dbias over the last 2 dims of (2, 3, 4)",
            "backward",
            _layer_norm_case((2, 3, 4), 2),
        ),
        Check("without a weight (None)", "backward", _layer_norm_case((3, 4), 1, weighted=False)),
        Check(
            "a row of nearly equal values (variance about 0) stays finite and right",
            "backward",
            _layer_norm_case((3, 4), 1, near_constant=True),
        ),
        Check("float32 input", "backward", _layer_norm_case((3, 4), 1, dtype=np.float32)),
    ]


def _layer_norm_parts(x, g, k, weight, eps=1e-5):
    axes = tuple(range(x.ndim - k, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)
    x_hat = (x - mean) * rstd
    d_x_hat = g * weight
    return axes, rstd, x_hat, d_x_hat


def layer_norm_diagnoses():
    x, g, weight = random((3, 4), 95), random((3, 4), 96), random((4,), 97)
    axes, rstd, x_hat, d_x_hat = _layer_norm_parts(x, g, 1, weight)
    mean_d = d_x_hat.mean(axis=axes, keepdims=True)
    mean_dx = (d_x_hat * x_hat).mean(axis=axes, keepdims=True)
    x3, g3 = random((2, 3, 4), 98), random((2, 3, 4), 99)

    def dx_is(wrong):
        return lambda m: matches((gives(m.backward, x, g, 1, weight) or (None,))[0], wrong)

    def no_eps(module):
        flat = 1.0 + 1e-9 * random((1, 4), 100)
        got = gives(module.backward, flat, np.ones((1, 4)), 1, None)
        return got is not None and not np.all(np.isfinite(np.asarray(got[0], float)))

    def parameter_shapes(module):
        got = gives(module.backward, x3, g3, 2, random((3, 4), 101))
        return got is not None and any(np.shape(part) != (3, 4) for part in got[1:])

    return [
        Diagnosis(
            "backward",
            "dx lacks the term -x̂ mean(d x̂ · x̂): every x_i also moves the variance",
            dx_is(rstd * (d_x_hat - mean_d)),
        ),
        Diagnosis(
            "backward",
            "dx lacks the term -mean(d x̂): every x_i also moves the mean",
            dx_is(rstd * (d_x_hat - x_hat * mean_dx)),
        ),
        Diagnosis(
            "backward",
            "d x̂ = g · weight: multiply grad_output by the weight before the rule",
            dx_is(
                rstd
                * (
                    g
                    - g.mean(axis=axes, keepdims=True)
                    - x_hat * (g * x_hat).mean(axis=axes, keepdims=True)
                )
            ),
        ),
        Diagnosis(
            "backward",
            "dweight and dbias have the shape of the last k dims: sum over the leading dims "
            "only (axis=tuple(range(x.ndim - k)))",
            parameter_shapes,
        ),
        Diagnosis(
            "backward",
            "divide by sqrt(σ² + eps), never by σ alone: a row of equal values has σ = 0",
            no_eps,
        ),
    ]


def rms_norm_checks():
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

    return [
        Check(
            "dx and dweight equal the engine's over the last dim, (4, 5)",
            "backward",
            case((4, 5), 1),
        ),
        Check("over the last 2 dims of (2, 3, 4)", "backward", case((2, 3, 4), 2)),
        Check("without a weight: dweight is None", "backward", case((3, 4), 1, False)),
        Check("an all-zero row stays finite and right", "backward", case((3, 4), 1, zero_row=True)),
    ]


def rms_norm_diagnoses():
    x, g = random((3, 4), 102), random((3, 4), 103)
    rstd = 1.0 / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-6)

    def zero_row(module):
        got = gives(module.backward, np.zeros((1, 4)), np.ones((1, 4)), 1, None, 1e-6)
        return got is not None and not np.all(np.isfinite(np.asarray(got[0], float)))

    return [
        Diagnosis(
            "backward",
            "dx lacks the path through r: every x_i also moves r, so dx = r (d x̂ - x r² "
            "mean(d x̂ · x))",
            lambda m: matches((gives(m.backward, x, g, 1, None, 1e-6) or (None,))[0], g * rstd),
        ),
        Diagnosis(
            "backward",
            "r = 1 / sqrt(mean(x²) + eps): without eps an all-zero row divides by 0",
            zero_row,
        ),
    ]


def _batch_norm_case(shape, training, part, near_constant=False):
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
        if part == "forward":
            running_mean, running_var = start_mean.copy(), start_var.copy()
            got = module.forward(x.copy(), running_mean, running_var, weight, bias, training)
            close(got, expected, "y vs the engine", rtol=1e-7, atol=1e-7)
            close(running_mean, mean_t.numpy(), "running_mean after forward vs the engine")
            close(running_var, var_t.numpy(), "running_var after forward vs the engine")
            return
        grads = module.backward(
            x.copy(), grad_output.copy(), start_mean, start_var, weight, training
        )
        if not isinstance(grads, tuple) or len(grads) != 3:
            raise MismatchError("backward must return (dx, dweight, dbias)")
        for got_grad, expected_grad, name in zip(grads, (dx, dw, db), ("dx", "dweight", "dbias")):
            close(got_grad, expected_grad, f"{name} vs the engine", rtol=1e-6, atol=1e-6)

    return run


def batch_norm_checks():
    return [
        Check(
            "training, (6, 3): y and the running statistics equal the engine's",
            "forward",
            _batch_norm_case((6, 3), True, "forward"),
        ),
        Check(
            "training, (4, 3, 5): statistics over N and L",
            "forward",
            _batch_norm_case((4, 3, 5), True, "forward"),
        ),
        Check(
            "training on a batch of 2: running_var keeps the unbiased variance",
            "forward",
            _batch_norm_case((2, 3), True, "forward"),
        ),
        Check(
            "eval, (6, 3): normalises with the running statistics, updates nothing",
            "forward",
            _batch_norm_case((6, 3), False, "forward"),
        ),
        Check(
            "training, (6, 3): dx, dweight, dbias equal the engine's",
            "backward",
            _batch_norm_case((6, 3), True, "backward"),
        ),
        Check(
            "training, (4, 3, 5): dx, dweight, dbias",
            "backward",
            _batch_norm_case((4, 3, 5), True, "backward"),
        ),
        Check(
            "eval, (4, 3, 5): dx, dweight, dbias with the running statistics",
            "backward",
            _batch_norm_case((4, 3, 5), False, "backward"),
        ),
        Check(
            "training, a channel of nearly equal values stays finite and right",
            "backward",
            _batch_norm_case((6, 3), True, "backward", near_constant=True),
        ),
    ]


def batch_norm_diagnoses():
    x = random((4, 2), 104)
    mean, var = x.mean(axis=0), x.var(axis=0)
    start_mean, start_var = np.zeros(2), np.ones(2)

    def after_forward(module, training=True):
        running_mean, running_var = start_mean.copy(), start_var.copy()
        try:  # not through gives(), which would hand the student copies
            with np.errstate(all="ignore"):
                y = module.forward(x.copy(), running_mean, running_var, None, None, training)
        except Exception:  # another mistake
            y = None
        return y, running_mean, running_var

    def eval_uses_batch(module):
        y, _, _ = after_forward(module, training=False)
        return matches(y, (x - mean) / np.sqrt(var + 1e-5))

    return [
        Diagnosis(
            "forward",
            "running_var keeps the unbiased variance: momentum × σ² × m / (m - 1) (normalise "
            "with the biased one)",
            lambda m: matches(after_forward(m)[2], 0.9 + 0.1 * var),
        ),
        Diagnosis(
            "forward",
            "normalise with the biased variance (divide by m); only running_var keeps the "
            "unbiased one",
            lambda m: matches(after_forward(m)[0], (x - mean) / np.sqrt(var * 4 / 3 + 1e-5)),
        ),
        Diagnosis(
            "forward",
            "update running_mean and running_var in place (*=, +=): the caller's arrays "
            "must change, a new local name changes nothing",
            lambda m: (
                after_forward(m)[0] is not None and np.array_equal(after_forward(m)[1], start_mean)
            ),
        ),
        Diagnosis(
            "forward",
            "eval normalises with running_mean and running_var, not with the batch's statistics",
            eval_uses_batch,
        ),
        Diagnosis(
            "backward",
            "in eval μ and σ² are constants: dx = g w / sqrt(running_var + eps), no mean terms",
            lambda m: matches(
                (gives(m.backward, x, np.ones((4, 2)), start_mean, start_var, None, False) or [0])[
                    0
                ],
                np.zeros((4, 2)),
                atol=1e-6,
            ),
        ),
    ]


def _matmul_rule(function, minimum_loops):
    """A check that `function` writes no matrix product, however spelled, and (for the
    loop version) is loops: static (its source) and dynamic (arrays that refuse one)."""

    def run(module):
        A, B = random((3, 4), 23).view(NoProduct), random((4, 2), 24).view(NoProduct)
        getattr(module, function)(A, B)  # first: a blank raises NotImplementedError here
        source = Path(module.__file__).read_text(encoding="utf-8")
        spellings = screen.matmul_spellings(source, function)
        if spellings:
            raise MismatchError(f"{function} uses a matrix product: {', '.join(spellings)}")
        depth = screen.loop_depth(source, function)
        if depth < minimum_loops:
            raise MismatchError(f"{function} has {depth} nested loop(s); it is the triple loop")

    return run


class NoProduct(np.ndarray):
    """An array that raises when it takes part in a matrix product by any numpy path."""

    PRODUCTS = ("matmul", "dot", "vdot", "inner", "outer", "einsum", "tensordot", "kron")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if ufunc.__name__ in self.PRODUCTS:
            raise MismatchError(f"a matrix product (np.{ufunc.__name__}) was computed")
        inputs = [np.asarray(i) if isinstance(i, NoProduct) else i for i in inputs]
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, function, types, args, kwargs):
        if function.__name__ in self.PRODUCTS:
            raise MismatchError(f"a matrix product (np.{function.__name__}) was computed")
        return super().__array_function__(function, types, args, kwargs)

    def dot(self, *args, **kwargs):
        raise MismatchError("a matrix product (.dot) was computed")


def _matmul_loops(shape_a, shape_b):
    def run(module):
        A, B = random(shape_a, 23), random(shape_b, 24)
        close(module.matmul_loops(A, B), reference.matmul(A, B), "matmul_loops vs reference")

    return run


def _matmul_vectorised(shape_a, shape_b):
    def run(module):
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

    return run


def matmul_checks():
    return [
        Check(
            "matmul_loops is the triple loop: nested loops and no matrix product (@, "
            "__matmul__, np.matmul, np.dot, einsum, ...)",
            "matmul_loops",
            _matmul_rule("matmul_loops", 2),
        ),
        Check(
            "matmul_loops of (3, 4) @ (4, 2) is right",
            "matmul_loops",
            _matmul_loops((3, 4), (4, 2)),
        ),
        Check("matmul_loops of (1, 1) @ (1, 1)", "matmul_loops", _matmul_loops((1, 1), (1, 1))),
        Check(
            "matmul uses no matrix product (@, __matmul__, np.matmul, np.dot, einsum, ...)",
            "matmul",
            _matmul_rule("matmul", 0),
        ),
        Check("matmul of (3, 4) @ (4, 2)", "matmul", _matmul_vectorised((3, 4), (4, 2))),
        Check(
            "matmul with batch dims, (2, 3, 4) @ (2, 4, 5)",
            "matmul",
            _matmul_vectorised((2, 3, 4), (2, 4, 5)),
        ),
        Check(
            "matmul with broadcast batch dims, (2, 1, 3, 4) @ (5, 4, 6)",
            "matmul",
            _matmul_vectorised((2, 1, 3, 4), (5, 4, 6)),
        ),
        Check(
            "matmul_backward of (3, 4) @ (4, 2)",
            "matmul_backward",
            _matmul_backward((3, 4), (4, 2)),
        ),
        Check(
            "matmul_backward with batch dims, (2, 3, 4) @ (2, 4, 5)",
            "matmul_backward",
            _matmul_backward((2, 3, 4), (2, 4, 5)),
        ),
        Check(
            "matmul_backward with B shared by a batch, (2, 3, 4) @ (4, 5)",
            "matmul_backward",
            _matmul_backward((2, 3, 4), (4, 5)),
        ),
        Check(
            "matmul_backward with broadcast batch dims, (2, 1, 3, 4) @ (5, 4, 2)",
            "matmul_backward",
            _matmul_backward((2, 1, 3, 4), (5, 4, 2)),
        ),
    ]


def _source_of(module, function):
    source = Path(module.__file__).read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            return ast.get_source_segment(source, node) or ""
    return ""


def matmul_diagnoses():
    A, B, dC = random((2, 3, 4), 105), random((4, 5), 106), random((2, 3, 5), 107)

    def product_in(function, minimum_loops):
        def probe(module):
            source = Path(module.__file__).read_text(encoding="utf-8")
            return bool(screen.matmul_spellings(source, function)) or (
                screen.loop_depth(source, function) < minimum_loops
            )

        return probe

    return [
        Diagnosis(
            "matmul_loops",
            "matmul_loops is the definition as loops: for i, for j, C[i, j] = Σ_k A[i, k] "
            "B[k, j], with no matrix product however it is spelled",
            product_in("matmul_loops", 2),
        ),
        Diagnosis(
            "matmul",
            "no matrix product here: broadcast A[..., :, :, None] * B[..., None, :, :] and "
            "sum over axis -2",
            product_in("matmul", 0),
        ),
        Diagnosis(
            "matmul_backward",
            "sum each gradient over the batch dims its operand was broadcast along "
            "(sum_to_shape(grad, B.shape)): B (4, 5) used by 2 matrices gets the sum of 2",
            lambda m: (
                np.shape((gives(m.matmul_backward, A, B, dC) or (None, None))[1]) == (2, 4, 5)
            ),
        ),
        Diagnosis(
            "matmul_backward",
            ".T reverses every dim: swap the last two only, np.swapaxes(B, -1, -2)",
            lambda m: (
                ".T" in _source_of(m, "matmul_backward")
                or "transpose()" in _source_of(m, "matmul_backward")
            ),
        ),
        Diagnosis(
            "matmul_backward",
            "sum_to_shape drops a size-1 dim: sum the stretched dims with keepdims=True",
            lambda m: np.shape(gives(m.sum_to_shape, np.ones((2, 3, 4)), (1, 3, 4)) or 0) == (3, 4),
        ),
    ]
