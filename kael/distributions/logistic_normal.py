"""LogisticNormal(loc, scale): a Normal pushed onto the simplex by StickBreakingTransform,
as torch's (so its parameter errors name the Normal, as torch's do)."""

from __future__ import annotations

from kael.distributions import constraints
from kael.distributions.normal import Normal
from kael.distributions.transformed_distribution import TransformedDistribution
from kael.distributions.transforms import StickBreakingTransform
from kael.frontend.tensor import Tensor

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    """K + 1 probabilities whose stick-breaking logits log(x / (1 - x.cumsum(-1)))[..., :-1]
    are Normal(loc, scale) over the last dim (of size K)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args: bool | None = None) -> None:
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand((1,))
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    @property
    def loc(self) -> Tensor:
        """The base Normal's mean."""
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> Tensor:
        """The base Normal's standard deviation."""
        return self.base_dist.base_dist.scale
