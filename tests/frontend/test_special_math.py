"""erfc, erfinv, lgamma and digamma (frontend/special_math.py, erfc in codegen/vmath.py)
against PyTorch (values, dtype, shape, special values, layouts, half and integer types,
in-place forms, @kael.compile) and their measured accuracy against 40-digit mpmath."""

import math

import mpmath as mp
import numpy as np
import pytest
import torch
from parity_helpers import close_to_torch, strided_views
from parity_helpers import torch_pair as pair

import kael

mp.mp.dps = 40
RNG = np.random.default_rng(41)
NAMES = ["erfc", "erfinv", "lgamma", "digamma"]
TOL = {kael.float32: 2e-6, kael.float64: 1e-13, kael.float16: 2e-3, kael.bfloat16: 1.6e-2}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.0, -3.0, 0.5, -2.5, 1e-30, -1e-30, np.inf, -np.inf, np.nan]
MPMATH = {"erfc": mp.erfc, "erfinv": mp.erfinv, "lgamma": mp.loggamma, "digamma": mp.digamma}


def _values(name: str, n: int = 40) -> np.ndarray:
    """Random values in the function's domain (erfinv's in (-1, 1)) and the special ones."""
    x = RNG.standard_normal(n) * 4
    if name == "erfinv":
        x = np.tanh(x / 4)
    return np.concatenate([x, SPECIAL, [1.5, -1.5]])


@pytest.mark.parametrize(
    "dtype", [kael.float32, kael.float64, kael.float16, kael.bfloat16], ids=str
)
@pytest.mark.parametrize("name", NAMES)
def test_functions_and_methods_match_torch(name, dtype):
    kx, tx = pair(_values(name), dtype)
    expected = getattr(torch, name)(tx)
    close_to_torch(getattr(kael, name)(kx), expected, TOL[dtype], equal_nan=True)
    close_to_torch(getattr(kx, name)(), expected, TOL[dtype], equal_nan=True)


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
@pytest.mark.parametrize("name", NAMES)
def test_special_values_are_torch_s_including_signed_zeros(name, dtype):
    """Poles (+inf for lgamma; digamma -inf at +0, +inf at -0, NaN at negative integers),
    erfinv's +-inf at +-1 and NaN beyond, infinities and NaN, bit for bit."""
    kx, tx = pair(np.array(SPECIAL + [1.5, -1.5, -7.0, 1e-300, 5e-324]), dtype)
    got = torch.from_dlpack(getattr(kael, name)(kx))
    expected = getattr(torch, name)(tx)
    torch.testing.assert_close(got, expected, rtol=TOL[dtype], atol=0, equal_nan=True)
    same = ~torch.isnan(expected)
    assert torch.equal(torch.signbit(got[same]), torch.signbit(expected[same]))


@pytest.mark.parametrize("dtype", [kael.int64, kael.int32, kael.bool], ids=str)
@pytest.mark.parametrize("name", NAMES)
def test_integer_and_bool_inputs_give_the_default_float(name, dtype):
    values = np.array([0, 1, 1, 0]) if dtype is kael.bool else RNG.integers(-3, 6, 9)
    kx, tx = pair(values, dtype)
    close_to_torch(getattr(kael, name)(kx), getattr(torch, name)(tx), 2e-6, equal_nan=True)


@pytest.mark.parametrize("name", NAMES)
def test_layouts_transposed_sliced_expanded_zero_d_and_empty(name):
    base = RNG.uniform(-0.9, 0.9, (6, 4)) if name == "erfinv" else RNG.uniform(-5, 8, (6, 4))
    kx, tx = pair(base)
    fn, ref = getattr(kael, name), getattr(torch, name)
    for k, t in strided_views(kx, tx):
        close_to_torch(fn(k), ref(t), 2e-6, equal_nan=True)


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.float16], ids=str)
@pytest.mark.parametrize("name", NAMES)
def test_in_place_forms_write_self(name, dtype):
    kx, tx = pair(_values(name), dtype)
    view = kx[::2]
    assert getattr(view, f"{name}_")() is view
    getattr(tx[::2], f"{name}_")()
    close_to_torch(kx, tx, TOL[dtype], equal_nan=True)


@pytest.mark.parametrize("name", NAMES)
def test_in_place_on_integers_raises_torch_s_dtype_error(name):
    with pytest.raises(kael.TypeError, match="can't be cast to the desired output type"):
        getattr(kael.ones(3, dtype=kael.int64), f"{name}_")()


def test_compiled_chain_matches_eager():
    @kael.compile
    def chain(x):
        return x.erfc() + kael.lgamma(x.abs() + 0.5) - kael.digamma(x + 4) + (x * 0.3).erfinv()

    kx, tx = pair(RNG.uniform(-3, 3, (5, 7)))
    expected = tx.erfc() + torch.lgamma(tx.abs() + 0.5) - torch.digamma(tx + 4)
    expected = expected + (tx * 0.3).erfinv()
    for _ in range(2):  # the trace, then the replay
        close_to_torch(chain(kx), expected, 1e-5)


def _reference(name: str, x: np.ndarray) -> np.ndarray:
    fn = MPMATH[name]
    return np.array([float(fn(mp.mpf(float(v)))) for v in x])


def _samples(name: str, n: int) -> np.ndarray:
    """Inputs over the whole range, with the hard spots: erfinv near +-1, lgamma near its
    zeros 1 and 2, digamma near its root, erfc into the subnormal tail."""
    if name == "erfinv":
        near_one = 1 - np.exp(RNG.uniform(-36, -1, n // 4))
        tiny = np.exp(RNG.uniform(-700, -1, n // 8))
        x = np.concatenate([RNG.uniform(-1, 1, n // 2), near_one, tiny])
    elif name == "erfc":
        x = np.concatenate([RNG.uniform(-6, 28, n // 2), np.exp(RNG.uniform(-40, 3, n // 2))])
    else:
        spots = np.repeat([1.0, 2.0, 1.4616321449683622], n // 12)
        near = spots + RNG.uniform(-1e-3, 1e-3, spots.size)
        x = np.concatenate([RNG.uniform(0, 12, n // 2), np.exp(RNG.uniform(-40, 40, n // 4)), near])
    return x * RNG.choice([-1.0, 1.0], x.size) if name == "erfinv" else x


# float64 bounds measured over ~4000 samples each (erfc 3, erfinv 2, lgamma 6 at lgamma's
# minimum near 1.46, where log(x) cancels with the core; digamma 3); float32 0.5 ulp.
FLOAT64_ULPS = {"erfc": 3, "erfinv": 2, "lgamma": 6, "digamma": 3}


@pytest.mark.parametrize("name", NAMES)
def test_measured_ulp_bounds_float32_and_float64(name):
    """x > 0 for lgamma and digamma (their reflection is tested against torch above)."""
    x = _samples(name, 4000)
    ref = _reference(name, x)
    got = getattr(kael, name)(kael.tensor(x)).numpy()
    finite = np.isfinite(ref) & (ref != 0)
    err = np.abs(got - ref)[finite] / np.spacing(np.abs(ref[finite]))
    assert err.max() <= FLOAT64_ULPS[name]
    x32 = x.astype(np.float32)
    ref32 = _reference(name, x32)
    got32 = getattr(kael, name)(kael.tensor(x32)).numpy().astype(np.float64)
    finite = np.isfinite(ref32) & (np.abs(ref32) > 1e-45)
    spacing = np.spacing(np.abs(ref32[finite]).astype(np.float32)).astype(np.float64)
    assert (np.abs(got32[finite] - ref32[finite]) / spacing).max() <= 0.5001


# ---- i0, i0e, i1, i1e, ndtr, log_ndtr, ndtri, erfcx, entr, xlog1py, zeta, polygamma,
# multigammaln (kael.special; i0 and polygamma also kael.NAME and Tensor.NAME) ------------------

NEW_UNARY = ["i0", "i0e", "i1", "i1e", "ndtr", "log_ndtr", "ndtri", "erfcx", "entr"]


def _kael_fn(name: str):
    return getattr(kael.special, name)


def _regimes(name: str, n: int = 60) -> np.ndarray:
    """Values over each function's regimes: small, the series' switch points, large,
    negative (ndtri's inputs in [0, 1], deep into both tails)."""
    if name == "ndtri":
        tails = np.exp(RNG.uniform(-80, -1, n // 3))
        return np.concatenate([RNG.uniform(0, 1, n), tails, 1 - tails, [0.5, 0.125, 0.875]])
    small = np.exp(RNG.uniform(-20, 0, n // 3))
    x = np.concatenate([RNG.uniform(-12, 12, n), small, -small, [7.9, 8.0, 8.1, -8.0]])
    if name in ("i0", "i1"):
        return np.concatenate([x, RNG.uniform(-85, 85, n // 3)])  # float32's exp below 88.7
    if name in ("i0e", "i1e", "entr"):
        return np.concatenate([x, RNG.uniform(-500, 500, n // 3), [1e6, -1e6]])
    if name in ("ndtr", "log_ndtr"):
        return np.concatenate([x, RNG.uniform(-37, 9, n // 3), [-1.0, 1.0, -30.0]])
    return np.concatenate([x, RNG.uniform(-26, 80, n // 3), [11.9, 12.0, 12.1, 1e4]])  # erfcx


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
@pytest.mark.parametrize("name", NEW_UNARY)
def test_new_functions_match_torch_special(name, dtype):
    """float64 within 1e-12 of PyTorch's (its own errors: erfcx 431 ulp, log_ndtr 1249);
    float32 within 2e-5 of PyTorch's float32 kernels (theirs err up to 142 ulp in
    log_ndtr's tails) and within 3e-7 (an ulp and a bit) of its float64 values rounded."""
    x = _regimes(name)
    kx, tx = pair(x, dtype)
    got = _kael_fn(name)(kx)
    tol = 1e-12 if dtype is kael.float64 else 2e-5
    close_to_torch(got, getattr(torch.special, name)(tx), tol, equal_nan=True)
    if dtype is kael.float32:
        wide = getattr(torch.special, name)(tx.double()).float()
        close_to_torch(got, wide, 3e-7, equal_nan=True)


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
@pytest.mark.parametrize("name", NEW_UNARY)
def test_new_functions_special_values_are_torch_s(name, dtype):
    """0, -0, +-1, +-inf, NaN, the series' switch at 8, ndtri's 0 and 1 and outside [0, 1]:
    PyTorch's values to 1e-6 with their class (inf, NaN, zero) and sign (ndtr's: PyTorch's
    0.5 erfc(-x / sqrt 2) in float64, its own (1 + erf) / 2 losing the lower tail)."""
    values = SPECIAL + [8.0, -8.0, 0.25, 1.5, 40.0, -40.0, 1e-300, 1e300, -1e300]
    kx, tx = pair(np.array(values), dtype)
    got = torch.from_dlpack(_kael_fn(name)(kx))
    expected = getattr(torch.special, name)(tx)
    if name == "ndtr":  # PyTorch's (1 + erf) / 2 is 0 in the lower tail: its erfc form
        expected = (0.5 * torch.erfc(-tx.double() / math.sqrt(2))).to(tx.dtype)
    rtol = 1e-6 if dtype is kael.float64 else 5e-6  # PyTorch's float32 log_ndtr: 1.1e-6 off
    torch.testing.assert_close(got, expected, rtol=rtol, atol=0, equal_nan=True)
    same = ~torch.isnan(expected)
    assert torch.equal(torch.signbit(got[same]), torch.signbit(expected[same]))


def test_erfcx_and_ndtr_of_huge_negative_x_are_plus_inf_and_plus_zero():
    """Past exp's range the low part of x^2 (above 1 once ulp(x^2) >= 2) is not applied:
    erfcx is +inf (not -inf or NaN) and ndtr +0.0 (not -0.0) for every huge negative x."""
    x = -np.exp(np.random.default_rng(7).uniform(math.log(40.0), math.log(1e300), 4000))
    huge = np.concatenate([x, [-1e20, -3.75e20, -5.5e18, -1.343e8, -np.inf]])
    kx, tx = pair(huge, kael.float64)
    for name in ("erfcx", "ndtr"):
        got = torch.from_dlpack(_kael_fn(name)(kx))
        expected = getattr(torch.special, name)(tx)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert torch.equal(got, expected), name
        assert torch.equal(torch.signbit(got), torch.signbit(expected)), name


# PyTorch has no half kernels for these: kael's are compared with its float32 values rounded.
NO_TORCH_HALF = ("log_ndtr", "ndtri", "erfcx")


@pytest.mark.parametrize("name", NEW_UNARY + ["polygamma", "multigammaln"])
def test_new_functions_integer_bool_half_inputs_and_layouts(name):
    """int64 and bool give the default float dtype, float16 and bfloat16 their own (computed
    wide, rounded once); 0-d, empty, transposed, sliced and expanded inputs give torch's
    shapes and values."""

    def call(lib, x):
        if name == "polygamma":
            return lib.special.polygamma(2, x)
        if name == "multigammaln":
            return lib.special.multigammaln(x, 3)
        return getattr(lib.special, name)(x)

    ints = RNG.integers(1, 7, 9)
    inputs = [(ints, kael.int64), (ints.astype(np.float64), kael.float16)]
    inputs.append((ints / 8 if name == "ndtri" else ints.astype(np.float64), kael.bfloat16))
    if name != "multigammaln":  # PyTorch refuses bool there (tested below)
        inputs.append((np.array([0, 1, 1, 0]), kael.bool))
    for values, dtype in inputs:
        kx, tx = pair(values, dtype)
        tol = {kael.float16: 2e-3, kael.bfloat16: 1.6e-2}.get(dtype, 1e-6)
        if dtype.is_half and name in NO_TORCH_HALF:
            expected = call(torch, tx.float()).to(tx.dtype)
        else:
            expected = call(torch, tx)
        close_to_torch(call(kael, kx), expected, tol, equal_nan=True)
    base = RNG.uniform(0.05, 0.95, (6, 4)) if name == "ndtri" else RNG.uniform(1.5, 6, (6, 4))
    kx, tx = pair(base)
    for k, t in strided_views(kx, tx):
        close_to_torch(call(kael, k), call(torch, t), 2e-6, equal_nan=True)


def test_xlog1py_matches_torch_with_numbers_broadcasting_and_special_values():
    x = np.array([0.0, 0.0, 0.0, 1.0, -2.0, 3.5, np.inf, np.nan, 2.0])
    y = np.array([np.nan, -1.0, np.inf, -1.0, 0.5, 1e-20, 2.0, 1.0, -2.0])
    for dtype in (kael.float32, kael.float64):
        kx, tx = pair(x, dtype)
        ky, ty = pair(y, dtype)
        got = kael.special.xlog1py(kx, ky)
        close_to_torch(got, torch.special.xlog1py(tx, ty), 1e-6, equal_nan=True)
    kx, tx = pair(RNG.uniform(-3, 3, (3, 1)))
    ky, ty = pair(RNG.uniform(-0.9, 5, (1, 4)), kael.float64)
    close_to_torch(kael.special.xlog1py(kx, ky), torch.special.xlog1py(tx, ty), 1e-12)
    ki, ti = pair(np.array([1, 2, 0]), kael.int64)
    close_to_torch(kael.special.xlog1py(2, ki), torch.special.xlog1py(2, ti), 1e-6)
    close_to_torch(kael.special.xlog1py(ki, 3.0), torch.special.xlog1py(ti, 3.0), 1e-6)


def test_zeta_matches_torch_over_its_regimes_and_special_values():
    """q > 0 small and large, q < 0 (integer x only: NaN otherwise), x near 1 and large;
    x = 1 and q a non-positive integer give +inf, x < 1 NaN, as PyTorch."""
    rng = np.random.default_rng(271)  # its own draws: no other test's order changes them
    q = np.concatenate(
        [np.exp(rng.uniform(-12, 12, 60)), rng.uniform(-9, -0.01, 40), [1.0, 9.0, 1e300]]
    )
    s = rng.integers(2, 14, q.size).astype(np.float64)
    s[:30] = rng.uniform(1.001, 40, 30)  # non-integer exponents (q > 0 there)
    s[-1] = 3.0  # zeta(2, 1e300) is 1e-300 in kael, 0 in torch: a documented departure
    kx, tx = pair(s, kael.float64)
    kq, tq = pair(q, kael.float64)
    got = torch.from_dlpack(kael.special.zeta(kx, kq))
    expected = torch.special.zeta(tx, tq)
    # q < 0: cancellation near zeros, so within 1e-12 of the largest term |q - round(q)|^-s
    largest = torch.maximum(expected.abs(), (tq - tq.round()).abs() ** -tx)
    scale = torch.where(tq < 0, largest, expected.abs())
    assert ((got - expected).abs() <= 1e-12 * scale).all()
    specials = [
        (2.0, 0.0), (2.0, -1.0), (2.0, -2.5), (1.0, 3.0), (0.5, 3.0), (np.inf, 2.0),
        (3.0, -2.5), (2.5, -2.5), (np.nan, 1.0), (2.0, np.nan), (2.0, np.inf), (1.0, np.nan),
    ]  # fmt: skip
    for dtype in (kael.float32, kael.float64):
        kx, tx = pair(np.array([a for a, _ in specials]), dtype)
        kq, tq = pair(np.array([b for _, b in specials]), dtype)
        got = torch.from_dlpack(kael.special.zeta(kx, kq))
        torch.testing.assert_close(
            got, torch.special.zeta(tx, tq), rtol=1e-6, atol=0, equal_nan=True
        )
    ki, ti = pair(np.array([2, 3, 4]), kael.int64)
    close_to_torch(kael.special.zeta(ki, 2), torch.special.zeta(ti, 2), 1e-6)
    close_to_torch(kael.special.zeta(2.0, ki), torch.special.zeta(2.0, ti), 1e-6)
    kx, tx = pair(RNG.uniform(1.5, 6, (2, 1)))
    kq, tq = pair(RNG.uniform(0.1, 6, (1, 3)))
    close_to_torch(kael.special.zeta(kx, kq), torch.special.zeta(tx, tq), 2e-6)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 7])
def test_polygamma_matches_torch_function_method_and_in_place(n):
    """x > 0 and x < 0 in float64 (n = 1 within 1e-8: PyTorch's trigamma is good to 1e-9;
    x < 0 near the function's zeros: within 1e-12 of the largest term n! / d^(n + 1), d
    the distance to the nearest integer) and float32; Tensor.polygamma(n) and polygamma_."""
    x = np.concatenate([np.exp(RNG.uniform(-8, 8, 60)), RNG.uniform(-7, -0.01, 30)])
    kx, tx = pair(x, kael.float64)
    got = torch.from_dlpack(kael.special.polygamma(n, kx))
    expected = torch.special.polygamma(n, tx)
    rtol = 1e-8 if n == 1 else 1e-12
    largest = math.factorial(n) * (tx - tx.round()).abs() ** -(n + 1)
    scale = torch.where(tx < 0, torch.maximum(expected.abs(), largest), expected.abs())
    assert ((got - expected).abs() <= rtol * scale).all()
    kx32, tx32 = pair(x[:60], kael.float32)
    close_to_torch(kael.polygamma(n, kx32), torch.polygamma(n, tx32), 2e-5)
    close_to_torch(kx32.polygamma(n), tx32.polygamma(n), 2e-5)
    view = kx32[::2]
    assert view.polygamma_(n) is view
    tx32[::2].polygamma_(n)
    close_to_torch(kx32, tx32, 2e-5)


def test_polygamma_special_values_and_poles():
    """0, +-inf, NaN, the negative integers: PyTorch's, except polygamma(1, x) at the
    negative integers, +inf (its poles), where PyTorch's trigamma gives a large finite
    pi^2 / sin(pi x)^2 of a rounded sine."""
    values = np.array([0.0, -0.0, 1.0, -2.5, 1e-300, 1e300, 1e30, np.inf, -np.inf, np.nan])
    for n in (1, 2, 3, 6):
        for dtype in (kael.float32, kael.float64):
            kx, tx = pair(values, dtype)
            got = torch.from_dlpack(kael.special.polygamma(n, kx))
            expected = torch.special.polygamma(n, tx)
            torch.testing.assert_close(got, expected, rtol=1e-6, atol=0, equal_nan=True)
    kx, tx = pair(np.array([-1.0, -2.0, -7.0]), kael.float64)
    assert torch.from_dlpack(kael.special.polygamma(1, kx)).eq(np.inf).all()
    assert (torch.special.polygamma(1, tx) > 1e30).all()
    for n, sign in ((2, -1), (3, 1)):
        got = torch.from_dlpack(kael.special.polygamma(n, kx))
        assert got.eq(sign * np.inf).all() and torch.equal(got, torch.special.polygamma(n, tx))


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.float16], ids=str)
@pytest.mark.parametrize("p", [1, 2, 3, 5])
def test_multigammaln_matches_torch(p, dtype):
    """Inside the domain (x > (p - 1) / 2), large x, and below it, where PyTorch (2.x)
    checks nothing: lgamma's values (+inf at its poles)."""
    x = np.concatenate([(p - 1) / 2 + np.exp(RNG.uniform(-6, 4, 30)), [0.5, -1.0, 1.0]])
    kx, tx = pair(x, dtype)
    close_to_torch(kael.special.multigammaln(kx, p), torch.special.multigammaln(tx, p), TOL[dtype])
    ki, ti = pair(np.array([[3, 4], [5, 9]]), kael.int64)
    close_to_torch(kael.special.multigammaln(ki, p), torch.special.multigammaln(ti, p), 2e-6)


def test_bad_arguments_raise_typed_errors_naming_the_values():
    x = kael.tensor([1.0, 2.0])
    with pytest.raises(kael.ValueError, match=r"does not support negative n, got n = -1"):
        kael.special.polygamma(-1, x)
    with pytest.raises(kael.ValueError, match=r"does not support negative n, got n = -3"):
        x.polygamma(-3)
    with pytest.raises(kael.TypeError, match=r"argument 'n' must be int, not float"):
        kael.polygamma(1.5, x)
    with pytest.raises(kael.TypeError, match=r"argument 'n' must be int, not bool"):
        kael.polygamma(True, x)
    with pytest.raises(kael.TypeError, match="polygamma"):
        kael.special.polygamma(1, [1.0, 2.0])
    with pytest.raises(kael.ValueError, match=r"p has to be greater than or equal to 1, got p = 0"):
        kael.special.multigammaln(x, 0)
    with pytest.raises(kael.ValueError, match=r"got p = -2"):
        kael.special.multigammaln(x, -2)
    with pytest.raises(kael.TypeError, match=r"argument 'p' must be int, not float"):
        kael.special.multigammaln(x, 2.0)
    with pytest.raises(kael.TypeError, match="may not be a boolean tensor"):
        kael.special.multigammaln(kael.tensor([True]), 1)
    for name in NEW_UNARY:
        with pytest.raises(kael.TypeError, match=rf"{name}.*list"):
            _kael_fn(name)([1.0, 2.0])
    with pytest.raises(kael.TypeError, match="zeta: expected at least one tensor"):
        kael.special.zeta(2.0, 3.0)
    with pytest.raises(kael.TypeError, match="xlog1py: expected at least one tensor"):
        kael.special.xlog1py(2.0, 3.0)


def test_new_functions_fuse_under_compile():
    @kael.compile
    def chain(x):
        y = kael.special.i0e(x) + kael.special.zeta(x.abs() + 2, 3.0) + x.abs().polygamma(2)
        return y + kael.special.log_ndtr(x) * kael.special.erfcx(x) + kael.i0(x)

    kx, tx = pair(RNG.uniform(-3, 3, (5, 7)))
    expected = torch.special.i0e(tx) + torch.special.zeta(tx.abs() + 2, 3.0)
    expected = expected + tx.abs().polygamma(2) + torch.i0(tx)
    expected = expected + torch.special.log_ndtr(tx) * torch.special.erfcx(tx)
    for _ in range(2):  # the trace, then the replay
        close_to_torch(chain(kx), expected, 1e-5)


def _ncdf_inverse(p: float, start: float) -> float:
    """ndtri(p) to 40 digits: Newton's steps on mpmath's ncdf from kael's value."""
    if not math.isfinite(start):
        return start  # ndtri(0) and ndtri(1)
    x = mp.mpf(start)
    for _ in range(3):
        x = x - (mp.ncdf(x) - p) / mp.npdf(x)
    return float(x)


def _log_ncdf(v: float):
    x = mp.mpf(v)
    return mp.log(mp.ncdf(x)) if v < 0 else mp.log1p(-mp.ncdf(-x))


MP_NEW = {
    "i0": lambda v: mp.besseli(0, v),
    "i1": lambda v: mp.besseli(1, v),
    "i0e": lambda v: mp.besseli(0, v) * mp.exp(-abs(v)),
    "i1e": lambda v: mp.besseli(1, v) * mp.exp(-abs(v)),
    "ndtr": mp.ncdf,
    "log_ndtr": _log_ncdf,
    "erfcx": lambda v: mp.erfc(v) * mp.exp(v * v),
    "entr": lambda v: -v * mp.log(v),
}
# float64 ulps measured over these samples (PyTorch's own in brackets): i0 2 [6], i1 3 [10],
# i0e 6 and i1e 7 [7], ndtr 5 [none in the lower tail], log_ndtr 5 [1249], erfcx 4 [431],
# entr 2, ndtri 3 (Cephes's algorithm, as PyTorch's and SciPy's); float32 0.5 ulp.
NEW_ULPS = {
    "i0": 4, "i1": 8, "i0e": 6, "i1e": 7, "ndtr": 5, "log_ndtr": 5, "erfcx": 4, "entr": 2,
    "ndtri": 3,
}  # fmt: skip


def _new_samples(name: str, n: int) -> np.ndarray:
    """Samples of a generator of their own: the measured bounds hold for these."""
    RNG = np.random.default_rng(43)  # noqa: N806
    if name == "ndtri":
        return np.concatenate([RNG.uniform(0, 1, n // 2), np.exp(RNG.uniform(-700, -1, n // 2))])
    if name == "entr":
        return np.exp(RNG.uniform(-50, 50, n))
    if name in ("ndtr", "log_ndtr"):
        return np.concatenate([RNG.uniform(-38, 9, n // 2), RNG.uniform(-40, 40, n // 2)])
    if name == "erfcx":
        return np.concatenate([RNG.uniform(-26, 40, n // 2), np.exp(RNG.uniform(-20, 30, n // 2))])
    return np.concatenate([RNG.uniform(-30, 30, n // 2), np.exp(RNG.uniform(-20, 6.5, n // 2))])


@pytest.mark.parametrize("name", list(NEW_ULPS))
def test_new_functions_measured_ulp_bounds(name):
    x = _new_samples(name, 600)
    got = _kael_fn(name)(kael.tensor(x)).numpy()
    if name == "ndtri":
        ref = np.array([_ncdf_inverse(float(p), float(g)) for p, g in zip(x, got)])
    else:
        ref = np.array([float(MP_NEW[name](mp.mpf(float(v)))) for v in x])
    finite = np.isfinite(ref) & (ref != 0)
    err = np.abs(got - ref)[finite] / np.spacing(np.abs(ref[finite]))
    assert err.max() <= NEW_ULPS[name]
    x32 = x.astype(np.float32)
    got32 = _kael_fn(name)(kael.tensor(x32)).numpy().astype(np.float64)
    if name == "ndtri":
        ref32 = np.array([_ncdf_inverse(float(p), float(g)) for p, g in zip(x32, got32)])
    else:
        ref32 = np.array([float(MP_NEW[name](mp.mpf(float(v)))) for v in x32])
    finite = np.isfinite(ref32) & (np.abs(ref32) > 1.2e-38) & (np.abs(ref32) < 3.4e38)
    spacing = np.spacing(np.abs(ref32[finite]).astype(np.float32)).astype(np.float64)
    assert (np.abs(got32[finite] - ref32[finite]) / spacing).max() <= 0.5001


def test_zeta_and_polygamma_measured_bounds():
    """zeta for q > 0 within 7 ulp of 80-digit mpmath; polygamma n = 1..4 within 6 ulp for
    x > 0 and, for x < 0, within 5 ulps of the largest term n! / d^(n + 1)."""
    RNG = np.random.default_rng(44)  # noqa: N806
    mp.mp.dps = 80
    try:
        q = np.exp(RNG.uniform(-10, 10, 300))
        s = np.where(
            RNG.uniform(size=300) < 0.5, RNG.integers(2, 14, 300), RNG.uniform(1.01, 20, 300)
        )
        got = kael.special.zeta(kael.tensor(s), kael.tensor(q)).numpy()
        ref = np.array([float(mp.zeta(mp.mpf(float(a)), mp.mpf(float(b)))) for a, b in zip(s, q)])
        finite = np.isfinite(ref) & (ref != 0)
        assert (np.abs(got - ref)[finite] / np.spacing(np.abs(ref[finite]))).max() <= 7
    finally:
        mp.mp.dps = 40
    for n in (1, 2, 3, 4):
        x = np.concatenate([np.exp(RNG.uniform(-10, 10, 150)), RNG.uniform(-8, -0.01, 100)])
        got = kael.special.polygamma(n, kael.tensor(x)).numpy()
        ref = np.array([float(mp.re(mp.polygamma(n, mp.mpf(float(v))))) for v in x])
        largest = math.factorial(n) * np.abs(x - np.round(x)) ** -(n + 1)
        scale = np.where(x > 0, np.abs(ref), np.maximum(np.abs(ref), largest))
        err = np.abs(got - ref) / np.spacing(scale)
        assert err[x > 0].max() <= 6 and err[x < 0].max() <= 5


def test_i0_is_a_function_a_method_and_in_place_as_torch_s():
    kx, tx = pair(RNG.uniform(-10, 10, 12))
    close_to_torch(kael.i0(kx), torch.i0(tx), 2e-6)
    close_to_torch(kx.i0(), tx.i0(), 2e-6)
    assert kael.special.i0 is kael.i0
    view = kx[::3]
    assert view.i0_() is view
    tx[::3].i0_()
    close_to_torch(kx, tx, 2e-6)
    with pytest.raises(kael.TypeError, match="can't be cast to the desired output type"):
        kael.ones(3, dtype=kael.int64).i0_()


# ---- mvlgamma: torch.mvlgamma, Tensor.mvlgamma and Tensor.mvlgamma_ --------------------------


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
@pytest.mark.parametrize("p", [1, 2, 4])
def test_mvlgamma_is_multigammaln_as_function_and_methods(p, dtype):
    x = (p - 1) / 2 + np.exp(RNG.uniform(-4, 3, (4, 6)))
    kx, tx = pair(x, dtype)
    tol = TOL[dtype]
    close_to_torch(kael.mvlgamma(kx, p), torch.mvlgamma(tx, p), tol)
    close_to_torch(kx.mvlgamma(p), tx.mvlgamma(p), tol)
    close_to_torch(kx.mvlgamma(p=p), tx.mvlgamma(p=p), tol)
    close_to_torch(kael.mvlgamma(kx.T, p), torch.mvlgamma(tx.T, p), tol)
    close_to_torch(kael.mvlgamma(kx[::2, 1::3], p), torch.mvlgamma(tx[::2, 1::3], p), tol)
    close_to_torch(kael.mvlgamma(kx[1, 2], p), torch.mvlgamma(tx[1, 2], p), tol)
    close_to_torch(kael.mvlgamma(kx[:0], p), torch.mvlgamma(tx[:0], p), 0)
    view, tview = kx[:, ::2], tx[:, ::2]
    assert view.mvlgamma_(p) is view
    tview.mvlgamma_(p)
    close_to_torch(kx, tx, tol)


def test_mvlgamma_of_integers_gives_the_default_float():
    ki, ti = pair(np.array([[3, 4], [5, 9]]), kael.int64)
    close_to_torch(kael.mvlgamma(ki, 2), torch.mvlgamma(ti, 2), 2e-6)
    close_to_torch(ki.mvlgamma(3), ti.mvlgamma(3), 2e-6)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: kael.mvlgamma(kael.tensor([2.0]), 0), kael.ValueError, r"mvlgamma\(\): p has to be greater than or equal to 1, got p = 0"),
        (lambda: kael.mvlgamma(kael.tensor([2.0]), 1.0), kael.TypeError, r"mvlgamma\(\): argument 'p' must be int, not float"),
        (lambda: kael.tensor([True]).mvlgamma(2), kael.TypeError, "may not be a boolean tensor"),
        (lambda: kael.tensor([3, 4]).mvlgamma_(2), kael.TypeError, "mvlgamma_: result type float32 can't be cast to the desired output type int64"),
        (lambda: kael.tensor([2.0]).mvlgamma_(-1), kael.ValueError, "got p = -1"),
    ],
)  # fmt: skip
def test_mvlgamma_refuses_what_torch_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---- zeta and polygamma for q just below 0: no rounding of q - floor(q) ----------------------

ZETA_SMALL_NEGATIVE_Q = [-1e-300, -1e-17, -1e-16, -1e-10, -0.1, -0.3, -0.49, -0.51, -0.9, -3.7]


def _ulps_from_mpmath(values, x: float, qs) -> np.ndarray:
    """|value - zeta(x, q)| in units of 2**-52 |zeta(x, q)| (40-digit mpmath)."""
    ref = [mp.zeta(x, mp.mpf(q)) for q in qs]
    return np.array([float(abs((mp.mpf(v) - r) / r)) / 2**-52 for v, r in zip(values, ref)])


@pytest.mark.parametrize("x", [2.0, 3.0, 4.0, 7.0])
def test_zeta_for_q_just_below_zero_is_as_accurate_as_torch(x):
    """q in (-0.5, 0) and down to -1e-16 kept exact (the nearest term's base is -q): kael
    within one ulp of torch's error against mpmath, finite where the result is."""
    qs = [q for q in ZETA_SMALL_NEGATIVE_Q if math.log(-q) * -x < 690]
    kq, tq = pair(np.array(qs), kael.float64)
    got = kael.special.zeta(kael.full((len(qs),), x, dtype=kael.float64), kq).numpy()
    expected = torch.special.zeta(torch.full((len(qs),), x, dtype=torch.float64), tq).numpy()
    assert np.isfinite(got).all() and np.isfinite(expected).all()
    assert (_ulps_from_mpmath(got, x, qs) <= _ulps_from_mpmath(expected, x, qs) + 1).all()


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
def test_zeta_and_polygamma_just_below_zero_match_torch(dtype):
    """Down to -1e-300 (q^-x overflows to the pole's sign of inf, as torch's sum does);
    float32 to torch's float32 kernels' accuracy (kael computes in float64), polygamma to
    torch's trigamma's (1e-9)."""
    tol = 1e-5 if dtype is kael.float32 else 1e-12
    kq, tq = pair(np.array(ZETA_SMALL_NEGATIVE_Q), dtype)
    for x in (2.0, 3.0):
        close_to_torch(kael.special.zeta(x, kq), torch.special.zeta(x, tq), tol)
    for n in (1, 2, 3):
        close_to_torch(kael.polygamma(n, kq), torch.polygamma(n, tq), max(tol, 1e-8))


def test_zeta_of_infinite_x_follows_torch_on_both_sides_of_zero():
    """zeta(inf, q): +inf for q < 0 not an integer (a term below 1 in magnitude) and for
    q in (0, 1), 1 at q = 1, NaN above (torch's 0 * inf), +inf at the poles."""
    qs = [-0.5, -2.5, -1e-17, -7.25, -2.0, 0.0, 0.5, 1.0, 1.5, 10.0]
    for dtype in (kael.float32, kael.float64):
        kq, tq = pair(np.array(qs), dtype)
        kx, tx = pair(np.full(len(qs), np.inf), dtype)
        close_to_torch(kael.special.zeta(kx, kq), torch.special.zeta(tx, tq), 0, equal_nan=True)


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
def test_zeta_of_huge_integer_x_at_negative_q_is_its_infinite_largest_term(dtype):
    """For q < 0 not an integer and x from 1e12 (every such x an integer, even past 2^53) an
    infinite largest term is PyTorch's sum, though zeta(x, q > 0) is its NaN past 1e14:
    +inf for even x, -inf for odd x where only the negative term overflows, NaN where both
    do (inf - inf)."""
    xs = [1e12, 1e13 + 1, 1e14, 1e14 + 1, 1e15, 2.0**52, 2.0**52 + 1, 2.0**53 - 1, 2.0**53]
    xs += [1e17, 1e30, 1e300]
    qs = [-0.5, -1.5, -2.5, -0.25, -0.75, -0.3, -0.9, -7.9, -1e-30]
    x, q = np.meshgrid(xs, qs, indexing="ij")
    kx, tx = pair(x, dtype)
    kq, tq = pair(q, dtype)
    got = torch.from_dlpack(kael.special.zeta(kx, kq))
    expected = torch.special.zeta(tx, tq)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=True)
    assert torch.isinf(expected).sum() > expected.numel() // 2


# ---- zeta for odd x near negative half-integers: no cancelling terms -------------------------


def _hurwitz_reference(x: int, q: float) -> mp.mpf:
    """zeta(x, q) at 300 digits; for q < 0 by the shift over the m negative terms,
    (zeta(x, f) + (-1)^x zeta(x, r)) - (-1)^x zeta(x, r + m) (f = q + m, r = 1 - f), whose
    parts mpmath sums over positive bases (its own sum loses everything near q = -1e6)."""
    with mp.workdps(300):
        q = mp.mpf(q)
        if q > 0:
            return mp.zeta(x, q)
        m = -mp.floor(q)
        f = q + m
        sign = -1 if x % 2 else 1
        return (mp.zeta(x, f) + sign * mp.zeta(x, 1 - f)) - sign * mp.zeta(x, 1 - f + m)


def _zeta_ulps(xs, qs, dtype=kael.float64) -> np.ndarray:
    """kael's zeta(x, q) in `dtype`: its distance from the reference in units of the
    reference's spacing in that dtype."""
    np_dtype = {kael.float64: np.float64, kael.float32: np.float32}[dtype]
    got = kael.special.zeta(kael.tensor(xs, dtype=dtype), kael.tensor(qs, dtype=dtype)).numpy()
    ref = np.array([float(_hurwitz_reference(int(x), q)) for x, q in zip(xs, qs)])
    spacing = np.spacing(np.abs(ref).astype(np_dtype)).astype(np.float64)
    return np.abs(got.astype(np.float64) - ref) / spacing


def test_hurwitz_reference_agrees_with_mpmaths_own_sum_where_that_is_stable():
    for x, q in ((5, -1000000.5), (3, -2.25), (4, -7.5), (7, -0.3), (9, -10.5)):
        assert mp.almosteq(_hurwitz_reference(x, q), mp.zeta(x, mp.mpf(q)), rel_eps=1e-30)


ZETA_HALF_INTEGERS = [-0.5, -1.5, -2.5, -10.5, -1000.5, -123456.5, -1000000.5, -1e15 - 0.5]


@pytest.mark.parametrize("x", [3, 5, 7, 15, 21])
def test_zeta_of_odd_x_at_negative_half_integers_keeps_full_precision(x):
    """There f^-x and r^-x cancel exactly, and so do zeta(x, f + 1) and zeta(x, r + 1):
    the value is the far tail zeta(x, r + m) alone (zeta(5, -1000000.5) = 2.5e-25), not 0."""
    qs = ZETA_HALF_INTEGERS
    assert _zeta_ulps([float(x)] * len(qs), qs).max() <= 4
    got = kael.special.zeta(kael.tensor(5.0, dtype=kael.float64), -1000000.5).item()
    assert got == pytest.approx(2.4999900000229166e-25, rel=1e-15)


@pytest.mark.parametrize("x", [3, 5, 9, 21])
@pytest.mark.parametrize("n", [0, 1, 10, 1000, 10**6])
def test_zeta_of_odd_x_near_negative_half_integers_keeps_full_precision(x, n):
    """q = -n - 1/2 + d for d from 2^-40 to 1e-3 (|x (f - r)| < 1/4: the terms paired)
    and past that limit (|x (f - r)| from 0.26 to 1: the terms apart), on both sides of
    -n - 1/2: within 8 ulps (zeta's zeros near there cancel a little more)."""
    offsets = [2.0**-40, 2.0**-20, 1e-6, 1e-3] + [c / (2 * x) for c in (0.2, 0.24, 0.26, 1.0)]
    qs = [-n - 0.5 + s * d for d in offsets for s in (1, -1)]
    assert _zeta_ulps([float(x)] * len(qs), qs).max() <= 8


@pytest.mark.parametrize("x", [2, 4, 6])
def test_zeta_of_even_x_at_negative_half_integers_stays_accurate(x):
    """Even x has no cancelling pair (both halves add): the old sum, within 4 ulps."""
    qs = ZETA_HALF_INTEGERS[:-1]
    assert _zeta_ulps([float(x)] * len(qs), qs).max() <= 4


def test_zeta_of_float32_at_negative_half_integers_rounds_once():
    qs = [-0.5, -2.5, -10.5, -1000.5, -65536.5]
    for x in (3.0, 5.0):
        assert _zeta_ulps([x] * len(qs), qs, kael.float32).max() <= 0.5001


@pytest.mark.parametrize("n", [2, 4])
def test_polygamma_of_even_order_at_negative_half_integers_keeps_full_precision(n):
    """polygamma(n, x) = -n! zeta(n + 1, x) for even n: its odd zeta, near -k - 1/2 too."""
    xs = [-0.5, -3.5, -40.5, -1000.5, -3.5 + 2.0**-30, -40.5 - 1e-9]
    got = kael.polygamma(n, kael.tensor(xs, dtype=kael.float64)).numpy()
    ref = np.array([float(-math.factorial(n) * _hurwitz_reference(n + 1, v)) for v in xs])
    assert (np.abs(got - ref) / np.spacing(np.abs(ref))).max() <= 8


@pytest.mark.parametrize("n", [171, 10**6, 2**31])
def test_polygamma_of_a_huge_order_is_immediate(n):
    """n! is inf in float64 past 170: it is not computed as an exact integer first
    (math.factorial(2**31) ran for minutes)."""
    import time

    start = time.perf_counter()
    got = kael.polygamma(n, kael.tensor([0.5]))
    assert time.perf_counter() - start < 5
    assert not math.isfinite(got.item())
