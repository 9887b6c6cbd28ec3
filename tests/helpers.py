"""Shared test helpers: one `check_op` that runs the same inputs through us and PyTorch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF  # noqa: N812 (the conventional alias)

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)

torch.set_num_threads(1)


def random_inputs(*specs, seed=0, low=None, high=None, dtype=np.float64):
    """Arrays for `specs`: a shape tuple makes a random array, an array is used as it is.

    With `low`/`high` the values are uniform in that range (to stay in a function's
    domain), else standard normal.
    """
    generator = np.random.default_rng(seed)
    arrays = []
    for spec in specs:
        if isinstance(spec, tuple):
            if low is not None or high is not None:
                values = generator.uniform(low or 0.0, high or 1.0, size=spec)
            else:
                values = generator.standard_normal(spec)
            arrays.append(np.asarray(values, dtype=dtype))
        else:
            arrays.append(np.asarray(spec))
    return arrays


def case(name, ours, theirs, *specs, **options):
    return pytest.param(ours, theirs, specs, options, id=name)


def same_case(name, function, *specs, **options):
    """A case whose expression reads the same on our tensors and on torch's."""
    return case(name, function, function, *specs, **options)


# Values with ties in each row (for the elementwise and the reduction cases).
TIES = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])


def check_op(ours, theirs, *specs, seed=0, low=None, high=None, atol=1e-10, rtol=1e-8):
    """Compare `ours(*tensors)` with `theirs(*torch_tensors)` in float64: the output, and the
    gradient of every floating input for a random upstream gradient (not all ones, so that
    a rule that ignores the upstream gradient fails).
    """
    arrays = random_inputs(*specs, seed=seed, low=low, high=high)
    differentiable = [array.dtype.kind == "f" for array in arrays]
    ours_in = [
        tg.Tensor(array.copy(), requires_grad=needs)
        for array, needs in zip(arrays, differentiable, strict=True)
    ]
    theirs_in = [
        torch.tensor(array.copy(), requires_grad=needs)
        for array, needs in zip(arrays, differentiable, strict=True)
    ]
    out = ours(*ours_in)
    expected = theirs(*theirs_in)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=atol, rtol=rtol)
    assert out.shape == tuple(expected.shape), (out.shape, tuple(expected.shape))
    if not any(differentiable):
        return
    upstream = np.random.default_rng(seed + 1).standard_normal(out.shape)
    out.backward(upstream)
    expected.backward(torch.tensor(upstream))
    for index, (mine, reference) in enumerate(zip(ours_in, theirs_in, strict=True)):
        if not differentiable[index]:
            continue
        if reference.grad is None:
            assert mine.grad is None or not np.any(mine.grad.numpy()), f"input {index}"
            continue
        assert mine.grad is not None, f"input {index} got no gradient"
        assert mine.grad.shape == mine.shape, f"input {index}: {mine.grad.shape} != {mine.shape}"
        np.testing.assert_allclose(
            mine.grad.numpy(),
            reference.grad.numpy(),
            atol=atol,
            rtol=rtol,
            err_msg=f"gradient of input {index}",
        )


def check_affine_norm(name, shape, normalized, **options):
    """check_op for F.layer_norm or F.rms_norm (`name`) over the trailing dims `normalized`,
    with a weight (and for layer_norm a bias) of that shape, against torch's function."""
    ours, theirs = getattr(F, name), getattr(TF, name)
    if name == "layer_norm":
        check_op(
            lambda x, w, b: ours(x, normalized, w, b),
            lambda x, w, b: theirs(x, normalized, w, b),
            shape,
            normalized,
            normalized,
            **options,
        )
    else:
        check_op(
            lambda x, w: ours(x, normalized, w),
            lambda x, w: theirs(x, normalized, w),
            shape,
            normalized,
            **options,
        )


def check_second_order(ours, theirs, values, atol=1e-10, rtol=1e-8):
    """Differentiate twice (create_graph) in both engines, float64: the gradient of
    sum(g * g), g the gradient of sum(f(x)), must match PyTorch's."""
    x = tg.Tensor(np.array(values, dtype=np.float64), requires_grad=True)
    torch_x = torch.tensor(np.array(values, dtype=np.float64), requires_grad=True)
    (grad,) = tg.grad(ours(x).sum(), [x], create_graph=True)
    (torch_grad,) = torch.autograd.grad(theirs(torch_x).sum(), [torch_x], create_graph=True)
    (second,) = tg.grad((grad * grad).sum(), [x])
    (torch_second,) = torch.autograd.grad((torch_grad * torch_grad).sum(), [torch_x])
    np.testing.assert_allclose(second.numpy(), torch_second.numpy(), rtol=rtol, atol=atol)


def pair(values, requires_grad=True):
    """The same float64 values as one of ours and one torch tensor."""
    array = np.asarray(values, dtype=np.float64)
    return (
        tg.Tensor(array.copy(), requires_grad=requires_grad),
        torch.tensor(array.copy(), requires_grad=requires_grad),
    )


def close(ours, theirs):
    """ours == theirs (a torch tensor or an array) to 1e-10 relative in float64."""
    expected = theirs.detach().numpy() if isinstance(theirs, torch.Tensor) else theirs
    np.testing.assert_allclose(np.asarray(ours.numpy()), expected, rtol=1e-10, atol=1e-12)


def close_twice(y, x, torch_y, torch_x):
    """The gradient of y.sum() with respect to x (create_graph), then the gradient of that
    gradient's sum, each close to PyTorch's for the same graph built on torch_x."""
    (grad,) = tg.grad(y.sum(), [x], create_graph=True)
    (torch_grad,) = torch.autograd.grad(torch_y.sum(), [torch_x], create_graph=True)
    close(grad, torch_grad)
    (second,) = tg.grad(grad.sum(), [x])
    (torch_second,) = torch.autograd.grad(torch_grad.sum(), [torch_x])
    close(second, torch_second)


def assert_parameter_grads_match(ours, theirs, **tolerances):
    """Each named parameter's .grad of our module equals that of the torch module."""
    references = dict(theirs.named_parameters())
    for name, parameter in ours.named_parameters():
        reference = references[name].grad.numpy()
        np.testing.assert_allclose(parameter.grad.numpy(), reference, err_msg=name, **tolerances)


# The custom Function the engine, jit and viz tests share (step_backward prints its docstring).
class Cube(tg.Function):
    """out = x**3;  dx = g * 3 x**2"""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 3 * x * x


# -- graphs and DOT sources for the viz tests ----------------------------------------------


def named(values, name, requires_grad=True):
    tensor = tg.Tensor(np.asarray(values, dtype=np.float32), requires_grad=requires_grad)
    tensor.name = name
    return tensor


def dot_lines(digraph):
    return [line.strip() for line in digraph.source.splitlines()]


def node_names(digraph):
    """The ids of the node statements in a DOT source (not edges, not attributes)."""
    names = []
    for line in dot_lines(digraph):
        if "->" in line or line.startswith(("digraph", "}", "node ", "edge ", "subgraph")):
            continue
        head = line.split(" ", 1)[0]
        if "[" in line and "=" not in head:
            names.append(head)
    return names


def small_graph():
    """loss = sum(x * w) with x = [1, 2], w = [3, 4]."""
    x = named([1.0, 2.0], "x")
    w = named([3.0, 4.0], "w")
    return x, w, (x * w).sum()


class SpyScheduler:
    """A user-written scheduler object that runs another one and keeps the graph (what a
    scan scheduler scanned: `graph.scanned_segments`)."""

    def __init__(self, inner):
        self.inner = tg.scheduler.resolve_scheduler(inner)
        self.name = "spy"
        self.graph = None

    def run(self, graph):
        self.graph = graph
        self.inner.run(graph)


def spied_backward(loss, library, scheduler):
    """`loss.backward()`: torch's plainly (None back), ours through a SpyScheduler over
    `scheduler` (returned, with the graph it saw)."""
    if library == "torch":
        loss.backward()
        return None
    spy = SpyScheduler(scheduler)
    loss.backward(scheduler=spy)
    return spy
