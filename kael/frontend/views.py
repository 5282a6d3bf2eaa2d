"""Views: new TensorImpls over the same storage, with PyTorch's shape and stride rules.

Every function here takes and returns a TensorImpl and never touches element memory;
the Tensor methods wrap the result, which validates it.
"""

from __future__ import annotations

import builtins
import math
import operator

from kael.runtime.dtypes import INT64_MAX, INT64_MIN, DType
from kael.runtime.errors import Error, IndexError, TypeError, ValueError
from kael.runtime.tensor_impl import TensorImpl, format_shape
from kael.runtime.tracestate import state as _trace_state


def as_int(value, what: str) -> int:
    """An int argument (Python or NumPy integer, never a bool or float); TypeError otherwise."""
    if type(value) is int:
        return value
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an int, got bool")
    try:
        return operator.index(value)
    except builtins.TypeError:
        raise TypeError(f"{what} must be an int, got {type(value).__name__}") from None


def index_or_none(value) -> int | None:
    """The int a Python or NumPy integer (or anything with __index__: a 0-d integer tensor)
    holds, as torch's parser reads an int; None for a bool or a non-integer."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except builtins.TypeError:
        return None


def as_int64(value, what: str) -> int:
    """as_int for an argument a kernel takes as one int64 word (a diagonal, a shift, an
    ignore_index): ValueError beyond int64, as PyTorch refuses it."""
    value = as_int(value, what)
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"{what} {value} is out of the range of int64")
    return value


def parse_size(args: tuple, what: str = "size") -> tuple[int, ...]:
    """Sizes given as varargs ints or as one tuple or list: (2, 3), ((2, 3),) -> (2, 3)."""
    if len(args) == 1 and not is_int_like(args[0]):
        seq = args[0]
        if not isinstance(seq, (tuple, list)):
            raise TypeError(f"{what} must be ints or a tuple of ints, got {type(seq).__name__}")
        args = seq
    return tuple(as_int(a, f"{what} element {i}") for i, a in enumerate(args))


def is_int_like(value) -> bool:
    """Whether `value` is one integer (it has __index__), not a sequence of them."""
    return hasattr(value, "__index__") and not isinstance(value, (tuple, list))


def check_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Reject negative dimensions, naming the shape, as PyTorch does."""
    for size in shape:
        if size < 0:
            raise ValueError(
                f"Trying to create tensor with negative dimension {size}: {format_shape(shape)}"
            )
    return shape


def wrap_dim(dim, ndim: int, wrap_scalar: bool = True) -> int:
    """A dim in [-ndim, ndim) made non-negative; a 0-d tensor accepts 0 and -1 when wrap_scalar."""
    dim = as_int(dim, "dim")
    if ndim == 0 and not wrap_scalar:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    n = ndim if ndim > 0 else 1
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim + n if dim < 0 else dim


def infer_size(shape: tuple[int, ...], numel: int) -> tuple[int, ...]:
    """Fill in one -1 so the shape holds `numel` elements; ValueError when it cannot."""
    known, infer_at = 1, None
    for i, size in enumerate(shape):
        if size == -1:
            if infer_at is not None:
                raise ValueError("only one dimension can be inferred")
            infer_at = i
        elif size < 0:
            raise ValueError(f"invalid shape dimension {size} in {format_shape(shape)}")
        else:
            known *= size
    if infer_at is None:
        if known == numel:
            return shape
    elif known == 0:
        raise ValueError(
            f"cannot reshape tensor of {numel} elements into shape {format_shape(shape)} because"
            " the unspecified dimension size -1 can be any value and is ambiguous"
        )
    elif numel % known == 0:
        return shape[:infer_at] + (numel // known,) + shape[infer_at + 1 :]
    raise ValueError(f"shape '{format_shape(shape)}' is invalid for input of size {numel}")


def compute_stride(old_shape, old_strides, new_shape) -> tuple[int, ...] | None:
    """PyTorch's computeStride: strides that read `new_shape` in the same order, or None.

    Old dims that are laid out back to back form one chunk; a view exists when every
    chunk splits into whole new dims.
    """
    if not old_shape:
        return (1,) * len(new_shape)
    numel = math.prod(old_shape)
    if numel == 0:
        if tuple(old_shape) == tuple(new_shape):
            return tuple(old_strides)
        return _resize_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_strides[-1]
    tensor_numel = view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        chunk_ends = tensor_d == 0 or (
            old_shape[tensor_d - 1] != 1
            and old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride
        )
        if chunk_ends:
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel = view_numel = 1
    return tuple(new_strides) if view_d == -1 else None


def _resize_strides(shape) -> tuple[int, ...]:
    """Contiguous strides with empty dims counted as 1, as PyTorch gives an empty view."""
    strides, step = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def derive(impl: TensorImpl, shape, strides, offset: int) -> TensorImpl:
    """A new impl over `impl`'s storage with another layout (validated by Tensor)."""
    return TensorImpl(impl.storage, tuple(shape), tuple(strides), offset, impl.dtype, impl.device)


def view(impl: TensorImpl, args: tuple) -> TensorImpl:
    """The same elements read in another shape; kael.Error when the strides do not allow it."""
    result = try_view(impl, args)
    if result is None:
        raise Error(
            "view size is not compatible with input tensor's size and stride (at least one"
            " dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        )
    return result


def view_dtype(impl: TensorImpl, dtype: DType) -> TensorImpl:
    """The same bytes read as `dtype` (PyTorch's view(dtype)): with another element size the
    last dim must be unit-stride and the sizes, strides and offset must split evenly."""
    old, new = impl.dtype.itemsize, dtype.itemsize
    shape, strides, offset = list(impl.shape), list(impl.strides), impl.offset
    if old != new:
        what = f"view {impl.dtype} as {dtype} (different element sizes)"
        if not shape:
            raise ValueError(f"self.dim() cannot be 0 to {what}")
        if strides[-1] != 1 and shape[-1] != 1:
            raise ValueError(f"self.stride(-1) must be 1 to {what}, but got {strides[-1]}")
        for name, value in (
            ("self.size(-1)", shape[-1]),
            ("self.storage_offset()", offset),
            *((f"self.stride({d})", strides[d]) for d in range(len(shape) - 1)),
        ):
            if value * old % new:
                raise ValueError(
                    f"{name} must be divisible by {max(new // old, 1)} to {what}, but got {value}"
                )
        shape[-1] = shape[-1] * old // new
        strides = [s * old // new for s in strides[:-1]] + [1]
        offset = offset * old // new
    return TensorImpl(impl.storage, tuple(shape), tuple(strides), offset, dtype, impl.device)


def try_view(impl: TensorImpl, args: tuple) -> TensorImpl | None:
    """The view of `impl` in the shape `args` (one -1 inferred), or None if none exists."""
    shape = infer_size(parse_size(args, "shape"), math.prod(impl.shape))
    strides = compute_stride(impl.shape, impl.strides, shape)
    return None if strides is None else derive(impl, shape, strides, impl.offset)


def transpose(impl: TensorImpl, dim0, dim1) -> TensorImpl:
    """Swap two dims."""
    ndim = len(impl.shape)
    d0, d1 = wrap_dim(dim0, ndim), wrap_dim(dim1, ndim)
    shape, strides = list(impl.shape), list(impl.strides)
    if ndim:
        shape[d0], shape[d1] = shape[d1], shape[d0]
        strides[d0], strides[d1] = strides[d1], strides[d0]
    return derive(impl, shape, strides, impl.offset)


def permute(impl: TensorImpl, args: tuple) -> TensorImpl:
    """Reorder all dims; `dims` must name each dim exactly once."""
    ndim = len(impl.shape)
    dims = parse_size(args, "dims")
    if len(dims) != ndim:
        raise ValueError(
            f"permute(): dims {format_shape(dims)} has {len(dims)} entries but the tensor has"
            f" {ndim} dimensions"
        )
    wrapped = [wrap_dim(d, ndim) for d in dims]
    if len(set(wrapped)) != ndim:
        raise ValueError(f"permute(): dims {format_shape(dims)} is not a permutation")
    shape = [impl.shape[d] for d in wrapped]
    strides = [impl.strides[d] for d in wrapped]
    return derive(impl, shape, strides, impl.offset)


def reverse_dims(impl: TensorImpl) -> TensorImpl:
    """All dims in reverse order (Tensor.T)."""
    return derive(impl, impl.shape[::-1], impl.strides[::-1], impl.offset)


def expand(impl: TensorImpl, args: tuple) -> TensorImpl:
    """Size-1 dims repeated with stride 0, new leading dims added; -1 keeps a size."""
    sizes = parse_size(args)
    old_shape, old_strides = impl.shape, impl.strides
    ndim, old_ndim = len(sizes), len(old_shape)
    if ndim < old_ndim:
        raise ValueError(
            f"expand: the number of sizes provided ({ndim}) must be greater or equal to the"
            f" number of dimensions in the tensor ({old_ndim})"
        )
    shape, strides = [0] * ndim, [0] * ndim
    for i in range(ndim - 1, -1, -1):
        old_d = i - (ndim - old_ndim)
        if old_d >= 0:
            size, stride = old_shape[old_d], old_strides[old_d]
        else:
            size, stride = 1, (shape[i + 1] * strides[i + 1] if i + 1 < ndim else 1)
        target = sizes[i]
        if target == -1:
            if old_d < 0:
                raise ValueError(
                    "The expanded size of the tensor (-1) isn't allowed in a leading,"
                    f" non-existing dimension {i}"
                )
            target = size
        elif target < 0:
            raise ValueError(f"expand: invalid size {target} in {format_shape(sizes)}")
        if size != target:
            if size != 1:
                raise ValueError(
                    f"The expanded size of the tensor ({target}) must match the existing size"
                    f" ({size}) at non-singleton dimension {i}.  Target sizes:"
                    f" {format_shape(sizes)}.  Tensor sizes: {format_shape(old_shape)}"
                )
            size, stride = target, 0
        shape[i], strides[i] = size, stride
    return derive(impl, shape, strides, impl.offset)


def broadcast_view(impl: TensorImpl, shape: tuple[int, ...]) -> TensorImpl:
    """impl viewed with `shape` (stride 0 along broadcast dims); impl itself when equal."""
    if impl.shape == shape:
        return impl
    lead = len(shape) - len(impl.shape)
    strides = [0] * lead + [
        0 if size == 1 and want != 1 else st
        for size, st, want in zip(impl.shape, impl.strides, shape[lead:])
    ]
    return derive(impl, shape, strides, impl.offset)


def narrowed(impl: TensorImpl, dim: int, start: int, length: int) -> TensorImpl:
    """impl narrowed along a wrapped `dim` to `length` elements from `start`, where
    0 <= start <= start + length <= size: a layout inside impl's own, so valid unchecked."""
    shape = impl.shape
    return TensorImpl.of_tuples(
        impl.storage, (*shape[:dim], length, *shape[dim + 1 :]), impl.strides,
        impl.offset + start * impl.strides[dim], impl.dtype, impl.device,
    )  # fmt: skip


def selected(impl: TensorImpl, dim: int, index: int) -> TensorImpl:
    """impl at `index` of a wrapped `dim`, which leaves the shape, where 0 <= index < size:
    a layout inside impl's own, so valid unchecked."""
    shape, strides = impl.shape, impl.strides
    return TensorImpl.of_tuples(
        impl.storage, shape[:dim] + shape[dim + 1 :], strides[:dim] + strides[dim + 1 :],
        impl.offset + index * strides[dim], impl.dtype, impl.device,
    )  # fmt: skip


def narrow(impl: TensorImpl, dim, start, length) -> TensorImpl:
    """`length` elements of `dim` from `start` (negative start counts from the end)."""
    ndim = len(impl.shape)
    if ndim == 0:
        raise ValueError("narrow() cannot be applied to a 0-dim tensor")
    d = wrap_dim(dim, ndim)
    start, length = as_int(start, "start"), as_int(length, "length")
    size = impl.shape[d]
    if length < 0:
        raise ValueError(f"narrow(): length must be non-negative, got {length}")
    if not -size <= start <= size:
        raise IndexError(
            f"start out of range (expected to be in range of [{-size}, {size}], but got {start})"
        )
    if start < 0:
        start += size
    if start + length > size:
        raise ValueError(
            f"start ({start}) + length ({length}) exceeds dimension size ({size}) of dim {d}"
        )
    shape = impl.shape[:d] + (length,) + impl.shape[d + 1 :]
    return derive(impl, shape, impl.strides, impl.offset + start * impl.strides[d])


def select(impl: TensorImpl, dim, index) -> TensorImpl:
    """The slice at `index` of `dim`, which disappears from the shape."""
    ndim = len(impl.shape)
    if ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor")
    d = wrap_dim(dim, ndim)
    index = as_int(index, "index")
    size = impl.shape[d]
    if not -size <= index < size:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size"
            f" {format_shape(impl.shape)} at dimension {d}"
        )
    if index < 0:
        index += size
    shape = impl.shape[:d] + impl.shape[d + 1 :]
    strides = impl.strides[:d] + impl.strides[d + 1 :]
    return derive(impl, shape, strides, impl.offset + index * impl.strides[d])


def unsqueeze(impl: TensorImpl, dim) -> TensorImpl:
    """A size-1 dim inserted at `dim` (in [-ndim-1, ndim])."""
    ndim = len(impl.shape)
    d = wrap_dim(dim, ndim + 1)
    stride = impl.shape[d] * impl.strides[d] if d < ndim else 1
    shape = impl.shape[:d] + (1,) + impl.shape[d:]
    strides = impl.strides[:d] + (stride,) + impl.strides[d:]
    return derive(impl, shape, strides, impl.offset)


def squeeze(impl: TensorImpl, dim=None) -> TensorImpl:
    """Drop size-1 dims: all of them, or those among `dim` (an int or a tuple)."""
    ndim = len(impl.shape)
    if dim is None:
        dims = range(ndim)
    else:
        given = dim if isinstance(dim, (tuple, list)) else (dim,)
        dims = [wrap_dim(d, ndim) for d in given]
        if len(set(dims)) != len(dims):
            raise ValueError(f"squeeze(): dim {format_shape(given)} repeats a dimension")
    drop = {d for d in dims if ndim and impl.shape[d] == 1}
    keep = [d for d in range(ndim) if d not in drop]
    shape = [impl.shape[d] for d in keep]
    strides = [impl.strides[d] for d in keep]
    return derive(impl, shape, strides, impl.offset)


def flatten_shape(shape: tuple[int, ...], start_dim, end_dim) -> tuple[int, ...] | None:
    """The shape with dims start_dim..end_dim merged, or None when nothing changes; a 0-d
    tensor checks its dims like any other (0 and -1 only) and becomes shape (1,)."""
    ndim = len(shape)
    start_dim, end_dim = as_int(start_dim, "start_dim"), as_int(end_dim, "end_dim")
    start, end = wrap_dim(start_dim, ndim), wrap_dim(end_dim, ndim)
    if start > end:
        raise ValueError(
            f"flatten() has invalid args: start_dim ({start_dim}) cannot come after"
            f" end_dim ({end_dim})"
        )
    if ndim == 0:
        return (1,)
    if start == end:
        return None
    return shape[:start] + (math.prod(shape[start : end + 1]),) + shape[end + 1 :]


def unflatten(impl: TensorImpl, dim, sizes) -> TensorImpl:
    """Split one dim into `sizes` (one -1 inferred); always a view."""
    ndim = len(impl.shape)
    if ndim == 0:
        raise ValueError("unflatten() cannot be applied to a 0-dim tensor")
    d = wrap_dim(dim, ndim)
    sizes = parse_size((sizes,), "sizes")
    if not sizes:
        raise ValueError("unflatten: sizes must be non-empty")
    size = impl.shape[d]
    known = math.prod(s for s in sizes if s != -1)
    if (-1 in sizes and (known == 0 or size % known)) or (-1 not in sizes and known != size):
        raise ValueError(
            f"unflatten: provided sizes {format_shape(sizes)} don't multiply up to the size of"
            f" dim {d} ({size}) in the input tensor"
        )
    sizes = infer_size(sizes, size)
    return view(impl, (impl.shape[:d] + sizes + impl.shape[d + 1 :],))


def unfold(impl: TensorImpl, dimension, size, step) -> TensorImpl:
    """Every window of `size` elements along `dimension`, `step` apart, as a new last dim of
    that size (Tensor.unfold): a 0-d tensor is one element, giving shape [size]."""
    ndim = len(impl.shape)
    d = wrap_dim(dimension, ndim)
    size, step = as_int(size, "unfold(): size"), as_int(step, "unfold(): step")
    extent = impl.shape[d] if ndim else 1
    if size > extent:
        raise ValueError(
            f"unfold(): maximum size for tensor at dimension {d} is {extent} but size is {size}"
        )
    if size < 0:
        raise ValueError(f"unfold(): size is {size} but must be >= 0")
    if step <= 0:
        raise ValueError(f"unfold(): step is {step} but must be > 0")
    if not ndim:
        return derive(impl, (size,), (1,), impl.offset)
    shape, strides = list(impl.shape), list(impl.strides)
    stride = strides[d]
    shape[d], strides[d] = (extent - size) // step + 1, step * stride
    return derive(impl, (*shape, size), (*strides, stride), impl.offset)


def as_strided(impl: TensorImpl, size, stride, storage_offset=None) -> TensorImpl:
    """Any layout over the same storage; validation rejects one that leaves the storage."""
    shape = parse_size((size,), "size")
    strides = parse_size((stride,), "stride")
    offset = impl.offset if storage_offset is None else as_int(storage_offset, "storage_offset")
    return derive(impl, shape, strides, offset)


# ---- remembered layouts ----------------------------------------------------------------------

# (op, shape, strides, exact-typed arguments) -> (shape, strides, offset step) of the view: a
# view's layout is a function of those alone, so a repeated view (x.view(-1) in a loop, x[3:10])
# skips parsing, inference and validation (the first call validated it). Bounded.
_layouts: dict[tuple, tuple] = {}
_MAX_LAYOUTS = 4096


def exact_key(args) -> tuple | None:
    """`args` (view sizes or an index key) as a key whose equality means equal arguments:
    exact ints, None, Ellipsis, slices of those and tuples of ints; None for anything else
    (a bool is not 1, a NumPy int or a tensor is judged again by the full path)."""
    out = []
    for a in args:
        kind = type(a)
        if kind is int or a is None or a is Ellipsis:
            out.append(a)
        elif kind is slice:
            part = slice_key(a)
            if part is None:
                return None
            out.append(part)
        elif kind is tuple and all(type(d) is int for d in a):
            out.append(("tuple", *a))
        else:
            return None
    return tuple(out)


_SLICE_PARTS = (int, type(None))


def slice_key(s: slice) -> tuple | None:
    """A slice as exact_key writes it, or None where a bound is not an int or None."""
    start, stop, step = s.start, s.stop, s.step
    parts = _SLICE_PARTS
    if type(start) in parts and type(stop) in parts and type(step) in parts:
        return ("slice", start, stop, step)
    return None


def remembered(key: tuple, impl: TensorImpl) -> TensorImpl | None:
    """The remembered view of `impl` for `key` ((op, shape, strides, exact args)), or None
    (always while tracing: the trace sees every view as the full path makes it)."""
    if _trace_state.trace is not None:
        return None
    hit = _layouts.get(key)
    if hit is None:
        return None
    shape, strides, step = hit
    return TensorImpl.of_tuples(
        impl.storage, shape, strides, impl.offset + step, impl.dtype, impl.device
    )


def remember(key: tuple, impl: TensorImpl, view: TensorImpl) -> None:
    """Keep `view`'s layout (validated, over `impl`'s storage) for `key`."""
    if _trace_state.trace is not None:
        return
    if len(_layouts) >= _MAX_LAYOUTS:
        _layouts.clear()
    _layouts[key] = (view.shape, view.strides, view.offset - impl.offset)
