"""The emulated device's memory: allocations at addresses no host pointer has, and the
per-launch shared and local windows, each a NumPy byte array; every access is checked
against the allocation it falls in and its natural alignment, as a GPU faults on both."""

from __future__ import annotations

import bisect
import ctypes

import numpy as np

from kael.runtime.errors import Error

DEVICE_BASE = 0x7F00_0000_0000  # far from where the host maps its own memory
ALIGN = 256  # cuMemAlloc's alignment
TOTAL_BYTES = 8 << 30  # what the emulated device reports and lends (read at each call)


class Fault(Error):
    """A kernel touched memory a GPU would refuse: `code` is the CUDA error it becomes."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class Memory:
    """Regions by base address; device allocations stay until freed, launch windows
    (shared, local) are added for a launch and dropped after it."""

    def __init__(self) -> None:
        self._bases: list[int] = []
        self._regions: dict[int, np.ndarray] = {}
        self._next = DEVICE_BASE
        self.in_use = 0

    # -- allocations --------------------------------------------------------------------
    def alloc(self, nbytes: int) -> int:
        size = max(ALIGN, -(-nbytes // ALIGN) * ALIGN)
        if self.in_use + size > TOTAL_BYTES:
            raise Fault("CUDA_ERROR_OUT_OF_MEMORY", f"cannot allocate {nbytes} bytes")
        base = self._next
        self._next += size + ALIGN  # a gap: an access just past the end faults
        self.add(base, np.zeros(size, np.uint8))
        self.in_use += size
        return base

    def free(self, base: int) -> None:
        region = self._regions.get(base)
        if region is None or base < DEVICE_BASE:
            raise Fault("CUDA_ERROR_INVALID_VALUE", f"cuMemFree of {base:#x}: not an allocation")
        self.remove(base)
        self.in_use -= region.size

    def add(self, base: int, data: np.ndarray) -> None:
        bisect.insort(self._bases, base)
        self._regions[base] = data

    def remove(self, base: int) -> None:
        self._bases.remove(base)
        del self._regions[base]

    def span(self, address: int, nbytes: int) -> np.ndarray:
        """The bytes [address, address + nbytes) of one allocation (for copies)."""
        at = bisect.bisect_right(self._bases, address) - 1
        if at >= 0:
            base = self._bases[at]
            region = self._regions[base]
            if address + nbytes <= base + region.size:
                return region[address - base : address - base + nbytes]
        raise Fault(
            "CUDA_ERROR_INVALID_VALUE",
            f"{nbytes} bytes at {address:#x} are not inside one device allocation",
        )

    def copy_from_host(self, dst: int, src: int, nbytes: int) -> None:
        if nbytes:
            ctypes.memmove(self.span(dst, nbytes).ctypes.data, src, nbytes)

    def copy_to_host(self, dst: int, src: int, nbytes: int) -> None:
        if nbytes:
            ctypes.memmove(dst, self.span(src, nbytes).ctypes.data, nbytes)

    def copy(self, dst: int, src: int, nbytes: int) -> None:
        if nbytes:
            self.span(dst, nbytes)[:] = self.span(src, nbytes)

    # -- accesses from kernels ----------------------------------------------------------
    def _locate(self, addresses: np.ndarray, size: int, what: str):
        """Per region touched: (lane positions, region, element indices); faults otherwise."""
        if addresses.size and np.any(addresses % size):
            bad = int(addresses[addresses % size != 0][0])
            raise Fault("CUDA_ERROR_MISALIGNED_ADDRESS", f"{what} of {size} bytes at {bad:#x}")
        if addresses.size:  # the common access: every lane inside one region
            lo, hi = int(addresses.min()), int(addresses.max())
            at = bisect.bisect_right(self._bases, lo) - 1
            if at >= 0:
                base = self._bases[at]
                region = self._regions[base]
                if hi + size <= base + region.size:
                    return [(slice(None), region, (addresses - np.uint64(base)) // size)]
        bases = np.asarray(self._bases, np.uint64)
        at = np.searchsorted(bases, addresses, side="right").astype(np.int64) - 1
        out = []
        for k in np.unique(at):
            lanes = np.nonzero(at == k)[0]
            picked = addresses[lanes]
            region = self._regions[self._bases[k]] if k >= 0 else None
            if region is None or np.any(picked + size > bases[k] + region.size):
                bad = int(
                    picked[0]
                    if region is None
                    else picked[picked + size > bases[k] + region.size][0]
                )
                raise Fault(
                    "CUDA_ERROR_ILLEGAL_ADDRESS",
                    f"{what} of {size} bytes at {bad:#x}, outside every allocation",
                )
            out.append((lanes, region, (picked - bases[k]) // size))
        return out

    def load(self, addresses: np.ndarray, dtype: np.dtype, what: str = "load") -> np.ndarray:
        dtype = np.dtype(dtype)
        addresses = addresses.astype(np.uint64, copy=False)
        out = np.empty(addresses.size, dtype)
        for lanes, region, index in self._locate(addresses, dtype.itemsize, what):
            out[lanes] = region.view(dtype)[index.astype(np.int64)]
        return out

    def store(self, addresses: np.ndarray, values: np.ndarray, what: str = "store") -> None:
        addresses = addresses.astype(np.uint64, copy=False)
        for lanes, region, index in self._locate(addresses, values.dtype.itemsize, what):
            region.view(values.dtype)[index.astype(np.int64)] = values[lanes]
