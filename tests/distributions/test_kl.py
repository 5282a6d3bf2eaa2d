"""kl_divergence and register_kl against torch.distributions.kl."""

import numpy as np
import pytest
import torch
from distribution_helpers import DTYPES, assert_matches, pair
from torch.distributions.kl import _KL_REGISTRY as TORCH_REGISTRY

import kael
import kael.distributions as D
from kael.distributions.kl import _KL_REGISTRY as KAEL_REGISTRY
from kael.distributions.kl_cross import CROSS_RULES

rng = np.random.default_rng(14)


def pos(*shape):
    return rng.uniform(0.5, 2.0, shape)


TRIL = np.tril(rng.normal(size=(2, 3, 3)), -1) + np.diag([1.0, 1.5, 2.0])
PAIRS = {
    "Normal": ({"loc": rng.normal(size=3), "scale": pos(2, 1)}, {"loc": 0.3, "scale": pos(3)}),
    "LogNormal": ({"loc": rng.normal(size=3), "scale": pos(3)}, {"loc": 0.1, "scale": pos(3)}),
    "HalfNormal": ({"scale": pos(3)}, {"scale": pos(3)}),
    "Bernoulli": ({"probs": np.array([0.0, 0.3, 1.0])}, {"logits": rng.normal(size=3)}),
    "Categorical": (
        {"probs": np.array([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5]])},
        {"probs": np.array([[0.3, 0.0, 0.7], [0.1, 0.1, 0.8]])},
    ),  # fmt: skip
    "OneHotCategorical": ({"logits": rng.normal(size=(2, 4))}, {"logits": rng.normal(size=4)}),
    "Binomial": ({"total_count": 6, "probs": pos(3) / 3}, {"total_count": 6, "probs": pos(3) / 3}),
    "Geometric": ({"probs": pos(3) / 3}, {"probs": pos(3) / 3}),
    "Uniform": (
        {"low": np.zeros(3), "high": np.ones(3)},
        {"low": np.array([-1.0, 0.5, 0.0]), "high": np.array([2.0, 2.0, 0.5])},
    ),  # fmt: skip
    "Exponential": ({"rate": pos(3)}, {"rate": pos(2, 3)}),
    "Laplace": ({"loc": rng.normal(size=3), "scale": pos(3)}, {"loc": 0.2, "scale": pos(3)}),
    "Cauchy": ({"loc": rng.normal(size=3), "scale": pos(3)}, {"loc": 0.2, "scale": pos(3)}),
    "Gumbel": ({"loc": rng.normal(size=3), "scale": pos(3)}, {"loc": 0.2, "scale": pos(3)}),
    "Poisson": ({"rate": pos(3)}, {"rate": pos(3)}),
    "Gamma": ({"concentration": pos(3), "rate": pos(3)}, {"concentration": pos(3), "rate": 1.5}),
    "Chi2": ({"df": pos(3) * 3}, {"df": pos(3) * 3}),
    "Beta": (
        {"concentration1": pos(3), "concentration0": pos(3)},
        {"concentration1": pos(3), "concentration0": pos(3)},
    ),  # fmt: skip
    "Dirichlet": ({"concentration": pos(2, 3)}, {"concentration": pos(3)}),
    "MultivariateNormal": (
        {"loc": rng.normal(size=3), "scale_tril": TRIL},
        {"loc": rng.normal(size=(4, 1, 3)), "covariance_matrix": TRIL[0] @ TRIL[0].T},
    ),  # fmt: skip
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", PAIRS)
def test_kl_matches_torch_over_broadcast_batches(name, dtype):
    p_args, q_args = PAIRS[name]
    kp, tp = pair(name, p_args, dtype)
    kq, tq = pair(name, q_args, dtype)
    got, want = D.kl_divergence(kp, kq), torch.distributions.kl_divergence(tp, tq)
    dtype = "float32" if want.dtype == torch.float32 else dtype  # Python-number q params
    assert_matches(
        got, want.to(getattr(torch, dtype)), dtype, rtol=1e-3 if dtype == "float32" else 1e-7
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_independent_kl_sums_the_reinterpreted_dims(dtype):
    args = ({"loc": rng.normal(size=(2, 3)), "scale": pos(2, 3)}, {"loc": 0.0, "scale": pos(3)})
    (kp, tp), (kq, tq) = (pair("Normal", a, dtype) for a in args)
    got = D.kl_divergence(D.Independent(kp, 1), D.Independent(kq.expand((2, 3)), 1))
    want = torch.distributions.kl_divergence(
        torch.distributions.Independent(tp, 1),
        torch.distributions.Independent(tq.expand((2, 3)), 1),
    )
    assert_matches(got, want, "float32")


def test_a_pair_without_a_rule_raises_not_implemented_as_torch():
    message = "No KL\\(p \\|\\| q\\) is implemented for p type Normal and q type Cauchy"
    with pytest.raises(NotImplementedError, match=message):
        torch.distributions.kl_divergence(
            torch.distributions.Normal(0.0, 1.0), torch.distributions.Cauchy(0.0, 1.0)
        )
    with pytest.raises(kael.NotImplementedError, match=message):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Cauchy(0.0, 1.0))


def test_independent_pairs_of_different_ndims_raise_not_implemented():
    base = D.Normal(kael.zeros(2, 3), 1.0)
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Independent(base, 1), D.Independent(base, 2))


def test_register_kl_adds_a_rule_and_prefers_the_most_specific():
    class Wide(D.Normal):
        pass

    @D.register_kl(Wide, D.Normal)
    def _kl_wide(p, q):
        return kael.zeros(p.batch_shape)

    assert D.kl_divergence(Wide(0.0, 2.0), D.Normal(0.0, 1.0)).item() == 0.0
    assert D.kl_divergence(D.Normal(0.0, 2.0), Wide(0.0, 1.0)).item() > 0.0


def test_register_kl_refuses_a_non_distribution():
    with pytest.raises(kael.TypeError, match="Expected type_p to be a Distribution subclass"):
        D.register_kl(int, D.Normal)


def test_mvn_kl_refuses_different_event_shapes():
    p = D.MultivariateNormal(kael.zeros(2), scale_tril=kael.eye(2))
    q = D.MultivariateNormal(kael.zeros(3), scale_tril=kael.eye(3))
    with pytest.raises(kael.ValueError, match="different event shapes"):
        D.kl_divergence(p, q)


# Cross-family pairs and the pairs within a family torch registers beyond the above: p with
# batch shape (3,), q with (2, 1), against torch's rule on both expanded to (2, 3) (torch's
# masked assignments need p and q of one batch shape). Each row of a parameter straddles the
# limits of the masks: Uniform inside / across [0, 1] and across q's lower bound, Pareto
# alpha below 1, between 1 and 2 and above 2, CB probs inside the Taylor lims.


def tril(*shape):
    """Lower-triangular matrices of `shape` with a positive diagonal."""
    return np.tril(rng.normal(size=(*shape, shape[-1])), -1) + np.diag(pos(shape[-1]))


P_ARGS = {
    "Bernoulli": {"probs": np.array([0.0, 0.3, 1.0])},
    "Beta": {"concentration1": np.array([0.5, 1.5, 3.0]), "concentration0": np.array([2.0, 0.7, 1.2])},
    "ContinuousBernoulli": {"probs": np.array([0.1, 0.5, 0.8])},
    "Exponential": {"rate": np.array([0.5, 1.0, 2.5])},
    "Gamma": {"concentration": np.array([0.6, 1.0, 3.0]), "rate": np.array([1.5, 0.4, 2.0])},
    "Gumbel": {"loc": np.array([-1.0, 0.5, 2.0]), "scale": np.array([0.5, 1.0, 2.0])},
    "Laplace": {"loc": np.array([-1.0, 0.5, 2.0]), "scale": np.array([0.5, 1.0, 2.0])},
    "Normal": {"loc": np.array([-1.0, 0.2, 1.5]), "scale": np.array([0.5, 1.2, 2.0])},
    "Pareto": {"scale": np.array([0.5, 1.0, 2.0]), "alpha": np.array([0.8, 1.5, 3.0])},
    "Poisson": {"rate": np.array([0.5, 2.0, 4.0])},
    "Uniform": {"low": np.array([0.1, 0.2, -0.5]), "high": np.array([0.6, 1.5, 0.5])},
    "LowRankMultivariateNormal": {
        "loc": rng.normal(size=(3, 4)), "cov_factor": rng.normal(size=(3, 4, 2)), "cov_diag": pos(3, 4),
    },
    "MultivariateNormal": {"loc": rng.normal(size=(3, 4)), "scale_tril": tril(3, 4)},
}  # fmt: skip
Q_ARGS = {
    "Bernoulli": {"probs": np.array([[0.2], [0.7]])},
    "Beta": {"concentration1": np.array([[1.5], [0.6]]), "concentration0": np.array([[2.5], [0.9]])},
    "Binomial": {"total_count": 4, "probs": np.array([[0.3], [0.6]])},
    "ContinuousBernoulli": {"probs": np.array([[0.3], [0.5005]])},
    "Exponential": {"rate": np.array([[0.7], [1.8]])},
    "Gamma": {"concentration": np.array([[0.8], [2.5]]), "rate": np.array([[1.2], [0.5]])},
    "Gumbel": {"loc": np.array([[0.3], [-0.7]]), "scale": np.array([[1.5], [0.8]])},
    "Laplace": {"loc": np.array([[0.3], [-0.7]]), "scale": np.array([[1.5], [0.8]])},
    "Normal": {"loc": np.array([[0.3], [-0.4]]), "scale": np.array([[1.1], [0.6]])},
    "Pareto": {"scale": np.array([[0.05], [0.3]]), "alpha": np.array([[1.5], [2.5]])},
    "Poisson": {"rate": np.array([[0.5], [3.0]])},
    "Uniform": {"low": np.array([[-1.0], [0.5]]), "high": np.array([[2.0], [2.0]])},
    "LowRankMultivariateNormal": {
        "loc": rng.normal(size=(2, 1, 4)), "cov_factor": rng.normal(size=(2, 1, 4, 3)),
        "cov_diag": pos(2, 1, 4),
    },
    "MultivariateNormal": {"loc": rng.normal(size=(2, 1, 4)), "scale_tril": tril(2, 1, 4)},
}  # fmt: skip
NEW_PAIRS = sorted(
    {(p.__name__, q.__name__) for p, q in CROSS_RULES}
    | {
        ("ContinuousBernoulli", "ContinuousBernoulli"),
        ("LowRankMultivariateNormal", "LowRankMultivariateNormal"),
        ("LowRankMultivariateNormal", "MultivariateNormal"),
        ("MultivariateNormal", "LowRankMultivariateNormal"),
    }
)
KL_TOL = {"float32": {"rtol": 1e-5, "atol": 1e-5}, "float64": {"rtol": 1e-10, "atol": 1e-12}}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p_name, q_name", NEW_PAIRS, ids=lambda n: n)
def test_new_kl_pairs_match_torch_over_broadcast_batches(p_name, q_name, dtype):
    kp, tp = pair(p_name, P_ARGS[p_name], dtype)
    kq, tq = pair(q_name, Q_ARGS[q_name], dtype)
    batch = (2, 3)
    want = torch.distributions.kl_divergence(tp.expand(batch), tq.expand(batch))
    assert_matches(D.kl_divergence(kp, kq), want, dtype, **KL_TOL[dtype])


def test_every_pair_torch_registers_has_a_rule_but_the_autograd_one():
    theirs = {(p.__name__, q.__name__) for p, q in TORCH_REGISTRY}
    ours = {(p.__name__, q.__name__) for p, q in KAEL_REGISTRY}
    assert theirs - ours == {("ExponentialFamily", "ExponentialFamily")}


@pytest.mark.parametrize(
    "p_name, q_name", [("Normal", "Beta"), ("Pareto", "Uniform"), ("Poisson", "Binomial")]
)
def test_always_infinite_pairs_fill_the_broadcast_batch_in_p_dtype(p_name, q_name):
    """The documented deviation: torch fills p's batch shape only."""
    kp, tp = pair(p_name, P_ARGS[p_name], "float32")
    kq, tq = pair(q_name, Q_ARGS[q_name], "float64")
    got, want = D.kl_divergence(kp, kq), torch.distributions.kl_divergence(tp, tq)
    assert tuple(want.shape) == (3,) and want.dtype == torch.float32
    assert_matches(got, want.expand(2, 3), "float32", rtol=0, atol=0)


@pytest.mark.parametrize(
    "p_name, p_args, q_name, q_args",
    [
        ("Pareto", {"scale": 2.0, "alpha": 3.0}, "Exponential", {"rate": 1.0}),
        ("Pareto", {"scale": 2.0, "alpha": 0.5}, "Gamma", {"concentration": 2.0, "rate": 1.0}),
        ("ContinuousBernoulli", {"probs": 0.2}, "ContinuousBernoulli", {"probs": 0.7}),
        (
            "Uniform",
            {"low": 0.2, "high": 0.9},
            "Beta",
            {"concentration1": 2.0, "concentration0": 3.0},
        ),
        ("Gamma", {"concentration": 2.0, "rate": 3.0}, "Gumbel", {"loc": 0.5, "scale": 2.0}),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_new_pairs_of_python_number_parameters_match_torch(p_name, p_args, q_name, q_args):
    (kp, tp), (kq, tq) = pair(p_name, p_args), pair(q_name, q_args)
    want = torch.distributions.kl_divergence(tp, tq)
    assert_matches(D.kl_divergence(kp, kq), want, "float32", rtol=1e-6)


@pytest.mark.parametrize(
    "p_name, q_name, what",
    [
        ("LowRankMultivariateNormal", "LowRankMultivariateNormal", "Low Rank Multivariate Normals"),
        ("LowRankMultivariateNormal", "MultivariateNormal", "\\(Low Rank\\) Multivariate Normals"),
        ("MultivariateNormal", "LowRankMultivariateNormal", "\\(Low Rank\\) Multivariate Normals"),
    ],
)
def test_lowrank_kl_refuses_different_event_shapes(p_name, q_name, what):
    three = {
        "LowRankMultivariateNormal": {
            "loc": np.zeros(3), "cov_factor": np.ones((3, 1)), "cov_diag": np.ones(3),
        },
        "MultivariateNormal": {"loc": np.zeros(3), "scale_tril": np.eye(3)},
    }  # fmt: skip
    (p, _), (q, _) = pair(p_name, P_ARGS[p_name]), pair(q_name, three[q_name])
    assert p.event_shape == (4,) and q.event_shape == (3,)
    with pytest.raises(kael.ValueError, match=f"two {what} with different event shapes"):
        D.kl_divergence(p, q)


@pytest.mark.parametrize("q_name", ["LowRankMultivariateNormal", "MultivariateNormal"])
def test_lowrank_kl_broadcasts_a_cov_factor_without_batch_dims(q_name, dtype="float64"):
    """torch needs the low-rank p's factor batched as its cov_diag; kael broadcasts them."""
    w = rng.normal(size=(4, 2))
    args = {**P_ARGS["LowRankMultivariateNormal"], "cov_factor": w}
    kp, _ = pair("LowRankMultivariateNormal", args, dtype)
    _, tp = pair("LowRankMultivariateNormal", {**args, "cov_factor": np.stack([w] * 3)}, dtype)
    kq, tq = pair(q_name, Q_ARGS[q_name], dtype)
    want = torch.distributions.kl_divergence(tp.expand((2, 3)), tq.expand((2, 3)))
    assert_matches(D.kl_divergence(kp, kq), want, dtype, **KL_TOL[dtype])


def test_wishart_pair_has_no_rule_as_torch_needs_autograd_for_it():
    w = D.Wishart(4.0, covariance_matrix=kael.eye(2))
    with pytest.raises(kael.NotImplementedError, match="p type Wishart and q type Wishart"):
        D.kl_divergence(w, w)


def test_different_exponential_families_without_a_rule_raise_as_torch():
    with pytest.raises(NotImplementedError, match="cross KL-divergence between different"):
        torch.distributions.kl_divergence(
            torch.distributions.Bernoulli(0.3), torch.distributions.Beta(1.0, 2.0)
        )
    with pytest.raises(kael.NotImplementedError, match="p type Bernoulli and q type Beta"):
        D.kl_divergence(D.Bernoulli(0.3), D.Beta(1.0, 2.0))
