"""`auto`'s choices on representative graphs, pinned: from the fixed calibration of
test_scan_formulations, each case's plan and run take the same way (walk, scan and which
scan, timed or not) whatever the code that decides looks like."""

import numpy as np
import pytest
from helpers import SpyScheduler
from rnn_formulations import build
from test_scan_formulations import FIXED_CALIBRATION

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops.scheduler import auto, calibration

LOOKED = "dense chains of tensors ({}) may pay: looked for chains"
TOO_WIDE = "no dense chain of tensors (4, 64) can pay: walked"

# (formulation, library, steps, hidden, batch): the plan's (method, block size) per segment,
# the scans the run made, the way it timed (None: the model's choice stands), the gate's
# words in the plan (None for a declared chain: decided at its top).
CASES = {
    ("benchmark", "tg", 64, 8, 4): (
        [("blelloch", None)], [("blelloch", 256)], "scan", LOOKED.format("4, 8")
    ),
    ("benchmark", "tg", 2048, 8, 4): (
        [("blelloch", None)], [("blelloch", 256)], None, LOOKED.format("4, 8")
    ),
    ("benchmark", "tg", 256, 32, 4): (
        [("blocked", 64)], [("blocked", 64)], "scan", LOOKED.format("4, 32")
    ),
    ("benchmark", "tg", 2048, 32, 4): (
        [("blocked", 64)], [("blocked", 64)], "scan", LOOKED.format("4, 32")
    ),
    ("benchmark", "tg", 64, 64, 4): ([("sequential", None)], [], None, TOO_WIDE),
    ("benchmark", "tg", 2048, 64, 4): ([("sequential", None)], [], None, TOO_WIDE),
    # BPPSA's setting (hidden 20, 16 rows): the model is not sure, and walks first.
    ("benchmark", "tg", 256, 20, 16): (
        [("sequential", None)], [], "walk", LOOKED.format("16, 20")
    ),
    ("benchmark", "tg", 8, 8, 4): ([("sequential", None)], [], "walk", LOOKED.format("4, 8")),
    ("benchmark", "tg-scan", 2048, 20, 4): ([("blocked", 256)], [("blocked", 256)], None, None),
    ("benchmark", "tg-scan", 256, 64, 4): ([("sequential", None)], [], None, None),
    ("elementwise", "tg", 256, 64, 4): (
        [("blelloch", None)], [("blelloch", 256)], "scan",
        "diagonal chains of tensors (4, 64) may pay: looked for chains",
    ),
    ("two-rnns", "tg", 64, 64, 4): ([("sequential", None)] * 2, [], None, TOO_WIDE),
}  # fmt: skip


@pytest.fixture
def fixed_auto(monkeypatch):
    monkeypatch.setattr(calibration, "_CALIBRATION", dict(FIXED_CALIBRATION))
    return auto.AutoScheduler()


@pytest.mark.parametrize("case", list(CASES))
def test_auto_chooses_as_before(case, fixed_auto):
    name, library, steps, hidden, batch = case
    planned, scanned, way, gate = CASES[case]
    loss, _ = build(name, library, steps=steps, hidden=hidden, batch=batch)
    plan = tg.backward_plan(loss, scheduler=fixed_auto)
    assert [(segment.choice, segment.block_size) for segment in plan.segments] == planned
    assert plan.decision == auto.RULE + ("" if gate is None else f"; {gate}"), str(plan)
    spy = SpyScheduler(fixed_auto)
    loss.backward(scheduler=spy)
    ran = [(segment.method, segment.block_size) for segment in spy.graph.scanned_segments]
    assert ran == scanned
    assert (None if fixed_auto.trial is None else fixed_auto.trial[1]) == way


def test_an_mlp_is_walked_without_a_look(fixed_auto):
    generator = np.random.default_rng(0)
    h = tg.Tensor(generator.standard_normal((32, 64)))
    for _ in range(3):
        weight = tg.Tensor(generator.standard_normal((64, 64)) * 0.3, requires_grad=True)
        h = F.linear(h, weight, tg.Tensor(np.zeros(64), requires_grad=True)).relu()
    loss = F.mse_loss(h, tg.Tensor(np.zeros((32, 64))))
    plan = tg.backward_plan(loss, scheduler=fixed_auto)
    assert plan.decision == f"{auto.RULE}; the graph is not 32 ops deep: walked"
    assert plan.segments == []
    spy = SpyScheduler(fixed_auto)
    loss.backward(scheduler=spy)
    assert spy.graph.scanned_segments == []
    assert fixed_auto.trial is None
