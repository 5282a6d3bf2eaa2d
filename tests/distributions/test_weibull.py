"""Weibull against torch.distributions.Weibull."""

import re

import numpy as np
import pytest
import torch
from distribution_helpers import DTYPES, Case, check_family, check_moments, lib_args, pair

import kael
import kael.distributions as D

rng = np.random.default_rng(51)
ARGS = {"scale": rng.uniform(0.5, 2, 3), "concentration": rng.uniform(0.5, 3, (2, 1))}
QUANTILES = np.array([0.01, 0.5, 0.9])[:, None, None]
CASES = [
    Case("Weibull", ARGS, rng.uniform(0.1, 3, 3), ("log_prob", "cdf"), QUANTILES),
    Case("Weibull", {"scale": 1.5, "concentration": 2.0}, np.array([0.2, 1.0, 4.0])),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=["broadcast", "scalar"])
def test_values_match_torch(case, dtype):
    check_family(case, dtype)


def test_sample_moments_over_100k_draws_match_torch():
    kd, td = pair("Weibull", ARGS, "float64")
    check_moments(kd, td, n=100_000)
    assert bool((kd.sample((1000,)) > 0).all())


def test_expand_keeps_the_shape_parameters_batched():
    kd, _ = pair("Weibull", ARGS, "float64")
    expanded = kd.expand((4, 2, 3))
    assert tuple(expanded.concentration_reciprocal.shape) == (4, 2, 3)
    assert tuple(expanded.base_dist.batch_shape) == (4, 2, 3)


def _torch_message(build) -> str:
    """torch's message for a bad parameter, up to its values, as kael words it."""
    with pytest.raises(ValueError) as error:
        build(torch.distributions, torch)
    return re.escape(str(error.value).split(", but found")[0].replace("torch.", "kael."))


@pytest.mark.parametrize("bad", ["scale", "concentration"])
def test_nonpositive_parameters_raise_torchs_message(bad):
    args = {**ARGS, bad: -ARGS[bad]}

    def build(ns, lib):
        return ns.Weibull(**lib_args(lib, args, "float32"), validate_args=True)

    with pytest.raises(kael.ValueError, match=_torch_message(build)):
        build(D, kael)
    assert D.Weibull(**lib_args(kael, ARGS, "float32"), validate_args=True).batch_shape == (2, 3)
