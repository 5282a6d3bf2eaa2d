"""kael.nn.utils.rnn: torch.nn.utils.rnn's packed sequences. PackedSequence and the functions
that pack, pad and unpad a batch of sequences of different lengths.

A packed sequence holds, time step after time step, the rows of the sequences still running
(longest first), so a recurrence's step t reads batch_sizes[t] consecutive rows
(kael.lstm(data, batch_sizes, ...)). Padding and unpacking is one gather of the data with one
padding row appended, its index built by kael ops from the lengths.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

import numpy as np

from kael.frontend import factories, index_ops
from kael.frontend.outputs import float_arg, tensor_param
from kael.frontend.tensor import Tensor
from kael.frontend.tracing import op_door
from kael.runtime.convert import CHECKED, convert_scalar
from kael.runtime.device import parse_device
from kael.runtime.dtypes import (
    INT64_MAX,
    INT64_MIN,
    INTEGER_DTYPES,
    DType,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)
from kael.runtime.errors import IndexError, TypeError, ValueError

# ---- PackedSequence --------------------------------------------------------------------------


class _Fields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a permutation of 0..n-1 (None stays None): out[permutation[i]] = i, a
    scatter as PyTorch's (an index beyond n is refused; a place no index names holds -1,
    where PyTorch's holds uninitialized memory; int32 as int64, which PyTorch alone takes)."""
    if permutation is None:
        return None
    p = tensor_param(permutation, "invert_permutation", "permutation")
    out = factories.full(p.shape, -1, dtype=p.dtype, device=p.device)
    count = factories.arange(p.numel(), dtype=p.dtype, device=p.device)
    return out.scatter_(0, p, count)


class PackedSequence(_Fields):
    """torch.nn.utils.rnn.PackedSequence: data [sum(batch_sizes), *], batch_sizes (int64,
    on the CPU) the rows of each time step, and the sort of the batch by length with its
    inverse (None where the batch came sorted)."""

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if batch_sizes is None:
            if not isinstance(data, tuple | list) or len(data) != 2:
                raise TypeError(
                    "PackedSequence: without batch_sizes, data must be a (data, batch_sizes)"
                    f" pair, got {type(data).__name__}"
                )
            data, batch_sizes = data
        batch_sizes = tensor_param(batch_sizes, "PackedSequence", "batch_sizes")
        if batch_sizes.device.type != "cpu":
            raise ValueError(
                f"batch_sizes should always be on CPU, got a tensor on {batch_sizes.device}"
            )
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        """data converted as Tensor.to does (torch's forms: device, dtype, non_blocking, a
        tensor's dtype and device), the indices moved to its device (batch_sizes stays on
        the CPU); self where nothing changes."""
        return self._converted(_to_form(args, kwargs))

    def cuda(self, *args, **kwargs) -> PackedSequence:
        """to() on the GPU: the device asked for when it is a CUDA one, else 'cuda'."""
        return self._converted(_to_form(args, kwargs), "cuda")

    def cpu(self, *args, **kwargs) -> PackedSequence:
        """to() on the CPU (with the other conversions asked for)."""
        return self._converted(_to_form(args, kwargs), "cpu")

    def pin_memory(self) -> PackedSequence:
        """data and the indices in page-locked host memory (batch_sizes as it is)."""
        return self._replaced(self.data.pin_memory(), lambda t: t.pin_memory())

    def is_pinned(self) -> bool:
        """Whether data is in page-locked host memory."""
        return self.data.is_pinned()

    @property
    def is_cuda(self) -> bool:
        return self.data.device.type == "cuda"

    def _converted(self, form: dict, kind: str | None = None) -> PackedSequence:
        """self converted by Tensor.to's keywords `form`, on a device of `kind` when given."""
        if kind is not None:
            device = form.get("device")
            if device is None or parse_device(device).type != kind:
                form["device"] = kind
        data = self.data.to(**form)
        if data is self.data:
            return self
        moves = {k: form[k] for k in ("non_blocking", "memory_format") if k in form}
        return self._replaced(data, lambda t: t.to(data.device, **moves))

    def _replaced(self, data: Tensor, convert: Callable[[Tensor], Tensor]) -> PackedSequence:
        """A PackedSequence of `data`, the same batch_sizes and the indices `convert`ed."""
        indices = (None if t is None else convert(t) for t in self[2:])
        return type(self)(data, self.batch_sizes, *indices)


# torch's PackedSequence dtype methods: each converts data only (self.to(dtype=...))
_DTYPE_METHODS = {
    "double": float64,
    "float": float32,
    "half": float16,
    "long": int64,
    "int": int32,
    "short": int16,
    "char": int8,
    "byte": uint8,
}


def _dtype_method(name: str, dtype: DType) -> Callable[[PackedSequence], PackedSequence]:
    def convert(self: PackedSequence) -> PackedSequence:
        return self.to(dtype=dtype)

    convert.__name__, convert.__qualname__ = name, f"PackedSequence.{name}"
    convert.__doc__ = f"data converted to {dtype} (batch_sizes and the indices as they are)."
    return convert


for _name, _dtype in _DTYPE_METHODS.items():
    setattr(PackedSequence, _name, _dtype_method(_name, _dtype))


# ---- PackedSequence.to's arguments -----------------------------------------------------------

_TO_KEYWORDS = ("dtype", "device", "non_blocking", "memory_format")
# torch's positional forms (before a trailing non_blocking): [device], [device, dtype],
# [dtype], [tensor]
_TO_FORMS = ((), ("device",), ("device", "dtype"), ("dtype",), ("tensor",))


def _to_role(value) -> str:
    """What a positional argument of to() is: a dtype, a tensor, or else a device."""
    if isinstance(value, DType):
        return "dtype"
    return "tensor" if isinstance(value, Tensor) else "device"


def _put(form: dict, key: str, value) -> None:
    """form[key] = value, refusing a second value (torch's parser refuses it so)."""
    if key in form:
        raise TypeError(f"to() got multiple values for '{key}' ({form[key]!r} and {value!r})")
    form[key] = value


def _to_form(args: tuple, kwargs: dict) -> dict:
    """Tensor.to's keywords for one of torch's to(device, dtype, non_blocking) /
    to(dtype, non_blocking) / to(tensor, non_blocking) calls; a copy argument is refused,
    as torch's PackedSequence.to refuses it. An int device is that CUDA device."""
    if "copy" in kwargs or sum(isinstance(a, bool) for a in args) > 1:
        raise TypeError(".to() does not accept copy argument")
    unknown = [k for k in kwargs if k not in _TO_KEYWORDS]
    if unknown:
        raise TypeError(f"to() got unexpected keyword arguments {unknown}")
    form, args = dict(kwargs), list(args)
    if args and isinstance(args[-1], bool):
        _put(form, "non_blocking", args.pop())
    roles = tuple(_to_role(a) for a in args)
    if roles not in _TO_FORMS:
        got = ", ".join(type(a).__name__ for a in args)
        raise TypeError(
            f"to() expects (device, dtype, non_blocking), (dtype, non_blocking) or (tensor,"
            f" non_blocking), got ({got})"
        )
    for role, value in zip(roles, args):
        if role == "tensor":
            _put(form, "dtype", value.dtype)
            value, role = value.device, "device"
        _put(form, role, value)
    if type(form.get("device")) is int:
        form["device"] = f"cuda:{form['device']}"
    return form


# ---- lengths bookkeeping (Python ints) -------------------------------------------------------

_INT64_LOWEST = float(INT64_MIN)


def _length_item(value, op: str, at: int) -> int | float:
    """One element of a lengths sequence as torch.as_tensor(dtype=int64) takes it: an int or
    a Python float (NumPy's float64 is one), a NumPy int, an integer tensor of one element;
    NumPy's float32 and bool are refused there, as in PyTorch."""
    if isinstance(value, Tensor):
        if value.numel() != 1 or value.dtype.is_floating_point:
            raise TypeError(
                f"{op}: lengths[{at}] must be a number or an integer tensor of one element,"
                f" got a {value.dtype} tensor of shape {list(value.shape)}"
            )
        return value.item()
    if isinstance(value, int | float | np.integer):
        return value if isinstance(value, float) else int(value)
    if isinstance(value, Iterable) and not isinstance(value, str):
        raise ValueError(f"{op}: 'lengths' should be 1D, but lengths[{at}] is {value!r}")
    raise TypeError(
        f"{op}: lengths must be a tensor or a sequence of ints, got {value!r} at lengths[{at}]"
    )


def _array_lengths(value: np.ndarray, op: str) -> Tensor:
    """A NumPy array of lengths as a tensor (its numbers as they are)."""
    if value.dtype.kind not in "biuf":
        raise TypeError(f"{op}: can't read lengths from a NumPy array of type {value.dtype}")
    return factories.tensor(value)


def _length_values(value, op: str) -> list[int | float]:
    """A lengths argument (a 1-D tensor or NumPy array, or a sequence of numbers) as Python
    numbers, read as torch.as_tensor reads them."""
    if isinstance(value, np.ndarray):
        value = _array_lengths(value, op)
    if isinstance(value, Tensor):
        if value.ndim != 1:
            raise ValueError(
                f"{op}: 'lengths' argument should be a 1D tensor, but got {value.ndim}D"
            )
        return value.tolist()
    if not isinstance(value, Iterable) or isinstance(value, str):
        raise TypeError(f"{op}: lengths must be a tensor or a sequence of ints, got {value!r}")
    return [_length_item(v, op, i) for i, v in enumerate(value)]


def _as_int64(value: int | float, op: str) -> int:
    """A length as int64 holds it, truncated; beyond int64 (NaN, inf) a kael.ValueError, as
    PyTorch's checked conversion refuses it."""
    if not _INT64_LOWEST <= value < -_INT64_LOWEST:
        raise ValueError(f"{op}: length {value} cannot be converted to int64 without overflow")
    return int(value)


def _lengths(value, op: str) -> list[int]:
    """A lengths argument as Python ints, truncated as PyTorch's int64 conversion does."""
    return [_as_int64(v, op) for v in _length_values(value, op)]


def _batch_sizes_of(lengths: list[int]) -> list[int]:
    """How many sequences run at each time step."""
    return [sum(n > t for n in lengths) for t in range(max(lengths))]


def _lengths_tensor(lengths: list[int], device) -> Tensor:
    return factories.tensor(lengths, dtype=int64, device=device)


# ---- pack_padded_sequence --------------------------------------------------------------------


def _check_packable(x: Tensor, lengths: list[int], batch_first: bool, enforce_sorted: bool):
    """PyTorch's checks of pack_padded_sequence's input and lengths, and the lengths kept
    within the input's time steps."""
    op = "pack_padded_sequence"
    if x.ndim < 2:
        raise IndexError(f"{op}: expected input of at least 2 dimensions, got {list(x.shape)}")
    if x.numel() == 0:
        raise ValueError(f"Cannot pack empty tensors (input of shape {list(x.shape)})")
    batch, steps = x.shape[1 - batch_first], x.shape[int(batch_first)]
    if len(lengths) != batch:
        raise ValueError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)}"
            f" (batch_size={batch})"
        )
    if min(lengths) <= 0:
        raise ValueError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths'"
            f" that is <= 0: {lengths}"
        )
    if enforce_sorted and any(a < b for a, b in zip(lengths, lengths[1:])):
        raise ValueError(
            f"`lengths` array must be sorted in decreasing order when `enforce_sorted` is True,"
            f" got {lengths}. You can pass `enforce_sorted=False` to pack_padded_sequence"
            " and/or pack_sequence to sidestep this requirement"
        )
    if max(lengths) > steps:
        raise ValueError(
            f"{op}: lengths {lengths} exceed the input's {steps} time steps"
            f" (input of shape {list(x.shape)}, batch_first={batch_first})"
        )


def pack_padded_sequence(
    input: Tensor, lengths, batch_first: bool = False, enforce_sorted: bool = True
) -> PackedSequence:
    """torch.nn.utils.rnn.pack_padded_sequence: a padded [T, B, *] (or [B, T, *]) batch of
    sequences of `lengths` as a PackedSequence, the batch sorted by length unless it is."""
    x = tensor_param(input, "pack_padded_sequence", "input")
    lengths = _lengths(lengths, "pack_padded_sequence")
    _check_packable(x, lengths, batch_first, enforce_sorted)
    sorted_indices = None
    if not enforce_sorted:
        by_length = index_ops.sort(_lengths_tensor(lengths, x.device), descending=True)
        sorted_indices = by_length.indices
        x = x.index_select(int(not batch_first), sorted_indices)
        lengths = [int(v) for v in by_length.values.tolist()]
    steps = x.transpose(0, 1) if batch_first else x
    sizes = _batch_sizes_of(lengths)
    data = index_ops.cat([steps[t].narrow(0, 0, size) for t, size in enumerate(sizes)])
    return PackedSequence(data, _lengths_tensor(sizes, "cpu"), sorted_indices)


# ---- pad_packed_sequence ---------------------------------------------------------------------

_INT64_HIGHEST = float(INT64_MAX)  # 2**63: PyTorch compares a double with int64's max so


def _overflows(value: int | float, dtype: DType) -> bool:
    """PyTorch's checked conversion refuses `value` for `dtype`: NaN, inf or beyond int64 for
    int64, a finite value beyond a float dtype's range (the narrower ints convert_scalar
    checks itself)."""
    if dtype.is_floating_point:
        return abs(value) != math.inf and abs(value) > dtype.largest
    return dtype is int64 and not _INT64_LOWEST <= value <= _INT64_HIGHEST


def _padding(value, dtype: DType, op: str, through_double: bool = False) -> bool | int | float:
    """padding_value (a number, NumPy scalar or 0-d tensor) as a `dtype` element holds it,
    read as a double first where PyTorch's signature takes one; kael.ValueError naming it
    where PyTorch's checked conversion overflows."""
    if isinstance(value, Tensor | np.generic) and value.ndim == 0:
        value = value.item()  # a 0-d tensor or a NumPy scalar (numpy.bool too) as Python's
    if through_double or not isinstance(value, numbers.Integral):
        value = float_arg(value, op, "padding_value")
    if _overflows(value, dtype):
        raise ValueError(
            f"{op}: padding_value {value} cannot be converted to {dtype} without overflow"
        )
    return convert_scalar(value, dtype, CHECKED)


def _total_length(value, op: str) -> int:
    """total_length as PyTorch's int argument takes it: an int (not a bool), a NumPy int or
    an integer 0-d tensor."""
    if isinstance(value, Tensor) and value.ndim == 0 and value.dtype in INTEGER_DTYPES:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{op}(): argument 'total_length' must be int, not {type(value).__name__}"
            f" (got {value!r})"
        )
    value = int(value)
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"{op}(): total_length {value} is out of the range of int64")
    return value


def _padded_gather(
    source: Tensor, index: Tensor, valid: Tensor, padding_value: float, batch_first: bool
) -> Tensor:
    """source's rows `index` ([B, T]) where `valid`, padding_value elsewhere, as one gather
    from source with a padding row added; laid out [B, T, *], or [T, B, *] unless batch_first."""
    if not batch_first:
        index, valid = index.t(), valid.t()
    trailing = source.shape[1:]
    pad = factories.full((1, *trailing), padding_value, dtype=source.dtype, device=source.device)
    rows = index_ops.where(valid, index, source.shape[0])
    picked = index_ops.index_select(index_ops.cat([source, pad]), 0, rows.reshape(-1))
    return picked.reshape(*rows.shape, *trailing)


def _check_packed(sequence) -> list[int]:
    """A PackedSequence's batch sizes as Python ints, checked non-empty."""
    if not isinstance(sequence, tuple) or len(sequence) != 4:
        raise TypeError(f"expected a PackedSequence, got {type(sequence).__name__}")
    sizes = [int(v) for v in tensor_param(sequence[1], "PackedSequence", "batch_sizes").tolist()]
    if not sizes:
        raise ValueError("pad_packed_sequence: the PackedSequence has empty batch_sizes")
    return sizes


def pad_packed_sequence(
    sequence: PackedSequence,
    batch_first: bool = False,
    padding_value: float = 0.0,
    total_length: int | None = None,
) -> tuple[Tensor, Tensor]:
    """torch.nn.utils.rnn.pad_packed_sequence: (the padded [T, B, *] or [B, T, *] batch in
    its original order, each sequence's length); T is total_length when given."""
    op = "pad_packed_sequence"
    sizes = _check_packed(sequence)
    data, _, _, unsorted_indices = sequence
    steps = len(sizes)
    if total_length is not None:
        total_length = _total_length(total_length, op)
        if total_length < steps:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in"
                f" input, but got total_length={total_length} and max sequence length being"
                f" {steps}"
            )
        steps = total_length
    padding_value = _padding(padding_value, data.dtype, op)
    device = data.device
    past_the_end = factories.zeros(steps - len(sizes), dtype=int64, device=device)
    per_step = index_ops.cat([_lengths_tensor(sizes, device), past_the_end]).unsqueeze(1)
    batch = factories.arange(sizes[0], device=device)
    if unsorted_indices is not None:
        batch = unsorted_indices.to(device)
    batch = batch.unsqueeze(0)
    valid = batch < per_step  # [T, B]: does the sequence in batch place b run at step t
    offsets = per_step.cumsum(0) - per_step
    index = offsets + batch
    padded = _padded_gather(data, index.t(), valid.t(), padding_value, batch_first)
    return padded, valid.sum(0).to("cpu")


# ---- pad_sequence ----------------------------------------------------------------------------

_SIDES = ("left", "right")


def _fits(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """shape broadcasts to target (PyTorch copies each sequence into its slot so)."""
    if len(shape) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(reversed(shape), reversed(target)))


def _sequence_list(sequences, op: str) -> list[Tensor]:
    """The sequences as a non-empty list of tensors of at least one dimension."""
    if not isinstance(sequences, Iterable):
        raise TypeError(f"{op}: expected an iterable of sequences, got {type(sequences).__name__}")
    items = list(sequences)
    if not items:
        raise ValueError(f"{op}: received an empty list of sequences")
    for i, s in enumerate(items):
        tensor_param(s, op, f"sequences[{i}]")
        if s.ndim == 0:
            raise ValueError(f"{op}: sequences[{i}] is 0-d; expected at least one dimension")
    return items


def _aligned(sequences: list[Tensor], op: str) -> list[Tensor]:
    """Each sequence [L_i, ...] broadcast to [L_i, *trailing] (the first's) in its dtype."""
    first = sequences[0]
    trailing = first.shape[1:]
    out = []
    for i, s in enumerate(sequences):
        target = (s.shape[0], *trailing)
        if not _fits(s.shape, target):
            raise ValueError(
                f"{op}: sequences[{i}] of shape {list(s.shape)} does not fit the trailing"
                f" shape {list(trailing)} of sequences[0] ({list(first.shape)})"
            )
        out.append(s.expand(*target).to(first.dtype))
    return out


def pad_sequence(
    sequences: Sequence[Tensor],
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """torch.nn.utils.rnn.pad_sequence: the sequences [L_i, *] as one [T, B, *] (or
    [B, T, *]) tensor of the first's dtype, T the longest, padded on `padding_side`."""
    op = "pad_sequence"
    if padding_side not in _SIDES:
        raise ValueError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    aligned = _aligned(_sequence_list(sequences, op), op)
    padding_value = _padding(padding_value, aligned[0].dtype, op, through_double=True)
    device = aligned[0].device
    lengths = _lengths_tensor([s.shape[0] for s in aligned], device).unsqueeze(1)
    longest = max(s.shape[0] for s in aligned)
    start = longest - lengths if padding_side == "left" else 0
    at = factories.arange(longest, device=device).unsqueeze(0) - start  # [B, T]: source step
    valid = (at >= 0) & (at < lengths)
    offsets = lengths.cumsum(0) - lengths
    return _padded_gather(index_ops.cat(aligned), offsets + at, valid, padding_value, batch_first)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """torch.nn.utils.rnn.pack_sequence: the sequences [L_i, *] packed (padded, then
    pack_padded_sequence with their lengths)."""
    items = _sequence_list(sequences, "pack_sequence")
    lengths = [s.shape[0] for s in items]
    return pack_padded_sequence(pad_sequence(items), lengths, enforce_sorted=enforce_sorted)


# ---- unpadding -------------------------------------------------------------------------------


def _steps_below(length: int | float, steps: int) -> int:
    """How many of the steps 0..steps-1 PyTorch's mask arange(steps) < length keeps (a
    float length 2.5 keeps 3, NaN none)."""
    if not length > 0:
        return 0
    return steps if length >= steps else math.ceil(length)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list[Tensor]:
    """torch.nn.utils.rnn.unpad_sequence: the padded batch's sequences, each cut to the
    steps below its length (within [0, T], as PyTorch's mask does), as new tensors."""
    x = tensor_param(padded_sequences, "unpad_sequence", "padded_sequences")
    if x.ndim < 2:
        raise IndexError(
            f"unpad_sequence: expected padded_sequences of at least 2 dimensions, got"
            f" {list(x.shape)}"
        )
    rows = x if batch_first else x.transpose(0, 1)
    steps = rows.shape[1]
    lengths = _length_values(lengths, "unpad_sequence")
    if len(lengths) != rows.shape[0]:
        raise ValueError(
            f"unpad_sequence: got {len(lengths)} lengths for {rows.shape[0]} sequences"
        )
    return [row.narrow(0, 0, _steps_below(n, steps)).clone() for row, n in zip(rows, lengths)]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """torch.nn.utils.rnn.unpack_sequence: the packed batch's sequences in their original
    order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


_PUBLIC = {
    "pack_padded_sequence": pack_padded_sequence,
    "pad_packed_sequence": pad_packed_sequence,
    "pad_sequence": pad_sequence,
    "pack_sequence": pack_sequence,
    "unpad_sequence": unpad_sequence,
    "unpack_sequence": unpack_sequence,
}
globals().update({name: op_door(name, fn) for name, fn in _PUBLIC.items()})

__all__ = ["PackedSequence", *_PUBLIC]
