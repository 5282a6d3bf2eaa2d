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
WORDS = ("a", "w", "work", "info", "n", "lower", "vectors", "pairs", "steps", "capacity")
ROTATE_WORDS = ("a", "pairs", "steps", "info", "n", "capacity", "chunk", "chunks")
MAX_SWEEPS = 30
CHUNK_BYTES = 2048  # the columns of Z^T one work item of the rotation kernel rotates
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


def _update_row(d: dense.Dense, row, v, w, vi, wi, lo, hi, after=None) -> ir.Value:
    """row[j] -= vi w[j] + wi v[j] for j in [lo, hi), the rank-2 update of one row; with
    `after` (a reflector, indexed as the row), also returns sum row[j] after[j] over the
    updated row, in the same pass: the next step's symmetric product."""
    b = d.b
    acc = d.var(d.f(0.0), "acc")
    with d.loop(lo, hi) as j:
        at = b.gep(row, [j])
        x = d.sub(b.load(at), d.add(d.mul(vi, _get(d, w, j)), d.mul(wi, _get(d, v, j))))
        b.store(x, at)
        if after is not None:
            acc.set(d.add(acc.get(), d.mul(x, _get(d, after, j))))
    return acc.get()


def _tridiagonalize(d: dense.Dense, a: dense.Matrix, n, diag, e, tau, p) -> None:
    """A = Q T Q^T: diag[k] = T[k, k], e[k] = T[k + 1, k], tau[k] and row k's v_k (from
    column k + 1) describe H_k; Q = H_0 ... H_{n-2}. A's trailing block stays symmetric
    and full, so every access reads whole contiguous rows: with p = tau A v and
    w = p - (tau/2)(p.v) v, A -= v w^T + w v^T (dsytd2's step on both triangles). One pass
    over the block per step: row k + 1 is updated first and gives the next reflector, so
    each later row's update also yields its dot with that reflector (the next p; `p`
    holds two vectors of n, used in turn)."""
    b = d.b
    one, last = d.i(1), b.sub(n, d.i(1))
    with d.when(b.icmp_signed(">", n, one)):
        first = a.row(d.i(0))
        beta, t = _householder(d, _ptr(d, first, one), last)
        _put(d, diag, d.i(0), a.get(d.i(0), d.i(0)))
        _put(d, e, d.i(0), beta)
        _put(d, tau, d.i(0), t)
        with d.loop(1, n) as i:
            _put(d, p, i, d.mul(t, d.dot(a.row(i), first, one, n)))
        with d.loop(0, b.sub(n, d.i(2))) as k:
            k1, k2 = b.add(k, one), b.add(k, d.i(2))
            odd = b.trunc(k, ir.IntType(1))
            w, nxt = b.select(odd, _ptr(d, p, n), p), b.select(odd, p, _ptr(d, p, n))
            v = a.row(k)
            alpha = d.mul(d.mul(d.f(-0.5), _get(d, tau, k)), d.dot(w, v, k1, n))
            d.axpy(w, alpha, v, k1, n)
            head = a.row(k1)
            _update_row(d, head, v, w, _get(d, v, k1), _get(d, w, k1), k1, n)
            _put(d, diag, k1, a.get(k1, k1))
            beta, t = _householder(d, _ptr(d, head, k2), b.sub(n, k2))
            _put(d, e, k1, beta)
            _put(d, tau, k1, t)
            with d.loop(k2, n) as i:
                dot = _update_row(d, a.row(i), v, w, _get(d, v, i), _get(d, w, i), k2, n, head)
                _put(d, nxt, i, d.mul(t, dot))
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


def steps_size(n: int) -> int:
    """The int64 words of one matrix's step record: the sweep count, the sort's
    interchanges (n) and each sweep's block (low, m)."""
    return 1 + n + 2 * MAX_SWEEPS * n


class _Log:
    """The record of the QL iteration's rotations that the rotation kernel replays on Z^T:
    (c, s) pairs in order, each sweep's block [low, m] and the sort's interchanges. A log
    past `capacity` pairs sets info = -1 (the caller retries with room for every sweep)."""

    def __init__(self, d: dense.Dense, item: ir.Value, n: ir.Value) -> None:
        b = d.b
        self.d, self.n = d, n
        self.capacity = d.w["capacity"]
        self.pairs = _ptr(d, d.ptr("pairs"), b.mul(item, b.mul(self.capacity, d.i(2))))
        stride = b.add(b.add(d.i(1), n), b.mul(n, d.i(2 * MAX_SWEEPS)))
        self.steps = _ptr(d, d.ptr("steps", I64), b.mul(item, stride))
        self.pos = d.var(d.i(0), "pos")

    def open(self, vectors: ir.Value) -> None:
        """No sweeps and no interchanges yet (what a matrix that is not iterated keeps)."""
        d = self.d
        with d.when(vectors):
            d.b.store(d.i(0), self.steps)
            with d.loop(0, self.n) as i:
                self.interchange(i, i)

    def sweep(self, low: ir.Value, m: ir.Value) -> None:
        d, b = self.d, self.d.b
        count = b.load(self.steps)
        at = b.add(b.add(d.i(1), self.n), b.mul(count, d.i(2)))
        _put(d, self.steps, at, low)
        _put(d, self.steps, b.add(at, d.i(1)), m)
        b.store(b.add(count, d.i(1)), self.steps)

    def rotation(self, c: ir.Value, s: ir.Value) -> None:
        d, b = self.d, self.d.b
        pos = self.pos.get()
        with d.when(b.icmp_signed("<", pos, self.capacity)):
            _put(d, self.pairs, b.mul(pos, d.i(2)), c)
            _put(d, self.pairs, b.add(b.mul(pos, d.i(2)), d.i(1)), s)
        self.pos.set(b.add(pos, d.i(1)))

    def interchange(self, i: ir.Value, k: ir.Value) -> None:
        _put(self.d, self.steps, self.d.b.add(i, self.d.i(1)), k)

    def close(self, info: ir.Value) -> None:
        d, b = self.d, self.d.b
        with d.when(b.icmp_signed(">", self.pos.get(), self.capacity)):
            b.store(d.i(-1), info)


def _ql(d: dense.Dense, log: _Log, n, diag, e, vectors, info) -> None:
    """EISPACK's tql2 on (diag, e), e[n-1] = 0: eigenvalues into diag; each rotation of
    rows i, i + 1 of Z^T logged when `vectors`. A block of T that has not split after
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
                _sweep(d, log, n, diag, e, low, end, shift, vectors)
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


def _sweep(d: dense.Dense, log: _Log, n, diag, e, low, m, shift, vectors) -> None:
    """One implicit QL sweep over the unreduced block [low, m] (tql2's loop body)."""
    b = d.b
    with d.when(vectors):
        log.sweep(low, m)
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
            log.rotation(ci, si)
    tail = d.div(d.mul(d.mul(d.mul(d.neg(s.get()), s2.get()), d.mul(c3.get(), el1)), el), dl1)
    _put(d, e, low, d.mul(s.get(), tail))
    _put(d, diag, low, d.mul(c.get(), tail))


def _sort(d: dense.Dense, log: _Log, n, diag, vectors) -> None:
    """Eigenvalues ascending (selection sort), the interchanges logged for Z^T's rows."""
    b = d.b
    with d.loop(0, b.sub(n, d.i(1))) as i:
        best = d.var(i, "best")
        with (
            d.loop(b.add(i, d.i(1)), n) as j,
            d.when(d.lt(_get(d, diag, j), _get(d, diag, best.get()))),
        ):
            best.set(j)
        k = best.get()
        with d.when(vectors):
            log.interchange(i, k)
        with d.when(b.icmp_signed("!=", k, i)):
            d.swap(_ptr(d, diag, i), _ptr(d, diag, k), 0, 1)


def _eigh(d: dense.Dense, item: ir.Value) -> None:
    b, w = d.b, d.w
    n = w["n"]
    _, _, rmin, rmax = LIMITS[d.dtype.itemsize]
    a = d.matrix("a", "n", b.mul(item, b.mul(n, n)))
    diag = _ptr(d, d.ptr("w"), b.mul(item, n))
    e = _ptr(d, d.ptr("work"), b.mul(item, b.mul(n, d.i(4))))
    tau, p = _ptr(d, e, n), _ptr(d, e, b.mul(n, d.i(2)))  # p: 2 n
    info = _ptr(d, d.ptr("info", I64), item)
    lower = b.icmp_signed("!=", w["lower"], d.i(0))
    vectors = b.icmp_signed("!=", w["vectors"], d.i(0))
    b.store(d.i(0), info)
    log = _Log(d, item, n)
    log.open(vectors)

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
            _ql(d, log, n, diag, e, vectors, info)
            _sort(d, log, n, diag, vectors)
            with d.when(vectors):
                log.close(info)
            with d.loop(0, n) as i:
                _put(d, diag, i, d.div(_get(d, diag, i), sigma))


def _rotate(d: dense.Dense, item: ir.Value) -> None:
    """Replay one matrix's log on a chunk of Z^T's columns: every sweep's rotations of
    rows (i, i + 1), i from m - 1 down to low, then the sort's interchanges. The
    columns are independent, so the chunks of one matrix run on every thread."""
    b, w = d.b, d.w
    n, chunk, chunks = w["n"], w["chunk"], w["chunks"]
    matrix, part = b.sdiv(item, chunks), b.srem(item, chunks)
    first = b.mul(part, chunk)
    width = b.sub(
        b.select(b.icmp_signed("<", b.add(first, chunk), n), b.add(first, chunk), n), first
    )
    z = d.matrix("a", "n", b.add(b.mul(matrix, b.mul(n, n)), first))
    pairs = _ptr(d, d.ptr("pairs"), b.mul(matrix, b.mul(w["capacity"], d.i(2))))
    stride = b.add(b.add(d.i(1), n), b.mul(n, d.i(2 * MAX_SWEEPS)))
    steps = _ptr(d, d.ptr("steps", I64), b.mul(matrix, stride))
    blocks = _ptr(d, steps, b.add(d.i(1), n))
    pos = d.var(d.i(0), "pos")
    # A matrix that failed (or whose log overflowed) is left as it is: it raises.
    failed = b.icmp_signed("!=", _get(d, d.ptr("info", I64), matrix), d.i(0))
    count = b.select(failed, d.i(0), b.load(steps))
    with d.loop(0, count) as sweep:
        low = _get(d, blocks, b.mul(sweep, d.i(2)))
        m = _get(d, blocks, b.add(b.mul(sweep, d.i(2)), d.i(1)))
        with d.loop(b.sub(m, d.i(1)), b.sub(low, d.i(1)), -1) as i:
            at = b.mul(pos.get(), d.i(2))
            c, s = _get(d, pairs, at), _get(d, pairs, b.add(at, d.i(1)))
            d.rotate(z.row(i), z.row(b.add(i, d.i(1))), c, s, 0, width)
            pos.set(b.add(pos.get(), d.i(1)))
    with d.when(b.not_(failed)), d.loop(0, b.sub(n, d.i(1))) as i:
        k = _get(d, steps, b.add(i, d.i(1)))
        with d.when(b.icmp_signed("!=", k, i)):
            d.swap(z.row(i), z.row(k), 0, width)


def capacities(n: int) -> tuple[int, int]:
    """The rotation log's sizes in (c, s) pairs: the usual (QL takes about two sweeps per
    eigenvalue) and room for every sweep MAX_SWEEPS allows, the retry."""
    return 2 * n * n + n, MAX_SWEEPS * n * n + n


def eigh(a, values, work, info, pairs, steps, capacity: int, n: int, batch: int, *,
         lower: bool, vectors: bool) -> None:  # fmt: skip
    """Eigenvalues (ascending, into impl `values` [batch, n]) and, with `vectors`, the
    eigenvectors as the rows of each of the `batch` contiguous n x n matrices at impl `a`
    (overwritten; read: its lower or upper triangle); `work` [batch, 4 n] scratch, LAPACK's
    info into impl `info` [batch] (int64: -1 when the rotation log, impls `pairs`
    [batch, 2 capacity] and `steps` [batch, steps_size(n)] int64, was too short; then
    `a` holds no result). Eigenvectors: the log is replayed on Z^T = Q^T in column
    chunks, after the kernel that logged it."""
    name = f"kael_eigh_{a.dtype.name}"
    words = [a.data_ptr(), values.data_ptr(), work.data_ptr(), info.data_ptr(), n, int(lower)]
    words += [int(vectors), pairs.data_ptr(), steps.data_ptr(), capacity]

    def build(mod):
        kernels = dense.per_matrix(mod, name, a.dtype, WORDS, _eigh)
        return kernels + dense.per_matrix(mod, name + "_rotate", a.dtype, ROTATE_WORDS, _rotate)

    dense.run(name, build, name, words, batch, (4 if vectors else 2) * n**3)
    if not vectors:
        return
    chunk = max(1, CHUNK_BYTES // a.dtype.itemsize)
    chunks = -(-n // chunk)
    words = [a.data_ptr(), pairs.data_ptr(), steps.data_ptr(), info.data_ptr(), n, capacity]
    words += [chunk, chunks]
    dense.run(name, build, name + "_rotate", words, batch * chunks, 6 * n**3)
