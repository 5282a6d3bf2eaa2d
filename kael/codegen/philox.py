"""Philox4x32-10 (Salmon et al., SC'11; the Random123 library) emitted with llvmlite.

Lane-generic like arith.py: every value is a scalar or a vector of `width` lanes, so CPU
loops stay vectorized and the PTX backend lowers the same code. 32-bit words live in i32
lanes; a 32x32->64 product's high word comes from an i64 multiply of zero-extended words
and its low word from an i32 multiply (on the GPU: mul.hi.u32 and mul.lo.u32).

Stream layout of the IR ops. `philox(n, s)` and `philox_hi(n, s)` (int64 operands) are
the two halves of one Philox4x32-10 block: counter words (lo32(n), hi32(n), 0, 0), key
words (lo32(s), hi32(s)), output words x0..x3; `philox` is x0 | x1 << 32 and `philox_hi`
is x2 | x3 << 32. kael/frontend/random.py feeds n = offset + element index and s = seed,
so any element's value is a pure function of (seed, offset, index). `philox32(w, s)` is
one 32-bit draw (zero-extended) of element counter w, eight to a block: counters come in
groups of 128 over 16 blocks (`GROUP_BLOCKS`); with t = w & 127, draw w is word t >> 5 of
the group's block t & 15, rotated by 16 bits where bit 4 of t is set (`_layout`). A word
serves two draws, itself and its rotation: each is exactly uniform over 32 bits (dropout's
keep probability stays exact to 2**-32) at half the rounds a word per draw cost; the two
draws of one word depend on each other only where a compare's outcome turns on the half
they share (a tie of the leading 16 bits with the bound's: 2**-16 of draws, measured
correlation <= 7e-4 at p = 0.1 ... 0.9; for p or 1 - p below 2**-16 the rare outcome
needs the whole word 0 or all ones, so the two share it: at p = 2**-20, 2.4e-4).
`mulhi_u(a, b)` is the high word of the unsigned 128-bit product a * b.

Vector code of `philox32` whose lanes are W consecutive counters from a multiple of W
(W >= 4) computes the blocks of its refill (whole groups, CHAINS * W blocks or more) at
once: draw vectors are then the words themselves and their rotations (one vprold), kept in
stack slots so the refill's next vectors load theirs; any other vector, and scalar and
GPU code, computes its lanes' blocks.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from kael.codegen.lowering import I64, ExprEmitter, i64, splat, value_type_of_width
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
    """(high, low) 32-bit words of multiplier * x, x a 32-bit word (i32 lanes), or of a
    loose word (i64 lanes, see philox4x32): one 32x32->64 multiply whose product is the
    loose low word itself."""
    if x.type == value_type_of_width(I64, width):
        product = b.mul(b.and_(x, _splat(I64, _LOW32, width)), _splat(I64, multiplier, width))
        return b.lshr(product, _splat(I64, 32, width)), product
    wide = value_type_of_width(I64, width)
    product = b.mul(b.zext(x, wide), _splat(I64, multiplier, width))
    high = b.trunc(b.lshr(product, _splat(I64, 32, width)), value_type_of_width(I32, width))
    return high, b.mul(x, _splat(I32, multiplier, width))


def philox4x32(
    b: ir.IRBuilder, width: int, counter: tuple[ir.Value, ...], key: tuple[ir.Value, ...]
) -> tuple[ir.Value, ...]:
    """The four output words of Philox4x32-10 for four counter and two key words.

    Words are i32 lanes, or loose i64 lanes whose low 32 bits are the word and whose high
    bits are don't-care: every step reads only low bits (32x32->64 multiplies, adds, xors),
    so vector CPU code multiplies a word with one vpmuludq instead of a widening, a
    narrowing and a 32-bit multiply (rand, randn and dropout ~1.5x faster in cache)."""
    c0, c1, c2, c3 = counter
    for r in range(ROUNDS):
        k0, k1 = key(r) if callable(key) else _round_key(b, width, key, r)
        hi0, lo0 = _mulhilo(b, width, MULTIPLIERS[0], c0)
        hi1, lo1 = _mulhilo(b, width, MULTIPLIERS[1], c2)
        c0, c1, c2, c3 = b.xor(b.xor(hi1, c1), k0), lo1, b.xor(b.xor(hi0, c3), k1), lo0
    return c0, c1, c2, c3


def _round_key(b: ir.IRBuilder, width: int, key: tuple[ir.Value, ir.Value], r: int) -> tuple:
    """Round r's key words: the key plus r Weyl steps (in the key words' own lanes)."""
    lane = key[0].type.element if isinstance(key[0].type, ir.VectorType) else key[0].type
    return tuple(
        b.add(k, _splat(lane, r * bump & _LOW32, width)) if r else k for k, bump in zip(key, WEYL)
    )


def split64(b: ir.IRBuilder, width: int, v: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(low, high) 32-bit words of a 64-bit value."""
    narrow = value_type_of_width(I32, width)
    return b.trunc(v, narrow), b.trunc(b.lshr(v, _splat(I64, 32, width)), narrow)


def _low32(b: ir.IRBuilder, width: int, word: ir.Value) -> ir.Value:
    """A word as a zero-extended i64, from i32 lanes or loose i64 lanes."""
    if word.type == value_type_of_width(I64, width):
        return b.and_(word, _splat(I64, _LOW32, width))
    return b.zext(word, value_type_of_width(I64, width))


def join64(b: ir.IRBuilder, width: int, low: ir.Value, high: ir.Value) -> ir.Value:
    """low | high << 32 from two 32-bit words (i32 or loose i64 lanes)."""
    wide = value_type_of_width(I64, width)
    high = high if high.type == wide else b.zext(high, wide)
    return b.or_(_low32(b, width, low), b.shl(high, _splat(I64, 32, width)))


def _words(b: ir.IRBuilder, width: int, counter: ir.Value, key: ir.Value) -> tuple:
    """The four words of the block of a 64-bit counter and key (c2 = c3 = 0): loose i64
    lanes in vector code (CPU only), i32 lanes in scalar code (and so in every PTX kernel)."""
    if width == 1:
        zero = _splat(I32, 0, width)
        return philox4x32(
            b, width, (*split64(b, width, counter), zero, zero), split64(b, width, key)
        )
    zero, shift = _splat(I64, 0, width), _splat(I64, 32, width)
    keys = key if callable(key) else (key, b.lshr(key, shift))
    return philox4x32(b, width, (counter, b.lshr(counter, shift), zero, zero), keys)


def philox_block(
    b: ir.IRBuilder, width: int, counter: ir.Value, key: ir.Value
) -> tuple[ir.Value, ir.Value]:
    """(x0 | x1 << 32, x2 | x3 << 32): the block of a 64-bit counter and key (module doc)."""
    x0, x1, x2, x3 = _words(b, width, counter, key)
    return join64(b, width, x0, x1), join64(b, width, x2, x3)


GROUP_BLOCKS = 16  # blocks of one group of philox32 draws (module doc)
GROUP = 8 * GROUP_BLOCKS  # draws of a group


def _layout(t: int) -> tuple[int, int, int]:
    """(block within its group, word, rotated) of draw t of a group, 0 <= t < GROUP."""
    return t % GROUP_BLOCKS, t >> 5, t >> 4 & 1


def _rotated(b: ir.IRBuilder, width: int, word: ir.Value) -> ir.Value:
    """A 32-bit word (i32 lanes) rotated by 16 bits: its halves swapped."""
    sixteen = _splat(I32, 16, width)
    return b.or_(b.shl(word, sixteen), b.lshr(word, sixteen))


def _draw_of_block(b: ir.IRBuilder, width: int, w: ir.Value, key: ir.Value) -> ir.Value:
    """Draw w in every lane (i32 lanes; `_layout`), each lane computing its own block."""

    def c(v: int) -> ir.Constant:
        return _splat(I64, v, width)

    t = b.and_(w, c(GROUP - 1))
    block = b.or_(b.shl(b.lshr(w, c(7)), c(4)), b.and_(t, c(GROUP_BLOCKS - 1)))
    x0, x1, x2, x3 = _words(b, width, block, key)
    which = b.lshr(t, c(5))

    def lane_is(k: int) -> ir.Value:
        return b.icmp_unsigned("==", which, c(k))

    word = b.select(lane_is(0), x0, b.select(lane_is(1), x1, b.select(lane_is(2), x2, x3)))
    narrow = value_type_of_width(I32, width)
    word = word if word.type == narrow else b.trunc(word, narrow)
    rotate = b.icmp_unsigned("!=", b.and_(t, c(16)), c(0))
    return b.select(rotate, _rotated(b, width, word), word)


# Vectors of blocks per refill: independent Philox chains in flight (one chain's rounds
# are a serial chain of multiplies): dropout of 256K in cache, 1 thread, 0.24 -> 0.22 ms
# with 2 (4: no better).
CHAINS = 2


def _assemble(b: ir.IRBuilder, width: int, lanes: list, source: Callable) -> ir.Value:
    """The vector whose lane i is lane lanes[i][1] of source(lanes[i][0]): the source
    itself where one source gives every lane in order, else shuffles of two at a time."""
    keys = list(dict.fromkeys(k for k, _ in lanes))
    first = source(keys[0])
    if len(keys) == 1 and [lane for _, lane in lanes] == list(range(width)):
        return first
    second = source(keys[1]) if len(keys) > 1 else first
    mask_t = ir.VectorType(I32, width)
    # lanes of keys[0] from the first, the rest from the second (later keys fix theirs)
    pick = [lane + (width if k != keys[0] else 0) for k, lane in lanes]
    acc = b.shuffle_vector(first, second, ir.Constant(mask_t, pick))
    for extra in keys[2:]:
        pick = [width + lane if k == extra else i for i, (k, lane) in enumerate(lanes)]
        acc = b.shuffle_vector(acc, source(extra), ir.Constant(mask_t, pick))
    return acc


def _grouped_words(b: ir.IRBuilder, width: int, w0: ir.Value, key: ir.Value) -> ir.Value:
    """The draws of counters w0 .. w0 + width - 1 (w0 a multiple of width) under `key`,
    from the blocks of their refill (whole groups: at least CHAINS * width blocks),
    computed when the refill or the key changes."""
    fn = b.function
    entry = ir.IRBuilder(fn.entry_basic_block)
    entry.position_at_start(fn.entry_basic_block)
    words_t = ir.VectorType(I32, width)
    chains = max(CHAINS, GROUP_BLOCKS // width)
    draws = 8 * chains * width
    vectors = draws // width
    keys_t = ir.VectorType(I64, width)
    tag = entry.alloca(I64, name="philox.group")
    held_key = entry.alloca(I64, name="philox.key")
    keyed = entry.alloca(ir.IntType(1), name="philox.keyed")
    round_keys = entry.alloca(ir.ArrayType(keys_t, 2 * ROUNDS), name="philox.round_keys")
    slots = entry.alloca(ir.ArrayType(words_t, vectors), name="philox.words")
    entry.store(ir.Constant(I64, -1), tag)  # a refill's first counter is never all ones
    entry.store(ir.Constant(ir.IntType(1), 0), keyed)
    lanes = width.bit_length() - 1
    first = b.and_(w0, ir.Constant(I64, -draws))
    check_key = fn.append_basic_block("philox.check_key")
    rekey = fn.append_basic_block("philox.rekey")
    refill = fn.append_basic_block("philox.refill")
    ready = fn.append_basic_block("philox.ready")
    new_key = b.or_(b.not_(b.load(keyed)), b.icmp_unsigned("!=", key, b.load(held_key)))
    b.cbranch(b.or_(b.icmp_unsigned("!=", first, b.load(tag)), new_key), check_key, ready)
    b.position_at_end(check_key)
    b.cbranch(new_key, rekey, refill)
    # the round keys, splat once a key (not in each refill, where they would cost a vector
    # add each): the rounds read them from memory
    b.position_at_end(rekey)
    words = (key, b.lshr(key, ir.Constant(I64, 32)))
    for r in range(ROUNDS):
        for half, (word, bump) in enumerate(zip(words, WEYL)):
            value = splat(b, b.add(word, ir.Constant(I64, r * bump & _LOW32)), width)
            b.store(value, b.gep(round_keys, [ir.Constant(I32, 0), ir.Constant(I32, 2 * r + half)]))
    b.store(key, held_key)
    b.store(ir.Constant(ir.IntType(1), 1), keyed)
    b.branch(refill)
    b.position_at_end(refill)

    def key_of_round(r: int) -> tuple[ir.Value, ir.Value]:
        return tuple(
            b.load(b.gep(round_keys, [ir.Constant(I32, 0), ir.Constant(I32, 2 * r + half)]))
            for half in (0, 1)
        )

    block0 = b.lshr(first, ir.Constant(I64, 3))  # first is a multiple of GROUP
    chain_words = []
    for chain in range(chains):
        iota = ir.Constant(keys_t, [chain * width + t for t in range(width)])
        x = _words(b, width, b.add(splat(b, block0, width), iota), key_of_round)
        chain_words.append([b.trunc(word, words_t) for word in x])
    sources: dict[tuple[int, int, int], ir.Value] = {}

    def source(k: tuple[int, int, int]) -> ir.Value:
        if k not in sources:
            word = chain_words[k[0]][k[1]]
            sources[k] = _rotated(b, width, word) if k[2] else word
        return sources[k]

    for q in range(vectors):
        lanes_of = []
        for lane in range(width):
            e = q * width + lane
            block, word, rotate = _layout(e % GROUP)
            block += e // GROUP * GROUP_BLOCKS
            lanes_of.append(((block // width, word, rotate), block % width))
        vector = _assemble(b, width, lanes_of, source)
        b.store(vector, b.gep(slots, [ir.Constant(I32, 0), ir.Constant(I32, q)]))
    b.store(first, tag)
    b.branch(ready)
    b.position_at_end(ready)
    j = b.and_(b.lshr(w0, ir.Constant(I64, lanes)), ir.Constant(I64, vectors - 1))
    return b.load(b.gep(slots, [ir.Constant(I64, 0), j]))


def _philox32(m: ExprEmitter, w, key, dtype: DType):
    _int64_only("philox32", dtype)
    b, width = m.b, m.width
    if width < 4 or width & (width - 1):
        return b.zext(_draw_of_block(b, width, w, key), value_type_of_width(I64, width))
    w0, k0 = (b.extract_element(v, ir.Constant(I32, 0)) for v in (w, key))
    iota = ir.Constant(ir.VectorType(I64, width), list(range(width)))
    apart = b.or_(
        b.icmp_unsigned("!=", w, b.add(splat(b, w0, width), iota)),
        b.icmp_unsigned("!=", key, splat(b, k0, width)),
    )
    misaligned = b.icmp_unsigned("!=", b.and_(w0, ir.Constant(I64, width - 1)), i64(0))
    grouped = b.function.append_basic_block("philox.grouped")
    lone = b.function.append_basic_block("philox.lanes")
    join = b.function.append_basic_block("philox.join")
    b.cbranch(b.or_(m.any_lane(apart), misaligned), lone, grouped).set_weights([1, 1 << 10])
    b.position_at_end(grouped)
    fast = _grouped_words(b, width, w0, k0)
    fast_end = b.block
    b.branch(join)
    b.position_at_end(lone)
    slow = _draw_of_block(b, width, w, key)
    slow_end = b.block
    b.branch(join)
    b.position_at_end(join)
    phi = b.phi(fast.type)
    phi.add_incoming(fast, fast_end)
    phi.add_incoming(slow, slow_end)
    # zero-extended after the join, so a compare with a 32-bit bound stays 32-bit
    return b.zext(phi, ir.VectorType(I64, width))


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


BINARY = {
    "philox": _half("philox", 0),
    "philox_hi": _half("philox_hi", 1),
    "philox32": _philox32,
    "mulhi_u": _mulhi_u,
}
