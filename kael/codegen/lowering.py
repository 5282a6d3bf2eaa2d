"""Expressions to LLVM IR values, shared by the CPU and PTX backends.

One emitter handles scalars and vectors alike (`width` lanes), so the CPU's explicit
vector loops and the GPU's one-element-per-thread code lower the same way, with
chapter 02's conversion rules: bool is one byte holding 0 or 1, float to int64
truncates and saturates with NaN giving 0, integer arithmetic wraps.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

import kael.codegen
import kael.ir
from kael.ir.expr import Binary, Cast, Const, Expr, Fma, Index, Load, Param, Unary, Where
from kael.runtime import kernel_cache
from kael.runtime.dtypes import INT64_MAX, INT64_MIN, DType, float32, int32, int64
from kael.runtime.errors import TypeError

I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
# bfloat16 lives in memory as its 16 bits (llvmlite has no bfloat type).
_MEMORY_TYPES = {
    "float": ir.FloatType(),
    "double": ir.DoubleType(),
    "half": ir.HalfType(),
    "bfloat": I16,
    "i64": I64,
    "i32": I32,
    "i16": I16,
    "i8": I8,
}


def _llvm_type(name: str | None, dtype: DType) -> ir.Type:
    if name is None:  # complex: kernels see only its float view (frontend/complex.py)
        raise TypeError(f"this operation does not support {dtype} tensors")
    return _MEMORY_TYPES[name]


def scalar_type(dtype: DType) -> ir.Type:
    """The LLVM type a `dtype` value has in registers (float for float16 and bfloat16)."""
    return _llvm_type(dtype.compute.llvm, dtype)


def value_type(dtype: DType, width: int) -> ir.Type:
    """The LLVM type of one value: a scalar, or a vector of `width` lanes."""
    t = scalar_type(dtype)
    return t if width == 1 else ir.VectorType(t, width)


def memory_type(dtype: DType, width: int = 1) -> ir.Type:
    """The LLVM type of `width` `dtype` elements in memory: what pointers point to."""
    t = _llvm_type(dtype.llvm, dtype)
    return t if width == 1 else ir.VectorType(t, width)


def widen(b: ir.IRBuilder, v: ir.Value, dtype: DType) -> ir.Value:
    """A value loaded from memory in its register type: float16/bfloat16 become float32.
    A value already in registers (a reduction's accumulator) passes through."""
    element = v.type.element if isinstance(v.type, ir.VectorType) else v.type
    if not dtype.is_half or isinstance(element, ir.FloatType):
        return v
    if dtype.llvm == "half":
        return b.fpext(v, _like(v.type, ir.FloatType()))
    bits = b.shl(b.zext(v, _like(v.type, I32)), _splat_int(v.type, I32, 16))
    return b.bitcast(bits, _like(v.type, ir.FloatType()))


def narrow(b: ir.IRBuilder, v: ir.Value, dtype: DType) -> ir.Value:
    """A register value as `dtype` stores it: float32 rounds to float16/bfloat16, ties to
    even; a NaN becomes bfloat16's quiet NaN 0x7fc0, as PyTorch's c10::BFloat16 does."""
    if not dtype.is_half:
        return v
    if dtype.llvm == "half":
        return b.fptrunc(v, _like(v.type, ir.HalfType()))
    bits = b.bitcast(v, _like(v.type, I32))
    odd = b.and_(b.lshr(bits, _splat_int(v.type, I32, 16)), _splat_int(v.type, I32, 1))
    rounded = b.add(b.add(bits, _splat_int(v.type, I32, 0x7FFF)), odd)
    high = b.trunc(b.lshr(rounded, _splat_int(v.type, I32, 16)), _like(v.type, I16))
    nan = b.fcmp_unordered("uno", v, v)
    return b.select(nan, _splat_int(v.type, I16, 0x7FC0), high)


def _like(t: ir.Type, element: ir.Type) -> ir.Type:
    """`element`, or a vector of it with as many lanes as `t` has."""
    return ir.VectorType(element, t.count) if isinstance(t, ir.VectorType) else element


def _splat_int(t: ir.Type, element: ir.IntType, value: int) -> ir.Constant:
    c = ir.Constant(element, value)
    return (
        ir.Constant(ir.VectorType(element, t.count), [c] * t.count)
        if isinstance(t, ir.VectorType)
        else c
    )


# A hash of every code generator's source: part of each compiled kernel's cache key.
CODEGEN_SCHEMA = kernel_cache.source_fingerprint(kael.codegen, kael.ir)


def targets_gpu(module: ir.Module) -> bool:
    """Whether `module` is built for NVPTX: builders shared by both backends (reductions,
    arithmetic) pick the GPU's variant of a host-only construct by it."""
    return str(module.triple).startswith("nvptx")


def i64(v: int) -> ir.Constant:
    """The i64 constant `v`."""
    return ir.Constant(I64, v)


def splat(b: ir.IRBuilder, x: ir.Value, lanes: int) -> ir.Value:
    """Scalar x in every lane of a <lanes x type> vector."""
    vt = ir.VectorType(x.type, lanes)
    one = b.insert_element(ir.Constant(vt, ir.Undefined), x, ir.Constant(I64, 0))
    zeros = ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes)
    return b.shuffle_vector(one, ir.Constant(vt, ir.Undefined), zeros)


def smin(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """The smaller of two signed integers."""
    return b.select(b.icmp_signed("<", x, y), x, y)


def smax(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """The larger of two signed integers."""
    return b.select(b.icmp_signed(">", x, y), x, y)


def constant(dtype: DType, value, width: int) -> ir.Constant:
    """`value` as a `dtype` register constant; integers wrap into the dtype's width."""
    t = scalar_type(dtype)
    v = float(value) if dtype.is_floating_point else int(value)
    if not dtype.is_floating_point and dtype.itemsize < 8:
        v = dtype.wrap(v) if not dtype.is_bool else v
    c = ir.Constant(t, v)
    return c if width == 1 else ir.Constant(ir.VectorType(t, width), [c] * width)


class ExprEmitter:
    """Emits one expression tree at the builder's position, each shared subtree once."""

    def __init__(
        self,
        builder: ir.IRBuilder,
        width: int,
        load: Callable[[int], ir.Value],
        index: Callable[[int], ir.Value],
        param: Callable[[int], ir.Value],
        fault: Callable[[int, ir.Value], None] | None = None,
        scalef: bool = False,
    ):
        """`scalef`: the target has AVX-512's vscalef (host CPU code: compiler.has_avx512f)."""
        self.b = builder
        self.width = width
        self.scalef = scalef
        self.load = load
        self.index = index
        self.param = param
        self._fault = fault
        self.memo: dict[Expr, ir.Value] = {}

    def emit(self, e: Expr) -> ir.Value:
        v = self.memo.get(e)
        if v is None:
            v = self._emit(e)
            self.memo[e] = v
        return v

    def _emit(self, e: Expr) -> ir.Value:
        if isinstance(e, Load):
            v = widen(self.b, self.load(e.buffer), e.dtype)
            # Foreign memory (from_numpy) may hold bool bytes other than 0 and 1.
            return self.i1_to_bool(self.truth(v, e.dtype)) if e.dtype.is_bool else v
        if isinstance(e, Const):
            return constant(e.dtype, e.value, self.width)
        if isinstance(e, Param):
            return self.splat(self.param(e.slot))
        if isinstance(e, Index):
            return self.index(e.axis)
        if isinstance(e, Cast):
            return self.convert(self.emit(e.x), e.x.dtype, e.dtype)
        if isinstance(e, Unary):
            return UNARY_EMITTERS[e.op](self, self.emit(e.x), e.x.dtype.compute)
        if isinstance(e, Binary):
            return BINARY_EMITTERS[e.op](self, self.emit(e.a), self.emit(e.b), e.a.dtype.compute)
        if isinstance(e, Where):
            cond = self.truth(self.emit(e.cond), e.cond.dtype)
            return self.b.select(cond, self.emit(e.a), self.emit(e.b))
        if isinstance(e, Fma):
            return self.intrinsic("llvm.fma", *(self.emit(c) for c in (e.a, e.b, e.c)))
        raise NotImplementedError(f"no lowering for {type(e).__name__}")

    # --- helpers ---------------------------------------------------------------------------

    def const(self, dtype: DType, value) -> ir.Constant:
        return constant(dtype, value, self.width)

    def splat(self, v: ir.Value) -> ir.Value:
        """A scalar broadcast to every lane (itself when scalar)."""
        return v if self.width == 1 else splat(self.b, v, self.width)

    def i1_to_bool(self, v: ir.Value) -> ir.Value:
        return self.b.zext(v, value_type_of_width(I8, self.width))

    def truth(self, v: ir.Value, dtype: DType) -> ir.Value:
        """An i1 (vector) that is true where `v` is non-zero; NaN counts as non-zero."""
        if dtype.is_floating_point:
            return self.b.fcmp_unordered("!=", v, self.const(dtype, 0.0))
        return self.b.icmp_unsigned("!=", v, self.const(dtype, 0))

    def icmp(self, op: str, a: ir.Value, c: ir.Value, dtype: DType) -> ir.Value:
        """An integer comparison, signed or unsigned as `dtype` is (uint8 and bool are not)."""
        return (self.b.icmp_signed if dtype.signed else self.b.icmp_unsigned)(op, a, c)

    def convert(self, v: ir.Value, src: DType, dst: DType) -> ir.Value:
        """Chapter 02's convert_value, lane-wise, with PyTorch's rules for the other dtypes:
        anything reaches float16/bfloat16 through float32 (c10::Half and c10::BFloat16 are
        built from a float), and floats reach the narrow integers through int32 as x86's
        cvtt does (NaN and out-of-range give INT32_MIN), then wrap."""
        if src is dst:
            return v
        b, w = self.b, self.width
        if dst.is_half:
            wide = self.convert(v, src, float32) if src.compute is not float32 else v
            return widen(b, narrow(b, wide, dst), dst)
        if dst.is_bool:
            return self.i1_to_bool(self.truth(v, src))
        if src.is_floating_point and dst.is_floating_point:
            have, want = src.compute.itemsize, dst.itemsize
            if have == want:  # float16/bfloat16 to float32: already one in registers
                return v
            return (b.fpext if have < want else b.fptrunc)(v, value_type(dst, w))
        if dst.is_floating_point:
            to_float = b.sitofp if src.signed else b.uitofp
            return to_float(v, value_type(dst, w))
        if not src.is_floating_point:
            return self.resize(v, src, dst)
        if dst is int64:
            return self.saturating_to_int(v, src.compute, dst)
        return self.resize(self.to_int32(v, src.compute), int32, dst)

    def resize(self, v: ir.Value, src: DType, dst: DType) -> ir.Value:
        """An integer in another width: wider sign- or zero-extends as `src` is, narrower wraps."""
        grow, shrink = src.itemsize < dst.itemsize, src.itemsize > dst.itemsize
        if not (grow or shrink):
            return v
        if shrink:
            return self.b.trunc(v, value_type(dst, self.width))
        return (self.b.sext if src.signed else self.b.zext)(v, value_type(dst, self.width))

    def saturating_to_int(self, v: ir.Value, src: DType, dst: DType) -> ir.Value:
        """Truncate toward zero; <= -2**63 gives INT64_MIN, >= 2**63 INT64_MAX, NaN gives 0.

        The bounds are exact powers of two in both float types; INT64_MAX is not.
        """
        b = self.b
        raw = b.fptosi(v, value_type(dst, self.width))
        low = b.fcmp_ordered("<=", v, self.const(src, float(INT64_MIN)))
        high = b.fcmp_ordered(">=", v, self.const(src, -float(INT64_MIN)))
        nan = b.fcmp_unordered("uno", v, v)
        out = b.select(low, self.const(dst, INT64_MIN), raw)
        out = b.select(high, self.const(dst, INT64_MAX), out)
        return b.select(nan, self.const(dst, 0), out)

    def to_int32(self, v: ir.Value, src: DType) -> ir.Value:
        """x86's cvttss2si/cvttsd2si: truncate toward zero; NaN and values outside int32
        give INT32_MIN (what PyTorch's CPU kernels store for them)."""
        b = self.b
        raw = b.fptosi(v, value_type(int32, self.width))
        inside = b.and_(
            b.fcmp_ordered(">=", v, self.const(src, -(2.0**31))),
            b.fcmp_ordered("<", v, self.const(src, 2.0**31)),
        )
        return b.select(inside, raw, self.const(int32, int32.min))

    def fault(self, code: int, cond: ir.Value) -> None:
        """Report fault `code` (kael.ir.ops.FAULTS) where the i1 (vector) `cond` holds."""
        if self._fault is None:
            raise AssertionError("this backend gave the emitter no error word")
        self._fault(code, cond)

    def any_lane(self, cond: ir.Value) -> ir.Value:
        """An i1 that is true when any lane of the i1 (vector) `cond` holds."""
        if self.width == 1:
            return cond
        fnty = ir.FunctionType(I1, [cond.type])
        name = f"llvm.vector.reduce.or.{mangle(cond.type)}"
        return self.b.call(declare(self.b.module, name, fnty), [cond])

    def rarely(
        self, cond: ir.Value, values: list[ir.Value], slow: Callable[[], list[ir.Value]]
    ) -> list[ir.Value]:
        """`values` with the lanes where `cond` holds taken from `slow()` instead.

        slow() is emitted on a branch taken only when some lane needs it (math's far
        ranges), so the common path stays straight-line and vectorized; slow() may add
        blocks of its own, but must not emit() expressions (the memo would hand its
        values to code outside the branch).
        """
        b = self.b
        pre = b.block
        rare = b.append_basic_block("rare")
        join = b.append_basic_block("rare.join")
        b.cbranch(self.any_lane(cond), rare, join).set_weights([1, 1 << 20])
        b.position_at_end(rare)
        chosen = [b.select(cond, s, v) for s, v in zip(slow(), values)]
        end = b.block
        b.branch(join)
        b.position_at_end(join)
        out = []
        for v, c in zip(values, chosen):
            phi = b.phi(v.type)
            phi.add_incoming(v, pre)
            phi.add_incoming(c, end)
            out.append(phi)
        return out

    def intrinsic(self, name: str, v: ir.Value, *rest: ir.Value) -> ir.Value:
        """Call an overloaded LLVM intrinsic whose result has the first operand's type."""
        fnty = ir.FunctionType(v.type, [v.type] + [r.type for r in rest])
        return self.b.call(declare(self.b.module, f"{name}.{mangle(v.type)}", fnty), [v, *rest])


def mangle(t: ir.Type) -> str:
    """LLVM's overload suffix of a type: f32, f64, i64, v16f32 (llvmlite lacks it for vectors)."""
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{mangle(t.element)}"
    if isinstance(t, ir.FloatType):
        return "f32"
    if isinstance(t, ir.DoubleType):
        return "f64"
    if isinstance(t, ir.HalfType):
        return "f16"
    return f"i{t.width}"


def report_fault(
    b: ir.IRBuilder, error: ir.Value, code: int, cond: ir.Value, value: ir.Value | None = None
) -> None:
    """Store `code` (or the i64 `value`) in the int64 error word at `error` where the i1
    `cond` holds (rarely taken; monotonic, so racing threads store one code whole)."""
    with b.if_then(cond, likely=False):
        word = ir.Constant(I64, code) if value is None else value
        b.store_atomic(word, error, ordering="monotonic", align=8)


def declare(module: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    """The function `name` of `module`, declared on first use."""
    fn = module.globals.get(name)
    return fn if fn is not None else ir.Function(module, fnty, name)


def prefetch(b: ir.IRBuilder, ptr: ir.Value) -> None:
    """Ask for the cache line at `ptr` (a read) into L2, not L1: the lines come a chunk of
    rows ahead, and L1 holds the rows being worked on (var's second pass over its rows:
    0.85x the time with L2, 1.12x with L1 prefetches; sums and softmax alike). Never
    faults, so the address may run past the buffer."""
    i32 = ir.IntType(32)
    fnty = ir.FunctionType(ir.VoidType(), [I8.as_pointer(), i32, i32, i32])
    fn = declare(b.module, "llvm.prefetch.p0", fnty)
    b.call(
        fn,
        [
            b.bitcast(ptr, I8.as_pointer()),
            *(ir.Constant(i32, v) for v in (0, 1, 1)),  # read, locality 1 (L2), data
        ],
    )


def prefetch_steps(itemsize: int, width: int, steps: int, line: int = 64) -> list[int]:
    """Which of `steps` consecutive `width`-lane loads of `itemsize`-byte elements start a
    new cache line: one prefetch per line, not per load."""
    return [u for u in range(steps) if (u * width * itemsize) % line == 0]


def param_from_word(b: ir.IRBuilder, word: ir.Value, dtype: DType) -> ir.Value:
    """A run-time scalar from its 64-bit argument word (floats travel as float64 bits), in
    its register type: a float16 scalar stays a float32, as PyTorch's opmath keeps it."""
    if dtype.is_floating_point:
        v = b.bitcast(word, ir.DoubleType())
        return v if dtype.itemsize == 8 else b.fptrunc(v, ir.FloatType())
    return word if dtype.itemsize == 8 else b.trunc(word, scalar_type(dtype))


def value_type_of_width(t: ir.Type, width: int) -> ir.Type:
    return t if width == 1 else ir.VectorType(t, width)


def decompose(b: ir.IRBuilder, linear: ir.Value, sizes: list[ir.Value]) -> list[ir.Value]:
    """The row-major multi-index of a linear element index over run-time `sizes`."""
    idx: list[ir.Value] = []
    rem = linear
    for size in reversed(sizes[1:]):
        idx.append(b.srem(rem, size))
        rem = b.sdiv(rem, size)
    return [rem, *reversed(idx)] if sizes else []


def element_offset(b: ir.IRBuilder, idx: list[ir.Value], strides: list[ir.Value]) -> ir.Value:
    """sum(idx[d] * strides[d]): a buffer's element offset at a multi-index."""
    total = ir.Constant(I64, 0)
    for i, s in zip(idx, strides):
        total = b.add(total, b.mul(i, s))
    return total


# The op tables live with their emitters; imported last, as they use the helpers above.
from kael.codegen.emitters import BINARY_EMITTERS, LONG_OPS, UNARY_EMITTERS  # noqa: E402, F401
