"""The symmetric eigensolver of kael.linalg (eigh, eigvalsh): dense kernels
(codegen/cpu/dense.py) on a contiguous copy of each matrix of a batch, in place.

The steps are LAPACK's dsyev's. `prepare` scans the triangle that UPLO names for its
largest magnitude: a NaN gives NaN eigenvalues and info = n - 1 (PyTorch's LAPACK fails
to converge on one), an infinity NaN eigenvalues and info 0; otherwise the matrix is
copied into the other triangle and scaled into [sqrt(safmin / eps), sqrt(eps / safmin)]
when its norm is outside, so neither tiny nor huge matrices under- or overflow.
Householder reflectors reduce it to a tridiagonal T = Q^T A Q, the reflector of step k
in row k's upper part: for one large matrix the caller first runs `panel` (dlatrd) on
panels of columns, each followed by the trailing block's rank-2k update through kael's
matrix product (dsytrd); `eigh` reduces the rest unblocked (dsytd2, updating only the
lower triangle, whole contiguous row pieces). The implicit QL iteration with Wilkinson's
shift (EISPACK's tql2) then finds T's eigenvalues and logs its Givens rotations. At most
30 sweeps per eigenvalue: past that, info is the number of off-diagonals that did not
reach zero (dsteqr's info). Eigenvalues come out ascending, scaled back. With
eigenvectors, two more kernels run over the threads: `form` makes Q^T (rows: the columns
of Q) in blocks of rows (the caller may form it blocked through the matrix product
instead), `rotate` replays the log on Z^T = Q^T in packed strips of columns (the
eigenvectors are the rows; the caller transposes).
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.cpu import dense
from kael.codegen.cpu.team import Team
from kael.runtime.tensor_impl import host_ptr

I1, I64 = ir.IntType(1), ir.IntType(64)
PREPARE_WORDS = ("a", "w", "work", "info", "n", "lower", "vectors")
WORDS = ("a", "w", "work", "info", "n", "vectors", "pairs", "steps", "capacity", "start")
PANEL_WORDS = ("a", "w", "work", "panel", "n", "start", "width", "part", "sync")
ROTATE_WORDS = ("a", "pairs", "steps", "info", "n", "capacity", "chunks", "strips", "size")
FORM_WORDS = ("a", "work", "n", "blocks", "strips", "size")
MAX_SWEEPS = 30
TRIDIAGONAL = 2  # eigh's vectors word for the reduction alone (divide and conquer goes on)
# The columns of Z^T one work item of the rotation kernel rotates, by itemsize: a row of
# the strip is two AVX2 registers of float64 (four of float32). Wider float64 strips
# spilled the wavefront's two carried rows to the stack: 512 x 512 ran 1.6x slower at 32.
STRIPS = {8: 8, 4: 32}
GROUP = 4  # the rows of A one pass of the panel's product A v reads (6 and 8: slower)
# The leader's share of a panel column's rows, in 256ths: the top 181/256 ~ 1/sqrt(2) of the
# rows hold half the lower triangle's elements.
LEAD_SHARE = 181
ROWS = 8  # the rows of Q^T one work item of the forming kernel makes
STRIP = 8  # the rows prepare makes symmetric together
# (eps: the convergence test's unit; safmin; dsyev's rmin and rmax), by itemsize.
LIMITS = {
    size: (*dense.PRECISION[size], rmin, rmax)
    for size, rmin, rmax in (
        (8, 1.0010415475915505e-146, 9.989595361011175e145),
        (4, 3.1401849173675503e-16, 3184525836262886.5),
    )
}


def _ptr(d: dense.Dense, base: ir.Value, i: ir.Value) -> ir.Value:
    return d.b.gep(base, [i])


def _householder(d: dense.Dense, x: ir.Value, m: ir.Value) -> tuple[ir.Value, ir.Value]:
    """LAPACK's dlarfg on x[0:m]: H = I - tau v v^T with H x = (beta, 0, ...); v
    overwrites x (v[0] = 1). The norm is scaled by max |x|, so it neither under- nor
    overflows; a column below safmin counts as zero (tau = 0)."""
    b = d.b
    eps, safmin, _, _ = LIMITS[d.dtype.itemsize]
    alpha = d.get(x, d.i(0))
    one = d.i(1)
    scale, _ = d.max_abs(x, one, m)
    inverse = d.div(d.f(1.0), b.select(b.fcmp_ordered("==", scale, d.f(0.0)), d.f(1.0), scale))
    sums = d.var(d.f(0.0), "sums")
    with d.loop(one, m) as j:
        t = d.mul(d.get(x, j), inverse)
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
    d.put(x, d.i(0), d.f(1.0))
    return beta.get(), tau.get()


def _update_lower(d: dense.Dense, a: dense.Matrix, i, lo, v, w, u, p) -> None:
    """Row i's part [lo, i] of the lower triangle takes the rank-2 update
    a[i, j] -= v[i] w[j] + w[i] v[j], and in the same pass feeds the symmetric product
    p = A u of the next step: p[i] += sum_j a[i, j] u[j] over j <= i and p[j] += a[i, j]
    u[i] for j < i (the upper triangle's share, read from the lower one)."""
    b = d.b
    row = a.row(i)
    vi, wi, ui = d.get(v, i), d.get(w, i), d.get(u, i)
    acc = d.var(d.f(0.0), "acc")
    with d.loop(lo, i) as j:
        at = b.gep(row, [j])
        x = d.sub(b.load(at), d.add(d.mul(vi, d.get(w, j)), d.mul(wi, d.get(v, j))))
        b.store(x, at)
        acc.set(d.add(acc.get(), d.mul(x, d.get(u, j))))
        d.put(p, j, d.add(d.get(p, j), d.mul(x, ui)))
    at = b.gep(row, [i])
    x = d.sub(b.load(at), d.mul(d.f(2.0), d.mul(vi, wi)))
    b.store(x, at)
    d.put(p, i, d.add(d.get(p, i), d.add(acc.get(), d.mul(x, ui))))


def _tridiagonalize(d: dense.Dense, a: dense.Matrix, n, start, diag, e, tau, p) -> None:
    """A = Q T Q^T from column `start` on (the panels reduced the columns before it):
    diag[k] = T[k, k], e[k] = T[k + 1, k], tau[k] and row k's v_k (from column k + 1, the
    upper triangle no step reads) describe H_k; Q = H_0 ... H_{n-2}.
    With p = tau A v and w = p - (tau/2)(p.v) v, A -= v w^T + w v^T (dsytd2's step) on
    the lower triangle only, row by row, so each step streams half the trailing block
    once: column k + 1 is updated first into row k + 1's upper part and gives the next
    reflector, then each later row's update also feeds the next product A v (`p` holds
    two vectors of n, used in turn). The first product reads the trailing block's full
    rows (it is symmetric there on entry)."""
    b = d.b
    one, last = d.i(1), b.sub(n, d.i(1))
    with d.when(b.icmp_signed(">", b.sub(n, start), one)):
        s1 = b.add(start, one)
        first = a.row(start)
        beta, t = _householder(d, _ptr(d, first, s1), b.sub(n, s1))
        d.put(diag, start, a.get(start, start))
        d.put(e, start, beta)
        d.put(tau, start, t)
        with d.loop(s1, n) as i:
            d.put(p, i, d.mul(t, d.dot(a.row(i), first, s1, n)))
        with d.loop(start, b.sub(n, d.i(2))) as k:
            k1, k2 = b.add(k, one), b.add(k, d.i(2))
            odd = b.trunc(b.sub(k, start), ir.IntType(1))
            w, nxt = b.select(odd, _ptr(d, p, n), p), b.select(odd, p, _ptr(d, p, n))
            v = a.row(k)
            alpha = d.mul(d.mul(d.f(-0.5), d.get(tau, k)), d.dot(w, v, k1, n))
            d.axpy(w, alpha, v, k1, n)
            head = a.row(k1)
            vk, wk = d.get(v, k1), d.get(w, k1)
            with d.loop(k1, n) as j:
                x = d.add(d.mul(vk, d.get(w, j)), d.mul(wk, d.get(v, j)))
                d.put(head, j, d.sub(a.get(j, k1), x))
            d.put(diag, k1, a.get(k1, k1))
            beta, t = _householder(d, _ptr(d, head, k2), b.sub(n, k2))
            d.put(e, k1, beta)
            d.put(tau, k1, t)
            d.fill(nxt, d.f(0.0), k2, n)
            with d.loop(k2, n) as i:
                _update_lower(d, a, i, k2, v, w, head, nxt)
            d.scale(nxt, t, k2, n)
    d.put(diag, last, a.get(last, last))
    d.put(e, last, d.f(0.0))


def _symmetric_rows(d: dense.Dense, a: dense.Matrix, r, count: int, lo, v, out) -> None:
    """Rows [r, r + count)'s share of out = A v from the lower triangle's part from column
    lo: out[i] gets row i's dot, out[j] (j < i) the upper triangle's a[i, j] v[i]. The
    rows go through one pass together, so v[j] and out[j] are loaded once for `count` rows
    (the loop is bound by loads and stores, not by multiply-adds)."""
    b = d.b
    rows = [a.row(b.add(r, d.i(q))) for q in range(count)]
    scales = [d.get(v, b.add(r, d.i(q))) for q in range(count)]
    sums = [d.var(d.f(0.0), "acc") for _ in range(count)]
    with d.loop(lo, r) as j:
        vj, total = d.get(v, j), d.get(out, j)
        for row, scale, acc in zip(rows, scales, sums, strict=True):
            x = b.load(b.gep(row, [j]))
            acc.set(d.add(acc.get(), d.mul(x, vj)))
            total = d.add(total, d.mul(x, scale))
        d.put(out, j, total)
    for q in range(count):  # the count x count corner on the diagonal
        i = b.add(r, d.i(q))
        for q2 in range(q):
            x = b.load(b.gep(rows[q], [b.add(r, d.i(q2))]))
            sums[q].set(d.add(sums[q].get(), d.mul(x, scales[q2])))
            sums[q2].set(d.add(sums[q2].get(), d.mul(x, scales[q])))
        sums[q].set(d.add(sums[q].get(), d.mul(b.load(b.gep(rows[q], [i])), scales[q])))
    for q in range(count):
        i = b.add(r, d.i(q))
        d.put(out, i, d.add(d.get(out, i), sums[q].get()))


def _in_groups(d: dense.Dense, lo, hi, size: int, body) -> None:
    """body(i, count) for i over [lo, hi) in groups of `size` (count = size), then singly
    over the rest (count = 1)."""
    b = d.b
    whole = b.sub(hi, b.srem(b.sub(hi, lo), d.i(size)))
    with d.loop(lo, whole, size) as i:
        body(i, size)
    with d.loop(whole, hi) as i:
        body(i, 1)


def _panel(d: dense.Dense, item: ir.Value) -> None:
    """LAPACK's dlatrd on columns [start, start + width) of the one full symmetric trailing
    block: each column takes the panel's earlier reflectors (A - V W^T - W V^T, A's row c
    standing for its column c) and gives H_c (v_c into row c from column c + 1, as
    _tridiagonalize leaves it), and w_c = tau (A v - V W^T v - W V^T v) minus
    (tau/2)(w.v) v into row c - start of `panel` (W^T, n columns), and again into row
    c - start + 2 width after v_c's copy in row c - start + width: [W; V; W], whose
    overlapping [V; W] and [W; V] make the caller's update of the trailing rows
    (untouched here) one matrix product, A -= [V; W]^T [W; V] = V W^T + W V^T.

    Two work items share each w_c (codegen/cpu/team.py): the leader runs the columns and
    takes A v's rows above _lead_rows and the first half of the earlier columns' terms;
    the helper (or the leader, where the helper is late) the rest into `part`, which the
    leader then adds: the same bits either way."""
    b, w = d.b, d.w
    n, start, width = w["n"], w["start"], w["width"]
    a = d.matrix("a", "n")
    panel = d.matrix("panel", "n")
    part = d.ptr("part")
    team = Team(d, d.ptr("sync", I64))

    def share(c: ir.Value, out: ir.Value, lead: bool) -> None:
        """The leader's (`lead`) or the helper's share of column c's A v - V W^T v - W V^T v
        into `out`: rows [c1, _lead_rows) or [_lead_rows, n) of A v, and the first or
        second half of the earlier columns' terms."""
        c1, v = b.add(c, d.i(1)), a.row(c)
        middle = _lead_rows(d, c1, n)
        rows = (c1, middle) if lead else (middle, n)
        _in_groups(d, *rows, GROUP, lambda r, count: _symmetric_rows(d, a, r, count, c1, v, out))
        half = b.add(start, b.ashr(b.sub(c, start), d.i(1)))
        with d.loop(*((start, half) if lead else (half, c))) as k:
            wk, vk = panel.row(b.sub(k, start)), a.row(k)
            alphas = [d.neg(d.dot(wk, v, c1, n)), d.neg(d.dot(vk, v, c1, n))]
            d.axpys(out, alphas, [vk, wk], c1, n)

    def their_share(c: ir.Value) -> None:
        d.fill(part, d.f(0.0), b.add(c, d.i(1)), n)
        share(c, part, lead=False)

    with d.either(team.leads()) as (leader, helper):
        with leader:
            e = _work(d, d.i(0), n)
            tau = _ptr(d, e, n)
            with d.when(b.not_(_flagged(d, e, n))), d.loop(start, b.add(start, width)) as c:
                c1 = b.add(c, d.i(1))
                v = a.row(c)
                with d.loop(start, c) as k:
                    wk, vk = panel.row(b.sub(k, start)), a.row(k)
                    d.axpys(v, [d.neg(d.get(vk, c)), d.neg(d.get(wk, c))], [wk, vk], c, n)
                d.put(d.ptr("w"), c, d.get(v, c))
                beta, t = _householder(d, _ptr(d, v, c1), b.sub(n, c1))
                d.put(e, c, beta)
                d.put(tau, c, t)
                out = panel.row(b.sub(c, start))
                d.fill(out, d.f(0.0), c1, n)
                job = b.add(b.sub(c, start), d.i(1))
                team.share(job, lambda: share(c, out, lead=True), lambda: their_share(c))
                d.axpy(out, d.f(1.0), part, c1, n)
                d.scale(out, t, c1, n)
                d.axpy(out, d.mul(d.mul(d.f(-0.5), t), d.dot(out, v, c1, n)), v, c1, n)
                row = b.sub(c, start)  # the update's factors [V; W] after W's rows
                d.copy(panel.row(b.add(row, width)), v, c1, n)
                d.copy(panel.row(b.add(row, b.mul(width, d.i(2)))), out, c1, n)
            team.end()
        with helper:
            team.serve(lambda job: their_share(b.add(start, b.sub(job, d.i(1)))))


def _lead_rows(d: dense.Dense, c1: ir.Value, n: ir.Value) -> ir.Value:
    """The first row of the helper's share of A v over rows [c1, n): LEAD_SHARE of the
    way down, so each takes about half the triangle's elements."""
    b = d.b
    return b.add(c1, b.ashr(b.mul(b.sub(n, c1), d.i(LEAD_SHARE)), d.i(8)))


def _work(d: dense.Dense, matrix: ir.Value, n: ir.Value) -> ir.Value:
    """Matrix `matrix`'s work_size(n) words: e (n), tau (n), p (2 n), the scaling's sigma."""
    b = d.b
    return _ptr(d, d.ptr("work"), b.mul(matrix, b.add(b.mul(n, d.i(4)), d.i(1))))


def _flagged(d: dense.Dense, work: ir.Value, n: ir.Value) -> ir.Value:
    """Whether `prepare` flagged the matrix of `work` (_work's pointer): see flag_index."""
    return d.is_nan(d.get(work, d.b.sub(d.b.mul(n, d.i(2)), d.i(1))))


def sigma_index(n: int) -> int:
    """The work word holding prepare's scaling sigma (the eigenvalues are divided by it)."""
    return 4 * n


def flag_index(n: int) -> int:
    """The work word (tau[n - 1], no reflector's) that `prepare` sets NaN for a matrix
    with NaN or infinity, and 0 otherwise: the later kernels skip a flagged matrix."""
    return 2 * n - 1


def work_size(n: int) -> int:
    """The scratch words of one matrix: e, tau, the two products p and the scale sigma."""
    return 4 * n + 1


def _form(d: dense.Dense, item: ir.Value) -> None:
    """Rows [r0, r0 + ROWS) of Q^T = H_{n-2} ... H_0 (dorg2l's product, backward) into the
    matrix's Q^T scratch, from the reflectors the eigh kernel left in A (row k: v_k from
    column k + 1, tau_k in work). Each row starts as e_r and takes r -= tau_k (r . v_k) v_k
    on columns k + 1 on for k = r - 1 down to 0 (rows are independent: H_k leaves the
    earlier rows' zeros alone), so the blocks run on every thread and a block's rows stay
    in L1 while each v_k streams past them once. Blocks are dealt outside-in (0, last, 1,
    ...): later rows cost more, and each thread gets a contiguous run of items."""
    b, w = d.b, d.w
    n, blocks = w["n"], w["blocks"]
    matrix, part = b.sdiv(item, blocks), b.srem(item, blocks)
    half = b.sdiv(part, d.i(2))
    block = b.select(b.trunc(part, I1), b.sub(b.sub(blocks, d.i(1)), half), half)
    r0 = b.mul(block, d.i(ROWS))
    r1 = b.select(b.icmp_signed("<", b.add(r0, d.i(ROWS)), n), b.add(r0, d.i(ROWS)), n)
    a = d.matrix("a", "n", b.mul(matrix, b.mul(n, n)))
    q = d.matrix("strips", "n", b.mul(matrix, w["size"]))
    work = _work(d, matrix, n)
    tau = _ptr(d, work, n)
    broken = _flagged(d, work, n)
    with d.loop(r0, r1) as r:
        d.fill(q.row(r), b.select(broken, d.f(float("nan")), d.f(0.0)), 0, n)
        with d.when(b.not_(broken)):
            q.set(r, r, d.f(1.0))
    top = b.sub(r1, d.i(2))
    with d.when(b.not_(broken)):
        with d.loop(top, 0, -2) as k:
            _reflect_pair(d, a, q, tau, n, k, b.select(b.icmp_signed(">", r0, k), r0, k), r1)
        with d.when(b.and_(b.icmp_signed(">=", top, d.i(0)), b.not_(b.trunc(top, I1)))):
            _reflect_pair(d, a, q, tau, n, d.i(0), r0, r1, single=True)


def _reflect_pair(d: dense.Dense, a, q, tau, n, k, lo, hi, single: bool = False) -> None:
    """Rows [lo, hi) of Q^T take H_k (columns k + 1 on), then H_{k-1} (columns k on) in
    the same pass: the second's dot rides on the first's update, so each row is read
    three times for two reflectors instead of four (`single`: H_k alone). A row still
    e_r there (r <= k) has zeros where the reflectors reach, and is left as it is."""
    b = d.b
    k1 = b.add(k, d.i(1))
    m = b.sub(n, k1)
    v = _ptr(d, a.row(k), k1)
    t = d.get(tau, k)
    if not single:
        k0 = b.sub(k, d.i(1))
        u, t0 = _ptr(d, a.row(k0), k), d.get(tau, k0)
    with d.loop(lo, hi) as r:
        row = _ptr(d, q.row(r), k1)
        alpha = d.mul(t, d.dot(row, v, 0, m))
        if single:
            d.axpy(row, d.neg(alpha), v, 0, m)
        else:
            acc = d.var(d.mul(d.get(q.row(r), k), d.get(u, d.i(0))), "acc")
            tail = _ptr(d, u, d.i(1))
            with d.loop(0, m) as j:
                at = b.gep(row, [j])
                x = d.sub(b.load(at), d.mul(alpha, d.get(v, j)))
                b.store(x, at)
                acc.set(d.add(acc.get(), d.mul(x, d.get(tail, j))))
            d.axpy(_ptr(d, q.row(r), k), d.neg(d.mul(t0, acc.get())), u, 0, b.add(m, d.i(1)))


def steps_size(n: int) -> int:
    """The int64 words of one matrix's step record: the sweep count, the sort's
    interchanges (n) and each sweep's block (low, m)."""
    return 1 + n + 2 * MAX_SWEEPS * n


def _log_of(d: dense.Dense, matrix: ir.Value, n: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(rotation pairs, step record) of `matrix`'s log: its words in the pairs and steps
    buffers (steps_size(n) a matrix)."""
    b = d.b
    pairs = _ptr(d, d.ptr("pairs"), b.mul(matrix, b.mul(d.w["capacity"], d.i(2))))
    stride = b.add(b.add(d.i(1), n), b.mul(n, d.i(2 * MAX_SWEEPS)))
    return pairs, _ptr(d, d.ptr("steps", I64), b.mul(matrix, stride))


class _Log:
    """The record of the QL iteration's rotations that the rotation kernel replays on Z^T:
    (c, s) pairs in order, each sweep's block [low, m] and the sort's interchanges. A log
    past `capacity` pairs sets info = -1 (the caller retries with room for every sweep)."""

    def __init__(self, d: dense.Dense, item: ir.Value, n: ir.Value) -> None:
        self.d, self.n = d, n
        self.capacity = d.w["capacity"]
        self.pairs, self.steps = _log_of(d, item, n)
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
        d.put(self.steps, at, low)
        d.put(self.steps, b.add(at, d.i(1)), m)
        b.store(b.add(count, d.i(1)), self.steps)

    def rotation(self, c: ir.Value, s: ir.Value) -> None:
        d, b = self.d, self.d.b
        pos = self.pos.get()
        with d.when(b.icmp_signed("<", pos, self.capacity)):
            d.put(self.pairs, b.mul(pos, d.i(2)), c)
            d.put(self.pairs, b.add(b.mul(pos, d.i(2)), d.i(1)), s)
        self.pos.set(b.add(pos, d.i(1)))

    def interchange(self, i: ir.Value, k: ir.Value) -> None:
        self.d.put(self.steps, self.d.b.add(i, self.d.i(1)), k)

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
        return b.fcmp_ordered("<=", d.abs(d.get(e, i)), d.mul(eps, norm.get()))

    with d.loop(0, n) as low, d.when(b.not_(failed.get())):
        size = d.add(d.abs(d.get(diag, low)), d.abs(d.get(e, low)))
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
            d.put(diag, low, d.add(d.get(diag, low), shift.get()))
            d.put(e, low, d.f(0.0))
    with d.when(failed.get()):
        count = d.var(d.i(0), "count")
        with d.loop(0, b.sub(n, d.i(1))) as i:
            nonzero = b.fcmp_unordered("!=", d.get(e, i), d.f(0.0))
            count.set(b.add(count.get(), b.zext(nonzero, I64)))
        b.store(count.get(), info)


def _hypot(d: dense.Dense, x: ir.Value, y: ir.Value) -> ir.Value:
    """sqrt(x^2 + y^2): directly while max(|x|, |y|) is in [2^-500, 2^500] (no under- or
    overflow), else d.hypot's scaled form. The QL sweep's chain runs through it, and the
    direct form spares the scaling's division."""
    b = d.b
    big = b.select(d.gt(d.abs(x), d.abs(y)), d.abs(x), d.abs(y))
    fine = b.and_(d.gt(big, d.f(2.0**-500)), d.lt(big, d.f(2.0**500)))
    if d.dtype.itemsize == 4:
        fine = b.and_(d.gt(big, d.f(2.0**-60)), d.lt(big, d.f(2.0**60)))
    result = d.var(d.f(0.0), "hypot")
    with d.either(fine) as (direct, scaled):
        with direct:
            result.set(d.sqrt(d.add(d.mul(x, x), d.mul(y, y))))
        with scaled:
            result.set(d.hypot(x, y))
    return result.get()


def _sweep(d: dense.Dense, log: _Log, n, diag, e, low, m, shift, vectors) -> None:
    """One implicit QL sweep over the unreduced block [low, m] (tql2's loop body)."""
    b = d.b
    with d.when(vectors):
        log.sweep(low, m)
    one = d.i(1)
    l1 = b.add(low, one)
    g = d.get(diag, low)
    el = d.get(e, low)
    p = d.div(d.sub(d.get(diag, l1), g), d.mul(d.f(2.0), el))
    r = d.copysign(d.hypot(p, d.f(1.0)), p)
    pr = d.add(p, r)
    d.put(diag, low, d.div(el, pr))
    dl1 = d.mul(el, pr)
    d.put(diag, l1, dl1)
    h = d.sub(g, d.get(diag, low))
    with d.loop(b.add(low, d.i(2)), n) as i:
        d.put(diag, i, d.sub(d.get(diag, i), h))
    shift.set(d.add(shift.get(), h))
    p_, c, c2, c3 = (d.var(d.get(diag, m), "p"), d.var(d.f(1.0), "c"), d.var(d.f(1.0), "c2"),
                     d.var(d.f(1.0), "c3"))  # fmt: skip
    s, s2 = d.var(d.f(0.0), "s"), d.var(d.f(0.0), "s2")
    el1 = d.get(e, l1)
    with d.loop(b.sub(m, one), b.sub(low, one), -1) as i:
        c3.set(c2.get())
        c2.set(c.get())
        s2.set(s.get())
        ei, di = d.get(e, i), d.get(diag, i)
        gi = d.mul(c.get(), ei)
        hi = d.mul(c.get(), p_.get())
        ri = _hypot(d, p_.get(), ei)
        zero = b.fcmp_ordered("==", ri, d.f(0.0))
        safe = b.select(zero, d.f(1.0), ri)
        d.put(e, b.add(i, one), d.mul(s.get(), ri))
        inverse = d.div(d.f(1.0), safe)
        si = d.mul(ei, inverse)
        ci = b.select(zero, d.f(1.0), d.mul(p_.get(), inverse))
        # c d - s g as (p d - e g) / r: the numerator is ready while r's root is taken,
        # which shortens the chain from one rotation to the next
        numerator = d.sub(d.mul(p_.get(), di), d.mul(ei, gi))
        s.set(si)
        c.set(ci)
        p_.set(b.select(zero, di, d.div(numerator, safe)))
        d.put(diag, b.add(i, one), d.add(hi, d.mul(si, d.add(d.mul(ci, gi), d.mul(si, di)))))
        with d.when(vectors):
            log.rotation(ci, si)
    tail = d.div(d.mul(d.mul(d.mul(d.neg(s.get()), s2.get()), d.mul(c3.get(), el1)), el), dl1)
    d.put(e, low, d.mul(s.get(), tail))
    d.put(diag, low, d.mul(c.get(), tail))


def _sort(d: dense.Dense, log: _Log, n, diag, vectors) -> None:
    """Eigenvalues ascending (selection sort), the interchanges logged for Z^T's rows."""
    b = d.b
    with d.loop(0, b.sub(n, d.i(1))) as i:
        best = d.var(i, "best")
        with (
            d.loop(b.add(i, d.i(1)), n) as j,
            d.when(d.lt(d.get(diag, j), d.get(diag, best.get()))),
        ):
            best.set(j)
        k = best.get()
        with d.when(vectors):
            log.interchange(i, k)
        with d.when(b.icmp_signed("!=", k, i)):
            d.swap(_ptr(d, diag, i), _ptr(d, diag, k), 0, 1)


def _prepare(d: dense.Dense, item: ir.Value) -> None:
    """dsyev's start: the UPLO triangle's largest magnitude; a NaN or infinity fills the
    eigenvalues (and with `vectors` A) with NaN and flags tau[n - 1] NaN for the later
    kernels (info n - 1 for a NaN); otherwise A is made full symmetric, scaled by sigma
    (kept in the work's last word) when its norm is outside [rmin, rmax]."""
    b, w = d.b, d.w
    n = w["n"]
    _, _, rmin, rmax = LIMITS[d.dtype.itemsize]
    a = d.matrix("a", "n", b.mul(item, b.mul(n, n)))
    diag = _ptr(d, d.ptr("w"), b.mul(item, n))
    work = _work(d, item, n)
    tau = _ptr(d, work, n)
    info = _ptr(d, d.ptr("info", I64), item)
    lower = b.icmp_signed("!=", w["lower"], d.i(0))
    vectors = b.icmp_signed("!=", w["vectors"], d.i(0))
    b.store(d.i(0), info)
    largest, nan = d.var(d.f(0.0), "anrm"), d.var(ir.Constant(I1, 0), "anan")
    with d.loop(0, n) as i:
        after = b.add(i, d.i(1))
        size, found = d.max_abs(a.row(i), b.select(lower, d.i(0), i), b.select(lower, after, n))
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
            d.put(tau, b.sub(n, d.i(1)), d.f(float("nan")))  # the later kernels' flag
        with good:
            tiny = b.and_(d.gt(anrm, d.f(0.0)), d.lt(anrm, d.f(rmin)))
            sigma = b.select(tiny, d.div(d.f(rmin), anrm), d.f(1.0))
            sigma = b.select(d.gt(anrm, d.f(rmax)), d.div(d.f(rmax), anrm), sigma)
            _symmetrize(d, a, n, lower, sigma)
            d.put(tau, b.sub(n, d.i(1)), d.f(0.0))
            d.put(work, b.mul(n, d.i(4)), sigma)


def _symmetrize(d: dense.Dense, a: dense.Matrix, n, lower, sigma) -> None:
    """Both triangles the UPLO one times sigma, in strips of STRIP rows: each column j of
    a strip's rows pairs with STRIP neighbours of row j (one cache line), where a walk
    down the columns stored every element of the other triangle into its own line (512 x
    512: 2.0 ms)."""
    b = d.b

    def pair(i, j):
        value = d.mul(b.load(b.select(lower, a.at(i, j), a.at(j, i))), sigma)
        a.set(i, j, value)
        a.set(j, i, value)

    whole = b.mul(b.sdiv(n, d.i(STRIP)), d.i(STRIP))
    with d.loop(0, whole, STRIP) as i0:
        with d.loop(0, i0) as j:
            for r in range(STRIP):
                pair(b.add(i0, d.i(r)), j)
        for r in range(1, STRIP):
            with d.loop(i0, b.add(i0, d.i(r))) as j:
                pair(b.add(i0, d.i(r)), j)
    with d.loop(whole, n) as i, d.loop(0, i) as j:
        pair(i, j)
    with d.loop(0, n) as i:
        a.set(i, i, d.mul(a.get(i, i), sigma))


def _eigh(d: dense.Dense, item: ir.Value) -> None:
    """The rest of dsyev after _prepare (and the panels up to column `start`): the
    unblocked reduction, QL, the sort and the scaling back."""
    b, w = d.b, d.w
    n = w["n"]
    a = d.matrix("a", "n", b.mul(item, b.mul(n, n)))
    diag = _ptr(d, d.ptr("w"), b.mul(item, n))
    e = _work(d, item, n)
    tau, p = _ptr(d, e, n), _ptr(d, e, b.mul(n, d.i(2)))  # p: 2 n
    info = _ptr(d, d.ptr("info", I64), item)
    vectors = b.icmp_signed("==", w["vectors"], d.i(1))
    log = _Log(d, item, n)
    log.open(vectors)
    with d.when(b.not_(_flagged(d, e, n))):
        sigma = d.get(e, b.mul(n, d.i(4)))
        _tridiagonalize(d, a, n, w["start"], diag, e, tau, p)
        # TRIDIAGONAL: T (diag, e) and the reflectors are all the caller takes
        with d.when(b.icmp_signed("!=", w["vectors"], d.i(TRIDIAGONAL))):
            _ql(d, log, n, diag, e, vectors, info)
            _sort(d, log, n, diag, vectors)
            with d.when(vectors):
                log.close(info)
            with d.loop(0, n) as i:
                d.put(diag, i, d.div(d.get(diag, i), sigma))


def _replay(d: dense.Dense, vt, pairs, steps, blocks, row) -> None:
    """Every sweep's rotations on the packed strip (rows by `row(i)`, vectors of type vt).
    Two sweeps in a row over the same block [low, m] (most of them: tql2 sweeps a block
    until its first off-diagonal vanishes) run as one wavefront, the second a row behind
    the first: each row is read and written once for both, and their two carried rows
    are independent chains. Rotation (c, s) of rows (x, y) = (i, i + 1):
    y' = s x + c y, x' = c x - s y."""
    b = d.b
    align = d.dtype.itemsize
    one = d.i(1)

    def rot(at, x, y):
        c = d.splat(d.get(pairs, b.mul(at, d.i(2))), vt.count)
        s = d.splat(d.get(pairs, b.add(b.mul(at, d.i(2)), one)), vt.count)
        return d.intrinsic("fma", c, y, d.mul(s, x)), d.intrinsic("fma", d.neg(s), y, d.mul(c, x))

    def load(i):
        return b.load(row(i), align=align)

    def store(value, i):
        b.store(value, row(i), align=align)

    count, sweep, pos = b.load(steps), d.var(d.i(0), "sweep"), d.var(d.i(0), "pos")
    with d.while_(lambda: b.icmp_signed("<", sweep.get(), count)):
        at = b.mul(sweep.get(), d.i(2))
        low, m = d.get(blocks, at), d.get(blocks, b.add(at, one))
        length, start = b.sub(m, low), pos.get()
        more = b.icmp_signed("<", b.add(sweep.get(), one), count)
        after = b.select(more, b.add(at, d.i(2)), at)  # the next sweep's block, if any
        same = b.and_(
            b.icmp_signed("==", d.get(blocks, after), low),
            b.icmp_signed("==", d.get(blocks, b.add(after, one)), m),
        )
        top = b.sub(m, one)
        with d.either(b.and_(more, same)) as (two, single):
            with two:
                second = b.add(start, length)
                out, carry = rot(start, load(top), load(m))
                carry1, carry2 = d.var(carry, "carry1"), d.var(out, "carry2")
                with d.loop(b.sub(m, d.i(2)), b.sub(low, one), -1) as i:
                    out1, c1 = rot(b.add(start, b.sub(top, i)), load(i), carry1.get())
                    out2, c2 = rot(b.add(second, b.sub(b.sub(top, one), i)), out1, carry2.get())
                    store(out2, b.add(i, d.i(2)))
                    carry1.set(c1)
                    carry2.set(c2)
                out2, c2 = rot(b.add(second, b.sub(length, one)), carry1.get(), carry2.get())
                store(out2, b.add(low, one))
                store(c2, low)
                sweep.set(b.add(sweep.get(), d.i(2)))
                pos.set(b.add(second, length))
            with single:
                carry = d.var(load(m), "carry")
                with d.loop(top, b.sub(low, one), -1) as i:
                    out, c = rot(b.add(start, b.sub(top, i)), load(i), carry.get())
                    store(out, b.add(i, one))
                    carry.set(c)
                store(carry.get(), low)
                sweep.set(b.add(sweep.get(), one))
                pos.set(b.add(start, length))


def _rotate(d: dense.Dense, item: ir.Value) -> None:
    """Replay one matrix's log on a strip of STRIPS[itemsize] columns of Z^T (the forming
    kernel's Q^T) into A: the strip is packed into its own contiguous scratch (Z^T's rows,
    n apart, would crowd a few cache sets), every sweep's rotations of rows (i, i + 1),
    i from m - 1 down to low, run down it with row i + 1 carried in vector registers
    (dlasr's chase; see _replay), then the sort's interchanges, and the strip goes to A.
    The strips are independent, so those of one matrix run on every thread."""
    b, w = d.b, d.w
    n, chunks = w["n"], w["chunks"]
    matrix, part = b.sdiv(item, chunks), b.srem(item, chunks)
    width_of = STRIPS[d.dtype.itemsize]
    first = b.mul(part, d.i(width_of))
    end = b.add(first, d.i(width_of))
    width = b.sub(b.select(b.icmp_signed("<", end, n), end, n), first)
    z = d.matrix("a", "n", b.add(b.mul(matrix, b.mul(n, n)), first))
    q = d.matrix("strips", "n", b.add(b.mul(matrix, w["size"]), first))
    packs = b.add(
        b.add(b.mul(matrix, w["size"]), b.mul(n, n)), b.mul(part, b.mul(n, d.i(width_of)))
    )
    strip = d.matrix("strips", d.i(width_of), packs)
    vt = ir.VectorType(d.t, width_of)
    align = d.dtype.itemsize

    def row(i: ir.Value) -> ir.Value:
        return b.bitcast(strip.row(i), vt.as_pointer())

    pairs, steps = _log_of(d, matrix, n)
    blocks = _ptr(d, steps, b.add(d.i(1), n))
    # A matrix that failed (or whose log overflowed) is left as it is: it raises.
    failed = b.icmp_signed("!=", d.get(d.ptr("info", I64), matrix), d.i(0))
    with d.when(b.not_(failed)):
        with d.loop(0, n) as i:
            d.fill(strip.row(i), d.f(0.0), width, width_of)
            with d.loop(0, width) as j:
                d.put(strip.row(i), j, q.get(i, j))
        _replay(d, vt, pairs, steps, blocks, row)
        with d.loop(0, b.sub(n, d.i(1))) as i:
            k = d.get(steps, b.add(i, d.i(1)))
            with d.when(b.icmp_signed("!=", k, i)):
                x, y = b.load(row(i), align=align), b.load(row(k), align=align)
                b.store(y, row(i), align=align)
                b.store(x, row(k), align=align)
        with d.loop(0, n) as i, d.loop(0, width) as j:
            z.set(i, j, d.get(strip.row(i), j))


def capacities(n: int) -> tuple[int, int]:
    """The rotation log's sizes in (c, s) pairs: the usual (QL takes about two sweeps per
    eigenvalue) and room for every sweep MAX_SWEEPS allows, the retry."""
    return 2 * n * n + n, MAX_SWEEPS * n * n + n


def strips_size(n: int, itemsize: int) -> int:
    """The elements of one matrix's scratch: Q^T (n x n), then the rotation kernel's
    packed strips."""
    strip = STRIPS[itemsize]
    return n * n + -(-n // strip) * strip * n


def _build(name: str, dtype):
    """The module of the eigensolver's kernels for `dtype`, named `name`."""

    def build(mod):
        kernels = dense.per_matrix(mod, name + "_prepare", dtype, PREPARE_WORDS, _prepare)
        kernels += dense.per_matrix(mod, name + "_panel", dtype, PANEL_WORDS, _panel)
        kernels += dense.per_matrix(mod, name, dtype, WORDS, _eigh)
        kernels += dense.per_matrix(mod, name + "_form", dtype, FORM_WORDS, _form)
        return kernels + dense.per_matrix(mod, name + "_rotate", dtype, ROTATE_WORDS, _rotate)

    return build


def prepare(a, values, work, info, n: int, batch: int, *, lower: bool, vectors: bool) -> None:
    """Scan and scale each of the `batch` contiguous n x n matrices at impl `a` (its UPLO
    triangle) into a full symmetric one: see _prepare. `work` [batch, work_size(n)]."""
    name = f"kael_eigh_{a.dtype.name}"
    words = [*(host_ptr(t, name) for t in (a, values, work, info)), n, int(lower), int(vectors)]
    dense.run(name, _build(name, a.dtype), name + "_prepare", words, batch, 4 * n * n)


def panel(a, values, work, w, part, sync, n: int, start: int, width: int, into=None) -> None:
    """Reduce columns [start, start + width) of the one prepared matrix at impl `a` (dlatrd:
    see _panel); [W; V; W] (rows) into impl `w` [3 width, n]. Two work items share it:
    impl `part` [n] is the helper's scratch, impl `sync` team.SIZE zeroed int64 words (one
    launch's). The caller then updates the trailing block. With `into`, added to that
    program instead of run."""
    name = f"kael_eigh_{a.dtype.name}"
    words = [*(host_ptr(t, name) for t in (a, values, work, w)), n, start, width]
    words += [host_ptr(part, name), host_ptr(sync, name)]
    fn = dense.kernel(name, _build(name, a.dtype), name + "_panel")
    dense.run_prepared(fn, words, 2, 2 * n * n * width, into)  # the leader and the helper


def eigh(a, values, work, info, pairs, steps, capacity: int, n: int, batch: int, *,
         vectors: bool | int, start: int = 0) -> None:  # fmt: skip
    """After `prepare` (and the panels up to column `start`): eigenvalues (ascending, into
    impl `values` [batch, n]) of the `batch` matrices at impl `a`, their reflectors left
    in `a` and `work` for `form`; LAPACK's info into impl `info` [batch] (int64). With
    `vectors`, the QL rotations are logged into impls `pairs` [batch, 2 capacity] and
    `steps` [batch, steps_size(n)] int64 for `rotate` (info -1: the log was too short).
    `vectors` TRIDIAGONAL stops after the reduction: T's diagonal in `values`, its
    off-diagonal in each work's first n - 1 words, nothing scaled back."""
    name = f"kael_eigh_{a.dtype.name}"
    words = [*(host_ptr(t, name) for t in (a, values, work, info)), n, int(vectors)]
    words += [host_ptr(pairs, name), host_ptr(steps, name), capacity, start]
    dense.run(name, _build(name, a.dtype), name, words, batch, batch * 2 * n**3)


def form(a, work, strips, n: int, batch: int) -> None:
    """Q^T of each matrix (from the reflectors `eigh` left) into the first n x n of its
    row of impl `strips` [batch, strips_size(n, itemsize)], in blocks of ROWS rows over
    the threads (NaN for a matrix that held NaN or infinity)."""
    name = f"kael_eigh_{a.dtype.name}"
    blocks = -(-n // ROWS)
    words = [host_ptr(a, name), host_ptr(work, name), n, blocks, host_ptr(strips, name)]
    words.append(strips_size(n, a.dtype.itemsize))
    dense.run(
        name, _build(name, a.dtype), name + "_form", words, batch * blocks, batch * 4 * n**3 // 3
    )


def rotate(a, pairs, steps, info, strips, capacity: int, n: int, batch: int) -> None:
    """The eigenvectors as the rows of each matrix at impl `a` (overwritten): the logged
    rotations replayed on Q^T (in `strips`) in strips of STRIPS[itemsize] columns, packed
    in the rest of `strips`; a matrix whose info is not 0 is left as it is."""
    name = f"kael_eigh_{a.dtype.name}"
    size, chunks = strips_size(n, a.dtype.itemsize), -(-n // STRIPS[a.dtype.itemsize])
    words = [*(host_ptr(t, name) for t in (a, pairs, steps, info)), n, capacity, chunks]
    words += [host_ptr(strips, name), size]
    dense.run(
        name, _build(name, a.dtype), name + "_rotate", words, batch * chunks, batch * 6 * n**3
    )
