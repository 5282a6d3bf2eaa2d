"""Gamma and Chi2 against torch.distributions (samples from kael._standard_gamma)."""

import numpy as np
import pytest
from distribution_helpers import DTYPES, Case, check_case_moments, check_family

rng = np.random.default_rng(8)
CONC, RATE = rng.uniform(0.5, 4.0, (2, 3)), rng.uniform(0.5, 2.0, 3)
CASES = [
    Case(
        "Gamma", {"concentration": CONC, "rate": RATE}, rng.uniform(0.1, 4, 3), ("log_prob", "cdf")
    ),  # fmt: skip
    Case("Gamma", {"concentration": 2.0, "rate": 0.5}, np.array([0.5, 1.0, 9.0])),
    Case("Chi2", {"df": CONC * 2}, rng.uniform(0.1, 4, 3)),
]
IDS = [f"{c.name}-{i}" for i, c in enumerate(CASES)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_match_torch_over_broadcast_and_scalar_params(case, dtype):
    check_family(case, dtype)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_sample_moments_match_torch(case):
    check_case_moments(case)
