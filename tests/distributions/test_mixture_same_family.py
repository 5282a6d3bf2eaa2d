"""MixtureSameFamily against torch.distributions."""

import numpy as np
import pytest
import torch
from distribution_helpers import DTYPES, assert_matches, check_moments

import kael
import kael.distributions as D

rng = np.random.default_rng(13)
MIX = rng.uniform(0.2, 1.0, (2, 3))
LOC, SCALE = rng.normal(size=(2, 3)) * 3, rng.uniform(0.5, 1.5, (2, 3))


def _pair(dtype):
    out = []
    for lib in (kael, torch):
        dt = getattr(lib, dtype)
        dists = lib.distributions
        mix = dists.Categorical(probs=lib.tensor(MIX, dtype=dt))
        comp = dists.Normal(lib.tensor(LOC, dtype=dt), lib.tensor(SCALE, dtype=dt))
        out.append(dists.MixtureSameFamily(mix, comp))
    return out


@pytest.mark.parametrize("dtype", DTYPES)
def test_scores_and_moments_match_torch(dtype):
    kd, td = _pair(dtype)
    assert kd.batch_shape == tuple(td.batch_shape)
    value = rng.normal(size=(4, 2))
    kt, tt = DTYPES[dtype]
    for what in ("log_prob", "cdf"):
        got = getattr(kd, what)(kael.tensor(value, dtype=kt))
        assert_matches(got, getattr(td, what)(torch.tensor(value, dtype=tt)), dtype)
    assert_matches(kd.mean, td.mean, dtype)
    assert_matches(kd.variance, td.variance, dtype)
    assert_matches(kd.expand((3, 2)).mean, td.expand((3, 2)).mean, dtype)


def test_sample_moments_match_torch():
    kd, td = _pair("float64")
    assert tuple(kd.sample((5,)).shape) == tuple(td.sample((5,)).shape)
    check_moments(kd, td)


def test_a_component_count_mismatch_is_refused():
    mix = D.Categorical(probs=kael.ones(4))
    with pytest.raises(kael.ValueError, match=r"`mixture_distribution component` \(4\)"):
        D.MixtureSameFamily(mix, D.Normal(kael.zeros(3), 1.0))


def test_a_non_categorical_mixture_is_refused():
    with pytest.raises(kael.ValueError, match="needs to be an  instance of"):
        D.MixtureSameFamily(D.Normal(0.0, 1.0), D.Normal(kael.zeros(3), 1.0))
