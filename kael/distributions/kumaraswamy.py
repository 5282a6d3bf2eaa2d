"""Kumaraswamy(concentration1, concentration0) on [0, 1]: (1 - U ** (1 / b)) ** (1 / a) for
U ~ Uniform(0, 1), built as torch's, a TransformedDistribution of a Uniform."""

from __future__ import annotations

import math

import kael
from kael.distributions.beta import Beta
from kael.distributions.location_scale import _EULER_GAMMA
from kael.distributions.transformed_distribution import TransformedDistribution
from kael.distributions.transforms import AffineTransform, PowerTransform
from kael.distributions.uniform import Uniform
from kael.distributions.utils import broadcast_all
from kael.frontend.tensor import Tensor

__all__ = ["Kumaraswamy"]


def _moment(a: Tensor, b: Tensor, n: int) -> Tensor:
    """E[X ** n] = b B(1 + n / a, b)."""
    arg = 1 + n / a
    return b * (arg.lgamma() + b.lgamma() - (arg + b).lgamma()).exp()


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution: density a b x**(a-1) (1 - x**a)**(b-1), with
    a = concentration1 and b = concentration0."""

    arg_constraints = Beta.arg_constraints  # Beta's parameters, on Beta's support
    support = Beta.support
    has_rsample = True
    _batched = ("concentration1", "concentration0")

    def __init__(self, concentration1, concentration0, validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(
            kael.zeros_like(self.concentration0),
            kael.ones_like(self.concentration0),
            validate_args=validate_args,
        )
        chain = [
            PowerTransform(exponent=self.concentration0.reciprocal()),
            AffineTransform(loc=1.0, scale=-1.0),
            PowerTransform(exponent=self.concentration1.reciprocal()),
        ]
        super().__init__(base, chain, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return _moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        """nan where either concentration is below 1 (the density is unbounded there)."""
        a, b = self.concentration1, self.concentration0
        log_mode = b.reciprocal() * (-b).log1p() - (-b * a).log1p()
        return kael.where((b < 1) | (a < 1), math.nan, log_mode).exp()

    @property
    def variance(self) -> Tensor:
        return _moment(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        harmonic = (b + 1).digamma() + _EULER_GAMMA
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic - a.log() - b.log()
