"""The relaxed families against torch's (torch.distributions.relaxed_bernoulli and
relaxed_categorical): scores, shapes, and samples through their discrete limits."""

import numpy as np
import pytest
import torch
from distribution_helpers import DTYPES, assert_matches, lib_args
from torch.distributions import relaxed_bernoulli, relaxed_categorical

import kael
import kael.distributions as D

rng = np.random.default_rng(59)
TEMPERATURE = np.array(0.7)
CASES = {
    "RelaxedBernoulli-probs": ("RelaxedBernoulli", {"probs": rng.uniform(0.1, 0.9, (2, 3))}),
    "RelaxedBernoulli-logits": ("RelaxedBernoulli", {"logits": rng.normal(size=3)}),
    "LogitRelaxedBernoulli": ("LogitRelaxedBernoulli", {"probs": rng.uniform(0.1, 0.9, 3)}),
    "RelaxedOneHotCategorical": ("RelaxedOneHotCategorical", {"probs": rng.uniform(0.1, 1, (2, 4))}),
    "RelaxedOneHotCategorical-logits": ("RelaxedOneHotCategorical", {"logits": rng.normal(size=4)}),
    "ExpRelaxedCategorical": ("ExpRelaxedCategorical", {"logits": rng.normal(size=(3, 4))}),
}  # fmt: skip
TORCH = {
    name: getattr(module, name)
    for module in (relaxed_bernoulli, relaxed_categorical)
    for name in module.__all__
}


def pair(case: str, dtype: str = "float64", **options):
    name, args = CASES[case]
    args = {"temperature": TEMPERATURE, **args}
    kd = getattr(D, name)(**lib_args(kael, args, dtype), **options)
    return kd, TORCH[name](**lib_args(torch, args, dtype), **options)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES)
def test_shapes_and_log_prob_match_torch(case, dtype):
    kd, td = pair(case, dtype)
    assert (kd.batch_shape, kd.event_shape) == (tuple(td.batch_shape), tuple(td.event_shape))
    assert (kd.has_rsample, repr(kd.support)) == (td.has_rsample, repr(td.support))
    torch.manual_seed(0)
    value = td.sample((4,))
    assert_matches(kd.log_prob(kael.tensor(value.numpy())), td.log_prob(value), dtype)
    assert_matches(kd.probs, td.probs, dtype)
    assert_matches(kd.logits, td.logits, dtype)
    for shape in [(), (5,)]:
        draws = kd.rsample(shape)
        assert tuple(draws.shape) == tuple(td.rsample(shape).shape)
        assert str(draws.dtype).split(".")[-1] == dtype
    assert bool(kd.support.check(kd.sample((50,))).all())


@pytest.mark.parametrize("case", ["RelaxedBernoulli-probs", "ExpRelaxedCategorical"])
def test_expand_matches_torch(case):
    kd, td = pair(case)
    shape = (2, *td.batch_shape)
    ke, te = kd.expand(shape), td.expand(shape)
    assert (ke.batch_shape, ke.event_shape) == (tuple(te.batch_shape), tuple(te.event_shape))
    value = te.sample()
    assert_matches(ke.log_prob(kael.tensor(value.numpy())), te.log_prob(value), "float64")


N = 100_000
SIGMAS = 5 / (2 * np.sqrt(N))  # 5 standard errors of a frequency, at its widest


def test_relaxed_bernoulli_exceeds_one_half_with_the_bernoulli_probability():
    """(logistic noise + logit) / temperature > 0 exactly when a Bernoulli(probs) draw is 1."""
    kd, _ = pair("RelaxedBernoulli-probs")
    kael.manual_seed(11)
    draws = kd.sample((N,)).numpy()
    frequency = (draws > 0.5).mean(0)
    np.testing.assert_array_less(
        np.abs(frequency - CASES["RelaxedBernoulli-probs"][1]["probs"]), SIGMAS
    )


def test_relaxed_one_hot_argmax_follows_the_categorical():
    """The Gumbel-max trick: the largest coordinate is Categorical(probs)."""
    kd, _ = pair("RelaxedOneHotCategorical")
    kael.manual_seed(12)
    draws = kd.sample((N,)).numpy()
    np.testing.assert_allclose(draws.sum(-1), 1.0, rtol=1e-9)
    frequency = np.stack([(draws.argmax(-1) == k).mean(0) for k in range(4)], -1)
    probs = CASES["RelaxedOneHotCategorical"][1]["probs"]
    np.testing.assert_array_less(np.abs(frequency - probs / probs.sum(-1, keepdims=True)), SIGMAS)


@pytest.mark.parametrize("name", ["RelaxedBernoulli", "RelaxedOneHotCategorical"])
def test_both_probs_and_logits_are_refused(name):
    with pytest.raises(kael.ValueError, match="Either `probs` or `logits` must be specified"):
        getattr(D, name)(
            kael.tensor(0.5), probs=kael.tensor([0.5, 0.5]), logits=kael.tensor([0.0, 0.0])
        )


@pytest.mark.parametrize(
    ("case", "args", "message"),
    [
        ("RelaxedBernoulli-probs", {"probs": np.array([0.5, 1.5])}, r"Expected parameter probs .* to satisfy the constraint Interval\(lower_bound=0.0, upper_bound=1.0\)"),
        ("RelaxedOneHotCategorical", {"probs": np.array([0.5, -0.5])}, r"Expected parameter probs .* to satisfy the constraint Simplex\(\)"),
    ],
)  # fmt: skip
def test_bad_probabilities_raise_torchs_message(case, args, message):
    name = CASES[case][0]
    full = lib_args(kael, {"temperature": TEMPERATURE, **args}, "float64")
    with pytest.raises(ValueError, match=message):
        TORCH[name](
            **lib_args(torch, {"temperature": TEMPERATURE, **args}, "float64"), validate_args=True
        )
    with pytest.raises(kael.ValueError, match=message):
        getattr(D, name)(**full, validate_args=True)
