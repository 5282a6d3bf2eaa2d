"""Looking inside: each kernel's kael IR, LLVM IR, assembly and PTX, and kael.explain."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from kael.codegen.cpu import compiler, jit
from kael.ir.kernel import Kernel
from kael.ir.printer import format_kernel, format_reduction
from kael.ir.reduction import Reduction
from kael.runtime import launches
from kael.runtime.errors import ValueError
from kael.runtime.launches import Launch

STAGES = ("kael", "llvm", "asm", "ptx")


def kernel_stage(kernel: Kernel | Reduction, stage: str) -> str:
    """One stage of one kernel's compilation, as text: kael, llvm, asm or ptx."""
    if isinstance(kernel, Reduction):
        return _reduction_stage(kernel, kernel.name, stage)
    _, key = jit.cache_key(kernel)
    symbol = jit.symbol_of(kernel, key)
    if stage == "kael":
        return format_kernel(kernel)
    if stage == "llvm":
        return compiler.optimized_ir(kernel, symbol)
    if stage == "asm":
        return compiler.assembly(kernel, symbol)
    if stage == "ptx":
        from kael.codegen.ptx.compiler import ptx_for

        return ptx_for(kernel)
    raise ValueError(f"unknown stage '{stage}', expected one of {', '.join(STAGES)}")


def product_stage(dtype, stage: str, op: str = "matmul") -> str:
    """One stage of the hand-written matrix-product kernels of `dtype` (a plan's matmul),
    or with op "conv" of its implicit-GEMM convolution kernels."""
    from kael.codegen.cpu import conv, gemm, gemm_gemv

    if stage not in STAGES:
        raise ValueError(f"unknown stage '{stage}', expected one of {', '.join(STAGES)}")
    if op == "conv" and stage != "ptx":
        lib = conv.library(gemm.host_spec(dtype))
        if stage == "kael":
            return (
                f"({lib.name}: weight packing; window blocks packed from the input, micro-kernels)"
            )
        return lib.text if stage == "llvm" else lib.assembly()
    if stage == "kael":
        spec = gemm.host_spec(dtype)
        return f"(gemm {spec.text() if spec else dtype}: packing, micro-kernels, macro loop)"
    if stage == "ptx":
        from kael.codegen.ptx import gemm as ptx_gemm

        return ptx_gemm.ptx(dtype)
    libs = []
    spec = gemm.host_spec(dtype)
    if spec is not None:
        libs = [gemm.float_library(spec), gemm.pack_library(spec), gemm_gemv.library(dtype)]
    libs = libs or [gemm.int64_library()]
    if stage == "llvm":
        return "\n".join(lib.text for lib in libs)
    return "\n".join(lib.assembly() for lib in libs)


def record_launches(fn: Callable, *args, **kwargs) -> tuple[object, list[Launch]]:
    """Call fn and return its result with every kernel launch it made."""
    saved = launches.recorder
    launches.recorder = made = []
    try:
        result = fn(*args, **kwargs)
    finally:
        launches.recorder = saved
    return result, made


def launch_stage(launch: Launch, stage: str) -> str:
    """One stage of a launched kernel: kael, llvm, asm or ptx for an IR kernel; kael, llvm
    or ptx for a reduction; llvm for a hand-written kernel."""
    if isinstance(launch.kernel, Kernel):
        return kernel_stage(launch.kernel, stage)
    if isinstance(launch.kernel, Reduction):
        return _reduction_stage(launch.kernel, launch.symbol.removesuffix("_final"), stage)
    if isinstance(launch.kernel, tuple):  # the row driver and the members it runs per row
        members = [kernel_stage(k, stage) for k in launch.kernel]
        own = launch_stage(dataclasses.replace(launch, kernel=None), stage)
        return "\n".join(members if stage in ("kael", "ptx") else [own, *members])
    if launch.kind == "copy":
        return f"({launch.symbol}: a memory copy to, from or on {launch.device}, no kernel)"
    if stage == "llvm" and launch.llvm is not None:
        return launch.llvm
    if stage == "asm" and launch.library is not None:
        return launch.library.assembly()
    if stage not in STAGES:
        raise ValueError(f"unknown stage '{stage}', expected one of {', '.join(STAGES)}")
    return f"({launch.symbol}: no {stage} stage to show for this kernel)"


def _reduction_stage(red: Reduction, symbol: str, stage: str) -> str:
    if stage == "kael":
        return format_reduction(red)
    if stage in ("llvm", "asm"):
        from kael.codegen.cpu.handwritten import ir_text
        from kael.codegen.cpu.reduce import build_module

        text = ir_text(build_module(red, symbol))
        if stage == "llvm":
            return text
        return compiler.assembly_of_ir_text(text, compiler.kernel_passes(text))
    if stage == "ptx":
        from kael.codegen.ptx.reduce import ptx_for

        return ptx_for(red)
    if stage not in STAGES:
        raise ValueError(f"unknown stage '{stage}', expected one of {', '.join(STAGES)}")
    return f"({symbol}: no {stage} stage to show for this kernel)"


def explain(fn: Callable, *args, stages: tuple[str, ...] = ("kael",), **kwargs) -> list[Launch]:
    """Print, for one call of fn, each launch with its IR (where it has one), time and rate.

    For a kael.compile function whose plan for these arguments does not exist yet, the
    first call (trace, compile, run) is made and timed apart, then one call is explained.
    """
    from kael.frontend.compiled import CompiledFunction

    if isinstance(fn, CompiledFunction):
        traces = fn.cache_info().traces
        start = time.perf_counter()
        plan = fn.plan_for(*args, **kwargs)
        if fn.cache_info().traces > traces:
            print(f"trace and compile (a first call): {(time.perf_counter() - start) * 1e3:.2f} ms")
        externs = sum(1 for s in plan.steps if type(s).__name__ == "ExternCall")
        print(f"plan: {len(plan.kernel_steps)} fused kernels, {externs} extern steps")
    _, made = record_launches(fn, *args, **kwargs)
    for i, launch in enumerate(made):
        print(f"kernel {i}: {launch}")
        for stage in stages:
            print(launch_stage(launch, stage))
    return made
