"""ContinuousBernoulli against torch.distributions: scores, moments and entropy on both sides
of the Taylor region about probs = 1/2, icdf-of-uniform samples and the refusals."""

import numpy as np
import pytest
import torch
from distribution_helpers import (
    DTYPES,
    assert_matches,
    check_moments,
    check_sample_shapes,
    check_scores,
    check_summaries,
    pair,
)

import kael
from kael.distributions.continuous_bernoulli import ContinuousBernoulli
from kael.distributions.exp_family import ExponentialFamily

# both sides of each edge of lims (0.499, 0.501), 1/2 itself, and near 0 and 1
PROBS = np.array([0.001, 0.3, 0.4989, 0.4995, 0.5, 0.5009, 0.5011, 0.9, 0.999])[:, None]
VALUE = np.array([0.0, 0.2, 0.5, 0.7, 1.0])
FORMS = {
    "probs": {"probs": PROBS},
    "logits": {"logits": np.log(PROBS / (1 - PROBS))},
    "scalar": {"probs": 0.3},
    "wide lims": {"probs": PROBS, "lims": (0.2, 0.8)},
}
SUMMARIES = ("mean", "variance", "stddev", "entropy")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", FORMS)
def test_scores_and_moments_match_torch_on_both_sides_of_the_taylor_region(form, dtype):
    kd, td = pair("ContinuousBernoulli", FORMS[form], dtype)
    if form == "scalar":
        dtype = "float32"  # a Python-number parameter takes the default dtype in both
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == "float32" else {"rtol": 1e-8, "atol": 1e-9}
    # just outside lims, cdf and icdf divide by 2 p - 1 ~ 2e-3: float32 keeps 3 digits fewer
    cdf_tol = {"rtol": 1e-3, "atol": 1e-4} if dtype == "float32" else tol
    check_summaries(kd, td, dtype, SUMMARIES, **tol)
    check_scores(kd, td, VALUE, dtype, ("log_prob",), **tol)
    check_scores(kd, td, VALUE, dtype, ("cdf", "icdf"), **cdf_tol)
    check_sample_shapes(kd, td)
    expanded, texpanded = kd.expand((2, *kd.batch_shape)), td.expand((2, *td.batch_shape))
    check_summaries(expanded, texpanded, dtype, SUMMARIES, **tol)
    check_scores(expanded, texpanded, expanded.sample().numpy(), dtype, ("log_prob",), **tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_log_normalizer_of_the_natural_param_matches_torch(dtype):
    kd, td = pair("ContinuousBernoulli", FORMS["logits"], dtype)
    assert isinstance(kd, ExponentialFamily)
    assert_matches(
        kd._log_normalizer(*kd._natural_params), td._log_normalizer(*td._natural_params), dtype
    )


def test_cdf_is_zero_below_and_one_above_the_unit_interval():
    kd, td = pair("ContinuousBernoulli", FORMS["probs"], "float64")
    kd._validate_args = td._validate_args = False
    check_scores(kd, td, np.array([-0.5, 1.5]), "float64", ("cdf",))
    np.testing.assert_array_equal(
        kd.cdf(kael.tensor([-0.5, 1.5], dtype=kael.float64)).numpy(), [[0, 1]] * 9
    )


@pytest.mark.parametrize("method", ["sample", "rsample"])
def test_sample_moments_match_torch(method):
    kd, td = pair("ContinuousBernoulli", FORMS["probs"], "float64")
    kd.sample = getattr(kd, method)
    check_moments(kd, td)


def test_samples_lie_in_the_unit_interval_in_the_params_dtype():
    kael.manual_seed(13)
    kd, _ = pair("ContinuousBernoulli", FORMS["probs"], "float32")
    draws = kd.rsample((100,))
    assert draws.dtype == kael.float32 and bool(kd.support.check(draws).all())


@pytest.mark.parametrize(
    "args, match",
    [
        ({}, "Either `probs` or `logits` must be specified, but not both."),
        ({"probs": 0.3, "logits": 0.1}, "Either `probs` or `logits`"),
        ({"probs": 1.5, "validate_args": True}, "The parameter probs has invalid values"),
        ({"probs": -0.1, "validate_args": False}, "The parameter probs has invalid values"),
    ],
)
def test_bad_parameters_are_refused_as_torch(args, match):
    with pytest.raises(kael.ValueError, match=match):
        ContinuousBernoulli(**args)


def test_out_of_range_probs_are_clamped_without_validate_args_as_torch():
    ours, theirs = ContinuousBernoulli(1.5), torch.distributions.ContinuousBernoulli(1.5)
    assert_matches(ours.probs, theirs.probs)
    assert_matches(ours.mean, theirs.mean)


@pytest.mark.parametrize("value, ok", [(0.0, True), (1.0, True), (-0.01, False), (1.01, False)])
def test_log_prob_refuses_values_off_the_unit_interval(value, ok):
    d = ContinuousBernoulli(kael.tensor([0.3]))
    if ok:
        assert np.isfinite(d.log_prob(kael.tensor([value])).numpy()).all()
    else:
        with pytest.raises(
            kael.ValueError, match=r"Expected value argument .*\(Interval\(lower_bound=0.0"
        ):
            d.log_prob(kael.tensor([value]))
