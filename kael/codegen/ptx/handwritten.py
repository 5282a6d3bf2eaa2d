"""Hand-written kernels on the GPU: the very LLVM functions the CPU runs, compiled for NVPTX.

A hand-written CPU kernel is `void f(i64* args, i64 begin, i64 end)` over work items, built
by a target-neutral builder (codegen/cpu/gather.py's index walks and nonzero). Here the
same builder fills an NVPTX module, each function becomes internal and is called by a
`<symbol>_grid(args, items)` entry whose threads take work items t, t + T, ... one at a
time, and the argument block is copied to device memory for the launch. So an index
kernel has one implementation on both devices; its speed on a GPU (one thread per work
item, the block read by every thread) is a first step, not a tuned kernel.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence

from llvmlite import ir

from kael.codegen.lowering import i64
from kael.codegen.ptx import compiler
from kael.codegen.ptx.kernel import DATA_LAYOUT, TRIPLE, sreg
from kael.runtime import cuda_driver, kernel_cache, staging
from kael.runtime.allocator import allocator_for, block_capacity
from kael.runtime.device import CUDA

THREADS = 256
MAX_BLOCKS = 8192
I64 = ir.IntType(64)
Build = Callable[[ir.Module], list[str]]

_modules = kernel_cache.Memo()
_functions = kernel_cache.Memo()


def grid_symbol(symbol: str) -> str:
    return f"{symbol}_grid"


def build_module(name: str, build: Build) -> ir.Module:
    """The builder's functions in an NVPTX module, each behind its grid entry."""
    module = ir.Module(name=name)
    module.triple = TRIPLE
    module.data_layout = DATA_LAYOUT
    for symbol in build(module):
        _grid_entry(module, module.globals[symbol])
    return module


def _grid_entry(module: ir.Module, body: ir.Function) -> None:
    body.linkage = "internal"
    body.attributes.add("alwaysinline")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64, I64]), grid_symbol(body.name))
    fn.calling_convention = "ptx_kernel"
    fn.attributes.add("nounwind")
    words, items = fn.args
    words.name, items.name = "args", "items"
    entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "item", "exit"))
    b = ir.IRBuilder(entry)
    args = b.inttoptr(words, I64.as_pointer())
    threads = sreg(b, "ntid.x")
    start = b.add(b.mul(sreg(b, "ctaid.x"), threads), sreg(b, "tid.x"))
    step = b.mul(sreg(b, "nctaid.x"), threads)
    b.cbranch(b.icmp_signed("<", start, items), loop, done)
    b.position_at_end(loop)
    item = b.phi(I64, name="i")
    item.add_incoming(start, entry)
    b.call(body, [args, item, b.add(item, i64(1))])
    following = b.add(item, step)
    item.add_incoming(following, b.block)
    b.cbranch(b.icmp_signed("<", following, items), loop, done)
    b.position_at_end(done)
    b.ret_void()


def ptx(name: str, build: Build) -> str:
    """The module's PTX, running LLVM at most once per machine (kept with the kernels' PTX)."""

    return _modules.get(name, lambda: compiler.stored_ptx(name, lambda: build_module(name, build)))


def function(name: str, build: Build, symbol: str):
    """The loaded grid entry of `symbol` (loaded into the context once)."""
    entry = grid_symbol(symbol)
    return _functions.get(
        (name, entry), lambda: cuda_driver.load_function(ptx(name, build), entry)
    )[1]


class DeviceRunner:
    """Runs hand-written kernel families on the GPU for one op call: scratch words in device
    memory (from the caching allocator, returned by `close`), launches on the current
    stream; the allocator keeps a block another stream may still use (DeviceAllocator)."""

    def __init__(self) -> None:
        self._blocks: list[tuple[int, int]] = []
        self._allocator = allocator_for(CUDA)

    def scratch(self, values: Sequence[int]) -> int:
        """Device memory holding `values` as int64; its address. The words are copied on the
        current stream without waiting for the work queued on it (runtime/staging.py)."""
        ptr = self.scratch_bytes(8 * max(1, len(values)))
        if values:
            host = (ctypes.c_int64 * len(values))(*values)
            staging.copy_to_device(ptr, ctypes.addressof(host), 8 * len(values))
        return ptr

    def space(self, count: int) -> int:
        """Device memory for `count` int64 words, uninitialized; its address."""
        return self.scratch_bytes(8 * max(1, count))

    def scratch_bytes(self, nbytes: int) -> int:
        capacity = block_capacity(nbytes)
        ptr = self._allocator.allocate(capacity, nbytes)
        self._blocks.append((ptr, capacity))
        return ptr

    def read(self, address: int, count: int) -> list[int]:
        host = (ctypes.c_int64 * count)()
        cuda_driver.memcpy_dtoh(ctypes.addressof(host), address, 8 * count)
        return list(host)

    def run(
        self, name, build, symbol, words, items, moved, align=None, serial=False, kernel=None
    ) -> None:
        """One launch over `items` work items; `serial`: all on one thread, in order (a put
        whose repeated offsets must end with the last write). `moved` (also the launch
        record's bytes) and `align` are the CPU's split hints; `kernel`: the IR it runs, for
        the launch record."""
        if items <= 0:
            return
        block = self.scratch(words)
        blocks = 1 if serial else max(1, min(MAX_BLOCKS, -(-items // THREADS)))
        threads = 1 if serial else THREADS
        cuda_driver.launch_kernel(
            function(name, build, symbol), blocks, threads, [block, items], name=symbol,
            moved=moved, kernel=kernel,
        )  # fmt: skip

    def close(self) -> None:
        for ptr, capacity in self._blocks:
            self._allocator.release(ptr, capacity)
        self._blocks.clear()
