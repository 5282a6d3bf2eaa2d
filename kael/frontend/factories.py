"""Factories: new tensors from sizes, ranges, Python data, NumPy arrays and DLPack producers."""

from __future__ import annotations

import array
import builtins
import functools
import math

import numpy as np

from kael.frontend import dlpack, eager, fastpath, interop, views
from kael.frontend.outputs import tensor_arg
from kael.frontend.tensor import Tensor, empty_impl
from kael.runtime import dtypes
from kael.runtime.device import CPU, Device, parse_device
from kael.runtime.dtypes import INT64_MAX, INT64_MIN, DType, as_dtype, scalar_dtype
from kael.runtime.errors import TypeError, ValueError
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl, check_rank
from kael.runtime.tracestate import state as _trace_state


def _device(device) -> Device:
    return CPU if device is None else parse_device(device)


def dtype_or(dtype, default: DType) -> DType:
    return default if dtype is None else as_dtype(dtype)


# exact-typed size arguments -> (checked shape, its dense strides, its element count)
_shapes: dict[tuple, tuple] = {}


def new_tensor(size: tuple, dtype: DType, device) -> Tensor:
    """An uninitialised tensor of the given sizes (varargs ints or one tuple or list)."""
    given = views.exact_key(size)
    known = None if given is None else _shapes.get(given)
    if known is None:
        shape = views.check_shape(views.parse_size(size))
        t = Tensor(empty_impl(shape, dtype, _device(device)))  # validated: dims, strides
        if given is not None and len(_shapes) < 4096 and t.numel():
            _shapes[given] = (shape, t._impl.strides, t.numel())
        return t
    shape, strides, n = known
    nbytes = n * dtype.itemsize
    if device is not None or _trace_state.trace is not None or nbytes > INT64_MAX:
        return Tensor(empty_impl(shape, dtype, _device(device)))
    storage = Storage.host(nbytes)
    return Tensor.trusted(TensorImpl.of_tuples(storage, shape, strides, 0, dtype, CPU))


def _filled(tensor: Tensor, value) -> Tensor:
    if not fastpath.fill(tensor._impl, value):
        eager.fill(tensor._impl, value)
    return tensor


def _python_number(value):
    """A Python bool, int or float for a number, NumPy scalar or 0-d tensor; None otherwise."""
    kind = type(value)
    if kind is builtins.float or kind is builtins.int or kind is builtins.bool:
        return value
    if getattr(value, "shape", None) == () and hasattr(value, "item"):
        value = value.item()
        return value if isinstance(value, (builtins.int, builtins.float)) else None
    if isinstance(value, builtins.float):
        return builtins.float(value)
    if isinstance(value, builtins.int):
        return builtins.int(value)
    return None


def as_number(value, what: str):
    """A Python number; TypeError naming `what` otherwise."""
    number = _python_number(value)
    if number is None:
        raise TypeError(f"{what} must be a number, got {type(value).__name__}")
    return number


def empty(*size, dtype=None, device=None) -> Tensor:
    """An uninitialised tensor (the default dtype unless told otherwise)."""
    return new_tensor(size, dtype_or(dtype, dtypes.get_default_dtype()), device)


def zeros(*size, dtype=None, device=None) -> Tensor:
    return _full_of(size, dtype, device, 0)


def ones(*size, dtype=None, device=None) -> Tensor:
    return _full_of(size, dtype, device, 1)


def _full_of(size: tuple, dtype, device, value) -> Tensor:
    """A new tensor (the default dtype unless told otherwise) of `size` full of `value`; a size made
    before, on the host, takes one remembered fill (fastpath.full)."""
    if device is None:
        given = views.exact_key(size)
        known = None if given is None else _shapes.get(given)
        if known is not None:
            made = fastpath.full(
                known[0], dtypes.get_default_dtype() if dtype is None else as_dtype(dtype), value
            )
            if made is not None:
                return made
    return _filled(empty(*size, dtype=dtype, device=device), value)


def full(size, fill_value, *, dtype=None, device=None) -> Tensor:
    """Every element `fill_value`; the dtype follows the value's kind, as in PyTorch."""
    fill_value = as_number(fill_value, "fill_value")
    return _full_of((size,), dtype_or(dtype, scalar_dtype(fill_value)), device, fill_value)


def new_like(input, dtype, device, op: str = "new_like") -> Tensor:
    """An uninitialised contiguous tensor of input's shape (and dtype and device by default);
    kael.TypeError naming `op` when input is not a Tensor (callers that checked it pass none)."""
    t = tensor_arg(input, op)
    dtype = t.dtype if dtype is None else as_dtype(dtype)
    return Tensor(empty_impl(t.shape, dtype, t.device if device is None else parse_device(device)))


def empty_like(input: Tensor, *, dtype=None, device=None) -> Tensor:
    """An uninitialised contiguous tensor of input's shape (and dtype and device by default)."""
    return new_like(input, dtype, device, "empty_like")


def zeros_like(input: Tensor, *, dtype=None, device=None) -> Tensor:
    return _filled(new_like(input, dtype, device, "zeros_like"), 0)


def ones_like(input: Tensor, *, dtype=None, device=None) -> Tensor:
    return _filled(new_like(input, dtype, device, "ones_like"), 1)


def full_like(input: Tensor, fill_value, *, dtype=None, device=None) -> Tensor:
    t = new_like(input, dtype, device, "full_like")
    return _filled(t, as_number(fill_value, "fill_value"))


def arange(start, end=None, step=1, *, dtype=None, device=None) -> Tensor:
    """start, start + step, ... up to but excluding end: ceil((end - start) / step) values.

    Integer dtypes truncate start and step, but the count comes from the given values
    (chapter 02): arange(0.5, 3.5, 1.5, dtype=int64) is [0, 1].
    """
    if end is None:
        start, end = 0, start
    start, end, step = (
        as_number(v, n) for v, n in ((start, "start"), (end, "end"), (step, "step"))
    )
    exact = all(type(v) is not builtins.float for v in (start, end, step))
    dtype = dtype_or(dtype, dtypes.int64 if exact else dtypes.get_default_dtype())
    if dtype.is_bool:
        raise TypeError("arange does not support dtype bool")
    if not all(math.isfinite(v) for v in (start, end, step)):
        raise ValueError(f"arange needs finite values, got start={start}, end={end}, step={step}")
    if step == 0:
        raise ValueError(f"arange step must be non-zero, got step={step}")
    if (end - start) * step < 0:
        raise ValueError(f"arange step {step} points away from end: start={start}, end={end}")
    if exact:
        count = -((start - end) // step)
    else:
        quotient = (end - start) / step
        if not math.isfinite(quotient):
            raise ValueError(f"arange({start}, {end}, {step}) has too many elements")
        count = math.ceil(quotient)
    t = new_tensor((count,), dtype, device)
    eager.arange_into(t._impl, start, step)
    return t


def linspace(start, end, steps, *, dtype=None, device=None) -> Tensor:
    """`steps` evenly spaced values from start to exactly end, computed as PyTorch does
    (integer dtypes truncate them)."""
    start, end = as_number(start, "start"), as_number(end, "end")
    steps = views.as_int(steps, "steps")
    dtype = dtype_or(dtype, dtypes.get_default_dtype())
    if dtype.is_bool:
        raise TypeError("linspace does not support dtype bool")
    if steps < 0:
        raise ValueError(f"number of steps must be non-negative, got {steps}")
    t = new_tensor((steps,), dtype, device)
    eager.linspace_into(t._impl, builtins.float(start), builtins.float(end))
    return t


def eye(n, m=None, *, dtype=None, device=None) -> Tensor:
    """An n x m matrix with ones on the diagonal (m defaults to n)."""
    n = views.as_int(n, "n")
    m = n if m is None else views.as_int(m, "m")
    for name, v in (("n", n), ("m", m)):
        if v < 0:
            raise ValueError(f"{name} must be greater or equal to 0, got {v}")
    t = new_tensor((n, m), dtype_or(dtype, dtypes.get_default_dtype()), device)
    eager.eye_into(t._impl)
    return t


def scalar_tensor(s, *, dtype=None, device=None) -> Tensor:
    """A 0-d tensor holding the number `s` (the default dtype unless told otherwise)."""
    t = new_tensor(((),), dtype_or(dtype, dtypes.get_default_dtype()), device)
    return _filled(t, as_number(s, "s"))


def from_numpy(arr: np.ndarray) -> Tensor:
    """A CPU tensor over the array's memory (no copy); the tensor keeps the array alive."""
    return Tensor(interop.from_numpy_impl(arr))


def from_dlpack(obj) -> Tensor:
    """A CPU tensor over the memory of a DLPack producer (no copy; every kael dtype)."""
    if isinstance(obj, Tensor):
        return obj.detach()
    return Tensor(dlpack.to_impl(obj))


def as_tensor(data, *, dtype=None, device=None) -> Tensor:
    """`data` as a tensor, sharing memory when it already is one of that dtype and device."""
    if isinstance(data, Tensor):
        return data.to(dtype=dtype, device=device)
    if (
        isinstance(data, np.ndarray)
        and interop.numpy_dtype(data) is not None
        and interop.numpy_problem(data) is None
    ):
        return from_numpy(data).to(dtype=dtype, device=device)
    return tensor(data, dtype=dtype, device=device)


def tensor(data, *, dtype=None, device=None) -> Tensor:
    """A new tensor copied from nested sequences of numbers, a number, an array or a tensor.

    Python data is packed host-side into a float64 or int64 buffer and converted by the
    copy kernel, so saturation and bool normalisation follow the kernels' rules.
    """
    if isinstance(data, Tensor):
        out = data.to(dtype=dtype, device=device)
        return out.clone() if out.shares_storage(data) else out
    if isinstance(data, np.ndarray):
        known = interop.numpy_dtype(data)
        if known is not None and interop.numpy_problem(data) is None:
            shared = Tensor(interop.from_numpy_impl(data, warn_readonly=False))
            return tensor(shared, dtype=dtype, device=device)
        # Other layouts and dtypes are read out as Python numbers: I/O, not arithmetic.
        dtype = known if dtype is None else dtype
        data = data.tolist()
    shape, flat, kind = _scan(data)
    wide = dtypes.float64 if kind.is_floating_point else dtypes.int64
    packed = array.array("d" if wide is dtypes.float64 else "q", flat)
    source = interop.host_buffer_impl(packed, shape, wide)
    out = empty_impl(shape, dtype_or(dtype, kind), CPU)
    eager.copy_into(out, source)
    return Tensor(out).to(device=_device(device))


def _scan(data) -> tuple[tuple[int, ...], list, DType]:
    """The shape, the values in row-major order, and the inferred dtype of nested data."""
    shape = []
    probe = data
    while isinstance(probe, (list, tuple)):
        shape.append(len(probe))
        if not probe:
            break
        probe = probe[0]
    check_rank(shape)  # before the walk, which recurses once per dim
    flat: list = []
    kinds = set()
    _collect(data, shape, 0, [], flat, kinds)
    # promote_types over the leaves' dtypes, as torch.tensor infers; no leaves: the default
    kind = functools.reduce(dtypes.promote_types, kinds) if kinds else dtypes.get_default_dtype()
    if kind is dtypes.int64:
        for i, v in enumerate(flat):
            if not INT64_MIN <= v <= INT64_MAX:
                position = _position_of(i, shape)
                raise ValueError(f"value {v} at position {position} is out of the range of int64")
    return tuple(shape), flat, kind


def _collect(data, shape: list, dim: int, position: list, flat: list, kinds: set) -> None:
    """Append the numbers of `data` to flat, checking every sequence against `shape`."""
    if dim == len(shape):
        if isinstance(data, (list, tuple)):
            raise ValueError(
                f"expected a number at position {position}, got a sequence of length {len(data)}"
            )
        value = _number_at(data, position)
        kinds.add(_numpy_scalar_dtype(data) or dtypes.scalar_dtype(value))
        flat.append(value)
        return
    if not isinstance(data, (list, tuple)):
        raise ValueError(
            f"expected a sequence of length {shape[dim]} at dim {dim} (position {position}),"
            f" got {type(data).__name__}"
        )
    if len(data) != shape[dim]:
        raise ValueError(
            f"expected sequence of length {shape[dim]} at dim {dim} (got {len(data)})"
            f" at position {position}"
        )
    for i, item in enumerate(data):
        _collect(item, shape, dim + 1, [*position, i], flat, kinds)


def _numpy_scalar_dtype(value) -> DType | None:
    """A NumPy scalar's own dtype (np.float64(1.5) is float64, np.int8(1) int8), where kael
    has it: torch.tensor keeps it, as it keeps an array's."""
    if not isinstance(value, np.generic):
        return None
    try:
        return dtypes.from_numpy_dtype(value.dtype)
    except TypeError:
        return None


def _number_at(value, position: list):
    """A leaf of nested data as a Python number; TypeError naming its position otherwise."""
    number = _python_number(value)
    if number is None:
        raise TypeError(
            f"tensor() expects numbers, got {type(value).__name__} at position {position}"
        )
    return number


def _position_of(index: int, shape: list) -> list[int]:
    """The multi-index of the flat row-major position `index`."""
    position = []
    for size in reversed(shape):
        index, i = divmod(index, size)
        position.append(i)
    return position[::-1]
