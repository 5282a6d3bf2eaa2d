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
    "b", "piv", "nrhs", "ld", "stride", "steps", "piv_stride", "reverse", "rows", "base",
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
    with d.loop(0, steps) as s:
        k = b.select(reverse, b.sub(b.sub(steps, d.i(1)), s), s)
        p = b.sub(b.load(b.gep(piv, [k])), w["base"])
        # the caller checked the pivots, but another thread may change them since: a row
        # past the block is left alone
        inside = b.and_(b.icmp_unsigned("<", p, w["rows"]), b.icmp_unsigned("<", k, w["rows"]))
        with d.when(b.and_(b.icmp_signed("!=", p, k), inside)):
            d.swap(x.row(k), x.row(p), 0, w["nrhs"])


def solve(a, x, batch: int, *, lower: bool, unit: bool = False, trans: bool = False) -> None:
    """Solve op(T) X = B in place for each of `batch` systems: T the lower or upper
    triangle of the n x n matrices of impl `a`, B the [n, nrhs] blocks of impl `x` (each
    [n, .] or [batch, n, .] with unit-stride rows; a batch stride 0 shares one matrix);
    op is the transpose when `trans`."""
    _, n, lda, a_stride = factorize.geometry(a)
    _, nrhs, ldb, b_stride = factorize.geometry(x)
    name = f"kael_trsm_{a.dtype.name}"
    build = lambda mod: dense.per_matrix(mod, name, a.dtype, WORDS, _solve)  # noqa: E731
    flags = [int(lower), int(unit), int(trans)]
    address = host_ptr(x, name)
    if batch == 1 and nrhs >= 2 * COLUMNS:
        # One system's columns are independent systems: blocks of them are the work items
        # (one triangle, stride 0; each block `width` elements right of the last).
        width = max(COLUMNS, -(-nrhs // 8))
        blocks = nrhs // width
        words = [host_ptr(a, name), address, n, width, lda, ldb, 0, width, *flags]
        dense.run(name, build, name, words, blocks, n * n * width)
        address += blocks * width * x.dtype.itemsize
        nrhs -= blocks * width
        if not nrhs:
            return
    words = [host_ptr(a, name), address, n, nrhs, lda, ldb, a_stride, b_stride, *flags]
    dense.run(name, build, name, words, batch, n * n * nrhs)


def permute(x, piv, batch: int, *, reverse: bool = False, base: int = 0) -> None:
    """Apply 0-based LU row interchanges (impl `piv` [*, steps] int64, batch stride 0 when
    it has no batch; less `base`: a blocked LU's pivots count from the matrix's first row,
    its interchanges apply to the rows from `base`) to the rows of each [rows, nrhs] block
    of impl `x` ([rows, nrhs] or [batch, rows, nrhs], unit-stride rows), in LAPACK's order
    or, `reverse`, the last first."""
    name = f"kael_permute_rows_{x.dtype.name}"
    steps = piv.shape[-1]
    piv_stride = steps if len(piv.shape) > 1 and piv.numel() > steps else 0
    rows, nrhs, ld, stride = factorize.geometry(x)
    x_at, piv_at = host_ptr(x, name), host_ptr(piv, name)
    words = [x_at, piv_at, nrhs, ld, stride, steps, piv_stride, int(reverse), rows, base]
    build = lambda mod: dense.per_matrix(mod, name, x.dtype, PERMUTE_WORDS, _permute)  # noqa: E731
    dense.run(name, build, name, words, batch, steps * nrhs)
