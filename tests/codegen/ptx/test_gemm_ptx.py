"""The GPU matrix-product kernel: NVPTX that ptxas accepts for sm_90, shaped as designed, and
(on a device, or the emulated one) the CPU's products for any sizes, strides and batches."""

import re
import shutil
import subprocess

import numpy as np
import pytest

import kael
from kael.codegen.ptx import compiler
from kael.codegen.ptx import gemm as ptx_gemm
from kael.codegen.ptx import kernel as ptx_kernel
from kael.runtime.dtypes import bfloat16, float16, float32, float64, int64

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on PATH")
needs_gpu = pytest.mark.gpu  # skipped by conftest where no device is usable
DTYPES = [float32, float64, int64]
ALL = DTYPES + [float16, bfloat16]  # the half types: the tensor cores' kernel (ptx/mma.py)
KAEL = {float32: kael.float32, float64: kael.float64, int64: kael.int64}


@needs_ptxas
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_ptxas_accepts_the_gemm_kernel(dtype):
    compiler.ptxas_check(ptx_gemm.ptx(dtype))


def _ptxas_usage(text: str, tmp_path) -> tuple[int, int, int]:
    """(registers, spill store bytes, spill load bytes) of the entry, by `ptxas -v`."""
    src = tmp_path / "gemm.ptx"
    src.write_text(text)
    cmd = ["ptxas", f"-arch={compiler.ARCH}", "-v", str(src), "-o", str(tmp_path / "gemm.cubin")]
    report = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
    registers = int(re.search(r"Used (\d+) registers", report).group(1))
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", report)
    return registers, int(spills.group(1)), int(spills.group(2))


@needs_ptxas
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_register_tile_fits_two_ctas_per_sm_without_spills(dtype, tmp_path):
    registers, stores, loads = _ptxas_usage(ptx_gemm.ptx(dtype), tmp_path)
    assert (stores, loads) == (0, 0)
    assert registers * ptx_gemm.THREADS * ptx_gemm.CTAS_PER_SM <= 64 * 1024  # sm_90's file


def test_the_entry_declares_its_launch_bounds():
    text = ptx_gemm.ptx(float32)
    assert f".maxntid {ptx_gemm.THREADS}" in text
    assert f".minnctapersm {ptx_gemm.CTAS_PER_SM}" in text


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_the_entry_is_launchable_and_takes_one_word_per_argument(dtype):
    text = ptx_gemm.ptx(dtype)
    entry = re.search(rf"\.visible \.entry {ptx_gemm._product(dtype).symbol}\((.*?)\)", text, re.S)
    assert entry is not None  # a .func could not be launched
    assert entry.group(1).count(".param .u64") == len(ptx_gemm.ARGS)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_two_shared_buffers_per_operand_and_one_barrier_per_k_step(dtype):
    text = ptx_gemm.ptx(dtype)
    geo = ptx_gemm.geometry(dtype)
    buffers_bytes = 2 * ptx_gemm.STEP * geo.row * dtype.itemsize
    assert len(re.findall(rf"\.shared \.align 16 \.b8 \w+\[{buffers_bytes}\]", text)) == 2
    assert text.count("bar.sync") == 2  # one in the pipelined loop, one in the general loop
    assert "st.shared" in text


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_operands_move_in_128_bit_vectors(dtype):
    text = ptx_gemm.ptx(dtype)
    vec = ptx_gemm.geometry(dtype).vec
    kind = {float32: "f32", float64: "f64", int64: "u64"}[dtype]
    assert f"ld.global.nc.v{vec}.{kind}" in text  # global runs: the read-only path
    assert re.search(rf"ld\.shared\.v{vec}\.b{8 * dtype.itemsize}", text)  # the fragments
    assert re.search(rf"st\.global\.v{vec}\.b{8 * dtype.itemsize}", text)  # C's rows
    assert "ld.global.nc.b" in text  # the scalar path past the edges, unaligned, strided


def test_float_kernels_fuse_multiply_add_and_int64_wraps():
    assert "fma.rn.f32" in ptx_gemm.ptx(float32)
    assert "fma.rn.f64" in ptx_gemm.ptx(float64)
    int_text = ptx_gemm.ptx(int64)
    assert "mad.lo.s64" in int_text or "mul.lo.s64" in int_text
    assert "fma" not in int_text


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_module_uses_only_intrinsics_nvptx_lowers(dtype):
    ptx_kernel.check_intrinsics(ptx_gemm.build_module(dtype))  # raises kael.Error otherwise


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_the_register_tile_never_spills_to_local_memory(dtype):
    assert ".local" not in ptx_gemm.ptx(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_threads_register_tiles_and_runs_cover_the_tiles(dtype):
    geo = ptx_gemm.geometry(dtype)
    assert geo.vec * dtype.itemsize == ptx_gemm.VECTOR_BYTES
    assert ptx_gemm.THREADS * geo.sub**2 == geo.tile**2
    assert ptx_gemm.WARPS_M * ptx_gemm.LANE_ROWS * geo.sub == geo.tile
    assert ptx_gemm.WARPS_N * ptx_gemm.LANE_COLS * geo.sub == geo.tile
    assert 32 * ptx_gemm.WARPS_M * ptx_gemm.WARPS_N == ptx_gemm.THREADS
    assert ptx_gemm.THREADS * geo.vec == geo.tile * ptx_gemm.STEP  # one run per operand
    assert geo.row % geo.vec == 0  # padded shared rows keep the vectors aligned


def test_float32_takes_the_128_tile_with_8_x_8_per_thread():
    geo = ptx_gemm.geometry(float32)
    assert (geo.tile, geo.sub, ptx_gemm.THREADS, ptx_gemm.STEP) == (128, 8, 256, 8)
    assert ptx_gemm._product(float32).tile_m == ptx_gemm._product(float32).tile_n == 128
    assert ptx_gemm.geometry(float64).tile == ptx_gemm.geometry(int64).tile == 64


# ---- on the device (or the emulated one): the CPU's products ------------------------------------


def _ints(shape, dtype, seed: int) -> kael.Tensor:
    """Small integers: every product and sum is exact, so any order gives the CPU's bits."""
    return kael.tensor(np.random.default_rng(seed).integers(-4, 5, shape)).to(KAEL[dtype])


def _same_as_host(a: kael.Tensor, b: kael.Tensor, view_a=None, view_b=None) -> None:
    """a @ b on the device (of views of the device's copies) equals the host's product."""
    view_a, view_b = view_a or (lambda x: x), view_b or (lambda x: x)
    got = (view_a(a.cuda()) @ view_b(b.cuda())).cpu()
    np.testing.assert_array_equal(np.asarray(got), np.asarray(view_a(a) @ view_b(b)))


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cuda_matmul_matches_the_host(dtype):
    _same_as_host(_ints((3, 70, 33), dtype, 3), _ints((33, 65), dtype, 4))


def _sizes(dtype) -> list[tuple[int, int, int]]:
    """(m, k, n) on both sides of the tile, 1, odd, K past and short of a whole slice, and
    more tile rows than a swizzle group."""
    t = ptx_gemm.geometry(dtype).tile
    return [
        (t, 16, t), (t - 1, 8, t + 1), (t + 1, 17, t - 1), (t + 4, 20, t + 4), (t + 3, 16, t + 8),
        (1, 1, 1), (1, 40, 2 * t), (2 * t, 3, 1), (5, 13, 7), ((ptx_gemm.GROUP + 1) * t + 1, 8, 3),
    ]  # fmt: skip


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_edge_tiles_and_odd_sizes_match_the_host(dtype):
    for i, (m, k, n) in enumerate(_sizes(dtype)):
        _same_as_host(_ints((m, k), dtype, i), _ints((k, n), dtype, 100 + i))


def _t(x: kael.Tensor) -> kael.Tensor:
    return x.transpose(-1, -2)


def _views(t: int) -> list[tuple[tuple, tuple, object, object]]:
    """(A's shape, B's shape, view of A, view of B): the runs along either dimension of
    each operand, unaligned and strided operands (the scalar path), broadcast batches."""
    return [
        ((16, t), (16, t), _t, None),  # A transposed: A's runs along m
        ((t, 16), (t + 4, 16), None, _t),  # B transposed: B's runs along k
        ((20, t + 4), (t, 20), _t, _t),
        ((t, 17), (16, t + 1), lambda x: x[:, 1:], lambda x: x[:, 1:]),  # 4 bytes off
        ((t + 1, 16), (17, t), lambda x: x[1:], lambda x: x[1:]),  # a row off: aligned
        ((t, 32), (32, 2 * t), lambda x: x[:, ::2], lambda x: x[::2, ::2]),  # strided
        ((1, 16), (16, t), lambda x: x.expand(t, 16), None),  # A's rows all one (stride 0)
        ((3, t, 16), (16, t), None, None),  # B broadcast over the batch
        ((2, 1, t + 2, 16), (3, 16, t), lambda x: x[..., 1:, :], None),
    ]


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_transposed_unaligned_strided_and_batched_operands_match_the_host(dtype):
    for i, (sa, sb, va, vb) in enumerate(_views(ptx_gemm.geometry(dtype).tile)):
        _same_as_host(_ints(sa, dtype, i), _ints(sb, dtype, 50 + i), va, vb)


@needs_gpu
@pytest.mark.parametrize("dtype", [float32, float64], ids=str)
def test_each_output_is_one_fma_chain_in_k_order(dtype):
    # random floats round at every step: only the same order gives the same bits
    from kael.runtime.emulator.fma import fma  # exact fma.rn, as the device computes it

    rng = np.random.default_rng(7)
    # rows of 28 and 12 elements are 16-byte aligned: three pipelined K slices of 8 and
    # a general tail of 4 (float64: slices of the same 16-byte runs)
    m, k, n = ptx_gemm.geometry(dtype).tile + 4, 28, 12
    x = rng.standard_normal((m, k)).astype(dtype.name)
    y = rng.standard_normal((k, n)).astype(dtype.name)
    want = np.zeros((m, n), dtype.name)
    for kk in range(k):
        want = fma(np.repeat(x[:, kk : kk + 1], n, 1), np.repeat(y[kk : kk + 1], m, 0), want)
    got = (kael.tensor(x).cuda() @ kael.tensor(y).cuda()).cpu()
    np.testing.assert_array_equal(np.asarray(got), want)
