"""Families over K categories given by probs or logits on the last dim: Categorical (an
index), OneHotCategorical (its one-hot vector) and Multinomial (counts over total_count
draws)."""

from __future__ import annotations

import math

import kael
from kael.distributions import constraints
from kael.distributions.bernoulli import Binomial
from kael.distributions.distribution import Distribution
from kael.distributions.probs_logits import ProbsOrLogits, one_of
from kael.distributions.utils import broadcast_all, enumerated, filled
from kael.frontend.tensor import Tensor
from kael.runtime.errors import NotImplementedError, ValueError

__all__ = ["Categorical", "Multinomial", "OneHotCategorical"]

_one_hot = kael.nn.functional.one_hot


class Categorical(ProbsOrLogits):
    """An index in [0, K) drawn with probabilities `probs` (normalized over the last dim) or
    softmax(`logits`)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True
    _binary = False

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        self._param_name, param = one_of(probs, logits)
        if param.dim() < 1:
            raise ValueError(f"`{self._param_name}` parameter must be at least one-dimensional.")
        if probs is not None:
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._num_events = param.shape[-1]
        super().__init__(tuple(param.shape[:-1]), validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self) -> Tensor:
        return filled(self._extended_shape(), math.nan, self.probs)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(dim=-1)

    @property
    def variance(self) -> Tensor:
        return filled(self._extended_shape(), math.nan, self.probs)

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """int64 indices of shape sample_shape + batch_shape."""
        count = math.prod(sample_shape)
        probs_2d = self.probs.reshape(-1, self._num_events)
        samples_2d = kael.multinomial(probs_2d, count, True).T
        return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value).long().unsqueeze(-1)
        value, log_pmf = kael.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self) -> Tensor:
        logits = self.logits.clamp(min=kael.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = kael.arange(self._num_events, dtype=kael.int64, device=self._param.device)
        return enumerated(values, self._batch_shape, expand)


class _OverCategorical(Distribution):
    """A family defined through a Categorical over its last dim (kept as `_categorical`)."""

    _nested = ("_categorical",)

    def _init_categorical(self, probs, logits, validate_args: bool | None) -> None:
        self._categorical = Categorical(probs, logits)
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(self._categorical.batch_shape, event_shape, validate_args=validate_args)

    @property
    def _param(self) -> Tensor:
        return self._categorical._param

    @property
    def probs(self) -> Tensor:
        """Event probabilities."""
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        """Normalized log-probabilities."""
        return self._categorical.logits

    @property
    def param_shape(self) -> kael.Size:
        """The shape of the parameter given (probs or logits)."""
        return self._categorical.param_shape


class OneHotCategorical(_OverCategorical):
    """A Categorical's draw as a one-hot vector of length K (in the parameters' dtype)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        self._init_categorical(probs, logits, validate_args)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        return _one_hot(self.probs.argmax(dim=-1), self.probs.shape[-1]).to(self.probs.dtype)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        indices = self._categorical.sample(sample_shape)
        return _one_hot(indices, self._categorical._num_events).to(self.probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        return self._categorical.log_prob(self._checked(value).argmax(-1))

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = self.event_shape[0]
        values = kael.eye(n, dtype=self._param.dtype, device=self._param.device)
        return enumerated(values, self._batch_shape, expand)


class Multinomial(_OverCategorical):
    """Counts per category over `total_count` independent Categorical(probs) draws."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(
        self, total_count: int = 1, probs=None, logits=None, validate_args: bool | None = None
    ) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._init_categorical(probs, logits, validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> constraints.Constraint:
        return constraints.multinomial(self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """Counts of shape sample_shape + batch_shape + (K,), in the parameters' dtype."""
        draws = self._categorical.sample((self.total_count, *sample_shape))
        counts = _one_hot(draws, self._categorical._num_events).sum(0)
        return counts.reshape(self._extended_shape(sample_shape)).to(self.probs.dtype)

    def entropy(self) -> Tensor:
        n = kael.tensor(float(self.total_count), dtype=self.probs.dtype, device=self.probs.device)
        term1 = n * self._categorical.entropy() - (n + 1).lgamma()
        binomial = Binomial(total_count=self.total_count, probs=self.probs)
        support = binomial.enumerate_support(expand=False)[1:]
        weights = (support + 1).lgamma()
        return term1 + (binomial.log_prob(support).exp() * weights).sum([0, -1])

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)  # before logits, which may be computed now
        logits, value = broadcast_all(self.logits, value)
        logits = kael.where((value == 0) & (logits == -math.inf), 0.0, logits)
        log_factorial_n = (value.sum(-1) + 1).lgamma()
        log_factorial_xs = (value + 1).lgamma().sum(-1)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)
