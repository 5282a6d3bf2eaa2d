"""Pareto against torch.distributions.Pareto and its KL (summaries, scores and shapes:
the generic checks of test_families)."""

import numpy as np
import pytest
import torch
from distribution_helpers import (
    assert_matches,
    check_moments,
    check_negated_parameter_refused,
    pair,
)

import kael
import kael.distributions as D

rng = np.random.default_rng(52)
# alpha below 1, below 2 and above: mean and variance inf where torch's are
ARGS = {"scale": rng.uniform(0.5, 2, 3), "alpha": np.array([[0.5], [1.5], [5.0]])}


def test_sample_moments_over_100k_draws_match_torch():
    args = {"scale": np.array([0.5, 1.0, 2.0]), "alpha": np.array([9.0, 12.0, 10.0])}
    kd, td = pair("Pareto", args, "float64")
    check_moments(kd, td, n=100_000)
    assert bool((kd.sample((1000,)) >= kd.scale).all())


def test_support_starts_at_the_scale_as_torchs():
    kd, td = pair("Pareto", ARGS, "float64")
    assert_matches(kd.support.lower_bound, td.support.lower_bound, "float64")
    value = kael.tensor(np.full((3, 3), 0.4))
    assert not bool(kd.support.check(value).any())


def test_kl_matches_torch_and_is_inf_where_p_reaches_below_q():
    p_args = {"scale": np.array([1.0, 2.0, 0.5]), "alpha": np.array([2.0, 3.0, 1.5])}
    q_args = {"scale": np.array([0.5, 1.0, 1.0]), "alpha": np.array([1.0, 4.0, 2.0])}
    (kp, tp), (kq, tq) = pair("Pareto", p_args, "float64"), pair("Pareto", q_args, "float64")
    got = D.kl_divergence(kp, kq)
    assert_matches(got, torch.distributions.kl_divergence(tp, tq), "float64")
    assert got.numpy()[2] == np.inf


@pytest.mark.parametrize("bad", ["scale", "alpha"])
def test_nonpositive_parameters_raise_torchs_message(bad):
    """alpha is checked first by the base Exponential (as its rate), as in torch."""
    check_negated_parameter_refused("Pareto", ARGS, bad)
