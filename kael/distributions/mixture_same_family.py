"""MixtureSameFamily: a mixture of K components of one family, the component picked by a
Categorical (a Gaussian mixture from a Categorical and a batch of K Normals)."""

from __future__ import annotations

import kael
from kael.distributions import constraints
from kael.distributions.categorical import Categorical
from kael.distributions.distribution import Distribution
from kael.frontend.tensor import Tensor
from kael.runtime.errors import ValueError

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """Draw a component index from `mixture_distribution`, then a value from that component
    of `component_distribution` (whose rightmost batch dim indexes the K components)."""

    arg_constraints: dict[str, constraints.Constraint] = {}
    has_rsample = False

    def __init__(
        self,
        mixture_distribution: Categorical,
        component_distribution: Distribution,
        validate_args: bool | None = None,
    ) -> None:
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(
                " The Mixture distribution needs to be an  instance of "
                "kael.distributions.Categorical"
            )
        if not isinstance(component_distribution, Distribution):
            raise ValueError(
                "The Component distribution needs to be an instance of "
                "kael.distributions.Distribution"
            )
        mdbs = mixture_distribution.batch_shape
        cdbs = kael.Size(component_distribution.batch_shape[:-1])
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(
                    f"`mixture_distribution.batch_shape` ({mdbs}) is not compatible with "
                    f"`component_distribution.batch_shape`({cdbs})"
                )
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError(
                f"`mixture_distribution component` ({km}) does not equal "
                f"`component_distribution.batch_shape[-1]` ({kc})"
            )
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        self._num_component = km
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(cdbs, component_distribution.event_shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple[int, ...], _instance=None) -> MixtureSameFamily:
        new = super().expand(batch_shape, _instance)
        batch_shape = tuple(batch_shape)
        components = self._component_distribution.expand(batch_shape + (self._num_component,))
        new._component_distribution = components
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        return new

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self) -> Categorical:
        """The Categorical over components."""
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        """The K components (the rightmost batch dim)."""
        return self._component_distribution

    @property
    def mean(self) -> Tensor:
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return (probs * self.component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self) -> Tensor:
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        components = self.component_distribution
        mean_cond_var = (probs * components.variance).sum(-1 - self._event_ndims)
        spread = (components.mean - self._pad(self.mean)).pow(2.0)
        return mean_cond_var + (probs * spread).sum(-1 - self._event_ndims)

    def cdf(self, x: Tensor) -> Tensor:
        cdf_x = self.component_distribution.cdf(self._pad(x))
        return (cdf_x * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x: Tensor) -> Tensor:
        log_prob_x = self.component_distribution.log_prob(self._pad(self._checked(x)))
        log_mix_prob = kael.log_softmax(self.mixture_distribution.logits, dim=-1)
        return kael.logsumexp(log_prob_x + log_mix_prob, dim=-1)

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """Every component drawn, then each draw's chosen component gathered."""
        gather_dim = len(sample_shape) + len(self.batch_shape)
        event = tuple(self.event_shape)
        mix_sample = self.mixture_distribution.sample(sample_shape)
        comp_samples = self.component_distribution.sample(sample_shape)
        index = mix_sample.reshape(tuple(mix_sample.shape) + (1,) * (len(event) + 1))
        index = index.expand(tuple(mix_sample.shape) + (1,) + event)
        return comp_samples.gather(gather_dim, index).squeeze(gather_dim)

    def _pad(self, x: Tensor) -> Tensor:
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x: Tensor) -> Tensor:
        dist_batch_ndims = len(self.batch_shape)
        cat_batch_ndims = len(self.mixture_distribution.batch_shape)
        pad_ndims = 0 if cat_batch_ndims == 1 else dist_batch_ndims - cat_batch_ndims
        xs = tuple(x.shape)
        return x.reshape(xs[:-1] + (1,) * pad_ndims + xs[-1:] + (1,) * self._event_ndims)

    def __repr__(self) -> str:
        return (
            f"MixtureSameFamily(\n  {self.mixture_distribution},\n  {self.component_distribution})"
        )
