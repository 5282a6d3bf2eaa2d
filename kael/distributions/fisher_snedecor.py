"""FisherSnedecor(df1, df2): the F distribution, drawn as torch's from two gamma variates,
(chi2(df1) / df1) / (chi2(df2) / df2). torch's is not a TransformedDistribution; nor is this."""

from __future__ import annotations

import math

import kael
from kael.distributions import constraints
from kael.distributions.distribution import Distribution
from kael.distributions.gamma import Gamma
from kael.distributions.utils import broadcast_all
from kael.frontend.tensor import Tensor

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """The Fisher-Snedecor (F) distribution with `df1` and `df2` degrees of freedom."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True
    _batched = ("df1", "df2")
    _nested = ("_gamma1", "_gamma2")

    def __init__(self, df1, df2, validate_args: bool | None = None) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        super().__init__(tuple(self.df1.shape), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        """nan for df2 <= 2."""
        df2 = self.df2
        return kael.where(df2 > 2, df2 / (df2 - 2), math.nan)

    @property
    def mode(self) -> Tensor:
        """nan for df1 <= 2."""
        df1, df2 = self.df1, self.df2
        return kael.where(df1 > 2, (df1 - 2) / df1 * df2 / (df2 + 2), math.nan)

    @property
    def variance(self) -> Tensor:
        """nan for df2 <= 4."""
        df1, df2 = self.df1, self.df2
        result = 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))
        return kael.where(df2 > 4, result, math.nan)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """The ratio of the two gamma draws, both kept above the dtype's tiny."""
        shape = self._extended_shape(sample_shape)
        x1 = self._gamma1.rsample(sample_shape).reshape(shape)
        x2 = self._gamma2.rsample(sample_shape).reshape(shape)
        tiny = kael.finfo(x2.dtype).tiny
        return (x1 / x2.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        half1, half2 = self.df1 * 0.5, self.df2 * 0.5
        ratio = self.df1 / self.df2
        t1 = (half1 + half2).lgamma() - half1.lgamma() - half2.lgamma()
        t2 = half1 * ratio.log() + (half1 - 1) * value.log()
        t3 = (half1 + half2) * (ratio * value).log1p()
        return t1 + t2 - t3
