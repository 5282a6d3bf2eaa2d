"""The divide-and-conquer merge (codegen/cpu/secular.py): the eigenpairs of D + rho z z^T
from two ascending halves, against NumPy's dense eigensolver, through deflation (tiny
z, poles that meet), tiny and huge scales, and float32."""

import numpy as np
import pytest

import kael
from kael.codegen.cpu import secular

DTYPES = {np.float64: (kael.float64, 1e-13), np.float32: (kael.float32, 2e-5)}


def _merge(d: np.ndarray, z: np.ndarray, beta: float, n1: int):
    """(eigenvalues, eigenvectors as columns) by the kernel of diag(d) + |beta| z' z'^T,
    z' = z with its second half times beta's sign (d's halves at n1 ascending)."""
    dtype, _ = DTYPES[d.dtype.type]
    n = d.shape[0]
    ut, lam = kael.empty(n, n, dtype=dtype), kael.empty(n, dtype=dtype)
    floats, ints = secular.work_sizes(n)
    work, index = kael.empty(floats, dtype=dtype), kael.empty(ints, dtype=kael.int64)
    halves = [kael.tensor(x) for x in (d[:n1], d[n1:], z[:n1], z[n1:])]
    coupling = kael.tensor(np.array([beta], d.dtype))
    secular.merge([h._impl for h in halves], coupling._impl, ut._impl, lam._impl,
                  work._impl, index._impl)  # fmt: skip
    return lam.numpy().astype(np.float64), ut.numpy().T.astype(np.float64)


def _check(d, z, beta, n1, tol):
    lam, u = _merge(d, z, beta, n1)
    signed = np.concatenate([z[:n1], np.sign(beta) * z[n1:]]).astype(np.float64)
    m = np.diag(d.astype(np.float64)) + abs(beta) * np.outer(signed, signed)
    scale = np.abs(m).max()
    np.testing.assert_allclose(lam, np.linalg.eigvalsh(m), rtol=0, atol=tol * scale * len(d))
    assert np.all(np.diff(lam) >= 0)  # ascending
    np.testing.assert_allclose(m @ u - u * lam, 0, atol=tol * scale * len(d))
    np.testing.assert_allclose(u.T @ u, np.eye(len(d)), atol=tol * len(d))


@pytest.mark.parametrize("n, n1", [(2, 1), (5, 2), (17, 16), (64, 32), (130, 65)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_merge_gives_the_eigenpairs_of_the_rank_one_update(n, n1, dtype):
    rng = np.random.default_rng(n)
    halves = np.sort(rng.standard_normal(n1)), np.sort(rng.standard_normal(n - n1))
    d = np.concatenate(halves).astype(dtype)
    _check(d, rng.standard_normal(n).astype(dtype), 0.7, n1, DTYPES[dtype][1])
    _check(d, rng.standard_normal(n).astype(dtype), -1.9, n1, DTYPES[dtype][1])  # sign


@pytest.mark.parametrize("case", ["tiny_z", "one_z", "equal_poles", "near_poles", "equal_all"])
def test_deflation_keeps_the_vectors_orthogonal(case):
    """A z of rounding's size leaves its pole an eigenvalue; poles that meet are rotated
    into one (Givens), the other left: either way the vectors stay orthonormal."""
    rng = np.random.default_rng(3)
    n, n1 = 48, 24
    first = np.sort(rng.standard_normal(n1))
    second = np.sort(rng.standard_normal(n - n1))
    z = rng.standard_normal(n)
    if case == "tiny_z":
        z[::3] *= 1e-20
    elif case == "one_z":
        z[:] = 0
        z[7] = 1.0
    elif case == "equal_poles":
        second = first.copy()
    elif case == "near_poles":
        second = first + 1e-15 * rng.standard_normal(n1)
        second.sort()
    else:
        first[:], second[:] = 1.0, 1.0
    _check(np.concatenate([first, second]), z, 1.3, n1, 1e-13)


@pytest.mark.parametrize("scale", [1e-150, 1e-100, 1e100, 1e150])
def test_tiny_and_huge_scales_neither_overflow_nor_underflow(scale):
    """Roots right beside a pole give vector entries whose squares would over- or
    underflow at these scales: the norm is taken scaled by the largest."""
    rng = np.random.default_rng(5)
    n, n1 = 64, 32
    d = np.concatenate([np.sort(rng.standard_normal(n1)), np.sort(rng.standard_normal(n1))])
    z = rng.standard_normal(n)
    lam, u = _merge(d * scale, z, 0.9 * scale, n1)
    want, _ = _merge(d, z, 0.9, n1)
    np.testing.assert_allclose(lam / scale, want, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(u.T @ u, np.eye(n), atol=1e-13)


@pytest.mark.parametrize("dtype, seeds", [(np.float64, 300), (np.float32, 100)])
def test_merges_of_solved_tridiagonal_halves_find_every_root(dtype, seeds):
    """The merges divide and conquer makes (the halves' eigenvalues, their vectors' rows
    beside the split): the two-pole model's root taken without cancellation whatever the
    sign of its linear term (a cancelling form stopped at roots 1e-2 off)."""
    tol = DTYPES[dtype][1]
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        h = 19
        halves = []
        for _ in range(2):
            off = rng.standard_normal(h - 1)
            halves.append(np.linalg.eigh(np.diag(rng.standard_normal(h)) + np.diag(off, 1)
                                         + np.diag(off, -1)))  # fmt: skip
        (w1, v1), (w2, v2) = halves
        d = np.concatenate([w1, w2]).astype(dtype)
        z = np.concatenate([v1[-1], v2[0]]).astype(dtype)
        _check(d, z, float(dtype(abs(rng.standard_normal()))), h, tol)
