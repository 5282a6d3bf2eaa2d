"""Stable sort of short rows by counting ranks, as a hand-written kernel: what sort,
argsort and topk run for rows of fewer than RANK_ROW keys.

A row is a work item. Its keys become radix.py's ordered words (inverted when descending:
NaN the largest, -0 as +0) in a stack buffer; key i's place in the stable order is then
the count of keys j whose word is below its own, or equal with j < i, and position i is
written there (topk keeps the first k places). n^2 compares a row, but branch-free
ones that the CPU makes vector compares of the buffer (16 float32 keys at once), where an
insertion or merge sort of a short row mispredicts a branch on about every key.
Target-neutral: a GPU thread counts a row.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from kael.codegen.cpu import ordered_rows
from kael.codegen.cpu.loops import LoopBuilder
from kael.codegen.lowering import i64
from kael.runtime.dtypes import DType
from kael.runtime.errors import ValueError

I32, I64 = ir.IntType(32), ir.IntType(64)
RANK_ROW = 128  # rows of at most this many keys fit the stack buffer


def _rank_function(module: ir.Module, width: int, form: str) -> str:
    """Work item `row` writes position i at its rank in the row's stable order."""
    kernel = ordered_rows.row_kernel(module, "rank", width, form, ())
    b, n, out, word = kernel.b, kernel.w["n"], kernel.out, kernel.word
    word_type = ir.IntType(width)
    row_words = b.alloca(word_type, size=i64(RANK_ROW), name="words")
    count_at = b.alloca(I32, name="count")
    loops = LoopBuilder(b)

    def item(row):
        base = b.mul(row, n)

        def load(j):
            b.store(word(j, base), b.gep(row_words, [j]))

        loops.counted(i64(0), n, 1, load, "load")

        def place(i):
            mine = b.load(b.gep(row_words, [i]))
            b.store(ir.Constant(I32, 0), count_at)

            def compare(j):
                other = b.load(b.gep(row_words, [j]))
                tie = b.and_(b.icmp_unsigned("==", other, mine), b.icmp_signed("<", j, i))
                before = b.or_(b.icmp_unsigned("<", other, mine), tie)
                b.store(b.add(b.load(count_at), b.zext(before, I32)), count_at)

            loops.counted(i64(0), n, 1, compare, "compare")
            rank = b.zext(b.load(count_at), I64)
            b.store(i, b.gep(out, [b.add(base, rank)]))

        loops.counted(i64(0), n, 1, place, "place")

    loops.counted(kernel.fn.args[1], kernel.fn.args[2], 1, item, "row")
    b.ret_void()
    return kernel.fn.name


def spec(width: int) -> tuple[str, Callable[[ir.Module], list[str]]]:
    """The module name and builder of the rank kernels for keys of `width` bits."""
    return ordered_rows.spec("rank", width, _rank_function)


def order(
    runner, dtype: DType, keys: int, rows: int, n: int, descending: bool, out: int
) -> None:  # fmt: skip
    """Write the stable order of each of `rows` rows of n <= RANK_ROW contiguous keys at
    `keys` into the int64 [rows, n] buffer at `out`: one launch, a row a work item."""
    if n > RANK_ROW:  # the kernel's stack buffer holds a row of at most RANK_ROW words
        raise ValueError(f"rank.order(): a row of {n} keys is longer than RANK_ROW ({RANK_ROW})")
    first = [keys, out, n, descending]
    ordered_rows.launch(runner, "rank", _rank_function, dtype, first, [], rows, rows * n * (n + 8))
