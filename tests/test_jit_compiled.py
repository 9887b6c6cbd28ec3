"""tg.compile (jit/compiled.py): compiled steps against eager ones, bit for bit (MLPs with
norms and dropout under each optimizer, RNNs under each scheduler, custom Functions, the
train command), and what a replay reproduces."""

import re

import numpy as np
import pytest
from helpers import Cube
from jit_helpers import (
    assert_same,
    batches,
    manual_sgd_step,
    mlp,
    rnn_step,
    rnn_weights,
    run_both,
    run_rnn,
    simple_setup,
    state_of,
    training_step,
)

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops import optim
from tinygrad_ops.jit.scan_kernel import ScanKernel
from tinygrad_ops.scheduler.scan_scheduler import ScanScheduler


@pytest.mark.parametrize(
    ("norm", "make_optimizer"),
    [
        ("layer", lambda params: optim.Adam(params, lr=0.01)),
        ("batch", lambda params: optim.Adam(params, lr=0.01, weight_decay=0.01)),
        ("layer", lambda params: optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True)),
        ("batch", lambda params: optim.SGD(params, lr=0.05, momentum=0.5, weight_decay=1e-3)),
        (None, lambda params: optim.AdamW(params, lr=0.01)),
        ("layer", lambda params: optim.Adam(params, lr=0.01, amsgrad=True)),
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


@pytest.mark.parametrize("scheduler", ["blelloch", "hillis-steele", "blocked", "auto"])
def test_rnn_with_a_scan_matches_eager(scheduler):
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


def test_the_train_command_validates_with_one_compiled_forward():
    """The validation pass of each epoch replays one program, in eval mode (BatchNorm's
    running statistics, no dropout), with eager's figures to the last bit."""
    from tinygrad_ops.cli.train import evaluate, make_forward

    model = mlp(norm="batch", dropout=0.5)
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    step = training_step(model, optimizer)
    forward = make_forward(model)
    x, y = batches(1, batch=40, seed=3)[0]
    for train_x, train_y in batches(4):
        step(train_x, train_y)
        compiled = evaluate(model, x.data, y, forward)
        assert compiled == evaluate(model, x.data, y)
        assert model.training
    assert len(forward.programs) == 1


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


def test_returned_lists_one_tuples_arguments_and_captured_tensors_keep_their_shape():
    """The generated replay builds what the function returned: a list, a tuple of one,
    the argument itself, a captured tensor, None; a computed tensor is new at each call."""
    w = tg.Tensor([1.0, 2.0], requires_grad=True)

    @tg.compile
    def step(x):
        loss = (w * x).sum()
        return [x, w, (loss,), None]

    x = tg.Tensor([3.0, 4.0])
    first = step(x)
    second = step(x)
    for result in (first, second):
        assert type(result) is list
        assert len(result) == 4
        assert result[0] is x
        assert result[1] is w
        assert result[3] is None
        assert type(result[2]) is tuple
        assert result[2][0].item() == 11.0
    assert first[2][0] is not second[2][0]
    assert "return [values[0]," in step.program.source


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


@pytest.mark.parametrize(
    "make_optimizer",
    [
        lambda params: optim.Adam(params, lr=0.1),
        lambda params: optim.SGD(params, lr=0.1, momentum=0.9),
    ],
)
def test_a_0d_parameter_under_adam_and_momentum_matches_eager(make_optimizer):
    # (the replay updated Adam's moments in place, and eager had left them numpy scalars)
    results = []
    for compiled in (False, True):
        weight = tg.nn.Parameter(tg.Tensor(np.float32(1.5)))
        optimizer = make_optimizer([weight])

        def step(weight=weight, optimizer=optimizer):
            optimizer.zero_grad()
            loss = (weight * weight).sum()
            loss.backward()
            optimizer.step()
            return loss

        step = tg.compile(step) if compiled else step
        results.append([step().item() for _ in range(5)] + [weight.item()])
    assert results[0] == results[1]


def test_the_jit_is_imported_on_first_use():
    import subprocess
    import sys

    code = (
        "import sys, tinygrad_ops as tg\n"
        "assert 'tinygrad_ops.jit' not in sys.modules\n"
        "assert tg.compile(lambda: None).__class__.__name__ == 'CompiledFunction'\n"
        "assert 'tinygrad_ops.jit' in sys.modules and tg.CompileError.__name__ == 'CompileError'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
