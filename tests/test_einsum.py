"""einsum against PyTorch (float64): values and every operand's gradient over matrix
products, batched products with ellipses and broadcasting, traces and diagonals, outer
products, sums, 0-d and empty operands; finite differences, second order, errors."""

import numpy as np
import pytest
import torch
from helpers import check_op, random_inputs

import tinygrad_ops as tg


def case(equation, *shapes):
    return pytest.param(
        equation, shapes, id=equation.replace("->", "_to_").replace(",", "_") or "empty"
    )


CASES = [
    case("ij,jk->ik", (2, 3), (3, 4)),
    case("ij,jk", (2, 3), (3, 4)),
    case("bij,bjk->bik", (2, 3, 4), (2, 4, 5)),
    case("...ij,...jk->...ik", (2, 1, 3, 4), (5, 4, 2)),
    case("...ij,jk->...ik", (2, 3, 4), (4, 2)),
    case("ij->ji", (2, 3)),
    case("ij->i", (2, 3)),
    case("ij->", (2, 3)),
    case("ii->", (3, 3)),
    case("ii->i", (3, 3)),
    case("iij->ij", (3, 3, 2)),
    case("i,j->ij", (3,), (4,)),
    case("i,i->", (4,), (4,)),
    case("i,i", (4,), (4,)),
    case("bi,bi->b", (3, 4), (3, 4)),
    case("ij,ij->ij", (1, 3), (2, 3)),
    case("ijk,jl,kl->il", (2, 3, 4), (3, 5), (4, 5)),
    case(",ij->ij", (), (2, 3)),
    case("ij,jk->ik", (0, 3), (3, 2)),
    case("i->", (0,)),
    case("ij...,ij...->ij", (2, 3, 4, 2), (2, 3, 4, 2)),  # the ellipsis dims summed, as torch
    case("...i->i", (2, 3)),
    case("i...j,ji...->...", (2, 3, 4, 5), (5, 2, 3, 4)),
]


@pytest.mark.parametrize(("equation", "shapes"), CASES)
def test_against_torch(equation, shapes):
    check_op(
        lambda *t: tg.einsum(equation, *t),
        lambda *t: torch.einsum(equation, *t),
        *shapes,
    )


def test_a_list_of_operands_is_accepted_as_in_torch():
    a, b = random_inputs((2, 3), (3,))
    out = tg.einsum("ij,j->i", [tg.Tensor(a), tg.Tensor(b)])
    np.testing.assert_allclose(out.numpy(), np.einsum("ij,j->i", a, b))


@pytest.mark.parametrize(
    ("equation", "shapes"), [("ii,ij->j", ((3, 3), (3, 2))), ("bij,bj->bi", ((2, 3, 3), (2, 3)))]
)
def test_finite_differences(equation, shapes):
    tensors = [tg.Tensor(array, requires_grad=True) for array in random_inputs(*shapes, seed=4)]
    assert tg.gradcheck(lambda *t: tg.einsum(equation, *t), tensors)


def test_second_order_matches_torch():
    arrays = random_inputs((3, 3), (3, 2), seed=5)
    ours = [tg.Tensor(array, requires_grad=True) for array in arrays]
    theirs = [torch.tensor(array, requires_grad=True) for array in arrays]
    out = (tg.einsum("ii,ij->ij", *ours) ** 2).sum()
    grads = tg.grad(out, ours, create_graph=True)
    sum((grad * grad).sum() for grad in grads).backward()
    expected = (torch.einsum("ii,ij->ij", *theirs) ** 2).sum()
    torch_grads = torch.autograd.grad(expected, theirs, create_graph=True)
    sum((grad * grad).sum() for grad in torch_grads).backward()
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-9)


@pytest.mark.parametrize(
    ("equation", "shapes", "message"),
    [
        ("ij,jk->ik", ((2, 3),), "2 operand"),
        ("ij->i", ((2, 3, 4),), "do not fit"),
        ("i1->i", ((2, 3),), "letters"),
        ("ij->k", ((2, 3),), "in no operand"),
        ("ij->ii", ((2, 2),), "repeated"),
        ("...i...->i", ((2, 3),), "at most one '...'"),
        ("ij,jk->ik", ((2, 3), (4, 2)), "einsum"),
    ],
)
def test_errors_name_the_op(equation, shapes, message):
    with pytest.raises(ValueError, match=message):
        tg.einsum(equation, *(tg.zeros(*shape) for shape in shapes))
