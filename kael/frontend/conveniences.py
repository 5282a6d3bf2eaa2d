"""torch.NAME utilities outside the op families: asarray, frombuffer, typename, is_storage,
set_printoptions (its state lives in printing.py), the float32 matmul precision switch, and
the Python-callable Tensor methods apply_ and map_."""

from __future__ import annotations

import builtins
from collections.abc import Callable

import numpy as np

from kael.frontend import factories, interop, printing
from kael.frontend.outputs import int_arg, tensor_arg
from kael.frontend.tensor import Tensor
from kael.frontend.tracing import op_door
from kael.runtime import dtypes, user_warning
from kael.runtime.convert import convert_scalar
from kael.runtime.device import CPU, parse_device
from kael.runtime.dtypes import INT64_MAX, INT64_MIN, as_dtype
from kael.runtime.errors import Error, TypeError, ValueError
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl

# ---- asarray and frombuffer ------------------------------------------------------------------


def _has_buffer(obj) -> bool:
    """Whether obj implements Python's buffer protocol."""
    try:
        memoryview(obj).release()
    except builtins.TypeError:
        return False
    return True


def _buffer_bytes(buffer, op: str) -> np.ndarray:
    """The buffer's bytes as a uint8 array over its memory (I/O glue: no copy)."""
    if not _has_buffer(buffer):
        raise ValueError(f"{op}(): object does not implement Python buffer protocol.")
    try:
        return np.frombuffer(buffer, np.uint8)
    except (BufferError, builtins.ValueError):
        raise Error(
            f"{op}(): could not retrieve buffer from object: its memory is not C-contiguous"
        ) from None


def _byte_window(length: int, itemsize: int, count: int, offset: int) -> int:
    """How many elements of `itemsize` bytes a window of `count` (-1 or less: all) starting
    `offset` bytes into `length` bytes holds; torch's errors for a window outside them."""
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(
            f"offset ({offset} bytes) must be non-negative and no greater than buffer length"
            f" ({length} bytes) minus 1"
        )
    if count < 0:
        if (length - offset) % itemsize:
            raise ValueError(
                f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be"
                f" a multiple of element size ({itemsize})"
            )
        return (length - offset) // itemsize
    if offset + count * itemsize > length:
        raise ValueError(
            f"requested buffer length ({count} * {itemsize} bytes) after offset ({offset} bytes)"
            f" must not be greater than actual buffer length ({length} bytes)"
        )
    return count


def _warn_not_writable() -> None:
    user_warning.warn(
        "The given buffer is not writable, and kael does not support non-writable tensors."
        " This means you can write to the underlying (supposedly non-writable) buffer using"
        " the tensor. You may want to copy the buffer to protect its data or make it writable"
        " before converting it to a tensor.",
        UserWarning,
    )


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0, requires_grad=False) -> Tensor:
    """torch.frombuffer: a 1-d CPU tensor over `count` elements of a Python buffer from byte
    `offset` on, sharing its memory (writes show through both ways; a read-only buffer warns).

    The first element must sit at an address aligned to the element size (kael's kernels
    load whole elements): an offset that is not refuses, where torch would read unaligned.
    """
    factories.refuse_grad(requires_grad, "frombuffer")
    dtype = as_dtype(dtype)
    count = int_arg(count, "frombuffer", "count")
    offset = int_arg(offset, "frombuffer", "offset")
    raw = _buffer_bytes(buffer, "frombuffer")
    n = _byte_window(raw.size, dtype.itemsize, count, offset)
    address = raw.ctypes.data + offset
    if address % dtype.itemsize:
        raise ValueError(
            f"frombuffer(): the data at offset {offset} bytes is not aligned to the element size"
            f" ({dtype.itemsize}) of {dtype}; kael's kernels need aligned elements"
        )
    if not raw.flags.writeable:
        _warn_not_writable()
    storage = Storage.external(address, n * dtype.itemsize, raw, CPU)
    return Tensor(TensorImpl(storage, (n,), (1,), 0, dtype, CPU))


def _shared(obj, dtype) -> Tensor | None:
    """A tensor over obj's own memory (a tensor, a NumPy array, a DLPack producer, a Python
    buffer read as `dtype` or the default dtype), or None for Python data to copy."""
    if isinstance(obj, Tensor):
        return obj
    if isinstance(obj, np.ndarray):
        return Tensor(interop.from_numpy_impl(obj))
    if isinstance(obj, np.generic):
        return None
    foreign = factories.foreign_impl(obj)  # detached, torch's conj/neg bits resolved
    if foreign is not None:
        return Tensor(foreign)
    if not _has_buffer(obj):
        return None
    return frombuffer(obj, dtype=dtype or dtypes.get_default_dtype())


def _alias_problem(shared: Tensor, dtype, device) -> str | None:
    """Why `shared` cannot be returned as is for this dtype and device, or None."""
    if dtype is not None and dtype is not shared.dtype:
        return f"can't alias tensor with dtype '{shared.dtype}' into dtype '{dtype}'."
    if device is not None and parse_device(device) != shared.device:
        return f"can't alias tensor on device '{shared.device}' into device '{device}'."
    return None


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False) -> Tensor:
    """torch.asarray: obj as a tensor, sharing memory with a tensor, NumPy array, DLPack
    producer or Python buffer when dtype and device allow; Python data is copied.
    copy=True always copies; copy=False refuses (kael.ValueError) where a copy is needed."""
    factories.refuse_grad(requires_grad, "asarray")
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(
            f"asarray(): argument 'copy' must be bool or None, not {type(copy).__name__}"
        )
    dtype = None if dtype is None else as_dtype(dtype)
    shared = _shared(obj, dtype)
    if shared is None:
        if copy is False:
            if isinstance(obj, np.generic):
                raise ValueError(
                    "can't alias NumPy scalars. Either remove copy=False or transform it in a"
                    " ndarray."
                )
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        return factories.tensor(obj, dtype=dtype, device=device)
    problem = _alias_problem(shared, dtype, device)
    if problem is not None and copy is False:
        raise ValueError(problem)
    if problem is None:
        return shared.clone() if copy else shared
    return shared.to(dtype=dtype or shared.dtype, device=device)


# ---- names of types --------------------------------------------------------------------------


def typename(obj) -> str:
    """torch.typename: a tensor's type name ('kael.FloatTensor', as Tensor.type() spells it);
    for anything else its module-qualified name ('int', 'numpy.ndarray')."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        name = obj.__qualname__
    elif hasattr(obj, "__name__"):
        name = obj.__name__
    else:
        module, name = obj.__class__.__module__ or "", obj.__class__.__qualname__
    return name if module in ("", "builtins") else f"{module}.{name}"


def is_storage(obj) -> bool:
    """torch.is_storage: kael exposes no storage objects, so always False."""
    return False


# ---- float32 matmul precision ----------------------------------------------------------------

MATMUL_PRECISIONS = ("highest", "high", "medium")
_matmul_precision = "highest"


def get_float32_matmul_precision() -> str:
    """The float32 matmul precision last set ('highest' by default)."""
    return _matmul_precision


def set_float32_matmul_precision(precision: str) -> None:
    """Store torch's float32 matmul precision switch ('highest', 'high', 'medium'); another
    string warns and changes nothing, as torch. kael's CPU float32 matmul always computes
    in full float32 precision, whatever the setting."""
    global _matmul_precision
    if not isinstance(precision, str):
        raise TypeError(
            f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}"
        )
    if precision not in MATMUL_PRECISIONS:
        user_warning.warn(
            f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
            " set_float32_matmul_precision call has no effect.",
            UserWarning,
        )
        return
    _matmul_precision = precision


# ---- Python callables over elements ----------------------------------------------------------


def _cpu_only(self: Tensor, op: str) -> None:
    """PyTorch's refusal (a TypeError) of a Python callable over a device tensor's elements."""
    if self.device.type != "cpu":
        raise TypeError(f"{op} is only implemented on CPU tensors")


def _stored(value, dtype) -> bool | int | float:
    """A callable's result as a `dtype` element holds it, with torch's checked conversion
    (an int dtype refuses a float beyond int64 too)."""
    if dtype is dtypes.int64 and type(value) is float and not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"value {value} cannot be converted to int64 without overflow")
    return convert_scalar(value, dtype)


def _write_results(self: Tensor, results: list) -> Tensor:
    """Write the callable's results (in self's logical order) into self; self returned."""
    if results:
        values = factories.tensor([_stored(v, self.dtype) for v in results], dtype=self.dtype)
        self.copy_(values.view(self.shape))
    return self


def _values(t: Tensor) -> list:
    """t's elements as Python numbers, in logical (row-major) order."""
    return t.reshape(-1).tolist()


def _map_over(self: Tensor, op: str, others: dict[str, Tensor], callable: Callable) -> Tensor:
    """self[i] = callable(self[i], *(other[i] for other in others)), each other broadcast to
    self's shape and of self's dtype; a Python call per element, in row-major order."""
    tensor_arg(self, op, "self")
    _cpu_only(self, op)
    for name, other in others.items():
        tensor_arg(other, op, name)
        _cpu_only(other, op)
        if other.dtype is not self.dtype:
            raise TypeError(f"{op}(): expected {self.type()} for '{name}' (got {other.type()})")
    columns = [_values(t.expand(self.shape)) for t in (self, *others.values())]
    return _write_results(self, [callable(*row) for row in zip(*columns, strict=True)])


def apply_(self: Tensor, callable: Callable) -> Tensor:
    """torch.Tensor.apply_: every element x of self replaced by callable(x), called once per
    element in row-major order (a Python function per element is this method's contract)."""
    return _map_over(self, "apply_", {}, callable)


def map_(self: Tensor, tensor: Tensor, callable: Callable) -> Tensor:
    """torch.Tensor.map_: self[i] = callable(self[i], tensor[i]) with `tensor` broadcast to
    self's shape; `tensor` must have self's dtype."""
    return _map_over(self, "map_", {"tensor": tensor}, callable)


def map2_(self: Tensor, x: Tensor, y: Tensor, callable: Callable) -> Tensor:
    """torch.Tensor.map2_: self[i] = callable(self[i], x[i], y[i]), x and y as map_'s tensor."""
    return _map_over(self, "map2_", {"x": x, "y": y}, callable)


FUNCTIONS: dict[str, Callable] = {
    "asarray": op_door("asarray", asarray),
    "frombuffer": op_door("frombuffer", frombuffer),
    "typename": typename,
    "is_storage": is_storage,
    "set_printoptions": printing.set_printoptions,
    "get_float32_matmul_precision": get_float32_matmul_precision,
    "set_float32_matmul_precision": set_float32_matmul_precision,
}
METHODS: dict[str, Callable] = {  # Tensor methods (installed by kael/__init__.py)
    "apply_": op_door("apply_", apply_),
    "map_": op_door("map_", map_),
    "map2_": op_door("map2_", map2_),
}
