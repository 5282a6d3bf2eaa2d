"""MultivariateNormal against torch.distributions, for each way of giving the covariance."""

import numpy as np
import pytest
from distribution_helpers import DTYPES, Case, check_case_moments, check_family

import kael

rng = np.random.default_rng(11)
TRIL = np.tril(rng.normal(size=(2, 3, 3)), -1) + np.diag([1.0, 1.5, 2.0])
COV = TRIL @ TRIL.swapaxes(-1, -2)
LOC, VALUE = rng.normal(size=3), rng.normal(size=(4, 2, 3))
CASES = [
    Case("MultivariateNormal", {"loc": LOC, "scale_tril": TRIL}, VALUE),
    Case("MultivariateNormal", {"loc": LOC, "covariance_matrix": COV}, VALUE),
    Case("MultivariateNormal", {"loc": LOC, "precision_matrix": np.linalg.inv(COV[0])}, VALUE),
]
IDS = ["scale_tril", "covariance_matrix", "precision_matrix"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_match_torch_for_each_covariance_form(case, dtype):
    check_family(case, dtype, rtol=1e-3)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_sample_moments_match_torch(case):
    check_case_moments(case)


@pytest.mark.parametrize(
    "args, match",
    [
        ({"loc": np.array(0.0), "scale_tril": np.eye(2)}, "loc must be at least one-dimensional"),
        ({"loc": LOC}, "Exactly one of covariance_matrix or precision_matrix or scale_tril"),
        ({"loc": LOC, "scale_tril": TRIL, "covariance_matrix": COV}, "Exactly one of"),
        ({"loc": LOC, "scale_tril": LOC}, "scale_tril matrix must be at least two-dimensional"),
        ({"loc": LOC, "covariance_matrix": LOC}, "covariance_matrix must be at least two-dim"),
        ({"loc": LOC, "covariance_matrix": -COV}, "Expected parameter covariance_matrix"),
        ({"loc": LOC, "scale_tril": TRIL.swapaxes(-1, -2)}, "constraint LowerCholesky()"),
    ],
)
def test_bad_parameters_are_refused_as_torch(args, match):
    kwargs = {k: kael.tensor(v) for k, v in args.items()}
    with pytest.raises(kael.ValueError, match=match.replace("(", r"\(").replace(")", r"\)")):
        kael.distributions.MultivariateNormal(**kwargs)
