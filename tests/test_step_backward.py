"""`viz.step_backward`: the printed walk of a small known graph, asserted line by line."""

import io

import numpy as np
import pytest
from helpers import Cube

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops import viz


def named(value, name):
    tensor = tg.Tensor(value, requires_grad=True)
    tensor.name = name
    return tensor


def scalar_graph():
    """L = (a * b + c) * f with a=2, b=-3, c=10, f=-2 (so L = -8)."""
    a, b, c, f = named(2.0, "a"), named(-3.0, "b"), named(10.0, "c"), named(-2.0, "f")
    return (a * b + c) * f, (a, b, c, f)


# The ops of this graph form a chain, so their order is forced; the four leaves may be
# visited in any order after the ops that feed them (no test depends on one valid order).
SCALAR_OP_STEPS = """\
backward of t6 (scalar), scheduler sequential
[1] op2 Mul(t4 scalar, t5 f scalar) -> t6 scalar
    rule     out = t4 * t5;  d t4 = g * t5, d t5 = g * t4
    grad in  t6: 1
    sends    t4 <- -2
             t5 f <- 4
[2] op1 Add(t2 scalar, t3 c scalar) -> t4 scalar
    rule     out = t2 + t3;  d t2 = g, d t3 = g
    grad in  t4: -2
    sends    t2 <- -2
             t3 c <- -2
[3] op0 Mul(t0 a scalar, t1 b scalar) -> t2 scalar
    rule     out = t0 * t1;  d t0 = g * t1, d t1 = g * t0
    grad in  t2: -2
    sends    t0 a <- 6
             t1 b <- -4
"""
SCALAR_LEAF_STEPS = {
    "leaf t0 a scalar: .grad += 6",
    "leaf t1 b scalar: .grad += -4",
    "leaf t3 c scalar: .grad += -2",
    "leaf t5 f scalar: .grad += 4",
}


def split_walk(text):
    """The op steps (every line except the leaf lines) and the leaf lines without their
    step numbers; checks that the steps are numbered 1, 2, 3... in print order."""
    lines = text.splitlines(keepends=True)
    numbers = [int(line[1 : line.index("]")]) for line in lines if line.startswith("[")]
    assert numbers == list(range(1, len(numbers) + 1)), numbers
    leaf_lines = {line.split("] ", 1)[1].rstrip("\n") for line in lines if "] leaf " in line}
    op_lines = "".join(line for line in lines if "] leaf " not in line)
    return op_lines, leaf_lines


def test_scalar_graph_walk_is_printed_exactly():
    loss, _ = scalar_graph()
    out = io.StringIO()
    viz.step_backward(loss, file=out)
    op_lines, leaf_lines = split_walk(out.getvalue())
    assert op_lines == SCALAR_OP_STEPS
    assert leaf_lines == SCALAR_LEAF_STEPS


def test_step_backward_fills_grad_like_backward():
    loss, leaves = scalar_graph()
    viz.step_backward(loss, file=io.StringIO())
    reference_loss, reference_leaves = scalar_graph()
    reference_loss.backward()
    for leaf, reference in zip(leaves, reference_leaves, strict=True):
        assert leaf.grad is not None
        np.testing.assert_array_equal(leaf.grad.numpy(), reference.grad.numpy())
    assert [float(leaf.grad.item()) for leaf in leaves] == [6.0, -4.0, -2.0, 4.0]


# One leaf needs a gradient (x is data), so there is exactly one valid walk.
BROADCAST_WALK = """\
backward of t6 (scalar), scheduler sequential
[1] op4 Div(t5 scalar, 6) -> t6 scalar
    rule     out = t5 / 6;  d t5 = g / 6, db = -g * t5 / 6**2
    grad in  t6: 1
    sends    t5 <- 0.1667
[2] op3 Sum(t4 2×3) -> t5 scalar
    rule     out = sum of t4 over axes;  d t4 = g broadcast back over the summed axes
    grad in  t5: 0.1667
    sends    t4 <- [[0.1667, 0.1667, 0.1667],
                    [0.1667, 0.1667, 0.1667]]
[3] op2 Relu(t3 2×3) -> t4 2×3
    rule     out = max(t3, 0);  d t3 = g * (out != 0) (0 at t3 == 0, g at NaN: as PyTorch)
    grad in  t4: [[0.1667, 0.1667, 0.1667],
                  [0.1667, 0.1667, 0.1667]]
    sends    t3 <- [[0.1667, 0.1667, 0.1667],
                    [0.1667, 0, 0]]
[4] op1 Add(t2 2×3, 1) -> t3 2×3
    rule     out = t2 + 1;  d t2 = g, db = g
    grad in  t3: [[0.1667, 0.1667, 0.1667],
                  [0.1667, 0, 0]]
    sends    t2 <- [[0.1667, 0.1667, 0.1667],
                    [0.1667, 0, 0]]
[5] op0 Mul(t0 x 2×3, t1 w 3) -> t2 2×3
    rule     out = t0 * t1;  d t0 = g * t1, d t1 = g * t0
    grad in  t2: [[0.1667, 0.1667, 0.1667],
                  [0.1667, 0, 0]]
    sends    t1 w <- [0.8333, -0.3333, 0.5]   (summed from 2×3 back to 3)
[6] leaf t1 w 3: .grad += [0.8333, -0.3333, 0.5]
"""


def broadcast_graph():
    x = tg.Tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
    x.name = "x"
    w = named([0.5, -1.0, 2.0], "w")
    return (x * w + 1).relu().mean(), w


def test_broadcast_walk_is_printed_exactly():
    loss, w = broadcast_graph()
    out = io.StringIO()
    viz.step_backward(loss, file=out)
    assert out.getvalue() == BROADCAST_WALK
    # x * w + 1 = [[1.5, 3, 7], [3, -4, -11]]: ReLU passes the first row and one element
    # of the second; dw sums x * g over the rows, (1/6) * [1 + 4, -2, 3].
    np.testing.assert_allclose(w.grad.numpy(), [5 / 6, -2 / 6, 3 / 6], rtol=1e-6)


def test_step_backward_prints_to_stdout_by_default(capsys):
    loss, _ = broadcast_graph()
    viz.step_backward(loss)
    assert capsys.readouterr().out == BROADCAST_WALK


def test_non_scalar_loss_takes_a_gradient():
    x = named([1.0, -1.0], "x")
    out = io.StringIO()
    viz.step_backward(x * 3, gradient=np.array([1.0, 10.0], dtype=np.float32), file=out)
    assert out.getvalue() == (
        "backward of t1 (2), scheduler sequential\n"
        "[1] op0 Mul(t0 x 2, 3) -> t1 2\n"
        "    rule     out = t0 * 3;  d t0 = g * 3, db = g * t0\n"
        "    grad in  t1: [1, 10]\n"
        "    sends    t0 x <- [3, 30]\n"
        "[2] leaf t0 x 2: .grad += [3, 30]\n"
    )
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 30.0])


def test_named_scheduler_and_scheduler_object():
    class CountingScheduler:
        name = "counting"

        def __init__(self):
            self.runs = 0

        def run(self, graph):
            self.runs += 1
            for tensor in reversed(graph.order):
                grad = graph.pop_grad(tensor)
                if grad is not None:
                    graph.visit(tensor, grad)

    counting = CountingScheduler()
    loss, _ = broadcast_graph()
    out = io.StringIO()
    viz.step_backward(loss, scheduler=counting, file=out)
    assert counting.runs == 1
    assert out.getvalue() == BROADCAST_WALK.replace("scheduler sequential", "scheduler counting")
    loss, _ = broadcast_graph()
    out = io.StringIO()
    viz.step_backward(loss, scheduler="sequential", file=out)
    assert out.getvalue() == BROADCAST_WALK


def test_unknown_scheduler_and_bad_loss_are_clear_errors():
    loss, _ = scalar_graph()
    with pytest.raises(ValueError, match="unknown scheduler 'nope'"):
        viz.step_backward(loss, scheduler="nope", file=io.StringIO())
    with pytest.raises(TypeError, match="takes a Tensor, got list"):
        viz.step_backward([1.0], file=io.StringIO())


def test_graph_is_freed_and_retain_graph_keeps_it():
    loss, (a, *_) = scalar_graph()
    viz.step_backward(loss, file=io.StringIO(), retain_graph=True)
    loss.backward()  # the graph was kept: a second backward works and accumulates
    assert float(a.grad.item()) == 12.0
    loss, _ = scalar_graph()
    viz.step_backward(loss, file=io.StringIO())
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        loss.backward()


def test_data_inputs_get_no_gradient():
    # Only `w` requires grad; x is data, so MatMul sends a gradient to w alone.
    x = tg.Tensor([[1.0, 2.0]])
    w = named([[3.0], [4.0]], "w")
    out = io.StringIO()
    viz.step_backward((x @ w).sum(), file=out)
    assert out.getvalue() == (
        "backward of t3 (scalar), scheduler sequential\n"
        "[1] op1 Sum(t2 1×1) -> t3 scalar\n"
        "    rule     out = sum of t2 over axes;  d t2 = g broadcast back over the summed axes\n"
        "    grad in  t3: 1\n"
        "    sends    t2 <- [[1]]\n"
        "[2] op0 MatMul(t0 1×2, t1 w 2×1) -> t2 1×1\n"
        "    rule     out = t0 @ t1;  d t0 = g @ t1^T, d t1 = t0^T @ g\n"
        "    grad in  t2: [[1]]\n"
        "    sends    t1 w <- [[1],\n"
        "                      [2]]\n"
        "[3] leaf t1 w 2×1: .grad += [[1],\n"
        "                             [2]]\n"
    )


def rnn(steps):
    """h_t = tanh(x_t W + h_{t-1} U) for a batch of 2: a chain the scan schedulers take."""
    generator = np.random.default_rng(0)
    W = tg.Tensor(generator.standard_normal((3, 4)) * 0.5, requires_grad=True)
    U = tg.Tensor(generator.standard_normal((4, 4)) * 0.5, requires_grad=True)
    h0 = tg.Tensor(generator.standard_normal((2, 4)), requires_grad=True)
    h = h0
    for x in generator.standard_normal((steps, 2, 3)):
        h = (tg.Tensor(x) @ W + h @ U).tanh()
    return (h * h).sum(), [W, U, h0]


@pytest.mark.parametrize("scheduler", ["hillis-steele", "blelloch", "blocked"])
def test_a_scanned_chain_is_one_step(scheduler):
    loss, parameters = rnn(6)
    out = io.StringIO()
    viz.step_backward(loss, scheduler=scheduler, file=out)
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[0] == f"backward of t34 (scalar), scheduler {scheduler}"
    assert lines[1] == "[1] op25 Sum(t33 2×4) -> t34 scalar"
    scan_lines = [line for line in lines if " scan along the chain " in line]
    assert scan_lines == [
        f"[3] {scheduler} scan along the chain t3 -> t7 -> t12 -> t17 -> t22 -> t27 -> t32 "
        "(6 steps): all its gradients at once"
    ]
    assert "Tanh(" not in text  # the chain's ops are not visited one by one
    assert lines[-1].startswith("24 tensors got their gradients from a scan")
    reference_loss, reference_parameters = rnn(6)
    reference_loss.backward()
    for mine, expected in zip(parameters, reference_parameters, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), expected.grad.numpy(), rtol=1e-10)


def test_an_operand_left_out_is_printed_as_none():
    from tinygrad_ops import functional as F  # noqa: N812 (the conventional name)

    x = tg.Tensor(np.ones((2, 3)), requires_grad=True)
    weight = tg.Tensor(np.ones((1, 3)), requires_grad=True)
    out = io.StringIO()
    viz.step_backward(F.linear(x, weight).sum(), file=out)  # no bias: an input of None
    assert "Linear(t0 2×3, t1 1×3, None) -> t2 2×1" in out.getvalue()
    np.testing.assert_array_equal(weight.grad.numpy(), [[2.0, 2.0, 2.0]])


def test_a_custom_function_shows_its_own_name_and_rule():
    x = named([1.0, 2.0], "x")
    out = io.StringIO()
    viz.step_backward(Cube.apply(x).sum(), file=out)
    assert out.getvalue() == (
        "backward of t2 (scalar), scheduler sequential\n"
        "[1] op1 Sum(t1 2) -> t2 scalar\n"
        "    rule     out = sum of t1 over axes;  d t1 = g broadcast back over the summed axes\n"
        "    grad in  t2: 1\n"
        "    sends    t1 <- [1, 1]\n"
        "[2] op0 Cube(t0 x 2) -> t1 2\n"
        "    rule     out = t0**3;  d t0 = g * 3 t0**2\n"
        "    grad in  t1: [1, 1]\n"
        "    sends    t0 x <- [3, 12]\n"
        "[3] leaf t0 x 2: .grad += [3, 12]\n"
    )


class Square(tg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x


def test_a_custom_function_without_a_rule_says_where_to_write_it():
    out = io.StringIO()
    viz.step_backward(Square.apply(named([1.0, 2.0], "x")).sum(), file=out)
    assert (
        "    rule     (none: Square's docstring could state it, as 'out = ...;  dx = g * ...')\n"
        in out.getvalue()
    )


# Every fused op shows its rule, in its operands' labels.
FUSED = [
    ("Softmax", lambda x, w, b, t: F.softmax(x, axis=-1), "d t0 = y * (g - sum(g * y))"),
    ("LogSoftmax", lambda x, w, b, t: F.log_softmax(x, axis=-1), "d t0 = g - exp(y) * sum(g)"),
    ("LayerNorm", lambda x, w, b, t: F.layer_norm(x, (3,), w, b), "(t0 - mean)"),
    ("RMSNorm", lambda x, w, b, t: F.rms_norm(x, (3,), w), "d t0 = (dx̂ - x̂"),
    ("BatchNorm", lambda x, w, b, t: F.batch_norm(x, None, None, w, b, training=True), "x̂"),
    ("Linear", lambda x, w, b, t: F.linear(x, w.reshape(1, 3), b[:1]), "d t1 = gᵀ t"),
    ("CrossEntropy", lambda x, w, b, t: F.cross_entropy(x, t), "softmax(t0_i)"),
    ("MSELoss", lambda x, w, b, t: F.mse_loss(x, x * 2.0), "d t0 = 2 g (t0 - t"),
    ("Dropout", lambda x, w, b, t: F.dropout(x, 0.5, training=True), "d t0 = g · m / (1 - p)"),
]


@pytest.mark.parametrize(("name", "build", "words"), FUSED, ids=[case[0] for case in FUSED])
def test_every_fused_op_prints_its_rule_with_its_operands_labels(name, build, words):
    x = tg.Tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3) / 6, requires_grad=True)
    w = tg.Tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = tg.Tensor([0.5, 0.0, -0.5], requires_grad=True)
    out = io.StringIO()
    viz.step_backward(build(x, w, b, np.array([0, 2])).sum(), file=out)
    lines = out.getvalue().splitlines()
    (header,) = [index for index, line in enumerate(lines) if f" {name}(" in line]
    rule = lines[header + 1]
    assert rule.startswith("    rule     "), lines[header : header + 2]
    assert words in " ".join(lines[header + 1 : header + 4])
