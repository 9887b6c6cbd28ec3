"""searchsorted and unique against torch (values, dtypes, every option)."""

import numpy as np
import pytest
import torch

import tinygrad_ops as tg

SEQUENCE = [1, 3, 5, 7, 9]
VALUES = [[3, 6, 9], [0, 10, 5]]


@pytest.mark.parametrize(
    "options",
    [{}, {"right": True}, {"side": "right"}, {"side": "left"}, {"out_int32": True}],
)
def test_searchsorted_against_torch(options):
    for sequence, values in (
        (SEQUENCE, VALUES),
        ([[1, 3, 5], [2, 4, 6]], [[3], [5]]),
        ([0.5, 1.5, 2.5], [[1.5, -1.0], [9.0, 2.0]]),
    ):
        ours = tg.searchsorted(tg.tensor(sequence), tg.tensor(values), **options)
        theirs = torch.searchsorted(torch.tensor(sequence), torch.tensor(values), **options)
        assert ours.tolist() == theirs.tolist()
        assert ours.dtype == (np.int32 if options.get("out_int32") else np.int64)
    assert tg.searchsorted(tg.tensor(SEQUENCE), 4).tolist() == 2
    sorter = [1, 2, 0]
    ours = tg.searchsorted(tg.tensor([5, 1, 3]), tg.tensor([2, 4]), sorter=tg.tensor(sorter))
    theirs = torch.searchsorted(
        torch.tensor([5, 1, 3]), torch.tensor([2, 4]), sorter=torch.tensor(sorter)
    )
    assert ours.tolist() == theirs.tolist()


def test_searchsorted_refusals():
    with pytest.raises(RuntimeError, match="contradict"):
        tg.searchsorted(tg.tensor(SEQUENCE), tg.tensor([1]), right=True, side="left")
    with pytest.raises(RuntimeError, match="leading dims"):
        tg.searchsorted(tg.tensor([[1, 2], [3, 4]]), tg.tensor([[1], [2], [3]]))


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("counts", [False, True])
def test_unique_against_torch(inverse, counts):
    cases = [
        ([3, 1, 2, 3, 1], None),
        ([[1.0, 3.0], [2.0, 3.0]], None),
        ([[1, 3], [2, 3], [1, 3]], 0),
    ]
    cases += [([[1, 3, 1], [2, 3, 2]], 1)]
    for values, dim in cases:
        ours = tg.unique(tg.tensor(values), return_inverse=inverse, return_counts=counts, dim=dim)
        theirs = torch.unique(
            torch.tensor(values), return_inverse=inverse, return_counts=counts, dim=dim
        )
        ours, theirs = (x if isinstance(x, tuple) else (x,) for x in (ours, theirs))
        assert [t.tolist() for t in ours] == [t.tolist() for t in theirs]
    assert tg.tensor([3, 1, 3]).unique().tolist() == [1, 3]
