"""kl_divergence(p, q) and register_kl, as torch.distributions.kl has them: closed-form
KL(p || q) rules keyed by a pair of distribution classes, the most specific registered pair
(by the two classes' method resolution orders) chosen for a call and cached. The rules within
a family (and between the Gaussians) are here; those between families are in kl_cross.py.

Deviation: torch registers a generic rule for (ExponentialFamily, ExponentialFamily), the
Bregman divergence of the log normalizer, whose gradient it takes by autograd; kael has no
autograd and no such rule, so a pair covered by it alone (Wishart with Wishart) raises
NotImplementedError."""

from __future__ import annotations

from collections.abc import Callable

import kael
from kael.distributions.bernoulli import Bernoulli, Binomial, Geometric
from kael.distributions.beta import Beta, Dirichlet
from kael.distributions.categorical import Categorical, OneHotCategorical
from kael.distributions.continuous_bernoulli import ContinuousBernoulli
from kael.distributions.distribution import Distribution
from kael.distributions.exponential import Exponential
from kael.distributions.gamma import Gamma
from kael.distributions.independent import Independent
from kael.distributions.kl_cross import CROSS_RULES, infinite_where
from kael.distributions.location_scale import _EULER_GAMMA, Cauchy, Gumbel, Laplace
from kael.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from kael.distributions.multivariate_normal import (
    MultivariateNormal,
    half_log_det,
    mahalanobis,
)
from kael.distributions.normal import HalfNormal, LogNormal, Normal
from kael.distributions.pareto import Pareto
from kael.distributions.poisson import Poisson
from kael.distributions.transformed_distribution import TransformedDistribution
from kael.distributions.uniform import Uniform
from kael.distributions.utils import sum_rightmost
from kael.frontend.tensor import Tensor
from kael.runtime import user_warning
from kael.runtime.errors import NotImplementedError, TypeError, ValueError

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict[tuple[type, type], Callable] = {}
_KL_MEMOIZE: dict[tuple[type, type], Callable | None] = {}


def register_kl(type_p: type, type_q: type) -> Callable[[Callable], Callable]:
    """Decorator registering `fn(p, q)` as KL(p || q) for p of type_p and q of type_q."""
    for name, cls in (("type_p", type_p), ("type_q", type_q)):
        if not (isinstance(cls, type) and issubclass(cls, Distribution)):
            raise TypeError(f"Expected {name} to be a Distribution subclass but got {cls}")

    def decorator(fun: Callable) -> Callable:
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()  # a new rule may be more specific than a cached one
        return fun

    return decorator


def _dispatch_kl(type_p: type, type_q: type) -> Callable | None:
    """The rule of the most specific registered pair matching (type_p, type_q), or None."""
    matches = [
        (type_p.__mro__.index(p), type_q.__mro__.index(q), p, q)
        for p, q in _KL_REGISTRY
        if issubclass(type_p, p) and issubclass(type_q, q)
    ]
    if not matches:
        return None
    left = min(matches, key=lambda m: (m[0], m[1]))
    right = min(matches, key=lambda m: (m[1], m[0]))
    if left[2:] != right[2:]:
        user_warning.warn(
            f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). Please register_kl"
            f"({left[2].__name__}, {right[3].__name__})",
            RuntimeWarning,
        )
    return _KL_REGISTRY[left[2], left[3]]


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q), batched over the two distributions' broadcast batch shape;
    NotImplementedError where no rule covers the pair of types."""
    key = (type(p), type(q))
    if key not in _KL_MEMOIZE:
        _KL_MEMOIZE[key] = _dispatch_kl(*key)
    fun = _KL_MEMOIZE[key]
    if fun is None:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
            f"{type(q).__name__}"
        )
    return fun(p, q)


def _normal_kl(p_loc, p_scale, q_loc, q_scale) -> Tensor:
    var_ratio = (p_scale / q_scale).pow(2)
    t1 = ((p_loc - q_loc) / q_scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Normal, Normal)
@register_kl(LogNormal, LogNormal)
def _kl_normal_normal(p, q) -> Tensor:
    return _normal_kl(p.loc, p.scale, q.loc, q.scale)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Tensor:
    return _normal_kl(0.0, p.scale, 0.0, q.scale)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    softplus = kael.nn.functional.softplus
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = kael.where(p.probs == 0, 0.0, infinite_where(t1, q.probs == 0))
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = kael.where(p.probs == 1, 0.0, infinite_where(t2, q.probs == 1))
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = infinite_where(t, (q.probs == 0).expand_as(t))
    return kael.where((p.probs == 0).expand_as(t), 0.0, t).sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError(
            "KL between Binomials where q.total_count > p.total_count is not implemented"
        )
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    return infinite_where(kl, p.total_count > q.total_count)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return infinite_where(result, (q.low > p.low) | (q.high < p.high))


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t3 = scale_ratio * (-loc_abs_diff / p.scale).exp()
    return -scale_ratio.log() + loc_abs_diff / q.scale + t3 - 1


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    spread = (p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)
    return (spread / (4 * p.scale * q.scale)).log()


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t3 = (ct2 + (1 + ct1).lgamma() - ct3).exp()
    return t1 + ct1 * _EULER_GAMMA + t3 - (1 + _EULER_GAMMA)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    pc, pr, qc, qr = p.concentration, p.rate, q.concentration, q.rate
    t1 = qc * (pr / qr).log()
    t2 = qc.lgamma() - pc.lgamma()
    t3 = (pc - qc) * pc.digamma()
    t4 = (qr - pr) * (pc / pr)
    return t1 + t2 + t3 + t4


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    return _kl_dirichlet_dirichlet(p._dirichlet, q._dirichlet)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    pc, qc = p.concentration, q.concentration
    sum_p, sum_q = pc.sum(-1), qc.sum(-1)
    t1 = sum_p.lgamma() - sum_q.lgamma()
    t2 = (pc.lgamma() - qc.lgamma()).sum(-1)
    t4 = pc.digamma() - sum_p.digamma().unsqueeze(-1)
    return t1 - t2 + ((pc - qc) * t4).sum(-1)


def _check_event_shapes(p: Distribution, q: Distribution, what: str) -> None:
    """torch's ValueError unless the two (multivariate) normals have one event shape."""
    if p.event_shape != q.event_shape:
        raise ValueError(
            f"KL-divergence between two {what} with different event shapes cannot be computed"
        )


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    _check_event_shapes(p, q, "Multivariate Normals")
    p_tril, q_tril = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    n = p.event_shape[0]
    batch = tuple(kael.broadcast_shapes(tuple(q_tril.shape[:-2]), tuple(p_tril.shape[:-2])))
    solved = kael.linalg.solve_triangular(
        q_tril.expand(batch + (n, n)), p_tril.expand(batch + (n, n)), upper=False
    )
    trace = solved.pow(2).sum((-2, -1))
    term3 = mahalanobis(q_tril, q.loc - p.loc)
    return half_log_det(q_tril) - half_log_det(p_tril) + 0.5 * (trace + term3 - n)


def _trace_xxt(x: Tensor) -> Tensor:
    """trace(X X^T) for a batch of matrices X: the sum of their squared entries."""
    return x.pow(2).sum((-2, -1))


def _solve_lower(lower: Tensor, rhs: Tensor) -> Tensor:
    """lower^-1 rhs for lower-triangular `lower`, over the two's broadcast batch dims."""
    return kael.linalg.solve_triangular(lower, rhs, upper=False)


def _lowrank_mahalanobis(q: LowRankMultivariateNormal, diff: Tensor) -> Tensor:
    """diff^T (W W^T + D)^-1 diff = diff^T D^-1 diff - |L_C^-1 W^T D^-1 diff|^2 (Woodbury)."""
    projected = kael.matmul(q._wt_dinv, diff.unsqueeze(-1)).squeeze(-1)
    quadratic = (diff.pow(2) / q._unbroadcasted_cov_diag).sum(-1)
    return quadratic - mahalanobis(q._capacitance_tril, projected)


def _lowrank_precision_root(q: LowRankMultivariateNormal) -> Tensor:
    """A = L_C^-1 W^T D^-1, with (W W^T + D)^-1 = D^-1 - A^T A."""
    return _solve_lower(q._capacitance_tril, q._wt_dinv)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_lowrank(p: LowRankMultivariateNormal, q: LowRankMultivariateNormal) -> Tensor:
    _check_event_shapes(p, q, "Low Rank Multivariate Normals")
    p_w, p_d = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
    q_d = q._unbroadcasted_cov_diag
    a = _lowrank_precision_root(q)
    # trace((D_q^-1 - A^T A)(D_p + W_p W_p^T)), term by term
    trace = (
        (p_d / q_d).sum(-1)
        + _trace_xxt(p_w * q_d.rsqrt().unsqueeze(-1))
        - _trace_xxt(a * p_d.sqrt().unsqueeze(-2))
        - _trace_xxt(kael.matmul(a, p_w))
    )
    log_det = q._log_det() - p._log_det()
    term3 = _lowrank_mahalanobis(q, q.loc - p.loc)
    return 0.5 * (log_det + trace + term3 - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn_lowrank(p: MultivariateNormal, q: LowRankMultivariateNormal) -> Tensor:
    _check_event_shapes(p, q, "(Low Rank) Multivariate Normals")
    p_tril = p._unbroadcasted_scale_tril
    a = _lowrank_precision_root(q)
    # trace((D_q^-1 - A^T A) L_p L_p^T)
    trace = _trace_xxt(p_tril * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1)) - _trace_xxt(
        kael.matmul(a, p_tril)
    )
    log_det = q._log_det() - 2 * half_log_det(p_tril)
    term3 = _lowrank_mahalanobis(q, q.loc - p.loc)
    return 0.5 * (log_det + trace + term3 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrank_mvn(p: LowRankMultivariateNormal, q: MultivariateNormal) -> Tensor:
    _check_event_shapes(p, q, "(Low Rank) Multivariate Normals")
    q_tril = q._unbroadcasted_scale_tril
    sqrt_d = kael.diag_embed(p._unbroadcasted_cov_diag.sqrt())
    # trace(L_q^-T L_q^-1 (W_p W_p^T + D_p))
    trace = _trace_xxt(_solve_lower(q_tril, p._unbroadcasted_cov_factor)) + _trace_xxt(
        _solve_lower(q_tril, sqrt_d)
    )
    log_det = 2 * half_log_det(q_tril) - p._log_det()
    term3 = mahalanobis(q_tril, q.loc - p.loc)
    return 0.5 * (log_det + trace + term3 - p.event_shape[0])


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(
    p: ContinuousBernoulli, q: ContinuousBernoulli
) -> Tensor:
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + (-p.probs).log1p()
    t3 = -q._cont_bern_log_norm() - (-q.probs).log1p()
    return t1 + t2 + t3


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto) -> Tensor:
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return infinite_where(result, p.scale < q.scale)  # p's support reaches below q's


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution, q: TransformedDistribution) -> Tensor:
    """KL of the bases, when both push them through equal transforms to equal event shapes."""
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


for (_type_p, _type_q), _fun in CROSS_RULES.items():
    register_kl(_type_p, _type_q)(_fun)
