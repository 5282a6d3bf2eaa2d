"""Indexing: ints, positive-step slices, None and Ellipsis select a view; integer and bool
tensor keys (and lists, arrays, Python bools) gather a copy with PyTorch's rules, in which
a 0-d integer tensor is the int it holds.

A bool mask over the leading dims alone (x[mask], x[mask, :]) is one compaction pass
(masked_rows). Any other advanced key is applied in two steps. Its basic parts give a
view V in which every advanced index still has its dim; a bool mask becomes one int64
index per mask dim (its nonzero columns), as in PyTorch. The indices broadcast to a
shape B, and one kernel pass per index sums index * stride into an int64 offset tensor
of shape B (checked and wrapped inside the kernel). The result has B in place of the
indexed dims when they are adjacent in V, else B first; the gather kernel reads V at
each position's offset over the remaining dims plus its offset from B. Assignment runs
the same plan backwards with the put kernel.
"""

from __future__ import annotations

import builtins
import math
import operator
from typing import NamedTuple

import numpy as np

from kael.codegen.cpu import gather
from kael.frontend import (
    eager,
    interop,
    tracing,
    views,
)
from kael.frontend import tensor as tensor_module  # a cycle: tensor.py imports this module
from kael.runtime import user_warning
from kael.runtime.convert import convert_scalar
from kael.runtime.device import CPU
from kael.runtime.dtypes import INT64_MAX, bool_, int8, int16, int32, int64, uint8
from kael.runtime.errors import Error, IndexError, TypeError, ValueError
from kael.runtime.tensor_impl import TensorImpl, format_shape, ptr_on

# ---- basic keys: views --------------------------------------------------------------------------


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
    """Reject what a basic key cannot hold: non-integers (advanced keys never get here)."""
    if type(k) is int or isinstance(k, slice):
        return
    if not hasattr(k, "__index__"):
        raise IndexError(
            "only integers, slices (`:`), ellipsis (`...`), None, bools and long or bool"
            f" tensors are valid indices (got {type(k).__name__})"
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


def _is_advanced(k) -> bool:
    """Whether a key element needs a copy: a tensor, array, sequence or Python bool."""
    return isinstance(k, (tensor_module.Tensor, list, tuple, np.ndarray, builtins.bool, np.bool_))


# ---- entry points ---------------------------------------------------------------------------------


def _key_tuple(key) -> tuple:
    """The key as a tuple, each 0-d int64 tensor or integer array read as the int it holds:
    PyTorch indexes with it as with that int (a view without the dim), not as NumPy's
    0-d advanced index."""
    if type(key) is list and _list_reads_as_tuple(key):
        user_warning.warn(
            "Using a non-tuple sequence for multidimensional indexing is deprecated; use "
            "x[tuple(seq)] instead of x[seq] (PyTorch reads such a list as a tuple)",
            UserWarning,
        )
        key = tuple(key)
    keys = key if type(key) is tuple else (key,)
    return tuple(_as_int_key(k) for k in keys)


def _list_reads_as_tuple(key: list) -> bool:
    """PyTorch's rule for a list key: under 32 entries, one of them a sequence, slice,
    Ellipsis, None or tensor, and the list means one index per dim (x[[0, [1, 2]]] is
    x[0, [1, 2]]); otherwise it is one advanced index."""
    kinds = (list, tuple, slice, np.ndarray, tensor_module.Tensor)
    return len(key) < 32 and any(k is None or k is Ellipsis or isinstance(k, kinds) for k in key)


def _as_int_key(k):
    """k, or the int that k holds when it is a 0-d integer tensor (uint8 is a mask, as
    PyTorch reads it) or a 0-d integer array."""
    integer = (isinstance(k, tensor_module.Tensor) and k.dtype in INT_KEYS) or (
        isinstance(k, np.ndarray) and np.issubdtype(k.dtype, np.integer)
    )
    return k.item() if integer and not k.shape else k


INT_KEYS = (int64, int32, int16, int8)


def _memo_key(impl: TensorImpl, key) -> tuple | None:
    """The view memo's key of `impl[key]`, or None for a key it does not serve. A lone int
    or slice, the commonest keys, skip exact_key's loop."""
    kind = type(key)
    if kind is int:
        given = (key,)
    elif kind is slice:
        part = views.slice_key(key)
        if part is None:
            return None
        given = (part,)
    else:
        given = views.exact_key(key if kind is tuple else (key,))
        if given is None:
            return None
    return ("index", impl.shape, impl.strides, given)


def remembered_view(tensor, key):
    """tensor[key] from the view memo (a basic key seen before on this layout), or None."""
    impl = tensor._impl
    memo = _memo_key(impl, key)
    hit = None if memo is None else views.remembered(memo, impl)
    return None if hit is None else tensor_module.Tensor.trusted(hit)


def getitem(tensor, key):
    """tensor[key]: a view for basic keys, a gathered copy for advanced ones. Tensor's
    __getitem__ asks remembered_view first; a basic view made here is remembered."""
    impl = tensor._impl
    memo = _memo_key(impl, key)
    keys = _key_tuple(key)
    if not any(_is_advanced(k) for k in keys):
        result = tensor_module.Tensor(index_view(impl, keys))
        if memo is not None:
            views.remember(memo, impl, result._impl)
        return result
    if impl.dtype.is_complex:  # gathered as float pairs: the key leaves the pair dim whole
        from kael.frontend.complex import view_as_complex, view_as_real

        return view_as_complex(getitem(view_as_real(tensor), (*keys, slice(None))))
    mask = _leading_mask(keys, len(impl.shape))
    rows = None if mask is None else masked_rows(impl, mask._impl)
    if rows is not None:
        return tensor_module.Tensor(rows)
    plan = _plan(tensor._impl, keys, "index")
    out = tensor_module.empty_impl(plan.shape, tensor.dtype, tensor._impl.device)
    _run(plan, "gather", out)
    return tensor_module.Tensor(out)


def setitem(tensor, key, value) -> None:
    """tensor[key] = value: a tensor value is broadcast (and, for a basic key, converted), a
    number is filled (an int beyond int64 refused for every dtype, as PyTorch's setitem
    refuses it)."""
    keys = _key_tuple(key)
    if tensor.dtype.is_complex:  # stored as float pairs: the key leaves the pair dim whole
        from kael.frontend.complex import as_complex, view_as_real

        if any(_is_advanced(k) for k in keys) and not isinstance(key, builtins.bool | np.bool_):
            _check_put_dtype(tensor, keys, value)
        setitem(view_as_real(tensor), (*keys, slice(None)), view_as_real(as_complex(value, tensor)))
        return
    if not isinstance(value, tensor_module.Tensor):
        convert_scalar(value, tensor.dtype)  # the check alone: kael.ValueError beyond int64
    if not any(_is_advanced(k) for k in keys):
        assign(tensor, keys, value)
        return
    if not isinstance(key, builtins.bool | np.bool_):  # x[True] is a view's assignment
        _check_put_dtype(tensor, keys, value)
    if _is_full_mask(tensor, keys) and not _is_nonscalar_tensor(value):
        # one elementwise pass, no coordinates; a half dtype's overflow stores inf, as
        # torch's setitem does (masked_fill_ refuses it)
        from kael.frontend.elementwise import masked_store_  # it imports tensor, which imports us

        masked_store_(tensor, keys[0], value)
        return
    plan = _put_plan(tensor, keys)
    source = _values(value, plan)
    # Repeated offsets take one value each when it is a number: any write order is fine.
    parallel = plan.unique or not isinstance(value, tensor_module.Tensor)
    _run(plan, "put", source, parallel)
    tensor._impl.storage.bump_version()


def accumulation(tensor, keys: tuple, value) -> tuple[TensorImpl, TensorImpl, TensorImpl] | None:
    """tensor[keys] += value, repeats adding up, as a scatter-add along dim 0: (destination,
    index, source), the destination V with its keyed dims merged into one, indexed by the
    plan's checked offsets over V's other dims; None where the keyed dims do not merge
    (a transposed tensor keyed twice: run it on a contiguous copy)."""
    if isinstance(value, tensor_module.Tensor) and value.dtype is not tensor.dtype:
        raise TypeError(
            f"index_put_ with accumulate=True requires the value's dtype to match the tensor's:"
            f" got {value.dtype} for the value and {tensor.dtype} for the tensor"
        )
    plan = _put_plan(tensor, keys)
    view, batch = plan.view, plan.offsets.shape
    rest, rest_strides = plan.shape[len(batch) :], plan.table_strides[len(batch) :]
    keyed = len(view.shape) - len(rest)
    size = math.prod(view.shape[:keyed])
    merged = views.compute_stride(view.shape[:keyed], view.strides[:keyed], (size,))
    if merged is None:
        return None
    (stride,) = merged
    offsets = plan.offsets
    if stride > 1:  # element offsets, all multiples of the merged dim's stride
        from kael.frontend import elementwise

        offsets = elementwise.binary("floor_divide", tensor_module.Tensor(offsets), stride)._impl
    lead = math.prod(batch)
    spread = (0,) * len(rest)  # one offset for every element of its row
    source = _values(value, plan)
    return (
        views.derive(view, (size, *rest), (stride, *rest_strides), view.offset),
        views.derive(offsets, (lead, *rest), (1, *spread), offsets.offset),
        views.view(source, ((lead, *rest),)),
    )


def _put_plan(tensor, keys: tuple) -> _Plan:
    """The plan of a write through advanced keys, refusing a target whose elements overlap."""
    plan = _plan(tensor._impl, keys, "index_put_")
    if tensor_module.has_internal_overlap(plan.view):
        raise Error(
            "unsupported operation: more than one element of the written-to tensor refers to a"
            " single memory location. Please clone() the tensor before performing the operation."
        )
    return plan


def assign(tensor, key, value) -> None:
    """tensor[key] = value for a basic key: a tensor is broadcast and converted, a number filled."""
    target = tensor[key]
    if isinstance(value, type(tensor)):
        # Leading size-1 dims of the value may exceed the target's rank, as in PyTorch.
        while value.ndim > target.ndim and value.shape[0] == 1:
            value = value.squeeze(0)
        target.copy_(value)
    else:
        target.fill_(value)


# ---- advanced keys: the plan ------------------------------------------------------------------


class _Index(NamedTuple):
    """One advanced index: its int64 values, the dim of V it indexes and the source dim."""

    impl: TensorImpl
    dim: int
    source: int | None  # the indexed tensor's dim (None for a Python bool's new dim)


class _Plan(NamedTuple):
    """What gather and put need: V, the result shape, and both operands' strides over it."""

    view: TensorImpl
    shape: tuple[int, ...]
    table_strides: tuple[int, ...]  # V's strides over the result dims (0 over B)
    offsets: TensorImpl  # int64 element offsets into V, shape B
    offset_strides: tuple[int, ...]  # the offsets' strides over the result dims (0 elsewhere)
    unique: bool  # whether no two positions can write one element (no int indices)


def _plan(impl: TensorImpl, keys: tuple, op: str) -> _Plan:
    """The plan of impl[keys] for `op` ("index" or "index_put_", named by kernel errors)."""
    entries = [_on_device(_entry(k), impl.device, op) for k in keys]
    view, indices = _apply(impl, entries)
    shapes = [ix.impl.shape for ix in indices]
    batch = _broadcast(shapes)
    offsets = _offsets(view, indices, batch, op)
    dims = [ix.dim for ix in indices]
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    rest = [d for d in range(len(view.shape)) if d not in dims]
    before = [d for d in rest if d < dims[0]] if adjacent else []
    after = rest[len(before) :]
    shape = tuple(view.shape[d] for d in before) + batch + tuple(view.shape[d] for d in after)
    table = tuple(
        [view.strides[d] for d in before] + [0] * len(batch) + [view.strides[d] for d in after]
    )
    offset_strides = (0,) * len(before) + offsets.strides + (0,) * len(after)
    unique = not any(kind == "index" for kind, _ in entries) and (
        sum(kind == "mask" for kind, _ in entries) <= 1
    )
    return _Plan(view, shape, table, offsets, offset_strides, unique)


def _entry(k) -> tuple[str, object]:
    """A key element classified: ("none"|"ellipsis"|"slice"|"int"|"bool"|"index"|"mask", value)."""
    if k is None:
        return "none", None
    if k is Ellipsis:
        return "ellipsis", None
    if isinstance(k, slice):
        return "slice", k
    if isinstance(k, (builtins.bool, np.bool_)):
        return "bool", builtins.bool(k)
    if isinstance(k, tensor_module.Tensor):
        return _tensor_entry(k._impl)
    if isinstance(k, (list, tuple, np.ndarray)):
        return _tensor_entry(_host_index(k))
    _check_supported(k)
    return "int", k


def _on_device(entry: tuple[str, object], device, op: str) -> tuple[str, object]:
    """An index or mask entry on the indexed tensor's device: host keys (lists, arrays, CPU
    tensors) are copied there, as PyTorch moves a CPU index to the GPU. A read with one on
    another device (a cuda index of a CPU tensor) is refused, as PyTorch's index refuses
    it; a write copies it over, as PyTorch's index_put_ does."""
    kind, value = entry
    if kind not in ("index", "mask") or value.device is device:
        return entry
    if value.device is not CPU and op == "index":
        raise IndexError(
            f"indices should be either on cpu or on the same device as the indexed tensor"
            f" ({device}), got an index on {value.device}"
        )
    return kind, tensor_module.transfer_impl(value, device)


def _tensor_entry(impl: TensorImpl) -> tuple[str, object]:
    if impl.dtype is int64:
        return "index", impl
    if impl.dtype is int32:  # PyTorch takes int indices too: widened for the kernels
        return "index", tensor_module.clone_impl(impl, int64)
    if impl.dtype is uint8:  # PyTorch's deprecated mask: nonzero is True
        user_warning.warn(
            "indexing with dtype uint8 is now deprecated, please use a dtype bool instead.",
            UserWarning,
        )
        impl = tensor_module.clone_impl(impl, bool_)
    if impl.dtype is not bool_:
        raise IndexError(
            f"tensors used as indices must be long, int or bool tensors, got {impl.dtype}"
        )
    if not impl.shape:  # a 0-d mask is a Python bool read from memory
        tracing.data_dependent("a 0-d mask, whose result's shape depends on its value")
        host = impl if impl.device is CPU else tensor_module.transfer_impl(impl, CPU)
        return "bool", builtins.bool(interop.numpy_view(host).item())
    return "mask", impl


def _host_index(k) -> TensorImpl:
    """A list, tuple or array key as an int64 or bool impl (host I/O of the key's values)."""
    arr = np.asarray(k)
    if arr.dtype == np.bool_:
        return interop.from_numpy_impl(np.ascontiguousarray(arr))
    if arr.size == 0 or np.issubdtype(arr.dtype, np.integer):
        return interop.from_numpy_impl(np.ascontiguousarray(arr, dtype=np.int64))
    raise IndexError(f"tensors used as indices must be long, int or bool tensors, got {arr.dtype}")


def _apply(impl: TensorImpl, entries: list) -> tuple[TensorImpl, list[_Index]]:
    """V (the basic parts applied, advanced dims kept) and the advanced indices over it."""
    width = {"int": 1, "slice": 1, "index": 1}
    consumed = sum(len(v.shape) if kind == "mask" else width.get(kind, 0) for kind, v in entries)
    ellipses = sum(kind == "ellipsis" for kind, _ in entries)
    old_shape, old_strides = impl.shape, impl.strides
    ndim = len(old_shape)
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    shape, strides, offset, d = [], [], impl.offset, 0
    indices: list[_Index] = []

    def keep(dims: int) -> None:
        nonlocal d
        shape.extend(old_shape[d : d + dims])
        strides.extend(old_strides[d : d + dims])
        d += dims

    for kind, value in entries:
        if kind in ("none", "bool"):
            if kind == "bool":
                index = _bool_index(value)
                if impl.device is not CPU:
                    index = tensor_module.transfer_impl(index, impl.device)
                indices.append(_Index(index, len(shape), None))
            shape.append(1)
            strides.append(0)
        elif kind == "ellipsis":
            keep(ndim - consumed)
        elif kind == "slice":
            start, length, step = _slice_range(value, old_shape[d])
            offset += start * old_strides[d]
            shape.append(length)
            strides.append(old_strides[d] * step)
            d += 1
        elif kind == "int":
            offset += _wrap_index(value, old_shape[d], d) * old_strides[d]
            d += 1
        elif kind == "index":
            indices.append(_Index(value, len(shape), d))
            keep(1)
        else:
            _check_mask(value.shape, old_shape, d)
            for j, column in enumerate(_mask_columns(value)):
                indices.append(_Index(column, len(shape) + j, d + j))
            keep(len(value.shape))
    keep(ndim - d)
    view = TensorImpl(impl.storage, shape, strides, offset, impl.dtype, impl.device)
    return view, indices


def _bool_index(value: bool) -> TensorImpl:
    """A Python bool's index over its new size-1 dim: [0] keeps it, [] empties it."""
    return interop.from_numpy_impl(np.zeros(1 if value else 0, dtype=np.int64))


def _check_mask(mask: tuple[int, ...], shape: tuple[int, ...], first: int) -> None:
    for i, size in enumerate(mask):
        if shape[first + i] != size:
            raise IndexError(
                f"the shape of the mask {format_shape(mask)} at index {i} does not match the"
                f" shape of the indexed tensor {format_shape(shape)} at index {first + i}"
            )


def _mask_columns(mask: TensorImpl) -> list[TensorImpl]:
    """The coordinates of the mask's true elements, one int64 column per mask dim."""
    return nonzero_columns(nonzero_impl(mask))


def nonzero_columns(coords: TensorImpl) -> list[TensorImpl]:
    """nonzero_impl's columns, each a dense 1-d view."""
    n, k = coords.shape
    return [views.derive(coords, (n,), (1,), j * n) for j in range(k)]


def nonzero_impl(impl: TensorImpl) -> TensorImpl:
    """[n, ndim] int64 coordinates of impl's nonzero elements in row-major order of the
    elements, laid out column-major (strides (1, n)) as torch's (the nonzero kernel)."""
    tracing.data_dependent("nonzero, whose output shape depends on the values")
    out: list[TensorImpl] = []

    def allocate(count: int) -> int:
        rank = len(impl.shape)
        flat = tensor_module.empty_impl((count * rank,), int64, impl.device)
        out.append(views.derive(flat, (count, rank), (1, count), 0))
        return flat.storage.ptr

    operand = _operand(impl, impl.strides, impl.device, "nonzero")
    gather.nonzero(impl.dtype, impl.shape, operand, allocate, device=impl.device)
    return out[0]


def _leading_mask(keys: tuple, ndim: int):
    """The bool mask tensor of a key mask, or (mask, :, ..., :) with at most one Ellipsis
    among the slices, for a tensor of `ndim` dims; None for any other key."""
    mask, rest = keys[0], keys[1:]
    if not (isinstance(mask, tensor_module.Tensor) and mask.dtype is bool_ and mask.ndim):
        return None
    if mask.ndim + sum(k is not Ellipsis for k in rest) > ndim:
        return None
    if sum(k is Ellipsis for k in rest) > 1 or not all(k is Ellipsis or _whole(k) for k in rest):
        return None
    return mask


def _whole(k) -> bool:
    """Whether a key element is `:` (its bounds compared by identity: a bound may be a
    tensor, whose == is elementwise)."""
    return isinstance(k, slice) and k.start is None and k.stop is None and k.step is None


def masked_rows(impl: TensorImpl, m: TensorImpl) -> TensorImpl | None:
    """impl[m] for a bool mask `m` of impl's leading dims on its device, in one compaction
    pass: no coordinates, no offsets, no gather. None where the mask is elsewhere or does
    not fit (the general plan takes it, and raises its errors) or the dims after the
    mask's do not fold into one strided run."""
    k = len(m.shape)
    if m.device is not impl.device or impl.shape[:k] != m.shape:
        return None
    width = math.prod(impl.shape[k:])
    folded = views.compute_stride(impl.shape[k:], impl.strides[k:], (width,))
    if folded is None:  # the dims after the mask's are no one strided run
        return None
    row = (width, folded[0] if width > 1 else 0)  # a lone element's stride is never used
    tracing.data_dependent("a bool mask index, whose result's shape depends on the mask")
    out: list[TensorImpl] = []

    def allocate(count: int) -> int:
        out.append(tensor_module.empty_impl((count, *impl.shape[k:]), impl.dtype, impl.device))
        return out[0].storage.ptr

    device, op = impl.device, "index"
    mask, values = _operand(m, m.strides, device, op), _operand(impl, impl.strides[:k], device, op)
    gather.compact(impl.dtype, m.shape, mask, values, row, allocate, device=device)
    return out[0]


def _broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """The indices' common shape; IndexError naming every shape when they do not broadcast."""
    ndim = max(len(s) for s in shapes)
    out = []
    for i in range(ndim):
        sizes = {s[i - ndim + len(s)] for s in shapes if i - ndim + len(s) >= 0} - {1}
        if len(sizes) > 1:
            listed = ", ".join(format_shape(s) for s in shapes)
            raise IndexError(
                f"shape mismatch: indexing tensors could not be broadcast together with shapes"
                f" {listed}"
            )
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _operand(impl: TensorImpl, strides: tuple[int, ...], device, op: str) -> gather.Operand:
    """impl as a walk operand over `strides`, for a kernel on `device` (kael.Error for
    memory elsewhere, which that kernel would read as its own)."""
    return gather.Operand(ptr_on(impl, device, op), strides)


def _offsets(
    view: TensorImpl, indices: list[_Index], batch: tuple[int, ...], op: str
) -> TensorImpl:
    """sum of index * stride over the indices, in int64 of shape B; each index checked."""
    offsets = tensor_module.empty_impl(batch, int64, view.device)
    eager.fill(offsets, 0)
    dense = _operand(offsets, offsets.strides, view.device, op)
    unused = gather.Operand(0, (0,) * len(batch))
    for ix in indices:
        expanded = views.expand(ix.impl, (batch,))
        index = _operand(expanded, expanded.strides, view.device, op)
        size, stride = view.shape[ix.dim], view.strides[ix.dim]
        bad = gather.walk(
            "offsets", int64, batch, dense, unused, index, size, stride, mode=gather.WRAP,
            device=view.device,
        )  # fmt: skip
        if bad is not None:
            raise IndexError(
                f"index {bad} is out of bounds for dimension {ix.source} with size {size}"
            )
    return offsets


# The op a walk kind serves, named by the kernel's device error.
_WALK_OPS = {"gather": "index", "put": "index_put_"}


def _run(plan: _Plan, kind: str, dense: TensorImpl, parallel: bool = True) -> None:
    """Gather V into `dense` (the result shape), or put `dense` into V; a put that may
    write one element twice runs on one thread unless `parallel`, so the last write wins."""
    device, op = plan.view.device, _WALK_OPS[kind]
    gather.walk(
        kind,
        plan.view.dtype,
        plan.shape,
        _operand(dense, dense.strides, device, op),
        _operand(plan.view, plan.table_strides, device, op),
        _operand(plan.offsets, plan.offset_strides, device, op),
        INT64_MAX,
        1,
        parallel=parallel,
        device=device,
    )


# ---- assignment -------------------------------------------------------------------------------


def _check_put_dtype(tensor, keys: tuple, value) -> None:
    """PyTorch's index_put takes only a tensor value of the indexed tensor's dtype; it converts
    one element through one bool mask alone (its masked_fill), as a basic key's copy does."""
    if not isinstance(value, tensor_module.Tensor) or value.dtype is tensor.dtype:
        return
    advanced = [k for k in keys if _is_advanced(k)]
    if len(advanced) == 1 and _is_mask(advanced[0]) and value.numel() == 1:
        return
    raise TypeError(
        f"index put requires the value's dtype to match the tensor's: got {value.dtype} for"
        f" the value and {tensor.dtype} for the tensor"
    )


def _is_mask(k) -> bool:
    """Whether a key element is a bool mask with dims (PyTorch indexes with a 0-d one)."""
    if isinstance(k, tensor_module.Tensor):
        return k.dtype is bool_ and k.ndim > 0
    if isinstance(k, list | tuple | np.ndarray):
        array = np.asarray(k)
        return array.dtype == np.bool_ and array.ndim > 0
    return False


def _is_full_mask(tensor, keys: tuple) -> bool:
    k = keys[0]
    return (
        len(keys) == 1
        and isinstance(k, tensor_module.Tensor)
        and k.dtype is bool_
        and k.shape == tensor.shape
        and k.ndim > 0
        and k.device is tensor.device  # a mask elsewhere takes index_put_'s copy, as torch's
    )


def _is_nonscalar_tensor(value) -> bool:
    return isinstance(value, tensor_module.Tensor) and value.ndim > 0


def _values(value, plan: _Plan) -> TensorImpl:
    """The assigned values as V's dtype over the result shape (stride 0 where broadcast)."""
    dtype, device = plan.view.dtype, plan.view.device
    if not isinstance(value, tensor_module.Tensor):
        one = tensor_module.empty_impl((), dtype, device)
        eager.fill(one, value)
        return views.derive(one, plan.shape, (0,) * len(plan.shape), 0)
    source = value._impl
    if source.device is not device:
        raise Error(
            f"index_put_: expected the value on the indexed tensor's device {device}, got"
            f" {source.device}"
        )
    # Leading size-1 dims of the value may exceed the result's rank, as in PyTorch.
    while len(source.shape) > len(plan.shape) and source.shape[0] == 1:
        source = views.squeeze(source, 0)
    try:
        expanded = views.expand(source, (plan.shape,))
    except ValueError:
        raise ValueError(
            f"shape mismatch: value tensor of shape {format_shape(value.shape)} cannot be"
            f" broadcast to indexing result of shape {format_shape(plan.shape)}"
        ) from None
    out = tensor_module.empty_impl(plan.shape, dtype, device)
    eager.copy_into(out, expanded)  # also reads a value that aliases the target first
    return out
