"""tg.compile: compiled steps against eager ones, bit for bit; guards; refusals; memory."""

import gc
import re
import tracemalloc

import numpy as np
import pytest
from helpers import Cube

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops import optim
from tinygrad_ops.jit.scan_kernel import ScanKernel
from tinygrad_ops.scheduler.experience import Experience
from tinygrad_ops.scheduler.scan_scheduler import ScanScheduler

# -- helpers ------------------------------------------------------------------------------


def batches(count, batch=16, features=6, classes=3, seed=1, dtype=np.float32):
    generator = np.random.default_rng(seed)
    return [
        (
            tg.Tensor(generator.standard_normal((batch, features)).astype(dtype)),
            generator.integers(0, classes, batch),
        )
        for _ in range(count)
    ]


def mlp(seed=0, norm="layer", dropout=0.2, dtype=np.float32):
    tg.manual_seed(seed)
    layers = [tg.nn.Linear(6, 12, dtype=dtype)]
    if norm == "layer":
        layers.append(tg.nn.LayerNorm(12, dtype=dtype))
    elif norm == "batch":
        layers.append(tg.nn.BatchNorm1d(12, dtype=dtype))
    layers.append(tg.nn.ReLU())
    if dropout:
        layers.append(tg.nn.Dropout(dropout))
    layers.append(tg.nn.Linear(12, 3, dtype=dtype))
    return tg.nn.Sequential(*layers)


def training_step(model, optimizer, scheduler=None):
    def step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward(scheduler=scheduler)
        optimizer.step()
        return loss

    return step


def state_of(model, optimizer):
    """Every array a training run changes: parameters, grads, buffers, optimizer state."""
    arrays = {name: tensor.data.copy() for name, tensor in model.state_dict().items()}
    for name, parameter in model.named_parameters():
        arrays[name + ".grad"] = None if parameter.grad is None else parameter.grad.data.copy()
    for number, entry in optimizer.state_dict()["state"].items():
        for key, value in entry.items():
            arrays[f"optimizer.{number}.{key}"] = np.asarray(value).copy()
    return arrays


def assert_same(eager, compiled):
    assert eager.keys() == compiled.keys()
    for name in eager:
        if eager[name] is None:
            assert compiled[name] is None, name
        else:
            assert eager[name].dtype == compiled[name].dtype, name
            np.testing.assert_array_equal(eager[name], compiled[name], err_msg=name)


def run_both(make, data, scheduler=None):
    """Train two identical setups on `data`, eager and compiled; compare everything."""
    results = {}
    for compiled in (False, True):
        model, optimizer = make()
        tg.manual_seed(123)  # the dropout masks draw from the shared generator
        step = training_step(model, optimizer, scheduler)
        if compiled:
            step = tg.compile(step)
        losses = [step(x, y) for x, y in data]
        results[compiled] = ([loss.data.copy() for loss in losses], losses, model, optimizer)
    eager_losses, _, eager_model, eager_optimizer = results[False]
    compiled_losses, kept, compiled_model, compiled_optimizer = results[True]
    np.testing.assert_array_equal(np.stack(eager_losses), np.stack(compiled_losses))
    # The returned tensors are the caller's: no later call overwrote them.
    np.testing.assert_array_equal(np.stack([loss.data for loss in kept]), np.stack(eager_losses))
    assert_same(
        state_of(eager_model, eager_optimizer), state_of(compiled_model, compiled_optimizer)
    )


# -- bit for bit ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("norm", "make_optimizer"),
    [
        ("layer", lambda params: optim.Adam(params, lr=0.01)),
        ("batch", lambda params: optim.Adam(params, lr=0.01, weight_decay=0.01)),
        ("layer", lambda params: optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True)),
        ("batch", lambda params: optim.SGD(params, lr=0.05, momentum=0.5, weight_decay=1e-3)),
        (None, lambda params: optim.AdamW(params, lr=0.01)),
    ],
)
def test_mlp_training_matches_eager_over_100_steps(norm, make_optimizer):
    def make():
        model = mlp(norm=norm)
        return model, make_optimizer(model.parameters())

    run_both(make, batches(100))


@pytest.mark.parametrize("scheduler", ["sequential", "auto", "blelloch", "hillis-steele"])
def test_each_scheduler_on_a_graph_without_chains(scheduler):
    def make():
        model = mlp(norm="batch", dropout=0.0)
        return model, optim.SGD(model.parameters(), lr=0.1)

    run_both(make, batches(20), scheduler=scheduler)


def test_float64_and_a_step_without_zero_grad():
    """Without zero_grad the gradients accumulate, call after call, as in eager."""

    def make():
        model = mlp(norm=None, dropout=0.0, dtype=np.float64)
        return model, optim.SGD(model.parameters(), lr=0.01)

    results = []
    for compiled in (False, True):
        model, optimizer = make()

        def step(x, y, model=model, optimizer=optimizer):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            return loss

        step = tg.compile(step) if compiled else step
        for x, y in batches(10, dtype=np.float64):
            step(x, y)
        results.append(state_of(model, optimizer))
    assert_same(*results)


def test_custom_function_matches_eager():
    results = []
    for compiled in (False, True):
        tg.manual_seed(0)
        layer = tg.nn.Linear(6, 3)
        optimizer = optim.SGD(layer.parameters(), lr=0.01)

        def step(x, y, layer=layer, optimizer=optimizer):
            optimizer.zero_grad()
            loss = F.cross_entropy(Cube.apply(layer(x)) + layer(x), y)
            loss.backward()
            optimizer.step()
            return loss

        step = tg.compile(step) if compiled else step
        losses = [step(x, y).item() for x, y in batches(30)]
        results.append((losses, state_of(layer, optimizer)))
    assert results[0][0] == results[1][0]
    assert_same(results[0][1], results[1][1])
    assert "Cube.backward" in str(step.program)


def rnn_step(weights, steps, scheduler):
    w_in, w_hidden, optimizer = weights

    def step(inputs):
        optimizer.zero_grad()
        state = tg.zeros(inputs.shape[1], 8, dtype=np.float64)
        for time in range(steps):
            state = (inputs[time] @ w_in + state @ w_hidden).tanh()
        loss = (state * state).sum()
        loss.backward(scheduler=scheduler)
        optimizer.step()
        return loss

    return step


def rnn_weights():
    generator = np.random.default_rng(0)
    w_in = tg.Tensor(generator.standard_normal((3, 8)) * 0.5, requires_grad=True)
    w_hidden = tg.Tensor(generator.standard_normal((8, 8)) * 0.3, requires_grad=True)
    return w_in, w_hidden, optim.SGD([w_in, w_hidden], lr=0.01)


def test_rnn_matches_eager_with_the_sequential_walk():
    inputs = tg.Tensor(np.random.default_rng(1).standard_normal((12, 4, 3)))
    results = []
    for compiled in (False, True):
        weights = rnn_weights()
        step = rnn_step(weights, 12, "sequential")
        step = tg.compile(step) if compiled else step
        losses = [step(inputs).item() for _ in range(10)]
        results.append((losses, [weights[0].data.copy(), weights[1].data.copy()]))
    assert results[0][0] == results[1][0]
    for eager, compiled in zip(results[0][1], results[1][1]):
        np.testing.assert_array_equal(eager, compiled)


def run_rnn(scheduler, compiled, inputs, calls=6):
    weights = rnn_weights()
    step = rnn_step(weights, 40, scheduler)
    step = tg.compile(step) if compiled else step
    losses = [step(inputs).item() for _ in range(calls)]
    return step, losses, [weights[0].data.copy(), weights[1].data.copy()]


@pytest.mark.parametrize("scheduler", ["blelloch", "hillis-steele", "blocked", "auto"])
def test_rnn_with_a_scan_matches_eager(scheduler, monkeypatch):
    # Eager `auto` tries the other way on its next backwards, to measure it
    # (scheduler/experience.py), where a program keeps its capture's choice: held to the
    # cost model's choice here, both runs decide alike, whatever this machine's load.
    monkeypatch.setattr(
        Experience,
        "verdict",
        lambda self, key, model_scans, close: "scan" if model_scans else "walk",
    )
    inputs = tg.Tensor(np.random.default_rng(1).standard_normal((40, 4, 3)))
    step, losses, weights = run_rnn(scheduler, True, inputs)
    scans = [kernel for kernel in step.program.kernels if isinstance(kernel, ScanKernel)]
    if scheduler == "auto":
        # auto's choice (walk or scan, and how) is the capture's; eager makes the same one
        # here (its cost model, timing the machine, may choose otherwise call by call).
        scheduler = "sequential"
        if scans:
            scheduler = ScanScheduler(scans[0].method, scans[0].block_size)
    else:
        assert re.search(rf"scan of a chain of 3\d steps \({scheduler}", str(step.program))
    _, eager_losses, eager_weights = run_rnn(scheduler, False, inputs)
    assert losses == eager_losses
    for eager, compiled in zip(eager_weights, weights):
        np.testing.assert_array_equal(eager, compiled)


# -- guards ---------------------------------------------------------------------------------


def simple_setup(dropout=0.0):
    tg.manual_seed(0)
    model = mlp(norm=None, dropout=dropout)
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    return model, optimizer, tg.compile(training_step(model, optimizer))


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
    with pytest.raises(tg.CompileError, match="a parameter or buffer of Linear was replaced"):
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


# -- refusals name the line ---------------------------------------------------------------


def refused(function, *args):
    compiled = tg.compile(function)
    with pytest.raises(tg.CompileError) as error:
        compiled(*args)
    return str(error.value)


def test_item_on_a_computed_value_is_refused_with_the_line():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)

    def function():
        y = (x * 2).sum()
        if y.item() > 0:  # the line the error names
            return y
        return -y

    message = refused(function)
    assert ".item() on a value that changes from call to call" in message
    assert "test_jit.py" in message
    assert "if y.item() > 0:" in message


@pytest.mark.parametrize(
    ("read", "expected"),
    [
        (lambda y: bool(y), "bool()"),
        (lambda y: y.numpy(), ".numpy()"),
        (lambda y: y.tolist(), ".tolist()"),
        (lambda y: np.asarray(y), "np.asarray()"),
    ],
)
def test_other_reads_of_computed_values_are_refused(read, expected):
    x = tg.Tensor([1.0], requires_grad=True)
    message = refused(lambda: read(x * 2))
    assert expected in message
    assert "test_jit.py" in message


def test_reading_an_argument_is_refused_too():
    message = refused(lambda x: x * x.item(), tg.Tensor([3.0]))
    assert "an argument, a parameter or a value the step computes" in message


def test_reading_a_tensor_made_inside_is_allowed():
    def step(x):
        scale = tg.Tensor([2.0])
        return x * scale.item()

    compiled = tg.compile(step)
    compiled(tg.Tensor([1.0]))
    assert compiled(tg.Tensor([3.0])).item() == 6.0


def test_a_copy_of_an_argument_through_the_constructor_is_refused():
    assert "tg.Tensor(tensor)" in refused(lambda x: tg.Tensor(x) * 2, tg.Tensor([3.0]))


def backward_with_a_hook(x):
    y = x * x
    y.register_hook(lambda grad: grad * 2)
    y.sum().backward()


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        (lambda x: (x * x).sum().backward(create_graph=True), "create_graph=True"),
        (lambda x: tg.grad((x * x).sum(), [x]), r"tg.grad\(\)"),
        (backward_with_a_hook, "hook"),
    ],
)
def test_backward_features_that_cannot_be_replayed_are_refused(function, expected):
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(tg.CompileError, match=expected):
        tg.compile(function)(x)


def test_assignment_into_a_tensor_is_refused():
    def function():
        y = tg.zeros(3)
        y[0] = 1.0

    assert "y[0] = 1.0" in refused(function)


# -- the program, memory ------------------------------------------------------------------


def test_the_program_lists_its_kernels_in_order():
    _, _, step = simple_setup()
    step(*batches(1)[0])
    listing = str(step.program)
    names = ["SGD.zero_grad", "Linear.forward", "Relu.forward", "CrossEntropy.forward"]
    names += ["CrossEntropy.backward", "Linear.backward", "SGD.step"]
    positions = [listing.index(name) for name in names]
    assert positions == sorted(positions)
    assert "(16, 6) float32" in listing
    assert "returns Tensor(%" in listing


def test_memory_is_flat_over_1000_steps():
    _, _, step = simple_setup()
    ((x, y),) = batches(1)
    for _ in range(50):
        step(x, y)
    gc.collect()
    tracemalloc.start()
    try:
        for _ in range(100):
            step(x, y)
        after_100 = tracemalloc.get_traced_memory()[0]
        for _ in range(900):
            step(x, y)
        after_1000 = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert after_1000 - after_100 < 4096


def peak_memory(function, *args):
    gc.collect()
    tracemalloc.start()
    try:
        function(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_peak_memory_is_not_above_eager():
    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(64, 256), tg.nn.ReLU(), tg.nn.Linear(256, 10))
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    eager = training_step(model, optimizer)
    compiled = tg.compile(eager)
    x = tg.Tensor(np.random.default_rng(0).standard_normal((128, 64)).astype(np.float32))
    y = np.arange(128) % 10
    for _ in range(3):
        eager(x, y)
        compiled(x, y)
    assert peak_memory(compiled, x, y) <= peak_memory(eager, x, y)


# -- the train command --------------------------------------------------------------------


def test_the_train_command_compiled_and_eager_end_alike(tmp_path):
    from tinygrad_ops import cli

    settings = ["--dataset", "moons", "--hidden", "16", "--batch-size", "32", "--no-progress"]
    settings += ["--norm", "batch", "--dropout", "0.1", "--optimizer", "adamw", "--epochs", "2"]
    checkpoints = []
    for flag in ([], ["--no-compile"]):
        out = tmp_path / ("eager" if flag else "compiled")
        assert cli.main(["train", *settings, "--out", str(out), *flag]) == 0
        checkpoints.append(tg.load(out / "checkpoint.npz"))
    compiled, eager = checkpoints
    assert compiled["history"] == eager["history"]
    for key, value in eager["model"].items():
        np.testing.assert_array_equal(compiled["model"][key].numpy(), value.numpy(), err_msg=key)


def manual_sgd_step(parameters, write):
    def step(x, y):
        w, b = parameters
        loss = F.cross_entropy(F.linear(x, w, b), y)
        loss.backward()
        with tg.no_grad():
            for parameter in parameters:
                write(parameter, 0.1 * parameter.grad)
                parameter.grad = None
        return loss

    return step


def test_a_hand_written_update_with_in_place_ops_matches_eager():
    results = []
    for compiled in (False, True):
        tg.manual_seed(0)
        layer = tg.nn.Linear(6, 3)
        parameters = [layer.weight, layer.bias]
        step = manual_sgd_step(parameters, lambda parameter, update: parameter.sub_(update))
        step = tg.compile(step) if compiled else step
        losses = [step(x, y).item() for x, y in batches(20)]
        results.append((losses, [parameter.data.copy() for parameter in parameters]))
    assert results[0][0] == results[1][0]
    for eager, compiled in zip(results[0][1], results[1][1]):
        np.testing.assert_array_equal(eager, compiled)


def test_a_change_through_data_is_refused():
    tg.manual_seed(0)
    layer = tg.nn.Linear(6, 3)

    def write(parameter, update):
        parameter.data -= update.data

    step = tg.compile(manual_sgd_step([layer.weight, layer.bias], write))
    with pytest.raises(tg.CompileError, match="made without an op"):
        step(*batches(1)[0])


def test_grad_set_to_none_after_the_update_is_replayed():
    """`p.grad = None` at the end of the step: a kernel does it again at each replay."""
    tg.manual_seed(0)
    layer = tg.nn.Linear(6, 3)
    parameters = [layer.weight, layer.bias]
    step = tg.compile(manual_sgd_step(parameters, lambda p, update: p.sub_(update)))
    for x, y in batches(3):
        step(x, y)
        assert layer.weight.grad is None
    assert "weight.grad = None" in str(step.program)


def test_grad_set_to_none_before_the_forward_fails_loudly():
    tg.manual_seed(0)
    layer = tg.nn.Linear(6, 3)

    def step(x, y):
        layer.weight.grad = None
        F.cross_entropy(layer(x), y).backward()

    step = tg.compile(step, max_programs=2)
    data = batches(3)
    step(*data[0])
    step(*data[1])  # the .grad left by the first call does not fit: a second capture
    with pytest.raises(tg.CompileError, match=r"assigning \.grad inside a compiled function"):
        step(*data[2])


def test_a_numpy_view_of_an_argument_is_refused():
    w = tg.Tensor(np.ones((3, 2)), requires_grad=True)

    def step(inputs):
        return (tg.Tensor(inputs[0]) @ w).sum()

    with pytest.raises(tg.CompileError, match=r"tg.Tensor\(array\)"):
        tg.compile(step)(np.ones((4, 5, 3)))


def test_a_numpy_view_of_an_argument_shared_by_from_numpy_is_refused():
    w = tg.Tensor(np.ones((3, 2)), requires_grad=True)

    def step(inputs):
        return (tg.from_numpy(inputs[0]) @ w).sum()

    with pytest.raises(tg.CompileError, match="Index the Tensor instead"):
        tg.compile(step)(np.ones((4, 5, 3)))


def test_a_numpy_argument_that_type_promotion_converts_is_converted_at_each_call():
    w = tg.Tensor(np.ones(3), requires_grad=True)  # float64

    def step(scale):
        loss = (w * scale).sum()  # a float32 array, promoted to float64: a new array
        loss.backward()
        return loss

    compiled = tg.compile(step)
    generator = np.random.default_rng(0)
    for _ in range(3):
        scale = generator.standard_normal(3).astype(np.float32)
        assert compiled(scale).item() == step(scale).item()
    assert "input 1 as float64" in str(compiled.program)


def test_dropout_with_a_seed_inside_is_refused():
    x = tg.Tensor(np.ones((4, 3)), requires_grad=True)
    message = refused(lambda: F.dropout(x, 0.5, seed=3).sum().backward())
    assert "a random generator made inside the function" in message


def test_a_dropout_module_with_its_own_generator_matches_eager():
    results = []
    for compiled in (False, True):
        tg.manual_seed(0)
        layer = tg.nn.Linear(6, 3)
        dropout = tg.nn.Dropout(0.5, generator=np.random.default_rng(7))
        optimizer = optim.SGD(layer.parameters(), lr=0.1)

        def step(x, y, layer=layer, dropout=dropout, optimizer=optimizer):
            optimizer.zero_grad()
            loss = F.cross_entropy(dropout(layer(x)), y)
            loss.backward()
            optimizer.step()
            return loss

        step = tg.compile(step) if compiled else step
        results.append([step(x, y).item() for x, y in batches(10)])
    assert results[0] == results[1]


def test_a_gradient_changed_through_data_is_refused():
    w = tg.Tensor([1.0, 2.0], requires_grad=True)

    def step(x):
        (w * x).sum().backward()
        w.grad.data *= 0.5  # not an op: a replay would not halve it

    with pytest.raises(tg.CompileError, match="made without an op"):
        tg.compile(step)(tg.Tensor([1.0, 1.0]))


def test_a_gradient_scaled_with_an_in_place_op_matches_eager():
    results = []
    for compiled in (False, True):
        w = tg.Tensor([1.0, 2.0], requires_grad=True)
        optimizer = optim.SGD([w], lr=0.1)

        def step(x, w=w, optimizer=optimizer):
            optimizer.zero_grad()
            (w * w * x).sum().backward()
            with tg.no_grad():
                w.grad.mul_(0.5)
            optimizer.step()

        step = tg.compile(step) if compiled else step
        for _ in range(5):
            step(tg.Tensor([1.0, 3.0]))
        results.append(w.data.copy())
    np.testing.assert_array_equal(results[0], results[1])


def test_an_inference_function_returning_a_tuple_and_a_dict():
    tg.manual_seed(0)
    model = mlp(norm="batch", dropout=0.5).eval()

    @tg.compile
    def predict(x):
        logits = model(x)
        return logits, {"probabilities": F.softmax(logits, axis=1), "count": 3}

    for x, _ in batches(3):
        with tg.no_grad():
            logits, extra = predict(x)
            expected = model(x)
        np.testing.assert_array_equal(logits.data, expected.data)
        assert extra["count"] == 3
        np.testing.assert_array_equal(extra["probabilities"].data, F.softmax(expected, axis=1).data)
    assert len(predict.programs) == 1


def test_a_compiled_method_is_bound_to_its_instance():
    class Trainer:
        def __init__(self):
            tg.manual_seed(0)
            self.model = mlp(norm=None, dropout=0.0)
            self.optimizer = optim.SGD(self.model.parameters(), lr=0.1)

        @tg.compile
        def step(self, x, y):
            self.optimizer.zero_grad()
            loss = F.cross_entropy(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            return loss

    trainer = Trainer()
    eager_model, eager_optimizer, _ = simple_setup()
    eager = training_step(eager_model, eager_optimizer)
    for x, y in batches(5):
        assert trainer.step(x, y).item() == eager(x, y).item()
    assert "SGD.step()" in str(trainer.step.program)


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
