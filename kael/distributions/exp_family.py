"""ExponentialFamily: the base of families whose density is exp(<t(x), theta> - F(theta) + k(x)),
named by their natural parameters theta, log normalizer F and mean carrier measure E[k(x)].
As torch's, Bernoulli, Beta, Chi2 (a Gamma), ContinuousBernoulli, Dirichlet, Exponential,
Gamma, Normal, Poisson and Wishart derive from it.

Deviation: torch's entropy is generic, F(theta) - <theta, grad F(theta)> - E[k(x)] with the
gradient taken by autograd. kael has no autograd, so the generic entropy raises
kael.NotImplementedError; each subclass writes its entropy in closed form (Poisson, whose
mean carrier measure torch leaves undefined, has none in either). For the same reason kael
registers no generic KL(ExponentialFamily || ExponentialFamily) (see kl.py)."""

from __future__ import annotations

from kael.distributions.distribution import Distribution
from kael.frontend.tensor import Tensor
from kael.runtime.errors import NotImplementedError

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """A distribution of an exponential family: its natural parameters, log normalizer and
    mean carrier measure (for entropies and KL divergences by Bregman divergence)."""

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        """The natural parameters theta, one tensor each."""
        raise NotImplementedError(f"{type(self).__name__} does not define _natural_params")

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        """F(theta): the log normalizer at the natural parameters given."""
        raise NotImplementedError(f"{type(self).__name__} does not define _log_normalizer")

    @property
    def _mean_carrier_measure(self) -> float:
        """E[k(x)]: the expected carrier measure."""
        raise NotImplementedError(f"{type(self).__name__} does not define _mean_carrier_measure")

    def entropy(self) -> Tensor:
        """Refused: torch computes it from the gradient of the log normalizer by autograd."""
        raise NotImplementedError(
            f"{type(self).__name__}.entropy: ExponentialFamily's generic entropy needs the "
            "gradient of the log normalizer by autograd, which kael does not have; the family "
            "must override entropy() with its closed form"
        )
