"""Relaxed (concrete / Gumbel-softmax) families, continuous stand-ins for discrete ones:
LogitRelaxedBernoulli and RelaxedBernoulli (its sigmoid) relax a Bernoulli;
ExpRelaxedCategorical and RelaxedOneHotCategorical (its exp) relax a OneHotCategorical.
`temperature` is a tensor, as torch's (it is neither broadcast nor validated)."""

from __future__ import annotations

import kael
from kael.distributions import constraints
from kael.distributions.categorical import _OverCategorical
from kael.distributions.probs_logits import ProbsOrLogits, one_of
from kael.distributions.transformed_distribution import TransformedDistribution
from kael.distributions.transforms import ExpTransform, SigmoidTransform
from kael.distributions.utils import broadcast_all, clamp_probs
from kael.frontend.tensor import Tensor

__all__ = [
    "ExpRelaxedCategorical", "LogitRelaxedBernoulli", "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
]  # fmt: skip


def _open_uniform(shape: kael.Size, like: Tensor) -> Tensor:
    """Uniform draws of `shape` in `like`'s dtype, kept inside (0, 1)."""
    return clamp_probs(kael.rand(shape, dtype=like.dtype, device=like.device))


class LogitRelaxedBernoulli(ProbsOrLogits):
    """The logit of a RelaxedBernoulli: (logistic noise + logits) / temperature."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(
        self, temperature: Tensor, probs=None, logits=None, validate_args: bool | None = None
    ) -> None:
        self.temperature = temperature
        self._param_name, param = one_of(probs, logits)
        (self.__dict__[self._param_name],) = broadcast_all(param)
        super().__init__(tuple(self._param.shape), validate_args=validate_args)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        u = _open_uniform(shape, probs)
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """A relaxed Bernoulli on (0, 1): the sigmoid of a LogitRelaxedBernoulli."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(
        self, temperature: Tensor, probs=None, logits=None, validate_args: bool | None = None
    ) -> None:
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    @property
    def temperature(self) -> Tensor:
        """The relaxation temperature (towards 0, samples approach 0 or 1)."""
        return self.base_dist.temperature

    @property
    def logits(self) -> Tensor:
        """The log-odds of the relaxed Bernoulli."""
        return self.base_dist.logits

    @property
    def probs(self) -> Tensor:
        """The probability of the relaxed Bernoulli."""
        return self.base_dist.probs


class ExpRelaxedCategorical(_OverCategorical):
    """The log of a point of the simplex: log_softmax((logits + Gumbel noise) / temperature)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector  # the true support is a submanifold of it
    has_rsample = True

    def __init__(
        self, temperature: Tensor, probs=None, logits=None, validate_args: bool | None = None
    ) -> None:
        self.temperature = temperature
        self._init_categorical(probs, logits, validate_args)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        gumbels = -(-_open_uniform(shape, self.logits).log()).log()
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        k = self._categorical._num_events
        value = self._checked(value)
        logits, value = broadcast_all(self.logits, value)
        t = self.temperature
        log_scale = kael.full_like(t, float(k)).lgamma() + (k - 1) * t.log()
        score = logits - value * t
        return (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1) + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """A relaxed OneHotCategorical on the simplex: the exp of an ExpRelaxedCategorical."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(
        self, temperature: Tensor, probs=None, logits=None, validate_args: bool | None = None
    ) -> None:
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    @property
    def temperature(self) -> Tensor:
        """The relaxation temperature (towards 0, samples approach one-hot vectors)."""
        return self.base_dist.temperature

    @property
    def logits(self) -> Tensor:
        """Normalized log-probabilities of the categories."""
        return self.base_dist.logits

    @property
    def probs(self) -> Tensor:
        """Probabilities of the categories."""
        return self.base_dist.probs
