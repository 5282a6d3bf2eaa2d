"""The warpgroup tensor-core product of float16 and bfloat16 (codegen/ptx/wgmma.py): which
operand layouts it takes, its PTX (ptxas for sm_90a: registers, no spills, no serialized
wgmma), the kernel alone on the emulated device for every layout (edges, K tiles past the
stages, batches, padding never read or written, warps run one at a time), and gemm.matmul
choosing it on an sm_90 device for the layouts it takes and mma.sync for the others."""

import re
import shutil
import subprocess

import numpy as np
import pytest
from half_products import check, contiguous, ints, launch, transposed

import kael
from kael.codegen.ptx import compiler, gemm, wgmma
from kael.runtime.dtypes import bfloat16, float16
from kael.runtime.emulator import machine

DTYPES = [float16, bfloat16]
LAYOUTS = [wgmma.Layout(a, b) for a in (True, False) for b in (True, False)]
needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on PATH")


@pytest.mark.parametrize(
    "a_strides, b_strides, want",
    [
        ((40, 1), (24, 1), (True, False)),  # both row-major: A along K, B along N
        ((1, 136), (1, 96), (False, True)),  # both transposed
        ((48, 1), (1, 48), (True, True)),  # B = W.t(), as linear layers multiply
        ((1, 8), (8, 1), (False, False)),
    ],
)
def test_layout_takes_rows_contiguous_along_k_or_mn_on_16_bytes(a_strides, b_strides, want):
    assert wgmma.layout(a_strides, b_strides) == want


@pytest.mark.parametrize(
    "a_strides, b_strides",
    [
        ((41, 1), (24, 1)),  # A's rows 82 bytes apart: not on 16
        ((40, 1), (1, 100)),  # B's K-contiguous columns 200 bytes apart
        ((40, 2), (24, 1)),  # A's K stride 2: neither dimension contiguous
        ((40, 1), (24, 3)),
        ((1, 1), (16, 1)),  # a column of A (K = 1): its rows 2 bytes apart either way
    ],
)
def test_layout_refuses_other_strides(a_strides, b_strides):
    assert wgmma.layout(a_strides, b_strides) is None


def test_default_variant_fits_one_cta_an_sm():
    v = wgmma.Variant(float16, wgmma.Layout(True, False))
    assert (v.tile_n, v.stages, wgmma.THREADS) == (256, 4, 256)
    # 4 stages of a 128 x 64 tile of A and 64 x 256 of B, plus an atom to align them
    assert v.shared_bytes == 4 * (128 + 256) * 64 * 2 + 1024 <= 227 * 1024
    assert v.symbol == "kael_gemm_wgmma_float16_kmn_256x4"
    for shape in ((96, 4), (256, 2)):
        with pytest.raises(ValueError, match="no wgmma kernel"):
            wgmma.check_variant(wgmma.Variant(float16, v.layout, *shape))


def _ptx(v: wgmma.Variant) -> str:
    module = wgmma.build_module(v)
    return compiler.stored_ptx(str(module), lambda: module, wgmma.ARCH)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda x: x.name)
def test_the_loop_issues_a_tiles_wgmma_between_its_fences(layout):
    text = _ptx(wgmma.Variant(bfloat16, layout))
    assert text.count(".target sm_90a") == 1
    products = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n256k16\.f32\.bf16\.bf16", text)
    assert len(products) == wgmma.TILE_K // wgmma.STEP  # one loop, no other path
    trans = tuple(int(not x) for x in layout)
    assert text.count(f", 1, 1, {trans[0]}, {trans[1]};") == len(products)
    for needed in (
        "fence.proxy.async.shared::cta;", "wgmma.fence.sync.aligned;",
        "wgmma.commit_group.sync.aligned;", "wgmma.wait_group.sync.aligned 1;",
        "wgmma.wait_group.sync.aligned 0;", f"cp.async.wait_group \t{wgmma.STAGES - 3};",
    ):  # fmt: skip
        assert needed in text, needed
    assert ".local" not in text


@needs_ptxas
@pytest.mark.parametrize(
    "variant",
    [wgmma.Variant(float16, x) for x in LAYOUTS] + [wgmma.Variant(bfloat16, LAYOUTS[1], 128, 6)],
    ids=lambda v: v.symbol,
)
def test_ptxas_keeps_the_wgmma_pipelined_without_spills(variant, tmp_path):
    src = tmp_path / "wgmma.ptx"
    src.write_text(_ptx(variant))
    cmd = ["ptxas", "-arch=sm_90a", "-v", str(src), "-o", str(tmp_path / "wgmma.cubin")]
    info = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True).stderr
    assert int(re.search(r"Used (\d+) registers", info).group(1)) <= 255
    assert "0 bytes spill stores, 0 bytes spill loads" in info, info
    # a copy of an accumulator between a wgmma and its wait makes ptxas wait after each
    assert "serialized" not in info, info


# -- the kernel alone on the emulated device, with chosen words --------------------------------
def _operand(values, dtype, k_major: bool, is_a: bool, line=None):
    """A row-major (A K-major, B N-major) or transposed operand, its lines (rows, or columns
    when transposed) `line` elements apart: by default their length rounded up to 8."""
    row_major = k_major == is_a
    if line is None:
        line = -(-values.shape[2 if row_major else 1] // 8) * 8
    return (contiguous if row_major else transposed)(values, dtype, line)


CASES = {  # name: (q, m, k, n), A's and B's padded line length (None: packed), C's rows
    "one-tile-edges": ((1, 37, 40, 24), (None, None), 24),
    "k-tiles-past-the-stages": ((1, 136, 328, 264), (None, None), 264),
    "k-not-a-multiple-of-64": ((1, 24, 104, 40), (None, None), 40),
    "padded-lines": ((1, 9, 40, 48), (48, 56), 53),
    "batched": ((3, 20, 24, 16), (None, None), 16),
    "one-element": ((1, 1, 8, 8), (None, None), 8),
    "empty-k": ((1, 5, 0, 8), (8, 8), 8),
}


def _run(case, layout, dtype, monkeypatch, variant_shape=()):
    (q, m, k, n), (pad_a, pad_b), ldc = CASES[case]
    rng = np.random.default_rng(len(case))
    a = _operand(ints(rng, q, m, k), dtype, layout.a_k_major, True, pad_a)
    b = _operand(ints(rng, q, k, n), dtype, layout.b_k_major, False, pad_b)
    c = contiguous(np.zeros((q, m, n), np.float32), dtype, ldc)
    assert wgmma.layout(a.strides[1:], b.strides[1:]) == layout
    v = wgmma.Variant(dtype, layout, *variant_shape)
    kernel = (wgmma.TILE_M, v.tile_n, wgmma.THREADS, v.shared_bytes)
    out, seen = launch(_ptx(v), v.symbol, kernel, a, b, c, monkeypatch, ("wgmma", "mma"))
    check(out, a, b, c, dtype)
    assert seen["wgmma"] and not seen["mma"]


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda x: x.name)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_emulated_kernel_matches_exact_sums_and_writes_only_c(case, layout, monkeypatch):
    _run(case, layout, float16 if len(case) % 2 else bfloat16, monkeypatch)


@pytest.mark.parametrize("shape", [(128, 6), (64, 3)], ids=["n128x6", "n64x3"])
def test_other_tiles_and_depths_are_right_too(shape, monkeypatch):
    _run("k-tiles-past-the-stages", LAYOUTS[1], float16, monkeypatch, shape)


def test_the_pipeline_is_right_with_warps_run_one_at_a_time(monkeypatch):
    # each warp runs ahead to its next barrier: a stage refilled before every warpgroup's
    # products read it, or read before its copies landed, would show as wrong values
    monkeypatch.setattr(machine, "WARP_SERIAL", True)
    _run("k-tiles-past-the-stages", LAYOUTS[2], bfloat16, monkeypatch)


def test_operands_misaligned_for_wgmma_fail_loudly_in_the_kernel(monkeypatch):
    # wgmma's descriptors address 16-byte chunks: the host never launches it on operands
    # off 16 bytes, and a launch that did would not silently read the wrong chunks
    rng = np.random.default_rng(5)
    a = contiguous(ints(rng, 1, 8, 16), float16, offset=1)
    b = contiguous(ints(rng, 1, 16, 8), float16)
    c = contiguous(np.zeros((1, 8, 8), np.float32), float16)
    v = wgmma.Variant(float16, wgmma.Layout(True, False))
    kernel = (wgmma.TILE_M, v.tile_n, wgmma.THREADS, v.shared_bytes)
    with pytest.raises(AssertionError, match="misaligned address: 16 bytes"):
        launch(_ptx(v), v.symbol, kernel, a, b, c, monkeypatch)


# -- through gemm.matmul, on a device or the emulated one (an sm_90) ---------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("switch", ["1", ""], ids=["KAEL_CUDA_WGMMA=1", "default"])
def test_matmul_takes_wgmma_for_its_layouts_and_mma_sync_else(switch, monkeypatch):
    monkeypatch.setenv("KAEL_CUDA_WGMMA", switch)
    chosen = []
    real = gemm._wgmma_kernel

    def spy(*args):
        kernel = real(*args)
        chosen.append(kernel is not None)
        return kernel

    monkeypatch.setattr(gemm, "_wgmma_kernel", spy)
    rng = np.random.default_rng(2)
    a = kael.tensor(rng.integers(-3, 4, (24, 40)).astype(np.float32)).half().cuda()
    b = kael.tensor(rng.integers(-3, 4, (40, 16)).astype(np.float32)).half().cuda()
    for x, y in ((a, b), (a.mT.contiguous().mT, b), (a, b[:, 1:9]), (a[:, :36], b[:36])):
        want = np.asarray(x.float().cpu()) @ np.asarray(y.float().cpu())  # exact: small ints
        np.testing.assert_array_equal(np.asarray((x @ y).float().cpu()), want)
    # rows of 40 and 16 elements from 16-byte bases: wgmma on an sm_90 device; B's
    # columns from element 1 (2 bytes off): mma.sync
    on = gemm._hopper() and switch == "1"  # off by default until a device has checked it
    assert chosen == [on] * 2 + [False, on]
