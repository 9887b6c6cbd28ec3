"""The micro-engine (tinygrad_ops/micro.py) gives the full engine's gradients, stays under
150 lines, and trains a network (examples/micro_moons.py)."""

import contextlib
import io
import re
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

import tinygrad_ops as tg
from tinygrad_ops.micro import Value, topological_order

UNARY = ("tanh", "exp", "relu", "sigmoid", "log", "square", "cube", "reciprocal", "neg", "rsub")
BINARY_WITH_A_NUMBER = ("rsub", "rdiv", "radd", "rmul")
BINARY = ("add", "mul", "sub", "div")


def apply(name, *operands):
    """One op by name, on micro Values or on engine Tensors alike."""
    if name in ("tanh", "exp", "relu", "sigmoid", "log"):
        return getattr(operands[0], name)()
    unary = {
        "square": lambda a: a**2,
        "cube": lambda a: a**3,
        "reciprocal": lambda a: a**-1,
        "neg": lambda a: -a,
        "rsub": lambda a: 2.0 - a,
        "rdiv": lambda a: 3.0 / a,
        "radd": lambda a: 0.5 + a,
        "rmul": lambda a: -1.5 * a,
        "add": lambda a, b: a + b,
        "mul": lambda a, b: a * b,
        "sub": lambda a, b: a - b,
        "div": lambda a, b: a / b,
    }
    return unary[name](*operands)


def random_program(rng, leaves, steps):
    """A random graph as a list of (op name, operand positions); values stay in range."""
    values = [Value(leaf) for leaf in leaves]
    program = []
    for _ in range(steps):
        if rng.random() < 0.5:
            names = UNARY + BINARY_WITH_A_NUMBER
            name = names[rng.integers(len(names))]
            operands = [int(rng.integers(len(values)))]
        else:
            name = BINARY[rng.integers(len(BINARY))]
            operands = [int(rng.integers(len(values))) for _ in range(2)]  # may repeat
        if (
            name in ("reciprocal", "div", "rdiv")
            and np.min(np.abs(values[operands[-1]].data)) < 0.2
        ):
            continue
        if name == "log" and np.min(values[operands[0]].data) < 0.2:
            continue
        with np.errstate(all="ignore"):
            value = apply(name, *(values[i] for i in operands)).data
        # Keep the numbers in a tame range: no blow-ups (divisors near zero were skipped).
        if not np.all(np.isfinite(value)) or np.max(np.abs(value)) > 50:
            continue
        program.append((name, operands))
        values.append(Value(value))
    return program


def run(program, leaves):
    """The program's nodes; the loss is the sum of every node (all get a gradient)."""
    nodes = list(leaves)
    for name, operands in program:
        nodes.append(apply(name, *(nodes[i] for i in operands)))
    total = nodes[0].sum()
    for node in nodes[1:]:
        total = total + node.sum()
    return total


@pytest.mark.parametrize("seed", range(60))
def test_random_graphs_match_the_engine(seed):
    rng = np.random.default_rng(seed)
    shape = [(), (3,), (2, 3)][seed % 3]
    arrays = [rng.uniform(-1.5, 1.5, size=shape) for _ in range(3)]
    program = random_program(rng, arrays, steps=12)
    values = [Value(array) for array in arrays]
    tensors = [tg.Tensor(array, dtype=np.float64, requires_grad=True) for array in arrays]
    micro_loss = run(program, values)
    engine_loss = run(program, tensors)
    micro_loss.backward()
    engine_loss.backward()
    np.testing.assert_allclose(micro_loss.data, engine_loss.numpy(), rtol=1e-12)
    for value, tensor in zip(values, tensors):
        np.testing.assert_allclose(value.grad, tensor.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_a_chain_of_ten_thousand_nodes_needs_no_recursion():
    x, tensor = Value(0.3), tg.Tensor(0.3, dtype=np.float64, requires_grad=True)
    y, t = x, tensor
    for _ in range(10_000):
        y = (y * 1.0001).tanh() + 0.01
        t = (t * 1.0001).tanh() + 0.01
    assert len(topological_order(y)) > 30_000  # the constants are nodes too
    y.backward()
    t.backward()
    np.testing.assert_allclose(x.grad, tensor.grad.numpy(), rtol=1e-10)


def test_a_second_backward_adds_to_leaves_and_refreshes_intermediates():
    x = Value([0.5, -1.0])
    hidden = x * x  # shared by two consumers: its gradient is the sum of two
    loss = (hidden.tanh() + hidden.exp()).sum()
    loss.backward()
    first_x, first_hidden = x.grad.copy(), hidden.grad.copy()
    loss.backward()
    np.testing.assert_allclose(x.grad, 2 * first_x)  # leaves accumulate, as in PyTorch
    np.testing.assert_allclose(hidden.grad, first_hidden)  # not stale, not doubled
    tensor = tg.Tensor([0.5, -1.0], dtype=np.float64, requires_grad=True)
    engine_hidden = tensor * tensor
    engine_loss = (engine_hidden.tanh() + engine_hidden.exp()).sum()
    engine_loss.backward(retain_graph=True)
    engine_loss.backward()
    np.testing.assert_allclose(x.grad, tensor.grad.numpy(), rtol=1e-12)


def test_a_passed_through_gradient_is_never_written_in_place():
    # An Add hands its output's gradient to both operands as the same array; summing the
    # two with += would change the gradient the other consumer already holds.
    x = Value([1.0, 2.0])
    y = x + x
    z = y + y
    z.sum().backward()
    np.testing.assert_array_equal(x.grad, [4.0, 4.0])
    np.testing.assert_array_equal(y.grad, [2.0, 2.0])


def test_the_order_is_the_same_on_every_run():
    def ops():
        a, b = Value(1.0), Value(2.0)
        return [node.op for node in topological_order((a * b + b.exp()) * a.tanh())]

    assert ops() == ops() == ["", "", "*", "exp", "+", "tanh", "*"]


def test_shapes_that_differ_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="micro does not broadcast"):
        Value([1.0, 2.0]) + Value([1.0, 2.0, 3.0])


def test_micro_stays_under_150_lines():
    source = Path(topological_order.__code__.co_filename).read_text(encoding="utf-8")
    assert len(source.splitlines()) < 150


def test_a_number_on_the_left_of_every_operator():
    # The expression of micrograd's README (its expected numbers): 1 + c, 3 * d, 10.0 / f.
    a, b = Value(-4.0), Value(2.0)
    c = a + b
    d = a * b + b**3
    c = c + (c + 1)
    c = c + (1 + c + (-a))
    d = d + (d * 2 + (b + a).relu())
    d = d + (3 * d + (b - a).relu())
    f = (c - d) ** 2
    g = f / 2.0 + 10.0 / f
    g.backward()
    assert float(g.data) == pytest.approx(24.704082, abs=1e-6)
    assert float(a.grad) == pytest.approx(138.833819, abs=1e-6)
    assert float(b.grad) == pytest.approx(645.577259, abs=1e-6)
    assert float((1 - Value(0.25)).data) == 0.75


def test_sigmoid_and_log_match_the_engine_at_extreme_inputs():
    data = np.array([-800.0, -30.0, -1.0, 0.0, 2.0, 800.0])
    value = Value(data)
    tensor = tg.Tensor(data, dtype=np.float64, requires_grad=True)
    with np.errstate(over="raise", invalid="raise", divide="raise"):  # no overflow
        out = value.sigmoid()
        out.sum().backward()
    expected = tensor.sigmoid()
    expected.sum().backward()
    np.testing.assert_allclose(out.data, expected.numpy(), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(value.grad, tensor.grad.numpy(), rtol=1e-9, atol=1e-300)
    positive = Value([0.5, 3.0])
    positive.log().sum().backward()
    np.testing.assert_allclose(positive.grad, [2.0, 1 / 3])


def test_micro_moons_trains_to_95_percent(monkeypatch):
    script = Path(__file__).resolve().parent.parent / "examples" / "micro_moons.py"
    monkeypatch.setattr(sys, "argv", [script.name])
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        runpy.run_path(str(script), run_name="__main__")
    accuracy = float(re.search(r"test accuracy: ([\d.]+)%", printed.getvalue()).group(1))
    assert accuracy >= 95.0, printed.getvalue()
