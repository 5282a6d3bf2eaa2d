"""LowRankMultivariateNormal: a normal distribution over n-vectors whose covariance is
W W^T + diag(D), W = cov_factor (n x m) and D = cov_diag. Scores use the m x m capacitance
matrix C = I + W^T D^-1 W (Woodbury identity and matrix determinant lemma), so nothing
n x n is factored.

Deviation: the parameters are validated before C is factored, so a non-positive cov_diag
or a nan cov_factor raises torch's "Expected parameter ..." ValueError where torch's
Cholesky of C raises LinAlgError first."""

from __future__ import annotations

import math

import kael
from kael.distributions import constraints
from kael.distributions.distribution import Distribution
from kael.distributions.multivariate_normal import half_log_det, mahalanobis
from kael.distributions.utils import lazy_property, parameter_view, standard_normal
from kael.frontend.tensor import Tensor
from kael.runtime.errors import ValueError

__all__ = ["LowRankMultivariateNormal"]


def _plus_identity(matrix: Tensor) -> Tensor:
    """matrix + I, for a batch of square matrices."""
    eye = kael.eye(matrix.shape[-1], dtype=matrix.dtype, device=matrix.device)
    return matrix + eye


def _matvec(matrix: Tensor, vector: Tensor) -> Tensor:
    """matrix @ vector over broadcast batch dims."""
    return kael.matmul(matrix, vector.unsqueeze(-1)).squeeze(-1)


class LowRankMultivariateNormal(Distribution):
    """N(loc, cov_factor cov_factor^T + diag(cov_diag)); loc and cov_diag are
    batch_shape + (n,), cov_factor batch_shape + (n, m), their batch dims broadcast."""

    arg_constraints = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True
    _batched = (
        "loc", "cov_factor", "cov_diag", "covariance_matrix", "precision_matrix", "scale_tril",
    )  # fmt: skip

    def __init__(
        self,
        loc: Tensor,
        cov_factor: Tensor,
        cov_diag: Tensor,
        validate_args: bool | None = None,
    ) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError(
                "cov_factor must be at least two-dimensional, with optional leading batch "
                "dimensions"
            )
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(
                f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m"
            )
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(
                f"cov_diag must be a batch of vectors with shape {kael.Size(event_shape)}"
            )
        try:
            loc_, self.cov_factor, diag_ = kael.broadcast_tensors(
                loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1)
            )
        except ValueError as error:
            raise ValueError(
                f"Incompatible batch shapes: loc {kael.Size(loc.shape)}, cov_factor "
                f"{kael.Size(cov_factor.shape)}, cov_diag {kael.Size(cov_diag.shape)}"
            ) from error
        self.loc, self.cov_diag = loc_[..., 0], diag_[..., 0]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        super().__init__(tuple(self.loc.shape[:-1]), event_shape, validate_args=validate_args)
        self._capacitance_tril = kael.linalg.cholesky(_plus_identity(self._wt_dinv @ cov_factor))

    @property
    def _wt_dinv(self) -> Tensor:
        """W^T D^-1 (unbroadcast)."""
        return self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)

    def _matrix_shape(self) -> tuple[int, ...]:
        return tuple(self._batch_shape + self._event_shape + self._event_shape)

    mean = mode = parameter_view("loc")

    @property
    def variance(self) -> Tensor:
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (w.pow(2).sum(-1) + d).expand(tuple(self._batch_shape + self._event_shape))

    @lazy_property
    def scale_tril(self) -> Tensor:
        """The lower Cholesky factor of the covariance: sqrt(D) chol(I + D^-1/2 W W^T D^-1/2)."""
        sqrt_d = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        scaled = self._unbroadcasted_cov_factor / sqrt_d
        factor = sqrt_d * kael.linalg.cholesky(_plus_identity(scaled @ scaled.mT))
        return factor.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        """W W^T + diag(D)."""
        w = self._unbroadcasted_cov_factor
        covariance = w @ w.mT + kael.diag_embed(self._unbroadcasted_cov_diag)
        return covariance.expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """D^-1 - D^-1 W C^-1 W^T D^-1 (Woodbury), with C's Cholesky factor."""
        a = kael.linalg.solve_triangular(self._capacitance_tril, self._wt_dinv, upper=False)
        precision = kael.diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - a.mT @ a
        return precision.expand(self._matrix_shape())

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """loc + W eps_m + sqrt(D) eps_n, eps standard normal."""
        shape = self._extended_shape(sample_shape)
        eps_w = standard_normal(tuple(shape[:-1]) + tuple(self.cov_factor.shape[-1:]), self.loc)
        eps_d = standard_normal(tuple(shape), self.loc)
        low_rank = _matvec(self._unbroadcasted_cov_factor, eps_w)
        return self.loc + low_rank + self._unbroadcasted_cov_diag.sqrt() * eps_d

    def _log_det(self) -> Tensor:
        """log det(W W^T + D) = log det(C) + log det(D) (matrix determinant lemma)."""
        return 2 * half_log_det(self._capacitance_tril) + self._unbroadcasted_cov_diag.log().sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        diff = self._checked(value) - self.loc
        d = self._unbroadcasted_cov_diag
        # x^T (W W^T + D)^-1 x = x^T D^-1 x - |L_C^-1 W^T D^-1 x|^2 (Woodbury)
        m = (diff.pow(2) / d).sum(-1) - mahalanobis(
            self._capacitance_tril, _matvec(self._wt_dinv, diff)
        )
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + m)

    def entropy(self) -> Tensor:
        n = self._event_shape[0]
        h = 0.5 * (n * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return h.expand(tuple(self._batch_shape))
