"""kael/runtime/sync.py: lazily built values under concurrent first use, locks across fork(),
and fork() while another thread compiles, launches or allocates (the child must not hang).

The fork tests run in a fresh interpreter with a time limit: a child blocked on a lock that
its parent's other thread held would hang forever, and the parent reports it as a failure.
"""

from __future__ import annotations

import gc
import threading
import time

import pytest
from kernel_helpers import ROOT, run_python

import kael
from kael.runtime import sync


def test_cached_builds_once_under_concurrent_first_calls():
    calls = []

    @sync.cached
    def value():
        calls.append(1)
        time.sleep(0.05)  # every other thread arrives while the first is building
        return object()

    got = []
    threads = [threading.Thread(target=lambda: got.append(value())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len(got) == 8 and all(v is got[0] for v in got)


def test_cached_keys_by_arguments_and_may_call_itself():
    @sync.cached
    def fib(n: int) -> int:
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    assert fib(30) == 832040


def test_cached_does_not_store_a_failed_build():
    attempts = []

    @sync.cached
    def flaky():
        attempts.append(1)
        if len(attempts) == 1:
            raise OSError("first build fails")
        return "built"

    with pytest.raises(OSError):
        flaky()
    assert flaky() == "built" and len(attempts) == 2


# Forks its own children while a thread keeps `busy` running, then checks each child can
# compile, launch and allocate. Prints "ok N" when all N children exited 0 in time. A child
# forked inside one of llvmlite's own C calls (its lock held) hung in 1 of ~50 forks.
_FORK_WHILE_BUSY = """
import os, sys, threading, time
import numpy as np
import kael

busy = sys.argv[1] if len(sys.argv) > 1 else {busy!r}
kael.set_num_threads(2)
stop = threading.Event()

def compile_forever():
    i = 0
    while not stop.is_set():  # each new scalar dtype pair and exponent shape compiles
        i += 1
        x = kael.arange(i % 7 + 3, dtype=kael.float64)
        (x * (i % 5) + x.T.contiguous()).sum(dim=0, keepdim=bool(i % 2))
        kael.cumsum(kael.ones(i % 4 + 2, i % 3 + 2, dtype=[kael.int64, kael.float32][i % 2]), i % 2)

def launch_forever():
    big = kael.ones(1 << 20)
    while not stop.is_set():
        (big * 2.0).sum()

def allocate_forever():
    while not stop.is_set():
        blocks = [kael.empty(n) for n in (10, 1000, 100000, 3)]
        del blocks

worker = threading.Thread(target={{"compile": compile_forever, "launch": launch_forever,
                          "allocate": allocate_forever}}[busy], daemon=True)
worker.start()
children = []
for k in range(24):
    time.sleep(0.02 * (k % 4))
    pid = os.fork()
    if pid == 0:
        # A new kernel (compiled here), a pooled launch and fresh allocations in the child.
        x = kael.arange(1 << 19, dtype=kael.float64)
        got = float(((x % 3.0) * 2.0 - 1.0).sum())
        want = sum((i % 3) * 2 - 1 for i in range(1 << 19))
        ok = got == want and kael.tensor([5, 7]).tolist() == [5, 7]
        os._exit(0 if ok else 3)
    children.append(pid)
stop.set()
deadline = time.monotonic() + 60
pending = set(children)
failed = []
while pending and time.monotonic() < deadline:
    for pid in list(pending):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            pending.discard(pid)
            if os.waitstatus_to_exitcode(status) != 0:
                failed.append(os.waitstatus_to_exitcode(status))
    time.sleep(0.01)
for pid in pending:
    os.kill(pid, 9)
print("hung", len(pending), "failed", failed)
if not pending and not failed:
    print("ok", len(children))
"""


@pytest.mark.parametrize("busy", ["compile", "launch", "allocate"])
def test_fork_while_another_thread_is_busy_gives_a_working_child(busy, tmp_path):
    env = {"KAEL_CACHE_DIR": str(tmp_path / "cache")} if busy == "compile" else {}
    res = run_python(_FORK_WHILE_BUSY.format(busy=busy), **env)
    assert "ok 24" in res.stdout, res.stdout + res.stderr


def test_lock_held_by_another_thread_at_fork_is_free_in_the_child():
    res = run_python(
        """
import os, threading, time
from kael.runtime import sync
held = sync.lock()
taken = threading.Event()
def hold():
    with held:
        taken.set()
        time.sleep(5)
threading.Thread(target=hold, daemon=True).start()
taken.wait()
pid = os.fork()
if pid == 0:
    os._exit(0 if held.acquire(timeout=2) else 1)
print("child", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""
    )
    assert "child 0" in res.stdout


def test_leaf_lock_is_held_across_fork_so_the_child_finds_its_state_whole():
    res = run_python(
        """
import os, threading, time
from kael.runtime import sync
leaf = sync.lock(fork_rank=sync.LLVM_RANK)
state = {"value": 0}
inside = threading.Event()
def update():
    with leaf:
        inside.set()
        state["value"] = -1  # half-done while the lock is held
        time.sleep(0.3)
        state["value"] = 1
threading.Thread(target=update).start()
inside.wait()
pid = os.fork()  # waits until update() has left the lock
if pid == 0:
    os._exit(0 if state["value"] == 1 and leaf.acquire(timeout=2) else 1)
print("child", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""
    )
    assert "child 0" in res.stdout


def test_locks_of_collected_owners_are_forgotten():
    """A Generator's (or compiled function's) lock leaves the fork tables with its owner:
    they grew by one per Generator ever made, and each new one cost more (5k made: 150 us)."""
    before = (len(sync._all), sum(len(t) for t in sync._held.values()))
    for _ in range(2000):
        kael.Generator()
        kael.compile(lambda x: x)
    gc.collect()
    assert (len(sync._all), sum(len(t) for t in sync._held.values())) == before


def test_a_lock_forgotten_while_forking_is_still_released_in_the_parent():
    g = kael.Generator()
    sync._before_fork()
    del g
    gc.collect()  # forgets g's lock between the fork's two halves
    sync._after_fork_in_parent()
    assert all(lock.acquire(blocking=False) for t in sync._held.values() for lock in t.values())
    for t in sync._held.values():
        for lock in t.values():
            lock.release()


def test_every_module_lock_is_made_by_sync():
    """Locks made with threading directly are not re-initialized in a forked child."""
    for path in (ROOT / "kael").rglob("*.py"):
        text = path.read_text()
        assert (
            "threading.Lock()" not in text
            and "threading.RLock()" not in text
            or path.name == "sync.py"
        ), path


def test_threads_forking_at_once_each_release_what_they_took():
    """Each forking thread keeps its own list of the locks _before_fork took: with one
    shared list, a second forking thread overwrote it and the first released the wrong
    ones (every thread then waited for good)."""
    script = """
import os, threading, kael
def fork_often():
    for _ in range(60):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
threads = [threading.Thread(target=fork_often) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join(timeout=60)
assert not any(t.is_alive() for t in threads), "a forking thread is stuck"
print(kael.ones(2).sum().item())
"""
    assert run_python(script).stdout.strip() == "2.0"
