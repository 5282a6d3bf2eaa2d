"""HalfCauchy against torch.distributions.HalfCauchy (summaries, scores and shapes:
the generic checks of test_families)."""

import numpy as np
import torch
from distribution_helpers import assert_matches, check_negated_parameter_refused, pair

import kael

rng = np.random.default_rng(53)
ARGS = {"scale": rng.uniform(0.5, 2, (2, 3))}


def test_log_prob_is_minus_inf_below_zero_and_takes_a_number_without_validation():
    kd, td = pair("HalfCauchy", ARGS, "float64", validate_args=False)
    assert_matches(
        kd.log_prob(kael.tensor([-1.0, 1.0, 2.0])), td.log_prob(torch.tensor([-1.0, 1.0, 2.0]))
    )
    assert_matches(kd.log_prob(kael.tensor(-0.5)), td.log_prob(torch.tensor(-0.5)))


def test_samples_lie_in_the_support_with_the_median_at_the_scale():
    kd, _ = pair("HalfCauchy", ARGS, "float64")
    kael.manual_seed(5)
    draws = kd.sample((100_000,)).numpy()
    assert draws.shape == (100_000, 2, 3) and (draws >= 0).all()
    # P(X <= scale) = 1/2; its standard error over n draws is 1 / (2 sqrt(n))
    below = (draws <= ARGS["scale"]).mean(0)
    np.testing.assert_array_less(np.abs(below - 0.5), 5 / (2 * np.sqrt(100_000)))


def test_nonpositive_scale_raises_torchs_message():
    check_negated_parameter_refused("HalfCauchy", ARGS, "scale")
