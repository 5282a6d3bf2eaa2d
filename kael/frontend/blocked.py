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
from kael.frontend.views import narrowed, reverse_dims
from kael.runtime.dtypes import int64
from kael.runtime.tensor_impl import TensorImpl

BLOCK = 64
MIN_BLOCKED = 192  # rows from which one matrix is factored in panels


def subtract_product(c: Tensor, a: Tensor, b: Tensor) -> None:
    """c -= a @ b, subtracted from c by the product's own kernel where the plan allows."""
    _subtract(c._impl, a._impl, b._impl)


def _subtract(c: TensorImpl, a: TensorImpl, b: TensorImpl) -> None:
    if not gemm_run.accumulate_into(c, a, b, subtract=True):
        Tensor(c).sub_(Tensor(a) @ Tensor(b))


def window(t: TensorImpl, r0: int, r1: int, c0: int, c1: int) -> TensorImpl:
    """Rows [r0, r1) and columns [c0, c1) of the 2-d impl `t`, a view made directly
    (views.narrowed): the blocked loops take a dozen views a step (under 1 us each here,
    1.7 us as a Tensor's slice)."""
    return narrowed(narrowed(t, 0, r0, r1 - r0), 1, c0, c1 - c0)


def subtract_ahead(c: TensorImpl, a: TensorImpl, b: TensorImpl, lead: int, after: tuple):
    """c -= a @ b (2-d impls), then the prepared launch `after` (kernel, words, items),
    with look-ahead: c's first `lead` columns are updated first, and `after` (which may
    use those columns but touches none of the others) runs as one item of the launch for
    the rest of the product (codegen/cpu/pair.py), on the calling thread while the other
    threads start on the product. The same launches one after another where the product's
    kernel cannot take it along; the bits are the same either way."""
    (rows, width), inner = c.shape, a.shape[1]
    rest, rest_b = window(c, 0, rows, lead, width), window(b, 0, inner, lead, width)
    head = ([], 0)
    if lead:
        head = gemm_run.subtracting(window(c, 0, rows, 0, lead), a, window(b, 0, inner, 0, lead))
    if head is None or lead == width:
        _subtract(c, a, b)
        pair.run_in_order([after])
        return
    steps, _buffer = head  # the buffer lives until the launches end
    chain = (*steps, after)
    if not gemm_run.accumulate_into(rest, a, rest_b, subtract=True, alongside=chain):
        pair.run_in_order(chain)
        _subtract(rest, a, rest_b)


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
    scratch = factories.empty(BLOCK * (n + lu_panel.PAD), dtype=a.dtype)._impl
    m, pivots = a._impl, piv._impl

    def panel(j: int, whole_rows: bool = True) -> tuple:
        """The factorization of the panel at row and column j, prepared (lu_panel)."""
        nb = min(BLOCK, n - j)
        args = (window(m, j, n, j, j + nb), scratch, narrowed(pivots, 0, j, nb), info._impl)
        return lu_panel.prepared(*args, (j, width), whole_rows)

    pair.run_in_order([panel(0)])
    for j in range(0, n, BLOCK):
        nb = min(BLOCK, n - j)
        j2 = j + nb
        if j2 >= width:
            break
        right = window(m, j, j2, j2, width)
        triangular.solve(window(m, j, j2, j, j2), right, 1, lower=True, unit=True)
        if j2 >= n:
            break
        nb2 = min(BLOCK, n - j2)
        trailing, below = window(m, j2, n, j2, width), window(m, j2, n, j, j2)
        subtract_ahead(trailing, below, right, nb2, panel(j2, whole_rows=False))
        moves = narrowed(pivots, 0, j2, nb2)
        for c0, c1 in ((0, j2), (j2 + nb2, width)):  # its interchanges, left and right
            if c1 > c0:
                triangular.permute(window(m, j2, n, c0, c1), moves, 1, base=j2)


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
    t, b = a._impl, x._impl

    def op(r0: int, r1: int, c0: int, c1: int) -> TensorImpl:
        """Rows [r0, r1) and columns [c0, c1) of op(T)."""
        return reverse_dims(window(t, c0, c1, r0, r1)) if trans else window(t, r0, r1, c0, c1)

    for i0 in starts if forward else reversed(starts):
        i1 = min(i0 + BLOCK, n)
        s0, s1 = (0, i0) if forward else (i1, n)  # the rows solved before
        columns = i1 if lower_rhs else x.shape[-1]
        known = i0 if lower_rhs else columns  # the solved rows' columns that are not zero
        if s1 > s0 and known:
            _subtract(window(b, i0, i1, 0, known), op(i0, i1, s0, s1), window(b, s0, s1, 0, known))
        block, diagonal = window(b, i0, i1, 0, columns), window(t, i0, i1, i0, i1)
        triangular.solve(diagonal, block, 1, lower=lower, unit=unit, trans=trans)
