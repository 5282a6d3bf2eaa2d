"""LKJCholesky against torch.distributions: log_prob, onion-method samples (their support
and the Beta marginals of the correlations they give) and the refusals."""

import re

import numpy as np
import pytest
import torch
from distribution_helpers import DTYPES, check_sample_shapes, check_scores, lib_args

import kael
from kael.distributions.constraints import corr_cholesky
from kael.distributions.lkj_cholesky import LKJCholesky

CONC = np.array([[0.5, 1.0, 3.0]])  # batch (1, 3)


def _pair(dim: int, conc, dtype: str):
    ours, theirs = (lib_args(lib, {"c": conc}, dtype)["c"] for lib in (kael, torch))
    return LKJCholesky(dim, ours), torch.distributions.LKJCholesky(dim, theirs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [2, 4])
def test_log_prob_matches_torch_over_batched_concentration(dim, dtype):
    kd, td = _pair(dim, CONC, dtype)
    assert kd.batch_shape == td.batch_shape and kd.event_shape == td.event_shape
    torch.manual_seed(0)
    check_scores(kd, td, td.sample((5, 2, 1)).double().numpy(), dtype)
    check_sample_shapes(kd, td)
    expanded, texpanded = kd.expand((2, 1, 3)), td.expand((2, 1, 3))
    check_scores(expanded, texpanded, texpanded.sample().double().numpy(), dtype)


def test_scalar_concentration_matches_torch():
    kd, td = LKJCholesky(3, 2.0), torch.distributions.LKJCholesky(3, 2.0)
    check_scores(kd, td, td.sample((4,)).numpy(), "float32")


@pytest.mark.parametrize("dtype", DTYPES)
def test_samples_are_cholesky_factors_of_correlation_matrices(dtype):
    kael.manual_seed(11)
    kd, _ = _pair(4, CONC, dtype)
    draws = kd.sample((50,))
    assert draws.dtype == DTYPES[dtype][0] and tuple(draws.shape) == (50, 1, 3, 4, 4)
    assert bool(kd.support.check(draws).all())


def test_sample_correlations_have_the_lkj_beta_marginal():
    """Each off-diagonal correlation is 2 Beta(eta - 1 + d / 2, same) - 1: mean 0, variance
    1 / (2 eta + d - 1); within 5 standard errors."""
    kael.manual_seed(12)
    dim, n = 4, 3000
    kd, _ = _pair(dim, CONC, "float64")
    low = kd.sample((n,)).numpy()
    rows, cols = np.tril_indices(dim, -1)
    corr = (low @ low.swapaxes(-1, -2))[..., rows, cols]
    var = np.broadcast_to((1 / (2 * CONC + dim - 1))[..., None], corr.shape[1:])
    np.testing.assert_array_less(np.abs(corr.mean(0)), 5 * np.sqrt(var / n))
    se_var = np.sqrt(((corr - corr.mean(0)) ** 4).mean(0) - corr.var(0) ** 2) / np.sqrt(n)
    np.testing.assert_array_less(np.abs(corr.var(0) - var), 5 * se_var)


@pytest.mark.parametrize(
    "dim, conc, match",
    [
        (1, 1.0, "Expected dim to be an integer greater than or equal to 2. Found dim=1."),
        (3, 0.0, "Expected parameter concentration"),
        (3, -1.0, "GreaterThan(lower_bound=0.0)"),
    ],
)
def test_bad_parameters_are_refused_as_torch(dim, conc, match):
    with pytest.raises(kael.ValueError, match=re.escape(match)):
        LKJCholesky(dim, conc)


def test_corr_cholesky_accepts_only_unit_row_lower_factors():
    good = torch.distributions.LKJCholesky(3, 1.0).sample((4,)).numpy()
    bad = good.copy()
    bad[..., 2, 2] *= 1.01  # the last row no longer of unit norm
    assert repr(corr_cholesky) == "CorrCholesky()"
    assert corr_cholesky.check(kael.tensor(good)).numpy().all()
    assert not corr_cholesky.check(kael.tensor(bad)).numpy().any()
    assert not corr_cholesky.check(kael.tensor(good.swapaxes(-1, -2))).numpy().any()
    with pytest.raises(kael.ValueError, match=r"Expected value argument .*\(CorrCholesky\(\)\)"):
        LKJCholesky(3, 1.0).log_prob(kael.tensor(bad))
