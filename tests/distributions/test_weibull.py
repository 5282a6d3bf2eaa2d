"""Weibull against torch.distributions.Weibull (summaries, scores and shapes:
the generic checks of test_families)."""

import numpy as np
import pytest
from distribution_helpers import check_moments, check_negated_parameter_refused, pair

rng = np.random.default_rng(51)
ARGS = {"scale": rng.uniform(0.5, 2, 3), "concentration": rng.uniform(0.5, 3, (2, 1))}


def test_sample_moments_over_100k_draws_match_torch():
    kd, td = pair("Weibull", ARGS, "float64")
    check_moments(kd, td, n=100_000)
    assert bool((kd.sample((1000,)) > 0).all())


def test_expand_keeps_the_shape_parameters_batched():
    kd, _ = pair("Weibull", ARGS, "float64")
    expanded = kd.expand((4, 2, 3))
    assert tuple(expanded.concentration_reciprocal.shape) == (4, 2, 3)
    assert tuple(expanded.base_dist.batch_shape) == (4, 2, 3)


@pytest.mark.parametrize("bad", ["scale", "concentration"])
def test_nonpositive_parameters_raise_torchs_message(bad):
    check_negated_parameter_refused("Weibull", ARGS, bad)
