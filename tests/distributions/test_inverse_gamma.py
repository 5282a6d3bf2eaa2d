"""InverseGamma against torch.distributions.InverseGamma."""

import re

import numpy as np
import pytest
import torch
from distribution_helpers import DTYPES, Case, check_family, check_moments, lib_args, pair

import kael
import kael.distributions as D

rng = np.random.default_rng(55)
# concentrations below 1, below 2 and above: mean and variance inf where torch's are
ARGS = {"concentration": np.array([0.5, 1.5, 4.0]), "rate": rng.uniform(0.5, 2, (2, 1))}
CASES = [
    Case("InverseGamma", ARGS, rng.uniform(0.1, 4, 3), ("log_prob", "cdf")),
    Case("InverseGamma", {"concentration": 3.0, "rate": 2.0}, np.array([0.2, 1.0, 5.0])),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=["broadcast", "scalar"])
def test_values_match_torch(case, dtype):
    check_family(case, dtype)


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
    args = {**ARGS, bad: -ARGS[bad]}
    with pytest.raises(ValueError) as error:
        torch.distributions.InverseGamma(**lib_args(torch, args, "float32"), validate_args=True)
    message = re.escape(str(error.value).split(", but found")[0].replace("torch.", "kael."))
    with pytest.raises(kael.ValueError, match=message):
        D.InverseGamma(**lib_args(kael, args, "float32"), validate_args=True)
    assert D.InverseGamma(**lib_args(kael, ARGS, "float32"), validate_args=True).batch_shape == (
        2,
        3,
    )
