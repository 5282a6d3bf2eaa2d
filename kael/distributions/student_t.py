"""StudentT(df, loc, scale): a normal whose variance is drawn from a scaled inverse chi-squared
(heavy tails for small df)."""

from __future__ import annotations

import math

import kael
from kael.distributions import constraints
from kael.distributions.distribution import Distribution
from kael.distributions.gamma import Chi2
from kael.distributions.utils import broadcast_all, standard_normal
from kael.frontend.tensor import Tensor

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t distribution with `df` degrees of freedom, shifted by loc, scaled by scale."""

    arg_constraints = {
        "df": constraints.positive,
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True
    _batched = ("df", "loc", "scale")
    _nested = ("_chi2",)

    def __init__(self, df, loc=0.0, scale=1.0, validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(tuple(self.df.shape), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        """loc where df > 1, else nan."""
        return kael.where(self.df > 1, self.loc, math.nan)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        """scale^2 df / (df - 2) where df > 2; inf for 1 < df <= 2; nan for df <= 1."""
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        heavy = kael.where(df > 1, math.inf, math.nan)
        return kael.where(df > 2, finite, heavy).to(df.dtype)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """loc + scale * X / sqrt(Z / df), X standard normal, Z ~ Chi2(df)."""
        shape = self._extended_shape(sample_shape)
        x = standard_normal(shape, self.df)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * (z / self.df).rsqrt()

    def log_prob(self, value: Tensor) -> Tensor:
        y = (self._checked(value) - self.loc) / self.scale
        df = self.df
        log_norm = (
            self.scale.log()
            + 0.5 * df.log()
            + 0.5 * math.log(math.pi)
            + (0.5 * df).lgamma()
            - (0.5 * (df + 1.0)).lgamma()
        )
        return -0.5 * (df + 1.0) * (y.pow(2.0) / df).log1p() - log_norm

    def entropy(self) -> Tensor:
        df = self.df
        lbeta = (0.5 * df).lgamma() + math.lgamma(0.5) - (0.5 * (df + 1)).lgamma()
        return (
            self.scale.log()
            + 0.5 * (df + 1) * ((0.5 * (df + 1)).digamma() - (0.5 * df).digamma())
            + 0.5 * df.log()
            + lbeta
        )
