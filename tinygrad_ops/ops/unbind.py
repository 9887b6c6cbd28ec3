"""The rows of a tensor as tensors of their own (`torch.unbind` along the first axis), with
a backward that stacks the rows' gradients once: what `tg.scan` hands its steps.

Cutting a (T, ...) tensor into T rows with `a[t]` costs the backward T full-size arrays:
each `GetItem` scatters its row's gradient into zeros of a's shape, and the walk adds the
T of them up (T^2 / 2 row copies in all). Here the rows' gradients are collected and
stacked once. The engine gives every op one output, so the split is two ops:

    token = Unbind(a)            a 0-d token; its node collects the rows' gradients
    row_t = Row(a, token, t)     a[t] (a view of a, as torch.unbind's rows are)

Row t's backward hands its gradient to the token's node and sends the token 1; the token
is older than every row, so the walk reaches it after all of them, with the number of
rows that sent it a gradient; Unbind's backward stacks them (zeros for a row none
reached) and sends the stack to a. (The count makes it exact even after a pass that ran
some rows' rules and never reached the token: `tg.grad` with a row as the input.)
"""

import numpy as np

from .base import Op
from .shape import Stack

# What each row sends its token: one (read-only: the walk never adds into it in place).
_ONE = np.ones((), dtype=np.int64)
_ONE.flags.writeable = False


class Unbind(Op):
    """token = Unbind(a), the hub of a's rows (`rows` makes them);  da = the rows'
    gradients stacked on a new first axis (zeros for a row no gradient reached)"""

    __slots__ = ("pieces", "length", "row_shape", "row_dtype")

    def forward(self, a):
        self.pieces = []  # (row index, gradient), appended by the rows' backward rules
        self.length = a.shape[0]
        self.row_shape = a.shape[1:]
        self.row_dtype = a.dtype
        return np.zeros((), dtype=np.int64)

    def backward(self, grad_output):
        count = int(grad_output)  # the rows that handed in a gradient in this pass
        pieces, self.pieces = self.pieces[len(self.pieces) - count :], []
        if self.graph_mode:  # Tensors (create_graph): the stack is recorded
            grads = [np.zeros(self.row_shape, dtype=self.row_dtype)] * self.length
            for index, grad in pieces:
                grads[index] = grad
            return (Stack.apply(*grads),)
        grad = np.zeros((self.length, *self.row_shape), dtype=self.row_dtype)
        for index, piece in pieces:
            grad[index] = piece
        return (grad,)


class Row(Op):
    """out = a[index], a row of `a` along its first axis, `token` made by the Unbind node
    `hub`;  da: the gradient handed to the hub (which stacks every row's), dtoken = 1"""

    __slots__ = ("index", "hub")
    is_view = True

    def forward(self, a, token, index, hub):
        self.index = index
        self.hub = hub
        return self.compute(a, token, index, hub)

    def compute(self, a, token, index, hub):
        """a[index] (what a compiled program replays: the capture's node keeps `index`
        and `hub`, the same at every call)."""
        return a[index]

    def backward(self, grad_output):
        self.hub.pieces.append((self.index, grad_output))
        return None, _ONE, None


def rows(a):
    """The rows a[0], a[1], ... of the Tensor `a` (at least 1-d), as Row tensors of one
    Unbind: their backward is one stack of their gradients.

    >>> import tinygrad_ops as tg
    >>> a = tg.Tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    >>> first, second, third = rows(a)
    >>> (first * 1 + third * 3).sum().backward()
    >>> a.grad.numpy()
    array([[1., 1.],
           [0., 0.],
           [3., 3.]], dtype=float32)
    """
    token = Unbind.apply(a)
    hub = token._ctx  # (None when nothing is recorded: then no backward runs)
    return [Row.apply(a, token, index, hub=hub) for index in range(a.shape[0])]


def source_gradient(operands, grads):
    """(a, its gradient) when the tensors `operands` are consecutive rows of one `rows(a)`,
    in order or in reverse (the steps' inputs of a `tg.scan`, of one with reverse=True),
    and `grads` their gradients stacked: the stack goes to a in one send, zeros in the
    rows not among them, where T sends would go through T rows to the hub. None for other
    operands."""
    first = operands[0]._ctx
    if type(first) is not Row or first.hub is None:
        return None
    hub, start = first.hub, first.index
    second = operands[1]._ctx if len(operands) > 1 else None
    step = -1 if type(second) is Row and second.index == start - 1 else 1
    for offset, operand in enumerate(operands):
        node = operand._ctx
        if type(node) is not Row or node.hub is not hub or node.index != start + step * offset:
            return None
    source = first.inputs[0]
    grads = np.asarray(grads, dtype=source.dtype)
    if step < 0:
        start, grads = start - len(operands) + 1, grads[::-1]
    if len(operands) == hub.length:
        return source, grads
    whole = np.zeros((hub.length,) + grads.shape[1:], dtype=grads.dtype)
    whole[start : start + len(operands)] = grads
    return source, whole
