"""README.md runs as written: its first example prints what it says, its shell lines parse.

(Its python blocks run in order in a fresh interpreter in tests/test_docs.py.)"""

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from tinygrad_ops import cli

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def _blocks(language):
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_the_taste_example_prints_what_it_says():
    block = _blocks("python")[0]
    expected = [line.split("# ")[-1].split(": ")[-1] for line in block.splitlines()
                if line.startswith("print(")]  # fmt: skip
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block, str(README), "exec"), {})
    assert printed.getvalue().splitlines() == expected


def _shell_lines():
    for block in _blocks("sh"):
        for line in block.splitlines():
            command = line.split("  #")[0].strip()
            if command and not command.startswith("#"):
                yield command


def test_the_activation_comes_right_after_the_two_commands():
    text = README.read_text()
    two_commands = text.index("make test")
    activate = text.index("source .venv/bin/activate")
    assert two_commands < activate < text.index("## A taste")


@pytest.mark.parametrize(
    "command", [line for line in _shell_lines() if line.startswith("tinygrad")]
)
def test_each_command_line_parses(command):
    words = shlex.split(command)
    assert words[0] == "tinygrad-ops"
    selected = next(word for word in words[1:] if not word.startswith("-"))
    parser = cli.build_parser(selected)
    if "--help" in words:
        with pytest.raises(SystemExit) as exit_info, contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(words[1:])
        assert exit_info.value.code == 0
    else:
        parser.parse_args(words[1:])


@pytest.mark.parametrize("command", [line for line in _shell_lines() if line.startswith("python")])
def test_each_example_script_exists(command):
    assert (ROOT / shlex.split(command)[1]).is_file()
