"""FisherSnedecor against torch.distributions.FisherSnedecor."""

import re

import numpy as np
import pytest
import torch
from distribution_helpers import DTYPES, Case, check_family, check_moments, lib_args, pair

import kael
import kael.distributions as D

rng = np.random.default_rng(56)
# df1 below and above 2 (mode nan), df2 below 2, below 4 and above (mean, variance nan)
ARGS = {"df1": np.array([1.5, 3.0, 7.0]), "df2": np.array([[1.5], [3.0], [9.0]])}
NO_ENTROPY = ("entropy",)  # torch has none
CASES = [
    Case("FisherSnedecor", ARGS, rng.uniform(0.1, 4, 3), skip=NO_ENTROPY),
    Case("FisherSnedecor", {"df1": 5.0, "df2": 12.0}, np.array([0.2, 1.0, 5.0]), skip=NO_ENTROPY),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=["broadcast", "scalar"])
def test_values_match_torch(case, dtype):
    check_family(case, dtype)


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
    """As torch's, the error comes from the Gamma each df builds."""
    args = {**ARGS, bad: -ARGS[bad]}
    with pytest.raises(ValueError) as error:
        torch.distributions.FisherSnedecor(**lib_args(torch, args, "float32"), validate_args=True)
    message = re.escape(str(error.value).split(", but found")[0].replace("torch.", "kael."))
    with pytest.raises(kael.ValueError, match=message):
        D.FisherSnedecor(**lib_args(kael, args, "float32"), validate_args=True)
    assert D.FisherSnedecor(**lib_args(kael, ARGS, "float32"), validate_args=True).batch_shape == (
        3,
        3,
    )
