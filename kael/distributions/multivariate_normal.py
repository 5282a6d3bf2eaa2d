"""MultivariateNormal: a normal distribution over vectors, given by its mean and one of its
covariance matrix, precision matrix or lower Cholesky factor of the covariance."""

from __future__ import annotations

import math

import kael
from kael.distributions import constraints
from kael.distributions.distribution import Distribution
from kael.distributions.utils import lazy_property, standard_normal
from kael.frontend.tensor import Tensor
from kael.runtime.errors import ValueError

__all__ = ["MultivariateNormal"]

_MATRICES = ("covariance_matrix", "precision_matrix", "scale_tril")


def _precision_to_scale_tril(precision: Tensor) -> Tensor:
    """The lower Cholesky factor of inv(precision), without forming the inverse."""
    flipped = kael.linalg.cholesky(precision.flip(-2, -1))
    l_inv = flipped.flip(-2, -1).mT
    eye = kael.eye(precision.shape[-1], dtype=precision.dtype, device=precision.device)
    return kael.linalg.solve_triangular(l_inv, eye, upper=False)


def mahalanobis(scale_tril: Tensor, diff: Tensor) -> Tensor:
    """|L^-1 diff|^2 per batch element, for lower-triangular L (batch dims broadcast), in L's
    dtype (torch's solve takes a wider `diff` in L's dtype)."""
    n = diff.shape[-1]
    diff = diff.to(scale_tril.dtype)
    batch = kael.broadcast_shapes(tuple(scale_tril.shape[:-2]), tuple(diff.shape[:-1]))
    scale_tril = scale_tril.expand(tuple(batch) + (n, n))
    diff = diff.expand(tuple(batch) + (n,)).unsqueeze(-1)
    solved = kael.linalg.solve_triangular(scale_tril, diff, upper=False)
    return solved.squeeze(-1).pow(2).sum(-1)


def half_log_det(scale_tril: Tensor) -> Tensor:
    """log det(L) = log det(L L^T) / 2, for a Cholesky factor L."""
    return scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)


class MultivariateNormal(Distribution):
    """N(loc, covariance): exactly one of covariance_matrix, precision_matrix or scale_tril
    gives the covariance; it is factored once, by Cholesky, for sampling and scoring."""

    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True
    _batched = ("loc", *_MATRICES)

    def __init__(
        self,
        loc: Tensor,
        covariance_matrix: Tensor | None = None,
        precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = {
            name: m
            for name, m in zip(_MATRICES, (covariance_matrix, precision_matrix, scale_tril))
            if m is not None
        }
        if len(given) != 1:
            raise ValueError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril may be "
                "specified."
            )
        ((name, matrix),) = given.items()
        if matrix.dim() < 2:
            raise ValueError(
                f"{name} must be at least two-dimensional, with optional leading batch dimensions"
                if name != "scale_tril"
                else "scale_tril matrix must be at least two-dimensional, with optional "
                "leading batch dimensions"
            )
        batch_shape = tuple(kael.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1])))
        setattr(self, name, matrix.expand(batch_shape + (-1, -1)))
        self.loc = loc.expand(batch_shape + (-1,))
        super().__init__(batch_shape, tuple(self.loc.shape[-1:]), validate_args=validate_args)
        factor = {
            "scale_tril": lambda m: m,
            "covariance_matrix": kael.linalg.cholesky,
            "precision_matrix": _precision_to_scale_tril,
        }[name]
        self._unbroadcasted_scale_tril = factor(matrix)

    def _matrix_shape(self) -> tuple[int, ...]:
        return tuple(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def scale_tril(self) -> Tensor:
        """The lower Cholesky factor L of the covariance (L L^T = covariance_matrix)."""
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        """The covariance matrix."""
        low = self._unbroadcasted_scale_tril
        return kael.matmul(low, low.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """The inverse of the covariance matrix."""
        return kael.cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        variance = self._unbroadcasted_scale_tril.pow(2).sum(-1)
        return variance.expand(tuple(self._batch_shape + self._event_shape))

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """loc + L eps, eps standard normal."""
        shape = self._extended_shape(sample_shape)
        eps = standard_normal(shape, self.loc)
        return self.loc + kael.matmul(self._unbroadcasted_scale_tril, eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        diff = self._checked(value) - self.loc
        m = mahalanobis(self._unbroadcasted_scale_tril, diff)
        log_norm = self._event_shape[0] * math.log(2 * math.pi)
        return -0.5 * (log_norm + m) - half_log_det(self._unbroadcasted_scale_tril)

    def entropy(self) -> Tensor:
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + half_log_det(self._unbroadcasted_scale_tril)
        return h.expand(tuple(self._batch_shape))
