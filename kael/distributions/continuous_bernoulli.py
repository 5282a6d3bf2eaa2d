"""ContinuousBernoulli(probs or logits, lims): the density C(p) p**x (1 - p)**(1 - x) on
[0, 1] (Loaiza-Ganem and Cunningham, 2019). Its normalizer and moments cancel near p = 1/2:
inside `lims` they take their Taylor expansions about 1/2, as torch's. Samples are the icdf
of kael.rand uniforms."""

from __future__ import annotations

import math
import numbers

import kael
from kael.distributions import constraints
from kael.distributions.exp_family import ExponentialFamily
from kael.distributions.probs_logits import ProbsOrLogits, one_of
from kael.distributions.utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs
from kael.frontend.tensor import Tensor
from kael.runtime.errors import ValueError

__all__ = ["ContinuousBernoulli"]

_bce_with_logits = kael.nn.functional.binary_cross_entropy_with_logits


class ContinuousBernoulli(ProbsOrLogits, ExponentialFamily):
    """The continuous Bernoulli distribution on [0, 1]; `probs` in (0, 1) (clamped to
    [eps, 1 - eps]) or real `logits` whose sigmoid is probs."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(
        self,
        probs=None,
        logits=None,
        lims: tuple[float, float] = (0.499, 0.501),
        validate_args: bool | None = None,
    ) -> None:
        self._param_name, param = one_of(probs, logits)
        (value,) = broadcast_all(param)
        if probs is not None:
            # torch checks probs before clamping only when validate_args is given
            if validate_args is not None and not bool(constraints.unit_interval.check(value).all()):
                raise ValueError("The parameter probs has invalid values")
            value = clamp_probs(value)
        self.__dict__[self._param_name] = value
        self._lims = lims
        batch_shape = () if isinstance(param, numbers.Number) else tuple(value.shape)
        super().__init__(batch_shape, validate_args=validate_args)

    @lazy_property
    def probs(self) -> Tensor:
        """sigmoid(logits), clamped to [eps, 1 - eps]."""
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def _outside_unstable_region(self) -> Tensor:
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Tensor:
        """probs, with those inside lims moved to lims[0] (the exact forms are then finite;
        the Taylor forms replace them there)."""
        return kael.where(self._outside_unstable_region(), self.probs, self._lims[0])

    def _stable(self, exact: Tensor, taylor: Tensor) -> Tensor:
        """`exact` outside lims, `taylor` inside."""
        return kael.where(self._outside_unstable_region(), exact, taylor)

    def _log_odds_cut(self) -> Tensor:
        """log(1 - p) - log(p) at the cut probs."""
        cut = self._cut_probs()
        return (-cut).log1p() - cut.log()

    def _cont_bern_log_norm(self) -> Tensor:
        """log C(p): log|log(1-p) - log(p)| - log|1 - 2p|, its Taylor form about 1/2 inside lims."""
        cut = self._cut_probs()
        below_half = kael.where(cut <= 0.5, cut, 0.0)
        above_half = kael.where(cut >= 0.5, cut, 1.0)
        log_abs_1m2p = kael.where(
            cut <= 0.5, (-2.0 * below_half).log1p(), (2.0 * above_half - 1.0).log()
        )
        log_norm = self._log_odds_cut().abs().log() - log_abs_1m2p
        x = (self.probs - 0.5).pow(2)
        return self._stable(log_norm, math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x)

    @property
    def mean(self) -> Tensor:
        cut = self._cut_probs()
        exact = cut / (2.0 * cut - 1.0) + 1.0 / self._log_odds_cut()
        x = self.probs - 0.5
        return self._stable(exact, 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x)

    @property
    def variance(self) -> Tensor:
        cut = self._cut_probs()
        exact = cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2) + 1.0 / self._log_odds_cut().pow(2)
        x = (self.probs - 0.5).pow(2)
        return self._stable(exact, 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """icdf of uniform draws, in the parameters' dtype."""
        shape = self._extended_shape(sample_shape)
        return self.icdf(kael.rand(shape, dtype=self.probs.dtype, device=self.probs.device))

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)  # before logits, which may be computed now
        logits, value = broadcast_all(self.logits, value)
        return -_bce_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        cut = self._cut_probs()
        exact = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        inside = self._stable(exact, value)
        return kael.where(value <= 0.0, 0.0, kael.where(value >= 1.0, 1.0, inside))

    def icdf(self, value: Tensor) -> Tensor:
        cut = self._cut_probs()
        exact = (
            (-cut + value * (2.0 * cut - 1.0)).log1p() - (-cut).log1p()
        ) / -self._log_odds_cut()
        return self._stable(exact, value)

    def entropy(self) -> Tensor:
        log_probs0, log_probs1 = (-self.probs).log1p(), self.probs.log()
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        """log((exp(x) - 1) / x) at the natural parameter x, its Taylor form inside lims - 1/2."""
        outside = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = kael.where(outside, x, self._lims[0] - 0.5)
        log_norm = kael.special.expm1(cut).abs().log() - cut.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return kael.where(outside, log_norm, taylor)
