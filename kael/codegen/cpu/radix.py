"""A stable LSD radix sort of rows as hand-written kernels: what sort and argsort run.

Each row's keys become unsigned W-bit words that order as the values do (`ordered`: the
sign bit flipped for integers; for floats negative values inverted, -0 as +0, every NaN
the largest word, so NaNs keep input order among themselves), inverted when descending.
Then one pass per 8-bit digit, least significant first, each three launches over chunks
of the rows: count each chunk's digits, turn the counts into each chunk's first place per
digit (digit-major, then chunk: that order is what keeps the sort stable), and move each
chunk's keys and positions to their places. The first launch also returns each chunk's
least and greatest words, and the digits order the words less their least one: only the
digits of the span take a pass (labels under 2**20, or any int64s within 2**20 of each
other, take 3 passes, not 8). Positions travel as int32 between passes and the
last pass writes the int64 order.

Selection (`select`: median, quantile, kthvalue) reads the same ordered words from the
most significant digit down: each digit one counting read of the keys that match the
digits chosen so far, then a choice of the digit holding the asked rank, and at the end
one read that finds the rank's position among the equal keys in input order. So it gives
the very position the stable sort puts at that rank, without moving a key.

The builders are target-neutral, like the merge sort's (codegen/cpu/sort.py): the host
runs them over chunks of at least MIN_CHUNK keys, a GPU (codegen/ptx/handwritten.py)
one chunk of at least DEVICE_CHUNK keys a thread, at most DEVICE_CHUNKS chunks a row (each
row's offsets are one thread's walk over 256 counters a chunk). That is a first GPU sort,
correct and free of host round trips, not a tuned one: a block-wide radix sort with
shared-memory counters and a parallel scan of the offsets is the next step there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from llvmlite import ir

from kael.codegen.cpu import handwritten
from kael.codegen.cpu.loops import LoopBuilder
from kael.codegen.lowering import i64
from kael.runtime.dtypes import DType
from kael.runtime.threadpool import get_num_threads

I32, I64 = ir.IntType(32), ir.IntType(64)
DIGIT_BITS, BUCKETS = 8, 256
MIN_CHUNK = 4096  # a host chunk's keys: its 256 counters cost at most a 16th of its count
DEVICE_CHUNK, DEVICE_CHUNKS = 1024, 256  # a GPU thread's keys at least, a row's chunks at most
MAX_ROW = 2**31 - 1  # positions travel as int32
# A float format's infinity bits (above them, NaN) by its LLVM name, and its width.
_FLOATS = {"half": (0x7C00, 16), "bfloat": (0x7F80, 16), "float": (0x7F800000, 32),
           "double": (0x7FF << 52, 64)}  # fmt: skip

KEY_WORDS = ("input", "keys", "bounds", "n", "chunk", "chunks", "flip", "raw")
COUNT_WORDS = ("keys", "counts", "n", "chunk", "chunks", "shift", "low", "form", "inf", "flip")
OFFSET_WORDS = ("counts", "chunks")
MOVE_WORDS = ("keys", "index", "to_keys", "to_index", "counts", *COUNT_WORDS[2:])


def form_of(dtype: DType) -> str:
    """How a dtype's bits become ordered words: "unsigned" as they are, "signed" with the
    sign flipped, or as the float format of that LLVM name."""
    if dtype.is_floating_point:
        return dtype.llvm
    return "signed" if dtype.signed else "unsigned"


def forms(width: int) -> list[str]:
    """The forms of keys `width` bits wide."""
    return ["unsigned", "signed", *(f for f, (_, bits) in _FLOATS.items() if bits == width)]


def _words(b: ir.IRBuilder, fn: ir.Function, names: tuple[str, ...]) -> dict[str, ir.Value]:
    args = fn.args[0]
    return {name: b.load(b.gep(args, [i64(k)]), name=name) for k, name in enumerate(names)}


def _over_chunk(b: ir.IRBuilder, w: dict, m: ir.Value, body: Callable) -> None:
    """body(i, base) for each position i of work item m's chunk, base its row's start."""
    row, c = b.sdiv(m, w["chunks"]), b.srem(m, w["chunks"])
    lo = b.mul(c, w["chunk"])
    end = b.add(lo, w["chunk"])
    hi = b.select(b.icmp_signed("<", end, w["n"]), end, w["n"])
    base = b.mul(row, w["n"])
    LoopBuilder(b).counted(lo, hi, 1, lambda i: body(i, base), "key")


def _items(b: ir.IRBuilder, fn: ir.Function, body: Callable, name: str) -> None:
    LoopBuilder(b).counted(fn.args[1], fn.args[2], 1, body, name)
    b.ret_void()


def ordered(b: ir.IRBuilder, u: ir.Value, form: str) -> ir.Value:
    """The unsigned word that orders as the key with bits u does (each lane of a vector)."""
    k = u.type
    bits = (k.element if isinstance(k, ir.VectorType) else k).width
    sign = ir.Constant(k, 1 << (bits - 1))
    if form == "unsigned":
        return u
    if form == "signed":
        return b.xor(u, sign)
    return _float_word(b, u, ir.Constant(k, _FLOATS[form][0]))


def _float_word(b: ir.IRBuilder, u: ir.Value, inf: ir.Value) -> ir.Value:
    """ordered() of a float's bits u, `inf` its format's infinity."""
    k = u.type
    bits = (k.element if isinstance(k, ir.VectorType) else k).width
    sign = ir.Constant(k, 1 << (bits - 1))
    magnitude = b.and_(u, ir.Constant(k, (1 << (bits - 1)) - 1))
    negative = b.icmp_unsigned("!=", b.and_(u, sign), ir.Constant(k, 0))
    word = b.select(negative, b.not_(u), b.or_(u, sign))
    word = b.select(b.icmp_unsigned("==", magnitude, ir.Constant(k, 0)), sign, word)  # -0 as +0
    return b.select(b.icmp_unsigned(">", magnitude, inf), ir.Constant(k, -1), word)


# ordered()'s forms as the sort passes take them, a run-time word (floats also pass their
# infinity's bits): one kernel a width serves every form.
FORM_CODES = {"unsigned": 0, "signed": 1}
FLOAT_CODE, PLAIN_FLOAT_CODE = 2, 3


def _by_form(b: ir.IRBuilder, w: dict, body: Callable[[Callable], None]) -> None:
    """body(order) under a branch on w's run-time form, order(bits) giving ordered()'s word
    xor w's flip: one loop for floats (with w's infinity), one for floats without -0 and
    NaN (the plain flip: negatives inverted, the sign set on the others), one for integers
    (the sign flipped or not); so no loop makes a choice of form a key."""
    code = w["form"]

    def flipped(word):
        return b.xor(word, b.trunc(w["flip"], word.type))

    def float_word(u):
        return flipped(_float_word(b, u, b.trunc(w["inf"], u.type)))

    def plain_float_word(u):
        sign = ir.Constant(u.type, 1 << (u.type.width - 1))
        return flipped(b.xor(u, b.or_(b.ashr(u, ir.Constant(u.type, u.type.width - 1)), sign)))

    def int_word(u):
        signed = b.icmp_signed("==", code, i64(FORM_CODES["signed"]))
        sign = b.select(
            signed, ir.Constant(u.type, 1 << (u.type.width - 1)), ir.Constant(u.type, 0)
        )
        return flipped(b.xor(u, sign))

    with b.if_else(b.icmp_signed("==", code, i64(FLOAT_CODE))) as (floats, others):
        with floats:
            body(float_word)
        with others, b.if_else(b.icmp_signed("==", code, i64(PLAIN_FLOAT_CODE))) as (plain, ints):
            with plain:
                body(plain_float_word)
            with ints:
                body(int_word)


def form_words(dtype: DType, descending: bool, special: bool = True) -> list[int]:
    """The (form, inf, flip) words of `dtype`'s keys for _by_form; `special`: whether a
    float key may be -0 or NaN."""
    form = form_of(dtype)
    if form in _FLOATS:
        code, inf = (FLOAT_CODE if special else PLAIN_FLOAT_CODE), _FLOATS[form][0]
    else:
        code, inf = FORM_CODES[form], 0
    return [code, inf, -1 if descending else 0]


def _keys_symbol(width: int, form: str) -> str:
    return f"kael_radix_keys_{form}_u{width}"


def _keys_function(module: ir.Module, width: int, form: str) -> str:
    """Item m writes its chunk's least and greatest ordered words (xor flip: descending),
    whether a float key among them is -0 or NaN (the two whose words ordered() makes
    specially: without them the passes order floats by the plain flip), and into `keys`
    the words themselves (selection) or, with `raw`, the keys' bits (the sort's passes,
    which order them as they read them): a copy, so the passes count and move the very
    keys these bounds describe even if the input changes meanwhile."""
    symbol = _keys_symbol(width, form)
    fn, b = handwritten.kernel_function(module, symbol)
    w = _words(b, fn, KEY_WORDS)
    k = ir.IntType(width)
    source, keys = (b.inttoptr(w[name], k.as_pointer()) for name in ("input", "keys"))
    bounds = b.inttoptr(w["bounds"], I64.as_pointer())
    flip = b.trunc(w["flip"], k)
    raw = b.icmp_unsigned("!=", w["raw"], i64(0))
    least, most = b.alloca(k, name="least"), b.alloca(k, name="most")
    special = b.alloca(ir.IntType(1), name="special")
    sign = ir.Constant(k, 1 << (width - 1))

    def item(m):
        b.store(ir.Constant(k, -1), least)
        b.store(ir.Constant(k, 0), most)
        b.store(ir.Constant(ir.IntType(1), 0), special)

        def key(i, base):
            at = b.add(base, i)
            u = b.load(b.gep(source, [at]))
            word = b.xor(ordered(b, u, form), flip)
            b.store(b.select(raw, u, word), b.gep(keys, [at]))
            low, high = b.load(least), b.load(most)
            b.store(b.select(b.icmp_unsigned("<", word, low), word, low), least)
            b.store(b.select(b.icmp_unsigned(">", word, high), word, high), most)
            if form in _FLOATS:
                magnitude = b.and_(u, ir.Constant(k, (1 << (width - 1)) - 1))
                nan = b.icmp_unsigned(">", magnitude, ir.Constant(k, _FLOATS[form][0]))
                odd = b.or_(b.icmp_unsigned("==", u, sign), nan)
                b.store(b.or_(b.load(special), odd), special)

        _over_chunk(b, w, m, key)
        three = b.mul(m, i64(3))
        b.store(b.zext(b.load(least), I64), b.gep(bounds, [three]))
        b.store(b.zext(b.load(most), I64), b.gep(bounds, [b.add(three, i64(1))]))
        b.store(b.zext(b.load(special), I64), b.gep(bounds, [b.add(three, i64(2))]))

    _items(b, fn, item, "chunk")
    return symbol


def _digit(b: ir.IRBuilder, word: ir.Value, w: dict) -> ir.Value:
    """The digit at w's shift of word less w's low word (which no word is below)."""
    k = word.type
    offset = b.lshr(b.sub(word, b.trunc(w["low"], k)), b.trunc(w["shift"], k))
    return b.zext(b.and_(offset, ir.Constant(k, BUCKETS - 1)), I64)


def _zero(b: ir.IRBuilder, counters: ir.Value) -> None:
    """Zero a work item's BUCKETS counters."""
    LoopBuilder(b).counted(
        i64(0), i64(BUCKETS), 1, lambda d: b.store(i64(0), b.gep(counters, [d])), "zero"
    )


def _count_function(module: ir.Module, width: int) -> str:
    """Item m counts the digits of its chunk's keys (bits, ordered as they are read) into
    its own BUCKETS counters."""
    symbol = f"kael_radix_count_u{width}"
    fn, b = handwritten.kernel_function(module, symbol)
    w = _words(b, fn, COUNT_WORDS)
    k = ir.IntType(width)
    keys = b.inttoptr(w["keys"], k.as_pointer())
    counts = b.inttoptr(w["counts"], I64.as_pointer())

    def item(m):
        own = b.gep(counts, [b.mul(m, i64(BUCKETS))])
        _zero(b, own)

        def counted(order):
            def key(i, base):
                word = order(b.load(b.gep(keys, [b.add(base, i)])))
                slot = b.gep(own, [_digit(b, word, w)])
                b.store(b.add(b.load(slot), i64(1)), slot)

            _over_chunk(b, w, m, key)

        _by_form(b, w, counted)

    _items(b, fn, item, "chunk")
    return symbol


def _offsets_function(module: ir.Module) -> str:
    """Item `row` turns its chunks' counts into first places: digit-major, then chunk."""
    symbol = "kael_radix_offsets"
    fn, b = handwritten.kernel_function(module, symbol)
    w = _words(b, fn, OFFSET_WORDS)
    counts = b.inttoptr(w["counts"], I64.as_pointer())
    running = b.alloca(I64, name="running")

    def item(row):
        b.store(i64(0), running)
        first = b.mul(row, w["chunks"])

        def digit(d):
            def chunk(c):
                slot = b.gep(counts, [b.add(b.mul(b.add(first, c), i64(BUCKETS)), d)])
                count, place = b.load(slot), b.load(running)
                b.store(place, slot)
                b.store(b.add(place, count), running)

            LoopBuilder(b).counted(i64(0), w["chunks"], 1, chunk, "of")

        LoopBuilder(b).counted(i64(0), i64(BUCKETS), 1, digit, "digit")

    _items(b, fn, item, "row")
    return symbol


def _move_function(module: ir.Module, width: int, first: bool, last: bool) -> str:
    """Item m moves its chunk's keys (their bits: the last pass writes them as the sorted
    values, unless to_keys is 0) and positions to their places in the digit's order:
    `first` reads positions as the keys' own, `last` writes int64 positions."""
    symbol = f"kael_radix_move_u{width}{'_first' * first}{'_last' * last}"
    fn, b = handwritten.kernel_function(module, symbol)
    w = _words(b, fn, MOVE_WORDS)
    k = ir.IntType(width)
    keys, to_keys = (b.inttoptr(w[name], k.as_pointer()) for name in ("keys", "to_keys"))
    index = b.inttoptr(w["index"], I32.as_pointer())
    to_index = b.inttoptr(w["to_index"], (I64 if last else I32).as_pointer())
    counts = b.inttoptr(w["counts"], I64.as_pointer())
    # the last pass writes the keys only where asked (sort's values); the others always
    writes = b.icmp_unsigned("!=", w["to_keys"], i64(0)) if last else ir.Constant(ir.IntType(1), 1)

    def item(m):
        own = b.gep(counts, [b.mul(m, i64(BUCKETS))])

        def moved(order):
            _over_chunk(b, w, m, lambda i, base: key(i, base, order))

        def key(i, base, order):
            at = b.add(base, i)
            bits = b.load(b.gep(keys, [at]))
            slot = b.gep(own, [_digit(b, order(bits), w)])
            place = b.load(slot)
            b.store(b.add(place, i64(1)), slot)
            to = b.add(base, place)
            with b.if_then(writes):
                b.store(bits, b.gep(to_keys, [to]))
            position = b.trunc(i, I32) if first else b.load(b.gep(index, [at]))
            b.store(b.zext(position, I64) if last else position, b.gep(to_index, [to]))

        _by_form(b, w, moved)

    _items(b, fn, item, "chunk")
    return symbol


NARROW_WORDS = ("keys", "counts", "n", "chunk", "chunks", "shift", "low", "prefixes", "above")
CHOOSE_WORDS = ("counts", "chunks", "prefixes", "ranks", "shift")
FIND_WORDS = ("keys", "n", "low", "prefixes", "ranks", "out")


def _narrow_function(module: ir.Module, width: int) -> str:
    """Item m counts the digits of its chunk's words whose bits above the digit (`above`
    masks them, relative to low) are its row's prefix so far."""
    symbol = f"kael_radix_narrow_u{width}"
    fn, b = handwritten.kernel_function(module, symbol)
    w = _words(b, fn, NARROW_WORDS)
    k = ir.IntType(width)
    keys = b.inttoptr(w["keys"], k.as_pointer())
    counts, prefixes = (b.inttoptr(w[name], I64.as_pointer()) for name in ("counts", "prefixes"))
    above = b.trunc(w["above"], k)

    def item(m):
        own = b.gep(counts, [b.mul(m, i64(BUCKETS))])
        _zero(b, own)
        prefix = b.trunc(b.load(b.gep(prefixes, [b.sdiv(m, w["chunks"])])), k)

        def key(i, base):
            word = b.load(b.gep(keys, [b.add(base, i)]))
            offset = b.sub(word, b.trunc(w["low"], k))
            match = b.icmp_unsigned("==", b.and_(offset, above), prefix)
            slot = b.gep(own, [_digit(b, word, w)])
            b.store(b.add(b.load(slot), b.zext(match, I64)), slot)

        _over_chunk(b, w, m, key)

    _items(b, fn, item, "chunk")
    return symbol


def _choose_function(module: ir.Module) -> str:
    """Item `row` finds the digit whose keys hold its rank (its chunks' counts summed), adds
    it to the row's prefix and makes the rank one within that digit's keys."""
    symbol = "kael_radix_choose"
    fn, b = handwritten.kernel_function(module, symbol)
    w = _words(b, fn, CHOOSE_WORDS)
    counts, prefixes, ranks = (
        b.inttoptr(w[name], I64.as_pointer()) for name in ("counts", "prefixes", "ranks")
    )
    below, chosen, total = (b.alloca(I64, name=name) for name in ("below", "chosen", "total"))

    def item(row):
        rank = b.load(b.gep(ranks, [row]))
        b.store(i64(0), below)
        b.store(i64(-1), chosen)
        first = b.mul(row, w["chunks"])

        def digit(d):
            b.store(i64(0), total)

            def chunk(c):
                slot = b.gep(counts, [b.add(b.mul(b.add(first, c), i64(BUCKETS)), d)])
                b.store(b.add(b.load(total), b.load(slot)), total)

            LoopBuilder(b).counted(i64(0), w["chunks"], 1, chunk, "of")
            before, picked = b.load(below), b.load(chosen)
            after = b.add(before, b.load(total))
            open_ = b.icmp_signed("<", picked, i64(0))  # no digit chosen yet
            here = b.and_(open_, b.icmp_signed(">", after, rank))
            b.store(b.select(here, d, picked), chosen)
            b.store(b.select(b.and_(open_, b.not_(here)), after, before), below)

        LoopBuilder(b).counted(i64(0), i64(BUCKETS), 1, digit, "digit")
        prefix = b.gep(prefixes, [row])
        b.store(b.or_(b.load(prefix), b.shl(b.load(chosen), w["shift"])), prefix)
        b.store(b.sub(rank, b.load(below)), b.gep(ranks, [row]))

    _items(b, fn, item, "row")
    return symbol


class _Row(NamedTuple):
    """What a row scan's key step sees: the row's number, its target word (the prefix, less
    the least word), its rank among the keys equal to it, and its zeroed counters."""

    number: ir.Value
    target: ir.Value
    rank: ir.Value
    counters: tuple[ir.Value, ...]


def _row_scan(module: ir.Module, width: int, symbol: str, words: tuple, counters: int, step) -> str:
    """A kernel whose item `row` reads its row's words once, in order, calling
    step(b, w, row, i, offset) with offset the word at i less the least word."""
    fn, b = handwritten.kernel_function(module, symbol)
    w = _words(b, fn, words)
    k = ir.IntType(width)
    keys = b.inttoptr(w["keys"], k.as_pointer())
    prefixes, ranks = (b.inttoptr(w[name], I64.as_pointer()) for name in ("prefixes", "ranks"))
    slots = tuple(b.alloca(I64, name=f"counter{c}") for c in range(counters))

    def item(number):
        base = b.mul(number, w["n"])
        target = b.trunc(b.load(b.gep(prefixes, [number])), k)
        row = _Row(number, target, b.load(b.gep(ranks, [number])), slots)
        for slot in slots:
            b.store(i64(0), slot)

        def key(i):
            offset = b.sub(b.load(b.gep(keys, [b.add(base, i)])), b.trunc(w["low"], k))
            step(b, w, row, i, offset)

        LoopBuilder(b).counted(i64(0), w["n"], 1, key, "key")

    _items(b, fn, item, "row")
    return symbol


def _find_function(module: ir.Module, width: int) -> str:
    """Item `row` writes the position of its rank-th key (in input order) equal to its
    prefix: the place a stable sort gives the element of the row's asked rank."""

    def step(b, w, row, i, offset):
        (seen,) = row.counters
        match = b.icmp_unsigned("==", offset, row.target)
        count = b.load(seen)
        with b.if_then(b.and_(match, b.icmp_signed("==", count, row.rank))):
            b.store(i, b.gep(b.inttoptr(w["out"], I64.as_pointer()), [row.number]))
        b.store(b.add(count, b.zext(match, I64)), seen)

    return _row_scan(module, width, f"kael_radix_find_u{width}", FIND_WORDS, 1, step)


PICK_WORDS = (*FIND_WORDS, "k")


def _pick_function(module: ir.Module, width: int) -> str:
    """Item `row` writes, in input order, the positions of its k first keys in the stable
    order: those below its prefix (the k-th key's word), and the first rank + 1 of those
    equal to it."""

    def step(b, w, row, i, offset):
        taken, equal_seen = row.counters
        equal = b.icmp_unsigned("==", offset, row.target)
        seen = b.load(equal_seen)
        take = b.or_(
            b.icmp_unsigned("<", offset, row.target),
            b.and_(equal, b.icmp_signed("<=", seen, row.rank)),
        )
        count = b.load(taken)
        with b.if_then(b.and_(take, b.icmp_signed("<", count, w["k"]))):  # never past k
            out = b.inttoptr(w["out"], I64.as_pointer())
            b.store(i, b.gep(out, [b.add(b.mul(row.number, w["k"]), count)]))
            b.store(b.add(count, i64(1)), taken)
        b.store(b.add(seen, b.zext(equal, I64)), equal_seen)

    return _row_scan(module, width, f"kael_radix_pick_u{width}", PICK_WORDS, 2, step)


def spec(width: int) -> tuple[str, Callable[[ir.Module], list[str]]]:
    """The module name and builder of the radix kernels for words of `width` bits."""

    def build(module: ir.Module) -> list[str]:
        keys = [_keys_function(module, width, form) for form in forms(width)]
        moves = [
            _move_function(module, width, f, la) for f in (False, True) for la in (False, True)
        ]
        select = [
            _narrow_function(module, width),
            _choose_function(module),
            _find_function(module, width),
            _pick_function(module, width),
        ]
        return [*keys, _count_function(module, width), _offsets_function(module), *moves, *select]

    return f"kael_radix_u{width}", build


def _chunks(rows: int, n: int, on_host: bool) -> int:
    """Chunks a row is split into: enough items for every host thread (4 each, so a slow
    one is waited on less), none under MIN_CHUNK keys; DEVICE_CHUNK keys a GPU thread."""
    if not on_host:  # the offsets kernel walks 256 counters a chunk on one thread
        return max(1, min(-(-n // DEVICE_CHUNK), DEVICE_CHUNKS))
    wanted = -(-4 * get_num_threads() // max(rows, 1))
    return max(1, min(wanted, n // MIN_CHUNK))


def order(
    runner,
    dtype: DType,
    keys: int,
    rows: int,
    n: int,
    descending: bool,
    out: int,
    space: Callable[[int], int],
    values: int = 0,
) -> None:
    """Write each of `rows` rows of `n` contiguous keys at `keys` its stable order (int64
    positions, NaN last ascending and first descending) into [rows, n] at `out`, and the
    sorted keys into [rows, n] at `values` unless it is 0. space(nbytes) gives scratch
    memory on the runner's device for the call."""
    radix = _Radix(runner, dtype, rows, n, space, positions=True)
    for first, count in radix.groups():
        at = first * n
        to_values = values + at * dtype.itemsize if values else 0
        radix.sort(keys + at * dtype.itemsize, count, descending, out + at * 8, to_values)


def select(
    runner,
    dtype: DType,
    keys: int,
    rows: int,
    n: int,
    ranks: int,
    out: int,
    space: Callable[[int], int],
) -> None:
    """Write to out[r] (int64 [rows]) the position of the element of rank ranks[r] (int64
    [rows], each in [0, n); used up as scratch) of row r of `rows` rows of `n` contiguous
    keys: the position a stable ascending sort puts at that rank (NaN last). Radix
    selection: the digits from the most significant, each a count of the keys that match
    the digits chosen so far (an O(n) read a digit, no keys moved)."""
    radix = _Radix(runner, dtype, rows, n, space, positions=False)
    for first, count in radix.groups():
        radix.select(keys + first * n * dtype.itemsize, count, ranks + first * 8, out + first * 8)


def top(
    runner,
    dtype: DType,
    keys: int,
    rows: int,
    n: int,
    k: int,
    descending: bool,
    out: int,
    space: Callable[[int], int],
) -> None:
    """Write to out ([rows, k] int64), in input order, the positions of each row's first k
    (0 < k <= n) keys in its stable order (descending: NaN first): the k-th found by radix
    selection, then one read that keeps the keys before it. topk then orders just those."""
    radix = _Radix(runner, dtype, rows, n, space, positions=False)
    for first, count in radix.groups():
        at = keys + first * n * dtype.itemsize
        radix.top(at, count, k, descending, out + first * k * 8)


MAX_ITEMS = 1 << 15  # chunks a launch covers: 64 MiB of counters


class _Radix:
    """One call's scratch (key buffers: the ordered words when selecting, two for the bits
    a sort moves and its position buffers; counters and bounds) for groups of rows of at
    most MAX_ITEMS chunks in all (which bounds the counters' memory), and the launches that
    sort or select in a group."""

    def __init__(self, runner, dtype: DType, rows: int, n: int, space, positions: bool):
        self.runner, self.dtype, self.rows, self.n = runner, dtype, rows, n
        chunks = _chunks(rows, n, isinstance(runner, handwritten.HostRunner))
        self.chunk = -(-n // chunks)
        self.chunks = -(-n // self.chunk)
        self.group = max(1, min(rows, MAX_ITEMS // self.chunks))
        self.width = dtype.itemsize * 8
        self.name, self.build = spec(self.width)
        items, total = self.group * self.chunks, self.group * n
        self.words = [space(total * dtype.itemsize) for _ in range(1 + positions)]
        self.index = [space(total * 4), space(total * 4)] if positions else []
        self.counts, self.bounds = space(items * BUCKETS * 8), space(items * 24)

    def groups(self):
        """(first row, rows) of each group (none for no rows)."""
        for first in range(0, self.rows, self.group):
            yield first, min(self.group, self.rows - first)

    def _run(self, symbol: str, block: list[int], items: int, moved: int) -> None:
        self.runner.run(self.name, self.build, symbol, block, items, moved, align=1)

    def _ordered_words(
        self, keys: int, rows: int, descending: bool, raw: bool = False
    ) -> tuple[int, list[int], bool]:
        """Write the group's ordered words (`raw`: the keys' bits) into words[raw]; their
        least word, as the signed word a block holds, the shifts of the digits their span
        needs, and whether a float key is -0 or NaN."""
        items, total = rows * self.chunks, rows * self.n
        flip = -1 if descending else 0
        into = self.words[1 if raw else 0]
        block = [keys, into, self.bounds, self.n, self.chunk, self.chunks, flip, int(raw)]
        self._run(
            _keys_symbol(self.width, form_of(self.dtype)), block, items, total * self.width // 4
        )
        mask = (1 << self.width) - 1  # the words read back are signed
        read = [v & mask for v in self.runner.read(self.bounds, 3 * items)]
        low, high, special = min(read[::3]), max(read[1::3]), any(read[2::3])
        shifts = list(range(0, max(1, (high - low).bit_length()), DIGIT_BITS))
        return low - (low >> 63 << 64), shifts, special

    def sort(self, keys: int, rows: int, descending: bool, out: int, values: int) -> None:
        """The passes, each reading the keys' bits where the last left them (the first
        where the bounds kernel copied them: words[1]) and ordering them as it reads; the
        last writes the positions to `out` and the bits, the sorted values, to `values`
        (none where 0)."""
        width, n, chunk, chunks = self.width, self.n, self.chunk, self.chunks
        items, total, size = rows * chunks, rows * n, width // 8
        low, shifts, special = self._ordered_words(keys, rows, descending, raw=True)
        form = form_words(self.dtype, descending, special)
        source, index = self.words[1], self.index[0]
        for p, shift in enumerate(shifts):
            first, last = p == 0, p == len(shifts) - 1
            to_keys, to_index = (
                (values, out) if last else (self.words[p % 2], self.index[1 - p % 2])
            )
            count = [source, self.counts, n, chunk, chunks, shift, low, *form]
            self._run(f"kael_radix_count_u{width}", count, items, total * size)
            self._run("kael_radix_offsets", [self.counts, chunks], rows, items * BUCKETS * 16)
            move = f"kael_radix_move_u{width}{'_first' * first}{'_last' * last}"
            block = [source, index, to_keys, to_index, *count[1:]]
            self._run(move, block, items, total * (2 * size + 12))
            source, index = to_keys, to_index

    def _narrowed(self, keys: int, rows: int, descending: bool, ranks: int) -> tuple[int, int]:
        """The group's words written; each row's rank-th word (less the least, as a digit
        prefix) narrowed down digit by digit, ranks made ranks among the keys equal to it.
        The least word and the prefixes' address."""
        width, n, chunk, chunks = self.width, self.n, self.chunk, self.chunks
        items, total = rows * chunks, rows * n
        low, shifts, _ = self._ordered_words(keys, rows, descending)
        prefixes = self.runner.scratch([0] * rows)
        for shift in reversed(shifts):
            above = -(1 << (shift + DIGIT_BITS)) if shift + DIGIT_BITS < width else 0
            block = [self.words[0], self.counts, n, chunk, chunks, shift, low, prefixes, above]
            self._run(f"kael_radix_narrow_u{width}", block, items, total * width // 8)
            block = [self.counts, chunks, prefixes, ranks, shift]
            self._run("kael_radix_choose", block, rows, items * BUCKETS * 8)
        return low, prefixes

    def select(self, keys: int, rows: int, ranks: int, out: int) -> None:
        low, prefixes = self._narrowed(keys, rows, False, ranks)
        block = [self.words[0], self.n, low, prefixes, ranks, out]
        self._run(f"kael_radix_find_u{self.width}", block, rows, rows * self.n * self.width // 8)

    def top(self, keys: int, rows: int, k: int, descending: bool, out: int) -> None:
        ranks = self.runner.scratch([k - 1] * rows)
        low, prefixes = self._narrowed(keys, rows, descending, ranks)
        block = [self.words[0], self.n, low, prefixes, ranks, out, k]
        self._run(f"kael_radix_pick_u{self.width}", block, rows, rows * self.n * self.width // 8)
