"""The engine: the backward graph and its walk, the order, backward, tg.Function, in place.

    order     which tensors need a gradient, parents before children (iterative)
    graph     BackwardGraph: pending gradients, ownership, the reference walk, leaf writes;
              `unbroadcast`, the one place broadcasting is undone
    backward  run_backward (hands the graph to a scheduler), Tensor.backward, tg.grad
    function  tg.Function, user-defined ops
    inplace   the in-place rule (version counters, the shadow of the old history)

The package re-exports the engine's public names, the ones users and docs reach as
`tinygrad_ops.autograd.X` (as `torch.autograd.grad`, `torch.autograd.Function`): `grad`,
`Function` and its ctx, grad mode (it lives in `mode`), `BackwardGraph` (what a scheduler's
`run(graph)` receives), `unbroadcast`, `topological_order`, the hook handle, the scanned
segment record and the `Op` contract (it lives in `ops.base`). Modules inside the package
import each name from the module that defines it.
"""

from ..mode import detect_anomaly, enable_grad, is_grad_enabled, no_grad
from ..ops.base import Op
from .backward import grad
from .function import Function, FunctionCtx
from .graph import BackwardGraph, HookHandle, ScannedSegment, unbroadcast
from .order import topological_order

__all__ = [
    "BackwardGraph",
    "Function",
    "FunctionCtx",
    "HookHandle",
    "Op",
    "ScannedSegment",
    "detect_anomaly",
    "enable_grad",
    "grad",
    "is_grad_enabled",
    "no_grad",
    "topological_order",
    "unbroadcast",
]
