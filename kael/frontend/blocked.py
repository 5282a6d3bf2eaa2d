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

from dataclasses import dataclass
from functools import partial

from kael.codegen.cpu import (
    factorize,
    gemm_run,
    householder,
    lu_panel,
    pair,
    program,
    triangular,
)
from kael.codegen.cpu.program import Program
from kael.frontend import factories
from kael.frontend.tensor import Tensor
from kael.frontend.views import derive, narrowed, reverse_dims, selected
from kael.runtime.dtypes import int64
from kael.runtime.errors import Error
from kael.runtime.tensor_impl import TensorImpl, host_ptr
from kael.runtime.threadpool import get_num_threads

BLOCK = 64
MIN_BLOCKED = 192  # rows from which one matrix is factored in panels


def window(t: TensorImpl, r0: int, r1: int, c0: int, c1: int) -> TensorImpl:
    """Rows [r0, r1) and columns [c0, c1) of the 2-d impl `t`, a view made directly
    (views.narrowed): the blocked loops take a dozen views a step (under 1 us each here,
    1.7 us as a Tensor's slice)."""
    return narrowed(narrowed(t, 0, r0, r1 - r0), 1, c0, c1 - c0)


def ahead(into: Program, c: TensorImpl, a: TensorImpl, b: TensorImpl, lead: int, after):
    """Add to program `into` c -= a @ b, then the prepared launch `after`, with look-ahead: c's
    first `lead` columns are updated first, and `after` (which may use those columns but
    touches none of the others) runs as one item of the launch for the rest of the
    product (codegen/cpu/pair.py), on the calling thread while the other threads start on
    the product. The same launches one after another where the product's kernel cannot
    take it along (the last, whose product is all head): the bits are the same either way."""
    (rows, width), inner = c.shape, a.shape[1]
    rest, rest_b = window(c, 0, rows, lead, width), window(b, 0, inner, lead, width)
    head = []
    if lead:
        head_c, head_b = window(c, 0, rows, 0, lead), window(b, 0, inner, 0, lead)
        head = gemm_run.subtracting(into, head_c, a, head_b)
    chain = (*head, after)
    if lead == width:  # no rest: the whole product is the head
        into.add(*pair.in_order(chain))
    else:
        into.add(*gemm_run.adding_steps(into, rest, a, rest_b, True, alongside=chain))


def lu(a: Tensor, piv: Tensor, info: Tensor, *, lower: bool = True) -> None:
    """P A = L U in place for the n x n part of `a` [n, n + k] (unit-stride rows); 0-based
    pivots into `piv` [n], LAPACK's info (the first zero pivot's 1-based column, 0 when
    none) into `info` [1]. The k columns right of A take every interchange and update,
    so they end as L^-1 P B: a solve's right-hand sides, forward-substituted by the
    factorization's own products (getrs's first triangular solve and its interchanges
    need no pass of their own).

    With look-ahead: each trailing update first updates the next panel's columns, then
    the rest of it runs in one launch with the next panel's factorization, which takes
    the calling thread while the other threads start on the product (codegen/cpu/
    pair.py); that panel's interchanges reach the columns right of it after both. The
    columns left of it (L's) take them at the end, each block of columns every later
    panel's in one launch over the threads (`lower`; solve and det read only U, and skip
    them): a pass a panel, right after the other thread's product wrote those rows, cost
    a 512 LU 0.3 ms on two threads. The launches are a program (codegen/cpu/program.py),
    built once for the layout."""
    impls = (a._impl, piv._impl, info._impl)
    program.run(("lu", lower, get_num_threads()), impls, partial(_lu_program, lower=lower))


def _lu_program(m: TensorImpl, pivots: TensorImpl, info: TensorImpl, lower: bool) -> Program:
    """lu's launches on these impls (see lu)."""
    n, width = m.shape
    held = Program()
    scratch = held.scratch(BLOCK * (n + lu_panel.PAD), m.dtype)

    def panel(j: int, whole_rows: bool = True) -> tuple:
        """The factorization of the panel at row and column j, prepared (lu_panel)."""
        nb = min(BLOCK, n - j)
        args = (window(m, j, n, j, j + nb), scratch, narrowed(pivots, 0, j, nb), info)
        return lu_panel.prepared(*args, (j, width), whole_rows)

    held.add(*pair.in_order([panel(0)]))
    for j in range(0, n, BLOCK):
        nb = min(BLOCK, n - j)
        j2 = j + nb
        if j2 >= width:
            break
        right = window(m, j, j2, j2, width)
        triangular.solve(window(m, j, j2, j, j2), right, 1, lower=True, unit=True, into=held)
        if j2 >= n:
            break
        nb2 = min(BLOCK, n - j2)
        trailing, below = window(m, j2, n, j2, width), window(m, j2, n, j, j2)
        ahead(held, trailing, below, right, nb2, panel(j2, whole_rows=False))
        if j2 + nb2 < width:  # its interchanges right of it
            moves = narrowed(pivots, 0, j2, nb2)
            triangular.permute(window(m, j2, n, j2 + nb2, width), moves, 1, base=j2, into=held)
    if lower and n > BLOCK:
        # column block k takes the interchanges of rows (k + 1) BLOCK on
        blocks, ld = -(-n // BLOCK) - 1, m.strides[0]
        below = derive(m, (blocks, n - BLOCK, BLOCK), (BLOCK, ld, 1), m.offset + BLOCK * ld)
        later = narrowed(pivots, 0, BLOCK, n - BLOCK)
        triangular.permute(below, later, blocks, base=BLOCK, lag=BLOCK, into=held)
    return held


def cholesky(a: Tensor) -> int:
    """The lower Cholesky factor of the contiguous n x n `a` in place (its strict upper
    part zeroed); returns LAPACK's info (the order of the first leading minor that is not
    positive-definite, 0 when none). A program (codegen/cpu/program.py), built once for
    the layout: every panel runs, each writing its own info; past a failed panel the
    factor is not LAPACK's partial state (the later panels factor what the failed one
    left)."""
    n = a.shape[-1]
    infos = factories.zeros(-(-n // BLOCK), dtype=int64)  # one a panel
    program.run(("cholesky", get_num_threads()), (a._impl, infos._impl), _cholesky_program)
    for k, code in enumerate(infos.tolist()):
        if code:
            return k * BLOCK + code
    return 0


def _cholesky_program(a: TensorImpl, infos: TensorImpl) -> Program:
    """cholesky's launches on these impls: per panel its diagonal block's factor, then
    L21 = A21 L11^-T through L11's inverse (a small triangular solve), so that the
    product runs in the matrix-product kernel, and the trailing update."""
    n = a.shape[-1]
    held = Program()
    inverse = held.scratch(BLOCK * BLOCK, a.dtype)
    copy = held.scratch((n - min(BLOCK, n)) * BLOCK, a.dtype)  # A21, read by its product
    for j in range(0, n, BLOCK):
        nb = min(BLOCK, n - j)
        diagonal = window(a, j, j + nb, j, j + nb)
        factorize.cholesky(diagonal, selected(infos, 0, j // BLOCK), 1, held)
        rows = n - j - nb
        if not rows:
            break
        square = derive(inverse, (nb, nb), (nb, 1), 0)
        factorize.block("identity", square, into=held)
        triangular.solve(diagonal, square, 1, lower=True, into=held)
        below, was = window(a, j + nb, n, j, j + nb), derive(copy, (rows, nb), (nb, 1), 0)
        factorize.block("copy", was, below, held)
        gemm_run.product_steps(held, below, was, reverse_dims(square))
        trailing = window(a, j + nb, n, j + nb, n)
        held.add(*gemm_run.adding_steps(held, trailing, below, reverse_dims(below), True))
        householder.zero(window(a, j, j + nb, j + nb, n), 1, held)
    return held


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
    of a full right-hand side.

    B's columns are independent systems: each block of them (`_parts`) is one chain of
    launches, its products and diagonal blocks in order, and the chains run beside one
    another as one launch (pair.chains_step), with no launch or wait between block rows;
    a program (codegen/cpu/program.py) built once for the layout and addresses."""
    assert lower != trans or not lower_rhs  # B lower triangular: only forward solves
    flags = (lower, unit, trans, lower_rhs)
    build = partial(_solve_program, flags=flags)
    program.run(("solve", flags, get_num_threads()), (a._impl, x._impl), build)


def _solve_program(t: TensorImpl, b: TensorImpl, flags: tuple[bool, bool, bool, bool]) -> Program:
    """solve's launches on these impls (see solve)."""
    lower, unit, trans, lower_rhs = flags
    n, k = t.shape[-1], b.shape[-1]
    forward = lower != trans  # op(T) is lower: block rows top to bottom
    starts = list(range(0, n, BLOCK))
    held = Program()

    def op(r0: int, r1: int, c0: int, c1: int) -> TensorImpl:
        """Rows [r0, r1) and columns [c0, c1) of op(T)."""
        return reverse_dims(window(t, c0, c1, r0, r1)) if trans else window(t, r0, r1, c0, c1)

    parts = _parts(k, lower_rhs)
    work: list[list] = [[] for _ in parts]  # per part its launches and _Products
    for i0 in starts if forward else reversed(starts):
        i1 = min(i0 + BLOCK, n)
        s0, s1 = (0, i0) if forward else (i1, n)  # the rows solved before
        columns = i1 if lower_rhs else k
        known = i0 if lower_rhs else columns  # the solved rows' columns that are not zero
        diagonal = window(t, i0, i1, i0, i1)
        planned: dict[int, _Product] = {}  # by width: the product on columns 0..
        for steps, (c0, c1) in zip(work, parts, strict=True):
            width = min(c1, known) - c0
            if s1 > s0 and width > 0:
                if width not in planned:
                    c, rows = window(b, i0, i1, 0, width), window(b, s0, s1, 0, width)
                    planned[width] = _Product.of(c, op(i0, i1, s0, s1), rows)
                steps.append(planned[width].moved(c0 * b.dtype.itemsize))
            if min(c1, columns) > c0:
                block = window(b, i0, i1, c0, min(c1, columns))
                launches = triangular.solve_launches(
                    diagonal, block, 1, lower=lower, unit=unit, trans=trans
                )
                steps += [launch[:3] for launch in launches]
    chains = []
    for steps in work:
        at = held.buffer(
            max((s.plan.buffer_bytes for s in steps if type(s) is _Product), default=0)
        )
        chain = []
        for s in steps:  # a part's products, one after another, share its buffer
            chain += (
                gemm_run.launches_on(s.plan, (*s.addresses, at)) if type(s) is _Product else [s]
            )
        chains.append(chain)
    held.add(pair.chains_step(chains))
    return held


PART = 32  # the fewest right-hand-side columns of one chain of a blocked solve


def _parts(k: int, lower_rhs: bool) -> list[tuple[int, int]]:
    """The column blocks [c0, c1) of a blocked solve's k right-hand sides, a chain each:
    BLOCK wide for a lower triangular B (a block row's nonzero columns then end at a
    block's edge), else four a thread, of at least PART columns, whole cache lines."""
    width = BLOCK if lower_rhs else max(PART, -(-k // (4 * get_num_threads())) + 7 & -8)
    return [(c0, min(c0 + width, k)) for c0 in range(0, k, width)]


@dataclass(frozen=True)
class _Product:
    """c -= a @ b as a step of one chain: the plan and its A, B and C addresses."""

    plan: gemm_run.Plan
    addresses: tuple[int, int, int]

    @staticmethod
    def of(c: TensorImpl, a: TensorImpl, b: TensorImpl) -> _Product:
        p = gemm_run.adding_plan(c, a, b, subtract=True)
        if p is None:  # float32 and float64 rows of unit stride: always the packed kernel's
            raise Error(
                f"linalg: no packed product for {c.dtype} {c.shape} -= {a.shape} @ {b.shape}"
            )
        return _Product(p, tuple(host_ptr(m, "linalg") for m in (a, b, c)))

    def moved(self, step: int) -> _Product:
        """The same product on B's and C's columns `step` bytes right."""
        at_a, at_b, at_c = self.addresses
        return _Product(self.plan, (at_a, at_b + step, at_c + step))
