"""runtime/cubin.py: PTX linked to a cubin once per device and driver, kept in the kernel
cache, and the PTX itself wherever the driver's linker fails."""

from __future__ import annotations

import ctypes

import pytest

from kael.runtime import cubin, kernel_cache

PTX = ".version 8.0\n.target sm_90\n.address_size 64\n"


class FakeDriver:
    """The four linker calls of cuda.bindings.driver; `fail` names the one that refuses."""

    class CUresult:
        CUDA_SUCCESS = 0

    class CUjitInputType:
        CU_JIT_INPUT_PTX = 1

    def __init__(self, fail: str = "", empty: bool = False):
        self.fail, self.empty = fail, empty
        self.linked, self.destroyed, self._images = [], 0, []

    def _result(self, name: str) -> int:
        return 218 if self.fail == name else 0  # CUDA_ERROR_INVALID_PTX

    def cuLinkCreate(self, count, options, values):
        return self._result("create"), "state"

    def cuLinkAddData(self, state, kind, data, size, name, count, options, values):
        assert kind == self.CUjitInputType.CU_JIT_INPUT_PTX and size == len(data)
        self.linked.append(data)
        return (self._result("add"),)

    def cuLinkComplete(self, state):
        made = b"" if self.empty else b"CUBIN " + self.linked[-1].rstrip(b"\0")
        image = ctypes.create_string_buffer(made)
        self._images.append(image)  # the link state owns its image until destroyed
        return self._result("complete"), ctypes.addressof(image), len(made)

    def cuLinkDestroy(self, state):
        self.destroyed += 1
        return (0,)


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KAEL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cubin, "stats", dict.fromkeys(cubin.stats, 0))


def test_ptx_is_linked_once_then_loaded_from_the_cache():
    driver = FakeDriver()
    first = cubin.image(driver, PTX, "sm_90 driver 13000")
    assert first == b"CUBIN " + PTX.encode() and driver.destroyed == 1
    again = cubin.image(driver, PTX, "sm_90 driver 13000")
    assert again == first and len(driver.linked) == 1
    assert cubin.stats == {"linked": 1, "loaded": 1, "fallback": 0}


def test_another_device_or_driver_links_its_own_cubin():
    driver = FakeDriver()
    for device in ("sm_90 driver 13000", "sm_90 driver 13010", "sm_80 driver 13000"):
        cubin.image(driver, PTX, device)
    assert len(driver.linked) == 3 and cubin.stats["linked"] == 3


@pytest.mark.parametrize("fail", ["create", "add", "complete"])
def test_a_failed_link_loads_the_ptx_and_caches_nothing(fail):
    driver = FakeDriver(fail)
    assert cubin.image(driver, PTX, "sm_90") == PTX.encode() + b"\0"
    assert driver.destroyed == (0 if fail == "create" else 1)  # a made state is destroyed
    assert cubin.stats["fallback"] == 1
    assert not kernel_cache.exists(cubin.CACHE_KIND, kernel_cache.key_of(PTX, "sm_90"))


def test_an_empty_image_is_not_a_cubin():
    assert cubin.image(FakeDriver(empty=True), PTX, "sm_90") == PTX.encode() + b"\0"


def test_a_driver_without_a_linker_loads_the_ptx():
    assert cubin.image(object(), PTX, "sm_90") == PTX.encode() + b"\0"
