"""make_tensor: a tensor of random values for a test, as torch.testing.make_tensor draws it
(kael's own generator, so the values are not torch's): uniform in [low, high) clamped to
the dtype's range, -9 to 9 by default (0 to 10 for uint8, 0 or 1 for bool)."""

from __future__ import annotations

import collections.abc
import math

from kael.frontend import factories
from kael.frontend import random as kael_random
from kael.frontend.tensor import Tensor
from kael.runtime import user_warning
from kael.runtime.dtypes import DType, bool_, uint8
from kael.runtime.errors import ValueError
from kael.runtime.typeinfo import finfo, iinfo


def _interval(dtype: DType, low, high) -> tuple:
    """[low, high) with torch's defaults, checks and clamping to what the dtype holds
    (integer bounds rounded up, as torch.randint's exclusive high needs)."""
    if dtype.is_floating_point:
        info = finfo(dtype)
        lowest, highest, default = info.min, info.max, (-9, 9)
    else:  # high is exclusive: the dtype's maximum is drawn with high = max + 1
        info = iinfo(dtype)
        lowest, highest = info.min, info.max + 1
        default = (0, 10) if dtype is uint8 else (-9, 10)
    low = default[0] if low is None else low
    high = default[1] if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and dtype.is_floating_point:
        user_warning.warn(
            "Passing `low==high` to `kael.testing.make_tensor` for floating types is"
            " deprecated, as in torch; use `kael.full(...)` instead.",
            FutureWarning,
        )
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(
            f"The value interval specified by `low` and `high` is [{low}, {high}), but {dtype}"
            f" only supports [{lowest}, {highest})"
        )
    low, high = (min(max(v, lowest), highest) for v in (low, high))
    if not dtype.is_floating_point:
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(
    *shape,
    dtype: DType,
    device,
    low: float | None = None,
    high: float | None = None,
    requires_grad: bool = False,
    noncontiguous: bool = False,
    exclude_zero: bool = False,
    memory_format=None,
) -> Tensor:
    """A tensor of `shape` (ints, or one sequence of them) with random values in [low, high);
    `noncontiguous` gives every other element of a twice-as-wide buffer, `exclude_zero`
    replaces zeros by 1 (integers) or the dtype's smallest normal (floats)."""
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = tuple(shape[0])
    if noncontiguous and memory_format is not None:
        raise ValueError(
            "The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got"
            f" noncontiguous={noncontiguous} and memory_format={memory_format}"
        )
    if dtype is bool_:
        result = kael_random.randint(0, 2, shape, dtype=bool_, device=device)
    else:
        low, high = _interval(dtype, low, high)
        if not dtype.is_floating_point:
            result = kael_random.randint(low, high, shape, dtype=dtype, device=device)
        elif low == high:
            result = factories.full(shape, low, dtype=dtype, device=device)
        else:
            result = factories.empty(shape, dtype=dtype, device=device).uniform_(low, high)
    if noncontiguous and result.numel() > 1:
        result = result.repeat_interleave(2, dim=-1)[..., ::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = finfo(dtype).tiny if dtype.is_floating_point else 1
    if requires_grad:
        result.requires_grad_(True)  # kael's typed error: no autograd yet
    return result
