"""Closed-form KL(p || q) between two different families, as torch.distributions.kl has them:
CROSS_RULES maps each (p type, q type) pair to its rule, and kl.py registers them all. Where
p's support is not inside q's the divergence is inf, for every parameter (UNCOVERED) or
where the parameters say so, with torch's bounds (its comparisons, strict or not, are kept).

Deviation: torch fills the always-infinite pairs in p's batch shape; kael fills them in the
broadcast batch shape of p and q, as every other rule returns (p's dtype in both)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import kael
from kael.distributions.bernoulli import Bernoulli, Binomial
from kael.distributions.beta import Beta
from kael.distributions.continuous_bernoulli import ContinuousBernoulli
from kael.distributions.distribution import Distribution
from kael.distributions.exponential import Exponential
from kael.distributions.gamma import Gamma
from kael.distributions.location_scale import _EULER_GAMMA, Gumbel, Laplace
from kael.distributions.normal import Normal
from kael.distributions.pareto import Pareto
from kael.distributions.poisson import Poisson
from kael.distributions.uniform import Uniform
from kael.distributions.utils import filled
from kael.frontend.tensor import Tensor

__all__ = ["CROSS_RULES", "UNCOVERED", "infinite_where"]

_LOG_2PI = math.log(2 * math.pi)

# (p, q) pairs where no p has its support inside any q's: the real line, a half line or a
# Pareto's [scale, inf) against a bounded or half-bounded q, Poisson's unbounded counts against
# bounded ones
UNCOVERED: tuple[tuple[type, type], ...] = (
    *itertools.product(
        (Gumbel, Laplace, Normal),
        (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform),
    ),
    *itertools.product((Exponential, Gamma), (Beta, ContinuousBernoulli, Pareto, Uniform)),
    (Beta, Pareto),
    (ContinuousBernoulli, Pareto),
    (Pareto, Beta),
    (Pareto, ContinuousBernoulli),
    (Pareto, Uniform),
    (Poisson, Bernoulli),
    (Poisson, Binomial),
)


def infinite_where(result: Tensor, mask: Tensor) -> Tensor:
    """`result` with inf wherever `mask` holds (p puts mass where q has none)."""
    return kael.where(mask, math.inf, result)


def _infinite(p: Distribution, q: Distribution) -> Tensor:
    """inf over the broadcast batch shape of p and q, in p's dtype."""
    shape = tuple(kael.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape)))
    return filled(shape, math.inf, p.mean)


CROSS_RULES: dict[tuple[type, type], Callable[[Distribution, Distribution], Tensor]] = (
    dict.fromkeys(UNCOVERED, _infinite)
)


def _rule(type_p: type, type_q: type) -> Callable[[Callable], Callable]:
    """Decorator entering `fn(p, q)` in CROSS_RULES as KL(p || q) for (type_p, type_q)."""

    def decorator(fun: Callable) -> Callable:
        CROSS_RULES[type_p, type_q] = fun
        return fun

    return decorator


def _x_log_x(x: Tensor) -> Tensor:
    return kael.xlogy(x, x)  # 0 at x = 0


def _uniform_mean_log(low: Tensor, high: Tensor) -> Tensor:
    """E[log X] for X uniform on [low, high], low >= 0."""
    width = high - low
    return (_x_log_x(high) - _x_log_x(low) - width) / width


def _gamma_log_norm(q: Gamma) -> Tensor:
    """log(Gamma(c) / rate**c): the log normalizer of q's density."""
    return q.concentration.lgamma() - q.concentration * q.rate.log()


def _kl_to_continuous_bernoulli(p: Distribution, q: ContinuousBernoulli) -> Tensor:
    """-H(p) - E_p[log q(X)], for p on [0, 1] (q's log density is linear in x)."""
    return -p.entropy() - p.mean * q.logits - (-q.probs).log1p() - q._cont_bern_log_norm()


@_rule(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@_rule(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p: Beta, q: ContinuousBernoulli) -> Tensor:
    return _kl_to_continuous_bernoulli(p, q)


@_rule(Beta, Exponential)
def _kl_beta_exponential(p: Beta, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@_rule(Beta, Gamma)
def _kl_beta_gamma(p: Beta, q: Gamma) -> Tensor:
    c1, c0 = p.concentration1, p.concentration0
    mean_log = c1.digamma() - (c1 + c0).digamma()
    return -p.entropy() + _gamma_log_norm(q) - (q.concentration - 1) * mean_log + q.rate * p.mean


@_rule(Beta, Normal)
def _kl_beta_normal(p: Beta, q: Normal) -> Tensor:
    mean = p.mean
    var_normal = q.scale.pow(2)
    second_moment = mean * (1 - mean) / (p.concentration1 + p.concentration0 + 1) + mean.pow(2)
    t2 = 0.5 * (var_normal * 2 * math.pi).log()
    t3 = 0.5 * second_moment - q.loc * mean + 0.5 * q.loc.pow(2)
    return -p.entropy() + t2 + t3 / var_normal


@_rule(Beta, Uniform)
def _kl_beta_uniform(p: Beta, q: Uniform) -> Tensor:
    result = -p.entropy() + (q.high - q.low).log()
    support = p.support
    return infinite_where(result, (q.low > support.lower_bound) | (q.high < support.upper_bound))


@_rule(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p: ContinuousBernoulli, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@_rule(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p: ContinuousBernoulli, q: Normal) -> Tensor:
    mean = p.mean
    t2 = 0.5 * (_LOG_2PI + (q.loc / q.scale).square()) + q.scale.log()
    t3 = (p.variance + mean.square() - 2.0 * q.loc * mean) / (2.0 * q.scale.square())
    return -p.entropy() + t2 + t3


@_rule(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p: ContinuousBernoulli, q: Uniform) -> Tensor:
    result = -p.entropy() + (q.high - q.low).log()
    support = p.support
    return infinite_where(result, (q.low >= support.lower_bound) | (q.high <= support.upper_bound))


@_rule(Exponential, Gamma)
def _kl_exponential_gamma(p: Exponential, q: Gamma) -> Tensor:
    ratio = q.rate / p.rate
    c = q.concentration
    return -c * ratio.log() + ratio + c.lgamma() + c * _EULER_GAMMA - (1 + _EULER_GAMMA)


@_rule(Exponential, Gumbel)
def _kl_exponential_gumbel(p: Exponential, q: Gumbel) -> Tensor:
    scale_rate = p.rate * q.scale
    loc_scale = q.loc / q.scale
    t2 = loc_scale.exp() * scale_rate / (scale_rate + 1)
    return scale_rate.log() - 1 - loc_scale + t2 + scale_rate.reciprocal()


@_rule(Exponential, Normal)
def _kl_exponential_normal(p: Exponential, q: Normal) -> Tensor:
    var_normal = q.scale.pow(2)
    rate_sqr = p.rate.pow(2)
    t1 = 0.5 * (rate_sqr * var_normal * 2 * math.pi).log()
    return t1 - 1 + (rate_sqr.reciprocal() - q.loc / p.rate + q.loc.pow(2) * 0.5) / var_normal


@_rule(Gamma, Exponential)
def _kl_gamma_exponential(p: Gamma, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@_rule(Gamma, Gumbel)
def _kl_gamma_gumbel(p: Gamma, q: Gumbel) -> Tensor:
    c = p.concentration
    rate_scale = p.rate * q.scale
    loc_scale = q.loc / q.scale
    t1 = (c - 1) * c.digamma() - c.lgamma() - c
    t2 = rate_scale.log() + c / rate_scale
    t3 = loc_scale.exp() * (1 + rate_scale.reciprocal()).pow(-c) - loc_scale
    return t1 + t2 + t3


@_rule(Gamma, Normal)
def _kl_gamma_normal(p: Gamma, q: Normal) -> Tensor:
    c = p.concentration
    var_normal = q.scale.pow(2)
    rate_sqr = p.rate.pow(2)
    t1 = 0.5 * (rate_sqr * var_normal * 2 * math.pi).log() - c - c.lgamma()
    t2 = 0.5 * (c.pow(2) + c) / rate_sqr
    t3 = q.loc * c / p.rate
    return t1 + (c - 1) * c.digamma() + (t2 - t3 + 0.5 * q.loc.pow(2)) / var_normal


@_rule(Gumbel, Normal)
def _kl_gumbel_normal(p: Gumbel, q: Normal) -> Tensor:
    ratio = p.scale / q.scale
    t1 = (ratio / math.sqrt(2 * math.pi)).log()
    t2 = (math.pi * ratio * 0.5).pow(2) / 3
    t3 = ((p.loc + p.scale * _EULER_GAMMA - q.loc) / q.scale).pow(2) * 0.5
    return -t1 + t2 + t3 - (_EULER_GAMMA + 1)


@_rule(Laplace, Normal)
def _kl_laplace_normal(p: Laplace, q: Normal) -> Tensor:
    var_normal = q.scale.pow(2)
    ratio = p.scale.pow(2) / var_normal
    t1 = 0.5 * (2 * ratio / math.pi).log()
    t2 = 0.5 * p.loc.pow(2) - p.loc * q.loc + 0.5 * q.loc.pow(2)
    return -t1 + ratio + t2 / var_normal - 1


@_rule(Normal, Gumbel)
def _kl_normal_gumbel(p: Normal, q: Gumbel) -> Tensor:
    mean_scale = p.loc / q.scale
    var_ratio = (p.scale / q.scale).pow(2)
    loc_scale = q.loc / q.scale
    t3 = (-mean_scale + 0.5 * var_ratio + loc_scale).exp()
    return -0.5 * var_ratio.log() + mean_scale - loc_scale + t3 - 0.5 * (1 + _LOG_2PI)


@_rule(Normal, Laplace)
def _kl_normal_laplace(p: Normal, q: Laplace) -> Tensor:
    loc_diff = p.loc - q.loc
    z = loc_diff / p.scale
    t2 = math.sqrt(2 / math.pi) * p.scale * (-0.5 * z.pow(2)).exp()
    t3 = loc_diff * kael.erf(math.sqrt(0.5) * z)
    return -(p.scale / q.scale).log() + (t2 + t3) / q.scale - 0.5 * (1 + math.log(0.5 * math.pi))


@_rule(Pareto, Exponential)
def _kl_pareto_exponential(p: Pareto, q: Exponential) -> Tensor:
    a = p.alpha
    scale_rate = p.scale * q.rate
    result = (a / scale_rate).log() - a.reciprocal() + a * scale_rate / (a - 1) - 1
    return infinite_where(result, a <= 1)  # p has no mean


@_rule(Pareto, Gamma)
def _kl_pareto_gamma(p: Pareto, q: Gamma) -> Tensor:
    a = p.alpha
    mean_log = p.scale.log() + a.reciprocal()
    t1 = a.log() - mean_log
    t3 = (1 - q.concentration) * mean_log
    t4 = q.rate * a * p.scale / (a - 1)
    return infinite_where(t1 + _gamma_log_norm(q) + t3 + t4 - 1, a <= 1)  # p has no mean


@_rule(Pareto, Normal)
def _kl_pareto_normal(p: Pareto, q: Normal) -> Tensor:
    a = p.alpha
    var_normal = 2 * q.scale.pow(2)
    common = p.scale / (a - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * a / p.scale).log()
    t3 = a * common.pow(2) / (a - 2)
    t4 = (a * common - q.loc).pow(2)
    result = t1 - a.reciprocal() + (t3 + t4) / var_normal - 1
    return infinite_where(result, a <= 2)  # p has no variance


@_rule(Uniform, Beta)
def _kl_uniform_beta(p: Uniform, q: Beta) -> Tensor:
    c1, c0 = q.concentration1, q.concentration0
    t2 = (c1 - 1) * _uniform_mean_log(p.low, p.high)
    t3 = -(c0 - 1) * _uniform_mean_log(1 - p.high, 1 - p.low)
    t4 = c1.lgamma() + c0.lgamma() - (c1 + c0).lgamma()
    result = t3 + t4 - (p.high - p.low).log() - t2
    support = q.support
    return infinite_where(result, (p.high > support.upper_bound) | (p.low < support.lower_bound))


@_rule(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p: Uniform, q: ContinuousBernoulli) -> Tensor:
    result = _kl_to_continuous_bernoulli(p, q)
    support = q.support
    return infinite_where(result, (p.high >= support.upper_bound) | (p.low <= support.lower_bound))


@_rule(Uniform, Exponential)
def _kl_uniform_exponential(p: Uniform, q: Exponential) -> Tensor:
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    return infinite_where(result, p.low < q.support.lower_bound)


@_rule(Uniform, Gamma)
def _kl_uniform_gamma(p: Uniform, q: Gamma) -> Tensor:
    t1 = (p.high - p.low).log()
    t3 = (1 - q.concentration) * _uniform_mean_log(p.low, p.high)
    t4 = q.rate * (p.high + p.low) / 2
    result = -t1 + _gamma_log_norm(q) + t3 + t4
    return infinite_where(result, p.low < q.support.lower_bound)


@_rule(Uniform, Gumbel)
def _kl_uniform_gumbel(p: Uniform, q: Gumbel) -> Tensor:
    common = q.scale / (p.high - p.low)
    high_z = (p.high - q.loc) / q.scale
    low_z = (p.low - q.loc) / q.scale
    t1 = common.log() + 0.5 * (high_z + low_z)
    return t1 - common * ((-high_z).exp() - (-low_z).exp())


@_rule(Uniform, Normal)
def _kl_uniform_normal(p: Uniform, q: Normal) -> Tensor:
    width = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / width).log()
    t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return t1 + 0.5 * (width.pow(2) / 12 + t3) / q.scale.pow(2)


@_rule(Uniform, Pareto)
def _kl_uniform_pareto(p: Uniform, q: Pareto) -> Tensor:
    width = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * width).log()
    result = _uniform_mean_log(p.low, p.high) * (q.alpha + 1) - t1
    return infinite_where(result, p.low < q.support.lower_bound)
