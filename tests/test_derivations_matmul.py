"""docs/derivations.md's matmul section: its worked example, recomputed with the engine."""

from pathlib import Path

import numpy as np
import pytest

import tinygrad_ops as tg

TEXT = (Path(__file__).resolve().parent.parent / "docs" / "derivations.md").read_text()
A = [[1.0, 2.0], [3.0, 4.0]]
B = [[1.0, 0.0, -1.0], [2.0, 1.0, 0.0]]
G = [[1.0, -1.0, 0.5], [0.0, 2.0, 1.0]]


def _product(a, b, upstream):
    a = tg.Tensor(np.array(a), requires_grad=True)
    b = tg.Tensor(np.array(b), requires_grad=True)
    out = a @ b
    out.backward(np.array(upstream))
    return out.numpy(), a.grad.numpy(), b.grad.numpy()


def _written(array):
    """An array as the page writes it: [[1, 5, 3.5], [2, 6, 5]]."""
    if np.ndim(array) == 0:
        return f"{float(array):g}"
    return "[" + ", ".join(_written(item) for item in array) + "]"


def test_the_2d_example():
    out, dA, dB = _product(A, B, G)
    assert f"C = A B = {_written(out)}" in TEXT
    assert f"dA = G Bᵀ = {_written(dA)}" in TEXT
    assert f"dB = Aᵀ G = {_written(dB)}" in TEXT


def test_the_1d_example():
    out, da, dB = _product([1.0, -2.0], B, [1.0, -1.0, 0.5])
    assert f"`c = {_written(out)}`" in TEXT
    assert f"`da = B g = {_written(da)}`" in TEXT
    assert f"`dB = outer(a, g) = {_written(dB)}`" in TEXT


def test_the_batched_example_sums_the_shared_operand_over_the_batch():
    batched_a = np.array(A).reshape(2, 1, 2)
    _, dA, dB = _product(batched_a, B, np.array(G).reshape(2, 1, 3))
    _, flat_dA, flat_dB = _product(A, B, G)
    np.testing.assert_array_equal(dA.reshape(2, 2), flat_dA)
    np.testing.assert_array_equal(dB, flat_dB)
    assert f"`{_written(dA[0])}` and `{_written(dA[1])}`" in TEXT


@pytest.mark.parametrize("rule", ["dA_ip = Σ_j G_ij B_pj", "dB_pj = Σ_i A_ip G_ij", "unbroadcast"])
def test_the_rule_is_stated(rule):
    assert rule in TEXT
