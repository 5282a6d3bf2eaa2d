"""Writes by index and counts as PyTorch has them: scatter(_) (src or value),
index_fill(_), index_copy(_), index_put(_) (accumulate too), put(_), masked_scatter(_),
select_scatter, slice_scatter, diagonal_scatter, index_reduce(_), bincount, histc, histogram,
histogramdd, unique and unique_consecutive.

Writes run gather.py's `put` walk (every index checked first, then written in the walk's
order on one thread, so a repeated index keeps its last write, as PyTorch's CPU loop
does); accumulating ones (index_put_ with accumulate, bincount, histc) its deterministic
scatter_add. A source or index whose elements meet self's is read from a copy taken
before the first write (index_ops.unshared; torch refuses those). unique orders with the book's host-side sort, then kael's kernels find the
runs of equal values.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import NamedTuple

from kael.codegen.cpu import binning
from kael.codegen.cpu import gather as kernels
from kael.frontend import elementwise as ew
from kael.frontend import (
    factories,
    index_ops,
    indexing,
    order_statistics,
    reductions,
    sequence,
    views,
)
from kael.frontend.index_ops import _at_least_1d, _operand, _out_of_bounds, _spread, _zeroed
from kael.frontend.memory_formats import contiguous_format
from kael.frontend.outputs import check_writable, copied_out, device_of, pair_out, tensor_arg
from kael.frontend.tensor import Tensor
from kael.runtime import user_warning
from kael.runtime.convert import CHECKED, convert_scalar
from kael.runtime.device import CPU
from kael.runtime.dtypes import bool_, float32, float64, int64
from kael.runtime.errors import IndexError, TypeError, UnsupportedDtype, ValueError
from kael.runtime.tensor_impl import TensorImpl

# ---- writes by index -------------------------------------------------------------------------


def _put(
    dst: TensorImpl,
    d: int,
    idx: TensorImpl,
    dense: kernels.Operand,
    op: str,
    mode=kernels.STRICT,
    writes: tuple[bool, ...] = (False, True),
) -> None:
    """dst[.., idx[..], ..] (along d) = dense at every position of idx's shape: checked
    first, then written in order on one thread (the last write of a repeated index wins);
    `mode` WRAP takes negative indices from the end, once. writes=(False,): the check alone.
    A 1-d dst out of range names its element count (put_ reads self as 1-d)."""
    if not idx.numel():
        return
    table = _operand(dst, _zeroed(dst.strides, d))
    size, stride = dst.shape[d], dst.strides[d]
    for write in writes:
        bad = kernels.walk(
            "put", dst.dtype, idx.shape, dense, table, _operand(idx), size, stride, mode,
            write=write, parallel=False, device=dst.device,
        )  # fmt: skip
        if bad is not None and op == "put_":
            raise IndexError(f"{op}(): index {bad} is out of range for a tensor of {size} elements")
        if bad is not None:
            raise _out_of_bounds(op, bad, d, size)


def _value_operand(value, dtype, device, rank: int) -> tuple[kernels.Operand, Tensor]:
    """A number as a dense operand of `rank` dims, all strides 0 (and the tensor holding it)."""
    fill = value if dtype.is_complex else convert_scalar(value, dtype, CHECKED)
    held = factories.full((), fill, dtype=dtype, device=device)
    return kernels.Operand(held._impl.data_ptr(), (0,) * max(rank, 1)), held


def _checked_self(self, op: str) -> Tensor:
    x = tensor_arg(self, op, "self")
    check_writable(x, op)
    return x


def scatter_(self: Tensor, dim: int, index: Tensor, src=None, value=None, *, reduce=None):
    """self[index[i][j]][j] = src[i][j] (dim 0, and so on), or = value (a number in src's
    place too, as PyTorch's scatter.value overload takes it); reduce='add' adds and
    'multiply' multiplies (PyTorch's deprecated forms, a warning with a tensor src)."""
    op = "scatter_"
    if value is None and isinstance(src, bool | int | float):
        src, value = None, src
    x = _checked_self(self, op)
    idx = index_ops.index_arg(index, op, allow_int32=True)
    if (src is None) == (value is None):
        raise TypeError(f"{op}() expects exactly one of src and value")
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise ValueError(
                f"{op}(): reduce argument must be either add or multiply, got {reduce!r}"
            )
        if src is not None:
            user_warning.warn_once(
                "The reduce argument of torch.scatter with Tensor src is deprecated and will be"
                " removed in a future PyTorch release. Use torch.scatter_reduce instead for"
                " more reduction options."
            )
        source = src if src is not None else ew.binary("add", x.new_zeros(idx.shape), value)
        if reduce == "multiply":
            return scatter_reduce_(x, dim, idx, source.to(x.dtype), "prod")
        return index_ops.scatter_add_(x, dim, idx, source.to(x.dtype))
    d = views.wrap_dim(dim, x.ndim)
    dst, ix = _at_least_1d(x._impl), _at_least_1d(index_ops.unshared(x._impl, idx._impl))
    if max(idx.ndim, 1) != max(x.ndim, 1) and idx.numel():  # torch: no index, no check
        raise ValueError(
            f"{op}(): Index tensor must have the same number of dimensions as self tensor"
        )
    for k, n in enumerate(ix.shape):
        if k != d and n > dst.shape[k]:
            raise ValueError(
                f"{op}(): Expected index {list(idx.shape)} to be smaller than self"
                f" {list(x.shape)} apart from dimension {d}"
            )
    if src is not None:
        s = tensor_arg(src, op, "src")
        device_of([x, idx, s], op)
        if s.dtype is not x.dtype:
            raise TypeError(
                f"{op}(): Expected self.dtype to be equal to src.dtype, got {x.dtype} and {s.dtype}"
            )
        index_ops.check_src_rank(idx._impl, s._impl, op)
        source = _at_least_1d(index_ops.unshared(x._impl, s._impl))
        if any(n > m for n, m in zip(ix.shape, source.shape)):
            raise ValueError(
                f"{op}(): Expected index {list(idx.shape)} to be smaller than src {list(s.shape)}"
            )
        _put(dst, d, ix, _operand(source, source.strides[: len(ix.shape)]), op)
    else:
        dense, held = _value_operand(value, x.dtype, x.device, len(ix.shape))
        _put(dst, d, ix, dense, op)
        del held
    x._impl.storage.bump_version()
    return x


def scatter(input: Tensor, dim: int, index: Tensor, src=None, value=None, *, reduce=None):
    """scatter_ into a copy of input."""
    return scatter_(
        tensor_arg(input, "scatter").clone(memory_format=contiguous_format),
        dim,
        index,
        src,
        value,
        reduce=reduce,
    )


def _along(x: Tensor, dim: int, index: Tensor, op: str) -> tuple[int, TensorImpl]:
    """(dim, the 1-d index spread over x's shape with index's length along dim)."""
    idx = tensor_arg(index, op, "index")
    if idx.dtype is not int64 or idx.ndim > 1:
        raise TypeError(
            f"{op}(): index must be a 1-d (or 0-d) int64 tensor, got {idx.ndim}-d {idx.dtype}"
        )
    d = views.wrap_dim(dim, max(x.ndim, 1))
    shape = list(_at_least_1d(x._impl).shape)
    shape[d] = idx.numel()
    return d, _spread(_at_least_1d(index_ops.unshared(x._impl, idx._impl)), tuple(shape), d)


def index_fill_(self: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """self's slices at index along dim filled with value (a number or a 0-d tensor)."""
    x = _checked_self(self, "index_fill_")
    if isinstance(value, Tensor):
        if value.ndim:
            raise ValueError(
                f"index_fill_ only supports a 0-dimensional value tensor, got {value.ndim}-d"
            )
        value = value.item()
    d, spread = _along(x, dim, index, "index_fill_")
    dense, held = _value_operand(value, x.dtype, x.device, len(spread.shape))
    _put(_at_least_1d(x._impl), d, spread, dense, "index_fill_", kernels.WRAP)  # as PyTorch
    del held
    x._impl.storage.bump_version()
    return x


def index_copy_(self: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """self's slices at index along dim replaced by source's, in index order."""
    x = _checked_self(self, "index_copy_")
    s = tensor_arg(source, "index_copy_", "source")
    if s.dtype is not x.dtype:
        raise TypeError(
            f"index_copy_(): self and source expected to have the same dtype, got {x.dtype} and {s.dtype}"
        )
    d, spread = _along(x, dim, index, "index_copy_")
    if tuple(_at_least_1d(s._impl).shape) != spread.shape:
        raise ValueError(
            f"index_copy_(): source {list(s.shape)} must be self's shape with"
            f" {spread.shape[d]} slices along dim {d}"
        )
    source = _at_least_1d(index_ops.unshared(x._impl, s._impl))
    _put(_at_least_1d(x._impl), d, spread, _operand(source), "index_copy_")
    x._impl.storage.bump_version()
    return x


def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    return index_fill_(tensor_arg(input, "index_fill").clone(), dim, index, value)


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    return index_copy_(
        tensor_arg(input, "index_copy").clone(memory_format=contiguous_format), dim, index, source
    )


def index_put_(self: Tensor, indices: Sequence, values, accumulate: bool = False) -> Tensor:
    """self[indices] = values, or += with accumulate (repeated positions add up)."""
    x = _checked_self(self, "index_put_")
    keys = tuple(indices)
    if any(not isinstance(k, Tensor) for k in keys):
        raise TypeError("index_put_(): indices must be a tuple of tensors")
    if not accumulate:
        x[keys] = values
        return x
    if not keys:
        return x.add_(values)
    parts = indexing.accumulation(x, keys, values)
    if parts is None:  # keyed dims that do not merge: through a contiguous copy
        return x.copy_(index_put_(x.contiguous(), keys, values, True))
    dst, idx, source = parts
    index_ops._scatter_add(dst, 0, idx, source, "index_put_")  # torch rounds every add too
    x._impl.storage.bump_version()
    return x


def index_put(input: Tensor, indices: Sequence, values, accumulate: bool = False) -> Tensor:
    return index_put_(tensor_arg(input, "index_put").clone(), indices, values, accumulate)


REDUCES = {
    "sum": "scatter_add",
    "prod": "scatter_prod",
    "amax": "scatter_amax",
    "amin": "scatter_amin",
    "mean": "scatter_add",
}


def _start_from_identity(dst, d: int, index, x: Tensor, reduce: str, op: str) -> None:
    """include_self=False: the positions `index` names in x (dst) start from the
    reduction's identity (0 for sum and mean, 1 for prod, the dtype's far end for amax and
    amin) instead of x's values."""
    identity = {"sum": 0, "mean": 0, "prod": 1}.get(reduce)
    if identity is None:
        identity = _extreme(x.dtype, reduce == "amin")
    dense, held = _value_operand(identity, x.dtype, x.device, len(index.shape))
    _put(dst, d, index, dense, op)
    del held


def scatter_reduce_(
    self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *, include_self: bool = True
) -> Tensor:
    """self[index[i][j]][j] combined with src[i][j] (dim 0, and so on) by `reduce`: sum,
    prod, mean, amax or amin; include_self=False leaves self's own value out of the
    positions index names. float16 and bfloat16 sums, products and means are taken in
    float32 and rounded once; a mean counts in self's dtype (both as PyTorch). Deterministic:
    each position combines in index order, or, for a long source into fewer lines than
    threads, in one partial table per thread combined in thread order (float sums and
    products round accordingly: bits depend on the thread count, as a parallel sum's do)."""
    op = "scatter_reduce_"
    x = _checked_self(self, op)
    if reduce not in REDUCES:
        raise ValueError(
            f"{op}(): reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
        )
    if reduce == "mean" and x.dtype.is_bool:
        raise UnsupportedDtype(
            f"{op}(): reduce='mean' is not implemented for bool self (PyTorch's too)"
        )
    if x.dtype.is_complex and reduce not in ("sum", "mean"):  # those add part by part
        raise UnsupportedDtype(f"{op}(): reduce={reduce!r} is not implemented for {x.dtype}")
    idx = index_ops.index_arg(index, op, allow_int32=True)
    s = tensor_arg(src, op, "src")
    index_ops._check_scatter(x, idx._impl, s, op, "src")
    index_ops.check_src_rank(idx._impl, s._impl, op)
    d = views.wrap_dim(dim, max(x.ndim, 1))
    dst, ix, source = _at_least_1d(x._impl), _at_least_1d(idx._impl), _at_least_1d(s._impl)
    for k, n in enumerate(ix.shape):
        if n > source.shape[k] or (k != d and n > dst.shape[k]):
            raise ValueError(
                f"{op}(): expected index {list(idx.shape)} to be no larger than self"
                f" {list(x.shape)} apart from dimension {d} and no larger than src {list(s.shape)}"
            )
    total = "sum" if reduce == "mean" else reduce
    if x.dtype.is_half and total in ("sum", "prod"):  # in float32, rounded once, as PyTorch
        wide = scatter_reduce_(x.float(), dim, idx, s.float(), total, include_self=include_self)
        x.copy_(wide)
    else:
        if not include_self:
            _start_from_identity(dst, d, ix, x, total, op)
        index_ops._scatter_add(dst, d, ix, source, op, REDUCES[total])
    if reduce == "mean":
        x.copy_(_mean(x, d, idx, include_self))
    x._impl.storage.bump_version()
    return x


def _mean(total: Tensor, d: int, idx: Tensor, include_self: bool) -> Tensor:
    """The scattered `total` over how many values each position combined, counted in its own
    dtype as PyTorch does (an integer count wraps as the integer sum did; a zero count
    divides by 1; a complex total's in its parts' dtype); integers divide with floor
    rounding."""
    dtype = total.dtype.to_real()  # a complex total's counts: its parts' dtype
    counts = (factories.ones_like if include_self else factories.zeros_like)(total, dtype=dtype)
    index_ops.scatter_add_(counts, d, idx, factories.ones_like(idx, dtype=dtype))
    counts = ew.where(ew.binary("eq", counts, 0), 1, counts)
    if total.dtype.is_complex:
        return total / counts
    return ew.binary("div" if total.dtype.is_floating_point else "floor_divide", total, counts)


def _extreme(dtype, largest: bool):
    """The identity of amin (the largest value) or amax (the smallest)."""
    if dtype.is_floating_point:
        return math.inf if largest else -math.inf
    if dtype.is_bool:
        return largest
    return dtype.max if largest else dtype.min


def scatter_reduce(
    input: Tensor,
    dim: int,
    index: Tensor,
    src: Tensor,
    reduce: str,
    *,
    include_self: bool = True,
    out=None,
) -> Tensor:
    """scatter_reduce_ into a copy of input (then into out=, when given)."""
    x = tensor_arg(input, "scatter_reduce").clone(memory_format=contiguous_format)
    result = scatter_reduce_(x, dim, index, src, reduce, include_self=include_self)
    return copied_out(result, out, "scatter_reduce")


# ---- put, masked_scatter, the *_scatter embeddings, index_reduce ---------------------------


def put_(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """self read as 1-d (logical row-major order): self[index[i]] = source[i] for every
    element, in order (the last write of a repeated index wins), or += with accumulate
    (repeated indices sum); a negative index counts from the end, once."""
    op = "put_"
    x = _checked_self(self, op)
    idx = tensor_arg(index, op, "index")
    if idx.dtype is not int64:
        raise TypeError(f"{op}(): Expected a long tensor for index, but got {idx.dtype}")
    s = tensor_arg(source, op, "source")
    device_of([x, idx, s], op)
    if s.dtype is not x.dtype:
        raise TypeError(
            f"{op}(): self and source expected to have the same dtype, but got self.dtype ="
            f" {x.dtype} and source.dtype = {s.dtype}"
        )
    if s.numel() != idx.numel():
        raise ValueError(
            f"{op}(): Expected source and index to have the same number of elements, but got"
            f" source.numel() = {s.numel()}, index.numel() = {idx.numel()}"
        )
    if not idx.numel():
        return x
    n = x.numel()
    if not n:
        raise IndexError(f"{op}(): Tried to put {idx.numel()} elements into an empty tensor")
    idx, s = (Tensor(index_ops.unshared(x._impl, t._impl)) for t in (idx, s))
    if not x.is_contiguous():  # the logical order: through a contiguous copy
        return x.copy_(put_(x.contiguous(), idx, s, accumulate))
    flat = views.derive(x._impl, (n,), (1,), x._impl.offset)
    ix = idx.reshape(-1)._impl
    src = s.reshape(-1)._impl
    if not accumulate:
        _put(flat, 0, ix, _operand(src), op, kernels.WRAP)
    else:  # every index checked (as put_ names them), then wrapped and summed
        _put(flat, 0, ix, _operand(src), op, kernels.WRAP, writes=(False,))
        wrapped = ew.where(
            ew.binary("lt", Tensor(ix), 0), ew.binary("add", Tensor(ix), n), Tensor(ix)
        )
        index_ops._scatter_add(flat, 0, wrapped._impl, src, op)
    x._impl.storage.bump_version()
    return x


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """put_ into a copy of input."""
    return put_(tensor_arg(input, "put").clone(), index, source, accumulate)


def masked_scatter_(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """source's elements, in its logical order, written in order into self's positions
    where the mask (broadcast to self's shape) holds."""
    op = "masked_scatter_"
    x = _checked_self(self, op)
    m = tensor_arg(mask, op, "mask")
    if not m.dtype.is_bool:
        raise TypeError(f"{op} only supports boolean masks, but got mask with dtype {m.dtype}")
    s = tensor_arg(source, op, "source")
    if s.dtype is not x.dtype:
        raise TypeError(
            f"masked_scatter: expected self and source to have same dtypes but got {x.dtype}"
            f" and {s.dtype}"
        )
    device_of([x, m, s], op)
    if ew.broadcast_shapes(x.shape, m.shape) != x.shape:
        raise ValueError(
            f"{op}(): mask of shape {list(m.shape)} does not broadcast to self's shape"
            f" {list(x.shape)}"
        )
    wide = m.expand(*x.shape)
    count = int(reductions.sum(wide).item()) if wide.numel() else 0
    if count > s.numel():
        raise ValueError(
            f"{op}(): Number of elements of source ({s.numel()}) < number of ones in mask ({count})"
        )
    if count:
        x[wide] = s.reshape(-1)[:count]
    return x


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """masked_scatter_ into a copy of input broadcast with the mask."""
    x = tensor_arg(input, "masked_scatter")
    m = tensor_arg(mask, "masked_scatter", "mask")
    shape = ew.broadcast_shapes(x.shape, m.shape)
    return masked_scatter_(x.expand(*shape).contiguous().clone(), m, source)


def _embedded(input: Tensor, src: Tensor, op: str, view) -> Tensor:
    """A copy of input with src copied into its view `view(copy)`: src must have the view's
    shape (any dtype: it converts, as torch's copy)."""
    x = tensor_arg(input, op)
    s = tensor_arg(src, op, "src")
    device_of([x, s], op)
    want = view(x).shape  # the view's own refusals (index, dim) before anything is copied
    if s.shape != want:
        raise ValueError(
            f"{op}(): expected src to have a size equal to the slice of self. src size ="
            f" {list(s.shape)}, slice size = {list(want)}"
        )
    out = x.clone()
    view(out).copy_(s)
    return out


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of input with src in place of input.select(dim, index)."""
    return _embedded(input, src, "select_scatter", lambda t: t.select(dim, index))


def _slice_of(x: Tensor, dim: int, start, end, step: int, op: str) -> Tensor:
    """x[start:end:step] along dim (Python's clamping of start and end), a view."""
    if x.ndim == 0:
        raise IndexError(f"{op}(): slice() cannot be applied to a 0-dim tensor.")
    d = views.wrap_dim(dim, x.ndim)
    step = views.as_int(step, f"{op}(): step")
    if step <= 0:
        raise ValueError(f"{op}(): slice step must be positive, got {step}")
    return x[(slice(None),) * d + (slice(start, end, step),)]


def slice_scatter(
    input: Tensor, src: Tensor, dim: int = 0, start=None, end=None, step: int = 1
) -> Tensor:
    """A copy of input with src in place of input[start:end:step] along dim."""
    op = "slice_scatter"
    return _embedded(input, src, op, lambda t: _slice_of(t, dim, start, end, step, op))


def diagonal_scatter(
    input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1
) -> Tensor:
    """A copy of input with src in place of input.diagonal(offset, dim1, dim2)."""
    return _embedded(input, src, "diagonal_scatter", lambda t: t.diagonal(offset, dim1, dim2))


INDEX_REDUCES = {"prod": "scatter_prod", "mean": "scatter_add", "amax": "scatter_amax", "amin": "scatter_amin"}  # fmt: skip


def index_reduce_(
    self: Tensor,
    dim: int,
    index: Tensor,
    source: Tensor,
    reduce: str,
    *,
    include_self: bool = True,
) -> Tensor:
    """self's slices at index along dim combined with source's, in index order, by
    `reduce`: prod, mean, amax or amin (NaN propagates); include_self=False starts the
    named slices from the reduction's identity. As torch's CPU loop, float16 and bfloat16
    round every step; a mean divides by its count in self's dtype (one more with
    include_self; for a 1-d self counted step by step), integers with floor rounding."""
    op = "index_reduce_"
    user_warning.warn_once(
        "index_reduce() is in beta and the API may change at any time.", UserWarning
    )
    x = _checked_self(self, op)
    if reduce not in INDEX_REDUCES:
        raise ValueError(
            f"{op}(): Expected reduce to be one of prod, mean, amax or amin but got {reduce!r}"
        )
    if x.dtype.is_bool:
        raise UnsupportedDtype(
            f'{op}(): not implemented for bool self (torch\'s "index_func_" either)'
        )
    idx = index_ops.index_arg(index, op, allow_int32=True)
    if idx.ndim > 1:
        raise ValueError(
            f"{op}(): Index is supposed to be a vector, but got dim: {idx.ndim} of shape"
            f" {list(idx.shape)}"
        )
    s = tensor_arg(source, op, "source")
    d = views.wrap_dim(dim, max(x.ndim, 1))
    dst, src = _at_least_1d(x._impl), _at_least_1d(s._impl)
    if len(src.shape) != len(dst.shape) or any(
        a != b for k, (a, b) in enumerate(zip(src.shape, dst.shape)) if k != d
    ):
        raise ValueError(
            f"{op}(): source tensor shape must match self tensor shape, excluding the specified"
            f" dimension. Got self.shape = {list(x.shape)} source.shape = {list(s.shape)}"
        )
    n = idx.numel()
    if src.shape[d] != n:
        raise ValueError(
            f"{op}(): Number of indices ({n}) should be equal to source.size(dim):"
            f" ({src.shape[d]}), for dim: {d}"
        )
    if n and not x.numel():  # no element to write, but torch still checks the indices
        size = _at_least_1d(x._impl).shape[d]
        low, high = int(reductions.amin(idx)), int(reductions.amax(idx))
        bad = low if low < -size else high if high >= size else None
        if bad is not None:
            raise IndexError(
                f"{op}(): index {bad} is out of range for dimension {d} of size {size}"
            )
    spread = _spread(_at_least_1d(idx._impl), src.shape, d)
    index_ops._check_scatter(x, spread, s, op, "source")
    if not include_self:
        _start_from_identity(dst, d, spread, x, reduce, op)
    index_ops._scatter_add(dst, d, spread, src, op, INDEX_REDUCES[reduce])
    if reduce == "mean":
        counts = (factories.ones_like if include_self else factories.zeros_like)(x)
        ones = factories.ones_like(s)
        if x.ndim > 1:  # torch counts a whole slice at a time: rounded to the dtype once
            index_ops.scatter_add_(counts, d, Tensor(spread), ones)
        else:  # torch's 1-d loop adds 1 to the count in self's dtype, step by step
            index_ops.index_add_(counts, d, idx, ones)
        counts = ew.where(ew.binary("eq", counts, 0), 1, counts)
        rounding = "div" if x.dtype.is_floating_point else "floor_divide"
        x.copy_(ew.binary(rounding, x, counts))
    x._impl.storage.bump_version()
    return x


def index_reduce(
    input: Tensor,
    dim: int,
    index: Tensor,
    source: Tensor,
    reduce: str,
    *,
    include_self: bool = True,
) -> Tensor:
    """index_reduce_ into a copy of input."""
    x = tensor_arg(input, "index_reduce").clone(memory_format=contiguous_format)
    return index_reduce_(x, dim, index, source, reduce, include_self=include_self)


# ---- counts ----------------------------------------------------------------------------------


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How often each value 0..max occurs in a 1-d non-negative integer tensor (or the sum
    of its weights there), at least minlength long."""
    x = tensor_arg(input, "bincount")
    if x.ndim != 1 or x.dtype.is_floating_point or x.dtype.is_bool:
        raise ValueError(
            f"bincount only supports 1-d non-negative integral inputs, got {x.ndim}-d {x.dtype}"
        )
    if minlength < 0:
        raise ValueError(f"bincount(): minlength should be >= 0, got {minlength}")
    lo, hi = (int(v) for v in reductions.aminmax(x)) if x.numel() else (0, -1)  # one pass
    if lo < 0:
        raise ValueError("bincount only supports 1-d non-negative integral inputs.")
    n = max(hi + 1, minlength)
    w = None if weights is None else tensor_arg(weights, "bincount", "weights")
    if w is not None and w.shape != x.shape:
        raise ValueError(
            f"bincount(): weights should be 1-d and have the same length as input, got {list(w.shape)}"
        )
    if w is not None:
        device_of([x, w], "bincount")
    # PyTorch sums float32 weights in float32 and every other dtype in float64
    dtype = None if w is None else w.dtype if w.dtype in (float32, float64) else float64
    if not x.numel():  # PyTorch's int64 zeros, weights or not
        return factories.zeros(minlength, dtype=int64, device=x.device)
    return _counts(x, w, dtype, n)


def _counts(x: Tensor, w: Tensor | None, dtype, n: int) -> Tensor:
    """The n bins of x's values, all in [0, n) (weighted by w, summed in dtype)."""
    if x.device == CPU and binning.chunks(x.numel()) * n <= x.numel():
        return _histogram(x, w, dtype, n)
    totals = factories.zeros(n, dtype=dtype or int64, device=x.device)
    if w is None:
        w = factories.ones(1, dtype=int64, device=x.device).expand(x.shape)
    return index_ops.scatter_add_(totals, 0, x.to(int64), w.to(dtype or int64))


def _histogram(x: Tensor, w: Tensor | None, dtype, bins: int) -> Tensor:
    """bincount by the histogram kernel: a row of bins per chunk of x, summed after."""
    rows = factories.zeros(binning.chunks(x.numel()), bins, dtype=dtype or int64)
    values = x.to(int64).contiguous()
    weights = None if w is None else w.to(dtype).contiguous()
    binning.bin_into(rows._impl, values._impl, None if weights is None else weights._impl, dtype)
    return rows.sum(0)


def _finite_range(lo: float, hi: float, what: str) -> None:
    """Refuse a histogram range with an infinite or NaN end, in PyTorch's words."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"{what} [{lo:g}, {hi:g}] is not finite")


def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """A histogram of `bins` equal bins over [min, max] (the data's range when both are 0);
    values outside are not counted, the last bin includes max."""
    x = tensor_arg(input, "histc")
    if not x.dtype.is_floating_point:
        raise UnsupportedDtype(f'"histogram_cpu" not implemented for {x.dtype}')
    if bins <= 0:
        raise ValueError(f"torch.histc(): bins must be > 0, but got {bins} for bins")
    lo, hi = float(min), float(max)
    if lo == hi and x.numel():
        lo, hi = float(reductions.amin(x)), float(reductions.amax(x))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    _finite_range(lo, hi, "torch.histc: range of")
    if lo > hi:
        raise ValueError(f"torch.histc(): max must be larger than min, but got min {lo} max {hi}")
    limit = x.dtype.largest
    if builtins.max(abs(lo), abs(hi)) > limit:
        raise ValueError(
            f"torch.histc(): range [{lo:g}, {hi:g}] cannot be converted to {x.dtype} without "
            "overflow"
        )
    # PyTorch's arithmetic, in the input's dtype: its edges, then (x - left) * bins /
    # (right - left) truncated, the right edge in the last bin
    edges = factories.linspace(lo, hi, bins + 1, dtype=x.dtype, device=x.device)
    left, right = edges[0], edges[-1]
    flat = x.reshape(-1)
    inside = (flat >= left) & (flat <= right)
    position = ((flat - left) * bins / (right - left)).to(int64).clamp(min=0, max=bins - 1)
    counts = factories.zeros(bins, dtype=x.dtype, device=x.device)
    return index_ops.scatter_add_(counts, 0, ew.where(inside, position, 0), inside.to(x.dtype))


def _data_range(values: Tensor) -> tuple[float, float]:
    """The values' (min, max); numpy's (0, 1) for no values."""
    if not values.numel():
        return 0.0, 1.0
    return float(reductions.amin(values)), float(reductions.amax(values))


def _even_edges(lo: float, hi: float, bins: int, like: Tensor) -> Tensor:
    """bins + 1 equally spaced edges from lo to hi in like's dtype; a point range widened to
    [lo - 0.5, hi + 0.5], as PyTorch's."""
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return factories.linspace(lo, hi, bins + 1, dtype=like.dtype, device=like.device)


def _bin_of(values: Tensor, edges: Tensor) -> tuple[Tensor, Tensor]:
    """Each value's bin among the sorted edges (the last bin includes its right edge; 0 for a
    value outside) and whether it falls inside [edges[0], edges[-1]] (NaN does not)."""
    inside = (values >= edges[0]) & (values <= edges[-1])
    position = order_statistics.searchsorted(edges, values, right=True) - 1
    return ew.where(inside, position.clamp(min=0, max=edges.numel() - 2), 0), inside


class Histogram(NamedTuple):
    """histogram's result, as PyTorch names its fields."""

    hist: Tensor
    bin_edges: Tensor


def histogram(input: Tensor, bins=100, *, range=None, weight=None, density: bool = False, out=None):
    """Counts (or summed weights) of input's values in `bins` equal bins over range (the
    data's by default) or between the given edges; the last bin includes its right edge;
    density divides by the total and the bin widths. out=: a (hist, bin_edges) pair."""
    x = tensor_arg(input, "histogram")
    if not x.dtype.is_floating_point:
        raise TypeError(f"histogram: input must be a floating point tensor, got {x.dtype}")
    flat = x.reshape(-1)
    if isinstance(bins, Tensor):
        edges = bins.to(x.dtype).contiguous()
        if edges.ndim != 1 or edges.numel() < 2:
            raise ValueError(
                "histogram: bins tensor should have one dimension and at least 2 elements"
            )
    else:
        if bins <= 0:
            raise ValueError(f"histogram(): bins must be > 0, but got {bins}")
        lo, hi = _data_range(flat) if range is None else range
        _finite_range(lo, hi, "torch.histogramdd: dimension 0's range")
        if lo > hi:
            raise ValueError(f"histogram(): max must be larger than min, but got min {lo} max {hi}")
        edges = _even_edges(lo, hi, bins, x)
    count = edges.numel() - 1
    position, inside = _bin_of(flat, edges)
    values = (
        inside.to(x.dtype)
        if weight is None
        else ew.where(
            inside, tensor_arg(weight, "histogram", "weight").reshape(-1).to(x.dtype), 0.0
        )
    )
    hist = index_ops.scatter_add_(
        factories.zeros(count, dtype=x.dtype, device=x.device), 0, position, values
    )
    if density:
        widths = edges[1:] - edges[:-1]
        hist = hist / (reductions.sum(hist) * widths)
    return pair_out(out, Histogram(hist, edges), "histogram")


class HistogramDD(NamedTuple):
    """histogramdd's result, as PyTorch names its fields: one edges tensor per dimension."""

    hist: Tensor
    bin_edges: tuple[Tensor, ...]


def _dd_float_input(input) -> Tensor:
    """histogramdd's input: a float32/float64 tensor of at least 2 dims (points by coords)."""
    x = tensor_arg(input, "histogramdd")
    if x.dtype not in (float32, float64):
        raise UnsupportedDtype(f'"histogramdd" not implemented for {x.dtype}')
    if x.ndim < 2:
        raise ValueError("torch.histogramdd: input tensor should have at least 2 dimensions")
    return x


def _dd_bin_counts(bins, dims: int) -> list[int] | None:
    """The bin count of each dimension when bins is an int or ints; None for edge tensors."""
    if type(bins) is int:
        return [bins] * dims
    if isinstance(bins, Tensor) or not isinstance(bins, Sequence):
        raise TypeError(
            "histogramdd(): bins must be an int, a sequence of ints or a sequence of"
            f" 1-d Tensors, got {type(bins).__name__}"
        )
    kinds = {int if type(b) is int else Tensor if isinstance(b, Tensor) else None for b in bins}
    if None in kinds or len(kinds) > 1:
        odd = next((b for b in bins if type(b) is not int and not isinstance(b, Tensor)), None)
        raise TypeError(
            "histogramdd(): bins must be all ints or all Tensors, got"
            f" {type(odd).__name__ if odd is not None else 'a mix'}"
        )
    if kinds != {int}:
        return None
    if len(bins) != dims:
        raise ValueError(
            "histogramdd: The size of bins must be equal to the innermost dimension of the"
            f" input, got {len(bins)} bin counts for {dims}-dimensional points"
        )
    return list(bins)


def _dd_ranges(points: Tensor, range, dims: int) -> list[tuple[float, float]]:
    """Each dimension's (min, max): from `range` (2 numbers per dimension) or the data."""
    if range is None:
        return [_data_range(points[:, k]) for k in builtins.range(dims)]
    bounds = [float(v) for v in range]
    if len(bounds) != 2 * dims:
        raise ValueError(
            f"torch.histogramdd: for a {dims}-dimensional histogram range should have"
            f" {2 * dims} elements, but got {len(bounds)}"
        )
    return [(bounds[2 * k], bounds[2 * k + 1]) for k in builtins.range(dims)]


def _dd_even_edges(points: Tensor, counts: list[int], range) -> list[Tensor]:
    """Each dimension's equal-width edges for its bin count over its range."""
    edges = []
    for k, (count, (lo, hi)) in enumerate(zip(counts, _dd_ranges(points, range, len(counts)))):
        if count <= 0:
            raise ValueError(
                f"torch.histogram(): bins must be > 0, but got {count} for dimension {k}"
            )
        _finite_range(lo, hi, f"torch.histogramdd: dimension {k}'s range")
        if lo > hi:
            raise ValueError(
                f"torch.histogramdd: min should not exceed max, but got min {lo:g} max {hi:g}"
                f" for dimension {k}"
            )
        edges.append(_even_edges(lo, hi, count, points))
    return edges


def _dd_given_edges(points: Tensor, bins: Sequence[Tensor]) -> list[Tensor]:
    """The edge tensors given, checked: one 1-d tensor of >= 2 edges per dimension, in the
    input's dtype and on its device."""
    dims = points.shape[1]
    if len(bins) != dims:
        raise ValueError(
            f"torch.histogramdd: expected {dims} sequences of bin edges for a {dims}-dimensional"
            f" histogram but got {len(bins)}"
        )
    for k, e in enumerate(bins):
        if e.ndim != 1:
            raise ValueError(
                "torch.histogramdd: bins tensor should have one dimension, but got"
                f" {e.ndim} dimensions in the bins tensor for dimension {k}"
            )
        if e.numel() < 2:
            raise ValueError(
                f"torch.histogram(): bins must be > 0, but got {e.numel() - 1} for dimension {k}"
                if e.numel()
                else "torch.histogramdd: bins tensor should have at least 1 element, but got 0"
                f" elements in the bins tensor for dimension {k}"
            )
        if e.dtype is not points.dtype:
            raise TypeError(
                "torch.histogramdd: input tensor and bins tensors should have the same dtype,"
                f" but got input with dtype {points.dtype} and bins for dimension {k} with"
                f" dtype {e.dtype}"
            )
    device_of([points, *bins], "histogramdd")
    return [e.contiguous() for e in bins]


def _dd_weight(weight, x: Tensor) -> Tensor | None:
    """The weights flattened to one per point; same shape as the points' and dtype as x."""
    if weight is None:
        return None
    w = tensor_arg(weight, "histogramdd", "weight")
    if w.shape != x.shape[:-1]:
        raise ValueError(
            "torch.histogramdd: if weight tensor is provided it should have the same shape as"
            " the input tensor excluding its innermost dimension, but got input with shape"
            f" {list(x.shape)} and weight with shape {list(w.shape)}"
        )
    if w.dtype is not x.dtype:
        raise TypeError(
            "torch.histogramdd: if weight tensor is provided, input tensor and weight tensor"
            f" should have the same dtype, but got input({x.dtype}), and weight({w.dtype})"
        )
    device_of([x, w], "histogramdd")
    return w.reshape(-1)


def histogramdd(input: Tensor, bins, *, range=None, weight=None, density: bool = False):
    """A D-dimensional histogram of input's points (its last dim holds each point's D
    coordinates): bins per dimension as an int, D ints, or D edge tensors; each point's bin
    is found per dimension (searchsorted) and counted on the flat bin index (scatter_add).
    Points outside any dimension's range are not counted; each last bin includes its edge."""
    x = _dd_float_input(input)
    dims = x.shape[-1]
    points = x.reshape(math.prod(x.shape[:-1]), dims)
    counts = _dd_bin_counts(bins, dims)
    edges = (
        _dd_given_edges(points, bins) if counts is None else _dd_even_edges(points, counts, range)
    )
    w = _dd_weight(weight, x)
    if not dims:  # no coordinates: PyTorch's 0-d zero and no edges
        return HistogramDD(factories.zeros((), dtype=x.dtype, device=x.device), ())
    sizes = [e.numel() - 1 for e in edges]
    flat = factories.zeros(points.shape[0], dtype=int64, device=x.device)
    inside = factories.ones(points.shape[0], dtype=bool_, device=x.device)
    for k, e in enumerate(edges):
        position, within = _bin_of(points[:, k], e)
        flat = flat * sizes[k] + position
        inside = inside & within
    values = inside.to(x.dtype) if w is None else ew.where(inside, w, 0.0)
    total = factories.zeros(math.prod(sizes), dtype=x.dtype, device=x.device)
    hist = index_ops.scatter_add_(total, 0, ew.where(inside, flat, 0), values).reshape(sizes)
    if density:
        hist = hist / reductions.sum(hist)
        for k, e in enumerate(edges):
            shape = [1] * dims
            shape[k] = sizes[k]
            hist = hist / (e[1:] - e[:-1]).reshape(shape)
    return HistogramDD(hist, tuple(edges))


# ---- unique ----------------------------------------------------------------------------------


def _runs(values: Tensor) -> tuple[Tensor, Tensor]:
    """For values [n] or rows [n, k]: where each run of equal values (rows) starts, and
    each one's run number (NaN is never equal to NaN: each its own run, as PyTorch counts
    them)."""
    n = values.shape[0]
    starts = factories.ones((n,), dtype=int64, device=values.device)
    if n > 1:
        differs = values[1:] != values[:-1]
        starts[1:] = (differs if values.ndim == 1 else differs.any(-1)).to(int64)
    return starts, sequence.cumsum(starts, 0) - 1


def _unique_of(flat: Tensor, return_inverse: bool, return_counts: bool, order=None):
    """The distinct values (rows) of sorted `flat`, and what is asked of each element's
    run number (scattered back through the sort's `order`) and each run's count."""
    empty = factories.zeros(0, dtype=int64, device=flat.device)
    result = [flat]
    if flat.numel():
        starts, run = _runs(flat)
        result = [flat[starts != 0]]
    if return_inverse:
        if not flat.numel():
            result.append(empty)
        elif order is None:
            result.append(run)
        else:
            inverse = factories.zeros(flat.shape[:1], dtype=int64, device=flat.device)
            result.append(scatter_(inverse, 0, order, run))
    if return_counts:
        result.append(bincount(run) if flat.numel() else empty)
    return result[0] if len(result) == 1 else tuple(result)


def _slices(x: Tensor, dim, op: str) -> tuple[Tensor, int]:
    """x's slices along `dim` as the rows of a contiguous [n, k] tensor, and dim wrapped."""
    if x.ndim == 0:
        raise IndexError(f"{op}(): dim {dim} is out of range for a 0-d tensor")
    d = views.wrap_dim(dim, x.ndim)
    moved = x.movedim(d, 0)
    if moved.numel() == 0 and moved.shape[0]:
        raise ValueError(
            f"{op}(): There are 0 sized dimensions, and they aren't selected, so unique cannot "
            "be applied"
        )
    return moved.reshape(moved.shape[0], math.prod(moved.shape[1:])).contiguous(), d


def _unique_slices(x: Tensor, dim, op: str, return_inverse, return_counts, sort: bool):
    """unique(dim=) and unique_consecutive(dim=): distinct slices along dim (sorted
    lexicographically when `sort`)."""
    rows, d = _slices(x, dim, op)
    order = None
    if sort and rows.shape[0] > 1:
        order = _lexicographic_order(rows)
        rows = index_ops.index_select(rows, 0, order)
    result = _unique_of(rows, return_inverse, return_counts, order)
    parts = list(result) if isinstance(result, tuple) else [result]
    moved_shape = x.movedim(d, 0).shape[1:]
    parts[0] = parts[0].reshape(parts[0].shape[0], *moved_shape).movedim(0, d)
    return tuple(parts) if len(parts) > 1 else parts[0]


def _lexicographic_order(rows: Tensor) -> Tensor:
    """The stable order of rows [n, k] by their first column, then their second, ...:
    a stable sort by each column from the last to the first (kael's radix sort, k passes)."""
    order = None
    for j in reversed(range(rows.shape[1])):
        column = rows[:, j] if order is None else index_ops.index_select(rows[:, j], 0, order)
        step = index_ops.argsort(column, stable=True)
        order = step if order is None else index_ops.index_select(order, 0, step)
    return order


def _unique_dense(flat: Tensor, return_inverse: bool, return_counts: bool):
    """unique of integers whose span (max - min + 1) is at most DENSE_SPAN or their count:
    the counts of every value in the span by bincount, the present ones by nonzero, each
    element's position by a running count of them: no sort at all (16M int64 labels under
    2**20: 1.4 s through the host's sort then, 0.04 s so). None for other inputs."""
    if flat.dtype.is_floating_point or flat.dtype is bool_ or not flat.numel():
        return None
    lo, hi = (int(v.item()) for v in reductions.aminmax(flat))  # one pass over flat
    span = hi - lo + 1
    if span > max(DENSE_SPAN, flat.numel()):
        return None
    shifted = (flat.to(int64) - lo) if lo else flat.to(int64)  # the true differences fit
    counts = _counts(shifted, None, None, span)  # [0, span): bincount's range checks hold
    present = counts != 0
    where = index_ops.nonzero(present).reshape(-1)
    result = [(where + lo).to(flat.dtype)]
    if return_inverse:
        rank = sequence.cumsum(present.to(int64), 0) - 1
        result.append(index_ops.gather(rank, 0, shifted))
    if return_counts:
        result.append(index_ops.gather(counts, 0, where))
    return result[0] if len(result) == 1 else tuple(result)


DENSE_SPAN = 1 << 16  # unique's counting path takes spans up to this, or up to the count


def unique(
    input: Tensor,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim=None,
):
    """The distinct values in ascending order (NaN last, each NaN its own), with each
    element's position among them and each one's count if asked; with `dim`, the distinct
    slices along it in lexicographic order."""
    x = tensor_arg(input, "unique")
    if dim is not None:
        return _unique_slices(x, dim, "unique", return_inverse, return_counts, True)
    flat = x.reshape(-1).contiguous()
    dense = _unique_dense(flat, return_inverse, return_counts)
    if dense is not None:
        return dense if not return_inverse else (dense[0], dense[1].reshape(x.shape), *dense[2:])
    values, order = index_ops.sort(flat, 0)  # kael's radix sort for all but short inputs
    result = _unique_of(values, return_inverse, return_counts, order)
    if return_inverse:
        parts = list(result)
        parts[1] = parts[1].reshape(x.shape)
        return tuple(parts)
    return result


def unique_consecutive(
    input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim=None
):
    """One value of each run of equal consecutive values (slices along `dim` when given),
    with positions and counts."""
    x = tensor_arg(input, "unique_consecutive")
    if x.dtype.is_complex:  # PyTorch's "unique" has no complex kernel
        raise TypeError(f"unique_consecutive does not support {x.dtype} tensors")
    if dim is not None:
        return _unique_slices(x, dim, "unique_consecutive", return_inverse, return_counts, False)
    result = _unique_of(x.reshape(-1), return_inverse, return_counts)
    if return_inverse:
        parts = list(result)
        parts[1] = parts[1].reshape(x.shape)
        return tuple(parts)
    return result


FUNCTIONS = {
    "scatter": scatter,
    "scatter_reduce": scatter_reduce,
    "index_fill": index_fill,
    "index_copy": index_copy,
    "index_put": index_put,
    "index_put_": index_put_,  # torch.index_put_ is a function too
    "bincount": bincount,
    "histc": histc,
    "histogram": histogram,
    "histogramdd": histogramdd,
    "unique": unique,
    "unique_consecutive": unique_consecutive,
    "put": put,
    "masked_scatter": masked_scatter,
    "select_scatter": select_scatter,
    "slice_scatter": slice_scatter,
    "diagonal_scatter": diagonal_scatter,
    "index_reduce": index_reduce,
}
NOT_METHODS: frozenset[str] = frozenset({"histogramdd"})  # torch has no Tensor.histogramdd
METHODS = {
    "scatter_": scatter_,
    "scatter_reduce_": scatter_reduce_,
    "index_fill_": index_fill_,
    "index_copy_": index_copy_,
    "index_put_": index_put_,
    "put_": put_,
    "masked_scatter_": masked_scatter_,
    "index_reduce_": index_reduce_,
}
