"""Indexing ops: cat, stack, index_select, gather, scatter_add, index_add_, take_along_dim,
take, nonzero (and where, whose one-argument form it is), sort, argsort and topk.

cat and stack write each input into a window of the output with the copy kernel. The
others run the index kernels of kael/codegen/cpu/gather.py, which check every index
inside the kernel. sort, argsort and topk order the rows with kael's own kernels on every
device (_sort_kernel, _order): short rows by rank (codegen/cpu/rank.py), longer ones by
the radix sort or radix selection (codegen/cpu/radix.py), topk of a few by a heap a row
(codegen/cpu/top.py), and rows past int32 positions by the merge sort
(codegen/cpu/sort.py). The heap, rank and radix kernels write the values too; the merge
sort's are gathered. Nothing is ordered on the host.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from kael.codegen.cpu import block_copy, handwritten, radix, rank, take_rows
from kael.codegen.cpu import gather as kernels
from kael.codegen.cpu import sort as merge_sort
from kael.codegen.cpu import top as top_heap
from kael.frontend import eager, elementwise, factories, fastpath, reductions, views
from kael.frontend.indexing import nonzero_columns, nonzero_impl
from kael.frontend.memory_formats import (
    contiguous_format,
    format_strides,
    preserved,
    restrided,
    suggested,
)
from kael.frontend.outputs import bool_arg, device_of, pair_out, tensor_arg
from kael.frontend.reductions import ValuesIndices
from kael.frontend.tensor import Tensor, clone_impl, empty_impl, has_internal_overlap
from kael.runtime import launches
from kael.runtime.convert import CHECKED, convert_scalar
from kael.runtime.determinism import are_deterministic_algorithms_enabled
from kael.runtime.device import CPU
from kael.runtime.dtypes import (
    INT64_MAX,
    DType,
    bool_,
    int32,
    int64,
    promote_types,
    uint8,
)
from kael.runtime.errors import Error, IndexError, TypeError, ValueError
from kael.runtime.launcher import count_launch
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl, format_shape, overlapping
from kael.runtime.threadpool import ALIGN_ITEMS, get_num_threads
from kael.runtime.tracestate import state as _trace_state

# ---- argument checks ----------------------------------------------------------------------------


def index_arg(x, op: str, what: str = "index", allow_int32: bool = False) -> Tensor:
    """x, checked to be an int64 tensor; with allow_int32 an int32 one too (where PyTorch
    takes both), widened to int64 for the kernels."""
    tensor_arg(x, op, what)
    if allow_int32 and x.dtype is int32:
        return x.to(int64)
    if x.dtype is not int64:
        wanted = "int32 or int64" if allow_int32 else "int64"
        raise TypeError(f"{op}(): expected dtype {wanted} for {what}, got {x.dtype}")
    return x


def _at_least_1d(impl: TensorImpl) -> TensorImpl:
    """A 0-d impl as one element of a 1-d impl; others unchanged."""
    return views.derive(impl, (1,), (1,), impl.offset) if not impl.shape else impl


def _same_rank(a: TensorImpl, b: TensorImpl, op: str, what: str, other: str) -> None:
    if max(len(a.shape), 1) != max(len(b.shape), 1):
        raise ValueError(
            f"{op}(): {what} must have the same number of dimensions as {other}, got"
            f" {len(a.shape)} and {len(b.shape)}"
        )


def check_src_rank(index: TensorImpl, src: TensorImpl, op: str) -> None:
    """A scatter reads src at every index position: src must have index's rank (unless the
    index is empty, as PyTorch judges it). Fewer dims is torch's IndexError (its dim wrap),
    more its RuntimeError; neither is ever read past."""
    have, want = max(len(src.shape), 1), max(len(index.shape), 1)
    if have == want or not index.numel():
        return
    message = (
        f"{op}(): Index tensor must have the same number of dimensions as src tensor, got"
        f" {len(index.shape)} and {len(src.shape)}"
    )
    raise IndexError(message) if have < want else ValueError(message)


def _operand(impl: TensorImpl, strides: Sequence[int] | None = None) -> kernels.Operand:
    return kernels.Operand(impl.data_ptr(), tuple(impl.strides if strides is None else strides))


def _zeroed(strides: Sequence[int], dim: int) -> tuple[int, ...]:
    """Strides with the indexed dim's set to 0: the kernel adds index * stride itself."""
    return tuple(0 if d == dim else s for d, s in enumerate(strides))


def _spread(index: TensorImpl, shape: tuple[int, ...], dim: int) -> TensorImpl:
    """A 1-d (or 0-d) index seen over `shape`: its values along dim, repeated elsewhere."""
    step = index.strides[0] if index.shape else 0
    strides = tuple(step if k == dim else 0 for k in range(len(shape)))
    return views.derive(index, shape, strides, index.offset)


def _out_of_bounds(op: str, value: int, dim: int, size: int) -> IndexError:
    return IndexError(
        f"{op}(): index {value} is out of bounds for dimension {dim} with size {size}"
    )


# ---- cat and stack ---------------------------------------------------------------------------------


def _tensor_list(tensors, op: str) -> list[Tensor]:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(
            f"{op}(): expected a list or tuple of Tensors, got {type(tensors).__name__}"
        )
    if not tensors:
        raise ValueError(f"{op}(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected a Tensor as element {i}, got {type(t).__name__}")
    device_of(list(tensors), op)
    return list(tensors)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors joined along `dim`, in the promoted dtype of all of them.

    1-d empty tensors are skipped whatever their shape elsewhere (PyTorch's legacy rule).
    """
    if type(tensors) is list:  # one snapshot for the key, the replay and the full door
        tensors = tuple(tensors)
    door = _join_key("cat", tensors, dim)
    kept = None if door is None else _JOINS.get(door)
    if kept is not None:
        return _replay_join(kept, tensors)
    impls = [t._impl for t in _tensor_list(tensors, "cat")]
    dtype = impls[0].dtype
    for impl in impls:
        if impl.dtype is not dtype:
            dtype = promote_types(dtype, impl.dtype)
    for i, impl in enumerate(impls):
        if not impl.shape:
            raise ValueError(
                f"cat(): zero-dimensional tensor (at position {i}) cannot be concatenated"
            )
    kept = [(i, impl) for i, impl in enumerate(impls) if impl.shape != (0,)]
    if not kept:
        return Tensor(empty_impl((0,), dtype, impls[0].device))
    first = kept[0][1].shape
    ndim = len(first)
    d = views.wrap_dim(dim, ndim)
    before, after = first[:d], first[d + 1 :]
    total = 0
    for i, impl in kept:
        shape = impl.shape
        if len(shape) != ndim:
            raise ValueError(
                f"cat(): tensors must have the same number of dimensions: got {ndim}"
                f" and {len(shape)} (tensor number {i} in the list)"
            )
        if shape[:d] != before or shape[d + 1 :] != after:
            k = next(k for k in range(ndim) if k != d and shape[k] != first[k])
            raise ValueError(
                f"cat(): sizes of tensors must match except in dimension {d}: expected"
                f" size {first[k]} but got size {shape[k]} in dimension {k} for tensor number"
                f" {i} in the list"
            )
        total += shape[d]
    shape = (*before, total, *after)
    pieces = [impl for _, impl in kept]
    joined = _by_rows(shape, dtype, pieces, d, door, tuple(i for i, _ in kept))
    if joined is not None:
        return joined
    out = empty_impl(shape, dtype, impls[0].device)
    fmt = _joined_format(impls)
    if fmt is not contiguous_format:  # channels-last pieces join channels-last, as torch's
        out = restrided(out, format_strides(shape, fmt))
    start = 0
    for impl in pieces:
        length = impl.shape[d]
        eager.copy_into(views.narrow(out, d, start, length), impl)
        start += length
    return Tensor(out)


def _joined_format(impls: list[TensorImpl]):
    """torch's cat_compute_output_memory_format: the tensors' suggested memory format when
    they all suggest one channels-last format, else row-major (legacy empties included)."""
    first = suggested(impls[0])
    if first is contiguous_format or any(suggested(t) is not first for t in impls[1:]):
        return contiguous_format
    return first


# A join by whole rows pays a call per row and piece: below this many bytes a row, only
# outputs of at most ROWS_COPY_SMALL bytes go by rows (the kernel walk vectorizes short rows).
ROWS_COPY_ROW = 64
ROWS_COPY_SMALL = 1 << 16


def _by_rows(shape: tuple, dtype, pieces: list[TensorImpl], d: int, door=None, which: tuple = ()):
    """The pieces joined into a new dense tensor of `shape` along its dim d (a cat's, or
    stack's new dim) by whole rows (codegen/cpu/block_copy.py) when every piece is a dense
    CPU tensor of `dtype` and the rows are long enough; else None. Not while a trace
    records the copies or launches are watched. With a `door` key the copy is kept for
    the join door (`which`: the call's tensors the pieces are)."""
    if _trace_state.trace is not None or launches.watched():
        return None
    size = dtype.itemsize
    rows = math.prod(shape[:d])
    placed, offset = [], 0
    for impl in pieces:
        if impl.dtype is not dtype or impl.device is not CPU:
            return None
        if impl.strides != fastpath.dense_strides(impl.shape):
            return None
        row = impl.numel() * size // rows if rows else 0
        placed.append((impl.storage.ptr + impl.offset * size, row, offset))
        offset += row
    nbytes = rows * offset
    if not nbytes:  # an empty result: Storage.host takes a positive size
        return None
    if min(row for _, row, _ in placed) < ROWS_COPY_ROW and nbytes > ROWS_COPY_SMALL:
        return None
    storage = Storage.host(nbytes)
    copied = block_copy.copy_rows(storage.ptr, offset, rows, placed)
    if door is not None and copied is not None and len(_JOINS) < _JOINS_MAX:
        _JOINS[door] = (*copied, which, nbytes, shape, dtype)
    return fastpath.new_tensor(storage, shape, dtype)


# The join door: a cat or stack of plain host tensors joined by whole rows in one inline
# copy, keyed by the op, dim and each tensor's dtype and layout: the copy, replayed over
# a fresh buffer and this call's tensors ([4, 16] twice, 1 thread, one run on a loaded
# machine: cat 13.9 -> 3.4 us, stack 13.2 -> 3.2; torch 1.3, 1.5).
_JOINS: dict[tuple, tuple] = {}
_JOINS_MAX = 1024


def _join_key(op: str, tensors, dim) -> tuple | None:
    """The join door's key of a call with a list or tuple of plain tensors, or None."""
    if type(tensors) not in (list, tuple) or not tensors or type(dim) is not int:
        return None
    plain = fastpath.PLAIN
    layouts = []
    for t in tensors:
        if type(t) not in plain:
            return None
        i = t._impl
        layouts.append((i.dtype, i.device, i.shape, i.strides))
    return (op, dim, *layouts) if fastpath._open() else None


def _replay_join(kept: tuple, tensors: tuple) -> Tensor:
    """The remembered row copy over a fresh buffer and this call's tensors (the caller's
    snapshot, which holds them while a long copy runs without the GIL: another thread may
    replace the items of the list it was given)."""
    fn, native, total, which, nbytes, shape, dtype = kept
    count_launch(fn)  # its replays count toward its optimized code
    size = dtype.itemsize
    storage = Storage.host(nbytes)
    addresses = (tensors[j]._impl.storage.ptr + tensors[j]._impl.offset * size for j in which)
    fastpath._native(native.address, total, storage.ptr, *addresses)
    return fastpath.new_tensor(storage, shape, dtype)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Equal-shaped tensors joined along a new dim (which wraps against ndim + 1)."""
    if type(tensors) is list:  # one snapshot for the key, the replay and the full door
        tensors = tuple(tensors)
    door = _join_key("stack", tensors, dim)
    kept = None if door is None else _JOINS.get(door)
    if kept is not None:
        return _replay_join(kept, tensors)
    tensors = _tensor_list(tensors, "stack")
    shape = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != shape:
            raise ValueError(
                f"stack(): expects each tensor to be equal size, but got {format_shape(shape)}"
                f" at entry 0 and {format_shape(t.shape)} at entry {i}"
            )
    d = views.wrap_dim(dim, len(shape) + 1)
    dtype = tensors[0].dtype
    pieces = [t._impl for t in tensors]
    which = tuple(range(len(tensors)))
    joined = _by_rows((*shape[:d], len(tensors), *shape[d:]), dtype, pieces, d, door, which)
    if joined is not None:
        return joined
    return cat([t.unsqueeze(d) for t in tensors], d)


# ---- gather, index_select, take_along_dim ---------------------------------------------------------


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """out[i][j] = input[index[i][j]][j] for dim 0, and so on: out has the index's shape.

    The index may be smaller than the input outside `dim`; negative indices are refused.
    """
    tensor_arg(input, "gather")
    bool_arg(sparse_grad, "gather", "sparse_grad")  # kael has no gradients: checked only
    index = index_arg(index, "gather", allow_int32=True)
    src, idx = input._impl, index._impl
    device_of([src, idx], "gather()")
    d = views.wrap_dim(dim, len(src.shape))
    _same_rank(idx, src, "gather", "index", "input")
    src1, idx1 = _at_least_1d(src), _at_least_1d(idx)
    for k, (have, want) in enumerate(zip(idx1.shape, src1.shape)):
        if k != d and have > want:
            raise ValueError(
                f"gather(): size does not match at dimension {k}: expected index"
                f" {format_shape(idx.shape)} to be no larger than input {format_shape(src.shape)}"
                f" apart from dimension {d}"
            )
    out = empty_impl(idx.shape, src.dtype, src.device)
    _gather_into(out, src1, d, idx1, kernels.STRICT, "gather")
    return Tensor(out)


def _gather_into(
    out: TensorImpl, src: TensorImpl, dim: int, index: TensorImpl, mode: int, op: str
) -> None:
    """out = src gathered along dim by index (index over out's walk shape, at least 1-d);
    its launch offered to the fast door that asks (gather, index_select)."""
    size = src.shape[dim]
    record = [] if fastpath.capturing() else None
    bad = kernels.walk(
        "gather",
        src.dtype,
        index.shape,
        kernels.Operand(out.data_ptr(), out.strides or (1,)),
        _operand(src, _zeroed(src.strides, dim)),
        _operand(index),
        size,
        src.strides[dim],
        mode,
        device=src.device,
        record=record,
    )
    if bad is not None:
        raise _out_of_bounds(op, bad, dim, size)
    if record:  # words: dense (out), table (src), index, error
        fastpath.capture_launch(
            *record[0], ALIGN_ITEMS, (src, index), (out,), (0, 1, 2), error=(3, INT64_MAX)
        )


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """Whole slices of `input` along `dim`, picked by a 1-d (or 0-d) int64 index."""
    tensor_arg(input, "index_select")
    index = index_arg(index, "index_select", allow_int32=True)
    src, idx = input._impl, index._impl
    device_of([src, idx], "index_select()")
    d = views.wrap_dim(dim, len(src.shape))
    if len(idx.shape) > 1:
        raise ValueError(
            f"index_select(): index must be a 1-d (or 0-d) tensor, got {len(idx.shape)} dims"
            f" of shape {format_shape(idx.shape)}"
        )
    n = idx.numel()
    if not src.shape and n != 1:
        raise ValueError(f"index_select(): the index of a 0-d input must have 1 value, got {n}")
    src1 = _at_least_1d(src)
    shape = src1.shape[:d] + (n,) + src1.shape[d + 1 :]
    out = empty_impl(shape if src.shape else (), src.dtype, src.device)
    if n and not out.numel():  # no element is read, but every index is still checked
        _check_range(index, d, src1.shape[d], "index_select")
    run = math.prod(src1.shape[d + 1 :]) * src.dtype.itemsize
    if src.device is CPU and run >= take_rows.MIN_RUN and src1.is_contiguous() and out.numel():
        flat = index.reshape(-1).contiguous()._impl
        outer = math.prod(src1.shape[:d])
        big = out.numel() * out.dtype.itemsize >= eager.NONTEMPORAL_BYTES
        stream = big and take_rows.streams(out, run)
        record = [] if fastpath.capturing() else None
        bad = take_rows.take_rows(out, src1, flat, outer, src1.shape[d], run, stream, record)
        if bad is not None:
            raise _out_of_bounds("index_select", bad, d, src1.shape[d])
        if record:  # words: out, src, index, error
            reads = (src1, flat)
            fastpath.capture_launch(*record[0], 1, reads, (out,), (0, 1, 2), False, (3, INT64_MAX))
        return Tensor(out)
    _gather_into(out, src1, d, _spread(idx, shape, d), kernels.STRICT, "index_select")
    return Tensor(out)


def _check_range(index: Tensor, dim: int, size: int, op: str) -> None:
    """Refuse an index outside [0, size) by its smallest or largest value (two reductions)."""
    for value in (reductions.amin(index).item(), reductions.amax(index).item()):
        if not 0 <= value < size:
            raise _out_of_bounds(op, value, dim, size)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """Values of `input` at `indices` along `dim`, both broadcast outside it; dim=None reads
    the flattened input. With a dim, indices wrap modulo the size, as in PyTorch 2.13."""
    tensor_arg(input, "take_along_dim")
    indices = index_arg(indices, "take_along_dim", "indices", allow_int32=dim is None)
    device_of([input._impl, indices._impl], "take_along_dim()")
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    if input.ndim != indices.ndim:
        raise ValueError(
            "take_along_dim(): input and indices should have the same number of dimensions,"
            f" but got {input.ndim} dimensions for input, and {indices.ndim} dimensions for"
            " indices"
        )
    d = views.wrap_dim(dim, input.ndim, wrap_scalar=False)
    src, idx = input._impl, indices._impl
    index_shape = _broadcast_except(idx.shape, src.shape, d, src.shape[d])
    source_shape = index_shape[:d] + (src.shape[d],) + index_shape[d + 1 :]
    src = views.expand(src, (source_shape,))
    idx = views.expand(idx, (index_shape,))
    out = empty_impl(index_shape, input.dtype, input.device)
    _gather_into(out, src, d, idx, kernels.MODULO, "take_along_dim")
    return Tensor(out)


def _broadcast_except(index: tuple, source: tuple, dim: int, size: int) -> tuple[int, ...]:
    """The index's shape broadcast with the source's outside `dim`."""
    shape = elementwise.broadcast_shapes(index, source[:dim] + (index[dim],) + source[dim + 1 :])
    return shape[:dim] + (index[dim],) + shape[dim + 1 :]


def take(input: Tensor, index: Tensor) -> Tensor:
    """input read as 1-d (in its logical row-major order) at every element of index: the
    result has index's shape; a negative index counts from the end, once."""
    op = "take"
    x = tensor_arg(input, op)
    idx = tensor_arg(index, op, "index")
    if idx.dtype is not int64:
        raise TypeError(f"{op}(): Expected a long tensor for index, but got {idx.dtype}")
    device_of([x._impl, idx._impl], f"{op}()")
    n = x.numel()
    out = empty_impl(idx.shape, x.dtype, x.device)
    if not idx.numel():
        return Tensor(out)
    if not n:
        raise IndexError(f"{op}(): tried to take {idx.numel()} elements from an empty tensor")
    flat = x.reshape(-1)._impl  # a view of a contiguous input, else a copy in logical order
    ix, dst = _at_least_1d(idx._impl), _at_least_1d(out)
    bad = kernels.walk(
        "gather", x.dtype, ix.shape, _operand(dst), kernels.Operand(flat.data_ptr(), (0,) * len(ix.shape)),
        _operand(ix), n, flat.strides[0], kernels.WRAP, device=x.device,
    )  # fmt: skip
    if bad is not None:
        raise IndexError(f"{op}(): index {bad} is out of range for a tensor of {n} elements")
    return Tensor(out)


# ---- scatter_add and index_add -------------------------------------------------------------------


def scatter_add_(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """self[index[i][j]][j] += src[i][j] for dim 0, and so on; repeated indices sum.

    Every index is checked before anything is written, so a bad one leaves self unchanged.
    float16 and bfloat16 add in float32, rounding once at the end, as PyTorch's scatter does.
    Float sums repeat their bits run to run; a long source into fewer lines than threads
    adds in one partial table per thread, so those bits depend on the thread count.
    """
    tensor_arg(self, "scatter_add_", "self")
    index = index_arg(index, "scatter_add_", allow_int32=True)
    tensor_arg(src, "scatter_add_", "src")
    _check_scatter(self, index._impl, src, "scatter_add_", "src")
    check_src_rank(index._impl, src._impl, "scatter_add_")
    d = views.wrap_dim(dim, self.ndim)
    dst, idx, source = _at_least_1d(self._impl), _at_least_1d(index._impl), _at_least_1d(src._impl)
    for k, have in enumerate(idx.shape):
        if have > source.shape[k] or (k != d and have > dst.shape[k]):
            raise ValueError(
                f"scatter_add_(): expected index {format_shape(index.shape)} to be no larger than"
                f" self {format_shape(self.shape)} apart from dimension {d} and no larger than"
                f" src {format_shape(src.shape)}"
            )
    if self.dtype.is_half:  # PyTorch's scatter sums float16/bfloat16 in float32, rounded once
        return self.copy_(scatter_add_(self.float(), dim, index, src.float()))
    _scatter_add(dst, d, idx, source, "scatter_add_")
    self._impl.storage.bump_version()
    return self


def _scatter_add(
    dst: TensorImpl, d: int, idx: TensorImpl, src: TensorImpl, op: str, kind: str = "scatter_add"
) -> None:
    """The checked kernel call: a check-only pass, then lines along d combined race-free
    (summed, or by another of gather.py's SCATTERS `kind`s); or, with fewer lines than
    threads, chunks into private tables folded into dst once every index passed; or, a
    sum on a GPU, every element added atomically."""
    order, way = _scatter_order(src, idx, d)
    sizes = [idx.shape[k] for k in order]
    dense = kernels.Operand(src.data_ptr(), tuple(src.strides[k] for k in order))
    table_strides = _zeroed(dst.strides, d)
    table = kernels.Operand(dst.data_ptr(), tuple(table_strides[k] for k in order))
    ix = kernels.Operand(idx.data_ptr(), tuple(idx.strides[k] for k in order))
    size, stride = dst.shape[d], dst.strides[d]
    # float16/bfloat16 round every add in index order, as torch's index_add_ and index_put_.
    parts = 0 if dst.dtype.is_half else _split_parts(sizes, size, dst.device)
    if parts:
        privates = empty_impl((parts * kernels.private_size(sizes, size),), dst.dtype, CPU)
        split = (privates.data_ptr(), parts)
        bad = kernels.walk(kind, dst.dtype, sizes, dense, table, ix, size, stride, split=split)
        if bad is not None:
            raise _out_of_bounds(op, bad, d, size)
        return
    if _atomic(kind, dst):  # a GPU's atomic adds, each element its own work item
        kind, way = "scatter_atomic", kernels.ORDER_LINES
    # The check reads each distinct index once: dims the index repeats (stride 0) shrink to 1.
    # (An empty dim stays empty: an empty index may have any strides, NumPy's (0, 0) too.)
    checked = [
        1 if st == 0 and n > 1 and k < len(sizes) - 1 else n
        for k, (n, st) in enumerate(zip(sizes, ix.strides))
    ]
    for write, walked in ((False, checked), (True, sizes)):
        bad = kernels.walk(
            kind, dst.dtype, walked, dense, table, ix, size, stride, write=write,
            order=way, device=dst.device,
        )  # fmt: skip
        if bad is not None:
            raise _out_of_bounds(op, bad, d, size)


def _atomic(kind: str, dst: TensorImpl) -> bool:
    """Whether a scatter adds with the GPU's atomics: a sum on a device, of a dtype with an
    atomic add, unless deterministic algorithms are asked for (then lines in index order)."""
    return (
        kind == "scatter_add"
        and dst.device is not CPU
        and dst.dtype in kernels.ATOMIC_DTYPES
        and not are_deterministic_algorithms_enabled()
    )


# Source elements per private table of a split scatter: below it a thread's share of a
# scatter costs less than waking it.
SPLIT_ELEMENTS = 1 << 16


def _split_parts(sizes: Sequence[int], size: int, device) -> int:
    """How many private tables a scatter over `sizes` (indexed dim last, `size` long in the
    destination) splits into: one a thread when its lines are fewer than the threads (the
    line split would leave threads idle) and the tables together hold no more elements than
    the source; else 0 (the line split). On the CPU only."""
    threads = get_num_threads()
    total = math.prod(sizes)
    lines = math.prod(sizes[:-1])
    parts = min(threads, total // SPLIT_ELEMENTS)
    if device is not CPU or lines >= threads or parts < 2:
        return 0
    return parts if parts * lines * size <= total else 0


def _scatter_order(src: TensorImpl, idx: TensorImpl, d: int) -> tuple[list[int], int]:
    """The walk's dim order (d last) and the kernel's way through it: whole lines when d is
    the source's fastest dim (or there are too few lines to pay for a walk per index),
    else d outside and the others by falling source stride."""
    moving = [k for k in range(len(idx.shape)) if idx.shape[k] > 1]
    fastest = min(moving, key=lambda k: src.strides[k], default=d)
    others = [k for k in range(len(idx.shape)) if k != d]
    lines = math.prod(idx.shape[k] for k in others)
    if fastest == d or lines < 64:
        return [*others, d], kernels.ORDER_LINES
    others.sort(key=lambda k: -src.strides[k])
    return [*others, d], kernels.ORDER_OUTER


def _check_scatter(self: Tensor, index: TensorImpl, src: Tensor, op: str, what: str) -> None:
    """Device, dtype, rank, writability and aliasing checks of scatter_add_ and index_add_."""
    device_of([self._impl, index, src._impl], f"{op}()")
    if src.dtype is not self.dtype:
        raise TypeError(
            f"{op}(): expected {what} to have self's dtype {self.dtype}, got {src.dtype}"
        )
    if index.numel():  # an empty index reads nothing: any rank, as PyTorch judges it
        _same_rank(index, self._impl, op, "index", "self")
    if has_internal_overlap(self._impl):
        raise Error(
            f"{op}(): unsupported operation: more than one element of the written-to tensor"
            " refers to a single memory location. Please clone() the tensor before performing"
            " the operation."
        )
    refuse_shared(self._impl, op, **{what: src._impl, "index": index})


def refuse_shared(dst: TensorImpl, op: str, **operands: TensorImpl) -> None:
    """A typed error for an operand whose elements meet dst's (one storage, or two over
    one array): the accumulating kernels would change it before reading it."""
    for name, operand in operands.items():
        if overlapping(operand, dst):
            raise Error(
                f"{op}(): {name} shares memory with self, which the kernel writes while reading"
                f" it. Please clone() the {name} first."
            )


def unshared(dst: TensorImpl, operand: TensorImpl) -> TensorImpl:
    """operand, or a copy of it when its elements meet dst's: a write by index reads it
    as it was before the call (kael's rule for aliased operands, where torch refuses)."""
    return clone_impl(operand) if overlapping(operand, dst) else operand


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """scatter_add_ into a copy of input."""
    tensor_arg(input, "scatter_add")
    return scatter_add_(input.clone(memory_format=contiguous_format), dim, index, src)


def index_add_(self: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """self[index[i]] += alpha * source[i] along dim (whole slices); repeated indices sum.

    alpha is converted to self's dtype first (2.5 adds twice to an int64 tensor, as in PyTorch).
    """
    tensor_arg(self, "index_add_", "self")
    index = index_arg(index, "index_add_", allow_int32=True)
    tensor_arg(source, "index_add_", "source")
    if index.ndim > 1:
        raise ValueError(
            f"index_add_(): index must be a 1-d (or 0-d) tensor, got {index.ndim} dims"
            f" of shape {format_shape(index.shape)}"
        )
    d = views.wrap_dim(dim, self.ndim)
    dst, src = _at_least_1d(self._impl), _at_least_1d(source._impl)
    spread = _spread(index._impl, src.shape, d)
    _check_scatter(self, spread, source, "index_add_", "source")
    n = index.numel()
    if len(src.shape) != len(dst.shape) or any(
        a != b for k, (a, b) in enumerate(zip(src.shape, dst.shape)) if k != d
    ):
        raise ValueError(
            f"index_add_(): source shape {format_shape(source.shape)} must match self shape"
            f" {format_shape(self.shape)} except in dimension {d}"
        )
    if src.shape[d] != n:
        raise ValueError(
            f"index_add_(): the number of indices ({n}) must equal source.size({d})"
            f" ({src.shape[d]})"
        )
    if not (type(alpha) is int and alpha == 1):
        if self.dtype.is_complex:  # complex arithmetic scales a complex source
            src = (Tensor(src) * alpha).to(self.dtype)._impl
        else:
            alpha = convert_scalar(alpha, self.dtype, CHECKED)  # a Scalar: uint64 too
            scaled = elementwise.binary("mul", Tensor(src), alpha)
            src = scaled.to(self.dtype)._impl
    _scatter_add(dst, d, spread, src, "index_add_")
    self._impl.storage.bump_version()
    return self


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """index_add_ into a copy of input."""
    tensor_arg(input, "index_add")
    return index_add_(input.clone(memory_format=contiguous_format), dim, index, source, alpha=alpha)


# ---- nonzero ---------------------------------------------------------------------------------------


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
    """[n, ndim] int64 coordinates of the nonzero elements in row-major order (NaN counts);
    with as_tuple, one 1-d tensor per dim (a 0-d input counts as 1-d)."""
    tensor_arg(input, "nonzero")
    if input.dtype.is_complex:  # nonzero where either part is
        input = input.ne(0)
    impl = input._impl
    if bool_arg(as_tuple, "nonzero", "as_tuple"):
        return tuple(map(Tensor, nonzero_columns(nonzero_impl(_at_least_1d(impl)))))
    return Tensor(nonzero_impl(impl))


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """nonzero's [size, ndim] coordinates at a fixed size: the first `size` of them, or all
    of them followed by rows of fill_value."""
    tensor_arg(input, "nonzero_static")
    for what, value in (("size", size), ("fill_value", fill_value)):
        if type(value) is not int:
            raise TypeError(
                f"nonzero_static(): argument '{what}' must be int, not {type(value).__name__}"
            )
    if size < 0:
        raise ValueError(f"nonzero_static: 'size' must be an non-negative integer, got {size}")
    convert_scalar(fill_value, int64)  # an int beyond int64 refused
    coords = nonzero(input)
    out = factories.full((size, input.ndim), fill_value, dtype=int64, device=input.device)
    found = min(coords.shape[0], size)
    out[:found] = coords[:found]  # row-major, as torch's
    return out


# ---- sort, argsort, topk ---------------------------------------------------------------------------


def _order(
    input: Tensor,
    dim: int,
    descending: bool,
    k: int | None,
    op: str,
    values: TensorImpl | None = None,
) -> TensorImpl:
    """int64 positions along `dim` that sort each row stably (NaN greater than every number),
    the first k of them when k is given; written by the copy kernel in input's layout.
    `values` (sort's or topk's, contiguous like the order): filled with the elements at
    those positions too."""
    if input.dtype.is_complex:
        raise TypeError(f"{op} does not support complex dtypes: complex numbers have no order")
    impl = input._impl
    if not impl.shape:
        out = empty_impl((), int64, impl.device)
        eager.fill(out, 0)
        if values is not None:
            eager.copy_into(values, impl)
        return out
    n = impl.shape[dim]
    if k is not None and 0 < k < n and impl.numel():
        rows = impl.numel() // n
        top = None
        if n <= rank.RANK_ROW:  # ranked whole unless k is a few, or the input is small
            few = (k - 1) * RANK_HEAP <= n if impl.device is CPU else k * DEVICE_RANK_HEAP <= n
            top = "heap" if few or impl.numel() <= SMALL_TOPK else "rank"
        elif _heap_pays(n, k, rows, impl.device):
            top = "heap"
        elif selects(impl.dtype, n):
            return _top_order(impl, dim, descending, k, values)
        if top is not None:
            return _kernel_order(impl, dim, descending, k, top, values)
    return _kernel_order(impl, dim, descending, k, values=values)  # the whole order, then k


# topk of k with (k - 1) * RANK_HEAP <= n of a short row takes the heap, which then scans
# past most keys, rather than ranking them all (float32, 1 thread, [1000, n]: the heap
# wins up to k = 3 of 16 or 20, 5 of 32, 7 of 48, 8 of 64, 12 of 96 and 21 of 128; topk(3)
# of [1000, 20] 150 -> 82 us, topk(5) of [1000, 64] 655 -> 216 us)
RANK_HEAP = 8
DEVICE_RANK_HEAP = 16  # a GPU keeps k * 16 <= n: no device has measured the crossover
# An input this small takes the heap whatever k: its kernel time is a fraction of the two
# copies the rank kernel's whole rows need (topk(3) of [4, 16]: 34 -> 23 us)
SMALL_TOPK = 4096


HEAP_ENTRY_COST = 0.75  # a heap entry's sift step against a radix selection key, measured
DEVICE_HEAP_ROWS = 1024  # a GPU thread runs a heap row: fewer rows leave the device idle


def _heap_pays(n: int, k: int, rows: int, device) -> bool:
    """Whether topk takes the heap kernel (codegen/cpu/top.py), not radix selection: a row
    in random order makes about k ln(n / k) entries, and the k taken out at the end, each
    of log2(k) sift steps; the scan past them is a vector compare, where radix selection
    reads every key a digit (float32, [1024, 1024] to [1, 16M] rows: the crossover is about
    1.3 keys a step). One row is one thread's, which a host thread scans faster than radix
    selection does on all of them; a GPU needs many rows."""
    if device is not CPU and rows < DEVICE_HEAP_ROWS:
        return False
    return k * (math.log(n / k) + 1) * math.log2(k + 1) <= HEAP_ENTRY_COST * n


def _rows_along(impl: TensorImpl, dim: int) -> TensorImpl:
    """impl's rows along dim as the sort kernels read them: contiguous, copied only when
    they are not already (dim last in a contiguous tensor: no copy)."""
    rows = views.transpose(impl, dim, -1)
    return rows if rows.is_contiguous() else clone_impl(rows)


def _top_order(
    impl: TensorImpl, dim: int, descending: bool, k: int, values: TensorImpl | None
) -> TensorImpl:
    """topk's positions: each row's first k in input order by radix selection (one pass a
    digit, no keys moved), then those k candidates' stable order by the sort kernels,
    whose sorted keys are `values` (when given)."""
    keys = _rows_along(impl, dim)
    n = keys.shape[-1]
    rows = keys.numel() // n
    picked = empty_impl(keys.shape[:-1] + (k,), int64, impl.device)
    runner = handwritten.runner_for(impl.device)
    try:
        radix.top(runner, impl.dtype, keys.data_ptr(), rows, n, k, descending,
                  picked.data_ptr(), _Scratch(impl.device))  # fmt: skip
    finally:
        runner.close()
    candidates = Tensor(picked)
    chosen = gather(Tensor(keys), -1, candidates)  # in input order: ties stay so
    last = len(keys.shape) - 1
    sorted_keys = None if values is None else _rows_of(values, dim, chosen.shape)
    order = Tensor(_kernel_order(chosen._impl, last, descending, None, values=sorted_keys))
    out = empty_impl(impl.shape[:dim] + (k,) + impl.shape[dim + 1 :], int64, impl.device)
    _put_rows(out, dim, gather(candidates, -1, order)._impl)
    if values is not None:
        _put_rows(values, dim, sorted_keys)
    return out


def _kernel_order(
    impl: TensorImpl,
    dim: int,
    descending: bool,
    k: int | None,
    top: str | None = None,
    values: TensorImpl | None = None,
) -> TensorImpl:
    """_order by kael's sort kernels on the rows made contiguous, on any device (see
    _sort_kernel); topk keeps the first k of the full stable order (the `top` kernel's
    when given: "rank", or "heap", which writes just k). `values`, when given, gets the
    elements at the order: the heap, rank and radix kernels write them, the merge sort's
    order is gathered."""
    keys = _rows_along(impl, dim)
    n = keys.shape[-1]
    kept = n if k is None else k
    shape = impl.shape[:dim] + (kept,) + impl.shape[dim + 1 :]
    out = empty_impl(shape, int64, impl.device)
    if not out.numel():
        return out
    rows = keys.numel() // n
    written = keys.shape[:-1] + (kept if top == "heap" else n,)  # the kernel's rows
    order = _rows_of(out, dim, written)
    runner = handwritten.runner_for(impl.device)
    at = (runner, impl.dtype, keys.data_ptr(), rows, n, descending)
    kernel = top or _sort_kernel(impl.dtype, n)
    moved = None  # the values the heap, rank or radix kernel wrote
    launched = None  # the heap's or rank's one launch, for the fast door
    try:
        if kernel in ("heap", "rank", "radix"):  # these write the values too
            moved = None if values is None else _rows_of(values, dim, written)
            address = 0 if moved is None else moved.data_ptr()
            if kernel == "heap":
                launched = top_heap.order(*at, order.data_ptr(), kept, address)
            elif kernel == "rank":
                launched = rank.order(*at, order.data_ptr(), address)
            else:
                radix.order(*at, order.data_ptr(), _Scratch(impl.device), address)
        else:
            other = empty_impl(keys.shape, int64, impl.device)
            pair = [order.data_ptr(), other.data_ptr()]
            order = order if merge_sort.order(*at, pair) == pair[0] else other
    finally:
        runner.close()
    last = len(order.shape) - 1
    _put_rows(out, dim, views.narrow(order, last, 0, kept))
    if moved is not None:
        _put_rows(values, dim, views.narrow(moved, last, 0, kept))
    elif values is not None:
        _gather_into(values, impl, dim, out, kernels.STRICT, "sort")
    asked = launched is not None and fastpath.capturing()  # a fast door wants this launch
    if asked and _own_rows(out, order) and (values is None or _own_rows(values, moved)):
        _offer(launched, keys, out, values)
    return out


def _offer(launched: tuple, keys: TensorImpl, out: TensorImpl, values: TensorImpl | None) -> None:
    """The heap's or rank kernel's one launch to the fast door: its words are keys, order,
    ... and, last, the values' address."""
    fn, words, rows, moved = launched
    outs, at = ((out,), (1, 0)) if values is None else ((values, out), (len(words) - 1, 1, 0))
    fastpath.capture_launch(fn, words, rows, moved, 1, (keys,), outs, at)


def _rows_of(dst: TensorImpl, dim: int, shape: tuple[int, ...]) -> TensorImpl:
    """Where a kernel writes rows of `shape` bound for `dst` along dim: dst itself when its
    rows are contiguous there (dim last), else a buffer that _put_rows copies over."""
    rows = views.transpose(dst, dim, -1)
    if rows.shape == shape and rows.is_contiguous():
        return rows
    return empty_impl(shape, dst.dtype, dst.device)


def _own_rows(dst: TensorImpl, rows: TensorImpl) -> bool:
    """Whether `rows` (from _rows_of) are dst's own: a kernel writing them wrote dst."""
    return rows.data_ptr() == dst.data_ptr() and rows.is_contiguous()


def _put_rows(dst: TensorImpl, dim: int, rows: TensorImpl) -> None:
    """dst's rows along dim made `rows`, unless _rows_of handed out dst's own."""
    if not _own_rows(dst, rows):
        eager.copy_into(views.transpose(dst, dim, -1), rows)


class _Scratch:
    """Device memory for one kernel call's buffers, as a callable: nbytes -> address (the
    buffers live as long as this object)."""

    def __init__(self, device) -> None:
        self.device, self.kept = device, []

    def __call__(self, nbytes: int) -> int:
        self.kept.append(empty_impl((nbytes,), uint8, self.device))
        return self.kept[-1].data_ptr()


def rank_positions(rows: Tensor, ranks: Tensor) -> Tensor:
    """For rows [..., n] (contiguous) and ranks [..., 1] (int64, each in [0, n)): the
    position in each row of the element its stable ascending sort (NaN last) puts at that
    rank, by radix selection: no keys move (see codegen/cpu/radix.py's select)."""
    impl = rows._impl
    n = impl.shape[-1]
    count = impl.numel() // n
    left = ranks.clamp(0, n - 1).contiguous()._impl  # in range, and used up by the kernels
    out = empty_impl(ranks._impl.shape, int64, impl.device)
    runner = handwritten.runner_for(impl.device)
    try:
        radix.select(runner, impl.dtype, impl.data_ptr(), count, n, left.data_ptr(),
                     out.data_ptr(), _Scratch(impl.device))  # fmt: skip
    finally:
        runner.close()
    return Tensor(out)


def selects(dtype: DType, n: int) -> bool:
    """Whether rank_positions serves rows of n keys of dtype: where the radix sort would."""
    return _sort_kernel(dtype, n) == "radix"


RADIX_KEYS_A_BYTE = 16  # the radix sort takes rows of this many keys a byte of key or more


def _sort_kernel(dtype: DType, n: int) -> str:
    """Which kernel sorts rows of n keys: "rank" for rows of at most rank.RANK_ROW (n^2
    vector compares, no branch); "radix" where its per-row cost (256 counters, each way,
    in each of itemsize passes) is paid back; else "merge", whose log2(n) passes also
    serve rows past the radix sort's int32 positions."""
    if n <= rank.RANK_ROW:
        return "rank"
    if RADIX_KEYS_A_BYTE * dtype.itemsize <= n <= radix.MAX_ROW:
        return "radix"
    return "merge"


def _descending(descending, stable, op: str) -> bool:
    """sort's and argsort's flags checked as bools (stable may be None, as torch.sort's
    schema has it; kael's order is always stable); descending returned."""
    if stable is not None:
        bool_arg(stable, op, "stable")
    return bool_arg(descending, op, "descending")


def sort(
    input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False, *, out=None
) -> ValuesIndices:
    """(values, indices) of each row along dim sorted; always stable (ties keep input order,
    descending too), NaN last ascending and first descending. out=: a (values, indices)
    pair written as torch does."""
    tensor_arg(input, "sort")
    descending = _descending(descending, stable, "sort")
    d = views.wrap_dim(dim, input.ndim)
    values = empty_impl(input.shape, input.dtype, input.device)
    order = _order(input, d, descending, None, "sort", values)
    impl = input._impl
    values, order = preserved(values, impl), preserved(order, impl)
    return pair_out(out, ValuesIndices(Tensor(values), Tensor(order)), "sort")


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """The indices of sort(input, dim, descending)."""
    tensor_arg(input, "argsort")
    descending = _descending(descending, stable, "argsort")
    d = views.wrap_dim(dim, input.ndim)
    return Tensor(preserved(_order(input, d, descending, None, "argsort"), input._impl))


def topk(
    input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True, *, out=None
) -> ValuesIndices:
    """(values, indices) of the k largest (or smallest) elements along dim, in sorted order;
    0 <= k <= size, NaN counts as the largest value."""
    tensor_arg(input, "topk")
    k = views.as_int(k, "topk(): k")
    largest = bool_arg(largest, "topk", "largest")
    bool_arg(sorted, "topk", "sorted")
    if input.dtype is bool_:
        raise TypeError("topk(): does not support bool tensors")
    d = views.wrap_dim(dim, input.ndim)
    size = input.shape[d] if input.ndim else 1
    if not 0 <= k <= size:
        raise IndexError(
            f"topk(): selected index k out of range: k is {k} but dimension {d} has size {size}"
        )
    shape = input.shape[:d] + (k,) + input.shape[d + 1 :] if input.ndim else ()  # 0-d: 0-d
    values = empty_impl(shape, input.dtype, input.device)
    order = _order(input, d, largest, k, "topk", values)
    return pair_out(out, ValuesIndices(Tensor(values), Tensor(order)), "topk")


# The orderings whose public function and method are fastpath.keyed's door itself.
FAST = ("sort", "argsort", "topk", "gather", "index_select")
FUNCTIONS: dict[str, Callable] = {
    "cat": cat,
    "stack": stack,
    "gather": gather,
    "index_select": index_select,
    "take_along_dim": take_along_dim,
    "take": take,
    "scatter_add": scatter_add,
    "index_add": index_add,
    "nonzero": nonzero,
    "nonzero_static": nonzero_static,
    "sort": sort,
    "argsort": argsort,
    "topk": topk,
}


def where(condition: Tensor, input=None, other=None, *, out: Tensor | None = None):
    """torch.where: input where condition holds, else other (all three broadcast); the
    condition alone: the indices of its nonzero elements, nonzero(as_tuple=True)."""
    if input is None and other is None and out is None:
        return nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where() takes a condition alone, or a condition, an input and an other")
    return _choose(condition, input, other, out)


def _choose(condition: Tensor, input, other, out: Tensor | None = None) -> Tensor:
    """where's choice: by parts (complex.where) where the result is complex."""
    from kael.frontend import complex

    if complex.is_complex(input) or complex.is_complex(other):
        return complex.choose(condition, input, other, out)
    return elementwise.where(condition, input, other, out)


def _where_method(self: Tensor, condition: Tensor, other) -> Tensor:
    """Tensor.where(condition, other) is where(condition, self, other), as in torch."""
    return _choose(condition, self, other)


# Tensor-only methods (in-place variants, operators).
METHODS: dict[str, Callable] = {
    "scatter_add_": scatter_add_,
    "index_add_": index_add_,
    "where": _where_method,
}
NOT_METHODS: frozenset[str] = frozenset({"cat", "stack"})
