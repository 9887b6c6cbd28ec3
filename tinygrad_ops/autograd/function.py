"""User-defined ops, as `torch.autograd.Function`: a forward, a backward, and a ctx."""

from __future__ import annotations

import numpy as np

from ..mode import STATE, _GradModeSetter, no_grad
from ..ops import base as ops_base
from ..ops.base import _FREED_MESSAGE, Op, is_tensor, new_tensor, record, released_inputs


class FunctionCtx:
    """The `ctx` of a user `Function`: save tensors in forward, read them in backward."""

    def __init__(self):
        self._saved = ()
        self._versions = ()
        self.needs_input_grad = ()
        self._freed = False

    def save_for_backward(self, *tensors):
        for tensor in tensors:
            if tensor is not None and not is_tensor(tensor):
                raise TypeError(
                    f"save_for_backward takes Tensors (or None), got {type(tensor).__name__}"
                )
        self._saved = tensors
        self._versions = tuple(t._version[0] if t is not None else 0 for t in tensors)

    @property
    def saved_tensors(self):
        if self._freed:
            raise RuntimeError(_FREED_MESSAGE.format(op="a custom Function"))
        for tensor, version in zip(self._saved, self._versions):
            if tensor is not None and tensor._version[0] != version:
                raise RuntimeError(
                    f"a tensor saved by a custom Function (shape {tensor.shape}) was modified "
                    f"by an in-place operation: version {tensor._version[0]}, expected {version}"
                )
        return self._saved


class _CustomFunctionNode(Op):
    """The tape node of a user `Function`: calls its static `backward` with Tensors."""

    __slots__ = ("function", "ctx")
    fresh_gradients = False  # the user's backward may return a tensor it keeps elsewhere

    def backward(self, grad_output):
        if self.ctx._freed:
            raise RuntimeError(_FREED_MESSAGE.format(op=self.function.__name__))
        wrapped = grad_output if is_tensor(grad_output) else new_tensor(grad_output, False, None)
        with _GradModeSetter(self.graph_mode):
            results = self.function.backward(self.ctx, wrapped)
        if not isinstance(results, tuple):
            results = (results,)
        if len(results) != len(self.inputs):
            raise RuntimeError(
                f"{self.function.__name__}.backward returned {len(results)} gradients but "
                f"forward took {len(self.inputs)} inputs"
            )
        grads = []
        for index, result in enumerate(results):
            if result is None:
                grads.append(None)
                continue
            if not is_tensor(result):
                result = new_tensor(np.asarray(result, dtype=self.inputs[index].data.dtype))
            if not self.graph_mode:
                result = result.data
            grads.append(result)
        return tuple(grads)

    def release(self, husks=None):
        self.ctx._saved = ()
        self.ctx._freed = True
        self.inputs = released_inputs(self.inputs, {} if husks is None else husks)


class Function:
    """A user-defined op, as `torch.autograd.Function`.

    Subclass it with static `forward(ctx, *inputs)` and `backward(ctx, grad_output)`;
    call it as `MyOp.apply(*inputs)`. `forward` runs without recording; `backward`
    returns one gradient per input (None for inputs that need none).

    >>> import tinygrad_ops as tg
    >>> class Cube(tg.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x * x
    ...     @staticmethod
    ...     def backward(ctx, grad_output):
    ...         (x,) = ctx.saved_tensors
    ...         return grad_output * 3 * x * x
    >>> x = tg.Tensor([2.0], requires_grad=True)
    >>> Cube.apply(x).sum().backward()
    >>> x.grad.numpy()
    array([12.], dtype=float32)
    """

    @staticmethod
    def forward(ctx, *inputs):  # pragma: no cover - user code overrides it
        raise NotImplementedError("a Function subclass must define forward(ctx, *inputs)")

    @staticmethod
    def backward(ctx, *grad_outputs):  # pragma: no cover - user code overrides it
        raise NotImplementedError("a Function subclass must define backward(ctx, grad_output)")

    @classmethod
    def apply(cls, *inputs):
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(is_tensor(value) and value._requires_grad for value in inputs)
        with no_grad():
            result = cls.forward(ctx, *inputs)
        if not is_tensor(result):
            result = ops_base.Tensor(result)  # the user's forward returned an array
        requires_grad = STATE.grad_enabled and any(ctx.needs_input_grad)
        if not requires_grad:
            return new_tensor(result.data, False, None)
        node = _CustomFunctionNode()
        node.function = cls
        node.ctx = ctx
        node.saved = ()
        node.needs_input_grad = ctx.needs_input_grad
        node.saved_output = None
        record(node, inputs)
        return new_tensor(result.data, True, node)
