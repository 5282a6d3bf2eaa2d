"""The GPU matrix-product kernel: NVPTX that ptxas accepts for sm_90, shaped as designed."""

import re
import shutil

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


@needs_ptxas
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_ptxas_accepts_the_gemm_kernel(dtype):
    compiler.ptxas_check(ptx_gemm.ptx(dtype))


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_the_entry_is_launchable_and_takes_one_word_per_argument(dtype):
    text = ptx_gemm.ptx(dtype)
    entry = re.search(rf"\.visible \.entry {ptx_gemm._product(dtype).symbol}\((.*?)\)", text, re.S)
    assert entry is not None  # a .func could not be launched
    assert entry.group(1).count(".param .u64") == len(ptx_gemm.ARGS)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_tiles_are_staged_in_shared_memory_between_barriers(dtype):
    text = ptx_gemm.ptx(dtype)
    tile_bytes = ptx_gemm.TILE * ptx_gemm.STEP * dtype.itemsize
    assert len(re.findall(rf"\.shared \.align 16 \.b8 \w+\[{tile_bytes}\]", text)) == 2
    assert text.count("bar.sync") >= 2
    assert "ld.shared" in text and "st.shared" in text


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


def test_threads_times_register_tile_cover_the_block_tile():
    assert ptx_gemm.THREADS * ptx_gemm.SUB**2 == ptx_gemm.TILE**2
    assert ptx_gemm.THREADS <= 1024


@needs_gpu
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64], ids=str)
def test_cuda_matmul_matches_the_host(dtype):
    rng = np.random.default_rng(3)
    a = kael.tensor(rng.integers(-4, 5, (3, 70, 33))).to(dtype)
    b = kael.tensor(rng.integers(-4, 5, (33, 65))).to(dtype)
    got = (a.cuda() @ b.cuda()).cpu()
    np.testing.assert_array_equal(np.asarray(got), np.asarray(a @ b))
