"""Looking inside: each kernel's kael IR, LLVM IR, assembly and PTX, and kael.explain."""

from __future__ import annotations

from collections.abc import Callable

from kael.codegen.cpu import compiler, jit
from kael.frontend import eager
from kael.ir.kernel import Kernel
from kael.ir.printer import format_kernel
from kael.runtime.errors import ValueError

STAGES = ("kael", "llvm", "asm", "ptx")


def kernel_stage(kernel: Kernel, stage: str) -> str:
    """One stage of one kernel's compilation, as text: kael, llvm, asm or ptx."""
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


def record_launches(fn: Callable, *args, **kwargs) -> tuple[object, list[eager.Launch]]:
    """Call fn and return its result with every kernel launch it made."""
    saved = eager.recorder
    eager.recorder = launches = []
    try:
        result = fn(*args, **kwargs)
    finally:
        eager.recorder = saved
    return result, launches


def explain(
    fn: Callable, *args, stages: tuple[str, ...] = ("kael",), **kwargs
) -> list[eager.Launch]:
    """Print, for one call of fn, each kernel with its IR, bytes moved, time and GB/s."""
    _, launches = record_launches(fn, *args, **kwargs)
    for i, launch in enumerate(launches):
        print(f"kernel {i}: {launch}")
        for stage in stages:
            print(kernel_stage(launch.kernel, stage))
    return launches
