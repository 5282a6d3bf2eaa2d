"""The binary-search kernel of searchsorted and bucketize, built with llvmlite; scalar and
target-neutral, so a GPU runs the same builder (handwritten.runner_for).

A work item is one value: row = item // per_row finds its sorted row (stride 0: one row for
all), then PyTorch's bounds: the lower bound moves right while !(value <= row[mid]), the
upper while !(value < row[mid]), so NaN (never less or equal) ranks past every value as
PyTorch places it. The position is stored as int64 or int32.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.cpu import handwritten
from kael.codegen.cpu.loops import LoopBuilder
from kael.codegen.lowering import i64, memory_type, widen
from kael.runtime.dtypes import DType
from kael.runtime.tensor_impl import ptr_on

ARGS = ("seq", "values", "out", "n", "per_row", "row_stride", "right", "out32")
I32, I64 = ir.IntType(32), ir.IntType(64)


def symbol(dtype: DType) -> str:
    return f"kael_searchsorted_{dtype.name}"


def _emit(module: ir.Module, dtype: DType) -> list[str]:
    fn, b = handwritten.kernel_function(module, symbol(dtype))
    w = {n: b.load(b.gep(fn.args[0], [i64(i)]), name=n) for i, n in enumerate(ARGS)}
    t = memory_type(dtype).as_pointer()
    seq0, vals = b.inttoptr(w["seq"], t), b.inttoptr(w["values"], t)
    out64, out32 = b.inttoptr(w["out"], I64.as_pointer()), b.inttoptr(w["out"], I32.as_pointer())
    right = b.icmp_signed("!=", w["right"], i64(0))
    narrow_out = b.icmp_signed("!=", w["out32"], i64(0))
    lo, hi = b.alloca(I64, name="lo"), b.alloca(I64, name="hi")
    loops = LoopBuilder(b)
    floating = dtype.is_floating_point

    def less_or_equal(x, y, strict):
        if floating:
            return b.fcmp_ordered("<" if strict else "<=", x, y)
        op = "<" if strict else "<="
        return b.icmp_signed(op, x, y) if dtype.signed else b.icmp_unsigned(op, x, y)

    def item(it):
        row = b.sdiv(it, w["per_row"])
        seq = b.gep(seq0, [b.mul(row, w["row_stride"])])
        value = widen(b, b.load(b.gep(vals, [it])), dtype)
        b.store(i64(0), lo)
        b.store(w["n"], hi)
        head, body, done = (fn.append_basic_block(f"search.{n}") for n in ("head", "body", "done"))
        b.branch(head)
        b.position_at_end(head)
        b.cbranch(b.icmp_signed("<", b.load(lo), b.load(hi)), body, done)
        b.position_at_end(body)
        low, high = b.load(lo), b.load(hi)
        mid = b.add(low, b.ashr(b.sub(high, low), i64(1)))
        probe = widen(b, b.load(b.gep(seq, [mid])), dtype)
        stays = b.select(
            right, less_or_equal(value, probe, True), less_or_equal(value, probe, False)
        )
        b.store(b.select(stays, low, b.add(mid, i64(1))), lo)
        b.store(b.select(stays, mid, high), hi)
        b.branch(head)
        b.position_at_end(done)
        found = b.load(lo)
        with b.if_else(narrow_out) as (narrow, wide):
            with narrow:
                b.store(b.trunc(found, I32), b.gep(out32, [it]))
            with wide:
                b.store(found, b.gep(out64, [it]))

    loops.counted(fn.args[1], fn.args[2], 1, item, "value")
    b.ret_void()
    return [symbol(dtype)]


def run(seq, values, out, per_row: int, right: bool) -> None:
    """out[i] = the insertion position of values[i] in its row of seq (impls: contiguous
    seq [rows, n] or [n], values [rows * per_row], out int64 or int32 of values' count)."""
    dtype = seq.dtype
    name = f"kael_searchsorted_{dtype.name}"
    n = seq.shape[-1]
    row_stride = n if len(seq.shape) > 1 else 0
    words = [
        *(ptr_on(t, seq.device, name) for t in (seq, values, out)), n, max(per_row, 1),
        row_stride, int(right), int(out.dtype.itemsize == 4),
    ]  # fmt: skip
    runner = handwritten.runner_for(seq.device)
    try:
        count = values.numel()
        moved = count * 16 * max(1, n.bit_length())
        runner.run(name, lambda m: _emit(m, dtype), symbol(dtype), words, count, moved)
    finally:
        runner.close()
