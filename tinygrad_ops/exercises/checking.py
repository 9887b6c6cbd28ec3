"""What every check uses: `Check`, `Diagnosis`, `MismatchError`, and the three oracles.

A check states one property of a student's function ("dx is 0 where x is exactly 0") and
raises `MismatchError` when it does not hold. When a function fails a check, its
diagnoses run: each probes the student's code for one known mistake (the hint comes from
what the code does, never from which check failed). The oracles are central differences
in float64 (`numerical_gradient`), `tinygrad_ops.reference` (the loop versions) and the
engine (`engine_gradients`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import tinygrad_ops as tg


class MismatchError(AssertionError):
    """A check's numbers disagree (the message says which, by how much, and where)."""


@dataclass
class Check:
    """One property of one function of an exercise; `run(module)` raises MismatchError
    when the module's `function` does not have it."""

    property: str  # a statement of what must hold, shown with the result
    function: str  # the student's function it tests: its diagnoses run when it fails
    run: Callable
    time_limit: float = 10.0  # seconds; a check running longer is stopped as a hang
    last: bool = False  # runs only once every other check has passed (the finishing test)


LAST_NOT_RUN = "not run: it runs once every other check passes"


@dataclass
class Diagnosis:
    """One known mistake in `function`: `probe(module)` is True when the module makes it;
    `mistake` is the hint, naming the mistake and what to write instead."""

    function: str
    mistake: str
    probe: Callable


def gives(function, *arguments):
    """What `function(*arguments)` returns (on copies of array arguments), or None when it
    raises (for probes)."""
    arguments = [a.copy() if isinstance(a, np.ndarray) else a for a in arguments]
    try:
        with np.errstate(all="ignore"):
            return function(*arguments)
    except Exception:  # a probe asks "does the code do X?"; raising means it does not
        return None


def raises(function, *arguments) -> bool:
    """True when `function(*arguments)` raises (for probes of calls that return None)."""
    try:
        with np.errstate(all="ignore"):
            function(*arguments)
    except Exception:  # a probe asks "does the code do X?"; raising means it does not
        return True
    return False


def matches(got, expected, rtol=1e-6, atol=1e-9):
    """True when `got` has `expected`'s shape and values (nan where it is nan); tuples
    are compared part by part."""
    if isinstance(expected, tuple):
        return (
            isinstance(got, (tuple, list))
            and len(got) == len(expected)
            and all(matches(g, e, rtol, atol) for g, e in zip(got, expected))
        )
    try:
        close(got, expected, "probe", rtol=rtol, atol=atol)
    except (MismatchError, TypeError, ValueError):
        return False
    return True


def close(got, expected, what, rtol=1e-6, atol=1e-9):
    """Raise MismatchError naming `what` unless `got` equals `expected` within the tolerances
    (nan where expected is nan); the message gives the largest error and where it is."""
    if got is None:
        raise MismatchError(f"{what}: returned None")
    got = np.asarray(got)
    expected = np.asarray(expected)
    if got.shape != expected.shape:
        raise MismatchError(f"{what}: shape {got.shape}, expected {expected.shape}")
    got64, expected64 = got.astype(np.float64), expected.astype(np.float64)
    if np.array_equal(np.isnan(got64), np.isnan(expected64)) and np.allclose(
        got64, expected64, rtol=rtol, atol=atol, equal_nan=True
    ):
        return
    with np.errstate(invalid="ignore"):
        error = np.abs(got64 - expected64)
    error = np.where(np.isnan(got64) != np.isnan(expected64), np.inf, np.nan_to_num(error))
    where = np.unravel_index(int(np.argmax(error)), error.shape) if error.ndim else ()
    raise MismatchError(
        f"{what}: max error {float(error[where]):.3g} at {tuple(int(i) for i in where)} "
        f"(got {float(got64[where]):.6g}, expected {float(expected64[where]):.6g})"
    )


def same_dtype(got, dtype, what):
    """Raise MismatchError unless `got` is an array of `dtype`."""
    found = getattr(got, "dtype", type(got).__name__)
    if found != np.dtype(dtype):
        raise MismatchError(f"{what}: dtype {found}, expected {np.dtype(dtype)} (the input's)")


def numerical_gradient(function, x, h=1e-6):
    """d function(x) / dx by central differences, in float64 (the checker's own oracle).

    >>> numerical_gradient(lambda v: float((v**2).sum()), np.array([1.0, -2.0])).round(6)
    array([ 2., -4.])
    """
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        original = x[index]
        x[index] = original + h
        above = function(x)
        x[index] = original - h
        below = function(x)
        x[index] = original
        grad[index] = (above - below) / (2 * h)
    return grad


def engine_gradients(function, arrays, grad_output):
    """(output, gradients): `function` on float64 Tensors of `arrays`, then backward with
    `grad_output`; gradients are numpy arrays, one per input array (None if unused)."""
    tensors = [tg.Tensor(np.array(a, dtype=np.float64), requires_grad=True) for a in arrays]
    out = function(*tensors)
    out.backward(tg.Tensor(np.asarray(grad_output, dtype=np.float64)))
    return out.numpy(), [None if t.grad is None else t.grad.numpy() for t in tensors]


def random(shape, seed, scale=1.0, dtype=np.float64):
    """Seeded normal numbers, away from 0 by at least 0.05 (kinks and divisions)."""
    values = np.random.default_rng(seed).standard_normal(shape) * scale
    values = np.where(np.abs(values) < 0.05, 0.05 * np.sign(values + 1e-12), values)
    return values.astype(dtype)


def shape_text(shape) -> str:
    return "a scalar" if shape == () else "shape (" + ", ".join(map(str, shape)) + ")"
