"""The merge step of the divide-and-conquer symmetric tridiagonal eigensolver (LAPACK's
dlaed2-dlaed4, six dense kernels a merge, under dense.ROUNDED: no reassociation may
turn (d_j - origin) - tau into d_j - (origin + tau)): the eigenvalues and eigenvectors
of D + rho z z^T, D = diag(d) from two halves already solved (each ascending), rho > 0.

Steps, in the sorted order of d:
- z normalized (rho takes its squared norm); tol = 8 eps max(|d|, rho).
- Deflation (dlaed2): a z_j with rho |z_j| <= tol leaves (d_j, e_j) an eigenpair; of two
  neighbours whose Givens rotation zeroing the first z would change D by at most tol,
  the first leaves (rotated d, rotated e_p), the second keeps the whole z.
- The k roots left of the secular equation f(x) = 1 + rho sum z_j^2 / (d_j - x) = 0 (one
  in each (d_i, d_i+1), the last below d_k + rho |z|^2), each kept as tau from the nearer
  pole (the origin), so that d_j - x = (d_j - origin) - tau stays exact; iterated by the
  two-pole rational model of f (Bunch, Nielsen and Sorensen), safeguarded by bisection.
- Gu and Eisenstat's z^: the z for which the computed roots are exact, from the roots
  themselves, so that the eigenvectors z^_j / (d_j - x_i) are orthogonal to rounding.
- Eigenvalues sorted ascending; the eigenvectors' rotations undone and their
  coordinates put back in the unsorted order: ut's row c is the eigenvector of value c.

Words: d1, d2 (the halves' eigenvalues), z1, z2 (the first half's vectors' last
coordinates, the second's first), beta (a pointer to the coupling: rho = |beta|, z2
taken times its sign), ut [n, n] out, lam [n] out, work and index (work_sizes), n, n1
(the first half's length).
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.cpu import dense, many
from kael.codegen.lowering import smin
from kael.runtime.tensor_impl import host_ptr

I1, I64 = ir.IntType(1), ir.IntType(64)
WORDS = ("d1", "d2", "z1", "z2", "beta", "u", "lam", "work", "index", "n", "n1")
WORK_WORDS = 9  # float rows of n in `work`, then the n x n sorted-basis vectors
INDEX_WORDS = 6  # int64 rows of n in `index`
# the secular iteration's cap, a guard against a stall only: the model converges in about
# ten steps (a model step that would not move, or would leave the bracket, bisects)
ITERATIONS = 160
CHUNK = 16  # the roots (or poles) one work item of the parallel parts takes


class _Merge:
    """The kernel's arrays: float rows of n in `work`, int64 rows in `index`."""

    def __init__(self, d: dense.Dense, n: ir.Value) -> None:
        b = d.b
        self.d, self.n = d, n
        work, index = d.ptr("work"), d.ptr("index", I64)

        def row(base, k):
            return b.gep(base, [b.mul(n, d.i(k))])

        # sorted d and z; the kept poles' d and z (by rank); z^; the eigenvalues by slot;
        # the deflating rotations' c and s; each root's tau from its origin
        (self.ds, self.zs, self.dk, self.zk, self.zhat, self.values, self.c, self.s,
         self.delta) = (row(work, k) for k in range(WORK_WORDS))  # fmt: skip
        # the eigenvectors in the sorted basis, one a row (by slot)
        self.w = d.matrix("work", "n", b.mul(n, d.i(WORK_WORDS)))
        # scalars after the rows: rho (z normalized), the sum of the kept z^2, and k
        scalars = b.gep(work, [b.add(b.mul(n, d.i(WORK_WORDS)), b.mul(n, n))])
        self.rho, self.zsum = scalars, b.gep(scalars, [d.i(1)])
        self.k = b.gep(index, [b.mul(n, d.i(INDEX_WORDS))])
        # perm: the sorted position's index in d; kind: 1 deflated; partner: the kept
        # position a rotation deflated into; kept: the kept positions ascending; origin:
        # each root's origin (a kept rank); slots: the eigenvalues' slots, ascending
        (self.perm, self.kind, self.partner, self.kept, self.origin,
         self.slots) = (row(index, k) for k in range(INDEX_WORDS))  # fmt: skip


def _prepare(d: dense.Dense, item: ir.Value) -> None:
    """The halves merged in order, z normalized (rho taking its squared norm), deflated:
    k, rho and the kept z's squared sum into the scalar slots."""
    b, n = d.b, d.w["n"]
    s = _Merge(d, n)
    beta = b.load(d.ptr("beta"))
    _sort_halves(d, s, d.copysign(d.f(1.0), beta))
    norm = d.sqrt(d.dot(s.zs, s.zs, 0, n))
    d.scale(s.zs, d.div(d.f(1.0), norm), 0, n)
    rho = d.mul(d.abs(beta), d.mul(norm, norm))
    top = d.var(rho, "top")
    with d.loop(0, n) as j:
        size = d.abs(d.get(s.ds, j))
        top.set(b.select(d.gt(size, top.get()), size, top.get()))
    k = _deflate(d, s, rho, d.mul(d.f(8.0 * d.eps), top.get()))
    b.store(rho, s.rho)
    b.store(k, s.k)
    zsum = d.var(d.f(0.0), "zsum")
    with d.loop(0, k) as i:
        zsum.set(d.add(zsum.get(), d.mul(_weight(d, s, i), _weight(d, s, i))))
    b.store(zsum.get(), s.zsum)


def _chunk(d: dense.Dense, s: _Merge, item: ir.Value):
    """Work item `item`'s range of roots (or kept poles): CHUNK of them, cut at k."""
    b = d.b
    k = b.load(s.k)
    first = b.mul(item, d.i(CHUNK))
    return first, smin(b, b.add(first, d.i(CHUNK)), k), k


def _roots_part(d: dense.Dense, item: ir.Value) -> None:
    s = _Merge(d, d.w["n"])
    first, end, k = _chunk(d, s, item)
    _roots(d, s, k, d.b.load(s.rho), first, end)


def _zhat_part(d: dense.Dense, item: ir.Value) -> None:
    s = _Merge(d, d.w["n"])
    first, end, k = _chunk(d, s, item)
    _zhat(d, s, k, d.b.load(s.rho), first, end)


def _vectors_part(d: dense.Dense, item: ir.Value) -> None:
    s = _Merge(d, d.w["n"])
    first, end, k = _chunk(d, s, item)
    _vectors(d, s, k, first, end)


def _finish(d: dense.Dense, item: ir.Value) -> None:
    """The deflated positions' unit vectors and values, and the eigenvalues' slots sorted
    ascending (insertion: the roots and the deflated values each come nearly in order)."""
    b, n = d.b, d.w["n"]
    s = _Merge(d, n)
    count = d.var(b.load(s.k), "count")
    with d.loop(0, n) as p, d.when(b.icmp_signed("!=", d.get(s.kind, p), d.i(0))):
        row = s.w.row(count.get())
        d.fill(row, d.f(0.0), 0, n)
        d.put(row, p, d.f(1.0))
        d.put(s.values, count.get(), d.get(s.ds, p))
        count.set(b.add(count.get(), d.i(1)))
    with d.loop(0, n) as c:
        key, at = c, d.var(c, "at")
        value = d.get(s.values, key)

        def later() -> ir.Value:
            here = at.get()
            inside = b.icmp_signed(">", here, d.i(0))
            # at the front there is nothing above: compare with the value itself (never
            # bigger), not with the unwritten slot 0
            above = d.get(s.slots, b.select(inside, b.sub(here, d.i(1)), here))
            bigger = d.gt(d.get(s.values, b.select(inside, above, key)), value)
            return b.and_(inside, bigger)

        with d.while_(later):
            d.put(s.slots, at.get(), d.get(s.slots, b.sub(at.get(), d.i(1))))
            at.set(b.sub(at.get(), d.i(1)))
        d.put(s.slots, at.get(), key)


def _halves(d: dense.Dense, first: str, second: str, i: ir.Value, sign=None) -> ir.Value:
    """Element i of the halves at words `first` (n1 long) and `second`, as one array (the
    second's elements times `sign`); each read clamped inside its own half."""
    b, n1 = d.b, d.w["n1"]
    inside = b.icmp_signed("<", i, n1)
    low = d.get(d.ptr(first), b.select(inside, i, b.sub(n1, d.i(1))))
    high = d.get(d.ptr(second), b.select(inside, d.i(0), b.sub(i, n1)))
    return b.select(inside, low, high if sign is None else d.mul(sign, high))


def _sort_halves(d: dense.Dense, s: _Merge, sign: ir.Value) -> None:
    """perm: the merge of the two halves' ascending eigenvalues (n1, n - n1); ds, zs:
    d and z in that order (z: the first half's vectors' last coordinates, then the
    second's first, times the coupling's sign)."""
    b, n, n1 = d.b, s.n, d.w["n1"]
    i, j = d.var(d.i(0), "i"), d.var(n1, "j")
    with d.loop(0, n) as p:
        second = _halves(d, "d1", "d2", b.select(b.icmp_signed("<", j.get(), n), j.get(), i.get()))
        first = b.and_(
            b.icmp_signed("<", i.get(), n1),
            b.or_(
                b.icmp_signed(">=", j.get(), n),
                b.fcmp_ordered("<=", _halves(d, "d1", "d2", i.get()), second),
            ),
        )
        src = b.select(first, i.get(), j.get())
        d.put(s.perm, p, src)
        d.put(s.ds, p, _halves(d, "d1", "d2", src))
        d.put(s.zs, p, _halves(d, "z1", "z2", src, sign))
        i.set(b.select(first, b.add(i.get(), d.i(1)), i.get()))
        j.set(b.select(first, j.get(), b.add(j.get(), d.i(1))))


def _deflate(d: dense.Dense, s: _Merge, rho, tol) -> ir.Value:
    """dlaed2's deflation in sorted order: kind[j] = 1 for a deflated j (its eigenvalue
    ds[j]; where a Givens rotation deflated it, its c, s and the kept partner), 0 for a
    kept one, whose positions go ascending into `kept`; returns how many are kept."""
    b, n = d.b, s.n
    prev = d.var(d.i(-1), "prev")
    with d.loop(0, n) as j:
        d.put(s.kind, j, d.i(0))
        d.put(s.partner, j, d.i(-1))
        zj = d.get(s.zs, j)
        with d.either(b.fcmp_ordered("<=", d.mul(rho, d.abs(zj)), tol)) as (tiny, keep):
            with tiny:
                d.put(s.kind, j, d.i(1))
                d.put(s.zs, j, d.f(0.0))
            with keep:
                p = prev.get()
                with d.when(b.icmp_signed(">=", p, d.i(0))):
                    zp = d.get(s.zs, p)
                    tau = d.hypot(zp, zj)
                    c, sn = d.div(zj, tau), d.div(zp, tau)
                    dp, dj = d.get(s.ds, p), d.get(s.ds, j)
                    off = d.abs(d.mul(d.mul(c, sn), d.sub(dj, dp)))
                    with d.when(b.fcmp_ordered("<=", off, tol)):
                        d.put(s.zs, j, tau)
                        d.put(s.zs, p, d.f(0.0))
                        cc, ss = d.mul(c, c), d.mul(sn, sn)
                        d.put(s.ds, p, d.add(d.mul(cc, dp), d.mul(ss, dj)))
                        d.put(s.ds, j, d.add(d.mul(ss, dp), d.mul(cc, dj)))
                        d.put(s.kind, p, d.i(1))
                        d.put(s.c, p, c)
                        d.put(s.s, p, sn)
                        d.put(s.partner, p, j)
                prev.set(j)
    count = d.var(d.i(0), "count")
    with d.loop(0, n) as j, d.when(b.icmp_signed("==", d.get(s.kind, j), d.i(0))):
        d.put(s.kept, count.get(), j)
        d.put(s.dk, count.get(), d.get(s.ds, j))
        d.put(s.zk, count.get(), d.get(s.zs, j))
        count.set(b.add(count.get(), d.i(1)))
    return count.get()


def _pole(d: dense.Dense, s: _Merge, i: ir.Value) -> ir.Value:
    """The d of the kept pole of rank i."""
    return d.get(s.dk, i)


def _weight(d: dense.Dense, s: _Merge, i: ir.Value) -> ir.Value:
    """The z of the kept pole of rank i."""
    return d.get(s.zk, i)


def _roots(d: dense.Dense, s: _Merge, k, rho, first, end) -> None:
    """Root i of the secular equation (between kept poles i and i + 1, the last past pole
    k - 1) as tau from its origin pole (the nearer: by f's sign at the middle), iterated
    by the two-pole model inside a bisection bracket: origin[i], delta[i] = tau and
    values[i] = the root."""
    b = d.b
    eps = d.f(d.eps)
    zsum = b.load(s.zsum)
    with d.loop(first, end) as i:
        last = b.icmp_signed("==", i, b.sub(k, d.i(1)))
        di = _pole(d, s, i)
        upper = b.select(
            last,
            d.add(di, d.mul(rho, zsum)),
            _pole(d, s, b.select(last, i, b.add(i, d.i(1)))),
        )
        width = d.sub(upper, di)
        half = d.mul(d.f(0.5), width)
        f_mid = _secular(d, s, k, rho, i, di, half)[0]
        right = b.and_(b.not_(last), b.fcmp_ordered("<", f_mid, d.f(0.0)))
        origin = b.select(right, upper, di)
        d.put(s.origin, i, b.select(right, b.add(i, d.i(1)), i))
        # tau's bracket from the origin, (0, width / 2] or [-width / 2, 0) (the last root's
        # (0, width]), and the first iterate the middle, where f's sign chose the origin
        lo = d.var(b.select(right, d.neg(half), d.f(0.0)), "lo")
        hi = d.var(b.select(right, d.f(0.0), b.select(last, width, half)), "hi")
        tau = d.var(b.select(right, d.neg(half), half), "tau")
        going, steps = d.var(ir.Constant(I1, 1), "going"), d.var(d.i(0), "steps")
        with d.while_(going.get):
            t = tau.get()
            f, psi, dpsi, phi, dphi = _secular(d, s, k, rho, i, origin, t)
            negative = b.fcmp_ordered("<", f, d.f(0.0))
            lo.set(b.select(negative, t, lo.get()))
            hi.set(b.select(negative, hi.get(), t))
            guess = _two_poles(d, t, psi, dpsi, phi, dphi, d.sub(di, origin), width, right, last)
            inside = b.and_(d.gt(guess, lo.get()), d.lt(guess, hi.get()))
            middle = d.mul(d.f(0.5), d.add(lo.get(), hi.get()))
            # a model step that stays put (its rounding) bisects instead
            moves = b.and_(inside, b.fcmp_ordered("!=", guess, t))
            step = b.select(moves, guess, middle)
            # converged: f within its evaluation's rounding (dlaed4's test), or the bracket
            # within tau's last digits
            terms = d.add(d.mul(d.f(8.0), d.add(d.add(d.f(1.0), d.abs(psi)), d.abs(phi))),
                          d.mul(d.abs(t), d.add(dpsi, dphi)))  # fmt: skip
            span = d.mul(d.mul(d.f(2.0), eps), d.abs(t))
            done = b.or_(
                b.fcmp_ordered("<=", d.abs(f), d.mul(eps, terms)),
                b.fcmp_ordered("<=", d.sub(hi.get(), lo.get()), span),
            )
            steps.set(b.add(steps.get(), d.i(1)))
            going.set(b.and_(b.not_(done), b.icmp_signed("<", steps.get(), d.i(ITERATIONS))))
            tau.set(b.select(done, t, step))
        d.put(s.delta, i, tau.get())
        d.put(s.values, i, d.add(origin, tau.get()))


def _secular(d: dense.Dense, s: _Merge, k, rho, i, origin, tau):
    """(f, psi, psi', phi, phi') at x = origin + tau over the kept poles: psi the sum of
    rho z_j^2 / (d_j - x) over poles up to i, phi over those after, the primes their
    slopes; d_j - x as (d_j - origin) - tau (the kernel never reassociates: ROUNDED), in
    vectors of LANES poles, then the lanes and the tail in order."""
    b = d.b
    lanes = dense.VECTOR_BYTES // d.dtype.itemsize
    whole = b.mul(b.sdiv(k, d.i(lanes)), d.i(lanes))
    order = ir.Constant(ir.VectorType(I64, lanes), list(range(lanes)))
    zero = d.splat(d.f(0.0), lanes)
    vsums = [d.var(zero, name) for name in ("psi", "dpsi", "phi", "dphi")]

    def add_terms(sums, dj, zj, below, pick):
        inverse = d.div(pick(d.f(1.0)), d.sub(d.sub(dj, pick(origin)), pick(tau)))
        term = d.mul(d.mul(zj, zj), inverse)
        slope = d.mul(term, inverse)
        nothing = pick(d.f(0.0))
        values = (
            b.select(below, term, nothing), b.select(below, slope, nothing),
            b.select(below, nothing, term), b.select(below, nothing, slope),
        )  # fmt: skip
        for acc, value in zip(sums, values, strict=True):
            acc.set(d.add(acc.get(), value))

    with d.loop(0, whole, lanes) as j:
        dj = b.load(d.lanes(b.gep(s.dk, [j]), lanes), align=d.dtype.itemsize)
        zj = b.load(d.lanes(b.gep(s.zk, [j]), lanes), align=d.dtype.itemsize)
        below = b.icmp_signed("<=", b.add(order, d.splat(j, lanes)), d.splat(i, lanes))
        add_terms(vsums, dj, zj, below, lambda x: d.splat(x, lanes))
    sums = [d.var(d.f(0.0), name) for name in ("psi1", "dpsi1", "phi1", "dphi1")]
    for acc, vector in zip(sums, vsums, strict=True):
        for lane in range(lanes):
            acc.set(d.add(acc.get(), b.extract_element(vector.get(), d.i(lane))))
    with d.loop(whole, k) as j:
        add_terms(sums, _pole(d, s, j), _weight(d, s, j), b.icmp_signed("<=", j, i), lambda x: x)
    psi, dpsi, phi, dphi = (d.mul(rho, acc.get()) for acc in sums)
    return d.add(d.add(d.f(1.0), psi), phi), psi, dpsi, phi, dphi


def _two_poles(d: dense.Dense, t, psi, dpsi, phi, dphi, left, width, right, last):
    """The next tau from f's model at t: psi ~ a + bl / (left - x), phi ~ c + er / (left
    + width - x) (value and slope matched; no phi past the last pole), whose one root in
    the interval is taken as its distance from the origin pole (the left one, or with
    `right` the right one), so a root near the origin keeps its digits."""
    b = d.b
    gl, gr = d.sub(left, t), d.sub(d.add(left, width), t)
    bl = d.mul(dpsi, d.mul(gl, gl))
    er = b.select(last, d.f(0.0), d.mul(dphi, d.mul(gr, gr)))
    c0 = d.add(
        d.add(d.f(1.0), d.sub(psi, d.mul(dpsi, gl))),
        b.select(last, d.f(0.0), d.sub(phi, d.mul(dphi, gr))),
    )
    # from the left pole y solves c0 y^2 - (c0 w + bl + er) y + bl w = 0; from the right
    # the mirror, -c0 for c0 and er for bl
    from_left = _model_root(d, c0, bl, er, width)
    from_right = _model_root(d, d.neg(c0), er, bl, width)
    past = d.div(bl, c0)  # past the last pole: c0 + bl / (left - x) = 0
    return b.select(last, past, b.select(right, d.neg(from_right), from_left))


def _model_root(d: dense.Dense, c, near, far, w) -> ir.Value:
    """The root in (0, w) of c y^2 - lin y + near w = 0, lin = c w + near + far (near, far
    > 0), without cancellation: 2 near w / (lin + sqrt(disc)) where lin >= 0, else (lin -
    sqrt(disc)) / (2 c), whose terms then share a sign (dlaed4's choice)."""
    b = d.b
    lin = d.add(d.mul(c, w), d.add(near, far))
    root = d.sqrt(d.abs(d.sub(d.mul(lin, lin), d.mul(d.f(4.0), d.mul(c, d.mul(near, w))))))
    positive = d.div(d.mul(d.f(2.0), d.mul(near, w)), d.add(lin, root))
    negative = d.div(d.sub(lin, root), d.mul(d.f(2.0), c))
    return b.select(b.fcmp_ordered(">=", lin, d.f(0.0)), positive, negative)


def _root_origin(d: dense.Dense, s: _Merge, i: ir.Value) -> ir.Value:
    """Root i's origin pole's d."""
    return _pole(d, s, d.get(s.origin, i))


def _zhat(d: dense.Dense, s: _Merge, k, rho, first, end) -> None:
    """Gu and Eisenstat's z^_j for the kept poles j in [first, end), from all the roots."""
    b = d.b
    with d.loop(first, end) as j:
        dj = _pole(d, s, j)
        prod = d.var(d.f(1.0), "prod")
        with d.loop(0, k) as i:
            gap = d.add(d.sub(_root_origin(d, s, i), dj), d.get(s.delta, i))  # x_i - d_j
            other = d.sub(_pole(d, s, i), dj)
            ratio = d.div(gap, b.select(b.icmp_signed("==", i, j), rho, other))
            prod.set(d.mul(prod.get(), ratio))
        d.put(s.zhat, j, d.copysign(d.sqrt(d.abs(prod.get())), _weight(d, s, j)))


def _vectors(d: dense.Dense, s: _Merge, k, first, end) -> None:
    """Root i's eigenvector z^_j / (d_j - x_i) over the kept poles, normalized, into row i
    of w (its entries by sorted position), for the roots i in [first, end)."""
    b, n = d.b, s.n
    with d.loop(first, end) as i:
        origin, tau, row = _root_origin(d, s, i), d.get(s.delta, i), s.w.row(i)
        d.fill(row, d.f(0.0), 0, n)
        largest = d.var(d.f(0.0), "largest")
        with d.loop(0, k) as j:
            x = d.div(d.get(s.zhat, j), d.sub(d.sub(_pole(d, s, j), origin), tau))
            d.put(row, d.get(s.kept, j), x)
            largest.set(b.select(d.gt(d.abs(x), largest.get()), d.abs(x), largest.get()))
        # the norm scaled by the largest entry: a root near its pole (on a tiny or huge T)
        # makes entries whose squares over- or underflow
        d.scale(row, d.div(d.f(1.0), largest.get()), 0, n)
        d.scale(row, d.div(d.f(1.0), d.sqrt(d.dot(row, row, 0, n))), 0, n)


def _output_part(d: dense.Dense, item: ir.Value) -> None:
    """Eigenvalues [item CHUNK, +CHUNK) in ascending order: each one's vector (w's row of
    its slot) with the deflating rotations undone on its coordinates (the last made
    first), lam[c], and ut[c, perm[p]] = that row's p."""
    b, n = d.b, d.w["n"]
    s = _Merge(d, n)
    first = b.mul(item, d.i(CHUNK))
    ut, lam = d.matrix("u", "n"), d.ptr("lam")
    with d.loop(first, smin(b, b.add(first, d.i(CHUNK)), n)) as c:
        slot = d.get(s.slots, c)
        source, target = s.w.row(slot), ut.row(c)
        with d.loop(b.sub(n, d.i(1)), -1, -1) as p:
            j = d.get(s.partner, p)
            with d.when(b.icmp_signed(">=", j, d.i(0))):
                cos, sin = d.get(s.c, p), d.get(s.s, p)
                wp, wj = d.get(source, p), d.get(source, j)
                d.put(source, p, d.add(d.mul(cos, wp), d.mul(sin, wj)))
                d.put(source, j, d.sub(d.mul(cos, wj), d.mul(sin, wp)))
        d.put(lam, c, d.get(s.values, slot))
        with d.loop(0, n) as p:
            d.put(target, d.get(s.perm, p), d.get(source, p))


# (part, body, whether it runs in CHUNKs) in order
KERNELS = (("prepare", _prepare, False), ("roots", _roots_part, True),
           ("zhat", _zhat_part, True), ("vectors", _vectors_part, True),
           ("finish", _finish, False), ("output", _output_part, True))  # fmt: skip


def _module(dtype):
    name = f"kael_secular_{dtype.name}"

    def build(module: ir.Module) -> list[str]:
        return [
            symbol
            for part, body, _ in KERNELS
            for symbol in dense.per_matrix(
                module, f"{name}_{part}", dtype, WORDS, body, dense.ROUNDED
            )  # fmt: skip
        ]

    return name, build


def work_sizes(n: int) -> tuple[int, int]:
    """(floats, int64s) of the scratch one merge of n takes."""
    return WORK_WORDS * n + n * n + 2, INDEX_WORDS * n + 1


def merge(halves, beta, ut, lam, work, index) -> None:
    """The eigenpairs of diag(d) + |beta| z z^T into impls ut [n, n] (the vectors as rows,
    ascending) and lam [n]: `halves` the impls (values1 [n1], values2, z1 [n1], z2) of the
    two halves' ascending eigenvalues and their vectors' coordinates beside the split (z2
    taken times beta's sign), beta a 1-element impl (the coupling, not 0), work and index
    scratch of at least work_sizes(n)."""
    d1, d2 = halves[0], halves[1]
    n1 = d1.shape[-1]
    n = n1 + d2.shape[-1]
    floats, ints = work_sizes(n)
    assert work.numel() >= floats and index.numel() >= ints
    impls = (*halves, beta, ut, lam, work, index)
    merges(d1.dtype, [[*(host_ptr(t, "secular") for t in impls), n, n1]])


def merges(dtype, blocks: list[list[int]]) -> None:
    """Several independent merges at once, each block its WORDS (addresses and sizes, as
    `merge` takes them): six launches in all, each over every merge (codegen/cpu/many.py),
    the roots, z^, vectors and output in CHUNKs over the threads."""
    name, build = _module(dtype)
    largest = max(words[-2] for words in blocks)
    chunks = -(-largest // CHUNK)
    work = sum(words[-2] ** 2 for words in blocks)
    for part, _, chunked in KERNELS:
        fn = dense.kernel(name, build, f"{name}_{part}")
        per = chunks if chunked else 1
        many.run(fn, blocks, per, work * 64 if len(blocks) * per > 1 else 0)
