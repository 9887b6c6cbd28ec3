"""A PyTorch user's first-day idioms, swept against torch (float64 and float32): each case
here was a silently wrong number (or a lost gradient) before its fix."""

import pytest
from helpers import check_op


@pytest.mark.parametrize(
    ("shape", "dims"),
    [((2, 3), (0, 1)), ((2, 3), (0, -1)), ((2, 3), (-2, -1)), ((2, 3, 4), (0, 2)),
     ((2, 3, 4), (1, -1)), ((2, 3), (1, 1)), ((), (0, -1))],
)  # fmt: skip
def test_transpose_of_two_dims_swaps_them_as_torch(shape, dims):
    """x.transpose(0, 1) on a matrix is its transpose (numpy's rule read it as the identity
    permutation and returned x unchanged)."""
    check_op(lambda x: x.transpose(*dims), lambda x: x.transpose(*dims), shape)


def test_permute_keeps_the_permutation_rule():
    check_op(lambda x: x.permute(0, 1), lambda x: x.permute(0, 1), (2, 3))
    check_op(lambda x: x.transpose(2, 0, 1), lambda x: x.permute(2, 0, 1), (2, 3, 4))
