"""The caching allocator: buckets, reuse, statistics, the cache cap, switches, threads, fork."""

import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kael.runtime import allocator as alloc_module
from kael.runtime.allocator import (
    CachingAllocator,
    allocator_for,
    block_capacity,
    caching_allocator_enabled,
    empty_cache,
    memory_stats,
    set_caching_allocator_enabled,
)
from kael.runtime.device import CPU, CUDA
from kael.runtime.errors import Error, ValueError
from kael.runtime.storage import Storage

FORK_TIMEOUT = 30
REPO = Path(__file__).resolve().parents[2]
STAT_KEYS = {"in_use_bytes", "cached_bytes", "reserved_bytes", "hits", "misses"}


class FakeSystem:
    """A system allocator that hands out distinct fake addresses and records every free."""

    def __init__(self, limit: int | None = None):
        self.next = 4096
        self.live: dict[int, int] = {}
        self.freed: list[int] = []
        self.limit = limit

    def alloc(self, nbytes: int) -> int:
        if self.limit is not None and sum(self.live.values()) + nbytes > self.limit:
            raise MemoryError("fake system is full")
        ptr, self.next = self.next, self.next + nbytes
        self.live[ptr] = nbytes
        return ptr

    def free(self, ptr: int) -> None:
        del self.live[ptr]
        self.freed.append(ptr)


@pytest.fixture
def fake():
    system = FakeSystem()
    return system, CachingAllocator("fake", system.alloc, system.free)


@pytest.fixture
def restore_enabled():
    before = caching_allocator_enabled()
    yield
    set_caching_allocator_enabled(before)


@pytest.mark.parametrize(
    ("request_bytes", "capacity"),
    [
        (1, 512),
        (48, 512),
        (512, 512),
        (513, 1024),
        (40000, 40448),
        (65536, 65536),
        (65537, 131072),
        (200000, 262144),
        (262144, 262144),
        (262145, 524288),
    ],
)
def test_bucket_table(request_bytes, capacity):
    assert block_capacity(request_bytes) == capacity


def test_small_buckets_are_512_multiples_up_to_64_kib():
    for n in range(1, 65537, 97):
        capacity = block_capacity(n)
        assert capacity % 512 == 0 and n <= capacity < n + 512


def test_large_buckets_are_powers_of_two():
    for n in [65537, 100_000, 2**20 - 1, 2**20, 2**20 + 1, 3 * 2**40]:
        capacity = block_capacity(n)
        assert capacity & (capacity - 1) == 0 and n <= capacity < 2 * n


def test_reserve_limit_is_two_to_the_62():
    assert block_capacity(2**62) == 2**62
    with pytest.raises(Error, match=f"^cannot reserve {2**62 + 1} bytes$"):
        block_capacity(2**62 + 1)


def test_negative_block_size_raises():
    with pytest.raises(ValueError, match="non-negative"):
        block_capacity(-1)


def test_released_block_is_reused(fake):
    system, allocator = fake
    first = allocator.allocate(1024)
    allocator.release(first, 1024)
    assert allocator.allocate(1024) == first
    assert len(system.live) == 1
    assert allocator.stats()["hits"] == 1 and allocator.stats()["misses"] == 1


def test_buckets_do_not_share_blocks(fake):
    system, allocator = fake
    small = allocator.allocate(512)
    allocator.release(small, 512)
    assert allocator.allocate(1024) != small
    assert allocator.stats()["misses"] == 2 and allocator.stats()["hits"] == 0


def test_stats_count_capacity(fake):
    _, allocator = fake
    ptr = allocator.allocate(block_capacity(48))
    assert allocator.stats() == {
        "in_use_bytes": 512,
        "cached_bytes": 0,
        "reserved_bytes": 512,
        "hits": 0,
        "misses": 1,
    }
    allocator.release(ptr, 512)
    stats = allocator.stats()
    assert (stats["in_use_bytes"], stats["cached_bytes"], stats["reserved_bytes"]) == (0, 512, 512)


def test_storage_stats_count_capacity_not_request():
    before = memory_stats()
    s = Storage(48)
    during = memory_stats(CPU)
    assert during["in_use_bytes"] - before["in_use_bytes"] == 512
    assert s.nbytes == 48


def test_memory_stats_has_the_five_keys_and_is_a_snapshot():
    stats = memory_stats("cpu")
    assert set(stats) == STAT_KEYS
    stats["hits"] = -1
    assert memory_stats("cpu")["hits"] != -1


def test_cache_cap_is_one_gib():
    assert alloc_module.MAX_CACHED_BYTES == 1 << 30


def _scale_cap(allocator, monkeypatch, cap: int) -> None:
    """The cache cap scaled down, for the locked path and the lock-free one."""
    monkeypatch.setattr(alloc_module, "MAX_CACHED_BYTES", cap)
    monkeypatch.setattr(allocator, "lock_free_cap", cap)


def test_cache_cap_1gib(fake, monkeypatch):
    # The cap, scaled down: caching exactly up to the cap is allowed, one block more is freed.
    system, allocator = fake
    _scale_cap(allocator, monkeypatch, 1024)
    blocks = [allocator.allocate(512) for _ in range(3)]
    allocator.release(blocks[0], 512)
    allocator.release(blocks[1], 512)
    assert allocator.stats()["cached_bytes"] == 1024 and system.freed == []
    allocator.release(blocks[2], 512)
    assert system.freed == [blocks[2]]
    assert allocator.stats()["cached_bytes"] == 1024
    assert allocator.stats()["reserved_bytes"] == 1024


def test_empty_cache_frees_every_cached_block(fake):
    system, allocator = fake
    kept = allocator.allocate(512)
    for capacity in (512, 1024, 2**20):
        allocator.release(allocator.allocate(capacity), capacity)
    assert allocator.empty_cache() == 512 + 1024 + 2**20
    assert system.live == {kept: 512}
    stats = allocator.stats()
    assert (stats["in_use_bytes"], stats["cached_bytes"], stats["reserved_bytes"]) == (512, 0, 512)


def test_module_empty_cache_empties_the_cpu_cache():
    del_later = Storage(3000)
    del del_later
    assert memory_stats()["cached_bytes"] > 0
    empty_cache()
    assert memory_stats()["cached_bytes"] == 0
    assert memory_stats()["reserved_bytes"] == memory_stats()["in_use_bytes"]


def test_disabled_at_run_time_frees_on_release(fake, restore_enabled):
    system, allocator = fake
    cached = allocator.allocate(512)
    allocator.release(cached, 512)
    set_caching_allocator_enabled(False)
    assert not caching_allocator_enabled()
    ptr = allocator.allocate(512)
    allocator.release(ptr, 512)
    assert ptr in system.freed
    assert allocator.stats()["cached_bytes"] == 0
    set_caching_allocator_enabled(True)
    ptr = allocator.allocate(512)
    allocator.release(ptr, 512)
    assert allocator.stats()["cached_bytes"] == 512


def test_disabling_empties_existing_caches(restore_enabled):
    s = Storage(5000)
    del s
    assert memory_stats()["cached_bytes"] > 0
    set_caching_allocator_enabled(False)
    assert memory_stats()["cached_bytes"] == 0


def test_a_storage_dying_while_caching_is_off_frees_its_block(restore_enabled):
    # Storage.__del__ releases lock-free on its own: turning caching off must stop it too
    set_caching_allocator_enabled(False)
    s, small = Storage(5000), Storage.host(400)
    del s, small
    assert memory_stats()["cached_bytes"] == 0
    set_caching_allocator_enabled(True)
    Storage(5000)  # dies at once, and caches its block again
    assert memory_stats()["cached_bytes"] > 0


def run_python(code: str, **env_overrides: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "KAEL_NO_CACHING_ALLOCATOR"}
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )


ENV_PROBE = """
from kael.runtime.allocator import caching_allocator_enabled, memory_stats
from kael.runtime.storage import Storage
s = Storage(100)
del s
print(caching_allocator_enabled(), memory_stats()["cached_bytes"])
"""


@pytest.mark.parametrize(("value", "expected"), [("1", "False 0"), ("yes", "False 0")])
def test_disabled_by_env_var(value, expected):
    result = run_python(ENV_PROBE, KAEL_NO_CACHING_ALLOCATOR=value)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == expected.split()


@pytest.mark.parametrize(
    "env", [{}, {"KAEL_NO_CACHING_ALLOCATOR": "0"}, {"KAEL_NO_CACHING_ALLOCATOR": ""}]
)
def test_enabled_without_env_var(env):
    result = run_python(ENV_PROBE, **env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "512"]


def test_out_of_memory_empties_the_cache_and_retries():
    system = FakeSystem(limit=2048)
    allocator = CachingAllocator("tight", system.alloc, system.free)
    allocator.release(allocator.allocate(2048), 2048)
    ptr = allocator.allocate(1024)  # the system is full until the cached block is freed
    assert system.live == {ptr: 1024}
    assert allocator.stats()["cached_bytes"] == 0


def test_out_of_memory_with_nothing_cached_raises():
    system = FakeSystem(limit=1024)
    allocator = CachingAllocator("tight", system.alloc, system.free)
    with pytest.raises(MemoryError):
        allocator.allocate(2048)
    assert allocator.stats() == dict.fromkeys(STAT_KEYS, 0)


def test_host_out_of_memory_raises_kael_error():
    before = memory_stats()
    with pytest.raises(Error, match="out of memory"):
        Storage(2**62)
    after = memory_stats()
    assert after["in_use_bytes"] == before["in_use_bytes"]
    assert after["misses"] == before["misses"]


def test_one_allocator_per_device_kind():
    assert allocator_for("cpu") is allocator_for(CPU)
    assert allocator_for("cuda") is allocator_for("cuda:0") is allocator_for(CUDA)
    assert allocator_for("cpu") is not allocator_for("cuda")
    assert memory_stats(CUDA) == memory_stats("cuda")
    with pytest.raises(ValueError, match="unknown device 'gpu'"):
        memory_stats("gpu")


def test_release_inside_a_critical_section_does_not_deadlock(fake):
    # A Storage finalizer (garbage collection, a signal handler) may run on a thread that
    # already holds the lock; the release must complete.
    _, allocator = fake
    ptr = allocator.allocate(512)
    done = threading.Event()

    def reenter():
        with allocator._lock:
            allocator.release(ptr, 512)
        done.set()

    threading.Thread(target=reenter, daemon=True).start()
    assert done.wait(10)
    assert allocator.stats()["cached_bytes"] == 512


@pytest.mark.parametrize("emptying", [False, True], ids=["alone", "beside_empty_cache"])
def test_concurrent_allocate_and_release_keep_stats_and_blocks_consistent(emptying):
    # Hits and releases to the cache take no lock under the GIL: a thread switch after
    # every bytecode must still never hand a block out twice, lose one, or skew a counter,
    # also while another thread empties the cache.
    allocator = CachingAllocator("threads", alloc_module.host_alloc, alloc_module.host_free)
    live: set[int] = set()
    live_lock = threading.Lock()
    errors: list[str] = []
    rounds, workers = 3000, 8

    def work(seed: int):
        rng = random.Random(seed)
        held: list[tuple[int, int]] = []
        for _ in range(rounds):
            if held and rng.random() < 0.5:
                ptr, capacity = held.pop(rng.randrange(len(held)))
                with live_lock:
                    live.remove(ptr)
                allocator.release(ptr, capacity)
            else:
                capacity = block_capacity(rng.choice([1, 700, 5000, 70000]))
                ptr = allocator.allocate(capacity)
                with live_lock:
                    if ptr in live:
                        errors.append(f"block {ptr:#x} handed out twice")
                    live.add(ptr)
                held.append((ptr, capacity))
        for ptr, capacity in held:
            with live_lock:
                live.remove(ptr)
            allocator.release(ptr, capacity)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(workers)]
        stop = threading.Event()
        emptied = []

        def empty():
            while not stop.is_set():
                emptied.append(allocator.empty_cache())

        emptier = threading.Thread(target=empty) if emptying else None
        for t in threads + ([emptier] if emptier else []):
            t.start()
        for t in threads:
            t.join()
        stop.set()
        if emptier:
            emptier.join()
    finally:
        sys.setswitchinterval(interval)
    if emptying:
        assert sum(emptied) > 0  # it did take blocks while the workers ran
    stats = allocator.stats()
    assert errors == []
    assert stats["in_use_bytes"] == 0
    assert stats["cached_bytes"] == stats["reserved_bytes"]
    assert stats["cached_bytes"] > 0 or emptying
    assert stats["hits"] + stats["misses"] >= workers * rounds // 2
    allocator.empty_cache()
    assert allocator.stats()["reserved_bytes"] == 0


def wait_for_child(pid: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("the forked child hung: it inherited a held allocator lock")


def fork_and_allocate() -> int:
    pid = os.fork()
    if pid == 0:  # the child: allocate, write, free, and leave without running pytest's teardown
        code = 1
        try:
            s = Storage(10_000)
            import ctypes

            ctypes.memset(s.ptr, 7, s.nbytes)
            del s
            code = 0 if memory_stats()["in_use_bytes"] >= 0 else 2
        finally:
            os._exit(code)
    return pid


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_fork_child_can_allocate_while_another_thread_holds_the_lock():
    lock = allocator_for("cpu")._lock
    holding = threading.Event()

    def hold():
        with lock:
            holding.set()
            time.sleep(0.3)

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(10)
    pid = fork_and_allocate()  # blocks until the holder lets go, then forks
    holder.join()
    assert wait_for_child(pid, timeout=FORK_TIMEOUT) == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_fork_child_can_allocate():
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            Storage(random.choice([10, 1000, 100_000]))

    threads = [threading.Thread(target=churn) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        pids = [fork_and_allocate() for _ in range(5)]
        codes = [wait_for_child(pid, timeout=30) for pid in pids]
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert codes == [0] * 5


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_forked_child_counts_its_cache_again_from_the_free_lists():
    # A thread switched out between a lock-free pop and its counter updates does not
    # exist in a forked child: the child counts what its free lists hold.
    allocator = CachingAllocator("recount", alloc_module.host_alloc, alloc_module.host_free)
    ptr = allocator.allocate(512)
    allocator.release(ptr, 512)
    allocator._cached += 512  # as if a pop had run and its counters had not
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            s = allocator.stats()
            whole = s["cached_bytes"] == 512 and s["in_use_bytes"] == 0
            code = 0 if whole and s["reserved_bytes"] == 512 else 2
        finally:
            os._exit(code)
    assert wait_for_child(pid, 30) == 0
    allocator._cached -= 512
    allocator.empty_cache()


def test_release_past_the_cap_frees_the_block_again(fake, monkeypatch):
    # Two threads past the cap check at once: the later one finds the cache over the cap
    # after its append and frees a block to the system.
    system, allocator = fake
    first, second, other = (allocator.allocate(512) for _ in range(3))
    _scale_cap(allocator, monkeypatch, 1024)
    allocator.release(first, 512)

    class Racing(dict):
        """The free lists, with another thread's release landing right after this
        thread's cap check (inside its free-list lookup)."""

        raced = False

        def __getitem__(self, capacity):
            if not Racing.raced:
                Racing.raced = True
                allocator.release(other, 512)
            return super().__getitem__(capacity)

    allocator._free = Racing(allocator._free)
    allocator.release(second, 512)  # 1536 > 1024 after its append: one block goes back
    stats = allocator.stats()
    assert Racing.raced and len(allocator._free[512]) == 2 and len(system.freed) == 1
    assert stats["cached_bytes"] == stats["reserved_bytes"] == 1024
    assert stats["in_use_bytes"] == 0


def test_a_full_cache_frees_larger_blocks_largest_first_to_keep_a_smaller_one(fake, monkeypatch):
    """Big one-off buffers do not keep every later size out of a full cache: a release frees
    cached blocks larger than itself, largest first, then caches its own block."""
    system, allocator = fake
    _scale_cap(allocator, monkeypatch, 4096)
    big, bigger = allocator.allocate(1024), allocator.allocate(2048)
    small = [allocator.allocate(512) for _ in range(3)]
    allocator.release(bigger, 2048)
    allocator.release(big, 1024)
    allocator.release(small[0], 512)
    allocator.release(small[1], 512)  # 4096 cached: full
    assert system.freed == []
    allocator.release(small[2], 512)  # frees the 2048 block, not itself
    assert system.freed == [bigger]
    assert allocator._free[512] == small and allocator._free[1024] == [big]
    stats = allocator.stats()
    assert stats["cached_bytes"] == stats["reserved_bytes"] == 2560


def test_a_full_cache_keeps_smaller_blocks_and_frees_a_larger_release(fake, monkeypatch):
    """The other side: only larger blocks make room; a release larger than every cached
    block over a full cache goes back to the system."""
    system, allocator = fake
    _scale_cap(allocator, monkeypatch, 1024)
    small = [allocator.allocate(512) for _ in range(2)]
    big = allocator.allocate(1024)
    for block in small:
        allocator.release(block, 512)
    allocator.release(big, 1024)
    assert system.freed == [big]
    assert allocator._free[512] == small and allocator.stats()["cached_bytes"] == 1024


def test_blocks_given_up_for_room_are_freed_outside_the_lock(fake, monkeypatch):
    """A device's free may synchronize it: no system free runs under the allocator's lock,
    neither the larger blocks a release gives up nor a block the cache refuses."""
    system, allocator = fake
    held = []
    monkeypatch.setattr(
        allocator,
        "_system_free",
        lambda ptr: (held.append(allocator._lock._is_owned()), system.free(ptr)),
    )
    _scale_cap(allocator, monkeypatch, 2048)
    big, *small = (allocator.allocate(c) for c in (1024, 512, 512, 512))
    allocator.release(big, 1024)
    allocator.release(small[0], 512)
    allocator.release(small[1], 512)
    allocator.release(small[2], 512)  # gives up `big`
    huge = allocator.allocate(4096)
    allocator.release(huge, 4096)  # refused: nothing larger to give up
    assert system.freed == [big, huge] and held == [False, False]


def test_a_lock_free_release_racing_the_locked_one_leaves_the_cache_at_its_cap(fake, monkeypatch):
    """The locked path appends after its cap check; a lock-free release that lands in
    between makes it give a block of its size back."""
    system, allocator = fake
    big, *small, other = (allocator.allocate(c) for c in (1024, 512, 512, 512, 1024))
    _scale_cap(allocator, monkeypatch, 2048)
    for block, capacity in ((big, 1024), (small[0], 512), (small[1], 512)):
        allocator.release(block, capacity)

    class Racing(dict):
        raced = False

        def get(self, capacity, default=None):
            if not Racing.raced:
                Racing.raced = True
                allocator._free[1024].append(other)  # the lock-free branch, inlined
                allocator._cached += 1024
            return super().get(capacity, default)

    allocator._free = Racing(allocator._free)
    allocator.release(small[2], 512)
    stats = allocator.stats()
    assert Racing.raced and stats["cached_bytes"] <= 2048
    assert stats["cached_bytes"] == stats["reserved_bytes"]  # nothing in use, nothing lost
    cached = [ptr for blocks in allocator._free.values() for ptr in blocks]
    assert sorted(cached + system.freed) == sorted([big, *small, other])  # each block once
