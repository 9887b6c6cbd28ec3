"""Writing the exercise files: the solutions with the parts between the markers blanked.

Each file of `solutions/` marks what the student writes:

    # BEGIN SOLUTION
    ...
    # END SOLUTION

`blank` replaces every such region by a `raise NotImplementedError` at its indentation, so
a blank file imports, and every check of it fails with "not written yet".
"""

from __future__ import annotations

import re
from pathlib import Path

from .catalog import EXERCISES

SOLUTIONS = Path(__file__).parent / "solutions"
_REGION = re.compile(r"^([ \t]*)# BEGIN SOLUTION\n.*?^[ \t]*# END SOLUTION\n", re.S | re.M)


def solution_source(name) -> str:
    """The solved file of exercise `name`, with its markers."""
    return (SOLUTIONS / EXERCISES[name].filename).read_text(encoding="utf-8")


def blank(source) -> str:
    """`source` with every marked region replaced by a NotImplementedError.

    >>> print(blank("def f():\\n    # BEGIN SOLUTION\\n    return 1\\n    # END SOLUTION\\n"))
    def f():
        raise NotImplementedError("exercise: write this part (see the docstring)")
    <BLANKLINE>
    """
    return _REGION.sub(
        lambda match: (
            f'{match.group(1)}raise NotImplementedError("exercise: write this part '
            '(see the docstring)")\n'
        ),
        source,
    )


def unmarked(source) -> str:
    """`source` with the marker lines removed (a solved file as a student would write it)."""
    return re.sub(r"^[ \t]*# (BEGIN|END) SOLUTION\n", "", source, flags=re.M)


def init(directory, names=None, solved=False, force=False) -> list:
    """Write the exercise files into `directory` (created if needed); returns their paths.

    `names`: which exercises (default all); `solved`: write the solutions instead of the
    blanks; `force`: overwrite files that exist (by default they are kept, so a student's
    work is never lost).
    """
    names = list(EXERCISES) if names is None else list(names)
    unknown = [name for name in names if name not in EXERCISES]
    if unknown:
        raise ValueError(f"unknown exercise(s) {unknown}; the exercises are {list(EXERCISES)}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    existing = [directory / EXERCISES[n].filename for n in names]
    existing = [path for path in existing if path.exists()]
    if existing and not force:
        raise FileExistsError(
            f"{', '.join(str(path) for path in existing)} already exist(s): pass force=True "
            "(--force) to overwrite them"
        )
    written = []
    for name in names:
        source = solution_source(name)
        path = directory / EXERCISES[name].filename
        path.write_text(unmarked(source) if solved else blank(source), encoding="utf-8")
        written.append(path)
    return written
