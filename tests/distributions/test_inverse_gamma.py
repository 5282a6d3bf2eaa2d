"""InverseGamma against torch.distributions.InverseGamma (summaries, scores and shapes:
the generic checks of test_families)."""

import numpy as np
import pytest
from distribution_helpers import check_moments, check_negated_parameter_refused, pair

import kael

rng = np.random.default_rng(55)
# concentrations below 1, below 2 and above: mean and variance inf where torch's are
ARGS = {"concentration": np.array([0.5, 1.5, 4.0]), "rate": rng.uniform(0.5, 2, (2, 1))}


def test_sample_moments_over_100k_draws_match_torch():
    args = {"concentration": np.array([9.0, 12.0]), "rate": np.array([0.5, 3.0])}
    kd, td = pair("InverseGamma", args, "float64")
    check_moments(kd, td, n=100_000)
    assert bool((kd.sample((1000,)) > 0).all())


def test_icdf_is_not_implemented_as_torchs():
    kd, _ = pair("InverseGamma", ARGS, "float64")
    with pytest.raises(NotImplementedError):
        kd.icdf(kael.tensor(0.5, dtype=kael.float64))


@pytest.mark.parametrize("bad", ["concentration", "rate"])
def test_nonpositive_parameters_raise_torchs_message_from_the_base_gamma(bad):
    check_negated_parameter_refused("InverseGamma", ARGS, bad)
