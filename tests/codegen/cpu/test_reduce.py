"""The CPU reduction kernels: block boundaries, lane order and the pairwise tree, bit for bit.

The references below restate the documented order in NumPy (kael/codegen/cpu/reduce.py):
within a 16384-element block, 8-lane float64 accumulators unrolled 4 times, then a
vector step into accumulator 0, then a scalar tail; accumulators combined pairwise,
lanes folded by halves, the tail added last; block partials combined bottom-up in pairs.
"""

import math

import numpy as np
import pytest
from kernel_helpers import empty_like_np, impl_of

import kael
from kael.codegen.cpu import reduce as cpu_reduce
from kael.frontend import eager
from kael.ir import graph as g
from kael.ir.kernel import STRIDED
from kael.ir.reduction import BLOCK, COLS, ROWS, plan_reduction
from kael.runtime.dtypes import float64, int64

W, U = 8, 4


def lanes_sum(block: np.ndarray) -> float:
    """One contiguous block in the kernel's lane order."""
    acc = np.zeros((U, W))
    n = len(block)
    main = n // (W * U) * (W * U)
    for j in range(0, main, W * U):
        acc = acc + block[j : j + W * U].reshape(U, W)
    j = main
    while j + W <= n:
        acc[0] = acc[0] + block[j : j + W]
        j += W
    tail = 0.0
    for x in block[j:]:
        tail = tail + float(x)
    v = (acc[0] + acc[1]) + (acc[2] + acc[3])
    while len(v) > 1:
        h = len(v) // 2
        v = v[:h] + v[h:]
    return float(v[0]) + tail


def tree(partials: list[float]) -> float:
    """Bottom-up pairwise: span 1, 2, 4...; p[i] += p[i + span] for i stepping 2 * span."""
    p = list(partials)
    span = 1
    while span < len(p):
        for i in range(0, len(p) - span, 2 * span):
            p[i] = p[i] + p[i + span]
        span *= 2
    return p[0]


def reference_sum(x: np.ndarray, block_sum=lanes_sum) -> float:
    blocks = [x[b : b + BLOCK] for b in range(0, len(x), BLOCK)] or [x]
    return tree([block_sum(b) for b in blocks])


def sequential(block: np.ndarray) -> float:
    total = 0.0
    for v in block:
        total = total + float(v)
    return total


def _sum_template():
    def build():
        x = g.Input(float64, (), "x")
        return "test_sum_f64", [g.Reduce(float64, (), "sum", x, ())]

    return eager.reduction_template(("test_reduce", "sum"), build)


def run_sum(arr: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    kept = tuple(s for d, s in enumerate(arr.shape) if d not in axes)
    out, out_impl = empty_like_np(kept, np.float64)
    eager.run_reduction(_sum_template(), [out_impl], [impl_of(arr)], axes)
    return out


@pytest.mark.parametrize(
    "n", [1, 7, 31, 33, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK, 3 * BLOCK + 7, 5 * BLOCK + 1]
)
def test_contiguous_sum_follows_lanes_blocks_and_tree_bit_for_bit(n):
    x = np.random.default_rng(n).standard_normal(n) * 1e3
    assert run_sum(x, (0,))[()] == reference_sum(x)


@pytest.mark.parametrize("n", [BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK + 3])
def test_strided_sum_gathers_lanes_in_the_contiguous_order(n):
    base = np.random.default_rng(n).standard_normal(2 * n)
    x = base[::2]
    assert run_sum(x, (0,))[()] == reference_sum(x)


@pytest.mark.parametrize("rows", [BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 2])
def test_outer_dim_sum_accumulates_each_column_in_order_then_the_tree(rows):
    x = np.random.default_rng(rows).standard_normal((rows, 9))
    got = run_sum(x, (0,))
    want = [reference_sum(x[:, c], sequential) for c in range(9)]
    assert got.tolist() == want


def test_three_blocks_combine_as_first_pair_then_the_carried_one():
    x = np.zeros(3 * BLOCK)
    x[0], x[BLOCK], x[2 * BLOCK] = 1e16, 1.0, 1.0
    # (1e16 + 1) + 1 rounds twice to 1e16; 1e16 + (1 + 1) would give 1e16 + 2.
    assert run_sum(x, (0,))[()] == 1e16


def test_four_blocks_combine_in_pairs():
    x = np.zeros(4 * BLOCK)
    x[0], x[BLOCK], x[2 * BLOCK], x[3 * BLOCK] = 1e16, 1.0, 1.0, 1.0
    # (1e16 + 1) + (1 + 1) = 1e16 + 2; a running sum would stay at 1e16.
    assert run_sum(x, (0,))[()] == 1e16 + 2


def test_a_block_holds_exactly_16384_elements():
    x = np.zeros(BLOCK + 2)
    x[0], x[BLOCK], x[BLOCK + 1] = 1e16, 1.0, 1.0
    # Block 1 is [1, 1] = 2, so the total is 1e16 + 2; had element 16384 fallen in
    # block 0, 1e16 + 1 would round to 1e16 twice.
    assert run_sum(x, (0,))[()] == 1e16 + 2
    y = np.zeros(BLOCK)
    y[0], y[BLOCK - 1] = 1e16, 3.0
    assert run_sum(y, (0,))[()] == lanes_sum(y) == 1e16 + 4


def test_plan_picks_rows_for_inner_and_cols_for_outer_reductions():
    p = plan_reduction((4096, 4096), (1,), [(1,)], [(4096, 1)])
    assert (p.schedule, p.vector, p.kept, p.reduced) == (ROWS, True, (4096,), (4096,))
    p = plan_reduction((4096, 4096), (0,), [(1,)], [(4096, 1)])
    assert (p.schedule, p.columns, p.chunks, p.blocks) == (COLS, 4096, 1, 1)
    p = plan_reduction((4096, 4096), (0,), [(1,)], [(4096, 1)], threads=2)
    assert (p.columns, p.chunks, p.work_items) == (2048, 2, 2)
    p = plan_reduction((40000, 4), (0,), [(1,)], [(4, 1)])
    assert p.schedule == ROWS and p.inners == (STRIDED,)  # too few columns: gather rows
    p = plan_reduction((2, 3, 4), (0, 1, 2), [()], [(12, 4, 1)])
    assert p.reduced == (24,) and p.kept == () and p.work_items == 1


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_cols_chunks_follow_the_thread_count_without_changing_any_sum(threads):
    x = np.random.default_rng(3).standard_normal((703, 1100))  # 703 rows: groups of 4 and 3
    saved = kael.get_num_threads()
    kael.set_num_threads(threads)
    try:
        got = run_sum(x, (0,))
    finally:
        kael.set_num_threads(saved)
    want = [sequential(x[:, c]) for c in range(1100)]
    assert got.tolist() == want


def test_identities_of_each_op():
    assert cpu_reduce.identity("sum", float64) == 0
    assert cpu_reduce.identity("prod", int64) == 1
    assert cpu_reduce.identity("max", float64) == -math.inf
    assert cpu_reduce.identity("argmin", int64) == 2**63 - 1
    assert cpu_reduce.identity("all", float64) == 1
