"""Beta and Dirichlet against torch.distributions (samples from kael._sample_dirichlet)."""

import numpy as np
import pytest

import kael

CONC = np.array([[0.5, 0.7, 0.9], [1.5, 2.0, 4.0]])


def test_dirichlet_samples_lie_on_the_simplex():
    kael.manual_seed(2)
    draws = kael.distributions.Dirichlet(kael.tensor(CONC)).sample((50,)).numpy()
    np.testing.assert_allclose(draws.sum(-1), 1.0, rtol=1e-5)
    assert (draws >= 0).all()


def test_dirichlet_refuses_a_scalar_concentration():
    with pytest.raises(kael.ValueError, match="`concentration` parameter must be at least one"):
        kael.distributions.Dirichlet(kael.tensor(1.0))
