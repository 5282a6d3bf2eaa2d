"""kael.nn.utils.rnn: torch.nn.utils.rnn's packed sequences. PackedSequence and the functions
that pack, pad and unpad a batch of sequences of different lengths.

A packed sequence holds, time step after time step, the rows of the sequences still running
(longest first), so a recurrence's step t reads batch_sizes[t] consecutive rows
(kael.lstm(data, batch_sizes, ...)). Padding and unpacking is one gather of the data with one
padding row appended, its index built by kael ops from the lengths.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from kael.frontend import factories, index_ops
from kael.frontend.outputs import tensor_param
from kael.frontend.tensor import Tensor
from kael.frontend.tracing import op_door
from kael.runtime.dtypes import int64
from kael.runtime.errors import IndexError, TypeError, ValueError

# ---- PackedSequence --------------------------------------------------------------------------


class _Fields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


def _inverse(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a permutation of 0..n-1 (None stays None)."""
    return None if permutation is None else index_ops.argsort(permutation)


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
            unsorted_indices = _inverse(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        """data converted as Tensor.to does, the indices moved to its device (batch_sizes
        stays on the CPU); self where nothing changes."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        indices = (
            None if t is None else t.to(data.device)
            for t in (self.sorted_indices, self.unsorted_indices)
        )
        return type(self)(data, self.batch_sizes, *indices)

    @property
    def is_cuda(self) -> bool:
        return self.data.device.type == "cuda"


# ---- lengths bookkeeping (Python ints) -------------------------------------------------------


def _lengths(value, op: str) -> list[int]:
    """A lengths argument (a 1-D tensor or a sequence of numbers) as Python ints, truncated
    as PyTorch's int64 conversion does."""
    if isinstance(value, Tensor):
        if value.ndim != 1:
            raise ValueError(
                f"{op}: 'lengths' argument should be a 1D tensor, but got {value.ndim}D"
            )
        return [int(v) for v in value.tolist()]
    if not isinstance(value, Iterable) or isinstance(value, str):
        raise TypeError(f"{op}: lengths must be a tensor or a sequence of ints, got {value!r}")
    values = list(value)
    if not all(isinstance(v, int | float) for v in values):
        raise TypeError(f"{op}: lengths must be a tensor or a sequence of ints, got {values}")
    return [int(v) for v in values]


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
    sizes = _check_packed(sequence)
    data, _, _, unsorted_indices = sequence
    steps = len(sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in"
                f" input, but got total_length={total_length} and max sequence length being"
                f" {steps}"
            )
        steps = total_length
    device = data.device
    per_step = _lengths_tensor(sizes + [0] * (steps - len(sizes)), device).unsqueeze(1)
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


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list[Tensor]:
    """torch.nn.utils.rnn.unpad_sequence: the padded batch's sequences, each cut to its
    length (within [0, T], as PyTorch's mask does), as new tensors."""
    x = tensor_param(padded_sequences, "unpad_sequence", "padded_sequences")
    if x.ndim < 2:
        raise IndexError(
            f"unpad_sequence: expected padded_sequences of at least 2 dimensions, got"
            f" {list(x.shape)}"
        )
    rows = x if batch_first else x.transpose(0, 1)
    steps = rows.shape[1]
    lengths = _lengths(lengths, "unpad_sequence")
    if len(lengths) != rows.shape[0]:
        raise ValueError(
            f"unpad_sequence: got {len(lengths)} lengths for {rows.shape[0]} sequences"
        )
    return [row.narrow(0, 0, min(max(n, 0), steps)).clone() for row, n in zip(rows, lengths)]


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
