"""The in-place samplers Tensor.bernoulli_, cauchy_, geometric_, log_normal_ and torch.binomial:
checked by distribution (moments, chi-square and Kolmogorov-Smirnov fits against the exact
distribution, support), reproducibility, dtype/shape/layout, and torch's checks.

Statistical bounds are Z = 6 standard errors (chi-square: df + 6 sqrt(2 df); KS: the 1e-8
quantile), so a correct sampler fails with odds below 1e-8; seeds are fixed anyway.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import kael
from kael.frontend import random as kr

Z = 6.0
N = 100_000
FLOATS = ["float32", "float64", "float16", "bfloat16"]


@pytest.fixture(autouse=True)
def _restore_generator():
    state = kr.default_generator.position()
    yield
    kr.default_generator.restore(*state)


def chi_square_fits(counts: np.ndarray, pmf: np.ndarray) -> bool:
    """Pearson's chi-square over the cells expecting at least 5, within df + 6 sqrt(2 df)."""
    expected = pmf * counts.sum()
    keep = expected >= 5
    stat = float(((counts[keep] - expected[keep]) ** 2 / expected[keep]).sum())
    df = int(keep.sum())
    return stat < df + Z * math.sqrt(2 * df)


def ks_fits(values: np.ndarray, cdf) -> bool:
    """Kolmogorov-Smirnov: sup |F_n - F| below its 1e-8 quantile sqrt(log(2e8) / 2n)."""
    x = np.sort(values.astype(np.float64))
    n = x.size
    f = cdf(x)
    gap = max((np.arange(1, n + 1) / n - f).max(), (f - np.arange(n) / n).max())
    return gap < math.sqrt(math.log(2e8) / (2 * n))


def normal_cdf(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def fresh(n: int = N, dtype: str = "float64") -> kael.Tensor:
    return kael.zeros(n, dtype=getattr(kael, dtype))


# ---- cauchy_ ------------------------------------------------------------------------------------


def test_cauchy_fits_its_cdf_and_median():
    kael.manual_seed(1)
    values = fresh().cauchy_(2.0, 0.5).numpy()
    assert ks_fits(values, lambda x: 0.5 + np.arctan((x - 2.0) / 0.5) / math.pi)
    # the sample median's standard error: pi sigma / (2 sqrt(n))
    assert abs(np.median(values) - 2.0) < Z * math.pi * 0.5 / (2 * math.sqrt(N))


# ---- log_normal_ --------------------------------------------------------------------------------


def test_log_normal_logs_are_normal_with_mean_and_std():
    kael.manual_seed(2)
    values = fresh().log_normal_(1.0, 2.0).numpy()
    assert values.min() > 0
    logs = np.log(values)
    assert abs(logs.mean() - 1.0) < Z * 2.0 / math.sqrt(N)
    assert abs(logs.var() - 4.0) < Z * 4.0 * math.sqrt(2 / N)
    assert ks_fits(logs, lambda x: normal_cdf((x - 1.0) / 2.0))


def test_log_normal_defaults_are_torchs_mean_1_std_2():
    kael.manual_seed(3)
    logs = np.log(fresh().log_normal_().numpy())
    assert abs(logs.mean() - 1.0) < Z * 2.0 / math.sqrt(N)
    assert abs(logs.std() - 2.0) < 0.05


# ---- geometric_ ---------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [0.05, 0.3, 0.9])
def test_geometric_support_is_positive_integers_and_fits_the_pmf(p):
    kael.manual_seed(4)
    values = fresh().geometric_(p).numpy()
    assert values.min() >= 1 and np.all(values == np.floor(values))
    assert abs(values.mean() - 1 / p) < Z * math.sqrt((1 - p) / p**2 / N)
    top = int(math.log(1e-4) / math.log1p(-p)) + 2
    pmf = np.array([(1 - p) ** (k - 1) * p for k in range(1, top)])
    pmf = np.append(pmf, 1.0 - pmf.sum())
    counts = np.bincount(np.minimum(values.astype(np.int64), top) - 1, minlength=top)
    assert chi_square_fits(counts, pmf)


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8", *FLOATS])
def test_geometric_keeps_any_non_bool_dtype_as_torch(dtype):
    kael.manual_seed(5)
    t = kael.zeros(2000, dtype=getattr(kael, dtype))
    assert t.geometric_(0.5) is t and t.dtype is getattr(kael, dtype)
    values = t.double().numpy()
    assert values.min() >= 1 and abs(values.mean() - 2.0) < Z * math.sqrt(2 / 2000)
    assert torch.zeros(3, dtype=getattr(torch, dtype)).geometric_(0.5).dtype == getattr(
        torch, dtype
    )


def test_geometric_draws_past_an_integer_dtypes_range_clamp_to_its_largest_value():
    # p = 1e-30 gives draws near 1e30: torch's int8 result is undefined there
    assert kael.zeros(8, dtype=kael.int8).geometric_(1e-30).tolist() == [127] * 8
    assert kael.zeros(4, dtype=kael.uint8).geometric_(1e-30).tolist() == [255] * 4


# ---- bernoulli_ ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["bool", "int64", "int8", "uint8", *FLOATS])
def test_bernoulli_scalar_p_fills_any_dtype_with_zeros_and_ones(dtype):
    kael.manual_seed(6)
    t = kael.full((20_000,), 7, dtype=getattr(kael, dtype)) if dtype != "bool" else None
    t = t if t is not None else kael.zeros(20_000, dtype=kael.bool)
    assert t.bernoulli_(0.3) is t and t.dtype is getattr(kael, dtype)
    values = t.double().numpy()
    assert set(np.unique(values)) <= {0.0, 1.0}
    assert abs(values.mean() - 0.3) < Z * math.sqrt(0.21 / 20_000)
    assert torch.zeros(2, dtype=getattr(torch, dtype)).bernoulli_(0.3).dtype == getattr(
        torch, dtype
    )


def test_bernoulli_default_p_is_one_half_and_limits_are_exact():
    kael.manual_seed(7)
    assert abs(fresh().bernoulli_().numpy().mean() - 0.5) < Z * math.sqrt(0.25 / N)
    assert fresh(100).bernoulli_(0.0).numpy().sum() == 0
    assert fresh(100).bernoulli_(1.0).numpy().sum() == 100


def test_bernoulli_tensor_p_broadcasts_per_element():
    kael.manual_seed(8)
    probs = kael.tensor([0.0, 0.25, 0.75, 1.0], dtype=kael.float64)
    t = kael.zeros((20_000, 4), dtype=kael.int32)
    t.bernoulli_(probs)
    means = t.double().numpy().mean(axis=0)
    assert means[0] == 0.0 and means[3] == 1.0
    assert np.all(np.abs(means[1:3] - [0.25, 0.75]) < Z * math.sqrt(0.1875 / 20_000))
    want = torch.zeros((2, 4), dtype=torch.int32).bernoulli_(torch.tensor([0.0, 0.25, 0.75, 1]))
    assert want[:, 0].sum() == 0 and want[:, 3].sum() == 2
    assert kael.zeros(3).bernoulli_(kael.tensor(1.0)).tolist() == [1.0, 1.0, 1.0]  # 0-d p


# ---- shared: reproducibility, layouts, empty ----------------------------------------------------

CALLS = {
    "bernoulli_": lambda t, **kw: t.bernoulli_(0.4, **kw),
    "cauchy_": lambda t, **kw: t.cauchy_(**kw),
    "geometric_": lambda t, **kw: t.geometric_(0.2, **kw),
    "log_normal_": lambda t, **kw: t.log_normal_(**kw),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_samplers_repeat_under_manual_seed_and_a_generator(name):
    call = CALLS[name]
    kael.manual_seed(9)
    first = call(fresh(64)).numpy()
    kael.manual_seed(9)
    assert np.array_equal(call(fresh(64)).numpy(), first)
    again = call(fresh(64)).numpy()
    assert not np.array_equal(again, first) or name == "bernoulli_" and again.sum() == first.sum()
    gen = kael.Generator().manual_seed(9)
    assert np.array_equal(call(fresh(64), generator=gen).numpy(), first)
    assert kr.default_generator.position()[0] == 9  # the generator drew, not the default


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("dtype", FLOATS)
def test_samplers_write_a_non_contiguous_view_in_place_keeping_the_rest(name, dtype):
    base = kael.full((6, 8), -5.0, dtype=getattr(kael, dtype))
    view = base.t()[1:7:2]  # transposed and sliced: shape (3, 6)
    out = CALLS[name](view)
    assert out is view and view.shape == (3, 6) and view.dtype is getattr(kael, dtype)
    whole = base.double().numpy()
    touched = np.zeros((6, 8), dtype=bool)
    touched[:, 1:7:2] = True
    assert np.all(whole[~touched] == -5.0)
    assert np.all(whole[touched] != -5.0)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_samplers_on_empty_and_0d_tensors_keep_their_shape(name):
    empty = kael.zeros((0, 3))
    assert CALLS[name](empty).shape == (0, 3)
    scalar = kael.tensor(0.0)
    assert CALLS[name](scalar).shape == () and math.isfinite(scalar.item())


def test_samplers_refuse_an_expanded_self_as_torch():
    with pytest.raises(kael.Error, match="more than one element"):
        kael.zeros(1).expand(4).cauchy_()
    with pytest.raises(RuntimeError, match="more than one element"):
        torch.zeros(1).expand(4).cauchy_()


# ---- errors: each limit from both sides, as torch ---------------------------------------------

BAD = [
    ("bernoulli_", lambda m: m.bernoulli_(1.5), kael.ValueError, r"bernoulli_ expects p to be in \[0, 1\], but got p=1.5"),
    ("bernoulli_", lambda m: m.bernoulli_(-0.1), kael.ValueError, r"got p=-0.1"),
    ("bernoulli_", lambda m: m.bernoulli_(float("nan")), kael.ValueError, r"got p=nan"),
    ("cauchy_", lambda m: m.cauchy_(0, 0), kael.ValueError, r"cauchy_ expects sigma > 0.0, but found sigma=0"),
    ("cauchy_", lambda m: m.cauchy_(0, -1), kael.ValueError, r"sigma=-1"),
    ("cauchy_", lambda m: m.cauchy_(0, float("nan")), kael.ValueError, r"sigma=nan"),
    ("geometric_", lambda m: m.geometric_(0), kael.ValueError, r"geometric_ expects p to be in \(0, 1\), but got p=0"),
    ("geometric_", lambda m: m.geometric_(1), kael.ValueError, r"got p=1"),
    ("geometric_", lambda m: m.geometric_(float("nan")), kael.ValueError, r"got p=nan"),
    ("log_normal_", lambda m: m.log_normal_(1, 0), kael.ValueError, r"log_normal_ expects std > 0.0, but found std=0"),
    ("log_normal_", lambda m: m.log_normal_(1, -2), kael.ValueError, r"std=-2"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "call", "error", "message"), BAD)
def test_out_of_range_parameters_raise_as_torch(name, call, error, message):
    with pytest.raises(error, match=message):
        call(kael.zeros(3))
    with pytest.raises(RuntimeError, match=name):
        call(torch.zeros(3))


GOOD = [
    lambda m: m.bernoulli_(0.0),
    lambda m: m.bernoulli_(1.0),
    lambda m: m.cauchy_(0, 1e-30),
    lambda m: m.geometric_(1e-6),
    lambda m: m.geometric_(1 - 1e-9),
    lambda m: m.log_normal_(1, 1e-30),
]


@pytest.mark.parametrize("call", GOOD)
def test_parameters_just_inside_the_limits_are_accepted_as_torch(call):
    assert call(kael.zeros(3)).shape == (3,) and call(torch.zeros(3)).shape == (3,)


@pytest.mark.parametrize("name", ["cauchy_", "log_normal_"])
@pytest.mark.parametrize("dtype", ["int64", "int8", "bool"])
def test_continuous_samplers_refuse_integer_and_bool_self_as_torch(name, dtype):
    with pytest.raises(kael.TypeError, match=rf"{name} only supports floating point .*{dtype}"):
        getattr(kael.zeros(3, dtype=getattr(kael, dtype)), name)()
    with pytest.raises((RuntimeError, NotImplementedError)):
        getattr(torch.zeros(3, dtype=getattr(torch, dtype)), name)()


def test_geometric_refuses_bool_self_as_torch():
    with pytest.raises(kael.TypeError, match="geometric_ does not support dtype bool"):
        kael.zeros(3, dtype=kael.bool).geometric_(0.5)
    with pytest.raises(NotImplementedError):
        torch.zeros(3, dtype=torch.bool).geometric_(0.5)


def test_bernoulli_tensor_p_must_be_float_and_broadcast_to_self_as_torch():
    with pytest.raises(kael.TypeError, match="floating point probabilities, got int64"):
        kael.zeros(3).bernoulli_(kael.tensor([0, 1, 1]))
    with pytest.raises(NotImplementedError):
        torch.zeros(3).bernoulli_(torch.tensor([0, 1, 1]))
    with pytest.raises(kael.ValueError, match=r"shape \[2, 3\] do not broadcast to .* \[3\]"):
        kael.zeros(3).bernoulli_(kael.ones(2, 3))
    with pytest.raises(RuntimeError):
        torch.zeros(3).bernoulli_(torch.ones(2, 3))
    with pytest.raises(kael.ValueError, match=r"every probability in \[0, 1\].*p=1.5"):
        kael.zeros(3).bernoulli_(kael.tensor([0.5, 1.5, 0.2]))
    with pytest.raises(RuntimeError):
        torch.zeros(3).bernoulli_(torch.tensor([0.5, 1.5, 0.2]))


def test_parameters_must_be_numbers():
    with pytest.raises(kael.TypeError, match="median must be a number, got str"):
        kael.zeros(3).cauchy_("a")
    with pytest.raises(kael.TypeError, match="generator must be a kael.Generator"):
        kael.zeros(3).log_normal_(generator=1)


# ---- binomial -----------------------------------------------------------------------------------

CASES = [(10, 0.5), (30, 0.2), (5, 0.97), (40, 0.5), (1000, 0.3), (200, 0.95), (10**6, 1e-5)]


@pytest.mark.parametrize(("n", "p"), CASES)
def test_binomial_moments_and_histogram_fit_the_pmf(n, p):
    kael.manual_seed(10)
    count = kael.full((N,), float(n), dtype=kael.float64)
    values = kael.binomial(count, kael.full((N,), p, dtype=kael.float64)).numpy()
    assert values.min() >= 0 and values.max() <= n and np.all(values == np.floor(values))
    var = n * p * (1 - p)
    assert abs(values.mean() - n * p) < Z * math.sqrt(var / N)
    assert abs(values.var() - var) < Z * var * math.sqrt(2 / N) + Z * math.sqrt(var / N)
    ks = np.arange(n + 1) if n <= 1000 else np.arange(200)
    log_pmf = [
        math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
        + k * math.log(p) + (n - k) * math.log1p(-p)
        for k in ks
    ]  # fmt: skip
    pmf = np.exp(log_pmf)
    pmf = np.append(pmf, max(0.0, 1.0 - pmf.sum()))
    counts = np.bincount(np.minimum(values.astype(np.int64), ks.size), minlength=ks.size + 1)
    assert chi_square_fits(counts, pmf)


def test_binomial_edge_values_are_torchs():
    counts = [0.0, 5.0, 5.0, 3.5, -1.0, 5.0, 10.0, 10.0, 0.0, -1.0, float("inf"), 7.0]
    probs = [0.5, 0.0, 1.0, 1.0, 0.5, float("nan"), 1.5, -0.5, float("nan"), 1.0, 1.0, 1e-300]
    got = kael.binomial(kael.tensor(counts), kael.tensor(probs))
    want = torch.binomial(torch.tensor(counts), torch.tensor(probs))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_binomial_of_a_nan_count_is_nan_where_torch_never_returns():
    got = kael.binomial(kael.tensor([float("nan")]), kael.tensor([0.5]))
    assert math.isnan(got.item())  # torch.binomial loops forever on a NaN count


def test_binomial_of_an_infinite_count_is_nan_where_torch_gives_inf_or_nan():
    got = kael.binomial(kael.full((20,), float("inf")), kael.full((20,), 0.5)).numpy()
    want = torch.binomial(torch.full((20,), float("inf")), torch.full((20,), 0.5)).numpy()
    assert np.all(np.isnan(got)) and np.all(np.isnan(want) | np.isinf(want))
    certain = kael.binomial(kael.tensor([float("inf")] * 2), kael.tensor([1.0, 0.0])).tolist()
    assert (
        certain == torch.binomial(torch.tensor([float("inf")] * 2), torch.tensor([1.0, 0])).tolist()
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_binomial_broadcasts_and_keeps_dtype_shape_and_layout_as_torch(dtype):
    kd, td = getattr(kael, dtype), getattr(torch, dtype)
    count = kael.full((4, 3), 20.0, dtype=kd).t()  # transposed: (3, 4)
    prob = kael.tensor([0.1, 0.5, 0.9, 1.0], dtype=kd)
    got = kael.binomial(count, prob)
    want = torch.binomial(
        torch.full((4, 3), 20.0, dtype=td).t(), torch.tensor([0.1, 0.5, 0.9, 1], dtype=td)
    )
    assert got.shape == tuple(want.shape) and got.dtype is kd
    assert np.all(got.numpy()[:, 3] == 20.0)
    assert kael.binomial(kael.zeros(0, dtype=kd), kael.zeros(0, dtype=kd)).shape == (0,)
    zero_d = kael.binomial(kael.tensor(10.0, dtype=kd), kael.tensor(0.5, dtype=kd))
    assert zero_d.shape == () == tuple(torch.binomial(torch.tensor(10.0), torch.tensor(0.5)).shape)


def test_binomial_repeats_under_manual_seed_and_a_generator():
    count, prob = kael.full((500,), 50.0), kael.full((500,), 0.3)
    kael.manual_seed(11)
    first = kael.binomial(count, prob).numpy()
    kael.manual_seed(11)
    assert np.array_equal(kael.binomial(count, prob).numpy(), first)
    gen = kael.Generator().manual_seed(11)
    assert np.array_equal(kael.binomial(count, prob, generator=gen).numpy(), first)
    assert not np.array_equal(kael.binomial(count, prob).numpy(), first)


BINOMIAL_BAD = [
    (lambda m: m.binomial(m.tensor([10, 10]), m.tensor([0.5, 0.5])), kael.TypeError, "float32 and float64 count, got int64"),
    (lambda m: m.binomial(m.tensor([10.0]), m.tensor([0.5], dtype=m.float64)), kael.TypeError, "one dtype, got float32 and float64"),
    (lambda m: m.binomial(m.tensor([10.0], dtype=m.float16), m.tensor([0.5], dtype=m.float16)), kael.TypeError, "got float16"),
    (lambda m: m.binomial(m.tensor([10.0]), 0.5), kael.TypeError, "prob must be a Tensor, got float"),
    (lambda m: m.binomial(m.ones(2), m.ones(3)), kael.ValueError, "broadcast"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "error", "message"), BINOMIAL_BAD)
def test_binomial_refuses_what_torch_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call(kael)
    with pytest.raises((RuntimeError, TypeError, ValueError, NotImplementedError)):
        call(torch)


@pytest.mark.parametrize("count", [2.0**61, 1e20])
def test_binomial_of_huge_counts_keeps_its_mean(count):
    n = kael.full((4000,), count, dtype=kael.float64)
    drawn = kael.binomial(n, kael.full((4000,), 0.3, dtype=kael.float64))
    assert abs(drawn.mean().item() / (count * 0.3) - 1) < 1e-8  # not 2**60 trials' mean
