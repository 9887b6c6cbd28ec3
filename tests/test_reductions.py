"""Reductions against PyTorch in float64 (values and gradients) over 0-d, size-1, batched and
empty shapes, with numpy's axis/keepdims and PyTorch's dim/keepdim, and finite differences."""

import warnings

import numpy as np
import pytest
import torch
from helpers import TIES, case, check_op, check_second_order

import tinygrad_ops as tg

# name: (ours, theirs, shapes), reducing axis 1 (or everything for 0-d shapes)
REDUCTIONS = {
    "sum-dim": (lambda x: x.sum(dim=1, keepdim=True), lambda x: x.sum(dim=1, keepdim=True)),
    "mean-tuple": (lambda x: x.mean(axis=(0, 1)), lambda x: x.mean(dim=(0, 1))),
    "var-correction": (lambda x: x.var(1, correction=1), lambda x: x.var(1, correction=1)),
    "var-tuple": (lambda x: x.var(axis=(0, 1), ddof=0), lambda x: x.var((0, 1), correction=0)),
    "std": (lambda x: x.std(dim=1, keepdim=True, ddof=1), lambda x: x.std(1, keepdim=True)),
    "prod": (lambda x: x.prod(1), lambda x: x.prod(1)),
    "prod-all": (lambda x: x.prod(), lambda x: x.prod()),
    "prod-keepdim": (lambda x: x.prod(dim=0, keepdim=True), lambda x: x.prod(0, keepdim=True)),
    "logsumexp": (lambda x: x.logsumexp(1), lambda x: x.logsumexp(1)),
    "logsumexp-tuple": (lambda x: x.logsumexp((0, 1), True), lambda x: x.logsumexp((0, 1), True)),
    "cumsum": (lambda x: x.cumsum(1), lambda x: x.cumsum(1)),
    "cumprod": (lambda x: x.cumprod(dim=1), lambda x: x.cumprod(1)),
    "logcumsumexp": (lambda x: x.logcumsumexp(1), lambda x: x.logcumsumexp(1)),
    "cummax": (lambda x: x.cummax(1).values, lambda x: x.cummax(1).values),
    "cummin": (lambda x: x.cummin(dim=1).values, lambda x: x.cummin(1).values),
    "max-dim": (lambda x: x.max(dim=1).values, lambda x: x.max(dim=1).values),
    "min-dim-keepdim": (
        lambda x: x.min(dim=1, keepdim=True).values,
        lambda x: x.min(dim=1, keepdim=True).values,
    ),
    "amax": (lambda x: x.max(axis=1), lambda x: x.amax(1)),
    # PyTorch's dim=(): every dim (numpy's axis=() reduces none). torch 2.13's var/std
    # backward with dim=() divides by 0 (an infinite gradient): compared with dim=None.
    "sum-empty-tuple": (lambda x: x.sum(()), lambda x: x.sum(())),
    "mean-empty-tuple": (lambda x: x.mean(dim=(), keepdim=True), lambda x: x.mean((), True)),
    "var-empty-tuple": (lambda x: x.var((), correction=1), lambda x: x.var()),
    "std-empty-tuple": (lambda x: x.std(dim=[], ddof=1), lambda x: x.std()),
}
SHAPES = [(3, 4), (2, 1, 3), (1, 1), (2, 3, 2)]
EMPTY_OK = ["sum-dim", "prod", "prod-keepdim", "cumsum", "cumprod", "logcumsumexp"]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_matches_torch(name, shape):
    ours, theirs = REDUCTIONS[name]
    if name in ("var-correction", "std") and shape[1] == 1:
        pytest.skip("one element with correction 1: 0/0 (tested below)")
    if name in ("var-empty-tuple", "std-empty-tuple") and shape == (1, 1):
        pytest.skip("one element with correction 1: 0/0 (tested below)")
    check_op(ours, theirs, shape)


@pytest.mark.parametrize("name", EMPTY_OK)
def test_reduction_of_an_empty_axis_matches_torch(name):
    ours, theirs = REDUCTIONS[name]
    check_op(ours, theirs, (2, 0, 3))


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (lambda x: x.prod(), lambda x: x.prod()),
        (lambda x: x.logsumexp(0), lambda x: x.logsumexp(0)),
        (lambda x: x.cumsum(0), lambda x: x.cumsum(0)),
        (lambda x: x.cumprod(0), lambda x: x.cumprod(0)),
        (lambda x: x.max(dim=0).values, lambda x: x.max(dim=0).values),
        (lambda x: x.std(ddof=0), lambda x: x.std(correction=0)),
    ],
    ids=["prod", "logsumexp", "cumsum", "cumprod", "max-dim", "std"],
)
def test_reductions_of_0d_tensors_match_torch(ours, theirs):
    check_op(ours, theirs, ())


@pytest.mark.parametrize("zeros", [[(0, 1)], [(0, 1), (0, 2)], [(1, 3)]], ids=str)
def test_prod_and_cumprod_gradients_are_exact_at_zeros(zeros):
    values = np.random.default_rng(0).standard_normal((2, 4))
    for index in zeros:
        values[index] = 0.0
    check_op(lambda x: x.prod(1), lambda x: x.prod(1), values)
    check_op(lambda x: x.cumprod(1), lambda x: x.cumprod(1), values)


def test_logsumexp_and_logcumsumexp_are_stable_for_large_and_infinite_inputs():
    values = np.array([[1000.0, 1000.0, -1000.0], [-np.inf, -np.inf, -np.inf]])
    check_op(lambda x: x.logsumexp(1), lambda x: x.logsumexp(1), values[:1])
    check_op(lambda x: x.logcumsumexp(1), lambda x: x.logcumsumexp(1), values[:1])
    out = tg.Tensor(values).logsumexp(1).numpy()
    np.testing.assert_allclose(out, torch.tensor(values).logsumexp(1).numpy())


def test_cummax_ties_and_nan_match_torch():
    values = np.array([1.0, 3.0, 3.0, 2.0, np.nan, 5.0, np.nan])
    for method in ("cummax", "cummin"):
        ours = getattr(tg.Tensor(values), method)(0)
        theirs = getattr(torch.tensor(values), method)(0)
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
        np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())


def test_max_with_a_dim_and_sort_return_one_kind_of_record():
    x = tg.Tensor([[1.0, 3.0], [2.0, 0.0]])
    records = [x.max(dim=1), x.min(dim=1), x.cummax(dim=1), x.sort(dim=1), x.topk(1, dim=1)]
    assert len({type(record) for record in records}) == 1


def test_max_with_dim_returns_values_and_indices_as_torch():
    values = np.array([[1.0, 5.0, 5.0], [7.0, 2.0, 0.0]])
    values_ours, indices_ours = tg.Tensor(values).max(dim=1)
    expected = torch.tensor(values).max(dim=1)
    np.testing.assert_array_equal(values_ours.numpy(), expected.values.numpy())
    np.testing.assert_array_equal(indices_ours.numpy(), expected.indices.numpy())
    assert indices_ours.dtype == np.int64
    np.testing.assert_array_equal(tg.Tensor(values).max(axis=1).numpy(), [5.0, 7.0])
    other = tg.Tensor(np.full((2, 3), 4.0))
    np.testing.assert_array_equal(tg.Tensor(values).max(other).numpy(), np.maximum(values, 4.0))


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize(
    ("shape", "axis"), [((0, 3), 1), ((0, 3), -1), ((2, 0, 3), 2), ((3, 0), 0)]
)
def test_argmax_and_argmin_of_an_empty_tensor_along_a_full_dim_are_empty_as_torch(
    shape, axis, keepdims
):
    for name in ("argmax", "argmin"):
        ours = getattr(tg.zeros(*shape), name)(axis, keepdims)
        theirs = getattr(torch.zeros(*shape), name)(dim=axis, keepdim=keepdims)
        assert ours.shape == tuple(theirs.shape)
        assert ours.dtype == np.int64


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_argmax_argmin_all_any_match_torch(axis, keepdims):
    values = np.array([[1.0, 5.0, 5.0], [7.0, 0.0, -2.0]])
    x, torch_x = tg.Tensor(values), torch.tensor(values)
    for name in ("argmax", "argmin"):
        ours = getattr(x, name)(axis, keepdims)
        theirs = getattr(torch_x, name)(dim=axis, keepdim=keepdims)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=name)
        assert ours.dtype == np.int64
    for name in ("all", "any"):
        if axis is None and keepdims:
            continue  # torch.all(x, keepdim=True) needs a dim
        ours = getattr(x > 0.5, name)(dim=axis, keepdim=keepdims)
        theirs = (
            getattr(torch_x > 0.5, name)()
            if axis is None
            else getattr(torch_x > 0.5, name)(dim=axis, keepdim=keepdims)
        )
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=name)


def test_all_and_any_over_an_empty_tuple_of_dims_reduce_nothing_as_torch():
    values = np.array([[1.0, 0.0, 5.0], [7.0, 0.0, -2.0]])
    for name in ("all", "any"):
        ours = getattr(tg.Tensor(values), name)(())
        theirs = getattr(torch.tensor(values), name)(dim=())
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=name)


@pytest.mark.parametrize("ddof", [2, 3, 5])
def test_var_and_std_with_ddof_at_least_n_are_inf_or_nan_as_torch(ddof):
    values = np.array([[1.0, 2.0], [3.0, 3.0]])
    with np.errstate(divide="ignore", invalid="ignore"):
        for name in ("var", "std"):
            ours = getattr(tg.Tensor(values), name)(axis=1, ddof=ddof).numpy()
            with warnings.catch_warnings():  # PyTorch warns that the divisor is <= 0
                warnings.simplefilter("ignore")
                theirs = getattr(torch.tensor(values), name)(dim=1, correction=ddof).numpy()
            np.testing.assert_array_equal(ours, theirs, err_msg=name)
            assert not np.any(ours < 0)


def test_squeeze_of_a_dim_that_is_not_1_returns_the_tensor_unchanged_as_torch():
    x = tg.Tensor(np.ones((2, 1, 3)))
    assert x.squeeze(0).shape == (2, 1, 3)
    assert x.squeeze(1).shape == (2, 3)
    assert x.squeeze((0, 1)).shape == (2, 3)
    assert x.squeeze().shape == (2, 3)


def test_tuples_inside_an_index_work_as_torch():
    values = np.arange(12.0).reshape(3, 4)
    x = tg.Tensor(values, requires_grad=True)
    torch_x = torch.tensor(values, requires_grad=True)
    for ours, theirs in [
        (x[(0, 2), :], torch_x[(0, 2), :]),
        (x[(0, 2), (1, 3)], torch_x[(0, 2), (1, 3)]),
        (x[1, (3, 0)], torch_x[1, (3, 0)]),
    ]:
        np.testing.assert_array_equal(ours.numpy(), theirs.detach().numpy())
    x[(0, 0), 1].sum().backward()
    torch_x[(0, 0), 1].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), torch_x.grad.numpy())


@pytest.mark.parametrize(
    ("action", "error", "message"),
    [
        (lambda x: x.sum(axis=0, dim=0), TypeError, "sum: got both axis"),
        (lambda x: x.var(ddof=1, correction=1), TypeError, "var: got both ddof"),
        (lambda x: x.cumsum(), TypeError, "cumsum: needs an axis"),
        (lambda x: x.cumsum(2), ValueError, "cumsum: axis 2 is out of range"),
        (lambda x: x.argmax(dim=True), TypeError, "argmax: axis must be an int"),
        (lambda x: x.prod(keepdims=2), TypeError, "prod: keepdims must be True or False"),
        (lambda x: x[:, :0].argmax(), ValueError, "argmax: cannot reduce an empty tensor"),
        (lambda x: x[:, :0].max(dim=1), ValueError, "max: cannot reduce over an empty dim"),
        (lambda x: x.max(()), TypeError, r"max: axis=\(\) is ambiguous"),
        (lambda x: x.min(axis=()), TypeError, r"min: axis=\(\) is ambiguous"),
        (lambda x: x.prod(()), TypeError, r"prod: axis=\(\) is ambiguous"),
        (lambda x: x.logsumexp(()), TypeError, r"logsumexp: axis=\(\) is ambiguous"),
    ],
)
def test_bad_reduction_arguments_are_clear_errors(action, error, message):
    with pytest.raises(error, match=message):
        action(tg.Tensor(np.ones((2, 3))))


@pytest.mark.parametrize("name", ["prod", "logsumexp", "cumprod", "logcumsumexp", "cummax", "std"])
def test_reductions_pass_finite_differences(name):
    ours, _ = REDUCTIONS[name]
    values = np.random.default_rng(7).uniform(0.5, 2.0, size=(2, 3))
    assert tg.gradcheck(ours, [tg.Tensor(values, requires_grad=True)])


@pytest.mark.parametrize("name", ["prod", "cumprod", "logcumsumexp", "logsumexp", "std"])
def test_reductions_are_twice_differentiable(name):
    ours, theirs = REDUCTIONS[name]
    values = np.random.default_rng(8).uniform(-1.0, 1.0, size=(2, 3))
    values[0, 1] = 0.0  # a zero for the products
    check_second_order(ours, theirs, values)


@pytest.mark.parametrize("name", ["max", "min"])
def test_a_positional_dim_is_pytorchs_values_and_indices(name):
    """`_, predicted = logits.max(1)` (PyTorch's accuracy idiom) gives the indices: a
    positional dim once meant numpy's axis and returned the values alone, so with two
    rows the unpacking silently gave the two rows' values."""
    logits = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    ours = tg.Tensor(logits, requires_grad=True)
    theirs = torch.tensor(logits, requires_grad=True)
    values, indices = getattr(ours, name)(1)
    expected_values, expected_indices = getattr(theirs, name)(1)
    np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())
    np.testing.assert_array_equal(values.numpy(), expected_values.detach().numpy())
    values.sum().backward()
    expected_values.sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
    kept_values, _ = getattr(ours, name)(0, True)
    assert kept_values.shape == (1, 3)
    assert getattr(ours, name)(axis=1).shape == (2,)  # numpy's form: the values alone
    with pytest.raises(TypeError, match="not both"):
        getattr(ours, name)(1, axis=0)


# -- every reduction primitive through check_op ----------------------------------------------


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


def torch_var(axis=None, keepdims=False, ddof=1):  # PyTorch's default correction
    return lambda x: torch.var(x, dim=all_dims(x, axis), correction=ddof, keepdim=keepdims)


ALL_EQUAL = np.full((2, 3), 0.5)


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


@pytest.mark.parametrize(("ours", "theirs", "specs", "options"), REDUCE_CASES)
def test_reduce(ours, theirs, specs, options):
    check_op(ours, theirs, *specs, **options)


def test_float16_cumsum_is_summed_in_float32_as_torch():
    values = np.random.default_rng(0).uniform(0, 1, (4, 3000)).astype(np.float16)
    ours, theirs = tg.Tensor(values).cumsum(1), torch.tensor(values).cumsum(1)
    assert ours.dtype == np.float16
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())  # float16 drifted by 0.4%


def test_float16_cumprod_and_logcumsumexp_are_computed_in_float32_as_torch():
    near_one = np.random.default_rng(0).uniform(0.99, 1.01, (2, 2000)).astype(np.float16)
    normal = np.random.default_rng(1).standard_normal((2, 2000)).astype(np.float16)
    for ours, theirs in [
        (tg.Tensor(near_one).cumprod(1), torch.tensor(near_one).cumprod(1)),
        (tg.Tensor(normal).logcumsumexp(1), torch.tensor(normal).logcumsumexp(1)),
    ]:
        assert ours.dtype == np.float16
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())  # drifted 2% and 5%
    # prod is the last cumulative product: the float64 answer to float16's precision (torch
    # 2.13's float16 prod itself drifts, to 0.82 of 0.931 here)
    exact = near_one.astype(np.float64).prod(1)
    np.testing.assert_allclose(tg.Tensor(near_one).prod(1).numpy(), exact, rtol=1e-3)


def test_var_and_std_default_to_pytorchs_correction_and_take_unbiased():
    values = np.random.default_rng(1).standard_normal((3, 5))
    x, t = tg.Tensor(values), torch.tensor(values)
    for method in ("var", "std"):
        ours, theirs = getattr(x, method), getattr(t, method)
        np.testing.assert_allclose(ours().item(), theirs().item(), rtol=1e-12)
        np.testing.assert_allclose(ours(dim=1).numpy(), theirs(dim=1).numpy(), rtol=1e-12)
        np.testing.assert_allclose(
            ours(1, unbiased=False).numpy(), theirs(1, unbiased=False).numpy(), rtol=1e-12
        )
        np.testing.assert_allclose(ours(ddof=0).item(), getattr(values, method)())
        # PyTorch's second positional argument is `unbiased`: a keyword here, never keepdims
        with pytest.raises(TypeError):
            ours(1, False)
        with pytest.raises(TypeError, match="got both ddof=0 and unbiased=True"):
            ours(ddof=0, unbiased=True)
        with pytest.raises(TypeError, match="unbiased must be True or False"):
            ours(unbiased=1)


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (lambda x: x.amax(), lambda x: x.amax()),
        (lambda x: x.amax(1), lambda x: x.amax(1)),
        (lambda x: x.amin(dim=(0, 1), keepdim=True), lambda x: x.amin(dim=(0, 1), keepdim=True)),
        (lambda x: x.amax(()), lambda x: x.amax(())),  # PyTorch's empty dim: every dim
        (lambda x: x.amin(dim=[], keepdim=True), lambda x: x.amin(dim=[], keepdim=True)),
    ],
    ids=["amax-all", "amax-dim", "amin-tuple-keepdim", "amax-empty", "amin-empty-list"],
)
def test_amax_and_amin_share_ties_as_pytorch(ours, theirs):
    check_op(ours, theirs, np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]))


def test_cumsum_gradient_is_exact_for_large_and_infinite_upstream_gradients():
    """The adjoint of cumsum is a reversed cumsum: written as total - cumsum + g it lost
    the small terms beside 1e16 (3 for 2) and gave inf - inf = NaN beside an inf."""
    for upstream in ([1e16, 1.0, 1.0], [1.0, np.inf, 2.0], [-np.inf, 1.0, np.inf]):
        x = tg.Tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
        torch_x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
        x.cumsum(0).backward(tg.Tensor(np.array(upstream)))
        torch_x.cumsum(0).backward(torch.tensor(upstream, dtype=torch.float64))
        np.testing.assert_array_equal(x.grad.numpy(), torch_x.grad.numpy())


@pytest.mark.parametrize(
    "values",
    [[1.0, np.inf, 2.0, -1.0], [0.5, 0.25, -np.inf, 3.0], [1e300, 1e300, -1e300, 1.0]],
    ids=["inf", "-inf", "overflow"],
)
def test_prod_gradient_at_infinite_and_overflowing_products_matches_torch(values):
    """g prod / x, as PyTorch's prod: the products of the outputs that get no gradient
    were 0 * inf = NaN in cumprod's rule, and every element's gradient came out NaN."""
    x = tg.Tensor(np.array(values), requires_grad=True)
    torch_x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    with np.errstate(over="ignore", invalid="ignore"):  # (the forward overflows, as torch's)
        x.prod().backward()
    torch_x.prod().backward()
    np.testing.assert_array_equal(x.grad.numpy(), torch_x.grad.numpy())


NAN_ROWS = np.array([[1.0, np.nan, 3.0], [1.0, 5.0, 5.0], [np.nan, np.nan, 0.0]])


@pytest.mark.parametrize("name", ["amax", "amin"])
@pytest.mark.parametrize("options", [{"dim": 1}, {}, {"dim": 0, "keepdim": True}, {"dim": (0, 1)}])
def test_amax_and_amin_give_a_group_holding_nan_nan_gradients_as_torch(name, options):
    ours = tg.Tensor(NAN_ROWS, requires_grad=True)
    theirs = torch.tensor(NAN_ROWS, requires_grad=True)
    out, expected = getattr(ours, name)(**options), getattr(theirs, name)(**options)
    upstream = np.random.default_rng(2).standard_normal(out.shape)
    out.backward(upstream)
    expected.backward(torch.tensor(upstream))
    np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


def test_max_without_a_dim_still_gives_the_nans_the_gradient_as_torch():
    ours = tg.Tensor(NAN_ROWS, requires_grad=True)
    theirs = torch.tensor(NAN_ROWS, requires_grad=True)
    ours.max().backward()
    theirs.max().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


@pytest.mark.parametrize(
    ("arguments", "options"),
    [
        ((), {}),
        ((1,), {}),
        ((0,), {"keepdim": True}),
        (((0, 1),), {"correction": 0}),
        ((1,), {"unbiased": False}),
        ((False,), {}),
    ],
)
@pytest.mark.parametrize("name", ["var_mean", "std_mean"])
def test_var_mean_and_std_mean_against_torch(name, arguments, options):
    def both(module):  # the variance (standard deviation) and the mean, in one tensor
        return lambda x: module.stack(getattr(module, name)(x, *arguments, **options))

    check_op(both(tg), both(torch), (3, 4))
