"""Pareto against torch.distributions.Pareto (and its KL)."""

import re

import numpy as np
import pytest
import torch
from distribution_helpers import (
    DTYPES,
    Case,
    assert_matches,
    check_family,
    check_moments,
    lib_args,
    pair,
)

import kael
import kael.distributions as D

rng = np.random.default_rng(52)
# alpha below 1, below 2 and above: mean and variance inf where torch's are
ARGS = {"scale": rng.uniform(0.5, 2, 3), "alpha": np.array([[0.5], [1.5], [5.0]])}
QUANTILES = np.array([0.01, 0.5, 0.9])[:, None, None]
CASES = [
    Case("Pareto", ARGS, rng.uniform(2, 4, 3), ("log_prob", "cdf"), QUANTILES),
    Case("Pareto", {"scale": 1.0, "alpha": 3.0}, np.array([1.0, 2.0, 9.0]), ("log_prob", "cdf")),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=["broadcast", "scalar"])
def test_values_match_torch(case, dtype):
    check_family(case, dtype)


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


def _torch_message(build) -> str:
    """torch's message for a bad parameter, up to its values, as kael words it."""
    with pytest.raises(ValueError) as error:
        build(torch.distributions, torch)
    return re.escape(str(error.value).split(", but found")[0].replace("torch.", "kael."))


@pytest.mark.parametrize("bad", ["scale", "alpha"])
def test_nonpositive_parameters_raise_torchs_message(bad):
    """alpha is checked first by the base Exponential (as its rate), as in torch."""
    args = {**ARGS, bad: -ARGS[bad]}

    def build(ns, lib):
        return ns.Pareto(**lib_args(lib, args, "float32"), validate_args=True)

    with pytest.raises(kael.ValueError, match=_torch_message(build)):
        build(D, kael)
    assert D.Pareto(**lib_args(kael, ARGS, "float32"), validate_args=True).batch_shape == (3, 3)
