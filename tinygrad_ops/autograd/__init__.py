"""The engine: the backward graph and its walk, the order, backward, tg.Function, in place.

    order     which tensors need a gradient, parents before children (iterative)
    graph     BackwardGraph: pending gradients, ownership, the reference walk, leaf writes;
              `unbroadcast`, the one place broadcasting is undone
    backward  run_backward (hands the graph to a scheduler), Tensor.backward, tg.grad
    function  tg.Function, user-defined ops
    inplace   the in-place rule (version counters, the shadow of the old history)

The names below stay importable from `tinygrad_ops.autograd` (grad mode lives in `mode`,
the Op contract in `ops.base`).
"""

from ..mode import STATE, detect_anomaly, enable_grad, is_grad_enabled, no_grad
from ..ops.base import Op, node_name
from .backward import grad, run_backward, tensor_backward
from .function import Function, FunctionCtx
from .graph import BackwardGraph, HookHandle, ScannedSegment, unbroadcast
from .inplace import apply_inplace
from .order import as_recorded, recorded_inputs, topological_order

__all__ = [
    "STATE",
    "BackwardGraph",
    "Function",
    "FunctionCtx",
    "HookHandle",
    "Op",
    "ScannedSegment",
    "apply_inplace",
    "as_recorded",
    "detect_anomaly",
    "enable_grad",
    "grad",
    "is_grad_enabled",
    "no_grad",
    "node_name",
    "recorded_inputs",
    "run_backward",
    "tensor_backward",
    "topological_order",
    "unbroadcast",
]
