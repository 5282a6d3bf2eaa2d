"""The LU (partial pivoting) and Cholesky factorizations of kael.linalg, one dense kernel
(codegen/cpu/dense.py) per matrix of a batch, factoring a contiguous copy in place.

LU follows LAPACK's getf2: the pivot of column k is the first row of largest magnitude
(pivots are stored 0-based, int64); a zero pivot records info = k + 1 (the first one)
and the factorization goes on, so det() of a singular matrix is 0 and solve() can name
the column. Cholesky is the lower factor, row by row (every inner product a unit-stride
dot of two rows); a leading minor that is not positive (or NaN) stops it with info = its
order, as LAPACK's potrf does.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.cpu import dense
from kael.codegen.lowering import smin

I64 = ir.IntType(64)
LU_WORDS = ("a", "piv", "info", "m", "n", "ld", "stride", "swap_lo", "swap_hi", "row0")
CHOLESKY_WORDS = ("a", "info", "n", "ld", "stride")


def _lu(d: dense.Dense, item: ir.Value) -> None:
    b, w = d.b, d.w
    m, n = w["m"], w["n"]
    a = d.matrix("a", "ld", b.mul(item, w["stride"]))
    steps = smin(b, m, n)
    piv = b.gep(d.ptr("piv", I64), [b.mul(item, steps)])
    info = b.gep(d.ptr("info", I64), [item])
    with d.when(b.icmp_signed("==", w["row0"], d.i(0))):  # a later panel keeps the first
        b.store(d.i(0), info)
    with d.loop(0, steps) as k:
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
        pivot = a.get(k, k)
        with d.either(b.fcmp_ordered("==", pivot, d.f(0.0))) as (zero, nonzero):
            with zero, d.when(b.icmp_signed("==", b.load(info), d.i(0))):
                b.store(b.add(b.add(k, d.i(1)), w["row0"]), info)
            with nonzero:
                below = b.add(k, d.i(1))
                scale = d.div(d.f(1.0), pivot)  # as LAPACK's getf2 scales the column
                with d.loop(below, m) as i:
                    factor = d.mul(a.get(i, k), scale)
                    a.set(i, k, factor)
                    d.axpy(a.row(i), d.neg(factor), a.row(k), below, n)


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
    words = [a.data_ptr(), piv.data_ptr(), info.data_ptr(), m, n, ld, stride, -j, width - j, j]
    build = lambda mod: dense.per_matrix(mod, name, a.dtype, LU_WORDS, _lu)  # noqa: E731
    dense.run(name, build, name, words, batch, m * n * min(m, n))


def cholesky(a, info, batch: int) -> None:
    """The lower Cholesky factor of each n x n matrix of impl `a` ([n, n] or [batch, n, n],
    unit-stride rows), in place (its strict upper part zeroed); info [batch] as LAPACK's
    potrf sets it."""
    _, n, ld, stride = geometry(a)
    name = f"kael_cholesky_{a.dtype.name}"
    words = [a.data_ptr(), info.data_ptr(), n, ld, stride]
    build = lambda mod: dense.per_matrix(mod, name, a.dtype, CHOLESKY_WORDS, _cholesky)  # noqa: E731
    dense.run(name, build, name, words, batch, n**3 // 3)
