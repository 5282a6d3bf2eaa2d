"""The symmetric eigensolver of kael.linalg (eigh, eigvalsh): one dense kernel
(codegen/cpu/dense.py) per matrix of a batch, on a contiguous copy, in place.

The steps are LAPACK's dsyev's. The triangle that UPLO names is scanned for its largest
magnitude: a NaN gives NaN eigenvalues and info = n - 1 (PyTorch's LAPACK fails to
converge on one), an infinity NaN eigenvalues and info 0; otherwise the matrix is copied
into the other triangle and scaled into [sqrt(safmin / eps), sqrt(eps / safmin)] when its
norm is outside, so neither tiny nor huge matrices under- or overflow. Householder
reflectors (dsytd2) reduce it to a tridiagonal T = Q^T A Q: the matrix is kept full and
symmetric, so the symmetric product and the rank-2 update read whole contiguous rows, and
the reflector of step k overwrites row k. Q^T is accumulated backward in place (rows:
the columns of Q). The implicit QL iteration with Wilkinson's shift (EISPACK's tql2)
finds T's eigenvalues, each Givens rotation combining two contiguous rows of Z^T (the
eigenvectors are the rows; the caller transposes). At most 30 sweeps per eigenvalue: past
that, info is the number of off-diagonals that did not reach zero (dsteqr's info).
Eigenvalues come out ascending with their rows, scaled back.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.cpu import dense

I1, I64 = ir.IntType(1), ir.IntType(64)
WORDS = ("a", "w", "work", "info", "n", "lower", "vectors")
MAX_SWEEPS = 30
# (eps: the convergence test's unit; safmin; dsyev's rmin and rmax), by itemsize.
LIMITS = {
    8: (2.0**-52, 2.2250738585072014e-308, 1.0010415475915505e-146, 9.989595361011175e145),
    4: (2.0**-23, 1.1754943508222875e-38, 3.1401849173675503e-16, 3184525836262886.5),
}


def _ptr(d: dense.Dense, base: ir.Value, i: ir.Value) -> ir.Value:
    return d.b.gep(base, [i])


def _get(d: dense.Dense, base: ir.Value, i: ir.Value) -> ir.Value:
    return d.b.load(d.b.gep(base, [i]))


def _put(d: dense.Dense, base: ir.Value, i: ir.Value, value: ir.Value) -> None:
    d.b.store(value, d.b.gep(base, [i]))


def _max_abs(d: dense.Dense, x: ir.Value, lo, hi) -> tuple[ir.Value, ir.Value]:
    """(max |x[j]|, whether some x[j] is NaN) over j in [lo, hi)."""
    b = d.b
    largest, nan = d.var(d.f(0.0), "largest"), d.var(ir.Constant(I1, 0), "nan")
    with d.loop(lo, hi) as j:
        size = d.abs(_get(d, x, j))
        largest.set(b.select(d.gt(size, largest.get()), size, largest.get()))
        nan.set(b.or_(nan.get(), d.is_nan(size)))
    return largest.get(), nan.get()


def _householder(d: dense.Dense, x: ir.Value, m: ir.Value) -> tuple[ir.Value, ir.Value]:
    """LAPACK's dlarfg on x[0:m]: H = I - tau v v^T with H x = (beta, 0, ...); v
    overwrites x (v[0] = 1). The norm is scaled by max |x|, so it neither under- nor
    overflows; a column below safmin counts as zero (tau = 0)."""
    b = d.b
    eps, safmin, _, _ = LIMITS[d.dtype.itemsize]
    alpha = _get(d, x, d.i(0))
    one = d.i(1)
    scale, _ = _max_abs(d, x, one, m)
    inverse = d.div(d.f(1.0), b.select(b.fcmp_ordered("==", scale, d.f(0.0)), d.f(1.0), scale))
    sums = d.var(d.f(0.0), "sums")
    with d.loop(one, m) as j:
        t = d.mul(_get(d, x, j), inverse)
        sums.set(d.add(sums.get(), d.mul(t, t)))
    xnorm = d.mul(scale, d.sqrt(sums.get()))
    size = d.hypot(alpha, xnorm)
    flat = b.or_(b.fcmp_ordered("==", xnorm, d.f(0.0)), d.lt(size, d.f(safmin)))
    beta, tau = d.var(alpha, "beta"), d.var(d.f(0.0), "tau")
    with d.either(flat) as (zero, reflect):
        with zero:
            d.fill(x, d.f(0.0), one, m)
        with reflect:
            signed = d.neg(d.copysign(size, alpha))
            beta.set(signed)
            tau.set(d.div(d.sub(signed, alpha), signed))
            d.scale(x, d.div(d.f(1.0), d.sub(alpha, signed)), one, m)
    _put(d, x, d.i(0), d.f(1.0))
    return beta.get(), tau.get()


def _tridiagonalize(d: dense.Dense, a: dense.Matrix, n, diag, e, tau, p) -> None:
    """A = Q T Q^T: diag[k] = T[k, k], e[k] = T[k + 1, k], tau[k] and row k's v_k (from
    column k + 1) describe H_k; Q = H_0 ... H_{n-2}. A's trailing block stays symmetric
    and full: p = tau A v and w = p - (tau/2)(p.v) v are dots of rows, A -= v w^T + w v^T
    two axpys per row (dsytd2's steps on both triangles)."""
    b = d.b
    with d.loop(0, b.sub(n, d.i(1))) as k:
        k1 = b.add(k, d.i(1))
        m = b.sub(n, k1)
        v = _ptr(d, a.row(k), k1)
        beta, t = _householder(d, v, m)
        _put(d, diag, k, a.get(k, k))
        _put(d, e, k, beta)
        _put(d, tau, k, t)
        with d.when(b.fcmp_ordered("!=", t, d.f(0.0))):
            tail = _ptr(d, p, k1)
            with d.loop(k1, n) as i:
                _put(d, p, i, d.mul(t, d.dot(_ptr(d, a.row(i), k1), v, 0, m)))
            alpha = d.mul(d.mul(d.f(-0.5), t), d.dot(tail, v, 0, m))
            d.axpy(tail, alpha, v, 0, m)
            with d.loop(k1, n) as i:
                row = _ptr(d, a.row(i), k1)
                d.axpy(row, d.neg(_get(d, v, b.sub(i, k1))), tail, 0, m)
                d.axpy(row, d.neg(_get(d, p, i)), v, 0, m)
    last = b.sub(n, d.i(1))
    _put(d, diag, last, a.get(last, last))
    _put(d, e, last, d.f(0.0))


def _unit_row_and_column(d: dense.Dense, a: dense.Matrix, n, k) -> None:
    """Row k and column k of A become e_k from the diagonal on."""
    b = d.b
    a.set(k, k, d.f(1.0))
    d.fill(a.row(k), d.f(0.0), b.add(k, d.i(1)), n)
    with d.loop(b.add(k, d.i(1)), n) as i:
        a.set(i, k, d.f(0.0))


def _accumulate(d: dense.Dense, a: dense.Matrix, n, tau) -> None:
    """Q^T = H_{n-2} ... H_0 in place of the reflectors, backward (dorg2l's order): with
    M_k = H_k M_{k+1}, M_k^T = M_{k+1}^T H_k changes rows and columns k + 1 on, each row
    r by r -= tau (r . v) v, while row k still holds v_k."""
    b = d.b
    with d.loop(b.sub(n, d.i(2)), -1, -1) as k:
        k1 = b.add(k, d.i(1))
        _unit_row_and_column(d, a, n, k1)
        t = _get(d, tau, k)
        m = b.sub(n, k1)
        v = _ptr(d, a.row(k), k1)
        with d.when(b.fcmp_ordered("!=", t, d.f(0.0))), d.loop(k1, n) as r:
            row = _ptr(d, a.row(r), k1)
            d.axpy(row, d.neg(d.mul(t, d.dot(row, v, 0, m))), v, 0, m)
    _unit_row_and_column(d, a, n, d.i(0))


def _ql(d: dense.Dense, z: dense.Matrix, n, diag, e, vectors, info) -> None:
    """EISPACK's tql2 on (diag, e), e[n-1] = 0: eigenvalues into diag; each rotation of
    rows i, i + 1 of Z^T when `vectors`. A block of T that has not split after
    MAX_SWEEPS sweeps stops it: info = the off-diagonals not zero."""
    b = d.b
    eps = d.f(LIMITS[d.dtype.itemsize][0])
    shift, norm = d.var(d.f(0.0), "shift"), d.var(d.f(0.0), "norm")
    failed = d.var(ir.Constant(I1, 0), "failed")

    def small(i: ir.Value) -> ir.Value:
        return b.fcmp_ordered("<=", d.abs(_get(d, e, i)), d.mul(eps, norm.get()))

    with d.loop(0, n) as low, d.when(b.not_(failed.get())):
        size = d.add(d.abs(_get(d, diag, low)), d.abs(_get(d, e, low)))
        norm.set(b.select(d.gt(size, norm.get()), size, norm.get()))
        m = d.var(low, "m")
        with d.while_(lambda: b.not_(small(m.get()))):
            m.set(b.add(m.get(), d.i(1)))
        end = m.get()
        with d.when(b.icmp_signed(">", end, low)):
            sweeps = d.var(d.i(0), "sweeps")
            going = d.var(ir.Constant(I1, 1), "going")
            with d.while_(going.get):
                sweeps.set(b.add(sweeps.get(), d.i(1)))
                _sweep(d, z, n, diag, e, low, end, shift, vectors)
                converged = small(low)
                spent = b.icmp_signed(">=", sweeps.get(), d.i(MAX_SWEEPS))
                going.set(b.and_(b.not_(converged), b.not_(spent)))
                with d.when(b.and_(b.not_(converged), spent)):
                    failed.set(ir.Constant(I1, 1))
        with d.when(b.not_(failed.get())):
            _put(d, diag, low, d.add(_get(d, diag, low), shift.get()))
            _put(d, e, low, d.f(0.0))
    with d.when(failed.get()):
        count = d.var(d.i(0), "count")
        with d.loop(0, b.sub(n, d.i(1))) as i:
            nonzero = b.fcmp_unordered("!=", _get(d, e, i), d.f(0.0))
            count.set(b.add(count.get(), b.zext(nonzero, I64)))
        b.store(count.get(), info)


def _sweep(d: dense.Dense, z, n, diag, e, low, m, shift, vectors) -> None:
    """One implicit QL sweep over the unreduced block [low, m] (tql2's loop body)."""
    b = d.b
    one = d.i(1)
    l1 = b.add(low, one)
    g = _get(d, diag, low)
    el = _get(d, e, low)
    p = d.div(d.sub(_get(d, diag, l1), g), d.mul(d.f(2.0), el))
    r = d.copysign(d.hypot(p, d.f(1.0)), p)
    pr = d.add(p, r)
    _put(d, diag, low, d.div(el, pr))
    dl1 = d.mul(el, pr)
    _put(d, diag, l1, dl1)
    h = d.sub(g, _get(d, diag, low))
    with d.loop(b.add(low, d.i(2)), n) as i:
        _put(d, diag, i, d.sub(_get(d, diag, i), h))
    shift.set(d.add(shift.get(), h))
    p_, c, c2, c3 = (d.var(_get(d, diag, m), "p"), d.var(d.f(1.0), "c"), d.var(d.f(1.0), "c2"),
                     d.var(d.f(1.0), "c3"))  # fmt: skip
    s, s2 = d.var(d.f(0.0), "s"), d.var(d.f(0.0), "s2")
    el1 = _get(d, e, l1)
    with d.loop(b.sub(m, one), b.sub(low, one), -1) as i:
        c3.set(c2.get())
        c2.set(c.get())
        s2.set(s.get())
        ei, di = _get(d, e, i), _get(d, diag, i)
        gi = d.mul(c.get(), ei)
        hi = d.mul(c.get(), p_.get())
        ri = d.hypot(p_.get(), ei)
        zero = b.fcmp_ordered("==", ri, d.f(0.0))
        safe = b.select(zero, d.f(1.0), ri)
        _put(d, e, b.add(i, one), d.mul(s.get(), ri))
        si = d.div(ei, safe)
        ci = b.select(zero, d.f(1.0), d.div(p_.get(), safe))
        s.set(si)
        c.set(ci)
        p_.set(d.sub(d.mul(ci, di), d.mul(si, gi)))
        _put(d, diag, b.add(i, one), d.add(hi, d.mul(si, d.add(d.mul(ci, gi), d.mul(si, di)))))
        with d.when(vectors):
            d.rotate(z.row(i), z.row(b.add(i, one)), ci, si, 0, n)
    tail = d.div(d.mul(d.mul(d.mul(d.neg(s.get()), s2.get()), d.mul(c3.get(), el1)), el), dl1)
    _put(d, e, low, d.mul(s.get(), tail))
    _put(d, diag, low, d.mul(c.get(), tail))


def _sort(d: dense.Dense, z: dense.Matrix, n, diag, vectors) -> None:
    """Eigenvalues ascending (selection sort), their rows of Z^T along."""
    b = d.b
    with d.loop(0, b.sub(n, d.i(1))) as i:
        best = d.var(i, "best")
        with (
            d.loop(b.add(i, d.i(1)), n) as j,
            d.when(d.lt(_get(d, diag, j), _get(d, diag, best.get()))),
        ):
            best.set(j)
        k = best.get()
        with d.when(b.icmp_signed("!=", k, i)):
            d.swap(_ptr(d, diag, i), _ptr(d, diag, k), 0, 1)
            with d.when(vectors):
                d.swap(z.row(i), z.row(k), 0, n)


def _eigh(d: dense.Dense, item: ir.Value) -> None:
    b, w = d.b, d.w
    n = w["n"]
    _, _, rmin, rmax = LIMITS[d.dtype.itemsize]
    a = d.matrix("a", "n", b.mul(item, b.mul(n, n)))
    diag = _ptr(d, d.ptr("w"), b.mul(item, n))
    e = _ptr(d, d.ptr("work"), b.mul(item, b.mul(n, d.i(3))))
    tau, p = _ptr(d, e, n), _ptr(d, e, b.mul(n, d.i(2)))
    info = _ptr(d, d.ptr("info", I64), item)
    lower = b.icmp_signed("!=", w["lower"], d.i(0))
    vectors = b.icmp_signed("!=", w["vectors"], d.i(0))
    b.store(d.i(0), info)

    largest, nan = d.var(d.f(0.0), "anrm"), d.var(ir.Constant(I1, 0), "anan")
    with d.loop(0, n) as i:
        after = b.add(i, d.i(1))
        size, found = _max_abs(d, a.row(i), b.select(lower, d.i(0), i), b.select(lower, after, n))
        largest.set(b.select(d.gt(size, largest.get()), size, largest.get()))
        nan.set(b.or_(nan.get(), found))
    anrm = largest.get()
    broken = b.or_(nan.get(), b.fcmp_ordered("==", anrm, d.f(float("inf"))))
    with d.either(broken) as (bad, good):
        with bad:
            d.fill(diag, d.f(float("nan")), 0, n)
            with d.when(vectors), d.loop(0, n) as i:
                d.fill(a.row(i), d.f(float("nan")), 0, n)
            with d.when(nan.get()):
                b.store(b.sub(n, d.i(1)), info)
        with good:
            tiny = b.and_(d.gt(anrm, d.f(0.0)), d.lt(anrm, d.f(rmin)))
            sigma = b.select(tiny, d.div(d.f(rmin), anrm), d.f(1.0))
            sigma = b.select(d.gt(anrm, d.f(rmax)), d.div(d.f(rmax), anrm), sigma)
            with d.loop(0, n) as i:
                with d.loop(0, i) as j:
                    value = d.mul(b.load(b.select(lower, a.at(i, j), a.at(j, i))), sigma)
                    a.set(i, j, value)
                    a.set(j, i, value)
                a.set(i, i, d.mul(a.get(i, i), sigma))
            _tridiagonalize(d, a, n, diag, e, tau, p)
            with d.when(vectors):
                _accumulate(d, a, n, tau)
            _ql(d, a, n, diag, e, vectors, info)
            _sort(d, a, n, diag, vectors)
            with d.loop(0, n) as i:
                _put(d, diag, i, d.div(_get(d, diag, i), sigma))


def eigh(a, values, work, info, n: int, batch: int, *, lower: bool, vectors: bool) -> None:
    """Eigenvalues (ascending, into impl `values` [batch, n]) and, with `vectors`, the
    eigenvectors as the rows of each of the `batch` contiguous n x n matrices at impl `a`
    (overwritten; read: its lower or upper triangle); `work` [batch, 3 n] scratch, LAPACK's
    info into impl `info` [batch] (int64)."""
    name = f"kael_eigh_{a.dtype.name}"
    words = [a.data_ptr(), values.data_ptr(), work.data_ptr(), info.data_ptr(), n, int(lower)]
    words.append(int(vectors))
    flops = 9 * n**3 if vectors else 2 * n**3
    build = lambda mod: dense.per_matrix(mod, name, a.dtype, WORDS, _eigh)  # noqa: E731
    dense.run(name, build, name, words, batch, flops)
