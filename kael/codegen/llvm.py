"""llvmlite's binding for the whole process: loaded on first use, and the one LLVM lock.

LLVM's shared state (the target registry, target machines, the JIT) is not safe under
concurrent use, so every call into llvmlite.binding holds LOCK, and so does building
each lazily made LLVM object. LOCK is held across fork() (runtime/sync.py): a fork waits
for the LLVM call in flight, so no child inherits LLVM's own locks held. While holding it
a thread waits for no other kael lock but the allocators', which rank after it.
"""

from __future__ import annotations

from kael.runtime import sync

LOCK = sync.lock(reentrant=True, fork_rank=sync.LLVM_RANK)


@sync.cached(lock_with=LOCK)
def binding():
    """llvmlite.binding with the host target initialized (importing it costs ~60 ms)."""
    import llvmlite.binding as llvm

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
