"""gather, scatter, scatter_add, masked_fill, sort, argsort, topk, one_hot and nonzero against
PyTorch (float64): values and every input's gradient, one line per case through `check_op`;
finite differences and second order for the differentiable ones; the errors."""

import numpy as np
import pytest
import torch
from helpers import check_op, random_inputs

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)


def case(name, ours, theirs, *specs):
    return pytest.param(ours, theirs, specs, id=name)


def same_case(name, function, *specs):
    """A case whose expression reads the same on our tensors and on torch's."""
    return case(name, function, function, *specs)


ROWS = np.array([[0, 2], [1, 1], [3, 0]])  # (3, 2) indices into dim 1 of a (3, 4) input
REPEATS = np.array([[0, 0, 1, 0], [2, 2, 2, 1]])  # (2, 4) indices into dim 0 of (3, 4)
DISTINCT = np.array([[2, 0, 1, 1], [0, 2, 0, 2]])  # no column repeats a row: scatter is exact
SMALLER = np.array([[1, 0, 3], [2, 2, 0]])  # (2, 3): smaller than (3, 4) in dim 0 too
BATCHED = np.random.default_rng(3).integers(0, 5, size=(2, 3, 4))
EMPTY = np.zeros((3, 0), dtype=np.int64)
MASK = np.array([[True, False, True, False]])
SCALAR_INDEX = np.array(0)

CASES = [
    same_case("gather_dim1", lambda x, i: x.gather(1, i), (3, 4), ROWS),
    case(
        "gather_repeats",
        lambda x, i: tg.gather(x, 0, i),
        lambda x, i: torch.gather(x, 0, i),
        (3, 4),
        REPEATS,
    ),
    same_case("gather_smaller", lambda x, i: x.gather(1, i), (3, 4), SMALLER),
    same_case("gather_batched", lambda x, i: x.gather(-1, i), (2, 3, 5), BATCHED),
    same_case("gather_empty", lambda x, i: x.gather(1, i), (3, 4), EMPTY),
    same_case("gather_0d", lambda x, i: x.gather(0, i), (), SCALAR_INDEX),
    same_case("scatter_src", lambda x, i, s: x.scatter(0, i, s), (3, 4), DISTINCT, (2, 4)),
    same_case("scatter_value", lambda x, i: x.scatter(0, i, value=2.5), (3, 4), DISTINCT),
    same_case(
        "scatter_add_repeats", lambda x, i, s: x.scatter_add(0, i, s), (3, 4), REPEATS, (2, 4)
    ),
    case(
        "scatter_add_batched",
        lambda x, i, s: tg.scatter_add(x, 2, i, s),
        lambda x, i, s: torch.scatter_add(x, 2, i, s),
        (2, 3, 5),
        BATCHED,
        (2, 3, 4),
    ),
    same_case("scatter_add_0d", lambda x, i, s: x.scatter_add(0, i, s), (), SCALAR_INDEX, ()),
    same_case("masked_fill_broadcast", lambda x, m: x.masked_fill(m, -1.5), (3, 4), MASK),
    case(
        "masked_fill_tensor_value",
        lambda x, m, v: tg.masked_fill(x, m, v),
        lambda x, m, v: torch.masked_fill(x, m, v),
        (3, 4),
        MASK,
        (),
    ),
    same_case("masked_fill_0d", lambda x, m: x.masked_fill(m, 0.0), (), np.array(True)),
    same_case("sort", lambda x: x.sort().values, (3, 5)),
    case(
        "sort_dim0_desc",
        lambda x: tg.sort(x, 0, True)[0],
        lambda x: torch.sort(x, 0, True)[0],
        (4, 3),
    ),
    same_case("sort_0d", lambda x: x.sort()[0], ()),
    same_case("sort_empty", lambda x: x.sort()[0], (2, 0)),
    same_case("topk", lambda x: x.topk(2).values, (3, 5)),
    case(
        "topk_smallest_dim0",
        lambda x: tg.topk(x, 3, dim=0, largest=False)[0],
        lambda x: torch.topk(x, 3, dim=0, largest=False)[0],
        (4, 2),
    ),
    same_case("topk_all", lambda x: x.topk(4).values, (2, 4)),
    same_case("topk_0d", lambda x: x.topk(1).values, ()),
]


@pytest.mark.parametrize(("ours", "theirs", "specs"), CASES)
def test_against_torch(ours, theirs, specs):
    check_op(ours, theirs, *specs)


def test_indices_of_sort_argsort_and_topk_match_torch():
    (x,) = random_inputs((4, 6), seed=4)
    ours, theirs = tg.Tensor(x), torch.tensor(x)
    for descending in (False, True):
        expected = torch.sort(theirs, 1, descending).indices.numpy()
        np.testing.assert_array_equal(ours.sort(1, descending).indices.numpy(), expected)
        np.testing.assert_array_equal(ours.argsort(1, descending).numpy(), expected)
    np.testing.assert_array_equal(ours.topk(3, 0).indices.numpy(), theirs.topk(3, 0).indices)
    assert ours.sort().indices.dtype == np.int64


def test_ties_keep_their_order_and_nan_sorts_last():
    x = np.array([2.0, 1.0, np.nan, 2.0, 1.0, 0.0])
    for descending in (False, True):
        expected = torch.sort(torch.tensor(x), descending=descending, stable=True)
        got = tg.sort(tg.Tensor(x), descending=descending)
        np.testing.assert_array_equal(got.indices.numpy(), expected.indices.numpy())
        np.testing.assert_array_equal(got.values.numpy(), expected.values.numpy())


def test_sort_of_an_integer_tensor_stays_integer():
    values, indices = tg.sort(tg.Tensor(np.array([3, -1, 2])))
    assert values.dtype == np.int64
    np.testing.assert_array_equal(values.numpy(), [-1, 2, 3])
    np.testing.assert_array_equal(indices.numpy(), [1, 2, 0])


@pytest.mark.parametrize(
    ("values", "classes"),
    [
        (np.array([0, 2, 1]), 3),
        (np.array([[1, 0], [3, 3]]), -1),
        (np.array(2), 4),
        (np.zeros(0, int), 2),
    ],
)
def test_one_hot_matches_torch(values, classes):
    expected = torch.nn.functional.one_hot(torch.tensor(values), classes).numpy()
    got = F.one_hot(tg.Tensor(values), classes)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got.numpy(), expected)


@pytest.mark.parametrize(
    "values",
    [
        np.array([[0.0, 1.5], [-2.0, 0.0]]),
        np.zeros((2, 0)),
        np.array(3.0),
        np.array(0.0),
        np.array([True, False, True]),
    ],
)
def test_nonzero_matches_torch(values):
    expected = torch.nonzero(torch.tensor(values))
    got = tg.nonzero(tg.Tensor(values))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    for mine, theirs in zip(
        tg.Tensor(values).nonzero(as_tuple=True),
        torch.nonzero(torch.tensor(values), as_tuple=True),
        strict=True,
    ):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


def test_float_tensors_of_whole_numbers_are_accepted_as_indices():
    """tg.Tensor([0, 2]) is float32 here; PyTorch's would be int64: both index the same."""
    x = tg.Tensor([[1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(x.gather(1, tg.Tensor([[0, 2]])).numpy(), [[1.0, 3.0]])
    np.testing.assert_array_equal(F.one_hot(tg.Tensor([1, 0]), 2).numpy(), [[0, 1], [1, 0]])


@pytest.mark.parametrize(
    "function",
    [
        lambda x, s: x.gather(1, np.array([[0, 0], [2, 1]])) * s[:, :2],
        lambda x, s: x.scatter(1, np.array([[0, 1], [2, 0]]), s),
        lambda x, s: x.scatter_add(0, np.array([[1, 1, 0], [1, 0, 0]]), s),
        lambda x, s: x.sort(1, descending=True).values * s.sum(),
        lambda x, s: x.topk(2, 0).values * s,
        lambda x, s: x.masked_fill(np.array([True, False, True]), 0.0) * s.sum(),
    ],
)
def test_finite_differences(function):
    x, s = (tg.Tensor(array, requires_grad=True) for array in random_inputs((2, 3), (2, 3), seed=1))
    assert tg.gradcheck(function, (x, s))


def test_a_src_larger_than_the_index_is_read_in_its_leading_block():
    """PyTorch's forward reads src[:2, :1] here (its backward then fails on the shapes);
    ours gives the unread part of src a zero gradient, checked by finite differences."""
    x, src = random_inputs((3, 4), (3, 3), seed=2)
    index = ROWS[:, :1]
    expected = torch.scatter(torch.tensor(x), 1, torch.tensor(index), torch.tensor(src))
    np.testing.assert_array_equal(
        tg.scatter(tg.Tensor(x), 1, index, tg.Tensor(src)).numpy(), expected
    )
    tensors = [tg.Tensor(array, requires_grad=True) for array in (x, src)]
    assert tg.gradcheck(lambda a, b: a.scatter(1, index, b), tensors)
    assert tg.gradcheck(lambda a, b: a.scatter_add(1, index, b), tensors)


def test_second_order_through_gather_and_scatter_add():
    arrays = random_inputs((3, 4), (3, 2), seed=6)
    ours = [tg.Tensor(array, requires_grad=True) for array in arrays]
    theirs = [torch.tensor(array, requires_grad=True) for array in arrays]

    def loss(x, s, index, module):
        return (module.scatter_add(x, 1, index, s * x.gather(1, index)) ** 3).sum()

    (dx,) = tg.grad(loss(*ours, ROWS, tg), [ours[0]], create_graph=True)
    (dx * dx).sum().backward()
    (tx,) = torch.autograd.grad(
        loss(*theirs, torch.tensor(ROWS), torch), [theirs[0]], create_graph=True
    )
    (tx * tx).sum().backward()
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-9)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda x: x.gather(1, np.array([[0.5, 1.0]])), TypeError, "must hold integers"),
        (lambda x: x.gather(1, np.array([[0, 3]])), IndexError, "out of bounds"),
        (lambda x: x.gather(1, np.array([[0, -1]])), IndexError, "out of bounds"),
        (lambda x: x.gather(1, np.array([0, 1])), ValueError, "as many dims"),
        (lambda x: x.gather(2, np.array([[0]])), ValueError, "dim 2 is out of range"),
        (lambda x: x.gather(1, np.zeros((3, 1), int)), ValueError, "larger than the input"),
        (lambda x: x.scatter(1, np.array([[0]]), tg.zeros(1, 1).float()), TypeError, "dtype"),
        (lambda x: x.scatter(1, np.array([[0]])), TypeError, "exactly one"),
        (lambda x: x.scatter_add(1, np.array([[0]]), 1.0), TypeError, "src must be a tensor"),
        (lambda x: x.masked_fill(np.array([1, 0, 1]), 0.0), TypeError, "boolean"),
        (lambda x: x.masked_fill(np.ones((3, 3), bool), 0.0), ValueError, "broadcast"),
        (lambda x: x.topk(4), ValueError, "k must be"),
        (lambda x: x.sort(dim=1, axis=1), TypeError, "not both"),
        (lambda x: F.one_hot(tg.Tensor(np.array([0, 3])), 2), ValueError, "num_classes"),
        (lambda x: F.one_hot(tg.Tensor(np.array([-1])), 2), ValueError, "non-negative"),
    ],
)
def test_errors_name_the_op_and_argument(call, error, message):
    with pytest.raises(error, match=message):
        call(tg.Tensor(np.zeros((2, 3))))


@pytest.mark.parametrize(
    ("shape", "index"),
    [((3,), 0), ((2, 3), (1, 2)), ((2, 3), (Ellipsis, 1, 2)), ((), ())],
    ids=["1-d", "2-d", "ellipsis", "0-d"],
)
def test_one_element_is_a_view_that_in_place_ops_write_through(shape, index):
    """numpy gives a scalar copy for one element; PyTorch a view: `x[0].add_(5)` writes
    into x (it left x unchanged, silently)."""
    values = np.arange(1.0, 1.0 + np.prod(shape, dtype=int)).reshape(shape)
    ours, theirs = tg.Tensor(values.copy()), torch.tensor(values.copy())
    ours[index].add_(5.0)
    theirs[index].add_(5.0)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_an_in_place_op_on_one_element_of_a_recorded_tensor_is_refused():
    """Not silently a copy: the engine refuses in-place ops on views of tensors that
    require grad (x[0] of a 2-d x raised already; of a 1-d x it changed a copy)."""
    y = tg.Tensor([1.0, 2.0], requires_grad=True) * 1.0
    with pytest.raises(RuntimeError, match="is a view"):
        y[0].mul_(2.0)


SETITEM_CASES = {
    "int": (0, (4,)),
    "slice": ((slice(None), slice(1, 3)), (3, 2)),
    "ellipsis": ((Ellipsis, 2), (3,)),
    "broadcast-row": (slice(0, 2), (4,)),
    "bool-mask": (np.array([True, False, True]), (2, 4)),
    "int-array": ((np.array([2, 0]), slice(None)), (2, 4)),
    "scalar-value": ((1, 1), ()),
}


@pytest.mark.parametrize("case", sorted(SETITEM_CASES))
@pytest.mark.parametrize("who", ["value", "target", "both"])
def test_assignment_is_recorded_and_matches_torch(case, who):
    """`x[index] = value` is recorded when x or value requires grad, as PyTorch's: the
    gradient reaches value (it was dropped: a tensor filled step by step, `out[t] = h`,
    passed nothing back to h) and x's other elements."""
    index, value_shape = SETITEM_CASES[case]
    generator = np.random.default_rng(0)
    target, value = generator.standard_normal((3, 4)), generator.standard_normal(value_shape)
    weights = generator.standard_normal((3, 4))

    def run(lib, tensor):
        leaf_target = tensor(target.copy(), requires_grad=who != "value")
        leaf_value = tensor(value.copy(), requires_grad=who != "target")
        out = leaf_target * 1.0  # a non-leaf: assigning into it is recorded in place
        out[index] = leaf_value * 2.0
        (out * tensor(weights)).sum().backward()
        grads = [leaf.grad for leaf in (leaf_target, leaf_value) if leaf.requires_grad]
        return out, grads

    ours, our_grads = run(tg, tg.Tensor)
    theirs, their_grads = run(torch, torch.tensor)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12)
    for mine, reference in zip(our_grads, their_grads, strict=True):
        np.testing.assert_allclose(mine.numpy(), reference.numpy(), rtol=1e-12)


def test_assignment_into_a_plain_tensor_makes_it_part_of_the_graph():
    """The loop that fills a preallocated tensor, as RNN code does."""
    w = tg.Tensor([1.0, 2.0], requires_grad=True)
    outputs = tg.zeros(3, 2)
    for step in range(3):
        outputs[step] = w * (step + 1)
    assert outputs.requires_grad
    outputs.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [6.0, 6.0])


def test_assignment_into_a_leaf_that_requires_grad_is_refused():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x[0] = 5.0
    with tg.no_grad():
        x[0] = 5.0  # the way to change a parameter in place
    np.testing.assert_allclose(x.numpy(), [5.0, 2.0])


def test_assignment_of_a_value_of_the_wrong_shape_names_the_op():
    out = tg.zeros(3, 4) * tg.Tensor(1.0, requires_grad=True)
    with pytest.raises(ValueError, match=r"setitem: .*value shape \(5,\)"):
        out[0] = tg.Tensor(np.ones(5))
