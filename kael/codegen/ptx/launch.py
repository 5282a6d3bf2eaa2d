"""Runs Kernels on the GPU: PTX loaded once per kernel through the driver, then cuLaunchKernel.

A launch passes the same 64-bit words as the CPU argument block (device pointers,
sizes, strides, scalars) plus the element count; the kernel's grid-stride loop covers
any number of elements with a capped grid.
"""

from __future__ import annotations

from kael.codegen.ptx import compiler
from kael.codegen.ptx.kernel import param_count
from kael.ir.kernel import Kernel
from kael.runtime import cuda_driver, kernel_cache
from kael.runtime.errors import Error

THREADS_PER_BLOCK = 256
# Enough blocks to fill an H100/H200 (132 SMs x 8 resident blocks) several times over.
MAX_BLOCKS = 8192


class GpuFunction:
    """A kernel's entry in a loaded CUDA module; keeps the module loaded while it lives."""

    __slots__ = ("kernel", "name", "module", "function")

    def __init__(self, kernel: Kernel, name: str, module, function):
        self.kernel = kernel
        self.name = name
        self.module = module
        self.function = function


_loaded = kernel_cache.Memo()


def get(kernel: Kernel) -> GpuFunction:
    """The loaded entry of `kernel`, loading its PTX into the context at most once."""
    return _loaded.get(kernel, lambda: _load(kernel))


def _load(kernel: Kernel) -> GpuFunction:
    name = compiler.function_name(kernel)
    module, function = cuda_driver.load_function(compiler.ptx_for(kernel), name)
    return GpuFunction(kernel, name, module, function)


def grid_blocks(total: int) -> int:
    """Blocks for `total` elements: one element a thread, up to MAX_BLOCKS."""
    return max(1, min(MAX_BLOCKS, -(-total // THREADS_PER_BLOCK)))


def launch(kernel: Kernel, words: list[int], total: int) -> None:
    """Run `kernel` over `total` elements (not tiles: the GPU ignores tiling) on the null stream.

    `words` is the CPU argument block: device pointers, sizes, strides, scalar words.
    """
    expected = param_count(kernel) - 1
    if len(words) != expected:
        raise Error(f"kernel {kernel.name} takes {expected} argument words, got {len(words)}")
    if total <= 0:
        return
    entry = get(kernel)
    moved = total * sum(buffer.dtype.itemsize for buffer in kernel.buffers)
    cuda_driver.launch_kernel(
        entry.function, grid_blocks(total), THREADS_PER_BLOCK, [*words, total],
        name=entry.name, moved=moved, kernel=kernel,
    )  # fmt: skip
