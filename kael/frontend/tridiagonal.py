"""The eigenpairs of a symmetric tridiagonal matrix by divide and conquer (LAPACK's
dstedc): what eigh of one large matrix runs after the reduction to tridiagonal form,
in place of the QL iteration's rotations of Q (most of its time).

T splits at its middle off-diagonal beta: T = diag(T1', T2') + |beta| w w^T, T1' and T2'
the halves with |beta| taken off the two diagonal entries beside the split and w =
e_last + sign(beta) e_first. The halves split again down to at most LEAF rows; the leaves
(every split's diagonal change made first) are solved together by eigh's own kernels on
their small dense matrices, one batch per leaf size. Each merge's rank-one problem
diag(eigenvalues) + |beta| z z^T, z the halves' vectors' coordinates beside the split, is
codegen/cpu/secular.py's kernel, and the halves' vectors times its vectors are the merged
vectors: two matrix products (the merge's O(n^3) work). Vectors are kept as columns:
eigh applies the reduction's reflectors to them in blocks (dormtr), forming no Q.
"""

from __future__ import annotations

from kael.codegen.cpu import gemm_run, secular
from kael.frontend import factories, index_ops
from kael.frontend.factorizations import working_buffer
from kael.frontend.tensor import Tensor
from kael.runtime.dtypes import int64

LEAF = 32  # the most rows a block is solved whole


def eigh(d: Tensor, e: Tensor) -> tuple[Tensor, Tensor]:
    """(eigenvalues ascending [n], eigenvectors as columns [n, n], unit-stride rows) of
    the tridiagonal matrix with diagonal d [n] and off-diagonal e [n - 1] (one dtype)."""
    n = d.shape[0]
    # T scaled to a largest entry of 1, as dstedc scales it: the merges' slopes z^2 / (d -
    # x)^2 would overflow for a tiny T (and underflow for a huge one)
    top = max(float(d.abs().max()), float(e.abs().max()) if n > 1 else 0.0)
    scale = 1.0 / top if 0 < top < float("inf") else 1.0
    d, e = d * scale, e * scale
    betas = e.tolist()
    ranges = _ranges(0, n)
    for p, _ in ranges[1:]:  # every split is a leaf's start: it takes |beta| off the
        d[p - 1 : p + 1] -= abs(betas[p - 1])  # diagonal entries beside it
    leaves = _leaves(d, e, ranges)
    values, vectors = _solve(0, n, e.contiguous(), betas, leaves)
    return values / scale, vectors


def _ranges(lo: int, hi: int) -> list[tuple[int, int]]:
    """The leaves of [lo, hi), in order."""
    if hi - lo <= LEAF:
        return [(lo, hi)]
    mid = lo + (hi - lo) // 2
    return _ranges(lo, mid) + _ranges(mid, hi)


def _leaves(d: Tensor, e: Tensor, ranges: list[tuple[int, int]]) -> dict:
    """Each leaf's (eigenvalues, eigenvectors as columns) by its first row: the leaves of
    a size as one batch through eigh's QL kernels (spectral.tridiagonal_eigh)."""
    from kael.frontend import spectral  # spectral imports this module

    by_size: dict[int, list[int]] = {}
    for lo, hi in ranges:
        by_size.setdefault(hi - lo, []).append(lo)
    solved = {}
    for size, starts in by_size.items():
        if len(by_size) == 1:  # equal leaves tile T: its diagonals, cut into rows of size
            diagonals = d.reshape(-1, size)
            padded = index_ops.cat([e, factories.zeros(1, dtype=e.dtype)])  # n long
            off = padded.reshape(-1, size)[:, : size - 1]
        else:
            diagonals = index_ops.stack([d[lo : lo + size] for lo in starts])
            off = index_ops.stack([e[lo : lo + size - 1] for lo in starts])
        values, rows = spectral.tridiagonal_eigh(diagonals.contiguous(), off.contiguous())
        columns = rows.mT.contiguous()
        for q, lo in enumerate(starts):
            solved[lo] = (values[q], columns[q])
    return solved


def _solve(lo: int, hi: int, e: Tensor, betas: list[float], leaves: dict):
    """The eigenpairs (values, vectors as columns) of the block [lo, hi) of T (its
    splits' diagonal changes made; e its off-diagonal, betas e's values)."""
    n = hi - lo
    if n <= LEAF:
        return leaves[lo]
    n1 = n // 2
    mid = lo + n1
    values1, cols1 = _solve(lo, mid, e, betas, leaves)
    values2, cols2 = _solve(mid, hi, e, betas, leaves)
    beta = betas[mid - 1]
    cols = working_buffer((n, n), values1.dtype)  # padded rows: the products walk them
    if beta == 0:  # T splits here: the halves' eigenpairs, merged in order
        dvals = index_ops.cat([values1, values2])
        cols.zero_()
        cols[:n1, :n1] = cols1
        cols[n1:, n1:] = cols2
        order = dvals.argsort(stable=True)
        return dvals[order], cols[:, order]
    ut = factories.empty((n, n), dtype=cols.dtype)
    values = factories.empty(n, dtype=cols.dtype)
    floats, ints = secular.work_sizes(n)
    work, index = factories.empty(floats, dtype=cols.dtype), factories.empty(ints, dtype=int64)
    # z: the first half's vectors' last coordinates (row n1 - 1), the second's first
    halves = (values1._impl, values2._impl, cols1[n1 - 1]._impl, cols2[0]._impl)
    secular.merge(halves, e[mid - 1 : mid]._impl, ut._impl, values._impl, work._impl,
                  index._impl)  # fmt: skip
    # the merged vectors: each half's vectors times U's rows of that half (U = ut^T)
    gemm_run.matmul(cols[:n1]._impl, cols1._impl, ut[:, :n1].mT._impl)
    gemm_run.matmul(cols[n1:]._impl, cols2._impl, ut[:, n1:].mT._impl)
    return values, cols
