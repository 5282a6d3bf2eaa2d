"""LowRankMultivariateNormal against torch.distributions: scores through the capacitance
matrix, the derived matrices, broadcasting of batch shapes and the refusals (summaries,
scores, samples and sample moments: the generic checks of test_families)."""

import re

import numpy as np
import pytest
import torch
from distribution_helpers import (
    DTYPES,
    assert_matches,
    check_scores,
    check_summaries,
    pair,
)

import kael
from kael.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal

rng = np.random.default_rng(21)
LOC = rng.normal(size=3)
FACTOR = rng.normal(size=(2, 1, 3, 2))  # batch (2, 1), rank 2
DIAG = rng.uniform(0.5, 2.0, (4, 3))  # batch (4,): all three broadcast to (2, 4)
VALUE = rng.normal(size=(5, 1, 1, 3))
ARGS = {"loc": LOC, "cov_factor": FACTOR, "cov_diag": DIAG}
MATRICES = ("covariance_matrix", "precision_matrix", "scale_tril")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("expand", [(), (3, 2, 4)], ids=["broadcast", "expanded"])
def test_derived_matrices_match_torch_over_broadcast_batches(expand, dtype):
    kd, td = pair("LowRankMultivariateNormal", ARGS, dtype)
    assert kd.batch_shape == (2, 4)
    if expand:
        kd, td = kd.expand(expand), td.expand(expand)
    check_summaries(kd, td, dtype, MATRICES)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rank_one_unbatched_case_matches_torch(dtype):
    args = {"loc": LOC, "cov_factor": FACTOR[0, 0, :, :1], "cov_diag": DIAG[0]}
    kd, td = pair("LowRankMultivariateNormal", args, dtype)
    check_summaries(kd, td, dtype, ("variance", "entropy", *MATRICES))
    check_scores(kd, td, VALUE[0, 0], dtype)


def test_sample_covariance_matches_cov_factor_outer_product_plus_diag():
    kael.manual_seed(5)
    kd, td = pair(
        "LowRankMultivariateNormal",
        {"loc": LOC, "cov_factor": FACTOR[0, 0], "cov_diag": DIAG[0]},
        "float64",
    )
    draws = kd.rsample((20000,)).numpy()
    np.testing.assert_allclose(np.cov(draws.T), td.covariance_matrix.numpy(), atol=0.15)


@pytest.mark.parametrize(
    "args, match",
    [
        ({**ARGS, "loc": np.array(0.0)}, "loc must be at least one-dimensional."),
        ({**ARGS, "cov_factor": LOC}, "cov_factor must be at least two-dimensional"),
        ({**ARGS, "cov_factor": FACTOR[..., :2, :]}, "cov_factor must be a batch of matrices with shape 3 x m"),
        ({**ARGS, "cov_diag": DIAG[:, :2]}, "cov_diag must be a batch of vectors with shape kael.Size([3])"),
        ({**ARGS, "loc": rng.normal(size=(5, 3))}, "Incompatible batch shapes: loc kael.Size([5, 3])"),
        ({**ARGS, "cov_diag": -DIAG}, "Expected parameter cov_diag"),  # torch: LinAlgError
        ({**ARGS, "cov_factor": FACTOR * np.nan}, "Expected parameter cov_factor"),
    ],
)  # fmt: skip
def test_bad_parameters_are_refused_as_torch(args, match):
    with pytest.raises(kael.ValueError, match=re.escape(match)):
        LowRankMultivariateNormal(**{k: kael.tensor(v) for k, v in args.items()})


def test_log_prob_refuses_a_value_of_another_event_size():
    kd, _ = pair("LowRankMultivariateNormal", ARGS, "float64")
    with pytest.raises(
        kael.ValueError, match="The right-most size of value must match event_shape"
    ):
        kd.log_prob(kael.ones(2))
    assert_matches(
        kd.log_prob(kael.ones(3, dtype=kael.float64)).isfinite(), torch.ones(2, 4).bool()
    )
