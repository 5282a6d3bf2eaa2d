"""A stable merge sort of rows as a hand-written kernel: what sorts rows too long for the
radix sort's int32 positions.

sort and argsort take the rank kernel (codegen/cpu/rank.py) for rows of at most RANK_ROW
keys and the radix sort (codegen/cpu/radix.py) above that, on every device. The merge sort
takes what is left: one launch per merge pass, each work item merging two sorted runs of
`width` positions of one row into the other buffer, so a pass over R rows of n elements
has R * ceil(n / 2 width) independent items; the first pass reads positions themselves, so
no buffer is initialized. The order is the host's: stable, NaN after every number
ascending and before every number descending, ties in input order both ways. The builder
is target-neutral: codegen/ptx/handwritten.py runs it on the GPU, the CPU through
handwritten.HostRunner.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from llvmlite import ir

from kael.codegen.cpu import handwritten
from kael.codegen.cpu.loops import LoopBuilder
from kael.codegen.lowering import i64, memory_type, widen
from kael.runtime.dtypes import DType

I64 = ir.IntType(64)
WORDS = ("keys", "src", "dst", "n", "width", "merges", "descending")


def _before(b: ir.IRBuilder, dtype: DType, x: ir.Value, y: ir.Value, descending) -> ir.Value:
    """Whether key x sorts strictly before key y (ties keep their order: not before)."""
    if dtype.is_floating_point:
        x_nan, y_nan = b.fcmp_unordered("uno", x, x), b.fcmp_unordered("uno", y, y)
        up = b.or_(b.fcmp_ordered("<", x, y), b.and_(b.not_(x_nan), y_nan))
        down = b.or_(b.fcmp_ordered(">", x, y), b.and_(x_nan, b.not_(y_nan)))
    else:
        cmp = b.icmp_signed if dtype.signed else b.icmp_unsigned  # uint8 and bool are not
        up, down = cmp("<", x, y), cmp(">", x, y)
    return b.select(descending, down, up)


def _merge_function(module: ir.Module, dtype: DType) -> str:
    """Work item m merges runs [lo, mid) and [mid, hi) of row m // merges into dst."""
    symbol = f"kael_merge_{dtype.name}"
    fn, b = handwritten.kernel_function(module, symbol)
    args = fn.args[0]
    w = {name: b.load(b.gep(args, [i64(k)]), name=name) for k, name in enumerate(WORDS)}
    keys = b.inttoptr(w["keys"], memory_type(dtype).as_pointer())
    src, dst = (b.inttoptr(w[name], I64.as_pointer()) for name in ("src", "dst"))
    n, width, merges = w["n"], w["width"], w["merges"]
    descending = b.icmp_signed("!=", w["descending"], i64(0))
    first_pass = b.icmp_signed("==", width, i64(1))
    i_at, j_at = b.alloca(I64, name="i"), b.alloca(I64, name="j")

    def smaller(x, y):
        return b.select(b.icmp_signed("<", x, y), x, y)

    def item(m):
        row, k = b.sdiv(m, merges), b.srem(m, merges)
        base = b.mul(row, n)
        lo = b.mul(k, b.mul(width, i64(2)))
        mid, hi = smaller(b.add(lo, width), n), smaller(b.add(lo, b.mul(width, i64(2))), n)

        def position(at):  # the run's entry: the position itself on the first pass
            return b.select(first_pass, at, b.load(b.gep(src, [b.add(base, at)])))

        b.store(lo, i_at)
        b.store(mid, j_at)

        def out(o):
            i, j = b.load(i_at), b.load(j_at)
            left_open, right_open = b.icmp_signed("<", i, mid), b.icmp_signed("<", j, hi)
            pi = position(smaller(i, b.sub(mid, i64(1))))
            pj = position(smaller(j, b.sub(hi, i64(1))))
            ki = widen(b, b.load(b.gep(keys, [b.add(base, pi)])), dtype)
            kj = widen(b, b.load(b.gep(keys, [b.add(base, pj)])), dtype)
            before = _before(b, dtype.compute, kj, ki, descending)
            right = b.and_(right_open, b.or_(b.not_(left_open), before))
            b.store(b.select(right, pj, pi), b.gep(dst, [b.add(base, o)]))
            b.store(b.select(right, i, b.add(i, i64(1))), i_at)
            b.store(b.select(right, b.add(j, i64(1)), j), j_at)

        LoopBuilder(b).counted(lo, hi, 1, out, "out")

    LoopBuilder(b).counted(fn.args[1], fn.args[2], 1, item, "merge")
    b.ret_void()
    return symbol


def spec(dtype: DType) -> tuple[str, Callable[[ir.Module], list[str]]]:
    """The module name and builder of the merge kernel for keys of `dtype`."""
    return f"kael_merge_{dtype.name}", lambda module: [_merge_function(module, dtype)]


def order(
    runner, dtype: DType, keys: int, rows: int, n: int, descending: bool, scratch: Sequence[int]
) -> int:
    """Sort `rows` rows of `n` contiguous keys at `keys`: the address (one of the two int64
    [rows, n] buffers in `scratch`) holding each row's stable order."""
    name, build = spec(dtype)
    src, dst = scratch
    width = 1
    while True:
        merges = -(-n // (2 * width))
        words = [keys, src, dst, n, width, merges, int(descending)]
        runner.run(name, build, f"kael_merge_{dtype.name}", words, rows * merges, 16 * rows * n)
        src, dst = dst, src
        width *= 2
        if width >= n:
            return src
