"""LKJCholesky(dim, concentration): the LKJ distribution over lower Cholesky factors L of
dim x dim correlation matrices, density of L L^T proportional to det(L L^T)**(eta - 1).
Samples come from the onion method (Lewandowski, Kurowicka and Joe, 2009, section 3): Beta
draws for each row's squared norm below the diagonal, kael.randn for its direction.

Deviation: torch's row i draws Beta(i - 1/2, ...) where the onion method's is Beta(i / 2, ...)
(the same for i = 1), so for dim > 2 torch's correlations past the first row are not LKJ
distributed (at dim 4, eta 1, variance 0.25 where LKJ's is 1/5); kael draws the paper's."""

from __future__ import annotations

import math

import kael
from kael.distributions import constraints
from kael.distributions.beta import Beta
from kael.distributions.distribution import Distribution
from kael.distributions.utils import broadcast_all
from kael.frontend.tensor import Tensor
from kael.runtime.errors import ValueError

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """The LKJ distribution of Cholesky factors of correlation matrices with concentration
    eta > 0 (uniform over correlation matrices at eta = 1)."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky
    _batched = ("concentration",)

    def __init__(
        self, dim: int, concentration: Tensor | float = 1.0, validate_args: bool | None = None
    ) -> None:
        if dim < 2:
            raise ValueError(
                f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}."
            )
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        event_shape = (dim, dim)
        super().__init__(tuple(self.concentration.shape), event_shape, validate_args=validate_args)

    def _beta(self) -> Beta:
        """The Beta laws of the rows' squared norms below the diagonal: row i (i >= 1) draws
        Beta(i / 2, eta + (dim - 2) / 2 - (i - 1) / 2); row 0 (its draw unused) repeats row 1's."""
        c = self.concentration
        offset = kael.arange(self.dim - 1, dtype=c.dtype, device=c.device)
        offset = kael.cat([kael.zeros(1, dtype=c.dtype, device=c.device), offset])
        marginal = c + 0.5 * (self.dim - 2)
        return Beta(0.5 * offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset, validate_args=False)

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """Each row i: sqrt(y_i) times a uniform direction in its first i coordinates, and the
        diagonal sqrt(1 - its squared norm)."""
        y = self._beta().sample(sample_shape).unsqueeze(-1)
        shape = tuple(self._extended_shape(sample_shape))
        normal = kael.randn(shape, dtype=y.dtype, device=y.device).tril(-1)
        first_row = (kael.arange(self.dim, device=y.device) == 0).unsqueeze(-1)
        norm = normal.norm(dim=-1, keepdim=True)
        direction = kael.where(first_row, 0.0, normal / kael.where(first_row, 1.0, norm))
        w = y.sqrt() * direction
        tiny = kael.finfo(w.dtype).tiny
        diagonal = (1 - w.pow(2).sum(-1)).clamp(min=tiny).sqrt()
        return w + kael.diag_embed(diagonal)

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        c, dim = self.concentration, self.dim
        diagonal = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = kael.arange(2, dim + 1, dtype=c.dtype, device=c.device)
        exponent = 2 * (c - 1).unsqueeze(-1) + dim - order
        unnormalized = (exponent * diagonal.log()).sum(-1)
        dm1 = dim - 1
        alpha = c + 0.5 * dm1
        normalizer = 0.5 * dm1 * math.log(math.pi) + kael.mvlgamma(alpha - 0.5, dm1)
        return unnormalized - (normalizer - alpha.lgamma() * dm1)
