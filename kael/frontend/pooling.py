"""torch.nn.functional's pooling: max_pool1d/2d/3d (indices, ceil_mode, dilation),
avg_pool1d/2d/3d (count_include_pad, divisor_override, ceil_mode), the adaptive pools and
the lp pools.

A pool reduces a window view of its padded input (conv.windows: no copy). A max pool
follows PyTorch's scan of each window: from -inf (an integer dtype's minimum, which is
also the padding) it moves on a greater value or a NaN, so the first maximum wins, the
last NaN wins and padding never does; its index is the winner's position in the
unpadded input plane, or where the scan started (the window's first position inside
the input) when nothing beat -inf. The scan is one kernel over one view per tap, or for
more taps one per run of taps and one over their results; kernels too large for views
reduce the flattened windows. An average pool sums the taps
(in float32 for float16 and bfloat16) and divides by each window's count. Adaptive pools
gather each dim's windows, padded to the longest with a slot that never counts (zero for
a sum, -inf for a max): no window ever reads another's values.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from kael.frontend import elementwise as ew
from kael.frontend import (
    factories,
    fastpath,
    index_ops,
    memory_formats,
    reductions,
    scatters,
    views,
)
from kael.frontend.conv import batched, offsets, tuple_arg, windows
from kael.frontend.formula import Value, launch, where
from kael.frontend.outputs import format_result, tensor_arg
from kael.frontend.padding import pad
from kael.frontend.tensor import Tensor, empty_impl
from kael.frontend.tracing import op_door
from kael.runtime.dtypes import DType, float32, int64
from kael.runtime.errors import Error, TypeError, UnsupportedDtype, ValueError
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl


def _check_pads(kernel, pads, dilation, op: str) -> None:
    """PyTorch's padding checks: non-negative, at most half the (dilated) kernel."""
    for k, p, d in zip(kernel, pads, dilation):
        if p < 0:
            raise ValueError(f"{op}: pad must be non-negative, but got pad: {p}")
        if p > (d * (k - 1) + 1) // 2:
            raise ValueError(
                f"{op}: pad should be at most half of effective kernel size, but got pad={p},"
                f" kernel_size={k} and dilation={d}"
            )
        if p > k // 2:  # PyTorch's pool shape check: half the kernel, dilated or not
            raise ValueError(
                f"{op}: pad should be smaller than or equal to half of kernel size, but got"
                f" pad={p} and kernel_size={k}"
            )


def _check_fits(size, kernel, op: str) -> None:
    """avg_pool3d's input check (PyTorch's pool3d_shape_check with check_input_size): the
    input at least as large as the kernel in every dim, whatever the padding."""
    if any(s < k for s, k in zip(size, kernel)):
        (t, h, w), (kt, kh, kw) = size, kernel
        raise ValueError(
            f"{op}: input image (T: {t} H: {h} W: {w}) smaller than kernel size"
            f" (kT: {kt} kH: {kh} kW: {kw})"
        )


def _sizes(size, kernel, stride, pads, dilation, ceil_mode: bool, op: str) -> list[int]:
    """Each dim's output size: PyTorch's pooling_output_shape (a ceil_mode window must
    start inside the input or its left padding)."""
    out = []
    for s, k, st, p, d in zip(size, kernel, stride, pads, dilation):
        span = s + 2 * p - d * (k - 1) - 1
        o = (span + (st - 1 if ceil_mode else 0)) // st + 1
        if ceil_mode and (o - 1) * st >= s + p:
            o -= 1
        if o < 1:
            raise ValueError(
                f"{op}: Given input size {list(size)}, calculated output size is too small"
            )
        out.append(o)
    return out


def _prepare(input, kernel_size, stride, padding, dilation, ceil_mode, dims: int, op: str):
    """(x as [N, C, *size], whether it was batched, kernel, stride, pads, dilation, output
    sizes), checked in PyTorch's order; avg_pool3d's input must hold its kernel."""
    x, was_batched = batched(input, dims, op)
    kernel = tuple_arg(kernel_size, dims, "kernel_size", op)
    no_stride = stride is None or (isinstance(stride, Sequence) and not stride)
    stride = kernel if no_stride else tuple_arg(stride, dims, "stride", op)
    pads = tuple_arg(padding, dims, "padding", op)
    dilation = tuple_arg(dilation, dims, "dilation", op)
    if any(v <= 0 for v in (*kernel, *stride, *dilation)):
        raise ValueError(f"{op}: kernel_size, stride and dilation must be positive")
    _check_pads(kernel, pads, dilation, op)
    if op == "avg_pool3d":
        _check_fits(x.shape[2:], kernel, op)
    out = _sizes(x.shape[2:], kernel, stride, pads, dilation, bool(ceil_mode), op)
    return x, was_batched, kernel, stride, pads, dilation, out


def _unbatched(result, was_batched: bool):
    """A pool's tensor, or (values, indices), without the batch dim an unbatched input
    gained."""
    if was_batched:
        return result
    if isinstance(result, tuple):
        return tuple(t.squeeze(0) for t in result)
    return result.squeeze(0)


def _padded(x: Tensor, pads, kernel, stride, dilation, out, value) -> Tensor:
    """x padded by `pads` on both sides, and on the right as far as ceil_mode's last
    windows reach, with `value`."""
    amounts: list[int] = []
    for s, p, k, st, d, o in reversed(list(zip(x.shape[2:], pads, kernel, stride, dilation, out))):
        reach = (o - 1) * st + d * (k - 1) + 1
        amounts += [p, max(reach - s - p, p)]
    return pad(x, amounts, value=value) if any(amounts) else x


def _lowest(dtype: DType):
    """Where PyTorch's max pool scan starts, and the padding: -inf, or the integer
    dtype's minimum (no value is below it, so padding never wins)."""
    return -math.inf if dtype.is_floating_point else dtype.min


def _max_pool(dims: int, op: str):
    def max_pool(
        input: Tensor,
        kernel_size,
        stride=None,
        padding=0,
        dilation=1,
        ceil_mode: bool = False,
        return_indices: bool = False,
    ):
        door, served = _served(
            op, input, (kernel_size, stride, padding, dilation, ceil_mode, return_indices)
        )
        if served is not None:
            return served
        x, was_batched, kernel, stride, pads, dilation, out = _prepare(
            input, kernel_size, stride, padding, dilation, ceil_mode, dims, op
        )
        if x.dtype.is_bool:
            raise UnsupportedDtype(f"{op}: not implemented for bool")
        lowest = _lowest(x.dtype)
        if not return_indices and _by_regions(x, kernel):
            geometry = (kernel, stride, pads, dilation, out)
            y = _over_regions(x, geometry, lowest, ("max_pool",), _fold_max)
            return _unbatched(y, was_batched)
        xp = _padded(x, pads, kernel, stride, dilation, out, lowest)
        win = windows(xp, kernel, stride, dilation)
        win = win[(slice(None), slice(None), *(slice(0, o) for o in out))]
        seen = [] if door is not None and xp is x and not return_indices else None
        values, winners = _window_max(win, dims, return_indices, x, seen)
        if not return_indices:
            if seen is not None:
                _keep(door, input._impl, seen, was_batched)
            return _unbatched(values, was_batched)
        starts = [[o * st - p for o in range(n)] for st, p, n in zip(stride, pads, out)]
        # PyTorch's scan starts at each window's first tap inside the input (or past it)
        firsts = [[v if v >= 0 else v % d for v in col] for col, d in zip(starts, dilation)]
        index = _positions(winners, kernel, starts, dilation, firsts, x.shape[2:])
        return _unbatched((values, index), was_batched)

    max_pool.__name__ = max_pool.__qualname__ = op
    max_pool.__doc__ = f"torch.nn.functional.{op}: PyTorch's max scan of each padded window."
    return max_pool


# The fast door of a plain pool (a host input read in place, no padding copied, no
# indices, at most MAX_TAPS taps in the one launch that made the result, running inline),
# keyed by the op, the input's dtype and layout and the arguments as given: that launch,
# replayed over this call's input at each tap's distance from its start, an average's
# divisor (fixed by the key) held ([1, 3, 8, 8] 2x2 max, 1 thread, one run on a loaded
# machine: 42 -> 3.3 us; torch 2.8).
_DOOR: dict[tuple, tuple] = {}
_DOOR_MAX = 1024
_UNSERVED = ()  # a key whose calls the door cannot keep


def _served(op: str, input, arguments: tuple) -> tuple:
    """(the door's key, None for a call it judged it cannot keep; its replay's result
    where it keeps the call, else None). A call the door cannot keep (too big, padded)
    then takes the formula's layouts door, which `seen` would skip."""
    door = fastpath.tensor_key(input, arguments, op)
    kept = None if door is None else _DOOR.get(door)
    if kept is _UNSERVED:
        return None, None
    return door, None if kept is None else _replay(kept, input._impl)


def _keep(door: tuple, x, seen: list, was_batched: bool) -> None:
    """Keep the call the full door just made for `door` where one launch (`seen`) made
    the result: per operand, its distance in bytes from the input's first element, or the
    address of a tensor of its own (a divisor), held."""
    if len(_DOOR) >= _DOOR_MAX:
        return
    found = None
    if len(seen) == 1:
        entry, target, ordered = seen[0]
        found = fastpath.inline_launch(entry, target, ordered, (), {})
    if found is None:
        _DOOR[door] = _UNSERVED
        return
    parts, held = [], []
    for t in ordered:
        if t.storage is x.storage:
            parts.append((True, (t.offset - x.offset) * t.dtype.itemsize))
        else:
            parts.append((False, t.storage.ptr + t.offset * t.dtype.itemsize))
            held.append(t.storage)
    nbytes = target.numel() * target.dtype.itemsize
    native, total, _ = found
    _DOOR[door] = (
        native,
        total,
        tuple(parts),
        nbytes,
        target.shape,
        target.strides,
        target.dtype,
        was_batched,
        held,
    )


def _replay(kept: tuple, x) -> Tensor:
    """The remembered launch over this call's input (an impl), into the layout it made."""
    native, total, parts, nbytes, shape, strides, dtype, was_batched, _ = kept
    base = x.storage.ptr + x.offset * x.dtype.itemsize
    storage = Storage.host(nbytes)
    addresses = (base + at if own else at for own, at in parts)
    fastpath._native(native.address, total, storage.ptr, *addresses)
    y = fastpath._result(storage, shape, strides, dtype)
    return y if was_batched else y.squeeze(0)


def _window_max(
    win: Tensor, dims: int, winners: bool, like: Tensor, seen: list | None = None
) -> tuple[Tensor, Tensor | None]:
    """The windows view [N, C, *out, *kernel] scanned as PyTorch's max pools do: each
    window's max and, with `winners`, its winning tap's row-major number (the number of
    taps where none beat the scan's start: all padding, -inf or the dtype's minimum).
    The results are laid out as pools of `like` (the input) are (format_result). `seen`: see
    formula.launch (the values' one launch, where one made them)."""
    taps = _taps(win, win.shape[2 + dims :], MAX_TAPS**2)
    if taps is None:
        return _reduced_max(win, dims, winners)
    return _scan_max(taps, winners, like, seen)


def _scan_max(
    taps: list[Tensor], winners: bool, like: Tensor, seen: list | None = None
) -> tuple[Tensor, Tensor | None]:
    """_window_max of the taps' views [N, C, *out]: one kernel for at most MAX_TAPS taps
    (and one more for the winners); else each run of MAX_TAPS taps scanned, then their
    results: a scan goes on from where the last run's left off, so the scan of those
    results is the whole scan, and its winner the winning run's."""
    if len(taps) <= MAX_TAPS:
        dtype, shape = taps[0].dtype, taps[0].shape
        target = format_result(like._impl, shape, dtype)
        values = launch(("max_pool", len(taps)), taps, dtype, _fold_max, out=target, seen=seen)
        if not winners:
            return values, None
        target = format_result(like._impl, shape, int64)
        return values, launch(
            ("max_pool_winner", len(taps)), taps, taps[0].dtype, _fold_winner, out=target
        )
    runs = [_scan_max(taps[i : i + MAX_TAPS], winners, like) for i in range(0, len(taps), MAX_TAPS)]
    values, run = _scan_max([v for v, _ in runs], winners, like)
    if not winners:
        return values, None
    won = run < len(runs)
    run = index_ops.where(won, run, 0)
    inner = index_ops.gather(index_ops.stack([w for _, w in runs], -1), -1, run.unsqueeze(-1))
    return values, index_ops.where(won, inner.squeeze(-1) + run * MAX_TAPS, len(taps))


def _reduced_max(win: Tensor, dims: int, winners: bool) -> tuple[Tensor, Tensor | None]:
    """_window_max for kernels of more than MAX_TAPS**2 taps (too many views), by
    reductions over the flattened windows: the scan's winner, then its value."""
    count = math.prod(win.shape[2 + dims :])
    flat = win.reshape((*win.shape[: 2 + dims], count))
    local = window_winners(flat)
    values = index_ops.gather(flat, -1, local).squeeze(-1)
    if not winners:
        return values, None
    return values, index_ops.where(values == _lowest(win.dtype), count, local.squeeze(-1))


def window_winners(windows: Tensor) -> Tensor:
    """[..., 1] int64: each window's (last dim's) winner of PyTorch's max scan, its last
    NaN, else its first maximum (a window of real values: no padding to leave out)."""
    first = reductions.argmax(windows, -1, keepdim=True)
    if not windows.dtype.is_floating_point:
        return first
    ranks = factories.arange(windows.shape[-1], device=windows.device)
    last_nan = reductions.amax(index_ops.where(windows != windows, ranks, -1), -1, keepdim=True)
    return index_ops.where(last_nan >= 0, last_nan, first)


def _positions(winners: Tensor, kernel, starts, steps, firsts, size) -> Tensor:
    """The flat input-plane position (the plane's dims have `size`) of each window's
    winning tap: tap k of window o along dim d is at starts[d][o] + k * steps[d]; the
    sentinel prod(kernel) (no tap won) gives firsts[d][o], where the scan started."""
    planes = [math.prod(size[d + 1 :]) for d in range(len(size))]
    rest, offset = winners, 0
    for d in reversed(range(len(kernel))):
        tap = ew.binary("remainder", rest, kernel[d])
        rest = ew.binary("floor_divide", rest, kernel[d])
        offset = offset + tap * (steps[d] * planes[d])
    base = _grid(starts, planes, int64, winners.device)
    first = _grid(firsts, planes, int64, winners.device)
    return index_ops.where(winners == math.prod(kernel), first, base + offset)


def _column(values: Sequence, d: int, dims: int, dtype: DType, device) -> Tensor:
    """`values`, one per output position along spatial dim d, as a [1, 1, ..] tensor of
    `dtype` that broadcasts over the other dims."""
    shape = [1] * (2 + dims)
    shape[2 + d] = len(values)
    return factories.tensor(list(values), dtype=dtype, device=device).reshape(shape)


def _grid(columns, planes, dtype: DType, device) -> Tensor:
    """sum over d of columns[d] * planes[d], broadcast to [1, 1, *out]."""
    dims = len(columns)
    terms = [
        _column([v * plane for v in column], d, dims, dtype, device)
        for d, (column, plane) in enumerate(zip(columns, planes))
    ]
    return sum(terms[1:], terms[0])


def _avg_pool(dims: int, op: str):
    def avg_pool(
        input: Tensor,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> Tensor:
        door, served = _served(
            op,
            input,
            (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override),
        )
        if served is not None:
            return served
        x, was_batched, kernel, stride, pads, dilation, out = _prepare(
            input, kernel_size, stride, padding, 1, ceil_mode, dims, op
        )
        if not x.dtype.is_floating_point and x.dtype is not int64:
            raise UnsupportedDtype(f"{op}: not implemented for {x.dtype} (floating point or int64)")
        # float16 and bfloat16 sum in float32, rounded once at the end, as PyTorch does
        compute = float32 if x.dtype.is_half else x.dtype
        geometry = (kernel, stride, pads, dilation, out)
        if divisor_override is not None:
            divisor = _divisor(divisor_override, dims, compute, x.device, op)
        else:
            divisor = _counts(x.shape[2:], geometry, count_include_pad, compute, x.device)
        if _by_regions(x, kernel):
            y = _over_regions(
                x, geometry, 0.0, ("avg_pool",), _mean_of_taps, divisor, compute, _averages(x, out)
            )
            return _unbatched(y, was_batched)
        xp = _padded(x, pads, kernel, stride, dilation, out, 0.0)
        win = windows(xp, kernel, stride, dilation)
        win = win[(slice(None), slice(None), *(slice(0, o) for o in out))]
        taps = _taps(win, kernel)
        if taps is None:  # one reduction, then the division
            taps = [reductions.sum(win, tuple(range(2 + dims, 2 + 2 * dims)), dtype=compute)]
        target = _averages(x, out)
        # one kernel: the taps summed in PyTorch's order, then divided
        key = ("avg_pool", len(taps))
        kept = door is not None and xp is x and math.prod(kernel) <= MAX_TAPS
        seen = [] if kept else None
        y = launch(key, [*taps, divisor], compute, _mean_of_taps, out=target, seen=seen)
        if seen is not None:
            _keep(door, input._impl, seen, was_batched)
        return _unbatched(y, was_batched)

    avg_pool.__name__ = avg_pool.__qualname__ = op
    avg_pool.__doc__ = f"torch.nn.functional.{op}: window sums over each window's count."
    return avg_pool


def _averages(x: Tensor, out: Sequence[int]) -> TensorImpl:
    """A new avg_pool result [N, C, *out]: in x's suggested format (format_result), but
    row-major in 3-d, as torch's avg_pool3d writes a channels_last_3d input's."""
    shape = (*x.shape[:2], *out)
    if len(out) == 3:
        return empty_impl(shape, x.dtype, x.device)
    return format_result(x._impl, shape, x.dtype)


def _divisor(value, dims: int, dtype: DType, device, op: str) -> Tensor:
    """divisor_override as a broadcast tensor: an int (PyTorch refuses floats and
    bools), never zero."""
    value = views.as_int(value, f"{op}: divisor_override")
    if value == 0:
        raise ValueError(f"{op}: divisor must be not zero")
    return factories.full((1,) * (2 + dims), value, dtype=dtype, device=device)


def _avg_pool1d(pool):
    """avg_pool1d takes PyTorch's arguments: its 2d and 3d's but divisor_override."""

    def avg_pool1d(input: Tensor, *args, **kwargs) -> Tensor:
        if "divisor_override" in kwargs or len(args) > 5:
            raise TypeError("avg_pool1d() got an unexpected keyword argument 'divisor_override'")
        return pool(input, *args, **kwargs)

    avg_pool1d.__doc__ = pool.__doc__
    return avg_pool1d


# Kernels of at most this many taps pool as one elementwise kernel over one view per tap
# (each [N, C, *out], strided by the stride): 3x3/2 average over [32, 64, 56, 56] takes
# half the time of the reduction over the window view, whose kernel dims are innermost.
MAX_TAPS = 32


def _taps(win: Tensor, kernel: Sequence[int], limit: int = MAX_TAPS) -> list[Tensor] | None:
    """One view per kernel offset of the window view, or None for a kernel of more than
    `limit` taps."""
    if math.prod(kernel) > limit:
        return None
    return [win[(Ellipsis, *offset)] for offset in offsets(kernel)]


# Inputs at least this large pool region by region (_over_regions): the regions inside
# the input and near its edges read it in place, no padded copy (a third of avg_pool2d's
# time at [32, 64, 56, 56]); smaller ones take the one padded launch, fewer launches.
REGION_ELEMENTS = 1 << 20
# An edge band of at most this many windows along a dim pools window by window, each over
# its taps inside the input; a longer one (a long kernel at stride 1: every window its own
# launch and tap count) pools as one region over a padded copy of its slice.
EDGE_WINDOWS = 2


def _by_regions(x: Tensor, kernel: Sequence[int]) -> bool:
    return x.numel() >= REGION_ELEMENTS and math.prod(kernel) <= MAX_TAPS


def _region_ranges(
    size: int, k: int, st: int, p: int, d: int, o: int
) -> list[tuple[int, int, bool]]:
    """One dim's output ranges (start, stop, in place): the windows inside the input as
    one, and each edge band's (windows starting in the padding, or reaching past the end)
    window by window, so each tap lies wholly inside the input or wholly outside it; a
    band of more than EDGE_WINDOWS windows as one range to pad."""
    lo = min(o, -(-p // st))
    hi = max(lo, min(o, (size - 1 - d * (k - 1) + p) // st + 1))

    def band(a: int, b: int) -> list[tuple[int, int, bool]]:
        if b - a > EDGE_WINDOWS:
            return [(a, b, False)]
        return [(i, i + 1, True) for i in range(a, b)]

    return band(0, lo) + ([(lo, hi, True)] if hi > lo else []) + band(hi, o)


def _taps_in_place(x: Tensor, region, geometry) -> list[Tensor]:
    """The taps, in row-major kernel order, that the windows of `region` (an output range
    per dim, each tap wholly inside x or wholly outside it) read inside x, each a strided
    view of x; the taps in the padding are left out: zero adds nothing to a sum, and a
    max's scan never moves to its -inf."""
    kernel, stride, pads, dilation, _ = geometry
    taps = []
    for offset in offsets(kernel):
        index = [slice(None), slice(None)]
        for (a, b, _), j, st, p, d, size in zip(
            region, offset, stride, pads, dilation, x.shape[2:]
        ):
            first, last = a * st - p + j * d, (b - 1) * st - p + j * d
            if first < 0 or last >= size:
                break
            index.append(slice(first, last + 1, st))
        else:
            taps.append(x[tuple(index)])
    return taps


def _padded_taps(x: Tensor, region, geometry, value) -> list[Tensor]:
    """The taps of `region`'s windows over the slice of x they read, padded with `value`
    where they reach past it."""
    kernel, stride, pads, dilation, _ = geometry
    part, before, after = x, [], []
    for i, ((a, b, _), k, st, p, d) in enumerate(zip(region, kernel, stride, pads, dilation)):
        start, stop = a * st - p, (b - 1) * st - p + d * (k - 1) + 1
        first = min(max(start, 0), x.shape[2 + i])
        last = max(min(stop, x.shape[2 + i]), first)
        part = part.narrow(2 + i, first, last - first)
        before.append(first - start)
        after.append(stop - last)
    amounts = [n for pair in zip(reversed(before), reversed(after)) for n in pair]
    return _taps(windows(pad(part, amounts, value=value), kernel, stride, dilation), kernel)


def _over_regions(
    x: Tensor, geometry, value, key: tuple, fold, extra: Tensor | None = None, compute=None,
    target: TensorImpl | None = None,
):  # fmt: skip
    """The taps kernel `fold` (with `extra`, broadcast over the output, as its last input;
    computing in `compute`, by default x's dtype) over the output region by region
    (_region_ranges), each over its taps inside x (_taps_in_place) or over its padded
    slice (_padded_taps, `value` the padding), writing its part of the output in place:
    `target`, or a new result in x's suggested format (format_result). Windows with no tap
    inside x (a dilated max pool allows them) give `value`."""
    kernel, stride, pads, dilation, out = geometry
    shape = (*x.shape[:2], *out)
    y = Tensor(format_result(x._impl, shape, x.dtype) if target is None else target)
    ranges = [_region_ranges(*dim) for dim in zip(x.shape[2:], kernel, stride, pads, dilation, out)]
    for region in itertools.product(*ranges):
        target = y[(slice(None), slice(None), *(slice(a, b) for a, b, _ in region))]
        if all(in_place for _, _, in_place in region):
            taps = _taps_in_place(x, region, geometry)
        else:
            taps = _padded_taps(x, region, geometry, value)
        if not taps:
            target.fill_(value)
            continue
        if extra is not None:
            index = tuple(
                slice(a, b) if n > 1 else slice(None)
                for (a, b, _), n in zip(region, extra.shape[2:])
            )
            taps.append(extra[(slice(None), slice(None), *index)])
        launch((*key, len(taps)), taps, compute or x.dtype, fold, out=target._impl)
    return y


def _stays(t: Value, best: Value) -> Value:
    """Whether PyTorch's max pool scan keeps `best` at the next value t: unless t > best
    or t is NaN, so the first maximum stays (of -0.0 and 0.0 too) and the last NaN wins.
    Spelled `not t > best and t == t`: LLVM makes that one masked compare per tap (an
    `or` of the two would cost a mask op more, on the scan's critical path)."""
    stays = (t > best).apply("not")
    return stays & t.eq(t) if t.node.dtype.is_floating_point else stays


def _fold_max(*taps: Value) -> Value:
    """The taps' max by PyTorch's scan (padding, its start value, never moves it)."""
    best = taps[0]
    for t in taps[1:]:
        best = where(_stays(t, best), best, t)
    return best


def _fold_winner(*taps: Value) -> Value:
    """The number of the tap PyTorch's scan ends on, starting from -inf (the dtype's
    minimum); len(taps) where no tap beats that (a small int: exact in every dtype)."""
    best = Value(taps[0]._lift(_lowest(taps[0].node.dtype)))
    won = Value(taps[0]._lift(len(taps)))
    for k, t in enumerate(taps):
        stays = _stays(t, best)
        best, won = where(stays, best, t), where(stays, won, k)
    return won


def _mean_of_taps(*values: Value) -> Value:
    """The taps' sum over the divisor (the last value), from +0 as PyTorch's (a window of
    -0s averages to +0); an int64 sum wraps and its quotient truncates toward zero, as
    PyTorch's integer average does."""
    total = values[0] + 0 if values[0].node.dtype.is_floating_point else values[0]
    for t in values[1:-1]:
        total = total + t
    count = values[-1]
    if total.node.dtype.is_floating_point:
        return total / count
    floor = total._binary("floordiv", count)
    inexact = (total - floor * count).ne(0)
    return where(total < 0, where(inexact, floor + 1, floor), floor)


def _counts(size, geometry, include_pad: bool, dtype: DType, device) -> Tensor:
    """Each window's divisor, PyTorch's: the window clipped to the padded input (with
    count_include_pad) or to the input itself, a product of per-dim counts."""
    kernel, stride, pads, _, out = geometry
    result = None
    for d, (s, k, st, p, o) in enumerate(zip(size, kernel, stride, pads, out)):
        counts = []
        for i in range(o):
            start, end = i * st - p, min(i * st - p + k, s + p)
            if not include_pad:
                start, end = max(start, 0), min(end, s)
            counts.append(end - start)
        vec = _column(counts, d, len(kernel), dtype, device)
        result = vec if result is None else result * vec
    return result


# ---- adaptive pools ---------------------------------------------------------------------------


def _bounds(size: int, out: int) -> list[tuple[int, int]]:
    """PyTorch's adaptive windows: [floor(i size / out), ceil((i + 1) size / out))."""
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def _output_size(output_size, dims: int, size, op: str) -> tuple[int, ...]:
    sizes = (output_size,) * dims if not isinstance(output_size, Sequence) else tuple(output_size)
    if len(sizes) != dims:
        raise ValueError(f"{op}: output_size must have {dims} elements, got {list(sizes)}")
    sizes = tuple(s if s is not None else size[i] for i, s in enumerate(sizes))
    if any(s < 0 for s in sizes):
        raise ValueError(
            f"{op}: elements of output_size must be greater than or equal to 0 but received"
            f" {list(sizes)}"
        )
    return sizes


def _adaptive_input(input, dims: int, output_size, op: str):
    """(x as [N, C, *size] of a floating dtype, whether it was batched, output sizes, each
    dim's windows): PyTorch's adaptive pools refuse integer and bool inputs, and empty
    spatial dims."""
    x, was_batched = batched(input, dims, op)
    if not x.dtype.is_floating_point:
        raise UnsupportedDtype(f"{op}: not implemented for {x.dtype} (floating point only)")
    if 0 in x.shape[2:]:  # no window could hold a value
        given = list(x.shape[0 if was_batched else 1 :])
        raise ValueError(
            f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input"
            f" has sizes {given} with dimension {len(given) - dims + x.shape[2:].index(0)}"
            " being empty"
        )
    sizes = _output_size(output_size, dims, x.shape[2:], op)
    factories.check_allocatable((*x.shape[:2], *sizes), x.dtype, x.device)
    bounds = [_bounds(s, o) for s, o in zip(x.shape[2:], sizes)]
    return x, was_batched, sizes, bounds


def _window_taps(size: int, bounds) -> tuple[list[int], int]:
    """(every window's taps along a dim of `size`, the longest window's length): each
    window's positions, then `size` (a slot past the end) up to that length."""
    longest = max(hi - lo for lo, hi in bounds)
    taps = [lo + j if lo + j < hi else size for lo, hi in bounds for j in range(longest)]
    return taps, longest


def _gathered(y: Tensor, dim: int, taps: list[int], fill) -> Tensor:
    """y's slices at `taps` along `dim`, in order; tap y.shape[dim] reads a slice of
    `fill` appended to y. y itself when the taps are 0, 1, 2, ... (windows tiling dim)."""
    size = y.shape[dim]
    if taps == list(range(size)):
        return y
    if size in taps:
        y = pad(y, [0, 0] * (y.ndim - 1 - dim) + [0, 1], value=fill)
    return index_ops.index_select(y, dim, factories.tensor(taps, device=y.device))


def _adaptive_avg(dims: int, op: str):
    def adaptive_avg_pool(input: Tensor, output_size) -> Tensor:
        x, was_batched, sizes, bounds = _adaptive_input(input, dims, output_size, op)
        if not all(sizes):
            return _unbatched(_empty_like(x, sizes), was_batched)
        fmt = memory_formats.suggested(x._impl)
        if all(s == 1 for s in sizes) and x.dtype.is_floating_point:  # torch's mean shortcut
            y = reductions.mean(x, tuple(range(2, 2 + dims)), keepdim=True)
            y = y if fmt is memory_formats.contiguous_format else memory_formats.in_format(y, fmt)
            return _unbatched(y, was_batched)
        # float16 and bfloat16 average in float32, rounded once at the end, as PyTorch does
        compute = float32 if x.dtype.is_half else x.dtype
        y = x
        for d, windows_d in enumerate(bounds):  # each dim's window sums in turn
            taps, longest = _window_taps(y.shape[2 + d], windows_d)
            picked = _gathered(y, 2 + d, taps, 0.0)
            shape = (*y.shape[: 2 + d], len(windows_d), longest, *y.shape[3 + d :])
            y = reductions.sum(picked.reshape(shape), 3 + d, dtype=compute)
        for d, windows_d in enumerate(bounds):  # sum / kD / kH / kW, PyTorch's divisions
            y = y / _column([hi - lo for lo, hi in windows_d], d, dims, compute, x.device)
        # torch's 2-d kernel keeps a channels-last input's format; its 1-d and 3-d ones do not
        fmt = fmt if dims == 2 else memory_formats.contiguous_format
        return _unbatched(memory_formats.in_format(y.to(x.dtype), fmt), was_batched)

    adaptive_avg_pool.__name__ = adaptive_avg_pool.__qualname__ = op
    adaptive_avg_pool.__doc__ = f"torch.nn.functional.{op}: each dim's window sums in turn."
    return adaptive_avg_pool


def _empty_like(x: Tensor, sizes, dtype: DType | None = None) -> Tensor:
    """An adaptive pool's result [N, C, *sizes] when an output size is 0."""
    return factories.zeros((*x.shape[:2], *sizes), dtype=dtype or x.dtype, device=x.device)


def _adaptive_max(dims: int, op: str):
    def adaptive_max_pool(input: Tensor, output_size, return_indices: bool = False):
        x, was_batched, sizes, bounds = _adaptive_input(input, dims, output_size, op)
        if not all(sizes):
            empty = (_empty_like(x, sizes), _empty_like(x, sizes, int64))
            return _unbatched(empty if return_indices else empty[0], was_batched)
        win, longest = x, []
        for d, windows_d in enumerate(bounds):  # [N, C, out0 * L0, out1 * L1, ..]
            taps, n = _window_taps(x.shape[2 + d], windows_d)
            win = _gathered(win, 2 + d, taps, _lowest(x.dtype))
            longest.append(n)
        split = itertools.chain.from_iterable(zip(sizes, longest))
        order = [0, 1, *range(2, 2 + 2 * dims, 2), *range(3, 3 + 2 * dims, 2)]
        win = win.reshape((*x.shape[:2], *split)).permute(order)  # [N, C, *out, *L]
        values, winners = _window_max(win, dims, return_indices, x)
        if not return_indices:
            return _unbatched(values, was_batched)
        starts = [[lo for lo, _ in windows_d] for windows_d in bounds]
        index = _positions(winners, longest, starts, [1] * dims, starts, x.shape[2:])
        return _unbatched((values, index), was_batched)

    adaptive_max_pool.__name__ = adaptive_max_pool.__qualname__ = op
    adaptive_max_pool.__doc__ = f"torch.nn.functional.{op}: PyTorch's max scan of each window."
    return adaptive_max_pool


# ---- lp pools, max_unpool and the _with_indices spellings ----------------------------------


def _lp_pool(dims: int, op: str):
    def lp_pool(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode=False):
        """(sum over each window of x^p)^(1/p), as PyTorch computes it: the average of x^p
        times the window's size, its sign kept through a relu of its magnitude; p = inf
        is the max of |x| and p = -inf its min, max pools as PyTorch's."""
        x = tensor_arg(input, op)
        kernel = tuple_arg(kernel_size, dims, "kernel_size", op)
        if isinstance(norm_type, (int, float)) and math.isinf(norm_type):
            magnitude, max_pool = ew.unary("abs", x), POOLS[f"max_pool{dims}d"]
            if norm_type > 0:
                return max_pool(magnitude, kernel, stride, 0, 1, ceil_mode)
            return -max_pool(-magnitude, kernel, stride, 0, 1, ceil_mode)
        mean = POOLS[f"avg_pool{dims}d"](x**norm_type, kernel, stride, 0, ceil_mode)
        signed = ew.unary("sign", mean) * ew.unary("relu", ew.unary("abs", mean))
        return (signed * math.prod(kernel)) ** (1.0 / norm_type)

    lp_pool.__name__ = lp_pool.__qualname__ = op
    return lp_pool


def _unpool_size(size, kernel, stride, pads, output_size, op: str) -> tuple[int, ...]:
    """max_unpool's output plane, PyTorch's _unpool_output_size: (in - 1) * stride - 2 *
    padding + kernel per dim, or output_size (its last dims when it has two more) within
    a stride of that; never negative."""
    default = [(s - 1) * st - 2 * p + k for s, st, p, k in zip(size, stride, pads, kernel)]
    wanted = tuple(default)
    if output_size is not None:
        wanted = _wanted_unpool_size(default, stride, output_size, op)
    for d, s in enumerate(wanted):
        if s < 0:
            raise ValueError(
                f"{op}: output_size must contain non-negative spatial dimensions, but got"
                f" output_size[{d}]={s}"
            )
    return wanted


def _wanted_unpool_size(default, stride, output_size, op: str) -> tuple[int, ...]:
    """max_unpool's output_size argument, checked: `dims` or `dims` + 2 ints, each within
    a stride of the default size."""
    dims = len(default)
    wanted = tuple(views.as_int(v, "output_size") for v in output_size)
    if len(wanted) == dims + 2:
        wanted = wanted[2:]
    if len(wanted) != dims:
        raise ValueError(
            f"{op}: output_size should be a sequence containing {dims} or {dims + 2} elements,"
            f" but it has a length of '{len(wanted)}'"
        )
    for d, (o, s, st) in enumerate(zip(wanted, default, stride)):
        if not s - st < o < s + st:
            raise ValueError(
                f'{op}: invalid output_size "{wanted}" (dim {d} must be between'
                f" {s - st} and {s + st})"
            )
    return wanted


def _check_unpool_indices(flat: Tensor, size, op: str) -> None:
    """Every index inside the output plane; else PyTorch's error naming the last bad
    index (a one-thread scan's) and the plane (L x 1 for 1-d: PyTorch unpools it as 2-d)."""
    plane = math.prod(size)
    bad = (flat < 0) | (flat >= plane)
    if not flat.numel() or not bool(bad.any()):
        return
    values = flat.reshape(-1)
    ranks = factories.arange(values.numel(), device=flat.device)
    last = int(reductions.amax(index_ops.where(bad.reshape(-1), ranks, -1)))
    plane_dims = (*size, 1) if len(size) == 1 else size
    raise Error(
        f"{op}: Found an invalid max index: {int(values[last])} (output volumes are of"
        f" size {'x'.join(map(str, plane_dims))})"
    )


def _max_unpool(dims: int, op: str):
    def max_unpool(
        input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None
    ):
        """max_pool's inverse: each value written at its index in a zero plane of
        (in - 1) * stride - 2 * padding + kernel (or output_size) per dim."""
        x, was_batched = batched(input, dims, op)
        idx = tensor_arg(indices, op, "indices")
        if idx.dtype is not int64:
            raise TypeError(f"{op}: expected indices of dtype int64, got {idx.dtype}")
        idx = idx if was_batched else idx.unsqueeze(0)
        if idx.shape != x.shape:
            raise ValueError(
                f"{op}: Expected shape of indices to be same as that of the input"
                f" tensor ({list(x.shape)}) but got indices tensor with shape:"
                f" {list(idx.shape)}"
            )
        kernel = tuple_arg(kernel_size, dims, "kernel_size", op)
        stride = kernel if stride is None else tuple_arg(stride, dims, "stride", op)
        pads = tuple_arg(padding, dims, "padding", op)
        size = _unpool_size(x.shape[2:], kernel, stride, pads, output_size, op)
        n, c = x.shape[:2]
        flat = idx.reshape(n, c, math.prod(x.shape[2:]))
        _check_unpool_indices(flat, size, op)
        out = factories.zeros((n, c, math.prod(size)), dtype=x.dtype, device=x.device)
        # written, not added: overlapping windows repeat an index (with equal values)
        scatters.scatter_(out, 2, flat, x.reshape(flat.shape))
        return _unbatched(out.reshape((n, c, *size)), was_batched)

    max_unpool.__name__ = max_unpool.__qualname__ = op
    return max_unpool


def with_indices(pool):
    """`pool` as its NAME_with_indices spelling: (values, indices) always."""

    def pooled(*args, **kwargs):
        return pool(*args, **kwargs, return_indices=True)

    pooled.__name__ = pooled.__qualname__ = f"{pool.__name__}_with_indices"
    pooled.__doc__ = f"{pool.__name__} giving (values, indices)."
    return pooled


POOLS = {f"max_pool{d}d": _max_pool(d, f"max_pool{d}d") for d in (1, 2, 3)}
POOLS |= {f"avg_pool{d}d": _avg_pool(d, f"avg_pool{d}d") for d in (1, 2, 3)}
POOLS["avg_pool1d"] = _avg_pool1d(POOLS["avg_pool1d"])
POOLS |= {f"adaptive_avg_pool{d}d": _adaptive_avg(d, f"adaptive_avg_pool{d}d") for d in (1, 2, 3)}
POOLS |= {f"adaptive_max_pool{d}d": _adaptive_max(d, f"adaptive_max_pool{d}d") for d in (1, 2, 3)}
POOLS |= {
    f"{name}_with_indices": with_indices(POOLS[name]) for name in list(POOLS) if "max" in name
}
POOLS |= {f"lp_pool{d}d": _lp_pool(d, f"lp_pool{d}d") for d in (1, 2, 3)}
POOLS |= {f"max_unpool{d}d": _max_unpool(d, f"max_unpool{d}d") for d in (1, 2, 3)}
FUNCTIONS = {name: op_door(name, fn) for name, fn in POOLS.items()}
