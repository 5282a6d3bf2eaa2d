"""Poisson(rate): the number of events of a Poisson process in unit time."""

from __future__ import annotations

import kael
from kael.distributions import constraints
from kael.distributions.exp_family import ExponentialFamily
from kael.distributions.utils import broadcast_all
from kael.frontend.tensor import Tensor

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """The Poisson distribution: P(k) = rate**k exp(-rate) / k!. It has no entropy, as torch's:
    the generic exponential-family one needs a mean carrier measure (and autograd)."""

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

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.rate.log(),)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return x.exp()
