"""Uniform against torch.distributions."""

import numpy as np
import pytest
from distribution_helpers import DTYPES, Case, check_case_moments, check_family

import kael
import kael.distributions as D

rng = np.random.default_rng(2)
LOW = rng.normal(size=3)
HIGH = LOW + rng.uniform(0.5, 2.0, (2, 3))
CASES = [
    Case(
        "Uniform",
        {"low": LOW, "high": HIGH},
        LOW + 0.25,
        ("log_prob", "cdf"),
        np.array([0.0, 0.3, 0.9])[:, None, None],
    ),  # fmt: skip
    Case("Uniform", {"low": -1.0, "high": 2.0}, np.array([-1.0, 0.0, 1.5]), ("log_prob", "cdf")),
]
IDS = [f"Uniform-{i}" for i in range(len(CASES))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_match_torch_over_broadcast_and_scalar_params(case, dtype):
    check_family(case, dtype)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_sample_moments_match_torch(case):
    check_case_moments(case)


def test_log_prob_is_minus_inf_outside_without_validation():
    d = D.Uniform(0.0, 1.0, validate_args=False)
    got = d.log_prob(kael.tensor([-0.5, 0.5, 1.0])).numpy()
    np.testing.assert_array_equal(got, [-np.inf, 0.0, -np.inf])


@pytest.mark.parametrize("low, high", [(1.0, 1.0), (2.0, 1.0)])
def test_low_not_below_high_is_refused(low, high):
    with pytest.raises(kael.ValueError, match="Expected parameter low .* LessThan"):
        D.Uniform(low, high)
