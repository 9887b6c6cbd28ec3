"""`auto` measures its choices (scheduler/experience.py): the first backward of a chain
follows the cost model, the next ones alternate until each way is timed twice, and from
then on the faster measured is taken; `tg.backward_plan` says so. Timed with a scripted
clock, so that the decisions do not depend on this machine's load."""

import numpy as np
import pytest
from helpers import SpyScheduler
from rnn_formulations import build
from test_scan_formulations import FIXED_CALIBRATION

import tinygrad_ops as tg
from tinygrad_ops.scheduler import auto as auto_module
from tinygrad_ops.scheduler import calibration
from tinygrad_ops.scheduler.experience import RETRY, TRIALS, Experience


class ScriptedClock:
    """Each backward takes the next of `durations` seconds (run() reads the clock twice)."""

    def __init__(self, durations):
        self.readings = iter([value for duration in durations for value in (0.0, duration)])

    def __call__(self):
        return next(self.readings)


@pytest.fixture
def fixed_auto(monkeypatch):
    monkeypatch.setattr(calibration, "_CALIBRATION", dict(FIXED_CALIBRATION))
    return auto_module.AutoScheduler()


def backward(scheduler, steps=256, hidden=32):
    # Hidden 32: the fixed calibration's model scans, at 0.58x the walk, not so far below
    # it that it is trusted without measuring (`auto.CONFIDENT`).
    loss, parameters = build("benchmark", "tg", steps=steps, hidden=hidden)
    spy = SpyScheduler(scheduler)
    loss.backward(scheduler=spy)
    return bool(spy.graph.scanned_segments), [parameter.grad.numpy() for parameter in parameters]


@pytest.mark.parametrize(
    ("scan_time", "walk_time", "settles_on"), [(9.0, 6.0, False), (2.0, 8.0, True)]
)
def test_auto_takes_the_faster_it_measured(fixed_auto, scan_time, walk_time, settles_on):
    fixed_auto.clock = ScriptedClock([scan_time, walk_time, scan_time, walk_time, 1.0])
    _, expected = backward("sequential")
    first, grads = backward(fixed_auto)
    assert first  # the model scans this chain
    second, second_grads = backward(fixed_auto)
    assert not second  # ... and the next backward measures the walk
    assert [backward(fixed_auto)[0] for _ in range(2)] == [True, False]  # twice each
    plan = tg.backward_plan(build("benchmark", "tg", steps=256, hidden=32)[0], fixed_auto)
    verdict = "scanned" if settles_on else "walked"
    assert f"walked {walk_time * 1e3:.2f} ms: {verdict}" in plan.decision, str(plan)
    assert plan.segments[0].scanned == settles_on
    third, third_grads = backward(fixed_auto)
    assert third == settles_on
    for got in (grads, second_grads, third_grads):
        for mine, walked in zip(got, expected, strict=True):
            np.testing.assert_allclose(mine, walked, rtol=1e-10, atol=1e-12)


def test_a_chain_the_model_walks_far_from_a_scan_is_not_measured(fixed_auto):
    fixed_auto.clock = lambda: 0.0
    scanned, _ = backward(fixed_auto, steps=6)  # too short to pay: walked, not recorded
    assert not scanned
    assert not fixed_auto.experience.best


def test_a_scan_the_model_is_confident_of_is_not_measured(fixed_auto):
    fixed_auto.clock = lambda: 0.0
    for _ in range(3):  # hidden 4, 511 steps: a scan estimated at 0.1x the walk
        scanned, _ = backward(fixed_auto, steps=512, hidden=4)
        assert scanned
    assert not fixed_auto.experience.best


def test_near_a_tie_the_slower_choice_is_tried_again_now_and_then():
    experience = Experience()
    for how, seconds in [("scan", 1.0), ("walk", 1.1)] * TRIALS:
        experience.record("chain", how, seconds)
    verdicts = [experience.verdict("chain", model_scans=True, close=False) for _ in range(RETRY)]
    assert verdicts == ["scan"] * (RETRY - 1) + ["walk"]
    experience.record("chain", "walk", 5.0)  # a best is kept: a slower time changes nothing
    assert experience.measured("chain") == {"scan": 1.0, "walk": 1.1}
    far = Experience()
    for how, seconds in [("scan", 1.0), ("walk", 4.0)] * TRIALS:
        far.record("chain", how, seconds)
    assert {far.verdict("chain", True, False) for _ in range(2 * RETRY)} == {"scan"}
