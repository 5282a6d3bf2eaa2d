"""llvmlite's binding for the whole process: loaded on first use, and the one LLVM lock.

LLVM's shared state (the target registry, target machines, the JIT) is not safe under
concurrent use, so every call into llvmlite.binding holds LOCK, and so does building
each lazily made LLVM object. LOCK, and llvmlite's own lock around each C call, are held
across fork() (runtime/sync.py): a fork waits for the LLVM call in flight, so no child
inherits LLVM's or llvmlite's locks held. While holding LOCK a thread waits for no other
kael lock but the allocators', which rank after it.
"""

from __future__ import annotations

from kael.runtime import sync

LOCK = sync.lock(reentrant=True, fork_rank=sync.LLVM_RANK)


@sync.cached(lock_with=LOCK)
def binding():
    """llvmlite.binding with the host target initialized (importing it costs ~60 ms)."""
    import llvmlite.binding as llvm

    _hold_llvmlites_lock_across_fork()
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm


@sync.cached(lock_with=LOCK)
def all_targets():
    """llvmlite.binding with every target initialized (NVPTX included)."""
    llvm = binding()
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm


def _hold_llvmlites_lock_across_fork() -> None:
    """llvmlite serializes every C call (object disposal by the garbage collector in any
    thread included) with a lock of its own: fork() waits for it too, or a child forked
    during such a call blocks on it at its first compile."""
    from llvmlite.binding import ffi

    inner = getattr(getattr(ffi.lib, "_lock", None), "_lock", None)
    if inner is not None and hasattr(inner, "_at_fork_reinit"):
        sync.hold_across_fork(inner, sync.LLVMLITE_RANK)
