"""docs/tutorial.md has code with its printed output, and its pictures and links exist.

Its blocks run in order in a fresh interpreter, each printing exactly the ```text block that
follows it (a block that prints must be followed by one), in tests/test_docs.py.
"""

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"
TUTORIAL = DOCS / "tutorial.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)]+)\)")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)#]+)\)")


def tutorial_examples():
    """(line number, code, expected output or None) for every python block, in order."""
    text = TUTORIAL.read_text(encoding="utf-8")
    fences = list(FENCE.finditer(text))
    examples = []
    for index, fence in enumerate(fences):
        if fence.group(1) != "python":
            continue
        expected = None
        if index + 1 < len(fences):
            following = fences[index + 1]
            between = text[fence.end() : following.start()]
            if following.group(1) == "text" and not between.strip():
                expected = following.group(2)
        line = text.count("\n", 0, fence.start()) + 1
        examples.append((line, fence.group(2), expected))
    return examples


def test_tutorial_has_code_and_expected_output():
    examples = tutorial_examples()
    assert len(examples) >= 25
    assert sum(expected is not None for _, _, expected in examples) >= 20


def test_every_picture_exists():
    text = TUTORIAL.read_text(encoding="utf-8")
    pictures = IMAGE.findall(text)
    assert len(pictures) >= 4
    for picture in pictures:
        assert (DOCS / picture).is_file(), f"tutorial.md shows {picture}, which does not exist"


def test_every_local_link_exists():
    text = TUTORIAL.read_text(encoding="utf-8")
    for target in LINK.findall(text):
        if "://" in target:
            continue
        assert (DOCS / target).exists(), f"tutorial.md links to {target}, which does not exist"


def test_text_blocks_only_follow_code_blocks():
    # A ```text block anywhere else would be prose the test never checks.
    text = TUTORIAL.read_text(encoding="utf-8")
    fences = list(FENCE.finditer(text))
    for index, fence in enumerate(fences):
        if fence.group(1) != "text":
            continue
        assert index > 0, fence.group(2)
        previous = fences[index - 1]
        assert previous.group(1) == "python", fence.group(2)
        assert not text[previous.end() : fence.start()].strip(), fence.group(2)
