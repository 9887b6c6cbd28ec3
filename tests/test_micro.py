"""The micro-engine (tinygrad_ops/micro.py) gives the full engine's gradients."""

import numpy as np
import pytest

import tinygrad_ops as tg
from tinygrad_ops.micro import Value, topological_order

UNARY = ("tanh", "exp", "relu", "square", "cube", "reciprocal", "neg")
BINARY = ("add", "mul", "sub", "div")


def apply(name, *operands):
    """One op by name, on micro Values or on engine Tensors alike."""
    if name in ("tanh", "exp", "relu"):
        return getattr(operands[0], name)()
    unary = {
        "square": lambda a: a**2,
        "cube": lambda a: a**3,
        "reciprocal": lambda a: a**-1,
        "neg": lambda a: -a,
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
            name = UNARY[rng.integers(len(UNARY))]
            operands = [int(rng.integers(len(values)))]
        else:
            name = BINARY[rng.integers(len(BINARY))]
            operands = [int(rng.integers(len(values))) for _ in range(2)]  # may repeat
        if name in ("reciprocal", "div") and np.min(np.abs(values[operands[-1]].data)) < 0.2:
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
