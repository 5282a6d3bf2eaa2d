"""torch.nn.functional.interpolate: nearest, nearest-exact, (bi/tri)linear, bicubic and
area, with size or scale_factor and align_corners, as PyTorch's CPU kernels compute them.

Resampling is separable: each spatial dim, last first (PyTorch's order of taps), is one
pass summing its 1, 2 or 4 source rows with their weights: on the CPU in float32 and
float64 one kernel reading the sources in place (codegen/cpu/resample.py), elsewhere
index_select of each tap's rows and one elementwise kernel. Source positions and weights are host arithmetic on the sizes, in PyTorch's
float32 for float32 data (its scale and coordinate math round there). uint8 data: nearest
modes here; bilinear and bicubic (antialiased or not) in interpolate_uint8.py, PyTorch's
fixed-point passes bit for bit; other modes refuse it.

Where kael deviates: float16 and bfloat16 data resample in float32 and round once (PyTorch's
bicubic rounds between passes: about 1 element in 3 a bfloat16 step from the exact result,
kael's 1 in 500), and an antialiased float resize to an output width of 1 while the height
changes gives each row its own value, the exact filter's (PyTorch's float kernel repeats
one value down the column; its uint8 kernel agrees with kael).
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Sequence

from kael.codegen.cpu import native_launch
from kael.frontend import factories, fastpath, index_ops, interpolate_uint8, memory_formats, views
from kael.frontend.formula import Value, launch
from kael.frontend.outputs import tensor_arg
from kael.frontend.pooling import POOLS
from kael.frontend.tensor import Tensor, empty_impl
from kael.frontend.tracing import op_door
from kael.runtime.convert import to_float32
from kael.runtime.device import CPU
from kael.runtime.dtypes import bfloat16, float16, float32, float64, uint8
from kael.runtime.errors import TypeError, UnsupportedDtype, ValueError
from kael.runtime.launcher import count_launch, replayable
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl, contiguous_strides
from kael.runtime.tracestate import state as trace_state

MODES = {
    "nearest": 1,
    "nearest-exact": 1,
    "linear": 1,
    "bilinear": 2,
    "bicubic": 2,
    "trilinear": 3,
    "area": None,
}
CUBIC_A = -0.75  # PyTorch's bicubic coefficient


def _sizes(x: Tensor, dims: int, size, scale_factor, recompute: bool | None):
    """(output sizes, the scale each dim maps with: None where it is in / out)."""
    spatial = x.shape[2:]
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if recompute:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        sizes = _given_sizes(size, dims)
        if len(sizes) != dims:
            raise ValueError(
                f"Input and output must have the same number of spatial dimensions, but got"
                f" input with spatial dimensions of {list(spatial)} and output size of"
                f" {list(sizes)}."
            )
        return sizes, (None,) * dims
    scales = (
        (scale_factor,) * dims if not isinstance(scale_factor, Sequence) else tuple(scale_factor)
    )
    if len(scales) != dims:
        raise ValueError(f"scale_factor must have {dims} elements, got {list(scales)}")
    if not all(isinstance(f, numbers.Real) and math.isfinite(f) for f in scales):
        raise ValueError(f"scale_factor must be finite numbers, got {list(scales)}")
    sizes = tuple(math.floor(s * f) for s, f in zip(spatial, scales))
    return sizes, ((None,) * dims if recompute else tuple(float(f) for f in scales))


def _given_sizes(size, dims: int) -> tuple[int, ...]:
    """interpolate's `size`: one int (Python's, NumPy's, a 0-d integer tensor) for every
    spatial dim, or a tuple or list of ints."""
    if isinstance(size, (tuple, list)):
        return tuple(views.as_int(s, f"size element {i}") for i, s in enumerate(size))
    if views.is_int_like(size):
        return (views.as_int(size, "size"),) * dims
    raise TypeError(f"size must be an int or a tuple of ints, got {type(size).__name__}")


def _scale(size: int, out: int, given: float | None, align_corners: bool, wide: bool) -> float:
    """PyTorch's area_pixel_compute_scale in the data's opmath precision."""
    r = (lambda v: v) if wide else to_float32
    if align_corners:
        return r((size - 1) / (out - 1)) if out > 1 else 0.0
    return r(1.0 / given) if given is not None and given > 0 else r(size / out)


def _source(dst: int, scale: float, align_corners: bool, cubic: bool, wide: bool) -> float:
    r = (lambda v: v) if wide else to_float32
    if align_corners:
        return r(scale * dst)
    src = r(r(scale * r(dst + 0.5)) - 0.5)
    return src if cubic or src >= 0 else 0.0


def _shortcut(mode: str, dims: int, size: int, out: int):
    """PyTorch's CPU kernels' special sizes, whatever the scale_factor: the linear modes
    copy an unchanged dim (compute_source_index_and_lambda: weights 1 and 0 on the same
    row), 2-D nearest copies it and maps a doubled one's output j to j >> 1 (nearest_idx);
    None elsewhere."""
    nearest_2d = mode == "nearest" and dims == 2
    if out == size and mode in ("linear", "bilinear", "trilinear"):
        return [[(j, 1.0), (j, 0.0)] for j in range(out)]
    if nearest_2d and out in (size, 2 * size):
        return [[(j if out == size else j >> 1, 1.0)] for j in range(out)]
    return None


def _taps(mode: str, size: int, out: int, given, align_corners: bool, wide: bool):
    """Per output position: [(source index, weight), ...] for this dim."""
    scale = _scale(size, out, given if not align_corners else None, align_corners, wide)
    r = (lambda v: v) if wide else to_float32
    rows = []
    for dst in range(out):
        if mode in ("nearest", "nearest-exact"):
            shift = 0.5 if mode == "nearest-exact" else 0.0
            src = math.floor(r(r(dst + shift) * r(1.0 / given if given else size / out)))
            rows.append([(min(src, size - 1), 1.0)])
        elif mode == "bicubic":
            src = _source(dst, scale, align_corners, True, wide)
            i = math.floor(src)
            t = r(src - i)
            a = CUBIC_A
            w = [
                ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
                ((a + 2) * t - (a + 3)) * t * t + 1,
                ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
                ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a,
            ]
            rows.append([(min(max(i - 1 + k, 0), size - 1), r(w[k])) for k in range(4)])
        else:
            src = _source(dst, scale, align_corners, False, wide)
            i0 = min(math.floor(src), size - 1)
            i1 = min(i0 + 1, size - 1)
            lam = r(src - i0)
            rows.append([(i0, r(1.0 - lam)), (i1, lam)])
    return rows


def _aa_linear(x: float) -> float:
    return max(0.0, 1.0 - abs(x))


def _aa_cubic(x: float) -> float:
    """The antialiasing cubic (a = -0.5, PIL's), not bicubic's a = -0.75."""
    a, x = -0.5, abs(x)
    if x < 1:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    if x < 2:
        return (((x - 5) * x + 8) * x - 4) * a
    return 0.0


def _antialiased_taps(mode: str, size: int, out: int, given, align_corners: bool, wide: bool):
    """PyTorch's antialiased taps (_compute_weights_aa): downscaling widens the filter by
    the scale, so every input pixel under an output pixel counts; weights normalized."""
    filter_fn, width = (_aa_cubic, 4) if mode == "bicubic" else (_aa_linear, 2)
    r = (lambda v: v) if wide else to_float32
    scale = _scale(size, out, given if not align_corners else None, align_corners, wide)
    support = r(width * 0.5 * scale) if scale >= 1.0 else width * 0.5
    inverse = r(1.0 / scale) if scale >= 1.0 else 1.0
    rows = []
    for dst in range(out):
        center = r(scale * r(dst + 0.5))
        lo = max(int(r(r(center - support) + 0.5)), 0)
        hi = min(int(r(r(center + support) + 0.5)), size)
        weights = [r(filter_fn(r(r(r(j - center) + 0.5) * inverse))) for j in range(lo, hi)]
        total = 0.0
        for w in weights:
            total = r(total + w)
        if total != 0.0:
            weights = [r(w / total) for w in weights]
        rows.append(list(zip(range(lo, hi), weights)) or [(min(lo, size - 1), 0.0)])
    return rows


def interpolate(
    input: Tensor,
    size=None,
    scale_factor=None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """input [N, C, *spatial] resampled to `size` (or spatial * scale_factor)."""
    arguments = (size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)
    door = fastpath.tensor_key(input, arguments)
    if door is not None:
        kept = _DOOR.get(door)
        if kept is not None:
            return _replay(kept, input._impl)
    x = tensor_arg(input, "interpolate")
    if mode not in MODES:
        raise ValueError(f"interpolate: mode must be one of {tuple(MODES)}, got {mode!r}")
    if antialias and mode not in ("bilinear", "bicubic"):
        raise ValueError(
            "Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D"
            " tensor as input"
        )
    dims = x.ndim - 2
    if dims < 1 or dims > 3:
        raise ValueError(f"interpolate: expected a 3D, 4D or 5D input, got {x.ndim}D")
    wanted = MODES[mode]
    if wanted is not None and wanted != dims and mode not in ("nearest", "nearest-exact"):
        raise ValueError(f"Got {x.ndim}D input, but {mode} mode needs {wanted + 2}D input")
    if align_corners is not None and mode in ("nearest", "nearest-exact", "area"):
        raise ValueError(
            "align_corners option can only be set with the interpolating modes:"
            " linear | bilinear | bicubic | trilinear"
        )
    sizes, given = _sizes(x, dims, size, scale_factor, recompute_scale_factor)
    if any(s <= 0 for s in sizes) and not (mode == "area" and min(sizes) == 0):
        raise ValueError(f"interpolate: output sizes must be positive, got {list(sizes)}")
    factories.check_allocatable((*x.shape[:2], *sizes), x.dtype, x.device)
    if mode == "area":
        return POOLS[f"adaptive_avg_pool{dims}d"](x, sizes)
    if x.dtype is uint8 and mode in interpolate_uint8.TAPS:
        scales = tuple(
            _scale(x.shape[2 + d], sizes[d], given[d], bool(align_corners), True)
            for d in range(dims)
        )
        return interpolate_uint8.interpolate_uint8(
            x, sizes, scales, mode, bool(align_corners), antialias
        )
    if not x.dtype.is_floating_point and mode != "nearest" and mode != "nearest-exact":
        raise UnsupportedDtype(f"interpolate: {mode} is not implemented for {x.dtype}")
    wide = x.dtype is float64
    # float16 and bfloat16 resample in float32, rounded once at the end, as PyTorch does
    half = x.dtype in (float16, bfloat16) and mode not in ("nearest", "nearest-exact")
    plain = (
        x.is_contiguous() and memory_formats.suggested(x._impl) is memory_formats.contiguous_format
    )
    seen = [] if door is not None and not half and plain else None

    def resized(y: Tensor, first: int) -> Tensor:  # each dim in turn, the last first
        for d in reversed(range(dims)):
            plan = (mode, dims, x.shape[2 + d], sizes[d], given[d], bool(align_corners), wide)
            y = _resample(y, first + d, plan, antialias, seen)
        return y

    y = memory_formats.in_memory_order(x.to(float32) if half else x, resized)
    if seen is not None and len(seen) == dims:
        _keep(door, seen, y)
    return y.to(x.dtype) if half else y


# The fast door of a plain resize (a contiguous float32/float64 host input, each dim's
# pass by the resampling kernel with kept tables, each launch inline), keyed by the
# input's dtype and layout and the arguments as given: the passes, replayed from this
# call's input through fresh buffers ([1, 3, 8, 8] bilinear x2, 1 thread, one run on a
# loaded machine: 32 -> 4.2 us; torch 8.4).
_DOOR: dict[tuple, tuple] = {}
_DOOR_MAX = 256  # as many as _tables keeps: each holds its passes' tables


def _keep(door: tuple, seen: list, y: Tensor) -> None:
    """Keep the passes the full door just made (`seen`: per pass, its kernel, words,
    items, bytes moved, output bytes and the tables it read) where each runs inline."""
    if len(_DOOR) >= _DOOR_MAX or not all(replayable(fn, moved) for fn, _, _, moved, _, _ in seen):
        return
    steps = []
    for fn, words, items, moved, nbytes, tables in seen:
        template = [0, 0, *words[2:]]
        native = native_launch.describe(fn, template, (0, 1), max(1, moved // max(1, items)))
        if native is None:
            return
        steps.append((fn, native, items, nbytes, tables))
    _DOOR[door] = (tuple(steps), y.shape, y.dtype)


def _replay(kept: tuple, x: TensorImpl) -> Tensor:
    """The remembered passes from this call's input (an impl) through fresh buffers."""
    steps, shape, dtype = kept
    src = x.storage.ptr + x.offset * x.dtype.itemsize
    made = None
    for fn, native, items, nbytes, _ in steps:
        count_launch(fn)  # its replays count toward its optimized code
        out = Storage.host(nbytes)
        fastpath._native(native.address, items, src, out.ptr)
        src, made = out.ptr, out
    return fastpath.new_tensor(made, shape, dtype)


@functools.lru_cache(maxsize=256)
def _rows(
    mode: str, dims: int, size: int, out: int, given, align_corners: bool, wide: bool, aa: bool
) -> tuple[tuple[tuple[int, float], ...], ...]:
    """Per output position of one dim, its (source index, weight) taps, every row as long
    as the longest: antialiasing's shorter rows are padded with zero-weight taps of their
    last source (an infinite input there gives NaN where PyTorch's kernel, which stops at
    each row's own length, gives inf). Host arithmetic on sizes, kept per resize."""
    taps = _antialiased_taps if aa else _taps
    rows = (None if aa else _shortcut(mode, dims, size, out)) or taps(
        mode, size, out, given, align_corners, wide
    )
    longest = max(len(r) for r in rows)
    return tuple(tuple(r + [(r[-1][0], 0.0)] * (longest - len(r))) for r in rows)


@functools.lru_cache(maxsize=256)
def _tables(plan: tuple, aa: bool, dtype, device) -> tuple[Tensor, Tensor]:
    """_made_tables of one dim's resize (_rows' arguments), made once per resize: a call
    of a seen resize makes no host tensor."""
    return _made_tables(_rows(*plan, aa), dtype, device)


def _made_tables(rows: tuple, dtype, device) -> tuple[Tensor, Tensor]:
    """The resample kernel's tap sources (int64, tap-major) and weights (`dtype`)."""
    taps = range(len(rows[0]))
    idx = factories.tensor([r[k][0] for k in taps for r in rows], device=device)
    weights = factories.tensor([r[k][1] for k in taps for r in rows], dtype=dtype, device=device)
    return idx, weights


# Resizes to at most this many positions keep their taps (_rows, _tables): a bigger one's
# tuples would hold ~300 bytes a position.
KEPT_POSITIONS = 4096


def _resample(x: Tensor, dim: int, plan: tuple, aa: bool, seen: list | None = None) -> Tensor:
    """out[.., j, ..] = sum_k weight[j][k] * x[.., source[j][k], ..] along `dim`, the taps
    of `plan`'s resize (_rows). `seen`: see _resample_kernel (only kept tables' passes)."""
    from kael.codegen.cpu import resample

    # (a trace's tensors live in its plan: its tables are made apart, never kept)
    kept = plan[3] <= KEPT_POSITIONS and trace_state.trace is None
    rows = (_rows if kept else _rows.__wrapped__)(*plan, aa)
    taps = len(rows[0])
    if x.device is CPU and x.dtype in (float32, float64) and x.numel() and taps in resample.TAPS:
        if kept:
            tables = _tables(plan, aa, x.dtype, x.device)
        else:
            tables, seen = _made_tables(rows, x.dtype, x.device), None
        return _resample_kernel(x, dim, tables, len(rows), taps, seen)
    picked = [
        index_ops.index_select(x, dim, factories.tensor([r[k][0] for r in rows], device=x.device))
        for k in range(taps)
    ]
    if taps == 1:
        return picked[0]
    shape = [1] * x.ndim
    shape[dim] = len(rows)
    weights = [
        factories.tensor([r[k][1] for r in rows], dtype=float64, device=x.device)
        .to(x.dtype)
        .reshape(shape)
        for k in range(taps)
    ]

    def weighted(*values: Value) -> Value:
        total = values[0] * values[taps]
        for k in range(1, taps):
            total = total + values[k] * values[taps + k]
        return total

    return launch(("resample", taps), [*picked, *weights], x.dtype, weighted)


def _resample_kernel(
    x: Tensor, dim: int, tables: tuple, size: int, taps: int, seen: list | None = None
) -> Tensor:
    """_resample by codegen/cpu/resample.py: one pass to `size` positions, the sources read
    in place, the taps' (sources, weights) from `tables`; `seen` (a list) gains the
    launch's kernel, words, items, bytes moved, output bytes and tables (the door's)."""
    from kael.codegen.cpu import resample  # it imports the code generators: not at start

    shape = x.shape
    outer, inner = math.prod(shape[:dim]), math.prod(shape[dim + 1 :])
    src = _as_rows(x.contiguous()._impl, (outer, shape[dim], inner))
    out = empty_impl((outer, size, inner), x.dtype, x.device)
    idx, weights = tables
    fn, words, items, moved = resample.run(src, out, idx._impl, weights._impl, taps)
    if seen is not None:
        seen.append((fn, words, items, moved, out.numel() * out.dtype.itemsize, tables))
    return Tensor.trusted(_as_rows(out, (*shape[:dim], size, *shape[dim + 1 :])))


def _as_rows(impl: TensorImpl, shape: tuple) -> TensorImpl:
    """The contiguous impl read in another shape of as many elements (a view made without
    reshape's checks: every contiguous layout of the same elements is valid)."""
    strides = contiguous_strides(shape)
    return TensorImpl.of_tuples(impl.storage, shape, strides, impl.offset, impl.dtype, impl.device)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """interpolate under its deprecated name."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """interpolate(mode='nearest') under its deprecated name."""
    return interpolate(input, size, scale_factor, "nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """interpolate(mode='bilinear', align_corners=True) under its deprecated name."""
    return interpolate(input, size, scale_factor, "bilinear", True)


FUNCTIONS = {
    fn.__name__: op_door(fn.__name__, fn)
    for fn in (interpolate, upsample, upsample_nearest, upsample_bilinear)
}
