"""tg.compile's guards (jit/guards.py): what changes between calls re-captures, and past the
limit raises an error that says what changed."""

import numpy as np
import pytest
from jit_helpers import assert_same, batches, mlp, simple_setup, state_of, training_step

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops import optim


def test_a_new_shape_captures_a_second_program():
    _, _, step = simple_setup()
    ((x, y),), ((x2, y2),) = batches(1), batches(1, batch=5)
    step(x, y)
    step(x, y)
    assert len(step.programs) == 1
    assert step(x2, y2).shape == ()
    assert len(step.programs) == 2
    step(x, y)  # the first program still fits
    assert len(step.programs) == 2


def test_a_batch_in_a_tuple_and_the_same_tensors_apart_are_two_programs():
    """A call is first tried on its arguments as they are, before any container is opened:
    the program captured on `step((x, y))` must not replay `step(x, y)`, nor the other way
    round; each form replays its own program, with eager's losses."""

    def run(compiled):
        tg.manual_seed(0)
        model = mlp(norm=None, dropout=0.0)
        optimizer = optim.SGD(model.parameters(), lr=0.1)
        plain = training_step(model, optimizer)

        def step(*batch):
            return plain(*(batch[0] if len(batch) == 1 else batch))

        step = tg.compile(step) if compiled else step
        calls = [((x, y),) if number % 2 else (x, y) for number, (x, y) in enumerate(batches(8))]
        return [step(*arguments).item() for arguments in calls], step

    (eager, _), (compiled, step) = run(False), run(True)
    assert compiled == eager
    assert len(step.programs) == 2


@pytest.mark.parametrize(
    "change",
    ["dtype", "grad mode", "scheduler", "captured array", "eval", "seed", "requires_grad"],
)
def test_each_guard_recaptures(change):
    model, _, step = simple_setup(dropout=0.5 if change == "seed" else 0.0)
    ((x, y),) = batches(1)
    step(x, y)
    previous = tg.get_default_scheduler()
    if change == "dtype":
        x = tg.Tensor(x.data.astype(np.float64))
        model.to(np.float64)  # (also a captured array change)
    elif change == "grad mode":
        with tg.no_grad(), pytest.raises(RuntimeError, match="does not require grad"):
            step(x, y)  # recaptured: in no_grad, backward raises as it does in eager
        assert len(step.programs) == 1
        return
    elif change == "scheduler":
        tg.set_default_scheduler("auto")
    elif change == "captured array":
        model[0].weight.data = model[0].weight.data.copy()
    elif change == "eval":
        model.eval()
    elif change == "seed":
        tg.manual_seed(5)
    elif change == "requires_grad":
        model[0].bias.requires_grad = False
    try:
        step(x, y)
        assert len(step.programs) == 2
    finally:
        tg.set_default_scheduler(previous)


def test_a_replaced_parameter_captures_a_new_program():
    """`model.weight = nn.Parameter(...)` after the capture: the replay must read the new
    weight, as eager does (it used to replay with the old one, a silently wrong loss)."""
    models, losses = [], []
    for compiled in (False, True):
        tg.manual_seed(0)
        model = mlp(norm=None, dropout=0.0)
        step = training_step(model, optim.SGD(model.parameters(), lr=0.1))
        step = tg.compile(step) if compiled else step
        ((x, y),) = batches(1)
        step(x, y)
        model[2].weight = tg.nn.Parameter(np.zeros((3, 12), np.float32))
        losses.append(step(x, y).item())
        models.append(model)
    assert losses[1] == losses[0]
    assert len(step.programs) == 2


def test_past_the_limit_the_error_names_a_replaced_parameter():
    tg.manual_seed(0)
    model = mlp(norm=None, dropout=0.0)
    step = tg.compile(training_step(model, optim.SGD(model.parameters(), lr=0.1)), max_programs=1)
    step(*batches(1)[0])
    model[0].bias = tg.nn.Parameter(np.zeros(12, np.float32))
    with pytest.raises(
        tg.CompileError, match="a parameter, buffer, submodule or array of Linear was replaced"
    ):
        step(*batches(1)[0])


def test_past_the_limit_the_error_says_what_changed():
    tg.manual_seed(0)
    model = mlp(norm=None, dropout=0.0)
    step = tg.compile(training_step(model, optim.SGD(model.parameters(), lr=0.1)), max_programs=1)
    step(*batches(1)[0])
    with pytest.raises(tg.CompileError, match=r"argument 0: Tensor \(16, 6\).* -> Tensor \(5, 6\)"):
        step(*batches(1, batch=5)[0])


def test_python_arguments_are_guarded_by_value():
    w = tg.Tensor([1.0, 2.0], requires_grad=True)

    @tg.compile
    def scaled(x, factor):
        return (w * x * factor).sum()

    x = tg.Tensor([1.0, 1.0])
    assert scaled(x, 2.0).item() == 6.0
    assert scaled(x, 3.0).item() == 9.0
    assert len(scaled.programs) == 2


def test_a_tensor_argument_is_guarded_by_dtype_requires_grad_and_kind():
    w = tg.Tensor([1.0, 2.0], requires_grad=True)

    @tg.compile(max_programs=8)
    def weighted(x):
        return (w * x).sum()

    x = tg.Tensor([1.0, 1.0])
    weighted(x)
    weighted(tg.Tensor([3.0, 1.0]))
    assert len(weighted.programs) == 1
    calls = [  # (argument, w·x summed): each differs from the first call in one way
        (tg.Tensor([1.0, 1.0], requires_grad=True), 3.0),
        (tg.Tensor(np.ones(2, dtype=np.float64)), 3.0),
        (tg.Tensor(np.ones((3, 2))), 9.0),
        (np.ones(2), 3.0),
    ]
    for count, (value, expected) in enumerate(calls, start=2):
        assert weighted(value).item() == expected
        assert len(weighted.programs) == count


def forward_then_zero_grad(model, optimizer, zero_grad):
    """The step of `tinygrad-ops train`: the forward before zero_grad()."""

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    return step


@pytest.mark.parametrize("owner", ["optimizer", "module"])
def test_a_zero_grad_after_the_forward_needs_one_program(owner):
    """zero_grad() resets every .grad before backward writes it: the .grad a call starts
    with does not matter, and one program serves the first call and the others."""
    data = batches(8)
    states = []
    for compiled in (False, True):
        model = mlp(norm=None, dropout=0.0)
        optimizer = optim.Adam(model.parameters(), lr=0.01)
        zero_grad = optimizer.zero_grad if owner == "optimizer" else model.zero_grad
        step = forward_then_zero_grad(model, optimizer, zero_grad)
        step = tg.compile(step) if compiled else step
        losses = [step(x, y).item() for x, y in data]
        states.append((losses, state_of(model, optimizer)))
    assert len(step.programs) == 1
    assert states[0][0] == states[1][0]
    assert_same(states[0][1], states[1][1])


def test_a_step_before_zero_grad_reads_the_grads_left_by_the_call_before():
    """optimizer.step() first, on the .grad the previous call left (none at the first):
    the replayed step reads them as eager does."""
    data = batches(5)
    states = []
    for compiled in (False, True):
        model = mlp(norm=None, dropout=0.0)
        optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y, model=model, optimizer=optimizer):
            optimizer.step()
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            return loss

        step = tg.compile(step) if compiled else step
        losses = [step(x, y).item() for x, y in data]
        states.append((losses, state_of(model, optimizer)))
    assert states[0][0] == states[1][0]
    assert_same(states[0][1], states[1][1])
