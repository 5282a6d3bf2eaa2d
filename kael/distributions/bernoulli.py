"""Families of repeated binary trials given by probs or logits: Bernoulli (one trial),
Geometric (failures before the first success) and Binomial (successes in total_count)."""

from __future__ import annotations

import math

import kael
from kael.distributions import constraints
from kael.distributions.exp_family import ExponentialFamily
from kael.distributions.probs_logits import ProbsOrLogits
from kael.distributions.utils import broadcast_all, enumerated
from kael.frontend.tensor import Tensor
from kael.runtime.errors import NotImplementedError, ValueError

__all__ = ["Bernoulli", "Binomial", "Geometric"]

_bce_with_logits = kael.nn.functional.binary_cross_entropy_with_logits


def _binary_entropy(logits: Tensor, probs: Tensor) -> Tensor:
    return _bce_with_logits(logits, probs, reduction="none")


class Bernoulli(ProbsOrLogits, ExponentialFamily):
    """1 with probability `probs` (or sigmoid(`logits`)), else 0."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        self._init_elementwise(probs, logits, validate_args)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return kael.where(self.probs == 0.5, math.nan, mode)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """0/1 draws in the parameters' dtype."""
        return kael.bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)  # before logits, which may be computed now
        logits, value = broadcast_all(self.logits, value)
        return -_bce_with_logits(logits, value, reduction="none")

    def entropy(self) -> Tensor:
        return _binary_entropy(self.logits, self.probs)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = kael.arange(2, dtype=self._param.dtype, device=self._param.device)
        return enumerated(values, self._batch_shape, expand)

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (kael.logit(self.probs),)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return x.exp().log1p()


class Geometric(ProbsOrLogits):
    """The number of failures before the first success of Bernoulli(probs) trials."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        self._init_elementwise(probs, logits, validate_args)
        if self._validate_args and probs is not None and not bool((self.probs > 0).all()):
            value = self.probs
            raise ValueError(
                f"Expected parameter probs ({type(value).__name__} of shape "
                f"{tuple(value.shape)}) of distribution {self!r} to be positive but found "
                f"invalid values:\n{format(value[value <= 0])}"
            )

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return kael.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """floor(log U / log(1 - p)): inversion of the cdf at a uniform U in (0, 1)."""
        shape = self._extended_shape(sample_shape)
        tiny = kael.finfo(self.probs.dtype).tiny
        u = kael.empty(shape, dtype=self.probs.dtype, device=self.probs.device).uniform_(tiny, 1)
        return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        value, probs = broadcast_all(self._checked(value), self.probs)
        probs = kael.where((probs == 1) & (value == 0), 0.0, probs)  # 0 * log(0) is 0 here
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        return _binary_entropy(self.logits, self.probs) / self.probs


def _clamp_by_zero(x: Tensor) -> Tensor:
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(ProbsOrLogits):
    """The number of successes in `total_count` independent Bernoulli(probs) trials."""

    arg_constraints = {
        "total_count": constraints.nonnegative_integer,
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True
    _batched = ("total_count", "probs", "logits")

    def __init__(
        self, total_count=1, probs=None, logits=None, validate_args: bool | None = None
    ) -> None:
        self._init_elementwise(probs, logits, validate_args, total_count)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return kael.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        n, logits = self.total_count, self.logits
        log_factorial_n = (n + 1).lgamma()
        log_factorial_k = (value + 1).lgamma()
        log_factorial_nmk = (n - value + 1).lgamma()
        # n * log1p(exp(logits)), computed without overflow for large logits
        normalize = n * _clamp_by_zero(logits) + n * (-logits.abs()).exp().log1p() - log_factorial_n
        return value * logits - log_factorial_k - log_factorial_nmk - normalize

    def _homogeneous_count(self, what: str) -> int:
        total_count = int(self.total_count.max().item())
        if self.total_count.min().item() != total_count:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return total_count

    def entropy(self) -> Tensor:
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        total_count = self._homogeneous_count("enumerate_support")
        values = kael.arange(1 + total_count, dtype=self._param.dtype, device=self._param.device)
        return enumerated(values, self._batch_shape, expand)
