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
            # BEGIN SOLUTION
            return g, g
            # END SOLUTION

        return Value(self.data + other.data, (self, other), rule, "+")

    def __mul__(self, other):
        other = self._lift(other)

        def rule(g):
            # BEGIN SOLUTION
            return g * other.data, g * self.data
            # END SOLUTION

        return Value(self.data * other.data, (self, other), rule, "*")

    def __pow__(self, exponent):
        def rule(g):
            # BEGIN SOLUTION
            return (g * exponent * self.data ** (exponent - 1),)
            # END SOLUTION

        return Value(self.data**exponent, (self,), rule, f"**{exponent}")

    def tanh(self):
        out = np.tanh(self.data)

        def rule(g):
            # BEGIN SOLUTION
            return (g * (1 - out * out),)
            # END SOLUTION

        return Value(out, (self,), rule, "tanh")

    def exp(self):
        out = np.exp(self.data)

        def rule(g):
            # BEGIN SOLUTION
            return (g * out,)
            # END SOLUTION

        return Value(out, (self,), rule, "exp")

    def log(self):
        def rule(g):
            # BEGIN SOLUTION
            return (g / self.data,)
            # END SOLUTION

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
        # BEGIN SOLUTION
        grads = {id(self): np.ones_like(self.data)}
        for node in reversed(topological_order(self)):
            grad = grads.pop(id(node))
            if not node.parents:
                node.grad = grad if node.grad is None else node.grad + grad
                continue
            node.grad = grad
            for parent, parent_grad in zip(node.parents, node.rule(grad)):
                previous = grads.get(id(parent))
                grads[id(parent)] = parent_grad if previous is None else previous + parent_grad
        # END SOLUTION


def topological_order(root):
    """Every Value `root` depends on, each once, parents before children (no recursion)."""
    # BEGIN SOLUTION
    order, seen = [], set()
    stack = [(root, False)]
    while stack:
        node, parents_done = stack.pop()
        if parents_done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((parent, False) for parent in reversed(node.parents))
    return order
    # END SOLUTION
