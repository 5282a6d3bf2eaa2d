"""A native thread pool, written in LLVM IR and compiled like any kernel.

Python threads cost tens of microseconds to wake and must take the GIL to call a
kernel, which made every mid-sized kernel pay more for threading than it saved.
These workers are plain pthreads that never touch Python: a launch publishes the job
(kernel address, argument block, ranges) and bumps a generation counter; workers spin
on it briefly (SPIN), then sleep on a futex. A launch comes cut into several ranges
per thread (RANGES_PER_THREAD); each thread claims the ranges of its own share in
order (so back-to-back launches find their data in the same core's cache) and then the
ranges other threads have not claimed yet, so a worker that wakes late (a parked vCPU, a
busy core) delays nothing: the caller takes its share. The caller then waits on a
completion counter the way workers wait for jobs. One ctypes call per launch, GIL
released.

Linux on x86-64 and AArch64 only (futex numbers below); elsewhere the runtime keeps
its Python pool.
"""

from __future__ import annotations

import ctypes
import platform

from kael.codegen.cpu import compiler
from kael.runtime import sync, threadpool

SPIN = 20000  # pause-loop rounds before a waiter sleeps (about 0.6 ms on this machine)
# Ranges a launch is cut into per thread: a thread that is done takes a late one's.
RANGES_PER_THREAD = 4
# A ticket holds range indices in 16 bits.
assert threadpool.MAX_THREADS * RANGES_PER_THREAD < 1 << 16
TICKET_STRIDE = 8  # words between two threads' tickets: a cache line each
# A spinning waiter gives up its CPU every YIELD_EVERY rounds (sched_yield, ~10 us apart):
# after an idle spell the scheduler may wake a worker on the CPU where the caller runs,
# and a caller spinning for `done` there would hold off the very worker it waits for
# (a 512 x 512 det after 15 ms idle: 4.9-5.6 ms without, 3.9-4.0 with; 2.8 back to back).
YIELD_EVERY = 256
_FUTEX_SYSCALL = {"x86_64": 202, "aarch64": 98}
_YIELD_SYSCALL = {"x86_64": 24, "aarch64": 124}
_PAUSE = {"x86_64": "call void @llvm.x86.sse2.pause()", "aarch64": ""}

# Globals: the job (generation, kernel, arguments, ranges, range and thread counts), the
# completion counter, the number of workers started and of workers asleep, and one ticket
# per thread: generation << 32 | end << 16 | next over that thread's share of the ranges.
# Every claim compares a whole ticket, generation included, so a worker that woke for an
# old job can never take a range of a newer one.
_IR = """
@gen = internal global i32 0, align 64
@done = internal global i32 0, align 64
@sleepers = internal global i32 0, align 64
@workers = internal global i32 0, align 64
@job_fn = internal global ptr null
@job_args = internal global i64 0
@job_ranges = internal global ptr null
@job_count = internal global i32 0
@job_threads = internal global i32 0
@tickets = internal global [{ticket_words} x i64] zeroinitializer, align 64

declare i64 @syscall(i64, ...)
declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare void @llvm.x86.sse2.pause()

define internal void @relax() {
  {pause}
  ret void
}

; Wait until *word != seen: spin `limit` rounds (yielding the CPU every YIELD_EVERY), then
; sleep on the futex (rechecking after each wake).
define internal i32 @await_change(ptr %word, i32 %seen, i1 %count_sleeper, i32 %limit) {
entry:
  br label %spin
spin:
  %i = phi i32 [ 0, %entry ], [ %i1, %spin.go ]
  %v = load atomic i32, ptr %word acquire, align 4
  %changed = icmp ne i32 %v, %seen
  br i1 %changed, label %out, label %spin.next
spin.next:
  call void @relax()
  %i1 = add i32 %i, 1
  %low = and i32 %i1, {yield_mask}
  %yield = icmp eq i32 %low, 0
  br i1 %yield, label %spin.yield, label %spin.go
spin.yield:
  %yielded = call i64 (i64, ...) @syscall(i64 {sched_yield})
  br label %spin.go
spin.go:
  %more = icmp ult i32 %i1, %limit
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

define internal ptr @ticket(i32 %slot) {
  %s = zext i32 %slot to i64
  %w = mul i64 %s, {ticket_stride}
  %p = getelementptr [{ticket_words} x i64], ptr @tickets, i64 0, i64 %w
  ret ptr %p
}

; The next range of thread `slot`'s share in job `g`, or -1 when none is left (or the
; ticket is another job's).
define internal i32 @claim(i32 %slot, i32 %g) {
entry:
  %p = call ptr @ticket(i32 %slot)
  %g64 = zext i32 %g to i64
  br label %try
try:
  %t = load atomic i64, ptr %p acquire, align 8
  %tg = lshr i64 %t, 32
  %same = icmp eq i64 %tg, %g64
  br i1 %same, label %check, label %none
check:
  %next = and i64 %t, 65535
  %high = lshr i64 %t, 16
  %end = and i64 %high, 65535
  %left = icmp ult i64 %next, %end
  br i1 %left, label %take, label %none
take:
  %t1 = add i64 %t, 1
  %r = cmpxchg ptr %p, i64 %t, i64 %t1 acq_rel acquire
  %ok = extractvalue { i64, i1 } %r, 1
  br i1 %ok, label %got, label %try
got:
  %i = trunc i64 %next to i32
  ret i32 %i
none:
  ret i32 -1
}

; Run job g's ranges from thread `self`'s share, then from the others' (self + 1, ...),
; until none is left; `notify`: wake the caller after the job's last range.
define internal void @work(i32 %g, i32 %self, i32 %threads, i1 %notify) {
entry:
  br label %share
share:
  %j = phi i32 [ 0, %entry ], [ %j1, %share.next ]
  %more = icmp ult i32 %j, %threads
  br i1 %more, label %pick, label %exit
pick:
  %at = add i32 %self, %j
  %slot = urem i32 %at, %threads
  br label %grab
grab:
  %i = call i32 @claim(i32 %slot, i32 %g)
  %got = icmp sge i32 %i, 0
  br i1 %got, label %run, label %share.next
run:
  %fn = load ptr, ptr @job_fn
  %args = load i64, ptr @job_args
  %ranges = load ptr, ptr @job_ranges
  %count = load i32, ptr @job_count
  %i64 = zext i32 %i to i64
  %bi = mul i64 %i64, 2
  %bp = getelementptr i64, ptr %ranges, i64 %bi
  %b = load i64, ptr %bp
  %ep = getelementptr i64, ptr %bp, i64 1
  %e = load i64, ptr %ep
  %argp = inttoptr i64 %args to ptr
  call void %fn(ptr %argp, i64 %b, i64 %e)
  %prev = atomicrmw add ptr @done, i32 1 acq_rel
  %now = add i32 %prev, 1
  %last = icmp eq i32 %now, %count
  %signal = and i1 %last, %notify
  br i1 %signal, label %wake, label %grab
wake:
  call void @wake(ptr @done)
  br label %grab
share.next:
  %j1 = add i32 %j, 1
  br label %share
exit:
  ret void
}

define internal ptr @worker(ptr %arg) {
entry:
  ; The argument packs the worker's index (low half) and the generation current when it
  ; was started (high half): only jobs published after that are its business.
  %packed = ptrtoint ptr %arg to i64
  %idx = trunc i64 %packed to i32
  %slot = add i32 %idx, 1
  %base64 = lshr i64 %packed, 32
  %base = trunc i64 %base64 to i32
  br label %loop
loop:
  ; a worker the last job left out (fewer threads now) sleeps at once: it would only
  ; take a core from the threads that run the next one
  %seen = phi i32 [ %base, %entry ], [ %g, %next ]
  %patience = phi i32 [ {spin}, %entry ], [ %rounds, %next ]
  %g = call i32 @await_change(ptr @gen, i32 %seen, i1 true, i32 %patience)
  ; read after the generation: a newer job's count at worst, and then every claim fails
  %count = load atomic i32, ptr @job_threads acquire, align 4
  %capped = call i32 @llvm.umin.i32(i32 %count, i32 {max_threads})
  %mine = icmp ult i32 %slot, %capped
  br i1 %mine, label %work, label %next
work:
  call void @work(i32 %g, i32 %slot, i32 %capped, i1 true)
  br label %next
next:
  %rounds = phi i32 [ {spin}, %work ], [ 0, %loop ]
  br label %loop
}

declare i32 @llvm.umin.i32(i32, i32)

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

; Run fn(args, b, e) over every range [b, e) of `ranges` (n pairs) on `threads` threads,
; this one among them: thread s's share is ranges [s * n / threads, (s + 1) * n / threads),
; and a thread whose share is done takes the others' ranges that are left.
define void @kael_pool_run(ptr %fn, i64 %args, ptr %ranges, i32 %n, i32 %threads) {
entry:
  %g0 = load atomic i32, ptr @gen acquire, align 4
  %g = add i32 %g0, 1
  %g64 = zext i32 %g to i64
  %tag = shl i64 %g64, 32
  %n64 = zext i32 %n to i64
  %t64 = zext i32 %threads to i64
  store atomic i32 0, ptr @done seq_cst, align 4
  store ptr %fn, ptr @job_fn
  store i64 %args, ptr @job_args
  store ptr %ranges, ptr @job_ranges
  store i32 %n, ptr @job_count
  store atomic i32 %threads, ptr @job_threads release, align 4
  br label %deal
deal:
  %s = phi i64 [ 0, %entry ], [ %s1, %deal ]
  %s1 = add i64 %s, 1
  %lo0 = mul i64 %s, %n64
  %lo = udiv i64 %lo0, %t64
  %hi0 = mul i64 %s1, %n64
  %hi = udiv i64 %hi0, %t64
  %end = shl i64 %hi, 16
  %word0 = or i64 %tag, %end
  %word = or i64 %word0, %lo
  %s32 = trunc i64 %s to i32
  %p = call ptr @ticket(i32 %s32)
  store atomic i64 %word, ptr %p seq_cst, align 8
  %dealt = icmp eq i64 %s1, %t64
  br i1 %dealt, label %publish, label %deal
publish:
  %old = atomicrmw add ptr @gen, i32 1 seq_cst
  %asleep = load atomic i32, ptr @sleepers seq_cst, align 4
  %any = icmp ne i32 %asleep, 0
  br i1 %any, label %wake, label %mine
wake:
  call void @wake(ptr @gen)
  br label %mine
mine:
  call void @work(i32 %g, i32 0, i32 %threads, i1 false)
  br label %wait
wait:
  %d = load atomic i32, ptr @done acquire, align 4
  %finished = icmp uge i32 %d, %n
  br i1 %finished, label %exit, label %block
block:
  %d2 = call i32 @await_change(ptr @done, i32 %d, i1 false, i32 {spin})
  br label %wait
exit:
  ret void
}
"""


class NativePool:
    """The compiled pool: `run(fn, args, total, align, threads)` like the runtime's Python
    pool, its ranges cut RANGES_PER_THREAD to a thread.

    When the system refuses a thread, the pool keeps the workers it has and never asks
    for more (each refused pthread_create costs a failed stack mapping); launches then
    share their ranges among the threads that did start. The ranges of a launch shape
    (work items, alignment, threads) are cut once and kept ready as the native array.
    """

    def __init__(self, addresses: dict[str, int], keepalive) -> None:
        self._start = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32)(addresses["kael_pool_start"])
        self._reset = ctypes.CFUNCTYPE(None)(addresses["kael_pool_reset"])
        self._run = ctypes.CFUNCTYPE(
            None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32
        )(addresses["kael_pool_run"])
        self._keepalive = keepalive
        self._lock = sync.lock()  # one job at a time: the job lives in the pool's globals
        self._limit = threadpool.MAX_THREADS  # workers the system let us start
        # (total, align, threads) -> (ranges as int64 pairs, their count, threads used)
        self._jobs: dict[tuple, tuple] = {}

    def run(self, fn, args: int, total: int, align: int, threads: int) -> None:
        """Call fn(args, begin, end) over work items [0, total) cut into ranges on up to
        `threads` threads, this one among them, and wait."""
        address = getattr(fn, "address", None) or ctypes.cast(fn, ctypes.c_void_p).value
        key = (total, align, threads)
        with self._lock:
            job = self._jobs.get(key) or self._cut(key)
            flat, count, used = job
            if used == 1:
                fn(args, 0, total)
                return
            self._run(address, args, ctypes.addressof(flat), count, used)

    def _cut(self, key: tuple) -> tuple:
        """The job of a launch shape, its workers started (as many as the system lets)."""
        total, align, threads = key
        ranges = threadpool.split(total, threads * RANGES_PER_THREAD, align)
        wanted = min(threads, len(ranges)) - 1
        workers = self._start(min(wanted, self._limit))
        if workers < wanted:
            self._limit = workers
        used = min(workers, wanted) + 1
        flat = (ctypes.c_int64 * (2 * len(ranges)))(*(x for r in ranges for x in r))
        job = (flat, len(ranges), used)
        if len(self._jobs) >= 256:
            self._jobs.clear()
        self._jobs[key] = job  # kept even with fewer workers: the limit only goes down
        return job

    def after_fork_in_child(self) -> None:
        """The child has none of the parent's threads (sync.py re-initializes the lock)."""
        self._reset()
        self._limit = threadpool.MAX_THREADS
        self._jobs = {}


def _ir_text() -> str:
    arch = platform.machine()
    return (
        _IR.replace("{pause}", _PAUSE[arch])
        .replace("{futex}", str(_FUTEX_SYSCALL[arch]))
        .replace("{sched_yield}", str(_YIELD_SYSCALL[arch]))
        .replace("{yield_mask}", str(YIELD_EVERY - 1))
        .replace("{spin}", str(SPIN))
        .replace("{ticket_stride}", str(TICKET_STRIDE))
        .replace("{ticket_words}", str(TICKET_STRIDE * threadpool.MAX_THREADS))
        .replace("{max_threads}", str(threadpool.MAX_THREADS))
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
