"""torch.nn.functional's random layers beside dropout (random.py): channel dropout
(dropout1d/2d/3d), alpha dropout (alpha_dropout, feature_alpha_dropout) and the
randomized leaky relu (rrelu), each a noise tensor drawn from kael's Philox stream and
one elementwise kernel, as PyTorch composes them."""

from __future__ import annotations

import math

from kael.frontend import factories, random
from kael.frontend.activations import FUNCTIONS as ACTIVATIONS
from kael.frontend.formula import launch, where
from kael.frontend.outputs import bool_arg, check_writable, tensor_arg
from kael.frontend.tensor import Tensor
from kael.frontend.tracing import op_door
from kael.runtime.errors import TypeError, ValueError

SELU_ALPHA_SCALED = 1.7580993408473766  # PyTorch's alpha for alpha dropout: SELU's alpha * scale


def _args(input, p, training, inplace, op: str) -> tuple[Tensor, float, bool, bool]:
    x = tensor_arg(input, op)
    p = float(factories.as_number(p, "p"))
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: expected a floating point input, got {x.dtype}")
    training, inplace = bool_arg(training, op, "training"), bool_arg(inplace, op, "inplace")
    if inplace:
        check_writable(x, op)
    return x, p, training, inplace


def kept_mask(shape: tuple[int, ...], p: float, like: Tensor) -> Tensor:
    """1.0 where an element (or channel) is kept, with probability 1 - p, else 0.0."""
    draws = random.rand(*shape, dtype=like.dtype, device=like.device)
    return (draws < 1.0 - p).to(like.dtype)


def _result(x: Tensor, out: Tensor, inplace: bool) -> Tensor:
    return x.copy_(out) if inplace else out


def channel_shape(x: Tensor, batched: bool) -> tuple[int, ...]:
    """The noise shape of channel dropout: one draw per (sample,) channel."""
    lead = 2 if batched else 1
    return x.shape[:lead] + (1,) * (x.ndim - lead)


def _feature_dropout(dims: int):
    op = f"dropout{dims}d"

    def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
        x, p, training, inplace = _args(input, p, training, inplace, op)
        if x.ndim not in (dims + 1, dims + 2) and not (dims == 2 and x.ndim == 3):
            raise ValueError(
                f"{op}: Expected {dims + 1}D or {dims + 2}D input, but received a {x.ndim}D input"
            )
        if not training or p == 0.0:
            return x
        if p == 1.0:
            return _result(x, x * 0.0, inplace)
        # dropout2d of a 3-d input is PyTorch's 1-d channel dropout over (N, C, L)
        batched = x.ndim == dims + 2 or (dims == 2 and x.ndim == 3)
        noise = kept_mask(channel_shape(x, batched), p, x) / (1.0 - p)
        return _result(x, x * noise, inplace)

    dropout.__name__ = dropout.__qualname__ = op
    dropout.__doc__ = (
        f"torch.nn.functional.{op}: whole channels zeroed with probability p, the rest scaled"
        " by 1 / (1 - p)."
    )
    return dropout


def _alpha(feature: bool):
    op = "feature_alpha_dropout" if feature else "alpha_dropout"

    def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace=False):
        x, p, training, inplace = _args(input, p, training, inplace, op)
        if not training or p == 0.0:
            return x
        if p == 1.0:
            return _result(x, x * 0.0, inplace)
        shape = channel_shape(x, True) if feature and x.ndim >= 2 else x.shape
        a = 1.0 / math.sqrt((SELU_ALPHA_SCALED**2 * p + 1) * (1 - p))
        drop_value = SELU_ALPHA_SCALED * a

        def formula(x, keep, a, shift, drop):
            return x * (keep * a) + ((keep - 1) * drop + shift)

        params = {"a": a, "shift": drop_value * p, "drop": drop_value}
        out = launch((op,), [x, kept_mask(shape, p, x)], x.dtype, formula, params)
        return _result(x, out, inplace)

    alpha_dropout.__name__ = alpha_dropout.__qualname__ = op
    alpha_dropout.__doc__ = (
        f"torch.nn.functional.{op}: dropout keeping SELU's mean and variance (dropped values"
        " set to its negative saturation, then an affine correction)."
    )
    return alpha_dropout


def rrelu(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
) -> Tensor:
    """Negative values times a slope drawn from U(lower, upper) per element (training), or
    times (lower + upper) / 2 (eval: leaky_relu)."""
    return randomized_leaky_relu(input, lower, upper, training, inplace)


def randomized_leaky_relu(
    input: Tensor, lower: float, upper: float, training, inplace, generator=None
) -> Tensor:
    """rrelu, its slopes drawn from `generator` (the default one when None): torch.rrelu
    takes one, nn.functional.rrelu does not."""
    x = tensor_arg(input, "rrelu")
    training, inplace = (
        bool_arg(training, "rrelu", "training"),
        bool_arg(inplace, "rrelu", "inplace"),
    )
    if not x.dtype.is_floating_point:
        raise TypeError(f"rrelu: expected a floating point input, got {x.dtype}")
    if lower > upper:
        raise ValueError(
            f"rrelu: Lower bound should be less than or equal to the upper bound, got lower="
            f"{lower} and upper={upper}"
        )
    if not training:  # torch's rrelu kernel lays its result out row-major
        result = ACTIVATIONS["leaky_relu"](x, (lower + upper) / 2, inplace)
        return result if inplace else result.contiguous()
    if inplace:
        check_writable(x, "rrelu")
    slopes = factories.empty(x.shape, dtype=x.dtype, device=x.device)
    slopes.uniform_(lower, upper, generator=generator)
    # the row-major slopes first: they lay the result out row-major, as torch's is
    out = launch(("rrelu",), [slopes, x], x.dtype, lambda r, v: where(v < 0, v * r, v))
    return _result(x, out, inplace)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, True)


FUNCTIONS = {
    **{f"dropout{d}d": op_door(f"dropout{d}d", _feature_dropout(d)) for d in (1, 2, 3)},
    "alpha_dropout": op_door("alpha_dropout", _alpha(False)),
    "feature_alpha_dropout": op_door("feature_alpha_dropout", _alpha(True)),
    "rrelu": op_door("rrelu", rrelu),
    "rrelu_": op_door("rrelu_", rrelu_),
}
