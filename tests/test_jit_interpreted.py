"""A program's first replays run from its kernel list; compiling waits (jit/program.py).

The tests imported below compare compiled and eager runs bit for bit; here they run with
every replay interpreted (the program never compiled), so that both ways of replaying
are checked over the same steps, norms, dropout, optimizers, scans and stacks.
"""

import gc

import numpy as np
import pytest
from jit_helpers import simple_setup
from test_jit_compiled import (  # noqa: F401 (collected here again, interpreted)
    test_a_dropout_module_with_its_own_generator_matches_eager,
    test_a_gradient_scaled_with_an_in_place_op_matches_eager,
    test_custom_function_matches_eager,
    test_grad_set_to_none_after_the_update_is_replayed,
    test_mlp_training_matches_eager_over_100_steps,
    test_rnn_matches_eager_with_the_sequential_walk,
    test_rnn_with_a_scan_matches_eager,
)
from test_jit_fused import (  # noqa: F401
    test_fused_relu_passes_nan_and_blocks_zeros_as_eager,
    test_the_fused_elementwise_ops_match_eager_with_broadcasting_and_0d,
)
from test_jit_stacks import (  # noqa: F401
    test_a_stacked_scan_is_bit_for_bit_the_eager_scan,
    test_a_two_layer_rnn_under_adam,
    test_inputs_read_backwards_are_copied_into_a_stack,
    test_values_not_found_in_a_stack_keep_the_nodes_path,
)

import tinygrad_ops as tg
from tinygrad_ops.jit import codegen, guards, program

NEVER = 10**9


@pytest.fixture(autouse=True)
def interpreted_only(request, monkeypatch):
    """Every replay from the kernel list, and every guard check by `differences` (the
    tests defined in this file set their own counts)."""
    if request.function.__module__ == __name__:
        return
    monkeypatch.setattr(program, "INTERPRETED_RUNS", NEVER)
    monkeypatch.setattr(guards, "INTERPRETED_CHECKS", NEVER)


def test_the_capture_compiles_nothing_and_a_replayed_program_is_compiled():
    codegen._CODE.clear()
    _, _, step = simple_setup()
    x = tg.Tensor(np.ones((16, 6), np.float32))
    y = np.arange(16) % 3
    step(x, y)
    guarded, captured = step.programs[0]
    assert captured.compiled is None
    assert not codegen._CODE
    for _ in range(program.INTERPRETED_RUNS):
        step(x, y)
    assert captured.compiled is None
    step(x, y)  # the replay that compiles the program
    assert captured.compiled is not None
    assert captured.run == captured.replay
    for _ in range(guards.INTERPRETED_CHECKS - program.INTERPRETED_RUNS - 1):
        step(x, y)
    assert not hasattr(guarded, "source")
    step(x, y)  # the check that compiles the guards
    assert "holds" in vars(guarded)
    assert "def holds" in guarded.source


def test_reading_the_program_compiles_it():
    _, _, step = simple_setup()
    step(tg.Tensor(np.ones((16, 6), np.float32)), np.arange(16) % 3)
    assert step.program.compiled is None
    assert "def replay(values)" in step.program.source
    assert step.program.compiled is not None


def test_an_in_place_write_stamps_the_version_in_both_tiers():
    """A replayed write into a captured tensor notes the change (`bump_version`) as eager
    does: its count and its stamp on the node clock move at every call."""
    buffer = tg.zeros(3)

    @tg.compile
    def step(x):
        with tg.no_grad():
            buffer.add_(x)
        return buffer * 2

    x = tg.Tensor(np.ones(3))
    for call in range(1, 6):  # capture, interpreted, compiled ...
        count, stamp = buffer._version
        step(x)
        assert buffer._version[0] == count + 1, call
        assert buffer._version[1] > stamp, call
    np.testing.assert_array_equal(buffer.numpy(), np.full(3, 5.0))


def test_the_capture_pauses_the_garbage_collector_and_restores_it():
    """Paused while the capture runs (its objects all live on), restored after it, also
    when the capture is refused; left off when it was off."""
    seen = []

    @tg.compile
    def step(x):
        seen.append(gc.isenabled())
        return x * 2

    @tg.compile
    def refused_step(x):
        seen.append(gc.isenabled())
        return (x * 2).sum().item()

    x = tg.Tensor(np.ones(2))
    assert gc.isenabled()
    step(x)
    with pytest.raises(tg.CompileError):
        refused_step(x)
    assert seen == [False, False]
    assert gc.isenabled()
    gc.disable()
    try:
        step(tg.Tensor(np.ones(3)))  # a new shape: captured again
    finally:
        gc.enable()
    assert seen == [False, False, False]
