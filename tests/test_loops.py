"""The one finder for hand-written loops (scheduler/loops.py): which chains it finds, what
each segment carries for the walk (its steps, its per-step inputs, `held`), and that a graph
without a chain costs it a bounded look."""

import itertools

import numpy as np
import pytest
from helpers import SpyScheduler
from rnn_formulations import FORMULATIONS, build

import tinygrad_ops as tg
from tinygrad_ops import nn
from tinygrad_ops.autograd import BackwardGraph
from tinygrad_ops.scheduler import declared, loops, steps

STEPS = 12


def found_in(loss, min_steps=2):
    return loops.find(BackwardGraph([loss], None, False, True), min_steps)


def lengths_and_kinds(found):
    return sorted((segment.length, segment.jacobian_kind) for segment in found.values())


# The chains of every formulation (h_0 is a constant: each chain starts at h_1).
EXPECTED = {name: [(STEPS - 1, "dense")] for name in FORMULATIONS}
EXPECTED["elementwise"] = [(STEPS - 1, "diagonal")]
EXPECTED["two-rnns"] = [(STEPS - 1, "dense")] * 2
EXPECTED["stacked"] = [(STEPS - 1, "dense")] * 2
EXPECTED["loss-every-step"] = [(STEPS - 1, "dense"), (STEPS - 1, "diagonal")]
EXPECTED["lstm"] = []  # two states, each read by the other's next step: no one-tensor chain


@pytest.mark.parametrize("name", list(FORMULATIONS))
def test_every_formulation_has_its_chains_found(name):
    loss, _ = build(name, "tg", steps=STEPS)
    assert lengths_and_kinds(found_in(loss)) == sorted(EXPECTED[name])


# The segments of every formulation, newest first: (the ops of a step, its per-step inputs,
# its shared inputs, the tensors held for its scan), the steps STEPS - 1 (h_0 a constant).
RNN = "MatMul->MatMul->Add->Add->Tanh"
LSTM_JOINT = (
    "GetItem->GetItem->MatMul->MatMul->Add->Add->GetItem->GetItem->GetItem->GetItem->"
    "Sigmoid->Mul->Sigmoid->Tanh->Mul->Add->Sigmoid->Tanh->Mul->Concatenate"
)
SEGMENTS = {
    "benchmark": [(RNN, 0, 3, 0)],
    "swapped": [(RNN, 0, 3, 0)],
    "bias-placed": [("MatMul->Add->MatMul->Add->Tanh", 0, 3, 0)],
    "residual": [("MatMul->MatMul->Add->Tanh->Mul->Add", 0, 2, 0)],
    "rnn-cell": [("Linear->Linear->Add->Tanh", 0, 4, 0)],
    "loss-every-step": [("MatMul->MSELoss->Add", 1, 1, 55), (RNN, 0, 3, 0)],
    "stacked": [(RNN, 1, 3, 55), (RNN, 0, 3, 0)],
    "layer-norm": [("MatMul->MatMul->Add->Add->LayerNorm->Tanh", 0, 5, 0)],
    "dropout": [("MatMul->Dropout->MatMul->Add->Add->Tanh", 0, 3, 0)],
    "two-rnns": [(RNN, 0, 3, 0), (RNN, 0, 3, 0)],
    "elementwise": [("Mul->MatMul->Add->Tanh", 0, 2, 0)],
    "lstm": [],
    "lstm-joint": [(LSTM_JOINT, 0, 3, 0)],
}


def described(segment):
    return (segment.describe(), len(segment.outside), len(segment.shared_operands))


@pytest.mark.parametrize("name", list(FORMULATIONS))
def test_every_formulation_has_its_segments_made_alike(name):
    loss, _ = build(name, "tg", steps=STEPS)
    found = [(*described(segment), len(segment.held)) for segment in found_in(loss).values()]
    expected = [(f"{STEPS - 1} steps of [{ops}]", *counts) for ops, *counts in SEGMENTS[name]]
    assert found == expected


@pytest.mark.parametrize("name", list(FORMULATIONS))
def test_every_formulation_through_tg_scan_declares_the_same_segments(name):
    """The walk makes the same segments of the chains `tg.scan` declares (the running sum
    of the losses is outside the scan, and a carry of two tensors is refused)."""
    loss, _ = build(name, "tg-scan", steps=STEPS)
    made = []
    for top in reversed(BackwardGraph([loss], None, False, True).order):  # (the newest first)
        declaration = declared.declared_at(top)
        if declaration is not None:
            try:
                made.append(described(declared.segment_of(declaration, top)))
            except steps.CannotScan as reason:
                made.append(str(reason))
    expected = [(f"{STEPS - 1} steps of [{ops}]", *counts[:2]) for ops, *counts in SEGMENTS[name]]
    if name == "loss-every-step":
        expected = expected[1:]
    if name == "lstm":
        expected = ["the carry is a tuple of 2 tensors: walked (one joint tensor is scanned)"]
    assert made == expected


@pytest.mark.parametrize("name", list(FORMULATIONS))
def test_the_segments_are_keyed_by_their_top_anchor_and_share_no_tensor(name):
    loss, _ = build(name, "tg", steps=STEPS)
    seen = set()
    for key, segment in found_in(loss).items():
        assert key == id(segment.anchors[-1])
        assert segment.columns[0][-1] is segment.anchors[-1]
        tensors = {id(tensor) for column in segment.columns for tensor in column}
        assert not tensors & seen
        seen |= tensors


def test_a_stacked_loop_holds_the_lower_layer_for_the_upper_scan():
    """The upper layer's steps read the lower layer's states, made in its range: those and
    the lower layer's tensors are `held` (the walk leaves them pending until the upper scan
    has sent to them); the lower layer holds nothing."""
    loss, _ = build("stacked", "tg", steps=STEPS)
    upper, lower = sorted(found_in(loss).values(), key=lambda s: -s.anchors[-1]._ctx.sequence)
    (column,) = [column for column in upper.outside if column.operands[0]._ctx is not None]
    assert [id(tensor) for tensor in column.operands] == [id(t) for t in lower.anchors[1:]]
    lower_tensors = {id(tensor) for column in lower.columns for tensor in column}
    assert lower_tensors <= upper.held
    assert not lower.held


def test_a_running_sum_of_losses_reads_the_rnn_per_step():
    """loss = loss + mse(h_t @ V, y_t): the running sum is a chain of numbers whose steps are
    the readout and the loss (batched), the RNN's states its per-step inputs."""
    loss, _ = build("loss-every-step", "tg", steps=STEPS)
    found = found_in(loss)
    total = found[id(loss)]
    assert total.describe() == f"{STEPS - 1} steps of [MatMul->MSELoss->Add]"
    (rnn,) = [segment for segment in found.values() if segment is not total]
    (column,) = [column for column in total.outside if column.operands[0]._ctx is not None]
    assert column.operands == rnn.anchors[1:]
    assert not rnn.held


def test_a_loop_of_nn_rnn_cells_and_a_residual_step():
    cell = nn.RNNCell(3, 4)
    h = tg.zeros((2, 4))
    inputs = tg.randn(9, 2, 3, seed=0)
    for t in range(9):
        h = h + cell(inputs[t], h)
    (segment,) = found_in(h.sum()).values()
    assert segment.length == 8
    assert segment.anchors[-1] is h


def test_a_hook_inside_the_steps_ends_the_chain_there():
    U = tg.Tensor(np.eye(3) * 0.5, requires_grad=True)
    h = tg.Tensor(np.ones((2, 3)))
    for t in range(10):
        h = (h @ U).tanh()
        if t == 6:
            h.register_hook(lambda grad: grad)
    # The steps above the hooked state h_7, and below it the chain of the products h_t @ U
    # (h_1 @ U .. h_6 @ U @ U, one step a Tanh and a MatMul): the walk runs the hook
    # between the two scans.
    found = found_in(h.sum())
    assert lengths_and_kinds(found) == [(3, "dense"), (6, "dense")]
    for segment in found.values():
        assert all(not tensor._hooks for column in segment.columns for tensor in column)


def test_a_tg_grad_input_inside_the_chain_is_not_scanned_through():
    U = tg.Tensor(np.eye(3) * 0.5, requires_grad=True)
    h = tg.Tensor(np.ones((2, 3)))
    states = []
    for _ in range(8):
        h = (h @ U).tanh()
        states.append(h)
    graph = BackwardGraph([h.sum()], {id(states[3])}, False, True)
    for segment in loops.find(graph, 2).values():
        assert all(tensor is not states[3] for tensor in segment.anchors[1:])


@pytest.mark.parametrize("width", [16, 64, 128])
def test_an_mlp_costs_a_bounded_look(width, monkeypatch):
    """An MLP of layers of different widths has no chain: the look stops after LOOK
    tensors, each trying at most CANDIDATES anchors below it."""
    calls = []
    build_template = steps.build_template

    def counted(*arguments):
        calls.append(1)
        return build_template(*arguments)

    monkeypatch.setattr(loops, "build_template", counted)
    x = tg.randn(32, width, seed=0)
    sizes = [width, 2 * width, width, width // 2, 10]
    out = x
    for index, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes)):
        layer = nn.Linear(fan_in, fan_out)
        out = layer(out)
        out = out.relu() if index < 3 else out
    loss = nn.functional.cross_entropy(out, tg.Tensor(np.arange(32) % 10))
    assert found_in(loss) == {}
    assert len(calls) <= loops.LOOK * loops.CANDIDATES


def test_a_chain_of_two_steps_needs_min_steps_two():
    U = tg.Tensor(np.eye(3) * 0.5, requires_grad=True)
    h = tg.Tensor(np.ones((2, 3)), requires_grad=True)
    for _ in range(2):
        h = (h @ U).tanh()
    assert lengths_and_kinds(found_in(h.sum(), min_steps=2)) == [(2, "dense")]
    assert found_in(h.sum(), min_steps=3) == {}


def early_products_loop(early_steps=4, steps=10):
    """h = tanh(x_t @ W + h @ U), the first `early_steps` products x_t @ W made before the
    loop (before their step's h_{t-1}, where the later steps make theirs); the loss and
    the parameters."""
    generator = np.random.default_rng(0)
    W = tg.Tensor(generator.standard_normal((3, 4)) / 2, requires_grad=True)
    U = tg.Tensor(generator.standard_normal((4, 4)) / 2, requires_grad=True)
    inputs = [tg.Tensor(generator.standard_normal((2, 3))) for _ in range(steps)]
    early = [x @ W for x in inputs[:early_steps]]
    h = tg.Tensor(np.zeros((2, 4)))
    for t, x in enumerate(inputs):
        h = ((early[t] if t < early_steps else x @ W) + h @ U).tanh()
    return h.sum(), [W, U]


@pytest.mark.parametrize("method", ["hillis-steele", "blelloch", "blocked"])
def test_a_step_tensor_made_before_its_step_ends_the_chain(method):
    """The steps whose x_t @ W was made before the loop are no steps of the chain above
    them (the creation-order pass ends it there: a step's tensors are made after its
    x_{i-1}) but a chain of their own, x_t @ W a per-step input; the scans give the walk's
    gradients."""
    loss, _ = early_products_loop()
    assert lengths_and_kinds(found_in(loss)) == [(3, "dense"), (6, "dense")]
    loss, parameters = early_products_loop()
    loss.backward()
    expected = [parameter.grad.numpy() for parameter in parameters]
    loss, parameters = early_products_loop()
    spy = SpyScheduler(tg.scheduler.ScanScheduler(method, block_size=4, min_steps=2))
    loss.backward(scheduler=spy)
    assert [len(segment.tensors) - 1 for segment in spy.graph.scanned_segments] == [6, 3]
    for parameter, walked in zip(parameters, expected, strict=True):
        np.testing.assert_allclose(parameter.grad.numpy(), walked, rtol=1e-10, atol=1e-12)


def random_loop(seed, steps=9, hidden=3, batch=2):
    """A loop drawn at random from the pieces people combine: one or two interleaved layers
    (the second reading the first's state, or independent), a step of tanh or sigmoid
    over x W + h U (+ b) in either order, a residual, a loss at every step or only at the
    end; the loss and the parameters."""
    generator = np.random.default_rng(seed)
    layers = int(generator.integers(1, 3))
    stacked = bool(generator.integers(2))
    parameters, states = [], []
    for layer in range(layers):
        size = hidden if layer and stacked else 3
        shapes = [(size, hidden), (hidden, hidden), (hidden,)]
        parameters.append(
            [tg.Tensor(generator.standard_normal(s) / 2, requires_grad=True) for s in shapes]
        )
        states.append(tg.Tensor(np.zeros((batch, hidden))))
    swapped, residual = bool(generator.integers(2)), bool(generator.integers(2))
    activation = "tanh" if generator.integers(2) else "sigmoid"
    every_step = bool(generator.integers(2))
    readout = tg.Tensor(generator.standard_normal((hidden, 2)), requires_grad=True)
    loss = None
    for _ in range(steps):
        x = tg.Tensor(generator.standard_normal((batch, 3)))
        for layer, (W, U, b) in enumerate(parameters):
            below = states[layer - 1] if layer and stacked else x
            h = states[layer]
            pre = h @ U + below @ W if swapped else below @ W + h @ U
            new = getattr(pre + b, activation)()
            states[layer] = h + new * 0.5 if residual else new
        if every_step:
            term = tg.functional.mse_loss(states[-1] @ readout, tg.Tensor(np.ones((batch, 2))))
            loss = term if loss is None else loss + term
    total = sum(state.sum() for state in states)
    loss = total if loss is None else loss + total
    return loss, [p for group in parameters for p in group] + [readout]


@pytest.mark.parametrize("seed", range(24))
def test_a_random_loop_gets_the_walks_gradients(seed):
    """The chains of a random loop are found (every layer's, 8 steps each: h_0 is a
    constant), and the scan gives the walk's gradients."""
    loss, parameters = random_loop(seed)
    loss.backward()
    expected = [None if p.grad is None else p.grad.numpy() for p in parameters]
    loss, parameters = random_loop(seed)
    spy = SpyScheduler(tg.scheduler.ScanScheduler("blelloch", min_steps=2))
    loss.backward(scheduler=spy)
    scanned = [len(segment.tensors) - 1 for segment in spy.graph.scanned_segments]
    assert scanned.count(8) >= len(parameters) // 3, scanned  # (three parameters a layer)
    for parameter, walked in zip(parameters, expected, strict=True):
        if walked is None:
            assert parameter.grad is None
        else:
            np.testing.assert_allclose(parameter.grad.numpy(), walked, rtol=1e-10, atol=1e-12)
