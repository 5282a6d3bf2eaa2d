"""Bernoulli, Geometric and Binomial against torch.distributions."""

import numpy as np
import pytest
from distribution_helpers import pair

import kael

PROBS = np.random.default_rng(4).uniform(0.1, 0.9, (2, 3))


@pytest.mark.parametrize(
    "name, args",
    [("Bernoulli", {"probs": PROBS}), ("Binomial", {"total_count": 4, "probs": PROBS})],
)
@pytest.mark.parametrize("expand", [True, False])
def test_enumerate_support_matches_torch(name, args, expand):
    kd, td = pair(name, args)
    got, want = kd.enumerate_support(expand), td.enumerate_support(expand)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_bernoulli_mode_is_nan_at_one_half():
    kd, td = pair("Bernoulli", {"probs": np.array([0.2, 0.5, 0.7])})
    np.testing.assert_array_equal(kd.mode.numpy(), td.mode.numpy())


@pytest.mark.parametrize("what", ["entropy", "enumerate_support"])
def test_binomial_with_mixed_total_counts_refuses_enumeration(what):
    d = kael.distributions.Binomial(kael.tensor([2.0, 3.0]), probs=kael.tensor([0.5, 0.5]))
    with pytest.raises(NotImplementedError, match=f"Inhomogeneous total count .*`{what}`"):
        getattr(d, what)()


def test_geometric_refuses_zero_probability():
    with pytest.raises(kael.ValueError, match="Expected parameter probs .* to be positive"):
        kael.distributions.Geometric(kael.tensor([0.0, 0.5]))
