"""HalfCauchy(scale): |X| for X ~ Cauchy(0, scale), built as torch's, a TransformedDistribution
of a Cauchy through AbsTransform (with closed-form scores, as AbsTransform is not bijective)."""

from __future__ import annotations

import math

import kael
from kael.distributions import constraints
from kael.distributions.location_scale import Cauchy
from kael.distributions.transformed_distribution import TransformedDistribution
from kael.distributions.transforms import AbsTransform
from kael.distributions.utils import filled, parameter_view
from kael.frontend.tensor import Tensor

__all__ = ["HalfCauchy"]


class HalfCauchy(TransformedDistribution):
    """The half-Cauchy distribution: twice the Cauchy(0, scale) density on x >= 0."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args: bool | None = None) -> None:
        base = Cauchy(0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    scale = parameter_view("base_dist.scale", "The scale of the full Cauchy.")

    @property
    def mean(self) -> Tensor:
        return filled(self._extended_shape(), math.inf, self.scale)

    @property
    def mode(self) -> Tensor:
        return kael.zeros_like(self.scale)

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    def log_prob(self, value: Tensor | float) -> Tensor:
        """As torch's: `value` (a tensor or a number) is taken in the scale's dtype."""
        value = self._checked(value)
        value = kael.as_tensor(value, dtype=self.scale.dtype, device=self.scale.device)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return kael.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value: Tensor) -> Tensor:
        return 2 * self.base_dist.cdf(self._checked(value)) - 1

    def icdf(self, value: Tensor) -> Tensor:
        return self.base_dist.icdf((value + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - math.log(2)
