"""The whole idea of reverse-mode autograd in one screenful: chapter zero of the tutorial.

A `Value` holds a number or a numpy array. Every operation makes a new `Value` that remembers
its parents (a tuple: a fixed order) and a rule that turns the gradient of the output into
one gradient per parent: that is the tape. `backward()` walks it once, newest node first.

Four traps of the smallest engines are avoided on purpose: the topological sort is iterative
(10,000 steps need no recursion); gradients are summed into new arrays (`total = total + g`),
never `+=` into an array another node may share (an Add passes its gradient on unchanged);
parents are a tuple, so the walk's order is the same on every run; gradients live in a map
local to one `backward()` call, so a second call starts clean (leaves add to their `.grad`,
as in PyTorch). It trains a network (examples/micro_moons.py); the rest is docs/tutorial.md.

>>> from tinygrad_ops.micro import Value
>>> a, b, c, f = Value(2.0), Value(-3.0), Value(10.0), Value(-2.0)
>>> loss = (a * b + c) * f
>>> loss.backward()
>>> float(a.grad), float(b.grad), float(c.grad), float(f.grad)
(6.0, -4.0, -2.0, 4.0)
"""

from __future__ import annotations

import numpy as np


class Value:
    """A scalar or an array in float64, with `.grad` once `backward()` has reached it."""

    def __init__(self, data, parents=(), rule=None, op=""):
        self.data = np.asarray(data, dtype=np.float64)
        self.grad = None
        self.parents = parents  # the Values this one was computed from, in operand order
        self.rule = rule  # gradient of the output -> tuple of one gradient per parent
        self.op = op

    def __repr__(self):
        return f"Value({self.data}, op={self.op!r})"

    def _lift(self, other):
        """A Value of this one's shape: a plain number or array becomes a constant."""
        if not isinstance(other, Value):
            return Value(np.broadcast_to(np.asarray(other, dtype=np.float64), self.data.shape))
        if other.data.shape != self.data.shape:
            raise ValueError(
                f"micro does not broadcast: shapes {self.data.shape} and {other.data.shape}; "
                "the real engine does (tinygrad_ops.autograd.unbroadcast)"
            )
        return other

    def __add__(self, other):  # out = a + b;  da = g, db = g
        other = self._lift(other)
        return Value(self.data + other.data, (self, other), lambda g: (g, g), "+")

    def __mul__(self, other):  # out = a * b;  da = g * b, db = g * a
        other = self._lift(other)
        return Value(
            self.data * other.data, (self, other), lambda g: (g * other.data, g * self.data), "*"
        )

    def __pow__(self, exponent):  # out = a ** n (n a number);  da = g * n * a ** (n - 1)
        def rule(g):
            return (g * exponent * self.data ** (exponent - 1),)

        return Value(self.data**exponent, (self,), rule, f"**{exponent}")

    def tanh(self):  # out = tanh(a);  da = g * (1 - out²)
        out = np.tanh(self.data)
        return Value(out, (self,), lambda g: (g * (1 - out * out),), "tanh")

    def exp(self):  # out = exp(a);  da = g * out
        out = np.exp(self.data)
        return Value(out, (self,), lambda g: (g * out,), "exp")

    def log(self):  # out = log(a);  da = g / a
        return Value(np.log(self.data), (self,), lambda g: (g / self.data,), "log")

    def sigmoid(self):  # out = 1 / (1 + exp(-a));  da = g * out * (1 - out)
        out = np.exp(-np.logaddexp(0.0, -self.data))  # exp(-log(1 + exp(-a))): no overflow
        return Value(out, (self,), lambda g: (g * out * (1 - out),), "sigmoid")

    def relu(self):  # out = max(a, 0);  da = g * (a > 0)
        return Value(np.maximum(self.data, 0), (self,), lambda g: (g * (self.data > 0),), "relu")

    def sum(self):  # out = Σ a;  da = g copied to every element
        return Value(
            self.data.sum(), (self,), lambda g: (np.broadcast_to(g, self.data.shape),), "sum"
        )

    # The rest is composed from the primitives above (its gradient comes for free).
    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        return self + (-self._lift(other))

    def __truediv__(self, other):
        return self * self._lift(other) ** -1

    def __rsub__(self, other):  # other - self, for a number on the left: 1 - x
        return self._lift(other) - self

    def __rtruediv__(self, other):  # other / self: 10 / x
        return self._lift(other) / self

    __radd__ = __add__  # 2 + x is x + 2: the operands commute
    __rmul__ = __mul__

    def backward(self):
        """Fill `.grad` of every Value this one depends on (the seed is ones).

        >>> x = Value(3.0)
        >>> y = x * x
        >>> y.backward(); y.backward()  # a leaf adds up; an intermediate starts afresh
        >>> float(x.grad), float(y.grad)
        (12.0, 1.0)
        """
        grads = {id(self): np.ones_like(self.data)}  # this call's gradients only
        for node in reversed(topological_order(self)):
            grad = grads.pop(id(node))  # every consumer has sent its share by now
            if not node.parents:  # a leaf: gradients add up over calls, as in PyTorch
                node.grad = grad if node.grad is None else node.grad + grad
                continue
            node.grad = grad  # an intermediate: this call's gradient
            for parent, parent_grad in zip(node.parents, node.rule(grad)):
                previous = grads.get(id(parent))
                grads[id(parent)] = parent_grad if previous is None else previous + parent_grad


def topological_order(root):
    """Every Value `root` depends on, parents before children (iterative depth-first).

    >>> x = Value(1.0)
    >>> [node.op for node in topological_order((x * x).exp())]
    ['', '*', 'exp']
    """
    order, seen = [], set()
    stack = [(root, False)]
    while stack:
        node, parents_done = stack.pop()
        if parents_done:
            order.append(node)  # all its parents were appended before it
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((parent, False) for parent in reversed(node.parents))
    return order
