"""The CUDA allocator never hands a block to other work while a stream other than the null
one may still use it: a block belongs to the stream it was made on (the null stream's may be
read by any stream, so only the null stream, which waits for them all, gets it again), and a
block marked for other streams waits for an event on each."""

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


def _parked(allocator, streams, on, marked) -> int:
    """A block allocated on stream `on`, marked as used by `marked`, released: parked."""
    streams.current = on
    ptr = allocator.allocate(CAP)
    allocator.record_stream(ptr, marked)
    allocator.release(ptr, CAP)
    return ptr


def _cached_on(allocator, streams, on, count: int, capacity: int = CAP) -> list[int]:
    """`count` blocks of `capacity` allocated on stream `on`, then all released."""
    streams.current = on
    blocks = [allocator.allocate(capacity) for _ in range(count)]
    for ptr in blocks:
        allocator.release(ptr, capacity)
    return blocks


def test_a_null_stream_block_is_reused_at_once(device):
    allocator, _, _ = device
    ptr = allocator.allocate(CAP)
    allocator.release(ptr, CAP)
    assert allocator.allocate(CAP) == ptr


def test_a_side_streams_block_goes_back_to_that_stream_alone(device):
    allocator, streams, _ = device
    streams.current = "s1"
    ptr = allocator.allocate(CAP)
    allocator.release(ptr, CAP)  # s1's work after this is queued after its last kernels
    assert streams.recorded == [] and allocator.pending_bytes() == 0
    assert allocator.stats()["cached_bytes"] == CAP
    streams.current = "s2"
    assert allocator.allocate(CAP) != ptr
    streams.current = None
    assert allocator.allocate(CAP) != ptr
    streams.current = "s1"
    assert allocator.allocate(CAP) == ptr and allocator.stats()["cached_bytes"] == 0


def test_a_null_stream_block_is_not_given_to_a_side_stream(device):
    # s1 may still read it (unmarked): only the null stream, which waits for s1, may reuse it
    allocator, streams, _ = device
    ptr = allocator.allocate(CAP)
    allocator.release(ptr, CAP)
    streams.current = "s2"
    other = allocator.allocate(CAP)
    assert other != ptr
    streams.current = None
    assert allocator.allocate(CAP) == ptr


def test_a_marked_side_stream_block_waits_then_goes_to_its_own_stream(device):
    allocator, streams, _ = device
    ptr = _parked(allocator, streams, "s1", "s3")
    assert streams.recorded == [(1, "s3")] and allocator.pending_bytes() == CAP
    assert allocator.allocate(CAP) != ptr  # s3 may still use it
    streams.done.add(1)
    streams.current = "s3"
    assert allocator.allocate(CAP) != ptr and allocator.pending_bytes() == 0
    streams.current = "s1"
    assert allocator.allocate(CAP) == ptr and streams.destroyed == [1]


def test_side_stream_pools_count_in_the_cap_and_empty_cache_frees_them(device, monkeypatch):
    allocator, streams, freed = device
    monkeypatch.setattr(allocator_module, "MAX_CACHED_BYTES", 2 * CAP)
    blocks = _cached_on(allocator, streams, "s1", 3)
    assert freed == blocks[2:] and allocator.stats()["cached_bytes"] == 2 * CAP
    assert allocator.empty_cache() == 2 * CAP and sorted(freed) == sorted(blocks)
    assert allocator.stats()["reserved_bytes"] == allocator.stats()["cached_bytes"] == 0


def test_peaks_hold_the_most_in_use_and_reserved_until_reset(device):
    allocator, _, _ = device
    first = allocator.allocate(CAP)
    second = allocator.allocate(2 * CAP)
    allocator.release(second, 2 * CAP)
    stats = allocator.stats()
    assert stats["peak_in_use_bytes"] == 3 * CAP and stats["in_use_bytes"] == CAP
    assert stats["peak_reserved_bytes"] == stats["reserved_bytes"] == 3 * CAP
    allocator.empty_cache()
    allocator.reset_peaks()
    stats = allocator.stats()
    assert stats["peak_in_use_bytes"] == stats["peak_reserved_bytes"] == CAP
    allocator.release(first, CAP)


def test_record_stream_adds_a_stream_to_wait_for(device):
    allocator, streams, _ = device
    ptr = allocator.allocate(CAP)  # on the null stream
    allocator.record_stream(ptr, "s2")
    allocator.record_stream(ptr, None)  # the null stream needs no mark
    allocator.release(ptr, CAP)
    assert streams.recorded == [(1, "s2")] and allocator.pending_bytes() == CAP


def test_pending_blocks_are_collected_oldest_first_up_to_one_not_done(device):
    # one event query an allocation, not one per pending block, while the GPU lags behind
    allocator, streams, _ = device
    first, second = allocator.allocate(CAP), allocator.allocate(CAP)
    for ptr in (first, second):
        allocator.record_stream(ptr, "s1")
        allocator.release(ptr, CAP)
    streams.done.add(2)  # the newer block's event is done, the older one's not
    third = allocator.allocate(CAP)
    assert third not in (first, second) and allocator.pending_bytes() == 2 * CAP
    streams.done.add(1)
    assert allocator.allocate(CAP) in (first, second) and allocator.pending_bytes() == 0
    allocator.release(third, CAP)


def test_empty_cache_waits_for_pending_blocks_and_frees_them(device):
    allocator, streams, freed = device
    ptr = _parked(allocator, streams, "s1", "s2")
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
            raise allocator_module.OutOfMemoryError(f"cannot allocate {nbytes} bytes")
        state["next"] += nbytes
        state["used"] += nbytes
        state["sizes"][state["next"]] = nbytes
        return state["next"]

    def free(ptr: int) -> None:
        state["used"] -= state["sizes"].pop(ptr)
        state["freed"].append(ptr)

    FakeStreams(monkeypatch)
    monkeypatch.setattr(cuda_driver, "mem_info", lambda: (12 * MiB - state["used"], 12 * MiB))
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


def test_more_than_the_device_has_is_refused_naming_the_request_and_free_bytes(small_device):
    allocator, _ = small_device
    held = allocator.allocate(1 * MiB)
    message = f"cannot allocate {13 * MiB + 5} bytes .* has {11 * MiB} bytes .* hold {MiB} bytes"
    with pytest.raises(allocator_module.OutOfMemoryError, match=message):
        allocator.allocate(16 * MiB, 13 * MiB + 5)
    with pytest.raises(allocator_module.OutOfMemoryError, match=f"allocate {16 * MiB} bytes"):
        allocator.allocate(16 * MiB)  # the size unknown: only the bucket can be named
    allocator.release(held, MiB)


def test_another_driver_error_is_not_taken_for_out_of_memory(small_device, monkeypatch):
    allocator, _ = small_device

    def broken(nbytes: int) -> int:
        raise allocator_module.Error("cuMemAlloc failed: CUDA_ERROR_ILLEGAL_ADDRESS")

    monkeypatch.setattr(allocator, "_system_alloc", broken)
    with pytest.raises(allocator_module.Error, match="ILLEGAL_ADDRESS") as raised:
        allocator.allocate(16 * MiB, 9 * MiB)
    assert not isinstance(raised.value, allocator_module.OutOfMemoryError)


def test_an_own_size_block_waits_for_its_streams_before_it_is_freed(small_device):
    allocator, state = small_device
    ptr = allocator.allocate(16 * MiB, 9 * MiB)
    allocator.record_stream(ptr, "s1")
    allocator.release(ptr, 16 * MiB)
    assert state["freed"] == [] and allocator.pending_bytes() == 10 * MiB
    allocator.empty_cache()  # waits for s1's event, then gives the block back
    assert state["freed"] == [ptr] and allocator.stats()["reserved_bytes"] == 0


def test_a_side_streams_parked_blocks_do_not_starve_the_shared_cache(device, monkeypatch):
    # a side stream's pool at the cap: a null-stream release takes room from it (largest
    # first) instead of going to the device every time
    allocator, streams, freed = device
    monkeypatch.setattr(allocator_module, "MAX_CACHED_BYTES", 4 * CAP)
    parked = _cached_on(allocator, streams, "s1", 2, 2 * CAP)
    streams.current = None
    ptr = allocator.allocate(CAP)
    allocator.release(ptr, CAP)  # evicts one of s1's blocks, then is cached
    assert len(freed) == 1 and freed[0] in parked
    misses = allocator.stats()["misses"]
    for _ in range(10):
        allocator.release(allocator.allocate(CAP), CAP)
    assert allocator.stats()["misses"] == misses and len(freed) == 1
    streams.current = "s1"  # the block s1 kept is still its own
    assert allocator.allocate(2 * CAP) in parked


def test_a_block_waiting_for_a_slow_stream_holds_back_no_other_streams_blocks(device):
    allocator, streams, _ = device
    _parked(allocator, streams, None, "slow")  # event 1, never done
    quick = _parked(allocator, streams, None, "quick")  # event 2
    streams.done.add(2)
    assert allocator.allocate(CAP) == quick and allocator.pending_bytes() == CAP


def test_a_mark_for_the_blocks_own_stream_changes_nothing(device):
    allocator, streams, _ = device
    streams.current = "s1"
    ptr = allocator.allocate(CAP)
    allocator.record_stream(ptr, "s1")
    allocator.release(ptr, CAP)
    assert streams.recorded == [] and allocator.allocate(CAP) == ptr


def test_a_failed_event_leaves_no_event_behind(device, monkeypatch):
    allocator, streams, _ = device
    ptr = allocator.allocate(CAP)
    allocator.record_stream(ptr, "s1")

    def broken(event, stream):
        raise allocator_module.Error("cuEventRecord failed: CUDA_ERROR_ILLEGAL_ADDRESS")

    monkeypatch.setattr(cuda_driver, "event_record", broken)
    with pytest.raises(allocator_module.Error, match="ILLEGAL_ADDRESS"):
        allocator.release(ptr, CAP)
    assert streams.destroyed == [1] and allocator.pending_bytes() == 0


def test_a_pinned_block_its_bucket_cannot_get_gets_its_own_bytes(monkeypatch):
    FakeStreams(monkeypatch)

    def alloc(nbytes: int) -> int:
        if nbytes > 6 * MiB:
            raise allocator_module.OutOfMemoryError("cuMemHostAlloc failed: out of memory")
        return 1 << 40

    pinned = allocator_module.PinnedAllocator("fake-pinned", alloc, lambda p: None)
    nbytes = 5 * MiB
    ptr = pinned.allocate(allocator_module.block_capacity(nbytes), nbytes)
    assert pinned.stats()["reserved_bytes"] == 6 * MiB and ptr == 1 << 40
    with pytest.raises(allocator_module.OutOfMemoryError, match="cannot pin 7340033 bytes"):
        pinned.allocate(allocator_module.block_capacity(7 * MiB + 1), 7 * MiB + 1)


def test_a_drivers_out_of_memory_is_out_of_memory_error():
    from kael.runtime.emulator import driver

    out = driver.CUresult.CUDA_ERROR_OUT_OF_MEMORY
    with pytest.raises(allocator_module.OutOfMemoryError, match="cuMemHostAlloc failed"):
        cuda_driver._call(driver, "cuMemHostAlloc", (out, None))
    with pytest.raises(allocator_module.Error) as other:
        cuda_driver._call(driver, "cuMemFree", (driver.CUresult.CUDA_ERROR_INVALID_HANDLE,))
    assert not isinstance(other.value, allocator_module.OutOfMemoryError)


def test_room_is_taken_from_side_pools_only_in_larger_blocks(device, monkeypatch):
    # a one-off big block must not push out a side stream's working set of smaller ones,
    # and a block that can never be cached (over the cap) pushes out nothing
    allocator, streams, freed = device
    monkeypatch.setattr(allocator_module, "MAX_CACHED_BYTES", 4 * CAP)
    working = _cached_on(allocator, streams, "s1", 3)
    scratch = allocator.allocate(2 * CAP)
    allocator.release(scratch, 2 * CAP)  # no room: freed itself, the working set stays
    huge = allocator.allocate(8 * CAP)
    allocator.release(huge, 8 * CAP)
    assert freed == [scratch, huge] and allocator.stats()["cached_bytes"] == 3 * CAP
    assert sorted(allocator.allocate(CAP) for _ in range(3)) == sorted(working)


def test_a_failure_giving_a_collected_block_back_never_parks_it_again(device, monkeypatch):
    allocator, streams, _ = device
    _parked(allocator, streams, "s1", "s2")
    streams.done.add(1)

    def failing(block: int, capacity: int) -> None:
        raise allocator_module.Error("cuMemFree failed: CUDA_ERROR_LAUNCH_FAILED")

    monkeypatch.setattr(allocator, "_give_back", failing)
    with pytest.raises(allocator_module.Error, match="LAUNCH_FAILED"):
        allocator.allocate(CAP)
    monkeypatch.undo()  # the next collect finds nothing parked: the block is not cached twice
    allocator._collect(wait=True)
    assert allocator.pending_bytes() == 0 and allocator.stats()["cached_bytes"] == 0
