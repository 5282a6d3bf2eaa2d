"""One kernel over many argument blocks (kael/codegen/cpu/many.py): every item of every
block runs once with its own block's words, on one thread or two, and a block whose
own item count is below `per` lets the extra items do nothing."""

import numpy as np
import pytest
from llvmlite import ir

import kael
from kael.codegen.cpu import dense, many

WORDS = ("out", "count", "tag")


def _item(d: dense.Dense, item: ir.Value) -> None:
    """out[item] += tag + item, for the block's first `count` items only."""
    b = d.b
    with d.when(b.icmp_signed("<", item, d.w["count"])):
        at = b.gep(d.ptr("out"), [item])
        b.store(d.add(b.load(at), b.sitofp(b.add(d.w["tag"], item), d.t)), at)


def _kernel():
    name = "kael_test_many_item"
    return dense.kernel(name, lambda m: dense.per_matrix(m, name, kael.float64, WORDS, _item), name)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("bytes_moved", [0, 1 << 30])
def test_every_item_of_every_block_runs_once_with_its_own_words(threads, bytes_moved):
    counts = [5, 1, 7, 3, 7]
    outs = [np.zeros(7) for _ in counts]
    blocks = [[out.ctypes.data, c, 100 * (k + 1)] for k, (out, c) in enumerate(zip(outs, counts))]
    saved = kael.get_num_threads()
    kael.set_num_threads(threads)
    try:
        many.run(_kernel(), blocks, max(counts), bytes_moved)
    finally:
        kael.set_num_threads(saved)
    for k, (out, c) in enumerate(zip(outs, counts)):
        want = np.where(np.arange(7) < c, 100 * (k + 1) + np.arange(7), 0.0)
        np.testing.assert_array_equal(out, want)


def test_no_blocks_or_no_items_launch_nothing():
    out = np.zeros(3)
    many.run(_kernel(), [], 3)
    many.run(_kernel(), [[out.ctypes.data, 3, 1]], 0)
    np.testing.assert_array_equal(out, 0.0)
