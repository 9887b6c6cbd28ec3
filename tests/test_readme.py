"""README.md's first example runs as written and prints what its comments say."""

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_the_taste_example_prints_what_it_says():
    text = README.read_text()
    block = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)[0]
    expected = [line.split("# ")[-1].split(": ")[-1] for line in block.splitlines()
                if line.startswith("print(")]  # fmt: skip
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block, str(README), "exec"), {})
    assert printed.getvalue().splitlines() == expected
