"""pad, split, chunk, flip, roll, tril, triu, repeat, repeat_interleave, diagonal, unfold,
meshgrid and movedim against PyTorch (float64): values and every input's gradient, one line
per case through `check_op`; finite differences; the errors."""

import numpy as np
import pytest
import torch
import torch.nn.functional as torch_functional
from helpers import check_op, random_inputs

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)


def case(name, ours, theirs, *specs):
    return pytest.param(ours, theirs, specs, id=name)


def same(method, *args, **kwargs):
    """A case whose two sides call the same Tensor method."""
    return (
        lambda x: getattr(x, method)(*args, **kwargs),
        lambda x: getattr(x, method)(*args, **kwargs),
    )


def pad_case(name, shape, widths, mode="constant", value=0.0):
    options = {"mode": mode} | ({"value": value} if mode == "constant" else {})
    return case(
        name,
        lambda x: F.pad(x, widths, **options),
        lambda x: torch_functional.pad(x, widths, **options),
        shape,
    )


def weighted_pieces(pieces):
    """The pieces of split/chunk, each scaled by its position, as one flat vector (so that
    check_op sees one output and a piece's gradient cannot land in another's place)."""
    return [piece.reshape(-1) * (index + 1) for index, piece in enumerate(pieces)]


CASES = [
    pad_case("pad_constant", (2, 3), (1, 2)),
    pad_case("pad_constant_2d", (2, 3, 4), (1, 0, 2, 1), value=1.5),
    pad_case("pad_constant_crop", (2, 5), (-1, 2)),
    pad_case("pad_constant_all_dims", (2, 3), (1, 1, 1, 1)),
    pad_case("pad_reflect", (2, 3, 5), (2, 3), "reflect"),
    pad_case("pad_reflect_2d", (1, 2, 4, 5), (1, 2, 3, 1), "reflect"),
    pad_case("pad_replicate", (2, 3, 4), (3, 1), "replicate"),
    pad_case("pad_replicate_2d", (1, 2, 3, 4), (2, 1, 1, 3), "replicate"),
    pad_case("pad_circular", (1, 2, 5), (2, 3), "circular"),
    pad_case("pad_circular_2d", (1, 1, 3, 4), (1, 2, 2, 1), "circular"),
    pad_case("pad_empty_batch", (0, 3), (1, 1)),
    pad_case("pad_reflect_crop", (2, 3, 5), (-1, 2, 2, -1), "reflect"),  # negative widths crop
    pad_case("pad_replicate_crop", (1, 2, 4, 5), (3, -3, 0, -3), "replicate"),
    pad_case("pad_circular_crop", (2, 3, 5), (-1, 2, 2, -1), "circular"),
    pad_case("pad_circular_crop_left", (2, 5), (2, -3), "circular"),
    case(
        "split_size",
        lambda x: tg.concatenate(weighted_pieces(x.split(2))),
        lambda x: torch.cat(weighted_pieces(x.split(2))),
        (5, 3),
    ),
    case(
        "split_sections",
        lambda x: tg.concatenate(weighted_pieces(tg.split(x, [1, 3], 1))),
        lambda x: torch.cat(weighted_pieces(torch.split(x, [1, 3], 1))),
        (2, 4),
    ),
    case(
        "chunk",
        lambda x: tg.concatenate(weighted_pieces(x.chunk(3, -1))),
        lambda x: torch.cat(weighted_pieces(x.chunk(3, -1))),
        (2, 7),
    ),
    case("flip", *same("flip", 1), (3, 4)),
    case("flip_dims", *same("flip", (0, 2)), (2, 3, 4)),
    case("flip_0d", lambda x: tg.flip(x, ()), lambda x: torch.flip(x, ()), ()),
    case("roll", *same("roll", 2, 1), (3, 4)),
    case("roll_flat", *same("roll", -3), (3, 4)),
    case("roll_flat_tuple", *same("roll", (2,)), (3, 4)),
    case("roll_dims", *same("roll", (1, -2), (0, 1)), (3, 4)),
    case("roll_empty", *same("roll", 1, 0), (0, 2)),
    case("tril", *same("tril"), (4, 5)),
    case("tril_offset_batched", *same("tril", -1), (2, 3, 4)),
    case("triu", *same("triu", 1), (4, 3)),
    case("triu_1x1", *same("triu"), (1, 1)),
    case("repeat", *same("repeat", 2, 3), (2, 3)),
    case("repeat_new_dims", *same("repeat", 2, 1, 2), (3,)),
    case("repeat_0d", *same("repeat", 3), ()),
    case("repeat_zero", *same("repeat", 0, 2), (2, 3)),
    case("repeat_interleave", *same("repeat_interleave", 2), (2, 3)),
    case("repeat_interleave_dim", *same("repeat_interleave", 3, dim=1), (2, 3)),
    case(
        "repeat_interleave_counts",
        lambda x: x.repeat_interleave(tg.Tensor(np.array([1, 0, 2])), dim=0),
        lambda x: x.repeat_interleave(torch.tensor([1, 0, 2]), dim=0),
        (3, 2),
    ),
    case("diagonal", *same("diagonal"), (3, 4)),
    case("diagonal_offset", *same("diagonal", 1), (3, 4)),
    case("diagonal_negative", *same("diagonal", -2, 0, 1), (4, 3)),
    case("diagonal_batched", *same("diagonal", 0, 1, 2), (2, 3, 3)),
    case("diagonal_dims_swapped", *same("diagonal", 1, 2, 0), (3, 2, 4)),
    case("diagonal_past_the_end", *same("diagonal", 5), (3, 4)),
    case("unfold", *same("unfold", 0, 2, 1), (5,)),
    case("unfold_step", *same("unfold", 1, 3, 2), (2, 7, 3)),
    case("unfold_last", *same("unfold", -1, 2, 2), (3, 4)),
    case("unfold_0d", *same("unfold", 0, 1, 1), ()),
    case("movedim", *same("movedim", 0, -1), (2, 3, 4)),
    case("movedim_many", *same("movedim", (0, 1), (2, 0)), (2, 3, 4)),
    case(
        "moveaxis", lambda x: tg.moveaxis(x, -1, 0), lambda x: torch.moveaxis(x, -1, 0), (2, 3, 4)
    ),
    case(
        "meshgrid_ij",
        lambda a, b, c: sum(g * (i + 1) for i, g in enumerate(tg.meshgrid(a, b, c, indexing="ij"))),
        lambda a, b, c: sum(
            g * (i + 1) for i, g in enumerate(torch.meshgrid(a, b, c, indexing="ij"))
        ),
        (2,),
        (3,),
        (4,),
    ),
    case(
        "meshgrid_xy",
        lambda a, b: tg.meshgrid(a, b, indexing="xy")[0] * 2 + tg.meshgrid(a, b, indexing="xy")[1],
        lambda a, b: (
            torch.meshgrid(a, b, indexing="xy")[0] * 2 + torch.meshgrid(a, b, indexing="xy")[1]
        ),
        (2,),
        (3,),
    ),
]


@pytest.mark.parametrize(("ours", "theirs", "specs"), CASES)
def test_against_torch(ours, theirs, specs):
    check_op(ours, theirs, *specs)


def test_split_and_chunk_pieces_match_torch():
    (x,) = random_inputs((7, 2))
    for ours, theirs in (
        (tg.Tensor(x).split(3), torch.tensor(x).split(3)),
        (tg.split(tg.Tensor(x), [2, 0, 5]), torch.split(torch.tensor(x), [2, 0, 5])),
        (tg.chunk(tg.Tensor(x), 3), torch.chunk(torch.tensor(x), 3)),
        (tg.Tensor(x).chunk(4), torch.tensor(x).chunk(4)),
    ):
        assert [piece.shape for piece in ours] == [tuple(piece.shape) for piece in theirs]
        for mine, reference in zip(ours, theirs, strict=True):
            np.testing.assert_array_equal(mine.numpy(), reference.numpy())


@pytest.mark.parametrize(
    ("offset", "dim1", "dim2", "shape"),
    [
        (0, 0, 1, (3, 3)),
        (1, 0, 1, (3, 4)),
        (-1, 0, 1, (4, 3)),
        (0, 2, 0, (3, 2, 3)),
        (7, 0, 1, (3, 3)),
    ],
)
def test_diagonal_is_a_view_that_in_place_ops_write_through_as_torch(offset, dim1, dim2, shape):
    data = np.arange(float(np.prod(shape))).reshape(shape)
    ours, theirs = tg.Tensor(data), torch.tensor(data)
    ours.diagonal(offset, dim1, dim2).add_(0.5)
    theirs.diagonal(offset, dim1, dim2).add_(0.5)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    ours.diagonal(offset, dim1, dim2).fill_(-1.0)
    theirs.diagonal(offset, dim1, dim2).fill_(-1.0)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_a_write_through_the_diagonal_bumps_the_tensors_version():
    weight = tg.Tensor(np.ones(3), requires_grad=True)
    cov = tg.Tensor(np.eye(3) * 2.0)
    out = (cov * weight).sum()  # saves cov for weight's gradient
    version = cov._version[0]
    cov.diagonal().add_(1e-3)
    assert cov._version[0] == version + 1
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        out.backward()


def test_an_in_place_op_on_the_diagonal_of_a_recorded_tensor_is_refused():
    cov = tg.Tensor(np.eye(3), requires_grad=True) * 2.0
    with pytest.raises(RuntimeError, match="view"):
        cov.diagonal().add_(1.0)
    with tg.no_grad():  # the usual way: cov.diagonal().add_(eps) under no_grad
        cov.diagonal().add_(1.0)
    np.testing.assert_array_equal(cov.numpy(), np.eye(3) * 3.0)


def test_integer_tensors_keep_their_dtype():
    x = tg.Tensor(np.arange(6).reshape(2, 3))
    for out in (x.flip(0), x.roll(1), x.tril(), x.repeat(2, 1), x.diagonal(), F.pad(x, (1, 1))):
        assert out.dtype == np.int64
    np.testing.assert_array_equal(x.triu().numpy(), [[0, 1, 2], [0, 4, 5]])


@pytest.mark.parametrize(
    "function",
    [
        lambda x: F.pad(x, (2, 1, 1, 1), mode="reflect"),
        lambda x: F.pad(x, (1, 2), mode="replicate"),
        lambda x: x.roll(1, 1).tril() * x,
        lambda x: x.unfold(1, 2, 1).sum(-1) * x[:, :2],
        lambda x: x.repeat_interleave(2, 1).diagonal(),
        lambda x: x.repeat(2, 2).triu(-1),
    ],
)
def test_finite_differences(function):
    (x,) = random_inputs((3, 3), seed=8)
    assert tg.gradcheck(function, (tg.Tensor(x, requires_grad=True),))


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda x: F.pad(x, (1,)), ValueError, "pairs"),
        (lambda x: F.pad(x, (1, 1, 1, 1, 1, 1)), ValueError, "pairs"),
        (lambda x: F.pad(x, (3, 0), mode="reflect"), ValueError, "smaller than the dim"),
        (lambda x: F.pad(x, (-2, -2), mode="replicate"), ValueError, "crop more than the dim"),
        (lambda x: F.pad(x, (3, -1), mode="circular"), ValueError, "exceeds the"),
        (lambda x: F.pad(x, (1, 0), mode="wrap"), ValueError, "mode"),
        (lambda x: x.split([1, 2]), ValueError, "add up"),
        (lambda x: x.chunk(0), ValueError, "chunks"),
        (lambda x: x.flip((0, 0)), ValueError, "repeat"),
        (lambda x: x.flip(2), ValueError, "out of range"),
        (lambda x: x.roll((1, 2), 0), ValueError, "same length"),
        (lambda x: x.roll((1, 2)), ValueError, "one int"),
        (lambda x: x[0].tril(), ValueError, "at least 2 dims"),
        (lambda x: x.repeat(2), ValueError, "one non-negative int per dim"),
        (lambda x: x.repeat_interleave(np.array([1, 2])), ValueError, "one count per element"),
        (lambda x: x.repeat_interleave(-1), ValueError, "non-negative"),
        (lambda x: x.diagonal(0, 1, 1), ValueError, "must differ"),
        (lambda x: x.unfold(1, 4, 1), ValueError, "size"),
        (lambda x: x.unfold(1, 2, 0), ValueError, "step"),
        (lambda x: tg.meshgrid(x), ValueError, "0-d or 1-d"),
        (lambda x: tg.meshgrid(x[0], indexing="yx"), ValueError, "indexing"),
        (lambda x: x.movedim((0, 1), 0), ValueError, "same length"),
    ],
)
def test_errors_name_the_op_and_argument(call, error, message):
    with pytest.raises(error, match=message):
        call(tg.Tensor(np.zeros((2, 3))))
