"""The LDL^T factorization of a symmetric matrix with Bunch-Kaufman diagonal pivoting
(LAPACK's sytf2, lower), and its solve (sytrs), one dense kernel (codegen/cpu/dense.py) per
matrix of a batch.

Both kernels take the lower triangle transposed: row k of the row-major working matrix W
holds column k of A's lower triangle (W[k][i] = A[i][k], i >= k), so every column the
algorithm reads or updates is a unit-stride row and each rank-1 or rank-2 update of the
trailing matrix is one vectorized axpy per row. The pivot decisions are sytf2's, compared
without fast-math so that ties round as LAPACK's do; pivots are LAPACK's 1-based ipiv
(int32; a 2x2 block's two entries are both -kp) and info the first zero column, 1-based.
"""

from __future__ import annotations

import math

from llvmlite import ir

from kael.codegen.cpu import dense
from kael.runtime.tensor_impl import host_ptr

I32 = ir.IntType(32)
ALPHA = (1.0 + math.sqrt(17.0)) / 8.0  # Bunch-Kaufman's growth bound
FACTOR_WORDS = ("a", "piv", "info", "n", "ld", "stride")
SOLVE_WORDS = ("a", "piv", "x", "n", "k", "lda", "ldx", "stride_a", "stride_x", "stride_p")


def _i32(value: int) -> ir.Constant:
    return ir.Constant(I32, value)


def _first_largest(d: dense.Dense, get, lo, hi) -> tuple[ir.Value, ir.Value]:
    """(index, |value|) of the first largest |get(j)| over j in [lo, hi), lo < hi, as the
    idamax PyTorch's MKL calls picks it: the first NaN wins, and nothing after it."""
    b = d.b
    best, largest = d.var(lo, "best"), d.var(d.abs(get(lo)), "largest")
    with d.loop(b.add(lo, d.i(1)), hi) as j:
        size, current = d.abs(get(j)), largest.get()
        with d.when(b.and_(b.fcmp_unordered(">", size, current), b.not_(d.is_nan(current)))):
            best.set(j)
            largest.set(size)
    return best.get(), largest.get()


def _factor(d: dense.Dense, item: ir.Value) -> None:
    b, w = d.b, d.w
    n = w["n"]
    a = d.matrix("a", "ld", b.mul(item, w["stride"]))
    piv = b.gep(d.ptr("piv", I32), [b.mul(item, n)])
    info = b.gep(d.ptr("info", I32), [item])
    b.store(_i32(0), info)
    k = d.var(d.i(0), "k")
    with d.while_(lambda: b.icmp_signed("<", k.get(), n)):
        kk = k.get()
        kp, two, zero = _choose_pivot(d, a, kk)
        with d.either(two) as (block, single):
            with block:
                _interchange(d, a, kk, b.add(kk, d.i(1)), kp, block=True)
                _eliminate_block(d, a, kk)
                negative = b.trunc(b.sub(d.i(-1), kp), I32)
                b.store(negative, b.gep(piv, [kk]))
                b.store(negative, b.gep(piv, [b.add(kk, d.i(1))]))
            with single:
                with d.either(zero) as (skipped, pivoting):
                    with skipped, d.when(b.icmp_signed("==", b.load(info), _i32(0))):
                        b.store(b.trunc(b.add(kk, d.i(1)), I32), info)
                    with pivoting:
                        _interchange(d, a, kk, kk, kp, block=False)
                        _eliminate_single(d, a, kk)
                b.store(b.trunc(b.add(kp, d.i(1)), I32), b.gep(piv, [kk]))
        k.set(b.add(kk, b.select(two, d.i(2), d.i(1))))


def _choose_pivot(d: dense.Dense, a: dense.Matrix, k) -> tuple[ir.Value, ir.Value, ir.Value]:
    """sytf2's pivot of step k: (kp, whether a 2x2 block, whether column k is zero: no
    pivot, k left as it is)."""
    b, n = d.b, d.w["n"]
    kp, two = d.var(k, "kp"), d.var(ir.Constant(ir.IntType(1), 0), "two")
    absakk = d.abs(a.get(k, k))
    imax, colmax = d.var(k, "imax"), d.var(d.f(0.0), "colmax")
    with d.when(b.icmp_signed("<", b.add(k, d.i(1)), n)):
        where, size = _first_largest(d, lambda j: a.get(k, j), b.add(k, d.i(1)), n)
        imax.set(where)
        colmax.set(size)
    # max(|a_kk|, colmax) == 0 with _max's NaN rule: a NaN colmax is not zero, a NaN
    # diagonal over a zero column is (MKL's sytrf, no DISNAN test).
    zero = b.fcmp_ordered("==", _max(d, absakk, colmax.get()), d.f(0.0))
    c = colmax.get()
    small = b.fcmp_unordered("<", absakk, b.fmul(d.f(ALPHA), c))
    with d.when(b.and_(b.not_(zero), small)):
        _bunch_kaufman(d, a, k, imax.get(), absakk, c, kp, two)
    return kp.get(), two.get(), zero


def _max(d: dense.Dense, x, y):
    """Fortran's MAX as PyTorch's MKL has it, x > y ? x : y: a NaN y comes back, a NaN x
    is dropped."""
    return d.b.select(d.gt(x, y), x, y)


def _bunch_kaufman(d: dense.Dense, a: dense.Matrix, k, imax, absakk, colmax, kp, two) -> None:
    """When |a_kk| < alpha colmax: the largest off-diagonal of row/column imax decides
    between a_kk (1x1), a_imax,imax (1x1, interchanged) and a 2x2 block."""
    b, n = d.b, d.w["n"]
    # Row imax left of the diagonal (W's column imax), then below it (W's row imax).
    _, left = _first_largest(d, lambda j: a.get(j, imax), k, imax)
    row = d.var(left, "rowmax")
    with d.when(b.icmp_signed("<", b.add(imax, d.i(1)), n)):
        _, below = _first_largest(d, lambda j: a.get(imax, j), b.add(imax, d.i(1)), n)
        row.set(_max(d, row.get(), below))
    rowmax = row.get()
    keep = b.fcmp_ordered(">=", absakk, b.fmul(b.fmul(d.f(ALPHA), colmax), b.fdiv(colmax, rowmax)))
    with d.when(b.not_(keep)):
        kp.set(imax)
        diagonal = d.abs(a.get(imax, imax))
        two.set(b.not_(b.fcmp_ordered(">=", diagonal, b.fmul(d.f(ALPHA), rowmax))))


def _interchange(d: dense.Dense, a: dense.Matrix, k, kk, kp, block: bool) -> None:
    """Rows and columns kk and kp (kp >= kk) of the trailing matrix from k on trade places
    (its lower triangle only: W's rows and columns); a 2x2 `block` (kk = k + 1) also
    swaps a[kk, k] with a[kp, k]."""
    b, n = d.b, d.w["n"]
    with d.when(b.icmp_signed("!=", kp, kk)):
        d.swap(a.row(kk), a.row(kp), b.add(kp, d.i(1)), n)
        with d.loop(b.add(kk, d.i(1)), kp) as j:
            _swap(d, a.at(kk, j), a.at(j, kp))
        _swap(d, a.at(kk, kk), a.at(kp, kp))
        if block:
            _swap(d, a.at(k, kk), a.at(k, kp))


def _swap(d: dense.Dense, p: ir.Value, q: ir.Value) -> None:
    value = d.b.load(p)
    d.b.store(d.b.load(q), p)
    d.b.store(value, q)


def _eliminate_single(d: dense.Dense, a: dense.Matrix, k) -> None:
    """A 1x1 pivot's step: the trailing matrix less x x^T / a_kk (x its column below the
    diagonal), and the column scaled into L's by 1 / a_kk (no division fallback for a
    tiny a_kk: PyTorch's LAPACK overflows there, and so does kael)."""
    b, n = d.b, d.w["n"]
    below = b.add(k, d.i(1))
    x = a.row(k)
    inverse = d.div(d.f(1.0), a.get(k, k))
    # BLAS's syr: no update when its alpha is 0 (an infinite a_kk), none of column j when
    # x_j is 0, so an infinite or NaN x_i leaves those as they are.
    with d.when(b.fcmp_unordered("!=", inverse, d.f(0.0))), d.loop(below, n) as j:
        xj = a.get(k, j)
        with d.when(b.fcmp_unordered("!=", xj, d.f(0.0))):
            d.axpy(a.row(j), d.neg(d.mul(inverse, xj)), x, j, n)
    d.scale(x, inverse, below, n)


def _eliminate_block(d: dense.Dense, a: dense.Matrix, k) -> None:
    """A 2x2 pivot's step (rows k and k+1): each later row j takes L's two multipliers
    (w_k, w_k+1) = x_j D^-1 and the trailing matrix less them times the block's columns."""
    b, n = d.b, d.w["n"]
    k1 = b.add(k, d.i(1))
    with d.when(b.icmp_signed("<", b.add(k, d.i(2)), n)):
        d21 = a.get(k, k1)
        d11 = d.div(a.get(k1, k1), d21)
        d22 = d.div(a.get(k, k), d21)
        t = d.div(d.f(1.0), d.sub(d.mul(d11, d22), d.f(1.0)))
        scale = d.div(t, d21)
        with d.loop(b.add(k, d.i(2)), n) as j:
            first, second = a.get(k, j), a.get(k1, j)
            wk = d.mul(scale, d.sub(d.mul(d11, first), second))
            wk1 = d.mul(scale, d.sub(d.mul(d22, second), first))
            d.axpys(a.row(j), [d.neg(wk), d.neg(wk1)], [a.row(k), a.row(k1)], j, n)
            a.set(k, j, wk)
            a.set(k1, j, wk1)


def _solve(d: dense.Dense, item: ir.Value) -> None:
    """sytrs: X = A^-1 B in place, B's rows permuted and eliminated by L, scaled by D^-1,
    then back through L^T and the interchanges in reverse."""
    b, w = d.b, d.w
    a = d.matrix("a", "lda", b.mul(item, w["stride_a"]))
    x = d.matrix("x", "ldx", b.mul(item, w["stride_x"]))
    piv = b.gep(d.ptr("piv", I32), [b.mul(item, w["stride_p"])])
    _forward(d, a, x, piv)
    _backward(d, a, x, piv)


def _pivot(d: dense.Dense, piv, k) -> tuple[ir.Value, ir.Value]:
    """(whether ipiv[k] is negative, |ipiv[k]| - 1) as i64."""
    b = d.b
    p = b.sext(b.load(b.gep(piv, [k])), dense.I64)
    negative = b.icmp_signed("<", p, d.i(0))
    return negative, b.sub(b.select(negative, b.neg(p), p), d.i(1))


def _swap_rows(d: dense.Dense, x: dense.Matrix, r, s) -> None:
    """Swap rows r and s of x (a pivot's row: the caller checked the pivots, but another
    thread may change them since, so a row past the matrix is left alone)."""
    b, n = d.b, d.w["n"]
    inside = b.and_(b.icmp_unsigned("<", r, n), b.icmp_unsigned("<", s, n))
    with d.when(b.and_(b.icmp_signed("!=", r, s), inside)):
        d.swap(x.row(r), x.row(s), 0, d.w["k"])


def _forward(d: dense.Dense, a: dense.Matrix, x: dense.Matrix, piv) -> None:
    """L D Y = P B: a negative pivot with no row after it is read as a 1x1 one (only
    malformed pivots have it), so no access leaves the matrices."""
    b, n, cols = d.b, d.w["n"], d.w["k"]
    k = d.var(d.i(0), "k")
    with d.while_(lambda: b.icmp_signed("<", k.get(), n)):
        kk = k.get()
        k1 = b.add(kk, d.i(1))
        negative, kp = _pivot(d, piv, kk)
        two = b.and_(negative, b.icmp_signed("<", k1, n))
        with d.either(two) as (block, single):
            with single:
                _swap_rows(d, x, kk, kp)
                with d.loop(k1, n) as i:
                    d.axpy(x.row(i), d.neg(a.get(kk, i)), x.row(kk), 0, cols)
                d.scale(x.row(kk), d.div(d.f(1.0), a.get(kk, kk)), 0, cols)
            with block:
                _swap_rows(d, x, k1, kp)
                with d.loop(b.add(kk, d.i(2)), n) as i:
                    factors = [d.neg(a.get(kk, i)), d.neg(a.get(k1, i))]
                    d.axpys(x.row(i), factors, [x.row(kk), x.row(k1)], 0, cols)
                _block_inverse(d, a, x, kk, k1)
        k.set(b.add(k1, b.zext(two, dense.I64)))


def _block_inverse(d: dense.Dense, a: dense.Matrix, x: dense.Matrix, k, k1) -> None:
    """Rows k and k+1 of X times the inverse of D's 2x2 block, in sytrs's scaled form."""
    off = a.get(k, k1)
    akm1, ak = d.div(a.get(k, k), off), d.div(a.get(k1, k1), off)
    denom = d.sub(d.mul(akm1, ak), d.f(1.0))
    with d.loop(0, d.w["k"]) as j:
        bkm1, bk = d.div(x.get(k, j), off), d.div(x.get(k1, j), off)
        x.set(k, j, d.div(d.sub(d.mul(ak, bkm1), bk), denom))
        x.set(k1, j, d.div(d.sub(d.mul(akm1, bk), bkm1), denom))


def _backward(d: dense.Dense, a: dense.Matrix, x: dense.Matrix, piv) -> None:
    """L^T P^T X = Y, from the last row up (a negative first pivot is read as 1x1)."""
    b, n, cols = d.b, d.w["n"], d.w["k"]
    k = d.var(b.sub(n, d.i(1)), "k")
    with d.while_(lambda: b.icmp_signed(">=", k.get(), d.i(0))):
        kk = k.get()
        negative, kp = _pivot(d, piv, kk)
        two = b.and_(negative, b.icmp_signed(">", kk, d.i(0)))
        with d.loop(b.add(kk, d.i(1)), n) as i:
            d.axpy(x.row(kk), d.neg(a.get(kk, i)), x.row(i), 0, cols)
        with d.when(two):
            km1 = b.sub(kk, d.i(1))
            with d.loop(b.add(kk, d.i(1)), n) as i:
                d.axpy(x.row(km1), d.neg(a.get(km1, i)), x.row(i), 0, cols)
        _swap_rows(d, x, kk, kp)
        k.set(b.sub(b.sub(kk, d.i(1)), b.zext(two, dense.I64)))


def geometry(a) -> tuple[int, int, int]:
    """(n, leading dimension, batch stride) of impl `a`: [n, n] or [batch, n, n], unit-stride
    rows (batch stride 0: one matrix for every item)."""
    n = a.shape[-1]
    ld = a.strides[-2] if n > 1 else 1
    return n, ld, a.strides[0] if len(a.shape) > 2 else 0


def factor(w, piv, info, batch: int) -> None:
    """Factor in place the transposed lower triangles W ([n, n] or [batch, n, n] impl, W[k][i]
    = A[i][k]) as sytf2 does: W's upper triangle becomes L's columns and D, `piv` [batch, n]
    LAPACK's int32 ipiv and `info` [batch] int32 the first zero column (1-based, or 0)."""
    n, ld, stride = geometry(w)
    name = f"kael_ldl_factor_{w.dtype.name}"
    words = [*(host_ptr(t, name) for t in (w, piv, info)), n, ld, stride]
    build = lambda mod: dense.per_matrix(mod, name, w.dtype, FACTOR_WORDS, _factor)  # noqa: E731
    dense.run(name, build, name, words, batch, n**3 // 3)


def solve(w, piv, x, batch: int) -> None:
    """X = A^-1 X in place for impl `x` [batch, n, k] (unit-stride rows) from factor's W and
    int32 ipiv (|ipiv| in [1, n]): [n, n] and [n] (one for every item, batch stride 0) or
    x's batch of them, [batch, n, n] and [batch, n] with unit-stride rows."""
    n, lda, stride_a = geometry(w)
    cols = x.shape[-1]
    ldx = x.strides[-2] if n > 1 else cols
    stride_x = x.strides[0] if len(x.shape) > 2 else 0
    stride_p = piv.strides[0] if len(piv.shape) > 1 else 0
    name = f"kael_ldl_solve_{w.dtype.name}"
    pointers = [host_ptr(t, name) for t in (w, piv, x)]
    words = [*pointers, n, cols, lda, ldx, stride_a, stride_x, stride_p]
    build = lambda mod: dense.per_matrix(mod, name, w.dtype, SOLVE_WORDS, _solve)  # noqa: E731
    dense.run(name, build, name, words, batch, 2 * n * n * cols)
