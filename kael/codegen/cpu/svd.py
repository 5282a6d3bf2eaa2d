"""The singular value decomposition of kael.linalg: one-sided Jacobi (Hestenes), one dense
kernel (codegen/cpu/dense.py) per matrix of a batch; one matrix of order PARALLEL or more
is prepared, swept in block pairs over the threads (_step) and finished in three phases.

The kernel orthogonalizes the k rows of X [k, cols] (k <= cols; the frontend passes A, or A^T
for a tall A, so every rotation combines two contiguous rows) by plane rotations, and
applies each to the rows of G (starting as I_k), so X = G X0 throughout. A pair (i, j)
is rotated unless |x_i . x_j| <= tol |x_i| |x_j| (de Rijk's test, tol = eps sqrt(cols));
the squared row norms are summed in the rotation's own pass. Each row also carries a
reference norm r, its rounding over eps (its own norm at the start, or the frontend's for
rows it formed by a product), through every rotation (_references): a rotated row below
tol r is cancellation's leftover and is zeroed (a rank-deficient matrix spends no sweeps
on its rounding), while a small row of a graded matrix keeps its singular value to its
own relative accuracy (a floor of tol |A|_F, before, zeroed the 1 of [[1e8, 1], [1, 1]]
in float32, and 119 of 512 rows graded 1 .. 1e-6). When a sweep rotates nothing,
X = Sigma W with W's rows orthonormal: X0 = G^T Sigma W. The rows are sorted by norm
(descending), normalized into W, and the rows of zero norm (and, for full matrices,
the rows k..cols-1 below X0's) completed to an orthonormal basis: each the unit vector e_t
least covered by the rows before it (the smallest sum of squares of column t, so at
least 1/cols of it is new), orthogonalized twice against them (Gram-Schmidt).

Before the sweeps X is scaled by a power of two (exact) so its largest entry is in
[1, 2): no squared norm overflows. A row far below that keeps its norm all the same, as
with LAPACK's scaled norms: s holds norms, not their squares, and where a sum of squares
or of products is below safmin / eps^2 (its terms may have underflowed) it is summed again
from the rows scaled by powers of two (_norm, _gram), a cost only such rows pay. info is
0, the number of sweeps when MAX_SWEEPS ran without convergence, NAN for a NaN in X0,
INFINITE for an infinity (the outputs are then NaN, as LAPACK's are).
"""

from __future__ import annotations

import array
import ctypes

from llvmlite import ir

from kael.codegen.cpu import dense
from kael.runtime.tensor_impl import host_ptr
from kael.runtime.threadpool import get_num_threads

I1, I64 = ir.IntType(1), ir.IntType(64)
WORDS = ("x", "g", "s", "work", "info", "k", "cols", "rows", "vectors", "phase", "given")
STEP_WORDS = ("x", "g", "s", "work", "flags", "schedule", "k", "cols", "vectors", "step", "blocks")
MAX_SWEEPS = 30
NAN, INFINITE = -1, -2
FULL, PREPARE, FINISH = 0, 1, 2  # the phases of _svd (see svd)
TILE = (2, 2)  # rows of a and of b a block step visits together: those stay in L1
PARALLEL = 128  # from this order on, a single matrix's sweeps are split over the threads


def _pow2_reciprocal(d: dense.Dense, largest: ir.Value) -> ir.Value:
    """2^-e for largest in [2^e, 2^(e+1)): multiplying by it is exact (e clamped to the
    normal exponents)."""
    b = d.b
    wide = d.dtype.itemsize == 8
    bits, mantissa, bias = (I64, 52, 1023) if wide else (ir.IntType(32), 23, 127)
    exponent = b.and_(b.lshr(b.bitcast(largest, bits), ir.Constant(bits, mantissa)),
                      ir.Constant(bits, 2 * bias + 1))  # fmt: skip
    target = b.sub(ir.Constant(bits, 2 * bias), exponent)
    low, high = ir.Constant(bits, 1), ir.Constant(bits, 2 * bias)
    target = b.select(b.icmp_signed("<", target, low), low, target)
    target = b.select(b.icmp_signed(">", target, high), high, target)
    return b.bitcast(b.shl(target, ir.Constant(bits, mantissa)), d.t)


def _scan(d: dense.Dense, x: dense.Matrix, k, cols) -> tuple[ir.Value, ir.Value]:
    """(max |x|, whether some x is NaN) over the k x cols matrix."""
    b = d.b
    largest, nan = d.var(d.f(0.0), "largest"), d.var(ir.Constant(I1, 0), "nan")
    with d.loop(0, k) as i:
        row_largest, row_nan = d.max_abs(x.row(i), 0, cols)
        nan.set(b.or_(nan.get(), row_nan))
        largest.set(b.select(d.gt(row_largest, largest.get()), row_largest, largest.get()))
    return largest.get(), nan.get()


def _identity(d: dense.Dense, g: dense.Matrix, k) -> None:
    with d.loop(0, k) as i:
        d.fill(g.row(i), d.f(0.0), 0, k)
        g.set(i, i, d.f(1.0))


def _tol(d: dense.Dense, cols) -> ir.Value:
    """The relative threshold of the rotations and of negligible rows: eps sqrt(cols)."""
    eps = d.eps
    return d.mul(d.f(eps), d.sqrt(d.b.sitofp(cols, d.t)))


def _small2(d: dense.Dense) -> ir.Value:
    """safmin / eps^2: a sum of squares or products below it may have lost terms to
    underflow (above it, what underflows is below its rounding)."""
    return d.f(d.safmin / d.eps**2)


def _scaled(d: dense.Dense, value: ir.Value, f: ir.Value) -> ir.Value:
    """value f, f a power of two, rounded as written: fast-math may not reassociate it into
    a product of two small values that underflows."""
    return d.b.fmul(value, f)


def _scaled_dot(d: dense.Dense, x, y, fx: ir.Value, fy: ir.Value, cols) -> ir.Value:
    """sum (fx x[t]) (fy y[t]): the dot of two rows each brought near norm 1 by a power of
    two, so no small product underflows."""
    b = d.b
    acc = d.var(d.f(0.0), "scaled")
    with d.loop(0, cols) as t:
        sx, sy = _scaled(d, b.load(b.gep(x, [t])), fx), _scaled(d, b.load(b.gep(y, [t])), fy)
        acc.set(d.add(acc.get(), b.fmul(sx, sy)))
    return acc.get()


def _norm(d: dense.Dense, row: ir.Value, norm2: ir.Value, cols) -> ir.Value:
    """|row| from its sum of squares norm2, summed again from the row scaled by a power of
    two when norm2 is below _small2 (its squares may have underflowed)."""
    norm = d.var(d.sqrt(norm2), "norm")
    with d.when(d.lt(norm2, _small2(d))):
        f = _pow2_reciprocal(d, d.max_abs(row, 0, cols)[0])
        norm.set(d.div(d.sqrt(_scaled_dot(d, row, row, f, f, cols)), f))
    return norm.get()


def _settle(d: dense.Dense, row: ir.Value, p: ir.Value, norm2: ir.Value, floor, cols) -> None:
    """Store a row's norm at p (norm2 its sum of squares), or zero the row when the norm is
    below `floor` (tol times its reference norm): such a row is cancellation's leftover,
    which no rotation can make orthogonal."""
    norm = _norm(d, row, norm2, cols)
    with d.either(d.lt(norm, floor)) as (negligible, kept):
        with negligible:
            d.b.store(d.f(0.0), p)
            d.fill(row, d.f(0.0), 0, cols)
        with kept:
            d.b.store(norm, p)


def _gram(d: dense.Dense, x: dense.Matrix, i, j, ni, nj, cols) -> tuple[ir.Value, ...]:
    """(f_i f_j x_i . x_j, f_i, f_j) for rows i and j of norms ni and nj: f = 1, or, where
    ni nj is below _small2 (the dot's products may underflow), each row's power of two that
    brings its norm into [1, 2)."""
    one = d.f(1.0)
    gamma, fi, fj = d.var(d.f(0.0), "gamma"), d.var(one, "fi"), d.var(one, "fj")
    with d.either(d.lt(d.mul(ni, nj), _small2(d))) as (small, ordinary):
        with small:
            fi.set(_pow2_reciprocal(d, ni))
            fj.set(_pow2_reciprocal(d, nj))
            gamma.set(_scaled_dot(d, x.row(i), x.row(j), fi.get(), fj.get(), cols))
        with ordinary:
            gamma.set(d.dot(x.row(i), x.row(j), 0, cols))
    return gamma.get(), fi.get(), fj.get()


def _pair(d: dense.Dense, x, g, s, ref, i, j, tol, k, cols, vectors, rotated) -> None:
    """Rows i and j rotated orthogonal (and G's rows alike) unless they already are to tol;
    `rotated` set when they were. ref[i] is row i's reference norm (_references)."""
    b = d.b
    pi, pj = b.gep(s, [i]), b.gep(s, [j])
    alpha, beta = b.load(pi), b.load(pj)  # the norms; a zero row is orthogonal to all
    present = b.and_(d.gt(alpha, d.f(0.0)), d.gt(beta, d.f(0.0)))
    with d.when(present):
        gamma, fi, fj = _gram(d, x, i, j, alpha, beta, cols)
        bound = d.mul(tol, d.mul(_scaled(d, alpha, fi), _scaled(d, beta, fj)))
        with d.when(d.gt(d.abs(gamma), bound)):
            # (beta^2 - alpha^2) / (2 x_i . x_j), the scaled dot's powers of two undone
            spread = d.mul(_scaled(d, d.sub(beta, alpha), fi), _scaled(d, d.add(beta, alpha), fj))
            zeta = d.div(spread, d.mul(d.f(2.0), gamma))
            t = d.div(d.copysign(d.f(1.0), zeta), d.add(d.abs(zeta), d.hypot(d.f(1.0), zeta)))
            c = d.div(d.f(1.0), d.sqrt(d.add(d.f(1.0), d.mul(t, t))))
            sn = d.mul(c, t)
            # t is 0 only for rows over 1/safmin apart: then the rotation is the identity
            with d.when(b.fcmp_ordered("!=", sn, d.f(0.0))):
                rotated.set(ir.Constant(I1, 1))
                ni, nj = d.rotate(x.row(i), x.row(j), c, sn, 0, cols, norms=True)
                ri, rj = _references(d, ref, i, j, c, sn)
                _settle(d, x.row(i), pi, ni, d.mul(tol, ri), cols)
                _settle(d, x.row(j), pj, nj, d.mul(tol, rj), cols)
                with d.when(vectors):
                    d.rotate(g.row(i), g.row(j), c, sn, 0, k)


def _references(d: dense.Dense, ref, i, j, c: ir.Value, sn: ir.Value) -> tuple[ir.Value, ...]:
    """The reference norms of rows i and j after the rotation (c, sn), stored and returned:
    sqrt(c^2 r_i^2 + sn^2 r_j^2) and sqrt(sn^2 r_i^2 + c^2 r_j^2), as the rows' rounding
    (eps r, independent between rows) is carried; their sum of squares is kept. A small
    row that only meets larger ones keeps a reference near its own norm ([[1e8, 1], [1, 1]]
    in float32: about 1.4 for the singular value 1), a row left by cancellation one far
    above it. (The bound c r_i + |sn| r_j grows by up to sqrt(2) a rotation: a 60 x 60
    Gaussian lost 49 of its rows to it.)"""
    b = d.b
    pi, pj = b.gep(ref, [i]), b.gep(ref, [j])
    ri, rj = b.load(pi), b.load(pj)
    # r is about |X|_F at most (scaled to ~1): no square overflows; one that underflows only
    # lowers the floor. (hypot's divisions cost 2-7% more on a batch of 4 x 4 matrices.)
    cc, ss, ri2, rj2 = d.mul(c, c), d.mul(sn, sn), d.mul(ri, ri), d.mul(rj, rj)
    new_i = d.sqrt(d.add(d.mul(cc, ri2), d.mul(ss, rj2)))
    new_j = d.sqrt(d.add(d.mul(ss, ri2), d.mul(cc, rj2)))
    b.store(new_i, pi)
    b.store(new_j, pj)
    return new_i, new_j


def _sweeps(d: dense.Dense, x: dense.Matrix, g: dense.Matrix, s, ref, k, cols, vectors) -> ir.Value:
    """Cyclic Jacobi sweeps until one rotates nothing (or MAX_SWEEPS); s[i] holds row i's
    norm, ref[i] its reference norm. Returns the sweeps run when unconverged, else 0."""
    b = d.b
    tol = _tol(d, cols)
    sweep, rotated = d.var(d.i(0), "sweep"), d.var(ir.Constant(I1, 1), "rotated")
    running = lambda: b.and_(rotated.get(), b.icmp_signed("<", sweep.get(), d.i(MAX_SWEEPS)))  # noqa: E731
    with d.while_(running):
        rotated.set(ir.Constant(I1, 0))
        with d.loop(0, k) as i, d.loop(b.add(i, d.i(1)), k) as j:
            _pair(d, x, g, s, ref, i, j, tol, k, cols, vectors, rotated)
        sweep.set(b.add(sweep.get(), d.i(1)))
    return b.select(rotated.get(), sweep.get(), d.i(0))


def _sort(d: dense.Dense, x: dense.Matrix, g: dense.Matrix, s, k, cols, vectors) -> None:
    """Rows in descending order of s (selection sort: k swaps of rows at most)."""
    b = d.b
    with d.loop(0, k) as i:
        best = d.var(i, "best")
        later = d.loop(b.add(i, d.i(1)), k)
        with later as j, d.when(d.gt(b.load(b.gep(s, [j])), b.load(b.gep(s, [best.get()])))):
            best.set(j)
        top = best.get()
        with d.when(b.icmp_signed("!=", top, i)):
            d.swap(b.gep(s, [i]), b.gep(s, [top]), 0, 1)
            d.swap(x.row(i), x.row(top), 0, cols)
            with d.when(vectors):
                d.swap(g.row(i), g.row(top), 0, k)


def _complete(d: dense.Dense, x: dense.Matrix, work, first, rows, cols) -> None:
    """Rows first..rows-1 of x made orthonormal to the rows before them (themselves
    orthonormal): e_t for the column t they cover least, Gram-Schmidt twice."""
    b = d.b
    d.fill(work, d.f(0.0), 0, cols)
    with d.loop(0, first) as r:
        _cover(d, work, x.row(r), cols)
    with d.loop(first, rows) as r:
        least = d.var(d.i(0), "least")
        at = lambda t: b.load(b.gep(work, [t]))  # noqa: E731
        with d.loop(1, cols) as t, d.when(d.lt(at(t), at(least.get()))):
            least.set(t)
        row = x.row(r)
        d.fill(row, d.f(0.0), 0, cols)
        x.set(r, least.get(), d.f(1.0))
        for _ in range(2):
            with d.loop(0, r) as q:
                d.axpy(row, d.neg(d.dot(x.row(q), row, 0, cols)), x.row(q), 0, cols)
        d.scale(row, d.div(d.f(1.0), d.sqrt(d.dot(row, row, 0, cols))), 0, cols)
        _cover(d, work, row, cols)


def _cover(d: dense.Dense, work, row, cols) -> None:
    """work[t] += row[t]^2: how much of e_t the rows so far span."""
    b = d.b
    with d.loop(0, cols) as t:
        p, v = b.gep(work, [t]), b.load(b.gep(row, [t]))
        b.store(d.add(b.load(p), d.mul(v, v)), p)


def _finish(d: dense.Dense, x, g, s, work, k, cols, rows, vectors, factor) -> None:
    """After the sweeps: rows sorted, normalized into W (completed to `rows` of them),
    s made the singular values (the scaling undone)."""
    b = d.b
    _sort(d, x, g, s, k, cols, vectors)
    tiny = d.f(d.safmin)  # a row of a smaller norm is not normalized (1/sigma overflows)
    first = d.var(d.i(0), "first")
    with d.loop(0, k) as i:
        p = b.gep(s, [i])
        sigma = b.load(p)
        with d.when(b.and_(vectors, b.not_(d.lt(sigma, tiny)))):
            d.scale(x.row(i), d.div(d.f(1.0), sigma), 0, cols)
            first.set(b.add(i, d.i(1)))
        b.store(d.div(sigma, factor), p)
    with d.when(vectors):
        _complete(d, x, work, first.get(), rows, cols)


def _svd(d: dense.Dense, item: ir.Value) -> None:
    """One matrix: FULL, or PREPARE (scaled, the row norms and reference norms, G = I; the
    factor kept in work[cols] for FINISH) or FINISH. work [cols + 1]: the reference norms
    in work[:k] through the sweeps, then _complete's scratch."""
    b, w = d.b, d.w
    k, cols, rows = w["k"], w["cols"], w["rows"]
    x = d.matrix("x", "cols", b.mul(item, b.mul(rows, cols)))
    g = d.matrix("g", "k", b.mul(item, b.mul(k, k)))
    s = b.gep(d.ptr("s"), [b.mul(item, k)])
    work = b.gep(d.ptr("work"), [b.mul(item, b.add(cols, d.i(1)))])
    info = b.gep(d.ptr("info", I64), [item])
    vectors = b.icmp_signed("!=", w["vectors"], d.i(0))
    phase = w["phase"]
    given = b.icmp_signed("!=", w["given"], d.i(0))
    with d.either(b.icmp_signed("==", phase, d.i(FINISH))) as (finish, begin):
        with finish:
            _finish(d, x, g, s, work, k, cols, rows, vectors, b.load(b.gep(work, [cols])))
        with begin:
            _begin(d, x, g, s, work, info, k, cols, rows, vectors, phase, given)


def _begin(d: dense.Dense, x, g, s, work, info, k, cols, rows, vectors, phase, given) -> None:
    """The FULL and PREPARE phases (see _svd); the reference norms are the rows' own, or
    the `given` ones in work[:k] (scaled here as the rows are)."""
    b = d.b
    largest, nan = _scan(d, x, k, cols)
    finite = b.fcmp_ordered("<", largest, d.f(float("inf")))  # NaN is not
    with d.either(b.and_(finite, b.not_(nan))) as (ok, bad):
        with bad:
            b.store(b.select(nan, d.i(NAN), d.i(INFINITE)), info)
            d.fill(s, d.f(float("nan")), 0, k)
            d.fill(x.ptr, d.f(float("nan")), 0, b.mul(rows, cols))
            with d.when(vectors):  # without vectors, g is s (k long)
                d.fill(g.ptr, d.f(float("nan")), 0, b.mul(k, k))
        with ok:
            zero = b.fcmp_ordered("==", largest, d.f(0.0))
            factor = b.select(zero, d.f(1.0), _pow2_reciprocal(d, largest))
            with d.loop(0, k) as i:
                d.scale(x.row(i), factor, 0, cols)
                norm2 = d.dot(x.row(i), x.row(i), 0, cols)
                norm = _norm(d, x.row(i), norm2, cols)
                b.store(norm, b.gep(s, [i]))
                p = b.gep(work, [i])
                theirs = d.mul(b.load(p), factor)  # no row exceeds its reference
                mine = b.select(b.and_(given, d.gt(theirs, norm)), theirs, norm)
                b.store(mine, p)
            with d.when(vectors):
                _identity(d, g, k)
            with d.either(b.icmp_signed("==", phase, d.i(FULL))) as (full, prepare):
                with full:
                    b.store(_sweeps(d, x, g, s, work, k, cols, vectors), info)
                    _finish(d, x, g, s, work, k, cols, rows, vectors, factor)
                with prepare:
                    b.store(d.i(0), info)
                    b.store(factor, b.gep(work, [cols]))


def _step(d: dense.Dense, item: ir.Value) -> None:
    """Work item `item` of one step of a block sweep: the rows of blocks a and b (the
    schedule's pair `item` of this step) rotated against each other, TILE rows of each at a
    time (fewer reads from L2), and at step 0 each block's rows among themselves;
    flags[item] says whether anything rotated."""
    b, w = d.b, d.w
    k, cols, blocks = w["k"], w["cols"], w["blocks"]
    x, g = d.matrix("x", "cols"), d.matrix("g", "k")
    s, ref = d.ptr("s"), d.ptr("work")
    vectors = b.icmp_signed("!=", w["vectors"], d.i(0))
    schedule = d.ptr("schedule", I64)
    at = b.add(b.mul(w["step"], blocks), b.mul(item, d.i(2)))
    first, second = b.load(b.gep(schedule, [at])), b.load(b.gep(schedule, [b.add(at, d.i(1))]))
    edge = lambda r: b.sdiv(b.mul(r, k), blocks)  # noqa: E731
    tol = _tol(d, cols)
    rotated = d.var(ir.Constant(I1, 0), "rotated")
    with d.when(b.icmp_signed("==", w["step"], d.i(0))):
        for r in (first, second):
            lo, hi = edge(r), edge(b.add(r, d.i(1)))
            with d.loop(lo, hi) as i, d.loop(b.add(i, d.i(1)), hi) as j:
                _pair(d, x, g, s, ref, i, j, tol, k, cols, vectors, rotated)
    lo_a, hi_a = edge(first), edge(b.add(first, d.i(1)))
    lo_b, hi_b = edge(second), edge(b.add(second, d.i(1)))
    with d.loop(lo_a, hi_a, TILE[0]) as i0, d.loop(lo_b, hi_b, TILE[1]) as j0:
        rows_i = d.loop(i0, _tile_end(d, i0, TILE[0], hi_a))
        with rows_i as i, d.loop(j0, _tile_end(d, j0, TILE[1], hi_b)) as j:
            _pair(d, x, g, s, ref, i, j, tol, k, cols, vectors, rotated)
    b.store(b.zext(rotated.get(), I64), b.gep(d.ptr("flags", I64), [item]))


def _tile_end(d: dense.Dense, start: ir.Value, size: int, stop: ir.Value) -> ir.Value:
    """min(start + size, stop): where a tile of rows ends."""
    end = d.b.add(start, d.i(size))
    return d.b.select(d.b.icmp_signed("<", end, stop), end, stop)


def _schedule(pairs: int) -> array.array:
    """The round-robin tournament of 2 `pairs` blocks: 2 pairs - 1 steps of `pairs`
    disjoint block pairs, every pair of blocks met once."""
    n = 2 * pairs
    out = array.array("q")
    for step in range(n - 1):
        out.extend((step, n - 1))
        for i in range(1, pairs):
            out.extend(((step + i) % (n - 1), (step - i) % (n - 1)))
    return out


def _block_sweeps(x, g, s, work, info, k: int, cols: int, vectors: bool, pairs: int) -> None:
    """The sweeps of one prepared matrix, each step's block pairs one launch's work items
    (so the threads share it): until a sweep rotates nothing, or MAX_SWEEPS (info)."""
    name = f"kael_svd_step_{x.dtype.name}"
    schedule, flags = _schedule(pairs), array.array("q", [0] * pairs)
    words = [*(host_ptr(t, name) for t in (x, g, s, work)), flags.buffer_info()[0],
             schedule.buffer_info()[0], k, cols, int(vectors), 0, 2 * pairs]  # fmt: skip
    build = lambda mod: dense.per_matrix(mod, name, x.dtype, STEP_WORDS, _step)  # noqa: E731
    flops = 8 * k * k * cols // (2 * pairs - 1)
    for _ in range(MAX_SWEEPS):
        rotated = False
        for step in range(2 * pairs - 1):
            words[9] = step
            dense.run(name, build, name, words, pairs, flops)
            rotated = rotated or any(flags)
        if not rotated:
            return
    ctypes.c_int64.from_address(host_ptr(info, name)).value = MAX_SWEEPS


def svd(
    x, g, s, work, info, k: int, cols: int, rows: int, batch: int, vectors: bool, given: bool
) -> None:
    """One-sided Jacobi on each of `batch` contiguous [rows, cols] matrices at impl `x`, whose
    first k rows are X0 (k <= cols): singular values into impl `s` [batch, k] (descending),
    with `vectors` also G [batch, k, k] into impl `g` and W's rows (orthonormal, `rows` of
    them: k, or cols for a full basis) in place of x, X0 = G^T diag(s) W[:k]. `work`
    [batch, cols + 1], its own, is scratch; when `given`, its first k columns hold the
    reference norms of X0's rows (_references; else the rows' own norms are). LAPACK-like
    info [batch] (int64): see the module docstring. One matrix of order PARALLEL or more
    is swept in blocks over the threads (_block_sweeps)."""
    name = f"kael_svd_jacobi_{x.dtype.name}"
    pairs = get_num_threads()
    split = batch == 1 and k >= PARALLEL and pairs > 1
    words = [*(host_ptr(t, name) for t in (x, g, s, work, info)),
             k, cols, rows, int(vectors), PREPARE if split else FULL, int(given)]  # fmt: skip
    build = lambda mod: dense.per_matrix(mod, name, x.dtype, WORDS, _svd)  # noqa: E731
    dense.run(name, build, name, words, batch, 8 * k * k * cols)
    if split and ctypes.c_int64.from_address(host_ptr(info, name)).value == 0:
        _block_sweeps(x, g, s, work, info, k, cols, vectors, pairs)
        words[9] = FINISH
        dense.run(name, build, name, words, batch, 8 * k * k * cols)
