"""Exponential against torch.distributions, where it differs from the generic checks of
test_families: values at the ends of the support and of (0, 1)."""

import numpy as np
import pytest
from distribution_helpers import DTYPES, check_scores, pair


@pytest.mark.parametrize("dtype", DTYPES)
def test_scores_at_the_ends_match_torch(dtype):
    kd, td = pair("Exponential", {"rate": np.array([0.5, 3.0])}, dtype, validate_args=False)
    check_scores(kd, td, np.array([-1.0, 0.0, np.inf])[:, None], dtype, ("log_prob", "cdf"))
    check_scores(kd, td, np.array([0.0, 1.0])[:, None], dtype, ("icdf",))
