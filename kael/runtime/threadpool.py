"""A persistent pool of worker threads that run compiled kernels on disjoint work ranges.

A ctypes call releases the GIL, so the workers run kernels truly in parallel. The
calling thread takes the first range itself. Small launches never reach the pool:
waking a thread costs tens of microseconds (see launcher.py). After fork() the child
starts with no workers and makes new ones on demand. When the system refuses a thread, a
pool runs with the threads it has (`regroup`), never waiting for one that did not start.
"""

from __future__ import annotations

import os
import queue
import threading

from kael.runtime import sync
from kael.runtime.errors import ValueError

# More threads than this is a mistake, not a machine: set_num_threads refuses it.
MAX_THREADS = 1024
# Ranges start on multiples of this many work items, so threads do not share cache lines.
ALIGN_ITEMS = 64


def _default_threads() -> int:
    raw = os.environ.get("KAEL_NUM_THREADS", "")
    if raw.isdigit() and int(raw) > 0:
        return min(int(raw), MAX_THREADS)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


class ThreadPool:
    """Python workers each with an inbox; `run` hands one range to each and waits for all.

    The fallback where the compiled pool (kael/codegen/cpu/parallel.py) cannot run.
    """

    def __init__(self) -> None:
        self._lock = sync.lock()
        self.after_fork_in_child()

    def _ensure_workers(self, n: int) -> int:
        """Start workers until there are n, or until the system refuses one; how many there are."""
        while len(self._workers) < min(n, self._limit):
            inbox: queue.SimpleQueue = queue.SimpleQueue()
            t = threading.Thread(target=self._work, args=(inbox,), daemon=True, name="kael-worker")
            try:
                t.start()
            except RuntimeError:  # "can't start new thread"
                self._limit = len(self._workers)
                break
            self._workers.append(inbox)
        return len(self._workers)

    def _work(self, inbox: queue.SimpleQueue) -> None:
        while True:
            fn, args, begin, end, done = inbox.get()
            try:
                fn(args, begin, end)
            finally:
                done.put(None)

    def run(self, fn, args: int, total: int, align: int, threads: int) -> None:
        """Call fn(args, begin, end) over work items [0, total) split into a range per
        thread (`align`ed starts), up to `threads` threads, the first range on this one."""
        ranges = split(total, threads, align)
        with self._lock:
            ranges = regroup(ranges, self._ensure_workers(len(ranges) - 1) + 1)
            helpers = ranges[1:]
            for inbox, (b, e) in zip(self._workers, helpers):
                inbox.put((fn, args, b, e, self._done))
            try:
                fn(args, *ranges[0])
            finally:
                for _ in helpers:
                    self._done.get()

    def after_fork_in_child(self) -> None:
        """No workers (a child has none of the parent's threads); sync.py resets the lock."""
        self._workers: list[queue.SimpleQueue] = []
        self._done: queue.SimpleQueue = queue.SimpleQueue()
        self._limit = MAX_THREADS  # workers the system let us start


def split(total: int, parts: int, align: int = ALIGN_ITEMS) -> list[tuple[int, int]]:
    """[0, total) as up to `parts` contiguous ranges of near-equal length."""
    parts = max(1, min(parts, total // max(1, align) or 1))
    step = -(-total // parts)
    step = -(-step // align) * align if total >= parts * align else step
    return [(b, min(b + step, total)) for b in range(0, total, step)] or [(0, 0)]


def regroup(ranges: list[tuple[int, int]], parts: int) -> list[tuple[int, int]]:
    """Consecutive `ranges` merged into at most `parts` ranges of near-equal counts.

    For a pool with fewer threads than a launch was split for: each merged range still
    starts where one of the original ranges did, so alignment is kept.
    """
    n = len(ranges)
    if parts >= n:
        return ranges
    cuts = [i * n // parts for i in range(parts + 1)]
    return [(ranges[a][0], ranges[b - 1][1]) for a, b in zip(cuts, cuts[1:])]


_num_threads = _default_threads()
_python_pool = ThreadPool()
_native = None


def pool():
    """The pool that runs multi-threaded launches: the compiled one once installed."""
    return _native or _python_pool


def install(native) -> None:
    """Route launches to a compiled pool with the same `run` (codegen installs it)."""
    global _native
    _native = native


def python_pool() -> ThreadPool:
    return _python_pool


def set_num_threads(n: int) -> None:
    """Use `n` threads for large kernels (1 runs everything on the calling thread)."""
    global _num_threads
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"number of threads must be a positive int, got {n!r}")
    if n > MAX_THREADS:
        raise ValueError(f"number of threads must be at most {MAX_THREADS}, got {n}")
    _num_threads = n


def get_num_threads() -> int:
    return _num_threads


def _after_fork_in_child() -> None:
    for p in (_python_pool, _native):
        if p is not None:
            p.after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)
