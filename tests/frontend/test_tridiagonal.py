"""Divide and conquer on a symmetric tridiagonal matrix (frontend/tridiagonal.py): every
split and merge against PyTorch's LAPACK on the dense matrix: eigenvalues, residual,
orthogonality; splits where the off-diagonal is zero, repeated eigenvalues, graded and
scaled matrices, float32."""

import numpy as np
import pytest
import torch

import kael
from kael.frontend import tridiagonal


def _check(d: np.ndarray, e: np.ndarray, tol: float):
    values, vectors = tridiagonal.eigh(kael.tensor(d), kael.tensor(e))
    t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    want = torch.linalg.eigvalsh(torch.tensor(t).double()).numpy()
    w, v = values.numpy().astype(np.float64), vectors.numpy().astype(np.float64)
    n, scale = len(d), max(np.abs(t).max(), np.finfo(np.float64).tiny)
    np.testing.assert_allclose(w, want, rtol=0, atol=tol * scale * n)
    np.testing.assert_allclose(t.astype(np.float64) @ v - v * w, 0, atol=tol * scale * n)
    np.testing.assert_allclose(v.T @ v, np.eye(n), atol=tol * n)


@pytest.mark.parametrize("n", [1, 2, tridiagonal.LEAF, tridiagonal.LEAF + 1, 100, 257])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_random_tridiagonal_matches_lapack(n, dtype):
    rng = np.random.default_rng(n)
    d, e = rng.standard_normal(n).astype(dtype), rng.standard_normal(n - 1).astype(dtype)
    _check(d, e, 1e-14 if dtype is np.float64 else 5e-6)


@pytest.mark.parametrize("case", ["wilkinson", "zero_splits", "repeated", "graded", "tiny_e"])
def test_structured_tridiagonals_match_lapack(case):
    n = 150
    rng = np.random.default_rng(1)
    d, e = rng.standard_normal(n), rng.standard_normal(n - 1)
    if case == "wilkinson":  # pairs of eigenvalues equal to many digits
        d, e = np.abs(np.arange(n) - (n - 1) / 2), np.ones(n - 1)
    elif case == "zero_splits":  # T splits at merges' own off-diagonal, at each height
        _, heights = tridiagonal._tree(n)  # one merge of a height split, another not
        e[[merges[0][1] - 1 for merges in heights]] = 0
    elif case == "repeated":
        d, e = np.ones(n), np.zeros(n - 1)
        e[::2] = 1e-300
    elif case == "graded":
        d = 10.0 ** (-np.arange(n) / 10)
        e = 0.5 * d[:-1]
    else:
        e *= 1e-12
    _check(d, e, 1e-14)


@pytest.mark.parametrize("n", [1, 32, 33, 65, 100, 150, 300, 512, 1000])
def test_the_tree_tiles_t_with_leaves_and_merges_a_height_in_two_shapes_at_most(n):
    """Leaves of LEAF rows but the last, tiling T in order; each merge joins a whole tree
    of LEAF 2^k rows (at least half the block) and the rest, both solved lower down; so
    a height's merges all have one shape but the one on T's last rows."""
    leaves, heights = tridiagonal._tree(n)
    assert [lo for lo, _ in leaves] == [0, *[hi for _, hi in leaves[:-1]]]
    assert leaves[-1][1] == n
    assert all(hi - lo == tridiagonal.LEAF for lo, hi in leaves[:-1])
    assert 0 < leaves[-1][1] - leaves[-1][0] <= tridiagonal.LEAF
    done = {lo: hi for lo, hi in leaves}  # solved blocks by first row
    for merges in heights:
        assert len({(hi - lo, mid - lo) for lo, mid, hi in merges}) <= 2
        for lo, mid, hi in merges:
            first = mid - lo
            assert first % tridiagonal.LEAF == 0 and (first // tridiagonal.LEAF).bit_count() == 1
            assert 0 < hi - mid <= first
            assert done.pop(lo) == mid and done.pop(mid) == hi  # both halves solved below
        done.update({lo: hi for lo, _, hi in merges})
    assert done == {0: n}


@pytest.mark.parametrize("scale", [1e-300, 1e-150, 1e150, 1e300])
def test_scaled_tridiagonals_keep_their_accuracy(scale):
    """T is scaled to a largest entry of 1 first, as dstedc does: the merges' slopes
    overflowed for a tiny T (residuals of 1e-7 at 1e-146) and underflowed for a huge one."""
    rng = np.random.default_rng(2)
    n = 130
    d, e = rng.standard_normal(n), rng.standard_normal(n - 1)
    values, vectors = tridiagonal.eigh(kael.tensor(d * scale), kael.tensor(e * scale))
    t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    w, v = values.numpy() / scale, vectors.numpy()
    np.testing.assert_allclose(w, np.linalg.eigvalsh(t), rtol=0, atol=1e-14 * n * np.abs(t).max())
    np.testing.assert_allclose(t @ v - v * w, 0, atol=1e-14 * n * np.abs(t).max())
    np.testing.assert_allclose(v.T @ v, np.eye(n), atol=1e-14 * n)


@pytest.mark.parametrize("dtype,scale", [(np.float32, 1e-36), (np.float32, 1e-38),
                                         (np.float64, 1e-300), (np.float64, 1e-306)])  # fmt: skip
def test_a_block_far_below_the_rest_of_t_is_solved_on_its_own_scale(dtype, scale):
    """T splits at a negligible off-diagonal (dstedc's test) and each block is scaled on
    its own: a tiny block merged on the whole T's scale failed to converge (leaves) or
    gave NaN (merges), where LAPACK returns its eigenpairs to its own precision."""
    rng = np.random.default_rng(1)
    n, cut = 160, 32
    d, e = rng.standard_normal(n), rng.standard_normal(n - 1)
    d[cut:] *= scale
    e[cut - 1 :] *= scale
    values, vectors = tridiagonal.eigh(kael.tensor(d.astype(dtype)), kael.tensor(e.astype(dtype)))
    w, v = values.numpy().astype(np.float64), vectors.numpy().astype(np.float64)
    tol = 1e-13 if dtype is np.float64 else 2e-5
    t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    np.testing.assert_allclose(v.T @ v, np.eye(n), atol=tol * n)
    small = np.abs(w) < 1e-3  # the tiny block's eigenvalues, on their own scale
    tiny = t[cut:, cut:].astype(dtype).astype(np.float64) / scale
    np.testing.assert_allclose(np.sort(w[small]) / scale, np.linalg.eigvalsh(tiny), atol=tol * n)
    big = t[:cut, :cut].astype(dtype).astype(np.float64)
    np.testing.assert_allclose(np.sort(w[~small]), np.linalg.eigvalsh(big), atol=tol * n)


def _coupled(n: int, cut: int, scale: float, coupling: float, dtype) -> np.ndarray:
    """A dense tridiagonal matrix whose rows from `cut` are `scale` small, joined to the
    rest by an off-diagonal `coupling` times its own size (not negligible)."""
    rng = np.random.default_rng(0)
    d, e = rng.standard_normal(n), rng.standard_normal(n - 1)
    d[cut:] *= scale
    e[cut:] *= scale
    e[cut - 1] *= coupling
    return (np.diag(d) + np.diag(e, 1) + np.diag(e, -1)).astype(dtype)


@pytest.mark.parametrize("dtype,scale,coupling", [
    (np.float32, 1e-37, 1e-18),  # merges of the tiny block: NaN (review), now QL
    (np.float64, 1e-307, 1e-153),
    (np.float32, 1e-40, 1e-19),  # a subnormal leaf: 1 / its largest entry overflowed
])  # fmt: skip
def test_eigh_of_a_tiny_block_coupled_to_the_rest_is_finite_and_accurate(dtype, scale, coupling):
    """Both review cases through kael.linalg.eigh: a block whose rows are far below the
    rest but not split off returned NaN from divide and conquer's merges (eigh now takes
    the QL iteration for such a T: tridiagonal.eigh gives None), and a leaf whose largest
    entry is subnormal raised LinAlgError (leaves are scaled by two powers of two)."""
    n = 160
    a = _coupled(n, 32, scale, coupling, dtype)
    w, v = (x.numpy().astype(np.float64) for x in kael.linalg.eigh(kael.tensor(a)))
    tol = 1e-13 if dtype is np.float64 else 2e-5
    np.testing.assert_allclose(w, torch.linalg.eigvalsh(torch.tensor(a)).numpy(), atol=tol * n)
    np.testing.assert_allclose(a.astype(np.float64) @ v - v * w, 0, atol=tol * n)
    np.testing.assert_allclose(v.T @ v, np.eye(n), atol=tol * n)


def test_merges_of_blocks_too_small_for_their_slopes_are_refused():
    """Rows below NARROW of the block's largest entry: no divide and conquer (None)."""
    t = _coupled(160, 32, 1e-37, 1e-18, np.float32)
    d, e = kael.tensor(np.diag(t).copy()), kael.tensor(np.diag(t, 1).copy())
    assert tridiagonal.eigh(d, e) is None
    t = _coupled(160, 32, 1e-10, 1e-5, np.float32)  # within range: divided
    assert tridiagonal.eigh(kael.tensor(np.diag(t).copy()), kael.tensor(np.diag(t, 1).copy()))


@pytest.mark.parametrize("case", ["diagonal", "pairs"])
def test_many_small_blocks_are_solved_in_one_batch_a_size(case, monkeypatch):
    """A diagonal T (n one-row blocks) or 2 x 2 blocks: one QL batch per block size, not
    a divide and conquer per block (the review's 600 diagonal took 245 ms)."""
    from kael.frontend import spectral

    n = 300
    rng = np.random.default_rng(3)
    d, e = rng.standard_normal(n), np.zeros(n - 1)
    if case == "pairs":
        e[::2] = rng.standard_normal(len(e[::2]))
    batches = []
    solve = spectral.tridiagonal_eigh
    monkeypatch.setattr(
        spectral, "tridiagonal_eigh", lambda d, e: batches.append(d.shape) or solve(d, e)
    )
    _check(d, e, 1e-14)
    assert batches == [(n, 1)] if case == "diagonal" else batches == [(n // 2, 2)]


@pytest.mark.parametrize("seed", [5, 18])
def test_eigh_of_a_large_tridiagonal_matrix_has_small_residuals(seed):
    """Through kael.linalg.eigh (divide and conquer from spectral.DIVIDE rows): a random
    tridiagonal matrix, whose merges once met the model's cancelling root."""
    rng = np.random.default_rng(seed)
    n = 600
    e = rng.standard_normal(n - 1)
    a = np.diag(rng.standard_normal(n)) + np.diag(e, 1) + np.diag(e, -1)
    w, v = kael.linalg.eigh(kael.tensor(a))
    w, v = w.numpy(), v.numpy()
    np.testing.assert_allclose(w, torch.linalg.eigvalsh(torch.tensor(a)).numpy(), atol=1e-12)
    np.testing.assert_allclose(a @ v - v * w, 0, atol=1e-12)
    np.testing.assert_allclose(v.T @ v, np.eye(n), atol=1e-12)
