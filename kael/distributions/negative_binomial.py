"""NegativeBinomial(total_count, probs or logits): the number of successes of Bernoulli(probs)
trials before total_count failures (total_count may be any non-negative real). Samples are
Poisson draws whose rate is a Gamma(total_count, exp(-logits)) draw (the gamma-Poisson
mixture), from kael._standard_gamma and kael.poisson."""

from __future__ import annotations

import kael
from kael.distributions import constraints
from kael.distributions.gamma import Gamma
from kael.distributions.probs_logits import ProbsOrLogits
from kael.frontend.tensor import Tensor

__all__ = ["NegativeBinomial"]

_logsigmoid = kael.nn.functional.logsigmoid


class NegativeBinomial(ProbsOrLogits):
    """P(k) = Gamma(k + r) / (k! Gamma(r)) p**k (1 - p)**r, r = total_count, p = probs."""

    arg_constraints = {
        "total_count": constraints.greater_than_eq(0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer
    _batched = ("total_count", "probs", "logits")

    def __init__(
        self, total_count, probs=None, logits=None, validate_args: bool | None = None
    ) -> None:
        self._init_elementwise(probs, logits, validate_args, total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.logits.exp()

    @property
    def mode(self) -> Tensor:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / kael.sigmoid(-self.logits)

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """Poisson draws at Gamma(total_count, exp(-logits)) rates, in the parameters' dtype."""
        gamma = Gamma(self.total_count, (-self.logits).exp(), validate_args=False)
        return kael.poisson(gamma.sample(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)  # before logits, which may be computed now
        r, logits = self.total_count, self.logits
        log_unnormalized = r * _logsigmoid(-logits) + value * _logsigmoid(logits)
        log_normalization = -(r + value).lgamma() + (1.0 + value).lgamma() + r.lgamma()
        # r + k == 0 has probability 1: the normalization is lgamma's inf - inf there
        log_normalization = log_normalization.masked_fill(r + value == 0.0, 0.0)
        return log_unnormalized - log_normalization
