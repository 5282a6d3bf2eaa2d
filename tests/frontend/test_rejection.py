"""torch._standard_gamma and torch._sample_dirichlet (kael/frontend/rejection.py): checked by
distribution (moments and Kolmogorov-Smirnov fits against the exact gamma CDF, torch's
regularized incomplete gamma), torch's edge values, dtype/shape/layout, reproducibility
and refusals. poisson and binomial, the module's older samplers, are tested in
test_random.py and test_random_samplers.py.

Statistical bounds are Z = 6 standard errors (KS: the 1e-8 quantile), so a correct
sampler fails with odds below 1e-8; seeds are fixed anyway.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import kael

Z = 6.0
N = 100_000


def np_of(t: kael.Tensor) -> np.ndarray:
    return t.numpy().astype(np.float64)


def ks_gap_of_clamped_gamma(draws: np.ndarray, alpha: float, tiny: float) -> float:
    """sup |F_n - F| for draws of max(Gamma(alpha), tiny): F has an atom of mass
    P(X <= tiny) at tiny (every draw that underflows), so the empirical CDF is compared at
    each distinct value from both sides."""
    values, counts = np.unique(draws, return_counts=True)
    cdf = torch.special.gammainc(
        torch.tensor(alpha, dtype=torch.float64), torch.from_numpy(values)
    ).numpy()
    right = np.cumsum(counts) / draws.size
    left_cdf = np.where(values == tiny, 0.0, cdf)
    return max(np.abs(right - cdf).max(), np.abs(right - counts / draws.size - left_cdf).max())


@pytest.mark.parametrize("alpha", [0.05, 0.5, 1.0, 2.5, 40.0])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gamma_draws_fit_the_gamma_cdf(alpha, dtype):
    kael.manual_seed(11)
    draws = np_of(kael._standard_gamma(kael.full((N,), alpha, dtype=getattr(kael, dtype))))
    tiny = float(np.finfo(dtype).tiny)
    assert ks_gap_of_clamped_gamma(draws, alpha, tiny) < math.sqrt(math.log(2e8) / (2 * N))


@pytest.mark.parametrize("alpha", [0.3, 1.0, 7.0, 1e6])
def test_gamma_moments_match_the_shape(alpha):
    kael.manual_seed(12)
    x = np_of(kael._standard_gamma(kael.full((N,), alpha, dtype=kael.float64)))
    assert abs(x.mean() - alpha) < Z * math.sqrt(alpha / N)
    # the variance's standard error: sqrt((mu4 - sigma^4) / n), mu4 = 3 a^2 + 6 a
    assert abs(x.var() - alpha) < Z * math.sqrt((2 * alpha * alpha + 6 * alpha) / N)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gamma_edge_shapes_give_torchs_values(dtype):
    # shapes <= 0, NaN and ones so small that every draw underflows give the smallest
    # normal number; +inf gives inf
    edges = [0.0, -1.0, math.nan, 1e-30, math.inf]
    got = kael._standard_gamma(kael.tensor(edges, dtype=getattr(kael, str(dtype)[6:])))
    want = torch._standard_gamma(torch.tensor(edges, dtype=dtype))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_gamma_of_a_huge_shape_is_the_shape_within_its_spread():
    got = float(kael._standard_gamma(kael.tensor([1e30], dtype=kael.float64))[0])
    assert abs(got - 1e30) < Z * 1e15


def test_gamma_draws_are_positive_and_below_one_shape_concentrate_near_zero():
    kael.manual_seed(13)
    x = np_of(kael._standard_gamma(kael.full((N,), 0.01)))
    assert x.min() >= np.finfo(np.float32).tiny
    assert abs(x.mean() - 0.01) < Z * math.sqrt(0.01 / N)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gamma_keeps_shape_dtype_and_takes_any_layout(dtype):
    dt = getattr(kael, dtype)
    base = kael.arange(1, 25, dtype=dt).reshape(4, 6)
    for alpha in (base, base.t(), base[:, ::2], kael.tensor(2.0, dtype=dt), kael.ones(0, 3)):
        got = kael._standard_gamma(alpha)
        want = torch._standard_gamma(torch.from_numpy(alpha.numpy()))
        assert (got.shape, str(got.dtype)) == (tuple(want.shape), str(want.dtype)[6:])
        assert got.is_contiguous()
    kael.manual_seed(14)
    strided = kael._standard_gamma(base.t())
    kael.manual_seed(14)
    assert kael.equal(strided, kael._standard_gamma(base.t().contiguous()))


def test_gamma_repeats_under_manual_seed_and_a_generator():
    alpha = kael.tensor([0.2, 1.0, 3.0, 50.0])
    kael.manual_seed(5)
    first = kael._standard_gamma(alpha)
    kael.manual_seed(5)
    assert kael.equal(first, kael._standard_gamma(alpha))
    draws = [kael._standard_gamma(alpha, generator=kael.Generator().manual_seed(9)) for _ in "ab"]
    assert kael.equal(*draws) and not kael.equal(draws[0], first)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int64", "bool"])
def test_gamma_refuses_what_torch_refuses(dtype):
    with pytest.raises(NotImplementedError, match='"gamma_cpu" not implemented'):
        torch._standard_gamma(torch.ones(2, dtype=getattr(torch, dtype)))
    with pytest.raises(kael.NotImplementedError, match=rf'"gamma_cpu" not implemented for {dtype}'):
        kael._standard_gamma(kael.ones(2, dtype=getattr(kael, dtype)))


def test_gamma_refuses_a_non_tensor():
    with pytest.raises(kael.TypeError, match="_standard_gamma"):
        kael._standard_gamma([1.0, 2.0])


@pytest.mark.parametrize("alpha", [[0.5, 2.0, 1.0], [3.0, 3.0], [0.1, 0.1, 0.1, 5.0]])
def test_dirichlet_rows_sum_to_one_and_moments_match(alpha):
    kael.manual_seed(15)
    rows = np_of(kael._sample_dirichlet(kael.tensor([alpha] * N, dtype=kael.float64)))
    np.testing.assert_allclose(rows.sum(1), 1.0, rtol=1e-14)
    a = np.array(alpha)
    total = a.sum()
    mean, var = a / total, a * (total - a) / (total**2 * (total + 1))
    assert np.all(np.abs(rows.mean(0) - mean) < Z * np.sqrt(var / N))
    # a Beta(a, b) component's fourth central moment bounds the variance's standard error
    assert np.all(np.abs(rows.var(0) - var) < Z * np.sqrt(3 * var * var / N))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dirichlet_edge_rows_give_torchs_values(dtype):
    # shapes that give the smallest normal gamma draw: equal shares, or clamped into
    # [smallest normal, largest float below one]; a 0-d input is one share of one
    rows = [[0.0, 0.0], [0.0, 1e30], [-1.0, math.nan, 0.0], [math.inf, 1.0], [math.inf] * 2]
    kdt = getattr(kael, str(dtype)[6:])
    for row in rows:
        got = kael._sample_dirichlet(kael.tensor(row, dtype=kdt))
        want = torch._sample_dirichlet(torch.tensor(row, dtype=dtype))
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    got = kael._sample_dirichlet(kael.tensor(2.0, dtype=kdt))
    assert got.item() == torch._sample_dirichlet(torch.tensor(2.0, dtype=dtype)).item() < 1.0


def test_dirichlet_keeps_shape_and_dtype_over_layouts_and_empty_inputs():
    base = kael.arange(1, 13, dtype=kael.float32).reshape(3, 4)
    for alpha in (base, base.t(), base[:, 1:], kael.ones(2, 0), kael.ones(0, 3)):
        got = kael._sample_dirichlet(alpha)
        want = torch._sample_dirichlet(torch.from_numpy(alpha.numpy()))
        assert (got.shape, got.dtype) == (tuple(want.shape), kael.float32)


@pytest.mark.parametrize("dtype", ["float16", "int64"])
def test_dirichlet_refuses_what_torch_refuses(dtype):
    with pytest.raises(NotImplementedError, match='"dirichlet" not implemented'):
        torch._sample_dirichlet(torch.ones(2, dtype=getattr(torch, dtype)))
    with pytest.raises(kael.NotImplementedError, match=rf'"dirichlet" not implemented for {dtype}'):
        kael._sample_dirichlet(kael.ones(2, dtype=getattr(kael, dtype)))
