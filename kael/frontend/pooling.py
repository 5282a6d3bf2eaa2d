"""torch.nn.functional's pooling: max_pool1d/2d/3d (indices, ceil_mode, dilation),
avg_pool1d/2d/3d (count_include_pad, divisor_override, ceil_mode) and the adaptive pools.

A pool reduces a window view of its padded input (conv.windows: no copy) over the kernel
dims with one reduction kernel: amax for max pools, sum for average pools divided by each
window's count. Indices (return_indices) take the argmax of the flattened windows and
turn it into the position in the unpadded input plane, as PyTorch numbers them. Adaptive
pools with windows of one size are plain pools; otherwise each dim is pooled in turn
(average: one product with an averaging matrix; max: one slice per output position).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from kael.frontend import elementwise as ew
from kael.frontend import factories, index_ops, linalg, reductions, scatters, views
from kael.frontend.conv import batched, offsets, tuple_arg, windows
from kael.frontend.formula import Value, launch, maximum, where
from kael.frontend.outputs import tensor_arg
from kael.frontend.padding import pad
from kael.frontend.tensor import Tensor
from kael.frontend.tracing import op_door
from kael.runtime.dtypes import bfloat16, float16, float32, float64, int64
from kael.runtime.errors import Error, TypeError, ValueError


def _sizes(size, kernel, stride, pads, dilation, ceil_mode: bool, op: str) -> list[int]:
    """Each dim's output size: PyTorch's pooling_output_shape (a ceil_mode window must
    start inside the input or its left padding)."""
    out = []
    for s, k, st, p, d in zip(size, kernel, stride, pads, dilation):
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
    x, was_batched = batched(input, dims, op)
    kernel = tuple_arg(kernel_size, dims, "kernel_size", op)
    no_stride = stride is None or (isinstance(stride, Sequence) and not stride)
    stride = kernel if no_stride else tuple_arg(stride, dims, "stride", op)
    pads = tuple_arg(padding, dims, "padding", op)
    dilation = tuple_arg(dilation, dims, "dilation", op)
    if any(v <= 0 for v in (*kernel, *stride, *dilation)):
        raise ValueError(f"{op}: kernel_size, stride and dilation must be positive")
    out = _sizes(x.shape[2:], kernel, stride, pads, dilation, bool(ceil_mode), op)
    return x, was_batched, kernel, stride, pads, dilation, out


def _padded(x: Tensor, pads, kernel, stride, dilation, out, value) -> Tensor:
    """x padded by `pads` on both sides, and on the right as far as ceil_mode's last
    windows reach, with `value`."""
    amounts: list[int] = []
    for s, p, k, st, d, o in reversed(list(zip(x.shape[2:], pads, kernel, stride, dilation, out))):
        reach = (o - 1) * st + d * (k - 1) + 1
        amounts += [p, max(reach - s - p, p)]
    return pad(x, amounts, value=value) if any(amounts) else x


def _lowest(x: Tensor):
    """The value padding never wins a max with: -inf, or the integer dtype's minimum."""
    return -math.inf if x.dtype.is_floating_point else x.dtype.min


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
        x, was_batched, kernel, stride, pads, dilation, out = _prepare(
            input, kernel_size, stride, padding, dilation, ceil_mode, dims, op
        )
        if x.dtype.is_bool:
            raise TypeError(f"{op}: not implemented for bool")
        geometry = (kernel, stride, pads, dilation, out)
        if not return_indices and _by_regions(x, kernel):
            y = _over_regions(x, geometry, _lowest(x), ("max_pool",), _fold_max)
            return y if was_batched else y.squeeze(0)
        xp = _padded(x, pads, kernel, stride, dilation, out, _lowest(x))
        win = windows(xp, kernel, stride, dilation)
        win = win[(slice(None), slice(None), *(slice(0, o) for o in out))]
        kernel_dims = tuple(range(2 + dims, 2 + 2 * dims))
        taps = _taps(win, kernel)
        if taps is not None:
            values = launch(("max_pool", len(taps)), taps, x.dtype, _fold_max)
        else:
            values = reductions.amax(win, kernel_dims)
        if not return_indices:
            return values if was_batched else values.squeeze(0)
        flat = win.reshape((*win.shape[: 2 + dims], math.prod(kernel)))
        local = reductions.argmax(flat, -1)
        index = _input_positions(local, kernel, stride, pads, dilation, out, x.shape[2:])
        if not was_batched:
            values, index = values.squeeze(0), index.squeeze(0)
        return values, index

    max_pool.__name__ = max_pool.__qualname__ = op
    max_pool.__doc__ = f"torch.nn.functional.{op}: amax over a window view of the padded input."
    return max_pool


def _plane_index(local: Tensor, extents, starts, steps, size) -> Tensor:
    """The flat position in the input plane of each flat offset `local` within windows of
    `extents`: per dim, offset k lands at starts[d] + k * steps[d] (a number, or a tensor
    broadcast over the outputs); the plane's dims have `size`."""
    index = factories.zeros(local.shape, dtype=int64, device=local.device)
    rest, plane = local, 1
    for d in reversed(range(len(extents))):
        k = ew.binary("remainder", rest, extents[d])
        rest = ew.binary("floor_divide", rest, extents[d])
        index = index + (k * steps[d] + starts[d]) * plane
        plane *= size[d]
    return index


def _input_positions(local: Tensor, kernel, stride, pads, dilation, out, size) -> Tensor:
    """max_pool's indices: window o's offset k is at o * stride - pad + k * dilation."""
    dims = len(kernel)
    starts = []
    for d in range(dims):
        shape = [1] * (2 + dims)
        shape[2 + d] = out[d]
        first = factories.arange(out[d], device=local.device).reshape(shape)
        starts.append(first * stride[d] - pads[d])
    return _plane_index(local, kernel, starts, dilation, size)


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
        x, was_batched, kernel, stride, pads, dilation, out = _prepare(
            input, kernel_size, stride, padding, 1, ceil_mode, dims, op
        )
        if not x.dtype.is_floating_point and x.dtype is not int64:
            raise TypeError(f"{op}: not implemented for {x.dtype} (floating point or int64)")
        if divisor_override is not None and divisor_override == 0:
            raise ValueError(f"{op}: divisor must be not zero")
        if divisor_override is not None:
            shape = (1,) * (2 + dims)
            divisor = factories.full(shape, divisor_override, dtype=x.dtype, device=x.device)
        else:
            divisor = _counts(x.shape[2:], kernel, stride, pads, out, count_include_pad, x)
        if _by_regions(x, kernel):
            geometry = (kernel, stride, pads, dilation, out)
            y = _over_regions(x, geometry, 0.0, ("avg_pool",), _mean_of_taps, divisor)
            return y if was_batched else y.squeeze(0)
        xp = _padded(x, pads, kernel, stride, dilation, out, 0.0)
        win = windows(xp, kernel, stride, dilation)
        win = win[(slice(None), slice(None), *(slice(0, o) for o in out))]
        taps = _taps(win, kernel)
        if taps is not None:  # one kernel: the taps summed in PyTorch's order, then divided
            y = launch(("avg_pool", len(taps)), [*taps, divisor], x.dtype, _mean_of_taps)
        else:
            total = reductions.sum(win, tuple(range(2 + dims, 2 + 2 * dims)))
            y = launch(("avg_pool_sum",), [total, divisor], x.dtype, _mean_of_taps)
        return y if was_batched else y.squeeze(0)

    avg_pool.__name__ = avg_pool.__qualname__ = op
    avg_pool.__doc__ = f"torch.nn.functional.{op}: window sums over each window's count."
    return avg_pool


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


def _taps(win: Tensor, kernel: Sequence[int]) -> list[Tensor] | None:
    """One view per kernel offset of the window view, or None for a large kernel."""
    if math.prod(kernel) > MAX_TAPS:
        return None
    return [win[(Ellipsis, *offset)] for offset in offsets(kernel)]


# Inputs at least this large pool region by region (_over_regions): the interior's windows
# read the input in place, no padded copy (a third of avg_pool2d's time at [32, 64, 56,
# 56]); smaller ones take the one padded launch, fewer launches.
REGION_ELEMENTS = 1 << 20


def _by_regions(x: Tensor, kernel: Sequence[int]) -> bool:
    return x.numel() >= REGION_ELEMENTS and math.prod(kernel) <= MAX_TAPS


def _over_regions(x: Tensor, geometry, value, key: tuple, fold, extra: Tensor | None = None):
    """The taps kernel `fold` (with `extra`, broadcast over the output, as its last input)
    over the output region by region: per dim, the windows starting in the padding, those
    inside x and those reaching past its end. Each region pads only the slice of x its
    windows read (the interior: none), and writes its part of the output in place."""
    kernel, stride, pads, dilation, out = geometry
    y = factories.empty((*x.shape[:2], *out), dtype=x.dtype, device=x.device)
    ranges = []
    for s, k, st, p, d, o in zip(x.shape[2:], kernel, stride, pads, dilation, out):
        lo = min(o, -(-p // st))
        hi = max(lo, min(o, (s - 1 - d * (k - 1) + p) // st + 1))
        ranges.append([(a, b) for a, b in ((0, lo), (lo, hi), (hi, o)) if b > a])
    for region in itertools.product(*ranges):
        part, before, after = x, [], []
        for i, ((a, b), k, st, p, d) in enumerate(zip(region, kernel, stride, pads, dilation)):
            start, stop = a * st - p, (b - 1) * st - p + d * (k - 1) + 1
            first, last = max(start, 0), min(stop, x.shape[2 + i])
            part = part.narrow(2 + i, first, last - first)
            before.append(first - start)
            after.append(stop - last)
        if any(before) or any(after):
            amounts = [n for pair in zip(reversed(before), reversed(after)) for n in pair]
            part = pad(part, amounts, value=value)
        taps = _taps(windows(part, kernel, stride, dilation), kernel)
        target = y[(slice(None), slice(None), *(slice(a, b) for a, b in region))]
        if extra is not None:
            index = tuple(
                slice(a, b) if n > 1 else slice(None) for (a, b), n in zip(region, extra.shape[2:])
            )
            taps.append(extra[(slice(None), slice(None), *index)])
        launch((*key, len(taps)), taps, x.dtype, fold, out=target._impl)
    return y


def _fold_max(*taps: Value) -> Value:
    result = taps[0]
    for t in taps[1:]:
        result = maximum(result, t)
    return result


def _mean_of_taps(*values: Value) -> Value:
    """The taps' sum over the divisor (the last value); an int64 sum wraps and its quotient
    truncates toward zero, as PyTorch's integer average does."""
    total = values[0]
    for t in values[1:-1]:
        total = total + t
    count = values[-1]
    if total.node.dtype.is_floating_point:
        return total / count
    floor = total._binary("floordiv", count)
    inexact = (total - floor * count).ne(0)
    return where(total < 0, where(inexact, floor + 1, floor), floor)


def _counts(size, kernel, stride, pads, out, include_pad: bool, like: Tensor) -> Tensor:
    """Each window's divisor, PyTorch's: the window clipped to the padded input (with
    count_include_pad) or to the input itself, a product of per-dim counts."""
    result = None
    dims = len(kernel)
    for d, (s, k, st, p, o) in enumerate(zip(size, kernel, stride, pads, out)):
        counts = []
        for i in range(o):
            start, end = i * st - p, min(i * st - p + k, s + p)
            if not include_pad:
                start, end = max(start, 0), min(end, s)
            counts.append(end - start)
        shape = [1] * (2 + dims)
        shape[2 + d] = o
        vec = factories.tensor(counts, dtype=like.dtype, device=like.device).reshape(shape)
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


def _adaptive_avg(dims: int, op: str):
    def adaptive_avg_pool(input: Tensor, output_size) -> Tensor:
        x, was_batched = batched(input, dims, op)
        if not x.dtype.is_floating_point and x.dtype is not int64:
            raise TypeError(f"{op}: not implemented for {x.dtype} (floating point or int64)")
        sizes = _output_size(output_size, dims, x.shape[2:], op)
        # float16 and bfloat16 average in float32, rounded once at the end, as PyTorch does
        compute = float32 if x.dtype in (float16, bfloat16) else x.dtype
        y = x.to(compute)
        for d, o in enumerate(sizes):  # each dim in turn: a product with its averaging matrix
            s = x.shape[2 + d]
            weights = [[0.0] * o for _ in range(s)]
            for i, (lo, hi) in enumerate(_bounds(s, o)):
                for j in range(lo, hi):
                    weights[j][i] = 1.0 / (hi - lo)
            matrix = factories.tensor(weights, dtype=float64, device=x.device).reshape(s, o)
            y = _moved_back(linalg.matmul(_moved_last(y, 2 + d), matrix.to(compute)), 2 + d)
        y = y.to(x.dtype).contiguous()
        return y if was_batched else y.squeeze(0)

    adaptive_avg_pool.__name__ = adaptive_avg_pool.__qualname__ = op
    adaptive_avg_pool.__doc__ = f"torch.nn.functional.{op}: one averaging product per dim."
    return adaptive_avg_pool


def _moved_last(y: Tensor, dim: int) -> Tensor:
    """y with `dim` moved last (the others in order)."""
    order = [d for d in range(y.ndim) if d != dim] + [dim]
    return y.permute(order)


def _moved_back(y: Tensor, dim: int) -> Tensor:
    """_moved_last undone: the last dim put back at `dim`."""
    order = list(range(y.ndim - 1))
    order.insert(dim, y.ndim - 1)
    return y.permute(order)


def _adaptive_max(dims: int, op: str):
    def adaptive_max_pool(input: Tensor, output_size, return_indices: bool = False):
        x, was_batched = batched(input, dims, op)
        if x.dtype.is_bool:
            raise TypeError(f"{op}: not implemented for bool")
        size = x.shape[2:]
        sizes = _output_size(output_size, dims, size, op)
        bounds = [_bounds(s, o) for s, o in zip(size, sizes)]
        values, indices = [], []
        for cell in offsets(sizes):
            window = [bounds[d][i] for d, i in enumerate(cell)]
            region = x
            for d, (lo, hi) in enumerate(window):
                region = region.narrow(2 + d, lo, hi - lo)
            flat = region.reshape((*x.shape[:2], math.prod(region.shape[2:])))
            values.append(reductions.amax(flat, -1))
            if return_indices:
                local = reductions.argmax(flat, -1)
                extents, starts = [hi - lo for lo, hi in window], [lo for lo, _ in window]
                indices.append(_plane_index(local, extents, starts, [1] * dims, size))
        shape = (*x.shape[:2], *sizes)
        out, index = _stacked(values, shape, x), _stacked(indices, shape, x, int64)
        if not return_indices:
            return out if was_batched else out.squeeze(0)
        return (out, index) if was_batched else (out.squeeze(0), index.squeeze(0))

    adaptive_max_pool.__name__ = adaptive_max_pool.__qualname__ = op
    adaptive_max_pool.__doc__ = f"torch.nn.functional.{op}: amax of each adaptive window."
    return adaptive_max_pool


def _stacked(cells: list[Tensor], shape, like: Tensor, dtype=None) -> Tensor:
    """The adaptive cells' results stacked into `shape` (empty where an output size is 0)."""
    if not cells:
        return factories.zeros(shape, dtype=dtype or like.dtype, device=like.device)
    return index_ops.stack(cells, -1).reshape(shape)


# ---- lp pools, max_unpool and the _with_indices spellings ----------------------------------


def _lp_pool(dims: int, op: str):
    def lp_pool(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode=False):
        """(sum over each window of x^p)^(1/p), as PyTorch computes it: the average of x^p
        times the window's size, its sign kept through a relu of its magnitude."""
        x = tensor_arg(input, op)
        kernel = tuple_arg(kernel_size, dims, "kernel_size", op)
        mean = POOLS[f"avg_pool{dims}d"](x**norm_type, kernel, stride, 0, ceil_mode)
        signed = ew.unary("sign", mean) * ew.unary("relu", ew.unary("abs", mean))
        return (signed * math.prod(kernel)) ** (1.0 / norm_type)

    lp_pool.__name__ = lp_pool.__qualname__ = op
    return lp_pool


def _unpool_size(size, kernel, stride, pads, output_size, op: str) -> tuple[int, ...]:
    """max_unpool's output plane, PyTorch's _unpool_output_size: (in - 1) * stride - 2 *
    padding + kernel per dim, or output_size (its last dims when it has two more) within
    a stride of that."""
    default = [(s - 1) * st - 2 * p + k for s, st, p, k in zip(size, stride, pads, kernel)]
    if output_size is None:
        return tuple(default)
    dims = len(kernel)
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
        plane = math.prod(size)
        flat = idx.reshape(n, c, math.prod(x.shape[2:]))
        if flat.numel() and (bool((flat < 0).any()) or bool((flat >= plane).any())):
            raise Error(
                f"{op}: Found an invalid max index (outside [0, {plane}) for an output of size {list(size)})"
            )
        out = factories.zeros((n, c, plane), dtype=x.dtype, device=x.device)
        # written, not added: overlapping windows repeat an index (with equal values)
        scatters.scatter_(out, 2, flat, x.reshape(flat.shape))
        out = out.reshape((n, c, *size))
        return out if was_batched else out.squeeze(0)

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
