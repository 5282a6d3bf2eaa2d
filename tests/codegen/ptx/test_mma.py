"""The tensor-core product of float16 and bfloat16 (codegen/ptx/mma.py): shaped as designed
(ptxas and the entry's words: test_gemm_ptx.py; registers and spills here), on the emulated
device launched with chosen words (which path each CTA takes, edges, strides, batches,
padding never read or written), and on a device, or the emulated one, the host's values
for edges, batches, strides and vectors."""

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from half_products import Operand, check, contiguous, ints, launch

import kael
from kael.codegen.ptx import compiler, gemm, mma
from kael.runtime.dtypes import bfloat16, float16
from kael.runtime.emulator import instructions, machine

DTYPES = [float16, bfloat16]
TORCH = {float16: torch.float16, bfloat16: torch.bfloat16}
needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on PATH")


def test_warps_cover_the_cta_tile():
    assert mma.THREADS == 32 * mma.WARPS == 32 * mma.WARPS_M * mma.WARPS_N
    assert (mma.TILE_M, mma.TILE_N) == (mma.WARPS_M * mma.WARP_M, mma.WARPS_N * mma.WARP_N)
    assert (mma.WARP_M, mma.WARP_N) == (16 * mma.FRAG_M, 8 * mma.FRAG_N)
    # the default pipeline: K tiles of 64 in 3 stages of dynamic shared memory, 96 KB, so
    # two CTAs still share an SM's 228 KB (each at most the 227 KB a CTA may opt in to)
    assert (mma.TILE_K, mma.STAGES) == (64, 3)
    assert mma.shared_bytes() == 2 * 3 * 128 * 64 * 2 == 96 * 1024
    assert 2 * mma.shared_bytes() <= 228 * 1024
    assert mma.shared_bytes(32, 4) == 64 * 1024 and mma.stage_bytes(32) == 8 * 1024
    with pytest.raises(ValueError):
        mma.build_module(float16, 48, 3)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_pipeline_is_made_of_async_copies_and_matrix_loads(dtype):
    text = gemm.ptx(dtype)
    kind = "f16" if dtype is float16 else "bf16"
    mmas = re.findall(rf"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.{kind}\.{kind}\.f32", text)
    per_tile = mma.TILE_K // mma.STEP * mma.FRAG_M * mma.FRAG_N  # the pipelined loop's
    assert len(mmas) == per_tile + mma.FRAG_M * mma.FRAG_N // mma.DIRECT_PASSES  # + fallback's
    assert re.search(r"cp\.async\.cg\.shared\.global \[%rd\d+(\+\d+)?\], \[%rd\d+\], 16, %r", text)
    assert "cp.async.commit_group" in text
    assert re.search(rf"cp\.async\.wait_group\s+{mma.STAGES - 2};", text)
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in text
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in text
    # every stage in the launch's dynamic shared memory: no static array
    assert not re.findall(r"\.shared \.align \d+ \.b8 \w+\[\d+\]", text)
    assert f".extern .shared .align {mma.SHARED_ALIGN} .b8 {mma.SHARED}[];" in text
    assert mma.shared_bytes() == 2 * mma.STAGES * mma.STAGE_BYTES
    assert ".local" not in text


def _ptx(dtype, shape=None) -> str:
    """The kernel's PTX: gemm's (the default pipeline), or built for (tile_k, stages)."""
    if shape is None:
        return gemm.ptx(dtype)
    module = mma.build_module(dtype, *shape)
    return compiler.stored_ptx(str(module), lambda: module)


@needs_ptxas
@pytest.mark.parametrize("shape", [None, (32, 4)], ids=["default", "k32x4"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_ptxas_fits_the_kernel_in_registers_without_spilling(dtype, shape, tmp_path):
    src = tmp_path / "mma.ptx"
    src.write_text(_ptx(dtype, shape))
    cmd = ["ptxas", "-arch=sm_90", "-v", str(src), "-o", str(tmp_path / "mma.cubin")]
    info = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True).stderr
    registers = int(re.search(r"Used (\d+) registers", info).group(1))
    assert registers <= 255  # so 8 warps (two CTAs) an SM
    assert "0 bytes spill stores, 0 bytes spill loads" in info, info
    static = re.search(r"(\d+) bytes smem", info)
    assert static is None or static.group(1) == "0", info  # all of it dynamic


# -- the kernel alone on the emulated device, with chosen words --------------------------------
def _emulated_product(a: Operand, b: Operand, c: Operand, dtype, monkeypatch, shape=None):
    """Launch the kernel (built for `shape`: (tile_k, stages), or the default) on the
    emulated device as gemm.matmul would: (C's buffer after it, how many warp-wide
    ldmatrix the fast path ran)."""
    kernel = (mma.TILE_M, mma.TILE_N, mma.THREADS, mma.shared_bytes(*(shape or ())))
    out, seen = launch(
        _ptx(dtype, shape), mma.symbol(dtype), kernel, a, b, c, monkeypatch, ("ldmatrix",)
    )
    return out, seen["ldmatrix"]


def _check(a: Operand, b: Operand, c: Operand, dtype, monkeypatch, fast: bool, shape=None):
    out, loads = _emulated_product(a, b, c, dtype, monkeypatch, shape)
    check(out, a, b, c, dtype)
    assert (loads > 0) is fast


CASES = {  # name: (q, m, k, n, A's (row, batch) strides, B's, C's row stride), fast path or not
    "one-tile-edges": ((1, 37, 40, 24, (None, None), (None, None), 24), True),
    "pipeline-wraps": ((1, 130, 328, 136, (None, None), (None, None), 136), True),
    "k-not-a-multiple-of-64": ((1, 24, 104, 40, (None, None), (None, None), 40), True),
    "partial-chunks": ((1, 9, 37, 45, (40, None), (48, None), 47), True),
    "batched": ((3, 20, 24, 16, (None, None), (None, 0), 16), True),
    "one-element": ((1, 1, 8, 8, (None, None), (None, None), 8), True),
    "empty-k": ((1, 5, 0, 8, (8, 8), (None, None), 8), True),
    "odd-k": ((1, 19, 37, 45, (None, None), (None, None), 45), False),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_emulated_kernel_matches_exact_sums_and_writes_only_c(case, dtype, monkeypatch, shape=None):
    (q, m, k, n, (ars, asb), (brs, bsb), ldc), fast = CASES[case]
    rng = np.random.default_rng(len(case))
    a = contiguous(ints(rng, q, m, k), dtype, ars, asb)
    b = contiguous(ints(rng, 1 if bsb == 0 else q, k, n), dtype, brs, bsb)
    if bsb == 0:
        b.strides = (0, *b.strides[1:])
        b.values = np.broadcast_to(b.values, (q, k, n))
    c = contiguous(np.zeros((q, m, n), np.float32), dtype, ldc)
    _check(a, b, c, dtype, monkeypatch, fast, shape)


@pytest.mark.parametrize("case", ["pipeline-wraps", "partial-chunks"], ids=str)
def test_other_pipeline_shapes_are_right_too(case, monkeypatch):
    # the builder's K tile and stage count: K tiles of 32 in 4 stages (the swizzle of
    # 64-byte rows, 4 stages' ring)
    test_emulated_kernel_matches_exact_sums_and_writes_only_c(
        case, bfloat16, monkeypatch, shape=(32, 4)
    )


def test_a_launch_with_less_dynamic_shared_memory_faults(monkeypatch):
    # the stages are the launch's dynamic shared memory: a launch with less cannot run
    rng = np.random.default_rng(3)
    a = contiguous(ints(rng, 1, 8, 16), float16)
    b = contiguous(ints(rng, 1, 16, 8), float16)
    c = contiguous(np.zeros((1, 8, 8), np.float32), float16)
    monkeypatch.setattr(mma, "shared_bytes", lambda *shape: 64 * 1024)
    with pytest.raises(AssertionError, match="ILLEGAL_ADDRESS|past 65536 bytes"):
        _emulated_product(a, b, c, float16, monkeypatch)


def test_the_pipeline_is_right_with_warps_run_one_at_a_time(monkeypatch):
    # each warp runs ahead to its next barrier: a stage refilled before every warp read it,
    # or read before its copies were waited for, would show as wrong values
    monkeypatch.setattr(machine, "WARP_SERIAL", True)
    test_emulated_kernel_matches_exact_sums_and_writes_only_c(
        "pipeline-wraps", float16, monkeypatch
    )


def test_shared_memory_accesses_are_free_of_bank_conflicts(monkeypatch):
    # the swizzle at work: each 8-lane phase of an ldmatrix (one matrix's rows) and each
    # quarter-warp of 16-byte cp.async stores touches the 8 distinct 16-byte bank groups
    # of a 128-byte line, so none waits for another
    phases = {"ldmatrix": 0, "cp": 0}
    conflicts = []

    def spy(head):
        handler = instructions.HANDLERS[head]

        def run(m, ins, lanes):
            if head == "ldmatrix" or ins.parts[2] in ("ca", "cg"):
                addr = ins.operands[1 if head == "ldmatrix" else 0]
                at = np.asarray(m.read(addr.base, "u64", lanes)).astype(np.int64) + addr.offset
                index = np.arange(m.n)[lanes]
                for warp in np.unique(m.warp[index]):
                    mine = at[m.warp[index] == warp]
                    for phase in range(4):
                        groups = set((mine[8 * phase : 8 * phase + 8] // 16 % 8).tolist())
                        phases[head] += 1
                        if len(groups) != 8:
                            conflicts.append((ins.text, int(warp), phase, sorted(groups)))
            return handler(m, ins, lanes)

        return run

    for head in phases:
        monkeypatch.setitem(instructions.HANDLERS, head, spy(head))
    test_emulated_kernel_matches_exact_sums_and_writes_only_c(
        "one-tile-edges", float16, monkeypatch
    )
    assert phases["ldmatrix"] and phases["cp"] and not conflicts, conflicts[:4]


def test_each_cta_picks_its_path_by_its_batchs_alignment(monkeypatch):
    # batch 1 of A starts 8 bytes off 16: its CTA reads fragments from global memory, while
    # batches 0 and 2 go through shared memory, all in one launch
    rng = np.random.default_rng(11)
    a = Operand(ints(rng, 3, 10, 16), float16, (10 * 16 + 4, 16, 1))
    b = contiguous(ints(rng, 3, 16, 8), float16)
    c = contiguous(np.zeros((3, 10, 8), np.float32), float16)
    _check(a, b, c, float16, monkeypatch, fast=True)


@pytest.mark.parametrize(
    "strides",
    [((20 * 24, 1, 20), None), (None, (1, 24)), ("offset", None)],
    ids=["a-column-major", "b-column-major", "a-misaligned"],
)
def test_other_layouts_take_the_fallback(strides, monkeypatch):
    rng = np.random.default_rng(12)
    a_st, b_st = strides
    values_a, values_b = ints(rng, 1, 20, 24), ints(rng, 1, 24, 16)
    if a_st == "offset":
        a = contiguous(values_a, bfloat16, offset=1)
    elif a_st:
        a = Operand(values_a, bfloat16, a_st)
    else:
        a = contiguous(values_a, bfloat16)
    b = Operand(values_b, bfloat16, (24 * 16, *b_st)) if b_st else contiguous(values_b, bfloat16)
    c = contiguous(np.zeros((1, 20, 16), np.float32), bfloat16, 17)
    _check(a, b, c, bfloat16, monkeypatch, fast=False)


# -- through kael, on a device or the emulated one ---------------------------------------------
def _close_to_host(got: kael.Tensor, a: kael.Tensor, b: kael.Tensor, dtype) -> None:
    """The device's product against torch's of the same half values in float32, rounded
    once to the dtype: equal up to one unit of the dtype where the float32 sums'
    order differs (and, near zero, up to that order's float32 error)."""
    want = torch.from_numpy(np.asarray(a.float())) @ torch.from_numpy(np.asarray(b.float()))
    want = want.to(TORCH[dtype]).float().numpy()
    assert got.dtype is dtype and tuple(got.shape) == want.shape
    ulp = 2.0**-10 if dtype is float16 else 2.0**-7
    np.testing.assert_allclose(np.asarray(got.float()), want, rtol=ulp, atol=2e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16], ids=str)
@pytest.mark.parametrize(
    "a_shape, b_shape",
    [
        ((19, 37), (37, 45)), ((3, 70, 33), (33, 65)), ((2, 1, 16, 16), (3, 16, 8)),
        ((40,), (40, 9)), ((37, 40), (40, 24)), ((2, 33, 72), (72, 136)), ((1, 1), (1, 1)),
    ],
    ids=str,
)  # fmt: skip
def test_cuda_half_matmul_matches_the_host(dtype, a_shape, b_shape):
    rng = np.random.default_rng(7)
    a = kael.tensor(rng.standard_normal(a_shape)).to(dtype)
    b = kael.tensor(rng.standard_normal(b_shape)).to(dtype)
    got = (a.cuda() @ b.cuda()).cpu()
    _close_to_host(got, a, b, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16], ids=str)
def test_cuda_half_matmul_reads_strided_operands(dtype):
    rng = np.random.default_rng(8)
    a = kael.tensor(rng.standard_normal((30, 50))).to(dtype)
    b = kael.tensor(rng.standard_normal((21, 25))).to(dtype)
    got = (a.cuda()[:, ::2] @ b.cuda().mT).cpu()  # a column stride of 2, B transposed
    _close_to_host(got, a[:, ::2], b.mT, dtype)
    a = kael.tensor(rng.standard_normal((24, 48))).to(dtype)
    b = kael.tensor(rng.standard_normal((40, 48))).to(dtype)
    got = (a.cuda()[:, :37] @ b.cuda()[:37, :45]).cpu()  # aligned rows, K and N cut in chunks
    _close_to_host(got, a[:, :37], b[:37, :45], dtype)


def test_the_module_docstring_describes_this_kernel():
    doc = Path(mma.__file__).read_text()
    for word in ("cp.async", "ldmatrix", "swizzle", "fallback"):
        assert word in doc
