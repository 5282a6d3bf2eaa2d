"""OneHotCategoricalStraightThrough: a OneHotCategorical that torch marks reparameterizable
through the straight-through gradient estimator (Bengio et al., 2013).

kael has no autograd: rsample is sample (torch's adds probs - probs.detach(), which is zero in
value and only carries the gradient)."""

from __future__ import annotations

from kael.distributions.categorical import OneHotCategorical
from kael.frontend.tensor import Tensor

__all__ = ["OneHotCategoricalStraightThrough"]


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical with has_rsample True, as torch's straight-through variant."""

    has_rsample = True

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """One-hot draws, as sample (the straight-through term is zero in value)."""
        return self.sample(sample_shape)
