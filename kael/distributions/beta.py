"""Dirichlet(concentration), over the probability simplex, and Beta(concentration1,
concentration0), its two-category case (the first coordinate). Samples come from
kael._sample_dirichlet (torch's private sampler: normalized standard gamma draws)."""

from __future__ import annotations

import kael
from kael.distributions import constraints
from kael.distributions.exp_family import ExponentialFamily
from kael.distributions.utils import broadcast_all
from kael.frontend.tensor import Tensor
from kael.runtime.errors import ValueError

__all__ = ["Beta", "Dirichlet"]

_one_hot = kael.nn.functional.one_hot


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution over K-vectors on the simplex, K = concentration.shape[-1]."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True
    _batched = ("concentration",)

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return kael._sample_dirichlet(self.concentration.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        c = self.concentration
        return kael.xlogy(c - 1.0, value).sum(-1) + c.sum(-1).lgamma() - c.lgamma().sum(-1)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        """The interior mode; where every concentration is below 1, the vertex of the largest."""
        excess = (self.concentration - 1).clamp(min=0.0)
        mode = excess / excess.sum(-1, keepdim=True)
        vertex = _one_hot(mode.argmax(-1), excess.shape[-1]).to(mode.dtype)
        below_one = (self.concentration < 1).all(-1, keepdim=True)
        return kael.where(below_one, vertex, mode)

    @property
    def variance(self) -> Tensor:
        c = self.concentration
        total = c.sum(-1, keepdim=True)
        return c * (total - c) / (total.pow(2) * (total + 1))

    def entropy(self) -> Tensor:
        c = self.concentration
        k = c.shape[-1]
        total = c.sum(-1)
        return (
            c.lgamma().sum(-1)
            - total.lgamma()
            - (k - total) * total.digamma()
            - ((c - 1.0) * c.digamma()).sum(-1)
        )

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.concentration,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return x.lgamma().sum(-1) - x.sum(-1).lgamma()


class Beta(ExponentialFamily):
    """The beta distribution on [0, 1]: density x**(a-1) (1-x)**(b-1) / B(a, b), with
    a = concentration1 and b = concentration0."""

    arg_constraints = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    has_rsample = True
    _nested = ("_dirichlet",)

    def __init__(self, concentration1, concentration0, validate_args: bool | None = None) -> None:
        c1, c0 = broadcast_all(concentration1, concentration0)
        self._dirichlet = Dirichlet(kael.stack([c1, c0], -1), validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    @property
    def concentration1(self) -> Tensor:
        """The first shape parameter (a)."""
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self) -> Tensor:
        """The second shape parameter (b)."""
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Tensor:
        c1, c0 = self.concentration1, self.concentration0
        total = c1 + c0
        return c1 * c0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return self._dirichlet.log_prob(kael.stack([value, 1.0 - value], -1))

    def entropy(self) -> Tensor:
        return self._dirichlet.entropy()

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return x.lgamma() + y.lgamma() - (x + y).lgamma()
