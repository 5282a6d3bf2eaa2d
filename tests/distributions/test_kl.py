"""kl_divergence and register_kl against torch.distributions.kl."""

import numpy as np
import pytest
import torch
from distribution_helpers import DTYPES, assert_matches, pair

import kael
import kael.distributions as D

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
