"""The scans alone: every scan against a plain left fold, for every length up to 70."""

import numpy as np
import pytest

from tinygrad_ops.scheduler import scans

LENGTHS = range(1, 71)
SCANS = {
    "sequential": scans.sequential_scan,
    "hillis-steele": scans.hillis_steele_scan,
    "blelloch": scans.blelloch_scan,
    "blocked-1": lambda elements, operator: scans.blocked_scan(elements, operator, 1),
    "blocked-3": lambda elements, operator: scans.blocked_scan(elements, operator, 3),
    "blocked-8": lambda elements, operator: scans.blocked_scan(elements, operator, 8),
}


def fold_matrices(matrices):
    """out[i] = M[0] @ M[1] @ ... @ M[i], one product at a time."""
    out = [matrices[0]]
    for matrix in matrices[1:]:
        out.append(out[-1] @ matrix)
    return np.stack(out)


def fold_affine(matrices, vectors):
    """(A, a) . (B, b) = (A B, a B + b), folded from the left."""
    out_matrices = [matrices[0]]
    out_vectors = [vectors[0]]
    for matrix, vector in zip(matrices[1:], vectors[1:], strict=True):
        out_vectors.append(np.einsum("...i,...ij->...j", out_vectors[-1], matrix) + vector)
        out_matrices.append(out_matrices[-1] @ matrix)
    return np.stack(out_matrices), np.stack(out_vectors)


@pytest.mark.parametrize("name", SCANS)
def test_matrix_products_match_the_fold(name):
    scan = SCANS[name]
    generator = np.random.default_rng(1)
    for count in LENGTHS:
        # Random 3x3 matrices do not commute: a scan that swaps operands fails.
        matrices = generator.standard_normal((count, 3, 3)) * 0.7
        (result,) = scan((matrices,), scans.MatrixProduct())
        np.testing.assert_allclose(result, fold_matrices(matrices), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", SCANS)
def test_affine_pairs_match_the_fold(name):
    scan = SCANS[name]
    generator = np.random.default_rng(2)
    for count in LENGTHS:
        matrices = generator.standard_normal((count, 2, 4, 4)) * 0.6  # batch of 2 rows
        vectors = generator.standard_normal((count, 2, 4))
        expected_matrices, expected_vectors = fold_affine(matrices, vectors)
        result_matrices, result_vectors = scan((matrices, vectors), scans.AffineCompose())
        np.testing.assert_allclose(result_matrices, expected_matrices, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(result_vectors, expected_vectors, rtol=1e-10, atol=1e-12)
        # Seeded: element 0's vector is the seed and every prefix is a vector.
        (seeded,) = scan((matrices, vectors), scans.AffineCompose(seeded=True))
        np.testing.assert_allclose(seeded, expected_vectors, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", SCANS)
def test_diagonal_affine_matches_the_dense_operator(name):
    scan = SCANS[name]
    generator = np.random.default_rng(3)
    for count in (1, 2, 3, 7, 16, 17, 70):
        diagonals = generator.standard_normal((count, 5))
        vectors = generator.standard_normal((count, 5))
        dense = np.einsum("ni,ij->nij", diagonals, np.eye(5))
        expected_matrices, expected = fold_affine(dense, vectors)
        (result,) = scan((diagonals, vectors), scans.AffineCompose(seeded=True, diagonal=True))
        np.testing.assert_allclose(result, expected, rtol=1e-10, atol=1e-12)
        # Unseeded: the composed diagonals are the diagonals of the composed matrices.
        result_diagonals, result_vectors = scan(
            (diagonals, vectors), scans.AffineCompose(diagonal=True)
        )
        np.testing.assert_allclose(
            result_diagonals, np.diagonal(expected_matrices, axis1=1, axis2=2), rtol=1e-10
        )
        np.testing.assert_allclose(result_vectors, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("method", ["sequential", "hillis-steele", "blelloch", "blocked"])
@pytest.mark.parametrize("diagonal", [False, True])
def test_seeded_product_prefixes_are_the_seed_times_the_fold(method, diagonal):
    # No injections: prefix i is g A_1 ... A_i, from the seed g passed as the first prefix.
    generator = np.random.default_rng(5)
    count = 23
    seed = generator.standard_normal((1, 2, 4))
    if diagonal:
        steps = generator.standard_normal((count, 2, 4))
        dense = np.einsum("nbi,ij->nbij", steps, np.eye(4))
    else:
        steps = dense = generator.standard_normal((count, 2, 4, 4)) * 0.6
    expected = [seed[0]]
    for matrix in dense:
        expected.append(np.einsum("bi,bij->bj", expected[-1], matrix))
    received = np.full((count + 1, 2, 4), np.nan)

    def sink(start, stop, prefixes):
        received[start:stop] = prefixes[0]

    scans.scan_from_prefix(
        method,
        (seed,),
        lambda start, stop: (steps[start:stop],),
        count,
        scans.SeededProduct(diagonal),
        block_size=5,
        sink=sink,
    )
    np.testing.assert_allclose(received, np.stack(expected), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("method", ["sequential", "hillis-steele", "blelloch", "blocked"])
def test_scan_from_prefix_hands_every_prefix_to_the_sink(method):
    generator = np.random.default_rng(4)
    count = 37
    matrices = generator.standard_normal((count, 3, 3)) * 0.6
    vectors = generator.standard_normal((count, 3))
    seed = generator.standard_normal((1, 3))
    expected = [seed[0]]
    for matrix, vector in zip(matrices, vectors, strict=True):
        expected.append(expected[-1] @ matrix + vector)
    received = np.full((count + 1, 3), np.nan)

    def sink(start, stop, prefixes):
        received[start:stop] = prefixes[0]

    scans.scan_from_prefix(
        method,
        (seed,),
        lambda start, stop: (matrices[start:stop], vectors[start:stop]),
        count,
        scans.AffineCompose(seeded=True),
        block_size=5,
        sink=sink,
    )
    np.testing.assert_allclose(received, np.stack(expected), rtol=1e-10, atol=1e-12)


def test_blocked_scan_rejects_a_block_size_below_one():
    with pytest.raises(ValueError, match="block_size"):
        scans.blocked_scan((np.ones((3, 2, 2)),), scans.MatrixProduct(), block_size=0)


def test_adding_a_diagonal_to_a_jacobian_leaves_an_ops_own_matrix_alone():
    """`jacobians.add` makes I + J (a residual step's Jacobian) without writing into an
    op's own matrix (a weight's) or a product, and gives the same values."""
    from tinygrad_ops.ops.jacobian import IDENTITY
    from tinygrad_ops.scheduler import jacobians

    generator = np.random.default_rng(0)
    weight = generator.standard_normal((3, 3))
    kept = weight.copy()
    values = generator.standard_normal((5, 2, 3))
    expected = np.eye(3) * values[..., None, :] + weight

    own = jacobians.add(jacobians.Dense(weight), jacobians.Diagonal(values))
    assert np.array_equal(weight, kept)
    np.testing.assert_allclose(own.matrix, expected, rtol=0, atol=1e-15)

    made = jacobians.compose(IDENTITY, jacobians.Dense(weight))
    made = jacobians.compose(jacobians.Diagonal(np.ones((5, 2, 3))), made)
    summed = jacobians.add(jacobians.Diagonal(values), made)
    assert np.array_equal(weight, kept)
    np.testing.assert_allclose(summed.matrix, expected, rtol=0, atol=1e-15)
    # A diagonal that broadcasts over the rows, onto a float32 product.
    single = jacobians.compose(IDENTITY, jacobians.Dense(weight.astype(np.float32)))
    summed = jacobians.add(single, jacobians.Diagonal(np.float32(2.0)))
    np.testing.assert_allclose(summed.matrix, weight + 2 * np.eye(3), rtol=1e-6)


def test_stacked_jacobians_are_the_scans_arrays():
    """`jacobians.stacked` gives a diagonal chain its diagonals and a dense chain its
    matrices, broadcast over the steps, a diagonal Jacobian on a dense chain as diag(v)."""
    from tinygrad_ops.scheduler import jacobians

    generator = np.random.default_rng(5)
    values = generator.standard_normal((4, 2, 3))
    weight = generator.standard_normal((3, 3))
    diagonals = jacobians.stacked(jacobians.Diagonal(values), "diagonal", (2, 3), 4, np.float64)
    np.testing.assert_array_equal(diagonals, values)
    matrices = jacobians.stacked(jacobians.Dense(weight), "dense", (2, 3), 4, np.float32)
    assert matrices.shape == (4, 2, 3, 3)
    assert matrices.dtype == np.float32
    np.testing.assert_array_equal(matrices[3, 1], weight.astype(np.float32))
    as_matrices = jacobians.stacked(jacobians.Diagonal(values), "dense", (2, 3), 4, np.float64)
    np.testing.assert_array_equal(as_matrices, values[..., None] * np.eye(3))
