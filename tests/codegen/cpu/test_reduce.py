"""The CPU reduction kernels: block boundaries, lane order and the pairwise tree, bit for bit.

The references below restate the documented order in NumPy (kael/codegen/cpu/reduce.py):
within a 16384-element block, 8-lane float64 accumulators unrolled 4 times, then a
vector step into accumulator 0, then a scalar tail; accumulators combined pairwise,
lanes folded by halves, the tail added last; block partials combined bottom-up in pairs.
A float32 sum with a float32 result has 16 lanes and adds its unrolled steps in float32
runs before widening them.
"""

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest
from kernel_helpers import empty_like_np, impl_of

import kael
from kael.codegen.cpu import reduce as cpu_reduce
from kael.frontend import eager
from kael.ir import graph as g
from kael.ir.kernel import STRIDED
from kael.ir.printer import format_reduction
from kael.ir.reduction import BLOCK, COLS, ROWS, RUN_LENGTH, plan_reduction
from kael.ir.scheduler import schedule_reduction
from kael.runtime.dtypes import bool_, float64, int64

W, U = 8, 4


def lanes_sum(block: np.ndarray, lanes: int = W, run: int = 0) -> float:
    """One contiguous block in the kernel's lane order. `run`: float32 values are added in
    float32, `run` unrolled steps at a time, each run's total then widened (run_dtype)."""
    acc = np.zeros((U, lanes))
    n = len(block)
    main = n // (lanes * U) * (lanes * U)
    span = lanes * U * (run or 1)
    for r in range(0, main + 1 if run else main, span):  # runs: a last, partial one too
        part = np.zeros((U, lanes), block.dtype if run else np.float64)
        for j in range(r, min(r + span, main), lanes * U):
            part = part + block[j : j + lanes * U].reshape(U, lanes)
        acc = acc + part
    j = main
    while j + lanes <= n:
        acc[0] = acc[0] + block[j : j + lanes]
        j += lanes
    tail = 0.0
    for x in block[j:]:
        tail = tail + float(x)
    v = (acc[0] + acc[1]) + (acc[2] + acc[3])
    while len(v) > 1:
        h = len(v) // 2
        v = v[:h] + v[h:]
    return float(v[0]) + tail


def runs_sum(block: np.ndarray) -> float:
    """A float32 block of a sum with a float32 result: 16 float32 lanes, RUN_LENGTH runs."""
    return lanes_sum(block, 16, RUN_LENGTH)


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


def _wide_range_float32(n: int, seed: int) -> np.ndarray:
    """float32 values over eight decades: float32 runs round them where float64 would not."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) * 10.0 ** rng.integers(0, 8, n)).astype(np.float32)


@pytest.mark.parametrize(
    "n", [15, 16, 64, 1023, 1024, 1025, 4096 + 80, BLOCK - 1, BLOCK + 17, 3 * BLOCK + 7]
)
def test_float32_sum_adds_float32_runs_then_widens_bit_for_bit(n):
    x = _wide_range_float32(n, n)
    want = np.float32(reference_sum(x, runs_sum))
    assert kael.sum(kael.tensor(x)).item() == want
    assert kael.mean(kael.tensor(x)).item() == np.float32(reference_sum(x, runs_sum) / n)
    rows = kael.sum(kael.tensor(np.stack([x, -x])), 1).tolist()
    assert rows == [want, -want]


def test_float32_runs_differ_from_widening_every_value():
    # the data above tells the two orders apart, so the test before can fail
    x = _wide_range_float32(3 * BLOCK + 7, 0)
    assert reference_sum(x, runs_sum) != reference_sum(x.astype(np.float64))


def test_a_float64_result_widens_every_float32_value():
    x = _wide_range_float32(BLOCK + 17, 1)
    got = kael.sum(kael.tensor(x), dtype=kael.float64).item()
    assert got == reference_sum(x.astype(np.float64))


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


# ---- a paired sum and the epilogue's flag ------------------------------------------------------


def _paired_template():
    """sum(x) and sum(|x|) in one kernel, as var's corrected pass pairs sum(d), sum(d^2)."""

    def build():
        x = g.Input(float64, (), "x")
        total = g.Reduce(float64, (), "sum", x, ())
        magnitudes = g.Reduce(float64, (), "sum", g.Unary(float64, (), "abs", x), ())
        return "test_paired_f64", [total, magnitudes]

    return eager.reduction_template(("test_reduce", "paired"), build)


def run_paired(arr: np.ndarray, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    kept = tuple(s for d, s in enumerate(arr.shape) if d not in axes)
    (total, t_impl), (squares, s_impl) = (
        empty_like_np(kept, np.float64),
        empty_like_np(kept, np.float64),
    )
    assert not eager.run_reduction(_paired_template(), [t_impl, s_impl], [impl_of(arr)], axes)
    return total, squares


@pytest.mark.parametrize("n", [7, 33, BLOCK + 1, 3 * BLOCK + 7])
def test_a_paired_sum_gives_each_total_in_the_order_of_a_single_sum(n):
    # Both accumulators walk the lanes, blocks and tree of one sum, in every schedule.
    x = np.random.default_rng(n).standard_normal(2 * n) * 1e3
    for view in (x[:n], x[::2]):
        total, magnitudes = run_paired(view, (0,))
        assert total[()] == reference_sum(view)
        assert magnitudes[()] == reference_sum(abs(view))
    cols = x[: 2 * n // 9 * 9].reshape(-1, 9)  # an outer reduction: the COLS schedule
    total, magnitudes = run_paired(cols, (0,))
    assert total.tolist() == [reference_sum(cols[:, c], sequential) for c in range(9)]
    assert magnitudes.tolist() == [reference_sum(abs(cols[:, c]), sequential) for c in range(9)]


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_a_paired_sum_does_not_depend_on_the_thread_count(threads):
    x = np.random.default_rng(4).standard_normal((703, 1100))
    saved = kael.get_num_threads()
    kael.set_num_threads(threads)
    try:
        got = [run_paired(x, (0,)), run_paired(x, (1,)), run_paired(x.ravel()[:50_000], (0,))]
    finally:
        kael.set_num_threads(saved)
    assert got[0][1].tolist() == [sequential(abs(x[:, c])) for c in range(1100)]
    assert got[1][0].tolist() == [reference_sum(row) for row in x]
    assert got[2][1][()] == reference_sum(abs(x.ravel()[:50_000]))


def _fma(a: float, b: float, c: float) -> float:
    """a * b + c rounded once (rationals round correctly to float)."""
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def squares_in_lane_order(x: np.ndarray) -> float:
    """lanes_sum's order for sum(x * x), each square fused into its accumulator."""
    acc = np.zeros((U, W))
    main = len(x) // (W * U) * (W * U)
    for j in range(0, main, W * U):
        chunk = x[j : j + W * U].reshape(U, W)
        acc = np.vectorize(_fma)(chunk, chunk, acc)
    j = main
    while j + W <= len(x):
        acc[0] = np.vectorize(_fma)(x[j : j + W], x[j : j + W], acc[0])
        j += W
    tail = 0.0
    for v in x[j:]:
        tail = _fma(float(v), float(v), tail)
    v = (acc[0] + acc[1]) + (acc[2] + acc[3])
    while len(v) > 1:
        v = v[: len(v) // 2] + v[len(v) // 2 :]
    return float(v[0]) + tail


@pytest.mark.parametrize("n", [5, 40, 77])
def test_a_prologue_product_is_fused_into_its_accumulator(n):
    # norm's x * x and var's d * d: acc = fma(x, x, acc), one rounding per term, one
    # instruction (it keeps var's paired pass as fast as a single sum of squares).
    x = np.random.default_rng(n).standard_normal(n) * 1e3
    got = kael.norm(kael.tensor(x)).item()
    assert got == math.sqrt(squares_in_lane_order(x))
    plain = math.sqrt(lanes_sum(x * x))
    assert abs(got - plain) <= 2 * np.spacing(got)  # the unfused order: within rounding


def test_a_fused_in_product_is_printed_and_cached_apart_from_a_kernels_own():
    # The same values; the printed kernel says which adds its product without an fma,
    # so the disk caches (CPU and PTX, keyed by the text) keep the two apart.
    def kernel(square: bool):
        v = g.Input(float64, (), "x")
        value = g.Binary(float64, (), "mul", v, v) if square else v
        return schedule_reduction("s", [g.Reduce(float64, (), "sum", value, ())])[0]

    own, plain = kernel(True), kernel(False)
    fused = dataclasses.replace(plain, prologue=own.prologue)
    assert "without an fma" in format_reduction(fused)
    assert "without an fma" not in format_reduction(own) + format_reduction(plain)
    assert cpu_reduce.cache_key(fused) != cpu_reduce.cache_key(own)
    assert cpu_reduce.cache_key(plain) == cpu_reduce.cache_key(dataclasses.replace(plain))


def _flagged_sum_template():
    """sum(x), raising the flag where a sum is inf: moments.py's overflow check."""

    def build():
        x = g.Input(float64, (), "x")
        r = g.Reduce(float64, (), "sum", x, ())
        flag = g.Unary(bool_, (), "flag", g.Unary(bool_, (), "isinf", r))
        return "test_flagged_f64", [g.Where(float64, (), flag, r, r)]

    return eager.reduction_template(("test_reduce", "flagged"), build)


@pytest.mark.parametrize(
    "shape,axes", [((5, 9), (1,)), ((3, 2 * BLOCK + 5), (1,)), ((700, 9), (0,))]
)
def test_an_epilogue_flag_says_whether_any_output_raised_it(shape, axes):
    # One block, several blocks (the flag is raised in the tree's function) and COLS.
    x = np.ones(shape)
    kept = tuple(s for d, s in enumerate(shape) if d not in axes)
    out, out_impl = empty_like_np(kept, np.float64)
    template = _flagged_sum_template()
    assert not eager.run_reduction(template, [out_impl], [impl_of(x)], axes)
    last = x[:, -1] if axes == (0,) else x[-1]
    last[-2:] = 1.7e308  # two in the last output: its sum overflows, the others' do not
    assert eager.run_reduction(template, [out_impl], [impl_of(x)], axes)
    assert np.isinf(out).sum() == 1 and out.flat[-1] == math.inf


@pytest.mark.parametrize("length", [1, 2, 5, W - 1, W])
@pytest.mark.parametrize("rows", [1, W - 1, 4 * W + 5])
def test_rows_shorter_than_the_vector_sum_in_the_lane_order_bit_for_bit(length, rows):
    # rows of fewer elements than lanes run one output per lane (whole chunks of outputs)
    # or the scalar code (the rest): both give exactly the documented lane order's sum
    x = np.random.default_rng(length * 100 + rows).standard_normal((rows, length)) * 1e3
    x[0, :] = -0.0  # a row of negative zeros sums to +0.0, as the lanes' identity gives
    got = run_sum(x, (1,))
    assert got.tolist() == [reference_sum(row) for row in x]
    assert not np.signbit(got[0])
    if length < W:  # transposed short rows (the columns pass): the same sequential order
        t = np.ascontiguousarray(x.T).T
        assert run_sum(t, (1,)).tolist() == got.tolist()
    strided = np.repeat(x, 2, axis=1)[:, ::2]  # strided rows, one output per lane
    assert run_sum(strided, (1,)).tolist() == got.tolist()


LAZY_TREE = """
import kael
from kael.codegen.cpu import reduce as cpu_reduce
from kael.frontend.inspection import record_launches
x = kael.arange(1000, dtype=kael.float64).reshape(10, 100) * 0.5  # one block a row
_, made = record_launches(kael.prod, x, 1)
compiled = cpu_reduce.get(made[0].kernel)
print(compiled._final is None)
y = kael.full((3, 40000), 1.0001, dtype=kael.float64)  # three blocks a row: the tree runs
print(abs(kael.prod(y, 1)[0].item() - 1.0001 ** 40000) < 1e-6 * 1.0001 ** 40000)
print(cpu_reduce.get(record_launches(kael.prod, y, 1)[1][0].kernel)._final is not None)
"""


def test_a_reduction_compiles_its_tree_only_when_it_runs_several_blocks(tmp_path):
    import os
    import subprocess
    import sys

    env = dict(os.environ, KAEL_CACHE_DIR=str(tmp_path))
    out = subprocess.run(
        [sys.executable, "-c", LAZY_TREE], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.stdout.split() == ["True", "True", "True"], out.stderr
