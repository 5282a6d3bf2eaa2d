"""NumPy and DLPack glue: zero-copy arrays over kael storage, and kael storage over arrays."""

from __future__ import annotations

import numpy as np

from kael.runtime import user_warning
from kael.runtime.device import CPU
from kael.runtime.dtypes import INT64_MAX, DType, from_numpy_dtype
from kael.runtime.errors import TypeError, ValueError
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl, contiguous_strides
from kael.runtime.tracestate import state as _trace_state


class _StorageArray:
    """Exposes one CPU impl through __array_interface__; NumPy keeps it as the array's base."""

    __slots__ = ("__array_interface__", "storage")

    def __init__(self, impl: TensorImpl) -> None:
        itemsize = impl.dtype.itemsize
        self.storage = impl.storage  # keeps the bytes alive as long as the array
        impl.storage.exported = True  # and a grown storage keeps these (take_block)
        self.__array_interface__ = {
            "version": 3,
            "shape": impl.shape,
            "typestr": impl.dtype.numpy.str,
            "data": (impl.data_ptr(), False),
            "strides": tuple(_byte_stride(s, itemsize) for s in impl.strides),
        }


def _byte_stride(stride: int, itemsize: int) -> int:
    """A NumPy byte stride. Validation bounds every stride that steps by the storage size, so
    one beyond int64 belongs to a dim that never steps (size 1, or an empty tensor's): 0."""
    nbytes = stride * itemsize
    return nbytes if nbytes <= INT64_MAX else 0


def numpy_view(impl: TensorImpl) -> np.ndarray:
    """A writable array over the impl's bytes (CPU only): same memory, NumPy byte strides."""
    trace = _trace_state.trace
    if trace is not None:
        trace.host_read("reading a tensor's values on the host")
    return np.asarray(_StorageArray(impl))


def numpy_dtype(arr: np.ndarray) -> DType | None:
    """The kael dtype of an array's elements, or None when kael has no such dtype."""
    try:
        return from_numpy_dtype(arr.dtype)
    except TypeError:
        return None


def numpy_problem(arr: np.ndarray) -> str | None:
    """Why `arr` cannot be shared as kael storage (its dtype aside), or None when it can."""
    if not arr.dtype.isnative:
        return f"numpy array has non-native byte order ({arr.dtype.str}); convert it first"
    if any(s < 0 for s in arr.strides):
        return (
            f"numpy array has negative strides {arr.strides}, which kael tensors do not support;"
            " make a copy with array.copy() first"
        )
    if any(s % arr.itemsize for s in arr.strides):
        return (
            f"numpy array strides {arr.strides} are not multiples of the element size"
            f" {arr.itemsize}; make a copy with array.copy() first"
        )
    return None


def from_numpy_impl(arr, warn_readonly: bool = True) -> TensorImpl:
    """An impl over the array's own memory, as external storage that keeps the array alive."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected a numpy.ndarray, got {type(arr).__name__}")
    dtype = from_numpy_dtype(arr.dtype)
    problem = numpy_problem(arr)
    if problem is not None:
        raise ValueError(problem)
    if warn_readonly and not arr.flags.writeable:
        user_warning.warn(
            "the given NumPy array is not writable; writing through the tensor would modify"
            " memory NumPy treats as read-only",
            UserWarning,
        )
    strides = tuple(s // arr.itemsize for s in arr.strides)
    nbytes = 0
    if arr.size:
        nbytes = (
            sum((n - 1) * s for n, s in zip(arr.shape, arr.strides, strict=True)) + arr.itemsize
        )
    storage = Storage.external(arr.ctypes.data, nbytes, arr, CPU)
    return TensorImpl(storage, arr.shape, strides, 0, dtype, CPU)


def host_buffer_impl(buffer, shape: tuple[int, ...], dtype) -> TensorImpl:
    """A contiguous CPU impl over a Python buffer (array.array) that it keeps alive."""
    address, length = buffer.buffer_info()
    storage = Storage.external(address, length * buffer.itemsize, buffer, CPU)
    return TensorImpl(storage, shape, contiguous_strides(shape), 0, dtype, CPU)
