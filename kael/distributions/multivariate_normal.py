"""MultivariateNormal: a normal distribution over vectors, given by its mean and one of its
covariance matrix, precision matrix or lower Cholesky factor of the covariance."""

from __future__ import annotations

import math

import kael
from kael.distributions import constraints
from kael.distributions.distribution import Distribution
from kael.distributions.utils import lazy_property, parameter_view, standard_normal
from kael.frontend.tensor import Tensor
from kael.runtime.errors import NotImplementedError, ValueError

__all__ = ["MultivariateNormal"]

MATRICES = ("covariance_matrix", "precision_matrix", "scale_tril")


def _precision_to_scale_tril(precision: Tensor) -> Tensor:
    """The lower Cholesky factor of inv(precision), without forming the inverse."""
    flipped = kael.linalg.cholesky(precision.flip(-2, -1))
    l_inv = flipped.flip(-2, -1).mT
    eye = kael.eye(precision.shape[-1], dtype=precision.dtype, device=precision.device)
    return kael.linalg.solve_triangular(l_inv, eye, upper=False)


_TO_SCALE_TRIL = {
    "scale_tril": lambda m: m,
    "covariance_matrix": kael.linalg.cholesky,
    "precision_matrix": _precision_to_scale_tril,
}


def one_scale_matrix(
    covariance_matrix: Tensor | None, precision_matrix: Tensor | None, scale_tril: Tensor | None
) -> tuple[str, Tensor]:
    """(name, value) of the one matrix given; torch's ValueError unless exactly one is."""
    given = {
        name: m
        for name, m in zip(MATRICES, (covariance_matrix, precision_matrix, scale_tril))
        if m is not None
    }
    if len(given) != 1:
        raise ValueError(
            "Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified."
        )
    ((name, matrix),) = given.items()
    return name, matrix


class ScaleTrilMatrices:
    """A family's matrix given in one of the forms MATRICES names: it keeps the lower Cholesky
    factor L (`_unbroadcasted_scale_tril`) and derives scale_tril and covariance_matrix from it,
    expanded to the family's `_matrix_shape()`."""

    _unbroadcasted_scale_tril: Tensor

    def _matrix_shape(self) -> tuple[int, ...]:
        raise NotImplementedError

    def _factor(self, name: str, matrix: Tensor) -> None:
        """Keep the lower Cholesky factor of `matrix`, given as the argument `name`."""
        self._unbroadcasted_scale_tril = _TO_SCALE_TRIL[name](matrix)

    @lazy_property
    def scale_tril(self) -> Tensor:
        """The lower Cholesky factor L of the matrix (L L^T = covariance_matrix)."""
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        """The covariance (scale) matrix L L^T."""
        low = self._unbroadcasted_scale_tril
        return kael.matmul(low, low.mT).expand(self._matrix_shape())


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


class MultivariateNormal(ScaleTrilMatrices, Distribution):
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
    _batched = ("loc", *MATRICES)

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
        name, matrix = one_scale_matrix(covariance_matrix, precision_matrix, scale_tril)
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
        self._factor(name, matrix)

    def _matrix_shape(self) -> tuple[int, ...]:
        return tuple(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """The inverse of the covariance matrix."""
        return kael.cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    mean = mode = parameter_view("loc")

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
