"""The normal family: Normal, LogNormal (exp of a Normal) and HalfNormal (|Normal|).

Deviation: torch builds LogNormal and HalfNormal as TransformedDistributions of a Normal;
kael's are direct distributions with the same values, so their reprs name their parameters
(torch's show none) and they have no base_dist. Deviation: log_prob standardizes the value
first, (value - loc) / scale, where torch divides by scale**2: a scale whose square under- or
overflows the dtype gives the finite density here and nan in torch."""

from __future__ import annotations

import math

import kael
from kael.distributions import constraints
from kael.distributions.distribution import Distribution
from kael.distributions.exp_family import ExponentialFamily
from kael.distributions.location_scale import LocationScale
from kael.distributions.utils import standard_normal
from kael.frontend.tensor import Tensor

__all__ = ["HalfNormal", "LogNormal", "Normal"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _standard_log_prob(z: Tensor, scale: Tensor) -> Tensor:
    """log N(z * scale; 0, scale): the density of a standardized value z."""
    return -0.5 * z.pow(2) - scale.log() - _LOG_SQRT_2PI


def _standard_cdf(z: Tensor) -> Tensor:
    return 0.5 * (1 + kael.erf(z / math.sqrt(2)))


def _standard_icdf(p: Tensor) -> Tensor:
    return kael.erfinv(2 * p - 1) * math.sqrt(2)


def _normal_entropy(scale: Tensor) -> Tensor:
    return 0.5 + _LOG_SQRT_2PI + scale.log()


class Normal(LocationScale, ExponentialFamily):
    """The normal (Gaussian) distribution with mean `loc` and standard deviation `scale`."""

    _mean_carrier_measure = 0

    def _noise(self, shape: kael.Size) -> Tensor:
        return standard_normal(shape, self.loc)

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """rsample's draw, row-major as torch's (torch.normal of the expanded parameters)."""
        return self.rsample(sample_shape).contiguous()

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2)

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return _standard_log_prob((value - self.loc) / self.scale, self.scale)

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return _standard_cdf((value - self.loc) / self.scale)

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * _standard_icdf(value)

    def entropy(self) -> Tensor:
        return _normal_entropy(self.scale)

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        variance = self.scale.pow(2)
        return (self.loc / variance, -0.5 * variance.reciprocal())

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return -0.25 * x.pow(2) / y + 0.5 * (-math.pi / y).log()


class LogNormal(LocationScale):
    """exp(X) for X ~ Normal(loc, scale): a positive variable whose log is normal."""

    support = constraints.positive

    def _noise(self, shape: kael.Size) -> Tensor:
        return standard_normal(shape, self.loc)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        return super().rsample(sample_shape).exp()

    @property
    def mean(self) -> Tensor:
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self) -> Tensor:
        return (self.loc - self.scale.pow(2)).exp()

    @property
    def variance(self) -> Tensor:
        s2 = self.scale.pow(2)
        return s2.expm1() * (2 * self.loc + s2).exp()

    def log_prob(self, value: Tensor) -> Tensor:
        log_value = self._checked(value).log()
        return _standard_log_prob((log_value - self.loc) / self.scale, self.scale) - log_value

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return _standard_cdf((value.log() - self.loc) / self.scale)

    def icdf(self, value: Tensor) -> Tensor:
        return (self.loc + self.scale * _standard_icdf(value)).exp()

    def entropy(self) -> Tensor:
        return _normal_entropy(self.scale) + self.loc


class HalfNormal(Distribution):
    """|X| for X ~ Normal(0, scale)."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _batched = ("scale",)

    def __init__(self, scale, validate_args: bool | None = None) -> None:
        self._init_parameters(scale, validate_args=validate_args)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return (self.scale * standard_normal(shape, self.scale)).abs()

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def mode(self) -> Tensor:
        return kael.zeros_like(self.scale)

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (1 - 2 / math.pi)

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        density = _standard_log_prob(value / self.scale, self.scale) + math.log(2)
        return kael.where(value >= 0, density, -math.inf)

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return 2 * _standard_cdf(value / self.scale) - 1

    def icdf(self, value: Tensor) -> Tensor:
        return self.scale * _standard_icdf((value + 1) / 2)

    def entropy(self) -> Tensor:
        return _normal_entropy(self.scale) - math.log(2)
