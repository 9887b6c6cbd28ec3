"""The sequential walk over a tape: what every backward pass is.

The forward run records a tape: one `Step` per operation, in the order they ran. A step
says which node it produced (`output`, a node id), from which nodes (`inputs`), and how
to turn the gradient of its output into one gradient per input (`rule`). Backward is one
walk of that tape, newest step first:

    grads = {loss: seed}
    for step in the tape, newest first:
        if step.output has no gradient: skip it (the loss does not depend on it)
        for each input and its share in step.rule(grads[step.output]):
            grads[input] = grads[input] + share     (or share, if it has none yet)

Newest first, because a step's output has received everything from its consumers (all
recorded after it) by the time the walk reaches it. A node used by two steps gets the
sum of both shares. Add into a new array, never `+=`: a rule may pass its gradient on
unchanged (an addition hands the same array to both of its inputs). No recursion: a tape
of 20,000 steps is one loop.
"""

from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Step:
    """One recorded operation: `output` computed from `inputs` (node ids); `rule(g)` gives
    one gradient per input from the gradient g of the output."""

    output: int
    inputs: tuple
    rule: Callable


def backward(tape, loss, seed):
    """{node id: d loss / d node} for every node the loss depends on (the loss included),
    from `tape` (Steps, in the order they ran) and `seed` (d loss / d loss)."""
    raise NotImplementedError("exercise: write this part (see the docstring)")
