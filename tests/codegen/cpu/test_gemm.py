"""The host matrix-product kernels below the frontend: B packing, edge tiles, blocking plans,
batch layouts and the int64 row kernel, on NumPy-backed buffers with guard cells."""

import ctypes
import threading

import numpy as np
import pytest
from kernel_helpers import impl_of, run_python

import kael
from kael.codegen.cpu import compiler, gemm, gemm_gemv, gemm_run
from kael.ir.matmul import SPECS, GemmSpec, batch_dims
from kael.runtime import launches
from kael.runtime.dtypes import float32, float64
from kael.runtime.launcher import launch, optimize

RNG = np.random.default_rng(7)
NP = {float32: np.float32, float64: np.float64}
HOST = {d: gemm.host_spec(d) for d in (float32, float64)}
# Both register families (AVX-512's and AVX2's) whatever the host: LLVM splits or joins
# vectors the host lacks, so the other family's code compiles and runs here too.
FAMILIES = [SPECS[v][d] for v in sorted(SPECS) for d in (float32, float64)]
FAMILY_IDS = [f"{s.dtype.name}-v{s.vector_bytes}" for s in FAMILIES]


def small_ints(shape, dtype) -> np.ndarray:
    return RNG.integers(-4, 5, size=shape).astype(dtype)


def guarded(shape, dtype, pad: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """(a NaN-filled array with `pad` guard cells around it, the inner view)."""
    big = np.full(tuple(s + 2 * pad for s in shape), np.nan, dtype)
    return big, big[(slice(pad, -pad),) * len(shape)]


def run(c: np.ndarray, a: np.ndarray, b: np.ndarray, threads: int | None = None) -> None:
    """c = a @ b through gemm_run (a and b broadcast over c's batch), on `threads` threads."""
    batch = c.shape[:-2]
    ea = np.broadcast_to(a, batch + a.shape[-2:])
    eb = np.broadcast_to(b, batch + b.shape[-2:])
    before = kael.get_num_threads()
    kael.set_num_threads(threads or before)
    try:
        gemm_run.matmul(impl_of(c), impl_of(ea), impl_of(eb))
    finally:
        kael.set_num_threads(before)


# ---- the description -------------------------------------------------------------------


def test_spec_text_names_every_parameter_so_caches_never_mix_kernels():
    base = HOST[float32]
    texts = {
        GemmSpec(float32, 6, 64, 240, 256, 1024).text(),
        GemmSpec(float32, 4, 64, 240, 256, 1024).text(),
        GemmSpec(float32, 6, 48, 240, 256, 1024).text(),
        GemmSpec(float32, 6, 64, 120, 256, 1024).text(),
        GemmSpec(float32, 6, 64, 240, 128, 1024).text(),
        GemmSpec(float32, 6, 64, 240, 256, 512).text(),
        GemmSpec(float64, 6, 64, 240, 256, 1024).text(),
        GemmSpec(float32, 6, 64, 240, 256, 1024, vector_bytes=32).text(),
    }
    assert len(texts) == 8
    assert base.text() == str(base) and base.text().isidentifier()


@pytest.mark.parametrize("spec", FAMILIES, ids=FAMILY_IDS)
def test_spec_tiles_fit_the_vector_registers(spec):
    registers = {64: 32, 32: 16}[spec.vector_bytes]
    assert spec.nr % spec.lanes == 0
    assert spec.mr * spec.vectors + spec.vectors + 1 <= registers
    assert spec.mc % spec.mr == 0  # row blocks never exceed the packed-A scratch


# ---- packing ---------------------------------------------------------------------------


def pack(spec, src: np.ndarray, kc: int, n: int, batches: int = 1) -> np.ndarray:
    """Run pack_b on src [batches, kc, n] (any strides); the packed buffer."""
    panels = -(-n // spec.nr)
    per = panels * kc * spec.nr
    dst = np.full(batches * per + 5, np.nan, NP[spec.dtype])
    item = src.itemsize
    words = [
        src.__array_interface__["data"][0], dst.ctypes.data,
        src.strides[1] // item, src.strides[2] // item, src.strides[0] // item, per, kc, n, panels,
    ]  # fmt: skip
    fn = gemm.pack_library(spec)[gemm.PACK_B]
    launch(fn, words, batches * panels, 0, 1)
    assert np.isnan(dst[batches * per :]).all()  # nothing written past the last panel
    return dst[: batches * per].reshape(batches, panels, kc, spec.nr)


@pytest.mark.parametrize("spec", FAMILIES, ids=FAMILY_IDS)
@pytest.mark.parametrize("n", [1, 15, 16, 63, 64, 65, 130])
def test_pack_b_lays_out_panels_and_zero_pads_the_last(n, spec):
    dtype = spec.dtype
    kc = 9
    src = small_ints((2, kc, n), NP[dtype])
    packed = pack(spec, src, kc, n, batches=2)
    padded = np.zeros((2, kc, packed.shape[1] * spec.nr), NP[dtype])
    padded[:, :, :n] = src
    want = padded.reshape(2, kc, -1, spec.nr).transpose(0, 2, 1, 3)
    np.testing.assert_array_equal(packed, want)


@pytest.mark.parametrize("spec", FAMILIES, ids=FAMILY_IDS)
def test_pack_b_reads_transposed_and_stepped_sources(spec):
    dtype = spec.dtype
    base = small_ints((1, 150, 40), NP[dtype])
    src = base.transpose(0, 2, 1)[:, :, ::2]  # column stride 2 * 40, row stride 1
    packed = pack(spec, src, 40, 75)
    padded = np.zeros((40, -(-75 // spec.nr) * spec.nr), NP[dtype])
    padded[:, :75] = src[0]
    np.testing.assert_array_equal(packed[0], padded.reshape(40, -1, spec.nr).transpose(1, 0, 2))


@pytest.mark.parametrize("spec", FAMILIES, ids=FAMILY_IDS)
@pytest.mark.parametrize("kc", [1, 15, 16, 17, 40])
def test_pack_b_transposes_unit_stride_columns_in_blocks_with_edges(kc, spec):
    dtype = spec.dtype
    n = spec.nr + 3
    src = small_ints((1, n, kc), NP[dtype]).transpose(0, 2, 1)  # row stride 1
    packed = pack(spec, src, kc, n)
    padded = np.zeros((kc, 2 * spec.nr), NP[dtype])
    padded[:, :n] = src[0]
    np.testing.assert_array_equal(packed[0], padded.reshape(kc, 2, spec.nr).transpose(1, 0, 2))


@pytest.mark.parametrize("spec", FAMILIES, ids=FAMILY_IDS)
def test_pack_b_reads_sources_without_any_unit_stride(spec):
    dtype = spec.dtype
    src = small_ints((1, 2 * 9, 3 * 70), NP[dtype])[:, ::2, ::3]
    packed = pack(spec, src, 9, 70)
    padded = np.zeros((9, -(-70 // spec.nr) * spec.nr), NP[dtype])
    padded[:, :70] = src[0]
    np.testing.assert_array_equal(packed[0], padded.reshape(9, -1, spec.nr).transpose(1, 0, 2))


# ---- edge tiles ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [float32, float64], ids=["f32", "f64"])
@pytest.mark.parametrize("m", [1, 5, 6, 7, 12, 13])
@pytest.mark.parametrize("n", [1, 7, 8, 16, 17, 31, 32, 33, 48, 50, 63, 64, 65, 97])
@pytest.mark.parametrize("packed", [False, True], ids=["b-in-place", "b-packed"])
def test_edge_tiles_write_exactly_the_output_and_nothing_around_it(m, n, dtype, packed):
    """Every edge width (an edge tile runs only the vectors its columns reach) with B read
    in place and B packed from its transpose (one column: the matrix-vector kernel)."""
    a = small_ints((m, 11), NP[dtype])
    b = small_ints((11, n), NP[dtype])
    if packed:
        b = np.ascontiguousarray(b.T).T
        assert n == 1 or gemm_run.plan_for(impl_of(a), impl_of(b), impl_of(a @ b)).buffer_bytes
    big, c = guarded((m, n), NP[dtype])
    run(c, a, b)
    np.testing.assert_array_equal(c, a @ b)
    inner = np.zeros(big.shape, bool)
    inner[3:-3, 3:-3] = True
    assert np.isnan(big[~inner]).all()


@pytest.mark.parametrize("dtype", [float32, float64], ids=["f32", "f64"])
def test_packed_path_edges_and_k_blocks_write_only_the_output(dtype):
    spec = HOST[dtype]
    m, k, n = spec.mc + 7, spec.kc + 3, spec.nc + 5  # one extra block in every direction
    a = small_ints((m, k), NP[dtype])
    b = small_ints((k, n), NP[dtype])
    big, c = guarded((m, n), NP[dtype])
    run(c, a, b)
    np.testing.assert_array_equal(c, a @ b)
    assert np.isnan(big[:3]).all() and np.isnan(big[-3:]).all()
    assert np.isnan(big[:, :3]).all() and np.isnan(big[:, -3:]).all()


@pytest.mark.parametrize("dtype", [float32, float64], ids=["f32", "f64"])
@pytest.mark.parametrize("n", [5, 17, 33, 49, 63, 65, 97])
def test_packed_a_and_packed_b_edge_tiles_run_the_vectors_they_reach(n, dtype):
    """A transposed A whose panel walk spans more than PACK_A_SPAN is packed beside B (the
    packed micro-kernel): each edge width, values and nothing written around C."""
    m = gemm_run.PACK_A_SPAN // (HOST[dtype].kc * NP[dtype]().itemsize) + 7
    k = HOST[dtype].kc  # one k block: the walk spans m * kc elements
    a = np.ascontiguousarray(small_ints((k, m), NP[dtype])).T
    b = np.ascontiguousarray(small_ints((n, k), NP[dtype])).T
    big, c = guarded((m, n), NP[dtype])
    plan = gemm_run.plan_for(impl_of(a), impl_of(b), impl_of(c))
    assert plan.launches[-1].words[gemm.MACRO_ARGS.index("pack_a")] == 1
    run(c, a, b)
    np.testing.assert_array_equal(c, a @ b)
    inner = np.zeros(big.shape, bool)
    inner[3:-3, 3:-3] = True
    assert np.isnan(big[~inner]).all()


GUARD_SCRIPT = """
import ctypes, mmap
import numpy as np
from kernel_helpers import impl_of
from kael.codegen.cpu import gemm_run

libc = ctypes.CDLL(None)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
PAGE = mmap.PAGESIZE


def at_page_end(shape, dtype):
    # An array whose last byte is followed by an inaccessible page: any read past it faults.
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    size = -(-nbytes // PAGE) * PAGE
    mm = mmap.mmap(-1, size + PAGE)
    base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
    assert libc.mprotect(base + size, PAGE, 0) == 0
    arr = np.frombuffer(mm, dtype, count=int(np.prod(shape)), offset=size - nbytes)
    KEEP.append(mm)
    return arr.reshape(shape)


KEEP = []
rng = np.random.default_rng(0)
for dtype in (np.float32, np.float64, np.int64):
    for m, k, n in ((7, 5, 3), (13, 9, 17), (1, 3, 1), (5, 40, 10), (247, 300, 70), (9, 513, 1030),
                    (1, 40, 70), (9, 37, 1), (1, 33, 1025)):
        a = at_page_end((m, k), dtype)
        b = at_page_end((k, n), dtype)
        bt = at_page_end((n, k), dtype).T
        c = at_page_end((m, n), dtype)
        a[...] = rng.integers(-4, 5, (m, k))
        b[...] = rng.integers(-4, 5, (k, n))
        gemm_run.matmul(impl_of(c), impl_of(a), impl_of(b))
        assert (c == a @ b).all(), (dtype, m, k, n)
        bt[...] = b
        gemm_run.matmul(impl_of(c), impl_of(a), impl_of(bt))
        assert (c == a @ b).all(), ("transposed", dtype, m, k, n)
print("ok")
"""


def test_edge_tiles_never_touch_memory_past_the_operands():
    # Masked B and C accesses and clamped A rows: operands end right before a PROT_NONE page.
    res = run_python(GUARD_SCRIPT)
    assert res.stdout.strip() == "ok"


# ---- plans -----------------------------------------------------------------------------


def test_batch_dims_drop_ones_and_merge_contiguous_dims():
    dims = batch_dims((2, 1, 3), (60, 60, 20), (0, 0, 0), (30, 30, 10))
    assert dims == [(6, (20, 0, 10))]
    split = batch_dims((2, 3), (0, 20), (15, 5), (30, 10))
    assert split == [(2, (0, 15, 30)), (3, (20, 5, 10))]
    assert batch_dims(()) == []


def _plan(a_shape, b_shape, dtype=np.float32, b_view=lambda x: x, threads=2, a_view=lambda x: x):
    a = a_view(np.zeros(a_shape, dtype))
    b = b_view(np.zeros(b_shape, dtype))
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    c = np.zeros(batch + (a.shape[-2], b.shape[-1]), dtype)
    ea, eb = np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:])
    return gemm_run.plan(impl_of(ea), impl_of(eb), impl_of(c), threads)


def test_small_unit_stride_b_is_read_in_place_and_larger_b_is_packed():
    side = int((gemm_run.DIRECT_B_BYTES // 4) ** 0.5)
    rows = gemm_run.DIRECT_ROWS + 1  # past the few rows that read any shallow B in place
    direct = _plan((rows, side), (side, side))
    assert direct.buffer_bytes == 0 and len(direct.launches) == 1
    packed = _plan((rows, side + 1), (side + 1, side + 1))
    assert packed.buffer_bytes > 0 and len(packed.launches) == 2
    transposed = _plan((8, 4), (4, 4), b_view=lambda x: x.T)
    assert transposed.buffer_bytes > 0  # columns not unit-stride: always packed


def test_a_is_packed_beside_packed_b_only_where_its_panel_walk_spans_many_pages():
    """Row-major A is read in place by the macro kernel (packing it cost more than it
    saved); a transposed A whose kc-long panel walk spans more than PACK_A_SPAN is packed."""
    pack_a = gemm.MACRO_ARGS.index("pack_a")
    kc = -(-512 // -(-512 // HOST[float32].kc))  # k = 512 in even slices of at most KC
    rows = _plan((4096, 512), (512, 512), b_view=lambda x: x.T)
    assert rows.buffer_bytes and rows.launches[-1].words[pack_a] == 0
    span = gemm_run.PACK_A_SPAN // (4 * kc)  # A^T's k stride (its row count) at the limit
    for m, packed in ((span, 0), (span + 1, 1)):
        plan = _plan((512, m), (512, 512), b_view=lambda x: x.T, a_view=lambda x: x.T)
        assert plan.buffer_bytes and plan.launches[-1].words[pack_a] == packed, m


def test_a_shared_right_operand_folds_the_batch_into_one_product():
    folded = _plan((16, 64, 200), (200, 200))
    macro = folded.launches[-1]
    assert macro.words[gemm.MACRO_ARGS.index("m")] == 16 * 64
    nr = HOST[float32].nr
    panels = -(-200 // nr)
    assert folded.buffer_bytes == panels * 200 * nr * 4  # B packed once: 200 rows a panel


def test_separate_right_operands_keep_the_batch_in_the_kernel():
    kept = _plan((16, 128, 128), (16, 128, 128))
    macro = kept.launches[-1]
    assert macro.words[gemm.MACRO_ARGS.index("m")] == 128
    assert macro.total == 16 * -(-128 // HOST[float32].mc)  # each batch's row blocks


def test_launches_below_the_flop_threshold_run_inline_and_above_it_in_parallel():
    def moved(m):  # direct path: one launch of 2 * m * 16 * 16 flops
        (step,) = _plan((m, 16), (16, 16)).launches
        return step.moved

    edge = gemm_run.PARALLEL_FLOPS // (2 * 16 * 16)
    assert moved(edge - 1) == 0
    assert moved(edge) >= gemm_run.PARALLEL_BYTES


def test_the_k_dimension_is_split_into_equal_blocks_no_larger_than_kc():
    spec = HOST[float32]
    p = _plan((gemm_run.DIRECT_ROWS + 1, spec.kc + 1), (spec.kc + 1, 2000))
    macros = [step for step in p.launches if len(step.words) == len(gemm.MACRO_ARGS)]
    kcs = {step.words[gemm.MACRO_ARGS.index("kc")] for step in macros}
    assert kcs <= {spec.kc // 2 + 1, spec.kc // 2}
    assert max(kcs) <= spec.kc


@pytest.mark.parametrize("m", [1, 6, 50, 241, 2048, 5000])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_row_blocks_cover_the_rows_in_whole_panels_and_balance_threads(m, threads):
    spec = HOST[float32]
    mc, blocks = gemm_run._row_blocks(spec, m, spec.nr, 1, threads)  # one column tile
    assert mc % spec.mr == 0 and mc <= spec.mc
    assert (blocks - 1) * mc < m <= blocks * mc
    if m >= threads * spec.mr:
        assert blocks >= threads


@pytest.mark.parametrize("m", [2, 24, 64, HOST[float32].mc])
@pytest.mark.parametrize("threads", [2, 3])
def test_a_short_product_splits_its_columns_over_the_threads(m, threads):
    """At most MC rows and 2+ column tiles a thread: one row block, columns split (the
    rows' split left 64 rows as 36 + 28 and cost 17% at m = 64 on 2 threads)."""
    spec = HOST[float32]
    n = 2 * threads * spec.nr
    mc, blocks = gemm_run._row_blocks(spec, m, n, 1, threads)
    assert blocks == 1 and m <= mc < m + spec.mr
    p = _plan((m, 32), (32, n), threads=threads)
    macro = next(step for step in p.launches if step.name == gemm.MACRO)
    assert macro.words[gemm.MACRO_ARGS.index("nblocks")] == threads


# ---- int64 ---------------------------------------------------------------------------


def test_int64_rows_wrap_on_overflow():
    a = np.array([[2**62, 2**62, 5]], np.int64)
    b = np.array([[4], [4], [-(2**62)]], np.int64)
    c = np.empty((1, 1), np.int64)
    run(c, a, b)
    want = (2**64 + 2**64 - 5 * 2**62 + 2**63) % 2**64 - 2**63
    assert c[0, 0] == want


def test_int64_batches_with_stride_zero_and_strided_columns():
    a = RNG.integers(-9, 9, size=(1, 4, 6))
    b = RNG.integers(-9, 9, size=(3, 12, 5))[:, ::2]
    c = np.empty((3, 4, 5), np.int64)
    run(c, a, b)
    np.testing.assert_array_equal(c, a @ b)


@pytest.mark.parametrize("vector_bytes", sorted(SPECS))
def test_kernels_take_the_kernel_signature(vector_bytes):
    specs = SPECS[vector_bytes]
    lib = gemm.float_library(specs[float64])
    f64, f32 = vector_bytes // 8, vector_bytes // 4
    assert isinstance(lib[gemm.MACRO], ctypes._CFuncPtr)
    assert "kael_gemm_micro" in lib.text and f"llvm.fma.v{f64}f64" in lib.text
    assert f"llvm.masked.store.v{f32}f32" in gemm.float_library(specs[float32]).text
    assert isinstance(gemm.pack_library(specs[float64])[gemm.PACK_B], ctypes._CFuncPtr)


def test_the_host_gets_the_family_of_its_vector_registers():
    assert HOST[float32] is SPECS[compiler.vector_bytes()][float32]
    assert HOST[float64].lanes * 8 == compiler.vector_bytes()
    assert gemm.host_spec(kael.int64) is None


def test_a_product_reading_b_in_place_never_compiles_the_packing_module():
    # a fresh process: a small product (B read in place) loads the macro module alone
    code = (
        "import kael\n"
        "from kael.codegen.cpu import handwritten\n"
        "kael.randn(4, 5) @ kael.randn(5, 3)\n"
        "names = sorted(handwritten._libraries)\n"
        "assert not any(n.endswith('_pack_b') for n in names), names\n"
        "kael.randn(300, 300) @ kael.randn(300, 300)\n"
        "assert any(n.endswith('_pack_b') for n in handwritten._libraries)\n"
    )
    run_python(code)  # exits 0 only when both asserts hold


def test_debug_level_one_reports_each_launch_with_its_rate():
    script = "import kael\nkael.ones(70, 300) @ kael.ones(300, 200)\n"
    res = run_python(script, KAEL_DEBUG="1")
    lines = [line for line in res.stderr.splitlines() if "kael_gemm" in line]
    assert any(
        line.startswith("[kael] launch kael_gemm_pack_b on cpu items=") and line.endswith("GB/s")
        for line in lines
    )
    assert any("kael_gemm_macro" in line and line.endswith("GFLOP/s") for line in lines)


def test_a_single_column_right_operand_is_read_in_place():
    column = _plan(
        (50, 300), (300, 1), b_view=lambda x: np.lib.stride_tricks.as_strided(x, strides=(4, 0))
    )
    assert column.buffer_bytes == 0  # its column stride does not matter: never packed


def test_b_is_read_in_place_for_one_row_panel_or_a_few_over_shallow_panels():
    mr, nr = HOST[float32].mr, HOST[float32].nr
    deep = gemm_run.DIRECT_PANEL_BYTES // (4 * nr) + 1  # a column panel of B past its share of L2
    assert _plan((mr, deep), (deep, 300)).buffer_bytes == 0  # one row panel: always in place
    assert _plan((mr + 1, deep), (deep, 300)).buffer_bytes > 0
    shallow = deep - 1
    assert _plan((gemm_run.DIRECT_ROWS, shallow), (shallow, 300)).buffer_bytes == 0
    assert _plan((gemm_run.DIRECT_ROWS + 1, shallow), (shallow, 300)).buffer_bytes > 0
    assert _plan((3, 30, 300), (300, 300)).buffer_bytes > 0  # one B for 3 x 30 rows: 90


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m", [7, gemm_run.DIRECT_ROWS])
def test_a_few_rows_over_a_large_b_read_in_place_give_numpys_values(m, dtype):
    spec = HOST[float32 if dtype == np.float32 else float64]
    k = gemm_run.DIRECT_PANEL_BYTES // (np.dtype(dtype).itemsize * spec.nr)
    a = small_ints((m, k), dtype)
    b = small_ints((k, 1000), dtype)
    assert _plan(a.shape, b.shape, dtype).buffer_bytes == 0
    big, c = guarded((m, 1000), dtype)
    run(c, a, b)
    np.testing.assert_array_equal(c, a @ b)
    assert np.isnan(big[:3]).all() and np.isnan(big[-3:]).all()
    assert np.isnan(big[:, :3]).all() and np.isnan(big[:, -3:]).all()


def test_short_wide_products_split_their_columns_over_the_threads():
    mr, nr = HOST[float32].mr, HOST[float32].nr
    (wide,) = _plan((mr, 50), (50, 10 * nr + 1), threads=2).launches
    args = dict(zip(gemm.MACRO_ARGS, wide.words, strict=True))
    assert wide.total == 2 and args["nblocks"] == 2 and args["tiles"] == 6  # 11 panels
    tall = _plan((HOST[float32].mc + 1, 50), (50, 10 * nr + 1), threads=2).launches[-1]
    assert dict(zip(gemm.MACRO_ARGS, tall.words, strict=True))["nblocks"] == 1


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_column_blocks_compute_every_column_once(threads):
    a = small_ints((4, 300), np.float32)
    b = small_ints((300, 1000), np.float32)
    big, c = guarded((4, 1000), np.float32)
    run(c, a, b, threads)
    np.testing.assert_array_equal(c, a @ b)
    assert np.isnan(big[:3]).all() and np.isnan(big[-3:]).all()


def test_vector_shapes_take_the_matrix_vector_kernels():
    rows = _plan((9, 300), (300, 1)).launches
    assert [step.name for step in rows] == [gemm_gemv.ROWS]
    cols = _plan((1, 300), (300, 70)).launches
    assert [step.name for step in cols] == [gemm_gemv.COLS]
    # A's k not unit-stride, its rows are: (v^T A^T)^T, the vector as the left operand
    transposed = _plan((300, 9), (300, 1), a_view=lambda x: x.T).launches
    assert [step.name for step in transposed] == [gemm_gemv.COLS]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [1, 3, 4, 5, 9, 1600])
@pytest.mark.parametrize("m", [1, 2, 17, 1023, 1025])
def test_transposed_matrix_vector_products_cover_blocks_and_k_groups(k, m, dtype):
    a = small_ints((k, m), dtype)  # the product reads a.T: rows unit-stride, k strided
    v = small_ints((k, 1), dtype)
    big, column = guarded((m,), dtype)
    c = column.reshape(m, 1)  # rows one element apart: C^T's columns unit-stride
    names = [s.name for s in gemm_run.plan_for(impl_of(a.T), impl_of(v), impl_of(c)).launches]
    # one row or one k: a.T is also a matrix whose k is unit-stride, the rows kernel's
    assert names == [gemm_gemv.COLS] if m > 1 and k > 1 else names[0].startswith("kael_gemv")
    run(c, a.T, v)
    np.testing.assert_array_equal(c, a.T @ v)
    assert np.isnan(big[:3]).all() and np.isnan(big[-3:]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "m, n, k, rows",
    [
        (1, 1023, 1024, True),
        (3, 1023, 1024, True),
        (2, 1025, 100, True),  # a k tail past the last whole chunk
        (gemm_run.FEW_ROWS, 1100, gemm_run.ROW_DEPTH * gemm_run.FEW_ROWS, True),
        (gemm_run.FEW_ROWS, 1100, gemm_run.ROW_DEPTH * gemm_run.FEW_ROWS - 1, False),
        (gemm_run.FEW_ROWS + 1, 1100, 1024, False),
        (3, 7, 1024, False),  # W within DIRECT_B_BYTES: packed quickly, tiled
    ],
)
def test_few_rows_times_a_large_transposed_matrix_are_the_rows_kernel_swapped(m, n, k, rows, dtype):
    # x @ W.T (a linear layer's small batch): B's k is unit-stride, its columns are W's
    # rows, so each row of C is (W @ x_i^T)^T, W's rows dotted with row i of x
    x = small_ints((m, k), dtype)
    w = small_ints((n, k), dtype)
    big, c = guarded((m, n), dtype)
    for threads in (1, 2, 3):
        names = [s.name for s in _plan((m, k), (n, k), dtype, lambda b: b.T, threads).launches]
        assert (names == [gemm_gemv.ROWS]) == rows, names
        run(c, x, w.T, threads)
        np.testing.assert_array_equal(c, x @ w.T)
        assert np.isnan(big[:, :3]).all() and np.isnan(big[:, -3:]).all()
        assert np.isnan(big[:3]).all() and np.isnan(big[-3:]).all()
    strided = small_ints((m, 2 * k), dtype)[:, ::2]  # k strided: a tiled product
    names = [s.name for s in gemm_run.plan_for(impl_of(strided), impl_of(w.T), impl_of(c)).launches]
    assert gemm_gemv.ROWS not in names
    run(c, strided, w.T)
    np.testing.assert_array_equal(c, strided @ w.T)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 5, 1030])
def test_a_batch_of_one_row_products_by_transposed_matrices_runs_batch_by_batch(n, dtype):
    x = small_ints((3, 1, 40), dtype)
    w = small_ints((3, n, 40), dtype)
    big, c = guarded((3, 1, n), dtype)
    names = [s.name for s in _plan(x.shape, w.shape, dtype, lambda b: b.swapaxes(1, 2)).launches]
    # W past DIRECT_B_BYTES, or one column (matrix @ vector): the rows kernel
    assert (names == [gemm_gemv.ROWS]) == (n > 1000 or n == 1)
    run(c, x, w.swapaxes(1, 2))
    np.testing.assert_array_equal(c, x @ w.swapaxes(1, 2))
    assert np.isnan(big[:, :, :3]).all() and np.isnan(big[:, :, -3:]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_rows_kernel_takes_a_transposed_w_just_past_direct_b_bytes(dtype):
    k = 128
    within = gemm_run.DIRECT_B_BYTES // (np.dtype(dtype).itemsize * k)
    for n, rows in ((within, False), (within + 1, True)):
        names = [s.name for s in _plan((2, k), (n, k), dtype, lambda b: b.T).launches]
        assert (names == [gemm_gemv.ROWS]) == rows


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_batch_of_one_row_products_by_one_shared_w_reads_it_once(threads):
    """Rows of x a stride apart that no single row stride folds (x = X[:, 2:3]): one-row
    products by one W, the batches innermost (W's rows stay while every batch passes)."""
    x = small_ints((5, 4, 300), np.float32)[:, 2:3]
    w = small_ints((301, 300), np.float32)
    big, c = guarded((5, 1, 301), np.float32)
    rows = _plan((5, 4, 300), (301, 300), np.float32, lambda b: b.T, threads, lambda a: a[:, 2:3])
    (step,) = rows.launches
    args = dict(zip(gemm_gemv.ARGS, step.words, strict=True))
    assert step.name == gemm_gemv.ROWS and args["asb"] == 0 and args["batches"] == 5
    run(c, x, w.T, threads)
    np.testing.assert_array_equal(c, x @ w.T)
    assert np.isnan(big[:, :, :3]).all() and np.isnan(big[:, :, -3:]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m", [1, 3, 4, 5, 9])
@pytest.mark.parametrize("k", [1, 15, 16, 17, 33, 100])
def test_matrix_vector_rows_cover_row_groups_and_k_tails(m, k, dtype):
    a = small_ints((m, k), dtype)
    v = small_ints((k, 1), dtype)
    big, c = guarded((m, 1), dtype)
    run(c, a, v)
    np.testing.assert_array_equal(c, a @ v)
    assert np.isnan(big[:3]).all() and np.isnan(big[-3:]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [1, 3, 4, 5, 9])
@pytest.mark.parametrize("n", [2, 15, 16, 17, 31, 32, 33, 1023, 1025, 2100])
def test_vector_matrix_columns_cover_blocks_and_k_groups(k, n, dtype):
    v = small_ints((1, k), dtype)
    b = small_ints((k, n), dtype)
    big, c = guarded((1, n), dtype)
    run(c, v, b)
    np.testing.assert_array_equal(c, v @ b)
    assert np.isnan(big[:, :3]).all() and np.isnan(big[:, -3:]).all()


@pytest.mark.parametrize("k", [1, 3, 4, 5, 9])
@pytest.mark.parametrize("n", [1, 7, 8, 9, 16, 17, 1023, 1025])
def test_int64_rows_of_c_cover_column_blocks_and_k_groups(k, n):
    a = RNG.integers(-(2**40), 2**40, size=(3, k))
    b = RNG.integers(-(2**40), 2**40, size=(k, n))
    big = np.full((9, n + 6), -7, np.int64)
    c = big[3:-3, 3:-3]
    run(c, a, b)
    np.testing.assert_array_equal(c, a @ b)  # NumPy's int64 product wraps the same way
    inner = np.zeros(big.shape, bool)
    inner[3:-3, 3:-3] = True
    assert (big[~inner] == -7).all()


def test_int64_plans_pick_the_vector_kernel_for_unit_stride_columns_only():
    contiguous = _plan((4, 5), (5, 6), dtype=np.int64).launches
    assert [step.name for step in contiguous] == [gemm_gemv.COLS]
    transposed = _plan((4, 5), (6, 5), dtype=np.int64, b_view=lambda x: x.T).launches
    assert [step.name for step in transposed] == [gemm.ROWS_I64]


@pytest.mark.parametrize("n", [5, 20, 40])
def test_narrow_column_blocks_sum_rows_by_k_modulo_four_then_pairwise(n):
    # at most two vectors of C (float32: n <= 32) stay in registers: row k goes to
    # accumulator k % 4, and C = (acc0 + acc1) + (acc2 + acc3); wider blocks add the rows
    # into C in order. Products are exact here, so only the order of the sums rounds.
    k = 9
    v = np.ones((1, k), np.float32)
    b = np.ones((k, n), np.float32)
    b[0] = 2.0**24  # 2^24 + 1 rounds back to 2^24 in float32: the order shows
    b[5] = -(2.0**24)
    big, c = guarded((1, n), np.float32)
    run(c, v, b)
    if n <= 32:
        acc = [np.float32(0)] * 4
        for row in range(k):
            acc[row % 4] = np.float32(acc[row % 4] + b[row, 0])
        want = np.float32(np.float32(acc[0] + acc[1]) + np.float32(acc[2] + acc[3]))
    else:
        want = np.float32(0)
        for row in range(k):
            want = np.float32(want + b[row, 0])
    assert (c == want).all(), (c[0, 0], want)
    assert np.isnan(big[:, :3]).all() and np.isnan(big[:, -3:]).all()


def test_a_one_launch_plan_runs_as_one_native_call_unless_launches_are_recorded(monkeypatch):
    a, v = small_ints((200, 200), np.float32), small_ints((200, 1), np.float32)
    c = np.zeros((200, 1), np.float32)
    p = gemm_run.plan_for(impl_of(a), impl_of(v), impl_of(c))
    step = p.launches[0]
    assert p.native is not None and p.native[0].fn == step.fn.address
    assert [w for w, _ in p.native[1]] == [gemm_run.A, gemm_run.B, gemm_run.C]
    big = small_ints((2048, 2048), np.float32)  # a product past the parallel threshold
    assert gemm_run.plan_for(impl_of(big), impl_of(big), impl_of(big.copy())).native is None
    optimize(step.fn)  # until then its launches are counted through the launcher
    through_launcher = []
    real = gemm_run.launch
    monkeypatch.setattr(
        gemm_run, "launch", lambda *a, **k: (through_launcher.append(a), real(*a, **k))
    )
    addresses = [x.ctypes.data for x in (a, v, c)]
    gemm_run.run(p, *addresses)
    np.testing.assert_array_equal(c, a @ v)
    assert through_launcher == []
    c[:] = 0
    monkeypatch.setattr(launches, "recorder", [])
    gemm_run.run(p, *addresses)
    np.testing.assert_array_equal(c, a @ v)
    assert len(through_launcher) == 1 and len(launches.recorder) == 1


@pytest.mark.parametrize("dtype", [float32, float64], ids=str)
@pytest.mark.parametrize("m, k, n", [(5, 3, 7), (130, 64, 300), (64, 700, 40), (2, 9, 33)])
def test_accumulate_into_adds_the_product_to_c(dtype, m, k, n):
    a, b = small_ints((m, k), NP[dtype]), small_ints((k, n), NP[dtype])
    big, c = guarded((m, n), NP[dtype])
    c[...] = small_ints((m, n), NP[dtype])
    want = c + a @ b  # small integers: exact in either dtype
    ka, kb = kael.tensor(a), kael.tensor(b)
    kc = kael.from_numpy(big)[3:-3, 3:-3]  # a strided window: only it may change
    assert gemm_run.accumulate_into(kc._impl, ka._impl, kb._impl)
    np.testing.assert_array_equal(c, want)
    assert gemm_run.accumulate_into(kc._impl, ka._impl, kb._impl, subtract=True)
    np.testing.assert_array_equal(c, want - a @ b)  # back where it started, exactly
    assert np.isnan(big[:3]).all() and np.isnan(big[-3:]).all() and np.isnan(big[:, :3]).all()


def test_accumulating_plans_are_built_once_per_mode_and_leave_the_product_alone(monkeypatch):
    built = []
    make = gemm_run._accumulating
    monkeypatch.setattr(
        gemm_run, "_accumulating", lambda p, mode: built.append(mode) or make(p, mode)
    )
    monkeypatch.setattr(gemm_run, "_adding", {})
    a, b = (
        kael.tensor(small_ints((40, 24), np.float64)),
        kael.tensor(small_ints((24, 50), np.float64)),
    )
    c = kael.zeros(40, 50, dtype=kael.float64)
    for _ in range(3):
        assert gemm_run.accumulate_into(c._impl, a._impl, b._impl)
        assert gemm_run.accumulate_into(c._impl, a._impl, b._impl, subtract=True)
    assert built == [1, gemm.SUBTRACT] and c.abs().sum().item() == 0
    gemm_run.matmul(c._impl, a._impl, b._impl)  # the plain product still overwrites c
    gemm_run.matmul(c._impl, a._impl, b._impl)
    np.testing.assert_array_equal(c.numpy(), a.numpy() @ b.numpy())


@pytest.mark.parametrize("m, k, n", [(64, 32, 48), (200, 100, 150)])
def test_accumulate_into_declines_a_c_whose_columns_are_not_unit_stride(m, k, n):
    """The kernels store rows of c: a transposed c is declined (nothing done), and a
    program's steps for it (a blocked driver's) raise kael.Error naming its strides."""
    from kael.codegen.cpu.program import Program

    a, b = kael.tensor(small_ints((m, k), np.float64)), kael.tensor(small_ints((k, n), np.float64))
    c = kael.tensor(small_ints((n, m), np.float64)).mT
    before = c.numpy().copy()
    assert not gemm_run.accumulate_into(c._impl, a._impl, b._impl, subtract=True)
    np.testing.assert_array_equal(c.numpy(), before)  # nothing done
    with pytest.raises(kael.Error, match=rf"accumulates into float64 \[{m}, {n}\] of strides"):
        gemm_run.adding_steps(Program(), c._impl, a._impl, b._impl, True)


def test_accumulate_into_declines_int64_which_has_no_packed_kernel():
    a, b = kael.ones(6, 4, dtype=kael.int64), kael.ones(4, 5, dtype=kael.int64)
    c = kael.zeros(6, 5, dtype=kael.int64)
    assert not gemm_run.accumulate_into(c._impl, a._impl, b._impl)
    assert c.sum().item() == 0  # nothing done


def test_a_small_product_with_packed_b_runs_as_a_chain_of_native_calls():
    """x @ w.T (a Linear layer's product: B transposed, so packed) is planned as native
    calls through a per-thread scratch buffer, and gives the launcher's values."""
    rng = np.random.default_rng(3)
    w, x = rng.standard_normal((24, 16)), rng.standard_normal((5, 16))
    kw, kx = kael.tensor(w, dtype=kael.float32), kael.tensor(x, dtype=kael.float32)
    c = kael.empty(5, 24)
    p = gemm_run.plan_for(kx._impl, kw.T._impl, c._impl)
    assert [s.name for s in p.launches] == [gemm.PACK_B, gemm.MACRO] and p.chain is not None
    want = (x.astype(np.float32) @ w.astype(np.float32).T).astype(np.float32)
    for _ in range(40):  # past the kernels' promotion: the chain itself runs
        np.testing.assert_allclose((kx @ kw.T).numpy(), want, rtol=1e-5, atol=1e-5)


def test_chained_products_keep_one_scratch_per_thread():
    rng = np.random.default_rng(4)
    w = kael.tensor(rng.standard_normal((32, 48)), dtype=kael.float32)
    inputs = [kael.tensor(rng.standard_normal((3, 48)), dtype=kael.float32) for _ in range(8)]
    wants = [x.numpy() @ w.numpy().T for x in inputs]
    barrier, failures = threading.Barrier(8), []

    def work(x, want):
        barrier.wait()
        for _ in range(300):
            got = (x @ w.T).numpy()
            if not np.allclose(got, want, rtol=1e-4, atol=1e-4):
                failures.append(got)
                return

    threads = [threading.Thread(target=work, args=pair) for pair in zip(inputs, wants)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n", [256, 768])
def test_a_matrix_vector_product_splits_over_threads_by_the_matrix_bytes(n, threads):
    """Memory-bound: on 2 threads a float32 matrix of PARALLEL_BYTES and more by a vector
    takes the pool (768 x 768: 2.4 MB, 1.2M flops, below PARALLEL_FLOPS); a smaller one, or
    any on one thread, runs inline. Few rows by a shared W weigh W's bytes, not the rows'."""
    from kael.runtime.launcher import PARALLEL_BYTES

    parallel = threads > 1 and n * n * 4 >= PARALLEL_BYTES
    cases = (((1, n), (n, n), lambda b: b), ((n, n), (n, 1), lambda b: b))
    for a, b, view in (*cases, ((8, n), (n, n), lambda b: b.T)):  # x @ W.T, 8 rows
        (step,) = _plan(a, b, np.float32, view, threads).launches
        assert step.name in (gemm_gemv.ROWS, gemm_gemv.COLS)
        assert step.moved == (n * n * 4 if parallel else 0), (a, b, step.moved)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_batch_of_vectors_by_one_shared_matrix_splits_by_its_flops(threads):
    """W [256, 256] (256 KB) by 1000 vectors: 131M flops, past PARALLEL_FLOPS, take the pool
    on 2 threads though the matrix is read once and is under PARALLEL_BYTES."""
    from kael.runtime.launcher import PARALLEL_BYTES

    (step,) = _plan((256, 256), (1000, 256, 1), np.float32, lambda b: b, threads).launches
    assert step.name in (gemm_gemv.ROWS, gemm_gemv.COLS)
    assert (step.moved >= PARALLEL_BYTES) == (threads > 1), step.moved


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(32, 32, 64), (128, 128, 256), (5, 9, 3)])
def test_products_run_one_plan_over_many_operands(shape, dtype):
    """gemm_run.products: a plan made for one product's layout, each launch once over
    several products whose operands sit elsewhere, as separate matmuls would give."""
    m, k, n = shape
    rng = np.random.default_rng(m)
    count = 5
    a = rng.standard_normal((count, m, k + 3)).astype(dtype)[:, :, :k]  # strided rows
    b = rng.standard_normal((count, n, k)).astype(dtype).transpose(0, 2, 1)  # column-major
    c = np.full((count, m, n + 1), 7, dtype)  # the extra column is never written
    plan = gemm_run.plan_for(impl_of(a[0]), impl_of(b[0]), impl_of(c[0, :, :n]))
    gemm_run.products(plan, [(a[q].ctypes.data, b[q].ctypes.data, c[q].ctypes.data)
                             for q in range(count)])  # fmt: skip
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(dtype)
    tol = (1e-6 if dtype == np.float32 else 1e-14) * k  # terms of size 1, k of them
    np.testing.assert_allclose(c[:, :, :n], want, rtol=0, atol=tol)
    assert (c[:, :, n] == 7).all()


@pytest.mark.parametrize("m, k, n", [(1, 64, 300), (300, 64, 1), (1, 64, 1), (5, 1, 1)])
@pytest.mark.parametrize("dtype", [kael.float64, kael.float32])
def test_accumulating_a_matrix_vector_shape_takes_the_packed_kernel(m, k, n, dtype):
    """The matrix-vector kernels cannot add into C: an accumulating product of that shape
    is planned for the packed macro kernel, which subtracts it in place."""
    rng = np.random.default_rng(m + n)
    a, b, c = (rng.standard_normal(s) for s in ((m, k), (k, n), (m, n)))
    kc = kael.tensor(c, dtype=dtype)
    ka, kb = kael.tensor(a, dtype=dtype), kael.tensor(b, dtype=dtype)
    assert gemm_run.accumulate_into(kc._impl, ka._impl, kb._impl, subtract=True)
    names = {s.name for s in gemm_run.adding_plan(kc._impl, ka._impl, kb._impl, True).launches}
    assert names <= {gemm.MACRO, gemm.PACK_B}
    tol = 1e-12 if dtype is kael.float64 else 1e-4
    np.testing.assert_allclose(kc.numpy(), c - a @ b, rtol=tol, atol=tol * k)


@pytest.mark.parametrize("m, k, n", [(1, 0, 3), (5, 0, 5), (0, 3, 1), (0, 0, 0), (4, 3, 0)])
def test_accumulating_an_empty_product_leaves_c_as_it_is(m, k, n):
    """Nothing to add (c empty, or no inner dimension): done, with no plan at all."""
    from kael.codegen.cpu.program import Program

    a, b = kael.ones(m, k), kael.ones(k, n)
    c = kael.full((m, n), 7.0)
    assert gemm_run.accumulate_into(c._impl, a._impl, b._impl, subtract=True)
    assert gemm_run.adding_steps(Program(), c._impl, a._impl, b._impl, True) == []
    assert gemm_run.subtracting(Program(), c._impl, a._impl, b._impl) == []
    np.testing.assert_array_equal(c.numpy(), np.full((m, n), 7.0, np.float32))
