"""A chain of launches beside another launch, as one launch over the thread pool.

Work item 0 runs the chain's launches one after another, every item of each (a blocked
LU's next panel: its columns' update, then its factorization, single-threaded), and
items 1.. are the other launch's items (the rest of the trailing product). The calling
thread takes the first range, so it runs the chain while the other threads start on the
product; on the native pool (parallel.py) whoever finishes takes the items not yet
claimed (the Python fallback pool splits the ranges once). The chain and the other launch
must touch disjoint memory (reads of a shared operand aside). Launch records (KAEL_DEBUG,
kael.explain) show the whole as one `kael_pair` launch.

Words: the other kernel's address and argument block, the chain's length, then per
launch of the chain its kernel's address, argument block and item count.
"""

from __future__ import annotations

import array
from collections.abc import Sequence

from llvmlite import ir

from kael.codegen.cpu import handwritten
from kael.codegen.cpu.loops import LoopBuilder
from kael.codegen.lowering import i64
from kael.runtime.launcher import PARALLEL_BYTES, launch

SYMBOL = "kael_pair"
I64 = ir.IntType(64)
FIXED = 3  # the other kernel, its block, the chain's length
PER_LAUNCH = 3  # kernel, block, items


def _build(module: ir.Module) -> list[str]:
    fn, b = handwritten.kernel_function(module, SYMBOL)
    args, begin, end = fn.args
    kernel = handwritten.KERNEL_TYPE.as_pointer()

    def word(i: ir.Value) -> ir.Value:
        return b.load(b.gep(args, [i]))

    def call(address: ir.Value, block: ir.Value, lo: ir.Value, hi: ir.Value) -> None:
        b.call(b.inttoptr(address, kernel), [b.inttoptr(block, I64.as_pointer()), lo, hi])

    other, other_block, chain = (word(i64(k)) for k in range(FIXED))
    with b.if_then(b.icmp_signed("==", begin, i64(0))):

        def link(k: ir.Value) -> None:
            at = b.add(i64(FIXED), b.mul(k, i64(PER_LAUNCH)))
            address, block = word(at), word(b.add(at, i64(1)))
            call(address, block, i64(0), word(b.add(at, i64(2))))

        LoopBuilder(b).counted(i64(0), chain, 1, link, "link")
    first = b.select(b.icmp_signed("==", begin, i64(0)), i64(1), begin)
    with b.if_then(b.icmp_signed("<", first, end)):
        call(other, other_block, b.sub(first, i64(1)), b.sub(end, i64(1)))
    b.ret_void()
    return [SYMBOL]


def run(chain: Sequence[tuple], other: tuple) -> None:
    """Launch the (kernel, argument words, items) of `chain` in order as work item 0, and
    `other`'s items as items 1.., in one launch on the pool."""
    blocks = [array.array("q", words) for _, words, _ in (*chain, other)]
    words = [other[0].address, blocks[-1].buffer_info()[0], len(chain)]
    for (fn, _, items), block in zip(chain, blocks[:-1], strict=True):
        words += [fn.address, block.buffer_info()[0], items]
    kernel = handwritten.compiled(SYMBOL, _build, passes=None, tiered=False)[SYMBOL]
    launch(kernel, words, 1 + other[2], PARALLEL_BYTES, 1)


def run_in_order(chain: Sequence[tuple]) -> None:
    """The launches of `chain` one after another on the calling thread (where the other
    launch could not take them along)."""
    for fn, words, items in chain:
        launch(fn, list(words), items, 0, 1)
