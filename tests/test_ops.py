"""Every primitive against PyTorch in float64: the output and every input's gradient.

One line per case through `check_op`; shapes include broadcast, batched, 0-d, size-1 and
empty dims. Domains are kept where the function is defined (`low`/`high`).
"""

import numpy as np
import pytest
import torch
from helpers import check_op

import tinygrad_ops as tg


def case(name, ours, theirs, *specs, **options):
    return pytest.param(ours, theirs, specs, options, id=name)


def all_dims(x, axis):
    """torch's `dim` for our `axis` (None reduces every dim)."""
    return tuple(range(x.ndim)) if axis is None else axis


def torch_sum(axis=None, keepdims=False):
    return lambda x: torch.sum(x, dim=all_dims(x, axis), keepdim=keepdims)


def torch_amax(axis=None, keepdims=False):
    return lambda x: torch.amax(x, dim=all_dims(x, axis), keepdim=keepdims)


def torch_amin(axis=None, keepdims=False):
    return lambda x: torch.amin(x, dim=all_dims(x, axis), keepdim=keepdims)


def torch_mean(axis=None, keepdims=False):
    return lambda x: torch.mean(x, dim=all_dims(x, axis), keepdim=keepdims)


def torch_var(axis=None, keepdims=False, ddof=0):
    return lambda x: torch.var(x, dim=all_dims(x, axis), correction=ddof, keepdim=keepdims)


def reversed_permute(x):
    return x.permute(tuple(reversed(range(x.ndim))))


TIES = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
ALL_EQUAL = np.full((2, 3), 0.5)
WITH_ZEROS = np.array([[0.0, 1.5, -2.0], [0.0, 0.3, 4.0]])
BASE_WITH_ZEROS = np.array([0.0, 0.5, 2.0, 0.0, 1.5])
EXPONENT_WITH_ZEROS = np.array([2.0, 0.0, 3.0, 0.0, 1.0])
CLIP_EDGES = np.array([-2.0, -0.5, 0.0, 0.5, 1.0, 3.0])
CONDITION = np.array([[True, False, True], [False, False, True]])
CONDITION_COLUMN = np.array([[True], [False], [True]])
MASK = np.array([[True, False, True], [False, True, True]])
REPEATED = np.array([0, 2, 0, 0])

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

ELEMENTWISE_CASES = (
    [
        case(f"{name}-{shape_name}", ours, theirs, shape_a, shape_b)
        for name, ours, theirs in BINARY
        for shape_name, shape_a, shape_b in BINARY_SHAPES
    ]
    + [
        case(
            f"div-{shape_name}",
            lambda a, b: a / b,
            lambda a, b: a / b,
            shape_a,
            shape_b,
            low=0.5,
            high=2.0,
        )
        for shape_name, shape_a, shape_b in BINARY_SHAPES
    ]
    + [
        case(
            f"pow-{shape_name}",
            lambda a, b: a**b,
            lambda a, b: a**b,
            shape_a,
            shape_b,
            low=0.5,
            high=2.0,
        )
        for shape_name, shape_a, shape_b in BINARY_SHAPES
    ]
    + [
        case("add-python-number-right", lambda a: a + 2, lambda a: a + 2, (3,)),
        case("radd-python-number", lambda a: 2 + a, lambda a: 2 + a, (3,)),
        case("rsub-python-number", lambda a: 2 - a, lambda a: 2 - a, (2, 3)),
        case("rmul-python-number", lambda a: 3 * a, lambda a: 3 * a, (2, 3)),
        case("rdiv-python-number", lambda a: 3 / a, lambda a: 3 / a, (2, 3), low=0.5, high=2.0),
        case("div-python-number", lambda a: a / 4, lambda a: a / 4, (2, 3)),
        case("neg", lambda a: -a, lambda a: -a, (2, 3)),
        case("neg-0d", lambda a: -a, lambda a: -a, ()),
        case("neg-empty", lambda a: -a, lambda a: -a, (0, 2)),
        # pow with a scalar exponent, including base 0 and exponent 0
        case("pow-scalar-2", lambda a: a**2, lambda a: a**2, (2, 3)),
        case("pow-scalar-3-negative-base", lambda a: a**3, lambda a: a**3, (2, 3)),
        case("pow-scalar-0", lambda a: a**0, lambda a: a**0, (2, 3)),
        case("pow-scalar-1", lambda a: a**1, lambda a: a**1, (2, 3)),
        case("pow-scalar-half", lambda a: a**0.5, lambda a: a**0.5, (2, 3), low=0.5, high=2.0),
        case(
            "pow-scalar-negative", lambda a: a**-1.5, lambda a: a**-1.5, (2, 3), low=0.5, high=2.0
        ),
        case("pow-scalar-2-base-0", lambda a: a**2, lambda a: a**2, WITH_ZEROS),
        case("pow-scalar-3-base-0", lambda a: a**3, lambda a: a**3, WITH_ZEROS),
        case("pow-scalar-0-base-0", lambda a: a**0, lambda a: a**0, WITH_ZEROS),
        case("pow-scalar-1-base-0", lambda a: a**1, lambda a: a**1, WITH_ZEROS),
        case("pow-scalar-0d", lambda a: a**3, lambda a: a**3, ()),
        case("pow-scalar-numpy-float", lambda a: a ** np.float64(2.0), lambda a: a**2.0, (3,)),
        # pow with a tensor exponent, including base 0 and exponent 0
        case(
            "pow-tensor-base-0",
            lambda a, b: a**b,
            lambda a, b: a**b,
            BASE_WITH_ZEROS,
            EXPONENT_WITH_ZEROS,
        ),
        case("pow-tensor-exponent-0", lambda a, b: a**b, lambda a, b: a**b, (5,), np.zeros(5)),
        case("rpow-python-base", lambda b: 2.0**b, lambda b: 2.0**b, (2, 3)),
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
        case(
            "where",
            lambda a, b: tg.where(CONDITION, a, b),
            lambda a, b: torch.where(torch.as_tensor(CONDITION), a, b),
            (2, 3),
            (2, 3),
        ),
        case(
            "where-broadcast",
            lambda a, b: tg.where(CONDITION_COLUMN, a, b),
            lambda a, b: torch.where(torch.as_tensor(CONDITION_COLUMN), a, b),
            (1, 4),
            (),
        ),
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
    ]
)

REDUCE_CASES = [
    case("sum-all", lambda a: a.sum(), torch_sum(), (2, 3)),
    case("sum-axis0", lambda a: a.sum(axis=0), torch_sum(0), (2, 3)),
    case("sum-axis-neg", lambda a: a.sum(axis=-1), torch_sum(-1), (2, 3, 4)),
    case("sum-tuple", lambda a: a.sum(axis=(0, 2)), torch_sum((0, 2)), (2, 3, 4)),
    case(
        "sum-tuple-neg-keepdims",
        lambda a: a.sum(axis=(-1, 0), keepdims=True),
        torch_sum((-1, 0), True),
        (2, 3, 4),
    ),
    case("sum-all-keepdims", lambda a: a.sum(keepdims=True), torch_sum(None, True), (2, 3)),
    case("sum-0d", lambda a: a.sum(), torch_sum(), ()),
    case("sum-0d-axis-neg", lambda a: a.sum(axis=-1), torch_sum(-1), ()),
    case(
        "max-0d-axis-neg-keepdims",
        lambda a: a.max(axis=-1, keepdims=True),
        torch_amax(-1, True),
        (),
    ),
    case("sum-0d-keepdims", lambda a: a.sum(keepdims=True), torch_sum(None, True), ()),
    case("sum-size1", lambda a: a.sum(axis=1), torch_sum(1), (3, 1)),
    case("sum-empty-axis", lambda a: a.sum(axis=0), torch_sum(0), (0, 3)),
    case("sum-empty-other-axis", lambda a: a.sum(axis=1), torch_sum(1), (0, 3)),
    case("max-all", lambda a: a.max(), torch_amax(), (2, 3)),
    case("max-axis1", lambda a: a.max(axis=1), torch_amax(1), (2, 3)),
    case(
        "max-tuple-keepdims",
        lambda a: a.max(axis=(0, -1), keepdims=True),
        torch_amax((0, -1), True),
        (2, 3, 4),
    ),
    case("max-0d", lambda a: a.max(), torch_amax(), ()),
    case("max-ties-all", lambda a: a.max(), torch_amax(), TIES),
    case("max-ties-axis1", lambda a: a.max(axis=1), torch_amax(1), TIES),
    case("max-ties-axis0", lambda a: a.max(axis=0), torch_amax(0), TIES),
    case("max-all-equal", lambda a: a.max(axis=-1, keepdims=True), torch_amax(-1, True), ALL_EQUAL),
    case("min-all", lambda a: a.min(), torch_amin(), (2, 3)),
    case("min-axis-neg", lambda a: a.min(axis=-2), torch_amin(-2), (2, 3, 4)),
    case("min-ties-axis0", lambda a: a.min(axis=0), torch_amin(0), TIES),
    case("min-ties-all", lambda a: a.min(), torch_amin(), TIES),
    case("min-size1", lambda a: a.min(axis=0), torch_amin(0), (1, 4)),
    case("mean-all", lambda a: a.mean(), torch_mean(), (2, 3)),
    case("mean-axis", lambda a: a.mean(axis=1, keepdims=True), torch_mean(1, True), (2, 3)),
    case("mean-tuple-neg", lambda a: a.mean(axis=(-1, -3)), torch_mean((-1, -3)), (2, 3, 4)),
    case("mean-0d", lambda a: a.mean(), torch_mean(), ()),
    case("var-all", lambda a: a.var(), torch_var(), (3, 4)),
    case("var-axis-ddof1", lambda a: a.var(axis=0, ddof=1), torch_var(0, ddof=1), (3, 4)),
    case(
        "var-tuple-keepdims",
        lambda a: a.var(axis=(0, 2), keepdims=True),
        torch_var((0, 2), True),
        (2, 3, 4),
    ),
    case("var-neg-axis-ddof1", lambda a: a.var(axis=-1, ddof=1), torch_var(-1, ddof=1), (2, 5)),
]

SHAPE_CASES = [
    case("reshape", lambda a: a.reshape(3, 2), lambda a: a.reshape(3, 2), (2, 3)),
    case("reshape-minus1", lambda a: a.reshape(-1), lambda a: a.reshape(-1), (2, 3, 4)),
    case("reshape-tuple", lambda a: a.reshape((4, 1, 6)), lambda a: a.reshape(4, 1, 6), (2, 3, 4)),
    case("reshape-0d-to-size1", lambda a: a.reshape(1, 1), lambda a: a.reshape(1, 1), ()),
    case("reshape-to-0d", lambda a: a.reshape(()), lambda a: a.reshape(()), (1, 1)),
    case("reshape-empty", lambda a: a.reshape(0, 4), lambda a: a.reshape(0, 4), (2, 0)),
    case("transpose", lambda a: a.transpose(), reversed_permute, (2, 3)),
    case("transpose-axes", lambda a: a.transpose(1, 2, 0), lambda a: a.permute(1, 2, 0), (2, 3, 4)),
    case(
        "transpose-neg-axes",
        lambda a: a.transpose((-1, 0, 1)),
        lambda a: a.permute(2, 0, 1),
        (2, 3, 4),
    ),
    case("swapaxes", lambda a: a.swapaxes(0, 2), lambda a: a.transpose(0, 2), (2, 3, 4)),
    case("swapaxes-neg", lambda a: a.swapaxes(-1, -2), lambda a: a.transpose(-1, -2), (2, 3, 4)),
    case("T-matrix", lambda a: a.T, reversed_permute, (2, 3)),
    case("T-3d", lambda a: a.T, reversed_permute, (2, 3, 4)),
    case("T-vector", lambda a: a.T, reversed_permute, (3,)),
    case("T-0d", lambda a: a.T, reversed_permute, ()),
    case(
        "broadcast_to-row", lambda a: a.broadcast_to((2, 3)), lambda a: a.broadcast_to((2, 3)), (3,)
    ),
    case(
        "broadcast_to-size1",
        lambda a: a.broadcast_to((4, 3)),
        lambda a: a.broadcast_to((4, 3)),
        (1, 3),
    ),
    case("broadcast_to-0d", lambda a: a.broadcast_to((2, 2)), lambda a: a.broadcast_to((2, 2)), ()),
    case(
        "broadcast_to-inner",
        lambda a: a.broadcast_to((5, 2, 3, 4)),
        lambda a: a.broadcast_to((5, 2, 3, 4)),
        (2, 1, 1),
    ),
    case(
        "broadcast_to-empty",
        lambda a: a.broadcast_to((0, 3)),
        lambda a: a.broadcast_to((0, 3)),
        (1, 3),
    ),
    case(
        "broadcast_to-same",
        lambda a: a.broadcast_to((2, 3)),
        lambda a: a.broadcast_to((2, 3)),
        (2, 3),
    ),
    case("stack", lambda a, b: tg.stack([a, b]), lambda a, b: torch.stack([a, b]), (2, 3), (2, 3)),
    case(
        "stack-axis1",
        lambda a, b, c: tg.stack([a, b, c], axis=1),
        lambda a, b, c: torch.stack([a, b, c], dim=1),
        (2, 3),
        (2, 3),
        (2, 3),
    ),
    case(
        "stack-axis-neg",
        lambda a, b: tg.stack([a, b], axis=-1),
        lambda a, b: torch.stack([a, b], dim=-1),
        (2, 3),
        (2, 3),
    ),
    case("stack-0d", lambda a, b: tg.stack([a, b]), lambda a, b: torch.stack([a, b]), (), ()),
    case("stack-one", lambda a: tg.stack([a]), lambda a: torch.stack([a]), (3,)),
    case(
        "stack-same-tensor-twice",
        lambda a: tg.stack([a, a * 2]),
        lambda a: torch.stack([a, a * 2]),
        (3,),
    ),
    case(
        "concatenate",
        lambda a, b: tg.concatenate([a, b]),
        lambda a, b: torch.cat([a, b]),
        (2, 3),
        (4, 3),
    ),
    case(
        "concatenate-axis-neg",
        lambda a, b: tg.concatenate([a, b], axis=-1),
        lambda a, b: torch.cat([a, b], dim=-1),
        (2, 3),
        (2, 1),
    ),
    case(
        "concatenate-empty-piece",
        lambda a, b, c: tg.concatenate([a, b, c], axis=1),
        lambda a, b, c: torch.cat([a, b, c], dim=1),
        (2, 0),
        (2, 3),
        (2, 2),
    ),
    case(
        "concatenate-same-tensor",
        lambda a: tg.concatenate([a, a]),
        lambda a: torch.cat([a, a]),
        (3,),
    ),
]

GETITEM_CASES = [
    case("int", lambda a: a[1], lambda a: a[1], (3, 4)),
    case("negative-int", lambda a: a[-1, -2], lambda a: a[-1, -2], (3, 4)),
    case("slice", lambda a: a[1:3], lambda a: a[1:3], (4, 2)),
    case("slice-step", lambda a: a[:, ::2], lambda a: a[:, ::2], (3, 5)),
    case("negative-step", lambda a: a[::-1], lambda a: torch.flip(a, [0]), (4, 2)),
    case("negative-step-2", lambda a: a[:, ::-2], lambda a: torch.flip(a, [1])[:, ::2], (3, 5)),
    case("none", lambda a: a[None], lambda a: a[None], (2, 3)),
    case("none-middle", lambda a: a[:, None, 1:], lambda a: a[:, None, 1:], (2, 3)),
    case("ellipsis", lambda a: a[..., 1], lambda a: a[..., 1], (2, 3, 4)),
    case("ellipsis-none", lambda a: a[0, ..., None], lambda a: a[0, ..., None], (2, 3, 4)),
    case("empty-slice", lambda a: a[2:2], lambda a: a[2:2], (4, 3)),
    case("0d-empty-tuple", lambda a: a[()], lambda a: a[()], ()),
    case("int-array", lambda a: a[np.array([2, 0])], lambda a: a[torch.tensor([2, 0])], (3, 2)),
    case(
        "int-array-repeated", lambda a: a[REPEATED], lambda a: a[torch.as_tensor(REPEATED)], (3, 2)
    ),
    case("int-list-repeated", lambda a: a[[1, 1, 1]], lambda a: a[[1, 1, 1]], (3,)),
    case(
        "int-array-2d-repeated",
        lambda a: a[np.array([[0, 1], [1, 1]])],
        lambda a: a[torch.tensor([[0, 1], [1, 1]])],
        (2, 3),
    ),
    case(
        "int-arrays-pair-repeated",
        lambda a: a[np.array([0, 0, 1]), np.array([2, 2, 0])],
        lambda a: a[torch.tensor([0, 0, 1]), torch.tensor([2, 2, 0])],
        (2, 3),
    ),
    case(
        "int-array-second-axis",
        lambda a: a[:, np.array([1, 1, 0])],
        lambda a: a[:, torch.tensor([1, 1, 0])],
        (2, 3),
    ),
    case(
        "int-array-negative",
        lambda a: a[np.array([-1, -1, 0])],
        lambda a: a[torch.tensor([-1, -1, 0])],
        (3,),
    ),
    case(
        "tensor-index",
        lambda a: a[tg.Tensor(np.array([2, 2, 1]))],
        lambda a: a[torch.tensor([2, 2, 1])],
        (3, 2),
    ),
    case("arange-index", lambda a: a[tg.arange(2)], lambda a: a[torch.arange(2)], (3,)),
    case("bool-mask", lambda a: a[MASK], lambda a: a[torch.as_tensor(MASK)], (2, 3)),
    case(
        "bool-mask-rows",
        lambda a: a[np.array([True, False, True])],
        lambda a: a[torch.tensor([True, False, True])],
        (3, 2),
    ),
    case(
        "int-arrays-not-adjacent",
        lambda a: a[np.array([0, 1]), :, np.array([1, 1])],
        lambda a: a[torch.tensor([0, 1]), :, torch.tensor([1, 1])],
        (2, 3, 4),
    ),
    case(
        "int-arrays-broadcast",
        lambda a: a[np.array([[0], [1]]), np.array([1, 1, 0])],
        lambda a: a[torch.tensor([[0], [1]]), torch.tensor([1, 1, 0])],
        (2, 3),
    ),
    case(
        "empty-int-array",
        lambda a: a[np.array([], dtype=np.int64)],
        lambda a: a[torch.tensor([], dtype=torch.int64)],
        (3, 2),
    ),
    case(
        "mask-all-false",
        lambda a: a[np.zeros((3, 2), dtype=bool)],
        lambda a: a[torch.zeros((3, 2), dtype=torch.bool)],
        (3, 2),
    ),
    case("0d-none", lambda a: a[None], lambda a: a[None], ()),
    case("0d-ellipsis", lambda a: a[...], lambda a: a[...], ()),
    case("numpy-int-scalar", lambda a: a[np.int64(1)], lambda a: a[1], (3, 2)),
    case("bool-tensor-mask", lambda a: a[a > 0], lambda a: a[a > 0], (3, 4)),
]

MATMUL_CASES = [
    case("vector-vector", lambda a, b: a @ b, torch.matmul, (3,), (3,)),
    case("vector-matrix", lambda a, b: a @ b, torch.matmul, (3,), (3, 4)),
    case("matrix-vector", lambda a, b: a @ b, torch.matmul, (2, 3), (3,)),
    case("matrix-matrix", lambda a, b: a @ b, torch.matmul, (2, 3), (3, 4)),
    case("method", lambda a, b: a.matmul(b), torch.matmul, (2, 3), (3, 4)),
    case("batched", lambda a, b: a @ b, torch.matmul, (5, 2, 3), (5, 3, 4)),
    case("broadcast-batch", lambda a, b: a @ b, torch.matmul, (2, 1, 3, 4), (5, 4, 2)),
    case("batched-matrix", lambda a, b: a @ b, torch.matmul, (2, 3, 4), (4, 2)),
    case("matrix-batched", lambda a, b: a @ b, torch.matmul, (3, 4), (2, 4, 2)),
    case("vector-batched", lambda a, b: a @ b, torch.matmul, (3,), (5, 3, 4)),
    case("batched-vector", lambda a, b: a @ b, torch.matmul, (5, 2, 3), (3,)),
    case("size1", lambda a, b: a @ b, torch.matmul, (1, 1), (1, 1)),
    case("empty-rows", lambda a, b: a @ b, torch.matmul, (0, 3), (3, 4)),
    case("empty-inner", lambda a, b: a @ b, torch.matmul, (2, 0), (0, 4)),
    case(
        "rmatmul-array",
        lambda b: np.ones((2, 3)) @ b,
        lambda b: torch.ones(2, 3, dtype=torch.float64) @ b,
        (3, 4),
    ),
]


@pytest.mark.parametrize(("ours", "theirs", "specs", "options"), ELEMENTWISE_CASES)
def test_elementwise(ours, theirs, specs, options):
    check_op(ours, theirs, *specs, **options)


@pytest.mark.parametrize(("ours", "theirs", "specs", "options"), REDUCE_CASES)
def test_reduce(ours, theirs, specs, options):
    check_op(ours, theirs, *specs, **options)


@pytest.mark.parametrize(("ours", "theirs", "specs", "options"), SHAPE_CASES)
def test_shape(ours, theirs, specs, options):
    check_op(ours, theirs, *specs, **options)


@pytest.mark.parametrize(("ours", "theirs", "specs", "options"), GETITEM_CASES)
def test_getitem(ours, theirs, specs, options):
    check_op(ours, theirs, *specs, **options)


@pytest.mark.parametrize(("ours", "theirs", "specs", "options"), MATMUL_CASES)
def test_matmul(ours, theirs, specs, options):
    check_op(ours, theirs, *specs, **options)
