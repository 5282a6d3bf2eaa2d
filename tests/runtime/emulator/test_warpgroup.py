"""wgmma on the emulated device, from hand-written PTX (checked by ptxas for sm_90a where
it is installed): operands placed in shared memory by the test in the PTX ISA's 128-byte
swizzled layouts, K-major and MN-major, read through matrix descriptors, and D in each
thread's registers as the ISA lays it out; faults for what a GPU refuses."""

from __future__ import annotations

import numpy as np
import pytest
from emulated_kernels import THREAD, fault_text, launch

from kael.runtime.emulator import driver

N = 64  # the product's N: one block of 64 along N for the MN-major layout
K_MAJOR_HIGH = (1 << 16) | ((1024 >> 4) << 32) | (1 << 62)  # LBO unused, SBO 8 lines
MN_MAJOR_HIGH = ((8192 >> 4) << 16) | ((1024 >> 4) << 32) | (1 << 62)  # LBO: 64-wide blocks


def _image(x: np.ndarray, k_major: bool) -> np.ndarray:
    """The bytes (as 8 KB of halves) of operand x (rows of M or N, by 16 of K) in the
    128-byte swizzle: K-major, line i holds row i's K; MN-major, line k holds K row k's 64
    elements; the 16-byte chunk c of line l sits at chunk c ^ (l % 8)."""
    lines = x if k_major else x.T  # (lines, elements along the line)
    out = np.zeros((64, 64), np.float16)
    for line, values in enumerate(lines):
        for c in range(len(values) // 8):
            spot = (c ^ (line % 8)) * 8
            out[line, spot : spot + 8] = values[8 * c : 8 * c + 8]
    return out.reshape(-1)


def _body(a_k_major: bool, b_k_major: bool, threads_copying: int = 128) -> str:
    """Threads copy in's 16 KB image to shared memory, fence and meet; one wgmma of A (at
    0) by B (at 8192); thread t stores its 32 registers to out[32 t ..]."""
    chunks = 16384 // 16
    body = "\tmov.u32 %r5, %r1;\n\tmov.u64 %rd9, smem;\n"
    body += "$Lcopy:\n\tsetp.ge.u32 %p1, %r5, " + str(chunks) + ";\n\t@%p1 bra $Ldone;\n"
    body += "\tmul.wide.u32 %rd3, %r5, 16;\n\tadd.s64 %rd4, %rd2, %rd3;\n"
    body += "\tld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd4];\n"
    body += "\tadd.s64 %rd5, %rd9, %rd3;\n\tst.shared.v4.u32 [%rd5], {%r10, %r11, %r12, %r13};\n"
    body += f"\tadd.u32 %r5, %r5, {threads_copying};\n\tbra.uni $Lcopy;\n$Ldone:\n"
    body += "\tfence.proxy.async.shared::cta;\n\tbar.sync 0;\n"
    for reg, offset, k_major in (("%rd10", 0, a_k_major), ("%rd11", 8192, b_k_major)):
        high = K_MAJOR_HIGH if k_major else MN_MAJOR_HIGH
        body += f"\tadd.s64 %rd6, %rd9, {offset};\n\tshr.u64 %rd6, %rd6, 4;\n"
        body += f"\tand.b64 %rd6, %rd6, 16383;\n\tor.b64 {reg}, %rd6, {high};\n"
    regs = ", ".join(f"%f{i}" for i in range(32))
    body += "".join(f"\tmov.f32 %f{i}, 0f00000000;\n" for i in range(32))
    body += "\tsetp.eq.u32 %p2, %r1, %r1;\n\twgmma.fence.sync.aligned;\n"
    body += f"\twgmma.mma_async.sync.aligned.m64n{N}k16.f32.f16.f16 {{{regs}}}, %rd10, %rd11,"
    body += f" %p2, 1, 1, {int(not a_k_major)}, {int(not b_k_major)};\n"
    body += "\twgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;\n"
    body += "\tmul.wide.u32 %rd7, %r1, 128;\n\tadd.s64 %rd8, %rd1, %rd7;\n"
    body += "".join(f"\tst.global.f32 [%rd8+{4 * i}], %f{i};\n" for i in range(32))
    return body


def _kernel(body: str) -> str:
    return (
        ".version 8.0\n.target sm_90a\n.address_size 64\n"
        ".visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)\n{\n"
        "\t.reg .pred %p<8>;\n\t.reg .b32 %r<32>;\n\t.reg .b64 %rd<32>;\n\t.reg .f32 %f<40>;\n"
        "\t.shared .align 1024 .b8 smem[16384];\n" + THREAD + body + "\tret;\n}\n"
    )


def _run(a, b, a_k_major, b_k_major, block=128):
    inp = np.concatenate([_image(a, a_k_major), _image(b.T, b_k_major)]).view(np.uint32)
    text = _kernel(_body(a_k_major, b_k_major))
    return launch(text, np.zeros((block, 32), np.float32), inp, 1, block, arch="sm_90a")


@pytest.mark.parametrize("b_k_major", [True, False], ids=["b-k-major", "b-n-major"])
@pytest.mark.parametrize("a_k_major", [True, False], ids=["a-k-major", "a-m-major"])
def test_wgmma_reads_swizzled_operands_and_lays_out_d_as_the_ptx_isa(a_k_major, b_k_major):
    rng = np.random.default_rng(2 * a_k_major + b_k_major)
    a = rng.integers(-8, 9, (64, 16)).astype(np.float16)
    b = rng.integers(-8, 9, (16, N)).astype(np.float16)
    err, got = _run(a, b, a_k_major, b_k_major)
    assert err == driver.OK, fault_text(err)
    want = a.astype(np.float64) @ b.astype(np.float64)  # small integers: exact
    for t in range(128):
        warp, lane = divmod(t, 32)
        for j in range(N // 8):
            for e in range(4):
                row = 16 * warp + lane // 4 + 8 * (e // 2)
                col = 8 * j + 2 * (lane % 4) + e % 2
                assert got[t, 4 * j + e] == want[row, col], (t, j, e)


def test_wgmma_faults_without_its_whole_warpgroup():
    a, b = np.ones((64, 16), np.float16), np.ones((16, N), np.float16)
    inp = np.concatenate([_image(a, True), _image(b.T, True)]).view(np.uint32)
    err, _ = launch(
        _kernel(_body(True, True, 64)), np.zeros((64, 32), np.float32), inp, 1, 64, arch="sm_90a"
    )
    assert "wgmma.fence.sync.aligned runs without its whole warpgroup" in fault_text(err)


def test_wgmma_refuses_descriptors_of_other_swizzles():
    body = _body(True, True).replace(f"{K_MAJOR_HIGH};", f"{K_MAJOR_HIGH & ~(3 << 62)};", 1)
    inp = np.zeros(16384 // 4, np.uint32)
    err, _ = launch(_kernel(body), np.zeros((128, 32), np.float32), inp, 1, 128, arch="sm_90a")
    assert "128-byte swizzled operands only" in fault_text(err)
