"""ProbsOrLogits: the base of families given by event probabilities or by their logits
(exactly one of them), the other derived lazily, as torch's Bernoulli, Categorical, ... do."""

from __future__ import annotations

import kael
from kael.distributions.distribution import Distribution
from kael.distributions.utils import (
    broadcast_all,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)
from kael.frontend.tensor import Tensor
from kael.runtime.errors import ValueError

__all__ = ["ProbsOrLogits", "one_of"]


def one_of(probs, logits) -> tuple[str, object]:
    """("probs", probs) or ("logits", logits): whichever of the two was given (exactly one)."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    return ("probs", probs) if probs is not None else ("logits", logits)


class ProbsOrLogits(Distribution):
    """Holds `probs` or `logits` (named by `_param_name`); the other is computed on first use.
    `_binary` says whether they are of one binary event (sigmoid) or of categories (softmax)."""

    _binary = True
    _batched = ("probs", "logits")
    _param_name = "probs"

    def _init_elementwise(
        self, probs, logits, validate_args: bool | None, total_count=None
    ) -> None:
        """The constructor of an elementwise family: keep whichever of probs / logits was given
        (broadcast with `total_count`, if any, which takes its dtype); the batch shape is theirs."""
        self._param_name, param = one_of(probs, logits)
        if total_count is None:
            (param,) = broadcast_all(param)
        else:
            total_count, param = broadcast_all(total_count, param)
            self.total_count = total_count.to(param.dtype)
        self.__dict__[self._param_name] = param
        Distribution.__init__(self, tuple(param.shape), validate_args=validate_args)

    @property
    def _param(self) -> Tensor:
        return self.__dict__[self._param_name]

    @property
    def param_shape(self) -> kael.Size:
        """The shape of the parameter given (probs or logits)."""
        return kael.Size(self._param.shape)

    @lazy_property
    def logits(self) -> Tensor:
        """Log-odds (binary) or normalized log-probabilities (categorical)."""
        return probs_to_logits(self.probs, is_binary=self._binary)

    @lazy_property
    def probs(self) -> Tensor:
        """Event probabilities."""
        return logits_to_probs(self.logits, is_binary=self._binary)
