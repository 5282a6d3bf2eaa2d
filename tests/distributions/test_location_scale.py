"""Laplace, Cauchy and Gumbel against torch.distributions."""

import numpy as np
import pytest
from distribution_helpers import DTYPES, check_scores, pair

import kael

ARGS = {"loc": np.array([0.5, -1.0]), "scale": np.array([1.0, 2.0])}


def test_cauchy_samples_have_its_quartiles():
    """Cauchy has no moments: its sample quartiles are loc -+ scale instead."""
    kael.manual_seed(3)
    draws = kael.distributions.Cauchy(1.0, 2.0).sample((4000,)).numpy()
    np.testing.assert_allclose(np.quantile(draws, [0.25, 0.75]), [-1.0, 3.0], atol=0.25)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gumbel_cdf_and_icdf_rescale_torchs_open_uniform(dtype):
    """torch draws Gumbel from a uniform on (tiny, 1 - eps): icdf(0) and icdf(1) are finite."""
    kd, td = pair("Gumbel", ARGS, dtype, validate_args=False)
    check_scores(kd, td, np.array([0.0, 1e-3, 0.5, 1.0])[:, None], dtype, ("icdf",))
    check_scores(kd, td, np.array([-np.inf, -5.0, 0.0, 40.0, np.inf])[:, None], dtype, ("cdf",))
    assert np.isfinite(
        kd.icdf(kael.tensor([0.0, 1.0], dtype=DTYPES[dtype][0])[:, None]).numpy()
    ).all()
