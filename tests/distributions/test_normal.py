"""Normal, LogNormal and HalfNormal against torch.distributions."""

import numpy as np
import pytest
from distribution_helpers import DTYPES, Case, check_case_moments, check_family

rng = np.random.default_rng(0)
LOC, SCALE = rng.normal(size=3), rng.uniform(0.5, 2.0, (2, 1))
P = np.array([0.01, 0.3, 0.5, 0.9])[:, None, None]
CASES = [
    Case("Normal", {"loc": LOC, "scale": SCALE}, rng.normal(size=(2, 3)), ("log_prob", "cdf"), P),
    Case("Normal", {"loc": 0.5, "scale": 2.0}, np.array([-1.0, 0.0, 3.0]), ("log_prob", "cdf")),
    Case("LogNormal", {"loc": LOC, "scale": SCALE}, rng.uniform(0.1, 3, 3), ("log_prob", "cdf"), P),
    Case("HalfNormal", {"scale": SCALE}, rng.uniform(0, 3, 3), ("log_prob", "cdf"), P),
]
IDS = [f"{c.name}-{i}" for i, c in enumerate(CASES)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_match_torch_over_broadcast_and_scalar_params(case, dtype):
    check_family(case, dtype)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_sample_moments_match_torch(case):
    check_case_moments(case)
