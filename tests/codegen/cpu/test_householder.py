"""The Householder kernels' block form (codegen/cpu/householder.py): V written out and
larft's T from G = V^T V give H_0 ... H_{k-1} = I - V T V^T, as LAPACK's larft."""

import numpy as np
import pytest

import kael
from kael.codegen.cpu import householder


@pytest.mark.parametrize("m, k", [(1, 1), (7, 3), (70, 64), (9, 9)])
@pytest.mark.parametrize("dtype", [kael.float64, kael.float32])
def test_block_of_reflectors_is_i_minus_v_t_vt(m, k, dtype):
    rng = np.random.default_rng(m * k)
    a = rng.standard_normal((2, m, k))  # a batch of two blocks
    vs = np.tril(a, -1) + np.eye(m, k)
    taus = 2 / (vs * vs).sum(axis=1)  # true reflectors (orthogonal), so the product is O(1)
    taus[1, 1 % k] = 0.0  # an identity reflector
    a, tau = kael.tensor(a).to(dtype), kael.tensor(taus).to(dtype)
    v = kael.empty(2, m, k, dtype=dtype)
    householder.reflectors(a._impl, v._impl, 2)
    t = kael.empty(2, k, k, dtype=dtype)
    householder.larft((v.mT @ v)._impl, tau._impl, t._impl, 2)
    tol = 1e-4 if dtype is kael.float32 else 1e-12
    for item in range(2):
        vs, taus = v[item].numpy().astype(np.float64), tau[item].numpy().astype(np.float64)
        np.testing.assert_array_equal(np.triu(vs), np.eye(m, k))  # unit lower, zeros above
        np.testing.assert_array_equal(np.tril(vs, -1), np.tril(a[item].numpy(), -1))
        product = np.eye(m)
        for i in range(k):
            product = product @ (np.eye(m) - taus[i] * np.outer(vs[:, i], vs[:, i]))
        block = np.eye(m) - vs @ t[item].numpy() @ vs.T
        np.testing.assert_allclose(block, product, rtol=tol, atol=tol)
        assert np.allclose(np.tril(t[item].numpy(), -1), 0) and np.allclose(
            np.diag(t[item].numpy()), taus, rtol=tol
        )


def _both(op: str, a: np.ndarray, tau: np.ndarray | None = None):
    """(matrix, tau) after the row kernel and after the column-major panel kernel run `op`
    on one m x n matrix (its rows PAD-padded, as a panel of a larger one is)."""
    m, n = a.shape
    k = min(m, n) if tau is None else tau.shape[0]
    out = []
    for panel in (False, True):
        x = kael.tensor(np.pad(a, ((0, 0), (0, 3))))[:, :n]
        t = kael.zeros(k, dtype=x.dtype) if tau is None else kael.tensor(tau.copy())
        if panel:
            scratch = kael.empty(n * (m + householder.PAD), dtype=x.dtype)
            householder.panel(op, x._impl, t._impl, scratch._impl)
        else:
            work = kael.empty(1, n, dtype=x.dtype)
            getattr(householder, op)(x[None]._impl, t[None]._impl, work._impl, 1)
        out.append((x.numpy(), t.numpy()))
    return out


SHAPES = [(1, 1), (5, 3), (3, 5), (9, 8), (64, 64), (300, 64), (130, 128), (17, 1)]


@pytest.mark.parametrize("m, n", SHAPES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_panel_walks_the_row_kernels_reflectors_and_q(m, n, dtype):
    """geqr2 and org2r walked column-major through a transposed copy give the row
    kernels' R, reflectors, tau and Q (up to rounding: their sums run in another order)."""
    a = np.random.default_rng(m + n).standard_normal((m, n)).astype(dtype)
    tol = 2e-4 if dtype is np.float32 else 1e-11
    (rows, tau_rows), (cols, tau_cols) = _both("geqr2", a)
    np.testing.assert_allclose(cols, rows, rtol=tol, atol=tol)
    np.testing.assert_allclose(tau_cols, tau_rows, rtol=tol, atol=tol)
    if m >= n:  # org2r: Q's first n columns from the k reflectors
        (q_rows, _), (q_cols, _) = _both("org2r", rows, tau_rows)
        np.testing.assert_allclose(q_cols, q_rows, rtol=tol, atol=tol)
        np.testing.assert_allclose(q_cols.T @ q_cols, np.eye(n), atol=10 * tol)


@pytest.mark.parametrize("case", ["zero_column", "nan", "infinity", "tiny"])
def test_panel_keeps_larfgs_rules(case):
    """A zero column below the diagonal is no reflection (tau 0); NaN and infinity reach
    the same entries as the row kernel's; a column of tiny values is scaled, not lost."""
    a = np.random.default_rng(5).standard_normal((40, 12))
    if case == "zero_column":
        a[1:, 0] = 0  # already R's first column
    elif case == "nan":
        a[20, 4] = np.nan
    elif case == "infinity":
        a[20, 4] = np.inf
    else:
        a[:, 5] *= 1e-300
    (rows, tau_rows), (cols, tau_cols) = _both("geqr2", a)
    np.testing.assert_array_equal(np.isnan(cols), np.isnan(rows))
    np.testing.assert_array_equal(np.isnan(tau_cols), np.isnan(tau_rows))
    finite = np.isfinite(rows)
    np.testing.assert_allclose(cols[finite], rows[finite], rtol=1e-11, atol=1e-300)
    if case == "zero_column":
        assert tau_cols[0] == tau_rows[0] == 0


@pytest.mark.parametrize("batch", [1, 3])
def test_zero_clears_each_block_and_nothing_else(batch):
    """orgqr's rows above a panel: each [m, n] block of a strided batch set to 0."""
    x = np.random.default_rng(batch).standard_normal((batch, 7, 9)) + 5.0
    t = kael.tensor(x.copy())
    householder.zero(t[:, 1:4, 2:6]._impl, batch)
    want = x.copy()
    want[:, 1:4, 2:6] = 0
    np.testing.assert_array_equal(t.numpy(), want)


def test_reflectors_read_a_transposed_block_in_place():
    """eigh's back-transformation reads its reflectors, rows of the reduced matrix, as
    the columns of a transposed view: the same V as from a contiguous copy."""
    a = np.random.default_rng(2).standard_normal((9, 12))
    block = kael.tensor(a)[2:6, 3:].mT.unsqueeze(0)  # [1, 9, 4], strides (., 1, 12)
    got, want = kael.empty(1, 9, 4, dtype=kael.float64), kael.empty(1, 9, 4, dtype=kael.float64)
    householder.reflectors(block._impl, got._impl, 1)
    householder.reflectors(block.contiguous()._impl, want._impl, 1)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(np.triu(got.numpy()[0], 1), 0)
    np.testing.assert_array_equal(np.diagonal(got.numpy()[0]), 1)
