"""`auto` remembers the graph shapes it walked (scheduler/verdicts.py): the next backward of
a graph of that shape is walked without the gate or the look, every REFRESH-th one is
decided afresh, a scanned shape is never remembered, and `tg.backward_plan` says so."""

import numpy as np
import pytest
from rnn_formulations import build
from test_scan_formulations import FIXED_CALIBRATION

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops.scheduler import auto as auto_module
from tinygrad_ops.scheduler import calibration
from tinygrad_ops.scheduler.verdicts import REFRESH


@pytest.fixture
def counting_auto(monkeypatch):
    """A fresh AutoScheduler (fixed calibration) that counts its gate's decisions."""
    monkeypatch.setattr(calibration, "_CALIBRATION", dict(FIXED_CALIBRATION))
    scheduler = auto_module.AutoScheduler()
    scheduler.gates = 0
    gate = scheduler.gate

    def counted(graph, full=False):
        scheduler.gates += 1
        return gate(graph, full)

    scheduler.gate = counted
    return scheduler


def mlp_loss(seed=0):
    generator = np.random.default_rng(seed)
    weights = [tg.Tensor(generator.standard_normal((8, 8)), requires_grad=True) for _ in range(3)]
    h = tg.Tensor(generator.standard_normal((4, 8)))
    for weight in weights:
        h = F.linear(h, weight).relu()
    return F.mse_loss(h, tg.Tensor(np.zeros((4, 8)))), weights


def test_a_graph_of_a_shape_walked_before_is_walked_without_the_gate(counting_auto):
    for _ in range(4):
        loss, weights = mlp_loss()
        loss.backward(scheduler=counting_auto)
        expected_loss, expected_weights = mlp_loss()
        expected_loss.backward()
        for mine, walked in zip(weights, expected_weights, strict=True):
            np.testing.assert_array_equal(mine.grad.numpy(), walked.grad.numpy())
    # The first backward has no previous one to count the ops since; the second is the
    # first of its shape: both run the gate, the next two do not.
    assert counting_auto.gates == 2
    plan = tg.backward_plan(mlp_loss()[0], scheduler=counting_auto)
    assert plan.decision.startswith("graphs of this shape were walked before"), str(plan)
    assert "24 ops deep" in plan.decision


def test_a_remembered_shape_is_decided_afresh_now_and_then(counting_auto):
    for _ in range(2 + REFRESH):
        mlp_loss()[0].backward(scheduler=counting_auto)
    assert counting_auto.gates == 3


def test_another_graph_behind_the_same_output_runs_the_gate(counting_auto):
    for _ in range(3):
        mlp_loss()[0].backward(scheduler=counting_auto)
    loss, _ = build("benchmark", "tg", steps=512, hidden=4)  # ends in a Sum too
    before = counting_auto.gates
    loss.backward(scheduler=counting_auto)
    assert counting_auto.gates == before + 1


def test_a_scanned_shape_is_not_remembered(counting_auto, monkeypatch):
    monkeypatch.setattr(auto_module, "CONFIDENT", 1.0)  # the model's scan, not timed
    gated = []
    for _ in range(4):
        loss, _ = build("benchmark", "tg", steps=512, hidden=4)
        graph_runs = counting_auto.gates
        loss.backward(scheduler=counting_auto)
        gated.append(counting_auto.gates > graph_runs)
    assert gated == [True] * 4
    assert not counting_auto.verdicts.walked


@pytest.mark.parametrize("hidden", [4, 32, 128])
def test_a_diagonal_chain_is_priced_and_looked_at_as_diagonal(hidden, monkeypatch):
    # This machine's calibration in one run (the walk's cost per node grows with d^2, as
    # its products by a weight do); a diagonal chain's scan does elementwise work only.
    costs = dict(FIXED_CALIBRATION, c_visit_area=1.6e-10)
    monkeypatch.setattr(calibration, "_CALIBRATION", costs)
    times = auto_module.estimate(255, 4, (4, hidden), "diagonal")
    assert times["blelloch"] < 0.6 * times["sequential"], times
    loss, _ = build("elementwise", "tg", steps=256, hidden=hidden, batch=4)
    plan = tg.backward_plan(loss, scheduler=auto_module.AutoScheduler())
    assert "looked for chains" in plan.decision, str(plan)
    assert [(segment.jacobian_kind, segment.scanned) for segment in plan.segments] == [
        ("diagonal", True)
    ], str(plan)


def test_the_gate_walks_no_deeper_than_the_first_look_reads(monkeypatch):
    # A calibration whose cost per chain is large: the chain that repays it is long, and
    # the gate used to follow the graph that far down (all of a 256-step chain) before
    # the look, which walks down its route again.
    monkeypatch.setattr(calibration, "_CALIBRATION", dict(FIXED_CALIBRATION, c_chain=0.05))
    from tinygrad_ops.autograd import BackwardGraph

    loss, _ = build("benchmark", "tg", steps=256, hidden=4, batch=4)
    graph = BackwardGraph([loss], None, False, True)
    scheduler = auto_module.AutoScheduler()
    assert scheduler.worth_analysing(graph), scheduler.last_gate
    walked, _ = scheduler._walks[id(loss)]
    assert len(walked) <= 128
