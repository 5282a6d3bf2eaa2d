"""MultivariateNormal against torch.distributions, for each way of giving the covariance."""

import numpy as np
import pytest
import torch
from distribution_helpers import DTYPES, assert_matches, pair

import kael

rng = np.random.default_rng(11)
TRIL = np.tril(rng.normal(size=(2, 3, 3)), -1) + np.diag([1.0, 1.5, 2.0])
COV = TRIL @ TRIL.swapaxes(-1, -2)
LOC = rng.normal(size=3)


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


@pytest.mark.parametrize("params, value", [("float32", "float64"), ("float64", "float32")])
def test_log_prob_of_a_value_of_another_dtype_is_torchs(params, value):
    """torch's triangular solve takes a wider value in the factor's dtype."""
    kd, td = pair("MultivariateNormal", {"loc": LOC, "scale_tril": TRIL}, params)
    x = np.ones(3)
    got = kd.log_prob(kael.tensor(x, dtype=DTYPES[value][0]))
    assert_matches(got, td.log_prob(torch.tensor(x, dtype=DTYPES[value][1])), rtol=1e-5)
