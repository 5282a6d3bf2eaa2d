"""Factories: new tensors from sizes, ranges, Python data, NumPy arrays and DLPack producers."""

from __future__ import annotations

import array
import builtins
import functools
import math
import threading
from collections.abc import Callable

import numpy as np

from kael.frontend import dlpack, eager, fastpath, interop, memory_formats, outputs, views
from kael.frontend.outputs import tensor_arg
from kael.frontend.tensor import Size, Tensor, empty_impl, strided
from kael.runtime import dtypes
from kael.runtime.convert import CHECKED, convert_scalar, to_half_precision
from kael.runtime.device import CPU, Device, parse_device
from kael.runtime.dtypes import INT64_MAX, INT64_MIN, DType, as_dtype, scalar_dtype
from kael.runtime.errors import Error, TypeError, UnsupportedDtype, ValueError
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl, check_rank
from kael.runtime.tracestate import state as _trace_state
from kael.runtime.typeinfo import finfo


class _Default(threading.local):
    """set_default_device's choice, per thread as PyTorch keeps it; None is the CPU (a class
    attribute: a thread that never set one reads it without a lookup miss)."""

    device: Device | None = None


DEFAULT = _Default()  # read directly by hot paths (compiled calls)


def set_default_device(device) -> None:
    """Make the public creation functions called without device= (ON_DEFAULT_DEVICE: empty,
    zeros, arange, tensor, rand, ...) create on `device` in this thread; None restores the
    CPU. *_like factories and methods of a tensor keep following that tensor's device."""
    device = None if device is None else parse_device(device)
    DEFAULT.device = None if device is CPU else device  # the CPU is no default: it is kael's


def get_default_device() -> Device:
    """The device factories create on when given none: set_default_device's, else the CPU."""
    return default_device() or CPU


def default_device() -> Device | None:
    """The device set_default_device chose in this thread (None when never set or reset)."""
    return DEFAULT.device


# The public creation functions (kael.NAME) that take the default device when given none,
# as PyTorch's device context injects it; kael's own code calls the plain functions, whose
# device is the CPU unless given, so a set default never moves an op's working tensors.
ON_DEFAULT_DEVICE = (
    "arange", "as_tensor", "asarray", "bartlett_window", "blackman_window", "empty",
    "empty_strided", "eye", "full", "hamming_window", "hann_window", "kaiser_window",
    "linspace", "logspace", "normal", "ones", "rand", "randint", "randn", "randperm", "range",
    "scalar_tensor", "tensor", "tril_indices", "triu_indices", "zeros",
)  # fmt: skip


# torch's *_like creators and Tensor.new_* methods: they take the creation keywords too,
# but follow their tensor's device, not the default one.
TAKES_CREATION_KEYWORDS = (
    "empty_like", "full_like", "ones_like", "rand_like", "randint_like", "randn_like",
    "zeros_like",
)  # fmt: skip
NEW_METHODS = ("new_empty", "new_empty_strided", "new_full", "new_ones", "new_tensor", "new_zeros")
_CREATION_KEYWORDS = frozenset({"requires_grad", "layout", "pin_memory"})


def _flag(kwargs: dict, name: str, op: str) -> bool:
    value = kwargs.pop(name, False)
    if value is None:  # torch reads None as the default, False
        return False
    if type(value) is not bool:
        raise TypeError(f"{op}(): argument '{name}' must be bool, not {type(value).__name__}")
    return value


def refuse_grad(requires_grad, op: str) -> None:
    """requires_grad=True refused: kael has no autograd yet (as Tensor.requires_grad_)."""
    if requires_grad:
        raise Error(f"{op}(): requires_grad=True: kael has no autograd yet")


def _creation_keywords(kwargs: dict, op: str) -> bool:
    """Take torch's creation keywords kael has no other use for out of kwargs:
    requires_grad=False (True refused: no autograd yet), layout=kael.strided (the only
    layout) and pin_memory; returns whether the result is to be pinned."""
    refuse_grad(_flag(kwargs, "requires_grad", op), op)
    layout = kwargs.pop("layout", None)
    if layout is not None and layout is not strided:
        raise ValueError(f"{op}(): kael tensors are all strided, got layout={layout!r}")
    return _flag(kwargs, "pin_memory", op)


def on_default_device(fn, default: bool = True):
    """The public form of a creation function: called without device=, it creates on
    set_default_device's device when one is set in this thread (`default`); it takes
    torch's requires_grad=, layout= and pin_memory= (_creation_keywords)."""
    op = getattr(fn, "__name__", "factory")

    @functools.wraps(fn)
    def public(*args, **kwargs):
        device = DEFAULT.device if default else None  # None nearly always (kael.zeros: +0.2 us)
        if device is not None and kwargs.get("device") is None:
            kwargs["device"] = device
        if not kwargs or _CREATION_KEYWORDS.isdisjoint(kwargs):
            return fn(*args, **kwargs)
        pin = _creation_keywords(kwargs, op)
        out = fn(*args, **kwargs)
        return out.pin_memory() if pin else out

    return public


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
    """A Python bool, int, float or complex for a number, NumPy scalar or 0-d tensor; None
    otherwise."""
    kind = type(value)
    if kind is builtins.float or kind is builtins.int or kind is builtins.bool:
        return value
    if getattr(value, "shape", None) == () and hasattr(value, "item"):
        value = value.item()
        number = (builtins.int, builtins.float, builtins.complex)
        return value if isinstance(value, number) else None
    if isinstance(value, builtins.float):
        return builtins.float(value)
    if isinstance(value, builtins.int):
        return builtins.int(value)
    if isinstance(value, builtins.complex):
        return builtins.complex(value)
    return None


def as_number(value, what: str):
    """A Python number; TypeError naming `what` otherwise."""
    number = _python_number(value)
    if number is None:
        raise TypeError(f"{what} must be a number, got {type(value).__name__}")
    return number


def check_allocatable(shape: tuple[int, ...], dtype: DType, device) -> None:
    """Fail now, with empty()'s typed error, where a result of `shape` cannot exist (its
    element count overflows int64, or the memory is not there): for ops that build per-output
    tables first (interpolate's taps, adaptive pools' windows), which a mistyped size of
    10**10 would otherwise spend minutes on. Shapes under 1 GiB are not tried."""
    numel = math.prod(shape)
    if numel * dtype.itemsize > 1 << 30:
        del empty_impl(shape, dtype, _device(device)).storage


def empty(*size, dtype=None, device=None, memory_format=None) -> Tensor:
    """An uninitialised tensor (the default dtype unless told otherwise), row-major or laid
    out in `memory_format` (contiguous_format, channels_last or channels_last_3d)."""
    fmt = None if memory_format is None else memory_formats.new_format(memory_format, "empty")
    t = new_tensor(size, dtype_or(dtype, dtypes.get_default_dtype()), device)
    if fmt is None or fmt is memory_formats.contiguous_format:
        return t
    return Tensor(memory_formats.restrided(t._impl, memory_formats.format_strides(t.shape, fmt)))


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


def new_like(
    input, dtype, device, op: str = "new_like", memory_format=memory_formats.contiguous_format
) -> Tensor:
    """An uninitialised tensor of input's shape (and dtype and device by default) laid out in
    `memory_format` (None: preserve_format, the public *_like default); kael.TypeError naming
    `op` when input is not a Tensor (callers that checked it pass none)."""
    t = tensor_arg(input, op)
    fmt = memory_formats.format_arg(memory_format, op, optional=True)
    strides = memory_formats.layout_for(t._impl, fmt)
    dtype = t.dtype if dtype is None else as_dtype(dtype)
    new = empty_impl(t.shape, dtype, t.device if device is None else parse_device(device))
    return Tensor(memory_formats.restrided(new, strides))


def empty_like(input: Tensor, *, dtype=None, device=None, memory_format=None) -> Tensor:
    """An uninitialised tensor of input's shape (and dtype and device by default), laid out
    as input is unless memory_format says otherwise (torch's preserve_format)."""
    return new_like(input, dtype, device, "empty_like", memory_format)


def zeros_like(input: Tensor, *, dtype=None, device=None, memory_format=None) -> Tensor:
    return _filled(new_like(input, dtype, device, "zeros_like", memory_format), 0)


def ones_like(input: Tensor, *, dtype=None, device=None, memory_format=None) -> Tensor:
    return _filled(new_like(input, dtype, device, "ones_like", memory_format), 1)


def full_like(input: Tensor, fill_value, *, dtype=None, device=None, memory_format=None) -> Tensor:
    t = new_like(input, dtype, device, "full_like", memory_format)
    return _filled(t, as_number(fill_value, "fill_value"))


def arange(start, end=None, step=1, *, dtype=None, device=None) -> Tensor:
    """start, start + step, ... up to but excluding end: ceil((end - start) / step) values.

    Integer dtypes truncate start and step, but the count comes from the given values
    (chapter 02): arange(0.5, 3.5, 1.5, dtype=int64) is [0, 1].
    """
    if end is None:
        start, end = 0, start
    plain = dtype is None and device is None  # int64 on the CPU
    if plain and type(start) is int and type(end) is int and type(step) is int and step:
        count = _int_count(start, end, step)
        made = fastpath.arange(count, start, step) if count > 0 else None
        if made is not None:
            return made
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
        count = _int_count(start, end, step)
    else:
        quotient = (end - start) / step
        if not math.isfinite(quotient):
            raise ValueError(f"arange({start}, {end}, {step}) has too many elements")
        count = math.ceil(quotient)
    t = new_tensor((count,), dtype, device)
    eager.arange_into(t._impl, start, step)
    return t


def _int_count(start: int, end: int, step: int) -> int:
    """ceil((end - start) / step) of ints, exactly (negative when step points away)."""
    return -((start - end) // step)


def linspace(start, end, steps, *, dtype=None, device=None) -> Tensor:
    """`steps` evenly spaced values from start to exactly end, computed as PyTorch does
    (integer dtypes truncate them)."""
    start, end = as_number(start, "start"), as_number(end, "end")
    steps = views.as_int(steps, "steps")
    dtype = _spaced_dtype("linspace", start, end, dtype)
    if dtype.is_bool:
        raise UnsupportedDtype("linspace does not support dtype bool")
    if steps < 0:
        raise ValueError(f"number of steps must be non-negative, got {steps}")
    if dtype.is_complex:
        return _by_parts(linspace, start, end, steps, dtype, device)
    if dtype.is_floating_point and steps > 1:  # an end the dtype cannot hold: torch's check
        largest = finfo(dtype).max
        for value in (start, end):
            if math.isfinite(value) and abs(value) > largest:
                raise ValueError(
                    f"linspace: {value} cannot be converted to {dtype} without overflow"
                )
    t = new_tensor((steps,), dtype, device)
    eager.linspace_into(t._impl, builtins.float(start), builtins.float(end))
    return t


def _spaced_dtype(op: str, start, end, dtype) -> DType:
    """linspace's and logspace's dtype: the default float one, or the default complex one
    for a complex start or end, which a real dtype= refuses (as PyTorch does)."""
    ends = builtins.complex in (type(start), type(end))
    inferred = dtypes.get_default_complex_dtype() if ends else dtypes.get_default_dtype()
    dtype = dtype_or(dtype, inferred)
    if ends and not dtype.is_complex:
        raise TypeError(
            f"{op}(): inferred dtype {inferred} can't be safely cast to passed dtype {dtype}"
        )
    return dtype


def _by_parts(spaced: Callable, start, end, steps: int, dtype: DType, device) -> Tensor:
    """A complex linspace: the real parts' linspace and the imaginary parts'."""
    from kael.frontend.complex import complex as make

    start, end = builtins.complex(start), builtins.complex(end)
    part = dtype.to_real()
    re = spaced(start.real, end.real, steps, dtype=part, device=device)
    return make(re, spaced(start.imag, end.imag, steps, dtype=part, device=device))


def eye(n, m=None, *, out=None, dtype=None, device=None) -> Tensor:
    """An n x m matrix with ones on the diagonal (m defaults to n); into `out` (resized,
    its dtype unless one is given) as torch's."""
    n = views.as_int(n, "n")
    m = n if m is None else views.as_int(m, "m")
    for name, v in (("n", n), ("m", m)):
        if v < 0:
            raise ValueError(f"{name} must be greater or equal to 0, got {v}")
    if out is not None:
        from kael.frontend.outputs import output

        kind = dtype_or(dtype, getattr(out, "dtype", None))
        t = output(out, (n, m), kind, getattr(out, "device", None), "eye")
    else:
        t = new_tensor((n, m), dtype_or(dtype, dtypes.get_default_dtype()), device)
    if t.dtype.is_complex:  # ones on the real parts' diagonal, zero imaginary parts
        from kael.frontend import complex as cx

        eager.fill(t._impl, 0)
        eager.eye_into(cx.real(t)._impl)
        return t
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
    """A tensor over the memory of a DLPack producer, on the host or cuda:0 (no copy; every
    kael dtype)."""
    if isinstance(obj, Tensor):
        return obj.detach()
    try:
        return Tensor(dlpack.to_impl(obj))
    except (BufferError, builtins.ValueError, builtins.TypeError, RuntimeError) as e:
        if isinstance(e, Error):
            raise
        raise TypeError(f"from_dlpack: cannot read a {type(obj).__name__}: {e}") from None


def foreign_impl(data) -> TensorImpl | None:
    """An impl over another library's tensor (torch, JAX, CuPy: anything with __dlpack__),
    sharing its memory; None for anything else. A torch tensor that requires grad is read
    through its detach(), as torch.Tensor.numpy() asks."""
    if isinstance(data, (np.ndarray, type)) or not hasattr(data, "__dlpack__"):
        return None
    if getattr(data, "requires_grad", False) and hasattr(data, "detach"):
        data = data.detach()
    for resolve in ("resolve_conj", "resolve_neg"):  # torch's lazy bits DLPack cannot carry
        if hasattr(data, resolve):
            data = getattr(data, resolve)()
    try:
        return dlpack.to_impl(data)
    except (BufferError, builtins.ValueError, builtins.TypeError, RuntimeError) as e:
        if isinstance(e, Error):
            raise
        raise TypeError(f"cannot read a {type(data).__name__} through DLPack: {e}") from None


def as_tensor(data, *, dtype=None, device=None) -> Tensor:
    """`data` as a tensor, sharing memory when it already is one of that dtype and device."""
    if isinstance(data, Tensor):
        return data.to(dtype=dtype, device=device)
    foreign = foreign_impl(data)
    if foreign is not None:
        return Tensor(foreign).to(dtype=dtype, device=device)
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
    dtype = None if dtype is None else as_dtype(dtype)
    if isinstance(data, Tensor):
        out = data.to(dtype=dtype, device=device)
        return out.clone() if out.shares_storage(data) else out
    foreign = foreign_impl(data)
    if foreign is not None:
        return tensor(Tensor(foreign), dtype=dtype, device=device)
    if not isinstance(data, (np.ndarray, np.generic)) and hasattr(data, "__array__"):
        data = np.asarray(data)  # an image, a data frame: whatever NumPy can read
    if isinstance(data, np.ndarray):
        known = interop.numpy_dtype(data)
        if known is not None and interop.numpy_problem(data) is None:
            shared = Tensor(interop.from_numpy_impl(data, warn_readonly=False))
            return tensor(shared, dtype=dtype, device=device)
        # Other layouts and dtypes are read out as Python numbers: I/O, not arithmetic.
        dtype = known if dtype is None else dtype
        data = data.tolist()
    shape, flat, kind = _scan(data)
    if kind.is_complex and dtype is not None and not (dtype.is_complex or dtype.is_bool):
        raise TypeError(
            f"tensor(): a complex value cannot be stored in a {dtype} tensor: must be real"
            " number, not complex"
        )
    if kind.is_complex:  # (real, imag) pairs of float64, read as complex128
        from kael.frontend.complex import view_as_complex

        packed = array.array("d", (p for v in flat for p in (v.real, v.imag)))
        pairs = interop.host_buffer_impl(packed, (*shape, 2), dtypes.float64)
        source = view_as_complex(Tensor(pairs))._impl
    else:
        wide = dtypes.float64 if kind.is_floating_point else dtypes.int64
        packed = array.array("d" if wide is dtypes.float64 else "q", flat)
        source = interop.host_buffer_impl(packed, shape, wide)
    target = dtype_or(dtype, kind)
    if target is source.dtype:  # the buffer's own dtype: a copy into kael's memory
        made = fastpath.copy(Tensor(source))
    else:
        made = fastpath.converted(source, target)
    if made is None:
        out = empty_impl(shape, target, CPU)
        eager.copy_into(out, source)
        made = Tensor(out)
    return made.to(device=_device(device))


def _scan(data) -> tuple[tuple[int, ...], list, DType]:
    """The shape, the values in row-major order, and the inferred dtype of nested data."""
    shape = []
    probe = data
    while _is_sequence(probe):
        shape.append(len(probe))
        if not len(probe):
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
        if _is_sequence(data):
            raise ValueError(
                f"expected a number at position {position}, got a sequence of length {len(data)}"
            )
        if isinstance(data, np.ndarray):  # 0-d: its scalar, dtype and all
            data = data[()]
        if isinstance(data, Tensor):  # one element (0-d or not): its value and its dtype
            if data.numel() != 1:
                raise ValueError(
                    f"only one element tensors can be converted to Python scalars (the tensor"
                    f" at position {position} has shape {list(data.shape)})"
                )
            kinds.add(data.dtype)
            flat.append(data.reshape(()).item())
            return
        value = _number_at(data, position)
        kinds.add(_numpy_scalar_dtype(data) or dtypes.scalar_dtype(value))
        flat.append(value)
        return
    if not _is_sequence(data):
        raise ValueError(
            f"expected a sequence of length {shape[dim]} at dim {dim} (position {position}),"
            f" got {type(data).__name__}"
        )
    if len(data) != shape[dim]:
        raise ValueError(
            f"expected sequence of length {shape[dim]} at dim {dim} (got {len(data)})"
            f" at position {position}"
        )
    if dim == len(shape) - 1 and type(data) in (list, tuple) and data:
        kind = type(data[0])
        if (kind is float or kind is int) and all(type(v) is kind for v in data):
            flat.extend(data)  # a row of plain floats or ints: the leaves as they are
            kinds.add(dtypes.scalar_dtype(data[0]))
            return
    for i, item in enumerate(data):
        _collect(item, shape, dim + 1, [*position, i], flat, kinds)


def _is_sequence(data) -> bool:
    """Nested data's inner levels: lists, tuples, ranges, array.arrays (Python numbers, as
    torch.tensor reads them), and NumPy arrays of one or more dims (a list of arrays, as
    torch.tensor reads it: element by element, each keeping its dtype)."""
    return isinstance(data, _SEQUENCES) or (isinstance(data, np.ndarray) and data.ndim > 0)


_SEQUENCES = (list, tuple, range, array.array)


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


# ---- small utilities: torch.numel, is_tensor, clone, detach, broadcast_shapes, ... -------------


def _ew():
    from kael.frontend import elementwise  # imported here: elementwise's modules load later

    return elementwise


def _functions() -> dict:
    from kael.frontend import ops  # the public op table (imports every family)

    return ops.FUNCTIONS


def is_tensor(obj) -> bool:
    """Whether obj is a kael.Tensor (torch.is_tensor)."""
    return isinstance(obj, Tensor)


def numel(input) -> int:
    """The number of elements of a tensor (torch.numel)."""
    return tensor_arg(input, "numel").numel()


def clone(input, *, memory_format=None) -> Tensor:
    """A new tensor holding input's elements, laid out in the format (torch.clone; input's
    own layout where dense by default)."""
    return tensor_arg(input, "clone").clone(memory_format=memory_format)


def detach(input) -> Tensor:
    """A new tensor over input's storage (kael has no autograd: no graph to cut)."""
    return tensor_arg(input, "detach").detach()


def broadcast_shapes(*shapes) -> Size:
    """The shape tensors of these shapes broadcast to (torch.broadcast_shapes): each shape
    an int or a sequence of ints; ValueError for a negative size, and for sizes that do not
    broadcast naming the first that fails, as PyTorch does."""
    parsed = []
    for shape in shapes:
        if isinstance(shape, (tuple, list)):
            dims = tuple(views.as_int(d, "broadcast_shapes: size") for d in shape)
        else:
            dims = (views.as_int(shape, "broadcast_shapes: shape"),)
        if any(d < 0 for d in dims):
            raise ValueError("Attempting to broadcast a dimension with negative length!")
        parsed.append(dims)
    ndim = max((len(s) for s in parsed), default=0)
    result = [1] * ndim
    for index, dims in enumerate(parsed):
        for i in range(-1, -len(dims) - 1, -1):
            size = dims[i]
            if size == 1 or size == result[i]:
                continue
            if result[i] != 1:
                raise ValueError(
                    f"Attempting to broadcast a dimension of length {size} at {i}! Mismatching"
                    f" argument at index {index} had {tuple(dims)}; but expected shape should"
                    f" be broadcastable to {list(result)}"
                )
            result[i] = size
    return Size(result)


def can_cast(from_, to) -> bool:
    """Whether a value of dtype from_ may be cast to dtype to under PyTorch's casting rule:
    never a complex type to a real one, a floating type to an integral (or bool) one, nor a
    non-bool type to bool."""
    return outputs.can_cast(as_dtype(from_), as_dtype(to))


def rsub(input, other, *, alpha=1) -> Tensor:
    """other - alpha * input, broadcast (torch.rsub: input is a Tensor)."""
    input = tensor_arg(input, "rsub")
    ew = _ew()
    if not isinstance(other, Tensor) and ew.number_of(other) is None:
        raise TypeError(f"rsub: other must be a Tensor or a number, got {type(other).__name__}")
    if type(alpha) is int and alpha == 1:
        return ew.binary("sub", other, input)
    return ew.scaled("sub", other, input, alpha)


def unravel_index(indices, shape) -> tuple[Tensor, ...]:
    """The coordinates of flat `indices` in a tensor of `shape` (torch.unravel_index): one
    int64 tensor per dim, indices // stride % size as PyTorch computes it (so an index out
    of range wraps, and a negative one counts from the end, as there)."""
    indices = tensor_arg(indices, "unravel_index", "indices")
    if indices.dtype.is_floating_point or indices.dtype.is_bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if isinstance(shape, (tuple, list)):
        for dim in shape:
            if type(dim) is not int:
                raise TypeError(
                    f"expected 'shape' sequence to only contain ints, but got {type(dim)}"
                )
        dims = tuple(shape)
    elif type(shape) is int:
        dims = (shape,)
    else:
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    if any(d < 0 for d in dims):
        raise ValueError(f"'shape' cannot have negative values, but got {dims}")
    if not dims:
        return ()
    coefs = [1] * len(dims)
    for i in range(len(dims) - 2, -1, -1):
        coefs[i] = coefs[i + 1] * dims[i + 1]
    fns = _functions()
    indices = indices.to(dtype=dtypes.int64)  # PyTorch divides by an int64 tensor of strides
    out = []
    for coef, size in zip(coefs, dims, strict=True):
        at = indices.device  # the 0-d divisors live where the indices do
        index = fns["floor_divide"](indices, tensor(coef, dtype=dtypes.int64, device=at))
        out.append(fns["remainder"](index, tensor(size, dtype=dtypes.int64, device=at)))
    return tuple(out)


# ---- logspace, empty_strided, windows ---------------------------------------------------------


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None) -> Tensor:
    """base ** linspace(start, end, steps), as PyTorch's CPU kernel computes it: start and
    end rounded to the dtype, step = (end - start) (in the dtype) / (steps - 1) in double,
    exponent start + step * i below steps // 2 and end - step * (steps - 1 - i) from there,
    pow in double, then rounded (truncated for integer dtypes) to the dtype."""
    start, end = as_number(start, "start"), as_number(end, "end")
    base = builtins.float(as_number(base, "base"))
    steps = views.as_int(steps, "steps")
    dtype = _spaced_dtype("logspace", start, end, dtype)
    if dtype.is_bool:
        raise TypeError("logspace does not support dtype bool")
    if steps < 0:
        raise ValueError("number of steps must be non-negative")
    if dtype.is_complex:
        return _complex_logspace(start, end, steps, base, dtype, device)
    pow_ = _functions()["pow"]
    if steps <= 1:  # PyTorch fills pow(base, start) computed in double
        first = tensor([builtins.float(start)] * steps, dtype=dtypes.float64)
        return pow_(base, first).to(dtype=dtype, device=_device(device))

    low, high = _held(start, dtype), _held(end, dtype)
    # end - start in the dtype's arithmetic: C++ promotes the narrow integers to int, so
    # theirs never wraps (exact here, as Python ints); floats round to the dtype
    span = high - low if not dtype.is_floating_point else _held(high - low, dtype)
    step = builtins.float(span) / (steps - 1)
    position = arange(steps, dtype=dtypes.float64, device=device)
    fns = _functions()
    rising = position * step + low
    falling = high - (steps - 1 - position) * step
    exponent = fns["where"](position < steps // 2, rising, falling)
    return pow_(base, exponent).to(dtype=dtype)


def _held(value, dtype: DType):
    """The Python number an element of `dtype` holds for `value` (scalar_t in PyTorch), as
    a fill stores it: worked out on the host, so an op tracing under kael.compile reads no
    tensor for it."""
    wide = convert_scalar(value, dtype, CHECKED)  # float32 for the half types: their opmath
    return to_half_precision(wide, dtype) if dtype.is_half else wide


def _complex_logspace(start, end, steps: int, base: float, dtype: DType, device) -> Tensor:
    """logspace of a complex dtype: real ends' real powers, converted; complex ends'
    exp(z log(base)) over their complex linspace (a positive base only)."""
    if builtins.complex not in (type(start), type(end)):
        return logspace(start, end, steps, base, dtype=dtype.to_real(), device=device).to(dtype)
    if not base > 0:
        raise ValueError(f"logspace(): a complex start or end needs a positive base, got {base}")
    exponent = linspace(start, end, steps, dtype=dtype, device=device)
    return _ew().unary("exp", _ew().binary("mul", exponent, math.log(base)))


def empty_strided(size, stride, *, dtype=None, device=None) -> Tensor:
    """An uninitialised tensor of `size` laid out with `stride` (elements), over storage just
    large enough for the largest offset it reaches."""
    shape = views.check_shape(views.parse_size((size,)))
    strides = views.parse_size((stride,), "stride")
    if len(shape) != len(strides):
        raise ValueError(
            f"dimensionality of sizes ({len(shape)}) must match dimensionality of strides"
            f" ({len(strides)})"
        )
    if any(s < 0 for s in strides):
        raise ValueError(
            f"Storage size calculation overflowed with sizes={list(shape)} and"
            f" strides={list(strides)}"
        )
    dtype = dtype_or(dtype, dtypes.get_default_dtype())
    extent = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))
    base = empty_impl((extent,), dtype, _device(device))
    return Tensor(views.derive(base, shape, strides, 0))


def _window_length(name: str, window_length, dtype) -> tuple[int, DType]:
    n = views.as_int(window_length, "window_length")
    dtype = dtype_or(dtype, dtypes.get_default_dtype())
    if n < 0:
        raise ValueError(f"{name} requires non-negative window_length, got window_length={n}")
    if not dtype.is_floating_point:
        raise TypeError(f"{name} expects floating point dtypes, got: {dtype}")
    return n, dtype


def _window(name, window_length, periodic, dtype, device, make) -> Tensor:
    """PyTorch's window frame: empty for 0, [1.] for 1, else make(arange(N)) with N one
    longer when periodic and the last value dropped."""
    n, dtype = _window_length(name, window_length, dtype)
    if type(periodic) is not bool:
        raise TypeError(f"{name}: periodic must be a bool, got {type(periodic).__name__}")
    if n <= 1:
        return ones(n, dtype=dtype, device=device)
    length = n + 1 if periodic else n
    window = make(arange(length, dtype=dtype, device=device), length)
    return window[: length - 1] if periodic else window


def _window_angles(x: Tensor, span: float, length: int) -> Tensor:
    """arange x times span / (N - 1), that step rounded to x's dtype first: PyTorch's
    in-place mul_ takes its Scalar in the tensor's dtype (so do the windows' constants)."""
    return x * _held(span / builtins.float(length - 1), x.dtype)


def hamming_window(
    window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, device=None
) -> Tensor:
    """alpha - beta cos(2 pi i / (N - 1)), computed in the dtype as PyTorch does."""
    alpha, beta = as_number(alpha, "alpha"), as_number(beta, "beta")

    def make(x, length):
        x = _window_angles(x, math.pi * 2.0, length)
        return x.cos() * _held(-builtins.float(beta), x.dtype) + _held(alpha, x.dtype)

    return _window("hamming_window", window_length, periodic, dtype, device, make)


def hann_window(window_length, periodic=True, *, dtype=None, device=None) -> Tensor:
    """0.5 - 0.5 cos(2 pi i / (N - 1)): hamming_window with alpha = beta = 0.5."""
    _window_length("hann_window", window_length, dtype)
    return hamming_window(window_length, periodic, 0.5, 0.5, dtype=dtype, device=device)


def blackman_window(window_length, periodic=True, *, dtype=None, device=None) -> Tensor:
    """0.42 - 0.5 cos(2 pi i / (N - 1)) + 0.08 cos(4 pi i / (N - 1)), as PyTorch orders it."""

    def make(x, length):
        x = _window_angles(x, math.pi, length)
        return (x * 4).cos() * _held(0.08, x.dtype) - (x * 2).cos() * 0.5 + _held(0.42, x.dtype)

    return _window("blackman_window", window_length, periodic, dtype, device, make)


def bartlett_window(window_length, periodic=True, *, dtype=None, device=None) -> Tensor:
    """The triangle 2 i / (N - 1), mirrored as 2 - 2 i / (N - 1) past the middle."""

    def make(x, length):
        x = _window_angles(x, 2.0, length)
        half = ((length - 1) >> 1) + 1
        x[half:] = x[half:] * -1 + 2
        return x

    return _window("bartlett_window", window_length, periodic, dtype, device, make)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, device=None) -> Tensor:
    """i0(beta sqrt(1 - ((i - a) / a) ** 2)) / i0(beta), a = (N - 1) / 2, in the dtype's
    compute type (float32 for the half types), as PyTorch's kernel computes it."""
    beta = builtins.float(as_number(beta, "beta"))
    i0 = _functions()["i0"]
    _, resolved = _window_length("kaiser_window", window_length, dtype)
    compute = dtypes.float64 if resolved is dtypes.float64 else dtypes.float32

    def make(x, length):
        a = _held((length - 1) / 2.0, compute)
        b = scalar_tensor(beta, dtype=compute, device=x.device)
        ratio = (x.to(dtype=compute) - a) / a
        inner = (1 - ratio * ratio).abs().sqrt() * b
        return (i0(inner) / i0(b)).to(dtype=resolved)

    return _window("kaiser_window", window_length, periodic, dtype, device, make)
