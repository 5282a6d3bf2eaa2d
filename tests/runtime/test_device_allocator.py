"""The CUDA allocator never hands a block to other work while a stream other than the null
one may still use it: such a block waits for an event on each of its streams."""

import pytest

from kael.runtime import allocator as allocator_module
from kael.runtime import cuda_driver

CAP = 4096


class FakeStreams:
    """cuda_driver's stream and event calls, scripted: events finish when told to."""

    def __init__(self, monkeypatch):
        self.current = None
        self.done: set[int] = set()
        self.recorded: list[tuple[int, object]] = []
        self.destroyed: list[int] = []
        self.waited: list[int] = []
        self._next = 0
        monkeypatch.setattr(cuda_driver, "current_stream", lambda: self.current)
        monkeypatch.setattr(cuda_driver, "event_create", self._create)
        monkeypatch.setattr(cuda_driver, "event_record", lambda e, s: self.recorded.append((e, s)))
        monkeypatch.setattr(cuda_driver, "event_query", lambda e: e in self.done)
        monkeypatch.setattr(cuda_driver, "event_synchronize", self._wait)
        monkeypatch.setattr(cuda_driver, "event_destroy", self.destroyed.append)

    def _create(self, timing: bool = False) -> int:
        self._next += 1
        return self._next

    def _wait(self, event: int) -> None:
        self.waited.append(event)
        self.done.add(event)


@pytest.fixture
def device(monkeypatch):
    memory = {"next": 1 << 40, "freed": []}

    def alloc(nbytes: int) -> int:
        memory["next"] += nbytes
        return memory["next"]

    allocator = allocator_module.DeviceAllocator("fake-cuda", alloc, memory["freed"].append)
    return allocator, FakeStreams(monkeypatch), memory["freed"]


def test_a_null_stream_block_is_reused_at_once(device):
    allocator, _, _ = device
    ptr = allocator.allocate(CAP)
    allocator.release(ptr, CAP)
    assert allocator.allocate(CAP) == ptr


def test_a_streams_block_waits_for_its_event_before_reuse(device):
    allocator, streams, _ = device
    streams.current = "s1"
    ptr = allocator.allocate(CAP)
    allocator.release(ptr, CAP)
    assert streams.recorded == [(1, "s1")] and allocator.pending_bytes() == CAP
    other = allocator.allocate(CAP)  # s1 may still use ptr: a new block
    assert other != ptr and allocator.pending_bytes() == CAP
    streams.done.add(1)
    allocator.release(other, CAP)  # other was made under s1 too: pending on its own event
    streams.done.add(2)
    assert allocator.allocate(CAP) in (ptr, other) and allocator.pending_bytes() == 0
    assert sorted(streams.destroyed) == [1, 2]


def test_record_stream_adds_a_stream_to_wait_for(device):
    allocator, streams, _ = device
    ptr = allocator.allocate(CAP)  # on the null stream
    allocator.record_stream(ptr, "s2")
    allocator.record_stream(ptr, None)  # the null stream needs no mark
    allocator.release(ptr, CAP)
    assert streams.recorded == [(1, "s2")] and allocator.pending_bytes() == CAP


def test_empty_cache_waits_for_pending_blocks_and_frees_them(device):
    allocator, streams, freed = device
    streams.current = "s1"
    ptr = allocator.allocate(CAP)
    allocator.release(ptr, CAP)
    assert allocator.empty_cache() == CAP
    assert streams.waited == [1] and freed == [ptr] and allocator.pending_bytes() == 0


def test_every_release_takes_the_locked_path(device):
    allocator, _, _ = device
    allocator.lock_free_cap = 1 << 30  # what set_caching_allocator_enabled assigns
    assert allocator.lock_free_cap == -1


def test_a_pinned_block_copied_on_the_null_stream_still_waits_for_the_copy(monkeypatch):
    streams = FakeStreams(monkeypatch)
    pinned = allocator_module.PinnedAllocator("fake-pinned", lambda n: 1 << 20, lambda p: None)
    streams.current = "s1"  # host allocations are not stream work: nothing recorded
    ptr = pinned.allocate(CAP)
    pinned.release(ptr, CAP)
    assert pinned.pending_bytes() == 0 and pinned.allocate(CAP) == ptr
    pinned.record_stream(ptr, None)  # an async copy on the null stream reads it
    pinned.release(ptr, CAP)
    assert streams.recorded == [(1, 0)] and pinned.pending_bytes() == CAP


MiB = 1 << 20


@pytest.fixture
def small_device(monkeypatch):
    """A fake device of 12 MiB: an allocation past what is left fails as cuMemAlloc does."""
    state = {"next": 1 << 40, "used": 0, "sizes": {}, "freed": []}

    def alloc(nbytes: int) -> int:
        if state["used"] + nbytes > 12 * MiB:
            raise allocator_module.Error(f"cannot allocate {nbytes} bytes")
        state["next"] += nbytes
        state["used"] += nbytes
        state["sizes"][state["next"]] = nbytes
        return state["next"]

    def free(ptr: int) -> None:
        state["used"] -= state["sizes"].pop(ptr)
        state["freed"].append(ptr)

    FakeStreams(monkeypatch)
    return allocator_module.DeviceAllocator("fake-cuda", alloc, free), state


def test_a_block_its_bucket_cannot_get_gets_its_own_bytes(small_device):
    allocator, state = small_device
    nbytes = 9 * MiB + 1  # its bucket, 16 MiB, is more than the device has
    capacity = allocator_module.block_capacity(nbytes)
    ptr = allocator.allocate(capacity, nbytes)
    assert state["sizes"][ptr] == 10 * MiB  # rounded up to EXACT_STEP, not to 16 MiB
    assert allocator.stats()["reserved_bytes"] == allocator.stats()["in_use_bytes"] == 10 * MiB
    allocator.release(ptr, capacity)  # never cached: no bucket fits it
    assert state["freed"] == [ptr] and state["used"] == 0
    assert allocator.stats()["reserved_bytes"] == allocator.stats()["cached_bytes"] == 0


def test_a_bucket_that_fits_is_still_the_bucket(small_device):
    allocator, state = small_device
    ptr = allocator.allocate(8 * MiB, 5 * MiB)
    assert state["sizes"][ptr] == 8 * MiB
    allocator.release(ptr, 8 * MiB)
    assert state["freed"] == [] and allocator.stats()["cached_bytes"] == 8 * MiB
    # the cache is freed first when a bucket does not fit beside it: then the bucket fits
    ptr = allocator.allocate(16 * MiB, 11 * MiB)
    assert state["freed"] and state["sizes"][ptr] == 12 * MiB


def test_more_than_the_device_has_is_still_refused_naming_its_own_bytes(small_device):
    allocator, _ = small_device
    with pytest.raises(allocator_module.Error, match=f"cannot allocate {14 * MiB} bytes"):
        allocator.allocate(16 * MiB, 13 * MiB + 5)
    with pytest.raises(allocator_module.Error, match=f"cannot allocate {16 * MiB} bytes"):
        allocator.allocate(16 * MiB)  # the size unknown: only the bucket can be asked for


def test_an_own_size_block_waits_for_its_streams_before_it_is_freed(small_device):
    allocator, state = small_device
    ptr = allocator.allocate(16 * MiB, 9 * MiB)
    allocator.record_stream(ptr, "s1")
    allocator.release(ptr, 16 * MiB)
    assert state["freed"] == [] and allocator.pending_bytes() == 10 * MiB
    allocator.empty_cache()  # waits for s1's event, then gives the block back
    assert state["freed"] == [ptr] and allocator.stats()["reserved_bytes"] == 0
