"""tg.compile's program (jit/program.py): its listing, and its memory over many calls."""

import gc
import tracemalloc

import numpy as np
from jit_helpers import (
    assert_same,
    batches,
    compiled_peaks,
    mlp,
    peak_memory,
    simple_setup,
    state_of,
    training_step,
)

import tinygrad_ops as tg
from tinygrad_ops import optim


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
    eager_peak = peak_memory(eager, x, y)
    _, replayed = compiled_peaks(compiled, x, y)
    assert replayed <= eager_peak


def test_two_programs_of_the_same_text_share_its_code_and_keep_their_own_objects():
    """The capture of a second instance of the same step reuses the code compiled for the
    first (jit/codegen.py's cache); each replay still updates its own model."""
    compiled = [simple_setup() for _ in range(2)]  # two identical models, each its step
    eager_model, eager_optimizer, _ = simple_setup()
    eager = training_step(eager_model, eager_optimizer)
    for x, y in batches(6):  # interleaved: the two compiled steps, then the eager one
        for _, _, step in compiled:
            step(x, y)
        eager(x, y)
    first, second = (step.program for _, _, step in compiled)
    assert first.replay.__code__ is second.replay.__code__
    assert first.replay.__globals__ is not second.replay.__globals__
    for model, optimizer, _ in compiled:
        assert_same(state_of(eager_model, eager_optimizer), state_of(model, optimizer))


def test_peak_memory_with_norms_and_dropout_is_not_above_eager():
    """LayerNorm, Dropout and BatchNorm take the general kernels: their saved values are
    released after their last backward rule, as eager releases them."""
    x = tg.Tensor(np.random.default_rng(0).standard_normal((64, 6)).astype(np.float32))
    y = np.arange(64) % 3
    peaks = []
    for compiled in (False, True):
        for norm in ("layer", "batch"):
            model = mlp(norm=norm, dropout=0.2)
            step = training_step(model, optim.Adam(model.parameters(), lr=0.01))
            if compiled:
                peaks.append(compiled_peaks(tg.compile(step), x, y))
                continue
            for _ in range(3):
                step(x, y)
            peaks.append(peak_memory(step, x, y))
    assert peaks[2][1] <= peaks[0]  # (the first replay also compiles the program)
    assert peaks[3][1] <= peaks[1]
