"""Run one Markdown page's python blocks as a reader runs them: in order, in one namespace.

    python tests/page_runner.py PAGE [--strict]

Run it in a fresh interpreter (tests/test_docs.py starts one per page). Where a ```text
block follows a ```python block with nothing but blank lines between, the block's printed
output must equal it; a line of the text block that is exactly `...` stands for any number
of lines. With --strict (the tutorial), a block that prints must be followed by one. The
first failure is printed to stderr, with the page's line number, and the exit code is 1.
"""

import contextlib
import io
import re
import sys
import traceback

FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)


def examples(text):
    """(line number, code, expected output or None) for every python block, in order."""
    fences = list(FENCE.finditer(text))
    found = []
    for index, fence in enumerate(fences):
        if fence.group(1) != "python":
            continue
        expected = None
        if index + 1 < len(fences):
            following = fences[index + 1]
            if following.group(1) == "text" and not text[fence.end() : following.start()].strip():
                expected = following.group(2)
        found.append((text.count("\n", 0, fence.start()) + 1, fence.group(2), expected))
    return found


def matches(output, expected):
    """Whether `output` is `expected`, where a line `...` of `expected` matches any lines."""
    pattern = "".join(
        "(?:.*\n)*?" if line == "..." else re.escape(line) + "\n" for line in expected.splitlines()
    )
    return re.fullmatch(pattern, output) is not None


def run_page(path, strict=False):
    """Run the page's blocks; returns None, or a message saying which block failed and how."""
    with open(path, encoding="utf-8") as page:
        text = page.read()
    namespace = {"__name__": "__main__"}
    for line, code, expected in examples(text):
        where = f"the block at {path} line {line}"
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                exec(compile(code, f"{path}:{line}", "exec"), namespace)
        except Exception:
            return f"{where} raised:\n{traceback.format_exc()}"
        output = printed.getvalue()
        if expected is None:
            if strict and output:
                return f"{where} prints, but no text block shows:\n{output}"
        elif not matches(output, expected):
            return f"{where} printed\n{output}\nbut the page says:\n{expected}"
    return None


if __name__ == "__main__":
    failure = run_page(sys.argv[1], strict="--strict" in sys.argv[2:])
    if failure:
        print(failure, file=sys.stderr)
    sys.exit(1 if failure else 0)
