"""Stable sort of short rows by counting ranks, as a hand-written kernel: what sort,
argsort and topk run for rows of at most RANK_ROW keys.

A row is a work item. Its keys become radix.py's ordered words (inverted when descending:
NaN the largest, -0 as +0) in a stack buffer; key i's place in the stable order is then
the count of keys j whose word is below its own, or equal with j < i, and position i is
written there, with the key itself for sort's values (topk keeps the first k places).
n^2 compares a row, but branch-free ones that the CPU makes vector compares of the buffer
(16 float32 keys at once, the votes a bit count), where an insertion or merge sort of a
short row mispredicts a branch on about every key. Target-neutral: a GPU thread counts a
row, a key at a time.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from kael.codegen.cpu import ordered_rows
from kael.codegen.cpu.loops import LoopBuilder
from kael.codegen.lowering import declare, i64, splat
from kael.runtime.dtypes import DType
from kael.runtime.errors import ValueError

I32, I64 = ir.IntType(32), ir.IntType(64)
RANK_ROW = 128  # rows of at most this many keys fit the stack buffer


def _popcount(b: ir.IRBuilder, bits: ir.Value) -> ir.Value:
    t = bits.type
    fn = declare(b.module, f"llvm.ctpop.i{t.width}", ir.FunctionType(t, [t]))
    return b.call(fn, [bits])


def _rank_function(module: ir.Module, width: int, form: str) -> str:
    """Work item `row` writes position i at its rank in the row's stable order."""
    kernel = ordered_rows.row_kernel(module, "rank", width, form, ("values",))
    b, n, out, word, word_type = kernel.b, kernel.w["n"], kernel.out, kernel.word, kernel.word_type
    lanes = ordered_rows.lanes(module, width)
    # the row's words, then all-ones words up to a whole vector: none counts as before a key
    row_words = b.alloca(word_type, size=i64(RANK_ROW + lanes), name="words")
    count_at = b.alloca(I32, name="count")
    values = b.inttoptr(kernel.w["values"], word_type.as_pointer())
    writes_values = b.icmp_unsigned("!=", kernel.w["values"], i64(0))
    loops = LoopBuilder(b)
    vector = ir.VectorType(word_type, lanes)
    lane_numbers = ir.Constant(ir.VectorType(I64, lanes), list(range(lanes)))

    def item(row):
        base = b.mul(row, n)

        def load(j):
            b.store(word(j, base), b.gep(row_words, [j]))

        loops.counted(i64(0), n, 1, load, "load")
        padded = b.mul(b.sdiv(b.add(n, i64(lanes - 1)), i64(lanes)), i64(lanes))
        top = ir.Constant(word_type, (1 << width) - 1)
        loops.counted(n, padded, 1, lambda j: b.store(top, b.gep(row_words, [j])), "pad")

        def place(i):  # key i's rank: the keys below it, and those equal before it
            mine = b.load(b.gep(row_words, [i]))
            b.store(ir.Constant(I32, 0), count_at)
            if lanes == 1:

                def compare(j):
                    other = b.load(b.gep(row_words, [j]))
                    tie = b.and_(b.icmp_unsigned("==", other, mine), b.icmp_signed("<", j, i))
                    before = b.or_(b.icmp_unsigned("<", other, mine), tie)
                    b.store(b.add(b.load(count_at), b.zext(before, I32)), count_at)

                loops.counted(i64(0), n, 1, compare, "compare")
            else:
                mine_lanes, i_lanes = splat(b, mine, lanes), splat(b, i, lanes)

                def compare(block):  # a vector of keys at once, their votes as a bit count
                    first = b.mul(block, i64(lanes))
                    at = b.bitcast(b.gep(row_words, [first]), vector.as_pointer())
                    other = b.load(at, align=width // 8)
                    j = b.add(splat(b, first, lanes), lane_numbers)
                    tie = b.and_(
                        b.icmp_unsigned("==", other, mine_lanes), b.icmp_signed("<", j, i_lanes)
                    )
                    before = b.or_(b.icmp_unsigned("<", other, mine_lanes), tie)
                    mask = b.zext(b.bitcast(before, ir.IntType(lanes)), I64)  # (an i64 stays)
                    votes = b.trunc(_popcount(b, mask), I32)
                    b.store(b.add(b.load(count_at), votes), count_at)

                loops.counted(i64(0), b.sdiv(padded, i64(lanes)), 1, compare, "compare")
            to = b.add(base, b.zext(b.load(count_at), I64))
            b.store(i, b.gep(out, [to]))
            with b.if_then(writes_values):  # the key itself, sort's value
                b.store(b.load(b.gep(kernel.keys, [b.add(base, i)])), b.gep(values, [to]))

        loops.counted(i64(0), n, 1, place, "place")

    loops.counted(kernel.fn.args[1], kernel.fn.args[2], 1, item, "row")
    b.ret_void()
    return kernel.fn.name


def spec(width: int) -> tuple[str, Callable[[ir.Module], list[str]]]:
    """The module name and builder of the rank kernels for keys of `width` bits."""
    return ordered_rows.spec("rank", width, _rank_function)


def order(
    runner, dtype: DType, keys: int, rows: int, n: int, descending: bool, out: int,
    values: int = 0,
) -> tuple | None:  # fmt: skip
    """Write the stable order of each of `rows` rows of n <= RANK_ROW contiguous keys at
    `keys` into the int64 [rows, n] buffer at `out`, and the sorted keys into [rows, n] at
    `values` unless it is 0: one launch, a row a work item
    (returned as ordered_rows.launch returns it)."""
    if n > RANK_ROW:  # the kernel's stack buffer holds a row of at most RANK_ROW words
        raise ValueError(f"rank.order(): a row of {n} keys is longer than RANK_ROW ({RANK_ROW})")
    first = [keys, out, n, descending]
    moved = rows * n * (n + 8)
    return ordered_rows.launch(runner, "rank", _rank_function, dtype, first, [values], rows, moved)
