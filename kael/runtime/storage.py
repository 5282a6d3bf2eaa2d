"""Storage: a block of bytes on one device, owned (from the caching allocator) or external."""

from __future__ import annotations

import builtins
import operator
import sys

from kael.runtime.allocator import (
    _GIL,
    PINNED,
    SMALL_LIMIT,
    SMALL_STEP,
    allocator_for,
    block_capacity,
)
from kael.runtime.device import CPU, Device, parse_device
from kael.runtime.errors import TypeError, ValueError


class Storage:
    """`nbytes` bytes on `device`, with a version counter for in-place writes.

    The block is uninitialized; it returns to its allocator bucket when the Storage dies.
    `nbytes` is the request, not the bucket capacity, so no view can reach the slack.
    Zero bytes means address 0 and no block.
    """

    __slots__ = (
        "ptr",
        "nbytes",
        "device",
        "version",
        "owner",
        "_capacity",
        "_allocator",
        "_retired",
        "exported",
        "__weakref__",
    )

    def __init__(self, nbytes: int, device: Device | str = CPU) -> None:
        if device.__class__ is not Device:
            device = parse_device(device)
        if nbytes.__class__ is not int or nbytes < 0:
            nbytes = _as_size(nbytes)
        self.nbytes = nbytes
        self.device = device
        self.version = 0
        self.owner = None
        if nbytes > 0:
            capacity = block_capacity(nbytes)
            allocator = allocator_for(device)
            self.ptr = allocator.allocate(capacity, nbytes)
            self._capacity = capacity
            self._allocator = allocator
        else:
            self.ptr = self._capacity = 0
            self._allocator = None

    @classmethod
    def planned(cls, nbytes: int, capacity: int, allocator, device: Device) -> Storage:
        """A new storage of a size checked before (a compiled plan's buffers): `capacity`
        and `allocator` are block_capacity(nbytes) and allocator_for(device), worked out
        once per plan slot instead of on every call."""
        self = _new(cls)
        self.nbytes = nbytes
        self.device = device
        self.version = 0
        self.owner = None
        self.ptr = allocator.allocate(capacity, nbytes)
        self._capacity = capacity
        self._allocator = allocator
        return self

    @classmethod
    def pinned(cls, nbytes: int) -> Storage:
        """Host memory that is page-locked (allocator.PINNED): copies from it to a GPU can run
        asynchronously (Tensor.pin_memory)."""
        nbytes = _as_size(nbytes)
        if not nbytes:
            return cls(0, CPU)
        return cls.planned(nbytes, block_capacity(nbytes), PINNED, CPU)

    @property
    def is_pinned(self) -> bool:
        return self._allocator is PINNED

    @classmethod
    def host(cls, nbytes: int) -> Storage:
        """A new host storage of a checked, positive size: the fast doors' outputs."""
        # planned() with block_capacity's small buckets inlined: every fast op comes here
        small = nbytes <= SMALL_LIMIT
        capacity = (nbytes + SMALL_STEP - 1) & -SMALL_STEP if small else block_capacity(nbytes)
        self = _new(cls)
        self.nbytes = nbytes
        self.device = CPU
        self.version = 0
        self.owner = None
        blocks = _HOST_FREE.get(capacity)
        if blocks and _GIL:  # the allocator's hit, inlined (see CachingAllocator.allocate)
            try:
                self.ptr = blocks.pop()
                _HOST._cached -= capacity
                _HOST._hits += 1
            except IndexError:  # another thread took the last one meanwhile
                self.ptr = _HOST.allocate(capacity)
        else:
            self.ptr = _HOST.allocate(capacity)
        self._capacity = capacity
        self._allocator = _HOST
        return self

    @classmethod
    def external(cls, ptr: int, nbytes: int, owner: object, device: Device | str = CPU) -> Storage:
        """Wrap memory kael did not allocate; `owner` is kept alive and the allocator never used."""
        if device.__class__ is not Device:
            device = parse_device(device)
        nbytes = _as_size(nbytes)
        ptr = operator.index(ptr)
        if ptr < 0 or (ptr == 0 and nbytes > 0):
            raise ValueError(f"external storage of {nbytes} bytes needs a valid address, got {ptr}")
        storage = cls.__new__(cls)
        storage._set(ptr, nbytes, device, owner)
        return storage

    def _set(self, ptr: int, nbytes: int, device: Device, owner: object) -> None:
        """Every field of a storage that owns no allocator block (yet)."""
        self.ptr = ptr
        self.nbytes = nbytes
        self.device = device
        self.version = 0
        self.owner = owner
        self._capacity = 0
        self._allocator = None

    @property
    def capacity(self) -> int:
        """Bytes of the allocator block behind this storage (0 for empty or external storage):
        its bucket, or less where a device allocator could not get the bucket and gave a
        block of the request's own bytes (DeviceAllocator), which views must stay inside."""
        exact = getattr(self._allocator, "_exact", None)  # only a DeviceAllocator's
        if exact:
            return exact.get(self.ptr, self._capacity)
        return self._capacity

    @property
    def is_external(self) -> bool:
        """Whether the bytes belong to `owner` rather than to kael's allocator."""
        return self.nbytes > 0 and self._allocator is None

    # Whether the memory is not placed yet (a traced tensor's, frontend/tracing.py): it
    # shares bytes with no other storage, and reading `ptr` would need its values.
    lazy = False
    # Whether it is another storage seen at a call's shift (a compiled plan's window,
    # frontend/plan.py): where it lies follows the values, so Python must not read it.
    windowed = False

    def overlaps(self, other: Storage) -> bool:
        """Whether the two storages share any byte (one storage, or two over one array)."""
        if self is other:
            return self.nbytes > 0
        if self.lazy or other.lazy:
            return False
        return self.ptr < other.ptr + other.nbytes and other.ptr < self.ptr + self.nbytes

    def take_block(self, new: Storage) -> None:
        """Take `new`'s (bigger) block, which every tensor over this storage then sees
        (Tensor.resize_ growing it). `new` leaves with the old block and frees it, unless
        this storage's memory was handed out (`exported`: a NumPy array, a DLPack
        capsule), whose pointers must never come to point at memory another tensor was
        given: then the old block lives as long as this storage."""
        for field in ("ptr", "nbytes", "_capacity", "_allocator"):
            mine = getattr(self, field)
            setattr(self, field, getattr(new, field))
            setattr(new, field, mine)
        if getattr(self, "exported", False):
            self._retired = (*getattr(self, "_retired", ()), new)

    def move_into(self, new: Storage) -> None:
        """Take `new`'s memory and owner (share_memory_'s shared mapping), which every tensor
        over this storage then sees; `new` leaves with the old memory and frees it once
        (or it is retired with this storage when exported, as in take_block)."""
        self.take_block(new)
        self.owner, new.owner = new.owner, self.owner

    def bump_version(self) -> None:
        """Count one in-place write; autograd compares versions to detect modified inputs."""
        self.version += 1

    def __del__(self) -> None:
        try:
            allocator = self._allocator
        except AttributeError:  # __init__ failed before any field was set
            return
        if allocator is not None:
            self._allocator = None
            capacity = self._capacity
            try:
                if allocator._cached + capacity <= allocator.lock_free_cap:
                    # CachingAllocator.release's lock-free branch, inlined: every eager op's
                    # output ends here (a MemoryError from append takes release's own path)
                    try:
                        allocator._free[capacity].append(self.ptr)
                    except MemoryError:
                        pass
                    else:
                        allocator._cached += capacity
                        if allocator._cached > allocator.lock_free_cap:
                            allocator._trim(capacity)
                        return
                allocator.release(self.ptr, capacity)
            except Exception:
                if not _is_finalizing():  # at interpreter exit, leaking is fine
                    raise

    def __copy__(self, *_):
        raise TypeError("a Storage cannot be copied: share the object, or copy its bytes")

    __deepcopy__ = __reduce_ex__ = __copy__

    def __repr__(self) -> str:
        return f"Storage(nbytes={self.nbytes}, device={self.device}, ptr={self.ptr:#x})"


_is_finalizing = sys.is_finalizing
_HOST = allocator_for(CPU)
_HOST_FREE = _HOST._free
_new = object.__new__


def _as_size(nbytes) -> int:
    """A non-negative byte count as a Python int; TypeError or ValueError otherwise."""
    if nbytes.__class__ is not int:
        try:
            nbytes = operator.index(nbytes)
        except builtins.TypeError:
            raise TypeError(
                f"storage size must be an integer, got {type(nbytes).__name__}"
            ) from None
    if nbytes < 0:
        raise ValueError(f"storage size must be non-negative, got {nbytes} bytes")
    return nbytes
