"""The hand-written scan kernels below the frontend: layout plans, vector code, raw buffers."""

import numpy as np
import pytest
import torch
from kernel_helpers import impl_of

import kael
from kael.codegen.cpu import scan
from kael.runtime.dtypes import bool_, float32, float64, int64


def run_scan(op: str, src: np.ndarray, dim: int, dst_dtype=None) -> np.ndarray:
    dst = np.empty(src.shape, dst_dtype or src.dtype)
    scan.run(op, impl_of(src), impl_of(dst), dim)
    return dst


def torch_scan(op: str, src: np.ndarray, dim: int, dtype=None) -> np.ndarray:
    x = torch.from_numpy(np.ascontiguousarray(src))
    if op == "logcumsumexp":  # no dtype argument: floats in, the same float out
        return torch.logcumsumexp(x, dim).numpy()
    if op in ("cummax", "cummin"):  # the running values (indices: tests/frontend)
        return getattr(torch, op)(x, dim).values.numpy()
    return getattr(torch, op)(x, dim, dtype=dtype).numpy()


def test_plan_scans_an_outer_dim_over_vector_chunks_when_the_inner_dim_is_contiguous():
    kind, words, items = scan.plan((100, 70), (70, 1), (70, 1), 0)
    assert kind == "columns"
    # n, steps, cols, rank, the block scan's two words, then no other batch dim: one of size 1
    assert words == [100, 70, 70, 70, 1, 0, 0, 1, 0, 0]
    assert items == 3  # chunks of 32 columns: two full, one edge


def test_plan_walks_lines_when_the_scanned_dim_is_innermost_or_columns_are_too_few():
    kind, words, items = scan.plan((100, 70), (70, 1), (70, 1), 1)
    assert (kind, items) == ("lines", 100)
    assert words[:5] == [70, 1, 1, 1, 1]
    kind, _, items = scan.plan((100, scan.CHUNK - 1), (scan.CHUNK - 1, 1), (1, 100), 0)
    assert (kind, items) == ("lines", scan.CHUNK - 1)


def test_plan_merges_batch_dims_that_are_contiguous_in_both_buffers():
    kind, words, items = scan.plan((4, 5, 6, 3), (90, 18, 3, 1), (90, 18, 3, 1), 2)
    # dims 0 and 1 merge to 20 lines of stride 18; dim 3 (size 3) is too narrow for columns
    assert kind == "lines"
    assert words[4:] == [2, 0, 0, 20, 3, 18, 1, 18, 1]
    assert items == 60


def test_plan_of_a_zero_dim_tensor_is_one_line_of_one_element():
    kind, words, items = scan.plan((), (), (), 0)
    assert (kind, items) == ("lines", 1)
    assert words[:2] == [1, 0]


@pytest.mark.parametrize("op", scan.OPS)
@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16], ids=str)
@pytest.mark.parametrize("shape, dim", [((5000,), 0), ((64, 300), 1), ((300, 64), 0)])
def test_half_scans_accumulate_in_float32_with_torchs_bits(op, dtype, shape, dim):
    """PyTorch's CPU scans add float16/bfloat16 in float32: a float64 sum rounded once
    differs in the last bit (164 of 65541 float16 cumsum elements)."""
    rng = np.random.default_rng(4)
    values = rng.uniform(0.99, 1.01, shape) if op == "cumprod" else rng.standard_normal(shape)
    t = torch.tensor(values).to(getattr(torch, str(dtype)))
    k = kael.tensor(t.float().numpy()).to(dtype)
    got, want = getattr(kael, op)(k, dim), getattr(torch, op)(t, dim)
    if op in ("cummax", "cummin"):
        got, want = got[0], want[0]
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


@pytest.mark.parametrize("op", scan.OPS)
def test_float32_scans_accumulate_in_float64_in_both_kernels(op):
    text = scan.ir_text(op, float32, float32)
    assert "fpext <8 x float>" in text and "fpext float" in text
    assert "fptrunc <8 x double>" in text


def test_columns_kernel_uses_vector_arithmetic_for_int64():
    text = scan.ir_text("cumprod", int64, int64)
    assert "mul <8 x i64>" in text


@pytest.mark.parametrize("op", scan.OPS)
@pytest.mark.parametrize(
    ("shape", "dim"), [((9, 100), 0), ((9, 100), 1), ((3, 4, 65), 1), ((1,), 0), ((2, 3, 4), 2)]
)
def test_scan_kernels_match_torch_on_raw_buffers(op, shape, dim):
    src = np.random.default_rng(0).uniform(0.5, 1.5, shape)
    np.testing.assert_allclose(run_scan(op, src, dim), torch_scan(op, src, dim), rtol=1e-12)


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin"])  # integer scans
def test_scan_walks_strided_views_without_copying(op):
    base = np.random.default_rng(1).integers(-5, 6, (20, 90))
    src = base.T[::2, 1::3]  # neither dim unit-stride
    want = torch_scan(op, src, 0)
    np.testing.assert_array_equal(run_scan(op, src, 0), want)
    out = np.empty((src.shape[1], src.shape[0]), np.int64).T  # transposed output
    scan.run(op, impl_of(src), impl_of(out), 0)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("op", scan.OPS)
def test_scan_in_place_reads_each_element_before_writing_it(op):
    data = np.random.default_rng(2).uniform(0.5, 1.5, (40, 64))
    want = torch_scan(op, data, 0)
    scan.run(op, impl_of(data), impl_of(data), 0)
    np.testing.assert_allclose(data, want, rtol=1e-12)


def test_bool_bytes_other_than_one_count_as_true():
    raw = np.array([2, 0, 255, 1, 7], np.uint8)
    src = raw.view(np.bool_)
    got = run_scan("cumsum", src, 0, np.int64)
    assert got.tolist() == [1, 1, 2, 3, 4]
    got = np.empty((3, 40), np.int64)
    scan.run("cumsum", impl_of(np.tile(src[:1], (3, 40))), impl_of(got), 0)
    assert got[:, 0].tolist() == [1, 2, 3]


@pytest.mark.parametrize("dim", [0, 1])
def test_float_results_do_not_depend_on_the_thread_count(dim):
    src = np.random.default_rng(3).standard_normal((512, 700)).astype(np.float32)
    threads = kael.get_num_threads()
    try:
        kael.set_num_threads(1)
        one = run_scan("cumsum", src, dim)
        kael.set_num_threads(max(2, threads))
        many = run_scan("cumsum", src, dim)
    finally:
        kael.set_num_threads(threads)
    np.testing.assert_array_equal(one, many)
    np.testing.assert_array_equal(one, torch_scan("cumsum", src, dim))


def _both_ways(monkeypatch, op, src, dim, out=None):
    """The scan of src by the block scan and by the line scan (`out`: a strided output)."""
    results = []
    for way in (True, False):
        monkeypatch.setattr(scan, "blocked", lambda *args, way=way: way)
        dst = np.empty_like(src) if out is None else out
        scan.run(op, impl_of(src), impl_of(dst), dim)
        results.append(dst.copy())
    return results


@pytest.mark.parametrize("op", scan.OPS)
@pytest.mark.parametrize("dtype", [np.float64, np.int64], ids=["f64", "i64"])
def test_the_block_scan_gives_the_line_scans_values(monkeypatch, op, dtype):
    """Three lines of 2 blocks and 37 elements, read with step 2: every block boundary
    carries; integers exactly, floats to rounding (the totals combine in another order)."""
    if op == "logcumsumexp" and dtype is np.int64:
        return  # a float-only scan
    rng = np.random.default_rng(7)
    n = 2 * scan.BLOCK + 37
    if op == "cumprod":
        values = (
            rng.choice([-1, 1], (3, 2 * n))
            if dtype is np.int64
            else rng.uniform(0.999, 1.001, (3, 2 * n))
        )
    else:
        values = (
            rng.integers(-50, 50, (3, 2 * n))
            if dtype is np.int64
            else rng.standard_normal((3, 2 * n))
        )
    src = values.astype(dtype)[:, ::2]
    out = np.empty((n, 3), dtype).T  # a transposed output
    blocks, lines = _both_ways(monkeypatch, op, src, 1, out)
    if dtype is np.int64 or op in ("cummax", "cummin"):
        np.testing.assert_array_equal(blocks, lines)
    else:
        np.testing.assert_allclose(blocks, lines, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lines, torch_scan(op, src, 1), rtol=1e-9)


def test_the_block_scan_carries_nan_and_infinities_across_blocks(monkeypatch):
    n = 3 * scan.BLOCK
    src = np.ones(n)
    src[5] = np.nan  # block 0
    blocks, lines = _both_ways(monkeypatch, "cummax", src, 0)
    assert np.isnan(blocks[5:]).all() and np.array_equal(blocks[:5], lines[:5])
    src = np.full(n, -np.inf)
    src[scan.BLOCK + 1] = 0.0  # blocks 0 and part of 1 are all -inf
    blocks, lines = _both_ways(monkeypatch, "logcumsumexp", src, 0)
    np.testing.assert_array_equal(blocks, lines)
    assert blocks[scan.BLOCK] == -np.inf and blocks[-1] == 0.0


@pytest.mark.parametrize(
    "op, pattern",
    [("cumprod", [4.0, 0.25]), ("cumprod", [0.25, 4.0]), ("cumsum", [1e308, -1e308])],
)
def test_block_totals_are_prefixes_so_they_overflow_only_where_the_line_scan_does(
    monkeypatch, op, pattern
):
    """Partials of interleaved elements would reach 4**1024 or 1e308 * 1024 (inf, then NaN)
    where every prefix of the line stays in range."""
    src = np.tile(pattern, 2 * scan.BLOCK)
    blocks, lines = _both_ways(monkeypatch, op, src, 0)
    assert np.isfinite(lines).all()
    np.testing.assert_array_equal(blocks, lines)


@pytest.mark.parametrize(
    "op, first, block",
    [
        ("cumsum", 1e308, [-1e308, -1e308, 1e308]),  # the block alone: -inf; the line: 0
        ("cumprod", 1e-300, [1e300, 1e300, 1e-300]),  # the block alone: inf; the line: 1
        ("cumprod", 1e300, [1e-300, 1e-300, 1e300]),  # the block alone: 0; the line: 1
        ("cumprod", 2.0, [0.0, 3.0]),  # a zero: rescanned whole, still the line's values
    ],
)
def test_a_line_with_a_suspect_block_total_is_scanned_whole(monkeypatch, op, first, block):
    """A block total that leaves the finite (for a product, the normal) range, though no
    prefix of the line does, sends its line to one sequential scan; the other lines keep
    the blocks (equal to rounding)."""
    rng = np.random.default_rng(11)
    src = rng.uniform(0.999, 1.001, (3, 3 * scan.BLOCK + 5))
    src[1, 0] = first
    src[1, scan.BLOCK : scan.BLOCK + len(block)] = block
    blocks, lines = _both_ways(monkeypatch, op, src, 1)
    np.testing.assert_array_equal(blocks[1], lines[1])
    assert np.isfinite(lines[1]).all()
    np.testing.assert_allclose(blocks, lines, rtol=1e-12)


def test_a_half_product_underflowing_its_float32_accumulator_is_scanned_whole(monkeypatch):
    """float16 in a float32 accumulator: 1e4 nine times (1e36), then a block whose twelve
    1e-4 alone reach 0 in float32 (1e-48) while the line stays at 1e-12; nine more 1e-4
    bring the line back into float16's range."""
    src = np.ones(3 * scan.BLOCK, np.float16)
    src[:9] = 1e4
    src[scan.BLOCK : scan.BLOCK + 12] = 1e-4
    src[scan.BLOCK + 12 : scan.BLOCK + 24] = 1e4
    src[2 * scan.BLOCK : 2 * scan.BLOCK + 9] = 1e-4
    blocks, lines = _both_ways(monkeypatch, "cumprod", src, 0)
    assert np.isfinite(lines[-1]) and lines[-1] > 0.5
    np.testing.assert_array_equal(blocks, lines)


@pytest.mark.parametrize("op, rest", [("cummax", -1.0), ("cummin", 1.0)])
@pytest.mark.parametrize("tie", [(0.0, -0.0), (np.nan, -np.nan)], ids=["zeros", "nans"])
def test_a_later_tie_wins_across_blocks_as_in_the_line_scan(monkeypatch, op, rest, tie):
    """0.0 then -0.0 (NaN then -NaN): the running extreme is the later one, whose sign bit
    every later block carries."""
    src = np.full(3 * scan.BLOCK, rest)
    src[3], src[4] = tie
    blocks, lines = _both_ways(monkeypatch, op, src, 0)
    assert np.signbit(lines[4:]).all()
    assert np.signbit(blocks[4:]).all()
    np.testing.assert_array_equal(blocks, lines)


def test_the_block_scan_is_taken_by_length_lines_and_device():
    from kael.runtime.device import CPU, CUDA

    long, short = 16 * scan.BLOCK, 16 * scan.BLOCK - 1
    assert scan.blocked(long, 1, CPU) and not scan.blocked(short, 1, CPU)
    assert not scan.blocked(long, 1, CPU, exact=False)  # a float sum: the sequential line
    assert scan.blocked(2 * scan.BLOCK, 1, CUDA, exact=False)
    assert not scan.blocked(long, 2, CPU)  # two lines: the line scan has two work items
    assert scan.blocked(2 * scan.BLOCK, scan.DEVICE_LINES - 1, CUDA)
    assert not scan.blocked(2 * scan.BLOCK - 1, 1, CUDA)
    assert not scan.blocked(2 * scan.BLOCK, scan.DEVICE_LINES, CUDA)


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "logcumsumexp"])
def test_a_long_1d_float_scan_is_torchs_sequential_line_on_any_number_of_threads(op):
    """1e300, -1e300 a block later, ones elsewhere: a block total would absorb the ones
    the cancelling line keeps; the line scan gives PyTorch's sum and product exactly."""
    src = np.random.default_rng(8).uniform(0.9999, 1.0001, 16 * scan.BLOCK + 3)
    if op == "cumsum":
        src[:] = 1.0
        src[0], src[scan.BLOCK] = 1e300, -1e300
    assert not scan.blocked(src.size, 1, None, exact=False)
    threads = kael.get_num_threads()
    try:
        kael.set_num_threads(1)
        one = run_scan(op, src, 0)
        kael.set_num_threads(max(2, threads))
        many = run_scan(op, src, 0)
    finally:
        kael.set_num_threads(threads)
    np.testing.assert_array_equal(one, many)
    if op == "logcumsumexp":  # kael's log1p and exp, within an ulp of torch's
        np.testing.assert_allclose(one, torch_scan(op, src, 0), rtol=1e-15)
    else:
        np.testing.assert_array_equal(one, torch_scan(op, src, 0))


def test_scan_of_an_empty_buffer_launches_nothing():
    src = np.empty((0, 5))
    assert run_scan("cumsum", src, 1).shape == (0, 5)


def test_scan_refuses_a_bool_output_and_an_unknown_op():
    src = np.ones(3)
    with pytest.raises(kael.ValueError, match="a scan's output cannot be bool"):
        scan.run("cumsum", impl_of(src), impl_of(np.empty(3, np.bool_)), 0)
    with pytest.raises(kael.ValueError, match="unknown scan 'cumlogsumexp'"):
        scan.run("cumlogsumexp", impl_of(src), impl_of(src), 0)


def test_module_names_name_the_op_and_both_dtypes():
    assert scan.module_name("cumsum", bool_, int64) == "kael_scan_cumsum_bool_int64"
    assert scan.accumulator(float32) is float64 and scan.accumulator(int64) is int64
