"""Exponential(rate): the waiting time of a Poisson process of intensity `rate`."""

from __future__ import annotations

import kael
from kael.distributions import constraints
from kael.distributions.exp_family import ExponentialFamily
from kael.frontend.tensor import Tensor

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """The exponential distribution: density rate * exp(-rate * x) on x >= 0."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _batched = ("rate",)
    _mean_carrier_measure = 0

    def __init__(self, rate, validate_args: bool | None = None) -> None:
        self._init_parameters(rate, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        return kael.zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate.pow(-2)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """Standard exponential draws divided by the rate."""
        shape = self._extended_shape(sample_shape)
        draws = kael.empty(shape, dtype=self.rate.dtype, device=self.rate.device).exponential_()
        return draws / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        return -(-value).log1p() / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - self.rate.log()

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (-self.rate,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return -(-x).log()
