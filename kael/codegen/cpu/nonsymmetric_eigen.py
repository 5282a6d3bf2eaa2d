"""The nonsymmetric eigensolver of kael.linalg (eig, eigvals): one dense kernel
(codegen/cpu/dense.py) per matrix of a batch, in place on a contiguous row-major copy.

The steps are LAPACK's dgeev's, unblocked. A matrix whose largest magnitude is outside
[smlnum, bignum] (sqrt(safmin) / eps and its inverse) is first scaled into it, and its
eigenvalues scaled back at the end (dgeev's anrm check): past those bounds the
iteration's products of two entries would overflow or underflow. dgebal balances A: rows
and columns that isolate an eigenvalue are permuted out of the active block (a permuted
triangular matrix's eigenvalues come out exactly), and the block is scaled by powers of 2
until each row's and column's 2-norms (dnrm2's, scaled, so any finite entries compare)
are within a factor 2 (a graded matrix's eigenvalues keep eps ||A|| accuracy).
Householder reflectors reduce it to upper Hessenberg form H = Z^T A Z (dgehd2 over the
whole matrix: the reflectors of isolated columns are the identity; Z accumulated only for
eigenvectors). The Francis double-shift implicit QR iteration (EISPACK's hqr/hqr2) takes
H to the real Schur form: 1 x 1 blocks for real eigenvalues, 2 x 2 blocks for complex
conjugate pairs, the one with positive imaginary part first, as LAPACK orders them. A
subdiagonal entry counts as zero by dlahqr's test (below its smlnum, or below eps times
its diagonal neighbours and small by Ahues and Tisseur's criterion); the shifts are the
trailing 2 x 2 block's eigenvalues and the bulge's first column is formed from them as
dlahqr forms it, scaled so nothing overflows; at most MAX_ITERATIONS iterations per
eigenvalue, with the ad hoc exceptional shifts at iterations 10 and 20: past that, info
is the 1-based index of the eigenvalue that did not converge (dhseqr's info). With
eigenvectors, hqr2's back-substitution solves the quasi-triangular form for its
eigenvectors (dtrevc), Z and the balancing (dgebak) take them back to A's, and each is
normalized as dgeev does: unit 2-norm, the largest component real (the complex ones
rotated by dlartg).
The results go straight into complex outputs (interleaved float pairs): the eigenvalues
[n] and the eigenvectors as rows [n, n] (the caller transposes, a view).

Deviations from dgeev: the scaling factor is the power of 2 at most dgeev's cscale / anrm
(so it and its undoing are exact, barring underflow); hqr's shifts (both roots of a real
pair, EISPACK's exceptional shifts) and hqr2's overflow control in the back-substitution,
not dlahqr's and dtrevc's, and no aggressive early deflation past n = 75, so the
eigenvalues converge, and are listed, in an order that may differ from LAPACK's (the same
multiset), as may a real pair's order in one 2 x 2 block (hqr2's, not dlanv2's). Entries
that scaling into range pushes below the least normal number lose precision as LAPACK's
do (D M D^-1 with D = diag(10^-120 .. 10^120) is as inaccurate as torch's).
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.cpu import dense
from kael.codegen.cpu.symmetric_eigen import _householder, _ptr
from kael.runtime.tensor_impl import host_ptr

I1, I64 = ir.IntType(1), ir.IntType(64)
WORDS = ("a", "z", "values", "vectors", "work", "info", "n", "want", "limit")
MAX_ITERATIONS = 30  # QR iterations per eigenvalue (dlahqr's itmax is 30 per row too)
EXCEPTIONAL = (10, 20)  # the iterations that take Wilkinson's ad hoc shift instead


def _wr(d: dense.Dense, values: ir.Value, j: ir.Value) -> ir.Value:
    """A pointer to eigenvalue j's real part (values: interleaved (real, imag) pairs)."""
    return _ptr(d, values, d.b.mul(j, d.i(2)))


def _wi(d: dense.Dense, values: ir.Value, j: ir.Value) -> ir.Value:
    return _ptr(d, values, d.b.add(d.b.mul(j, d.i(2)), d.i(1)))


def _eq(d: dense.Dense, x: ir.Value, y: ir.Value) -> ir.Value:
    return d.b.fcmp_ordered("==", x, y)


def _ieq(d: dense.Dense, x: ir.Value, y: ir.Value | int) -> ir.Value:
    return d.b.icmp_signed("==", x, d.i(y) if isinstance(y, int) else y)


def _cdiv(d: dense.Dense, xr, xi, yr, yi) -> tuple[ir.Value, ir.Value]:
    """(xr + i xi) / (yr + i yi) by Smith's algorithm (no overflow of |y|^2)."""
    b = d.b
    wide = d.gt(d.abs(yr), d.abs(yi))
    ratio = d.div(b.select(wide, yi, yr), b.select(wide, yr, yi))
    den = b.select(wide, d.add(yr, d.mul(ratio, yi)), d.add(yi, d.mul(ratio, yr)))
    real = b.select(wide, d.add(xr, d.mul(ratio, xi)), d.add(d.mul(ratio, xr), xi))
    imag = b.select(wide, d.sub(xi, d.mul(ratio, xr)), d.sub(d.mul(ratio, xi), xr))
    return d.div(real, den), d.div(imag, den)


def _reflect_rows(d: dense.Dense, x: dense.Matrix, n, col, m, v, tau) -> None:
    """Rows [0, n) of x times H = I - tau v v^T acting on columns [col, col + m)."""
    with d.loop(0, n) as i:
        row = _ptr(d, x.row(i), col)
        d.axpy(row, d.neg(d.mul(tau, d.dot(row, v, 0, m))), v, 0, m)


def _swap(d: dense.Dense, a: dense.Matrix, i, j, rows_hi, cols_lo, n) -> None:
    """Exchange columns i and j over rows [0, rows_hi) and rows i and j over columns
    [cols_lo, n): dgebal's permutation step."""
    with d.when(d.b.icmp_signed("!=", i, j)):
        with d.loop(0, rows_hi) as r:
            x, y = a.get(r, i), a.get(r, j)
            a.set(r, i, y)
            a.set(r, j, x)
        d.swap(a.row(i), a.row(j), cols_lo, n)


def _isolated(d: dense.Dense, a: dense.Matrix, lo, hi, by_rows: bool) -> ir.Value:
    """The last row (by_rows) or first column in [lo, hi] whose other entries in
    [lo, hi] are all zero, or -1: an eigenvalue dgebal can move out of the way."""
    b = d.b
    found = d.var(d.i(-1), "found")
    with d.loop(lo, b.add(hi, d.i(1))) as i:
        zero = d.var(ir.Constant(I1, 1), "zero")
        with d.loop(lo, b.add(hi, d.i(1))) as j:
            x = a.get(i, j) if by_rows else a.get(j, i)
            off = b.and_(b.icmp_signed("!=", i, j), b.fcmp_ordered("!=", x, d.f(0.0)))
            zero.set(b.and_(zero.get(), b.not_(off)))
        take = zero.get() if by_rows else b.and_(zero.get(), _ieq(d, found.get(), -1))
        found.set(b.select(take, i, found.get()))
    return found.get()


def _balance(d: dense.Dense, a: dense.Matrix, scale, n) -> tuple[dense.Var, dense.Var]:
    """dgebal('B'): rows with no other entries in the active block [low, high] go to its
    bottom, columns with none to its top (their eigenvalues are their diagonal entries,
    found exactly); then the block's rows and columns are scaled by powers of 2 until
    their 2-norms are within a factor of 2 of each other. scale[i]: the row swapped with
    i outside the block, the scaling inside it. Returns (low, high)."""
    b = d.b
    low, high = d.var(d.i(0), "ilo"), d.var(b.sub(n, d.i(1)), "ihi")
    going = d.var(ir.Constant(I1, 1), "going")
    with d.while_(lambda: b.and_(going.get(), b.icmp_signed(">=", high.get(), d.i(0)))):
        i = _isolated(d, a, d.i(0), high.get(), by_rows=True)
        going.set(b.icmp_signed(">=", i, d.i(0)))
        with d.when(going.get()):
            hi = high.get()
            d.put(scale, hi, b.sitofp(i, d.t))
            _swap(d, a, i, hi, b.add(hi, d.i(1)), d.i(0), n)
            high.set(b.sub(hi, d.i(1)))
    going.set(ir.Constant(I1, 1))
    with d.while_(lambda: b.and_(going.get(), b.icmp_signed("<=", low.get(), high.get()))):
        j = _isolated(d, a, low.get(), high.get(), by_rows=False)
        going.set(b.icmp_signed(">=", j, d.i(0)))
        with d.when(going.get()):
            lo = low.get()
            d.put(scale, lo, b.sitofp(j, d.t))
            _swap(d, a, j, lo, b.add(high.get(), d.i(1)), lo, n)
            low.set(b.add(lo, d.i(1)))
    _scale(d, a, scale, low.get(), high.get(), n)
    return low, high


def _scale(d: dense.Dense, a: dense.Matrix, scale, lo, hi, n) -> None:
    """dgebal's scaling loop on the block [lo, hi] (LAPACK 3.12's: the 2-norms scaled as
    dnrm2's, so rows and columns of any finite size are compared)."""
    b = d.b
    sfmin1 = d.safmin / d.eps
    sfmin2, sfmax1 = 2 * sfmin1, 1 / sfmin1
    sfmax2 = 1 / sfmin2
    end = b.add(hi, d.i(1))
    d.fill(scale, d.f(1.0), lo, end)
    going = d.var(ir.Constant(I1, 1), "scaling")
    with d.while_(going.get):
        going.set(ir.Constant(I1, 0))
        with d.loop(lo, end) as i:
            c = d.var(_norm2(d, lambda j: a.get(j, i), lo, end), "c")
            r = d.var(_norm2(d, lambda j: a.get(i, j), lo, end), "r")
            ca = d.var(_largest(d, lambda j: a.get(j, i), 0, end), "ca")
            ra = d.var(d.max_abs(a.row(i), lo, n)[0], "ra")
            nonzero = b.and_(b.fcmp_ordered("!=", c.get(), d.f(0.0)),
                             b.fcmp_ordered("!=", r.get(), d.f(0.0)))  # fmt: skip
            with d.when(nonzero):
                total = d.add(c.get(), r.get())
                f, g = d.var(d.f(1.0), "f"), d.var(d.mul(r.get(), d.f(0.5)), "g")

                def largest(*xs):
                    return _fold(d, xs, d.gt)

                def least(*xs):
                    return _fold(d, xs, d.lt)

                def up() -> ir.Value:
                    return b.and_(
                        b.and_(d.lt(c.get(), g.get()),
                               d.lt(largest(f.get(), c.get(), ca.get()), d.f(sfmax2))),
                        d.gt(least(r.get(), g.get(), ra.get()), d.f(sfmin2)),
                    )  # fmt: skip

                with d.while_(up):
                    for v, k in ((f, 2.0), (c, 2.0), (ca, 2.0), (r, 0.5), (g, 0.5), (ra, 0.5)):
                        v.set(d.mul(v.get(), d.f(k)))
                g.set(d.mul(c.get(), d.f(0.5)))

                def down() -> ir.Value:
                    return b.and_(
                        b.and_(b.fcmp_ordered(">=", g.get(), r.get()),
                               d.lt(largest(r.get(), ra.get()), d.f(sfmax2))),
                        d.gt(least(f.get(), c.get(), g.get(), ca.get()), d.f(sfmin2)),
                    )  # fmt: skip

                with d.while_(down):
                    for v, k in ((f, 0.5), (c, 0.5), (g, 0.5), (ca, 0.5), (r, 2.0), (ra, 2.0)):
                        v.set(d.mul(v.get(), d.f(k)))
                fv, si = f.get(), d.get(scale, i)
                skip = b.fcmp_ordered(">=", d.add(c.get(), r.get()), d.mul(d.f(0.95), total))
                tiny = b.and_(b.and_(d.lt(fv, d.f(1.0)), d.lt(si, d.f(1.0))),
                              b.fcmp_ordered("<=", d.mul(fv, si), d.f(sfmin1)))  # fmt: skip
                huge = b.and_(b.and_(d.gt(fv, d.f(1.0)), d.gt(si, d.f(1.0))),
                              b.fcmp_ordered(">=", si, d.div(d.f(sfmax1), fv)))  # fmt: skip
                with d.when(b.not_(b.or_(skip, b.or_(tiny, huge)))):
                    d.put(scale, i, d.mul(si, fv))
                    going.set(ir.Constant(I1, 1))
                    d.scale(a.row(i), d.div(d.f(1.0), fv), lo, n)
                    with d.loop(0, end) as j:
                        a.set(j, i, d.mul(a.get(j, i), fv))


def _fold(d: dense.Dense, xs, better) -> ir.Value:
    """The max (better = d.gt) or min (d.lt) of xs."""
    best = xs[0]
    for x in xs[1:]:
        best = d.b.select(better(x, best), x, best)
    return best


def _unbalance(d: dense.Dense, z: dense.Matrix, scale, low, high, n) -> None:
    """dgebak('B', 'R'): the balanced matrix's eigenvectors (rows of z index components)
    back to A's: the block's rows scaled, then the permutation's swaps undone in reverse."""
    b = d.b
    with d.loop(low, b.add(high, d.i(1))) as i:
        d.scale(z.row(i), d.get(scale, i), 0, n)

    def undo(i) -> None:
        k = b.fptosi(d.get(scale, i), I64)
        with d.when(b.icmp_signed("!=", k, i)):
            d.swap(z.row(i), z.row(k), 0, n)

    with d.loop(b.sub(low, d.i(1)), -1, -1) as i:
        undo(i)
    with d.loop(b.add(high, d.i(1)), n) as i:
        undo(i)


def _hessenberg(d: dense.Dense, h: dense.Matrix, z: dense.Matrix, v, t, n, want) -> None:
    """H = Z^T A Z upper Hessenberg in place (dgehd2): reflector k (dlarfg on A[k+1:, k],
    copied into v) applied from the left to the trailing rows (t = v^T A, then a rank-1
    update row by row) and from the right to every row; with `want`, Z = H_0 H_1 ...
    accumulated forward from the identity (its rows take each reflector as A's do)."""
    b = d.b
    with d.when(want), d.loop(0, n) as i:
        d.fill(z.row(i), d.f(0.0), 0, n)
        z.set(i, i, d.f(1.0))
    with d.loop(0, b.sub(n, d.i(2))) as k:
        k1 = b.add(k, d.i(1))
        m = b.sub(n, k1)
        with d.loop(0, m) as i:
            d.put(v, i, h.get(b.add(k1, i), k))
        beta, tau = _householder(d, v, m)
        h.set(k1, k, beta)
        with d.loop(b.add(k1, d.i(1)), n) as i:
            h.set(i, k, d.f(0.0))
        with d.when(b.fcmp_ordered("!=", tau, d.f(0.0))):
            d.fill(t, d.f(0.0), k1, n)
            with d.loop(0, m) as i:
                d.axpy(t, d.get(v, i), h.row(b.add(k1, i)), k1, n)
            with d.loop(0, m) as i:
                d.axpy(h.row(b.add(k1, i)), d.neg(d.mul(tau, d.get(v, i))), t, k1, n)
            _reflect_rows(d, h, n, k1, m, v, tau)
            with d.when(want):
                _reflect_rows(d, z, n, k1, m, v, tau)


def _rotate_columns(d: dense.Dense, x: dense.Matrix, j, lo, hi, c, s) -> None:
    """Columns j and j + 1 of rows [lo, hi): (u, w) <- (c u + s w, c w - s u)."""
    j1 = d.b.add(j, d.i(1))
    with d.loop(lo, hi) as i:
        u, w = x.get(i, j), x.get(i, j1)
        x.set(i, j, d.add(d.mul(c, u), d.mul(s, w)))
        x.set(i, j1, d.sub(d.mul(c, w), d.mul(s, u)))


def _pair(d: dense.Dense, h, z, values, n, e, shift, want) -> None:
    """The 2 x 2 block ending at row e has converged: its two eigenvalues (complex: the
    positive imaginary part first); a real pair, with `want`, is rotated upper triangular
    (H's rows and columns and Z's columns alike)."""
    b = d.b
    e1 = b.sub(e, d.i(1))
    w = d.mul(h.get(e, e1), h.get(e1, e))
    p = d.mul(d.sub(h.get(e1, e1), h.get(e, e)), d.f(0.5))
    q = d.add(d.mul(p, p), w)
    root = d.sqrt(d.abs(q))
    x = d.add(h.get(e, e), shift)
    h.set(e, e, x)
    h.set(e1, e1, d.add(h.get(e1, e1), shift))
    with d.either(b.fcmp_ordered(">=", q, d.f(0.0))) as (real, complex_):
        with real:
            zz = b.select(b.fcmp_ordered(">=", p, d.f(0.0)), d.add(p, root), d.sub(p, root))
            b.store(d.add(x, zz), _wr(d, values, e1))
            other = b.select(_eq(d, zz, d.f(0.0)), d.add(x, zz), d.sub(x, d.div(w, zz)))
            b.store(other, _wr(d, values, e))
            b.store(d.f(0.0), _wi(d, values, e1))
            b.store(d.f(0.0), _wi(d, values, e))
            with d.when(want):
                sub = h.get(e, e1)
                size = d.add(d.abs(sub), d.abs(zz))
                ps, qs = d.div(sub, size), d.div(zz, size)
                r = d.sqrt(d.add(d.mul(ps, ps), d.mul(qs, qs)))
                ps, qs = d.div(ps, r), d.div(qs, r)
                d.rotate(h.row(e1), h.row(e), qs, d.neg(ps), e1, n)
                _rotate_columns(d, h, e1, 0, b.add(e, d.i(1)), qs, ps)
                _rotate_columns(d, z, e1, 0, n, qs, ps)
        with complex_:
            b.store(d.add(x, p), _wr(d, values, e1))
            b.store(d.add(x, p), _wr(d, values, e))
            b.store(root, _wi(d, values, e1))
            b.store(d.neg(root), _wi(d, values, e))


def _reflect3(d: dense.Dense, h, z, k, jhi, ilo, ihi, n, want, c, three: bool) -> None:
    """One reflector of a double-shift sweep on rows (and columns) k, k + 1 (and k + 2 if
    `three`): H's rows over columns [k, jhi), H's columns over rows [ilo, ihi) and, with
    `want`, Z's columns over all rows. c = (x, y, z, q, r), hqr2's names."""
    b = d.b
    x, y, zz, q, r = c
    k1, k2 = b.add(k, d.i(1)), b.add(k, d.i(2))
    with d.loop(k, jhi) as j:
        p = d.add(h.get(k, j), d.mul(q, h.get(k1, j)))
        if three:
            p = d.add(p, d.mul(r, h.get(k2, j)))
            h.set(k2, j, d.sub(h.get(k2, j), d.mul(p, zz)))
        h.set(k, j, d.sub(h.get(k, j), d.mul(p, x)))
        h.set(k1, j, d.sub(h.get(k1, j), d.mul(p, y)))

    def columns(m: dense.Matrix, lo, hi) -> None:
        with d.loop(lo, hi) as i:
            p = d.add(d.mul(x, m.get(i, k)), d.mul(y, m.get(i, k1)))
            if three:
                p = d.add(p, d.mul(zz, m.get(i, k2)))
                m.set(i, k2, d.sub(m.get(i, k2), d.mul(p, r)))
            m.set(i, k, d.sub(m.get(i, k), p))
            m.set(i, k1, d.sub(m.get(i, k1), d.mul(p, q)))

    columns(h, ilo, ihi)
    with d.when(want):
        columns(z, d.i(0), n)


def _shifts(d: dense.Dense, h11, h12, h21, h22) -> tuple[ir.Value, ...]:
    """The eigenvalues (r1 + i i1, r2 + i i2) of [[h11, h12], [h21, h22]], the double
    shift, computed as dlahqr's from the block over its 1-norm (no product overflows or
    underflows); both roots of a real pair, as hqr's shift takes them."""
    b = d.b
    size = d.add(d.add(d.abs(h11), d.abs(h12)), d.add(d.abs(h21), d.abs(h22)))
    size = b.select(_eq(d, size, d.f(0.0)), d.f(1.0), size)
    h11, h12, h21, h22 = (d.div(v, size) for v in (h11, h12, h21, h22))
    tr = d.mul(d.add(h11, h22), d.f(0.5))
    det = d.sub(d.mul(d.sub(h11, tr), d.sub(h22, tr)), d.mul(h12, h21))
    root = d.sqrt(d.abs(det))
    pair = b.fcmp_ordered(">=", det, d.f(0.0))
    zero = d.f(0.0)
    r1 = d.mul(b.select(pair, tr, d.add(tr, root)), size)
    r2 = d.mul(b.select(pair, tr, d.sub(tr, root)), size)
    i1 = b.select(pair, d.mul(root, size), zero)
    return r1, i1, r2, d.neg(i1)


def _francis(d: dense.Dense, h, z, n, e, low, its, shift, want) -> None:
    """One double-shift QR iteration on the unreduced block [low, e] (hqr2's step): the
    shifts (exceptional at EXCEPTIONAL), the start m where two small subdiagonals let
    the bulge begin, and the chase of 3 x 3 reflectors from m to e."""
    b = d.b
    eps = d.f(d.eps)
    e1 = b.sub(e, d.i(1))
    x, y = d.var(h.get(e, e), "x"), d.var(h.get(e1, e1), "y")
    above, below = d.var(h.get(e1, e), "above"), d.var(h.get(e, e1), "below")
    exceptional = b.or_(*(_ieq(d, its.get(), k) for k in EXCEPTIONAL))
    with d.when(exceptional):
        shift.set(d.add(shift.get(), x.get()))
        with d.loop(0, b.add(e, d.i(1))) as i:
            h.set(i, i, d.sub(h.get(i, i), x.get()))
        s = d.add(d.abs(h.get(e, e1)), d.abs(h.get(e1, b.sub(e, d.i(2)))))
        x.set(d.mul(d.f(0.75), s))
        y.set(x.get())
        above.set(s)
        below.set(d.mul(d.f(-0.4375), s))  # above * below: hqr's w = -0.4375 s^2
    its.set(b.add(its.get(), d.i(1)))
    r1, i1, r2, i2 = _shifts(d, y.get(), above.get(), below.get(), x.get())
    # the start m: from e - 2 down to low, until H[m, m-1] is small beside the bulge
    m = d.var(b.sub(e, d.i(2)), "m")
    p, q, r = d.var(d.f(0.0), "p"), d.var(d.f(0.0), "q"), d.var(d.f(0.0), "r")
    searching = d.var(ir.Constant(I1, 1), "searching")
    with d.while_(searching.get):
        mi = m.get()
        m1 = b.add(mi, d.i(1))
        zm, h21 = h.get(mi, mi), h.get(m1, mi)
        # (H - s1)(H - s2) e_m's first entries over H[m+1, m] / size (dlahqr's v)
        size = d.add(d.add(d.abs(d.sub(zm, r2)), d.abs(i2)), d.abs(h21))
        size = b.select(_eq(d, size, d.f(0.0)), d.f(1.0), size)
        h21s = d.div(h21, size)
        pv = d.mul(d.sub(zm, r1), d.div(d.sub(zm, r2), size))
        pv = d.sub(d.add(d.mul(h21s, h.get(mi, m1)), pv), d.mul(i1, d.div(i2, size)))
        qv = d.mul(h21s, d.sub(d.sub(d.add(zm, h.get(m1, m1)), r1), r2))
        rv = d.mul(h21s, h.get(b.add(mi, d.i(2)), m1))
        size = d.add(d.add(d.abs(pv), d.abs(qv)), d.abs(rv))
        pv, qv, rv = d.div(pv, size), d.div(qv, size), d.div(rv, size)
        p.set(pv)
        q.set(qv)
        r.set(rv)
        before = b.select(b.icmp_signed(">", mi, d.i(0)), b.sub(mi, d.i(1)), mi)
        left = d.mul(d.abs(h.get(mi, before)), d.add(d.abs(qv), d.abs(rv)))
        around = d.add(d.add(d.abs(h.get(before, before)), d.abs(zm)), d.abs(h.get(m1, m1)))
        stop = b.or_(_ieq(d, mi, low), d.lt(left, d.mul(eps, d.mul(d.abs(pv), around))))
        searching.set(b.not_(stop))
        with d.when(b.not_(stop)):
            m.set(b.sub(mi, d.i(1)))
    start = m.get()
    with d.loop(b.add(start, d.i(2)), b.add(e, d.i(1))) as i:
        h.set(i, b.sub(i, d.i(2)), d.f(0.0))
        with d.when(b.icmp_signed(">", i, b.add(start, d.i(2)))):
            h.set(i, b.sub(i, d.i(3)), d.f(0.0))
    jhi = b.select(want, n, b.add(e, d.i(1)))
    ilo = b.select(want, d.i(0), low)
    xv = d.var(d.f(0.0), "xk")
    with d.loop(start, e) as k:
        notlast = b.icmp_signed("!=", k, e1)
        first = _ieq(d, k, start)
        go = d.var(ir.Constant(I1, 1), "go")
        with d.when(b.not_(first)):
            k0 = b.sub(k, d.i(1))
            pv, qv = h.get(k, k0), h.get(b.add(k, d.i(1)), k0)
            rv = b.select(notlast, h.get(b.select(notlast, b.add(k, d.i(2)), k), k0), d.f(0.0))
            size = d.add(d.add(d.abs(pv), d.abs(qv)), d.abs(rv))
            xv.set(size)
            go.set(b.fcmp_ordered("!=", size, d.f(0.0)))
            safe = b.select(go.get(), size, d.f(1.0))
            p.set(d.div(pv, safe))
            q.set(d.div(qv, safe))
            r.set(d.div(rv, safe))
        with d.when(go.get()):
            pv, qv, rv = p.get(), q.get(), r.get()
            s = d.sqrt(d.add(d.add(d.mul(pv, pv), d.mul(qv, qv)), d.mul(rv, rv)))
            s = b.select(d.lt(pv, d.f(0.0)), d.neg(s), s)
            with d.when(b.fcmp_ordered("!=", s, d.f(0.0))):
                k0 = b.sub(k, d.i(1))
                with d.either(first) as (at_start, later):
                    with at_start, d.when(b.icmp_signed("!=", low, start)):
                        h.set(k, k0, d.neg(h.get(k, k0)))
                    with later:
                        h.set(k, k0, d.neg(d.mul(s, xv.get())))
                pv = d.add(pv, s)
                c = (d.div(pv, s), d.div(qv, s), d.div(rv, s), d.div(qv, pv), d.div(rv, pv))
                k3 = b.add(k, d.i(4))
                ihi = b.select(b.icmp_signed("<", k3, b.add(e, d.i(1))), k3, b.add(e, d.i(1)))
                with d.either(notlast) as (three, two):
                    with three:
                        _reflect3(d, h, z, k, jhi, ilo, ihi, n, want, c, three=True)
                    with two:
                        _reflect3(d, h, z, k, jhi, ilo, ihi, n, want, c, three=False)


def _negligible(d: dense.Dense, h, k, e, tiny) -> ir.Value:
    """dlahqr's deflation test of H[k, k - 1] (0 < k <= e, e the active block's last row):
    at most `tiny`, or at most eps times its diagonal neighbours (theirs, when those are
    zero) and small by Ahues and Tisseur's test on the 2 x 2 block, which compares the
    product of the off-diagonal pair with the diagonal's spread (no product of two
    entries is formed, so none overflows or underflows)."""
    b = d.b
    k0 = b.sub(k, d.i(1))
    sub, sup = d.abs(h.get(k, k0)), d.abs(h.get(k0, k))
    hkk = h.get(k, k)
    tst = d.add(d.abs(h.get(k0, k0)), d.abs(hkk))
    left = b.icmp_signed(">=", k, d.i(2))
    down = b.icmp_signed("<", k, e)
    before = d.abs(h.get(k0, b.select(left, b.sub(k, d.i(2)), k0)))
    after = d.abs(h.get(b.select(down, b.add(k, d.i(1)), k), k))
    wider = d.add(d.add(tst, b.select(left, before, d.f(0.0))), b.select(down, after, d.f(0.0)))
    tst = b.select(_eq(d, tst, d.f(0.0)), wider, tst)
    spread = d.abs(d.sub(h.get(k0, k0), hkk))
    ab, ba = _fold(d, (sub, sup), d.gt), _fold(d, (sub, sup), d.lt)
    aa, bb = _fold(d, (d.abs(hkk), spread), d.gt), _fold(d, (d.abs(hkk), spread), d.lt)
    s = d.add(aa, ab)
    product = d.mul(ba, d.div(ab, s))
    bound = _fold(d, (tiny, d.mul(d.f(d.eps), d.mul(bb, d.div(aa, s)))), d.gt)
    small = b.and_(b.fcmp_ordered("<=", sub, d.mul(d.f(d.eps), tst)),
                   b.fcmp_ordered("<=", product, bound))  # fmt: skip
    return b.or_(b.fcmp_ordered("<=", sub, tiny), small)


def _schur(d: dense.Dense, h, z, values, n, want, info, limit) -> dense.Var:
    """H to real Schur form (with `want`: the whole of H and Z; else only what the
    eigenvalues need), the eigenvalues into `values`; info as dhseqr's. Returns the sum of
    |H| (hqr2's norm, which the back-substitution scales its tiny pivots by)."""
    b = d.b
    norm = d.var(d.f(0.0), "norm")
    with d.loop(0, n) as i:
        lo = b.select(b.icmp_signed(">", i, d.i(0)), b.sub(i, d.i(1)), i)
        with d.loop(lo, n) as j:
            norm.set(d.add(norm.get(), d.abs(h.get(i, j))))
    tiny = d.mul(d.f(d.safmin / d.eps), b.sitofp(n, d.t))  # dlahqr's smlnum
    en = d.var(b.sub(n, d.i(1)), "en")
    its, shift = d.var(d.i(0), "its"), d.var(d.f(0.0), "exshift")
    low = d.var(d.i(0), "low")
    with d.while_(lambda: b.icmp_signed(">=", en.get(), d.i(0))):
        e = en.get()
        low.set(e)

        def unreduced() -> ir.Value:
            li = low.get()
            inside = b.icmp_signed(">", li, d.i(0))
            k = b.select(inside, li, d.i(1))  # a row whose test reads only H's entries
            return b.and_(inside, b.not_(_negligible(d, h, k, e, tiny)))

        with d.while_(unreduced):
            low.set(b.sub(low.get(), d.i(1)))
        li = low.get()
        with d.either(_ieq(d, li, e)) as (single, more):
            with single:
                x = d.add(h.get(e, e), shift.get())
                h.set(e, e, x)
                b.store(x, _wr(d, values, e))
                b.store(d.f(0.0), _wi(d, values, e))
                en.set(b.sub(e, d.i(1)))
                its.set(d.i(0))
            with more, d.either(_ieq(d, li, b.sub(e, d.i(1)))) as (pair, iterate):
                with pair:
                    _pair(d, h, z, values, n, e, shift.get(), want)
                    en.set(b.sub(e, d.i(2)))
                    its.set(d.i(0))
                with iterate, d.either(b.icmp_signed(">=", its.get(), limit)) as (fail, step):
                    with fail:
                        b.store(b.add(e, d.i(1)), info)
                        en.set(d.i(-1))
                    with step:
                        _francis(d, h, z, n, e, li, its, shift, want)
    return norm


def _real_vector(d: dense.Dense, h, values, n, e, scale) -> None:
    """Column e of H becomes the eigenvector of the quasi-triangular H for real eigenvalue
    e (hqr2's back-substitution; rows past e are zero, a 2 x 2 block solved as one)."""
    b = d.b
    p = d.get(values, b.mul(e, d.i(2)))
    last = d.var(e, "l")
    zz, ss = d.var(d.f(0.0), "z"), d.var(d.f(0.0), "s")
    h.set(e, e, d.f(1.0))
    with d.loop(b.sub(e, d.i(1)), -1, -1) as i:
        w = d.sub(h.get(i, i), p)
        r = d.dot(h.row(i), h.at(d.i(0), e), last.get(), b.add(e, d.i(1)), stride_y=n)
        wi = b.load(_wi(d, values, i))
        with d.either(d.lt(wi, d.f(0.0))) as (second, solve):
            with second:
                zz.set(w)
                ss.set(r)
            with solve:
                last.set(i)
                with d.either(_eq(d, wi, d.f(0.0))) as (one, two):
                    with one:
                        pivot = b.select(b.fcmp_ordered("!=", w, d.f(0.0)), w, scale)
                        h.set(i, e, d.neg(d.div(r, pivot)))
                    with two:
                        i1 = b.add(i, d.i(1))
                        x, y = h.get(i, i1), h.get(i1, i)
                        dr = d.sub(b.load(_wr(d, values, i)), p)
                        q = d.add(d.mul(dr, dr), d.mul(wi, wi))
                        t = d.div(d.sub(d.mul(x, ss.get()), d.mul(zz.get(), r)), q)
                        h.set(i, e, t)
                        by_x = d.div(d.sub(d.neg(r), d.mul(w, t)), x)
                        by_z = d.div(d.sub(d.neg(ss.get()), d.mul(y, t)), zz.get())
                        h.set(i1, e, b.select(d.gt(d.abs(x), d.abs(zz.get())), by_x, by_z))
                _overflow(d, h, i, e, e, d.abs(h.get(i, e)))


def _overflow(d: dense.Dense, h, i, e, first, t) -> None:
    """hqr2's overflow control: rows [i, e] of columns first..e divided by t when
    eps t^2 > 1."""
    stop = d.b.add(e, d.i(1))
    large = d.gt(d.mul(d.mul(d.f(d.eps), t), t), d.f(1.0))
    with d.when(large), d.loop(i, stop) as j, d.loop(first, stop) as c:
        h.set(j, c, d.div(h.get(j, c), t))


def _complex_vector(d: dense.Dense, h, values, n, e, norm) -> None:
    """Columns e - 1 and e of H become the real and imaginary parts of the eigenvector of
    the quasi-triangular H for eigenvalue e - 1 (the pair's positive imaginary part)."""
    b = d.b
    e1 = b.sub(e, d.i(1))
    p, q = b.load(_wr(d, values, e)), b.load(_wi(d, values, e))
    below, above = h.get(e, e1), h.get(e1, e)
    cr, ci = _cdiv(d, d.f(0.0), d.neg(above), d.sub(h.get(e1, e1), p), q)
    tall = d.gt(d.abs(below), d.abs(above))
    h.set(e1, e1, b.select(tall, d.div(q, below), cr))
    h.set(e1, e, b.select(tall, d.neg(d.div(d.sub(h.get(e, e), p), below)), ci))
    h.set(e, e1, d.f(0.0))
    h.set(e, e, d.f(1.0))
    last = d.var(e1, "l")
    zz, rr, ss = d.var(d.f(0.0), "z"), d.var(d.f(0.0), "r"), d.var(d.f(0.0), "s")
    with d.loop(b.sub(e, d.i(2)), -1, -1) as i:
        lo, hi = last.get(), b.add(e, d.i(1))
        ra = d.dot(h.row(i), h.at(d.i(0), e1), lo, hi, stride_y=n)
        sa = d.dot(h.row(i), h.at(d.i(0), e), lo, hi, stride_y=n)
        w = d.sub(h.get(i, i), p)
        wi = b.load(_wi(d, values, i))
        with d.either(d.lt(wi, d.f(0.0))) as (second, solve):
            with second:
                zz.set(w)
                rr.set(ra)
                ss.set(sa)
            with solve:
                last.set(i)
                with d.either(_eq(d, wi, d.f(0.0))) as (one, two):
                    with one:
                        c1, c2 = _cdiv(d, d.neg(ra), d.neg(sa), w, q)
                        h.set(i, e1, c1)
                        h.set(i, e, c2)
                    with two:
                        i1 = b.add(i, d.i(1))
                        x, y, z = h.get(i, i1), h.get(i1, i), zz.get()
                        dr = d.sub(b.load(_wr(d, values, i)), p)
                        vr = d.sub(d.add(d.mul(dr, dr), d.mul(wi, wi)), d.mul(q, q))
                        vi = d.mul(d.mul(dr, d.f(2.0)), q)
                        sizes = d.add(d.add(d.abs(w), d.abs(q)), d.add(d.abs(x), d.abs(y)))
                        tiny = d.mul(d.mul(d.f(d.eps), norm), d.add(sizes, d.abs(z)))
                        both = b.and_(_eq(d, vr, d.f(0.0)), _eq(d, vi, d.f(0.0)))
                        vr = b.select(both, tiny, vr)
                        re = d.add(d.sub(d.mul(x, rr.get()), d.mul(z, ra)), d.mul(q, sa))
                        im = d.sub(d.sub(d.mul(x, ss.get()), d.mul(z, sa)), d.mul(q, ra))
                        c1, c2 = _cdiv(d, re, im, vr, vi)
                        h.set(i, e1, c1)
                        h.set(i, e, c2)
                        x1 = d.div(d.add(d.sub(d.neg(ra), d.mul(w, c1)), d.mul(q, c2)), x)
                        x2 = d.div(d.sub(d.sub(d.neg(sa), d.mul(w, c2)), d.mul(q, c1)), x)
                        fr = d.sub(d.neg(rr.get()), d.mul(y, c1))
                        fi = d.sub(d.neg(ss.get()), d.mul(y, c2))
                        z1, z2 = _cdiv(d, fr, fi, z, q)
                        by_x = d.gt(d.abs(x), d.add(d.abs(z), d.abs(q)))
                        h.set(i1, e1, b.select(by_x, x1, z1))
                        h.set(i1, e, b.select(by_x, x2, z2))
                t = d.abs(h.get(i, e1))
                t = b.select(d.gt(d.abs(h.get(i, e)), t), d.abs(h.get(i, e)), t)
                _overflow(d, h, i, e, e1, t)


def _largest(d: dense.Dense, get, lo, hi) -> ir.Value:
    """max |get(i)| over i in [lo, hi) (get: an index to a loaded element)."""
    b = d.b
    largest = d.var(d.f(0.0), "largest")
    with d.loop(lo, hi) as i:
        size = d.abs(get(i))
        largest.set(b.select(d.gt(size, largest.get()), size, largest.get()))
    return largest.get()


def _norm2(d: dense.Dense, get, lo, hi) -> ir.Value:
    """The 2-norm of get(i) over i in [lo, hi), each term divided by the largest (dnrm2's
    scaling: no overflow or underflow, denormal entries included)."""
    b = d.b
    top = _largest(d, get, lo, hi)
    safe = b.select(_eq(d, top, d.f(0.0)), d.f(1.0), top)
    sums = d.var(d.f(0.0), "sums")
    with d.loop(lo, hi) as i:
        t = d.div(get(i), safe)
        sums.set(d.add(sums.get(), d.mul(t, t)))
    return d.mul(top, d.sqrt(sums.get()))


def _column_norm(d: dense.Dense, x: dense.Matrix, j, n) -> ir.Value:
    """||x[:, j]||, without overflow or underflow."""
    return _norm2(d, lambda i: x.get(i, j), 0, n)


def _vectors(d: dense.Dense, h, z, values, n, norm) -> None:
    """The balanced matrix's eigenvectors into z's columns: back-substitution on the Schur
    form (into H's columns), then Z times them (row by row, in place from the last)."""
    b = d.b
    scale = d.mul(d.f(d.eps), b.select(_eq(d, norm, d.f(0.0)), d.f(1.0), norm))
    with d.loop(b.sub(n, d.i(1)), -1, -1) as e:
        wi = b.load(_wi(d, values, e))
        with d.either(_eq(d, wi, d.f(0.0))) as (real, complex_):
            with real:
                _real_vector(d, h, values, n, e, scale)
            with complex_, d.when(d.lt(wi, d.f(0.0))):
                _complex_vector(d, h, values, n, e, norm)
    with d.loop(0, n) as i:
        row = z.row(i)
        with d.loop(b.sub(n, d.i(1)), -1, -1) as j:
            d.put(row, j, d.dot(row, h.at(d.i(0), j), 0, b.add(j, d.i(1)), stride_y=n))


def _normalize(d: dense.Dense, z, values, out, n) -> None:
    """dgeev's normalization of z's columns into `out` (vector j as row j of complex
    pairs; a pair's second vector is the first's conjugate)."""
    b = d.b
    with d.loop(0, n) as j:
        wi = b.load(_wi(d, values, j))
        row = _ptr(d, out, b.mul(j, b.mul(n, d.i(2))))
        with d.either(_eq(d, wi, d.f(0.0))) as (real, complex_):
            with real:
                inverse = d.div(d.f(1.0), _column_norm(d, z, j, n))
                with d.loop(0, n) as i:
                    d.put(row, b.mul(i, d.i(2)), d.mul(z.get(i, j), inverse))
                    d.put(row, b.add(b.mul(i, d.i(2)), d.i(1)), d.f(0.0))
            with complex_, d.when(d.gt(wi, d.f(0.0))):
                following = _ptr(d, out, b.mul(b.add(j, d.i(1)), b.mul(n, d.i(2))))
                _normalize_pair(d, z, j, n, row, following)


def _normalize_pair(d: dense.Dense, z: dense.Matrix, j, n, row, conjugate) -> None:
    """Columns j, j + 1 of z (real and imaginary parts) as dgeev leaves them: unit norm,
    rotated (dlartg) so the largest component is real; into `row` and its conjugate."""
    b = d.b
    j1 = b.add(j, d.i(1))
    inverse = d.div(d.f(1.0), d.hypot(_column_norm(d, z, j, n), _column_norm(d, z, j1, n)))
    best, largest = d.var(d.i(0), "best"), d.var(d.f(-1.0), "largest")
    with d.loop(0, n) as i:
        u, w = d.mul(z.get(i, j), inverse), d.mul(z.get(i, j1), inverse)
        z.set(i, j, u)
        z.set(i, j1, w)
        size = d.add(d.mul(u, u), d.mul(w, w))
        bigger = d.gt(size, largest.get())
        largest.set(b.select(bigger, size, largest.get()))
        best.set(b.select(bigger, i, best.get()))
    f, g = z.get(best.get(), j), z.get(best.get(), j1)
    r = d.hypot(f, g)
    r = b.select(_eq(d, r, d.f(0.0)), d.f(1.0), r)
    c, s = d.div(d.abs(f), r), d.div(g, d.copysign(r, f))
    with d.loop(0, n) as i:
        u, w = z.get(i, j), z.get(i, j1)
        re = d.add(d.mul(c, u), d.mul(s, w))
        im = b.select(_ieq(d, i, best.get()), d.f(0.0), d.sub(d.mul(c, w), d.mul(s, u)))
        at = b.mul(i, d.i(2))
        at1 = b.add(at, d.i(1))
        d.put(row, at, re)
        d.put(row, at1, im)
        d.put(conjugate, at, re)
        d.put(conjugate, at1, d.neg(im))


def _limits(d: dense.Dense) -> tuple[float, float]:
    """dgeev's (smlnum, bignum): sqrt(safmin) / eps and its inverse, the range of max |A|
    the iteration's products neither overflow nor underflow in."""
    smlnum = d.safmin**0.5 / d.eps
    return smlnum, 1.0 / smlnum


def _power_of_2(d: dense.Dense, x: ir.Value) -> ir.Value:
    """The largest power of 2 at most normal x > 0 (its mantissa bits cleared)."""
    b = d.b
    bits = ir.IntType(8 * d.dtype.itemsize)
    mantissa = {8: 52, 4: 23}[d.dtype.itemsize]
    cleared = b.and_(b.bitcast(x, bits), ir.Constant(bits, -(1 << mantissa)))
    return b.bitcast(cleared, d.t)


def _into_range(d: dense.Dense, a: dense.Matrix, n) -> ir.Value:
    """dgeev's scaling: A times sigma when max |A| is outside [smlnum, bignum], sigma a
    power of 2 within a factor 2 of dgeev's cscale / anrm (exact, barring underflow);
    returns sigma (1 when in range)."""
    b = d.b
    smlnum, bignum = _limits(d)
    anrm = d.var(d.f(0.0), "anrm")
    with d.loop(0, n) as i:
        size = d.max_abs(a.row(i), 0, n)[0]
        anrm.set(b.select(d.gt(size, anrm.get()), size, anrm.get()))
    norm = anrm.get()
    small = b.and_(d.gt(norm, d.f(0.0)), d.lt(norm, d.f(smlnum)))
    large = d.gt(norm, d.f(bignum))
    target = b.select(small, d.f(smlnum), d.f(bignum))
    outside = b.or_(small, large)
    sigma = b.select(outside, _power_of_2(d, d.div(target, b.select(outside, norm, target))),
                     d.f(1.0))  # fmt: skip
    with d.when(outside), d.loop(0, n) as i:
        d.scale(a.row(i), sigma, 0, n)
    return sigma


def _eig(d: dense.Dense, item: ir.Value) -> None:
    """One matrix: Hessenberg, Schur and (with `want` and info 0) the eigenvectors."""
    b, w = d.b, d.w
    n = w["n"]
    square = b.mul(n, n)
    want = b.icmp_signed("!=", w["want"], d.i(0))
    h = d.matrix("a", "n", b.mul(item, square))
    z = d.matrix("z", "n", b.select(want, b.mul(item, square), d.i(0)))
    values = _ptr(d, d.ptr("values"), b.mul(item, b.mul(n, d.i(2))))
    work = _ptr(d, d.ptr("work"), b.mul(item, b.mul(n, d.i(3))))
    info = _ptr(d, d.ptr("info", I64), item)
    b.store(d.i(0), info)
    scale = _ptr(d, work, b.mul(n, d.i(2)))
    sigma = _into_range(d, h, n)
    low, high = _balance(d, h, scale, n)
    _hessenberg(d, h, z, work, _ptr(d, work, n), n, want)
    norm = _schur(d, h, z, values, n, want, info, w["limit"])
    with d.when(b.and_(want, _ieq(d, b.load(info), 0))):
        _vectors(d, h, z, values, n, norm.get())
        _unbalance(d, z, scale, low.get(), high.get(), n)
        out = _ptr(d, d.ptr("vectors"), b.mul(item, b.mul(square, d.i(2))))
        _normalize(d, z, values, out, n)
    with d.when(d.b.fcmp_ordered("!=", sigma, d.f(1.0))):
        d.scale(values, d.div(d.f(1.0), sigma), 0, b.mul(n, d.i(2)))


def _build(name: str, dtype):
    def build(mod):
        return dense.per_matrix(mod, name, dtype, WORDS, _eig)

    return build


def work_size(n: int) -> int:
    """The scratch elements of one matrix: the reflector v, the product v^T A and the
    balancing's record."""
    return 3 * n


def eig(a, z, values, vectors, work, info, n: int, batch: int, *, want: bool) -> None:
    """The eigenvalues (into complex impl `values` [batch, n]) of the `batch` contiguous
    n x n matrices at impl `a` (overwritten); with `want`, the eigenvectors as the rows
    of complex impl `vectors` [batch, n, n], Z in impl `z` [batch, n, n]. Scratch `work`
    [batch, work_size(n)]; LAPACK's info into impl `info` [batch] (int64)."""
    name = f"kael_eig_{a.dtype.name}"
    words = [host_ptr(t, name) for t in (a, z, values, vectors, work, info)]
    words += [n, int(want), MAX_ITERATIONS]
    dense.run(name, _build(name, a.dtype), name, words, batch, 10 * n**3 * (1 + 2 * want))
