"""Kumaraswamy against torch.distributions.Kumaraswamy (summaries, scores and shapes:
the generic checks of test_families)."""

import numpy as np
import pytest
from distribution_helpers import check_moments, check_negated_parameter_refused, pair

rng = np.random.default_rng(54)
# the first column below 1: the mode is nan there, as torch's
ARGS = {"concentration1": np.array([0.7, 2.0, 3.5]), "concentration0": rng.uniform(1.2, 3, (2, 1))}


def test_sample_moments_over_100k_draws_match_torch():
    kd, td = pair("Kumaraswamy", ARGS, "float64")
    check_moments(kd, td, n=100_000)
    draws = kd.sample((1000,))
    assert bool(((draws >= 0) & (draws <= 1)).all())


@pytest.mark.parametrize("bad", ["concentration1", "concentration0"])
def test_nonpositive_parameters_raise_torchs_message(bad):
    check_negated_parameter_refused("Kumaraswamy", ARGS, bad)
