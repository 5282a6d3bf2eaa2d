"""A native thread pool, written in LLVM IR and compiled like any kernel.

Python threads cost tens of microseconds to wake and must take the GIL to call a
kernel, which made every mid-sized kernel pay more for threading than it saved.
These workers are plain pthreads that never touch Python: a launch publishes the job
(kernel address, argument block, ranges) and bumps a generation counter; workers spin
on it briefly, then sleep on a futex; the caller runs the first range itself and waits
on a completion counter the same way. One ctypes call per launch, GIL released.

Linux on x86-64 and AArch64 only (futex numbers below); elsewhere the runtime keeps
its Python pool.
"""

from __future__ import annotations

import ctypes
import platform

from kael.codegen.cpu import compiler
from kael.runtime import sync, threadpool

SPIN = 20000  # pause-loop rounds before a waiter sleeps (a few tens of microseconds)
_FUTEX_SYSCALL = {"x86_64": 202, "aarch64": 98}
_PAUSE = {"x86_64": "call void @llvm.x86.sse2.pause()", "aarch64": ""}

# Globals: the job (generation, kernel, arguments, ranges, helper count), the completion
# counter, the number of workers started and of workers asleep. Ranges are i64 pairs.
_IR = """
@gen = internal global i32 0, align 64
@done = internal global i32 0, align 64
@sleepers = internal global i32 0, align 64
@workers = internal global i32 0, align 64
@job_fn = internal global ptr null
@job_args = internal global i64 0
@job_ranges = internal global ptr null
@job_helpers = internal global i32 0

declare i64 @syscall(i64, ...)
declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare void @llvm.x86.sse2.pause()

define internal void @relax() {
  {pause}
  ret void
}

; Wait until *word != seen: spin, then sleep on the futex (rechecking after each wake).
define internal i32 @await_change(ptr %word, i32 %seen, i1 %count_sleeper) {
entry:
  br label %spin
spin:
  %i = phi i32 [ 0, %entry ], [ %i1, %spin.next ]
  %v = load atomic i32, ptr %word acquire, align 4
  %changed = icmp ne i32 %v, %seen
  br i1 %changed, label %out, label %spin.next
spin.next:
  call void @relax()
  %i1 = add i32 %i, 1
  %more = icmp ult i32 %i1, {spin}
  br i1 %more, label %spin, label %sleep
sleep:
  br i1 %count_sleeper, label %sleep.count, label %sleep.wait
sleep.count:
  %s0 = atomicrmw add ptr @sleepers, i32 1 seq_cst
  br label %sleep.wait
sleep.wait:
  %seen64 = zext i32 %seen to i64
  %r = call i64 (i64, ...) @syscall(i64 {futex}, ptr %word, i64 128, i64 %seen64, ptr null)
  br i1 %count_sleeper, label %sleep.uncount, label %recheck
sleep.uncount:
  %s1 = atomicrmw sub ptr @sleepers, i32 1 seq_cst
  br label %recheck
recheck:
  %w = load atomic i32, ptr %word acquire, align 4
  %still = icmp eq i32 %w, %seen
  br i1 %still, label %sleep, label %out
out:
  %final = load atomic i32, ptr %word acquire, align 4
  ret i32 %final
}

define internal void @wake(ptr %word) {
  %r = call i64 (i64, ...) @syscall(i64 {futex}, ptr %word, i64 129, i64 2147483647)
  ret void
}

define internal ptr @worker(ptr %arg) {
entry:
  ; The argument packs the worker's index (low half) and the generation current when it
  ; was started (high half): only jobs published after that are its business.
  %packed = ptrtoint ptr %arg to i64
  %idx = trunc i64 %packed to i32
  %base64 = lshr i64 %packed, 32
  %base = trunc i64 %base64 to i32
  br label %loop
loop:
  %seen = phi i32 [ %base, %entry ], [ %g, %next ]
  %g = call i32 @await_change(ptr @gen, i32 %seen, i1 true)
  %helpers = load atomic i32, ptr @job_helpers acquire, align 4
  %mine = icmp ult i32 %idx, %helpers
  br i1 %mine, label %work, label %next
work:
  %fn = load ptr, ptr @job_fn
  %args = load i64, ptr @job_args
  %ranges = load ptr, ptr @job_ranges
  %slot = add i32 %idx, 1
  %slot64 = zext i32 %slot to i64
  %bi = mul i64 %slot64, 2
  %bp = getelementptr i64, ptr %ranges, i64 %bi
  %b = load i64, ptr %bp
  %ep = getelementptr i64, ptr %bp, i64 1
  %e = load i64, ptr %ep
  %argp = inttoptr i64 %args to ptr
  call void %fn(ptr %argp, i64 %b, i64 %e)
  %prev = atomicrmw add ptr @done, i32 1 acq_rel
  %now = add i32 %prev, 1
  %last = icmp eq i32 %now, %helpers
  br i1 %last, label %signal, label %next
signal:
  call void @wake(ptr @done)
  br label %next
next:
  br label %loop
}

; Start workers until there are `n` (never fewer: idle ones sleep), stopping at the first
; pthread_create that fails; returns how many workers there are.
define i32 @kael_pool_start(i32 %n) {
entry:
  %tid = alloca i64
  %have = load i32, ptr @workers
  br label %check
check:
  %i = phi i32 [ %have, %entry ], [ %i1, %spawned ]
  %more = icmp ult i32 %i, %n
  br i1 %more, label %spawn, label %exit
spawn:
  %now = load atomic i32, ptr @gen acquire, align 4
  %now64 = zext i32 %now to i64
  %high = shl i64 %now64, 32
  %i64 = zext i32 %i to i64
  %packed = or i64 %high, %i64
  %arg = inttoptr i64 %packed to ptr
  %rc = call i32 @pthread_create(ptr %tid, ptr null, ptr @worker, ptr %arg)
  %ok = icmp eq i32 %rc, 0
  br i1 %ok, label %spawned, label %exit
spawned:
  %i1 = add i32 %i, 1
  store i32 %i1, ptr @workers
  br label %check
exit:
  %count = load i32, ptr @workers
  ret i32 %count
}

; Forget the workers after fork(): the child has none of the parent's threads.
define void @kael_pool_reset() {
  store i32 0, ptr @workers
  store i32 0, ptr @sleepers
  store i32 0, ptr @done
  ret void
}

; Run fn(args, b, e) over every range [b, e) of `ranges` (n pairs), the first here.
define void @kael_pool_run(ptr %fn, i64 %args, ptr %ranges, i32 %n) {
entry:
  %helpers = sub i32 %n, 1
  store atomic i32 0, ptr @done seq_cst, align 4
  store ptr %fn, ptr @job_fn
  store i64 %args, ptr @job_args
  store ptr %ranges, ptr @job_ranges
  store atomic i32 %helpers, ptr @job_helpers release, align 4
  %old = atomicrmw add ptr @gen, i32 1 seq_cst
  %asleep = load atomic i32, ptr @sleepers seq_cst, align 4
  %any = icmp ne i32 %asleep, 0
  br i1 %any, label %wake, label %mine
wake:
  call void @wake(ptr @gen)
  br label %mine
mine:
  %b = load i64, ptr %ranges
  %ep = getelementptr i64, ptr %ranges, i64 1
  %e = load i64, ptr %ep
  %argp = inttoptr i64 %args to ptr
  call void %fn(ptr %argp, i64 %b, i64 %e)
  br label %wait
wait:
  %d = load atomic i32, ptr @done acquire, align 4
  %finished = icmp uge i32 %d, %helpers
  br i1 %finished, label %exit, label %block
block:
  %d2 = call i32 @await_change(ptr @done, i32 %d, i1 false)
  br label %wait
exit:
  ret void
}
"""


class NativePool:
    """The compiled pool: `run(fn, args, ranges)` like the runtime's Python pool.

    When the system refuses a thread, the pool keeps the workers it has and never asks
    for more (each refused pthread_create costs a failed stack mapping); launches then
    share their ranges among the threads that did start.
    """

    def __init__(self, addresses: dict[str, int], keepalive) -> None:
        self._start = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32)(addresses["kael_pool_start"])
        self._reset = ctypes.CFUNCTYPE(None)(addresses["kael_pool_reset"])
        self._run = ctypes.CFUNCTYPE(
            None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int32
        )(addresses["kael_pool_run"])
        self._keepalive = keepalive
        self._lock = sync.lock()  # one job at a time: the job lives in the pool's globals
        self._limit = threadpool.MAX_THREADS  # workers the system let us start

    def run(self, fn, args: int, ranges: list[tuple[int, int]]) -> None:
        """Call fn(args, begin, end) once per range, the first on this thread, and wait."""
        address = ctypes.cast(fn, ctypes.c_void_p).value
        with self._lock:
            wanted = min(len(ranges) - 1, self._limit)
            workers = self._start(wanted)
            if workers < wanted:
                self._limit = workers
            ranges = threadpool.regroup(ranges, min(workers, wanted) + 1)
            if len(ranges) == 1:
                fn(args, *ranges[0])
                return
            flat = (ctypes.c_int64 * (2 * len(ranges)))(*(x for r in ranges for x in r))
            self._run(address, args, ctypes.addressof(flat), len(ranges))

    def after_fork_in_child(self) -> None:
        """The child has none of the parent's threads (sync.py re-initializes the lock)."""
        self._reset()
        self._limit = threadpool.MAX_THREADS


def _ir_text() -> str:
    arch = platform.machine()
    return (
        _IR.replace("{pause}", _PAUSE[arch])
        .replace("{futex}", str(_FUTEX_SYSCALL[arch]))
        .replace("{spin}", str(SPIN))
    )


@sync.cached
def native_pool() -> NativePool | None:
    """Build (or load from the disk cache) and link the pool; None where it cannot run."""
    if platform.system() != "Linux" or platform.machine() not in _FUTEX_SYSCALL:
        return None
    names = ("kael_pool_start", "kael_pool_reset", "kael_pool_run")
    addresses, tracker = compiler.link_glue("kael_pool", _ir_text(), names)
    return NativePool(addresses, tracker)


def install() -> None:
    """Make the native pool the runtime's pool for multi-threaded launches."""
    pool = native_pool()
    if pool is not None:
        threadpool.install(pool)
