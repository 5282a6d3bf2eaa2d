"""Philox4x32-10 (Salmon et al., SC'11; the Random123 library) emitted with llvmlite.

Lane-generic like arith.py: every value is a scalar or a vector of `width` lanes, so CPU
loops stay vectorized and the PTX backend lowers the same code. 32-bit words live in i32
lanes; a 32x32->64 product's high word comes from an i64 multiply of zero-extended words
and its low word from an i32 multiply (on the GPU: mul.hi.u32 and mul.lo.u32).

Stream layout of the IR ops. `philox(n, s)` and `philox_hi(n, s)` (int64 operands) are
the two halves of one Philox4x32-10 block: counter words (lo32(n), hi32(n), 0, 0), key
words (lo32(s), hi32(s)), output words x0..x3; `philox` is x0 | x1 << 32 and `philox_hi`
is x2 | x3 << 32. kael/frontend/random.py feeds n = offset + element index and s = seed,
so any element's value is a pure function of (seed, offset, index). `mulhi_u(a, b)` is
the high word of the unsigned 128-bit product a * b.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.lowering import I64, ExprEmitter, value_type_of_width
from kael.runtime.dtypes import DType

I32 = ir.IntType(32)
ROUNDS = 10
MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
WEYL = (0x9E3779B9, 0xBB67AE85)  # the key bumps: golden ratio and sqrt(3) - 1
_LOW32 = 0xFFFFFFFF


def _splat(t: ir.Type, value: int, width: int) -> ir.Constant:
    return (
        ir.Constant(t, value)
        if width == 1
        else ir.Constant(ir.VectorType(t, width), [value] * width)
    )


def _mulhilo(
    b: ir.IRBuilder, width: int, multiplier: int, x: ir.Value
) -> tuple[ir.Value, ir.Value]:
    """(high, low) 32-bit words of multiplier * x, x a 32-bit word."""
    wide = value_type_of_width(I64, width)
    product = b.mul(b.zext(x, wide), _splat(I64, multiplier, width))
    high = b.trunc(b.lshr(product, _splat(I64, 32, width)), value_type_of_width(I32, width))
    return high, b.mul(x, _splat(I32, multiplier, width))


def philox4x32(
    b: ir.IRBuilder, width: int, counter: tuple[ir.Value, ...], key: tuple[ir.Value, ...]
) -> tuple[ir.Value, ...]:
    """The four output words of Philox4x32-10 for four counter and two key words (i32 lanes)."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for r in range(ROUNDS):
        if r:
            k0 = b.add(k0, _splat(I32, WEYL[0], width))
            k1 = b.add(k1, _splat(I32, WEYL[1], width))
        hi0, lo0 = _mulhilo(b, width, MULTIPLIERS[0], c0)
        hi1, lo1 = _mulhilo(b, width, MULTIPLIERS[1], c2)
        c0, c1, c2, c3 = b.xor(b.xor(hi1, c1), k0), lo1, b.xor(b.xor(hi0, c3), k1), lo0
    return c0, c1, c2, c3


def split64(b: ir.IRBuilder, width: int, v: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(low, high) 32-bit words of a 64-bit value."""
    narrow = value_type_of_width(I32, width)
    return b.trunc(v, narrow), b.trunc(b.lshr(v, _splat(I64, 32, width)), narrow)


def join64(b: ir.IRBuilder, width: int, low: ir.Value, high: ir.Value) -> ir.Value:
    """low | high << 32 from two 32-bit words."""
    wide = value_type_of_width(I64, width)
    return b.or_(b.zext(low, wide), b.shl(b.zext(high, wide), _splat(I64, 32, width)))


def philox_block(
    b: ir.IRBuilder, width: int, counter: ir.Value, key: ir.Value
) -> tuple[ir.Value, ir.Value]:
    """(x0 | x1 << 32, x2 | x3 << 32): the block of a 64-bit counter and key (module doc)."""
    zero = _splat(I32, 0, width)
    x0, x1, x2, x3 = philox4x32(
        b, width, (*split64(b, width, counter), zero, zero), split64(b, width, key)
    )
    return join64(b, width, x0, x1), join64(b, width, x2, x3)


def mulhi_u64(b: ir.IRBuilder, width: int, x: ir.Value, y: ir.Value) -> ir.Value:
    """High 64 bits of the unsigned product x * y, from four 32x32->64 partial products."""
    shift, mask = _splat(I64, 32, width), _splat(I64, _LOW32, width)
    x0, x1 = b.and_(x, mask), b.lshr(x, shift)
    y0, y1 = b.and_(y, mask), b.lshr(y, shift)
    p00, p01, p10, p11 = b.mul(x0, y0), b.mul(x0, y1), b.mul(x1, y0), b.mul(x1, y1)
    middle = b.add(b.add(b.lshr(p00, shift), b.and_(p01, mask)), b.and_(p10, mask))
    high = b.add(b.add(p11, b.lshr(p01, shift)), b.lshr(p10, shift))
    return b.add(high, b.lshr(middle, shift))


def _block(m: ExprEmitter, counter: ir.Value, key: ir.Value) -> tuple[ir.Value, ir.Value]:
    """The block of (counter, key), emitted once per emitter even when both halves are used."""
    memo_key = ("philox", id(counter), id(key))
    hit = m.memo.get(memo_key)
    if hit is None:
        # The operands ride along so their ids stay theirs while the memo lives.
        hit = m.memo[memo_key] = (philox_block(m.b, m.width, counter, key), counter, key)
    return hit[0]


def _int64_only(op: str, dtype: DType) -> None:
    if dtype.is_floating_point or dtype.is_bool:
        raise AssertionError(f"{op} is built on int64 operands only, got {dtype}")


def _half(op: str, index: int):
    def emit(m: ExprEmitter, counter, key, dtype: DType):
        _int64_only(op, dtype)
        return _block(m, counter, key)[index]

    return emit


def _mulhi_u(m: ExprEmitter, x, y, dtype: DType):
    _int64_only("mulhi_u", dtype)
    return mulhi_u64(m.b, m.width, x, y)


BINARY = {"philox": _half("philox", 0), "philox_hi": _half("philox_hi", 1), "mulhi_u": _mulhi_u}
