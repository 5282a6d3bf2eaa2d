"""Fused row kernels: softmax, log_softmax, logsumexp, layer_norm, rms_norm and
cross_entropy.

Each is a hand-written `void f(i64* args, i64 begin, i64 end)` whose work items are the
rows of a contiguous [rows, cols] input, so runtime/launcher.py splits rows over the
thread pool. A row is walked a few times (it stays in cache between passes): W-lane
vectors (one 64-byte register), the last partial one masked (its lanes past the row
read and write no memory and add the accumulator's neutral value), with kael's own
exp and log (codegen/vmath.py through the emitter tables). Sums accumulate in float64
whatever the element type, in CHAINS interleaved chains; chains combine pairwise and lanes
fold by halves in a fixed order, so results do not depend on threads.

- softmax: NaN-aware max; out = exp(x - max) with the sum; out *= 1 / sum.
- log_softmax: max; sum of exp(x - max); out = (x - max) - log(sum), exact where
  log(softmax) underflows.
- logsumexp: shift = max, or 0 when the max is infinite (no inf - inf); out = log(sum
  of exp(x - shift)) + shift: an all -inf or empty row gives -inf, a +inf entry inf.
- layer_norm: the corrected two-pass algorithm in float64: the mean m, then sum(d^2) of
  d = x - m and, for float64 rows, sum(d) in one pass; delta = sum(d) / n corrects m
  (a float32 row's float64 mean is already exact far below float32's precision) and
  var = sum(d^2) / n - delta^2. out = fma(x - hi, rstd, shift) with hi = m + delta
  rounded to the element type and shift = -(its rounding error) * rstd, so float32 rows
  normalize with the float64 mean in float32 arithmetic and a constant row gives 0
  exactly; then times weight, plus bias (variants by which are given). A float64 row
  whose sum(d^2) is not finite is normalized again on a rare path: the same passes on
  x / u, u the power of two at or below max |x|, with eps / u^2 (kept positive).
- cross_entropy: per row the weighted loss w[t] * (logsumexp(x) - x[t]) and w[t] into a
  float64 [2, rows] scratch; rows whose target is ignore_index give 0 and 0; a target
  outside [0, cols) lowers the error word to its row (atomic min). `total` then sums
  both scratch rows in one work item and stores the sum, or the weighted mean.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable
from functools import partial

from llvmlite import ir

from kael.codegen.cpu import compiler, handwritten
from kael.codegen.cpu.loops import VECTOR_BYTES, LoopBuilder, lanes_below, masked_load, masked_store
from kael.codegen.emitters import UNARY_EMITTERS
from kael.codegen.lowering import ExprEmitter, i64, scalar_type
from kael.runtime.dtypes import INT64_MAX, DType, float32, float64
from kael.runtime.launcher import launch

F64 = ir.DoubleType()
I64 = ir.IntType(64)
INF = float("inf")
MIN_SUBNORMAL = 5e-324
# Independent accumulator chains a row's sums and maxima run in: one chain waits out the
# add's latency every vector ([64, 768] rows, 1 thread: layer_norm float32 16.6 -> 14.6 us,
# float64 24 -> 18; softmax float64 43 -> 36).
CHAINS = 4
assert CHAINS & (CHAINS - 1) == 0, "chains combine pairwise: a power of two"
# Layer norm variants: which of weight and bias the kernel applies.
AFFINE = ("none", "weight", "bias", "both")


def _vec(t: ir.Type, width: int) -> ir.Type:
    return t if width == 1 else ir.VectorType(t, width)


def _splat(t: ir.Type, value: float, width: int) -> ir.Constant:
    c = ir.Constant(t, value)
    return c if width == 1 else ir.Constant(ir.VectorType(t, width), [c] * width)


def _no_expr(*_):
    raise AssertionError("row kernels emit math on values only")


def nan_max(b: ir.IRBuilder, m: ir.Value, x: ir.Value) -> ir.Value:
    """max(m, x) where a NaN on either side wins (and stays)."""
    take = b.or_(b.fcmp_ordered(">", x, m), b.fcmp_unordered("uno", x, x))
    return b.select(take, x, m)


def fadd(b: ir.IRBuilder, a: ir.Value, x: ir.Value) -> ir.Value:
    """a + x: the combining step of a float sum, as a function to pass around."""
    return b.fadd(a, x)


def two_sum_error(b: ir.IRBuilder, x: ir.Value, y: ir.Value, s: ir.Value) -> ir.Value:
    """(x + y) - s exactly, for s = x + y rounded (Knuth's TwoSum)."""
    yy = b.fsub(s, x)
    return b.fadd(b.fsub(x, b.fsub(s, yy)), b.fsub(y, yy))


def inverse_unit(b: ir.IRBuilder, m: ir.Value) -> ir.Value:
    """2^-e for the power of two 2^e at or below the float64 m, e clamped to [-1022, 1022]
    (both normal), read from m's exponent bits; 1 when m is inf or NaN."""
    biased = b.and_(b.lshr(b.bitcast(m, I64), i64(52)), i64(0x7FF))
    clamped = b.select(b.icmp_signed("<", biased, i64(1)), i64(1), biased)
    clamped = b.select(b.icmp_signed(">", clamped, i64(2045)), i64(2045), clamped)
    inverse = b.bitcast(b.shl(b.sub(i64(2046), clamped), i64(52)), F64)
    return b.select(b.icmp_signed("==", biased, i64(0x7FF)), ir.Constant(F64, 1.0), inverse)


class _Acc:
    """CHAINS loop-carried W-lane vectors (`each` hands every body W lanes and says which
    chain its vector feeds), combined and folded at the end in a fixed order."""

    def __init__(self, row: _Row, elem: ir.Type, init: float, combine: Callable) -> None:
        self.row, self.elem, self.init, self.combine = row, elem, init, combine
        # Made before the kernel's first branch: entry-block allocas, which mem2reg lifts.
        self.slots = [row.b.alloca(_vec(elem, row.width)) for _ in range(CHAINS)]

    def reset(self) -> None:
        for slot in self.slots:
            self.row.b.store(_splat(self.elem, self.init, self.row.width), slot)

    def update(self, w: int, x: ir.Value) -> None:
        """Combine `x` (w = W lanes) into the current chain; lanes off the row's mask give
        the neutral `init`."""
        b, mask, slot = self.row.b, self.row.mask, self.slots[self.row.chain]
        if mask is not None:
            x = b.select(mask, x, _splat(self.elem, self.init, w))
        b.store(self.combine(b, b.load(slot), x), slot)

    def total(self) -> ir.Value:
        """The chains combined pairwise ((0 with 1) with (2 with 3)), then the lanes folded
        by halves (lane i with lane i + W/2, ...) down to one."""
        b = self.row.b
        chains = [b.load(slot) for slot in self.slots]
        while len(chains) > 1:
            chains = [self.combine(b, x, y) for x, y in zip(chains[::2], chains[1::2])]
        vec, width = chains[0], self.row.width
        i32 = ir.IntType(32)
        while width > 1:
            h = width // 2
            halves = [
                b.shuffle_vector(vec, vec, ir.Constant(ir.VectorType(i32, h), list(lanes)))
                for lanes in (range(h), range(h, width))
            ]
            vec = self.combine(b, *halves)
            width = h
        return b.extract_element(vec, i64(0))


class _Row:
    """One row kernel being emitted: its argument words, emitters and loop helpers."""

    def __init__(self, module: ir.Module, symbol: str, dtype: DType, args: tuple[str, ...]):
        fn, b = handwritten.kernel_function(module, symbol)
        self.fn, self.b, self.dtype = fn, b, dtype
        self.width = VECTOR_BYTES // dtype.itemsize
        self.t = scalar_type(dtype)
        self.w = {
            name: b.load(b.gep(fn.args[0], [i64(i)]), name=name) for i, name in enumerate(args)
        }
        self.loops = LoopBuilder(b)
        self.mask: ir.Value | None = None  # the lanes inside the row, in `each`'s last step
        self.chain = 0  # the accumulator chain `each`'s current vector feeds
        self.emitters = {
            w: ExprEmitter(b, w, _no_expr, _no_expr, _no_expr, scalef=compiler.has_avx512f())
            for w in (self.width, 1)
        }

    def ptr(self, name: str, t: ir.Type | None = None) -> ir.Value:
        return self.b.inttoptr(self.w[name], (t or self.t).as_pointer(), name=f"{name}.ptr")

    def row_ptr(self, base: ir.Value, row: ir.Value, cols: ir.Value) -> ir.Value:
        return self.b.gep(base, [self.b.mul(row, cols)])

    def load(self, row: ir.Value, j: ir.Value, w: int) -> ir.Value:
        """Elements j.. (w = W lanes); in a masked step, zeros past the row, nothing read."""
        p = self.b.bitcast(self.b.gep(row, [j]), ir.VectorType(self.t, w).as_pointer())
        if self.mask is not None:
            return masked_load(self.b, p, self.dtype.itemsize, self.mask)
        return self.b.load(p, align=self.dtype.itemsize)

    def store(self, v: ir.Value, row: ir.Value, j: ir.Value, w: int) -> None:
        """Store elements j.. (w = W lanes); in a masked step, nothing past the row."""
        p = self.b.bitcast(self.b.gep(row, [j]), ir.VectorType(self.t, w).as_pointer())
        if self.mask is not None:
            masked_store(self.b, v, p, self.dtype.itemsize, self.mask)
        else:
            self.b.store(v, p, align=self.dtype.itemsize)

    def math(self, name: str, v: ir.Value, w: int, dtype: DType | None = None) -> ir.Value:
        """kael's vector math (never llvm.exp): exp or log of a value of `w` lanes."""
        return UNARY_EMITTERS[name](self.emitters[w], v, dtype or self.dtype)

    def intrinsic(self, name: str, v: ir.Value) -> ir.Value:
        """An LLVM intrinsic that every backend lowers exactly (fabs, sqrt), on any lanes."""
        return self.emitters[1].intrinsic(name, v)

    def fma(self, x: ir.Value, y: ir.Value, z: ir.Value) -> ir.Value:
        """x * y + z rounded once, lane-wise."""
        return self.emitters[1].intrinsic("llvm.fma", x, y, z)

    def splat(self, v: ir.Value, w: int) -> ir.Value:
        return self.emitters[w].splat(v)

    def wide(self, v: ir.Value, w: int) -> ir.Value:
        """Elements as float64 (lane-wise)."""
        return v if self.dtype is float64 else self.b.fpext(v, _vec(F64, w))

    def narrow(self, v: ir.Value, w: int = 1) -> ir.Value:
        """float64 lanes (a scalar when w is 1) as the element type."""
        return v if self.dtype is float64 else self.b.fptrunc(v, _vec(self.t, w))

    def each(self, n: ir.Value, body: Callable[[ir.Value, int], None], name: str) -> None:
        """body(j, W) over whole vectors of [0, n), CHAINS at a time feeding CHAINS
        accumulator chains, then the whole vectors left, then once more over the rest under
        `mask` (one vector step, not up to W - 1 scalar ones: a 20-column row is two)."""
        b, width = self.b, self.width

        def chained(j):
            for chain in range(CHAINS):
                self.chain = chain
                body(b.add(j, i64(chain * width)), width)
            self.chain = 0

        j = self.loops.counted(i64(0), n, CHAINS * width, chained, f"{name}.c")
        j = self.loops.counted(j, n, width, lambda j: body(j, width), f"{name}.v")
        rest = b.sub(n, j)
        with b.if_then(b.icmp_signed(">", rest, i64(0))):
            self.mask = lanes_below(b, rest, self.width)
            body(j, self.width)
            self.mask = None

    def acc(self, elem: ir.Type, init: float, combine: Callable) -> _Acc:
        return _Acc(self, elem, init, combine)

    def row_max(self, x: ir.Value, cols: ir.Value, acc: _Acc) -> ir.Value:
        """The NaN-aware max of a row (-inf when empty)."""
        acc.reset()
        self.each(cols, lambda j, w: acc.update(w, self.load(x, j, w)), "max")
        return acc.total()

    def exp_sum(self, x, cols, shift, acc: _Acc, out=None) -> ir.Value:
        """sum(exp(x - shift)) in float64, storing each exp into `out` when given."""
        acc.reset()

        def body(j, w):
            e = self.math("exp", self.b.fsub(self.load(x, j, w), self.splat(shift, w)), w)
            if out is not None:
                self.store(e, out, j, w)
            acc.update(w, self.wide(e, w))

        self.each(cols, body, "exp")
        return acc.total()

    def over_rows(self, body: Callable[[ir.Value], None]) -> None:
        """body(row) for the rows [begin, end) of this call, then return."""
        self.loops.counted(self.fn.args[1], self.fn.args[2], 1, body, "row")
        self.b.ret_void()


# ---- the kernels -----------------------------------------------------------------------------


def _softmax(module: ir.Module, symbol: str, dtype: DType, log: bool) -> None:
    r = _Row(module, symbol, dtype, ("x", "out", "cols"))
    b, cols = r.b, r.w["cols"]
    xs, outs = r.ptr("x"), r.ptr("out")
    top, total = r.acc(r.t, -INF, nan_max), r.acc(F64, 0.0, fadd)

    def row(i):
        x, out = r.row_ptr(xs, i, cols), r.row_ptr(outs, i, cols)
        m = r.row_max(x, cols, top)
        if not log:
            inv = r.narrow(b.fdiv(ir.Constant(F64, 1.0), r.exp_sum(x, cols, m, total, out)))
            r.each(
                cols,
                lambda j, w: r.store(b.fmul(r.load(out, j, w), r.splat(inv, w)), out, j, w),
                "scale",
            )
            return
        log_sum = r.narrow(r.math("log", r.exp_sum(x, cols, m, total), 1, float64))

        def shifted(j, w):
            v = b.fsub(b.fsub(r.load(x, j, w), r.splat(m, w)), r.splat(log_sum, w))
            r.store(v, out, j, w)

        r.each(cols, shifted, "out")

    r.over_rows(row)


def _logsumexp(module: ir.Module, symbol: str, dtype: DType) -> None:
    r = _Row(module, symbol, dtype, ("x", "out", "cols"))
    b, cols = r.b, r.w["cols"]
    xs, outs = r.ptr("x"), r.ptr("out")
    top, total = r.acc(r.t, -INF, nan_max), r.acc(F64, 0.0, fadd)

    def row(i):
        x = r.row_ptr(xs, i, cols)
        m = r.row_max(x, cols, top)
        infinite = b.fcmp_ordered("==", r.intrinsic("llvm.fabs", m), ir.Constant(r.t, INF))
        shift = b.select(infinite, ir.Constant(r.t, 0.0), m)
        value = r.math("log", r.exp_sum(x, cols, shift, total), 1, float64)
        value = b.fadd(value, r.wide(shift, 1))
        b.store(r.narrow(value), b.gep(outs, [i]))

    r.over_rows(row)


def _layer_norm(module: ir.Module, symbol: str, dtype: DType, affine: str) -> None:
    r = _Row(module, symbol, dtype, ("x", "out", "weight", "bias", "cols", "eps"))
    b, cols = r.b, r.w["cols"]
    xs, outs, weight, bias = r.ptr("x"), r.ptr("out"), r.ptr("weight"), r.ptr("bias")
    eps = b.bitcast(r.w["eps"], F64)
    total, deviations, squares = (r.acc(F64, 0.0, fadd) for _ in range(3))
    top = r.acc(F64, 0.0, nan_max)
    n = b.sitofp(cols, F64)
    inv_n = b.fdiv(ir.Constant(F64, 1.0), n)
    zero = ir.Constant(F64, 0.0)

    def value(x, j, w, inv):
        """Element j (w lanes) as float64, times the row's inverse unit in the rare path."""
        v = r.wide(r.load(x, j, w), w)
        return v if inv is None else b.fmul(v, r.splat(inv, w))

    def moments(x, inv):
        """(mean, delta, var, sum(d^2)) of d = x - mean: the mean, then one pass summing
        d^2 and, for float64 rows, d (delta = sum(d) / n corrects the mean). A float32
        row's float64 mean is already exact to far below its precision: delta is 0."""
        total.reset()
        r.each(cols, lambda j, w: total.update(w, value(x, j, w, inv)), "sum")
        # float64: delta corrects the mean's rounding, so multiplying by 1 / n will do;
        # float32: the float64 quotient of its exact sum is the mean it normalizes with.
        mean = b.fmul(total.total(), inv_n) if dtype is float64 else b.fdiv(total.total(), n)
        deviations.reset()
        squares.reset()

        def deviation(j, w):
            d = b.fsub(value(x, j, w, inv), r.splat(mean, w))
            if dtype is float64:
                deviations.update(w, d)
            squares.update(w, b.fmul(d, d))

        r.each(cols, deviation, "dev")
        sq = squares.total()
        if dtype is not float64:
            return mean, zero, b.fmul(sq, inv_n), sq
        # var = sum(d^2) / n - delta^2: both divisions side by side, off each other's path.
        delta = b.fdiv(deviations.total(), n)
        var = b.fsub(b.fmul(sq, inv_n), b.fmul(delta, delta))
        return mean, delta, b.select(b.fcmp_ordered("<", var, zero), zero, var), sq

    def normalize(x, out, inv, mean, delta, rstd):
        """out = (x - (mean + delta)) * rstd [* weight] [+ bias] as fma(x - hi, rstd, shift):
        hi is mean + delta rounded to the element type, shift = -(its rounding error) *
        rstd, so x - hi is exact near the mean and a constant row gives 0 exactly."""
        if dtype is float64:
            hi = b.fadd(mean, delta)
            err = two_sum_error(b, mean, delta, hi)
        else:
            hi = r.narrow(mean)
            err = b.fsub(mean, r.wide(hi, 1))
        shift = r.narrow(b.fneg(b.fmul(err, rstd)))
        rstd = r.narrow(rstd)

        def normed(j, w):
            v = r.load(x, j, w) if inv is None else r.narrow(value(x, j, w, inv), w)
            v = r.fma(b.fsub(v, r.splat(hi, w)), r.splat(rstd, w), r.splat(shift, w))
            if affine in ("weight", "both"):
                v = b.fmul(v, r.load(weight, j, w))
            if affine in ("bias", "both"):
                v = b.fadd(v, r.load(bias, j, w))
            r.store(v, out, j, w)

        r.each(cols, normed, "norm")

    def rstd_of(var, eps_):
        return b.fdiv(ir.Constant(F64, 1.0), r.intrinsic("llvm.sqrt", b.fadd(var, eps_)))

    def rescaled(x, out):
        """The rare path: the row scaled by 1 / u, u the power of two at or below max |x|
        (1 when that is inf or NaN), so no sum overflows; eps scales by 1 / u^2."""
        top.reset()
        r.each(
            cols, lambda j, w: top.update(w, r.intrinsic("llvm.fabs", value(x, j, w, None))), "top"
        )
        inv = inverse_unit(b, top.total())
        mean, delta, var, _ = moments(x, inv)
        eps_u = b.fmul(b.fmul(eps, inv), inv)
        # A positive eps stays positive: a constant row gives 0 / sqrt(eps), not 0 / 0.
        tiny = ir.Constant(F64, MIN_SUBNORMAL)
        floor = b.select(b.fcmp_ordered("<", eps_u, tiny), tiny, eps_u)
        eps_u = b.select(b.fcmp_ordered(">", eps, zero), floor, eps_u)
        normalize(x, out, inv, mean, delta, rstd_of(var, eps_u))

    def row(i):
        x, out = r.row_ptr(xs, i, cols), r.row_ptr(outs, i, cols)
        mean, delta, var, sq = moments(x, None)
        normalize(x, out, None, mean, delta, rstd_of(var, eps))
        if dtype is float64:  # float32 sums and squares cannot overflow float64
            finite = b.fcmp_ordered("<", r.intrinsic("llvm.fabs", sq), ir.Constant(F64, INF))
            with b.if_then(b.not_(finite), likely=False):
                rescaled(x, out)  # writes the row again

    r.over_rows(row)


def _rms_norm(module: ir.Module, symbol: str, dtype: DType, weighted: bool) -> None:
    """frontend/layers.py's rms_norm composition, as the GPU's row kernel computes it:
    mean(x * x) (the squares rounded, summed in float64, divided in float64, rounded) +
    eps, 1 / sqrt of that, x * it [* weight], in the element type: one pass to sum, one to
    write, where the composed ops took five ([8, 256, 768] float32 on 2 threads: 872 ->
    ~330 us; torch 827)."""
    r = _Row(module, symbol, dtype, ("x", "out", "weight", "cols", "eps"))
    b, cols = r.b, r.w["cols"]
    xs, outs, weight = r.ptr("x"), r.ptr("out"), r.ptr("weight")
    eps = r.narrow(b.bitcast(r.w["eps"], F64))
    n = b.sitofp(cols, F64)
    squares = r.acc(F64, 0.0, fadd)

    def row(i):
        x, out = r.row_ptr(xs, i, cols), r.row_ptr(outs, i, cols)
        squares.reset()

        def square(j, w):
            v = r.load(x, j, w)
            squares.update(w, r.wide(b.fmul(v, v), w))

        r.each(cols, square, "sq")
        mean = b.fadd(r.narrow(b.fdiv(squares.total(), n)), eps)
        scale = b.fdiv(ir.Constant(r.t, 1.0), r.intrinsic("llvm.sqrt", mean))

        def scaled(j, w):
            v = b.fmul(r.load(x, j, w), r.splat(scale, w))
            r.store(b.fmul(v, r.load(weight, j, w)) if weighted else v, out, j, w)

        r.each(cols, scaled, "out")

    r.over_rows(row)


CE_ARGS = ("x", "target", "weight", "scratch", "error", "cols", "rows", "ignore", "weighted")


def _cross_entropy(module: ir.Module, symbol: str, dtype: DType) -> None:
    r = _Row(module, symbol, dtype, CE_ARGS)
    b, cols, rows = r.b, r.w["cols"], r.w["rows"]
    xs, targets, weights = r.ptr("x"), r.ptr("target", I64), r.ptr("weight")
    losses = r.ptr("scratch", F64)
    counts, error = b.gep(losses, [rows]), r.ptr("error", I64)
    top, total = r.acc(r.t, -INF, nan_max), r.acc(F64, 0.0, fadd)
    weighted = b.icmp_signed("!=", r.w["weighted"], i64(0))
    zero = ir.Constant(F64, 0.0)

    def row(i):
        t = b.load(b.gep(targets, [i]))
        ignored = b.icmp_signed("==", t, r.w["ignore"])
        inside = b.and_(b.icmp_signed(">=", t, i64(0)), b.icmp_signed("<", t, cols))
        loss_at, count_at = b.gep(losses, [i]), b.gep(counts, [i])
        b.store(zero, loss_at)
        b.store(zero, count_at)
        with b.if_then(b.and_(b.not_(ignored), b.not_(inside)), likely=False):
            b.atomic_rmw("min", error, i, "monotonic")
        with b.if_then(b.and_(b.not_(ignored), inside), likely=True):
            x = r.row_ptr(xs, i, cols)
            m = r.row_max(x, cols, top)
            log_sum = r.math("log", r.exp_sum(x, cols, m, total), 1, float64)
            picked = b.load(b.gep(x, [t]))
            loss = b.fadd(b.fsub(r.wide(m, 1), r.wide(picked, 1)), log_sum)
            b.store(ir.Constant(F64, 1.0), count_at)
            with b.if_then(weighted):  # the weight buffer is only read when there is one
                b.store(r.wide(b.load(b.gep(weights, [t])), 1), count_at)
            w = b.load(count_at)
            b.store(b.fmul(loss, w), loss_at)

    r.over_rows(row)


def _total(module: ir.Module, symbol: str, dtype: DType) -> None:
    """One work item: out[0] = sum(scratch[0]), or sum(scratch[0]) / sum(scratch[1])."""
    r = _Row(module, symbol, float64, ("scratch", "out", "rows", "mean"))
    b, rows = r.b, r.w["rows"]
    losses = r.ptr("scratch")
    counts = b.gep(losses, [rows])
    out = b.inttoptr(r.w["out"], scalar_type(dtype).as_pointer())
    sums = [r.acc(F64, 0.0, fadd) for _ in range(2)]
    for acc, base in zip(sums, (losses, counts)):
        acc.reset()
        r.each(rows, lambda j, w, acc=acc, base=base: acc.update(w, r.load(base, j, w)), "sum")
    loss, count = (acc.total() for acc in sums)
    mean = b.icmp_signed("!=", r.w["mean"], i64(0))
    value = b.select(mean, b.fdiv(loss, count), loss)
    b.store(value if dtype is float64 else b.fptrunc(value, ir.FloatType()), out)
    b.ret_void()


# ---- compiling and running -------------------------------------------------------------------

_BUILDERS: dict[str, Callable[[ir.Module, str, DType], None]] = {
    "softmax": lambda m, s, d: _softmax(m, s, d, log=False),
    "log_softmax": lambda m, s, d: _softmax(m, s, d, log=True),
    "logsumexp": _logsumexp,
    "cross_entropy": _cross_entropy,
    "cross_entropy_total": _total,
    **{f"layer_norm_{a}": partial(_layer_norm, affine=a) for a in AFFINE},
    "rms_norm_none": partial(_rms_norm, weighted=False),
    "rms_norm_weight": partial(_rms_norm, weighted=True),
}
KERNELS = tuple(_BUILDERS)


def symbol(kernel: str, dtype: DType) -> str:
    return f"kael_rows_{kernel}_{dtype.name}"


def library(kernel: str, dtype: DType) -> handwritten.Library:
    """The compiled module of one kernel and dtype (built or loaded from disk once)."""
    if dtype not in (float32, float64):
        raise AssertionError(f"row kernels take float32 or float64, got {dtype}")
    name = symbol(kernel, dtype)

    def build(module: ir.Module) -> list[str]:
        _BUILDERS[kernel](module, name, dtype)
        return [name]

    return handwritten.compiled(name, build)


def function(kernel: str, dtype: DType) -> handwritten.KernelFn:
    return library(kernel, dtype)[symbol(kernel, dtype)]


def _align(cols: int) -> int:
    """Rows per split unit: short rows go in blocks so threads do not share cache lines."""
    return 1 if cols >= 16 else 64


def run_rows(kernel: str, dtype: DType, words: list[int], rows: int, cols: int) -> tuple:
    """Run a row kernel over `rows` rows of `cols` elements; (the kernel, the bytes it
    moved, its rows per split unit), for a caller that replays the launch."""
    moved = rows * max(cols, 1) * dtype.itemsize * 2
    fn, align = function(kernel, dtype), _align(cols)
    launch(fn, words, rows, moved, align, shape=(rows, cols))
    return fn, moved, align


def float_word(value: float) -> int:
    """A float64 as the signed 64-bit argument word holding its bits."""
    return struct.unpack("<q", struct.pack("<d", value))[0]


def cross_entropy(
    dtype: DType,
    addresses: dict[str, int],
    rows: int,
    cols: int,
    ignore_index: int,
    weighted: bool,
) -> int:
    """Per-row losses and weights into the [2, rows] float64 scratch; -1 or the first bad row.

    `addresses` holds x, target, weight (any address when not weighted) and scratch.
    """
    error = ctypes.c_int64(INT64_MAX)
    values = {
        **addresses,
        "error": ctypes.addressof(error),
        "cols": cols,
        "rows": rows,
        "ignore": ignore_index,
        "weighted": int(weighted),
    }
    run_rows("cross_entropy", dtype, [values[a] for a in CE_ARGS], rows, cols)
    return -1 if error.value == INT64_MAX else error.value


def cross_entropy_total(dtype: DType, scratch: int, out: int, rows: int, mean: bool) -> None:
    """out[0] = the sum of the weighted losses, or their weighted mean."""
    launch(function("cross_entropy_total", dtype), [scratch, out, rows, int(mean)], 1, 0)
