"""Running the checks on a folder of exercise files: results, points, the printout, JSON.

Each exercise's file runs in a child process (`child.py`) with a time limit per check, so
a solution that loops forever, calls `sys.exit` or crashes the interpreter fails that
check, clearly, and the others still run. Before it runs, the file is screened
(`screen.py`): importing torch, the engine where the exercise is the engine, or the
shipped solutions is refused. When a function fails a check, its exercise's diagnoses
probe it for the known mistakes, and each one found is a hint.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import screen
from .catalog import EXERCISES
from .child import BLANK, ERROR, PASS, load, outcome, run_check

NO_DIAGNOSIS = (
    "no common mistake matched: compare it with the docstring's formula, one step at a "
    "time, on the smallest input that fails"
)


FOLLOWS = "its failures may follow from the mistakes found above: fix those first"


@dataclass
class CheckResult:
    """How one check went: `status` is pass, FAIL, not written or ERROR; `where` is the
    student's own line that raised, when one did."""

    property: str
    function: str
    status: str
    message: str = ""
    where: str = ""


@dataclass
class Hint:
    """A diagnosis that matched: the mistake found in `function`, and what to do instead."""

    function: str
    text: str


@dataclass
class ExerciseResult:
    """One exercise's checks (a point each), the hints its diagnoses found, and `error`
    when the file could not be checked at all (missing, refused, does not import)."""

    name: str
    title: str
    checks: list = field(default_factory=list)
    hints: list = field(default_factory=list)
    error: str = ""

    @property
    def points(self) -> int:
        return sum(check.status == PASS for check in self.checks)

    @property
    def max_points(self) -> int:
        return len(EXERCISES[self.name].checks())

    @property
    def passed(self) -> bool:
        return not self.error and self.points == self.max_points


def _read_records(report, offset):
    """The complete JSON lines of `report` after `offset`, and the new offset."""
    text = report.read_text(encoding="utf-8")[offset:]
    complete = text[: text.rfind("\n") + 1]
    return [json.loads(line) for line in complete.splitlines() if line], offset + len(complete)


def _stopped(reason, limit, returncode, stderr):
    if reason == "hang":
        return f"did not finish within {limit:g} s (an endless loop, or far too slow): stopped"
    tail = stderr.strip().splitlines()[-1:] if stderr.strip() else []
    return f"the process ended (exit code {returncode}) during this check: os._exit or a crash" + (
        f" ({tail[0]})" if tail else ""
    )


@dataclass
class _Watch:
    """What the parent saw of one child: the item running when it stopped (None between
    items, -1 while importing), that item's limit, and why it stopped."""

    current: int | None = -1
    limit: float = 60.0  # until the child reports: its own start (numpy, the engine)
    done: bool = False
    import_error: dict | None = None
    hung: bool = False


def _watch(process, report, records):
    """Follow `process` through `report` until it is done, stops, or its current item runs
    past its limit (then kill it); results go into `records`."""
    seen, offset, began = _Watch(), 0, time.monotonic()
    while True:
        try:
            process.wait(timeout=0.02)
            finished = True
        except subprocess.TimeoutExpired:
            finished = False
        new, offset = _read_records(report, offset)
        for record in new:
            if record["event"] == "start":
                seen.current, seen.limit, began = record["index"], record["limit"], time.monotonic()
            elif record["event"] == "result":
                records[record["index"]], seen.current = record, None
            elif record["event"] == "import_error":
                seen.import_error = record
            elif record["event"] == "done":
                seen.done = True
        if finished or seen.done or seen.import_error:
            break
        if seen.current is not None and time.monotonic() - began > seen.limit:
            seen.hung = True
            break
    if not seen.hung:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)  # a thread the solution started may keep it alive
    if process.poll() is None:
        process.kill()
        process.wait()
    return seen


def _run_isolated(path, name, kind, functions, count, time_limit=None):
    """{index: result record} of the items of `kind`, each child started after the item
    that stopped the last one; {"import": record} when the file does not import."""
    records, start = {}, 0
    while start < count:
        with tempfile.TemporaryDirectory() as scratch:
            report, errors = Path(scratch) / "report.jsonl", Path(scratch) / "stderr.txt"
            report.touch()
            command = [sys.executable, "-I", "-m", "tinygrad_ops.exercises.child", str(path)]
            command += [name, kind, str(start), str(report), ",".join(sorted(functions))]
            command.append("" if time_limit is None else str(time_limit))
            with open(errors, "w", encoding="utf-8") as stderr:
                process = subprocess.Popen(
                    command,
                    cwd=path.parent,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                )
                seen = _watch(process, report, records)
            if seen.import_error:
                return {"import": seen.import_error}
            if seen.done:
                return records
            reason = "hang" if seen.hung else "exit"
            message = _stopped(reason, seen.limit, process.returncode, errors.read_text("utf-8"))
            if seen.current == -1:
                return {"import": {"message": f"importing the file {message}", "where": ""}}
            stopped_in = seen.current
            if stopped_in is None:  # between two items: blame the one after the last result
                stopped_in = max(records, default=start - 1) + 1
            records[stopped_in] = {"status": ERROR, "message": message, "where": ""}
            start = stopped_in + 1
    return records


def _run_in_process(path, name, kind, functions, count, time_limit=None):
    """As `_run_isolated`, in this process: for the engine's own tests (no time limit)."""
    del time_limit  # nothing can stop a hang in this process
    exercise = EXERCISES[name]
    try:
        module = load(path)
    except Exception as error:  # as the child reports it
        return {"import": {"message": f"{type(error).__name__}: {error}", "where": ""}}
    items = exercise.checks() if kind == "checks" else exercise.diagnoses()
    records, failed = {}, False
    for index, item in enumerate(items):
        if kind == "checks":
            status, message, line = run_check(item, module, path, failed)
            failed = failed or status not in (PASS, BLANK)
            records[index] = {"status": status, "message": message, "where": line}
        elif item.function in functions:
            status, _, _ = outcome(_as_check(item.probe), module, path)
            records[index] = {"status": status}
    return records


def _as_check(probe):
    from .child import _probe

    return _probe(probe)


def check_exercise(directory, name, isolated=True, time_limit=None) -> ExerciseResult:
    """The result of exercise `name`, run on `directory`/`name`.py; `time_limit` (seconds)
    replaces every check's own limit."""
    exercise = EXERCISES[name]
    result = ExerciseResult(name, exercise.title)
    path = Path(directory).resolve() / exercise.filename
    if not path.exists():
        result.error = (
            f"{path.name} does not exist: write it with "
            f"`tinygrad-ops exercises init {directory} {name}`"
        )
        return result
    refused = screen.refusals(path.read_text(encoding="utf-8"), exercise.imports)
    if refused:
        result.error = "refused: " + "; ".join(refused)
        return result
    run = _run_isolated if isolated else _run_in_process
    checks = exercise.checks()
    records = run(path, name, "checks", (), len(checks), time_limit)
    if "import" in records:
        where = records["import"].get("where")
        result.error = f"{path.name} does not import: {records['import']['message']}"
        result.error += f" (at {where})" if where else ""
        return result
    for index, check in enumerate(checks):
        record = records.get(index, {"status": ERROR, "message": "not run"})
        result.checks.append(
            CheckResult(
                check.property,
                check.function,
                record["status"],
                record.get("message", ""),
                record.get("where", ""),
            )
        )
    failed = {c.function for c in result.checks if c.status not in (PASS, BLANK)}
    if failed:
        diagnoses = exercise.diagnoses()
        found = run(path, name, "diagnoses", failed, len(diagnoses), time_limit)
        found = {} if "import" in found else found
        for index, diagnosis in enumerate(diagnoses):
            if found.get(index, {}).get("status") == PASS:
                result.hints.append(Hint(diagnosis.function, diagnosis.mistake))
        explained = {hint.function for hint in result.hints}
        unexplained = NO_DIAGNOSIS if not explained else FOLLOWS
        result.hints += [Hint(function, unexplained) for function in sorted(failed - explained)]
    return result


def check(directory, name=None, isolated=True, time_limit=None) -> list:
    """The results of exercise `name` (or of every exercise) in `directory`.

    FileNotFoundError when `directory` does not exist; ValueError for an unknown name.
    `isolated=False` runs the checks in this process (the engine's own tests do, for
    speed; a student's file should always run isolated). `time_limit` (seconds) replaces
    every check's own limit.
    """
    if name is not None and name not in EXERCISES:
        raise ValueError(f"unknown exercise {name!r}; the exercises are {list(EXERCISES)}")
    if not Path(directory).is_dir():
        raise FileNotFoundError(
            f"{directory} is not a folder: write the exercises there first with "
            f"`tinygrad-ops exercises init {directory}`"
        )
    names = list(EXERCISES) if name is None else [name]
    return [check_exercise(directory, each, isolated, time_limit) for each in names]


def report(results) -> str:
    """The printout: one line per exercise with its points, then each check that did not
    pass (the property it tests, what went wrong, the student's line), then the hints."""
    lines = []
    for result in results:
        verdict = "PASS" if result.passed else "FAIL"
        lines.append(f"{verdict}  {result.name:<15} {result.points}/{result.max_points} checks")
        if result.error:
            lines.append(f"      ERROR: {result.error}")
            continue
        if all(check.status == BLANK for check in result.checks):
            lines.append("      not written yet (NotImplementedError): every check")
            continue
        for check in result.checks:
            if check.status == PASS:
                continue
            detail = f": {check.message}" if check.message else ""
            lines.append(f"      {check.status}: {check.property}{detail}")
            if check.where:
                lines.append(f"        at {check.where}")
        lines += [f"      hint ({hint.function}): {hint.text}" for hint in result.hints]
    complete = sum(result.passed for result in results)
    points = sum(result.points for result in results)
    most = sum(result.max_points for result in results)
    lines.append(
        f"{complete} of {len(results)} exercises pass every check ({points}/{most} points)"
    )
    return "\n".join(lines)


def as_json(results) -> str:
    """The machine-readable report: per exercise its points, checks and hints."""
    exercises = [
        {
            "name": result.name,
            "title": result.title,
            "points": result.points,
            "max_points": result.max_points,
            "passed": result.passed,
            "error": result.error or None,
            "checks": [asdict(check) for check in result.checks],
            "hints": [asdict(hint) for hint in result.hints],
        }
        for result in results
    ]
    return json.dumps(
        {
            "points": sum(entry["points"] for entry in exercises),
            "max_points": sum(entry["max_points"] for entry in exercises),
            "exercises": exercises,
        },
        indent=2,
    )
