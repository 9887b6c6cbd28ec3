"""The elementwise primitives (ops/elementwise.py; exp, log, sqrt, tanh, sigmoid of ops/unary.py)
against PyTorch in float64:
the output and every input's gradient, one line per case through `check_op`; shapes include
broadcast, batched, 0-d, size-1 and empty dims, domains kept where the function is defined."""

import numpy as np
import pytest
import torch
from helpers import TIES, case, check_op, same_case

import tinygrad_ops as tg

WITH_ZEROS = np.array([[0.0, 1.5, -2.0], [0.0, 0.3, 4.0]])
BASE_WITH_ZEROS = np.array([0.0, 0.5, 2.0, 0.0, 1.5])
EXPONENT_WITH_ZEROS = np.array([2.0, 0.0, 3.0, 0.0, 1.0])
CLIP_EDGES = np.array([-2.0, -0.5, 0.0, 0.5, 1.0, 3.0])
CONDITION = np.array([[True, False, True], [False, False, True]])
CONDITION_COLUMN = np.array([[True], [False], [True]])

BINARY_SHAPES = [
    ("same", (3, 4), (3, 4)),
    ("0d-vector", (), (3,)),
    ("matrix-0d", (2, 3), ()),
    ("row-broadcast", (2, 3), (3,)),
    ("both-broadcast", (2, 1, 4), (3, 1)),
    ("size1-batch", (1,), (2, 3)),
    ("batched", (2, 3, 4), (2, 3, 4)),
    ("empty", (0, 3), (1, 3)),
]

BINARY = [
    ("add", lambda a, b: a + b, lambda a, b: a + b),
    ("sub", lambda a, b: a - b, lambda a, b: a - b),
    ("mul", lambda a, b: a * b, lambda a, b: a * b),
    ("maximum", tg.maximum, torch.maximum),
]

# Inputs in [0.5, 2]: no division by zero, no power of a negative base.
POSITIVE_BINARY = [
    ("div", lambda a, b: a / b, lambda a, b: a / b),
    ("pow", lambda a, b: a**b, lambda a, b: a**b),
]


def where_case(name, condition, *shapes):
    """where(condition, a, b) with a constant boolean array as the condition."""
    return case(
        name,
        lambda a, b: tg.where(condition, a, b),
        lambda a, b: torch.where(torch.as_tensor(condition), a, b),
        *shapes,
    )


ELEMENTWISE_CASES = (
    [
        case(f"{name}-{shape_name}", ours, theirs, shape_a, shape_b)
        for name, ours, theirs in BINARY
        for shape_name, shape_a, shape_b in BINARY_SHAPES
    ]
    + [
        case(f"{name}-{shape_name}", ours, theirs, shape_a, shape_b, low=0.5, high=2.0)
        for name, ours, theirs in POSITIVE_BINARY
        for shape_name, shape_a, shape_b in BINARY_SHAPES
    ]
    + [
        same_case("add-python-number-right", lambda a: a + 2, (3,)),
        same_case("radd-python-number", lambda a: 2 + a, (3,)),
        same_case("rsub-python-number", lambda a: 2 - a, (2, 3)),
        same_case("rmul-python-number", lambda a: 3 * a, (2, 3)),
        same_case("rdiv-python-number", lambda a: 3 / a, (2, 3), low=0.5, high=2.0),
        same_case("div-python-number", lambda a: a / 4, (2, 3)),
        same_case("neg", lambda a: -a, (2, 3)),
        same_case("neg-0d", lambda a: -a, ()),
        same_case("neg-empty", lambda a: -a, (0, 2)),
        # pow with a scalar exponent, including base 0 and exponent 0
        same_case("pow-scalar-2", lambda a: a**2, (2, 3)),
        same_case("pow-scalar-3-negative-base", lambda a: a**3, (2, 3)),
        same_case("pow-scalar-0", lambda a: a**0, (2, 3)),
        same_case("pow-scalar-1", lambda a: a**1, (2, 3)),
        same_case("pow-scalar-half", lambda a: a**0.5, (2, 3), low=0.5, high=2.0),
        same_case("pow-scalar-negative", lambda a: a**-1.5, (2, 3), low=0.5, high=2.0),
        same_case("pow-scalar-2-base-0", lambda a: a**2, WITH_ZEROS),
        same_case("pow-scalar-3-base-0", lambda a: a**3, WITH_ZEROS),
        same_case("pow-scalar-0-base-0", lambda a: a**0, WITH_ZEROS),
        same_case("pow-scalar-1-base-0", lambda a: a**1, WITH_ZEROS),
        same_case("pow-scalar-0d", lambda a: a**3, ()),
        case("pow-scalar-numpy-float", lambda a: a ** np.float64(2.0), lambda a: a**2.0, (3,)),
        # pow with a tensor exponent, including base 0 and exponent 0
        same_case("pow-tensor-base-0", lambda a, b: a**b, BASE_WITH_ZEROS, EXPONENT_WITH_ZEROS),
        same_case("pow-tensor-exponent-0", lambda a, b: a**b, (5,), np.zeros(5)),
        same_case("rpow-python-base", lambda b: 2.0**b, (2, 3)),
        # unary
        case("exp", lambda a: a.exp(), torch.exp, (2, 3)),
        case("exp-0d", lambda a: a.exp(), torch.exp, ()),
        case("exp-empty", lambda a: a.exp(), torch.exp, (2, 0)),
        case("log", lambda a: a.log(), torch.log, (2, 3), low=0.1, high=3.0),
        case("log-0d", lambda a: a.log(), torch.log, (), low=0.1, high=3.0),
        case("sqrt", lambda a: a.sqrt(), torch.sqrt, (2, 3), low=0.1, high=3.0),
        case("sqrt-size1", lambda a: a.sqrt(), torch.sqrt, (1, 1), low=0.1, high=3.0),
        case("abs", lambda a: a.abs(), torch.abs, (2, 3)),
        case("abs-at-0", lambda a: a.abs(), torch.abs, WITH_ZEROS),
        case("tanh", lambda a: a.tanh(), torch.tanh, (2, 3)),
        case("tanh-0d", lambda a: a.tanh(), torch.tanh, ()),
        case("sigmoid", lambda a: a.sigmoid(), torch.sigmoid, (2, 3)),
        case(
            "sigmoid-extremes",
            lambda a: a.sigmoid(),
            torch.sigmoid,
            np.array([-800.0, -30.0, 0.0, 30.0, 800.0]),
        ),
        case("relu", lambda a: a.relu(), torch.relu, (2, 3)),
        case("relu-at-0", lambda a: a.relu(), torch.relu, WITH_ZEROS),
        case("relu-empty", lambda a: a.relu(), torch.relu, (0,)),
        # maximum with ties (the gradient is shared evenly, as torch)
        case(
            "maximum-ties",
            tg.maximum,
            torch.maximum,
            np.array([1.0, 2.0, 3.0, -1.0]),
            np.array([1.0, 0.0, 3.0, 5.0]),
        ),
        case("maximum-ties-broadcast", tg.maximum, torch.maximum, TIES, np.array([3.0, 2.0, 0.0])),
        case(
            "maximum-python-number",
            lambda a: tg.maximum(a, 0.0),
            lambda a: torch.maximum(a, torch.tensor(0.0, dtype=torch.float64)),
            (2, 3),
        ),
        # where (condition a constant)
        where_case("where", CONDITION, (2, 3), (2, 3)),
        where_case("where-broadcast", CONDITION_COLUMN, (1, 4), ()),
        case(
            "where-tensor-condition",
            lambda a, b: tg.where(a > 0, a, b),
            lambda a, b: torch.where(a > 0, a, b),
            (2, 3),
            (2, 3),
        ),
        case(
            "where-python-number",
            lambda a: tg.where(CONDITION, a, 0.0),
            lambda a: torch.where(torch.as_tensor(CONDITION), a, 0.0),
            (2, 3),
        ),
        # clip / clamp, including elements exactly on the bounds
        case("clip", lambda a: a.clip(-0.5, 0.5), lambda a: a.clamp(-0.5, 0.5), (3, 4)),
        case("clip-edges", lambda a: a.clip(-0.5, 1.0), lambda a: a.clamp(-0.5, 1.0), CLIP_EDGES),
        case("clip-low-only", lambda a: a.clip(0.0, None), lambda a: a.clamp(min=0.0), CLIP_EDGES),
        case(
            "clip-high-only", lambda a: a.clamp(None, 0.5), lambda a: a.clamp(max=0.5), CLIP_EDGES
        ),
        case("clip-0d", lambda a: a.clip(-0.1, 0.1), lambda a: a.clamp(-0.1, 0.1), ()),
        # Tensor bounds, broadcast, each given its share of the gradient (ties go to a)
        case(
            "clamp-min-tensor",
            lambda a, m: a.clamp(min=m),
            lambda a, m: a.clamp(min=m),
            (3, 4),
            (4,),
        ),
        case(
            "clamp-max-tensor",
            lambda a, m: a.clamp(max=m),
            lambda a, m: a.clamp(max=m),
            (3, 4),
            (3, 1),
        ),
        case(
            "clamp-both-tensors",
            lambda a, low, high: a.clamp(low, high + 1.0),
            lambda a, low, high: a.clamp(low, high + 1.0),
            (3, 4),
            (4,),
            (3, 1),
        ),
        case(
            "clamp-tensor-ties",
            lambda a, m: a.clip(m, None),
            lambda a, m: a.clamp(min=m),
            CLIP_EDGES,
            np.array([-2.0, 0.0, 0.0, 0.5, 2.0, 3.0]),
        ),
    ]
)


@pytest.mark.parametrize(("ours", "theirs", "specs", "options"), ELEMENTWISE_CASES)
def test_elementwise(ours, theirs, specs, options):
    check_op(ours, theirs, *specs, **options)


def test_clamp_takes_pytorchs_min_and_max_keywords():
    values = np.array([-2.0, 0.5, 3.0])
    for options in ({"min": 0.0}, {"max": 1.0}, {"min": -1.0, "max": 1.0}):
        x = tg.Tensor(values.copy())
        expected = torch.tensor(values).clamp(**options).numpy()
        np.testing.assert_array_equal(x.clamp(**options).numpy(), expected)
        np.testing.assert_array_equal(x.clamp_(**options).numpy(), expected)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("upstream", [np.nan, np.inf, -np.inf, 2.0])
def test_relu_gradient_is_zero_at_dead_units_whatever_the_upstream_as_torch(dtype, upstream):
    values = np.array([[-1.0, 0.0, 2.0, np.nan], [3.0, -2.0, 0.5, -0.0]], dtype=dtype)
    grad = np.full(values.shape, upstream, dtype=dtype)
    ours, theirs = tg.Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    ours.relu().backward(grad)
    theirs.relu().backward(torch.tensor(grad))
    assert ours.grad.dtype == dtype
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


def test_relu_gradient_at_dead_units_under_create_graph_matches_torch():
    values = np.array([-1.0, 0.0, 2.0, 3.0])
    ours, theirs = tg.Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    (grad,) = tg.grad((ours.relu() ** 3).sum(), [ours], create_graph=True)
    (torch_grad,) = torch.autograd.grad((theirs.relu() ** 3).sum(), [theirs], create_graph=True)
    np.testing.assert_array_equal(grad.numpy(), torch_grad.detach().numpy())
    grad.sum().backward()
    torch_grad.sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
