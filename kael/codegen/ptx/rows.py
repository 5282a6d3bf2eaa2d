"""Row kernels for the GPU: softmax, log_softmax, layer_norm and rms_norm over the last dim.

One thread per row (the CPU row kernels' work item, and the host-order sums of the
composed ops a GPU ran before) has a warp read 32 rows at once, 32 KB apart for long
rows: nothing coalesces. Here a row belongs to a warp (short rows) or a CTA (long rows),
laid out by codegen/ptx/rowgroup.py: coalesced 128-bit loads, the row kept in registers
when it fits (one read and one write of memory), warp shuffles and shared memory for its
max, sums and moments, in a fixed order.

The numerics are the CPU row kernels', step for step, so both devices agree to the last
bit or so (only the order of float64 additions differs): the max in the element type,
exp in it, sums in float64 whatever the element type, softmax's 1 / sum and
log_softmax's log(sum) in float64 rounded once; layer_norm's float64 moments, corrected
for float64 rows, normalized as fma(x - hi, rstd, shift), and its rare rescaled pass for
float64 rows whose squares overflow. rms_norm follows its composition of kael ops
(frontend/layers.py): x * x in the element type, a float64 mean rounded to it, + eps,
1 / sqrt, * weight. float16 and bfloat16 rows load as they are, compute in float32 as the
CPU computes their widened copies, and round once on the store.

Parameters (64-bit words): ARGS, eps as float64 bits; the output is contiguous, the
input's rows `stride` elements apart (its last dim contiguous). A kernel variant is fixed
by (op, dtype, affine, Shape); each is compiled on first use and its PTX kept on disk.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from llvmlite import ir

from kael.codegen.cpu.rows import (
    MIN_SUBNORMAL,
    fadd,
    inverse_unit,
    nan_max,
    two_sum_error,
)
from kael.codegen.emitters import UNARY_EMITTERS
from kael.codegen.lowering import ExprEmitter, declare, mangle, memory_type, scalar_type
from kael.codegen.ptx import compiler
from kael.codegen.ptx.kernel import DATA_LAYOUT, TRIPLE
from kael.codegen.ptx.reduce import MAX_BLOCKS
from kael.codegen.ptx.rowgroup import VECTOR_BYTES, Group, Row, Shape, Values
from kael.codegen.ptx.warp import THREADS, WARP, launch_bounds
from kael.runtime import cuda_driver, kernel_cache
from kael.runtime.dtypes import DType, bfloat16, float16, float32, float64

F64 = ir.DoubleType()
I32 = ir.IntType(32)
I64 = ir.IntType(64)
INF = float("inf")
# `zero` is always 0: a value no compiler can see through (see _Math.fresh)
ARGS = ("x", "out", "weight", "bias", "rows", "cols", "stride", "eps", "zero")
OPS = ("softmax", "log_softmax", "layer_norm", "rms_norm")
DTYPES = (float32, float64, float16, bfloat16)
AFFINE = ("none", "weight", "bias", "both")  # which of weight and bias the kernel applies
MAX_CACHED = 16  # vectors a thread holds in registers, at most
WARP_CACHED = 8  # and in a warp's row: longer rows take a CTA's threads
# Row bytes a thread holds, in the compute type: 32 registers, or 64 in a CTA's row (rows
# of 8K to 16K floats: read once, where streaming them would read them thrice)
REGISTER_BYTES, CTA_REGISTER_BYTES = 128, 256
# ptxas keeps each thread within the registers that let this many CTAs share an SM (rows
# in flight to cover the memory's latency), or 2 where a thread holds CTA_REGISTER_BYTES
MIN_CTAS_PER_SM = 3


@dataclass(frozen=True)
class RowKernel:
    """One compiled variant: the op, the element type, the affine terms applied and how a
    row lies over the threads."""

    op: str
    dtype: DType
    affine: str
    shape: Shape

    @property
    def symbol(self) -> str:
        return f"kael_rows_ptx_{self.op}_{self.affine}_{self.dtype.name}_{self.shape.text}"


def shape_for(dtype: DType, cols: int, vectorized: bool) -> Shape:
    """The layout of rows of `cols` elements: a warp while its threads' registers hold the
    row, else a CTA, else a CTA streaming the row. `vectorized`: 16-byte vectors (every
    pointer, the stride and cols allow them)."""
    width = VECTOR_BYTES // dtype.itemsize if vectorized else 1
    vectors = -(-cols // width)
    vector_bytes = width * dtype.compute.itemsize
    limits = (
        (WARP, min(WARP_CACHED, REGISTER_BYTES // vector_bytes)),
        (THREADS, min(MAX_CACHED, CTA_REGISTER_BYTES // vector_bytes)),
    )
    for group, limit in limits:
        k = -(-vectors // group)  # exactly: rowgroup.Row masks the last slot alone
        if k <= limit:
            return Shape(group, k, width)
    return Shape(THREADS, 0, width)


def ctas_per_sm(spec: RowKernel) -> int:
    """The CTAs an SM should hold at once (ptxas caps the registers to let them)."""
    held = spec.shape.cached * spec.shape.width * spec.dtype.compute.itemsize
    return MIN_CTAS_PER_SM if held <= REGISTER_BYTES else 2


# ---- the ops' row math ---------------------------------------------------------------------


class _Math:
    """One row's arithmetic helpers: the compute type, float64 widening, kael's math."""

    def __init__(self, b: ir.IRBuilder, dtype: DType, zero: ir.Value):
        self.b, self.dtype = b, dtype.compute
        self.t = scalar_type(dtype)
        self.emitter = ExprEmitter(b, 1, _no_expr, _no_expr, _no_expr)
        self.zero = b.trunc(zero, I32)

    def fresh(self, v: ir.Value) -> ir.Value:
        """The float32 v again, as a value no compiler can prove equal to v (its bits or'ed
        with the `zero` word): a pass converting it to float64 again converts anew, where
        LLVM and ptxas would keep the first pass's conversions of the row alive in twice
        its registers."""
        if v.type == F64:
            return v
        return self.b.bitcast(self.b.or_(self.b.bitcast(v, I32), self.zero), v.type)

    def c(self, value: float, t: ir.Type | None = None) -> ir.Constant:
        return ir.Constant(t or self.t, value)

    def wide(self, v: ir.Value) -> ir.Value:
        return v if v.type == F64 else self.b.fpext(v, F64)

    def narrow(self, v: ir.Value) -> ir.Value:
        """A float64 as the compute type."""
        return v if self.t == F64 else self.b.fptrunc(v, self.t)

    def fn(self, name: str, v: ir.Value) -> ir.Value:
        """exp or log (kael's own math, never llvm.exp) in v's precision."""
        return UNARY_EMITTERS[name](self.emitter, v, float64 if v.type == F64 else self.dtype)

    def intrinsic(self, name: str, *args: ir.Value) -> ir.Value:
        return self.emitter.intrinsic(name, *args)


def _no_expr(*_):
    raise AssertionError("row kernels emit math on values only")


def _max_number(b: ir.IRBuilder, a: ir.Value, x: ir.Value) -> ir.Value:
    """The larger of a and x, a NaN losing (one max.f32). Enough for softmax's max: a NaN in
    the row makes the sum of exponentials NaN and so every output NaN, as the CPU's
    NaN-aware max does."""
    fnty = ir.FunctionType(a.type, [a.type, a.type])
    return b.call(declare(b.module, f"llvm.maxnum.{mangle(a.type)}", fnty), [a, x])


def _softmax(r: Row, m: _Math, x: Values, args: dict, log: bool) -> None:
    b = m.b
    top = r.total(x, m.c(-INF), _max_number)
    if log:
        total = r.total(x.map(lambda v: m.wide(m.fn("exp", b.fsub(v, top)))), m.c(0.0, F64), fadd)
        log_sum = m.narrow(m.fn("log", total))
        r.store(x.map(lambda v: b.fsub(b.fsub(v, top), log_sum)))
        return
    e = x.map(lambda v: m.fn("exp", b.fsub(v, top)))
    inv = m.narrow(b.fdiv(m.c(1.0, F64), r.total(e.map(m.wide), m.c(0.0, F64), fadd)))
    r.store(e.map(lambda v: b.fmul(v, inv)))


def _layer_norm(r: Row, m: _Math, x: Values, args: dict, affine: str) -> None:
    """codegen/cpu/rows.py's layer_norm: see its docstring for the algorithm."""
    b, wide64 = m.b, m.t == F64
    zero = m.c(0.0, F64)
    n = b.sitofp(args["cols"], F64)
    inv_n = b.fdiv(m.c(1.0, F64), n)
    eps = b.bitcast(args["eps"], F64)

    def value(inv, again=False):
        """The row in float64 (times inv); `again`: converted anew (_Math.fresh)."""
        v = x.map(m.fresh) if again else x
        return v.map(m.wide) if inv is None else v.map(lambda e: b.fmul(m.wide(e), inv))

    def moments(inv):
        total = r.total(value(inv), zero, fadd)
        mean = b.fmul(total, inv_n) if wide64 else b.fdiv(total, n)
        d = value(inv, again=True).map(lambda e: b.fsub(e, mean))
        if not wide64:
            sq = r.total(d.map(lambda e: b.fmul(e, e)), zero, fadd)
            return mean, zero, b.fmul(sq, inv_n), sq
        sq, dev = r.totals([(d.map(lambda e: b.fmul(e, e)), zero, fadd), (d, zero, fadd)])
        delta = b.fdiv(dev, n)
        var = b.fsub(b.fmul(sq, inv_n), b.fmul(delta, delta))
        return mean, delta, b.select(b.fcmp_ordered("<", var, zero), zero, var), sq

    def normalize(inv, mean, delta, rstd):
        if wide64:
            hi = b.fadd(mean, delta)
            err = two_sum_error(b, mean, delta, hi)
        else:
            hi = m.narrow(mean)
            err = b.fsub(mean, m.wide(hi))
        shift, scale = m.narrow(b.fneg(b.fmul(err, rstd))), m.narrow(rstd)
        v = x if inv is None else value(inv).map(m.narrow)
        y = v.map(lambda e: m.intrinsic("llvm.fma", b.fsub(e, hi), scale, shift))
        if affine in ("weight", "both"):
            y = y.zip(args["weight"], b.fmul)
        if affine in ("bias", "both"):
            y = y.zip(args["bias"], b.fadd)
        r.store(y)

    def rstd_of(var, eps_):
        return b.fdiv(m.c(1.0, F64), m.intrinsic("llvm.sqrt", b.fadd(var, eps_)))

    mean, delta, var, sq = moments(None)
    normalize(None, mean, delta, rstd_of(var, eps))
    if not wide64:  # float32 sums and squares cannot overflow float64
        return
    finite = b.fcmp_ordered("<", m.intrinsic("llvm.fabs", sq), m.c(INF, F64))
    with r.only_if(b.not_(finite)):  # the rare path: the row scaled by 1 / u, written again
        top = r.total(x.map(lambda v: m.intrinsic("llvm.fabs", v)), zero, nan_max)
        inv = inverse_unit(b, top)
        mean, delta, var, _ = moments(inv)
        eps_u = b.fmul(b.fmul(eps, inv), inv)
        tiny = m.c(MIN_SUBNORMAL, F64)
        floor = b.select(b.fcmp_ordered("<", eps_u, tiny), tiny, eps_u)
        eps_u = b.select(b.fcmp_ordered(">", eps, zero), floor, eps_u)
        normalize(inv, mean, delta, rstd_of(var, eps_u))


def _rms_norm(r: Row, m: _Math, x: Values, args: dict, affine: str) -> None:
    """frontend/layers.py's rms_norm composition: mean(x * x) (a float64 sum, divided in
    float64, rounded) + eps, 1 / sqrt, x * that [* weight], in the compute type."""
    b = m.b
    n = b.sitofp(args["cols"], F64)
    total = r.total(x.map(lambda v: m.wide(b.fmul(v, v))), m.c(0.0, F64), fadd)
    eps = b.bitcast(args["eps"], F64)
    mean = b.fadd(m.narrow(b.fdiv(total, n)), m.narrow(eps))
    scale = b.fdiv(m.c(1.0), m.intrinsic("llvm.sqrt", mean))
    y = x.map(lambda v: b.fmul(v, scale))
    if affine == "weight":
        y = y.zip(args["weight"], b.fmul)
    r.store(y)


_BODIES: dict[str, Callable] = {
    "softmax": lambda r, m, x, args, affine: _softmax(r, m, x, args, log=False),
    "log_softmax": lambda r, m, x, args, affine: _softmax(r, m, x, args, log=True),
    "layer_norm": _layer_norm,
    "rms_norm": _rms_norm,
}


# ---- the kernel --------------------------------------------------------------------------------


def build_module(spec: RowKernel) -> ir.Module:
    """The NVPTX module with the one `ptx_kernel` entry spec.symbol: a loop over the rows
    this thread's group takes, each row's op body inside."""
    module = ir.Module(name=spec.symbol)
    module.triple = TRIPLE
    module.data_layout = DATA_LAYOUT
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64] * len(ARGS)), spec.symbol)
    fn.calling_convention = "ptx_kernel"
    fn.attributes.add("nounwind")
    launch_bounds(fn, THREADS, ctas_per_sm(spec))
    words = dict(zip(ARGS, fn.args, strict=True))
    for name, arg in words.items():
        arg.name = name
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    group = Group(b, spec.shape)
    ptr_t = memory_type(spec.dtype).as_pointer()
    x, out, weight, bias = (b.inttoptr(words[n], ptr_t, name=n) for n in ARGS[:4])
    rows, cols, stride = words["rows"], words["cols"], words["stride"]
    math = _Math(b, spec.dtype, words["zero"])

    entry = b.block
    head, body, done = (fn.append_basic_block(n) for n in ("row.head", "row", "exit"))
    b.branch(head)
    b.position_at_end(head)
    row = b.phi(I64, name="row")
    row.add_incoming(group.first_row, entry)
    b.cbranch(b.icmp_signed("<", row, rows), body, done)
    b.position_at_end(body)
    r = Row(group, spec.dtype, cols, b.gep(out, [b.mul(row, cols)]))
    args = {**words, "weight": r.loaded(weight), "bias": r.loaded(bias)}
    x_row = r.loaded(b.gep(x, [b.mul(row, stride)]))
    _BODIES[spec.op](r, math, x_row, args, spec.affine)
    group.end_row()
    row.add_incoming(b.add(row, group.row_step), b.block)
    b.branch(head)
    b.position_at_end(done)
    b.ret_void()
    return module


_loaded = kernel_cache.Memo()


def ptx(spec: RowKernel) -> str:
    """The variant's PTX, running LLVM at most once per machine (disk cache)."""
    return compiler.stored_ptx(spec.symbol, lambda: build_module(spec))


def _function(spec: RowKernel):
    return _loaded.get(spec, lambda: cuda_driver.load_function(ptx(spec), spec.symbol))[1]


def run(
    op: str,
    dtype: DType,
    affine: str,
    pointers: tuple[int, int, int, int],
    rows: int,
    cols: int,
    stride: int,
    eps: int = 0,
) -> None:
    """`op` over `rows` rows of `cols` elements (rows `stride` elements apart) into the
    contiguous output, on the current stream. `pointers`: x, out, weight, bias (0 where
    absent); `eps`: the float64 bits of eps."""
    if rows <= 0 or cols <= 0:
        return
    x, out, weight, bias = pointers
    terms = [weight] * (affine in ("weight", "both")) + [bias] * (affine in ("bias", "both"))
    width = VECTOR_BYTES // dtype.itemsize
    vectorized = (
        all(address % VECTOR_BYTES == 0 for address in (x, out, *terms))
        and cols % width == 0
        and stride % width == 0
    )
    spec = RowKernel(op, dtype, affine, shape_for(dtype, cols, vectorized))
    blocks = max(1, min(MAX_BLOCKS, -(-rows // spec.shape.rows_per_cta)))
    moved = (2 * rows + len(terms)) * cols * dtype.itemsize
    cuda_driver.launch_kernel(
        _function(spec), blocks, THREADS, [x, out, weight, bias, rows, cols, stride, eps, 0],
        name=spec.symbol, moved=moved,
    )  # fmt: skip
