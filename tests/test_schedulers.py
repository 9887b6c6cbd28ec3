"""Every scheduler gives the sequential walk's gradients, and PyTorch's (docs/scan.md section 5)."""

import numpy as np
import pytest
import torch
from helpers import SpyScheduler

import tinygrad_ops as tg
from tinygrad_ops import Tensor
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops.scheduler import ScanScheduler, available_schedulers

torch.set_num_threads(1)

SCHEDULERS = ["sequential", "hillis-steele", "blelloch", "blocked", "auto"]
SCAN_SCHEDULERS = ["hillis-steele", "blelloch", "blocked"]


def run_model(model, scheduler, dtype=np.float64, seed=0):
    """Build the model from seeded arrays, backward with `scheduler`; the parameters' grads."""
    loss, parameters = model(np, dtype, seed)
    spy = SpyScheduler(scheduler)
    loss.backward(scheduler=spy)
    return [parameter.grad.numpy() for parameter in parameters], spy.graph


def run_torch(model, seed=0):
    loss, parameters = model(torch, np.float64, seed)
    loss.backward()
    return [parameter.grad.numpy() for parameter in parameters]


def make(library, array, requires_grad=True):
    if library is np:
        return Tensor(array, requires_grad=requires_grad)
    return torch.tensor(array, requires_grad=requires_grad)


def rnn_model(steps=24, size=4, batch=3, every_step=False, residual=False, relu=False):
    """h_t = tanh(x_t W + h_{t-1} U + b) (or ReLU, or h_{t-1} + that), loss on the last
    state or on every state."""

    def model(library, dtype, seed):
        generator = np.random.default_rng(seed)
        W = make(library, (generator.standard_normal((3, size)) * 0.5).astype(dtype))
        U = make(library, (generator.standard_normal((size, size)) / np.sqrt(size)).astype(dtype))
        b = make(library, (generator.standard_normal(size) * 0.1).astype(dtype))
        h0 = make(library, generator.standard_normal((batch, size)).astype(dtype))
        inputs = generator.standard_normal((steps, batch, 3)).astype(dtype)
        if relu:
            inputs[:, 0, :] = 0.0  # row 0: pre-activations exactly zero (ReLU's kink)
        h = h0
        loss = None
        for step in range(steps):
            x = make(library, inputs[step], requires_grad=False)
            pre = x @ W + h @ U + b
            if relu:
                pre = pre * make(library, np.array([[0.0], [1.0], [1.0]], dtype), False)
            new = pre.relu() if relu else pre.tanh()
            h = h + new * 0.5 if residual else new
            if every_step:
                term = (h * h).sum()
                loss = term if loss is None else loss + term
        last = (h * h).sum()
        loss = last if loss is None else loss + last
        return loss, [W, U, b, h0]

    return model


def elementwise_chain(length=20):
    def model(library, dtype, seed):
        generator = np.random.default_rng(seed)
        x = make(library, generator.uniform(-1, 1, (3, 5)).astype(dtype))
        scale = make(library, generator.uniform(0.5, 1.5, 5).astype(dtype))
        y = x
        for _ in range(length):
            y = (y * scale).tanh() + 0.1
            y = y.sigmoid() * 2 - 0.5
        return (y * y).sum(), [x, scale]

    return model


def mlp_with_skip_and_layer_norm():
    """Not a chain: a skip connection and a layer norm (nothing to scan, all walked)."""

    def model(library, dtype, seed):
        generator = np.random.default_rng(seed)
        x = make(library, generator.standard_normal((6, 8)).astype(dtype), False)
        W1 = make(library, (generator.standard_normal((8, 8)) * 0.3).astype(dtype))
        W2 = make(library, (generator.standard_normal((8, 8)) * 0.3).astype(dtype))
        gamma = make(library, generator.uniform(0.5, 1.5, 8).astype(dtype))
        beta = make(library, (generator.standard_normal(8) * 0.1).astype(dtype))
        hidden = (x @ W1).tanh()
        skipped = hidden + (hidden @ W2).relu()
        if library is np:
            normed = F.layer_norm(skipped, (8,), gamma, beta)
        else:
            normed = torch.nn.functional.layer_norm(skipped, (8,), gamma, beta)
        return (normed * normed).sum() + normed.sum(), [W1, W2, gamma, beta]

    return model


def assert_same(ours, reference, rtol=1e-10, atol=1e-12):
    assert len(ours) == len(reference)
    for index, (mine, expected) in enumerate(zip(ours, reference, strict=True)):
        scale = max(np.max(np.abs(expected)), 1e-300)
        np.testing.assert_allclose(
            mine, expected, rtol=rtol, atol=atol * scale, err_msg=f"gradient {index}"
        )


MODELS = {
    "elementwise-chain": elementwise_chain(),
    "rnn": rnn_model(),
    "rnn-loss-every-step": rnn_model(every_step=True),
    "residual-rnn": rnn_model(residual=True),
    "relu-rnn-at-zero": rnn_model(relu=True),
    "mlp-skip-layer-norm": mlp_with_skip_and_layer_norm(),
}


@pytest.mark.parametrize("model_name", MODELS)
@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_scheduler_matches_sequential_and_pytorch(model_name, scheduler):
    model = MODELS[model_name]
    reference, _ = run_model(model, "sequential")
    ours, graph = run_model(model, scheduler)
    assert_same(ours, reference)
    assert_same(ours, run_torch(model), rtol=1e-9)
    if scheduler in SCAN_SCHEDULERS and model_name != "mlp-skip-layer-norm":
        # The chain really was scanned (not silently walked).
        assert graph.scanned_segments, "nothing was scanned"
        assert graph.scanned_segments[0][0] == scheduler


@pytest.mark.parametrize("steps", [1, 2, 3, 4, 5, 8, 9, 16, 17, 32, 33])
@pytest.mark.parametrize("scheduler", SCAN_SCHEDULERS)
def test_chain_lengths(steps, scheduler):
    model = rnn_model(steps=steps, size=3, batch=2)
    reference, _ = run_model(model, "sequential")
    small = ScanScheduler(scheduler, block_size=3, min_steps=1)
    small.name = scheduler
    ours, graph = run_model(model, small)
    assert_same(ours, reference)
    if steps >= 2:
        lengths = [len(segment.tensors) - 1 for segment in graph.scanned_segments]
        assert lengths
        assert max(lengths) >= steps - 1


@pytest.mark.parametrize("scheduler", SCAN_SCHEDULERS + ["auto"])
def test_float32_with_a_looser_tolerance(scheduler):
    model = rnn_model(steps=40, size=5)
    reference, _ = run_model(model, "sequential", dtype=np.float32)
    ours, _ = run_model(model, scheduler, dtype=np.float32)
    for mine in ours:
        assert mine.dtype == np.float32
    assert_same(ours, reference, rtol=2e-4, atol=2e-5)


def test_backward_plan_reports_the_rnn_chain_and_its_length():
    loss, _ = rnn_model(steps=50)(np, np.float64, 0)
    plan = tg.backward_plan(loss, scheduler="blelloch")
    assert len(plan.segments) == 1
    segment = plan.segments[0]
    assert segment.length == 50
    assert segment.jacobian_kind == "dense"
    assert segment.choice == "blelloch"
    assert set(segment.estimates) >= {"sequential", "blelloch", "hillis-steele"}
    text = str(plan)
    assert "50 steps" in text
    assert "blelloch" in text
    # The plan ran nothing: the real backward still works afterwards.
    loss.backward()


def test_backward_plan_gives_the_cost_models_times_with_parallel_workers():
    loss, _ = rnn_model(steps=50)(np, np.float64, 0)
    plan = tg.backward_plan(loss, scheduler="blelloch")
    (segment,) = plan.segments
    alone, shared = segment.predicted[1], segment.predicted[64]
    assert alone == segment.estimates
    assert shared["sequential"] == alone["sequential"]  # (the walk has no parallel work)
    assert all(shared[name] < alone[name] for name in alone if name != "sequential")
    assert "estimated with 64 worker(s)" in str(plan)


def test_backward_plan_for_an_elementwise_chain_is_diagonal():
    loss, _ = elementwise_chain(10)(np, np.float64, 0)
    plan = tg.backward_plan(loss, scheduler="auto")
    assert plan.segments
    assert plan.segments[0].jacobian_kind == "diagonal"
    assert plan.segments[0].choice in {"sequential", "hillis-steele", "blelloch", "blocked"}


@pytest.mark.parametrize("model_name", ["elementwise-chain", "rnn", "rnn-loss-every-step"])
def test_the_finder_finds_the_chains(model_name):
    # The elementwise chain's loss (y * y) is a Mul like the step's own: the finder must go
    # on below it.
    from tinygrad_ops.autograd import BackwardGraph
    from tinygrad_ops.scheduler.loops import find

    loss, _ = MODELS[model_name](np, np.float64, 0)
    assert find(BackwardGraph([loss], None, False, True), 2)


def test_auto_walks_a_shallow_graph_without_running_the_finder(monkeypatch):
    from tinygrad_ops.scheduler import auto

    calls = []
    scheduler = auto.AutoScheduler()
    monkeypatch.setattr(auto.ScanScheduler, "find", lambda self, graph: calls.append(graph) or {})
    shallow, _ = MODELS["mlp-skip-layer-norm"](np, np.float64, 0)
    shallow.backward(scheduler=scheduler)
    assert calls == []
    deep, _ = rnn_model(steps=16, size=3, batch=2)(np, np.float64, 0)
    deep.backward(scheduler=scheduler)
    assert len(calls) == 1


def test_auto_walks_a_chain_too_wide_to_pay_without_running_the_finder(monkeypatch):
    from test_scan_formulations import FIXED_CALIBRATION

    from tinygrad_ops.scheduler import auto, calibration

    monkeypatch.setattr(calibration, "_CALIBRATION", dict(FIXED_CALIBRATION))
    calls = []
    monkeypatch.setattr(auto.ScanScheduler, "find", lambda self, graph: calls.append(graph) or {})
    for size, looks in ((128, False), (4, True)):
        loss, _ = rnn_model(steps=64, size=size, batch=2)(np, np.float64, 0)
        loss.backward(scheduler=auto.AutoScheduler())
        assert bool(calls) == looks, size
        calls.clear()


def test_auto_states_its_rule_in_the_plan():
    from tinygrad_ops.scheduler.auto import RULE

    loss, _ = rnn_model(steps=64, size=3, batch=2)(np, np.float64, 0)
    plan = tg.backward_plan(loss, scheduler="auto")
    assert plan.decision.startswith(RULE), str(plan)
    assert RULE in str(plan).splitlines()[1]


def test_registry_names_and_unknown_name():
    assert set(SCHEDULERS) <= set(available_schedulers())
    x = Tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match=r"known schedulers: .*blelloch"):
        (x * 2).sum().backward(scheduler="no-such-scheduler")
    with pytest.raises(ValueError, match="hillis-steele"):
        tg.set_default_scheduler("nope")


def test_set_default_scheduler_is_used_by_backward():
    model = rnn_model(steps=12)
    reference, _ = run_model(model, "sequential")
    previous = tg.set_default_scheduler("blelloch")
    try:
        loss, parameters = model(np, np.float64, 0)
        loss.backward()
    finally:
        tg.set_default_scheduler(previous)
    assert_same([parameter.grad.numpy() for parameter in parameters], reference)


@pytest.mark.parametrize("scheduler", SCAN_SCHEDULERS)
def test_tg_grad_with_a_scheduler(scheduler):
    loss, parameters = rnn_model(steps=20)(np, np.float64, 0)
    expected = tg.grad(loss, parameters, retain_graph=True)
    got = tg.grad(loss, parameters, scheduler=scheduler)
    assert_same([value.numpy() for value in got], [value.numpy() for value in expected])


@pytest.mark.parametrize("scheduler", SCAN_SCHEDULERS)
def test_hooks_on_the_chain_are_honoured(scheduler):
    def model(library, dtype, seed):
        loss, parameters = rnn_model(steps=16)(library, dtype, seed)
        return loss, parameters

    def with_hook(scheduler_name):
        generator = np.random.default_rng(0)
        U = Tensor(generator.standard_normal((3, 3)) * 0.5, requires_grad=True)
        h = Tensor(generator.standard_normal((2, 3)), requires_grad=True)
        states = []
        for _ in range(12):
            h = (h @ U).tanh()
            states.append(h)
        states[5].register_hook(lambda grad: grad * 3.0)
        (h * h).sum().backward(scheduler=scheduler_name)
        return [U.grad.numpy()]

    assert_same(with_hook(scheduler), with_hook("sequential"))


@pytest.mark.parametrize("scheduler", SCAN_SCHEDULERS)
def test_create_graph_falls_back_to_the_walk(scheduler):
    x = Tensor([0.3, -0.2], requires_grad=True, dtype=np.float64)
    y = x
    for _ in range(8):
        y = y.tanh()
    (grad,) = tg.grad(y.sum(), [x], create_graph=True, scheduler=scheduler)
    (second,) = tg.grad(grad.sum(), [x])
    x_torch = torch.tensor([0.3, -0.2], dtype=torch.float64, requires_grad=True)
    y_torch = x_torch
    for _ in range(8):
        y_torch = y_torch.tanh()
    (grad_torch,) = torch.autograd.grad(y_torch.sum(), [x_torch], create_graph=True)
    (second_torch,) = torch.autograd.grad(grad_torch.sum(), [x_torch])
    np.testing.assert_allclose(second.numpy(), second_torch.numpy(), rtol=1e-10)


@pytest.mark.parametrize("scheduler", SCAN_SCHEDULERS)
def test_second_backward_without_retain_graph_raises(scheduler):
    loss, _ = rnn_model(steps=10)(np, np.float64, 0)
    loss.backward(scheduler=scheduler)
    with pytest.raises(RuntimeError, match="retain_graph"):
        loss.backward(scheduler=scheduler)


@pytest.mark.parametrize("scheduler", SCAN_SCHEDULERS)
def test_retain_graph_allows_a_second_scanned_backward(scheduler):
    model = rnn_model(steps=10)
    reference, _ = run_model(model, "sequential")
    loss, parameters = model(np, np.float64, 0)
    loss.backward(retain_graph=True, scheduler=scheduler)
    loss.backward(scheduler=scheduler)
    assert_same([parameter.grad.numpy() / 2 for parameter in parameters], reference)


def test_in_place_change_of_a_saved_tensor_is_caught():
    U = Tensor(np.eye(3) * 0.5, requires_grad=True)
    h = Tensor(np.ones((2, 3)), requires_grad=True)
    states = []
    for _ in range(10):
        h = (h @ U).tanh()
        states.append(h)
    loss = (h * h).sum()
    states[4].mul_(2.0)  # tanh saved its output: its gradient would now be wrong
    with pytest.raises(RuntimeError, match="in-place"):
        loss.backward(scheduler="blelloch")


def skip_rnn_states(scheduler, outputs_inside=False, wanted_inside=False):
    """An RNN whose step t also reads h_{t-3} (not a chain: anchors are read twice)."""
    generator = np.random.default_rng(5)
    U = Tensor(generator.standard_normal((4, 4)) * 0.4, requires_grad=True)
    V = Tensor(generator.standard_normal((4, 4)) * 0.4, requires_grad=True)
    h = Tensor(generator.standard_normal((2, 4)), requires_grad=True)
    states = [h]
    pre_activations = []
    for step in range(24):
        pre = states[-1] @ U
        if step % 5 == 4:
            pre = pre + states[-3] @ V
        pre_activations.append(pre)
        states.append(pre.tanh())
    loss = (states[-1] * states[-1]).sum()
    outputs = [loss]
    if outputs_inside:
        outputs.append(pre_activations[10].sum())
    inputs = [U, V, h]
    if wanted_inside:
        inputs.append(states[12])
    grads = tg.grad(outputs, inputs, scheduler=scheduler)
    return [grad.numpy() for grad in grads]


@pytest.mark.parametrize("scheduler", SCAN_SCHEDULERS + ["auto"])
@pytest.mark.parametrize(
    ("outputs_inside", "wanted_inside"), [(False, False), (True, False), (False, True)]
)
def test_skip_connections_several_outputs_and_inner_inputs(
    scheduler, outputs_inside, wanted_inside
):
    expected = skip_rnn_states("sequential", outputs_inside, wanted_inside)
    assert_same(skip_rnn_states(scheduler, outputs_inside, wanted_inside), expected)


@pytest.mark.parametrize("scheduler", SCAN_SCHEDULERS)
def test_an_output_inside_a_step_is_not_lost(scheduler):
    def run(name):
        generator = np.random.default_rng(6)
        U = Tensor(generator.standard_normal((3, 3)) * 0.5, requires_grad=True)
        h0 = Tensor(generator.standard_normal((2, 3)), requires_grad=True)
        h = h0
        inner = None
        b = Tensor(generator.standard_normal(3) * 0.1, requires_grad=True)
        for step in range(16):
            middle = h @ U + b  # anchors are the tanh outputs; this sits inside a step
            if step == 7:
                inner = middle
            h = middle.tanh()
        # `inner` itself is an output: its seed enters in the middle of a step (that step is
        # left out of the scan; walked later it would still be right, by linearity).
        seed = np.linspace(-1.0, 1.0, inner.size).reshape(inner.shape)
        grads = tg.grad([(h * h).sum(), inner], [U, h0], [None, seed], scheduler=name)
        return [grad.numpy() for grad in grads]

    assert_same(run(scheduler), run("sequential"))


def cube_op(with_rule):
    from tinygrad_ops.ops.base import Op
    from tinygrad_ops.ops.jacobian import diagonal_from_vjp, diagonal_kind

    class Cube(Op):
        """out = a**3;  da = g * 3 a**2;  J_a = diag(3 a**2)"""

        __slots__ = ()
        if with_rule:
            jacobian_kind = diagonal_kind
            jacobian = diagonal_from_vjp

        def forward(self, a):
            self.save_for_backward(a)
            return a * a * a

        def backward(self, grad_output):
            (a,) = self.saved_tensors
            return (grad_output * 3 * a * a,)

    return Cube


def run_cubes(cube, name):
    x = Tensor(np.linspace(-0.9, 0.9, 6).reshape(2, 3), requires_grad=True)
    y = x
    for _ in range(12):
        y = cube.apply(y.tanh())
    spy = SpyScheduler(name)
    (y * y).sum().backward(scheduler=spy)
    return [x.grad.numpy()], spy.graph


def test_an_op_with_a_jacobian_rule_goes_on_chains():
    cube = cube_op(with_rule=True)
    expected, _ = run_cubes(cube, "sequential")
    got, graph = run_cubes(cube, "blelloch")
    assert_same(got, expected)
    assert graph.scanned_segments


def test_an_op_without_a_rule_is_walked_until_one_is_registered():
    from tinygrad_ops.ops.jacobian import diagonal_from_vjp
    from tinygrad_ops.scheduler import jacobians

    cube = cube_op(with_rule=False)
    expected, _ = run_cubes(cube, "sequential")
    got, graph = run_cubes(cube, "blelloch")
    assert_same(got, expected)
    assert not graph.scanned_segments
    jacobians.register_jacobian(cube, diagonal_from_vjp)
    got, graph = run_cubes(cube, "blelloch")
    assert_same(got, expected)
    assert graph.scanned_segments


def test_auto_prefers_blelloch_unless_hillis_steele_clearly_wins():
    from tinygrad_ops.scheduler.auto import best_choice

    # Estimated even (or within 5%): Blelloch, the work-efficient scan.
    assert best_choice({"sequential": 1.0, "hillis-steele": 0.50, "blelloch": 0.51}) == (
        "blelloch",
        None,
    )
    assert best_choice({"sequential": 1.0, "hillis-steele": 0.40, "blelloch": 0.50}) == (
        "hillis-steele",
        None,
    )
    # A scan must beat the walk by the margin, whichever it is.
    assert best_choice({"sequential": 1.0, "hillis-steele": 0.97})[0] == "sequential"


def two_layer_loop(lib, kind, steps=12, hidden=3, batch=2):
    """Two tanh RNNs in one Python loop, a loss at every step on both: independent
    ("two") or the second reading the first's state ("stacked"). (loss, parameters)."""
    generator = np.random.default_rng(0)
    arrays = [generator.standard_normal(shape) * 0.4 for shape in [(3, hidden), (hidden, hidden)]]
    arrays += [generator.standard_normal(shape) * 0.4 for shape in [(3, hidden), (hidden, hidden)]]
    arrays.append(generator.standard_normal((hidden, 1)) * 0.4)
    if kind == "stacked":
        arrays[2] = generator.standard_normal((hidden, hidden)) * 0.4
    inputs = generator.standard_normal((steps, batch, 3))
    if lib == "torch":
        params = [torch.tensor(array, requires_grad=True) for array in arrays]
        make = torch.tensor
        h1, h2 = torch.zeros((batch, hidden), dtype=torch.float64), None
    else:
        params = [Tensor(array, requires_grad=True) for array in arrays]
        make = Tensor
        h1 = Tensor(np.zeros((batch, hidden)))
    h2 = h1
    W1, U1, W2, U2, V = params
    loss = 0
    for x in inputs:
        x = make(x)
        h1 = (x @ W1 + h1 @ U1).tanh()
        h2 = ((h1 if kind == "stacked" else x) @ W2 + h2 @ U2).tanh()
        loss = loss + (h1 @ V).sum() * 0.3 + (h2 * h2).sum()
    return loss, params


@pytest.mark.parametrize("kind", ["two", "stacked"])
@pytest.mark.parametrize("scheduler", SCAN_SCHEDULERS)
def test_two_chains_in_one_loop_are_both_scanned(kind, scheduler):
    """The walk meets the first chain's tensors while it prepares the second chain's scan
    (their steps interleave): they wait for that scan, then the first chain is scanned."""
    loss, params = two_layer_loop("torch", kind)
    loss.backward()
    spy = SpyScheduler(ScanScheduler(scheduler, block_size=4, min_steps=2))
    loss, ours = two_layer_loop("tg", kind)
    loss.backward(scheduler=spy)
    assert len(spy.graph.scanned_segments) == 2
    assert_same([p.grad.numpy() for p in ours], [p.grad.numpy() for p in params])


def test_a_chain_refused_before_its_scan_leaves_the_walk_in_order():
    """An RNN read by a running sum of losses that stops before the RNN does: the walk
    meets the sum's chain while it prepares the RNN's scan and refuses the scan (the sum
    is made from the RNN); the walk goes on in order, through both chains."""

    def model(lib):
        generator = np.random.default_rng(3)
        make = torch.tensor if lib == "torch" else Tensor
        W = make(generator.standard_normal((3, 4)) * 0.4, requires_grad=True)
        U = make(generator.standard_normal((4, 4)) * 0.4, requires_grad=True)
        h = make(np.zeros((2, 4)))
        loss = 0
        mse = torch.nn.functional.mse_loss if lib == "torch" else F.mse_loss
        for t in range(12):
            h = (make(generator.standard_normal((2, 3))) @ W + h @ U).tanh()
            if t < 8:
                loss = loss + mse(h, make(np.ones((2, 4))))
        return loss + h.sum(), [W, U]

    loss, expected = model("torch")
    loss.backward()
    loss, ours = model("tg")
    spy = SpyScheduler(ScanScheduler("blelloch", min_steps=2))
    loss.backward(scheduler=spy)
    assert_same([p.grad.numpy() for p in ours], [p.grad.numpy() for p in expected])
    assert len(spy.graph.scanned_segments) == 1  # the sum's chain, once the RNN is walked
