"""The gamma family: Gamma(concentration, rate) and Chi2(df) = Gamma(df / 2, 1 / 2).
Samples come from kael._standard_gamma (torch's private Marsaglia-Tsang sampler)."""

from __future__ import annotations

import kael
from kael.distributions import constraints
from kael.distributions.exp_family import ExponentialFamily
from kael.distributions.utils import broadcast_all
from kael.frontend.tensor import Tensor

__all__ = ["Chi2", "Gamma"]


class Gamma(ExponentialFamily):
    """The gamma distribution: density rate**c x**(c-1) exp(-rate x) / Gamma(c) on x > 0."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _batched = ("concentration", "rate")
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args: bool | None = None) -> None:
        self._init_parameters(concentration, rate, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """Standard gamma draws divided by the rate."""
        shape = self._extended_shape(sample_shape)
        value = kael._standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return value.clamp(min=kael.finfo(value.dtype).tiny)

    def log_prob(self, value: Tensor | float) -> Tensor:
        """As torch's: `value` (a tensor or a number) is taken in the rate's dtype and device."""
        value = kael.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        value = self._checked(value)
        c, rate = self.concentration, self.rate
        return kael.xlogy(c, rate) + kael.xlogy(c - 1, value) - rate * value - c.lgamma()

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return kael.special.gammainc(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        c = self.concentration
        return c - self.rate.log() + c.lgamma() + (1.0 - c) * c.digamma()

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return (x + 1).lgamma() + (x + 1) * (-y.reciprocal()).log()


class Chi2(Gamma):
    """The chi-squared distribution with `df` degrees of freedom: Gamma(df / 2, 1 / 2)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args: bool | None = None) -> None:
        (df,) = broadcast_all(df)
        half = 0.5 * df  # a float tensor even for integer df, as torch's
        super().__init__(half, kael.full_like(half, 0.5), validate_args=validate_args)

    @property
    def df(self) -> Tensor:
        """Degrees of freedom: twice the concentration."""
        return self.concentration * 2
