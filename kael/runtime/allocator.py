"""Chapter 02's caching block allocator: bucketed free lists over real system memory.

Training loops allocate the same sizes every step; reusing freed blocks avoids a system
allocation per intermediate (and, on a GPU, an expensive cuMemAlloc/cuMemFree pair).
Host blocks come from libc's posix_memalign, 64-byte aligned. One allocator exists per
device kind; each has one lock, held across fork() so that no child inherits it held.
"""

from __future__ import annotations

import ctypes
import os
import sys
import weakref
from collections.abc import Callable

from kael.runtime import cuda_driver, sync
from kael.runtime.device import Device, parse_device
from kael.runtime.errors import Error, OutOfMemoryError, ValueError

ALIGNMENT = 64  # a cache line, and a multiple of every SIMD width up to AVX-512
SMALL_STEP = 512  # small requests round up to a multiple of this...
SMALL_LIMIT = 64 * 1024  # ...up to here; larger ones to the next power of two
MAX_BLOCK_BYTES = 2**62
# kMaxCachedBytes: the most the cache holds. A release beyond it frees cached blocks larger
# than itself first (kael's refinement of the book's rule, which frees the released block:
# the limit holds either way), else the block.
MAX_CACHED_BYTES = 1 << 30
EXACT_STEP = 2 << 20  # a device block its bucket cannot get is this many bytes a step

_DISABLE_VALUES = ("", "0", "false", "no", "off")
_enabled = os.environ.get("KAEL_NO_CACHING_ALLOCATOR", "").strip().lower() in _DISABLE_VALUES
_GIL = getattr(sys, "_is_gil_enabled", lambda: True)()  # False on free-threaded CPython


def block_capacity(nbytes: int) -> int:
    """The bucket a request of `nbytes` is served from: 512-multiples to 64 KiB, then 2**k."""
    if nbytes <= SMALL_LIMIT:
        if nbytes < 0:
            raise ValueError(f"block size must be non-negative, got {nbytes} bytes")
        return (nbytes + SMALL_STEP - 1) // SMALL_STEP * SMALL_STEP
    if nbytes > MAX_BLOCK_BYTES:
        raise Error(f"cannot reserve {nbytes} bytes")
    return 1 << (nbytes - 1).bit_length()


def _lock_free_cap() -> int:
    """The cache cap of a lock-free release: -1 where none may take place (caching off, or
    no GIL to make list.append and the counters' updates atomic)."""
    return MAX_CACHED_BYTES if _GIL and _enabled else -1


def _bucket_sizes() -> list[int]:
    """Every capacity block_capacity can return."""
    small = range(SMALL_STEP, SMALL_LIMIT + 1, SMALL_STEP)
    large = (1 << k for k in range(SMALL_LIMIT.bit_length(), MAX_BLOCK_BYTES.bit_length()))
    return [*small, *large]


_BUCKETS = _bucket_sizes()
_DESCENDING = _BUCKETS[::-1]


_instances: weakref.WeakSet = weakref.WeakSet()  # every allocator, recounted after fork()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: [a._recount() for a in list(_instances)])


class CachingAllocator:
    """Free lists per capacity over a (system_alloc, system_free) pair, with statistics.

    system_alloc(nbytes) returns an address (an int) or raises (kael.Error or MemoryError
    when out of memory); system_free(address) gives it back.

    A hit and a release to the cache take no lock where the GIL is on (an eager op's
    output costs one of each; the lock was two thirds of their time): list.pop and
    list.append are atomic, so no block is handed out twice or lost, and each counter
    update is one bytecode-level `+=` that no other thread interleaves with; a snapshot
    taken while other threads allocate may lag one of them by a block (bytes in use are
    not counted apart: they are the reserved bytes less the cached ones), a release that
    overfills the cache (two threads past the cap check at once) frees a block again,
    and a forked child counts its cache again from the free lists. Misses, frees to
    the system and empty_cache's pops hold the lock, which is reentrant, so a finalizer or signal
    handler that releases a block inside one cannot deadlock. Without a GIL (free-threaded
    CPython) every path holds the lock.
    """

    def __init__(
        self, name: str, system_alloc: Callable[[int], int], system_free: Callable[[int], None]
    ) -> None:
        self.name = name
        self._system_alloc = system_alloc
        self._system_free = system_free
        # Held across fork() (runtime/sync.py): a child never inherits it held.
        self._lock = sync.lock(reentrant=True, fork_rank=sync.ALLOCATOR_RANK)
        self._free: dict[int, list[int]] = {capacity: [] for capacity in _BUCKETS}
        self._cached = self._reserved = self._hits = self._misses = 0
        # The most cached bytes a release may reach without the lock (set_caching_allocator_
        # enabled keeps it current)
        self.lock_free_cap = _lock_free_cap()
        _instances.add(self)

    def allocate(self, capacity: int, nbytes: int = 0) -> int:
        """A block of exactly `capacity` bytes (block_capacity(nbytes)): a cached one if any
        (hit), else a new one."""
        if _GIL:  # list.pop is atomic: no lock for a hit (see the class docstring)
            blocks = self._free.get(capacity)
            if blocks:  # _hit, inlined: every eager op's output comes through here
                try:
                    ptr = blocks.pop()
                except IndexError:  # another thread took the last one meanwhile
                    ptr = 0
                if ptr:
                    self._cached -= capacity
                    self._hits += 1
                    return ptr
        with self._lock:
            ptr = self._hit(capacity)
        return ptr or self._miss(capacity)

    def _miss(self, capacity: int) -> int:
        """A new block of `capacity` bytes from the system, counted as a miss."""
        ptr = self._allocate_from_system(capacity)
        with self._lock:
            self._misses += 1
            self._reserved += capacity
            self._note_peaks()
        return ptr

    def _note_peaks(self) -> None:
        """Under the lock, after the bytes in use or reserved grew: the device allocator's
        peaks (the host keeps none: its hits take no lock)."""

    def _hit(self, capacity: int, blocks: list[int] | None = None) -> int:
        """A cached block of `capacity` bytes (from `blocks`, else its free list), counted as
        a hit, or 0 (none cached)."""
        blocks = self._free.get(capacity) if blocks is None else blocks
        if not blocks:
            return 0
        try:
            ptr = blocks.pop()
        except IndexError:  # another thread took the last one meanwhile
            return 0
        self._cached -= capacity
        self._hits += 1
        return ptr

    def _allocate_from_system(self, capacity: int) -> int:
        """Ask the system; when it is out of memory, free the cache (the holders registered
        with on_empty_cache dropping theirs into it first) and ask once more."""
        try:
            return self._system_alloc(capacity)
        except (MemoryError, Error):
            _release_holders()
            if not self.empty_cache():
                raise
        return self._system_alloc(capacity)

    def release(self, ptr: int, capacity: int) -> None:
        """Take back a block from allocate: cache it, or free it when disabled or over the cap."""
        # Storage.__del__ inlines this branch (every eager op's output is released there)
        if self._cached + capacity <= self.lock_free_cap:
            try:
                self._free[capacity].append(ptr)  # atomic, as pop is
            except MemoryError:  # the list cannot grow: the locked path frees it
                pass
            else:
                self._cached += capacity
                if self._cached > self.lock_free_cap:
                    self._trim(capacity)  # another thread passed the same check meanwhile
                return
        with self._lock:
            cached, evicted = self._cache(ptr, capacity)
            if not cached:
                self._reserved -= capacity
        for block in evicted:  # outside the lock: a device's free may synchronize
            self._system_free(block)
        if not cached:
            self._system_free(ptr)

    def _cache(
        self, ptr: int, capacity: int, blocks: list[int] | None = None
    ) -> tuple[bool, list[int]]:
        """Under the lock: put a released block in its free list (or `blocks`: a device
        stream's pool), counted, unless caching is
        off, the cache is full or the list cannot grow; (whether it did, the cached blocks
        taken out to make room, which the caller frees once it has left the lock). A full
        cache first gives up cached blocks larger than this one, largest first: a few big
        one-off buffers (a sort's scratch) would otherwise leave every later size to the
        system, its pages faulted in again at each call (16M scatter_reduce after a sort: 30
        -> 39 ms). The cost of the trade: a loop whose blocks together exceed the cap gives
        up its largest one each step instead of its last one."""
        blocks = self._free.get(capacity) if blocks is None else blocks
        if not _enabled or blocks is None:
            return False, []
        evicted = self._take_larger(capacity)
        if self._cached + capacity > MAX_CACHED_BYTES:
            return False, evicted
        try:
            blocks.append(ptr)  # atomic, as pop is
        except MemoryError:
            return False, evicted
        self._cached += capacity
        if self._cached > MAX_CACHED_BYTES:  # a lock-free release landed meanwhile
            evicted += self._taken(capacity, 1, blocks)
        return True, evicted

    def _take_larger(self, capacity: int) -> list[int]:
        """Cached blocks larger than `capacity` (largest first, none above the cap) taken out
        until one of `capacity` fits under the cap, or none is left; counted as freed."""
        taken: list[int] = []
        if self._cached + capacity <= MAX_CACHED_BYTES:
            return taken
        for larger, blocks in self._larger_lists(capacity):
            over = self._cached + capacity - MAX_CACHED_BYTES
            if over <= 0:
                break
            taken += self._taken(larger, -(-over // larger), blocks)
        return taken

    def _larger_lists(self, capacity: int):
        """(capacity, cached blocks) of every non-empty list of blocks larger than
        `capacity` and no larger than the cap, largest first."""
        for larger in _DESCENDING:
            if larger <= capacity:
                return
            if larger <= MAX_CACHED_BYTES and self._free[larger]:
                yield larger, self._free[larger]

    def _taken(self, capacity: int, count: int, blocks: list[int] | None = None) -> list[int]:
        """Up to `count` cached blocks of `capacity` (from `blocks`, else its free list)
        popped and counted as freed (a lock-free hit may take some meanwhile)."""
        taken = []
        blocks = self._free[capacity] if blocks is None else blocks
        for _ in range(count):
            try:
                taken.append(blocks.pop())
            except IndexError:
                break
            self._cached -= capacity
            self._reserved -= capacity
        return taken

    def _trim(self, capacity: int) -> bool:
        """Free one cached block of `capacity` bytes to the system; False if none is cached
        (one pop under the lock: a lock-free hit may take blocks meanwhile)."""
        with self._lock:
            taken = self._taken(capacity, 1)
        for ptr in taken:
            self._system_free(ptr)
        return bool(taken)

    def _recount(self) -> None:
        """In a forked child: counters made whole again. A thread switched out between a
        lock-free pop or append and its counter updates does not exist in the child, so
        the cache is counted from the free lists, and a block that thread held counts as in
        use (the child cannot give it back)."""
        self._cached = sum(capacity * len(blocks) for capacity, blocks in self._free.items())

    def empty_cache(self) -> int:
        """Free every cached block to the system; returns the number of bytes freed."""
        total = 0
        for capacity, blocks in self._free.items():
            while blocks and self._trim(capacity):
                total += capacity
        return total

    def stats(self) -> dict[str, int]:
        """A snapshot: in_use_bytes and cached_bytes (capacities), reserved_bytes, hits, misses."""
        with self._lock:
            return {
                "in_use_bytes": self._reserved - self._cached,
                "cached_bytes": self._cached,
                "reserved_bytes": self._reserved,
                "hits": self._hits,
                "misses": self._misses,
            }

    def __repr__(self) -> str:
        return f"CachingAllocator({self.name!r}, {self.stats()})"


class DeviceAllocator(CachingAllocator):
    """The CUDA allocator: a CachingAllocator with a pool per stream, as PyTorch's, whose
    blocks keep the other streams that used them.

    A block allocated while a stream other than the null one is current belongs to that
    stream: released, it goes to that stream's own pool, and only allocations on it get it
    again, queued after its last kernels. Null-stream blocks go to the shared lists, which
    only null-stream allocations draw from: the null stream orders itself with every other
    (kael's streams are created blocking), so a block a side stream may still read, even
    unmarked, never reaches another stream (x made on the null stream, read on s1, freed:
    an allocation on s2 must not get it). A block marked with `record_stream` goes back to
    its pool only once the work queued on the marked streams at its release has finished
    (an event recorded on each, queried at the next allocation, waited for by
    empty_cache). Every release takes the locked path (lock_free_cap is -1), which costs
    little next to a GPU launch.

    Device memory cannot be overcommitted, so a request whose power-of-two bucket the
    device cannot hold even with the cache freed (a tensor over half the device, or over
    half what is free) gets a block of its own bytes, rounded up to EXACT_STEP, instead of
    failing: such a block is never cached (no bucket fits it) and goes back to the device
    when released. A request nothing can hold is a kael.OutOfMemoryError naming its bytes.
    """

    def __init__(self, name: str, system_alloc, system_free) -> None:
        super().__init__(name, system_alloc, system_free)
        self._streams: dict[int, set] = {}  # block -> the streams record_stream marked
        # parked blocks by the streams they wait for (their keys, sorted), oldest first:
        # (block, capacity, events)
        self._pending: dict[tuple[int, ...], list[tuple[int, int, list]]] = {}
        self._exact: dict[int, int] = {}  # blocks outside the buckets -> their bytes
        self._home: dict[int, int] = {}  # block -> the key of the side stream it belongs to
        self._pools: dict[tuple[int, int], list[int]] = {}  # (stream key, capacity) -> blocks
        # The most bytes in use and reserved since the start or reset_peaks (torch.cuda's
        # max_memory_allocated and max_memory_reserved); kept here only, off the host's
        # lock-free hot path
        self._peak_in_use = self._peak_reserved = 0

    lock_free_cap = property(lambda self: -1, lambda self, value: None)
    # Device memory: a block belongs to the stream it was allocated on, and the null stream
    # orders itself with every other, so it needs no mark (PinnedAllocator: host memory, no
    # stream's, marked for the null stream's copies too).
    pools_per_stream = True
    null_stream_needs_mark = False

    def allocate(self, capacity: int, nbytes: int = 0) -> int:
        if self._pending:
            self._collect(wait=False)
        key = cuda_driver.stream_key(cuda_driver.current_stream()) if self.pools_per_stream else 0
        try:
            try:
                ptr = self._cached_block(key, capacity) or self._miss(capacity)
            except OutOfMemoryError:
                ptr = self._allocate_exact(capacity, nbytes)
        except OutOfMemoryError:
            raise self._out_of_memory(nbytes or capacity) from None
        if key:
            with self._lock:
                self._home[ptr] = key
        return ptr

    def _cached_block(self, key: int, capacity: int) -> int:
        """A cached block of `capacity` bytes for stream `key` (0: the null stream's shared
        lists, else its own pool), counted as a hit; 0 when none is cached."""
        with self._lock:
            ptr = self._hit(capacity, self._pools.get((key, capacity), []) if key else None)
            if ptr:
                self._note_peaks()
            return ptr

    def _note_peaks(self) -> None:
        self._peak_in_use = max(self._peak_in_use, self._reserved - self._cached)
        self._peak_reserved = max(self._peak_reserved, self._reserved)

    def _allocate_exact(self, capacity: int, nbytes: int) -> int:
        """A block of `nbytes` rounded up to EXACT_STEP, where that is less than its bucket
        (OutOfMemoryError otherwise: the bucket's own refusal stands)."""
        exact = -(-nbytes // EXACT_STEP) * EXACT_STEP
        if not 0 < exact < capacity:
            raise OutOfMemoryError(f"cannot allocate {capacity} bytes")
        ptr = self._system_alloc(exact)
        with self._lock:
            self._exact[ptr] = exact
            self._misses += 1
            self._reserved += exact
            self._note_peaks()
        return ptr

    def _out_of_memory(self, nbytes: int) -> OutOfMemoryError:
        """The error for a request of `nbytes` that nothing could hold: it and the device's
        free bytes, and what kael holds (its cache was freed before the last try)."""
        free, total = cuda_driver.mem_info()
        held = self.stats()["in_use_bytes"]
        gib = cuda_driver.gib
        return OutOfMemoryError(
            f"CUDA out of memory: cannot allocate {nbytes} bytes ({gib(nbytes)}); the device"
            f" has {free} bytes ({gib(free)}) free of {total} ({gib(total)}), and kael's"
            f" tensors hold {held} bytes ({gib(held)})"
        )

    def record_stream(self, ptr: int, stream) -> None:
        """Mark block `ptr` as used by `stream` (None: the null stream); a mark for the
        stream a block belongs to changes nothing (its pool is that stream's), as in torch."""
        if stream is None and not self.null_stream_needs_mark:
            return
        with self._lock:
            if self.pools_per_stream and cuda_driver.stream_key(stream) == self._home.get(ptr):
                return
            self._streams.setdefault(ptr, set()).add(stream or 0)

    def release(self, ptr: int, capacity: int) -> None:
        with self._lock:
            streams = self._streams.pop(ptr, None)
        if not streams:
            self._give_back(ptr, capacity)
            return
        events = []
        try:
            for stream in streams:
                events.append(cuda_driver.event_create())
                cuda_driver.event_record(events[-1], stream)
        except BaseException:  # the block stays out (a stream may use it); the events go
            for event in events:
                cuda_driver.event_destroy(event)
            raise
        group = tuple(sorted(cuda_driver.stream_key(stream or None) for stream in streams))
        with self._lock:
            self._pending.setdefault(group, []).append((ptr, capacity, events))

    def _collect(self, wait: bool) -> None:
        """Cache the parked blocks whose streams are done (all of them, waiting, if `wait`):
        in each group waiting for the same streams, oldest first up to the first that is not
        done, as a stream finishes its work in order. A host far ahead of the GPU then
        queries about one event a group per allocation, and a block waiting for a slow
        stream holds back no other group's."""
        with self._lock:
            pending, self._pending = self._pending, {}
        try:
            for blocks in pending.values():
                while blocks:
                    ptr, capacity, events = blocks[0]
                    if wait:
                        for event in events:
                            cuda_driver.event_synchronize(event)
                    elif not all(cuda_driver.event_query(event) for event in events):
                        break
                    blocks.pop(0)  # before it is given back: a failure there must not park it again
                    for event in events:
                        cuda_driver.event_destroy(event)
                    self._give_back(ptr, capacity)
        finally:  # a driver error leaves what was not collected parked, not lost
            with self._lock:
                for group, blocks in pending.items():
                    if blocks:
                        self._pending.setdefault(group, [])[:0] = blocks

    def _give_back(self, ptr: int, capacity: int) -> None:
        """A block no other stream uses any more: to its stream's pool (the shared lists for
        the null stream's), or, for a block of its own size or over the cap, to the device."""
        pooled, evicted = False, []
        with self._lock:
            exact = self._exact.pop(ptr, 0)
            key = self._home.pop(ptr, 0)
            self._reserved -= exact
            if key and not exact:  # to its stream's pool, room made as for the shared lists
                pool = self._pools.setdefault((key, capacity), [])
                pooled, evicted = self._cache(ptr, capacity, pool)
                if not pooled:
                    self._reserved -= capacity
        if not (exact or key):
            super().release(ptr, capacity)
            return
        for block in evicted:  # outside the lock: a device's free may synchronize
            self._system_free(block)
        if not pooled:
            self._system_free(ptr)

    def _larger_lists(self, capacity: int):
        """The shared lists' and the side pools' larger blocks, largest first: blocks a side
        stream parked count in the cap, and would otherwise leave every later release to the
        device (smaller ones stay, as in the shared lists: a one-off big block must not push
        out a working set)."""
        pools = (
            (pool[1], blocks)
            for pool, blocks in self._pools.items()
            if capacity < pool[1] <= MAX_CACHED_BYTES and blocks
        )
        lists = [*super()._larger_lists(capacity), *pools]
        return sorted(lists, key=lambda item: -item[0])

    def pending_bytes(self) -> int:
        """Bytes released but not yet reusable: their streams may still use them."""
        with self._lock:
            return sum(
                self._exact.get(ptr, capacity)
                for blocks in self._pending.values()
                for ptr, capacity, _ in blocks
            )

    def empty_cache(self) -> int:
        self._collect(wait=True)
        with self._lock:
            pools, self._pools = self._pools, {}
            freed = [(ptr, capacity) for (_, capacity), blocks in pools.items() for ptr in blocks]
            total = sum(capacity for _, capacity in freed)
            self._cached -= total
            self._reserved -= total
        for ptr, _ in freed:
            self._system_free(ptr)
        return total + super().empty_cache()

    def _recount(self) -> None:
        super()._recount()
        self._cached += sum(capacity * len(b) for (_, capacity), b in self._pools.items())

    def stats(self) -> dict[str, int]:
        """CachingAllocator.stats, and the peaks: peak_in_use_bytes, peak_reserved_bytes."""
        with self._lock:
            return {
                **super().stats(),
                "peak_in_use_bytes": self._peak_in_use,
                "peak_reserved_bytes": self._peak_reserved,
            }

    def reset_peaks(self) -> None:
        """Start the peaks again from the bytes in use and reserved now."""
        with self._lock:
            self._peak_in_use, self._peak_reserved = self._reserved - self._cached, self._reserved


class PinnedAllocator(DeviceAllocator):
    """Page-locked host blocks (Tensor.pin_memory): an asynchronous copy from one is marked
    with `record_stream` (the null stream too: the host may write the block as soon as the
    allocator hands it out again), and the block is reused only once that copy is done."""

    pools_per_stream = False  # a host allocation is no stream's work
    null_stream_needs_mark = True

    def _out_of_memory(self, nbytes: int) -> OutOfMemoryError:
        held = self.stats()["in_use_bytes"]
        return OutOfMemoryError(
            f"out of page-locked host memory: cannot pin {nbytes} bytes"
            f" ({cuda_driver.gib(nbytes)}); kael's pinned tensors hold {held} bytes"
        )


def _host_functions() -> tuple[Callable[[int], int], Callable[[int], None]]:
    """posix_memalign and free from the C library, wrapped for CachingAllocator."""
    libc = ctypes.CDLL(None)
    memalign = libc.posix_memalign
    memalign.argtypes = (ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_size_t)
    memalign.restype = ctypes.c_int
    free = libc.free
    free.argtypes = (ctypes.c_void_p,)
    free.restype = None
    madvise = libc.madvise
    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    madvise.restype = ctypes.c_int

    def host_alloc(nbytes: int) -> int:
        out = ctypes.c_void_p()
        huge = nbytes >= HUGE_PAGE
        align = HUGE_PAGE if huge else ALIGNMENT
        if memalign(ctypes.byref(out), align, nbytes) != 0 or not out.value:
            raise OutOfMemoryError(f"out of memory: cannot allocate {nbytes} bytes on the host")
        if huge:
            # Streaming kernels run faster on 2 MiB pages: fewer TLB misses, and hardware
            # prefetchers stop at page boundaries. A refusal only costs that speed.
            madvise(out.value, nbytes, MADV_HUGEPAGE)
        return out.value

    return host_alloc, free


HUGE_PAGE = 2 << 20
MADV_HUGEPAGE = 14

host_alloc, host_free = _host_functions()
_ALLOCATORS = {
    "cpu": CachingAllocator("cpu", host_alloc, host_free),
    "cuda": DeviceAllocator("cuda", cuda_driver.mem_alloc, cuda_driver.mem_free),
}


PINNED = PinnedAllocator("pinned", cuda_driver.host_alloc_pinned, cuda_driver.host_free_pinned)


def allocator_for(device: str | Device) -> CachingAllocator:
    """The allocator of a device kind."""
    if device.__class__ is not Device:
        device = parse_device(device)
    return _ALLOCATORS[device.type]


def memory_stats(device: str | Device = "cpu") -> dict[str, int]:
    """Statistics of one device's allocator (see CachingAllocator.stats)."""
    return allocator_for(device).stats()


def empty_cache() -> None:
    """Free the cached blocks of every device (and of pinned host memory) to the system,
    after the holders registered with `on_empty_cache` dropped what they keep."""
    _release_holders()
    for allocator in (*_ALLOCATORS.values(), PINNED):
        allocator.empty_cache()


def _release_holders() -> None:
    for release in list(_releases):
        release()


# What empty_cache calls first: caches above the allocator that hold storages (the kept
# host programs of codegen/cpu/program.py)
_releases: list[Callable[[], None]] = []


def on_empty_cache(release: Callable[[], None]) -> None:
    """Have empty_cache call `release` (which drops storages kept for reuse) first."""
    _releases.append(release)


def set_caching_allocator_enabled(flag: bool) -> None:
    """Turn caching on or off at run time; turning it off empties every cache."""
    global _enabled
    _enabled = bool(flag)
    for allocator in list(_instances):
        allocator.lock_free_cap = _lock_free_cap()
    if not _enabled:
        empty_cache()


def caching_allocator_enabled() -> bool:
    """Whether released blocks are cached (False under KAEL_NO_CACHING_ALLOCATOR)."""
    return _enabled
