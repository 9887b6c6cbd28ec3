"""The documentation pages run as a reader runs them, say no more than the figures measured,
and read as reference, not as a development log.

- Every page (README.md, docs/*.md) runs its python blocks in order in one fresh
  interpreter, and each block can be pasted into Python's interactive prompt line by line.
- A speed figure ("1.4x", "3 times faster", "12 us") appears only in benchmarks/README.md's
  generated tables (between the GENERATED markers, where `tinygrad-ops bench report` writes
  them) or, elsewhere, inside a quote of them: lines between QUOTE_BEGIN and QUOTE_END, each
  of which must be a line of those generated tables.
- No page narrates the project's own development (dates, load averages, issue numbers,
  "before -> after", "this session").
"""

import code
import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tinygrad_ops import bench, cli

ROOT = Path(__file__).resolve().parent.parent
RUNNER = Path(__file__).resolve().parent / "page_runner.py"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BENCHMARKS = ROOT / "benchmarks" / "README.md"
GENERATED_BEGIN, GENERATED_END = bench.GENERATED_BEGIN, bench.GENERATED_END
QUOTE_BEGIN = "<!-- QUOTE benchmarks/README.md -->"
QUOTE_END = "<!-- END QUOTE -->"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)

# A speed or time figure: a multiplier (1.4x, 2-3x, 0.5×; not 4x4 or 2x + 1), "N times"
# (faster, slower, as fast), a duration in ns/us/µs/ms, or in seconds and minutes.
FIGURE = re.compile(
    r"(?<![\w.])\d+(?:[.,]\d+)?(?:\s?(?:-|to)\s?\d+(?:[.,]\d+)?)?[x×](?![\w²³\u0302])"
    r"(?!\s*[-+=·*/^(])"
    r"|\d+(?:\.\d+)?\s?(?:ns|us|µs|ms)\b"
    r"|\d+(?:\.\d+)?\s(?:to\s\d+(?:\.\d+)?\s)?times\b"
    r"|\btimes (?:faster|slower|as fast)\b"
    r"|(?<![\w.])\d+(?:\.\d+)?\s?(?:s|sec|seconds|minutes?)\b(?!['\w])"
)

# Wording of a development log rather than of reference documentation.
LOG_WORDING = re.compile(
    r"\b20\d\d-\d\d-\d\d\b"  # a dated run
    r"|\b\d{1,2}:\d\d\s?(?:UTC|am|pm)\b|\b\d{1,2}:\d\d-\d{1,2}:\d\d\b"  # a time of day
    r"|\bload average|\bloadavg\b"
    r"|\bissues? #?\d+|(?<![\w&/#])#\d{2,}\b"  # issue numbers
    r"|\bbefore\s*(?:->|→)\s*after\b|\(before[:\s]|\bbefore:|\bwas \d[\d.]*\s?x\b"
    r"|\bthis (?:session|round|morning|afternoon|evening)\b|\blast (?:round|session)\b"
    r"|\bthe other engineers?\b|\b(?:another|other) (?:engineer|session)s?'",
    re.IGNORECASE,
)


def generated_lines():
    """The lines of benchmarks/README.md between its GENERATED markers (stripped)."""
    text = BENCHMARKS.read_text(encoding="utf-8")
    lines = []
    for block in re.findall(
        re.escape(GENERATED_BEGIN) + r"\n(.*?)" + re.escape(GENERATED_END), text, re.S
    ):
        lines.extend(line.strip() for line in block.splitlines() if line.strip())
    return lines


def stray_figures(text, generated, allowed_markers):
    """(line number, figure, line) for every figure outside the allowed regions of `text`.

    `allowed_markers` is (begin, end): the lines between them may hold figures; for quotes
    every such line must also be one of `generated`."""
    begin, end = allowed_markers
    found, inside = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() == begin:
            inside = True
            continue
        if line.strip() == end:
            inside = False
            continue
        if inside:
            if generated is not None and line.strip() and line.strip() not in generated:
                found.append((number, "(a quoted line not in the generated tables)", line))
            continue
        found.extend((number, match.group(), line) for match in FIGURE.finditer(line))
    return found


@pytest.mark.parametrize("page", [*PAGES, BENCHMARKS], ids=lambda page: page.name)
def test_no_development_log_wording(page):
    text = page.read_text(encoding="utf-8")
    found = [
        (text.count("\n", 0, match.start()) + 1, match.group())
        for match in LOG_WORDING.finditer(text)
    ]
    assert not found, f"{page.relative_to(ROOT)} reads as a development log at {found}"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_no_speed_figure_outside_the_quoted_tables(page):
    text = page.read_text(encoding="utf-8")
    found = stray_figures(text, set(generated_lines()), (QUOTE_BEGIN, QUOTE_END))
    assert not found, (
        f"{page.relative_to(ROOT)} states figures of its own (quote benchmarks/README.md's "
        f"generated tables between {QUOTE_BEGIN} and {QUOTE_END}, or link them): {found}"
    )


def test_benchmarks_readme_has_figures_only_in_its_generated_tables():
    text = BENCHMARKS.read_text(encoding="utf-8")
    assert text.count(GENERATED_BEGIN) == text.count(GENERATED_END) >= 1
    assert not stray_figures(text, None, (GENERATED_BEGIN, GENERATED_END))
    assert any(FIGURE.search(line) for line in generated_lines())


@pytest.mark.parametrize(
    "planted",
    [
        "The scan runs 1.4x faster than the walk.",
        "a speed-up of 2-3x at hidden 16",
        "It is 3.2 times faster.",
        "between 1.1 to 1.4 times the walk",
        "each op costs about 12 µs",
        "about 8 us per op",
        "a backward of 43.6 ms",
        "98.3% in 6 s",
    ],
)
def test_a_planted_figure_is_found(planted):
    text = f"Some prose.\n{planted}\nMore prose.\n"
    assert [number for number, _, _ in stray_figures(text, set(), (QUOTE_BEGIN, QUOTE_END))] == [2]


def test_a_quote_must_match_the_generated_tables():
    quoted = f"{QUOTE_BEGIN}\n| 4 | 9.3 ms | 1.4x |\n{QUOTE_END}\n"
    assert stray_figures(quoted, {"| 4 | 9.3 ms | 1.4x |"}, (QUOTE_BEGIN, QUOTE_END)) == []
    assert len(stray_figures(quoted, {"| 4 | 9.9 ms | 1.5x |"}, (QUOTE_BEGIN, QUOTE_END))) == 1


@pytest.mark.parametrize(
    "prose",
    [
        "a 4x4 matrix",
        "dy/dx = 2x + 1 = 7",
        "a 2×3 gradient",
        "d x d products",
        "128 steps of five ops",
        "shape (4, 8)",
    ],
)
def test_maths_and_shapes_are_not_figures(prose):
    assert not FIGURE.search(prose), prose


@pytest.mark.parametrize(
    "planted",
    [
        "measured 2026-12-01 on a quiet machine",
        "at load average 4-5",
        "the targets of issue 17",
        "see #28",
        "| size | before -> after |",
        "eager 8.1 us (before: 6.2)",
        "four runs this afternoon",
        "measured this session",
        "17:15-17:45",
    ],
)
def test_log_wording_is_found(planted):
    assert LOG_WORDING.search(planted), planted


class _PasteCheck(code.InteractiveConsole):
    """Python's interactive prompt, fed a block line by line as a paste would, running
    nothing: it records the syntax errors the prompt would print."""

    def __init__(self):
        super().__init__()
        self.errors = []

    def runcode(self, code_object):
        pass

    def showsyntaxerror(self, filename=None, **ignored):
        self.errors.append(sys.exc_info()[1])

    def showtraceback(self):
        self.errors.append(sys.exc_info()[1])


def paste_errors(block):
    """The lines of `block` at which the interactive prompt fails: a blank line inside a
    def, class or loop ends it early; code right after an indented block, with no blank
    line between, is a syntax error at the prompt."""
    console = _PasteCheck()
    for number, line in enumerate(block.splitlines(), 1):
        before = len(console.errors)
        console.push(line)
        if len(console.errors) > before:
            return [(number, line)]
    console.push("")
    return [(len(block.splitlines()), "(the end)")] if console.errors else []


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_block_pastes_into_the_interactive_prompt(page):
    text = page.read_text(encoding="utf-8")
    failures = []
    for fence in FENCE.finditer(text):
        if fence.group(1) == "python":
            start = text.count("\n", 0, fence.start()) + 1
            failures += [(start + n, line) for n, line in paste_errors(fence.group(2))]
    assert not failures, f"{page.name}: the interactive prompt fails at {failures}"


def test_the_paste_check_finds_a_blank_line_inside_a_class():
    block = "class A:\n    x = 1\n\n    def f(self):\n        return 1\n"
    assert paste_errors(block) == [(4, "    def f(self):")]
    assert paste_errors("for i in range(2):\n    pass\nprint(i)\n") == [(3, "print(i)")]
    assert paste_errors("for i in range(2):\n    pass\n\nprint(i)\n") == []


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_page_runs_in_a_fresh_interpreter(page, tmp_path):
    # What a page reads (runs/demo, from `make demo`) is made first in a scratch folder,
    # where the blocks also write their pictures.
    if "runs/demo" in page.read_text(encoding="utf-8"):
        demo = ["train", "--dataset", "digits", "--epochs", "2", "--no-progress"]
        out = str(tmp_path / "runs" / "demo")
        with contextlib.redirect_stdout(io.StringIO()):
            assert cli.main([*demo, "--graph-format", "dot", "--out", out]) == 0
    strict = ["--strict"] if page.name == "tutorial.md" else []
    result = subprocess.run(
        [sys.executable, str(RUNNER), str(page), *strict],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
