"""Rows of bytes copied between dense buffers: cat and stack of dense tensors of one dtype.

Joining dense pieces along a dim is, for each of the `rows` index tuples before that dim, a
run of each piece's bytes (its row) placed at that piece's offset in the output's row. One
launch copies every piece: work item j is row j // k of piece j % k (k pieces), so a cat
along dim 0 (one row) still splits its pieces over the threads. Nothing is planned per
shape, so a sequence that grows by one step a call (a cache of keys and values) costs the
same as a fixed one. Words: out, out_row (bytes), k, then per piece its address, its row
bytes and its offset in the output's row. Each row is one llvm.memcpy (libc's wide moves).
"""

from __future__ import annotations

import array
from collections.abc import Sequence

from llvmlite import ir

from kael.codegen.cpu import handwritten, native_launch
from kael.codegen.cpu.loops import LoopBuilder
from kael.codegen.lowering import declare, i64
from kael.runtime.launcher import replayable, run_block

SYMBOL = "kael_block_copy"
I8P = ir.IntType(8).as_pointer()
I64 = ir.IntType(64)
FIXED = 3  # out, out_row, pieces; then (address, row, offset) per piece
PER_PIECE = 3


def _build(module: ir.Module) -> list[str]:
    fn, b = handwritten.kernel_function(module, SYMBOL)
    args, begin, end = fn.args

    def word(i: ir.Value) -> ir.Value:
        return b.load(b.gep(args, [i]))

    out, out_row, pieces = (word(i64(k)) for k in range(FIXED))
    memcpy = declare(
        module,
        "llvm.memcpy.p0.p0.i64",
        ir.FunctionType(ir.VoidType(), [I8P, I8P, I64, ir.IntType(1)]),
    )

    def item(j: ir.Value) -> None:
        row = b.udiv(j, pieces)
        piece = b.sub(j, b.mul(row, pieces))
        at = b.add(i64(FIXED), b.mul(piece, i64(PER_PIECE)))
        src, length, offset = (word(b.add(at, i64(k))) for k in range(PER_PIECE))
        dst = b.add(b.add(out, b.mul(row, out_row)), offset)
        source = b.add(src, b.mul(row, length))
        b.call(
            memcpy,
            [b.inttoptr(dst, I8P), b.inttoptr(source, I8P), length, ir.Constant(ir.IntType(1), 0)],
        )

    LoopBuilder(b).counted(begin, end, 1, item, "item")
    b.ret_void()
    return [SYMBOL]


def _function():
    return handwritten.compiled("block_copy", _build)[SYMBOL]


def copy_rows(
    out: int, out_row: int, rows: int, pieces: Sequence[tuple[int, int, int]]
) -> tuple | None:
    """For each of `rows` rows, each piece (address, row bytes, offset) copies its row r
    (at address + r * row bytes) to out + r * out_row + offset. Returns (kernel, native
    descriptor, work items) for a door replaying the copy by addresses (the output's, then
    each piece's) where a door may replay it (launcher.replayable), else None."""
    total = rows * len(pieces)
    if total == 0:
        return None
    words = [out, out_row, len(pieces)]
    for piece in pieces:
        words += piece
    moved = 2 * rows * sum(row for _, row, _ in pieces)
    fn = _function()
    run_block(fn, array.array("q", words), total, moved, 1)
    if not replayable(fn, moved):
        return None
    positions = (0, *(FIXED + PER_PIECE * k for k in range(len(pieces))))
    template = [0 if i in positions else w for i, w in enumerate(words)]
    native = native_launch.describe(fn, template, positions, max(1, moved // total))
    return None if native is None else (fn, native, total)


def ir_text() -> str:
    """The kernel's LLVM IR (for inspection and tests)."""
    return handwritten.compiled("block_copy", _build).text
