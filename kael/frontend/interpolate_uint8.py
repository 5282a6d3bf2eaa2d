"""uint8 bilinear and bicubic interpolate, antialiased or not, bit for bit as PyTorch's CPU
kernels (UpSampleKernel.cpp: separable_upsample_generic_Nd_kernel_impl, and its AVX2 twin in
UpSampleKernelAVXAntialias.h, which computes the same weights and sums).

Resampling is separable: the width pass, then the height pass, each skipped where that dim's
size is unchanged (both skipped: a copy). A pass's float64 weights are PIL's (antialias) or
the float kernels' taps folded onto the border pixels (no antialias); they become int16 fixed
point at the most fraction bits under which twice the pass's largest weight fits int16, and
each output is the integer sum of taps times weights plus half an LSB, shifted right by that
precision and clamped to [0, 255]: stored as uint8 between the passes, so the result is not
the float result rounded (bicubic differs by up to 15). The weight tables are built on the CPU.

Deviations, both where PyTorch's channels-first result is a bug: its generic kernel (C > 4, or
no AVX2) reads the first output row's taps for every row of a height pass to width 1, so all
rows repeat row 0, and its AVX2 kernel fails an internal assert resizing C = 3 to 1 x 1. kael
gives what PyTorch gives for the same values in channels_last there, every row resampled.
"""

from __future__ import annotations

import math

from kael.frontend import elementwise as ew
from kael.frontend import factories, index_ops, memory_formats
from kael.frontend.tensor import Tensor
from kael.runtime.dtypes import float32, float64, int64, uint8
from kael.runtime.errors import Error

TAPS = {"bilinear": 2, "bicubic": 4}
# bicubic's coefficient by antialias: OpenCV's -0.75 without, PIL's (Keys') -0.5 with
CUBIC_A = {False: -0.75, True: -0.5}
MAX_PRECISION = 22


def _triangle(x: Tensor, antialias: bool) -> Tensor:
    """HelperInterpLinear::aa_filter: 1 - |x| inside [-1, 1], else 0 (antialias or not)."""
    x = x.abs()
    return ew.where(x < 1.0, 1.0 - x, 0.0)


def _cubic(x: Tensor, antialias: bool) -> Tensor:
    """HelperInterpCubic::aa_filter: cubic_convolution1 for |x| < 1, cubic_convolution2 for
    1 <= |x| < 2, else 0."""
    a, x = CUBIC_A[antialias], x.abs()
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return ew.where(x < 1.0, near, ew.where(x < 2.0, far, 0.0))


FILTERS = {"bilinear": _triangle, "bicubic": _cubic}


def _plain_taps(mode: str, size: int, out: int, scale: float, align_corners: bool):
    """_compute_indices_min_size_weights (antialias=False): the float kernels' 2 or 4 taps
    around the source position, those outside [0, size) folded onto the border pixel, summed
    in their order. Returns (first source [out], taps weights [out, K], tap count [out],
    the largest weight any partial sum reached)."""
    taps = TAPS[mode]
    dst = factories.arange(out, dtype=float64)
    real = scale * dst if align_corners else scale * (dst + 0.5) - 0.5
    if mode == "bilinear" and not align_corners:
        real = real.clamp(min=0.0)
    index = real.to(float32).floor().to(int64).clamp(max=size - 1)  # PyTorch's floorf
    lam = (real - index.to(float64)).clamp(0.0, 1.0)
    support = taps // 2
    low = index - support + 1
    first = low.clamp(min=0)
    count = ((index + support + 1).clamp(max=size) - first).clamp(0, taps)
    cols = [factories.zeros(out, dtype=float64) for _ in range(taps)]
    peak = factories.zeros(out, dtype=float64)
    slot = factories.zeros(out, dtype=int64)
    for j in range(taps):
        w = FILTERS[mode](float(j + 1 - support) - lam, False)
        slot = ew.where(low + j <= 0, 0, ew.where(low + j >= size - 1, count - 1, slot))
        for c in range(taps):
            hit = slot == c
            cols[c] = ew.where(hit, cols[c] + w, cols[c])
            peak = ew.where(hit, cols[c].maximum(peak), peak)
        slot = slot + 1
    return first, index_ops.stack(cols, 1), count, peak.amax().item()


def _antialiased_taps(mode: str, size: int, out: int, scale: float, align_corners: bool):
    """_compute_indices_min_size_weights_aa: PIL's filter, widened by the scale when
    downscaling, over every source pixel it reaches, normalized by its sequential sum.
    Returns as _plain_taps does."""
    support = TAPS[mode] * 0.5 * scale if scale >= 1.0 else TAPS[mode] * 0.5
    width = math.ceil(support) * 2 + 1
    inverse = 1.0 / scale if scale >= 1.0 else 1.0
    center = scale * (factories.arange(out, dtype=float64) + 0.5)
    first = (center - support + 0.5).trunc().to(int64).clamp(min=0)
    count = ((center + support + 0.5).trunc().to(int64).clamp(max=size) - first).clamp(0, width)
    tap = factories.arange(width, dtype=int64)
    source = (first.unsqueeze(1) + tap).to(float64)
    inside = tap < count.unsqueeze(1)
    w = ew.where(inside, FILTERS[mode]((source - center.unsqueeze(1) + 0.5) * inverse, True), 0.0)
    total = factories.zeros(out, dtype=float64)
    for k in range(width):
        total = total + w[:, k]
    summed = (total != 0.0).unsqueeze(1)
    w = ew.where(summed, w / total.unsqueeze(1), w)
    peak = ew.where(summed, w, 0.0).amax().item()
    return first, w, count, peak


def _precision(peak: float) -> int:
    """The fraction bits of a pass's int16 weights: the most (up to 22) under which twice the
    largest weight, rounded, still fits int16."""
    fits = (p for p in range(MAX_PRECISION) if int(0.5 + peak * (1 << (p + 1))) >= 1 << 15)
    return next(fits, MAX_PRECISION)


def _fixed_point(weights: Tensor, count: Tensor, precision: int) -> Tensor:
    """The weights times 2**precision, rounded half away from zero (C's (int)(v +- 0.5)); taps
    past each output's count zeroed."""
    v = weights * float(1 << precision)
    fixed = ew.where(v < 0.0, (v - 0.5).trunc(), (v + 0.5).trunc()).to(int64)
    tap = factories.arange(weights.shape[1], dtype=int64)
    return ew.where(tap < count.unsqueeze(1), fixed, 0)


def _resample(x: Tensor, dim: int, first: Tensor, fixed: Tensor, precision: int) -> Tensor:
    """One pass along `dim`: out[.., j, ..] = clamp((sum_k fixed[j, k] * x[.., first[j] + k,
    ..] + 2**(precision - 1)) >> precision, 0, 255) as uint8."""
    out, taps = fixed.shape
    size = x.shape[dim]
    sources = (first.unsqueeze(1) + factories.arange(taps, dtype=int64)).clamp(max=size - 1)
    picked = index_ops.index_select(x, dim, sources.reshape(-1).to(device=x.device))
    picked = picked.reshape((*x.shape[:dim], out, taps, *x.shape[dim + 1 :]))
    weights = fixed.reshape((out, taps, *(1,) * (x.ndim - dim - 1))).to(device=x.device)
    total = (picked.to(int64) * weights).sum(dim + 1) + (1 << (precision - 1))
    return (total >> precision).clamp(0, 255).to(uint8)


def interpolate_uint8(
    x: Tensor,
    sizes: tuple[int, int],
    scales: tuple[float, float],
    mode: str,
    align_corners: bool,
    antialias: bool,
) -> Tensor:
    """x [N, C, H, W] uint8 resampled to `sizes` as PyTorch's uint8 kernels do; `scales` are
    each dim's area_pixel_compute_scale in float64."""
    spatial = x.shape[2:]
    if x.shape[1] == 0:
        raise Error(
            f"Non-empty 4D data tensor expected but got a tensor with sizes {list(x.shape)}"
        )
    if min(spatial) <= 0:
        raise Error(
            f"Input and output sizes should be greater than 0, but got input (H: {spatial[0]},"
            f" W: {spatial[1]}) output (H: {sizes[0]}, W: {sizes[1]})"
        )
    taps = _antialiased_taps if antialias else _plain_taps

    def resized(y: Tensor, at: int) -> Tensor:  # spatial dim d is y's dim at + d
        start = y
        for d in (1, 0):  # PyTorch's order: the width, then the height
            if sizes[d] != spatial[d]:
                first, weights, count, peak = taps(
                    mode, spatial[d], sizes[d], scales[d], align_corners
                )
                precision = _precision(peak)
                y = _resample(y, at + d, first, _fixed_point(weights, count, precision), precision)
        return y.clone() if y is start else y

    return memory_formats.in_memory_order(x, resized)
