"""Views of traced buffers, and what reading a produced value through a view reads.

A View is a strided window of a numbered buffer. `compose` answers the fusion pass's one
question about movement: reading a value an elementwise step wrote whole through some
view (a transpose, reshape, slice or broadcast of it), which strides and offset of each of
the producer's inputs stand for that read, or None when no strides do.
"""

from __future__ import annotations

from dataclasses import dataclass

from kael.runtime.dtypes import DType


@dataclass(frozen=True, slots=True)
class View:
    """A strided window of a buffer: shape, strides and offset in elements of `dtype`."""

    buffer: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    dtype: DType

    def same_positions(self, other: View) -> bool:
        """Whether both views read the same elements at each index, whatever their buffers
        (a size-1 dim's stride never moves: it may differ)."""
        return (
            self.shape == other.shape
            and self.offset == other.offset
            and self.dtype == other.dtype
            and all(
                a == b or n == 1
                for a, b, n in zip(self.strides, other.strides, self.shape, strict=True)
            )
        )


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = step
        step *= max(shape[i], 1)
    return tuple(strides)


def numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def dense_order(view: View, buffer_bytes: int) -> tuple[int, ...] | None:
    """The dims, outermost first, in which `view` is its whole buffer in row-major order (a
    fresh op output: an elementwise result keeps its operands' memory order, so a
    transposed input's is column-major); None where it is part of the buffer."""
    if view.offset != 0 or numel(view.shape) * view.dtype.itemsize != buffer_bytes:
        return None
    order = tuple(sorted(range(len(view.shape)), key=lambda d: -view.strides[d]))
    row = contiguous_strides(tuple(view.shape[d] for d in order))
    if any(view.shape[d] != 1 and view.strides[d] != s for d, s in zip(order, row)):
        return None
    return order


def covers_buffer(view: View, buffer_bytes: int) -> bool:
    """Whether `view` is the whole buffer, each element once (in any dim order)."""
    return dense_order(view, buffer_bytes) is not None


@dataclass(frozen=True, slots=True)
class Composed:
    """What a read through a view of a produced value is in the producer's terms: each
    producer input's strides and offset, and per producer axis its position as
    `start + sum(step[d] * index_d)` over the reader's dims (None for merged axes)."""

    strides: tuple[tuple[int, ...], ...]
    offsets: tuple[int, ...]
    axes: tuple[tuple[int, dict[int, int]], ...] | None


def compose(
    read_shape: tuple[int, ...],
    read_strides: tuple[int, ...],
    read_offset: int,
    produced: tuple[int, ...],
    inputs: list[tuple[tuple[int, ...], int]],
    keep_axes: bool,
) -> Composed | None:
    """The reads of a producer's inputs that stand for reading its row-major output of
    shape `produced` through (read_shape, read_strides, read_offset); None when some step
    of the read would carry from one producer dim into the next where an input's strides
    do not (then the value must be stored). `inputs` are (strides, offset) over `produced`.

    Each producer input groups the produced dims along which it steps evenly; a read's
    offset and strides are written as digits of those groups, and the read composes when
    no digit overflows anywhere in the read's extent.
    """
    if 0 in read_shape:
        return Composed(tuple((0,) * len(read_shape) for _ in inputs), (0,) * len(inputs), None)
    row = contiguous_strides(produced)
    live = [e for e in range(len(produced)) if produced[e] != 1]
    results = []
    axes = None
    for strides, offset in inputs:
        groups: list[list[int]] = []  # [size, row stride, input stride, first axis]
        for e in live:
            if groups and not keep_axes and groups[-1][2] == produced[e] * strides[e]:
                groups[-1][0] *= produced[e]
                groups[-1][1] = row[e]
                groups[-1][2] = strides[e]
            else:
                groups.append([produced[e], row[e], strides[e], e])
        digits = _digits(read_shape, read_strides, read_offset, groups)
        if digits is None:
            return None
        start, steps = digits
        results.append(
            (
                tuple(
                    sum(a * grp[2] for a, grp in zip(step, groups)) if read_shape[d] != 1 else 0
                    for d, step in enumerate(steps)
                ),
                offset + sum(j * grp[2] for j, grp in zip(start, groups)),
            )
        )
        if keep_axes:
            axes = tuple(
                (start[gi], {d: steps[d][gi] for d in range(len(read_shape)) if steps[d][gi]})
                for gi in range(len(groups))
            )
            axes = _by_axis(axes, groups, len(produced))
    if keep_axes and not inputs:
        groups = [[produced[e], row[e], 0, e] for e in live]
        digits = _digits(read_shape, read_strides, read_offset, groups)
        if digits is None:
            return None
        start, steps = digits
        axes = tuple(
            (start[gi], {d: steps[d][gi] for d in range(len(read_shape)) if steps[d][gi]})
            for gi in range(len(groups))
        )
        axes = _by_axis(axes, groups, len(produced))
    return Composed(tuple(r[0] for r in results), tuple(r[1] for r in results), axes)


def _by_axis(per_group, groups, rank: int):
    """Per producer axis (start, steps); size-1 axes sit at 0."""
    out: list[tuple[int, dict[int, int]]] = [(0, {})] * rank
    for value, grp in zip(per_group, groups):
        out[grp[3]] = value
    return tuple(out)


def _digits(read_shape, read_strides, read_offset, groups):
    """(start digits, per read dim its step digits) over the groups, or None on a carry."""
    total = 1
    for grp in groups:
        total *= grp[0]
    if not 0 <= read_offset < max(total, 1):
        return None
    start = [(read_offset // grp[1]) % grp[0] for grp in groups]
    steps = []
    reach = list(start)
    for size, stride in zip(read_shape, read_strides):
        if size == 1 or stride == 0:
            steps.append([0] * len(groups))
            continue
        if stride < 0 or stride >= total:
            return None
        step = [(stride // grp[1]) % grp[0] for grp in groups]
        if sum(a * grp[1] for a, grp in zip(step, groups)) != stride:
            return None
        for gi, a in enumerate(step):
            reach[gi] += (size - 1) * a
        steps.append(step)
    if any(r >= grp[0] for r, grp in zip(reach, groups)):
        return None
    return start, steps
