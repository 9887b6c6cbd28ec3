"""What a reader of scheduler/ meets on the declared path: the functions that run when the
Blelloch backward of a `tg.scan` RNN (64 steps, hidden 8) is profiled, and their size.

A function counts once, by its code object (comprehensions and lambdas inside a function
are part of it); its size is its source's non-blank lines that are not comments, the
docstring included (what a reader reads).
"""

import inspect
import os
import sys

import numpy as np
from rnn_formulations import build

import tinygrad_ops as tg
from tinygrad_ops import scheduler

SCHEDULER_DIR = os.path.dirname(scheduler.__file__)


def scheduler_functions(run):
    """{code object: lines} of the functions defined in tinygrad_ops/scheduler/ that
    `run()` calls."""
    seen = set()

    def hook(frame, event, arg):
        code = frame.f_code
        # (A comprehension's code is part of its function's.)
        in_scheduler = code.co_filename.startswith(SCHEDULER_DIR)
        if event == "call" and in_scheduler and not code.co_name.startswith("<"):
            seen.add(code)

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        run()
    finally:
        sys.setprofile(previous)
    return {code: _lines(code) for code in seen}


def _lines(code):
    source, _ = inspect.getsourcelines(code)
    return sum(1 for line in source if line.strip() and not line.strip().startswith("#"))


def _declared_rnn():
    loss, _ = build("benchmark", "tg-scan", steps=64, hidden=8, batch=4, dtype=np.float64)
    return loss


def test_the_profile_counts_functions_and_their_lines():
    def run():
        loss = _declared_rnn()
        plan = tg.backward_plan(loss, scheduler="blelloch")
        assert [segment.choice for segment in plan.segments] == ["blelloch"]

    functions = scheduler_functions(run)
    names = {code.co_name for code in functions}
    assert {"backward_plan", "segment_of", "work_and_depth"} <= names
    assert all(lines > 0 for lines in functions.values())


def _declared_profile():
    """(functions, lines, lines in scans.py) of the declared Blelloch backward."""
    _declared_rnn().backward(scheduler="blelloch")  # (calibration, imports: not counted)
    loss = _declared_rnn()
    functions = scheduler_functions(lambda: loss.backward(scheduler="blelloch"))
    in_scans = sum(
        lines for code, lines in functions.items() if code.co_filename.endswith("scans.py")
    )
    return functions, sum(functions.values()), in_scans


def test_the_declared_path_does_not_grow():
    # Where the declared path stands (39 functions over 580 lines): a bound on regressions.
    functions, total, _ = _declared_profile()
    assert len(functions) <= 40, sorted(code.co_name for code in functions)
    assert total <= 600


def test_the_declared_blelloch_backward_is_mostly_the_scan():
    # What a reader meets: at most 40 functions over 600 lines, the scan (scans.py) at
    # least 15% of them; the rest stacks the saved values, builds the Jacobians and sends
    # the gradients (scan_scheduler.py, batched.py, jacobians.py), and checks the steps
    # against the template tg.scan declared (declared.py).
    functions, total, in_scans = _declared_profile()
    assert len(functions) <= 40, sorted(code.co_name for code in functions)
    assert total <= 600
    assert in_scans >= 0.15 * total, (in_scans, total)
