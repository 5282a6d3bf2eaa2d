"""Blocked LU, Cholesky and triangular solves of one large matrix, as LAPACK's getrf,
potrf and trsm are blocked: panels of BLOCK columns by the dense kernels
(codegen/cpu/lu_panel.py, factorize.py, triangular.py), and the trailing updates, where
nearly all the multiply-adds are, by kael's matrix product (codegen/cpu/gemm*.py, on
every thread).

A batch of matrices runs one dense kernel per matrix instead (the threads split the
batch); these drivers are for a single matrix of at least MIN_BLOCKED rows, where one
thread's unblocked kernel would leave the other threads idle and stream the trailing
matrix through the cache once per column.
"""

from __future__ import annotations

from kael.codegen.cpu import factorize, gemm_run, lu_panel, pair, triangular
from kael.frontend import factories
from kael.frontend.tensor import Tensor
from kael.runtime.dtypes import int64

BLOCK = 64
MIN_BLOCKED = 192  # rows from which one matrix is factored in panels


def subtract_product(c: Tensor, a: Tensor, b: Tensor) -> None:
    """c -= a @ b, subtracted from c by the product's own kernel where the plan allows."""
    if not gemm_run.accumulate_into(c._impl, a._impl, b._impl, subtract=True):
        c.sub_(a @ b)


def subtract_ahead(c: Tensor, a: Tensor, b: Tensor, lead: int, after: tuple) -> None:
    """c -= a @ b, then the prepared launch `after` (kernel, words, items), with
    look-ahead: c's first `lead` columns are updated first, and `after` (which may use
    those columns but touches none of the others) runs as one item of the launch for the
    rest of the product (codegen/cpu/pair.py), on the calling thread while the other
    threads start on the product. The same launches one after another where the product's
    kernel cannot take it along; the bits are the same either way."""
    rest = c[:, lead:]
    head = gemm_run.subtracting(c[:, :lead]._impl, a._impl, b[:, :lead]._impl) if lead else ([], 0)
    if head is None or not rest.shape[-1]:
        subtract_product(c, a, b)
        pair.run_in_order([after])
        return
    steps, _buffer = head  # the buffer lives until the launches end
    chain = (*steps, after)
    if not gemm_run.accumulate_into(
        rest._impl, a._impl, b[:, lead:]._impl, subtract=True, alongside=chain
    ):
        pair.run_in_order(chain)
        subtract_product(rest, a, b[:, lead:])


def lu(a: Tensor, piv: Tensor, info: Tensor) -> None:
    """P A = L U in place for the n x n part of `a` [n, n + k] (unit-stride rows); 0-based
    pivots into `piv` [n], LAPACK's info (the first zero pivot's 1-based column, 0 when
    none) into `info` [1]. The k columns right of A take every interchange and update,
    so they end as L^-1 P B: a solve's right-hand sides, forward-substituted by the
    factorization's own products (getrs's first triangular solve and its interchanges
    need no pass of their own).

    With look-ahead: each trailing update first updates the next panel's columns, then
    the rest of it runs in one launch with the next panel's factorization, which takes
    the calling thread while the other threads start on the product (codegen/cpu/
    pair.py); that panel's interchanges reach the columns outside it after both."""
    n, width = a.shape[-2:]
    scratch = factories.empty(BLOCK * (n + lu_panel.PAD), dtype=a.dtype)

    def panel(j: int, whole_rows: bool = True) -> tuple:
        """The factorization of the panel at row and column j, prepared (lu_panel)."""
        nb = min(BLOCK, n - j)
        args = (a[j:, j : j + nb]._impl, scratch._impl, piv[j : j + nb]._impl, info._impl)
        return lu_panel.prepared(*args, (j, width), whole_rows)

    pair.run_in_order([panel(0)])
    for j in range(0, n, BLOCK):
        nb = min(BLOCK, n - j)
        if j + nb >= width:
            break
        right = a[j : j + nb, j + nb :]
        triangular.solve(a[j : j + nb, j : j + nb]._impl, right._impl, 1, lower=True, unit=True)
        if j + nb >= n:
            break
        j2 = j + nb
        nb2 = min(BLOCK, n - j2)
        subtract_ahead(a[j2:, j2:], a[j2:, j:j2], right, nb2, panel(j2, whole_rows=False))
        moves = (piv[j2 : j2 + nb2] - j2)._impl
        for outside in (a[j2:, :j2], a[j2:, j2 + nb2 :]):  # its interchanges, left and right
            if outside.shape[-1]:
                triangular.permute(outside._impl, moves, 1)


def cholesky(a: Tensor) -> int:
    """The lower Cholesky factor of the contiguous n x n `a` in place (its strict upper
    part zeroed); returns LAPACK's info (the order of the first leading minor that is not
    positive-definite, 0 when none)."""
    n = a.shape[-1]
    info = factories.zeros(1, dtype=int64)
    for j in range(0, n, BLOCK):
        nb = min(BLOCK, n - j)
        diagonal = a[j : j + nb, j : j + nb]
        factorize.cholesky(diagonal._impl, info._impl, 1)
        if code := info.item():
            return j + code
        if j + nb < n:
            # L21 = A21 L11^-T, through L11's inverse (a small triangular solve), so the
            # product runs in the matrix-product kernel.
            inverse = factories.eye(nb, dtype=a.dtype)
            triangular.solve(diagonal._impl, inverse._impl, 1, lower=True)
            below = a[j + nb :, j : j + nb]
            below.copy_(below @ inverse.mT)
            subtract_product(a[j + nb :, j + nb :], below, below.mT)
            a[j : j + nb, j + nb :].zero_()
    return 0


def solve(
    a: Tensor,
    x: Tensor,
    *,
    lower: bool,
    unit: bool = False,
    trans: bool = False,
    lower_rhs: bool = False,
) -> None:
    """op(T) X = B in place in `x` [n, k] (unit-stride rows): T the lower or upper triangle
    of the n x n `a`, op the transpose when `trans`. Left-looking, a block row at a time:
    one matrix product takes everything the rows solved before it contribute (depth up to
    n, so the product runs at the kernel's speed and writes only the block row, where a
    right-looking update of depth BLOCK streamed every later row through the cache each
    step: solve_triangular of 512 x 512 by 512, 2.4 -> 2.1 ms), then the diagonal block
    by the triangular kernel. `lower_rhs` (op(T) lower): B, and so X, is zero right of the
    diagonal (the identity: X = T^-1), and each block row's columns past its diagonal
    block are skipped, as are the solved rows' zero columns: a third of the multiply-adds
    of a full right-hand side."""
    n = a.shape[-1]
    starts = list(range(0, n, BLOCK))
    forward = lower != trans  # op(T) is lower: block rows top to bottom
    assert forward or not lower_rhs

    def op(r0: int, r1: int, c0: int, c1: int) -> Tensor:
        return a[c0:c1, r0:r1].mT if trans else a[r0:r1, c0:c1]

    for i0 in starts if forward else reversed(starts):
        i1 = min(i0 + BLOCK, n)
        s0, s1 = (0, i0) if forward else (i1, n)  # the rows solved before
        columns = i1 if lower_rhs else x.shape[-1]
        known = i0 if lower_rhs else columns  # the solved rows' columns that are not zero
        if s1 > s0 and known:
            subtract_product(x[i0:i1, :known], op(i0, i1, s0, s1), x[s0:s1, :known])
        block, diagonal = x[i0:i1, :columns], a[i0:i1, i0:i1]
        triangular.solve(diagonal._impl, block._impl, 1, lower=lower, unit=unit, trans=trans)
