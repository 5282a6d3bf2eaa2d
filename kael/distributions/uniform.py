"""Uniform(low, high): every value of the half-open interval [low, high) equally likely."""

from __future__ import annotations

import math

import kael
from kael.distributions import constraints
from kael.distributions.distribution import Distribution
from kael.frontend.tensor import Tensor

__all__ = ["Uniform"]


class Uniform(Distribution):
    """The continuous uniform distribution on [low, high)."""

    has_rsample = True
    _batched = ("low", "high")

    def __init__(self, low, high, validate_args: bool | None = None) -> None:
        self._init_parameters(low, high, validate_args=validate_args)

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        return {
            "low": constraints.less_than(self.high),
            "high": constraints.greater_than(self.low),
        }

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return math.nan * self.high

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """low + U * (high - low), U uniform on [0, 1)."""
        shape = self._extended_shape(sample_shape)
        u = kael.rand(shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        inside = (self.low <= value) & (self.high > value)
        return inside.to(self.low.dtype).log() - (self.high - self.low).log()

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return (self.high - self.low).log()
