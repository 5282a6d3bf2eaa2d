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
import weakref
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# Ranks of the locks held across fork(), acquired in ascending order before it. A thread
# holding one may wait only for locks of a higher rank: the allocators' locks come last,
# since a Storage finalizer (run by any allocation, inside any other lock) takes them.
AUTOCAST_RANK = 5  # autocast's install and thread count: a child finds the aliases whole
LLVM_RANK = 10
LLVMLITE_RANK = 11  # llvmlite's own lock around every C call, taken inside kael's
GENERATOR_RANK = 20
ALLOCATOR_RANK = 90

# Every lock made here by id, re-initialized in a forked child; those held across fork()
# by rank. A lock made for an object (owner=) leaves both when that object is collected.
_all: dict[int, object] = {}
_held: dict[int, dict[int, object]] = {}
# What each forking thread's _before_fork took, released in reverse after its fork: per
# thread, as two threads may fork at once (the second waits on the first's locks)
_forking = threading.local()


def lock(*, reentrant: bool = False, fork_rank: int | None = None, owner: object = None):
    """A new threading lock (an RLock when `reentrant`) that a forked child gets unlocked.

    With `fork_rank`, fork() also waits for it (see the ranks above): only for leaf locks,
    whose holder never waits for a lock of a lower rank. With `owner` (a Generator, a
    compiled function, ...) the lock is forgotten when the owner is collected: a program
    making and dropping many of them keeps these tables, and fork(), small.
    """
    new = threading.RLock() if reentrant else threading.Lock()
    _all[id(new)] = new
    if fork_rank is not None:
        hold_across_fork(new, fork_rank)
    if owner is not None:
        weakref.finalize(owner, _forget, new)
    return new


def _forget(gone) -> None:
    _all.pop(id(gone), None)
    for table in _held.values():
        table.pop(id(gone), None)


def hold_across_fork(existing, fork_rank: int) -> None:
    """Make fork() wait for a lock made elsewhere (a library's), as for `lock(fork_rank=)`,
    and re-initialize it in the child; it needs acquire, release and _at_fork_reinit."""
    _all[id(existing)] = existing
    _held.setdefault(fork_rank, {})[id(existing)] = existing


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
    # a snapshot (list() of a dict is one step under the GIL): a lock forgotten meanwhile
    # is still released by the parent
    _forking.acquired = [held for rank in sorted(_held) for held in list(_held[rank].values())]
    for held in _forking.acquired:
        held.acquire()


def _after_fork_in_parent() -> None:
    for held in reversed(getattr(_forking, "acquired", ())):
        held.release()
    _forking.acquired = []


def _after_fork_in_child() -> None:
    _forking.acquired = []
    for each in list(_all.values()):
        each._at_fork_reinit()


os.register_at_fork(
    before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child
)
