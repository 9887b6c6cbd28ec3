"""tg.compile's generated replay and its fused kernels (jit/codegen.py, fused.py,
fused_optim.py): bit for bit the eager results, and the general path where they do not fit."""

import ast
import re

import jit_helpers
import numpy as np
import pytest

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops import optim
from tinygrad_ops.jit.inline import body_of
from tinygrad_ops.ops.elementwise import keep_where


def plain_mlp(dtype, seed=0):
    tg.manual_seed(seed)
    return tg.nn.Sequential(
        tg.nn.Linear(6, 12, dtype=dtype), tg.nn.ReLU(), tg.nn.Linear(12, 3, dtype=dtype)
    )


def data(count, dtype, seed=1, batch=16):
    generator = np.random.default_rng(seed)
    return [
        (
            tg.Tensor(generator.standard_normal((batch, 6)).astype(dtype)),
            generator.integers(0, 3, batch),
        )
        for _ in range(count)
    ]


def train(compiled, dtype, steps=100, reduction="mean", between=None):
    model = plain_mlp(dtype)
    optimizer = optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y, reduction=reduction)
        loss.backward()
        optimizer.step()
        return loss

    step = tg.compile(step) if compiled else step
    losses = []
    for number, (x, y) in enumerate(data(steps, dtype)):
        losses.append(step(x, y).data.copy())
        if between is not None:
            between(number, model, optimizer)
    arrays = [p.data.copy() for p in model.parameters()]
    arrays += [p.grad.data.copy() for p in model.parameters()]
    return np.stack(losses), arrays, step


def assert_runs_equal(eager, compiled):
    np.testing.assert_array_equal(eager[0], compiled[0])
    for a, b in zip(eager[1], compiled[1]):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_plain_sgd_mlp_matches_eager_over_100_steps(dtype, reduction):
    eager = train(False, dtype, reduction=reduction)
    compiled = train(True, dtype, reduction=reduction)
    assert_runs_equal(eager, compiled)
    listing = str(compiled[2].program)
    for kernel in ("Linear.forward", "Relu.backward", "CrossEntropy.forward", "SGD.step()"):
        assert any(kernel in line and "(inlined)" in line for line in listing.splitlines()) or (
            "(fused)" in listing and kernel == "SGD.step()"
        )


def test_the_generated_function_can_be_read():
    _, _, step = train(True, np.float32, steps=2)
    source = step.program.source
    assert source.startswith("def replay(values):")
    assert "# CrossEntropy.forward (inlined)" in source
    assert re.search(r"subtract\d*\(", source)  # (numpy's functions, by their names)


def change_hyperparameters(number, model, optimizer):
    """Between calls: a new learning rate, then momentum, then a new parameter group."""
    group = optimizer.param_groups[0]
    if number == 10:
        group["lr"] = 0.05
    if number == 20:
        group["momentum"] = 0.9
    if number == 30:
        group["momentum"] = 0.0
        group["weight_decay"] = 0.01
    if number == 40:
        group["weight_decay"] = 0.0
        extra = tg.nn.Parameter(tg.Tensor(np.ones(2, dtype=np.float32)))
        optimizer.param_groups.append({**group, "params": [extra]})


def test_fused_sgd_reads_the_hyperparameters_and_falls_back_when_they_change():
    eager = train(False, np.float32, steps=50, between=change_hyperparameters)
    compiled = train(True, np.float32, steps=50, between=change_hyperparameters)
    assert_runs_equal(eager, compiled)


def decay_the_learning_rate(number, model, optimizer):
    optimizer.param_groups[0]["lr"] *= 0.9


def test_the_fused_update_is_the_optimizers_own_with_the_settings_its_branches_test_fixed():
    """SGD's update inlined with momentum, weight_decay and nesterov (what its `if`s test)
    fixed and checked at each call; the learning rate, which only multiplies, is read at
    each call: a new one every step replays the same lines, bit for bit the eager step."""
    eager = train(False, np.float32, steps=20, between=decay_the_learning_rate)
    compiled = train(True, np.float32, steps=20, between=decay_the_learning_rate)
    assert_runs_equal(eager, compiled)
    source = compiled[2].program.source
    test = next(line for line in source.splitlines() if '["momentum"] ==' in line)
    assert '["weight_decay"] ==' in test
    assert '["nesterov"] ==' in test
    assert '"lr"' not in test
    assert "sgd_update" not in source  # (its lines, not a call)


@pytest.mark.parametrize(
    "make", [lambda p: optim.SGD(p, lr=0.1, momentum=0.9), lambda p: optim.Adam(p, lr=0.01)]
)
def test_the_fused_update_writes_in_the_lines_of_the_helper_it_calls(make):
    """sgd_update and adam_update end in Optimizer._subtract(parameter, update), a
    @staticmethod: the replay writes its lines in (one statement of them, no call)."""
    model = plain_mlp(np.float64)
    optimizer = make(model.parameters())

    @tg.compile
    def step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    for x, y in data(3, np.float64):
        step(x, y)
    source = step.program.source
    assert "_subtract(" not in source
    assert source.count("subtract_data = parameter") == 4  # (one per parameter)


def test_a_helper_is_written_in_unless_its_names_would_clash():
    body = body_of(jit_helpers.update_calling_a_helper, method=False)
    text = "\n".join(ast.unparse(statement) for statement in body.statements)
    assert "Helpers.scale(" not in text
    assert "scale_factor = factor * 2.0\nscale_data = p._data" in text
    for function, call in [
        (jit_helpers.update_whose_names_would_clash, "Helpers.scale(p, scale_data)"),
        (jit_helpers.update_whose_local_hides_a_global_of_the_helper, "Helpers.scale(p, np)"),
        (jit_helpers.update_calling_a_helper_that_returns, "Helpers.scaled(p, factor)"),
    ]:
        left = body_of(function, method=False)
        assert call in "\n".join(map(ast.unparse, left.statements))


def elementwise_step(x, bias, scale):
    y = (x * bias - scale).tanh() + x  # broadcasting: bias (4,) against x (3, 4)
    z = (-y).relu() * scale + (y * y).sum()
    loss = (z + z).sum()  # the gradient passed through to two edges of one tensor
    loss.backward()
    return loss


def test_the_fused_elementwise_ops_match_eager_with_broadcasting_and_0d():
    generator = np.random.default_rng(3)
    inputs = [generator.standard_normal((3, 4)) for _ in range(4)]
    results = []
    for compiled in (False, True):
        bias = tg.Tensor(generator.standard_normal(4) * 0 + 0.5, requires_grad=True)
        scale = tg.Tensor(np.asarray(0.75), requires_grad=True)
        step = tg.compile(elementwise_step) if compiled else elementwise_step
        run = []
        for values in inputs:
            x = tg.Tensor(values, requires_grad=True)
            bias.grad = scale.grad = None
            loss = step(x, bias, scale)
            run.append([loss.data, x.grad.data, bias.grad.data, scale.grad.data])
        results.append(run)
    for eager, compiled in zip(*results):
        for a, b in zip(eager, compiled):
            np.testing.assert_array_equal(a, b)


def cross_entropy_step(model):
    def step(x, y):
        model.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss

    return step


def test_fused_cross_entropy_ignores_targets_as_eager_after_capture():
    (x, y), (x2, y2) = data(2, np.float32)
    y2 = y2.copy()
    y2[[1, 5]] = -100  # ignored targets appear only after the capture
    results = []
    for compiled in (False, True):
        model = plain_mlp(np.float32)
        step = cross_entropy_step(model)
        step = tg.compile(step) if compiled else step
        step(x, y)
        loss = step(x2, y2)
        results.append([loss.data] + [p.grad.data.copy() for p in model.parameters()])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_fused_cross_entropy_still_checks_the_targets_bounds():
    (x, y), _ = data(2, np.float32)
    step = tg.compile(cross_entropy_step(plain_mlp(np.float32)))
    step(x, y)
    bad = y.copy()
    bad[3] = 7
    with pytest.raises(IndexError, match="target 7 is out of bounds for 3 classes"):
        step(x, bad)


@pytest.mark.parametrize("classes", [10, 600])
def test_cross_entropy_replays_its_row_buffers_only_where_they_change_something(classes):
    """RowBuffers sizes numpy's buffer for rows of 512 to 8191: the replay keeps the context
    there and drops it for 10 classes (inert), bit for bit the eager step either way."""
    generator = np.random.default_rng(3)
    logits = generator.standard_normal((8, classes)).astype(np.float32)
    targets = [generator.integers(0, classes, 8) for _ in range(4)]
    results = []
    for compiled in (False, True):
        z = tg.Tensor(logits, requires_grad=True)

        def step(y, z=z):
            z.grad = None
            loss = F.cross_entropy(z * 2.0, y)
            loss.backward()
            return loss

        step = tg.compile(step) if compiled else step
        results.append([[step(y).data, z.grad.data.copy()] for y in targets])
    for eager, replayed in zip(*results):
        for a, b in zip(eager, replayed):
            np.testing.assert_array_equal(a, b)
    assert ("RowBuffers" in step.program.source) == (classes == 600)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_python_numbers_beside_arrays_replay_bit_for_bit(dtype):
    """The replay passes a rule's Python numbers to numpy as 0-d arrays of the other
    operand's dtype, where numpy's cast is exact (not one that overflows)."""
    generator = np.random.default_rng(4)
    arrays = [generator.standard_normal((3, 4)).astype(dtype) * 50 for _ in range(4)]
    results = []
    for compiled in (False, True):
        x = tg.Tensor(arrays[0], requires_grad=True)

        def step(data, x=x):
            x.grad = None
            y = (x * 1.01 + 0.5 - 3) / 7.0 + data * 0.1
            loss = ((2 - y) * 1e5 + (1 / 3 - y) * 1e-30).sum()
            loss.backward()
            return loss

        step = tg.compile(step) if compiled else step
        results.append([[step(tg.Tensor(a)).data, x.grad.data.copy()] for a in arrays])
    for eager, replayed in zip(*results):
        for a, b in zip(eager, replayed):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)


def test_a_3d_linear_input_is_inlined_as_its_rule_handles_it():
    layer = tg.nn.Linear(4, 2)

    def step(x):
        layer.zero_grad()
        loss = layer(x).tanh().sum()
        loss.backward()
        return loss

    compiled = tg.compile(step)
    for call in range(4):
        x = tg.Tensor(np.full((2, 3, 4), 0.1 * call, dtype=np.float32))
        grads = []
        for function in (step, compiled):
            function(x)
            grads.append([p.grad.data.copy() for p in layer.parameters()])
        for a, b in zip(*grads):
            np.testing.assert_array_equal(a, b)
    assert "Linear.forward(%0, %1, %2)   (inlined)" in str(compiled.program)


def test_fused_relu_passes_nan_and_blocks_zeros_as_eager():
    values = np.array([[np.nan, -0.0, 0.0, 2.0, -1.0, np.inf, -np.inf]])
    weight = tg.Tensor(np.full((1, 7), 0.5))

    def step(x):
        loss = (F.relu(x * weight) * 3.0).sum()
        loss.backward()
        return loss

    compiled = tg.compile(step)
    for call in range(3):
        grads = []
        for function in (step, compiled):
            x = tg.Tensor(values * (call + 1), requires_grad=True)
            function(x)
            grads.append(x.grad.data)
        np.testing.assert_array_equal(grads[1], grads[0])
        assert grads[0][0, 0] == 1.5  # (NaN passes its gradient: 3 * 0.5)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_relus_gradient_into_the_replays_own_array_keeps_every_bit(dtype):
    """Where the replay owns the gradient that reaches Relu's backward (here Mul's g * w),
    keep_where writes over it (`overwrite=True`): the same bits as eager, also where the
    masked-out gradient is NaN, inf or -0.0, and the leaf's gradient a new array each call."""
    generator = np.random.default_rng(7)
    scale = generator.standard_normal((24, 40)).astype(dtype)
    scale[::3, ::2], scale[1::4, 1::3], scale[2::5] = np.nan, -np.inf, -0.0

    def step(x, w):
        loss = (F.relu(x) * w).sum()
        loss.backward()
        return loss

    compiled = tg.compile(step)
    seen = []
    for _ in range(3):
        values = generator.standard_normal((24, 40)).astype(dtype)
        values[::7] = 0.0
        values[1::6] = -0.0
        values[2::9] = np.nan
        grads = []
        for function in (step, compiled):
            x = tg.Tensor(values, requires_grad=True)
            with np.errstate(invalid="ignore"):  # (0 * inf in the forward)
                function(x, tg.Tensor(scale))
            grads.append(x.grad.data)
        bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[grads[0].itemsize]
        np.testing.assert_array_equal(grads[1].view(bits), grads[0].view(bits))
        assert all(grads[1] is not earlier for earlier in seen)
        seen.append(grads[1])
    assert "overwrite=True" in compiled.program.source


def matmul_step(a, b, v):
    loss = ((a @ b)[1:, ::2].sum() + (v @ a)[0] + (b @ v)[..., 1].sum()).tanh()
    loss.backward()
    return loss


def test_fused_matmul_and_getitem_match_eager_with_vectors_and_batches():
    generator = np.random.default_rng(5)
    b = tg.Tensor(generator.standard_normal((2, 4, 3)), requires_grad=True)  # a batch of W
    v = tg.Tensor(generator.standard_normal(3), requires_grad=True)  # a vector operand
    compiled = tg.compile(matmul_step)
    for _ in range(3):
        values = generator.standard_normal((3, 4))
        grads = []
        for function in (matmul_step, compiled):
            a = tg.Tensor(values, requires_grad=True)
            b.grad = v.grad = None
            function(a, b, v)
            grads.append([a.grad.data, b.grad.data, v.grad.data])
        for eager, replayed in zip(*grads):
            np.testing.assert_array_equal(replayed, eager)
    listing = str(compiled.program)
    assert "MatMul.forward" in listing
    assert "GetItem.forward" in listing


def test_viz_draws_the_program_kernels_and_slots():
    from tinygrad_ops import viz

    _, _, step = train(True, np.float32, steps=2)
    source = viz.draw_program(step.program).source
    for kernel in step.program.kernels:
        assert kernel.describe(step.program.name_of).split("(")[0] in source
    assert "%0 (16, 6)" in source  # the argument's slot, on the edge to the first Linear


@pytest.mark.parametrize("size", [1, 64, 512, 513, 4096])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_relus_gradient_keeps_its_bits_on_both_sides_of_the_small_size(size, dtype):
    """keep_where (Relu's backward) takes np.where for small arrays, the integer product for
    large ones: the same bits, NaN, inf and -0.0 included, in a new array of its own."""
    generator = np.random.default_rng(size)
    values = generator.standard_normal(size).astype(dtype)
    values[::3], values[1::5], values[2::7] = np.nan, -0.0, -np.inf
    mask = generator.random(size) > 0.5
    kept = keep_where(values, mask)
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[values.itemsize]
    expected = np.where(mask, values.view(bits), 0)  # (the kept bits, +0.0 elsewhere)
    assert kept.dtype == dtype
    assert kept.base is None
    np.testing.assert_array_equal(kept.view(bits), expected)
    overwritten = keep_where(values.copy(), mask, overwrite=True)  # (the replay's own g)
    assert overwritten.dtype == dtype
    np.testing.assert_array_equal(overwritten.view(bits), expected)
