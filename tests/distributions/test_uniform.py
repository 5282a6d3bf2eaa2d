"""Uniform against torch.distributions."""

import numpy as np
import pytest

import kael
import kael.distributions as D


def test_log_prob_is_minus_inf_outside_without_validation():
    d = D.Uniform(0.0, 1.0, validate_args=False)
    got = d.log_prob(kael.tensor([-0.5, 0.5, 1.0])).numpy()
    np.testing.assert_array_equal(got, [-np.inf, 0.0, -np.inf])


@pytest.mark.parametrize("low, high", [(1.0, 1.0), (2.0, 1.0)])
def test_low_not_below_high_is_refused(low, high):
    with pytest.raises(kael.ValueError, match="Expected parameter low .* LessThan"):
        D.Uniform(low, high)
