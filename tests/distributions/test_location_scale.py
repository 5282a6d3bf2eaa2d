"""Laplace, Cauchy and Gumbel against torch.distributions."""

import numpy as np
import pytest
from distribution_helpers import DTYPES, Case, check_case_moments, check_family

rng = np.random.default_rng(1)
LOC, SCALE = rng.normal(size=3), rng.uniform(0.5, 2.0, (2, 1))
P = np.array([0.01, 0.3, 0.5, 0.9])[:, None, None]
VALUE = rng.normal(size=(2, 3))
CASES = [
    Case("Laplace", {"loc": LOC, "scale": SCALE}, VALUE, ("log_prob", "cdf"), P),
    Case("Laplace", {"loc": 0.0, "scale": 1.5}, VALUE, ("log_prob", "cdf")),
    Case("Cauchy", {"loc": LOC, "scale": SCALE}, VALUE, ("log_prob", "cdf"), P),
    Case("Gumbel", {"loc": LOC, "scale": SCALE}, VALUE, ("log_prob", "cdf"), P),
]
IDS = [f"{c.name}-{i}" for i, c in enumerate(CASES)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_match_torch_over_broadcast_and_scalar_params(case, dtype):
    check_family(case, dtype)


@pytest.mark.parametrize("case", [c for c in CASES if c.name != "Cauchy"], ids=str)
def test_sample_moments_match_torch(case):
    check_case_moments(case)


def test_cauchy_samples_have_its_quartiles():
    """Cauchy has no moments: its sample quartiles are loc -+ scale instead."""
    import kael

    kael.manual_seed(3)
    draws = kael.distributions.Cauchy(1.0, 2.0).sample((4000,)).numpy()
    np.testing.assert_allclose(np.quantile(draws, [0.25, 0.75]), [-1.0, 3.0], atol=0.25)
