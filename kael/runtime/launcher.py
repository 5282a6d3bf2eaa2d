"""Runs a compiled CPU kernel over its work items, inline or split across the thread pool.

Every CPU launch goes through `launch`, which reports it to runtime/launches.py when
something records launches or KAEL_DEBUG is on (and costs one check otherwise).
"""

from __future__ import annotations

import array
import ctypes
import time

from kael.runtime import debug, launches
from kael.runtime.threadpool import ALIGN_ITEMS, get_num_threads, pool
from kael.runtime.tracestate import state as _trace_state

# Below this many bytes moved, waking a worker costs more than it saves.
PARALLEL_BYTES = 1 << 20
# An inline launch moving this many bytes releases the GIL (a microsecond of work or more),
# so other Python threads run beside it; below it, taking the GIL back costs more.
RELEASE_BYTES = 64 * 1024
# A kernel still on its tier-0 (-O0) code gets its optimized code before its first launch
# moving this many bytes (codegen/cpu/tiers.py): a microsecond of work or more.
PROMOTE_BYTES = RELEASE_BYTES

# The signature of every compiled kernel: void f(i64* args, i64 begin, i64 end).
KernelFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


def kernel_fn(address: int, symbol: str, kernel: object = None, library=None) -> KernelFn:
    """A callable for the kernel at `address`, carrying what its launch records show: its
    kael IR (`kernel`), or the hand-written library it is in (whose `.text` is LLVM IR)."""
    fn = KernelFn(address)
    fn.address, fn.symbol, fn.kernel, fn.library = address, symbol, kernel, library
    fn.tier0 = None  # codegen/cpu/tiers.py's Tier0 while the kernel runs its -O0 code
    return fn


def optimize(fn) -> None:
    """Have `fn` run its optimized code from now on: a kernel still on its tier-0 code is
    promoted (codegen/cpu/tiers.py). Compiled plans ask it of each kernel they take."""
    tier = getattr(fn, "tier0", None)
    if tier is not None:
        tier.promote()


def runs_inline(fn, bytes_moved: int) -> bool:
    """For a launch of PROMOTE_BYTES or more: whether it runs on the calling thread (see
    `inline`), its kernel optimized first."""
    tier = getattr(fn, "tier0", None)  # optimize(fn) and inline(), inlined: asked per launch
    if tier is not None:
        tier.promote()
    return bytes_moved < PARALLEL_BYTES or get_num_threads() == 1


def replayable(fn, bytes_moved: int) -> bool:
    """Whether a fast door may keep a launch of `fn` moving this many bytes, to replay it as
    one native call: below PARALLEL_BYTES it runs on the calling thread on any thread
    count, and from PROMOTE_BYTES on its kernel is optimized here, as a launch would have
    it (the door's replays skip the launcher)."""
    if bytes_moved >= PARALLEL_BYTES:
        return False
    if bytes_moved >= PROMOTE_BYTES:
        optimize(fn)
    return True


def count_launch(fn) -> None:
    """Count a launch of `fn` toward its tier-0 code's promotion (codegen/cpu/tiers.py)."""
    tier = getattr(fn, "tier0", None)
    if tier is not None:
        tier.launched()


# The inline call as a builtin, call(fn address, block address, total, release the GIL):
# codegen/cpu/native_launch.py installs it (~0.1 us; a ctypes call costs ~0.5 us).
_direct = None


def install_direct(call) -> None:
    global _direct
    _direct = call


def launch(fn, words: list[int], *args, **kwargs) -> None:
    """Call `fn` over work items [0, total) with the argument block `words` (see
    launch_block for the other arguments)."""
    # An array: a quarter of a ctypes array's cost to build.
    launch_block(fn, array.array("q", words), *args, **kwargs)


def inline(bytes_moved: int, threads: int) -> bool:
    """Whether a launch runs on the calling thread: below PARALLEL_BYTES moved, or on one
    thread (waking the pool would cost more than the work)."""
    return bytes_moved < PARALLEL_BYTES or threads == 1


def run_block(fn, block: array.array, total: int, bytes_moved: int, align: int = ALIGN_ITEMS):
    """The launch itself, unrecorded: inline (see `inline`), else split over the pool.
    launch_block's callers, the eager fast door and compiled replays, which are never
    used while launches are recorded or traced."""
    if bytes_moved < PROMOTE_BYTES or runs_inline(fn, bytes_moved):
        address = getattr(fn, "address", None)  # kernel_fn's; a bare CFUNCTYPE has none
        if _direct is None or address is None:
            fn(block.buffer_info()[0], 0, total)
        else:
            _direct(address, block.buffer_info()[0], total, bytes_moved >= RELEASE_BYTES)
    else:
        run_pooled(fn, block, total, align)


def run_pooled(fn, block: array.array, total: int, align: int = ALIGN_ITEMS) -> None:
    """The launch on the thread pool, for callers that found it does not run inline."""
    pool().run(fn, block.buffer_info()[0], total, align, get_num_threads())


def launch_block(
    fn,
    block: array.array,
    total: int,
    bytes_moved: int,
    align: int = ALIGN_ITEMS,
    *,
    shape: tuple[int, ...] | None = None,
    flops: int = 0,
    kernel: object = None,
    recorded_bytes: int | None = None,
) -> None:
    """Call `fn` over work items [0, total) with the argument block `block` (a compiled
    plan's is copied from a prebuilt template and patched), on the thread pool when it
    moves at least PARALLEL_BYTES. `shape` (what the launch covers), `flops`, `kernel`
    (the IR it runs, where fn's own is not: a row group's members) and `recorded_bytes`
    (the bytes it moves where bytes_moved, which decides the split, counts more) only show
    in its launch record."""
    if _trace_state.trace is not None:
        _trace_state.trace.hand_written(getattr(fn, "symbol", "unnamed"))
    if total <= 0:
        return
    count_launch(fn)  # the fast door's launches come here only the first time
    watched = launches.recorder is not None or debug.level >= 1
    start = time.perf_counter() if watched else 0.0
    run_block(fn, block, total, bytes_moved, align)
    if watched:
        launches.report(
            launches.Launch(
                getattr(fn, "symbol", "unnamed"),
                shape,
                total,
                bytes_moved if recorded_bytes is None else recorded_bytes,
                time.perf_counter() - start,
                flops,
                getattr(fn, "kernel", None) if kernel is None else kernel,
                getattr(fn, "library", None),
            )
        )
