"""Compiled CPU kernels by Kernel: memory first, then the disk cache, then LLVM.

A warm process never runs LLVM for a kernel it has seen; a new process with a warm
disk cache only links the stored object code (about 1 ms a kernel). A kernel new to the
machine is compiled at tier 0 (-O0) and promoted to optimized code on its first large
launch (codegen/cpu/tiers.py).
"""

from __future__ import annotations

import time

from kael.codegen.cpu import compiler, tiers
from kael.codegen.lowering import CODEGEN_SCHEMA
from kael.ir.kernel import Kernel
from kael.ir.printer import format_kernel
from kael.runtime import debug, kernel_cache
from kael.runtime.launcher import optimize
from kael.runtime.version import __version__


class CompiledKernel:
    """A kernel linked into this process: `fn(args_address, begin, end)` runs it."""

    __slots__ = ("kernel", "symbol", "text", "fn", "_tracker")

    def __init__(self, kernel: Kernel, symbol: str, text: str, linked: tiers.Linked):
        self.kernel = kernel
        self.symbol = symbol
        self.text = text
        self.fn = linked.fn(symbol, kernel)
        self._tracker = linked  # unloading the library would free the code under fn


_memory = kernel_cache.Memo()


def cache_key(kernel: Kernel) -> tuple[str, str]:
    """(text, key): the printed kernel and its hash with the target and versions."""
    text = format_kernel(kernel)
    t = compiler.host_target()
    key = kernel_cache.key_of(
        text, t["triple"], t["cpu"], t["features"], t["llvm"], __version__, CODEGEN_SCHEMA
    )
    return text, key


def symbol_of(kernel: Kernel, key: str) -> str:
    return f"kael_{kernel.name}_{key[:16]}"


def compiled_here(kernel: Kernel) -> bool:
    """Whether `kernel` is linked into this process already (at either tier)."""
    return _memory.has(kernel)


def optimized_here(kernel: Kernel) -> bool:
    """Whether `kernel` is linked into this process with its optimized code."""
    return _memory.has(kernel) and get(kernel).fn.tier0 is None


def source(kernel: Kernel, symbol: str) -> tiers.Source:
    """What tiers.link compiles for `kernel`: its one symbol and its LLVM IR text."""
    return lambda: ([symbol], compiler.kernel_text(kernel, symbol))


def get(kernel: Kernel, optimized: bool = False) -> CompiledKernel:
    """The compiled form of `kernel`, compiling it at most once per machine and tier;
    `optimized`: with its optimized code (a kernel linked at tier 0 is promoted)."""
    compiled = _memory.get(kernel, lambda: _load_or_compile(kernel, optimized))
    if optimized:
        optimize(compiled.fn)
    return compiled


def _load_or_compile(kernel: Kernel, optimized: bool) -> CompiledKernel:
    text, key = cache_key(kernel)
    symbol = symbol_of(kernel, key)
    start = time.perf_counter()
    linked = tiers.link(
        "cpu", key, symbol, source(kernel, symbol), compiler.kernel_passes, optimized
    )
    debug.report_kernel(
        symbol,
        linked.how,
        time.perf_counter() - start,
        [
            (2, "kael IR", lambda: text),
            (3, "LLVM IR", lambda: compiler.optimized_ir(kernel, symbol)),
            (4, "assembly", lambda: compiler.assembly(kernel, symbol)),
        ],
    )
    return CompiledKernel(kernel, symbol, text, linked)
