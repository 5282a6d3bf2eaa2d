"""Basic indexing: ints, positive-step slices, None and Ellipsis select a view; assignment writes it."""

from __future__ import annotations

import builtins
import operator

from kael.runtime.errors import Error, IndexError, TypeError, ValueError
from kael.runtime.tensor_impl import TensorImpl


def index_view(impl: TensorImpl, key) -> TensorImpl:
    """The view `tensor[key]` in one pass over the key; IndexError for a bad index."""
    keys = key if type(key) is tuple else (key,)
    ndim = len(impl.shape)
    consumed, ellipses = 0, 0
    for k in keys:
        if k is Ellipsis:
            ellipses += 1
        elif k is not None:
            _check_supported(k)
            consumed += 1
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")

    old_shape, old_strides = impl.shape, impl.strides
    shape, strides, offset, d = [], [], impl.offset, 0
    for k in keys:
        if k is None:  # a new size-1 dim, strided as unsqueeze would give it
            shape.append(1)
            strides.append(old_shape[d] * old_strides[d] if d < ndim else 1)
        elif k is Ellipsis:
            skip = ndim - consumed
            shape.extend(old_shape[d : d + skip])
            strides.extend(old_strides[d : d + skip])
            d += skip
        elif isinstance(k, slice):
            start, length, step = _slice_range(k, old_shape[d])
            offset += start * old_strides[d]
            shape.append(length)
            strides.append(old_strides[d] * step)
            d += 1
        else:
            offset += _wrap_index(k, old_shape[d], d) * old_strides[d]
            d += 1
    shape.extend(old_shape[d:])
    strides.extend(old_strides[d:])
    return TensorImpl(impl.storage, shape, strides, offset, impl.dtype, impl.device)


def _check_supported(k) -> None:
    """Reject what basic indexing cannot express: tensor-like keys (for now) and non-integers."""
    if type(k) is int or isinstance(k, slice):
        return
    if isinstance(k, (builtins.bool, list, tuple)) or hasattr(k, "__len__"):
        raise Error(
            "indexing with tensors, arrays, sequences or bools is not supported yet"
            f" (got {type(k).__name__})"
        )
    if not hasattr(k, "__index__"):
        raise IndexError(
            "only integers, slices (`:`), ellipsis (`...`) and None are valid indices"
            f" (got {type(k).__name__})"
        )


def _wrap_index(k, size: int, dim: int) -> int:
    """An int index made non-negative; IndexError outside [-size, size)."""
    index = operator.index(k)
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {dim} with size {size}")
    return index + size if index < 0 else index


def _slice_range(s: slice, size: int) -> tuple[int, int, int]:
    """(start, length, step) of a slice over `size` elements, bounds clamped as Python does."""
    step = 1 if s.step is None else _slice_bound(s.step)
    if step <= 0:
        raise ValueError(f"step must be greater than zero, got {step}")
    start, stop, _ = slice(_slice_bound(s.start), _slice_bound(s.stop), step).indices(size)
    return start, max(0, -(-(stop - start) // step)), step


def _slice_bound(value) -> int | None:
    """A slice bound as an int (or None); TypeError for floats and other non-integers."""
    if value is None or type(value) is int:
        return value
    try:
        return operator.index(value)
    except builtins.TypeError:
        raise TypeError(
            f"slice indices must be integers or None, got {type(value).__name__}"
        ) from None


def assign(tensor, key, value) -> None:
    """tensor[key] = value: a tensor is broadcast and converted, a number is filled."""
    target = tensor[key]
    if isinstance(value, type(tensor)):
        # Leading size-1 dims of the value may exceed the target's rank, as in PyTorch.
        while value.ndim > target.ndim and value.shape[0] == 1:
            value = value.squeeze(0)
        target.copy_(value)
    else:
        target.fill_(value)
