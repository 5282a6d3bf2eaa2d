"""Emitters of arithmetic, comparison, logic and rounding ops: name -> emitter(m, values..., dtype).

`dtype` is the operands' dtype; bool values are i8 holding 0 or 1. Integer arithmetic
wraps (two's complement, as LLVM's add/sub/mul do), integer division by zero reports a
fault instead of trapping, and float rules follow PyTorch (NaN propagation, signed zeros).
"""

from __future__ import annotations

import math

from llvmlite import ir

from kael.codegen.lowering import I1, ExprEmitter, declare, mangle, targets_gpu, value_type_of_width
from kael.ir.ops import FLAG
from kael.runtime.dtypes import DType

_FCMP = {"eq": "==", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_ICMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
FAULT_FLOORDIV_BY_ZERO, FAULT_REM_BY_ZERO, FAULT_FMOD_BY_ZERO, FAULT_DIV_BY_ZERO = 1, 2, 3, 4


def _compare(op: str):
    def emit(m: ExprEmitter, a, c, dtype: DType):
        if dtype.is_floating_point:
            # ne is the one unordered comparison: NaN != x is true.
            r = m.b.fcmp_unordered("!=", a, c) if op == "ne" else m.b.fcmp_ordered(_FCMP[op], a, c)
        else:
            r = m.icmp(_ICMP[op], a, c, dtype)
        return m.i1_to_bool(r)

    return emit


def _arith(float_op: str, int_op: str):
    def emit(m: ExprEmitter, a, c, dtype: DType):
        return getattr(m.b, float_op if dtype.is_floating_point else int_op)(a, c)

    return emit


def _extremum(greater: bool):
    """max/min that propagate NaN from either side (PyTorch's maximum/minimum)."""

    def emit(m: ExprEmitter, a, c, dtype: DType):
        b = m.b
        if dtype.is_floating_point:
            pick_a = b.fcmp_unordered(">" if greater else "<", a, c)  # true when a wins or a is NaN
            pick_a = b.or_(pick_a, b.fcmp_unordered("uno", a, a))
            c_nan = b.fcmp_unordered("uno", c, c)
            return b.select(b.and_(pick_a, b.not_(c_nan)), a, c)
        return b.select(m.icmp(">" if greater else "<", a, c, dtype), a, c)

    return emit


def _logical(op: str):
    def emit(m: ExprEmitter, a, c, dtype: DType):
        return m.i1_to_bool(getattr(m.b, op)(m.truth(a, dtype), m.truth(c, dtype)))

    return emit


def _neg(m: ExprEmitter, v, dtype: DType):
    return m.b.fneg(v) if dtype.is_floating_point else m.b.sub(m.const(dtype, 0), v)


def _abs(m: ExprEmitter, v, dtype: DType):
    if dtype.is_floating_point:
        return m.intrinsic("llvm.fabs", v)
    if not dtype.signed:  # uint8 and bool
        return v
    negative = m.b.icmp_signed("<", v, m.const(dtype, 0))
    return m.b.select(negative, m.b.sub(m.const(dtype, 0), v), v)


def _sign(m: ExprEmitter, v, dtype: DType):
    """(0 < x) - (x < 0) in x's dtype, as PyTorch computes it: NaN and -0.0 give +0.0."""
    if dtype.is_bool:
        return v
    b = m.b
    if not dtype.signed:  # uint8: 1 where non-zero
        return b.zext(b.icmp_unsigned("!=", v, m.const(dtype, 0)), v.type)
    if dtype.is_floating_point:
        pos, neg = (
            b.fcmp_ordered(">", v, m.const(dtype, 0.0)),
            b.fcmp_ordered("<", v, m.const(dtype, 0.0)),
        )
        return b.fsub(b.uitofp(pos, v.type), b.uitofp(neg, v.type))
    pos, neg = b.icmp_signed(">", v, m.const(dtype, 0)), b.icmp_signed("<", v, m.const(dtype, 0))
    return b.sub(b.zext(pos, v.type), b.zext(neg, v.type))


def _relu(m: ExprEmitter, v, dtype: DType):
    """0 where x < 0, else x: NaN and -0.0 pass through, as in PyTorch."""
    if not dtype.signed:
        return v
    zero = m.const(dtype, 0.0 if dtype.is_floating_point else 0)
    below = (
        m.b.fcmp_ordered("<", v, zero) if dtype.is_floating_point else m.b.icmp_signed("<", v, zero)
    )
    return m.b.select(below, zero, v)


def _rounding(intrinsic: str):
    def emit(m: ExprEmitter, v, dtype: DType):
        return m.intrinsic(intrinsic, v) if dtype.is_floating_point else v

    return emit


def _square(m: ExprEmitter, v, dtype: DType):
    return m.b.fmul(v, v) if dtype.is_floating_point else m.b.mul(v, v)


def _not(m: ExprEmitter, v, dtype: DType):
    return m.i1_to_bool(m.b.not_(m.truth(v, dtype)))


def _float_class(test: str):
    """isnan / isinf / isfinite; integers and bools are always finite numbers."""

    def emit(m: ExprEmitter, v, dtype: DType):
        if not dtype.is_floating_point:
            answer = 1 if test == "isfinite" else 0
            return m.i1_to_bool(
                ir.Constant(value_type_of_width(I1, m.width), answer)
                if m.width == 1
                else ir.Constant(ir.VectorType(I1, m.width), [answer] * m.width)
            )
        b = m.b
        if test == "isnan":
            r = b.fcmp_unordered("uno", v, v)
        else:
            mag = m.intrinsic("llvm.fabs", v)
            inf = m.const(dtype, float("inf"))
            r = b.fcmp_ordered("==", mag, inf) if test == "isinf" else b.fcmp_ordered("<", mag, inf)
        return m.i1_to_bool(r)

    return emit


def _reciprocal(m: ExprEmitter, v, dtype: DType):
    return m.b.fdiv(m.const(dtype, 1.0), v)


def _sqrt(m: ExprEmitter, v, dtype: DType):
    return m.intrinsic("llvm.sqrt", v)


def _rsqrt(m: ExprEmitter, v, dtype: DType):
    return m.b.fdiv(m.const(dtype, 1.0), m.intrinsic("llvm.sqrt", v))


def _div(m: ExprEmitter, a, c, dtype: DType):
    return m.b.fdiv(a, c)


def _safe_divisor(m: ExprEmitter, a, c, dtype: DType, code: int):
    """Report a zero divisor, and replace 0 and -1 by 1 so sdiv/srem never trap."""
    b = m.b
    zero = b.icmp_signed("==", c, m.const(dtype, 0))
    m.fault(code, zero)
    minus_one = b.icmp_signed("==", c, m.const(dtype, -1))
    return b.select(b.or_(zero, minus_one), m.const(dtype, 1), c), minus_one


def _nonzero_divisor(m: ExprEmitter, c, dtype: DType, code: int):
    """An unsigned divisor with 0 reported and replaced by 1, so udiv/urem never trap."""
    zero = m.b.icmp_unsigned("==", c, m.const(dtype, 0))
    m.fault(code, zero)
    return m.b.select(zero, m.const(dtype, 1), c)


def _fmod_floor_fix(m: ExprEmitter, mod, c, dtype: DType):
    """Whether a truncated remainder needs moving to the divisor's sign (floor semantics)."""
    b = m.b
    zero = m.const(dtype, 0.0 if dtype.is_floating_point else 0)
    if dtype.is_floating_point:
        nonzero = b.fcmp_unordered("!=", mod, zero)
        differ = b.xor(b.fcmp_ordered("<", c, zero), b.fcmp_ordered("<", mod, zero))
    else:
        nonzero = b.icmp_signed("!=", mod, zero)
        differ = b.xor(b.icmp_signed("<", c, zero), b.icmp_signed("<", mod, zero))
    return b.and_(nonzero, differ)


def _fmod(m: ExprEmitter, a, c, dtype: DType):
    """C's fmod, exactly. LLVM lowers frem for the host to libm's fmod, but NVPTX expands it
    to a - trunc(a / c) * c, which is off for large quotients and gives fmod(inf, inf) = inf;
    the GPU gets the shift-and-subtract loop instead: c doubled up to |a|, then subtracted
    back down, each subtraction exact (Sterbenz)."""
    b = m.b
    if not targets_gpu(b.module):
        return b.frem(a, c)
    r0, d = m.intrinsic("llvm.fabs", a), m.intrinsic("llvm.fabs", c)
    inf = m.const(dtype, math.inf)
    nan_result = b.or_(
        b.or_(b.fcmp_unordered("uno", a, c), b.fcmp_ordered("==", r0, inf)),
        b.fcmp_ordered("==", d, m.const(dtype, 0.0)),
    )
    loop = b.and_(b.not_(nan_result), b.fcmp_ordered(">=", r0, d))
    loop = b.and_(loop, b.fcmp_ordered("<", d, inf))
    entry = b.block
    up, down_head, down, done = (
        b.append_basic_block(f"fmod.{n}") for n in ("up", "head", "down", "done")
    )
    b.cbranch(loop, up, done)
    b.position_at_end(up)  # t = d * 2^k, the largest not above r
    t = b.phi(a.type)
    t.add_incoming(d, entry)
    doubled = b.fadd(t, t)
    t.add_incoming(doubled, up)
    b.cbranch(b.fcmp_ordered("<=", doubled, r0), up, down_head)
    b.position_at_end(down_head)
    r, tt = b.phi(a.type), b.phi(a.type)
    r.add_incoming(r0, up)
    tt.add_incoming(t, up)
    b.cbranch(b.fcmp_ordered(">=", tt, d), down, done)
    b.position_at_end(down)
    r.add_incoming(b.select(b.fcmp_ordered(">=", r, tt), b.fsub(r, tt), r), down)
    tt.add_incoming(b.fmul(tt, m.const(dtype, 0.5)), down)
    b.branch(down_head)
    b.position_at_end(done)
    out = b.phi(a.type)
    out.add_incoming(r0, entry)  # |a| < |c|, c infinite, or a NaN case (picked below)
    out.add_incoming(r, down_head)
    result = m.intrinsic("llvm.copysign", out, a)
    return b.select(nan_result, m.const(dtype, math.nan), result)


def _floordiv(m: ExprEmitter, a, c, dtype: DType):
    """Python's //: integers round toward -inf (INT64_MIN // -1 wraps); floats as PyTorch."""
    b = m.b
    if dtype.is_bool:
        return b.and_(a, c)  # only 1 // 1 == 1 is defined; frontend rejects bool
    if not dtype.signed:
        return b.udiv(a, _nonzero_divisor(m, c, dtype, FAULT_FLOORDIV_BY_ZERO))
    if not dtype.is_floating_point:
        d, minus_one = _safe_divisor(m, a, c, dtype, FAULT_FLOORDIV_BY_ZERO)
        q = b.sdiv(a, d)
        fix = _fmod_floor_fix(m, b.srem(a, d), c, dtype)
        q = b.select(fix, b.sub(q, m.const(dtype, 1)), q)
        return b.select(minus_one, b.sub(m.const(dtype, 0), a), q)
    # PyTorch's div_floor_floating: fmod, exact quotient, floor fix-up, signed zeros.
    zero, one = m.const(dtype, 0.0), m.const(dtype, 1.0)
    mod = _fmod(m, a, c, dtype)
    div = b.fdiv(b.fsub(a, mod), c)
    div = b.select(_fmod_floor_fix(m, mod, c, dtype), b.fsub(div, one), div)
    floor = m.intrinsic("llvm.floor", div)
    bump = b.fcmp_ordered(">", b.fsub(div, floor), m.const(dtype, 0.5))
    floor = b.select(bump, b.fadd(floor, one), floor)
    signed_zero = m.intrinsic("llvm.copysign", zero, b.fdiv(a, c))
    result = b.select(b.fcmp_unordered("!=", div, zero), floor, signed_zero)
    return b.select(b.fcmp_ordered("==", c, zero), b.fdiv(a, c), result)


def _rem(m: ExprEmitter, a, c, dtype: DType):
    """Python's %: the remainder takes the divisor's sign."""
    b = m.b
    if dtype.is_bool:
        return m.const(dtype, 0)
    if dtype.is_floating_point:
        mod = _fmod(m, a, c, dtype)
        return b.select(_fmod_floor_fix(m, mod, c, dtype), b.fadd(mod, c), mod)
    if not dtype.signed:
        return b.urem(a, _nonzero_divisor(m, c, dtype, FAULT_REM_BY_ZERO))
    d, _ = _safe_divisor(m, a, c, dtype, FAULT_REM_BY_ZERO)
    mod = b.srem(a, d)
    return b.select(_fmod_floor_fix(m, mod, c, dtype), b.add(mod, c), mod)


def _c_fmod(m: ExprEmitter, a, c, dtype: DType):
    """C's fmod (torch.fmod): the remainder of the truncated quotient, the dividend's sign."""
    b = m.b
    if dtype.is_bool:
        return m.const(dtype, 0)
    if dtype.is_floating_point:
        return _fmod(m, a, c, dtype)
    if not dtype.signed:
        return b.urem(a, _nonzero_divisor(m, c, dtype, FAULT_FMOD_BY_ZERO))
    return b.srem(a, _safe_divisor(m, a, c, dtype, FAULT_FMOD_BY_ZERO)[0])


def _truncdiv(m: ExprEmitter, a, c, dtype: DType):
    """The quotient rounded toward zero (div's rounding_mode='trunc'): floats trunc(a / c),
    integers C's division (INT_MIN / -1 wraps)."""
    b = m.b
    if dtype.is_floating_point:
        return m.intrinsic("llvm.trunc", b.fdiv(a, c))
    if dtype.is_bool:
        return b.and_(a, c)
    if not dtype.signed:
        return b.udiv(a, _nonzero_divisor(m, c, dtype, FAULT_DIV_BY_ZERO))
    d, minus_one = _safe_divisor(m, a, c, dtype, FAULT_DIV_BY_ZERO)
    return b.select(minus_one, b.sub(m.const(dtype, 0), a), b.sdiv(a, d))


def _copysign(m: ExprEmitter, a, c, dtype: DType):
    return m.intrinsic("llvm.copysign", a, c)


def _shift(left: bool):
    """a << c or a >> c as PyTorch's CPU kernels: a shift by at least the width (or by a
    negative count, taken unsigned) gives 0, or for >> of a signed value its sign."""

    def emit(m: ExprEmitter, a, c, dtype: DType):
        b = m.b
        bits = 8 * dtype.itemsize
        too_far = b.icmp_unsigned(">=", c, m.const(dtype, bits))
        count = b.select(too_far, m.const(dtype, 0), c)
        if left:
            return b.select(too_far, m.const(dtype, 0), b.shl(a, count))
        if not dtype.signed:
            return b.select(too_far, m.const(dtype, 0), b.lshr(a, count))
        return b.ashr(a, b.select(too_far, m.const(dtype, bits - 1), count))

    return emit


def _int_pow(m: ExprEmitter, base, exp, dtype: DType):
    """Exponentiation by squaring with wrapping multiplies; negative exponents truncate 1/b^n.

    A loop that runs while any lane has exponent bits left: unrolling all 64 steps made
    LLVM's optimizer take minutes on the strided and tiled kernels.
    """
    b = m.b
    one, zero = m.const(dtype, 1), m.const(dtype, 0)
    negative = m.icmp("<", exp, zero, dtype)
    first = b.select(negative, zero, exp)  # a negative exponent skips the loop
    entry = b.block
    head, body, done = (b.append_basic_block(f"ipow.{n}") for n in ("head", "body", "done"))
    b.branch(head)
    b.position_at_end(head)
    result, square, e = b.phi(base.type), b.phi(base.type), b.phi(exp.type)
    result.add_incoming(one, entry)
    square.add_incoming(base, entry)
    e.add_incoming(first, entry)
    left = b.icmp_unsigned("!=", e, zero)
    if isinstance(left.type, ir.VectorType):
        fnty = ir.FunctionType(I1, [left.type])
        reduce_or = declare(b.module, f"llvm.vector.reduce.or.{mangle(left.type)}", fnty)
        left = b.call(reduce_or, [left])
    b.cbranch(left, body, done)
    b.position_at_end(body)
    odd = b.icmp_unsigned("!=", b.and_(e, one), zero)
    result.add_incoming(b.select(odd, b.mul(result, square), result), b.block)
    square.add_incoming(b.mul(square, square), b.block)
    e.add_incoming(b.lshr(e, one), b.block)
    b.branch(head)
    b.position_at_end(done)
    odd_exp = b.icmp_unsigned("!=", b.and_(exp, one), zero)
    minus_one_pow = b.select(odd_exp, m.const(dtype, -1), one)
    small = b.select(
        b.icmp_signed("==", base, one),
        one,
        b.select(b.icmp_signed("==", base, m.const(dtype, -1)), minus_one_pow, zero),
    )
    return b.select(negative, small, result)


def _bitwise(op: str):
    def emit(m: ExprEmitter, a, c, dtype: DType):
        return getattr(m.b, op)(a, c)

    return emit


def _bitnot(m: ExprEmitter, v, dtype: DType):
    # On bool bytes (0 or 1) a bitwise not is the logical one.
    return _not(m, v, dtype) if dtype.is_bool else m.b.not_(v)


def _flag(m: ExprEmitter, v, dtype: DType):
    """Report FLAG wherever v is true; the value passes through."""
    m.fault(FLAG, m.truth(v, dtype))
    return v


UNARY = {
    "neg": _neg,
    "abs": _abs,
    "sign": _sign,
    "relu": _relu,
    "floor": _rounding("llvm.floor"),
    "ceil": _rounding("llvm.ceil"),
    "round": _rounding("llvm.rint"),  # the default rounding mode: half to even
    "trunc": _rounding("llvm.trunc"),
    "square": _square,
    "not": _not,
    "isnan": _float_class("isnan"),
    "isinf": _float_class("isinf"),
    "isfinite": _float_class("isfinite"),
    "reciprocal": _reciprocal,
    "sqrt": _sqrt,
    "rsqrt": _rsqrt,
    "bitnot": _bitnot,
    "flag": _flag,
}

BINARY = {
    "add": _arith("fadd", "add"),
    "sub": _arith("fsub", "sub"),
    "mul": _arith("fmul", "mul"),
    "div": _div,
    "floordiv": _floordiv,
    "rem": _rem,
    "max": _extremum(True),
    "min": _extremum(False),
    "and": _logical("and_"),
    "or": _logical("or_"),
    "xor": _logical("xor"),
    "bitand": _bitwise("and_"),
    "bitor": _bitwise("or_"),
    "bitxor": _bitwise("xor"),
    **{op: _compare(op) for op in ("eq", "ne", "lt", "le", "gt", "ge")},
    "fmod": _c_fmod,
    "truncdiv": _truncdiv,
    "copysign": _copysign,
    "shl": _shift(True),
    "shr": _shift(False),
}

# pow is shared: integers here, floats in vmath.py.
INT_POW = _int_pow
