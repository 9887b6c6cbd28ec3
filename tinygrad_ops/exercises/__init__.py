"""Exercises that check themselves: `tinygrad-ops exercises init DIR` and `check DIR`.

Each exercise is one file with the maths in its docstring and the parts to write left
blank. `check` runs each file in a child process with a time limit, on checks that each
state one property ("dx is 0 where x is exactly 0"), against central differences,
`tinygrad_ops.reference` and the engine; when a function fails, probes of the known
mistakes say which one it makes. Every check is a point.

>>> import tempfile
>>> from tinygrad_ops import exercises
>>> folder = tempfile.mkdtemp()
>>> _ = exercises.init(folder, ["relu"])
>>> print(exercises.report(exercises.check(folder, "relu")).splitlines()[0])
FAIL  relu            0/7 checks
"""

from .catalog import EXERCISES, Exercise
from .files import blank, init
from .runner import CheckResult, ExerciseResult, as_json, check, report

__all__ = [
    "EXERCISES",
    "CheckResult",
    "Exercise",
    "ExerciseResult",
    "as_json",
    "blank",
    "check",
    "init",
    "report",
]
