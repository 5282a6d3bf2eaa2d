"""Exact reduction of huge trigonometric arguments (Payne-Hanek), shared by CPU and PTX.

vmath's Cody-Waite step places x in its quadrant from x * (2/pi rounded), which is off by
one where x 2/pi lies within |x| 2**-54 of a half-integer; past HUGE that pushes r beyond
the polynomials' fitted range, and past 2**52 q itself is lost. For HUGE <= |x| < inf,
|x| = m 2**e (m the 53-bit significand) times the 192 bits of 2/pi that matter at that
exponent gives x 2/pi mod 4 in 128-bit fixed point (two quadrant bits, 126 fraction bits)
to within 2**-124: relative 2**-64 even at the float64 closest to a multiple of pi/2
(6381956970095103 * 2**797, r = 4.7e-19). The arithmetic is scalar i64/i128 (mul.hi on
both backends) on one 21-word table, a global constant on both backends; a vector takes it
lane by lane on a branch taken only when some lane is huge, so the common path stays
straight-line vector code.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.lowering import ExprEmitter

# |x| from which the exact reduction replaces Cody-Waite: there r exceeds pi/4 by at most
# 2**-13 relative, within the polynomials' fitted 1.001 with 8x to spare.
HUGE = 2.0**40
# pi/2 = PIO2[0] + PIO2[1] + PIO2[2] (float64 roundings of the mpmath remainders): with fma
# Cody-Waite's first step is exact while q < 2**52, and the three carry 159 bits.
PIO2 = (1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33)
# Bits 1..1280 of 2/pi after the binary point (floor(2**1280 * 2/pi) in hex, from mpmath).
TWO_OVER_PI_HEX = (
    "a2f9836e4e441529fc2757d1f534ddc0db6295993c439041fe5163abdebbc561b7246e3a424dd2e0"
    "06492eea09d1921cfe1deb1cb129a73ee88235f52ebb4484e99c7026b45f7e413991d639835339f4"
    "9c845f8bbdf9283b1ff897ffde05980fef2f118b5a0a6d1f6d367ecf27cb09b74f463f669e5fea2d"
    "7527bac7ebe5f17b3d0739f78a5292ea6bfb5fb11f8d5d0856033046fc7b6babf0cfbc209af4361d"
)
# The table: 64 zero bits (2/pi's integer bits, for windows starting at or above bit 1),
# then the bits above, 64 to a word. Table bit i is 2/pi's bit i - 63.
WORDS = (0, *(int(TWO_OVER_PI_HEX[i : i + 16], 16) for i in range(0, len(TWO_OVER_PI_HEX), 16)))
MAX_START = 1023 + 62 - 52  # the window's first table bit at the largest exponent
TABLE_NAME = "kael_two_over_pi"

I32, I64, I128, F64 = ir.IntType(32), ir.IntType(64), ir.IntType(128), ir.DoubleType()
ABS_MASK = (1 << 63) - 1
INF_BITS = 0x7FF0_0000_0000_0000
HUGE_BITS = 0x4270_0000_0000_0000  # the bits of HUGE
assert HUGE == 2.0 ** ((HUGE_BITS >> 52) - 1023)


def exact_for_huge(
    m: ExprEmitter, x: ir.Value, q: ir.Value, r: ir.Value
) -> tuple[ir.Value, ir.Value]:
    """(q, r) of float64 x = q pi/2 + r, lanes with HUGE <= |x| < inf replaced exactly.

    q is an i64 (vector) whose two low bits are the quadrant, r the remainder.
    """
    b = m.b
    magnitude = b.and_(b.bitcast(x, q.type), _splat(q.type, ABS_MASK))
    offset = b.sub(magnitude, _splat(q.type, HUGE_BITS))
    huge = b.icmp_unsigned("<", offset, _splat(q.type, INF_BITS - HUGE_BITS))
    q, r = m.rarely(huge, [q, r], lambda: _exact(m, x))
    return q, r


def _splat(t: ir.Type, value: int) -> ir.Constant:
    if isinstance(t, ir.VectorType):
        return ir.Constant(t, [ir.Constant(t.element, value)] * t.count)
    return ir.Constant(t, value)


def _exact(m: ExprEmitter, x: ir.Value) -> list[ir.Value]:
    """[q, r] of every lane of x: inline for a scalar, else one call of the module's lane loop.

    A kernel reduces in several places (unrolled vector bodies, remainders); one shared
    loop keeps its compile time and code size near those of the fast path alone.
    """
    if m.width == 1:
        return list(_payne_hanek(m, x))
    b = m.b
    pair = b.call(_lane_loop(b.module, m.width), [x])
    return [b.extract_value(pair, 0), b.extract_value(pair, 1)]


def _lane_loop(module: ir.Module, width: int) -> ir.Function:
    """The module's internal function reducing each lane of a <width x double> in turn."""
    name = f"kael_trig_reduce_v{width}"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    vd, vq = ir.VectorType(F64, width), ir.VectorType(I64, width)
    fn = ir.Function(module, ir.FunctionType(ir.LiteralStructType([vq, vd]), [vd]), name)
    fn.linkage = "internal"
    for attr in ("noinline", "cold", "nounwind"):
        fn.attributes.add(attr)
    x = fn.args[0]
    entry = fn.append_basic_block("entry")
    loop = fn.append_basic_block("lane")
    done = fn.append_basic_block("done")
    b = ir.IRBuilder(entry)
    b.branch(loop)
    b.position_at_end(loop)
    lane, qs, rs = b.phi(I32), b.phi(vq), b.phi(vd)
    lane.add_incoming(ir.Constant(I32, 0), entry)
    qs.add_incoming(ir.Constant(vq, ir.Undefined), entry)
    rs.add_incoming(ir.Constant(vd, ir.Undefined), entry)
    scalar = ExprEmitter(b, 1, None, None, None)
    q1, r1 = _payne_hanek(scalar, b.extract_element(x, lane))
    next_q, next_r = b.insert_element(qs, q1, lane), b.insert_element(rs, r1, lane)
    following = b.add(lane, ir.Constant(I32, 1))
    for phi, value in ((lane, following), (qs, next_q), (rs, next_r)):
        phi.add_incoming(value, loop)
    b.cbranch(b.icmp_unsigned("<", following, ir.Constant(I32, width)), loop, done)
    b.position_at_end(done)
    pair = ir.Constant(ir.LiteralStructType([vq, vd]), ir.Undefined)
    b.ret(b.insert_value(b.insert_value(pair, next_q, 0), next_r, 1))
    return fn


def _table(module: ir.Module) -> ir.GlobalVariable:
    """The module's constant table of 2/pi's bits (addrspace 0: NVPTX puts it in .global)."""
    table = module.globals.get(TABLE_NAME)
    if table is None:
        t = ir.ArrayType(I64, len(WORDS))
        table = ir.GlobalVariable(module, t, TABLE_NAME)
        table.global_constant = True
        table.linkage = "internal"
        table.align = 8
        table.initializer = ir.Constant(t, [ir.Constant(I64, w) for w in WORDS])
    return table


def _i(t: ir.Type, v: int) -> ir.Constant:
    return ir.Constant(t, v)


def _window(b: ir.IRBuilder, exponent: ir.Value) -> list[ir.Value]:
    """The 192 bits of 2/pi from bit e - 1 on, as three i64 words (most significant first).

    Bits above e - 1 contribute multiples of 4 to x 2/pi; `exponent` is x's biased one,
    e = exponent - 1075. Lanes outside the huge range read a clamped window, never past
    the table.
    """
    start = b.sub(exponent, _i(I64, 1075 - 62))
    start = b.select(b.icmp_signed("<", start, _i(I64, 0)), _i(I64, 0), start)
    start = b.select(b.icmp_signed(">", start, _i(I64, MAX_START)), _i(I64, MAX_START), start)
    table = _table(b.module)
    first = b.lshr(start, _i(I64, 6))
    shift = b.zext(b.and_(start, _i(I64, 63)), I128)
    words = [
        b.zext(b.load(b.gep(table, [_i(I64, 0), b.add(first, _i(I64, k))], inbounds=True)), I128)
        for k in range(4)
    ]
    out = []
    for k in range(3):
        pair = b.or_(b.shl(words[k], _i(I128, 64)), words[k + 1])
        out.append(b.trunc(b.lshr(b.shl(pair, shift), _i(I128, 64)), I64))
    return out


def _payne_hanek(m: ExprEmitter, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(q, r) of one float64 x = q pi/2 + r for HUGE <= |x| < inf (any value reads safely)."""
    b = m.b
    bits = b.bitcast(x, I64)
    magnitude = b.and_(bits, _i(I64, ABS_MASK))
    significand = b.or_(b.and_(magnitude, _i(I64, (1 << 52) - 1)), _i(I64, 1 << 52))
    sig = b.zext(significand, I128)
    g0, g1, g2 = (b.mul(sig, b.zext(g, I128)) for g in _window(b, b.lshr(magnitude, _i(I64, 52))))
    # Bits 64..191 of m * window: |x| 2/pi * 2**126 mod 2**128 (the low product's low half
    # and the high product's high half fall outside).
    t = b.add(b.add(g1, b.lshr(g2, _i(I128, 64))), b.shl(g0, _i(I128, 64)))
    quadrant = b.lshr(b.add(t, _i(I128, 1 << 125)), _i(I128, 126))
    frac = b.sub(t, b.shl(quadrant, _i(I128, 126)))  # signed, in [-2**125, 2**125)
    negative = b.icmp_signed("<", frac, _i(I128, 0))
    frac = b.select(negative, b.neg(frac), frac)
    f_hi, f_lo = _fixed_to_double_double(b, frac)
    r = _times_pio2(m, f_hi, f_lo)
    x_negative = b.icmp_signed("<", bits, _i(I64, 0))
    r = b.select(b.xor(negative, x_negative), b.fneg(r), r)
    q = b.trunc(quadrant, I64)
    return b.select(x_negative, b.neg(q), q), r


def _fixed_to_double_double(b: ir.IRBuilder, frac: ir.Value) -> tuple[ir.Value, ir.Value]:
    """frac 2**-126 (0 <= frac <= 2**125) as hi + lo, from three exact 43-bit pieces.

    A reduced |f| >= 2**-62 (always, for float64 x) keeps hi's leading piece wide, so the
    pair carries at least 2**-100 relative.
    """
    mask = _i(I128, (1 << 43) - 1)
    pieces = []
    for shift, scale in ((86, 2.0**-40), (43, 2.0**-83), (0, 2.0**-126)):
        piece = b.trunc(b.and_(b.lshr(frac, _i(I128, shift)), mask), I64)
        pieces.append(b.fmul(b.sitofp(piece, F64), ir.Constant(F64, scale)))
    top, mid, low = pieces
    hi = b.fadd(top, mid)  # Fast2Sum: top is 0 or above every bit of mid
    return hi, b.fadd(b.fsub(mid, b.fsub(hi, top)), low)


def _times_pio2(m: ExprEmitter, hi: ir.Value, lo: ir.Value) -> ir.Value:
    """(hi + lo) pi/2 rounded once: the product's head exactly, its tail in one sum."""
    b = m.b
    p0, p1 = (ir.Constant(F64, p) for p in PIO2[:2])
    head = b.fmul(hi, p0)
    head_err = m.intrinsic("llvm.fma", hi, p0, b.fneg(head))
    tail = m.intrinsic("llvm.fma", hi, p1, b.fmul(lo, p0))
    return b.fadd(head, b.fadd(head_err, tail))
