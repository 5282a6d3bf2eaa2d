"""StudentT against torch.distributions."""

import numpy as np
import pytest
from distribution_helpers import DTYPES, Case, check_case_moments, check_family

rng = np.random.default_rng(10)
DF = np.array([[0.8, 1.5, 3.0], [5.0, 9.0, 30.0]])  # mean nan, variance inf, finite
CASES = [
    Case(
        "StudentT",
        {"df": DF, "loc": rng.normal(size=3), "scale": rng.uniform(0.5, 2, 3)},
        rng.normal(size=3),
    ),  # fmt: skip
    Case("StudentT", {"df": 4.0}, np.array([-2.0, 0.0, 1.0])),
]
IDS = ["StudentT-0", "StudentT-1"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_match_torch_over_broadcast_and_scalar_params(case, dtype):
    check_family(case, dtype)


def test_sample_moments_match_torch():
    check_case_moments(Case("StudentT", {"df": np.array([6.0, 12.0]), "loc": np.array([1.0, -2])}))
