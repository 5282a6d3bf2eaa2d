"""VonMises against torch.distributions: log_prob and circular moments (torch's use
polynomial fits of log I0 and log I1, about 1e-7 off; kael's are exact: checked against
torch.special.i0e / i1e too), and Best and Fisher's rejection sampler."""

import math

import numpy as np
import pytest
import torch
from distribution_helpers import DTYPES, TOL, assert_matches, check_sample_shapes, pair

import kael
from kael.distributions import von_mises
from kael.distributions.von_mises import VonMises

LOC = np.array([0.0, 1.0, -3.0, 5.0])  # 5 lies outside [-pi, pi): taken modulo 2 pi
KAPPA = np.array([[1e-6], [0.5], [3.0], [60.0]])  # the Taylor proposal below 1e-5
VALUE = np.array([[-4.0], [0.0], [1.0], [3.1]])[:, None]
ARGS = {"loc": LOC, "concentration": KAPPA}
FIT_TOL = {"rtol": 1e-3, "atol": 1e-6}  # torch's polynomial fits of log I0 and log I1


@pytest.mark.parametrize("dtype", DTYPES)
def test_log_prob_and_moments_match_torch_over_broadcast_params(dtype):
    kd, td = pair("VonMises", ARGS, dtype)
    assert kd.batch_shape == td.batch_shape and kd.has_rsample == td.has_rsample
    for what in ("mean", "mode", "variance", "stddev"):
        assert_matches(getattr(kd, what), getattr(td, what), dtype, **FIT_TOL)
    value = kael.tensor(VALUE, dtype=DTYPES[dtype][0])
    assert_matches(
        kd.log_prob(value), td.log_prob(torch.tensor(VALUE)).to(DTYPES[dtype][1]), dtype, **FIT_TOL
    )
    check_sample_shapes(kd, td)
    expanded = kd.expand((2, *kd.batch_shape))
    assert_matches(expanded.variance, td.expand((2, *td.batch_shape)).variance, dtype, **FIT_TOL)


@pytest.mark.parametrize("dtype", DTYPES)
def test_log_prob_and_variance_use_exact_bessel_functions(dtype):
    kd, _ = pair("VonMises", ARGS, dtype)
    loc, kappa = (torch.tensor(ARGS[k], dtype=DTYPES[dtype][1]) for k in ARGS)
    value = torch.tensor(VALUE, dtype=DTYPES[dtype][1])
    log_i0 = torch.special.i0e(kappa).log() + kappa
    want = kappa * (value - loc).cos() - math.log(2 * math.pi) - log_i0
    assert_matches(kd.log_prob(kael.tensor(VALUE, dtype=DTYPES[dtype][0])), want, dtype)
    variance = 1 - torch.special.i1e(kappa) / torch.special.i0e(kappa)
    assert_matches(kd.variance, variance.expand(4, 4), dtype, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_samples_lie_in_minus_pi_to_pi_in_the_params_dtype(dtype):
    kael.manual_seed(8)
    kd, _ = pair("VonMises", ARGS, dtype)
    draws = kd.sample((300,))
    assert draws.dtype == DTYPES[dtype][0] and tuple(draws.shape) == (300, 4, 4)
    x = draws.numpy()
    assert (x >= -math.pi).all() and (x <= math.pi).all()


def test_sample_circular_moments_match_torch():
    """E cos(x - loc) = 1 - circular variance and E sin(x - loc) = 0, within 5 standard errors."""
    kael.manual_seed(9)
    kd, td = pair("VonMises", ARGS, "float64")
    n = 4000
    x = kd.sample((n,)).numpy() - LOC
    for moment, want in [(np.cos(x), 1 - td.variance.numpy()), (np.sin(x), 0.0)]:
        bound = 5 * moment.std(0) / np.sqrt(n) + 1e-6
        np.testing.assert_array_less(np.abs(moment.mean(0) - want), bound)


def test_sampler_stops_after_its_bound_on_rounds(monkeypatch):
    kd, _ = pair("VonMises", ARGS, "float64")
    monkeypatch.setattr(von_mises, "MAX_ROUNDS", 0)
    with pytest.raises(kael.Error, match="16 draws not accepted in 0 rounds"):
        kd.sample()


@pytest.mark.parametrize("kappa, ok", [(1e-8, True), (0.0, False), (-1.0, False)])
def test_concentration_must_be_positive(kappa, ok):
    if ok:
        assert VonMises(kael.tensor([0.0]), kael.tensor([kappa])).batch_shape == (1,)
    else:
        with pytest.raises(
            kael.ValueError,
            match=r"Expected parameter concentration .*GreaterThan\(lower_bound=0.0\)",
        ):
            VonMises(kael.tensor([0.0]), kael.tensor([kappa]))


def test_log_prob_refuses_nan_as_torch():
    d = VonMises(kael.tensor([0.0]), kael.tensor([1.0]))
    with pytest.raises(kael.ValueError, match=r"Expected value argument .*\(Real\(\)\)"):
        d.log_prob(kael.tensor([math.nan]))
