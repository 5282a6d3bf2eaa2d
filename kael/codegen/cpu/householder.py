"""Householder QR of kael.linalg: LAPACK's geqr2 (A = Q R, the reflectors stored below R's
diagonal and their scalars in tau) and org2r (Q formed from the reflectors), one dense
kernel (codegen/cpu/dense.py) per matrix of a batch, in place on row-major copies.

Reflector j is H = I - tau v v^T with v = [1, A[j+1:, j]], chosen as LAPACK's larfg
chooses it: beta = -sign(alpha) * ||(alpha, x)||, tau = (beta - alpha) / beta, x scaled
by 1 / (alpha - beta), so R's diagonal signs and Q are LAPACK's (and so PyTorch's) up to
rounding. The norm of x is a plain sum of squares where that cannot overflow or lose
precision to underflow, and a sum of squares scaled by the largest magnitude where it
could. A reflector is applied to the trailing columns row by row, every inner loop a
unit-stride axpy of rows: w = sum_i v_i A[i, c:], then A[i, c:] -= tau v_i w. Q is
accumulated backward from the identity's columns, as org2r does, so each reflector only
touches the rows and columns it changes. One large matrix's panel (`panel`) runs the same
steps column-major: copied transposed into a scratch, each reflector is a contiguous
column's norm, and its application a dot and an axpy down each later column (its row
loops were 8 elements short: a 512 x 64 geqr2 507 -> 315 us). For the blocked drivers
(frontend/orthogonal.py), `reflectors` writes a block's V out and `larft` forms T from
V^T V, which the caller takes by a matrix product: m x k short row loops cost 4x the
product's time.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.cpu import dense
from kael.codegen.lowering import smin
from kael.runtime.tensor_impl import host_ptr

I64 = ir.IntType(64)
# Each matrix: m x n at `a` + item * a_stride, leading dimension ld (a panel of a larger
# matrix, or the whole of a contiguous one); its k reflectors' scalars at tau + item *
# tau_stride.
FACTOR_WORDS = ("a", "tau", "work", "m", "n", "ld", "a_stride", "tau_stride")
Q_WORDS = (*FACTOR_WORDS, "k")
V_WORDS = ("a", "v", "m", "k", "ld", "inc", "a_stride")
# One large matrix's panel, copied transposed into the scratch `t` (ldt = m + PAD).
PANEL_WORDS = ("a", "lda", "t", "ldt", "tau", "m", "n", "k")
PAD = 8
T_WORDS = ("g", "tau", "t", "k", "tau_stride")
ZERO_WORDS = ("a", "m", "n", "ld", "a_stride")
# Below these sums of squares (and at infinity or NaN) the norm is computed scaled: the
# plain sum could have lost elements to underflow (or all of them: a sum of 0).
TINY = {4: 2.0**-100, 8: 2.0**-900}


class _Column:
    """Column j of a panel: its elements `stride` apart from `base` (a row-major matrix's
    column, ld apart), or contiguous (stride None: a row of the transposed scratch)."""

    def __init__(self, d: dense.Dense, base: ir.Value, stride: ir.Value | None) -> None:
        self.d, self.base, self.stride = d, base, stride

    def at(self, i: ir.Value) -> ir.Value:
        b = self.d.b
        return b.gep(self.base, [i if self.stride is None else b.mul(i, self.stride)])

    def get(self, i: ir.Value) -> ir.Value:
        return self.d.b.load(self.at(i))

    def set(self, i: ir.Value, value: ir.Value) -> None:
        self.d.b.store(value, self.at(i))


def _column_norm(d: dense.Dense, col: _Column, lo: ir.Value, m: ir.Value):
    """||col[lo:m]||, without overflow or underflow (NaN in, NaN out)."""
    b = d.b
    rows = b.sub(m, lo)
    part = _Column(d, col.at(lo), col.stride)
    squares = d.dot(part.base, part.base, 0, rows, col.stride, col.stride)
    norm = d.var(d.sqrt(squares), "norm")
    finite = b.fcmp_ordered("<", squares, d.f(float("inf")))
    safe = b.and_(finite, b.fcmp_ordered(">", squares, d.f(TINY[d.dtype.itemsize])))
    with d.when(b.not_(safe)):
        largest = d.var(d.f(0.0), "largest")
        with d.loop(0, rows) as i:
            size = d.abs(part.get(i))
            with d.when(d.gt(size, largest.get())):
                largest.set(size)
        big = largest.get()
        # All zeros (or underflowed) and no NaN, or an infinity: the norm is the largest.
        zero = b.and_(b.fcmp_ordered("==", big, d.f(0.0)), b.not_(d.is_nan(squares)))
        extreme = b.or_(b.fcmp_ordered("==", big, d.f(float("inf"))), zero)
        with d.either(extreme) as (zero_or_infinite, scaled):
            with zero_or_infinite:
                norm.set(big)
            with scaled:
                inverse = d.div(d.f(1.0), big)
                total = d.var(d.f(0.0), "total")
                with d.loop(0, rows) as i:
                    x = d.mul(part.get(i), inverse)
                    total.set(d.add(total.get(), d.mul(x, x)))
                norm.set(d.mul(big, d.sqrt(total.get())))
    return norm.get()


def _reflector(d: dense.Dense, col: _Column, j: ir.Value, m: ir.Value) -> ir.Value:
    """Make col[j:] (column j) the reflector v (col[j] = beta, x scaled) as larfg does;
    its tau."""
    b = d.b
    below = b.add(j, d.i(1))
    xnorm = _column_norm(d, col, below, m)
    tau = d.var(d.f(0.0), "tau")
    with d.when(b.fcmp_unordered("!=", xnorm, d.f(0.0))):  # H = I when x is zero
        alpha = col.get(j)
        beta = d.neg(d.copysign(d.hypot(alpha, xnorm), alpha))
        tau.set(d.div(d.sub(beta, alpha), beta))
        inverse = d.div(d.f(1.0), d.sub(alpha, beta))
        with d.loop(below, m) as i:
            col.set(i, d.mul(col.get(i), inverse))
        col.set(j, beta)
    return tau.get()


def _apply(d: dense.Dense, a: dense.Matrix, w: ir.Value, j: ir.Value, m, n, tau) -> None:
    """A[j:m, j+1:n] = H A[j:m, j+1:n] for reflector j (v = [1, A[j+1:m, j]]), through
    the row `w`: w = v^T A[j:m, j+1:n], then each row less tau v_i w."""
    b = d.b
    below = b.add(j, d.i(1))
    with d.when(b.fcmp_unordered("!=", tau, d.f(0.0))):  # NaN is applied, as LAPACK does
        top = a.row(j)
        with d.loop(below, n) as c:
            b.store(b.load(b.gep(top, [c])), b.gep(w, [c]))
        with d.loop(below, m) as i:
            d.axpy(w, a.get(i, j), a.row(i), below, n)
        d.axpy(top, d.neg(tau), w, below, n)
        with d.loop(below, m) as i:
            d.axpy(a.row(i), d.neg(d.mul(tau, a.get(i, j))), w, below, n)


def _operands(d: dense.Dense, item: ir.Value) -> tuple[dense.Matrix, ir.Value, ir.Value]:
    """Item `item`'s matrix, tau and work row (FACTOR_WORDS)."""
    b, w = d.b, d.w
    a = d.matrix("a", "ld", b.mul(item, w["a_stride"]))
    tau = b.gep(d.ptr("tau"), [b.mul(item, w["tau_stride"])])
    return a, tau, b.gep(d.ptr("work"), [b.mul(item, w["n"])])


def _factor(d: dense.Dense, item: ir.Value) -> None:
    b, w = d.b, d.w
    m, n = w["m"], w["n"]
    a, tau, work = _operands(d, item)
    with d.loop(0, smin(b, m, n)) as j:
        t = _reflector(d, _Column(d, a.at(d.i(0), j), a.ld), j, m)
        b.store(t, b.gep(tau, [j]))
        _apply(d, a, work, j, m, n, t)


def _form_q(d: dense.Dense, item: ir.Value) -> None:
    b, w = d.b, d.w
    m, n, k = w["m"], w["n"], w["k"]
    a, tau, work = _operands(d, item)
    # The columns past the reflectors are the identity's.
    with d.loop(k, n) as j:
        with d.loop(0, m) as i:
            a.set(i, j, d.f(0.0))
        a.set(j, j, d.f(1.0))
    with d.loop(b.sub(k, d.i(1)), -1, -1) as j:
        t = b.load(b.gep(tau, [j]))
        _apply(d, a, work, j, m, n, t)
        with d.loop(b.add(j, d.i(1)), m) as i:
            a.set(i, j, d.mul(a.get(i, j), d.neg(t)))
        a.set(j, j, d.sub(d.f(1.0), t))
        with d.loop(0, j) as i:
            a.set(i, j, d.f(0.0))


def _apply_columns(d: dense.Dense, t: dense.Matrix, j, m, n, tau) -> None:
    """_apply on the transposed scratch (row c of `t` is the panel's column c): each
    column after j less tau (v . column) v, a unit-stride dot and axpy a column."""
    b = d.b
    below = b.add(j, d.i(1))
    v = t.row(j)
    with d.when(b.fcmp_unordered("!=", tau, d.f(0.0))), d.loop(below, n) as c:
        column = t.row(c)
        top = b.gep(column, [j])
        w = d.add(b.load(top), d.dot(v, column, below, m))
        f = d.mul(tau, w)
        b.store(d.sub(b.load(top), f), top)
        d.axpy(column, d.neg(f), v, below, m)


def _panel(d: dense.Dense, body) -> None:
    """body(t, tau) on the panel at word `a` copied transposed into the scratch `t`, and
    the panel copied back: one large matrix's panel walks its columns contiguously."""
    m, n = d.w["m"], d.w["n"]
    a, t = d.matrix("a", "lda"), d.matrix("t", "ldt")
    d.transpose(m, n, lambda r, c: t.set(c, r, a.get(r, c)))
    body(t, d.ptr("tau"))
    d.transpose(m, n, lambda r, c: a.set(r, c, t.get(c, r)))


def _factor_panel(d: dense.Dense, item: ir.Value) -> None:
    b, m, n = d.b, d.w["m"], d.w["n"]

    def body(t: dense.Matrix, tau: ir.Value) -> None:
        with d.loop(0, smin(b, m, n)) as j:
            tj = _reflector(d, _Column(d, t.row(j), None), j, m)
            b.store(tj, b.gep(tau, [j]))
            _apply_columns(d, t, j, m, n, tj)

    _panel(d, body)


def _form_q_panel(d: dense.Dense, item: ir.Value) -> None:
    b, m, n, k = d.b, d.w["m"], d.w["n"], d.w["k"]

    def body(t: dense.Matrix, tau: ir.Value) -> None:
        with d.loop(k, n) as j:  # the columns past the reflectors are the identity's
            d.fill(t.row(j), d.f(0.0), 0, m)
            t.set(j, j, d.f(1.0))
        with d.loop(b.sub(k, d.i(1)), -1, -1) as j:
            tj = b.load(b.gep(tau, [j]))
            _apply_columns(d, t, j, m, n, tj)
            column = t.row(j)
            d.scale(column, d.neg(tj), b.add(j, d.i(1)), m)
            t.set(j, j, d.sub(d.f(1.0), tj))
            d.fill(column, d.f(0.0), 0, j)

    _panel(d, body)


def _reflectors(d: dense.Dense, item: ir.Value) -> None:
    """The m x k reflectors of a block as an explicit unit lower matrix V (for the
    matrix products of larfb, and V^T V for larft); the block's element (r, c) is
    `inc` c + `ld` r elements in (a transposed block: ld 1)."""
    b, w = d.b, d.w
    m, k = w["m"], w["k"]
    a = b.gep(d.ptr("a"), [b.mul(item, w["a_stride"])])
    v = d.matrix("v", "k", b.mul(item, b.mul(m, k)))
    with d.loop(0, m) as r, d.loop(0, k) as c:
        below = b.icmp_signed(">", r, c)
        unit = b.select(b.icmp_signed("==", r, c), d.f(1.0), d.f(0.0))
        at = b.gep(a, [b.add(b.mul(r, w["ld"]), b.mul(c, w["inc"]))])
        v.set(r, c, b.select(below, b.load(at), unit))


def _zero(d: dense.Dense, item: ir.Value) -> None:
    b, w = d.b, d.w
    a = d.matrix("a", "ld", b.mul(item, w["a_stride"]))
    with d.loop(0, w["m"]) as r:
        d.fill(a.row(r), d.f(0.0), d.i(0), w["n"])


def _triangular_factor(d: dense.Dense, item: ir.Value) -> None:
    """LAPACK's larft (forward, columnwise): the upper k x k T with H_0 ... H_{k-1} =
    I - V T V^T, from G = V^T V (a matrix product, not m x k short row loops): column i
    of T is -tau_i T[:i, :i] G[:i, i], and T[i, i] = tau_i (G[:i, i] read as G's row i,
    unit-stride: k = 64 in 18 us against 36 down G's column)."""
    b, w = d.b, d.w
    k = w["k"]
    tau = b.gep(d.ptr("tau"), [b.mul(item, w["tau_stride"])])
    g = d.matrix("g", "k", b.mul(item, b.mul(k, k)))
    t = d.matrix("t", "k", b.mul(item, b.mul(k, k)))
    with d.loop(0, k) as i:
        ti = b.load(b.gep(tau, [i]))
        column = g.row(i)  # G[:, i] as G's row i (G is symmetric): a unit-stride dot
        with d.loop(0, i) as c:
            dot = d.dot(t.row(c), column, c, i)
            t.set(c, i, d.mul(d.neg(ti), dot))
        with d.loop(b.add(i, d.i(1)), k) as c:
            t.set(c, i, d.f(0.0))
        t.set(i, i, ti)


def _module(dtype):
    name = f"kael_householder_{dtype.name}"

    def build(module: ir.Module) -> list[str]:
        return [
            *dense.per_matrix(module, f"{name}_geqr2", dtype, FACTOR_WORDS, _factor),
            *dense.per_matrix(module, f"{name}_org2r", dtype, Q_WORDS, _form_q),
            *dense.per_matrix(module, f"{name}_geqr2_panel", dtype, PANEL_WORDS, _factor_panel),
            *dense.per_matrix(module, f"{name}_org2r_panel", dtype, PANEL_WORDS, _form_q_panel),
            *dense.per_matrix(module, f"{name}_reflectors", dtype, V_WORDS, _reflectors),
            *dense.per_matrix(module, f"{name}_larft", dtype, T_WORDS, _triangular_factor),
            *dense.per_matrix(module, f"{name}_zero", dtype, ZERO_WORDS, _zero),
        ]

    return name, build


def _words(a, tau, work, m: int, n: int) -> list[int]:
    """FACTOR_WORDS of the batch of m x n matrices impl `a` (a contiguous batch, or the
    [..., m, n] panel view of one: its last stride is 1) and their taus impl `tau`."""
    ld, a_stride = a.strides[-2], a.strides[-3] if len(a.shape) > 2 else 0
    tau_stride = tau.strides[-2] if len(tau.shape) > 1 else 0
    return [*(host_ptr(t, "householder") for t in (a, tau, work)), m, n, ld, a_stride, tau_stride]


def geqr2(a, tau, work, batch: int, into=None) -> None:
    """Factor each of the `batch` m x n matrices of impl `a` [batch, m, n] (row-major
    rows, any row and batch strides) in place: R on and above the diagonal, the
    reflectors' tails below it, their scalars into impl `tau` [batch, min(m, n)]; impl
    `work` holds n elements per matrix."""
    m, n = a.shape[-2:]
    name, build = _module(a.dtype)
    words = _words(a, tau, work, m, n)
    dense.run(name, build, f"{name}_geqr2", words, batch, 2 * m * n * min(m, n), into)


def org2r(a, tau, work, batch: int, into=None) -> None:
    """Overwrite each of the `batch` m x n matrices of impl `a` (m >= n >= k, laid out as
    for geqr2; its first k columns reflectors, tau [batch, k]) with the first n columns of
    Q = H_0 H_1 ... H_{k-1}; impl `work` holds n elements per matrix."""
    m, n = a.shape[-2:]
    k = tau.shape[-1]
    name, build = _module(a.dtype)
    words = [*_words(a, tau, work, m, n), k]
    dense.run(name, build, f"{name}_org2r", words, batch, 2 * m * n * k, into)


def panel(op: str, a, tau, scratch) -> None:
    """geqr2 or org2r (`op`) of one large matrix's panel, impl `a` [m, n] (unit-stride
    rows), walked column-major through impl `scratch` (at least n * (m + PAD) elements):
    the same reflectors and Q as the row kernels, up to rounding. tau: impl [k]."""
    dense.run_prepared(*prepared_panel(op, a, tau, scratch), 0)


def prepared_panel(op: str, a, tau, scratch) -> tuple:
    """panel's launch, not run: (kernel, argument words, work items)."""
    m, n = a.shape[-2:]
    assert scratch.numel() >= n * (m + PAD) and scratch.dtype is a.dtype
    name, build = _module(a.dtype)
    words = [
        host_ptr(a, name), a.strides[-2], host_ptr(scratch, name), m + PAD,
        host_ptr(tau, name), m, n, tau.shape[-1],
    ]  # fmt: skip
    return dense.kernel(name, build, f"{name}_{op}_panel"), words, 1


def reflectors(a, v, batch: int, into=None) -> None:
    """The blocks of reflectors in impl `a` [batch, m, k] (any strides) as explicit unit
    lower matrices into impl `v` (contiguous [batch, m, k])."""
    m, k = a.shape[-2:]
    name, build = _module(a.dtype)
    a_stride = a.strides[-3] if len(a.shape) > 2 else 0
    words = [host_ptr(a, name), host_ptr(v, name), m, k, *a.strides[-2:], a_stride]
    dense.run(name, build, f"{name}_reflectors", words, batch, m * k, into)


def larft(gram, tau, t, batch: int, into=None) -> None:
    """The upper triangular factors T (impl `t`, contiguous [batch, k, k]) of blocks of
    reflectors V, given G = V^T V (impl `gram`, contiguous [batch, k, k]) and tau [batch, k]."""
    k = gram.shape[-1]
    name, build = _module(gram.dtype)
    tau_stride = tau.strides[-2] if len(tau.shape) > 1 else 0
    words = [*(host_ptr(x, name) for x in (gram, tau, t)), k, tau_stride]
    dense.run(name, build, f"{name}_larft", words, batch, k**3, into)


def zero(a, batch: int, into=None) -> None:
    """Zero each [m, n] block of impl `a` ([m, n] or [batch, m, n], unit-stride rows): the
    rows of Q above a panel, as orgqr clears them."""
    m, n = a.shape[-2:]
    name, build = _module(a.dtype)
    a_stride = a.strides[-3] if len(a.shape) > 2 else 0
    words = [host_ptr(a, name), m, n, a.strides[-2] if m > 1 else n, a_stride]
    dense.run(name, build, f"{name}_zero", words, batch, m * n, into)
