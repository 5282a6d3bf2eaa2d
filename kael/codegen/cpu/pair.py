"""Chains of launches run beside one another, as one launch over the thread pool.

A chain is launches run one after another, every item of each, on one thread: a blocked
LU's next panel (its columns' update, then its factorization), or a triangular solve's
share of the right-hand sides (a product and a diagonal block per block row).

`step`: work item 0 runs a chain and items 1.. are another launch's items (the rest of the
LU's trailing product). The calling thread takes the first range, so it runs the chain
while the other threads start on the product; on the native pool (parallel.py) whoever
finishes takes the items not yet claimed (the Python fallback pool splits the ranges
once). `chains_step`: work item i runs chain i, chains that share no memory they write
(column blocks of one solve), with no launch between their steps. Either way the chains
and the other launch must touch disjoint memory (reads of a shared operand aside).
Launch records (KAEL_DEBUG, kael.explain) show the whole as one `kael_pair` or
`kael_chains` launch.

A chain's words: its length, then per launch its kernel's address, argument block and
item count. `kael_pair`'s words: the other kernel's address and argument block, then the
chain's words' address; `kael_chains`'s: each chain's words' address.
"""

from __future__ import annotations

import array
from collections.abc import Sequence

from llvmlite import ir

from kael.codegen.cpu import handwritten
from kael.codegen.cpu.loops import LoopBuilder
from kael.codegen.cpu.program import Step
from kael.codegen.lowering import i64
from kael.runtime.launcher import PARALLEL_BYTES, RELEASE_BYTES

PAIR, CHAINS = "kael_pair", "kael_chains"
I64 = ir.IntType(64)
PER_LAUNCH = 3  # kernel, block, items


def _call(b: ir.IRBuilder, address: ir.Value, block: ir.Value, lo: ir.Value, hi: ir.Value):
    kernel = handwritten.KERNEL_TYPE.as_pointer()
    b.call(b.inttoptr(address, kernel), [b.inttoptr(block, I64.as_pointer()), lo, hi])


def _run_chain(b: ir.IRBuilder, address: ir.Value) -> None:
    """Every launch of the chain whose words are at `address`, in order."""
    chain = b.inttoptr(address, I64.as_pointer())

    def word(i: ir.Value) -> ir.Value:
        return b.load(b.gep(chain, [i]))

    def link(k: ir.Value) -> None:
        at = b.add(i64(1), b.mul(k, i64(PER_LAUNCH)))
        _call(b, word(at), word(b.add(at, i64(1))), i64(0), word(b.add(at, i64(2))))

    LoopBuilder(b).counted(i64(0), word(i64(0)), 1, link, "link")


def _build_pair(module: ir.Module) -> list[str]:
    fn, b = handwritten.kernel_function(module, PAIR)
    args, begin, end = fn.args
    other, other_block, chain = (b.load(b.gep(args, [i64(k)])) for k in range(3))
    with b.if_then(b.icmp_signed("==", begin, i64(0))):
        _run_chain(b, chain)
    first = b.select(b.icmp_signed("==", begin, i64(0)), i64(1), begin)
    with b.if_then(b.icmp_signed("<", first, end)):
        _call(b, other, other_block, b.sub(first, i64(1)), b.sub(end, i64(1)))
    b.ret_void()
    return [PAIR]


def _build_chains(module: ir.Module) -> list[str]:
    fn, b = handwritten.kernel_function(module, CHAINS)
    args, begin, end = fn.args
    item = lambda i: _run_chain(b, b.load(b.gep(args, [i])))  # noqa: E731
    LoopBuilder(b).counted(begin, end, 1, item, "chain")
    b.ret_void()
    return [CHAINS]


def _chain_words(chain: Sequence[tuple], keep: list) -> int:
    """The address of `chain`'s words; they and its launches' argument blocks go into
    `keep`, to live as long as the launch."""
    words = [len(chain)]
    for fn, block, items in chain:
        block = array.array("q", block)
        keep.append(block)
        words += [fn.address, block.buffer_info()[0], items]
    keep.append(array.array("q", words))
    return keep[-1].buffer_info()[0]


def step(chain: Sequence[tuple], other: tuple) -> Step:
    """The launch that runs the (kernel, argument words, items) of `chain` in order as
    work item 0, and `other`'s items as items 1.., on the pool."""
    keep: list = [array.array("q", other[1])]
    words = [other[0].address, keep[0].buffer_info()[0], _chain_words(chain, keep)]
    kernel = handwritten.compiled(PAIR, _build_pair, passes=None, tiered=False)[PAIR]
    return Step(kernel, array.array("q", words), 1 + other[2], PARALLEL_BYTES, nested=tuple(keep))


def chains_step(chains: Sequence[Sequence[tuple]]) -> Step:
    """The launch that runs each chain of (kernel, argument words, items) as one work item
    (its chains beside one another) on the pool."""
    keep: list = []
    words = [_chain_words(chain, keep) for chain in chains]
    kernel = handwritten.compiled(CHAINS, _build_chains, passes=None, tiered=False)[CHAINS]
    # one chain runs inline, its long work without the GIL
    moved = PARALLEL_BYTES if len(words) > 1 else RELEASE_BYTES
    return Step(kernel, array.array("q", words), len(words), moved, nested=tuple(keep))


def in_order(chain: Sequence[tuple]) -> list[Step]:
    """The launches of `chain` as steps one after another on the calling thread (where the
    other launch could not take them along)."""
    return [Step.of(fn, words, items, 0) for fn, words, items in chain]
