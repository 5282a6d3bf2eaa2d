"""Triangular solves with many right-hand sides (LAPACK's trsm, and getrs's row
interchanges): one dense kernel (codegen/cpu/dense.py) per system of a batch.

The right-hand sides B [n, nrhs] are row-major and solved in place: row i of the
solution is B[i] less the already-solved rows times the triangle's coefficients, then
divided by the diagonal (unless unit), so every inner loop is a unit-stride axpy over the
right-hand sides. The triangle is A's lower or upper part, or its transpose's (`trans`:
coefficients A[k, i] for A[i, k], which turns lower into upper). A's batch stride may be
0 (one A for all). `permute` applies an LU's row interchanges to the rows of B, in
LAPACK's order (P B, before an LU solve) or the reverse (P^T B, after a transposed one).
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.cpu import dense, factorize
from kael.runtime.tensor_impl import host_ptr

I64 = ir.IntType(64)
WORDS = ("a", "b", "n", "nrhs", "lda", "ldb", "a_stride", "b_stride", "lower", "unit", "trans")
COLUMNS = 64  # the narrowest block of right-hand sides one work item solves
PERMUTE_WORDS = (
    "b", "piv", "nrhs", "ld", "stride", "steps", "piv_stride", "reverse", "rows", "base", "lag",
)  # fmt: skip


def _solve(d: dense.Dense, item: ir.Value) -> None:
    b, w = d.b, d.w
    n, nrhs = w["n"], w["nrhs"]
    a = d.matrix("a", "lda", b.mul(item, w["a_stride"]))
    x = d.matrix("b", "ldb", b.mul(item, w["b_stride"]))
    trans = b.icmp_signed("!=", w["trans"], d.i(0))
    unit = b.icmp_signed("!=", w["unit"], d.i(0))

    def coefficient(i: ir.Value, k: ir.Value) -> ir.Value:
        return b.load(b.select(trans, a.at(k, i), a.at(i, k)))

    def finish(i: ir.Value) -> None:
        with d.when(b.not_(unit)):
            d.scale(x.row(i), d.div(d.f(1.0), coefficient(i, i)), 0, nrhs)

    def eliminate(rows: list[ir.Value], first: ir.Value, last: ir.Value) -> None:
        """Each of `rows` (two at once: every solved row read once for both) less the
        solved rows [first, last) times its coefficients."""
        alpha = lambda r, k: d.neg(coefficient(rows[r], k))  # noqa: E731
        d.axpy_rows([x.row(i) for i in rows], alpha, x.row, first, last, 0, nrhs)

    def solve_pair(i: ir.Value, step: int, first: ir.Value, last: ir.Value) -> None:
        """Rows i and i + step (the next in solving order): both less the rows solved
        before them, then row i finished and taken from row i + step."""
        j = b.add(i, d.i(step))
        eliminate([i, j], first, last)
        finish(i)
        eliminate([j], i, b.add(i, d.i(1)))
        finish(j)

    lower = b.xor(b.icmp_signed("!=", w["lower"], d.i(0)), trans)
    pairs = b.mul(b.sdiv(n, d.i(2)), d.i(2))  # rows solved two at a time, then the last
    with d.either(lower) as (forward, backward):
        with forward:
            with d.loop(0, pairs, 2) as i:
                solve_pair(i, 1, d.i(0), i)
            with d.loop(pairs, n) as i:
                eliminate([i], d.i(0), i)
                finish(i)
        with backward:
            top = b.sub(n, d.i(1))
            with d.loop(top, b.sub(top, pairs), -2) as i:
                solve_pair(i, -1, b.add(i, d.i(1)), n)
            with d.loop(b.sub(top, pairs), -1, -1) as i:
                eliminate([i], b.add(i, d.i(1)), n)
                finish(i)


def _permute(d: dense.Dense, item: ir.Value) -> None:
    b, w = d.b, d.w
    x = d.matrix("b", "ld", b.mul(item, w["stride"]))
    piv = b.gep(d.ptr("piv", I64), [b.mul(item, w["piv_stride"])])
    steps, reverse = w["steps"], b.icmp_signed("!=", w["reverse"], d.i(0))
    start = b.mul(item, w["lag"])
    with d.loop(start, steps) as s:
        k = b.select(reverse, b.sub(b.add(steps, b.sub(start, d.i(1))), s), s)
        p = b.sub(b.load(b.gep(piv, [k])), w["base"])
        # the caller checked the pivots, but another thread may change them since: a row
        # past the block is left alone
        inside = b.and_(b.icmp_unsigned("<", p, w["rows"]), b.icmp_unsigned("<", k, w["rows"]))
        with d.when(b.and_(b.icmp_signed("!=", p, k), inside)):
            d.swap(x.row(k), x.row(p), 0, w["nrhs"])


def solve(
    a, x, batch: int, *, lower: bool, unit: bool = False, trans: bool = False, into=None
) -> None:
    """Solve op(T) X = B in place for each of `batch` systems: T the lower or upper
    triangle of the n x n matrices of impl `a`, B the [n, nrhs] blocks of impl `x` (each
    [n, .] or [batch, n, .] with unit-stride rows; a batch stride 0 shares one matrix);
    op is the transpose when `trans`. With `into`, added to that program."""
    for launch in solve_launches(a, x, batch, lower=lower, unit=unit, trans=trans):
        dense.run_prepared(*launch, into)


def solve_launches(
    a, x, batch: int, *, lower: bool, unit: bool = False, trans: bool = False
) -> list[tuple]:
    """solve's launches, not run: (kernel, words, items, flops), for dense.run_prepared or
    dense.step."""
    _, n, lda, a_stride = factorize.geometry(a)
    _, _, ldb, b_stride = factorize.geometry(x)
    name = f"kael_trsm_{a.dtype.name}"
    fn = dense.kernel(name, lambda mod: dense.per_matrix(mod, name, a.dtype, WORDS, _solve), name)
    flags = [int(lower), int(unit), int(trans)]
    a_at = host_ptr(a, name)
    launches = []
    for address, width, stride, items, across in _column_blocks(x, name, batch, b_stride):
        words = [a_at, address, n, width, lda, ldb, 0 if across else a_stride, stride, *flags]
        launches.append((fn, words, items, n * n * width))
    return launches


def _column_blocks(x, name: str, batch: int, stride: int) -> list[tuple]:
    """(address, columns, item stride, items, across) of the launches over the [*, rows,
    nrhs] blocks of impl `x`. One block's columns are independent, so for one block wide
    enough, blocks of at least COLUMNS of them are the work items (`across`: each
    `columns` elements right of the last, the whole blocks in one launch and the columns
    left over in a second); otherwise the items are the batch's blocks."""
    address, nrhs = host_ptr(x, name), x.shape[-1]
    if batch > 1 or nrhs < 2 * COLUMNS:
        return [(address, nrhs, stride, batch, False)]
    width = max(COLUMNS, -(-nrhs // 8) + 7 & -8)  # whole vectors: each column's arithmetic
    blocks, left = divmod(nrhs, width)
    launches = [(address, width, width, blocks, True)]
    if left:
        launches.append((address + blocks * width * x.dtype.itemsize, left, 0, 1, True))
    return launches


def permute(
    x, piv, batch: int, *, reverse: bool = False, base: int = 0, lag: int = 0, into=None
) -> None:
    """Apply 0-based LU row interchanges (impl `piv` [*, steps] int64, batch stride 0 when
    it has no batch; less `base`: a blocked LU's pivots count from the matrix's first row,
    its interchanges apply to the rows from `base`) to the rows of each [rows, nrhs] block
    of impl `x` ([rows, nrhs] or [batch, rows, nrhs], unit-stride rows), in LAPACK's order
    or, `reverse`, the last first. Block i takes the interchanges from i * `lag` on only
    (a blocked LU's column blocks, each taking the panels' right of it). With `into`,
    added to that program."""
    for launch in _permute_launches(x, piv, batch, reverse=reverse, base=base, lag=lag):
        dense.run_prepared(*launch, into)


def _permute_launches(
    x, piv, batch: int, *, reverse: bool = False, base: int = 0, lag: int = 0
) -> list[tuple]:
    """permute's launches: (kernel, words, items, flops), as solve_launches."""
    name = f"kael_permute_rows_{x.dtype.name}"
    fn = dense.kernel(
        name, lambda mod: dense.per_matrix(mod, name, x.dtype, PERMUTE_WORDS, _permute), name
    )
    steps = piv.shape[-1]
    piv_stride = steps if len(piv.shape) > 1 and piv.numel() > steps else 0
    rows, nrhs, ld, stride = factorize.geometry(x)
    words = [host_ptr(x, name), host_ptr(piv, name), nrhs, ld, stride, steps, piv_stride]
    return [(fn, [*words, int(reverse), rows, base, lag], batch, steps * nrhs)]
