"""Beta and Dirichlet against torch.distributions (samples from kael._sample_dirichlet)."""

import numpy as np
import pytest
from distribution_helpers import DTYPES, Case, check_case_moments, check_family

import kael

rng = np.random.default_rng(9)
C1, C0 = rng.uniform(0.5, 4.0, (2, 3)), rng.uniform(0.5, 4.0, 3)
CONC = np.array([[0.5, 0.7, 0.9], [1.5, 2.0, 4.0]])  # the first all below 1: a vertex mode
CASES = [
    Case("Beta", {"concentration1": C1, "concentration0": C0}, rng.uniform(0.05, 0.95, 3)),
    Case("Beta", {"concentration1": 2.0, "concentration0": 3.0}, np.array([0.1, 0.5, 0.9])),
    Case("Dirichlet", {"concentration": CONC}, np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])),
]
IDS = [f"{c.name}-{i}" for i, c in enumerate(CASES)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_match_torch_over_broadcast_and_scalar_params(case, dtype):
    check_family(case, dtype)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_sample_moments_match_torch(case):
    check_case_moments(case)


def test_dirichlet_samples_lie_on_the_simplex():
    kael.manual_seed(2)
    draws = kael.distributions.Dirichlet(kael.tensor(CONC)).sample((50,)).numpy()
    np.testing.assert_allclose(draws.sum(-1), 1.0, rtol=1e-5)
    assert (draws >= 0).all()


def test_dirichlet_refuses_a_scalar_concentration():
    with pytest.raises(kael.ValueError, match="`concentration` parameter must be at least one"):
        kael.distributions.Dirichlet(kael.tensor(1.0))
