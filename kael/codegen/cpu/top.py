"""topk of rows by a heap as a hand-written kernel: what topk runs unless k is large.

A row is a work item. Its keys become radix.py's ordered words, inverted when the largest
are asked, so one unsigned compare orders two keys as the stable sort does (NaN the
largest, -0 as +0) and ties go by position. The row's first k positions fill a heap
rooted at the worst of them. Every later key is compared with a limit held in a register
(the root's word, and no worse than the worst of the row's last k keys, which can keep a
key out but never wrongly: k keys sort before any worse one) and enters, sifting down
from the root, only when it sorts before it. On the CPU the compare takes a vector of keys
at once and looks at the keys one by one only when one of them enters: rarely, once the
heap holds good keys. A row in random order makes about k ln(n / k) entries, one in
ascending or descending order about k (the tail's limit, or the first k, keep the rest
out); at worst a key an entry, n log2(k) steps. At the end the heap gives up its worst
entry at a time to the end of its shrinking front, which leaves the k positions in order,
and writes the keys there as topk's values.
Target-neutral: a GPU thread runs a row, one key at a time.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from kael.codegen.cpu import ordered_rows
from kael.codegen.cpu.loops import LoopBuilder
from kael.codegen.lowering import declare, i64, splat
from kael.runtime.dtypes import DType

I64 = ir.IntType(64)


def _heap_function(module: ir.Module, width: int, form: str) -> str:
    """Work item `row` writes the first k positions of its row's stable order."""
    kernel = ordered_rows.row_kernel(module, "top_heap", width, form, ("k", "values"))
    b, w, keys, word_type = kernel.b, kernel.w, kernel.keys, kernel.word_type
    n, k = w["n"], w["k"]
    values = b.inttoptr(w["values"], word_type.as_pointer())
    hole_at = b.alloca(I64, name="hole")
    root_at = b.alloca(word_type, name="root")
    tail_at, limit_at = b.alloca(word_type, name="tail"), b.alloca(word_type, name="limit")
    mask_at = b.alloca(I64, name="mask")
    cttz = declare(b.module, "llvm.cttz.i64", ir.FunctionType(I64, [I64, ir.IntType(1)]))
    lanes = ordered_rows.lanes(module, width)
    loops = LoopBuilder(b)

    def item(row):
        base = b.mul(row, n)
        heap = b.gep(kernel.out, [b.mul(row, k)])

        def word(p):
            return kernel.word(p, base)

        def worse(p, wp, q, wq):  # entry p sorts after entry q
            tie = b.and_(b.icmp_unsigned("==", wp, wq), b.icmp_signed(">", p, q))
            return b.or_(b.icmp_unsigned(">", wp, wq), tie)

        def sift(start, p, wp, size):
            """Put position p (word wp) into the hole at `start` of the heap's first `size`
            entries, moving the worse child up while it is worse than p."""
            b.store(start, hole_at)
            head, down, done = (b.append_basic_block(x) for x in ("sift", "down", "placed"))
            b.branch(head)
            b.position_at_end(head)
            hole = b.load(hole_at)
            left = b.add(b.mul(hole, i64(2)), i64(1))
            has_child = b.icmp_signed("<", left, size)
            right = b.add(left, i64(1))
            left = b.select(has_child, left, i64(0))  # no child: the loads stay in the heap
            right = b.select(b.icmp_signed("<", right, size), right, left)
            pl, pr = (b.load(b.gep(heap, [c])) for c in (left, right))
            wl, wr = word(pl), word(pr)
            take_right = worse(pr, wr, pl, wl)
            child = b.select(take_right, right, left)
            pc, wc = b.select(take_right, pr, pl), b.select(take_right, wr, wl)
            b.cbranch(b.and_(has_child, worse(pc, wc, p, wp)), down, done)
            b.position_at_end(down)
            b.store(pc, b.gep(heap, [hole]))
            b.store(child, hole_at)
            b.branch(head)
            b.position_at_end(done)
            b.store(p, b.gep(heap, [hole]))

        def heapify(j):  # from the last parent up to the root
            at = b.sub(b.sub(b.sdiv(k, i64(2)), i64(1)), j)
            p = b.load(b.gep(heap, [at]))
            sift(at, p, word(p), k)

        def limit():  # below the root's word and at most the tail's worst
            root = b.load(root_at)
            b.store(b.select(b.icmp_unsigned("<", root, tail), root, tail), limit_at)

        def enter(i, x):  # key i, of word x, against the limit
            with b.if_then(b.icmp_unsigned("<", x, b.load(limit_at)), likely=False):
                sift(i64(0), i, x, k)
                b.store(word(b.load(heap)), root_at)
                limit()

        loops.counted(i64(0), k, 1, lambda j: b.store(j, b.gep(heap, [j])), "fill")
        loops.counted(i64(0), b.sdiv(k, i64(2)), 1, heapify, "heapify")
        b.store(word(b.load(heap)), root_at)
        b.store(ir.Constant(word_type, 0), tail_at)

        def worst(j):  # of the row's last k keys
            x, most = word(b.add(b.sub(n, k), j)), b.load(tail_at)
            b.store(b.select(b.icmp_unsigned(">", x, most), x, most), tail_at)

        loops.counted(i64(0), k, 1, worst, "tail")
        most = b.load(tail_at)
        top = ir.Constant(word_type, (1 << width) - 1)
        tail = b.select(
            b.icmp_unsigned("==", most, top), top, b.add(most, ir.Constant(word_type, 1))
        )
        limit()
        scalar_from = k
        if lanes > 1:
            vector = ir.VectorType(word_type, lanes)
            blocks = b.sdiv(b.sub(n, k), i64(lanes))

            def block(j):
                start = b.add(k, b.mul(j, i64(lanes)))
                at = b.bitcast(b.gep(keys, [b.add(base, start)]), vector.as_pointer())
                words = kernel.order(b.load(at, align=width // 8))
                hits = b.icmp_unsigned("<", words, splat(b, b.load(limit_at), lanes))
                any_hit = b.bitcast(hits, ir.IntType(lanes))
                with b.if_then(b.icmp_unsigned("!=", any_hit, ir.Constant(any_hit.type, 0)),
                               likely=False):  # fmt: skip
                    # the hit lanes only, lowest first (each checked again: the limit falls)
                    b.store(b.zext(any_hit, I64), mask_at)
                    head, body, done = (b.append_basic_block(x) for x in ("hit", "lane", "lanes"))
                    b.branch(head)
                    b.position_at_end(head)
                    mask = b.load(mask_at)
                    b.cbranch(b.icmp_unsigned("!=", mask, i64(0)), body, done)
                    b.position_at_end(body)
                    lane = b.call(cttz, [mask, ir.Constant(ir.IntType(1), 1)])
                    b.store(b.and_(mask, b.sub(mask, i64(1))), mask_at)
                    enter(b.add(start, lane), b.extract_element(words, lane))
                    b.branch(head)
                    b.position_at_end(done)

            loops.counted(i64(0), blocks, 1, block, "block")
            scalar_from = b.add(k, b.mul(blocks, i64(lanes)))
        loops.counted(scalar_from, n, 1, lambda i: enter(i, word(i)), "scan")

        def take(j):  # the worst left goes to the end of the heap's shrinking front
            end = b.sub(b.sub(k, i64(1)), j)
            last = b.load(b.gep(heap, [end]))
            b.store(b.load(heap), b.gep(heap, [end]))
            sift(i64(0), last, word(last), end)

        loops.counted(i64(0), b.sub(k, i64(1)), 1, take, "take")

        def value(j):  # the key at the j-th place, topk's value
            key = b.load(b.gep(keys, [b.add(base, b.load(b.gep(heap, [j])))]))
            b.store(key, b.gep(values, [b.add(b.mul(row, k), j)]))

        with b.if_then(b.icmp_unsigned("!=", w["values"], i64(0))):
            loops.counted(i64(0), k, 1, value, "value")

    loops.counted(kernel.fn.args[1], kernel.fn.args[2], 1, item, "row")
    b.ret_void()
    return kernel.fn.name


def spec(width: int) -> tuple[str, Callable[[ir.Module], list[str]]]:
    """The module name and builder of the heap kernels for keys of `width` bits."""
    return ordered_rows.spec("top_heap", width, _heap_function)


def order(
    runner, dtype: DType, keys: int, rows: int, n: int, descending: bool, out: int, k: int,
    values: int = 0,
) -> tuple | None:  # fmt: skip
    """Write the first k (1 <= k <= n) positions of the stable order of each of `rows` rows
    of `n` contiguous keys at `keys` into the int64 [rows, k] buffer at `out`, and the keys
    there into [rows, k] at `values` unless it is 0: one launch, a row a work item
    (returned as ordered_rows.launch returns it)."""
    moved = rows * (n * dtype.itemsize + 8 * k)
    first = [keys, out, n, descending]
    return ordered_rows.launch(
        runner, "top_heap", _heap_function, dtype, first, [k, values], rows, moved
    )
