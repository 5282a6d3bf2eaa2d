"""PyTorch's memory formats (kael.channels_last, ...): the strides clone, contiguous, to and
the *_like factories give a new tensor, and whether a layout is contiguous in a format."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from kael.frontend import eager, fastpath, views
from kael.runtime.dtypes import DType
from kael.runtime.errors import TypeError, ValueError
from kael.runtime.tensor_impl import TensorImpl, contiguous_strides


class memory_format:  # torch.memory_format's lowercase name
    """A memory format (torch.memory_format): the rule that picks a new tensor's strides."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"kael.{self.name}"

    def __reduce__(self) -> str:
        return self.name  # pickled and copied as the module's one value of that name


memory_format.__module__ = "kael"  # kael.memory_format, as torch.memory_format names itself
contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")

# The channels-last formats: their rank and their dims from innermost to outermost in memory.
_CHANNELS_LAST: dict[memory_format, tuple[int, ...]] = {
    channels_last: (1, 3, 2, 0),
    channels_last_3d: (1, 4, 3, 2, 0),
}


def format_arg(value, op: str, optional: bool = False) -> memory_format:
    """value when it is a memory format (None: preserve_format where `optional`), else a
    kael.TypeError in PyTorch's argument parser's words."""
    if value is None and optional:
        return preserve_format
    if not isinstance(value, memory_format):
        raise TypeError(
            f"{op}(): argument 'memory_format' must be kael.memory_format,"
            f" not {type(value).__name__}"
        )
    return value


def new_format(value, op: str) -> memory_format:
    """The format a tensor made from nothing is laid out in (torch.empty's memory_format: None
    is contiguous_format); kael.ValueError for preserve_format, which has no layout to keep."""
    if value is None:
        return contiguous_format
    fmt = format_arg(value, op)
    if fmt is preserve_format:
        raise ValueError(
            f"{op}(): unsupported memory format Preserve (kael.preserve_format needs a tensor"
            " whose layout to keep)"
        )
    return fmt


def _order(fmt: memory_format, rank: int) -> tuple[int, ...]:
    """A channels-last format's dims, innermost first; kael.ValueError for another rank."""
    order = _CHANNELS_LAST[fmt]
    if rank != len(order):
        raise ValueError(
            f"required rank {len(order)} tensor to use {fmt.name} format, got rank {rank}"
        )
    return order


def strides_in_order(shape: Sequence[int], inner_first: Sequence[int], empty_step: int) -> list:
    """Dense strides stepping through the dims innermost first; a size-0 dim steps by
    `empty_step` (1 as row-major strides do, 0 as torch's channels-last strides do)."""
    strides = [0] * len(shape)
    step = 1
    for d in inner_first:
        strides[d] = step
        step *= shape[d] or empty_step
    return strides


def format_strides(shape: Sequence[int], fmt: memory_format) -> tuple[int, ...]:
    """The strides of a new tensor of `shape` in the format (not preserve_format)."""
    if fmt is contiguous_format:
        return contiguous_strides(shape)
    return tuple(strides_in_order(shape, _order(fmt, len(shape)), 0))


def _dense_in_order(shape: Sequence[int], strides: Sequence[int], inner_first) -> bool:
    """Whether the dims, innermost first, step densely from 1 (size-1 dims may have any stride)."""
    expected = 1
    for d in inner_first:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def is_contiguous_in(impl: TensorImpl, fmt: memory_format) -> bool:
    """torch's is_contiguous(memory_format): a channels-last format's walk, no empty-tensor
    exemption, False at another rank; row-major contiguity for the other formats."""
    order = _CHANNELS_LAST.get(fmt)
    if order is None:
        return impl.is_contiguous()
    return len(impl.shape) == len(order) and _dense_in_order(impl.shape, impl.strides, order)


def is_non_overlapping_and_dense(impl: TensorImpl) -> bool:
    """Whether the elements fill a block exactly once in some dim order (torch's test)."""
    if impl.is_contiguous():  # an empty tensor included
        return True
    moving = [(stride, size) for size, stride in zip(impl.shape, impl.strides) if size >= 2]
    expected = 1
    for stride, size in sorted(moving):
        if stride != expected:
            return False
        expected *= size
    return True


def _stride_order(shape: Sequence[int], layouts: Sequence[Sequence[int]], a: int, b: int) -> int:
    """torch's dim comparison (infer_dense_strides, TensorIterator's reorder_dimensions): 1
    when dim a lies outside dim b, -1 inside, by the first layout that tells them apart; a
    layout with a 0 stride there, or equal strides with a no larger than b, tells nothing."""
    for strides in layouts:
        sa, sb = strides[a], strides[b]
        if sa == 0 or sb == 0:
            continue
        if sa != sb:
            return 1 if sa > sb else -1
        if shape[a] > shape[b]:
            return 1
    return 0


def _inner_first(shape: Sequence[int], layouts: Sequence[Sequence[int]]) -> list[int]:
    """The dims innermost first as the layouts order them: torch's insertion sort, which
    leaves dims no layout tells apart in row-major order."""
    perm = list(range(len(shape) - 1, -1, -1))
    for i in range(1, len(shape)):
        j = i
        for k in range(i - 1, -1, -1):
            order = _stride_order(shape, layouts, perm[k], perm[j])
            if order < 0:
                break
            if order > 0:
                perm[k], perm[j] = perm[j], perm[k]
                j = k
    return perm


def inferred_strides(shape: Sequence[int], strides: Sequence[int]) -> tuple[int, ...]:
    """Dense strides ordering the dims as the given strides do (torch's infer_dense_strides:
    stride-0 dims stay where they are)."""
    return tuple(strides_in_order(shape, _inner_first(shape, (strides,)), 1))


def _broadcast_strides(shape: tuple[int, ...], impl: TensorImpl) -> tuple[int, ...]:
    """impl's strides read at the result's shape: 0 along the dims it is broadcast over."""
    lead = len(shape) - len(impl.shape)
    own = (0 if size == 1 and shape[lead + i] != 1 else stride
           for i, (size, stride) in enumerate(zip(impl.shape, impl.strides)))  # fmt: skip
    return (0,) * lead + tuple(own)


class Layout(NamedTuple):
    """A shape and strides read as a TensorImpl's layout (no memory behind them)."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    is_contiguous = TensorImpl.is_contiguous  # it reads only shape and strides


def converted(impl: TensorImpl) -> Layout:
    """The layout of impl converted to another dtype (torch's TensorIterator reads a CPU
    operand it promotes from such a copy: impl.to(dtype), preserve_format)."""
    return Layout(impl.shape, layout_for(impl, preserve_format))


def _same_shapes(shape: tuple[int, ...], operands: Sequence[TensorImpl], numbers: bool) -> bool:
    """torch's all_ops_same_shape for a result of rank 1 or more: every operand has its
    shape (a 0-d one, a Python number's wrapped tensor included, clears it)."""
    return not numbers and all(t.shape == shape for t in operands)


def _same_layout(shape, operands: Sequence[TensorImpl]) -> tuple[int, ...] | None:
    """torch's fast set-up of operands of the result's shape: row-major when all are, then
    channels-last when all are, then the strides all share when all are dense; else None."""
    if all(t.is_contiguous() for t in operands):
        return contiguous_strides(shape)
    if all(is_contiguous_in(t, channels_last) for t in operands):
        return format_strides(shape, channels_last)
    strides = operands[-1].strides
    if all(t.strides == strides and is_non_overlapping_and_dense(t) for t in operands):
        return strides
    return None


def result_strides(
    shape: tuple[int, ...], operands: Sequence[TensorImpl], numbers: bool = False
) -> tuple[int, ...]:
    """The strides of a new elementwise result of `shape` over `operands` (impls or
    Layouts, in call order; `numbers`: Python numbers among them), as torch's
    TensorIterator lays it out: the operands' common layout when they share one, else
    dense with the dims ordered as the operands' strides order them (a transposed or
    channels-last input keeps its layout)."""
    if len(shape) < 2:
        return contiguous_strides(shape)
    if _same_shapes(shape, operands, numbers):
        strides = _same_layout(shape, operands)
        if strides is not None:
            return strides
    layouts = [_broadcast_strides(shape, t) for t in operands]
    perm = _inner_first(shape, layouts)
    if perm == list(range(len(shape) - 1, -1, -1)):
        return contiguous_strides(shape)
    return tuple(strides_in_order(shape, perm, 0))


def _strides_like_channels_last(impl: TensorImpl, order: tuple[int, ...]) -> bool:
    """torch's guess that a layout is meant as channels-last (is_channels_last_strides_2d):
    no size-0 dim, strides growing along the format's order, ambiguous cases row-major."""
    shape, strides = impl.shape, impl.strides
    if strides[1] == 0:
        return False
    low = 0
    for d in order:
        if shape[d] == 0 or strides[d] < low or (d == 0 and low == strides[1]):
            return False
        low = strides[d] * shape[d] if shape[d] > 1 else strides[d]
    return True


def suggested(impl: TensorImpl) -> memory_format:
    """The format torch's suggest_memory_format reads from a layout (to() keeps a tensor
    whose suggested format is the one asked for)."""
    for fmt, order in _CHANNELS_LAST.items():
        if len(impl.shape) == len(order) and _strides_like_channels_last(impl, order):
            return fmt
    return contiguous_format


def in_memory_order(x, compute):
    """compute(y, first) over x's spatial dims, which start at dim `first` of y: y is x
    itself (first 2), or, where torch calls x's layout channels-last, x read in memory
    order as [N, *spatial, C] (first 1), whose row-major result is read back as
    [N, C, *spatial']: channels-last, as torch's resizes and pads give theirs, with no copy
    either way. `compute` must treat y's dims by position only (index_select, resample)."""
    rank = len(x.shape)
    if suggested(x._impl) is contiguous_format:
        return compute(x, 2)
    y = compute(x.permute((0, *range(2, rank), 1)), 1)
    return y.permute((0, rank - 1, *range(1, rank - 1)))


def in_format(x, fmt: memory_format):
    """x laid out in `fmt`, exactly its strides (size-1 dims' too), itself where it already
    is: for ops whose torch kernel writes its result in the input's suggested format where
    kael's computes it otherwise."""
    if fmt is contiguous_format:
        return x.contiguous()
    strides = format_strides(x.shape, fmt)
    if tuple(x.stride()) == strides:
        return x
    if is_contiguous_in(x._impl, fmt):  # size-1 dims' strides apart: the same memory
        return x.as_strided(x.shape, strides, x.storage_offset())
    return x.contiguous(memory_format=fmt)


def layout_for(impl: TensorImpl, fmt: memory_format) -> tuple[int, ...]:
    """The strides of a new tensor like `impl` in the format: preserve_format keeps a
    non-overlapping dense layout's strides and orders any other as its strides do."""
    if fmt is not preserve_format:
        return format_strides(impl.shape, fmt)
    if is_non_overlapping_and_dense(impl):
        return impl.strides
    return inferred_strides(impl.shape, impl.strides)


def restrided(new: TensorImpl, strides: tuple[int, ...]) -> TensorImpl:
    """The fresh row-major impl `new` read with other dense strides (same storage extent)."""
    return new if strides == new.strides else views.derive(new, new.shape, strides, 0)


def copy_with(impl: TensorImpl, strides: tuple[int, ...], dtype: DType | None = None) -> TensorImpl:
    """A new impl laid out with `strides` holding impl's elements, converted to `dtype` by
    the copy kernel: the fast door's copy kept for this pair of layouts where it has one
    (impl may be a kernel-only view: flip's negative strides)."""
    from kael.frontend.tensor import empty_impl  # tensor imports this module

    out = empty_impl(impl.shape, impl.dtype if dtype is None else dtype, impl.device)
    out = restrided(out, strides)
    if not fastpath.copy_impl(out, impl):
        eager.copy_into(out, impl)
        fastpath.remember_copy_into(out, impl)
    return out


def preserved(result: TensorImpl, like: TensorImpl) -> TensorImpl:
    """A new row-major `result` of like's shape in the layout of torch's empty_like(like)
    (the ops whose kernel allocates so: sort, flip): itself where that is row-major, else
    a copy."""
    strides = layout_for(like, preserve_format)
    return result if strides == result.strides else copy_with(result, strides)
