"""Running the checks on a folder of exercise files, and the report they print."""

from __future__ import annotations

import types
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .catalog import EXERCISES
from .checking import MismatchError

PASS, FAIL, BLANK, ERROR = "pass", "FAIL", "not written", "ERROR"


@dataclass
class CaseResult:
    """How one case of one exercise went: `status` is pass, FAIL, not written or ERROR."""

    exercise: str
    case: str
    status: str
    message: str = ""
    hint: str = ""


def load(path):
    """The student's file at `path` as a fresh module, compiled from its text now (no
    bytecode cache: an edit made within the same second must count)."""
    module = types.ModuleType(f"tinygrad_ops_exercise_{path.stem}")
    module.__file__ = str(path)
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), module.__dict__)
    return module


def check_exercise(directory, name) -> list:
    """The results of every case of exercise `name`, run on `directory`/`name`.py."""
    exercise = EXERCISES[name]
    path = Path(directory) / exercise.filename
    if not path.exists():
        return [
            CaseResult(
                name,
                "the file",
                ERROR,
                f"{path} does not exist",
                "write it with `tinygrad-ops exercises init DIR`",
            )
        ]
    try:
        module = load(path)
    except Exception as error:  # a student's file may fail to import in any way: report it
        return [CaseResult(name, "importing the file", ERROR, f"{type(error).__name__}: {error}")]
    results = []
    for case in exercise.cases():
        try:
            with np.errstate(all="ignore"):
                case.run(module)
        except NotImplementedError:
            results.append(CaseResult(name, case.name, BLANK, "", case.hint))
        except MismatchError as mismatch:
            results.append(CaseResult(name, case.name, FAIL, str(mismatch), case.hint))
        except Exception as error:  # the student's code raised: say what, in which case
            message = f"raised {type(error).__name__}: {error}"
            results.append(CaseResult(name, case.name, ERROR, message, case.hint))
        else:
            results.append(CaseResult(name, case.name, PASS))
    return results


def check(directory, name=None) -> list:
    """Results of the exercise `name` (or of all) in `directory`, case by case."""
    if name is not None and name not in EXERCISES:
        raise ValueError(f"unknown exercise {name!r}; the exercises are {list(EXERCISES)}")
    names = list(EXERCISES) if name is None else [name]
    return [result for each in names for result in check_exercise(directory, each)]


def report(results) -> str:
    """The printout: one line per exercise, then each case that did not pass, with its hint."""
    lines = []
    by_exercise = {}
    for result in results:
        by_exercise.setdefault(result.exercise, []).append(result)
    for name, cases in by_exercise.items():
        passed = sum(result.status == PASS for result in cases)
        verdict = "PASS" if passed == len(cases) else "FAIL"
        lines.append(f"{verdict}  {name:<15} {passed}/{len(cases)} cases")
        blanks = [result.case for result in cases if result.status == BLANK]
        if blanks and len(blanks) == len(cases):
            lines.append("      not written yet (NotImplementedError): every case")
            continue
        for result in cases:
            if result.status == PASS:
                continue
            lines.append(
                f"      {result.status}: {result.case}"
                + (f": {result.message}" if result.message else "")
            )
            if result.hint:
                lines.append(f"        hint: {result.hint}")
    complete = sum(all(r.status == PASS for r in cases) for cases in by_exercise.values())
    lines.append(f"{complete} of {len(by_exercise)} exercises pass every check")
    return "\n".join(lines)
