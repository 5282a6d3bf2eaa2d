"""GeneralizedPareto against torch.distributions.GeneralizedPareto (float32 scores only:
torch's log_prob fails on float64 parameters)."""

import numpy as np
import pytest
import torch
from distribution_helpers import (
    Case,
    assert_matches,
    check_family,
    check_moments,
    check_negated_parameter_refused,
    pair,
)

import kael
import kael.distributions as D

rng = np.random.default_rng(58)
# negative, zero (the exponential limit), small and large concentrations
ARGS = {
    "loc": rng.normal(size=3),
    "scale": rng.uniform(0.5, 2, 3),
    "concentration": np.array([[-0.3], [0.0], [0.3], [0.8]]),
}
VALUE = ARGS["loc"] + np.array([0.1, 0.5, 1.2])
QUANTILES = np.array([0.01, 0.5, 0.9])[:, None, None]
CASES = [
    Case("GeneralizedPareto", ARGS, VALUE, ("log_prob", "cdf"), QUANTILES),
    Case(
        "GeneralizedPareto",
        {"loc": 0.0, "scale": 1.0, "concentration": 0.2},
        np.array([0.0, 1.0, 5.0]),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=["broadcast", "scalar"])
def test_values_match_torch(case):
    check_family(case, "float32")


def test_log_survival_and_log_cdf_match_torch():
    kd, td = pair("GeneralizedPareto", ARGS)
    value = np.float32(VALUE)
    for name in ("log_survival_function", "log_cdf"):
        assert_matches(
            getattr(kd, name)(kael.tensor(value)), getattr(td, name)(torch.tensor(value))
        )


def test_support_is_bounded_above_for_negative_concentration_as_torchs():
    kd, td = pair("GeneralizedPareto", ARGS)
    assert_matches(kd.support.upper_bound, td.support.upper_bound)
    assert_matches(kd.support.lower_bound, td.support.lower_bound)


def test_sample_moments_over_100k_draws_match_torch():
    args = {**ARGS, "concentration": np.array([[-0.3], [0.0], [0.15]])}
    kd, td = pair("GeneralizedPareto", args, "float64")
    check_moments(kd, td, n=100_000)
    draws = kd.sample((1000,))
    assert bool(kd.support.check(draws).all())


def test_nonpositive_scale_raises_torchs_message():
    check_negated_parameter_refused("GeneralizedPareto", ARGS, "scale")


def test_value_outside_the_support_is_refused():
    d = D.GeneralizedPareto(0.0, 1.0, -0.5, validate_args=True)
    with pytest.raises(kael.ValueError, match="to be within the support"):
        d.log_prob(kael.tensor([2.5]))
    assert_matches(
        d.log_prob(kael.tensor([1.5])),
        torch.distributions.GeneralizedPareto(0.0, 1.0, -0.5).log_prob(torch.tensor([1.5])),
    )
