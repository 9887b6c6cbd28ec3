"""`tinygrad-ops exercises`: write the exercise files, and check them.

    tinygrad-ops exercises init DIR [NAME...]           the blanks, one file per exercise
    tinygrad-ops exercises init DIR --solved            the solutions (a repository checkout)
    tinygrad-ops exercises check DIR [NAME] [--json] [--time-limit SECONDS]
                                                        run the checks: what passes, what
                                                        fails and why; points per exercise

`check` exits 0 when every check passes, 1 when some fail, 2 on a usage error (an unknown
exercise, a folder that does not exist). The dispatcher (`cli/dispatch.py`) calls
`add_arguments(parser)` and `run(args)`.
"""

from __future__ import annotations

from .. import exercises
from .options import UsageError


def add_arguments(parser):
    """The options of `tinygrad-ops exercises init|check`."""
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    init = actions.add_parser("init", help="write the exercise files into DIR")
    init.add_argument("directory", metavar="DIR", help="the folder (created if needed)")
    init.add_argument("names", nargs="*", metavar="NAME", help="only these exercises")
    init.add_argument("--solved", action="store_true", help="write the solutions instead")
    init.add_argument("--force", action="store_true", help="overwrite files that exist")
    check = actions.add_parser("check", help="check the exercise files in DIR")
    check.add_argument("directory", metavar="DIR", help="the folder init wrote")
    check.add_argument("name", nargs="?", metavar="NAME", help="only this exercise")
    check.add_argument(
        "--json", action="store_true", help="print a machine-readable report (points per exercise)"
    )
    check.add_argument(
        "--time-limit",
        type=float,
        metavar="SECONDS",
        help="the time each check may take (default: each check's own, 10 s for most)",
    )
    for subparser in (init, check):
        subparser.epilog = "exercises, in course order: " + ", ".join(exercises.EXERCISES)


def run(args):
    """Write or check; `check` returns 0 only when every check passes."""
    if args.action == "init":
        try:
            written = exercises.init(args.directory, args.names or None, args.solved, args.force)
        except (FileExistsError, FileNotFoundError, ValueError) as error:
            raise UsageError(str(error)) from None
        kind = "solved" if args.solved else "blank"
        print(f"wrote {len(written)} {kind} exercise files into {args.directory}:")
        for path in written:
            print(f"  {path.name:<20} {exercises.EXERCISES[path.stem].title}")
        print(f"then: tinygrad-ops exercises check {args.directory} [NAME]")
        return 0
    if args.name is not None and args.name not in exercises.EXERCISES:
        raise UsageError(f"unknown exercise {args.name!r}; choose from {list(exercises.EXERCISES)}")
    try:
        results = exercises.check(args.directory, args.name, time_limit=args.time_limit)
    except FileNotFoundError as error:
        raise UsageError(str(error)) from None
    print(exercises.as_json(results) if args.json else exercises.report(results))
    return 0 if all(result.passed for result in results) else 1
