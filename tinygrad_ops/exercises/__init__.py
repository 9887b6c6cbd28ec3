"""Exercises that check themselves: `tinygrad-ops exercises init DIR` and `check DIR`.

Each exercise is one file with the maths in its docstring and the rules to write left
blank; `check` runs it against central differences, `tinygrad_ops.reference` and the
engine, and says which cases fail and why.

>>> import tempfile
>>> from tinygrad_ops import exercises
>>> folder = tempfile.mkdtemp()
>>> _ = exercises.init(folder, ["relu"])
>>> print(exercises.report(exercises.check(folder, "relu")).splitlines()[0])
FAIL  relu            0/7 cases
"""

from .catalog import EXERCISES, Exercise
from .files import blank, init
from .runner import CaseResult, check, report

__all__ = ["EXERCISES", "CaseResult", "Exercise", "blank", "check", "init", "report"]
