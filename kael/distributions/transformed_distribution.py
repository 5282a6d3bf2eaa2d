"""TransformedDistribution: a base distribution pushed through a chain of Transforms, as
torch.distributions.TransformedDistribution: Y = f(X) with log p(Y) = log p(X) - log |dY/dX|."""

from __future__ import annotations

from kael.distributions import constraints
from kael.distributions.distribution import Distribution
from kael.distributions.independent import Independent
from kael.distributions.transforms import ComposeTransform, Transform
from kael.distributions.utils import sum_rightmost
from kael.frontend.tensor import Tensor
from kael.runtime.errors import ValueError

__all__ = ["TransformedDistribution"]


def _transform_list(transforms) -> list[Transform]:
    if isinstance(transforms, Transform):
        return [transforms]
    if not isinstance(transforms, list):
        raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
    if not all(isinstance(t, Transform) for t in transforms):
        raise ValueError("transforms must be a Transform or a list of Transforms")
    return transforms


class TransformedDistribution(Distribution):
    """`base_distribution` with `transforms` applied to each sample in order; its event shape
    is the widest of the base's and the transforms' (transforms may couple dims)."""

    arg_constraints: dict[str, constraints.Constraint] = {}

    def __init__(
        self,
        base_distribution: Distribution,
        transforms: Transform | list[Transform],
        validate_args: bool | None = None,
    ) -> None:
        self.transforms = _transform_list(transforms)
        base_shape = base_distribution.batch_shape + base_distribution.event_shape
        base_event_dim = len(base_distribution.event_shape)
        transform = ComposeTransform(self.transforms)
        domain_event_dim = transform.domain.event_dim
        if len(base_shape) < domain_event_dim:
            raise ValueError(
                f"base_distribution needs to have shape with size at least {domain_event_dim}, "
                f"but got {base_shape}."
            )
        forward_shape = transform.forward_shape(base_shape)
        expanded_base_shape = transform.inverse_shape(forward_shape)
        if tuple(base_shape) != tuple(expanded_base_shape):
            cut = len(expanded_base_shape) - base_event_dim
            base_distribution = base_distribution.expand(expanded_base_shape[:cut])
        if domain_event_dim > base_event_dim:
            base_distribution = Independent(base_distribution, domain_event_dim - base_event_dim)
        self.base_dist = base_distribution
        event_dim = max(
            transform.codomain.event_dim,  # the transform couples dims
            base_event_dim + transform.codomain.event_dim - domain_event_dim,  # the base does
        )
        cut = len(forward_shape) - event_dim
        super().__init__(
            tuple(forward_shape[:cut]), tuple(forward_shape[cut:]), validate_args=validate_args
        )

    def expand(self, batch_shape: tuple[int, ...], _instance=None) -> TransformedDistribution:
        """The base expanded to the batch shape the transforms map back from batch_shape
        (the parameters first, so a shape they cannot take gets torch's message)."""
        new = super().expand(batch_shape, _instance)
        shape = tuple(batch_shape) + tuple(self.event_shape)
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        base_batch_shape = tuple(shape[: len(shape) - len(self.base_dist.event_shape)])
        new.base_dist = self.base_dist.expand(base_batch_shape)
        return new

    @constraints.dependent_property(is_discrete=False)
    def support(self) -> constraints.Constraint:
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self.event_shape) > support.event_dim:
            support = constraints.independent(support, len(self.event_shape) - support.event_dim)
        return support

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    def _forward(self, x: Tensor) -> Tensor:
        for transform in self.transforms:
            x = transform(x)
        return x

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """Base samples mapped through every transform."""
        return self._forward(self.base_dist.sample(sample_shape))

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """Base rsamples mapped through every transform (equal to sample: no autograd)."""
        return self._forward(self.base_dist.rsample(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        """The base's log_prob at the inverted value minus each transform's log |det J|, each
        summed over the event dims it does not cover."""
        value = self._checked(value)
        event_dim = len(self.event_shape)
        log_prob = 0.0
        y = value
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            event_dim += transform.domain.event_dim - transform.codomain.event_dim
            jacobian = transform.log_abs_det_jacobian(x, y)
            log_prob = log_prob - sum_rightmost(jacobian, event_dim - transform.domain.event_dim)
            y = x
        base = self.base_dist.log_prob(y)
        return log_prob + sum_rightmost(base, event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value: Tensor) -> Tensor:
        """`value`, or 1 - value where the chain of transforms is decreasing."""
        sign = 1
        for transform in self.transforms:
            sign = sign * transform.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value: Tensor) -> Tensor:
        """The base's cdf at the inverted value (for monotone transforms)."""
        for transform in reversed(self.transforms):
            value = transform.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value: Tensor) -> Tensor:
        """The base's icdf mapped through every transform (for monotone transforms)."""
        return self._forward(self.base_dist.icdf(self._monotonize_cdf(value)))
