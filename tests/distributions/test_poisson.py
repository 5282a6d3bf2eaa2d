"""Poisson against torch.distributions."""

import numpy as np
import pytest
from distribution_helpers import DTYPES, Case, check_case_moments, check_family

import kael

rng = np.random.default_rng(5)
CASES = [
    Case(
        "Poisson",
        {"rate": rng.uniform(0.5, 8.0, (2, 3))},
        np.array([0.0, 1.0, 6.0]),
        skip=("entropy",),
    ),  # fmt: skip
    Case("Poisson", {"rate": 3.0}, np.array([0.0, 2.0, 9.0]), skip=("entropy",)),
]
IDS = [f"Poisson-{i}" for i in range(len(CASES))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_match_torch_over_broadcast_and_scalar_params(case, dtype):
    check_family(case, dtype)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_sample_moments_match_torch(case):
    check_case_moments(case)


def test_entropy_is_not_implemented_as_in_torch():
    with pytest.raises(NotImplementedError):
        kael.distributions.Poisson(2.0).entropy()
