"""HalfCauchy against torch.distributions.HalfCauchy."""

import re

import numpy as np
import pytest
import torch
from distribution_helpers import DTYPES, Case, assert_matches, check_family, lib_args, pair

import kael
import kael.distributions as D

rng = np.random.default_rng(53)
ARGS = {"scale": rng.uniform(0.5, 2, (2, 3))}
QUANTILES = np.array([0.0, 0.3, 0.9])[:, None, None]
CASES = [
    Case("HalfCauchy", ARGS, np.array([0.0, 0.5, 3.0]), ("log_prob", "cdf"), QUANTILES),
    Case("HalfCauchy", {"scale": 1.5}, np.array([0.0, 1.0, 9.0]), ("log_prob", "cdf")),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=["batched", "scalar"])
def test_values_match_torch(case, dtype):
    check_family(case, dtype)


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
    args = {"scale": -ARGS["scale"]}
    with pytest.raises(ValueError) as error:
        torch.distributions.HalfCauchy(**lib_args(torch, args, "float32"), validate_args=True)
    message = re.escape(str(error.value).split(", but found")[0])
    with pytest.raises(kael.ValueError, match=message):
        D.HalfCauchy(**lib_args(kael, args, "float32"), validate_args=True)
    assert D.HalfCauchy(**lib_args(kael, ARGS, "float32"), validate_args=True).batch_shape == (2, 3)
