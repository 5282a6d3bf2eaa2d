"""Compiled CPU kernels by Kernel: memory first, then the disk cache, then LLVM.

A warm process never runs LLVM for a kernel it has seen; a new process with a warm
disk cache only links the stored object code (about 1 ms a kernel).
"""

from __future__ import annotations

import ctypes
import threading
import time

from kael.codegen import lowering
from kael.codegen.cpu import compiler, loops
from kael.ir import printer
from kael.ir.kernel import Kernel
from kael.ir.printer import format_kernel
from kael.runtime import debug, kernel_cache
from kael.runtime.version import __version__

KernelFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


_CODEGEN_SCHEMA = kernel_cache.source_fingerprint(lowering, loops, compiler, printer)


class CompiledKernel:
    """A kernel linked into this process: `fn(args_address, begin, end)` runs it."""

    __slots__ = ("kernel", "symbol", "text", "fn", "_tracker")

    def __init__(self, kernel: Kernel, symbol: str, text: str, address: int, tracker):
        self.kernel = kernel
        self.symbol = symbol
        self.text = text
        self.fn = KernelFn(address)
        self._tracker = tracker  # unloading the library would free the code under fn


_memory: dict[Kernel, CompiledKernel] = {}
_lock = threading.Lock()


def cache_key(kernel: Kernel) -> tuple[str, str]:
    """(text, key): the printed kernel and its hash with the target and versions."""
    text = format_kernel(kernel)
    t = compiler.host_target()
    key = kernel_cache.key_of(
        text, t["triple"], t["cpu"], t["features"], t["llvm"], __version__, _CODEGEN_SCHEMA
    )
    return text, key


def symbol_of(kernel: Kernel, key: str) -> str:
    return f"kael_{kernel.name}_{key[:16]}"


def get(kernel: Kernel) -> CompiledKernel:
    """The compiled form of `kernel`, compiling it at most once per machine."""
    ck = _memory.get(kernel)
    if ck is not None:
        kernel_cache.stats["memory_hits"] += 1
        return ck
    with _lock:
        ck = _memory.get(kernel)
        if ck is None:
            ck = _load_or_compile(kernel)
            _memory[kernel] = ck
    return ck


def _load_or_compile(kernel: Kernel) -> CompiledKernel:
    text, key = cache_key(kernel)
    symbol = symbol_of(kernel, key)
    start = time.perf_counter()
    obj = kernel_cache.load("cpu", key)
    how = "disk cache"
    if obj is None:
        obj = compiler.compile_object(kernel, symbol)
        kernel_cache.store("cpu", key, obj)
        kernel_cache.stats["compiled"] += 1
        how = "compiled"
    else:
        kernel_cache.stats["disk_hits"] += 1
    address, tracker = compiler.load_object(obj, symbol)
    if debug.level >= 1:
        ms = (time.perf_counter() - start) * 1e3
        debug.emit(f"[kael] kernel {symbol}: {how} in {ms:.2f} ms")
    if debug.level >= 2:
        debug.emit(f"[kael] kael IR of {symbol}:\n{text}")
    if debug.level >= 3:
        debug.emit(f"[kael] LLVM IR of {symbol}:\n{compiler.optimized_ir(kernel, symbol)}")
    if debug.level >= 4:
        debug.emit(f"[kael] assembly of {symbol}:\n{compiler.assembly(kernel, symbol)}")
    return CompiledKernel(kernel, symbol, text, address, tracker)
