"""StudentT against torch.distributions, where it differs from the generic checks of
test_families: its mean and variance on both sides of df = 1 and df = 2."""

import numpy as np
import pytest
from distribution_helpers import DTYPES, check_summaries, pair


@pytest.mark.parametrize("dtype", DTYPES)
def test_moments_on_both_sides_of_df_one_and_two_match_torch(dtype):
    df = np.array([0.99, 1.0, 1.01, 1.99, 2.0, 2.01])
    kd, td = pair("StudentT", {"df": df, "scale": np.full(6, 1.5)}, dtype)
    check_summaries(kd, td, dtype, ("mean", "variance", "stddev"))
