"""Spatial sampling as torch.nn.functional spells it: affine_grid and grid_sample.

grid_sample follows PyTorch's CPU kernels op for op: 4-D input as the vectorized kernel
(GridSamplerKernel.cpp) computes it, 5-D as the scalar one (GridSampler.cpp); the two differ
in their unnormalize, clip and reflect arithmetic and so in where NaN and infinite
coordinates land. Each spatial axis gives its taps (source positions and weights); each
corner of the taps reads the flattened input with gather, an out-of-range corner reading 0.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kael.frontend import elementwise as ew
from kael.frontend import factories, index_ops
from kael.frontend.interpolate import CUBIC_A
from kael.frontend.linalg import matmul
from kael.frontend.outputs import device_of, tensor_arg
from kael.frontend.tensor import Tensor
from kael.frontend.tracing import op_door
from kael.runtime import user_warning
from kael.runtime.dtypes import bfloat16, float16, int64
from kael.runtime.errors import TypeError, UnsupportedDtype, ValueError

MODES = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")
ALIGN_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since "
    "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
    "documentation of grid_sample for details."
)


def _align(align_corners: bool | None) -> bool:
    """align_corners with PyTorch's default: None warns and means False."""
    if align_corners is None:
        user_warning.warn(ALIGN_WARNING)
        return False
    return bool(align_corners)


# ---- coordinate arithmetic of the two PyTorch kernels ----------------------------------------


def _unnormalize_vectorized(g: Tensor, size: int, align: bool) -> Tensor:
    if align:
        return (g + 1) * ((size - 1) / 2)
    return (g + 1) * (size / 2) - 0.5


def _unnormalize_scalar(g: Tensor, size: int, align: bool) -> Tensor:
    if align:
        return ((g + 1) / 2) * (size - 1)
    return ((g + 1) * size - 1) / 2


def _clip_vectorized(x: Tensor, size: int) -> Tensor:
    """Into [0, size - 1]; NaN goes to 0 (clamp_min with its operands swapped)."""
    low = ew.where(x > 0, x, 0.0)
    return ew.where(low < size - 1, low, float(size - 1))


def _clip_scalar(x: Tensor, size: int) -> Tensor:
    """Into [0, size - 1] as std::min(size - 1, std::max(x, 0)): NaN goes to size - 1."""
    low = ew.where(x < 0, 0.0, x)
    return ew.where(low < size - 1, low, float(size - 1))


def _reflect_vectorized(x: Tensor, size: int, align: bool) -> Tensor:
    """Reflected into the span by trunc division, as the vectorized kernel does."""
    if align and size <= 1:
        return factories.zeros_like(x)
    twice_span, low = (2.0 * (size - 1), 0.0) if align else (2.0 * size, -0.5)
    distance = (x - low).abs()
    extra = distance - (distance / twice_span).trunc() * twice_span
    return extra.minimum(twice_span - extra) + low


def _reflect_scalar(x: Tensor, size: int, align: bool) -> Tensor:
    """Reflected by fmod and the parity of the flips, as the scalar kernel does; a flip
    count past int's range converts to INT_MIN there, which counts as even."""
    twice_low, twice_high = (0, 2 * (size - 1)) if align else (-1, 2 * size - 1)
    if twice_low == twice_high:
        return factories.zeros_like(x)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    distance = (x - low).abs()
    extra = distance.fmod(span)
    flips = (distance / span).floor()
    odd = (flips < 2.0**31) & (flips.fmod(2.0) == 1)
    return ew.where(odd, (span - extra) + low, extra + low)


@dataclass(frozen=True)
class Kernel:
    """One of PyTorch's CPU grid samplers: its coordinate arithmetic, whether a corner's
    weight multiplies the axes outer first (4-D: s * e) or inner first (5-D: x * y * z),
    and whether an out-of-range corner adds 0 * weight (4-D) or nothing (5-D)."""

    unnormalize: Callable[[Tensor, int, bool], Tensor]
    clip: Callable[[Tensor, int], Tensor]
    reflect: Callable[[Tensor, int, bool], Tensor]
    outer_first: bool
    zero_times_weight: bool

    def pad(self, x: Tensor, size: int, padding: str, align: bool) -> Tensor:
        """PyTorch's compute_coordinates: x moved by the padding mode."""
        if padding == "border":
            return self.clip(x, size)
        if padding == "reflection":
            return self.clip(self.reflect(x, size, align), size)
        return x


KERNELS = {
    2: Kernel(_unnormalize_vectorized, _clip_vectorized, _reflect_vectorized, True, True),
    3: Kernel(_unnormalize_scalar, _clip_scalar, _reflect_scalar, False, False),
}


# ---- taps of one axis: (source position, weight) ---------------------------------------------


def _cubic_weights(t: Tensor) -> list[Tensor]:
    """PyTorch's cubic convolution coefficients (A = -0.75) of the 4 taps at offset t."""
    a = CUBIC_A

    def outer(x: Tensor) -> Tensor:  # 1 < |x| < 2
        return ((x * a - 5 * a) * x + 8 * a) * x - 4 * a

    def inner(x: Tensor) -> Tensor:  # |x| <= 1
        return ((x * (a + 2) - (a + 3)) * x) * x + 1

    return [outer(t + 1), inner(t), inner(1 - t), outer(2 - t)]


def _taps(kernel: Kernel, g: Tensor, size: int, mode: str, padding: str, align: bool):
    """[(position, weight or None), ...] along one axis for grid coordinates g."""
    if mode == "bicubic":
        x = kernel.unnormalize(g, size, align)
        floor = x.floor()
        weights = _cubic_weights(x - floor)
        return [
            (kernel.pad(floor + (k - 1), size, padding, align).trunc(), weights[k])
            for k in range(4)
        ]
    source = kernel.pad(kernel.unnormalize(g, size, align), size, padding, align)
    if mode == "nearest":
        return [(source.round(), None)]  # round half to even, as nearbyint
    floor = source.floor()
    if kernel.zero_times_weight:
        frac = source - floor
        return [(floor, 1 - frac), (floor + 1, frac)]
    return [(floor, (floor + 1) - source), (floor + 1, source - floor)]


# ---- reading corners and summing them ----------------------------------------------------------


def _corner(flat: Tensor, axes: Sequence[tuple[Tensor, int, int]]) -> tuple[Tensor, Tensor]:
    """(values [N, C, *out], in-range mask [N, 1, *out]) of the corner whose position along
    each axis is given as (position, size, stride)."""
    ok, index = None, None
    for pos, size, stride in axes:
        inside = (pos > -1) & (pos < size)
        part = ew.where(inside, pos, 0.0).to(int64) * stride
        ok = inside if ok is None else ok & inside
        index = part if index is None else index + part
    n, c = flat.shape[0], flat.shape[1]
    out = index.shape[1:]
    picked = index_ops.gather(flat, 2, index.reshape((n, 1, -1)).expand(n, c, -1))
    return picked.reshape((n, c, *out)), ok.unsqueeze(1)


def _weighted_sum(kernel: Kernel, flat: Tensor, taps, sizes, strides) -> Tensor:
    """sum over corners of value * weight (product of the corner's axis weights), in
    PyTorch's corner order and with its handling of out-of-range corners."""
    total = None
    for corner in itertools.product(*taps):
        values, ok = _corner(flat, [(p, s, st) for (p, _), s, st in zip(corner, sizes, strides)])
        weights = [w for _, w in corner]
        weight = None
        for w in weights if kernel.outer_first else reversed(weights):
            weight = w if weight is None else weight * w
        weight = weight.unsqueeze(1)
        if kernel.zero_times_weight:
            term = ew.where(ok, values, 0.0) * weight
        else:
            term = ew.where(ok, values * weight, 0.0)
        total = term if total is None else total + term
    return total


def _nearest(flat: Tensor, taps, sizes, strides) -> Tensor:
    values, ok = _corner(flat, [(t[0][0], s, st) for t, s, st in zip(taps, sizes, strides)])
    return ew.where(ok, values, 0.0)


def _bicubic(flat: Tensor, taps, sizes, strides) -> Tensor:
    """Each row of 4 taps along x weighted first, then the 4 rows along y."""
    (rows, columns), total = taps, None
    for y, wy in rows:
        row = None
        for x, wx in columns:
            values, ok = _corner(flat, [(y, sizes[0], strides[0]), (x, sizes[1], strides[1])])
            term = wx.unsqueeze(1) * ew.where(ok, values, 0.0)
            row = term if row is None else row + term
        term = wy.unsqueeze(1) * row
        total = term if total is None else total + term
    return total


# ---- grid_sample -------------------------------------------------------------------------------


def _check_sample_args(x: Tensor, grid: Tensor, mode: str) -> None:
    """PyTorch's grid_sampler checks, in its order."""
    if x.ndim == 0 or grid.ndim == 0 or x.shape[0] != grid.shape[0]:
        raise ValueError(
            "grid_sampler(): expected grid and input to have same batch size, but got input"
            f" with sizes {list(x.shape)} and grid with sizes {list(grid.shape)}"
        )
    if grid.shape[-1] != x.ndim - 2:
        raise ValueError(
            f"grid_sampler(): expected grid to have size {x.ndim - 2} in last dimension, but"
            f" got grid with sizes {list(grid.shape)}"
        )
    for d in range(2, x.ndim):
        if x.shape[d] == 0:
            raise ValueError(
                "grid_sampler(): expected input to have non-empty spatial dimensions, but"
                f" input has sizes {list(x.shape)} with dimension {d} being empty"
            )
    rank = 4 if x.ndim == 4 else 5
    if x.ndim != rank or grid.ndim != rank:
        raise ValueError(
            f"grid_sampler(): expected {rank}D input and grid with same number of dimensions,"
            f" but got input with sizes {list(x.shape)} and grid with sizes {list(grid.shape)}"
        )
    if rank == 5 and mode == "bicubic":
        raise ValueError("grid_sampler(): bicubic interpolation only supports 4D input")
    if x.dtype is not grid.dtype:
        raise TypeError(
            "grid_sampler(): expected input and grid to have the same dtype, but got input"
            f" {x.dtype} and grid {grid.dtype}"
        )
    if not x.dtype.is_floating_point:
        raise UnsupportedDtype(f"grid_sampler(): not implemented for {x.dtype}")
    device_of([x, grid], "grid_sampler()")


def grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Tensor:
    """input [N, C, (D,) H, W] sampled at grid [N, (D_out,) H_out, W_out, 2 or 3] (x, y(, z)
    in [-1, 1]), as PyTorch's CPU kernels compute it."""
    x = tensor_arg(input, "grid_sample")
    grid = tensor_arg(grid, "grid_sample", "grid")
    if mode not in MODES:
        raise ValueError(
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or"
            f" 'bicubic', but got: '{mode}'"
        )
    if padding_mode not in PADDINGS:
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or"
            f" 'reflection', but got: '{padding_mode}'"
        )
    align = _align(align_corners)
    _check_sample_args(x, grid, mode)
    n, c, sizes, out = x.shape[0], x.shape[1], x.shape[2:], grid.shape[1:-1]
    if n * c * math.prod(out) == 0:
        return factories.empty((n, c, *out), dtype=x.dtype, device=x.device)
    # float16 and bfloat16 round every op, as PyTorch's kernels do in those dtypes
    flat = x.reshape((n, c, -1))
    kernel = KERNELS[len(sizes)]
    # spatial axis j (D, H, W order) reads grid coordinate len - 1 - j (x is W's)
    taps = [
        _taps(kernel, grid[..., len(sizes) - 1 - j], size, mode, padding_mode, align)
        for j, size in enumerate(sizes)
    ]
    strides = [math.prod(sizes[j + 1 :]) for j in range(len(sizes))]
    if mode == "nearest":
        result = _nearest(flat, taps, sizes, strides)
    elif mode == "bicubic":
        result = _bicubic(flat, taps, sizes, strides)
    else:
        result = _weighted_sum(kernel, flat, taps, sizes, strides)
    return result


# ---- affine_grid -------------------------------------------------------------------------------


def _line(steps: int, align: bool, like: Tensor) -> Tensor:
    """PyTorch's linspace_from_neg_one: the normalized pixel positions along one axis."""
    if steps <= 1:
        if like.dtype in (float16, bfloat16):  # PyTorch's at::tensor(0) refuses them
            raise TypeError(
                f"affine_grid: a size-1 dimension is not implemented for {like.dtype}"
                ' (PyTorch: "tensor_cpu" not implemented)'
            )
        return factories.zeros(1, dtype=like.dtype, device=like.device)
    line = factories.linspace(-1, 1, steps, dtype=like.dtype, device=like.device)
    return line if align else (line * (steps - 1)) / steps


def _check_affine_args(theta: Tensor, size: tuple[int, ...], align: bool) -> None:
    """PyTorch's affine_grid checks, in its order."""
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) not in (4, 5):
        raise ValueError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms,"
            f" respectively. Got size {size}."
        )
    dims = len(size) - 2
    if theta.ndim != 3 or theta.shape[-2:] != (dims, dims + 1):
        raise ValueError(
            f"Expected a batch of {dims}D affine matrices of shape Nx{dims}x{dims + 1} for"
            f" size {size}. Got {list(theta.shape)}."
        )
    if align and min(size[2:]) == 1:
        user_warning.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when"
            " align_corners=True. This is not an issue for standard usage."
        )
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise ValueError(
            f"affine_grid: theta holds {theta.shape[0]} matrices but size asks for a batch"
            f" of {size[0]}"
        )


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    """The sampling grid [N, (D,) H, W, 2 or 3] of the affine maps theta [N, 2, 3] (or
    [N, 3, 4]) over an output of `size` N, C, (D,) H, W, for grid_sample."""
    theta = tensor_arg(theta, "affine_grid", "theta")
    align = _align(align_corners)
    size = tuple(int(s) for s in size)
    _check_affine_args(theta, size, align)
    spatial = size[2:]
    dims = len(spatial)
    columns = []
    for k in range(dims):  # x along the last axis, then y, then z
        j = dims - 1 - k
        shape = [1] * dims
        shape[j] = -1
        columns.append(_line(spatial[j], align, theta).reshape(tuple(shape)).expand(*spatial))
    columns.append(factories.ones(*spatial, dtype=theta.dtype, device=theta.device))
    base = index_ops.stack(columns, -1).reshape((1, -1, dims + 1))
    n = size[0]
    grid = matmul(base.expand(n, -1, dims + 1), theta.transpose(1, 2))
    return grid.reshape((n, *spatial, dims))


FUNCTIONS: dict[str, Callable] = {
    fn.__name__: op_door(fn.__name__, fn) for fn in (affine_grid, grid_sample)
}
