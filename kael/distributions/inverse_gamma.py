"""InverseGamma(concentration, rate): 1 / X for X ~ Gamma(concentration, rate), built as
torch's, a TransformedDistribution of a Gamma through PowerTransform(-1)."""

from __future__ import annotations

import math

import kael
from kael.distributions import constraints
from kael.distributions.gamma import Gamma
from kael.distributions.transformed_distribution import TransformedDistribution
from kael.distributions.transforms import PowerTransform
from kael.distributions.utils import parameter_view
from kael.frontend.tensor import Tensor

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    """The inverse gamma distribution: density rate**c x**(-c-1) exp(-rate / x) / Gamma(c)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args: bool | None = None) -> None:
        base = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -base.rate.new_ones(())
        super().__init__(base, PowerTransform(neg_one), validate_args=validate_args)

    concentration = parameter_view("base_dist.concentration", "The base Gamma's shape.")
    rate = parameter_view("base_dist.rate", "The base Gamma's rate (the scale of this one).")

    @property
    def mean(self) -> Tensor:
        """inf for concentration <= 1."""
        c = self.concentration
        return kael.where(c > 1, self.rate / (c - 1), math.inf)

    @property
    def mode(self) -> Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        """inf for concentration <= 2."""
        c = self.concentration
        return kael.where(c > 2, self.rate.square() / ((c - 1).square() * (c - 2)), math.inf)

    def entropy(self) -> Tensor:
        c = self.concentration
        return c + self.rate.log() + c.lgamma() - (1 + c) * c.digamma()
