"""Storage: owned blocks from the allocator, external memory with an owner, and the rules around both."""

import copy
import ctypes
import gc
import pickle
import weakref

import numpy as np
import pytest

from kael.runtime.allocator import SMALL_LIMIT, allocator_for, block_capacity, memory_stats
from kael.runtime.device import CPU, CUDA, cuda_is_available
from kael.runtime.errors import Error, TypeError, ValueError
from kael.runtime.storage import Storage


@pytest.mark.parametrize("nbytes", [1, 3, 64, 100, 4097])
def test_aligned_to_64_bytes(nbytes):
    storages = [Storage(nbytes) for _ in range(4)]
    assert all(s.ptr % 64 == 0 and s.ptr != 0 for s in storages)


@pytest.mark.parametrize("nbytes", [1, 100, 70_000])
def test_every_byte_is_writable(nbytes):
    s = Storage(nbytes)
    ctypes.memset(s.ptr, 0xAB, nbytes)
    assert ctypes.string_at(s.ptr, nbytes) == b"\xab" * nbytes


def test_zero_bytes_is_null():
    before = memory_stats()
    s = Storage(0)
    assert (s.ptr, s.nbytes, s.capacity) == (0, 0, 0)
    del s
    assert memory_stats() == before


def test_negative_size_raises():
    with pytest.raises(ValueError, match=r"^storage size must be non-negative, got -1 bytes$"):
        Storage(-1)


@pytest.mark.parametrize("nbytes", [1.5, "8", None])
def test_non_integer_size_raises_type_error(nbytes):
    with pytest.raises(TypeError, match="storage size must be an integer"):
        Storage(nbytes)


def test_numpy_integer_size_is_accepted():
    assert Storage(np.int64(24)).nbytes == 24


def test_nbytes_is_the_request_not_the_capacity():
    s = Storage(48)
    assert s.nbytes == 48
    assert s.capacity == block_capacity(48) == 512


def test_block_returns_to_its_bucket_when_the_storage_dies():
    s = Storage(1000)
    ptr = s.ptr
    in_use = memory_stats()["in_use_bytes"]
    del s
    assert memory_stats()["in_use_bytes"] == in_use - 1024
    assert Storage(900).ptr == ptr  # same 1024-byte bucket, last in, first out


@pytest.mark.parametrize("nbytes", [1, 4096, SMALL_LIMIT + 1])
def test_planned_and_host_storages_are_allocator_blocks_like_any_other(nbytes):
    capacity = block_capacity(nbytes)
    in_use = memory_stats()["in_use_bytes"]
    makers = (
        lambda: Storage.planned(nbytes, capacity, allocator_for(CPU), CPU),
        lambda: Storage.host(nbytes),
    )
    for make in makers:
        s = make()
        assert (s.nbytes, s.device, s.version, s.ptr % 64) == (nbytes, CPU, 0, 0)
        assert memory_stats()["in_use_bytes"] == in_use + capacity
        ctypes.memset(s.ptr, 0xAB, nbytes)
        del s
        assert memory_stats()["in_use_bytes"] == in_use


def test_block_in_a_reference_cycle_is_released_by_the_collector():
    gc.collect()  # earlier tests' cyclic garbage must not be counted as ours
    s = Storage(2000)
    cycle = [s]
    cycle.append(cycle)
    in_use = memory_stats()["in_use_bytes"]
    del s, cycle
    gc.collect()
    assert memory_stats()["in_use_bytes"] == in_use - 2048


def test_failed_allocation_leaves_nothing_behind():
    before = memory_stats()
    with pytest.raises(Error, match=f"cannot reserve {2**62 + 1} bytes"):
        Storage(2**62 + 1)
    gc.collect()
    assert memory_stats() == before


def test_version_counter_starts_at_zero_and_counts_bumps():
    s = Storage(8)
    alias = s
    assert s.version == 0
    s.bump_version()
    s.bump_version()
    assert alias.version == 2


def test_device_defaults_to_cpu_and_accepts_names():
    assert Storage(8).device is CPU
    assert Storage(8, "cpu").device is CPU
    with pytest.raises(ValueError, match="unknown device 'gpu'"):
        Storage(8, "gpu")


@pytest.mark.skipif(cuda_is_available(), reason="checks the error without a GPU")
def test_cuda_without_gpu_raises_a_clear_error():
    before = memory_stats(CUDA)
    with pytest.raises(Error, match="CUDA is not available: no NVIDIA driver or GPU was found"):
        Storage(16, "cuda")
    assert memory_stats(CUDA) == before


def test_zero_bytes_on_cuda_needs_no_gpu():
    s = Storage(0, CUDA)
    assert (s.ptr, s.device) == (0, CUDA)


def test_external_keeps_owner_alive_and_releases_it():
    owner = np.arange(10, dtype=np.float32)
    ptr, nbytes = owner.ctypes.data, owner.nbytes
    alive = weakref.ref(owner)
    s = Storage.external(ptr, nbytes, owner)
    del owner
    gc.collect()
    assert alive() is not None
    assert ctypes.string_at(s.ptr, s.nbytes) == np.arange(10, dtype=np.float32).tobytes()
    del s
    gc.collect()
    assert alive() is None


def test_external_never_touches_the_allocator():
    before = memory_stats()
    owner = bytearray(b"kael" * 100)
    buffer = (ctypes.c_char * len(owner)).from_buffer(owner)
    s = Storage.external(ctypes.addressof(buffer), len(owner), (owner, buffer))
    assert (s.nbytes, s.capacity, s.is_external) == (400, 0, True)
    del s, buffer
    gc.collect()
    assert memory_stats() == before


def test_external_null_address_with_bytes_raises():
    with pytest.raises(ValueError, match="needs a valid address"):
        Storage.external(0, 8, None)
    assert Storage.external(0, 0, None).nbytes == 0


def test_external_negative_size_raises():
    with pytest.raises(ValueError, match="non-negative, got -4 bytes"):
        Storage.external(64, -4, None)


def test_owned_storage_is_not_external():
    assert not Storage(8).is_external
    assert not Storage(0).is_external


@pytest.mark.parametrize(
    "duplicate", [copy.copy, copy.deepcopy, pickle.dumps], ids=["copy", "deepcopy", "pickle"]
)
def test_storage_cannot_be_copied(duplicate):
    # Two Storage objects over one block would release it twice.
    with pytest.raises(TypeError, match="cannot be copied"):
        duplicate(Storage(8))


def test_storage_supports_weak_references():
    s = Storage(8)
    ref = weakref.ref(s)
    assert ref() is s
    del s
    assert ref() is None


def test_overlaps_sees_shared_bytes_on_both_sides_of_the_edge():
    owner = ctypes.create_string_buffer(64)
    base = ctypes.addressof(owner)
    left = Storage.external(base, 32, owner)
    touching = Storage.external(base + 32, 32, owner)  # adjacent: no byte in common
    one_byte = Storage.external(base + 31, 8, owner)  # shares byte 31
    assert left.overlaps(left) and not left.overlaps(touching) and not touching.overlaps(left)
    assert left.overlaps(one_byte) and one_byte.overlaps(left)
    assert not Storage(16).overlaps(Storage(16))  # two blocks of the allocator
    empty = Storage(0)
    assert not empty.overlaps(empty) and not empty.overlaps(left)
