"""Compiled CPU kernels by Kernel: memory first, then the disk cache, then LLVM.

A warm process never runs LLVM for a kernel it has seen; a new process with a warm
disk cache only links the stored object code (about 1 ms a kernel).
"""

from __future__ import annotations

import time

from kael.codegen.cpu import compiler
from kael.codegen.lowering import CODEGEN_SCHEMA
from kael.ir.kernel import Kernel
from kael.ir.printer import format_kernel
from kael.runtime import debug, kernel_cache
from kael.runtime.launcher import kernel_fn
from kael.runtime.version import __version__


class CompiledKernel:
    """A kernel linked into this process: `fn(args_address, begin, end)` runs it."""

    __slots__ = ("kernel", "symbol", "text", "fn", "_tracker")

    def __init__(self, kernel: Kernel, symbol: str, text: str, address: int, tracker):
        self.kernel = kernel
        self.symbol = symbol
        self.text = text
        self.fn = kernel_fn(address, symbol, kernel)
        self._tracker = tracker  # unloading the library would free the code under fn


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
    """Whether `kernel` is linked into this process already."""
    return _memory.has(kernel)


def get(kernel: Kernel) -> CompiledKernel:
    """The compiled form of `kernel`, compiling it at most once per machine."""
    return _memory.get(kernel, lambda: _load_or_compile(kernel))


def _load_or_compile(kernel: Kernel) -> CompiledKernel:
    text, key = cache_key(kernel)
    symbol = symbol_of(kernel, key)
    start = time.perf_counter()
    obj, how = kernel_cache.fetch("cpu", key, lambda: compiler.compile_object(kernel, symbol))
    address, tracker = compiler.load_object(obj, symbol)
    debug.report_kernel(
        symbol,
        how,
        time.perf_counter() - start,
        [
            (2, "kael IR", lambda: text),
            (3, "LLVM IR", lambda: compiler.optimized_ir(kernel, symbol)),
            (4, "assembly", lambda: compiler.assembly(kernel, symbol)),
        ],
    )
    return CompiledKernel(kernel, symbol, text, address, tracker)
