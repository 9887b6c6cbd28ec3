import sys
from pathlib import Path

import pytest

from tinygrad_ops.autograd import graph
from tinygrad_ops.jit import capture

# The tests import their shared helpers as `helpers` (pytest runs with --import-mode=importlib).
sys.path.insert(0, str(Path(__file__).parent))


def fresh_promise_broken(array, grads, node):
    """What an op's `fresh_gradients = True` promises and the walk does not check (see
    `made_by_rule`): a gradient the walk would own is not an array the node saved, nor
    one array returned for two inputs. The reason it is broken, or None."""
    if sum(value is array for value in grads) > 1:
        return "it returned one array for two inputs"
    if any(value is array for value in node.saved or ()):
        return "it returned an array it saved"
    return None


def checked_made_by_rule(array, upstream, grads, node):
    owned = graph_made_by_rule(array, upstream, grads, node)
    if owned:
        broken = fresh_promise_broken(array, grads, node)
        assert broken is None, (
            f"{type(node).__name__} says fresh_gradients = True, but {broken}: the walk "
            "would add into it in place"
        )
    return owned


graph_made_by_rule = graph.made_by_rule


@pytest.fixture(autouse=True, scope="session")
def _check_every_rules_fresh_promise():
    """Every backward rule the suite runs is checked against its op's ownership promise."""
    patch = pytest.MonkeyPatch()
    patch.setattr(graph, "made_by_rule", checked_made_by_rule)
    patch.setattr(capture, "made_by_rule", checked_made_by_rule)
    yield
    patch.undo()
