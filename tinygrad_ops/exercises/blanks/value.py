"""Build the engine: a `Value` that records its graph and walks it backward.

A Value holds a number or a numpy array (float64). Every operation returns a new Value
that remembers its `parents` (a tuple, in operand order) and a `rule`: a function from
the gradient g of the output to a tuple of one gradient per parent. You write:

1. The rule of each primitive (g is dL/d out):
       out = a + b      da = g,              db = g
       out = a * b      da = g * b,          db = g * a
       out = a ** n     da = g * n * a ** (n - 1)        (n a plain number)
       out = tanh(a)    da = g * (1 - out ** 2)
       out = exp(a)     da = g * out
       out = log(a)     da = g / a
2. `topological_order(root)`: every Value root depends on, each exactly once, every one
   after all of its parents. Iteratively, with your own stack: a chain of 10,000 steps is
   deeper than Python's recursion limit.
3. `backward()`: seed d self / d self = ones, then walk the order newest first and hand
   each node's total gradient to its rule. A Value used twice (x * x, or a node with two
   consumers) gets the *sum* of what each use sends it: add, never overwrite, and add
   into a new array (`total = total + g`), never `+=`: an Add passes its g on unchanged,
   so two parents may hold the very same array. Keep this call's gradients in a dict of
   your own; then leaves add their gradient to `.grad` (a second backward() adds up, as
   in PyTorch) and every other node's `.grad` is this call's gradient.

The rest (-a, a - b, a / b, numbers on the left) is composed from these, so its gradient
comes for free. When every check passes, the checker trains a small network of your
Values on the two moons.
"""

import numpy as np


class Value:
    """A scalar or an array in float64, with `.grad` once `backward()` has reached it."""

    def __init__(self, data, parents=(), rule=None, op=""):
        self.data = np.asarray(data, dtype=np.float64)
        self.grad = None
        self.parents = parents
        self.rule = rule
        self.op = op

    def __repr__(self):
        return f"Value({self.data}, op={self.op!r})"

    def _lift(self, other):
        """A plain number becomes a constant Value of this one's shape."""
        if isinstance(other, Value):
            return other
        return Value(np.broadcast_to(np.asarray(other, dtype=np.float64), self.data.shape))

    def __add__(self, other):
        other = self._lift(other)

        def rule(g):
            raise NotImplementedError("exercise: write this part (see the docstring)")

        return Value(self.data + other.data, (self, other), rule, "+")

    def __mul__(self, other):
        other = self._lift(other)

        def rule(g):
            raise NotImplementedError("exercise: write this part (see the docstring)")

        return Value(self.data * other.data, (self, other), rule, "*")

    def __pow__(self, exponent):
        def rule(g):
            raise NotImplementedError("exercise: write this part (see the docstring)")

        return Value(self.data**exponent, (self,), rule, f"**{exponent}")

    def tanh(self):
        out = np.tanh(self.data)

        def rule(g):
            raise NotImplementedError("exercise: write this part (see the docstring)")

        return Value(out, (self,), rule, "tanh")

    def exp(self):
        out = np.exp(self.data)

        def rule(g):
            raise NotImplementedError("exercise: write this part (see the docstring)")

        return Value(out, (self,), rule, "exp")

    def log(self):
        def rule(g):
            raise NotImplementedError("exercise: write this part (see the docstring)")

        return Value(np.log(self.data), (self,), rule, "log")

    # Composed from the primitives above: nothing to write.
    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        return self + (-self._lift(other))

    def __truediv__(self, other):
        return self * self._lift(other) ** -1

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __rsub__(self, other):
        return self._lift(other) - self

    def __rtruediv__(self, other):
        return self._lift(other) / self

    def backward(self):
        """Fill `.grad` of every Value this one depends on (the seed is ones)."""
        raise NotImplementedError("exercise: write this part (see the docstring)")


def topological_order(root):
    """Every Value `root` depends on, each once, parents before children (no recursion)."""
    raise NotImplementedError("exercise: write this part (see the docstring)")
