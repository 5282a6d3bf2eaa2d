"""What each PTX instruction does, for the threads of one step, as NumPy on their lanes.

One handler per opcode head (`add`, `setp`, `ld`, ...), found in HANDLERS; the opcode's
other parts (rounding, comparison, state space, type) are read by the handler. Integer
arithmetic wraps, shifts saturate as PTX's do, float arithmetic is IEEE round-to-nearest
(exact fma included: fma.py), float-to-int conversions saturate and send NaN to 0. The
`.approx` math (ex2, lg2, sin, cos, rsqrt, tanh) is computed in float64 and rounded: closer
than the hardware's, so tests of it compare with a tolerance. Warp-wide instructions (mma,
ldmatrix) need their whole warp; cp.async copies land in shared memory only when a
cp.async.wait of their own thread completes their group (AsyncCopies), the latest a GPU
may, so a kernel that reads a stage too early reads stale bytes here too.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kael.runtime.emulator.fma import fma
from kael.runtime.emulator.ptx import (
    NP,
    SIGNED,
    TYPE_BYTES,
    UNSIGNED,
    Addr,
    Instruction,
    Pair,
    Reg,
    SReg,
    Sym,
    Vec,
)

SPACES = ("global", "shared", "local", "param", "const")

HANDLERS: dict[str, Callable] = {}


# Modifiers the handlers below do not implement: refused, never run as something else.
_UNSUPPORTED = {
    "add": {"rz", "rm", "rp"}, "sub": {"rz", "rm", "rp"}, "mul": {"rz", "rm", "rp", "sat"},
    "fma": {"rz", "rm", "rp", "sat"}, "mad": {"rz", "rm", "rp", "sat", "cc"},
    "div": {"rz", "rm", "rp"}, "sqrt": {"rz", "rm", "rp"}, "rcp": {"rz", "rm", "rp"},
}  # fmt: skip


def execute(m, ins: Instruction, lanes) -> None:
    handler = HANDLERS.get(ins.parts[0])
    if handler is None:
        raise m.fault("CUDA_ERROR_ILLEGAL_INSTRUCTION", f"the emulator does not run {ins.opcode}")
    refused = _UNSUPPORTED.get(ins.parts[0], set()).intersection(ins.parts)
    if ins.parts[0] in ("add", "sub") and "sat" in ins.parts and not _is_float(_type(ins)):
        refused = {"sat"}
    if refused:
        raise m.fault(
            "CUDA_ERROR_NOT_SUPPORTED", f"{ins.opcode}: the emulator has no .{refused.pop()}"
        )
    with np.errstate(all="ignore"):
        handler(m, ins, lanes)


def handles(*names: str):
    def register(fn):
        for name in names:
            HANDLERS[name] = fn
        return fn

    return register


def _type(ins: Instruction) -> str:
    return ins.parts[-1]


def _is_float(t: str) -> bool:
    return t.startswith("f") or t == "bf16"


def _ftz(ins: Instruction, x):
    """Subnormal float32 values flushed to zero of their sign (the `.ftz` modifier)."""
    if "ftz" not in ins.parts or np.asarray(x).dtype != np.float32:
        return x
    tiny = np.abs(x) < np.finfo(np.float32).tiny
    return np.where(tiny, np.copysign(np.float32(0), x), x).astype(np.float32)


def _sources(m, ins: Instruction, lanes, t: str, count: int) -> list:
    return [_ftz(ins, m.read(op, t, lanes)) for op in ins.operands[1 : 1 + count]]


def _result(m, ins: Instruction, lanes, value) -> None:
    m.write(ins.operands[0], _ftz(ins, value), lanes)


# -- arithmetic ---------------------------------------------------------------------------
def _bitwise(fn: Callable):
    """and, or, xor on .pred and .bN operands: `fn` on their bits."""

    def handler(m, ins, lanes):
        t = _type(ins)
        _result(m, ins, lanes, np.asarray(fn(*_sources(m, ins, lanes, t, 2))).astype(NP[t]))

    return handler


def _carry_add(m, ins, lanes):
    """add.cc, addc, addc.cc, sub.cc, subc, subc.cc: 32- and 64-bit chains through CC.CF."""
    t = _type(ins)
    u = UNSIGNED[TYPE_BYTES[t]]
    a, b = (np.asarray(x).astype(u) for x in _sources(m, ins, lanes, t, 2))  # same bits
    cin = m.carry[lanes].astype(u) if ins.parts[0] in ("addc", "subc") else u(0)
    if ins.parts[0].startswith("add"):
        out = a + b + cin
        cout = (out < a) | ((out == a) & (cin == 1))
    else:
        out = a - b - cin
        cout = (a < b) | ((a == b) & (cin == 1))
    if "cc" in ins.parts:
        m.carry[lanes] = cout
    _result(m, ins, lanes, np.asarray(out).view(NP[t]) if np.asarray(out).ndim else out)


def _mul_hi(a, b, t: str):
    width = TYPE_BYTES[t]
    if width < 8:
        wide = SIGNED[2 * width] if t.startswith("s") else UNSIGNED[2 * width]
        return ((a.astype(wide) * b.astype(wide)) >> (8 * width)).astype(NP[t])
    ua, ub = np.asarray(a).view(np.uint64), np.asarray(b).view(np.uint64)
    low = np.uint64(0xFFFFFFFF)
    a0, a1, b0, b1 = ua & low, ua >> 32, ub & low, ub >> 32
    p0, p1, p2, p3 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    carry = ((p0 >> 32) + (p1 & low) + (p2 & low)) >> 32
    hi = p3 + (p1 >> 32) + (p2 >> 32) + carry
    if t.startswith("s"):
        hi = hi - np.where(np.asarray(a) < 0, ub, 0).astype(np.uint64)
        hi = hi - np.where(np.asarray(b) < 0, ua, 0).astype(np.uint64)
    return hi.view(NP[t])


def _wide(t: str):
    width = TYPE_BYTES[t]
    return SIGNED[2 * width] if t.startswith("s") else UNSIGNED[2 * width]


@handles("add", "sub", "addc", "subc")
def _add_sub(m, ins, lanes):
    if "cc" in ins.parts or ins.parts[0] in ("addc", "subc"):
        return _carry_add(m, ins, lanes)
    sign = 1 if ins.parts[0] == "add" else -1
    t = _type(ins)
    a, b = _sources(m, ins, lanes, t, 2)
    out = a + b if sign > 0 else a - b
    if "sat" in ins.parts and _is_float(t):
        out = np.where(np.isnan(out), 0, np.clip(out, 0, 1))
    _result(m, ins, lanes, np.asarray(out).astype(NP[t], copy=False))


@handles("mul")
def _mul(m, ins, lanes):
    t = _type(ins)
    a, b = _sources(m, ins, lanes, t, 2)
    if "wide" in ins.parts:
        out = np.asarray(a).astype(_wide(t)) * np.asarray(b).astype(_wide(t))
    elif "hi" in ins.parts:
        out = _mul_hi(np.asarray(a), np.asarray(b), t)
    else:
        out = np.asarray(a * b).astype(NP[t], copy=False)
    _result(m, ins, lanes, out)


@handles("mad", "fma")
def _mad(m, ins, lanes):
    t = _type(ins)
    a, b, c = _sources(m, ins, lanes, t, 3)
    if _is_float(t):
        out = fma(np.asarray(a), np.asarray(b), np.asarray(c))
    elif "wide" in ins.parts:
        wide = _wide(t)
        out = np.asarray(a).astype(wide) * np.asarray(b).astype(wide) + np.asarray(c).astype(wide)
    elif "hi" in ins.parts:
        out = _mul_hi(np.asarray(a), np.asarray(b), t) + c
    else:
        out = a * b + c
    _result(m, ins, lanes, np.asarray(out).astype(out.dtype if "wide" in ins.parts else NP[t]))


def _divide(a, b, t: str):
    u = UNSIGNED[TYPE_BYTES[t]]
    zero = b == 0
    if t.startswith("s"):
        ua, ub = np.abs(a).astype(NP[t]).view(u), np.abs(np.where(zero, 1, b)).astype(NP[t]).view(u)
        q = (ua // ub).view(NP[t])
        q = np.where((a < 0) != (b < 0), -q, q)
    else:
        q = a // np.where(zero, 1, b)
    return np.where(zero, NP[t](-1) if t.startswith("s") else np.iinfo(NP[t]).max, q).astype(NP[t])


@handles("div")
def _div(m, ins, lanes):
    t = _type(ins)
    a, b = (np.asarray(x) for x in _sources(m, ins, lanes, t, 2))
    _result(m, ins, lanes, (a / b).astype(NP[t]) if _is_float(t) else _divide(a, b, t))


@handles("rem")
def _rem(m, ins, lanes):
    t = _type(ins)
    a, b = (np.asarray(x) for x in _sources(m, ins, lanes, t, 2))
    q = _divide(a, b, t)
    _result(m, ins, lanes, np.where(b == 0, a, a - q * b).astype(NP[t]))


def _float_min_max(pick_max: bool, propagate: bool):
    def fn(a, b):
        out = np.fmax(a, b) if pick_max else np.fmin(a, b)
        zeros = (a == 0) & (b == 0)
        if np.any(zeros):  # -0.0 < +0.0
            sa, sb = np.signbit(a), np.signbit(b)
            neg = (sa & sb) if pick_max else (sa | sb)
            out = np.where(zeros, np.where(neg, -np.abs(out), np.abs(out)), out)
        if propagate:
            out = np.where(np.isnan(a) | np.isnan(b), np.nan, out)
        return out

    return fn


# Packed types: two 16-bit lanes in a 32-bit register (LLVM vectorizes min/max to them).
PACKED = {"u16x2": "u16", "s16x2": "s16"}


@handles("min", "max")
def _min_max(m, ins, lanes):
    t = _type(ins)
    if t in PACKED:
        _packed_min_max(m, ins, lanes, PACKED[t])
        return
    a, b = _sources(m, ins, lanes, t, 2)
    pick_max = ins.parts[0] == "max"
    if _is_float(t):
        out = _float_min_max(pick_max, "NaN" in ins.parts)(np.asarray(a), np.asarray(b))
    else:
        out = np.maximum(a, b) if pick_max else np.minimum(a, b)
    _result(m, ins, lanes, np.asarray(out).astype(NP[t]))


def _packed_min_max(m, ins, lanes, half: str) -> None:
    """min/max of each 16-bit half of two b32 operands, as `half` (u16 or s16)."""
    a, b = (np.asarray(v, np.uint32) for v in _sources(m, ins, lanes, "b32", 2))
    pick = np.maximum if ins.parts[0] == "max" else np.minimum
    out = np.zeros(np.broadcast(a, b).shape, np.uint32)
    for shift in (0, 16):
        x, y = (((v >> shift) & 0xFFFF).astype(np.uint16).view(NP[half]) for v in (a, b))
        out |= pick(x, y).view(np.uint16).astype(np.uint32) << shift
    _result(m, ins, lanes, out)


def _bits(values, t: str):
    return np.asarray(values).astype(NP[t], copy=False)


HANDLERS["and"] = _bitwise(np.bitwise_and)
HANDLERS["or"] = _bitwise(np.bitwise_or)
HANDLERS["xor"] = _bitwise(np.bitwise_xor)


@handles("shl", "shr")
def _shift(m, ins, lanes):
    t = _type(ins)
    a = np.asarray(m.read(ins.operands[1], t, lanes))
    amount = np.asarray(m.read(ins.operands[2], "u32", lanes)).astype(np.uint64)
    width = 8 * TYPE_BYTES[t]
    big = amount >= width
    amount = np.minimum(amount, width - 1).astype(a.dtype)
    if ins.parts[0] == "shl":
        out = np.where(big, 0, a << amount)
    elif t.startswith("s"):
        out = a >> np.where(big, width - 1, amount).astype(a.dtype)
    else:
        out = np.where(big, 0, a >> amount)
    _result(m, ins, lanes, np.asarray(out).astype(NP[t]))


@handles("bfe")
def _bit_field_extract(m, ins, lanes):
    """bfe.{u,s}{32,64} d, a, pos, len: len bits of a from bit pos, zero- or sign-extended
    (pos and len take their low 8 bits; bits past the msb read as the msb, or 0 unsigned)."""
    t = _type(ins)
    width = 8 * TYPE_BYTES[t]
    ones = np.uint64((1 << width) - 1)
    a = np.asarray(m.read(ins.operands[1], "u" + t[1:], lanes)).astype(np.uint64)
    pos, length = (
        np.asarray(m.read(op, "u32", lanes)).astype(np.uint64) & np.uint64(0xFF)
        for op in ins.operands[2:4]
    )
    inside = pos < width
    field = np.where(inside, a >> np.minimum(pos, width - 1), 0)
    if t.startswith("s"):  # the field's top bit, or the msb when the field runs past it
        top = np.minimum(pos + length - np.uint64(1), np.uint64(width - 1))
        sign = (a >> top) & np.uint64(1)
        sign = np.where(length == 0, 0, sign).astype(np.uint64)
    else:
        sign = np.zeros_like(a)
    keep = np.minimum(length, np.uint64(width))
    mask = np.where(
        keep >= 64, np.uint64(0xFFFFFFFFFFFFFFFF), (np.uint64(1) << keep) - np.uint64(1)
    )
    out = (field & mask) | np.where(sign == 1, ~mask & ones, 0)
    _result(m, ins, lanes, out.astype(np.uint64).astype(NP[t]))


@handles("bfi")
def _bit_field_insert(m, ins, lanes):
    """bfi.b{32,64} f, a, b, pos, len: b with its bits pos .. pos + len - 1 replaced by a's
    low bits (pos and len take their low 8 bits; bits past the msb are dropped)."""
    t = _type(ins)
    width = 8 * TYPE_BYTES[t]
    a, b = (np.asarray(m.read(op, t, lanes)).astype(np.uint64) for op in ins.operands[1:3])
    pos, length = (
        np.asarray(m.read(op, "u32", lanes)).astype(np.uint64) & np.uint64(0xFF)
        for op in ins.operands[3:5]
    )
    keep = np.minimum(length, np.uint64(width))
    field = np.where(
        keep >= 64, np.uint64(0xFFFFFFFFFFFFFFFF), (np.uint64(1) << keep) - np.uint64(1)
    )
    inside = pos < width
    shift = np.minimum(pos, np.uint64(width - 1))
    ones = np.uint64((1 << width) - 1)
    mask = np.where(inside, (field << shift) & ones, 0).astype(np.uint64)
    out = (b & ~mask & ones) | ((a << shift) & mask)
    _result(m, ins, lanes, out.astype(NP["u" + t[1:]]))


@handles("shf")
def _funnel(m, ins, lanes):
    """shf.{l,r}.{wrap,clamp}.b32 d, a, b, c: the 64-bit b:a shifted, 32 bits kept."""
    a, b = (np.asarray(m.read(op, "u32", lanes)).astype(np.uint64) for op in ins.operands[1:3])
    c = np.asarray(m.read(ins.operands[3], "u32", lanes)).astype(np.uint64)
    n = c & np.uint64(31) if "wrap" in ins.parts else np.minimum(c, np.uint64(32))
    joined = (b << np.uint64(32)) | a
    if ins.parts[1] == "l":
        out = ((joined << n) >> np.uint64(32)) & np.uint64(0xFFFFFFFF)
    else:
        out = (joined >> n) & np.uint64(0xFFFFFFFF)
    _result(m, ins, lanes, out.astype(np.uint32))


@handles("prmt")
def _permute(m, ins, lanes):
    """prmt.b32 d, a, b, c (the default mode): byte i of d is byte (c's nibble i & 7) of
    b:a, or that byte's sign spread over it where the nibble's 8 bit is set."""
    if len(ins.parts) > 2:
        raise m.fault("CUDA_ERROR_NOT_SUPPORTED", f"{ins.opcode}: only the default mode")
    a, b, c = (np.asarray(m.read(op, "u32", lanes)).astype(np.uint64) for op in ins.operands[1:4])
    pool = (b << np.uint64(32)) | a
    out = np.zeros(np.broadcast(a, b, c).shape, np.uint64)
    for i in range(4):
        nibble = (c >> np.uint64(4 * i)) & np.uint64(15)
        byte = (pool >> ((nibble & np.uint64(7)) * np.uint64(8))) & np.uint64(255)
        sign = np.where((byte & np.uint64(128)) != 0, np.uint64(255), np.uint64(0))
        byte = np.where((nibble & np.uint64(8)) != 0, sign, byte)
        out |= byte << np.uint64(8 * i)
    _result(m, ins, lanes, out.astype(np.uint32))


@handles("neg", "abs", "not", "cnot", "sqrt", "rsqrt", "rcp", "ex2", "lg2", "sin", "cos", "tanh")
def _unary(m, ins, lanes):
    t = _type(ins)
    (a,) = _sources(m, ins, lanes, t, 1)
    a = np.asarray(a)
    head = ins.parts[0]
    if head == "neg":
        out = -a if _is_float(t) or t.startswith("s") else (~a + np.asarray(1, a.dtype))
    elif head == "abs":
        out = np.abs(a)
    elif head == "not":
        out = ~a
    elif head == "cnot":
        out = (a == 0).astype(NP[t])
    elif head == "sqrt" and "approx" not in ins.parts:
        out = np.sqrt(a)
    elif head == "rcp" and "approx" not in ins.parts:
        out = np.asarray(1, a.dtype) / a
    else:
        wide = a.astype(np.float64)
        out = {
            "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "rcp": lambda x: 1 / x,
            "ex2": np.exp2, "lg2": np.log2, "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
        }[head](wide)  # fmt: skip
    _result(m, ins, lanes, np.asarray(out).astype(NP[t]))


@handles("copysign")
def _copysign(m, ins, lanes):
    t = _type(ins)
    a, b = _sources(m, ins, lanes, t, 2)
    _result(m, ins, lanes, np.copysign(b, a).astype(NP[t]))


@handles("popc", "clz", "brev")
def _bit_count(m, ins, lanes):
    t = _type(ins)
    a = np.asarray(m.read(ins.operands[1], t, lanes)).view(UNSIGNED[TYPE_BYTES[t]])
    width = 8 * TYPE_BYTES[t]
    if ins.parts[0] == "popc":
        out = np.bitwise_count(a).astype(np.uint32)
    elif ins.parts[0] == "clz":
        out = np.full(a.shape, width, np.uint32)
        for bit in range(width):
            hit = (a >> np.asarray(width - 1 - bit, a.dtype)) & np.asarray(1, a.dtype)
            out = np.where((out == width) & (hit == 1), bit, out).astype(np.uint32)
    else:
        out = np.zeros_like(a)
        for bit in range(width):
            one = (a >> np.asarray(bit, a.dtype)) & np.asarray(1, a.dtype)
            out |= one << np.asarray(width - 1 - bit, a.dtype)
    _result(m, ins, lanes, out)


# -- comparisons and selection ------------------------------------------------------------
_ORDERED = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
            "gt": np.greater, "ge": np.greater_equal}  # fmt: skip
_UNSIGNED_CMP = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}


def _compare(cmp: str, a, b, t: str):
    a, b = np.asarray(a), np.asarray(b)
    if _is_float(t):
        nan = np.isnan(a) | np.isnan(b)
        if cmp == "num":
            return ~nan
        if cmp == "nan":
            return nan
        if cmp.endswith("u"):
            return _ORDERED[cmp[:-1]](a, b) | nan
        return _ORDERED[cmp](a, b) & ~nan
    if cmp in _UNSIGNED_CMP:
        u = UNSIGNED[TYPE_BYTES[t]]
        return _ORDERED[_UNSIGNED_CMP[cmp]](a.astype(NP[t]).view(u), b.astype(NP[t]).view(u))
    return _ORDERED[cmp](a, b)


_BOOL_OPS = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


@handles("setp")
def _setp(m, ins, lanes):
    t = _type(ins)
    ops = ins.operands
    a, b = (_ftz(ins, m.read(op, t, lanes)) for op in ops[1:3])
    result = np.broadcast_to(_compare(ins.parts[1], a, b, t), (m.count(lanes),))
    second = ~result
    combine = next((p for p in ins.parts[2:] if p in _BOOL_OPS), None)
    if combine is not None:
        c = _predicate(m, ops[3], lanes)
        result, second = _BOOL_OPS[combine](result, c), _BOOL_OPS[combine](second, c)
    if isinstance(ops[0], Pair):
        m.write(ops[0].first, result, lanes)
        m.write(ops[0].second, second, lanes)
    else:
        m.write(ops[0], result, lanes)


def _predicate(m, op, lanes):
    if isinstance(op, Reg) and op.name.startswith("!"):
        return ~m.read(Reg(op.name[1:]), "pred", lanes)
    return m.read(op, "pred", lanes)


@handles("selp")
def _selp(m, ins, lanes):
    t = _type(ins)
    a, b = (m.read(op, t, lanes) for op in ins.operands[1:3])
    c = _predicate(m, ins.operands[3], lanes)
    _result(m, ins, lanes, np.where(c, a, b).astype(NP[t]))


@handles("testp")
def _testp(m, ins, lanes):
    t = _type(ins)
    a = np.asarray(m.read(ins.operands[1], t, lanes))
    tiny = np.finfo(NP[t]).tiny
    test = {
        "finite": np.isfinite(a), "infinite": np.isinf(a), "number": ~np.isnan(a),
        "notanumber": np.isnan(a), "normal": np.isfinite(a) & (np.abs(a) >= tiny),
        "subnormal": (np.abs(a) < tiny) & (a != 0),
    }[ins.parts[1]]  # fmt: skip
    m.write(ins.operands[0], np.broadcast_to(test, (m.count(lanes),)), lanes)


# -- conversions and moves -----------------------------------------------------------------
_INTEGER_ROUNDING = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}


def _float_to_int(x, mode: str, t: str):
    rounded = _INTEGER_ROUNDING.get(mode, np.trunc)(np.asarray(x, np.float64))
    info = np.iinfo(NP[t])
    big = rounded >= float(info.max)
    small = rounded <= float(info.min)
    safe = np.where(big | small | np.isnan(rounded), 0, rounded)
    out = safe.astype(NP[t])
    return np.where(big, info.max, np.where(small, info.min, out)).astype(NP[t])


def _narrow_float(x, mode: str, t: str):
    out = np.asarray(x).astype(NP[t])
    if mode in ("rz", "rm", "rp"):
        back = out.astype(np.float64)
        wide = np.asarray(x, np.float64)
        if mode == "rz":
            fix, toward = np.abs(back) > np.abs(wide), np.zeros_like(out)
        elif mode == "rm":
            fix, toward = back > wide, np.full_like(out, -np.inf)
        else:
            fix, toward = back < wide, np.full_like(out, np.inf)
        out = np.where(fix & np.isfinite(wide), np.nextafter(out, toward), out)
    return out.astype(NP[t])


def _half_bits(x: np.ndarray, kind: str) -> np.ndarray:
    """float32 values rounded to nearest even as .f16 or .bf16 bits (a quiet NaN stays one)."""
    if kind == "f16":
        return x.astype(np.float16).view(np.uint16).astype(np.uint32)
    bits = x.astype(np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) >> 16
    return np.where(np.isnan(x), np.uint32(0x7FC0), rounded).astype(np.uint32)


def _cvt_pair(m, ins, lanes) -> None:
    """cvt.rn.{f16x2,bf16x2}.f32 d, a, b: a rounded into d's upper half, b into its lower."""
    if ins.parts[1:-2] != ("rn",):
        raise m.fault("CUDA_ERROR_NOT_SUPPORTED", f"{ins.opcode}: only .rn packs two halves")
    kind = ins.parts[-2][:-2]
    a, b = (np.asarray(m.read(op, "f32", lanes)) for op in ins.operands[1:3])
    _result(m, ins, lanes, (_half_bits(a, kind) << 16) | _half_bits(b, kind))


@handles("cvt")
def _cvt(m, ins, lanes):
    dst, src = ins.parts[-2], ins.parts[-1]
    if dst in ("f16x2", "bf16x2"):
        _cvt_pair(m, ins, lanes)
        return
    mode = next((p for p in ins.parts[1:-2] if p.startswith("r")), "")
    x = np.asarray(_ftz(ins, m.read(ins.operands[1], src, lanes)))
    if _is_float(dst) and _is_float(src):
        if mode in _INTEGER_ROUNDING:
            out = _INTEGER_ROUNDING[mode](x).astype(NP[dst])
        elif TYPE_BYTES[dst] < TYPE_BYTES[src]:
            out = _narrow_float(x, mode, dst)
        else:
            out = x.astype(NP[dst])
    elif _is_float(src):
        out = _float_to_int(x, mode, dst)
    elif _is_float(dst):
        if mode not in ("", "rn"):
            raise m.fault("CUDA_ERROR_NOT_SUPPORTED", f"{ins.opcode}: only .rn integer conversions")
        out = x.astype(NP[dst])
    else:
        if "sat" in ins.parts:  # clamped in the source type, to bounds both types hold
            have, want = np.iinfo(x.dtype), np.iinfo(NP[dst])
            low, high = max(have.min, want.min), min(have.max, want.max)
            x = np.clip(x, x.dtype.type(low), x.dtype.type(high))
        out = x.astype(NP[dst])
    if "sat" in ins.parts and _is_float(dst):
        out = np.where(np.isnan(out), 0, np.clip(out, 0, 1)).astype(NP[dst])
    _result(m, ins, lanes, out)


@handles("cvta")
def _cvta(m, ins, lanes):
    """cvta.SPACE.u64 (a window's address to a generic one) and cvta.to.SPACE.u64 (back)."""
    space = ins.parts[2] if ins.parts[1] == "to" else ins.parts[1]
    a = np.asarray(m.read(ins.operands[1], "u64", lanes))
    if space in ("global", "const", "param"):
        out = a
    elif ins.parts[1] == "to":
        out = a - m.generic(space, np.zeros_like(a), lanes, 0)
    else:
        out = m.generic(space, a, lanes, 0)
    _result(m, ins, lanes, np.broadcast_to(out, (m.count(lanes),)).astype(np.uint64))


@handles("mov")
def _mov(m, ins, lanes):
    t = _type(ins)
    d, a = ins.operands
    if isinstance(d, Vec):  # a wide value split into its pieces, low first
        whole = np.asarray(m.read(a, t, lanes)).view(UNSIGNED[TYPE_BYTES[t]])
        piece = TYPE_BYTES[t] // len(d.items)
        for k, reg in enumerate(d.items):
            value = (whole >> np.asarray(8 * piece * k, whole.dtype)) & np.asarray(
                (1 << 8 * piece) - 1, whole.dtype
            )
            m.write(reg, value.astype(UNSIGNED[piece]), lanes)
    elif isinstance(a, Vec):
        piece = TYPE_BYTES[t] // len(a.items)
        wide = UNSIGNED[TYPE_BYTES[t]]
        out = np.zeros(m.count(lanes), wide)
        for k, reg in enumerate(a.items):
            value = np.asarray(m.read(reg, f"b{8 * piece}", lanes)).astype(wide)
            out |= value << np.asarray(8 * piece * k, wide)
        m.write(d, out.view(NP[t]), lanes)
    else:
        m.write(d, np.broadcast_to(np.asarray(m.read(a, t, lanes)), (m.count(lanes),)), lanes)


# -- memory --------------------------------------------------------------------------------
def _space(ins: Instruction) -> str:
    """The instruction's state space (`.shared::cta` is `.shared`: the CTA's own window)."""
    parts = ("shared" if p == "shared::cta" else p for p in ins.parts)
    return next((p for p in parts if p in SPACES), "generic")


def _vector(ins: Instruction) -> int:
    return next((int(p[1:]) for p in ins.parts if p in ("v2", "v4", "v8")), 1)


def _addresses(m, ins: Instruction, addr: Addr, lanes, space: str, size: int):
    """Each thread's generic address of `size` bytes at `addr` (a whole vector: aligned to
    all of it, as a GPU requires of .v2 and .v4 accesses)."""
    if isinstance(addr.base, Sym):
        base = np.uint64(m.address_of(addr.base.name))
    else:
        base = np.asarray(m.read(addr.base, "u64", lanes))
    at = base + np.uint64(addr.offset & 0xFFFFFFFFFFFFFFFF)
    misaligned = np.asarray(at % np.uint64(size)) != 0
    if np.any(misaligned):
        bad = int(np.broadcast_to(at, misaligned.shape)[misaligned][0])
        raise m.fault("CUDA_ERROR_MISALIGNED_ADDRESS", f"{size} bytes at {bad:#x}")
    return m.generic(space, at, lanes, size)


def _param(m, ins: Instruction, addr: Addr, t: str):
    data = m.params.get(addr.base.name) if isinstance(addr.base, Sym) else None
    width = TYPE_BYTES[t]
    if data is None or addr.offset + width > len(data):
        raise m.fault("CUDA_ERROR_ILLEGAL_ADDRESS", f"no parameter bytes at {addr}")
    return np.frombuffer(data, NP[t], 1, addr.offset)[0]


@handles("ld")
def _ld(m, ins, lanes):
    t = _type(ins)
    d, addr = ins.operands
    space = _space(ins)
    if space == "param":
        m.write(d, np.broadcast_to(_param(m, ins, addr, t), (m.count(lanes),)), lanes)
        return
    width = TYPE_BYTES[t]
    targets = d.items if isinstance(d, Vec) else (d,)
    at = _addresses(m, ins, addr, lanes, space, width * len(targets))
    for k, reg in enumerate(targets):
        m.write(reg, m.memory.load(at + np.uint64(k * width), NP[t], ins.opcode), lanes)


@handles("st")
def _st(m, ins, lanes):
    t = _type(ins)
    addr, value = ins.operands
    width = TYPE_BYTES[t]
    sources = value.items if isinstance(value, Vec) else (value,)
    at = _addresses(m, ins, addr, lanes, _space(ins), width * len(sources))
    for k, op in enumerate(sources):
        v = np.broadcast_to(np.asarray(m.read(op, t, lanes)).astype(NP[t]), (m.count(lanes),))
        m.memory.store(at + np.uint64(k * width), np.ascontiguousarray(v), ins.opcode)


_ATOMIC = {
    "add": lambda old, b, c: old + b, "min": lambda old, b, c: np.minimum(old, b),
    "max": lambda old, b, c: np.maximum(old, b), "and": lambda old, b, c: old & b,
    "or": lambda old, b, c: old | b, "xor": lambda old, b, c: old ^ b,
    "exch": lambda old, b, c: b, "cas": lambda old, b, c: np.where(old == b, c, old),
    "inc": lambda old, b, c: np.where(old >= b, 0, old + 1),
    "dec": lambda old, b, c: np.where((old == 0) | (old > b), b, old - 1),
}  # fmt: skip


@handles("atom", "red")
def _atomic(m, ins, lanes):
    """Each thread's read-modify-write in lane order: threads hitting one address see
    each other's results, as the hardware serializes them."""
    t = _type(ins)
    op = next(p for p in ins.parts[1:] if p in _ATOMIC)
    ops = ins.operands if ins.parts[0] == "atom" else (None, *ins.operands)
    addr = ops[1]
    count = m.count(lanes)
    at = _addresses(m, ins, addr, lanes, _space(ins), TYPE_BYTES[t])
    b = np.broadcast_to(np.asarray(m.read(ops[2], t, lanes)).astype(NP[t]), (count,))
    c = (
        np.broadcast_to(np.asarray(m.read(ops[3], t, lanes)).astype(NP[t]), (count,))
        if len(ops) > 3
        else b
    )
    old = np.empty(count, NP[t])
    if len(np.unique(at)) == count:
        old[:] = m.memory.load(at, NP[t], ins.opcode)
        m.memory.store(at, np.asarray(_ATOMIC[op](old, b, c)).astype(NP[t]), ins.opcode)
    else:
        for k in range(count):
            one = at[k : k + 1]
            old[k] = m.memory.load(one, NP[t], ins.opcode)[0]
            new = np.asarray(_ATOMIC[op](old[k : k + 1], b[k : k + 1], c[k : k + 1])).astype(NP[t])
            m.memory.store(one, new, ins.opcode)
    if ops[0] is not None:
        m.write(ops[0], old, lanes)


# -- warps, barriers, fences -----------------------------------------------------------------
@handles("shfl")
def _shfl(m, ins, lanes):
    """shfl.sync.MODE.b32 d[|p], a, b, c, membermask, with PTX's lane arithmetic."""
    mode = ins.parts[2]
    dest, a_op, b_op, c_op = ins.operands[:4]
    lane = np.asarray(m.read(SReg("%laneid"), "u32", lanes)).astype(np.int64)
    b = np.asarray(m.read(b_op, "u32", lanes)).astype(np.int64) & 31
    c = np.asarray(m.read(c_op, "u32", lanes)).astype(np.int64)
    segmask = (c >> 8) & 31
    min_lane = lane & segmask
    max_lane = min_lane | (c & 31 & ~segmask)
    if mode == "up":
        j = lane - b
        valid = j >= max_lane
    elif mode == "down":
        j = lane + b
        valid = j <= max_lane
    elif mode == "bfly":
        j = lane ^ b
        valid = j <= max_lane
    else:
        j = min_lane | (b & ~segmask)
        valid = j <= max_lane
    j = np.where(valid, j, lane)
    flat = np.arange(m.n)[lanes]
    source = flat - lane + j
    tid = np.asarray(m.read(SReg("%tid.x"), "u32", lanes)).astype(np.int64)
    if np.any(tid - lane + j >= m.block):
        raise m.fault(
            "CUDA_ERROR_LAUNCH_FAILED", "shfl.sync reads a lane past the CTA's last thread"
        )
    here = m.converged(lanes)
    if not here[source].all():
        raise m.fault("CUDA_ERROR_LAUNCH_FAILED", "shfl.sync reads a thread that did not reach it")
    values = m.read(a_op, "b32", slice(None))[source]
    first = dest.first if isinstance(dest, Pair) else dest
    m.write(first, values, lanes)
    if isinstance(dest, Pair):
        m.write(dest.second, valid, lanes)


_MMA_FORM = ("sync", "aligned", "m16n8k16", "row", "col", "f32")


def _whole_warps(m, lanes, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the warps here, each thread's warp's position among them, each thread's lane) for
    a warp-wide `.aligned` instruction, which every thread of each warp must run."""
    index = np.arange(m.n)[lanes]
    warps, slot = np.unique(m.warp[index], return_inverse=True)
    if np.any(np.bincount(slot) != 32):
        raise m.fault("CUDA_ERROR_LAUNCH_FAILED", f"{what} runs without its whole warp")
    lane = np.asarray(m.read(SReg("%laneid"), "u32", lanes)).astype(np.int64)
    return warps, slot, lane


def _halves(words: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """The (low, high) 16-bit elements of .f16x2/.bf16x2 registers, as float64."""
    parts = [(words & 0xFFFF).astype(np.uint16), (words >> 16).astype(np.uint16)]
    if kind == "f16":
        return tuple(p.view(np.float16).astype(np.float64) for p in parts)
    return tuple((p.astype(np.uint32) << 16).view(np.float32).astype(np.float64) for p in parts)


@handles("mma")
def _mma(m, ins, lanes):
    """mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32: each warp's
    D = A B + C with the PTX ISA's fragment layout (lane = 4 group + member: A's elements
    at rows group, group + 8 and columns 2 member (+1, +8, +9); B's at rows 2 member (+1,
    +8, +9) and column group; C's at rows group, group + 8 and columns 2 member (+1)).
    Products are exact and each element's sum is rounded once to float32."""
    kind = ins.parts[7]
    form = tuple(ins.parts[1:7]), tuple(ins.parts[8:])
    if form != (_MMA_FORM, (kind, "f32")) or kind not in ("f16", "bf16"):
        raise m.fault("CUDA_ERROR_NOT_SUPPORTED", f"the emulator does not run {ins.opcode}")
    warps, slot, lane = _whole_warps(m, lanes, "mma.sync")
    group, pair = lane >> 2, 2 * (lane & 3)
    d, a, bv, c = (op.items for op in ins.operands)
    a_m = np.zeros((len(warps), 16, 16))
    for k, (row, col) in enumerate(((0, 0), (8, 0), (0, 8), (8, 8))):
        low, high = _halves(np.asarray(m.read(a[k], "b32", lanes)).astype(np.uint32), kind)
        a_m[slot, group + row, pair + col] = low
        a_m[slot, group + row, pair + col + 1] = high
    b_m = np.zeros((len(warps), 16, 8))
    for k, row in enumerate((0, 8)):
        low, high = _halves(np.asarray(m.read(bv[k], "b32", lanes)).astype(np.uint32), kind)
        b_m[slot, pair + row, group] = low
        b_m[slot, pair + row + 1, group] = high
    c_m = np.zeros((len(warps), 16, 8))
    places = [(group + 8 * (k // 2), pair + k % 2) for k in range(4)]
    for k, (row, col) in enumerate(places):
        c_m[slot, row, col] = np.asarray(m.read(c[k], "f32", lanes)).astype(np.float64)
    out = (a_m @ b_m + c_m).astype(np.float32)
    for k, (row, col) in enumerate(places):
        m.write(d[k], out[slot, row, col], lanes)


_WGMMA_SYNC = (("fence",), ("commit_group",), ("wait_group",))
_SWIZZLE_128B = 1  # a descriptor's bits 62-63
_WGMMA_LINE = 128  # bytes per line of the 128-byte swizzle; 8 lines repeat its pattern


def _whole_warpgroups(m, lanes, what: str) -> tuple[np.ndarray, np.ndarray]:
    """(each thread's warpgroup's position among those here, its thread index 0..127 in
    the warpgroup) for a warpgroup-wide `.aligned` instruction: all 128 threads run it."""
    index = np.arange(m.n)[lanes]
    _, slot = np.unique(m.warpgroup[index], return_inverse=True)
    if np.any(np.bincount(slot) != 128):
        raise m.fault("CUDA_ERROR_LAUNCH_FAILED", f"{what} runs without its whole warpgroup")
    return slot, index % m.block % 128


def _uniform(m, values: np.ndarray, slot: np.ndarray, what: str) -> np.ndarray:
    """One value per warpgroup of a per-thread operand that must agree within each."""
    first = np.zeros(slot.max() + 1, values.dtype)
    first[slot] = values
    if np.any(first[slot] != values):
        raise m.fault("CUDA_ERROR_ILLEGAL_INSTRUCTION", f"{what} differs within a warpgroup")
    return first


def _descriptor_operand(m, desc: np.ndarray, slot_cta: np.ndarray, rows: int, mn_major: bool, kind):
    """The rows x 16 operand (rows of M or N, 16 of K) each warpgroup's matrix descriptor
    names, as float64, read from its CTA's shared memory. The one layout kael uses is
    supported: 128-byte swizzle, base offset 0 (PTX ISA, "Matrix Descriptor"; CUTLASS's
    canonical GMMA layouts). K-major: element (i, k) at start + (i / 8) SBO + (i % 8) 128
    + 2 k; MN-major: at start + (i / 64) LBO + 2 (i % 64) + (k / 8) SBO + (k % 8) 128. The
    swizzle XORs address bits 4-6 (the 16-byte chunk) with bits 7-9 (the line mod 8)."""
    desc = desc.astype(np.uint64)
    start = (desc & np.uint64(0x3FFF)) << np.uint64(4)
    lbo = ((desc >> np.uint64(16)) & np.uint64(0x3FFF)) << np.uint64(4)
    sbo = ((desc >> np.uint64(32)) & np.uint64(0x3FFF)) << np.uint64(4)
    if np.any(desc >> np.uint64(62) != _SWIZZLE_128B) or np.any(
        (desc >> np.uint64(49)) & np.uint64(7)
    ):
        raise m.fault(
            "CUDA_ERROR_NOT_SUPPORTED", "the emulator runs wgmma on 128-byte swizzled operands only"
        )
    i = np.arange(rows, dtype=np.uint64)[:, None]
    k = np.arange(16, dtype=np.uint64)[None, :]
    line = np.uint64(_WGMMA_LINE)
    if mn_major:
        offset = (i // np.uint64(64)) * lbo[:, None, None] + np.uint64(2) * (i % np.uint64(64))
        offset = offset + (k // np.uint64(8)) * sbo[:, None, None] + (k % np.uint64(8)) * line
    else:
        offset = (
            (i // np.uint64(8)) * sbo[:, None, None] + (i % np.uint64(8)) * line + np.uint64(2) * k
        )
    logical = start[:, None, None] + offset
    physical = logical ^ (((logical >> np.uint64(7)) & np.uint64(7)) << np.uint64(4))
    if np.any(physical + np.uint64(2) > np.uint64(m.shared_bytes)):
        raise m.fault("CUDA_ERROR_ILLEGAL_ADDRESS", f"wgmma operand past {m.shared_bytes} bytes")
    generic = m.shared_at(slot_cta[:, None, None], physical)
    bits = m.memory.load(generic.reshape(-1), np.uint16, "wgmma").reshape(generic.shape)
    if kind == "f16":
        return bits.view(np.float16).astype(np.float64)
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)


@handles("wgmma")
def _wgmma(m, ins, lanes):
    """wgmma.fence / commit_group / wait_group and wgmma.mma_async.sync.aligned.m64nNk16.
    f32.{f16,bf16}.{f16,bf16} {d}, a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b,
    imm-trans-a, imm-trans-b, both operands in shared memory: each warpgroup's D (64 x N)
    = A (64 x 16) B (16 x N) (+ D where scale-d). Warp w of the group holds rows 16 w + l /
    4 (+ 8) and columns 8 j + 2 (l % 4) (+ 1) in d[4 j .. 4 j + 3], as mma.m16n8 does for
    each n8 block. It runs when issued, reading shared memory and writing D then, the
    earliest a GPU may, so the fences and waits only check their warpgroup is whole."""
    parts = ins.parts
    if tuple(parts[1:2]) in _WGMMA_SYNC and tuple(parts[2:4]) == ("sync", "aligned"):
        _whole_warpgroups(m, lanes, ins.opcode)
        return
    kind = parts[6] if len(parts) == 8 else None
    shape = parts[4] if len(parts) > 4 else ""
    n = (
        int(shape[4:-3])
        if shape.startswith("m64n") and shape.endswith("k16") and shape[4:-3].isdigit()
        else 0
    )
    if (
        tuple(parts[1:4]) != ("mma_async", "sync", "aligned")
        or kind not in ("f16", "bf16")
        or parts[5] != "f32"
        or parts[7] != kind
        or n % 8
        or not 8 <= n <= 256
    ):
        raise m.fault("CUDA_ERROR_NOT_SUPPORTED", f"the emulator does not run {ins.opcode}")
    d, desc_a, desc_b, scale_d, scale_a, scale_b, trans_a, trans_b = ins.operands
    if len(d.items) != n // 2:
        raise m.fault("CUDA_ERROR_ILLEGAL_INSTRUCTION", f"{ins.opcode} needs {n // 2} registers")
    slot, t = _whole_warpgroups(m, lanes, ins.opcode)
    index = np.arange(m.n)[lanes]
    groups = slot.max() + 1
    cta = np.zeros(groups, np.int64)
    cta[slot] = m.cta[index]
    count = m.count(lanes)

    def per_group(op, type_: str, what: str) -> np.ndarray:
        values = np.broadcast_to(np.asarray(m.read(op, type_, lanes)), (count,))
        return _uniform(m, values, slot, what)

    a = _descriptor_operand(
        m, per_group(desc_a, "u64", "a-desc"), cta, 64, trans_a.value == 1, kind
    )
    b = _descriptor_operand(m, per_group(desc_b, "u64", "b-desc"), cta, n, trans_b.value == 1, kind)
    product = np.einsum("gik,gjk->gij", a, b) * float(scale_a.value) * float(scale_b.value)
    accumulate = np.broadcast_to(_predicate(m, scale_d, lanes), (count,))
    accumulate = _uniform(m, accumulate.astype(np.uint8), slot, "scale-d").astype(bool)
    warp, lane = t // 32, t % 32
    rows = [16 * warp + (lane >> 2) + 8 * (e // 2) for e in range(4)]
    cols = [2 * (lane & 3) + e % 2 for e in range(4)]
    for j in range(n // 8):
        for e in range(4):
            reg = d.items[4 * j + e]
            value = product[slot, rows[e], 8 * j + cols[e]]
            old = np.asarray(m.read(reg, "f32", lanes)).astype(np.float64)
            value = np.where(accumulate[slot], value + old, value)
            m.write(reg, value.astype(np.float32), lanes)


_LDMATRIX_COUNTS = {"x1": 1, "x2": 2, "x4": 4}


@handles("ldmatrix")
def _ldmatrix(m, ins, lanes):
    """ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared{::cta}.b16 {d..}, [a]: each warp
    loads 1, 2 or 4 matrices of 8 x 8 16-bit elements from shared memory. Lane 8 i + r gives
    the address of row r of matrix i (its 16 bytes, 16-byte aligned); the addresses of the
    lanes past the last matrix's (16 and up for .x2, 8 and up for .x1) are not read. Lane l
    receives in d's register i the elements at row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1
    of matrix i, the first in the low half; with .trans those of its transpose: rows 2 (l % 4)
    and 2 (l % 4) + 1 of column l / 4 (PTX ISA, "Warp-level matrix load instruction")."""
    parts = ins.parts
    count = _LDMATRIX_COUNTS.get(parts[4]) if len(parts) > 4 else None
    trans = "trans" in parts
    expected = ("ldmatrix", "sync", "aligned", "m8n8", parts[4] if count else "x?")
    expected += ("trans",) * trans
    if (
        count is None
        or parts[: len(expected)] != expected
        or parts[len(expected) :] not in (("shared", "b16"), ("shared::cta", "b16"))
    ):
        raise m.fault("CUDA_ERROR_NOT_SUPPORTED", f"the emulator does not run {ins.opcode}")
    dest, addr = ins.operands
    targets = dest.items if isinstance(dest, Vec) else (dest,)
    if len(targets) != count:
        raise m.fault("CUDA_ERROR_ILLEGAL_INSTRUCTION", f"{ins.opcode} needs {count} registers")
    warps, slot, lane = _whole_warps(m, lanes, "ldmatrix")
    index = np.arange(m.n)[lanes]
    gives = lane < 8 * count  # the lanes whose row addresses are read
    at = _addresses(m, ins, addr, index[gives], "shared", 16)
    rows = np.stack([m.memory.load(at + np.uint64(8 * h), np.uint64, ins.opcode) for h in (0, 1)])
    matrices = np.zeros((len(warps), count, 8, 8), np.uint16)
    matrices[slot[gives], lane[gives] >> 3, lane[gives] & 7] = rows.T.copy().view(np.uint16)
    first, second = lane >> 2, 2 * (lane & 3)  # (row, column) of the low element
    for i, reg in enumerate(targets):
        if trans:
            low, high = matrices[slot, i, second, first], matrices[slot, i, second + 1, first]
        else:
            low, high = matrices[slot, i, first, second], matrices[slot, i, first, second + 1]
        m.write(reg, low.astype(np.uint32) | (high.astype(np.uint32) << np.uint32(16)), lanes)


class AsyncCopies:
    """A chunk's cp.async copies not yet complete, in issue order: for each instruction run,
    its threads, the group each copy joins (its thread's count of commit_group before it),
    the shared (generic) addresses it writes and the bytes it read, as 4- or 8-byte words."""

    def __init__(self, n: int) -> None:
        self.committed = np.zeros(n, np.int64)
        self.pending: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def issue(self, threads: np.ndarray, dst: np.ndarray, words: np.ndarray) -> None:
        self.pending.append((threads, self.committed[threads].copy(), dst, words))

    def commit(self, threads: np.ndarray) -> None:
        self.committed[threads] += 1

    def wait(self, memory, threads: np.ndarray, newest: int, what: str) -> None:
        """Complete the copies of `threads` in all their committed groups but the `newest`."""
        limit = np.zeros(len(self.committed), np.int64)  # groups below it complete: none
        limit[threads] = self.committed[threads] - newest
        left = []
        for who, group, dst, words in self.pending:
            done = group < limit[who]
            if done.any():
                unit = words.dtype.itemsize
                for w in range(words.shape[1]):
                    memory.store(dst[done] + np.uint64(w * unit), words[done, w].copy(), what)
            if not done.all():
                keep = ~done
                left.append((who[keep], group[keep], dst[keep], words[keep]))
        self.pending = left


_CP_ASYNC_SIZES = {"ca": (4, 8, 16), "cg": (16,)}


@handles("cp")
def _cp_async(m, ins, lanes):
    """cp.async.{ca,cg}.shared{::cta}.global [dst], [src], cp-size{, src-size | ignore-src}
    (.L2::cache_hint: a last policy operand; .L2::64B/128B/256B prefetch hints: ignored),
    cp.async.commit_group, cp.async.wait_group N and cp.async.wait_all. A copy reads its
    cp-size bytes (4, 8 or 16; .cg: 16) from global memory when issued, only the first
    src-size of them (none under a true ignore-src predicate), the rest zeros; it writes
    shared memory when a wait of its own thread completes its group, the latest a GPU
    may: so a kernel reading its destination before waiting reads the old bytes, and
    another thread sees them only after that wait and a barrier. Both addresses are
    aligned to cp-size, as a GPU requires."""
    parts, threads = ins.parts, np.arange(m.n)[lanes]
    tail = parts[2:]
    if parts[1] != "async" or not tail:
        raise m.fault("CUDA_ERROR_NOT_SUPPORTED", f"the emulator does not run {ins.opcode}")
    if tail == ("commit_group",):
        m.copies.commit(threads)
        return
    if tail == ("wait_group",):
        m.copies.wait(m.memory, threads, int(ins.operands[0].value), ins.opcode)
        return
    if tail == ("wait_all",):
        m.copies.commit(threads)
        m.copies.wait(m.memory, threads, 0, ins.opcode)
        return
    hints = [p for p in tail[3:] if p.startswith("L2::")]
    if (
        tail[0] not in _CP_ASYNC_SIZES
        or tail[1] not in ("shared", "shared::cta")
        or tail[2] != "global"
        or len(tail) != 3 + len(hints)
        or any(h not in ("L2::cache_hint", "L2::64B", "L2::128B", "L2::256B") for h in hints)
    ):
        raise m.fault("CUDA_ERROR_NOT_SUPPORTED", f"the emulator does not run {ins.opcode}")
    ops = ins.operands[:-1] if "L2::cache_hint" in hints else ins.operands
    dst_op, src_op, size_op, *extra = ops
    size = int(size_op.value) if hasattr(size_op, "value") else 0
    if size not in _CP_ASYNC_SIZES[tail[0]] or len(extra) > 1:
        raise m.fault("CUDA_ERROR_ILLEGAL_INSTRUCTION", f"{ins.opcode}: bad operands")
    count = m.count(lanes)
    have = np.full(count, size, np.int64)  # the bytes read from the source
    if extra and isinstance(extra[0], Reg) and m.fn.reg_type(extra[0].name.lstrip("!")) == "pred":
        have = np.where(np.broadcast_to(_predicate(m, extra[0], lanes), (count,)), 0, size)
    elif extra:
        have = np.broadcast_to(np.asarray(m.read(extra[0], "u32", lanes)), (count,))
        have = have.astype(np.int64)
        if np.any(have > size):
            raise m.fault(
                "CUDA_ERROR_ILLEGAL_INSTRUCTION", f"src-size {int(have.max())} > cp-size {size}"
            )
    dst = _addresses(m, ins, dst_op, lanes, "shared", size)
    src = np.broadcast_to(_addresses(m, ins, src_op, lanes, "global", size), (count,))
    unit = min(size, 8)
    words = np.zeros((count, size // unit), UNSIGNED[unit])
    full = have == size
    for w in range(size // unit):
        words[full, w] = m.memory.load(src[full] + np.uint64(w * unit), UNSIGNED[unit], ins.opcode)
    part = np.nonzero((have > 0) & ~full)[0]
    if len(part):  # only the first src-size bytes are read: the rest may lie past the data
        some = np.zeros((len(part), size), np.uint8)
        for j in range(size):
            read = have[part] > j
            some[read, j] = m.memory.load(src[part[read]] + np.uint64(j), np.uint8, ins.opcode)
        words[part] = some.view(UNSIGNED[unit])
    m.copies.issue(threads, dst, words)


@handles("vote")
def _vote(m, ins, lanes):
    """vote.sync.{all,any,uni}.pred and vote.sync.ballot.b32 over the warp's threads here."""
    mode = ins.parts[2]
    pred = np.broadcast_to(_predicate(m, ins.operands[1], lanes), (m.count(lanes),))
    warp = m.warp[lanes]
    lane = np.asarray(m.read(SReg("%laneid"), "u32", lanes)).astype(np.int64)
    warps = int(m.warp.max()) + 1
    if mode == "ballot":
        bits = np.zeros(warps, np.uint64)
        np.bitwise_or.at(bits, warp, (pred.astype(np.uint64) << lane.astype(np.uint64)))
        m.write(ins.operands[0], bits[warp].astype(np.uint32), lanes)
        return
    trues = np.bincount(warp, pred, warps)
    counts = np.bincount(warp, None, warps)
    value = {"all": trues == counts, "any": trues > 0, "uni": (trues == 0) | (trues == counts)}[
        mode
    ]
    m.write(ins.operands[0], value[warp], lanes)


@handles("stacksave", "stackrestore", "alloca")
def _stack(m, ins, lanes):
    """Each thread's stack in its local window: alloca.u64 d, size, align takes the next
    aligned bytes; stacksave and stackrestore read and set the stack's top (local addresses)."""
    head = ins.parts[0]
    if head == "stacksave":
        m.write(ins.operands[0], m.stack[lanes], lanes)
        return
    if head == "stackrestore":
        m.stack[lanes] = np.asarray(m.read(ins.operands[0], "u64", lanes))
        return
    size = np.asarray(m.read(ins.operands[1], "u64", lanes)).astype(np.uint64)
    align = np.uint64(int(m.read(ins.operands[2], "u64", lanes)))
    at = (m.stack[lanes] + align - np.uint64(1)) & ~(align - np.uint64(1))
    top = at + size
    if np.any(top > np.uint64(m.local_bytes)):
        raise m.fault("CUDA_ERROR_ILLEGAL_ADDRESS", f"alloca past the {m.local_bytes}-byte stack")
    m.stack[lanes] = top
    m.write(ins.operands[0], at, lanes)


@handles("bar", "barrier", "membar", "fence")
def _ordering(m, ins, lanes):
    """Threads run in lockstep here, so a barrier (checked by the machine) and a fence
    have nothing left to order."""
