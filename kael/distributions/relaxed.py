"""Relaxed (concrete / Gumbel-softmax) families, continuous stand-ins for discrete ones:
LogitRelaxedBernoulli and RelaxedBernoulli (its sigmoid) relax a Bernoulli;
ExpRelaxedCategorical and RelaxedOneHotCategorical (its exp) relax a OneHotCategorical.
`temperature` is a tensor, as torch's (it is neither broadcast nor validated)."""

from __future__ import annotations

import kael
from kael.distributions import constraints
from kael.distributions.categorical import _OverCategorical
from kael.distributions.probs_logits import ProbsOrLogits
from kael.distributions.transformed_distribution import TransformedDistribution
from kael.distributions.transforms import ExpTransform, SigmoidTransform
from kael.distributions.utils import broadcast_all, clamp_probs, parameter_view
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
        self._init_elementwise(probs, logits, validate_args)

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


class _Relaxed(TransformedDistribution):
    """A relaxed family: a transform of its base relaxed family (`base_dist`), whose
    temperature, probs and logits it shows."""

    has_rsample = True

    temperature = parameter_view("base_dist.temperature", "The relaxation temperature.")
    logits = parameter_view("base_dist.logits", "The base family's logits.")
    probs = parameter_view("base_dist.probs", "The base family's probabilities.")


class RelaxedBernoulli(_Relaxed):
    """A relaxed Bernoulli on (0, 1): the sigmoid of a LogitRelaxedBernoulli."""

    arg_constraints = LogitRelaxedBernoulli.arg_constraints
    support = constraints.unit_interval

    def __init__(
        self, temperature: Tensor, probs=None, logits=None, validate_args: bool | None = None
    ) -> None:
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)


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


class RelaxedOneHotCategorical(_Relaxed):
    """A relaxed OneHotCategorical on the simplex: the exp of an ExpRelaxedCategorical."""

    arg_constraints = ExpRelaxedCategorical.arg_constraints
    support = constraints.simplex

    def __init__(
        self, temperature: Tensor, probs=None, logits=None, validate_args: bool | None = None
    ) -> None:
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)
