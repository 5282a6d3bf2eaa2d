"""Pareto(scale, alpha) (type I): scale * exp(E) for E ~ Exponential(alpha), built as torch's, a
TransformedDistribution of an Exponential (so its parameter errors name the Exponential's
`rate`, as torch's do)."""

from __future__ import annotations

from kael.distributions import constraints
from kael.distributions.exponential import Exponential
from kael.distributions.transformed_distribution import TransformedDistribution
from kael.distributions.transforms import AffineTransform, ExpTransform
from kael.distributions.utils import broadcast_all
from kael.frontend.tensor import Tensor

__all__ = ["Pareto"]


class Pareto(TransformedDistribution):
    """The Pareto distribution: density alpha scale**alpha / x**(alpha + 1) on x >= scale."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}
    _batched = ("scale", "alpha")

    def __init__(self, scale, alpha, validate_args: bool | None = None) -> None:
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base = Exponential(self.alpha, validate_args=validate_args)
        chain = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base, chain, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        """inf for alpha <= 1 (torch's clamp makes the division by zero)."""
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        """inf for alpha <= 2."""
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.greater_than_eq(self.scale)

    def entropy(self) -> Tensor:
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())
