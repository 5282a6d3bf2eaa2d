"""torch.nn.functional's fractional max pooling (2-d and 3-d, with indices).

Each (sample, channel) plane has one random sample per spatial dim; it places that dim's
window starts as PyTorch's generate_intervals does, in the input's dtype. The windows are
gathered from the flattened plane as [N, C, *out, kernel elements]; the winner is the last
NaN of a window, else its first maximum, and its index is its flat position in the plane.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from kael.frontend import factories, index_ops
from kael.frontend.conv import offsets, tuple_arg
from kael.frontend.outputs import tensor_arg
from kael.frontend.pooling import window_winners, with_indices
from kael.frontend.random import rand
from kael.frontend.tensor import Tensor
from kael.frontend.tracing import op_door
from kael.runtime.dtypes import bfloat16, float16, float32, float64, int64
from kael.runtime.errors import TypeError, UnsupportedDtype, ValueError

DTYPES = (float32, float64, float16, bfloat16)
# Per spatial dim: its name in PyTorch's messages and which random sample places it.
DIM_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}
SAMPLE_COLUMNS = {2: (1, 0), 3: (0, 1, 2)}


def _input(input, dims: int, op: str) -> tuple[Tensor, bool]:
    """input as [N, C, *size] of a floating dtype, and whether it was batched."""
    x = tensor_arg(input, op)
    if x.ndim not in (dims + 1, dims + 2):
        raise ValueError(
            f"{op}(): Expected {dims + 1}D or {dims + 2}D tensor, but got: {list(x.shape)}"
        )
    if x.dtype not in DTYPES:
        raise UnsupportedDtype(f"{op}: not implemented for {x.dtype} (floating point only)")
    batched = x.ndim == dims + 2
    for d in range(1 if batched else 0, x.ndim):
        if x.shape[d] == 0:
            raise ValueError(
                f"{op}(): Expected input to have non-zero size for non-batch dimensions, but"
                f" got {list(x.shape)} with dimension {d} being empty."
            )
    return (x if batched else x.unsqueeze(0)), batched


def _ratios(output_ratio, dims: int, op: str) -> tuple[float, ...]:
    """output_ratio as `dims` floats, each in (0, 1)."""
    ratios = tuple(output_ratio) if isinstance(output_ratio, Sequence) else (output_ratio,)
    ratios = ratios * dims if len(ratios) == 1 else ratios
    if len(ratios) != dims:
        raise ValueError(f"{op}: output_ratio must be one or {dims} numbers, got {output_ratio}")
    if not all(0 < float(r) < 1 for r in ratios):
        raise ValueError(f"{op}: output_ratio must be between 0 and 1 (got {output_ratio})")
    return tuple(float(r) for r in ratios)


def _output_sizes(size, kernel, output_size, output_ratio, op: str) -> tuple[int, ...]:
    """The output's spatial size, from output_size or output_ratio (exactly one given);
    each window must fit: out + kernel - 1 <= in (< in in 3-d, as torch checks)."""
    dims = len(kernel)
    if (output_size is None) == (output_ratio is None):
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    if output_size is not None:
        out = tuple_arg(output_size, dims, "output_size", op)
    else:
        out = tuple(int(s * r) for s, r in zip(size, _ratios(output_ratio, dims, op)))
    if any(k < 1 for k in kernel) or any(o < 0 for o in out):
        raise ValueError(
            f"{op}: kernel_size must be positive and output_size non-negative, got"
            f" kernel_size={list(kernel)}, output_size={list(out)}"
        )
    for name, s, k, o in zip(DIM_NAMES[dims], size, kernel, out):
        # torch's 3-d check is strict (a window may not end on the last element), its 2-d not
        if o + k - 1 > s or (dims == 3 and o + k - 1 == s):
            raise ValueError(f"{op}(): pool {name} {k} too large relative to input {name} {s}")
    return out


def _samples(samples, x: Tensor, dims: int, op: str) -> Tensor:
    """The random samples [N, C, dims]: _random_samples checked (its first N rows), else
    fresh uniform draws from kael's generator."""
    n, c = x.shape[:2]
    if samples is None:
        return rand(n, c, dims, dtype=x.dtype, device=x.device)
    s = tensor_arg(samples, op, "_random_samples")
    if s.ndim != 3:
        raise ValueError(f"{op}: Expect _random_samples to have 3 dimensions, got {s.ndim}")
    if s.shape[2] != dims:
        raise ValueError(
            f"{op}: Expect _random_samples.size(2) equals to {dims}; got {s.shape[2]}."
        )
    if s.shape[0] < n:
        raise ValueError(
            f"{op}: Expect _random_samples.size(0) no less then input batch size ({n}), got"
            f" {s.shape[0]}"
        )
    if s.shape[1] != c:
        raise ValueError(
            f"{op}: Expect _random_samples.size(1) equals to input channel size ({c}), got"
            f" {s.shape[1]}"
        )
    if s.dtype is not x.dtype:
        raise TypeError(
            f"{op}: Expect _random_samples to have the same dtype as input ({x.dtype}), got"
            f" {s.dtype}"
        )
    return s[:n]


def _starts(sample: Tensor, size: int, out: int, kernel: int) -> Tensor:
    """[N, C, out] int64 window starts: trunc((i + u) alpha) - trunc(u alpha) with alpha =
    (size - kernel) / (out - 1), each op rounded to u's dtype; the last start is size -
    kernel."""
    n, c = sample.shape
    last = factories.full((n, c, min(out, 1)), size - kernel, dtype=int64, device=sample.device)
    if out <= 1:
        return last
    dtype, u = sample.dtype, sample.unsqueeze(-1)
    alpha = factories.full((), size - kernel, dtype=dtype, device=sample.device) / factories.full(
        (), out - 1, dtype=dtype, device=sample.device
    )
    steps = factories.arange(out - 1, dtype=dtype, device=sample.device)
    starts = ((steps + u) * alpha).to(int64) - (u * alpha).to(int64)
    return index_ops.cat([starts, last], -1)


def _positions(starts: list[Tensor], kernel, size) -> Tensor:
    """[N, C, *out, K]: the flat plane position of each window's K elements (row-major)."""
    dims = len(kernel)
    taps = list(offsets(kernel))
    device = starts[0].device
    position, plane = None, 1
    for d in reversed(range(dims)):
        shape = [*starts[d].shape[:2]] + [1] * dims + [1]
        shape[2 + d] = starts[d].shape[2]
        offset = factories.tensor([t[d] for t in taps], dtype=int64, device=device)
        term = (starts[d].reshape(shape) + offset) * plane
        position = term if position is None else position + term
        plane *= size[d]
    return position


def _fractional_max_pool(dims: int, op: str):
    def fractional_max_pool(
        input: Tensor,
        kernel_size,
        output_size=None,
        output_ratio=None,
        return_indices: bool = False,
        _random_samples: Tensor | None = None,
    ):
        x, batched = _input(input, dims, op)
        size = x.shape[2:]
        kernel = tuple_arg(kernel_size, dims, "kernel_size", op)
        out = _output_sizes(size, kernel, output_size, output_ratio, op)
        samples = _samples(_random_samples, x, dims, op)
        starts = []
        for d, column in enumerate(SAMPLE_COLUMNS[dims]):
            starts.append(_starts(samples[:, :, column], size[d], out[d], kernel[d]))
        n, c = x.shape[:2]
        position = _positions(starts, kernel, size)
        flat = position.reshape(n, c, math.prod(position.shape[2:]))
        plane = x.reshape(n, c, math.prod(size))
        windows = index_ops.gather(plane, 2, flat).reshape(position.shape)
        winner = window_winners(windows)
        values = index_ops.gather(windows, -1, winner).squeeze(-1)
        indices = index_ops.gather(position, -1, winner).squeeze(-1)
        if not batched:
            values, indices = values.squeeze(0), indices.squeeze(0)
        return (values, indices) if return_indices else values

    fractional_max_pool.__name__ = fractional_max_pool.__qualname__ = op
    fractional_max_pool.__doc__ = (
        f"torch.nn.functional.{op}: max over pseudo-random windows of kernel_size."
    )
    return fractional_max_pool


POOLS = {
    f"fractional_max_pool{d}d": _fractional_max_pool(d, f"fractional_max_pool{d}d") for d in (2, 3)
}
POOLS |= {f"{name}_with_indices": with_indices(POOLS[name]) for name in list(POOLS)}
FUNCTIONS: dict[str, Callable] = {name: op_door(name, fn) for name, fn in POOLS.items()}
