"""A compiled scan over stacked buffers (jit/stacks.py): the replayed forward writes the
steps' saved values into stacks and the scan reads them there. Each test runs the same
training steps eagerly and compiled: the compiled scan is bit for bit the eager run of
the same scheduler (the same numpy calls on arrays holding the same values)."""

import ast
import gc
import re
import tracemalloc

import numpy as np
import pytest
from jit_helpers import peak_memory

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops import optim
from tinygrad_ops.jit import fused
from tinygrad_ops.jit.codegen import Source
from tinygrad_ops.jit.scan_kernel import ScanKernel, computed_into
from tinygrad_ops.ops.unary import Tanh
from tinygrad_ops.scheduler.scan_scheduler import ScanScheduler

SCANS = ["blelloch", "hillis-steele", "blocked"]


def tanh_rnn(dtype, steps, cell=None, order=None):
    """A training step of h_t = cell(x_t W + h_{t-1} U + b) with the loss on the last
    state, under SGD; returns (step, parameters). `order` lists the x index of each step."""
    generator = np.random.default_rng(0)
    w = tg.Tensor((generator.standard_normal((3, 8)) * 0.5).astype(dtype), requires_grad=True)
    u = tg.Tensor((generator.standard_normal((8, 8)) * 0.3).astype(dtype), requires_grad=True)
    b = tg.Tensor(np.zeros(8, dtype=dtype), requires_grad=True)
    optimizer = optim.SGD([w, u, b], lr=0.05)
    order = range(steps) if order is None else order
    cell = cell or (lambda pre: pre.tanh())

    def step(inputs, scheduler):
        optimizer.zero_grad()
        state = tg.zeros(inputs[0].shape[-2], 8, dtype=dtype)
        for index in order:
            state = cell(inputs[index] @ w + state @ u + b)
        loss = (state * state).sum()
        loss.backward(scheduler=scheduler)
        optimizer.step()
        return loss

    return step, [w, u, b]


def run_both(scheduler, dtype=np.float64, steps=24, calls=5, as_list=False, **options):
    """Eager and compiled runs of the same steps: (compiled function, whether the two
    left the same losses, parameters and gradients, bit for bit). `as_list`: the inputs
    are lists of one tensor per step (read from outside: captured), refilled in place
    between calls."""
    generator = np.random.default_rng(1)
    inputs = [tg.Tensor(generator.standard_normal((steps, 4, 3)).astype(dtype)) for _ in range(3)]
    if as_list:
        batches = inputs
        listed = [tg.Tensor(np.zeros((4, 3), dtype=dtype)) for _ in range(steps)]
        inputs = [listed] * 3
    results = []
    for compiled in (False, True):
        step, parameters = tanh_rnn(dtype, steps, **options)
        function = tg.compile(step) if compiled else step
        losses = []
        for call in range(calls):
            if as_list:  # (a new batch into the same tensors, as a data loader might)
                for tensor, values in zip(listed, batches[call % 3].data):
                    tensor.data[...] = values
            losses.append(function(inputs[call % 3], scheduler).item())
        state = [p.data.copy() for p in parameters] + [p.grad.data.copy() for p in parameters]
        results.append((losses, state, function))
    (eager_losses, eager_state, _), (losses, state, function) = results
    same = losses == eager_losses and all(map(np.array_equal, eager_state, state))
    return function, same


def scans_of(function):
    return [kernel for kernel in function.program.kernels if isinstance(kernel, ScanKernel)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scheduler", SCANS)
def test_a_stacked_scan_is_bit_for_bit_the_eager_scan(scheduler, dtype):
    function, same = run_both(scheduler, dtype)
    (scan,) = scans_of(function)
    assert scan.plan is not None
    assert same
    listing = str(function.program)
    assert "new stack (24, 4, 8)" in listing  # x_0 .. x_23: the first step is walked
    assert "(into %" in listing
    assert "saved values from %" in listing


def computed_into_stacks(source):
    """The ops whose inlined forward computes its result into a row of a stack."""
    lines = source.splitlines()
    return {
        lines[number + 1].strip()[2:].split(".")[0]
        for number, line in enumerate(lines)
        if line.endswith("# the forward computes into the stack")
    }


WEIGHT = tg.Tensor(np.random.default_rng(7).standard_normal((8, 8)) * 0.3)
BIAS = tg.Tensor(np.full(8, 0.1))
# A cell, and the ops of it whose forward computes into a stack (their output is a row:
# an anchor, or a value another op saves); the others' outputs are copied into theirs.
CELLS = {
    "tanh": (lambda pre: pre.tanh(), {"Tanh"}),
    "relu": (lambda pre: (pre * 0.5).relu(), {"Relu"}),
    "sub": (lambda pre: pre.tanh() - 0.5, {"Tanh", "Sub"}),
    "neg": (lambda pre: -(pre.tanh() + 0.25), {"Tanh", "Neg"}),
    "add mul sigmoid": (lambda pre: (pre.tanh() + 0.25) * pre.sigmoid(), {"Tanh", "Add", "Mul"}),
    "div": (lambda pre: pre.tanh() / 1.5, {"Tanh", "Div"}),
    "matmul": (lambda pre: (pre @ WEIGHT) * pre.tanh(), {"Add", "MatMul", "Tanh", "Mul"}),
    # (Linear's forward ends in `reshaped(out, ...)`, a @pure helper that hands back its
    # argument here: the specialiser folds it, so the matmul computes into the row)
    "linear": (lambda pre: F.linear(pre, WEIGHT, BIAS) * pre.tanh(), {"Linear", "Tanh", "Mul"}),
    "linear without bias": (
        lambda pre: F.linear(pre, WEIGHT) * pre.tanh(),
        {"Linear", "Tanh", "Mul"},
    ),
    "exp log": (lambda pre: (pre.tanh().exp() + 1).log(), {"Tanh", "Exp", "Add", "Log"}),
}


@pytest.mark.parametrize("fusing", [True, False])
@pytest.mark.parametrize("name", list(CELLS))
def test_every_op_into_a_stack_is_bit_for_bit_with_and_without_inlining(name, fusing, monkeypatch):
    # Inlined, an op's forward that ends in one numpy call computes into its row (the
    # same call given out=); its methods called, its result is copied there.
    monkeypatch.setattr(fused, "FUSING", fusing)
    cell, into = CELLS[name]
    function, same = run_both("blelloch", cell=cell)
    assert scans_of(function)[0].plan is not None
    assert same
    assert computed_into_stacks(function.program.source) == (into if fusing else set())


def test_only_a_result_made_by_one_numpy_call_is_computed_into_its_row():
    code = Source([])

    def into(text):  # (an inlined forward's statements; _result_ names its result)
        statements = computed_into(code, ast.parse(text).body)
        return None if statements is None else "\n".join(map(ast.unparse, statements))

    made = into("t = a * 2\n_result_ = t + b\n_result_ += c")
    assert re.fullmatch(
        r"t = a \* 2\n_result_ = add\d+\(t, b, out=_result_\)\n_result_ \+= c", made
    )
    assert re.fullmatch(r"_result_ = negative\d+\(a, out=_result_\)", into("_result_ = -a"))
    assert into("_result_ = a + b\n_result_ = _result_ * 2") is None  # (a new array after)
    assert into("_result_, rest = a + b") is None
    assert into("_result_ = where(a, b, c)") is None  # (not a ufunc the pass knows)


def tanh_forward_rewritten(self, a):
    """tanh a = 1 - 2 / (exp(2 a) + 1), written another way (equal, not the same bits)."""
    out = 1 - 2 / (np.exp(2 * a) + 1)
    self.save_for_backward(out)
    return out


def test_an_equal_rewrite_of_tanhs_forward_is_what_the_stacked_scan_runs(monkeypatch):
    def eager_gradients():
        step, parameters = tanh_rnn(np.float64, 24)
        step(tg.Tensor(np.random.default_rng(1).standard_normal((24, 4, 3))), "blelloch")
        return [parameter.grad.data for parameter in parameters]

    before = eager_gradients()
    monkeypatch.setattr(Tanh, "forward", tanh_forward_rewritten)  # one file changes
    assert not all(map(np.array_equal, before, eager_gradients()))  # (other bits)
    function, same = run_both("blelloch")
    assert scans_of(function)[0].plan is not None
    assert same
    assert computed_into_stacks(function.program.source) == {"Tanh"}
    # (the specialiser makes the Python numbers 0-d arrays of the dtype: `known` slots)
    number = r"(\d|known\d+)"
    assert re.search(rf"= subtract\d+\({number}, {number} / \(exp\d+\(", function.program.source)


def test_a_blocked_scan_of_several_blocks_reads_slices_of_the_stacks():
    function, same = run_both(ScanScheduler("blocked", block_size=5))
    (scan,) = scans_of(function)
    assert scan.plan is not None
    assert scan.block_size == 5
    assert same


def test_a_chain_of_0_d_states():
    # A row of a stack of numbers is `stack[t, ...]` (0-d, an array: out= takes it).
    results = []
    for compiled in (False, True):
        w, u = (tg.Tensor(np.array(value), requires_grad=True) for value in (0.5, 0.3))

        def step(xs, w=w, u=u):
            w.grad = u.grad = None
            state = tg.zeros((), dtype=np.float64)
            for t in range(xs.shape[0]):
                state = (xs[t] * w + state * u).tanh()
            (state * state).backward(scheduler="blelloch")
            return state

        function = tg.compile(step) if compiled else step
        xs = tg.Tensor(np.random.default_rng(0).standard_normal(16))
        results.append([(function(xs).item(), w.grad.item(), u.grad.item()) for _ in range(4)])
    assert results[0] == results[1]
    assert scans_of(function)[0].plan is not None


def test_the_replay_leaves_nothing_on_the_steps_nodes():
    function, _ = run_both("blelloch")
    (scan,) = scans_of(function)
    assert all(node.saved is None for column in scan.segment.nodes for node in column)
    assert "node" not in "".join(
        line for line in function.program.source.splitlines() if ".saved" in line
    )


def test_every_other_input_and_a_generic_forward_are_stacked():
    # x[0], x[2], ...: a slice with a step; sigmoid's forward does not end in one numpy
    # call that takes out= (np.where): its output is copied into the stack.
    function, same = run_both("blelloch", steps=24, order=range(0, 24, 2))
    assert scans_of(function)[0].plan is not None
    assert same
    function, same = run_both("blelloch", cell=lambda pre: pre.sigmoid())
    assert scans_of(function)[0].plan is not None
    assert same
    assert "copyto(" in function.program.source


def test_a_list_of_input_tensors_and_a_constant_factor():
    # One captured tensor per step: stacked at each call (their values change); the
    # steps' tanh outputs (times 0.5, the anchors) are a column of their own, in a stack.
    for scheduler in ("blelloch", ScanScheduler("blocked", block_size=5)):
        function, same = run_both(scheduler, as_list=True)
        assert scans_of(function)[0].plan is not None
        assert same
    function, same = run_both("hillis-steele", cell=lambda pre: pre.tanh() * 0.5)
    (scan,) = scans_of(function)
    assert scan.plan is not None
    assert len(scan.plan.stacks) == 2
    assert same


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relus_mask_is_computed_from_the_stack_of_its_outputs(dtype):
    # relu saves out != 0 (a mask no kernel writes): the same of the stacked outputs.
    for cell in (lambda pre: (pre * 0.5).relu(), lambda pre: pre.relu().tanh()):
        function, same = run_both("blelloch", dtype=dtype, cell=cell)
        assert scans_of(function)[0].plan is not None
        assert same


def test_values_not_found_in_a_stack_keep_the_nodes_path():
    # layer norm saves statistics it computes (no array of the program): scanned from the
    # nodes' saved values, as eagerly. With tanh on top, the anchors' stack was made
    # before the norm's values were not found: no slot of it is left in the program.
    for cell in (
        lambda pre: F.layer_norm(pre, (8,)),
        lambda pre: F.layer_norm(pre, (8,)).tanh(),
    ):
        function, same = run_both("blelloch", cell=cell)
        (scan,) = scans_of(function)
        assert scan.plan is None
        assert "stack of" not in str(function.program)
        assert same


def test_inputs_read_backwards_are_copied_into_a_stack():
    # x[23], x[22], ...: no forward slice of x, but values the forward computes, one per
    # step: each x[t] is copied into its row of a stack of their own.
    function, same = run_both("blelloch", order=range(23, -1, -1))
    (scan,) = scans_of(function)
    assert scan.plan is not None
    assert len(scan.plan.stacks) == 2
    assert "copyto(" in function.program.source
    assert same


def run_nn_rnn(data, optimizer_class, scheduler, loss_of, module=tg.nn.RNN, **options):
    """nn.RNN(3, 6) (or another `module`) trained eagerly and compiled on `data`: (whether
    the two left the same losses and parameters, bit for bit; the compiled function)."""
    results = []
    for compiled in (False, True):
        tg.manual_seed(0)
        rnn = module(3, 6, dtype=np.float64, **options)
        optimizer = optimizer_class(rnn.parameters(), lr=0.05)

        def step(x, rnn=rnn, optimizer=optimizer):
            optimizer.zero_grad()
            loss = loss_of(*rnn(x))
            loss.backward(scheduler=scheduler)
            optimizer.step()
            return loss

        function = tg.compile(step) if compiled else step
        losses = [function(x).item() for x in data + data]
        results.append((losses, [p.data.copy() for p in rnn.parameters()], function))
    (eager_losses, eager_parameters, _), (losses, parameters, function) = results
    same = losses == eager_losses and all(map(np.array_equal, eager_parameters, parameters))
    return same, function


@pytest.mark.parametrize("batch_first", [False, True])
def test_nn_rnn_with_a_loss_on_every_state(batch_first):
    # Gradients enter the chain at every state (the output stacks all of them).
    generator = np.random.default_rng(2)
    shape = (5, 16, 3) if batch_first else (16, 5, 3)
    data = [tg.Tensor(generator.standard_normal(shape)) for _ in range(3)]
    same, function = run_nn_rnn(
        data,
        optim.SGD,
        "blelloch",
        lambda output, _: (output * output).mean(),
        batch_first=batch_first,
    )
    assert same
    assert scans_of(function)[0].plan is not None
    # The output (a Stack of every state) is a copy of the rows of the chain's stack.
    assert "Stack.forward of the rows %" in str(function.program)


def test_a_two_layer_rnn_under_adam():
    # The upper layer's inputs are the lower layer's states: a stack of their own, which
    # the lower layer's tanh writes into (by out=) besides its own anchors' (by a copy).
    generator = np.random.default_rng(3)
    data = [tg.Tensor(generator.standard_normal((12, 5, 3))) for _ in range(2)]
    same, function = run_nn_rnn(
        data,
        optim.Adam,
        "blocked",
        lambda output, last: (output * output).mean() + (last * last).sum(),
        num_layers=2,
    )
    assert same
    assert [scan.plan is not None for scan in scans_of(function)] == [True, True]


def test_nn_rnn_from_a_first_state_that_needs_a_gradient():
    # The chain's stack starts at h_0 (a parameter here): the output is rows 1..T of it.
    generator = np.random.default_rng(5)
    data = [tg.Tensor(generator.standard_normal((9, 2, 3))) for _ in range(2)]
    results = []
    for compiled in (False, True):
        tg.manual_seed(0)
        rnn = tg.nn.RNN(3, 6, dtype=np.float64)
        start = tg.Tensor(np.full((1, 2, 6), 0.1), requires_grad=True)
        optimizer = optim.SGD([*rnn.parameters(), start], lr=0.05)

        def step(x, rnn=rnn, start=start, optimizer=optimizer):
            optimizer.zero_grad()
            output, last = rnn(x, start)
            loss = (output * output).mean() + last.sum()
            loss.backward(scheduler="blelloch")
            optimizer.step()
            return loss

        function = tg.compile(step) if compiled else step
        losses = [function(x).item() for x in data + data]
        results.append((losses, [p.data.copy() for p in [*rnn.parameters(), start]]))
    assert results[0][0] == results[1][0]
    assert all(map(np.array_equal, results[0][1], results[1][1]))
    assert "Stack.forward of the rows %" in str(function.program)
    assert scans_of(function)[0].plan is not None


@pytest.mark.parametrize("scheduler", ["blelloch", "sequential"])
def test_a_gru_and_a_two_layer_lstm(scheduler):
    # Their projections (one Linear over the sequence) and the rows the steps read are
    # replayed; a GRU's chain is a stacked scan, an LSTM's two states are walked.
    generator = np.random.default_rng(4)
    data = [tg.Tensor(generator.standard_normal((10, 3, 3))) for _ in range(2)]
    same, function = run_nn_rnn(
        data, optim.SGD, scheduler, lambda output, last: (output * output).mean(), tg.nn.GRU
    )
    assert same
    stacked = [scan.plan is not None for scan in scans_of(function)]
    assert stacked == ([True] if scheduler == "blelloch" else [])
    same, function = run_nn_rnn(
        data,
        optim.Adam,
        scheduler,
        lambda output, last: (output * output).mean() + (last[0] * last[1]).sum(),
        tg.nn.LSTM,
        num_layers=2,
    )
    assert same
    assert scans_of(function) == []


def test_memory_is_flat_over_1000_compiled_rnn_steps():
    step, _ = tanh_rnn(np.float64, 8)
    function = tg.compile(step)
    inputs = tg.Tensor(np.random.default_rng(1).standard_normal((8, 4, 3)))
    gc.collect()
    # The first few hundred calls after a full collection fill Python's free lists of
    # small tuples again (a full collection empties them): done before tracing, and no
    # collection while tracing, so that only memory the calls keep is counted.
    for _ in range(400):
        function(inputs, "blelloch")
    assert scans_of(function)[0].plan is not None
    gc.disable()
    tracemalloc.start()
    try:
        for _ in range(100):
            function(inputs, "blelloch")
        after_100 = tracemalloc.get_traced_memory()[0]
        for _ in range(500):
            function(inputs, "blelloch")
        after_600 = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
        gc.enable()
    assert after_600 - after_100 < 4096


def test_peak_memory_of_a_stacked_scan_is_not_above_eager():
    inputs = tg.Tensor(np.random.default_rng(1).standard_normal((64, 4, 3)))
    eager, _ = tanh_rnn(np.float64, 64)
    compiled = tg.compile(tanh_rnn(np.float64, 64)[0])
    for _ in range(3):
        eager(inputs, "blelloch")
        compiled(inputs, "blelloch")
    assert peak_memory(compiled, inputs, "blelloch") <= peak_memory(eager, inputs, "blelloch")
