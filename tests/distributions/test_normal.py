"""Normal, LogNormal and HalfNormal against torch.distributions, where they differ from the
generic checks of test_families: values at the ends of the support and of (0, 1)."""

import numpy as np
import pytest
import torch
from distribution_helpers import DTYPES, assert_matches, check_scores, pair

import kael

EDGES = np.array([-np.inf, -1.0, 0.0, 1.0, np.inf])[:, None]
ARGS = {"loc": np.array([0.0, 1.0]), "scale": np.array([0.5, 2.0])}
SCALE = {"scale": ARGS["scale"]}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "name, args", [("Normal", ARGS), ("LogNormal", ARGS), ("HalfNormal", SCALE)]
)
def test_scores_at_the_ends_match_torch(name, args, dtype):
    kd, td = pair(name, args, dtype, validate_args=False)
    check_scores(kd, td, EDGES, dtype, ("log_prob", "cdf"))
    check_scores(kd, td, np.array([0.0, 1.0])[:, None], dtype, ("icdf",))


def test_log_prob_standardizes_first_so_a_tiny_scale_stays_finite():
    """Deviation: torch divides by scale**2, which underflows in float32 (nan); kael gives
    the float64 value."""
    args = {"loc": np.zeros(2), "scale": np.array([1e-25, 1.0])}
    kd, td = pair("Normal", args, "float32")
    value = np.array([0.0, 1e-25])
    assert np.isnan(td.log_prob(torch.tensor(value, dtype=torch.float32))[0].item())
    _, wide = pair("Normal", args, "float64")
    want = wide.log_prob(torch.tensor(value)).float()
    assert_matches(kd.log_prob(kael.tensor(value, dtype=kael.float32)), want)
