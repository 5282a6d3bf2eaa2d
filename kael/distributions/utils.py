"""Helpers the distributions share, as torch.distributions.utils has them: parameter
broadcasting, probabilities <-> logits, and a cached property for derived parameters."""

from __future__ import annotations

import functools
import numbers
import operator
from collections.abc import Callable
from typing import Any

import kael
from kael.frontend.tensor import Tensor
from kael.runtime.errors import ValueError

__all__ = [
    "broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits",
    "enumerated", "filled", "parameter_view", "standard_normal", "sum_rightmost",
]  # fmt: skip


def broadcast_all(*values) -> tuple[Tensor, ...]:
    """Every value (Tensors and Python numbers) as a tensor of their broadcast shape; numbers
    take the first tensor's dtype (or the default dtype when there is none)."""
    if not all(isinstance(v, Tensor | numbers.Number) for v in values):
        raise ValueError(
            "Input arguments must all be instances of numbers.Number, kael.Tensor or objects "
            "implementing __torch_function__."
        )
    if not all(isinstance(v, Tensor) for v in values):
        like = next((v for v in values if isinstance(v, Tensor)), None)
        options = {"dtype": kael.get_default_dtype()} if like is None else {
            "dtype": like.dtype, "device": like.device,
        }  # fmt: skip
        values = tuple(v if isinstance(v, Tensor) else kael.tensor(v, **options) for v in values)
    return tuple(kael.broadcast_tensors(*values))


def filled(shape: tuple[int, ...], value: float, like: Tensor) -> Tensor:
    """A tensor of `shape` holding `value`, in `like`'s dtype and on its device (a moment
    that is nan or inf for every parameter)."""
    return kael.full(shape, value, dtype=like.dtype, device=like.device)


def standard_normal(shape: tuple[int, ...], like: Tensor) -> Tensor:
    """Standard normal draws of `shape`, in `like`'s dtype and on its device."""
    return kael.randn(shape, dtype=like.dtype, device=like.device)


def clamp_probs(probs: Tensor) -> Tensor:
    """`probs` clamped into [eps, 1 - eps] (eps of its dtype), so their logs stay finite."""
    eps = kael.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits of probabilities: log(p) per category, or log(p) - log1p(-p) for binary ones."""
    clamped = clamp_probs(probs)
    if is_binary:
        return clamped.log() - (-clamped).log1p()
    return clamped.log()


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities of logits: sigmoid for binary ones, softmax over the last dim otherwise."""
    if is_binary:
        return kael.sigmoid(logits)
    return kael.softmax(logits, -1)


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """`value` summed over its rightmost `dim` dimensions."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[: value.dim() - dim]) + (-1,)).sum(-1)


class lazy_property:  # noqa: N801 (torch's name)
    """A property computed once per instance, on first use, then stored in its __dict__ (a
    distribution's probs from its logits, or the other way)."""

    def __init__(self, wrapped: Callable[[Any], Any]) -> None:
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def parameter_view(name: str, doc: str | None = None) -> property:
    """A read-only property that returns the attribute `name`: a moment that is one of the
    parameters (the mean at "loc"), or a parameter of a part ("base_dist.rate")."""
    return property(operator.attrgetter(name), doc=doc)


def enumerated(values: Tensor, batch_shape: tuple[int, ...], expand: bool) -> Tensor:
    """A support's values (along dim 0, each of the event's shape) laid out as
    enumerate_support returns them: (n,) + batch_shape + event, or 1s for the batch dims."""
    n, *event = values.shape
    values = values.reshape((n,) + (1,) * len(batch_shape) + tuple(event))
    if expand:
        values = values.expand((n,) + tuple(batch_shape) + tuple(event))
    return values
