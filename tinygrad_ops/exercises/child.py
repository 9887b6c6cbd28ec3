"""The child process that runs one exercise's checks (or diagnoses) on a student's file.

    python -I -m tinygrad_ops.exercises.child FILE NAME KIND START REPORT FUNCTIONS LIMIT

KIND is checks or diagnoses (of the comma-separated FUNCTIONS only); LIMIT, when not
empty, is the seconds every item may take instead of its own. It loads FILE, then runs
the items from START on, writing one JSON line per event to
REPORT as it goes ("start" before each item, then its "result"; "done" at the end), so
the parent (`runner.py`) knows which item was running when the process hung, exited or
crashed, and can start a new child after it. The student's code never sees REPORT's name
(it is taken out of `sys.argv` before the file loads).
"""

from __future__ import annotations

import json
import sys
import traceback
import types
from pathlib import Path

import numpy as np

PASS, FAIL, BLANK, ERROR = "pass", "FAIL", "not written", "ERROR"


def load(path):
    """The student's file at `path` as a fresh module, compiled from its text now (no
    bytecode cache: an edit made within the same second must count)."""
    module = types.ModuleType(f"tinygrad_ops_exercise_{path.stem}")
    module.__file__ = str(path)
    sys.modules[module.__name__] = module  # dataclasses look their module up while it runs
    try:
        exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module


def where(error, path) -> str:
    """The student's own line that raised `error`: 'relu.py line 12: return g * x'."""
    if isinstance(error, SyntaxError) and error.filename == str(path):
        return f"{path.name} line {error.lineno}: {(error.text or '').strip()}"
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == str(path)]
    if not frames:
        return ""
    return f"{path.name} line {frames[-1].lineno}: {(frames[-1].line or '').strip()}"


def outcome(run, module, path):
    """(status, message, where) of `run(module)`: pass, FAIL (a MismatchError), not
    written (NotImplementedError) or ERROR (anything else the code raised or did)."""
    from .checking import MismatchError

    try:
        with np.errstate(all="ignore"):
            run(module)
    except NotImplementedError:
        return BLANK, "", ""
    except MismatchError as mismatch:
        return FAIL, str(mismatch), ""
    except SystemExit as exit_:
        message = f"called sys.exit({exit_.code!r}): a solution returns, it never ends the process"
        return ERROR, message, where(exit_, path)
    except RecursionError as error:
        return ERROR, f"raised RecursionError: {error}", where(error, path)
    except Exception as error:  # the student's code raised: say what and where
        return ERROR, f"raised {type(error).__name__}: {error}", where(error, path)
    return PASS, "", ""


def run_check(check, module, path, failed):
    """`outcome` of one check; a `last` check after a failure is not run."""
    from .checking import LAST_NOT_RUN

    if check.last and failed:
        return FAIL, LAST_NOT_RUN, ""
    return outcome(check.run, module, path)


def main(argv):
    path, name, kind, start, report = Path(argv[0]), argv[1], argv[2], int(argv[3]), argv[4]
    functions = set(argv[5].split(","))
    limit = float(argv[6]) if argv[6] else None  # seconds for every item, instead of its own
    del sys.argv[1:]
    from .catalog import EXERCISES

    exercise = EXERCISES[name]
    items = exercise.checks() if kind == "checks" else exercise.diagnoses()
    with open(report, "a", encoding="utf-8") as out:

        def emit(**record):
            out.write(json.dumps(record) + "\n")
            out.flush()

        emit(event="start", index=-1, limit=limit or exercise.import_limit)
        try:
            module = load(path)
        except BaseException as error:  # a file may fail to import in any way: report it
            if isinstance(error, SystemExit):
                message = f"called sys.exit({error.code!r}) while importing"
            else:
                message = f"{type(error).__name__}: {error}"
            emit(event="import_error", message=message, where=where(error, path))
            return 0
        failed = start > 0  # a restarted child follows a check that hung or crashed
        for index in range(start, len(items)):
            item = items[index]
            if kind == "diagnoses" and item.function not in functions:
                continue
            own = item.time_limit if kind == "checks" else 10.0
            emit(event="start", index=index, limit=limit or own)
            if kind == "checks":
                status, message, line = run_check(item, module, path, failed)
                failed = failed or status not in (PASS, BLANK)
                emit(event="result", index=index, status=status, message=message, where=line)
            else:
                status, _, _ = outcome(_probe(item.probe), module, path)
                emit(event="result", index=index, status=status)
        emit(event="done")
    return 0


def _probe(probe):
    """A probe as a check: it passes when the mistake is there."""
    from .checking import MismatchError

    def run(module):
        if not probe(module):
            raise MismatchError("not this mistake")

    return run


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
