"""Gamma and Chi2 against torch.distributions, where they differ from the generic checks
of test_families: log_prob's value conversion and its edge at 0."""

import numpy as np
import pytest
import torch
from distribution_helpers import DTYPES, assert_matches, check_scores, pair

import kael

ARGS = {"Gamma": {"concentration": np.array([0.5, 1.0, 3.0]), "rate": 2.0}, "Chi2": {"df": 3.0}}


@pytest.mark.parametrize("name", ARGS)
def test_log_prob_takes_a_number_and_a_wider_value_in_the_rates_dtype(name):
    kd, td = pair(name, ARGS[name], "float32")
    assert_matches(kd.log_prob(1.5), td.log_prob(1.5))
    wide = np.array([0.5, 2.0, 4.0])
    got = kd.log_prob(kael.tensor(wide, dtype=kael.float64))
    assert_matches(got, td.log_prob(torch.tensor(wide, dtype=torch.float64)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_log_prob_at_zero_is_inf_zero_or_minus_inf_by_concentration(dtype):
    kd, td = pair("Gamma", ARGS["Gamma"], dtype)
    check_scores(kd, td, np.zeros(3), dtype, ("log_prob", "cdf"))


def test_chi2_of_integer_degrees_of_freedom_is_float_as_torch():
    ours = kael.distributions.Chi2(kael.tensor([1, 2, 5]))
    theirs = torch.distributions.Chi2(torch.tensor([1, 2, 5]))
    for name in ("mean", "variance", "df"):
        got, want = getattr(ours, name), getattr(theirs, name)
        assert str(got.dtype) == str(want.dtype)[6:]
        np.testing.assert_allclose(got.numpy(), want.numpy())
