"""One kernel over many argument blocks, as one launch over the thread pool.

Divide and conquer merges a level's many small blocks the same way, each with its own
arrays: a launch each would cost more in Python and waking threads than the merges'
work (and leave a small merge on one thread). Here work item i of the launch is item
i % per of the kernel on block i // per, so the threads split the whole level; a kernel
whose own item count is below `per` for some block must let the extra items do
nothing. Launch records show the whole as one `kael_many` launch.

Words: the kernel's address, per, then the address of each block's words.
"""

from __future__ import annotations

import array
from collections.abc import Sequence

from kael.codegen.cpu import handwritten
from kael.codegen.cpu.loops import LoopBuilder
from kael.codegen.lowering import i64
from kael.runtime.launcher import PARALLEL_BYTES, launch

SYMBOL = "kael_many"
FIXED = 2  # the kernel, per


def _build(module) -> list[str]:
    fn, b = handwritten.kernel_function(module, SYMBOL)
    args, begin, end = fn.args
    kernel = handwritten.KERNEL_TYPE.as_pointer()
    target = b.inttoptr(b.load(args), kernel)
    per = b.load(b.gep(args, [i64(1)]))

    def item(i) -> None:
        block = b.load(b.gep(args, [b.add(i64(FIXED), b.sdiv(i, per))]))
        sub = b.srem(i, per)
        b.call(target, [b.inttoptr(block, args.type), sub, b.add(sub, i64(1))])

    LoopBuilder(b).counted(begin, end, 1, item, "item")
    b.ret_void()
    return [SYMBOL]


def run(fn, blocks: Sequence[Sequence[int]], per: int, bytes_moved: int = PARALLEL_BYTES) -> None:
    """fn's items [0, per) on each argument block of `blocks`, as one launch (on the pool
    from `bytes_moved`, its total work)."""
    if not blocks or per < 1:
        return
    arrays = [array.array("q", words) for words in blocks]  # alive until the launch ends
    words = [fn.address, per, *(a.buffer_info()[0] for a in arrays)]
    kernel = handwritten.compiled(SYMBOL, _build, passes=None, tiered=False)[SYMBOL]
    launch(kernel, words, len(arrays) * per, bytes_moved, 1)
