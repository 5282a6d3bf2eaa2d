"""Compiling a plan's new kernels side by side, in forked processes, before it needs them.

llvmlite serializes every LLVM call in a process, so kernels compile one at a time there.
A compiled plan's first call knows all its kernels at once: `compile_ahead` gives each
forked child a share of the kernels that are neither linked nor on disk; a child compiles
its share into the disk cache and exits, while this process compiles its own share, then
loads the children's from the disk (runtime/kernel_cache.py is the only channel, and
every entry it reads is checked). Anything a child fails to store is compiled here as
usual, so a failed fork or child only costs the parallelism; with a cache directory that
cannot be written nothing is forked.

Fork safety: fork() waits for kael's LLVM and allocator locks (runtime/sync.py), so the
child inherits none held; it only builds modules, runs LLVM and writes files, never
launches a kernel or starts a thread, and leaves with os._exit, on any error too; one
still running after CHILD_SECONDS is killed by its alarm or by the parent.
KAEL_PARALLEL_COMPILE=N sets how many processes compile at once (default: the CPUs;
0 or 1 turns it off).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import warnings
from collections.abc import Callable

from kael.codegen.cpu import compiler, jit, tiers
from kael.codegen.cpu import reduce as cpu_reduce
from kael.ir.kernel import Kernel
from kael.ir.reduction import Reduction
from kael.runtime import kernel_cache

CHILD_SECONDS = 300  # a child that takes longer is killed (its own alarm, then the parent)

# Python 3.12+ warns when a threaded process forks; these children only compile and exit.
warnings.filterwarnings(
    "ignore", message=r".*fork\(\) may lead to deadlocks", category=DeprecationWarning,
    module=__name__,
)  # fmt: skip


def processes() -> int:
    """How many processes may compile at once (KAEL_PARALLEL_COMPILE, else the CPUs)."""
    if not hasattr(os, "fork"):
        return 1
    setting = os.environ.get("KAEL_PARALLEL_COMPILE", "")
    try:
        return max(1, int(setting)) if setting else len(os.sched_getaffinity(0))
    except (ValueError, AttributeError):
        return 1


def _job(kernel: Kernel | Reduction) -> tuple[str, Callable[[], bytes]] | None:
    """(disk key, compile) of the optimized code of a kernel this process would
    have to compile, else None."""
    if isinstance(kernel, Reduction):
        if cpu_reduce.optimized_here(kernel):
            return None
        key, symbol = cpu_reduce.cache_key(kernel)
        source = cpu_reduce.source(kernel, symbol)
    else:
        if jit.optimized_here(kernel):
            return None
        _, key = jit.cache_key(kernel)
        source = jit.source(kernel, jit.symbol_of(kernel, key))
    make = lambda: tiers.optimized_payload(source, compiler.kernel_passes)  # noqa: E731
    return None if kernel_cache.exists("cpu", key) else (key, make)


def compile_ahead(kernels: list[Kernel | Reduction]) -> int:
    """Compile those of `kernels` that are not cached yet, in up to `processes()` processes
    at once; returns how many children compiled. This process then finds every kernel on
    disk or compiles it as usual."""
    workers = processes()
    if workers < 2:
        return 0
    jobs, seen = [], set()
    for k in kernels:
        if k not in seen:
            seen.add(k)
            job = _job(k)
            if job is not None:
                jobs.append((k, job))
    workers = min(len(jobs), workers)
    if workers < 2 or not kernel_cache.writable("cpu"):
        return 0  # a child's work would be lost: the cache is the only way back
    shares = [jobs[i::workers] for i in range(workers)]
    children = [pid for pid in map(_fork_compiling, shares[1:]) if pid]
    try:
        for kernel, _ in shares[0]:  # this process's share: compiled and linked now
            if isinstance(kernel, Reduction):
                cpu_reduce.get(kernel, optimized=True)
            else:
                jit.get(kernel, optimized=True)
    finally:
        _reap(children, time.monotonic() + CHILD_SECONDS)
    return len(children)


def _reap(children: list[int], deadline: float) -> None:
    """Wait for the children, killing any still running at `deadline`."""
    pending = list(children)
    while pending:
        for pid in list(pending):
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(pid, os.WNOHANG)[0] == 0:
                    if time.monotonic() < deadline:
                        continue
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
            pending.remove(pid)
        if pending:
            time.sleep(0.002)


def _fork_compiling(share: list) -> int:
    """A child compiling `share` into the disk cache; its pid, or 0 if fork failed."""
    try:
        pid = os.fork()
    except OSError:
        return 0
    if pid:
        return pid
    status = 1
    try:
        signal.signal(signal.SIGALRM, signal.SIG_DFL)  # a Python handler could not run here
        signal.alarm(CHILD_SECONDS)
        for _, (key, make) in share:
            kernel_cache.store("cpu", key, make())
        status = 0
    finally:
        os._exit(status)
