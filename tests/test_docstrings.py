"""Every public function and class has a docstring with a runnable example.

The examples themselves run as doctests (pytest runs with --doctest-modules over
tinygrad_ops/ and viz/); this test makes sure each public name *has* one, so that a
new function without an example fails the suite. Public means: listed in `__all__` of
tinygrad_ops, tinygrad_ops.functional, tinygrad_ops.nn, tinygrad_ops.optim and
tinygrad_ops.viz (its functions; its classes are what those functions return). Exception
classes are exempt (their use is shown where they are raised).
"""

import inspect

import pytest

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)
from tinygrad_ops import nn, optim, viz

NAMESPACES = {
    "tinygrad_ops": tg,
    "tinygrad_ops.functional": F,
    "tinygrad_ops.nn": nn,
    "tinygrad_ops.optim": optim,
    "tinygrad_ops.viz": viz,
}


def public_objects():
    """(qualified name, object) for every public function and class, without repeats."""
    seen = set()
    found = []
    for prefix, module in NAMESPACES.items():
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.ismodule(value):
                continue  # a subpackage: its own __all__ is walked above
            if inspect.isclass(value) and issubclass(value, BaseException):
                continue
            if not (inspect.isclass(value) or callable(value)):
                continue  # constants such as viz.INSTALL_HINT
            if module is viz and inspect.isclass(value):
                continue
            if id(value) in seen:
                continue
            seen.add(id(value))
            found.append((f"{prefix}.{name}", value))
    return found


PUBLIC = public_objects()


def test_the_public_api_is_walked():
    names = {name for name, _ in PUBLIC}
    for expected in (
        "tinygrad_ops.Tensor",
        "tinygrad_ops.grad",
        "tinygrad_ops.functional.softmax",
        "tinygrad_ops.nn.Linear",
        "tinygrad_ops.optim.Adam",
        "tinygrad_ops.viz.step_backward",
    ):
        assert expected in names
    assert len(PUBLIC) >= 60


@pytest.mark.parametrize(("name", "value"), PUBLIC, ids=[name for name, _ in PUBLIC])
def test_public_object_has_a_docstring_with_an_example(name, value):
    doc = inspect.getdoc(value)
    assert doc, f"{name} has no docstring"
    assert ">>>" in doc, f"{name}'s docstring has no runnable example (a '>>>' line)"
