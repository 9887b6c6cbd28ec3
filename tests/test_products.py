"""cross, kron, cdist, addmm and diff against torch in float64 (values and every input's
gradient) and central finite differences."""

import numpy as np
import pytest
import torch
from helpers import check_op

import tinygrad_ops as tg

RNG = np.random.default_rng(8)


@pytest.mark.parametrize(
    ("ours", "theirs", "shapes"),
    [
        pytest.param(lambda a, b: tg.cross(a, b), lambda a, b: torch.cross(a, b, dim=1),
                     ((4, 3, 2), (4, 3, 2)), id="cross-first-size-3"),
        pytest.param(lambda a, b: a.cross(b, -1), torch.linalg.cross, ((5, 3), (1, 3)),
                     id="cross-broadcast"),
        pytest.param(tg.kron, torch.kron, ((2, 3), (4, 2)), id="kron"),
        pytest.param(tg.kron, torch.kron, ((2, 3, 2), (3, 2)), id="kron-3d-2d"),
        pytest.param(lambda a, b: a.kron(b), torch.kron, ((3,), (2,)), id="kron-1d"),
        pytest.param(tg.cdist, torch.cdist, ((2, 4, 3), (2, 5, 3)), id="cdist"),
        pytest.param(lambda a, b: tg.cdist(a, b, 1.0), lambda a, b: torch.cdist(a, b, 1.0),
                     ((4, 3), (5, 3)), id="cdist-p1"),
        pytest.param(lambda a, b: tg.cdist(a, b, 3.0), lambda a, b: torch.cdist(a, b, 3.0),
                     ((4, 3), (5, 3)), id="cdist-p3"),
        pytest.param(lambda a, b: tg.cdist(a, b, 0.0), lambda a, b: torch.cdist(a, b, 0.0),
                     ((4, 3), (5, 3)), id="cdist-p0"),
        pytest.param(lambda a, b: tg.cdist(a, b, np.inf), lambda a, b: torch.cdist(a, b, np.inf),
                     ((4, 3), (5, 3)), id="cdist-inf"),
        pytest.param(lambda i, a, b: tg.addmm(i, a, b, beta=0.5, alpha=2.0),
                     lambda i, a, b: torch.addmm(i, a, b, beta=0.5, alpha=2.0),
                     ((4,), (3, 2), (2, 4)), id="addmm"),
        pytest.param(lambda i, a, b: i.addmm(a, b), lambda i, a, b: i.addmm(a, b),
                     ((3, 4), (3, 2), (2, 4)), id="addmm-method"),
        pytest.param(lambda x: tg.diff(x, 2, 0), lambda x: torch.diff(x, 2, 0), ((5, 3),),
                     id="diff-n2"),
        pytest.param(lambda x, p, a: x.diff(1, 1, p, a), lambda x, p, a: x.diff(1, 1, p, a),
                     ((2, 3), (2, 1), (2, 2)), id="diff-prepend-append"),
        pytest.param(lambda x: tg.diff(x, 5), lambda x: torch.diff(x, 5), ((4,),), id="diff-n5"),
    ],
)  # fmt: skip
def test_products_against_torch(ours, theirs, shapes):
    check_op(ours, theirs, *shapes, atol=1e-12)


def test_cdist_of_coinciding_rows_has_a_zero_gradient():
    rows = RNG.standard_normal((4, 3))
    other = np.concatenate([rows[:2], RNG.standard_normal((2, 3))])
    check_op(tg.cdist, torch.cdist, rows, other, atol=1e-12)


def test_addmm_with_beta_zero_ignores_the_input():
    check_op(
        lambda i, a, b: tg.addmm(i, a, b, beta=0),
        lambda i, a, b: torch.addmm(i, a, b, beta=0),
        np.full((3, 4), np.nan),
        (3, 2),
        (2, 4),
    )


def test_diff_of_integers_and_booleans():
    assert tg.diff(tg.tensor([1, 4, 9])).tolist() == [3, 5]
    flags = [True, False, False, True]
    assert tg.diff(tg.tensor(flags)).tolist() == torch.diff(torch.tensor(flags)).tolist()


def test_finite_differences():
    a, b = (tg.Tensor(RNG.standard_normal((3, 3)), requires_grad=True) for _ in range(2))
    assert tg.gradcheck(lambda a, b: tg.cross(a, b, dim=1), (a, b))
    assert tg.gradcheck(tg.kron, (a, b))
    assert tg.gradcheck(tg.cdist, (a, b))


def test_refusals():
    with pytest.raises(RuntimeError, match="size 3"):
        tg.cross(tg.ones(2, 4), tg.ones(2, 4))
    with pytest.raises(RuntimeError, match="same M"):
        tg.cdist(tg.ones(2, 3), tg.ones(2, 4))
    with pytest.raises(RuntimeError, match="multiply"):
        tg.addmm(tg.ones(2), tg.ones(2, 3), tg.ones(2, 3))
    with pytest.raises(RuntimeError, match="non-negative"):
        tg.diff(tg.ones(3), n=-1)
