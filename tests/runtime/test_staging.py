"""Small uploads go to the GPU through a pinned block on the current stream: the bytes
arrive, the source may be reused at once, and the block waits for its copy."""

import ctypes

import pytest

import kael
from kael.runtime import cuda_driver, staging
from kael.runtime.allocator import PINNED


@pytest.mark.gpu
def test_staged_bytes_arrive_and_the_source_is_free_at_once(monkeypatch):
    target = kael.zeros(3, dtype=kael.int64, device="cuda")
    source = (ctypes.c_int64 * 3)(7, -1, 2**62)
    monkeypatch.setattr(cuda_driver, "event_query", lambda event: False)  # copy still queued
    staging.copy_to_device(target.data_ptr(), ctypes.addressof(source), 24)
    source[0] = 0  # the copy already took the bytes
    assert PINNED.pending_bytes() >= 24
    staging.copy_to_device(target.data_ptr(), ctypes.addressof(source), 0)  # nothing to do
    monkeypatch.undo()
    assert target.tolist() == [7, -1, 2**62]


@pytest.mark.gpu
def test_without_the_caching_allocator_the_plain_copy_is_used(monkeypatch):
    # a page-locked allocation and free per upload would cost more than the wait
    from kael.runtime import allocator

    copies = []
    monkeypatch.setattr(allocator, "_enabled", False)
    monkeypatch.setattr(cuda_driver, "memcpy_htod", lambda *args: copies.append(args))
    before = PINNED.stats()["misses"]
    staging.copy_to_device(1 << 20, 2 << 20, 16)
    assert copies == [(1 << 20, 2 << 20, 16)] and PINNED.stats()["misses"] == before
