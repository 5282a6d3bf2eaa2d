"""Poisson(rate): the number of events of a Poisson process in unit time."""

from __future__ import annotations

import kael
from kael.distributions import constraints
from kael.distributions.distribution import Distribution
from kael.distributions.utils import broadcast_all
from kael.frontend.tensor import Tensor

__all__ = ["Poisson"]


class Poisson(Distribution):
    """The Poisson distribution: P(k) = rate**k exp(-rate) / k!. Its entropy, which torch
    computes by autograd through the exponential family's normalizer, is not available."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer
    _batched = ("rate",)

    def __init__(self, rate, validate_args: bool | None = None) -> None:
        self._init_parameters(rate, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        return kael.poisson(self.rate.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        rate, value = broadcast_all(self.rate, self._checked(value))
        return kael.xlogy(value, rate) - rate - (value + 1).lgamma()
