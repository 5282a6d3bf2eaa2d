"""kael.distributions: torch.distributions for kael's tensors (sampling and scoring).

kael has no autograd: rsample computes a sample by the reparameterized formula and equals
sample; has_rsample says what torch's does. Every sample comes from kael's random ops on its
default generator. Module docstrings name where a family deviates from torch's."""

from kael.distributions import constraints, transforms
from kael.distributions.bernoulli import Bernoulli, Binomial, Geometric
from kael.distributions.beta import Beta, Dirichlet
from kael.distributions.categorical import Categorical, Multinomial, OneHotCategorical
from kael.distributions.constraint_registry import biject_to, transform_to
from kael.distributions.continuous_bernoulli import ContinuousBernoulli
from kael.distributions.distribution import Distribution
from kael.distributions.exp_family import ExponentialFamily
from kael.distributions.exponential import Exponential
from kael.distributions.fisher_snedecor import FisherSnedecor
from kael.distributions.gamma import Chi2, Gamma
from kael.distributions.generalized_pareto import GeneralizedPareto
from kael.distributions.half_cauchy import HalfCauchy
from kael.distributions.independent import Independent
from kael.distributions.inverse_gamma import InverseGamma
from kael.distributions.kl import kl_divergence, register_kl
from kael.distributions.kumaraswamy import Kumaraswamy
from kael.distributions.lkj_cholesky import LKJCholesky
from kael.distributions.location_scale import Cauchy, Gumbel, Laplace
from kael.distributions.logistic_normal import LogisticNormal
from kael.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from kael.distributions.mixture_same_family import MixtureSameFamily
from kael.distributions.multivariate_normal import MultivariateNormal
from kael.distributions.negative_binomial import NegativeBinomial
from kael.distributions.normal import HalfNormal, LogNormal, Normal
from kael.distributions.one_hot_straight_through import OneHotCategoricalStraightThrough
from kael.distributions.pareto import Pareto
from kael.distributions.poisson import Poisson
from kael.distributions.relaxed import (
    ExpRelaxedCategorical,
    LogitRelaxedBernoulli,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
)
from kael.distributions.student_t import StudentT
from kael.distributions.transformed_distribution import TransformedDistribution
from kael.distributions.transforms import (
    AbsTransform,
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)
from kael.distributions.uniform import Uniform
from kael.distributions.von_mises import VonMises
from kael.distributions.weibull import Weibull
from kael.distributions.wishart import Wishart

__all__ = [
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform",
    "Categorical", "Cauchy", "Chi2", "ComposeTransform", "ContinuousBernoulli",
    "CorrCholeskyTransform", "CumulativeDistributionTransform", "Dirichlet", "Distribution",
    "ExpRelaxedCategorical", "ExpTransform", "Exponential", "ExponentialFamily",
    "FisherSnedecor", "Gamma", "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy",
    "HalfNormal", "Independent", "IndependentTransform", "InverseGamma", "Kumaraswamy",
    "LKJCholesky", "Laplace", "LogNormal", "LogisticNormal", "LogitRelaxedBernoulli",
    "LowRankMultivariateNormal", "LowerCholeskyTransform", "MixtureSameFamily", "Multinomial",
    "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical",
    "OneHotCategoricalStraightThrough", "Pareto", "Poisson", "PositiveDefiniteTransform",
    "PowerTransform", "RelaxedBernoulli", "RelaxedOneHotCategorical", "ReshapeTransform",
    "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform", "StackTransform",
    "StickBreakingTransform", "StudentT", "TanhTransform", "Transform",
    "TransformedDistribution", "Uniform", "VonMises", "Weibull", "Wishart", "biject_to",
    "constraints", "identity_transform", "kl_divergence", "register_kl", "transform_to",
    "transforms",
]  # fmt: skip
