"""Hand-written PTX kernels launched on the emulated device, for the emulator's tests
(tests/runtime/emulator): an entry k(out, in), its thread index and pointers in fixed
registers, ptxas's check where it is installed, and the launch."""

from __future__ import annotations

import ctypes
import shutil

import numpy as np

from kael.codegen.ptx import compiler
from kael.runtime.emulator import driver

HEADER = """.version 8.0
.target sm_90
.address_size 64
"""
THREAD = """
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mad.lo.s32 %r4, %r2, %r3, %r1;
	ld.param.u64 %rd1, [k_param_0];
	ld.param.u64 %rd2, [k_param_1];
	cvta.to.global.u64 %rd1, %rd1;
	cvta.to.global.u64 %rd2, %rd2;
"""


def kernel(body: str, shared: str = "") -> str:
    """An entry `k(out, in)` whose thread t has t in %r4, out in %rd1 and in in %rd2."""
    return (
        HEADER
        + ".visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)\n{\n"
        + "\t.reg .pred %p<8>;\n\t.reg .b32 %r<32>;\n\t.reg .b64 %rd<32>;\n"
        + shared
        + THREAD
        + body
        + "\tret;\n}\n"
    )


def checked(text: str, arch: str = compiler.ARCH) -> str:
    if shutil.which("ptxas"):
        compiler.ptxas_check(text, arch)  # the test's PTX is PTX a GPU would load
    return text


def launch(
    text: str,
    out: np.ndarray,
    inp: np.ndarray,
    grid: int,
    block: int,
    shared=0,
    allow=None,
    arch: str = compiler.ARCH,
):
    """Run k(out, in) on the emulated device with `shared` bytes of dynamic shared memory,
    allowed up to `allow` first where given; (CUresult, out's bytes after the launch)."""
    _, module = driver.cuModuleLoadData(checked(text, arch).encode())
    _, fn = driver.cuModuleGetFunction(module, b"k")
    if allow is not None:
        attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        assert driver.cuFuncSetAttribute(fn, attribute, allow) == (driver.OK,)
    _, dst = driver.cuMemAlloc(out.nbytes)
    _, src = driver.cuMemAlloc(inp.nbytes)
    try:
        driver.cuMemcpyHtoD(src, inp.ctypes.data, inp.nbytes)
        driver.cuMemcpyHtoD(dst, out.ctypes.data, out.nbytes)
        words = (ctypes.c_uint64 * 2)(dst, src)
        slots = (ctypes.c_void_p * 2)(ctypes.addressof(words), ctypes.addressof(words) + 8)
        (err,) = driver.cuLaunchKernel(
            fn, grid, 1, 1, block, 1, 1, shared, 0, ctypes.addressof(slots), 0
        )
        result = np.empty_like(out)
        driver.cuMemcpyDtoH(result.ctypes.data, dst, out.nbytes)
    finally:
        driver.cuMemFree(dst)
        driver.cuMemFree(src)
    return err, result


def fault_text(err) -> str:
    return driver.cuGetErrorName(err)[1].decode() + ": " + driver.cuGetErrorString(err)[1].decode()
