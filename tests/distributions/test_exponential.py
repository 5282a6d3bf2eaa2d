"""Exponential against torch.distributions."""

import numpy as np
import pytest
from distribution_helpers import DTYPES, Case, check_case_moments, check_family

rng = np.random.default_rng(3)
CASES = [
    Case(
        "Exponential",
        {"rate": rng.uniform(0.5, 2.0, (2, 3))},
        rng.uniform(0, 3, 3),
        ("log_prob", "cdf"),
        np.array([0.0, 0.3, 0.9])[:, None, None],
    ),  # fmt: skip
    Case("Exponential", {"rate": 1.5}, np.array([0.0, 1.0, 4.0]), ("log_prob", "cdf")),
]
IDS = [f"Exponential-{i}" for i in range(len(CASES))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_match_torch_over_broadcast_and_scalar_params(case, dtype):
    check_family(case, dtype)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_sample_moments_match_torch(case):
    check_case_moments(case)
