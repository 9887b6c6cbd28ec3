"""`auto` times its choices on the chains of hand-written loops (calibration.ChainTimes):
the first backwards of a chain take the cost model's way and the other in turn, each
timed three times, and from then on the faster; a graph whose chains settle on the walk
is walked at once."""

import numpy as np
import pytest
from rnn_formulations import build
from test_scan_formulations import FIXED_CALIBRATION

import tinygrad_ops as tg
from tinygrad_ops.scheduler import auto as auto_module
from tinygrad_ops.scheduler import calibration
from tinygrad_ops.scheduler.calibration import ChainTimes


class ScriptedClock:
    """A clock whose backwards take the scripted seconds: scan or walk, by what ran (time
    passes at a reading once the run's way is known)."""

    def __init__(self, scheduler, scan_time, walk_time):
        self.scheduler = scheduler
        self.times = {"scan": scan_time, "walk": walk_time}
        self.now = 0.0

    def __call__(self):
        if self.scheduler.trial is not None:
            self.now += self.times[self.scheduler.trial[1]]
        return self.now


@pytest.fixture
def fixed_auto(monkeypatch):
    monkeypatch.setattr(calibration, "_CALIBRATION", dict(FIXED_CALIBRATION))
    return auto_module.AutoScheduler()


def test_the_ways_are_timed_in_turn_then_the_faster_is_taken():
    times = ChainTimes()
    ways = []
    for _ in range(2 * ChainTimes.TRIALS):
        ways.append(times.way("chain", "scan"))
        times.record("chain", ways[-1], 1.0 if ways[-1] == "scan" else 0.5)
    assert ways == ["scan", "walk"] * ChainTimes.TRIALS
    assert times.way("chain", "scan") == "walk"
    assert times.measured("chain") == {"scan": 1.0, "walk": 0.5}
    assert times.way("other chain", "walk") == "walk"  # unmeasured: the model's way first


def test_only_the_trials_decide():
    # The way settled on keeps running (and being timed by the backward): its later,
    # faster times must not outvote the other way's few samples.
    times = ChainTimes()
    for how in ["scan", "walk"] * ChainTimes.TRIALS:
        times.record("chain", how, 1.0 if how == "scan" else 1.2)
    for _ in range(20):
        times.record("chain", "scan", 0.1)
    assert times.measured("chain") == {"scan": 1.0, "walk": 1.2}


def test_a_scan_must_beat_the_walk_by_the_margin():
    times = ChainTimes()
    for how in ["scan", "walk"] * ChainTimes.TRIALS:
        times.record("chain", how, 0.97 if how == "scan" else 1.0)
    assert times.way("chain", "scan") == "walk"


@pytest.mark.parametrize(
    ("scan_time", "walk_time", "settled"), [(1.0, 2.0, "scan"), (2.0, 1.0, "walk")]
)
def test_a_training_loop_settles_on_the_faster_way(
    scan_time, walk_time, settled, fixed_auto, monkeypatch
):
    monkeypatch.setattr(auto_module, "TRUSTED", float("inf"))  # (a close call: timed)
    fixed_auto.clock = ScriptedClock(fixed_auto, scan_time, walk_time)
    looks = []
    original = auto_module.ScanScheduler.find
    monkeypatch.setattr(
        auto_module.ScanScheduler,
        "find",
        lambda self, graph: looks.append(1) or original(self, graph),
    )
    ways = []
    trials = 2 * ChainTimes.TRIALS
    for _ in range(trials + 3):
        loss, _ = build("benchmark", "tg", steps=256, hidden=4)
        loss.backward(scheduler=fixed_auto)
        ways.append(None if fixed_auto.trial is None else fixed_auto.trial[1])
    assert ways[:trials] == ["scan", "walk"] * ChainTimes.TRIALS  # (the model scans this chain)
    (key,) = fixed_auto.chain_times.times
    # A walk's time leaves out the look (a graph settled on the walk is walked without one).
    assert fixed_auto.chain_times.measured(key) == {"scan": scan_time, "walk": walk_time}
    if settled == "scan":
        assert ways[trials:] == ["scan"] * 3
        assert len(looks) == trials + 3
        # The plan says what was timed, and that it decides.
        loss, _ = build("benchmark", "tg", steps=256, hidden=4)
        plan = tg.backward_plan(loss, scheduler=fixed_auto)
        timed = (
            "timed on these chains before: scan 1000.00 ms, walk 2000.00 ms; this backward: scan"
        )
        assert plan.decision.endswith(timed), str(plan)
        assert fixed_auto.trial[1] == "scan"  # (the plan decided on a copy: the run's is kept)
    else:
        assert ways[trials:] == [None] * 3  # walked at once: the graph's shape is remembered
        assert len(looks) == trials


def test_a_choice_the_model_is_sure_of_is_not_timed(fixed_auto):
    loss, _ = build("benchmark", "tg", steps=2048, hidden=4)
    (segment,) = tg.backward_plan(loss, scheduler=fixed_auto).segments
    times = segment.estimates
    assert min(times[name] for name in times if name != "sequential") * 3 < times["sequential"]
    loss.backward(scheduler=fixed_auto)
    assert fixed_auto.trial is None
    assert not fixed_auto.chain_times.times


def test_gradients_are_the_walks_whichever_way_auto_takes(fixed_auto, monkeypatch):
    monkeypatch.setattr(auto_module, "TRUSTED", float("inf"))
    fixed_auto.clock = ScriptedClock(fixed_auto, 2.0, 1.0)
    loss, params = build("benchmark", "tg", steps=64, hidden=4)
    loss.backward(scheduler="sequential")
    expected = [param.grad.numpy() for param in params]
    for _ in range(6):
        loss, params = build("benchmark", "tg", steps=64, hidden=4)
        loss.backward(scheduler=fixed_auto)
        for mine, walked in zip([param.grad.numpy() for param in params], expected, strict=True):
            np.testing.assert_allclose(mine, walked, rtol=1e-10, atol=1e-12)


def results_of(monkeypatch, owner, name):
    """The list of what `owner.name(self, graph)` returns, call by call, from now on."""
    results = []
    original = getattr(owner, name)
    monkeypatch.setattr(
        owner, name, lambda self, graph: results.append(original(self, graph)) or results[-1]
    )
    return results


def test_a_graph_shape_the_gate_walked_is_walked_at_once(fixed_auto, monkeypatch):
    gates = results_of(monkeypatch, auto_module.AutoScheduler, "gate")
    for _ in range(4):  # a training loop: the same graph every step
        loss, _ = build("benchmark", "tg", steps=64, hidden=64)  # too wide for a chain to pay
        loss.backward(scheduler=fixed_auto)
    assert len(gates) == 2  # (the first backward has no previous one to count ops from)


def test_a_deep_graph_without_a_chain_is_looked_at_once(fixed_auto, monkeypatch):
    looks = results_of(monkeypatch, auto_module.ScanScheduler, "find")
    generator = np.random.default_rng(0)
    weights = [generator.standard_normal((4 + k, 5 + k)) * 0.3 for k in range(20)]
    for _ in range(4):  # 20 layers of growing width, 40 ops deep: no two steps alike
        h = tg.Tensor(np.ones((2, 4)))
        for weight in weights:
            h = (h @ tg.Tensor(weight, requires_grad=True)).tanh()
        h.sum().backward(scheduler=fixed_auto)
    assert looks == [{}, {}]  # (the first backward has no previous one to count ops from)
