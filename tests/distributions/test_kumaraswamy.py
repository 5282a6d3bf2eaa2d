"""Kumaraswamy against torch.distributions.Kumaraswamy."""

import re

import numpy as np
import pytest
import torch
from distribution_helpers import DTYPES, Case, check_family, check_moments, lib_args, pair

import kael
import kael.distributions as D

rng = np.random.default_rng(54)
# the first column below 1: the mode is nan there, as torch's
ARGS = {"concentration1": np.array([0.7, 2.0, 3.5]), "concentration0": rng.uniform(1.2, 3, (2, 1))}
QUANTILES = np.array([0.01, 0.5, 0.9])[:, None, None]
CASES = [
    Case("Kumaraswamy", ARGS, rng.uniform(0.05, 0.95, 3), ("log_prob", "cdf"), QUANTILES),
    Case("Kumaraswamy", {"concentration1": 2.0, "concentration0": 5.0}, np.array([0.1, 0.5, 0.9])),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=["broadcast", "scalar"])
def test_values_match_torch(case, dtype):
    check_family(case, dtype)


def test_sample_moments_over_100k_draws_match_torch():
    kd, td = pair("Kumaraswamy", ARGS, "float64")
    check_moments(kd, td, n=100_000)
    draws = kd.sample((1000,))
    assert bool(((draws >= 0) & (draws <= 1)).all())


@pytest.mark.parametrize("bad", ["concentration1", "concentration0"])
def test_nonpositive_parameters_raise_torchs_message(bad):
    args = {**ARGS, bad: -ARGS[bad]}
    with pytest.raises(ValueError) as error:
        torch.distributions.Kumaraswamy(**lib_args(torch, args, "float32"), validate_args=True)
    message = re.escape(str(error.value).split(", but found")[0].replace("torch.", "kael."))
    with pytest.raises(kael.ValueError, match=message):
        D.Kumaraswamy(**lib_args(kael, args, "float32"), validate_args=True)
    assert D.Kumaraswamy(**lib_args(kael, ARGS, "float32"), validate_args=True).batch_shape == (
        2,
        3,
    )
