"""FisherSnedecor against torch.distributions.FisherSnedecor (summaries, scores and shapes:
the generic checks of test_families)."""

import numpy as np
import pytest
from distribution_helpers import check_moments, check_negated_parameter_refused, pair

rng = np.random.default_rng(56)
# df1 below and above 2 (mode nan), df2 below 2, below 4 and above (mean, variance nan)
ARGS = {"df1": np.array([1.5, 3.0, 7.0]), "df2": np.array([[1.5], [3.0], [9.0]])}


def test_sample_moments_over_100k_draws_match_torch():
    args = {"df1": np.array([3.0, 10.0]), "df2": np.array([20.0, 30.0])}
    kd, td = pair("FisherSnedecor", args, "float64")
    check_moments(kd, td, n=100_000)
    assert bool((kd.sample((1000,)) > 0).all())


def test_expand_expands_both_gammas():
    kd, _ = pair("FisherSnedecor", ARGS, "float64")
    expanded = kd.expand((2, 3, 3))
    assert expanded._gamma1.batch_shape == expanded._gamma2.batch_shape == (2, 3, 3)
    assert tuple(expanded.sample((4,)).shape) == (4, 2, 3, 3)


@pytest.mark.parametrize("bad", ["df1", "df2"])
def test_nonpositive_degrees_of_freedom_raise_torchs_message(bad):
    """As torch"s, the error comes from the Gamma each df builds."""
    check_negated_parameter_refused("FisherSnedecor", ARGS, bad)
