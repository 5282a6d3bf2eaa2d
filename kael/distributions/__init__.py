"""kael.distributions: torch.distributions for kael's tensors (sampling and scoring).

kael has no autograd: rsample computes a sample by the reparameterized formula and equals
sample; has_rsample says what torch's does. Every sample comes from kael's random ops on its
default generator. Module docstrings name where a family deviates from torch's."""

from kael.distributions import constraints
from kael.distributions.bernoulli import Bernoulli, Binomial, Geometric
from kael.distributions.beta import Beta, Dirichlet
from kael.distributions.categorical import Categorical, Multinomial, OneHotCategorical
from kael.distributions.distribution import Distribution
from kael.distributions.exponential import Exponential
from kael.distributions.gamma import Chi2, Gamma
from kael.distributions.independent import Independent
from kael.distributions.kl import kl_divergence, register_kl
from kael.distributions.location_scale import Cauchy, Gumbel, Laplace
from kael.distributions.mixture_same_family import MixtureSameFamily
from kael.distributions.multivariate_normal import MultivariateNormal
from kael.distributions.normal import HalfNormal, LogNormal, Normal
from kael.distributions.poisson import Poisson
from kael.distributions.student_t import StudentT
from kael.distributions.uniform import Uniform

__all__ = [
    "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "Dirichlet", "Distribution",
    "Exponential", "Gamma", "Geometric", "Gumbel", "HalfNormal", "Independent", "Laplace",
    "LogNormal", "MixtureSameFamily", "Multinomial", "MultivariateNormal", "Normal",
    "OneHotCategorical", "Poisson", "StudentT", "Uniform", "constraints", "kl_divergence",
    "register_kl",
]  # fmt: skip
