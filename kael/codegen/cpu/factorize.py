"""The LU (partial pivoting) and Cholesky factorizations of kael.linalg, one dense kernel
(codegen/cpu/dense.py) per matrix of a batch, factoring a contiguous copy in place.

LU follows LAPACK's getf2: the pivot of column k is the first row of largest magnitude
(pivots are stored 0-based, int64); a zero pivot records info = k + 1 (the first one)
and the factorization goes on without eliminating it, so det() of a singular matrix is 0
and solve() can name the column. Its updates are delayed by sub-blocks of SUB columns,
as getrf delays them by panels: the same steps, summed in another order. Its arithmetic
rounds each product (dense.ROUNDED, no FMA): with fused updates a matrix LAPACK finds
exactly singular kept a pivot of a rounding's size (det 1e-16, inv of 1e17). Cholesky
is the lower factor, row by row (every inner product a unit-stride dot of two rows); a
leading minor that is not positive (or NaN) stops it with info = its order, as LAPACK's
potrf does.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.cpu import dense
from kael.codegen.lowering import smin
from kael.runtime.errors import Error
from kael.runtime.tensor_impl import host_ptr

I64 = ir.IntType(64)
# Columns the LU factors together, getf2's rank-1 updates confined to them (each row's SUB
# columns one vector), before the columns right of them take all SUB updates in one pass
# per row: a 512 x 64 panel in 0.20 ms instead of 0.34 (short row loops cost more than
# their arithmetic).
SUB = 8
LU_WORDS = ("a", "piv", "info", "m", "n", "ld", "stride", "swap_lo", "swap_hi", "row0")
CHOLESKY_WORDS = ("a", "info", "n", "ld", "stride")
BLOCK_WORDS = ("dst", "src", "m", "n", "ldd", "lds")


def _lu(d: dense.Dense, item: ir.Value) -> None:
    b, w = d.b, d.w
    m, n = w["m"], w["n"]
    a = d.matrix("a", "ld", b.mul(item, w["stride"]))
    steps = smin(b, m, n)
    piv = b.gep(d.ptr("piv", I64), [b.mul(item, steps)])
    info = b.gep(d.ptr("info", I64), [item])
    start_info(d, info)
    with d.loop(0, steps, SUB) as kb:
        end = smin(b, b.add(kb, d.i(SUB)), steps)
        whole = b.icmp_signed("==", b.sub(end, kb), d.i(SUB))
        with d.loop(kb, end) as k:
            _lu_column(d, a, k, kb, end, whole, piv, info)
        with d.when(b.icmp_signed("<", end, n)):
            _lu_update(d, a, kb, end)


def _lu_update(d: dense.Dense, a: dense.Matrix, kb, end) -> None:
    """The columns right of sub-block [kb, end) take its rank-1 updates, row by row: U's
    rows of the block (each from the rows above it), then every row below, all SUB
    updates in one pass over the row when the block is whole and no pivot was zero."""
    b, m, n = d.b, d.w["m"], d.w["n"]

    def one_by_one(i, last):
        with d.loop(kb, last) as c, d.when(nonzero_pivot(d, a.get(c, c))):
            d.axpy(a.row(i), d.neg(a.get(i, c)), a.row(c), end, n)

    with d.loop(b.add(kb, d.i(1)), end) as i:
        one_by_one(i, i)
    with d.either(whole_block(d, lambda c: a.get(c, c), kb, end)) as (fused, general):
        with fused, d.loop(end, m) as i:
            rows = [b.add(kb, d.i(c)) for c in range(SUB)]
            factors = [d.neg(a.get(i, r)) for r in rows]
            d.axpys(a.row(i), factors, [a.row(r) for r in rows], end, n)
        with general, d.loop(end, m) as i:
            one_by_one(i, end)


def nonzero_pivot(d: dense.Dense, pivot: ir.Value) -> ir.Value:
    """Whether a pivot eliminates its column (getf2 skips a zero one; NaN eliminates)."""
    return d.b.fcmp_unordered("!=", pivot, d.f(0.0))


def _lu_column(d: dense.Dense, a: dense.Matrix, k, kb, end, whole, piv, info) -> None:
    """getf2's step k inside sub-block [kb, end): pivot search and row interchange (whole
    rows), the multipliers, and their update of columns k+1 to end (the block's SUB
    columns of a row as one vector when the block is `whole`)."""
    b, w, m = d.b, d.w, d.w["m"]
    best, largest = d.var(k, "best"), d.var(d.abs(a.get(k, k)), "largest")
    with d.loop(b.add(k, d.i(1)), m) as i:
        size = d.abs(a.get(i, k))
        with d.when(d.gt(size, largest.get())):
            best.set(i)
            largest.set(size)
    p = best.get()
    b.store(b.add(p, w["row0"]), b.gep(piv, [k]))
    with d.when(b.icmp_signed("!=", p, k)):
        d.swap(a.row(k), a.row(p), w["swap_lo"], w["swap_hi"])
    below = b.add(k, d.i(1))

    def eliminate(multiplier) -> None:
        with d.either(whole) as (vector, scalar):
            with vector:
                _eliminate_in_block(d, a, k, kb, multiplier)
            with scalar, d.loop(below, m) as i:
                factor = multiplier(a.get(i, k))
                a.set(i, k, factor)
                d.axpy(a.row(i), d.neg(factor), a.row(k), below, end)

    pivot_step(d, a.get(k, k), k, info, eliminate)


def start_info(d: dense.Dense, info: ir.Value) -> None:
    """info = 0 at a factorization's start (a later panel, row0 > 0, keeps an earlier's)."""
    with d.when(d.b.icmp_signed("==", d.w["row0"], d.i(0))):
        d.b.store(d.i(0), info)


def pivot_step(d: dense.Dense, pivot: ir.Value, k: ir.Value, info: ir.Value, eliminate) -> None:
    """getf2's step k after its interchange: a zero pivot records info (the first one's
    1-based row, from row0) and eliminates nothing; otherwise `eliminate(multiplier)`,
    multiplier(x) being x / pivot as getf2 takes it: x times 1 / pivot, or x divided by
    the pivot where 1 / pivot would overflow."""
    b = d.b
    with d.either(nonzero_pivot(d, pivot)) as (nonzero, zero):
        with zero, d.when(b.icmp_signed("==", b.load(info), d.i(0))):
            b.store(b.add(b.add(k, d.i(1)), d.w["row0"]), info)
        with nonzero:
            scale = d.div(d.f(1.0), pivot)
            with d.either(d.lt(d.abs(pivot), d.f(d.safmin))) as (dividing, scaling):
                with dividing:
                    eliminate(lambda x: d.div(x, pivot))
                with scaling:
                    eliminate(lambda x: d.mul(x, scale))


def whole_block(d: dense.Dense, pivot_of, kb, end) -> ir.Value:
    """Whether sub-block [kb, end) has SUB columns and no zero pivot (pivot_of(c): the
    pivot of column c): its updates may then all go in one pass."""
    b = d.b
    whole = d.var(b.icmp_signed("==", b.sub(end, kb), d.i(SUB)), "whole")
    with d.loop(kb, end) as c, d.when(b.not_(nonzero_pivot(d, pivot_of(c)))):
        whole.set(ir.Constant(ir.IntType(1), 0))
    return whole.get()


def _eliminate_in_block(d: dense.Dense, a: dense.Matrix, k, kb, multiplier) -> None:
    """Every row below k: its multiplier into column k, and columns k+1 to kb + SUB less
    it times row k's, all SUB columns loaded, blended by lane and stored as one vector."""
    b = d.b
    lane = d.splat(b.sub(k, kb), SUB)
    order = ir.Constant(ir.VectorType(I64, SUB), list(range(SUB)))
    right, at = b.icmp_signed(">", order, lane), b.icmp_signed("==", order, lane)
    pivot_row = b.load(d.lanes(b.gep(a.row(k), [kb]), SUB), align=d.dtype.itemsize)
    with d.loop(b.add(k, d.i(1)), d.w["m"]) as i:
        where = d.lanes(b.gep(a.row(i), [kb]), SUB)
        row = b.load(where, align=d.dtype.itemsize)
        factor = multiplier(b.extract_element(row, b.sub(k, kb)))
        spread = d.splat(factor, SUB)
        updated = d.sub(row, d.mul(spread, pivot_row))
        b.store(b.select(right, updated, b.select(at, spread, row)), where, align=d.dtype.itemsize)


def _cholesky(d: dense.Dense, item: ir.Value) -> None:
    b, n = d.b, d.w["n"]
    a = d.matrix("a", "ld", b.mul(item, d.w["stride"]))
    info = b.gep(d.ptr("info", I64), [item])
    b.store(d.i(0), info)
    failed = d.var(ir.Constant(ir.IntType(1), 0), "failed")
    with d.loop(0, n) as j, d.when(b.not_(failed.get())):
        rj = a.row(j)
        # Row j's left part first (l[j, k] = (a[j, k] - l[j, :k] . l[k, :k]) / l[k, k]),
        # then its diagonal: every read is of rows already final.
        with d.loop(0, j) as k:
            s = d.sub(a.get(j, k), d.dot(rj, a.row(k), 0, k))
            a.set(j, k, d.div(s, a.get(k, k)))
        diagonal = d.sub(a.get(j, j), d.dot(rj, rj, 0, j))
        positive = b.fcmp_ordered(">", diagonal, d.f(0.0))  # NaN is not
        with d.either(positive) as (ok, bad):
            with ok:
                a.set(j, j, d.sqrt(diagonal))
                # The strict upper part of the row is the factor's zeros.
                with d.loop(b.add(j, d.i(1)), n) as k:
                    a.set(j, k, d.f(0.0))
            with bad:
                b.store(b.add(j, d.i(1)), info)
                failed.set(ir.Constant(ir.IntType(1), 1))


def geometry(a) -> tuple[int, int, int, int]:
    """(rows, cols, leading dimension, batch stride) of impl `a`: [m, n] or [batch, m, n]
    with unit-stride rows (batch stride 0: one matrix)."""
    m, n = a.shape[-2:]
    return m, n, a.strides[-2] if m > 1 else n, a.strides[0] if len(a.shape) > 2 else 0


def lu(a, piv, info, batch: int, panel: tuple[int, int] | None = None) -> None:
    """Factor the m x n matrices of impl `a` ([m, n] or [batch, m, n], unit-stride rows) in
    place: P A = L U (L unit lower, below the diagonal; U on and above it); 0-based pivots
    into contiguous impl `piv` [batch, min(m, n)], LAPACK's info into `info` [batch]
    (int64). `panel` = (j, width): `a` is the panel of a width-wide matrix from row and
    column j on; its row interchanges cover whole rows, its pivots and info count from
    row j, and info keeps an earlier panel's zero pivot."""
    m, n, ld, stride = geometry(a)
    j, width = (0, n) if panel is None else panel
    name = f"kael_lu_{a.dtype.name}"
    words = [*(host_ptr(t, name) for t in (a, piv, info)), m, n, ld, stride, -j, width - j, j]
    build = lambda mod: dense.per_matrix(mod, name, a.dtype, LU_WORDS, _lu, dense.ROUNDED)  # noqa: E731
    dense.run(name, build, name, words, batch, m * n * min(m, n))


def cholesky(a, info, batch: int, into=None) -> None:
    """The lower Cholesky factor of each n x n matrix of impl `a` ([n, n] or [batch, n, n],
    unit-stride rows), in place (its strict upper part zeroed); info [batch] as LAPACK's
    potrf sets it. With `into`, added to that program (codegen/cpu/program.py)."""
    _, n, ld, stride = geometry(a)
    name = f"kael_cholesky_{a.dtype.name}"
    words = [host_ptr(a, name), host_ptr(info, name), n, ld, stride]
    build = lambda mod: dense.per_matrix(mod, name, a.dtype, CHOLESKY_WORDS, _cholesky)  # noqa: E731
    dense.run(name, build, name, words, batch, n**3 // 3, into)


def _identity(d: dense.Dense, item: ir.Value) -> None:
    b, w = d.b, d.w
    dst = d.matrix("dst", "ldd")
    with d.loop(0, w["m"]) as r:
        d.fill(dst.row(r), d.f(0.0), d.i(0), w["n"])
        with d.when(b.icmp_signed("<", r, w["n"])):
            dst.set(r, r, d.f(1.0))


def _copy(d: dense.Dense, item: ir.Value) -> None:
    dst, src = d.matrix("dst", "ldd"), d.matrix("src", "lds")
    with d.loop(0, d.w["m"]) as r:
        d.copy(dst.row(r), src.row(r), d.i(0), d.w["n"])


def block(op: str, dst, src=None, into=None) -> None:
    """The m x n impl `dst` (unit-stride rows) set to the identity (`op` "identity") or
    to impl `src` of its shape ("copy"): a blocked driver's steps in a program (`into`),
    where an eager op cannot be."""
    if op not in ("identity", "copy") or (op == "copy") != (src is not None):
        raise Error(f"factorize.block: unknown step {op!r} (identity, or copy with a source)")
    if src is not None and tuple(src.shape) != tuple(dst.shape):
        raise Error(f"factorize.block: copy of {list(src.shape)} into {list(dst.shape)}")
    m, n, ldd, _ = geometry(dst)
    name = f"kael_block_{dst.dtype.name}"
    source = (host_ptr(src, name), geometry(src)[2]) if src is not None else (0, 0)
    words = [host_ptr(dst, name), source[0], m, n, ldd, source[1]]

    def build(module: ir.Module) -> list[str]:
        return [
            *dense.per_matrix(module, f"{name}_identity", dst.dtype, BLOCK_WORDS, _identity),
            *dense.per_matrix(module, f"{name}_copy", dst.dtype, BLOCK_WORDS, _copy),
        ]

    dense.run(name, build, f"{name}_{op}", words, 1, m * n, into)
