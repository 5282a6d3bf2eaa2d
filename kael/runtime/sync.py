"""kael's locks and lazily built values, correct under concurrent first use and across fork().

fork() copies only the calling thread: a lock another thread held at that moment stays
held forever in the child, and a lazily built value half-built by another thread is lost.
So every lock kael takes comes from here and is re-initialized in a forked child, and the
leaf locks guarding state the child must find whole (LLVM's, the allocators', the random
generator's) are held across the fork itself: fork() waits until no thread is inside them.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# Ranks of the locks held across fork(), acquired in ascending order before it. A thread
# holding one may wait only for locks of a higher rank: the allocators' locks come last,
# since a Storage finalizer (run by any allocation, inside any other lock) takes them.
LLVM_RANK = 10
LLVMLITE_RANK = 11  # llvmlite's own lock around every C call, taken inside kael's
GENERATOR_RANK = 20
ALLOCATOR_RANK = 90

_all: list = []  # every lock made here, re-initialized in a forked child
_held: list[tuple[int, object]] = []  # (rank, lock) held across fork()


def lock(*, reentrant: bool = False, fork_rank: int | None = None):
    """A new threading lock (an RLock when `reentrant`) that a forked child gets unlocked.

    With `fork_rank`, fork() also waits for it (see the ranks above): only for leaf locks,
    whose holder never waits for a lock of a lower rank.
    """
    new = threading.RLock() if reentrant else threading.Lock()
    _all.append(new)
    if fork_rank is not None:
        hold_across_fork(new, fork_rank)
    return new


def hold_across_fork(existing, fork_rank: int) -> None:
    """Make fork() wait for a lock made elsewhere (a library's), as for `lock(fork_rank=)`,
    and re-initialize it in the child; it needs acquire, release and _at_fork_reinit."""
    if existing not in _all:
        _all.append(existing)
    _held.append((fork_rank, existing))
    _held.sort(key=lambda entry: entry[0])


def cached(fn: Callable[..., T] | None = None, *, lock_with=None):
    """functools.cache that builds each value at most once, also under concurrent first use.

    With functools.cache two threads making the first call at once both build the value
    and get different objects. Here the build runs under `lock_with` (else a reentrant
    lock of its own, so a build may call other cached functions); a forked child that
    inherits a value half-built by another thread builds it again. Arguments must be
    hashable, as for functools.cache.
    """

    def wrap(build: Callable[..., T]) -> Callable[..., T]:
        guard = lock_with if lock_with is not None else lock(reentrant=True)
        values: dict = {}
        missing = object()

        @functools.wraps(build)
        def get(*args):
            value = values.get(args, missing)
            if value is missing:
                with guard:
                    value = values.get(args, missing)
                    if value is missing:
                        value = values[args] = build(*args)
            return value

        return get

    return wrap if fn is None else wrap(fn)


def _before_fork() -> None:
    for _, held in _held:
        held.acquire()


def _after_fork_in_parent() -> None:
    for _, held in reversed(_held):
        held.release()


def _after_fork_in_child() -> None:
    for each in _all:
        each._at_fork_reinit()


os.register_at_fork(
    before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child
)
