"""default_collate and default_convert: how a DataLoader turns a list of samples into one
batch, by torch's rules. Tensors stack along a new first dim; NumPy arrays and numbers
become tensors (Python floats float64, ints int64); strings stay lists; dicts, named
tuples and sequences are collated field by field."""

from __future__ import annotations

import builtins
import collections.abc
import copy

import numpy as np

from kael.frontend import factories, index_ops
from kael.frontend.tensor import Tensor
from kael.runtime.dtypes import float64
from kael.runtime.errors import Error, TypeError

_REFUSED = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)


def _numpy_kind(elem) -> str | None:
    """'array' or 'scalar' for NumPy values whose dtype is numeric, 'text' for arrays of
    strings or objects, None for anything else (np.str_ is a str, collated as one)."""
    if isinstance(elem, (str, bytes)) or not isinstance(elem, (np.ndarray, np.generic)):
        return None
    if elem.dtype.kind in "OSUV":
        return "text"
    return "array" if isinstance(elem, np.ndarray) else "scalar"


def rebuilt(elem, parts):
    """A container like `elem` holding `parts` (a dict's items or a sequence's items):
    elem's own type where it can be built so, else a plain dict or list."""
    if isinstance(elem, collections.abc.Mapping):
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(parts)
            return clone
        try:
            return type(elem)(parts)
        except builtins.TypeError:  # kael's TypeError shadows the builtin here
            return dict(parts)
    if _is_named_tuple(elem):
        return type(elem)(*parts)
    if isinstance(elem, collections.abc.MutableSequence):
        clone = copy.copy(elem)
        for i, part in enumerate(parts):
            clone[i] = part
        return clone
    try:
        return type(elem)(parts)
    except builtins.TypeError:  # kael's TypeError shadows the builtin here
        return list(parts)


def _is_named_tuple(elem) -> bool:
    return isinstance(elem, tuple) and hasattr(elem, "_fields")


def default_collate(batch: list):
    """One batch from a list of samples, by the type of the first (see the module)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return index_ops.stack(batch)
    kind = _numpy_kind(elem)
    if kind == "text":
        raise TypeError(_REFUSED.format(elem.dtype))
    if kind == "array":
        return default_collate([factories.as_tensor(b) for b in batch])
    if kind == "scalar":  # torch's as_tensor of the list: its own type inference, not NumPy's
        return factories.as_tensor(batch)
    if isinstance(elem, float):
        return factories.tensor(batch, dtype=float64)
    if isinstance(elem, int):
        return factories.tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return rebuilt(elem, {key: default_collate([d[key] for d in batch]) for key in elem})
    if _is_named_tuple(elem):
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise Error("each element in list of batch should be of equal size")
        columns = [default_collate(s) for s in zip(*batch)]  # tuples: strings stay tuples
        return columns if isinstance(elem, tuple) else rebuilt(elem, columns)
    raise TypeError(_REFUSED.format(type(elem)))


def default_convert(data):
    """A sample as a tensor where it is a NumPy array or number (no batching: what a
    DataLoader with batch_size=None gives), containers converted item by item."""
    kind = _numpy_kind(data)
    if kind in ("array", "scalar"):
        return factories.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return rebuilt(data, {key: default_convert(value) for key, value in data.items()})
    if _is_named_tuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return rebuilt(data, [default_convert(d) for d in data])
    return data
