"""Weibull(scale, concentration): scale * E ** (1 / concentration) for E ~ Exponential(1), built
as torch's, a TransformedDistribution of an Exponential."""

from __future__ import annotations

import kael
from kael.distributions import constraints
from kael.distributions.exponential import Exponential
from kael.distributions.location_scale import _EULER_GAMMA
from kael.distributions.transformed_distribution import TransformedDistribution
from kael.distributions.transforms import AffineTransform, PowerTransform
from kael.distributions.utils import broadcast_all
from kael.frontend.tensor import Tensor

__all__ = ["Weibull"]


class Weibull(TransformedDistribution):
    """The two-parameter Weibull distribution: cdf 1 - exp(-(x / scale) ** concentration)."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive
    _batched = ("scale", "concentration", "concentration_reciprocal")

    def __init__(self, scale, concentration, validate_args: bool | None = None) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(kael.ones_like(self.scale), validate_args=validate_args)
        chain = [
            PowerTransform(exponent=self.concentration_reciprocal),
            AffineTransform(loc=0, scale=self.scale),
        ]
        super().__init__(base, chain, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.scale * (1 + self.concentration_reciprocal).lgamma().exp()

    @property
    def mode(self) -> Tensor:
        k = self.concentration
        return self.scale * ((k - 1) / k).pow(k.reciprocal())

    @property
    def variance(self) -> Tensor:
        inv = self.concentration_reciprocal
        second = (1 + 2 * inv).lgamma().exp()
        return self.scale.pow(2) * (second - (2 * (1 + inv).lgamma()).exp())

    def entropy(self) -> Tensor:
        inv = self.concentration_reciprocal
        return _EULER_GAMMA * (1 - inv) + (self.scale * inv).log() + 1
