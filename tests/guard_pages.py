"""NumPy arrays whose bytes touch a PROT_NONE guard page, so any out-of-bounds access faults.

Each buffer gets its own anonymous mapping laid out as [guard][data pages][guard]; the array
sits flush against the trailing guard ("end") or starts on the first byte after the leading
guard ("start"). A mapping is unmapped when the last array (or tensor) over it is freed.
"""

from __future__ import annotations

import ctypes
import mmap
from collections.abc import Callable

import numpy as np

PAGE = mmap.PAGESIZE
PLACEMENTS = ("end", "start")

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
PROT_NONE = 0


def _protect(address: int, length: int) -> None:
    if _libc.mprotect(address, length, PROT_NONE) != 0:
        raise OSError(ctypes.get_errno(), "mprotect failed")


def guarded_empty(shape: tuple[int, ...], dtype, placement: str = "end") -> np.ndarray:
    """A C-contiguous uninitialised array whose last (or first) byte borders a guard page."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    data_pages = max(1, -(-nbytes // PAGE))
    mm = mmap.mmap(-1, (data_pages + 2) * PAGE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    base = np.frombuffer(mm, np.uint8, 1).ctypes.data
    _protect(base, PAGE)
    _protect(base + (data_pages + 1) * PAGE, PAGE)
    offset = PAGE if placement == "start" else (data_pages + 1) * PAGE - nbytes
    return np.frombuffer(mm, dtype, nbytes // dtype.itemsize, offset).reshape(shape)


def guarded_copy(values: np.ndarray, placement: str = "end") -> np.ndarray:
    """`values` copied into a guarded C-contiguous array."""
    out = guarded_empty(values.shape, values.dtype, placement)
    out[...] = values
    return out


# A layout makes a view of `values` (whose shape it keeps) over a guarded base array, such
# that the view's furthest element is the base's last element and its first is the base's
# first: both guards are then one byte from an element the kernel must touch.
def _contiguous(values: np.ndarray, placement: str) -> np.ndarray:
    return guarded_copy(values, placement)


def _transposed(values: np.ndarray, placement: str) -> np.ndarray:
    """Reversed-axes view of a contiguous base (a plain transpose for 2-d)."""
    return guarded_copy(values.T.copy(), placement).T


def _stepped(values: np.ndarray, placement: str) -> np.ndarray:
    """Every other element along the last dim of a base that is 2n-1 wide there."""
    if values.ndim == 0 or values.shape[-1] == 0:
        return guarded_copy(values, placement)
    n = values.shape[-1]
    base = guarded_empty(values.shape[:-1] + (2 * n - 1,), values.dtype, placement)
    base[...] = np.zeros((), values.dtype)
    view = base[..., ::2]
    view[...] = values
    return view


def _expanded(values: np.ndarray, placement: str) -> np.ndarray:
    """values[0] repeated along dim 0 with stride 0 (a broadcast view); replaces the rest."""
    if values.ndim == 0 or values.shape[0] == 0:
        return guarded_copy(values, placement)
    base = guarded_copy(values[:1], placement)
    return np.lib.stride_tricks.as_strided(base, values.shape, (0, *base.strides[1:]))


LAYOUTS: dict[str, Callable[[np.ndarray, str], np.ndarray]] = {
    "contiguous": _contiguous,
    "transposed": _transposed,
    "stepped": _stepped,
    "expanded": _expanded,
}


def place(values: np.ndarray, layout: str, placement: str) -> np.ndarray:
    """`values` laid out as `layout` against a guard page at `placement`."""
    return LAYOUTS[layout](np.asarray(values), placement)


_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
)
_libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
_MAP_FAILED = ctypes.c_void_p(-1).value


def _guarded_block(nbytes: int, placement: str) -> tuple[int, int, int]:
    """(block address, mapping address, mapping length) of a raw guarded block."""
    data_pages = max(1, -(-nbytes // PAGE))
    length = (data_pages + 2) * PAGE
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
    base = _libc.mmap(None, length, mmap.PROT_READ | mmap.PROT_WRITE, flags, -1, 0)
    if base in (None, _MAP_FAILED):
        raise MemoryError(f"mmap of {length} bytes failed")
    _protect(base, PAGE)
    _protect(base + (data_pages + 1) * PAGE, PAGE)
    address = base + PAGE if placement == "start" else base + (data_pages + 1) * PAGE - nbytes
    return address, base, length


_kael_placement = ["end"]


def set_kael_placement(placement: str) -> None:
    """Where kael's next blocks go once guard_kael_allocations ran: "end" or "start"."""
    _kael_placement[0] = placement


def guard_kael_allocations(placement: str = "end") -> None:
    """Make every CPU block kael allocates exactly its tensor's size and flush against a guard.

    Kernels then also fault on over-reads of kael's own outputs and temporaries (normally
    hidden by the allocator rounding blocks up to 512 bytes). For the current process only.
    """
    from kael.runtime import allocator, storage

    set_kael_placement(placement)
    mappings: dict[int, tuple[int, int]] = {}

    def system_alloc(nbytes: int) -> int:
        address, base, length = _guarded_block(nbytes, _kael_placement[0])
        mappings[address] = (base, length)
        return address

    cpu = allocator.allocator_for("cpu")
    cpu.empty_cache()
    plain_free = cpu._system_free

    def system_free(address: int) -> None:
        if address in mappings:
            base, length = mappings.pop(address)
            _libc.munmap(base, length)
        else:  # a block allocated before the switch
            plain_free(address)

    cpu._system_alloc, cpu._system_free = system_alloc, system_free
    storage.block_capacity = lambda nbytes: nbytes  # no rounding: no free-list bucket either
