"""Runs a compiled CPU kernel over its work items, inline or split across the thread pool."""

from __future__ import annotations

import ctypes

from kael.runtime.threadpool import get_num_threads, pool

# Below this many bytes moved, waking a worker costs more than it saves.
PARALLEL_BYTES = 1 << 20
# Ranges start on multiples of this many work items, so threads do not share cache lines.
ALIGN_ITEMS = 64


def split(total: int, parts: int, align: int = ALIGN_ITEMS) -> list[tuple[int, int]]:
    """[0, total) as up to `parts` contiguous ranges of near-equal length."""
    parts = max(1, min(parts, total // max(1, align) or 1))
    step = -(-total // parts)
    step = -(-step // align) * align if total >= parts * align else step
    return [(b, min(b + step, total)) for b in range(0, total, step)] or [(0, 0)]


def launch(fn, words: list[int], total: int, bytes_moved: int, align: int = ALIGN_ITEMS) -> None:
    """Call `fn` over work items [0, total) with the argument block `words`."""
    if total <= 0:
        return
    block = (ctypes.c_int64 * len(words))(*words)
    address = ctypes.addressof(block)
    threads = get_num_threads()
    if threads == 1 or bytes_moved < PARALLEL_BYTES:
        fn(address, 0, total)
        return
    pool().run(fn, address, split(total, threads, align))
