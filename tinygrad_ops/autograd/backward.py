"""Backward: the seed gradients, the graph handed to a scheduler, and the release after.

`run_backward` builds a `BackwardGraph` (its order is computed iteratively, so there is no
recursion limit), hands it to the chosen scheduler and then releases the saved buffers
unless `retain_graph`. `Tensor.backward` and `tg.grad` are thin fronts over it.
"""

from __future__ import annotations

import numpy as np

from ..mode import STATE
from ..ops.base import is_tensor, new_tensor
from .graph import BackwardGraph


def run_backward(
    roots,
    seeds,
    inputs=None,
    retain_graph=False,
    create_graph=False,
    scheduler=None,
):
    """The engine: gradients of `roots` (seeded with `seeds`) into leaves or `inputs`.

    With `inputs=None` gradients accumulate into every reachable leaf's `.grad`
    (`Tensor.backward`); otherwise they are returned for `inputs`, in order (`tg.grad`).
    """
    wanted = None if inputs is None else {id(tensor) for tensor in inputs}
    graph = STATE.tracer.graph(BackwardGraph, roots, wanted, create_graph, inputs is None)
    for root, seed in zip(roots, seeds):
        if create_graph and not is_tensor(seed):
            seed = new_tensor(np.asarray(seed), False, None)
        graph.send(root, seed)
    try:
        # IEEE results without numpy's RuntimeWarnings (log's 1/x at 0, sqrt's at 0, 0 * inf),
        # as PyTorch gives them: one errstate per pass (about 1 us), not one per rule.
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            schedulers = _schedulers()
            if scheduler is None and schedulers.get_default_scheduler() == "sequential":
                graph.run_sequential()  # the common case, without the registry look-up
            else:
                schedulers.resolve_scheduler(scheduler).run(graph)
    finally:
        if not retain_graph:
            husks = {}  # one husk per released tensor, shared by its consumers
            for node in graph.visited:
                node.release(husks)
    if inputs is None:
        return None
    return [graph.captured.get(id(tensor)) for tensor in inputs]


_registry = None  # scheduler/registry, looked up on first use (see `_schedulers`)


def _schedulers():
    """The scheduler registry (names -> schedulers; it imports no implementation).

    Imported on first use, not at module level: importing `tinygrad_ops.scheduler.registry`
    runs the scheduler package's `__init__`, which imports the implementations, and they sit
    above `tensor.py`, which is still loading while this module loads.
    """
    global _registry
    if _registry is None:
        from ..scheduler import registry

        _registry = registry
    return _registry


def _seed_for(root, gradient, argument_name):
    if gradient is None:
        if root.data.size != 1:
            raise RuntimeError(
                f"grad can be implicitly created only for scalar outputs; the output has shape "
                f"{root.shape}: pass {argument_name} with that shape"
            )
        data = root.data
        seed = np.array(1, dtype=data.dtype)  # (np.ones costs 0.6 us more, in Python)
        return seed if data.ndim == 0 else seed.reshape(data.shape)
    seed = gradient.data if is_tensor(gradient) else np.asarray(gradient)
    if seed.shape != root.shape:
        raise RuntimeError(
            f"{argument_name} has shape {seed.shape} but the output has shape {root.shape}"
        )
    if is_tensor(gradient):
        return gradient if gradient.requires_grad else seed.astype(root.data.dtype, copy=False)
    return seed.astype(root.data.dtype, copy=False)


def tensor_backward(root, gradient=None, retain_graph=False, create_graph=False, scheduler=None):
    """`Tensor.backward`: accumulate d(root)/d(leaf) into every leaf's `.grad`."""
    if not root._requires_grad:
        raise RuntimeError(
            "backward() called on a tensor that does not require grad and has no grad_fn: "
            "make an input with requires_grad=True (and compute outside tg.no_grad())"
        )
    seed = _seed_for(root, gradient, "gradient")
    run_backward([root], [seed], None, retain_graph or create_graph, create_graph, scheduler)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    allow_unused=False,
    scheduler=None,
):
    """Gradients of `outputs` with respect to `inputs`, returned (leaves' `.grad` untouched).

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor(3.0, requires_grad=True)
    >>> (dx,) = tg.grad(x * x, [x])
    >>> float(dx.item())
    6.0
    """
    single_output = is_tensor(outputs)
    outputs = [outputs] if single_output else list(outputs)
    inputs_list = [inputs] if is_tensor(inputs) else list(inputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif is_tensor(grad_outputs) or not isinstance(grad_outputs, (list, tuple)):
        grad_outputs = [grad_outputs]
    if len(grad_outputs) != len(outputs):
        raise ValueError(
            f"grad_outputs has {len(grad_outputs)} entries but there are {len(outputs)} outputs"
        )
    for index, tensor in enumerate(inputs_list):
        if not is_tensor(tensor):
            raise TypeError(f"inputs[{index}] is a {type(tensor).__name__}, not a Tensor")
        if not tensor._requires_grad:
            raise RuntimeError(f"inputs[{index}] does not require grad")
    seeds = []
    for output, grad_output in zip(outputs, grad_outputs):
        if not output._requires_grad:
            raise RuntimeError(
                "one of the outputs does not require grad and has no grad_fn: it does not "
                "depend on any input that requires grad"
            )
        seeds.append(_seed_for(output, grad_output, "grad_outputs"))
    if retain_graph is None:
        retain_graph = create_graph
    results = run_backward(outputs, seeds, inputs_list, retain_graph, create_graph, scheduler)
    wrapped = []
    for index, result in enumerate(results):
        if result is None:
            if not allow_unused:
                raise RuntimeError(
                    f"inputs[{index}] was not used to compute the outputs; pass "
                    "allow_unused=True to get None for it"
                )
            wrapped.append(None)
        elif is_tensor(result):
            wrapped.append(result)
        else:
            # A copy: the engine may hand out arrays shared with other gradients.
            wrapped.append(new_tensor(np.array(result, copy=True), False, None))
    return tuple(wrapped)
