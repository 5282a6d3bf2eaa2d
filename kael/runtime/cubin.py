"""The GPU's machine code (cubin) of kael's PTX, cached on disk like CPU object code.

Loading a module from PTX text (cuModuleLoadData) makes the driver compile it for the
device, in every process, for each of kael's many kernels. Here the driver's JIT linker
(cuLinkCreate, cuLinkAddData, cuLinkComplete) turns the PTX into a cubin once, kept in
the kernel cache (KAEL_CACHE_DIR, kind "cubin") under a key of the PTX text and the
device (its compute capability and the driver's version); a later process loads the
cubin as it is. Where linking fails (a driver without the linker, the emulated device),
the PTX itself is loaded, as before.
"""

from __future__ import annotations

import ctypes

from kael.runtime import kernel_cache

CACHE_KIND = "cubin"
# How each module image was had: linked now and stored, loaded from the cache, or the
# PTX itself after a failed link (check_gpu prints these).
stats = {"linked": 0, "loaded": 0, "fallback": 0}


def image(driver, ptx: str, device: str) -> bytes:
    """What cuModuleLoadData gets for `ptx` on `device` (its capability and driver, as
    text): the cached cubin, a cubin linked now (and stored), or the NUL-terminated PTX."""
    text = ptx.encode() + b"\0"
    key = kernel_cache.key_of(ptx, device)
    cached = kernel_cache.load(CACHE_KIND, key)
    if cached is not None:
        stats["loaded"] += 1
        return cached
    try:
        cubin = _link(driver, text)
    except Exception:  # no linker, or one that refuses: the driver compiles the PTX
        stats["fallback"] += 1
        return text
    kernel_cache.store(CACHE_KIND, key, cubin)
    stats["linked"] += 1
    return cubin


def _link(driver, text: bytes) -> bytes:
    """The cubin the driver's JIT linker makes of PTX `text` (copied out before the link
    state, which owns it, is destroyed)."""
    err, state = driver.cuLinkCreate(0, [], [])
    _check(driver, err, "cuLinkCreate")
    try:
        ptx_input = driver.CUjitInputType.CU_JIT_INPUT_PTX
        (err,) = driver.cuLinkAddData(state, ptx_input, text, len(text), b"kael.ptx", 0, [], [])
        _check(driver, err, "cuLinkAddData")
        err, address, size = driver.cuLinkComplete(state)
        _check(driver, err, "cuLinkComplete")
        cubin = ctypes.string_at(int(address), int(size))
    finally:
        driver.cuLinkDestroy(state)
    if not cubin:
        raise RuntimeError("cuLinkComplete gave an empty image")
    return cubin


def _check(driver, err, name: str) -> None:
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{name} failed: {err}")
