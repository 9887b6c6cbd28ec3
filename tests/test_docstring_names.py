"""Every dotted name a public docstring mentions (`tg.save`, `viz.draw`, `nn.Linear`...)
exists: a docstring never points a reader to something that is not there."""

import inspect
import re

import pytest

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)
from tinygrad_ops import nn, optim, viz

# How docstrings abbreviate the packages, as the examples import them.
ROOTS = {"tg": tg, "F": F, "nn": nn, "optim": optim, "viz": viz, "tinygrad_ops": tg}
DOTTED = re.compile(r"(?<![\w.])(tg|F|nn|optim|viz|tinygrad_ops)((?:\.[A-Za-z_]\w*)+)")


def _docstrings():
    """(where, docstring) of every public module, class, function and method."""
    seen = set()
    for prefix, module in {"tg": tg, "F": F, "nn": nn, "optim": optim, "viz": viz}.items():
        yield prefix, module.__doc__ or ""
        for name in module.__all__:
            value = getattr(module, name)
            if id(value) in seen or inspect.ismodule(value):
                continue
            seen.add(id(value))
            yield f"{prefix}.{name}", inspect.getdoc(value) or ""
            if inspect.isclass(value):
                for member_name, member in vars(value).items():
                    if not member_name.startswith("_") and callable(member):
                        yield f"{prefix}.{name}.{member_name}", inspect.getdoc(member) or ""


def _resolves(root, path):
    value = ROOTS[root]
    for part in path.strip(".").split("."):
        if not hasattr(value, part):
            return False
        value = getattr(value, part)
    return True


def test_every_dotted_name_in_a_public_docstring_exists():
    missing = []
    for where, doc in _docstrings():
        for match in DOTTED.finditer(doc):
            root, path = match.group(1), match.group(2)
            if not _resolves(root, path):
                missing.append(f"{where}: {root}{path}")
    assert missing == []


@pytest.mark.parametrize("text", ["see `tg.schedulers`", "`viz.no_such_thing`"])
def test_a_name_that_does_not_exist_is_found(text):
    (match,) = DOTTED.finditer(text)
    assert not _resolves(match.group(1), match.group(2))
