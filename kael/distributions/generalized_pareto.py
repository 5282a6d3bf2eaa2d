"""GeneralizedPareto(loc, scale, concentration): a direct distribution, as torch's (not a
TransformedDistribution); samples by inverting the cdf at kael.rand draws. A concentration
within isclose of 0 takes the exponential limit, as torch's. Deviation: scores work on float64
parameters, where torch's log_prob raises (it compares them with a float32 zero)."""

from __future__ import annotations

import math

import kael
from kael.distributions import constraints
from kael.distributions.distribution import Distribution
from kael.distributions.utils import parameter_view
from kael.frontend.tensor import Tensor

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution: survival (1 + c z) ** (-1 / c) at
    z = (x - loc) / scale (exp(-z) at c = 0), on [loc, loc - scale / c] for c < 0 and
    [loc, inf) otherwise."""

    arg_constraints = {
        "loc": constraints.real,
        "scale": constraints.positive,
        "concentration": constraints.real,
    }
    has_rsample = True
    _batched = ("loc", "scale", "concentration")

    def __init__(self, loc, scale, concentration, validate_args: bool | None = None) -> None:
        self._init_parameters(loc, scale, concentration, validate_args=validate_args)

    def _safe_concentration(self) -> tuple[Tensor, Tensor]:
        """(where the concentration is ~0, the concentration with those entries set to 1)."""
        c = self.concentration
        at_zero = kael.isclose(c, kael.zeros_like(c))
        return at_zero, kael.where(at_zero, 1.0, c)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return self.icdf(kael.rand(shape, dtype=self.loc.dtype, device=self.loc.device))

    def log_prob(self, value: Tensor) -> Tensor:
        z = (self._checked(value) - self.loc) / self.scale
        at_zero, c = self._safe_concentration()
        y = 1 / c + kael.ones_like(z)
        nonzero = kael.where(y == 0, y, y * (c * z).log1p())
        return -self.scale.log() - kael.where(at_zero, z, nonzero)

    def log_survival_function(self, value: Tensor) -> Tensor:
        """log P(X > value)."""
        z = (self._checked(value) - self.loc) / self.scale
        at_zero, c = self._safe_concentration()
        return kael.where(at_zero, -z, -(c * z).log1p() / c)

    def log_cdf(self, value: Tensor) -> Tensor:
        """log P(X <= value)."""
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        return self.log_cdf(value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        at_zero, c = self._safe_concentration()
        log_u = (-value).log1p()
        nonzero = self.loc + self.scale / c * (-c * log_u).expm1()
        return kael.where(at_zero, self.loc - self.scale * log_u, nonzero)

    @property
    def mean(self) -> Tensor:
        """nan for concentration >= 1."""
        c = self.concentration
        valid = c < 1
        result = self.loc + self.scale / (1 - kael.where(valid, c, 0.5))
        return kael.where(valid, result, math.nan)

    @property
    def variance(self) -> Tensor:
        """nan for concentration >= 1/2."""
        c = self.concentration
        valid = c < 0.5
        safe = kael.where(valid, c, 0.25)
        result = self.scale.pow(2) / ((1 - safe).pow(2) * (1 - 2 * safe))
        return kael.where(valid, result, math.nan)

    def entropy(self) -> Tensor:
        return (self.scale.log() + self.concentration + 1).expand(self._batch_shape)

    mode = parameter_view("loc")

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        c = self.concentration
        upper = kael.where(c < 0, self.loc - self.scale / c, math.inf)
        return constraints.interval(self.loc, upper)
