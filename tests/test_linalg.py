"""Matrix products and linear (ops/linalg.py) against PyTorch in float64: vectors, matrices,
batched and broadcast batches, one line per case through `check_op`."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF  # noqa: N812 (the conventional alias)
from helpers import case, check_op

from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)

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


@pytest.mark.parametrize(("ours", "theirs", "specs", "options"), MATMUL_CASES)
def test_matmul(ours, theirs, specs, options):
    check_op(ours, theirs, *specs, **options)


# -- linear through tg.functional --------------------------------------------------------------


@pytest.mark.parametrize(
    ("x_shape", "bias"), [((4, 3), True), ((2, 5, 3), True), ((3,), True), ((4, 3), False)]
)
def test_linear_matches_torch(x_shape, bias):
    specs = [x_shape, (2, 3)] + ([(2,)] if bias else [])
    check_op(F.linear, TF.linear, *specs)
