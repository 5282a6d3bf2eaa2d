"""Location-scale families with closed forms: the shared LocationScale base (loc and scale
broadcast together, a sample is loc + scale * noise) and Laplace, Cauchy and Gumbel.

Deviation: torch builds Gumbel as a TransformedDistribution of a Uniform; kael's is a direct
distribution with the same values, so its repr names loc and scale (torch's shows none)."""

from __future__ import annotations

import math

import kael
from kael.distributions import constraints
from kael.distributions.distribution import Distribution
from kael.distributions.utils import filled
from kael.frontend.tensor import Tensor

__all__ = ["Cauchy", "Gumbel", "Laplace", "LocationScale"]

_EULER_GAMMA = 0.57721566490153286060


class LocationScale(Distribution):
    """A family given by `loc` (real) and `scale` (positive); subclasses say how to draw the
    standard noise (`_noise`) that rsample shifts and scales."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _batched = ("loc", "scale")

    def __init__(self, loc, scale, validate_args: bool | None = None) -> None:
        self._init_parameters(loc, scale, validate_args=validate_args)

    def _noise(self, shape: kael.Size) -> Tensor:
        """Standard draws (loc 0, scale 1) of `shape`, in the parameters' dtype."""
        raise NotImplementedError

    def _empty(self, shape: kael.Size) -> Tensor:
        return kael.empty(shape, dtype=self.loc.dtype, device=self.loc.device)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """loc + scale * standard noise, of shape sample_shape + batch_shape."""
        return self.loc + self.scale * self._noise(self._extended_shape(sample_shape))

    @property
    def mode(self) -> Tensor:
        return self.loc


class Laplace(LocationScale):
    """The Laplace (double exponential) distribution: density exp(-|x - loc| / scale) / (2 scale)."""

    def _noise(self, shape: kael.Size) -> Tensor:
        eps = kael.finfo(self.loc.dtype).eps
        u = self._empty(shape).uniform_(eps - 1, 1)
        return -u.sign() * (-u.abs()).log1p()

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        return (2**0.5) * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        z = value - self.loc
        return 0.5 - 0.5 * z.sign() * (-z.abs() / self.scale).expm1()

    def icdf(self, value: Tensor) -> Tensor:
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self) -> Tensor:
        return 1 + (2 * self.scale).log()


class Cauchy(LocationScale):
    """The Cauchy (Lorentz) distribution: no mean or variance (nan and inf, as torch's)."""

    def _noise(self, shape: kael.Size) -> Tensor:
        return self._empty(shape).cauchy_()

    @property
    def mean(self) -> Tensor:
        return filled(self._extended_shape(), math.nan, self.loc)

    @property
    def variance(self) -> Tensor:
        return filled(self._extended_shape(), math.inf, self.loc)

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        z = (value - self.loc) / self.scale
        return -math.log(math.pi) - self.scale.log() - z.pow(2).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return kael.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return kael.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()


def _standard_gumbel(u: Tensor) -> Tensor:
    """The standard Gumbel value whose cdf is `u`."""
    return -(-u.log()).log()


class Gumbel(LocationScale):
    """The Gumbel (type-1 extreme value) distribution: cdf exp(-exp(-(x - loc) / scale)),
    drawn, as torch's, from a uniform on (tiny, 1 - eps), which its cdf and icdf rescale to
    [0, 1]: icdf(0) and icdf(1) are finite, as torch's."""

    def _unit_bounds(self) -> tuple[float, float]:
        finfo = kael.finfo(self.loc.dtype)
        return finfo.tiny, 1 - finfo.eps

    def _noise(self, shape: kael.Size) -> Tensor:
        return _standard_gumbel(self._empty(shape).uniform_(*self._unit_bounds()))

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * _EULER_GAMMA

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        low, high = self._unit_bounds()
        u = (-(-(value - self.loc) / self.scale).exp()).exp()
        return ((u - low) / (high - low)).clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        low, high = self._unit_bounds()
        return self.loc + self.scale * _standard_gumbel(value * (high - low) + low)

    def entropy(self) -> Tensor:
        return self.scale.log() + (1 + _EULER_GAMMA)
