"""kael.UntypedStorage, PyTorch's byte view of a tensor's memory: one wrapper class over the
runtime's Storage, so every tensor over one Storage reports one storage (equal data_ptr).

Bytes are read and written through kael's copy and fill kernels on a uint8 view of the
storage (host or GPU alike); share_memory_ moves host bytes into an anonymous MAP_SHARED
mapping, which fork children inherit, so writes are seen both ways."""

from __future__ import annotations

import ctypes
import mmap
import operator
import weakref
from collections.abc import Sequence

from kael.frontend import eager
from kael.frontend.tensor import Tensor, transfer_impl
from kael.runtime import tracestate
from kael.runtime.device import CPU, CUDA, Device, parse_device
from kael.runtime.dtypes import uint8
from kael.runtime.errors import Error, IndexError, TypeError
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl

# One live wrapper per Storage, keyed by id: a wrapper keeps its Storage (and so the id) alive.
_wrappers: weakref.WeakValueDictionary[int, UntypedStorage] = weakref.WeakValueDictionary()


# The owner marking an empty storage shared: it has no bytes to map.
_SHARED_EMPTY = object()


def _byte_impl(storage: Storage, start: int = 0, count: int | None = None) -> TensorImpl:
    """A 1-d uint8 impl over `count` bytes of `storage` from `start` (to the end by default)."""
    count = storage.nbytes - start if count is None else count
    return TensorImpl(storage, (count,), (1,), start, uint8, storage.device)


def _byte_value(value, message: str) -> int:
    """A Python int stored as one byte, wrapped modulo 256 as PyTorch stores it; TypeError
    with `message` (formatted with the value's type name) for anything else."""
    if not isinstance(value, int):
        kind = type(value)
        name = (
            kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
        )
        raise TypeError(message.format(name))
    return value % 256


def _size_arg(size, what: str) -> int:
    """A byte count: an int, not negative."""
    if isinstance(size, bool) or not hasattr(size, "__index__"):
        raise TypeError(f"{what} expects an int, but got {type(size).__name__}")
    size = operator.index(size)
    if size < 0:
        raise Error(f"{what}: the size must be non-negative, got {size} bytes")
    return size


def resize_storage(storage: Storage, nbytes: int) -> None:
    """Set `storage` to `nbytes` bytes, old bytes kept (Tensor.resize_, set_ and
    UntypedStorage.resize_ alike): within its allocator block only the size changes (views
    made before a shrink keep valid memory), beyond it a new, bigger block. An empty
    storage a compiled function made grows its plan slot (_grow_empty_slot)."""
    if nbytes == storage.nbytes:
        return
    if storage.lazy and _grow_empty_slot(storage, nbytes):
        return
    if not is_resizable(storage):
        raise Error(
            f"Trying to resize storage that is not resizable (from {storage.nbytes} to"
            f" {nbytes} bytes)"
        )
    if nbytes <= storage.capacity:
        storage.nbytes = nbytes
    else:
        _grow(storage, nbytes)


def _grow_empty_slot(storage, nbytes: int) -> bool:
    """An empty tensor a compiled function made, resized (an `out=` it passes, kael.empty(0)
    the commonest): its plan slot becomes `nbytes`. Traced, where no step uses the slot
    yet; or inside the trace's own extern step, which runs on the slot's bound (empty)
    storage: that grows too, and every later call makes the slot that big, so the
    extern's resize_ then changes only the shape. After a graph break (the plan's
    fallback set: the call goes on eagerly) the storage bound to the slot resizes like any
    other. Anywhere else (a lazy tensor that escaped its trace) it is refused, as before."""
    state = tracestate.state
    if state.trace is not None:
        return state.trace.grow_unwritten(storage, nbytes)
    call = storage.call
    eager = call.plan.fallback is not None
    if eager:
        bound = call.storage(storage.index)
    elif call is state.extern_call:
        bound = call.bound[storage.index]
        if storage.nbytes or bound is None or bound.nbytes or not is_resizable(bound):
            return False
    else:
        return False
    resize_storage(bound, nbytes)
    if not eager:
        call.plan.slots[storage.index].grow(nbytes)
    storage.nbytes = nbytes
    return True


def _grow(storage: Storage, nbytes: int) -> None:
    """Give `storage` a block of `nbytes` (more than its old block's: no view made before
    reaches past it) starting with its old bytes, which every tensor over it then sees; the
    old block is freed, or kept with the storage when NumPy or DLPack holds it
    (Storage.take_block). Pinned host memory stays pinned."""
    new = Storage.pinned(nbytes) if storage.is_pinned else Storage(nbytes, storage.device)
    if storage.nbytes:
        trace = tracestate.state.trace
        if trace is not None:  # a compiled function grows an argument: copy now, not later
            trace.flush()  # the writes it recorded so far land in the old block first
            tracestate.state.trace = None
        try:
            eager.copy_into(_byte_impl(new, 0, storage.nbytes), _byte_impl(storage))
        finally:
            tracestate.state.trace = trace
    storage.take_block(new)


def is_resizable(storage: Storage) -> bool:
    """Whether resize_ may change the size: kael's own memory, on either device (GPU memory
    counts as shared, yet PyTorch resizes it), but no host shared mapping, external memory
    or a traced tensor's unplaced memory."""
    return not (storage.is_external or storage.lazy or _in_shared_mapping(storage))


def _in_shared_mapping(storage: Storage) -> bool:
    """Whether share_memory_ moved the host bytes into a shared mapping (or marked an empty
    storage shared)."""
    owner = storage.owner
    return isinstance(owner, mmap.mmap) or owner is _SHARED_EMPTY


def is_shared_storage(storage: Storage) -> bool:
    """Whether the bytes are in shared memory: a shared mapping's, or any GPU memory (which
    PyTorch counts as shared: another process reaches it through IPC)."""
    return storage.device is not CPU or _in_shared_mapping(storage)


def share_storage(storage: Storage) -> None:
    """Move host bytes into an anonymous MAP_SHARED mapping that every tensor over `storage`
    then uses (fork children inherit it); freed when its last process lets it go. A no-op
    for a GPU storage and one already shared; an empty one is only marked shared."""
    if is_shared_storage(storage):
        return
    if not storage.nbytes:  # nothing to move: marked shared, as PyTorch reports it
        storage.owner = _SHARED_EMPTY
        return
    if storage.lazy:
        raise Error("share_memory_(): a traced tensor's memory is not placed yet")
    nbytes = storage.nbytes
    # as big as the old block: views made before a shrink (resize_storage) reach past nbytes
    mapping = mmap.mmap(-1, max(nbytes, storage.capacity), flags=mmap.MAP_SHARED)
    ptr = _address(mapping)
    shared = Storage.external(ptr, nbytes, mapping, CPU)
    eager.copy_into(_byte_impl(shared), _byte_impl(storage))
    storage.move_into(shared)


def _address(mapping: mmap.mmap) -> int:
    """The address of a mapping's first byte (the buffer export ends with this call)."""
    view = ctypes.c_char.from_buffer(mapping)
    try:
        return ctypes.addressof(view)
    finally:
        del view


class UntypedStorage:
    """PyTorch's UntypedStorage: a tensor's bytes on its device. UntypedStorage(n) is n new
    (uninitialised) bytes, UntypedStorage(sequence) holds those byte values."""

    __slots__ = ("_storage", "__weakref__")

    def __init__(self, *args, device: Device | str | None = None) -> None:
        device = CPU if device is None else parse_device(device)
        self._storage = _new_storage(args, device)
        _wrappers[id(self._storage)] = self

    @classmethod
    def of(cls, storage: Storage) -> UntypedStorage:
        """The wrapper over `storage` (the live one if any, so `a is b` for one storage)."""
        found = _wrappers.get(id(storage))
        if found is not None and found._storage is storage:
            return found
        self = cls.__new__(cls)
        self._storage = storage
        _wrappers[id(storage)] = self
        return self

    # ---- queries ---------------------------------------------------------------------------

    def nbytes(self) -> int:
        return self._storage.nbytes

    def size(self) -> int:
        """The number of bytes (an untyped storage's elements are bytes)."""
        return self._storage.nbytes

    def __len__(self) -> int:
        return self._storage.nbytes

    def element_size(self) -> int:
        return 1

    def data_ptr(self) -> int:
        """The address of the first byte: one for every tensor over this storage."""
        return self._storage.ptr

    @property
    def device(self) -> Device:
        return self._storage.device

    @property
    def is_cuda(self) -> bool:
        return self._storage.device is not CPU

    def is_pinned(self) -> bool:
        return self._storage.is_pinned

    def is_shared(self) -> bool:
        """Whether the bytes are in shared memory (always True on a GPU, as PyTorch says)."""
        return is_shared_storage(self._storage)

    def resizable(self) -> bool:
        """Whether resize_ may change the size: kael's own host memory, unless shared, or GPU
        memory."""
        return is_resizable(self._storage)

    # ---- bytes -----------------------------------------------------------------------------

    def _index(self, index, wrap: bool = True) -> int:
        """A byte index, negative ones from the end when `wrap` (reads; PyTorch's writes
        take none); IndexError past either end, naming the wrapped index as PyTorch does."""
        if isinstance(index, bool) or not hasattr(index, "__index__") or isinstance(index, Tensor):
            raise TypeError(f"can't index a kael.UntypedStorage with {type(index).__name__}")
        size = self._storage.nbytes
        i = operator.index(index)
        if i < 0 and wrap:
            i += size
        if not 0 <= i < size:
            raise IndexError(f"index {i} out of range for storage of size {size}")
        return i

    def _span(self, key: slice) -> tuple[int, int]:
        """A slice's first byte and count; only a step of 1, as PyTorch allows."""
        start, stop, step = key.indices(self._storage.nbytes)
        if step != 1:
            raise Error(f"Trying to slice with a step of {step}, but only a step of 1 is supported")
        return start, max(stop - start, 0)

    def __getitem__(self, key) -> int | UntypedStorage:
        """A byte's value (an int), or a slice's bytes as a storage over the same memory."""
        if isinstance(key, slice):
            start, count = self._span(key)
            storage = self._storage
            storage.exported = True  # the slice's address must outlive a move of the block
            if not count:
                return UntypedStorage(0, device=storage.device)
            return UntypedStorage.of(
                Storage.external(storage.ptr + start, count, storage, storage.device)
            )
        return Tensor(_byte_impl(self._storage, self._index(key), 1)).tolist()[0]

    def __setitem__(self, key, value) -> None:
        """Set one byte, or every byte of a slice, to an int (wrapped modulo 256)."""
        byte = _byte_value(
            value, "can only set storage content with a int types, but got {} instead"
        )
        if isinstance(key, slice):
            start, count = self._span(key)
        else:
            start, count = self._index(key, wrap=False), 1
        if count:
            eager.fill(_byte_impl(self._storage, start, count), byte)
            self._storage.bump_version()

    def tolist(self) -> list[int]:
        """The byte values as Python ints."""
        return Tensor(_byte_impl(self._storage)).tolist()

    def fill_(self, value) -> UntypedStorage:
        """Set every byte to an int (wrapped modulo 256); returns self."""
        byte = _byte_value(value, "fill_ expects int, but got {}")
        if self._storage.nbytes:
            eager.fill(_byte_impl(self._storage), byte)
            self._storage.bump_version()
        return self

    def copy_(self, src: UntypedStorage, non_blocking: bool = False) -> UntypedStorage:
        """Write src's bytes over self's (one size; either device); returns self."""
        if not isinstance(src, UntypedStorage):
            raise TypeError(
                "copy_(): argument 'src' (position 1) must be kael.UntypedStorage, not"
                f" {type(src).__name__}"
            )
        mine, theirs = self._storage, src._storage
        if mine.nbytes != theirs.nbytes:
            raise Error(
                f"size does not match, self was {mine.nbytes} bytes but src was"
                f" {theirs.nbytes} bytes"
            )
        if mine.nbytes:
            source = _byte_impl(theirs)
            if theirs.device is not mine.device:
                source = transfer_impl(source, mine.device)
            elif theirs.overlaps(mine):
                source = _copied(source)
            eager.copy_into(_byte_impl(mine), source)
            mine.bump_version()
        return self

    def clone(self) -> UntypedStorage:
        """A new storage with a copy of these bytes, on the same device."""
        return self._on(self._storage.device, always=True)

    def cpu(self) -> UntypedStorage:
        """Self on the host; a host copy of a GPU storage."""
        return self._on(CPU)

    def cuda(self) -> UntypedStorage:
        """Self on the GPU; a GPU copy of a host storage."""
        return self._on(CUDA)

    def _on(self, device: Device, always: bool = False) -> UntypedStorage:
        """The bytes on `device`: self when already there (unless `always`), else a copy."""
        storage = self._storage
        if storage.device is device and not always:
            return self
        copy = UntypedStorage(storage.nbytes, device=device)
        return copy.copy_(self)

    def resize_(self, size) -> UntypedStorage:
        """Change the size in bytes, keeping the first bytes (new ones uninitialised); a
        shared or external storage cannot be resized. Returns self."""
        resize_storage(self._storage, _size_arg(size, "resize_"))
        return self

    def share_memory_(self) -> UntypedStorage:
        """Move the bytes into shared memory (a no-op on a GPU or when already shared)."""
        share_storage(self._storage)
        return self

    def __repr__(self) -> str:
        storage = self._storage
        return f"kael.UntypedStorage(nbytes={storage.nbytes}, device={storage.device})"


def _copied(impl: TensorImpl) -> TensorImpl:
    """A copy of impl's bytes in new memory (copy_ between overlapping storages)."""
    out = _byte_impl(Storage(impl.shape[0], impl.device))
    eager.copy_into(out, impl)
    return out


def _new_storage(args: tuple, device: Device) -> Storage:
    """The Storage behind UntypedStorage(), (n) or (sequence of byte values)."""
    if len(args) > 1:
        raise TypeError(f"UntypedStorage() takes at most 1 argument ({len(args)} given)")
    if not args:
        return Storage(0, device)
    arg = args[0]
    if isinstance(arg, Sequence) and not isinstance(arg, str | bytes):
        return _storage_of_values(arg, device)
    if isinstance(arg, bool) or not hasattr(arg, "__index__"):
        raise TypeError(
            f"kael.UntypedStorage(): Expected a sequence type, but got {type(arg).__name__}"
        )
    return Storage(_size_arg(arg, "kael.UntypedStorage()"), device)


def _storage_of_values(values: Sequence, device: Device) -> Storage:
    """A storage holding byte values (ints, wrapped modulo 256)."""
    from kael.frontend import factories  # it imports tensor.py, which this module is beside

    for item in values:
        if not isinstance(item, int):
            raise TypeError(
                "kael.UntypedStorage(): tried to construct a storage from a sequence"
                f" ({type(values).__name__}), but one of the items was of type"
                f" {type(item).__name__} instead of int"
            )
    data = factories.tensor([v % 256 for v in values], dtype=uint8, device=device)
    return data._impl.storage
