"""Wishart(df, covariance_matrix | precision_matrix | scale_tril): the distribution of
sum_k x_k x_k^T over df draws x_k ~ N(0, covariance) (df real, > p - 1, p the matrix order).
Samples come from the Bartlett decomposition: L A A^T L^T with A lower triangular, sqrt of
chi-squared draws (kael._standard_gamma) on its diagonal and kael.randn below it.

Deviation: torch's rsample tests its samples with `support.check` and takes the passing
(positive-definite) ones as singular, so it warns "Singular sample detected." and redraws on
nearly every call; kael warns and redraws (up to max_try_correction times) only the samples
that are not positive definite."""

from __future__ import annotations

import math
import numbers

import kael
from kael.distributions import constraints
from kael.distributions.exp_family import ExponentialFamily
from kael.distributions.multivariate_normal import (
    MATRICES,
    ScaleTrilMatrices,
    half_log_det,
    one_scale_matrix,
)
from kael.distributions.utils import lazy_property
from kael.frontend.tensor import Tensor
from kael.runtime import user_warning
from kael.runtime.errors import ValueError

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x: Tensor, p: int) -> Tensor:
    """The multivariate digamma: sum over i < p of digamma(x - i / 2)."""
    halves = kael.arange(p, dtype=x.dtype, device=x.device) / 2
    return (x.unsqueeze(-1) - halves).digamma().sum(-1)


class Wishart(ScaleTrilMatrices, ExponentialFamily):
    """The Wishart distribution over p x p positive-definite matrices, with `df` degrees of
    freedom and scale matrix given by exactly one of its three forms."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0
    _batched = ("df", *MATRICES)

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        return {
            "covariance_matrix": constraints.positive_definite,
            "precision_matrix": constraints.positive_definite,
            "scale_tril": constraints.lower_cholesky,
            "df": constraints.greater_than(self.event_shape[-1] - 1),
        }

    def __init__(
        self,
        df: Tensor | float,
        covariance_matrix: Tensor | None = None,
        precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        name, matrix = one_scale_matrix(covariance_matrix, precision_matrix, scale_tril)
        if matrix.dim() < 2:
            raise ValueError(
                "scale_tril must be at least two-dimensional, with optional leading batch "
                "dimensions"
            )
        if isinstance(df, numbers.Number):
            batch_shape = tuple(matrix.shape[:-2])
            self.df = kael.tensor(df, dtype=matrix.dtype, device=matrix.device)
        else:
            batch_shape = tuple(kael.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(batch_shape)
        p = matrix.shape[-1]
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        setattr(self, name, matrix.expand(batch_shape + (-1, -1)))
        if bool((self.df < p).any()):
            user_warning.warn(
                "Low df values detected. Singular samples are highly likely to occur for "
                "ndim - 1 < df < ndim."
            )
        super().__init__(batch_shape, tuple(matrix.shape[-2:]), validate_args=validate_args)
        self._factor(name, matrix)

    def _matrix_shape(self) -> tuple[int, ...]:
        return tuple(self._batch_shape + self._event_shape)

    def _df_matrix(self) -> Tensor:
        """df with two trailing unit dims, to scale a batch of matrices."""
        return self.df.reshape(tuple(self._batch_shape) + (1, 1))

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """The inverse of the scale matrix."""
        low = self._unbroadcasted_scale_tril
        eye = kael.eye(self._event_shape[-1], dtype=low.dtype, device=low.device)
        return kael.cholesky_solve(eye, low).expand(self._matrix_shape())

    @property
    def mean(self) -> Tensor:
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        """(df - p - 1) times the scale matrix; nan where df <= p + 1."""
        factor = self.df - self._event_shape[-1] - 1
        factor = kael.where(factor <= 0, math.nan, factor)
        return factor.reshape(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        v = self.covariance_matrix
        diag = v.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (v.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def _bartlett_sample(self, sample_shape: tuple[int, ...]) -> Tensor:
        """L A A^T L^T: A's diagonal sqrt(chi2(df - i)), its lower part standard normal."""
        low = self._unbroadcasted_scale_tril
        p = self._event_shape[-1]
        shape = tuple(sample_shape) + tuple(self._batch_shape)
        chi2_df = self.df.unsqueeze(-1) - kael.arange(p, dtype=low.dtype, device=low.device)
        chi2 = 2 * kael._standard_gamma((chi2_df / 2).expand(shape + (p,)))
        diagonal = chi2.sqrt().clamp(min=kael.finfo(low.dtype).eps)
        below = kael.randn(shape + (p, p), dtype=low.dtype, device=low.device).tril(-1)
        chol = low @ (below + kael.diag_embed(diagonal))
        return chol @ chol.mT

    def rsample(
        self, sample_shape: tuple[int, ...] = (), max_try_correction: int | None = None
    ) -> Tensor:
        """Bartlett samples; those not positive definite are drawn again, up to
        max_try_correction (10) times, and may stay singular (log_prob -inf there)."""
        tries = 10 if max_try_correction is None else max_try_correction
        sample = self._bartlett_sample(sample_shape)
        singular = ~self.support.check(sample)
        if bool(singular.any()):
            user_warning.warn("Singular sample detected.")
        for _ in range(tries):
            if not bool(singular.any()):
                break
            sample = kael.where(
                singular[..., None, None], self._bartlett_sample(sample_shape), sample
            )
            singular = ~self.support.check(sample)
        return sample

    def _log_scale_term(self) -> Tensor:
        """p log(2) / 2 + log det(L)."""
        return self._event_shape[-1] * _LOG_2 / 2 + half_log_det(self._unbroadcasted_scale_tril)

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        nu, p = self.df, self._event_shape[-1]
        trace = kael.cholesky_solve(value, self._unbroadcasted_scale_tril)
        return (
            -nu * self._log_scale_term()
            - kael.mvlgamma(nu / 2, p=p)
            + (nu - p - 1) / 2 * kael.linalg.slogdet(value).logabsdet
            - trace.diagonal(dim1=-2, dim2=-1).sum(-1) / 2
        )

    def entropy(self) -> Tensor:
        nu, p = self.df, self._event_shape[-1]
        return (
            (p + 1) * self._log_scale_term()
            + kael.mvlgamma(nu / 2, p=p)
            - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p)
            + nu * p / 2
        )

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return -self.precision_matrix / 2, (self.df - self._event_shape[-1] - 1) / 2

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        p = self._event_shape[-1]
        shifted = y + (p + 1) / 2
        log_det = kael.linalg.slogdet(-2 * x).logabsdet
        return shifted * (-log_det + _LOG_2 * p) + kael.mvlgamma(shifted, p=p)
