"""DLPack both ways for CPU and cuda tensors of every kael dtype (bfloat16 included, which
NumPy's DLPack cannot carry): kael's own DLManagedTensor capsules, no copy either way.

Export: `Tensor.__dlpack__` hands out a "dltensor" capsule over the tensor's bytes; the
consumer calls its deleter when done, which drops the reference keeping the storage alive
(an unconsumed capsule calls it when it is collected). Import: `to_impl` reads a producer's
capsule, renames it "used_dltensor" as the protocol asks, and wraps the memory as external
Storage whose owner calls the producer's deleter when kael no longer needs it.
"""

from __future__ import annotations

import atexit
import ctypes

from kael.codegen.cpu import capsule as capsule_code
from kael.runtime import cuda_driver, dtypes, sync
from kael.runtime.device import CPU, CUDA, Device
from kael.runtime.dtypes import DType
from kael.runtime.errors import TypeError, ValueError
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl

KDL_CPU, KDL_CUDA = 1, 2
_INT, _UINT, _FLOAT, _BFLOAT, _COMPLEX, _BOOL = 0, 1, 2, 4, 5, 6
_CODES: dict[DType, int] = {
    dtypes.float32: _FLOAT,
    dtypes.float64: _FLOAT,
    dtypes.float16: _FLOAT,
    dtypes.bfloat16: _BFLOAT,
    dtypes.int64: _INT,
    dtypes.int32: _INT,
    dtypes.int16: _INT,
    dtypes.int8: _INT,
    dtypes.uint8: _UINT,
    dtypes.bool_: _BOOL,
    dtypes.complex64: _COMPLEX,
    dtypes.complex128: _COMPLEX,
}
_DTYPES = {(code, 8 * d.itemsize): d for d, code in _CODES.items()}
_NAME, _USED = b"dltensor", b"used_dltensor"
_VERSIONED_NAME = b"dltensor_versioned"  # DLPack 1.0: a version and flags (writable memory)


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _Device),
        ("ndim", ctypes.c_int32),
        ("dtype", _DataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _Managed(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Managed))
_Managed._fields_ = [
    ("dl_tensor", _Tensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _DELETER),
]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _Versioned(ctypes.Structure):
    pass


_VERSIONED_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Versioned))
_Versioned._fields_ = [
    ("version", _Version),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _VERSIONED_DELETER),
    ("flags", ctypes.c_uint64),
    ("dl_tensor", _Tensor),
]

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

# Exported tensors by the address of their DLManagedTensor: what keeps each one's memory
# (and its ctypes structures) alive until its deleter runs.
_exported: dict[int, tuple] = {}
_lock = sync.lock()


def _release(address: int, exported=_exported, lock=_lock) -> None:
    """Forget an export. The entry is dropped outside the lock: its storage may be an
    import of another kael export, whose deleter comes back here. (The table and lock
    are bound here: a deleter may run after this module's globals are cleared at exit.)"""
    with lock:
        entry = exported.pop(address, None)
    del entry


# The callbacks bind what they call: they may run after this module's names are cleared.
@_DELETER
def _delete(managed, release=_release, address_of=ctypes.addressof) -> None:
    release(address_of(managed.contents))


@_VERSIONED_DELETER
def _delete_versioned(managed, release=_release, address_of=ctypes.addressof) -> None:
    release(address_of(managed.contents))


_api.PyCapsule_SetContext.restype = ctypes.c_int
_api.PyCapsule_SetContext.argtypes = [ctypes.py_object, ctypes.c_void_p]

# The native destructor's context (codegen/cpu/capsule.py): filled at the first export.
_context = (ctypes.c_uint64 * capsule_code.WORDS)()
_destructor: list = []  # [its library, its address] once built


def _capsule_destructor() -> int:
    """The address of the destructor every kael capsule gets, built once: a capsule
    collected unconsumed still holds its tensor, which it releases (native code: the
    consumer may have left its error pending, capsule.py)."""
    if _destructor:
        return _destructor[1]
    with _lock:
        if not _destructor:
            table = _context
            table[capsule_code.FETCH] = ctypes.cast(_api.PyErr_Fetch, ctypes.c_void_p).value
            table[capsule_code.RESTORE] = ctypes.cast(_api.PyErr_Restore, ctypes.c_void_p).value
            table[capsule_code.CLASSIC_NAME] = ctypes.cast(_NAME, ctypes.c_void_p).value
            table[capsule_code.VERSIONED_NAME] = ctypes.cast(_VERSIONED_NAME, ctypes.c_void_p).value
            table[capsule_code.CLASSIC_DELETER] = _Managed.deleter.offset
            table[capsule_code.VERSIONED_DELETER] = _Versioned.deleter.offset
            library = capsule_code.destructor()
            _destructor.extend((library, library[capsule_code.SYMBOL].address))
    return _destructor[1]


def _outlive_shutdown(
    kept=(_exported, _lock, _delete, _delete_versioned, _destructor, _context, _release),
    incref=ctypes.pythonapi.Py_IncRef,
    py_object=ctypes.py_object,
) -> None:
    """Keep every export and the deleters for good once the interpreter exits: a consumer
    still held then (a torch tensor in a module global) calls its deleter, or reads its
    DLManagedTensor, while the exit's garbage collection tears modules down, after this
    module's table and callbacks would have been freed (a segfault at exit). The process
    is ending: the OS takes the memory back."""
    for obj in kept:
        incref(py_object(obj))


atexit.register(_outlive_shutdown)


def device_code(device: Device) -> tuple[int, int]:
    """A kael device as DLPack's (device type, id): (1, 0) for the host, (2, 0) for cuda."""
    return (KDL_CPU, 0) if device is CPU else (KDL_CUDA, device.index or 0)


def capsule(impl: TensorImpl, versioned: bool = False) -> object:
    """A capsule over impl's elements (on the host or the GPU) that keeps its storage alive:
    DLPack 1.0's "dltensor_versioned" (writable) when `versioned`, else the classic
    "dltensor"."""
    impl.storage.exported = True  # a grown storage keeps the block the capsule points at
    rank = len(impl.shape)
    shape = (ctypes.c_int64 * max(rank, 1))(*impl.shape)
    strides = (ctypes.c_int64 * max(rank, 1))(*impl.strides)
    dt = impl.dtype
    tensor = _Tensor(
        impl.data_ptr() or None,
        _Device(*device_code(impl.device)),
        rank,
        _DataType(_CODES[dt], 8 * dt.itemsize, 1),
        ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64)),
        ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64)),
        0,
    )
    if versioned:
        managed = _Versioned(_Version(1, 0), None, _delete_versioned, 0, tensor)
        name = _VERSIONED_NAME
    else:
        managed = _Managed(tensor, None, _delete)
        name = _NAME
    with _lock:
        _exported[ctypes.addressof(managed)] = (managed, shape, strides, impl.storage)
    made = _api.PyCapsule_New(ctypes.addressof(managed), name, _capsule_destructor())
    _api.PyCapsule_SetContext(made, ctypes.addressof(_context))
    return made


class _Producer:
    """Owner of imported memory: calls the producer's deleter when kael lets go of it."""

    __slots__ = ("managed",)

    def __init__(self, managed) -> None:
        self.managed = managed

    def __del__(self) -> None:
        deleter = self.managed.contents.deleter
        if deleter:
            deleter(self.managed)


def _device(device_type: int, device_id: int) -> Device:
    """The kael device of DLPack memory: the host, or the GPU (device 0, where kael has
    one); kael.TypeError for any other."""
    if device_type == KDL_CPU:
        return CPU
    if device_type == KDL_CUDA and device_id == 0 and cuda_driver.is_available():
        return CUDA
    raise TypeError(
        "from_dlpack takes host memory, or cuda:0's where kael has a GPU; got DLPack device"
        f" type {device_type}, id {device_id}"
    )


def to_impl(obj) -> TensorImpl:
    """An impl over the memory of any DLPack producer, or of a 'dltensor' capsule as
    torch.utils.dlpack.to_dlpack makes them (no copy), for every kael dtype, on the host or
    the GPU. A GPU producer is asked to order its work before this thread's current stream
    (1: the null stream, DLPack's number for it)."""
    if type(obj).__name__ == "PyCapsule":
        cap = obj
    elif hasattr(obj, "__dlpack__"):
        device = _device(*obj.__dlpack_device__())
        if device is CPU:
            cap = obj.__dlpack__()
        else:
            cap = obj.__dlpack__(stream=cuda_driver.stream_key(cuda_driver.current_stream()) or 1)
    else:
        raise TypeError(
            "from_dlpack expects an object with __dlpack__ or a DLPack capsule, got"
            f" {type(obj).__name__}"
        )
    if not _api.PyCapsule_IsValid(cap, _NAME):
        raise ValueError("from_dlpack expects an unconsumed 'dltensor' capsule")
    managed = ctypes.cast(_api.PyCapsule_GetPointer(cap, _NAME), ctypes.POINTER(_Managed))
    t = managed.contents.dl_tensor
    device = _device(t.device.device_type, t.device.device_id)  # a refused capsule stays whole
    _api.PyCapsule_SetName(cap, _USED)  # consumed: its deleter is kael's to call now
    owner = _Producer(managed)
    dtype = _DTYPES.get((t.dtype.code, t.dtype.bits))
    if dtype is None or t.dtype.lanes != 1:
        raise TypeError(
            f"from_dlpack: unsupported DLPack dtype (code {t.dtype.code}, {t.dtype.bits} bits,"
            f" {t.dtype.lanes} lanes)"
        )
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if t.strides:
        strides = tuple(t.strides[i] for i in range(t.ndim))
    else:  # NULL strides: compact row-major
        strides, step = [], 1
        for size in reversed(shape):
            strides.insert(0, step)
            step *= max(size, 1)
        strides = tuple(strides)
    if any(s < 0 for s in strides):
        raise ValueError(f"from_dlpack: negative strides {strides} are not supported")
    extent = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    address = (t.data or 0) + t.byte_offset
    storage = Storage.external(address, extent * dtype.itemsize, owner, device)
    return TensorImpl(storage, shape, strides, 0, dtype, device)
