"""VonMises(loc, concentration): the circular normal distribution of angles, density
exp(kappa cos(x - loc)) / (2 pi I0(kappa)). loc and values may be any real (angles mod 2 pi).

Samples come from Best and Fisher's rejection sampler (1979), in float64 as torch's, each
round drawing kael.rand uniforms only for the elements not yet accepted.
Deviation: torch evaluates log I0 and log I1 by Abramowitz-Stegun polynomial fits (relative
error about 1e-7); kael takes them from kael.special.i0e / i1e, exact to the dtype, so
log_prob differs from torch's by up to about 1e-6 and the variance by up to about 5e-4
relative (at large concentration, where 1 - I1 / I0 cancels)."""

from __future__ import annotations

import math

import kael
from kael.distributions import constraints
from kael.distributions.distribution import Distribution
from kael.distributions.utils import lazy_property, parameter_view
from kael.frontend.tensor import Tensor
from kael.runtime.errors import Error

__all__ = ["VonMises"]

MAX_ROUNDS = 1000  # each round accepts an element with probability above 0.65


def _log_i0(x: Tensor) -> Tensor:
    """log I0(x) for x > 0, without overflow: log(i0e(x)) + x."""
    return kael.special.i0e(x).log() + x


def _proposal_r(kappa: Tensor) -> Tensor:
    """Best and Fisher's r = (1 + rho^2) / (2 rho), or its Taylor form 1 / kappa + kappa
    where kappa < 1e-5 (rho's formula cancels there)."""
    tau = 1 + (1 + 4 * kappa.pow(2)).sqrt()
    rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
    return kael.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho.pow(2)) / (2 * rho))


def _propose(kappa: Tensor, r: Tensor) -> tuple[Tensor, Tensor]:
    """One round of proposals at each (kappa, r): the angle in [-pi, pi] and whether it is
    accepted."""
    u1, u2, u3 = kael.rand((3, *r.shape), dtype=r.dtype, device=r.device).unbind()
    z = (math.pi * u1).cos()
    f = (1 + r * z) / (r + z)
    c = kappa * (r - f)
    accept = (c * (2 - c) - u2 > 0) | ((c / u2).log() + 1 - c >= 0)
    return (u3 - 0.5).sign() * f.acos(), accept


class VonMises(Distribution):
    """The von Mises distribution on the circle, at `loc` with concentration kappa > 0."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False
    _batched = ("loc", "concentration")

    def __init__(self, loc, concentration, validate_args: bool | None = None) -> None:
        self._init_parameters(loc, concentration, validate_args=validate_args)

    mean = parameter_view("loc", "The circular mean.")
    mode = parameter_view("loc")

    @property
    def variance(self) -> Tensor:
        """The circular variance 1 - I1(kappa) / I0(kappa)."""
        kappa = self.concentration
        return 1 - kael.special.i1e(kappa) / kael.special.i0e(kappa)

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        kappa = self.concentration
        return kappa * (value - self.loc).cos() - math.log(2 * math.pi) - _log_i0(kappa)

    @lazy_property
    def _proposal_r(self) -> Tensor:
        return _proposal_r(self.concentration.to(kael.float64))

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """Angles in [-pi, pi), in the parameters' dtype (drawn in float64)."""
        shape = tuple(self._extended_shape(sample_shape))
        kappa = self.concentration.to(kael.float64).expand(shape).reshape(-1)
        r = self._proposal_r.expand(shape).reshape(-1)
        x = kael.zeros(kappa.shape, dtype=kael.float64, device=kappa.device)
        pending = kael.arange(kappa.numel(), device=kappa.device)
        for _ in range(MAX_ROUNDS):
            if pending.numel() == 0:
                break
            angle, accept = _propose(kappa[pending], r[pending])
            x[pending[accept]] = angle[accept]
            pending = pending[~accept]
        else:
            if pending.numel():
                raise Error(
                    f"VonMises.sample: {pending.numel()} draws not accepted in {MAX_ROUNDS} "
                    "rounds of the rejection sampler"
                )
        loc = self.loc.to(kael.float64).expand(shape)
        angles = (x.reshape(shape) + math.pi + loc) % (2 * math.pi) - math.pi
        return angles.to(self.loc.dtype)
