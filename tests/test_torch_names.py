"""PyTorch's names for what the engine already did (tensor_functions.py, tensor_shape.py,
tensor_reduce.py's norm, tensor_convert.py's type_as): values and gradients against
PyTorch in float64, and a clear error for each misuse."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF  # noqa: N812
from helpers import TIES, case, check_op, same_case

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812

INDEX = np.array([2, 0, 2])


@pytest.mark.parametrize(
    ("ours", "theirs", "specs", "options"),
    [
        same_case("norm", lambda x: x.norm(), (3, 4)),
        same_case("norm_fro_dims", lambda x: x.norm("fro", dim=(0, 1)), (3, 4)),
        same_case("norm_dim", lambda x: x.norm(dim=1), (3, 4)),
        same_case("norm_keepdim", lambda x: x.norm(dim=-1, keepdim=True), (2, 3, 4)),
        same_case("norm_p1", lambda x: x.norm(p=1, dim=0), (3, 4)),
        same_case("norm_p3", lambda x: x.norm(p=3, dim=1), (3, 4)),
        same_case("norm_p0.5", lambda x: x.norm(p=0.5), (5,)),
        same_case("norm_inf", lambda x: x.norm(p=float("inf"), dim=1), (3, 4)),
        same_case("norm_minus_inf", lambda x: x.norm(p=-float("inf")), (3, 4)),
        same_case("norm_0d", lambda x: x.norm(), ()),
        same_case("abs_builtin", lambda x: abs(x), (3,)),
        same_case("view_as", lambda x, y: x.view_as(y), (2, 6), (3, 4)),
        same_case("reshape_as", lambda x, y: x.reshape_as(y) * y, (12,), (3, 4)),
        same_case("expand_as", lambda x, y: x.expand_as(y) * y, (1, 4), (3, 4)),
        same_case("narrow", lambda x: x.narrow(1, 1, 2), (3, 4)),
        same_case("narrow_negative_start", lambda x: x.narrow(0, -2, 2), (3, 4)),
        same_case("unbind", lambda x: x.unbind(1)[2] * x.unbind(1)[0], (3, 4)),
        same_case("unbind_default_dim", lambda x: x.unbind()[1], (3, 4)),
        same_case("diag_of_a_vector", lambda x: x.diag() * 2, (3,)),
        same_case("diag_of_a_vector_above", lambda x: x.diag(1) * 2, (3,)),
        same_case("diag_of_a_vector_below", lambda x: x.diag(-2) * 2, (3,)),
        same_case("diag_of_a_matrix", lambda x: x.diag(), (3, 4)),
        same_case("diag_of_a_matrix_above", lambda x: x.diag(2), (3, 4)),
        same_case("diag_of_a_matrix_below", lambda x: x.diag(-1), (3, 4)),
        same_case("diag_past_the_matrix", lambda x: x.diag(5), (3, 4)),
        case("tg_diag", tg.diag, torch.diag, (4,)),
        same_case("trace", lambda x: x.trace(), (3, 3)),
        same_case("trace_of_a_wide_matrix", lambda x: x.trace(), (2, 5)),
        case("tg_trace", tg.trace, torch.trace, (4, 3)),
        case("minimum", tg.minimum, torch.minimum, (3, 4), (4,)),
        case("minimum_ties", tg.minimum, torch.minimum, TIES, TIES[::-1].copy()),
    ],
)
def test_torch_names_match_torch(ours, theirs, specs, options):
    check_op(ours, theirs, *specs, **options)


def test_norm_of_a_zero_vector_has_pytorchs_zero_gradient():
    for p in (2, 3, "fro"):
        ours = tg.Tensor(np.zeros((2, 3)), requires_grad=True)
        theirs = torch.zeros((2, 3), dtype=torch.float64, requires_grad=True)
        ours.norm(p=p, dim=1).sum().backward()
        theirs.norm(p=p, dim=1).sum().backward()
        np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


WITH_ZEROS = np.array([[1.0, -2.0, 0.0], [3.0, 0.5, -1.0], [0.0, 0.0, 0.0]])


@pytest.mark.parametrize("p", [0, -1, -2, 0.5, 3])
def test_norm_and_normalize_of_any_p_match_torch_at_zero_entries(p):
    check_op(lambda x: x.norm(p=p, dim=1), lambda x: x.norm(p=p, dim=1), WITH_ZEROS)
    check_op(lambda x: F.normalize(x, p=p), lambda x: TF.normalize(x, p=p), WITH_ZEROS)
    check_op(lambda x: F.normalize(x, p=p, dim=0), lambda x: TF.normalize(x, p=p, dim=0), (3, 4))


def test_norm_second_derivative_matches_torch():
    values = np.array([[3.0, -4.0, 1.0], [0.5, 2.0, -1.0]])
    ours = tg.Tensor(values, requires_grad=True)
    theirs = torch.tensor(values, requires_grad=True)
    (grad,) = tg.grad(ours.norm(dim=1).sum(), [ours], create_graph=True)
    (torch_grad,) = torch.autograd.grad(theirs.norm(dim=1).sum(), [theirs], create_graph=True)
    (grad * grad).sum().backward()
    (torch_grad * torch_grad).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), atol=1e-12)


def test_float16_norm_is_summed_in_float32():
    values = np.full(1000, 20.0, dtype=np.float16)  # squares sum to 400,000 > float16's max
    out = tg.Tensor(values).norm()
    assert out.dtype == np.float16
    assert out.item() == torch.tensor(values).norm().item()


def test_norm_refuses_what_pytorch_refuses():
    with pytest.raises(TypeError, match="norm: the input must be a floating-point tensor"):
        tg.Tensor(np.arange(3)).norm()
    with pytest.raises(TypeError, match="norm: p must be a number, 'fro' or inf"):
        tg.Tensor([1.0]).norm(p="nuc")


def test_index_select_matches_torch_and_refuses_negative_indices():
    check_op(
        lambda x: x.index_select(1, tg.Tensor(INDEX)),
        lambda x: x.index_select(1, torch.tensor(INDEX)),
        (3, 4),
    )
    check_op(
        lambda x: x.index_select(0, INDEX), lambda x: x.index_select(0, torch.tensor(INDEX)), (3, 2)
    )
    x = tg.Tensor(np.zeros((3, 4)))
    with pytest.raises(IndexError, match="index_select: an index is out of range for dim 1"):
        x.index_select(1, tg.Tensor(np.array([-1])))
    with pytest.raises(TypeError, match="index must be a 0-d or 1-d integer tensor"):
        x.index_select(0, tg.Tensor(np.array([[0]])))
    with pytest.raises(TypeError, match="index must be a 0-d or 1-d integer tensor"):
        x.index_select(0, tg.Tensor([0.0]))


def test_narrow_and_unbind_name_what_is_out_of_range():
    x = tg.Tensor(np.zeros((3, 4)))
    with pytest.raises(IndexError, match="narrow: start 3 and length 2 do not fit dim 1 of size 4"):
        x.narrow(1, 3, 2)
    with pytest.raises(ValueError, match="narrow: dim 2 is out of range"):
        x.narrow(2, 0, 1)
    with pytest.raises(IndexError, match="unbind: a 0-d tensor"):
        tg.Tensor(1.0).unbind()


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_and_stack_take_pytorchs_dim(dim):
    a, b = np.arange(6.0).reshape(2, 3), np.arange(6.0, 12.0).reshape(2, 3)
    check_op(lambda x, y: tg.cat([x, y], dim=dim), lambda x, y: torch.cat([x, y], dim=dim), a, b)
    check_op(
        lambda x, y: tg.stack([x, y], dim=dim), lambda x, y: torch.stack([x, y], dim=dim), a, b
    )
    check_op(
        lambda x, y: tg.concatenate([x, y], dim=dim),
        lambda x, y: torch.concatenate([x, y], dim=dim),
        a,
        b,
    )


def test_cat_and_stack_default_to_dim_0_and_refuse_axis_with_dim():
    a = tg.Tensor(np.zeros((2, 3)))
    assert tg.cat([a, a]).shape == (4, 3)
    assert tg.stack([a, a]).shape == (2, 2, 3)
    assert tg.stack([a, a], 2).shape == (2, 3, 2)
    with pytest.raises(TypeError, match="stack: pass axis or dim, not both"):
        tg.stack([a, a], axis=0, dim=1)


def test_type_as_takes_the_other_dtype():
    x, y = tg.Tensor([1.5, 2.5], requires_grad=True), tg.Tensor(np.zeros(2))
    out = x.type_as(y)
    assert out.dtype == np.float64
    out.sum().backward()
    assert x.grad.dtype == np.float32
    assert tg.Tensor([1.7]).type_as(tg.Tensor(np.array([1]))).dtype == np.int64


@pytest.mark.parametrize(
    ("ours", "theirs", "specs", "options"),
    [
        case("normalize", F.normalize, TF.normalize, (3, 4)),
        case(
            "normalize_p1_dim0",
            lambda x: F.normalize(x, p=1, dim=0),
            lambda x: TF.normalize(x, p=1, dim=0),
            (3, 4),
        ),
        case("normalize_zero_row", F.normalize, TF.normalize, np.array([[3.0, 4.0], [0.0, 0.0]])),
        case("cosine_similarity", F.cosine_similarity, TF.cosine_similarity, (3, 4), (3, 4)),
        case(
            "cosine_similarity_broadcast_dim",
            lambda a, b: F.cosine_similarity(a, b, dim=-1),
            lambda a, b: TF.cosine_similarity(a, b, dim=-1),
            (2, 3, 4),
            (3, 4),
        ),
        case("bmm", tg.bmm, torch.bmm, (2, 3, 4), (2, 4, 5)),
        case("dot", tg.dot, torch.dot, (4,), (4,)),
        case("outer", tg.outer, torch.outer, (3,), (4,)),
        same_case("method_bmm", lambda a, b: a.bmm(b), (2, 3, 4), (2, 4, 1)),
        same_case("method_outer", lambda a, b: a.outer(b), (3,), (2,)),
    ],
)
def test_vector_functions_match_torch(ours, theirs, specs, options):
    check_op(ours, theirs, *specs, **options)


def test_products_refuse_the_shapes_pytorch_refuses():
    matrix, batch = tg.Tensor(np.zeros((2, 3))), tg.Tensor(np.zeros((2, 3, 4)))
    with pytest.raises(RuntimeError, match=r"bmm: both arguments must be 3-D .* \(2, 3\) and"):
        tg.bmm(matrix, batch)
    with pytest.raises(
        RuntimeError, match=r"one batch size, got shapes \(2, 3, 4\) and \(3, 4, 2\)"
    ):
        batch.bmm(tg.Tensor(np.zeros((3, 4, 2))))
    with pytest.raises(RuntimeError, match="dot: both arguments must be 1-D of one length"):
        tg.dot(tg.Tensor([1.0, 2.0]), tg.Tensor([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match="outer: both arguments must be 1-D"):
        tg.outer(matrix, tg.Tensor([1.0]))
    with pytest.raises(TypeError, match="cosine_similarity: x2 must be a Tensor"):
        F.cosine_similarity(matrix, [1.0, 2.0, 3.0])


def test_diag_of_a_vector_keeps_nans_and_infs_on_the_diagonal():
    """Zeros off the diagonal whatever the vector holds (x * eye would spread a NaN)."""
    values = np.array([np.nan, -np.inf, -1.0])
    ours, theirs = tg.Tensor(values).diag(1), torch.tensor(values).diag(1)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert not np.signbit(ours.numpy()[np.eye(4, k=1) == 0]).any()  # no -0.0


def test_diag_and_trace_of_integers_as_torch():
    values = np.array([[1, 2], [3, 4]], dtype=np.int32)
    assert tg.Tensor(values).trace().dtype == np.int64  # as torch's sum of ints
    np.testing.assert_array_equal(tg.Tensor(values[0]).diag().numpy(), np.diag(values[0]))


def test_diag_and_trace_refuse_what_pytorch_refuses():
    with pytest.raises(ValueError, match="diag: expects a 1-d or 2-d tensor, got shape"):
        tg.ones(2, 2, 2).diag()
    with pytest.raises(TypeError, match="diag: diagonal must be an int, got float"):
        tg.ones(2).diag(1.0)
    with pytest.raises(ValueError, match="trace: expects a matrix"):
        tg.ones(3).trace()


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64", "bool"])
def test_new_tensors_take_the_dtype_and_values_pytorch_gives(dtype):
    ours, theirs = tg.Tensor(np.ones(3, dtype)), torch.ones(3, dtype=getattr(torch, dtype))
    pairs = [
        (ours.new_zeros(2, 3), theirs.new_zeros(2, 3)),
        (ours.new_zeros((2,)), theirs.new_zeros((2,))),
        (ours.new_ones(4), theirs.new_ones(4)),
        (ours.new_full((2, 2), 3), theirs.new_full((2, 2), 3)),
        (ours.new_tensor([1, 0, 2]), theirs.new_tensor([1, 0, 2])),
        (ours.new_zeros(2, dtype=np.float64), theirs.new_zeros(2, dtype=torch.float64)),
    ]
    for mine, expected in pairs:
        assert str(mine.dtype) == str(expected.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(mine.numpy(), expected.numpy())
    assert ours.new_empty(2, 5).shape == (2, 5)


def test_new_tensors_are_leaves_and_refuse_bad_sizes():
    x = tg.Tensor([1.0, 2.0])
    made = x.new_zeros(3, requires_grad=True)
    assert made.requires_grad
    assert made.is_leaf
    values = np.array([1.0, 2.0])
    copy = x.new_tensor(values)
    values[0] = 5.0
    assert copy.tolist() == [1.0, 2.0]  # a copy, as torch's new_tensor
    with pytest.raises(ValueError, match="new_zeros: negative size -1"):
        x.new_zeros(-1)
    with pytest.raises(TypeError, match="new_ones: sizes must be ints"):
        x.new_ones(2.5)
    with pytest.raises(TypeError, match="new_full: fill_value must be a number"):
        x.new_full((2,), "seven")
    with pytest.raises(TypeError, match="only floating-point tensors can require grad"):
        tg.Tensor(np.arange(2)).new_zeros(2, requires_grad=True)


@pytest.mark.parametrize(
    "data",
    [[1, 2], [1.0, 2], [True, False], 3, 3.5, True, [[1, 2], [3, 4.5]], [], [[True, 2]],
     (1, 2), np.arange(3), np.float64(2.0), np.ones(2, np.float16)],
    ids=repr,
)  # fmt: skip
def test_tg_tensor_infers_dtypes_as_torch_tensor(data):
    ours, theirs = tg.tensor(data), torch.tensor(data)
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_tg_tensor_copies_and_takes_requires_grad_and_dtype():
    values = np.array([1.0, 2.0])
    made = tg.tensor(values, requires_grad=True)
    values[0] = 5.0
    assert made.tolist() == [1.0, 2.0]
    assert made.requires_grad
    assert tg.tensor([1, 2], dtype=np.float64).dtype == np.float64
    with pytest.raises(TypeError, match="only floating-point tensors can require grad"):
        tg.tensor([1, 2], requires_grad=True)  # int64, as torch (which refuses too)


def test_comparison_methods_are_the_operators():
    ours, theirs = tg.Tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 3.0])
    other = [3.0, 2.0, 1.0]
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        for operand, torch_operand in ((2.0, 2.0), (tg.Tensor(other), torch.tensor(other))):
            result = getattr(ours, name)(operand)
            expected = getattr(theirs, name)(torch_operand)
            np.testing.assert_array_equal(result.numpy(), expected.numpy())
            assert result.dtype == np.bool_
    assert tg.eq(ours, 2.0).tolist() == [False, True, False]
    with pytest.raises(TypeError, match="eq: cannot compare a Tensor with str"):
        ours.eq("two")


def test_allclose_equal_is_tensor_is_floating_point_as_torch():
    a, b = np.array([1.0, np.nan]), np.array([1.0 + 1e-7, np.nan])
    for equal_nan in (False, True):
        assert tg.Tensor(a).allclose(tg.Tensor(b), equal_nan=equal_nan) == torch.allclose(
            torch.tensor(a), torch.tensor(b), equal_nan=equal_nan
        )
    assert tg.allclose(tg.ones(2), tg.ones(2) * 1.1, rtol=0.2)
    assert tg.equal(tg.ones(2), tg.ones(2))
    assert not tg.equal(tg.ones(2), tg.ones(3))  # another shape: False, not an error
    assert not tg.ones(2).equal(tg.zeros(2))
    assert tg.is_tensor(tg.ones(1))
    assert not tg.is_tensor(np.ones(1))
    assert tg.ones(1).is_floating_point()
    assert not tg.tensor([1]).is_floating_point()
    with pytest.raises(TypeError, match="allclose: expects a Tensor to compare with, got list"):
        tg.ones(2).allclose([1.0, 1.0])
