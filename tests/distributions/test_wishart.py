"""Wishart against torch.distributions, for each way of giving the scale matrix: log_prob,
entropy, moments, the exponential-family normalizer, Bartlett samples and the refusals."""

import re

import numpy as np
import pytest
from distribution_helpers import (
    DTYPES,
    assert_matches,
    check_moments,
    check_scores,
    check_summaries,
    pair,
)

import kael
from kael.distributions.exp_family import ExponentialFamily
from kael.distributions.wishart import Wishart

rng = np.random.default_rng(22)
_A = rng.normal(size=(2, 1, 3, 3))
COV = _A @ _A.swapaxes(-1, -2) + np.eye(3)  # batch (2, 1)
DF = np.array([2.5, 4.0, 9.0])  # batch (3,): with COV, (2, 3); 2.5 and 4 give nan modes
FORMS = {
    "covariance_matrix": COV,
    "precision_matrix": np.linalg.inv(COV),
    "scale_tril": np.linalg.cholesky(COV),
}
VALUE = (lambda b: b @ b.swapaxes(-1, -2) + 0.5 * np.eye(3))(rng.normal(size=(4, 1, 1, 3, 3)))
DERIVED = ("covariance_matrix", "precision_matrix", "scale_tril")


@pytest.mark.filterwarnings("ignore:Low df values")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", FORMS)
def test_log_prob_entropy_and_moments_match_torch_over_broadcast_params(form, dtype):
    kd, td = pair("Wishart", {"df": DF, form: FORMS[form]}, dtype)
    assert kd.batch_shape == (2, 3) and isinstance(kd, ExponentialFamily)
    tol = {"rtol": 1e-3} if dtype == "float32" else {"rtol": 1e-8}
    check_summaries(kd, td, dtype, ("mean", "mode", "variance", "entropy", *DERIVED), **tol)
    check_scores(kd, td, VALUE, dtype, **tol)
    expanded, texpanded = kd.expand((2, 2, 3)), td.expand((2, 2, 3))
    check_summaries(expanded, texpanded, dtype, ("mean", "entropy", *DERIVED), **tol)
    check_scores(expanded, texpanded, VALUE[:, None], dtype, **tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_log_normalizer_of_natural_params_matches_torch(dtype):
    kd, td = pair("Wishart", {"df": 5.0, "scale_tril": FORMS["scale_tril"]}, dtype)
    got = kd._log_normalizer(*kd._natural_params)
    want = td._log_normalizer(*td._natural_params)
    assert_matches(got, want, dtype, rtol=1e-3 if dtype == "float32" else 1e-9)


def test_samples_are_positive_definite_of_torchs_shape_and_dtype():
    kael.manual_seed(10)
    kd, td = pair(
        "Wishart", {"df": np.array([3.0, 7.5]), "covariance_matrix": COV[0, 0]}, "float32"
    )
    draws = kd.rsample((5, 2))
    assert tuple(draws.shape) == tuple(td.sample((5, 2)).shape) == (5, 2, 2, 3, 3)
    assert draws.dtype == kael.float32
    assert bool(kd.support.check(draws).all())


def test_sample_moments_match_torch():
    kd, td = pair("Wishart", {"df": DF[1:], "covariance_matrix": COV[:, :, :2, :2]}, "float64")
    check_moments(kd, td, n=3000)


@pytest.mark.filterwarnings("ignore:Low df values")
@pytest.mark.parametrize(
    "args, match",
    [
        ({"df": 4.0}, "Exactly one of covariance_matrix or precision_matrix or scale_tril"),
        ({"df": 4.0, **FORMS}, "Exactly one of covariance_matrix or precision_matrix"),
        ({"df": 4.0, "scale_tril": np.ones(3)}, "scale_tril must be at least two-dimensional"),
        ({"df": 2.0, "covariance_matrix": COV}, "Value of df=2.0 expected to be greater than ndim - 1 = 2."),
        ({"df": np.array([2.5, 1.5]), "covariance_matrix": COV[0, 0]}, "expected to be greater than ndim - 1 = 2."),
        ({"df": 4.0, "covariance_matrix": -COV}, "Expected parameter covariance_matrix"),
        ({"df": 4.0, "scale_tril": FORMS["scale_tril"].swapaxes(-1, -2)}, "constraint LowerCholesky()"),
    ],
)  # fmt: skip
def test_bad_parameters_are_refused_as_torch(args, match):
    kwargs = {k: kael.tensor(v) if isinstance(v, np.ndarray) else v for k, v in args.items()}
    with pytest.raises(kael.ValueError, match=re.escape(match)):
        Wishart(**kwargs)


@pytest.mark.parametrize("df, warns", [(2.01, True), (3.0, False)])
def test_df_between_ndim_minus_one_and_ndim_warns_as_torch(df, warns, recwarn):
    Wishart(df, covariance_matrix=kael.tensor(COV[0, 0]))
    low_df = [w for w in recwarn if "Low df values detected" in str(w.message)]
    assert bool(low_df) == warns


def test_log_prob_refuses_a_matrix_that_is_not_positive_definite():
    kd, _ = pair("Wishart", {"df": 4.0, "covariance_matrix": COV[0, 0]}, "float64")
    assert np.isfinite(kd.log_prob(kael.tensor(VALUE[0, 0, 0])).item())
    with pytest.raises(
        kael.ValueError, match=r"Expected value argument .*\(PositiveDefinite\(\)\)"
    ):
        kd.log_prob(kael.tensor(-VALUE[0, 0, 0]))
