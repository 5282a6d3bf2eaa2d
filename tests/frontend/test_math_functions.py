"""The math functions of frontend/math_functions.py against PyTorch (values, dtype, shape,
special values, layouts, half types) and their measured accuracy against float64
references; typed errors for what PyTorch refuses."""

import numpy as np
import pytest
import torch
from parity_helpers import LAYOUTS, close_to_torch
from parity_helpers import torch_pair as pair

import kael

RNG = np.random.default_rng(37)
SPECIAL = [0.0, -0.0, 1.5, -2.25, np.nan, np.inf, -np.inf, 1e-30, 3e38, -7.0]
UNARY = [
    "deg2rad", "rad2deg", "frac", "log10", "sgn", "nan_to_num", "sinh", "cosh", "asinh",
    "acosh", "atanh", "atan", "asin", "acos",
]  # fmt: skip
BINARY = ["xlogy", "logaddexp", "logaddexp2", "hypot", "atan2"]
TOL = {kael.float32: 2e-6, kael.float64: 1e-14, kael.float16: 2e-3, kael.bfloat16: 1.6e-2}


def _values(dtype):
    values = np.concatenate([RNG.standard_normal(30) * 5, SPECIAL])
    if dtype is kael.float16:
        values = np.clip(values, -6e4, 6e4)
    return values


@pytest.mark.parametrize(
    "dtype", [kael.float32, kael.float64, kael.float16, kael.bfloat16], ids=str
)
@pytest.mark.parametrize("name", UNARY)
def test_unary_functions_match_torch(name, dtype):
    values = _values(dtype)
    if name in ("log10", "acosh"):
        values = np.abs(values) + (1 if name == "acosh" else 0)
    if name in ("atanh", "asin", "acos"):
        values = np.tanh(values)
    kx, tx = pair(values, dtype)
    close_to_torch(getattr(kael, name)(kx), getattr(torch, name)(tx), TOL[dtype], equal_nan=True)
    close_to_torch(getattr(kx, name)(), getattr(tx, name)(), TOL[dtype], equal_nan=True)


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.float16], ids=str)
@pytest.mark.parametrize("name", BINARY)
def test_binary_functions_match_torch_on_every_pair_of_special_values(name, dtype):
    values = _values(dtype)
    ka, ta = pair(values.reshape(-1, 1), dtype)
    kb, tb = pair(values.reshape(1, -1), dtype)
    close_to_torch(
        getattr(kael, name)(ka, kb), getattr(torch, name)(ta, tb), TOL[dtype], equal_nan=True
    )


@pytest.mark.parametrize("name", ["deg2rad", "rad2deg", "log10", "sgn", "nan_to_num"])
def test_integer_inputs_follow_torch_dtype_rules(name):
    kx, tx = pair(RNG.integers(1, 50, 7), kael.int64)
    close_to_torch(getattr(kael, name)(kx), getattr(torch, name)(tx), 2e-6)
    ky, ty = pair(RNG.integers(1, 50, 7), kael.int64)
    close_to_torch(kael.xlogy(kx, ky), torch.xlogy(tx, ty), 2e-6)
    close_to_torch(kael.xlogy(kx, 2.5), torch.xlogy(tx, 2.5), 2e-6)  # a Python number
    close_to_torch(kael.xlogy(0, ky), torch.xlogy(0, ty), 2e-6)


def test_layouts_broadcast_and_zero_d():
    ka, ta = pair(RNG.standard_normal((6, 4)))
    kb, tb = pair(RNG.standard_normal(6))
    close_to_torch(kael.hypot(ka.transpose(0, 1), kb), torch.hypot(ta.T, tb), 2e-6)
    close_to_torch(kael.logaddexp(ka[:, ::2], kb[0]), torch.logaddexp(ta[:, ::2], tb[0]), 2e-6)
    close_to_torch(kael.log10(ka.abs()[:0]), torch.log10(ta.abs()[:0]), 0)


def test_nan_to_num_replacements_and_integers():
    kx, tx = pair(np.array(SPECIAL))
    close_to_torch(kael.nan_to_num(kx, 1.0, 2.0, -3.0), torch.nan_to_num(tx, 1.0, 2.0, -3.0), 0)
    ki, ti = pair(np.arange(5), kael.int64)
    close_to_torch(kael.nan_to_num(ki), torch.nan_to_num(ti), 0)


@pytest.mark.parametrize("weight", [0.0, 0.3, 0.5, 0.9, 1.0, 1.7, "tensor"])
def test_lerp_matches_torch(weight):
    ka, ta = pair(RNG.standard_normal((5, 3)))
    kb, tb = pair(RNG.standard_normal((5, 3)))
    if weight == "tensor":
        kw, tw = pair(RNG.uniform(-1, 2, (5, 3)))
        close_to_torch(kael.lerp(ka, kb, kw), torch.lerp(ta, tb, tw), 1e-6)
        return
    close_to_torch(kael.lerp(ka, kb, weight), torch.lerp(ta, tb, weight), 1e-6)
    close_to_torch(ka.lerp(kb, weight), ta.lerp(tb, weight), 1e-6)


@pytest.mark.parametrize("equal_nan", [False, True])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64], ids=str)
def test_isclose_matches_torch(dtype, equal_nan):
    values = np.array(SPECIAL) if dtype.is_floating_point else np.arange(-3, 7)
    ka, ta = pair(values.reshape(-1, 1), dtype)
    kb, tb = pair(values.reshape(1, -1), dtype)
    for rtol, atol in ((1e-5, 1e-8), (0.5, 1.0), (0.0, 0.0)):
        args = {"rtol": rtol, "atol": atol, "equal_nan": equal_nan}
        close_to_torch(kael.isclose(ka, kb, **args), torch.isclose(ta, tb, **args), 0)


def _ulp_error(got: np.ndarray, ref: np.ndarray, scale: np.ndarray | None = None) -> float:
    """The worst error in float32 ulps of |ref| (or of `scale`, where larger)."""
    size = np.abs(ref) if scale is None else np.maximum(np.abs(ref), scale)
    spacing = np.spacing(size.astype(np.float32)).astype(np.float64)
    finite = np.isfinite(ref) & (size != 0)
    return float((np.abs(got.astype(np.float64) - ref)[finite] / spacing[finite]).max())


def _sample(n: int, log10: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Magnitudes over 1e-30 .. 1e30, both signs, as float32."""
    a, b = (np.exp(RNG.uniform(-69, 69, n)) * RNG.choice([-1.0, 1.0], n) for _ in range(2))
    return (np.abs(a) if log10 else a).astype(np.float32), b.astype(np.float32)


@pytest.mark.parametrize(
    "name, reference, bound", [("log10", np.log10, 2.0), ("hypot", np.hypot, 2.0)]
)
def test_float32_ulp_error_against_float64_references(name, reference, bound):
    """Measured: log10 1.78 ulp, hypot 1.93 (float64 NumPy as the reference)."""
    a, b = _sample(400_000, log10=name == "log10")
    fn = getattr(kael, name)
    if name == "log10":
        got, ref = fn(kael.tensor(a)).numpy(), reference(a.astype(np.float64))
    else:
        got = fn(kael.tensor(a), kael.tensor(b)).numpy()
        ref = reference(a.astype(np.float64), b.astype(np.float64))
    assert _ulp_error(got, ref) <= bound


@pytest.mark.parametrize(
    "name, reference", [("logaddexp", np.logaddexp), ("logaddexp2", np.logaddexp2)]
)
def test_logaddexp_error_is_within_three_ulps_of_the_operands_scale(name, reference):
    """max(a, b) + log1p(exp(-|a - b|)) (PyTorch's formula too) cancels where the result is
    near 0: its error is bounded by the larger operand's ulp, not the result's (measured
    over six samples of 400k: logaddexp 2.16, logaddexp2 2.08)."""
    a = RNG.uniform(-50, 50, 400_000).astype(np.float32)
    b = (a + RNG.uniform(-20, 20, 400_000)).astype(np.float32)
    got = getattr(kael, name)(kael.tensor(a), kael.tensor(b)).numpy()
    ref = reference(a.astype(np.float64), b.astype(np.float64))
    assert _ulp_error(got, ref, np.maximum(np.abs(a), np.abs(b))) <= 3.0


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: kael.frac(kael.ones(3, dtype=kael.int64)), kael.TypeError, "floating point only"),
        (
            lambda: kael.hypot(kael.ones(3, dtype=kael.int64), kael.ones(3, dtype=kael.int64)),
            kael.TypeError,
            "floating point only",
        ),
        (
            lambda: kael.logaddexp(kael.ones(3, dtype=kael.int64), 1),
            kael.TypeError,
            "floating point only",
        ),
        (
            lambda: kael.lerp(kael.ones(3), kael.ones(3, dtype=kael.float64), 0.5),
            kael.TypeError,
            "one floating dtype",
        ),
        (
            lambda: kael.isclose(kael.ones(3), kael.ones(3, dtype=kael.float64)),
            kael.TypeError,
            "must match",
        ),
        (
            lambda: kael.isclose(kael.ones(3), kael.ones(3), rtol=-1.0),
            kael.ValueError,
            "greater than or equal",
        ),
        (lambda: kael.hypot(kael.ones(3), kael.ones(4)), kael.ValueError, "broadcast"),
    ],
)
def test_bad_inputs_raise_typed_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


HYPERBOLIC = {
    "atan": (np.arctan, (-1e30, 1e30)),
    "asin": (np.arcsin, (-1.0, 1.0)),
    "acos": (np.arccos, (-1.0, 1.0)),
    "sinh": (np.sinh, (-89.0, 89.0)),  # up to float32's largest result
    "cosh": (np.cosh, (-89.0, 89.0)),
    "asinh": (np.arcsinh, (-1e30, 1e30)),
    "acosh": (np.arccosh, (1.0, 1e30)),
    "atanh": (np.arctanh, (-1.0, 1.0)),
}


@pytest.mark.parametrize("name", HYPERBOLIC)
def test_wide_functions_are_correctly_rounded_in_float32_and_close_in_float64(name):
    """The hyperbolic and inverse trigonometric functions: float32 computes in float64 and
    rounds once, within 0.5 ulp plus a hair (measured 0.49999); float64 within 4 ulp of
    NumPy's (measured 2-4)."""
    reference, (lo, hi) = HYPERBOLIC[name]
    if name == "atan":
        x = np.exp(RNG.uniform(-30, 30, 200_000)) * RNG.choice([-1.0, 1.0], 200_000)
    elif hi > 100:  # magnitudes over many decades
        x = np.exp(RNG.uniform(-30, np.log(hi), 200_000)) * RNG.choice([-1.0, 1.0], 200_000)
        x = np.abs(x) + 1 if name == "acosh" else x
    else:
        x = RNG.uniform(lo, hi, 200_000)
    x32 = x.astype(np.float32)
    got = getattr(kael, name)(kael.tensor(x32)).numpy()
    assert _ulp_error(got, reference(x32.astype(np.float64))) <= 0.5001
    got64 = getattr(kael, name)(kael.tensor(x)).numpy()
    ref64 = reference(x)
    finite = np.isfinite(ref64) & (ref64 != 0)
    assert (np.abs(got64 - ref64)[finite] / np.spacing(np.abs(ref64[finite]))).max() <= 4


def test_atan2_is_correctly_rounded_in_float32_over_every_quadrant():
    y = np.exp(RNG.uniform(-30, 30, 200_000)) * RNG.choice([-1.0, 1.0], 200_000)
    x = np.exp(RNG.uniform(-30, 30, 200_000)) * RNG.choice([-1.0, 1.0], 200_000)
    y32, x32 = y.astype(np.float32), x.astype(np.float32)
    got = kael.atan2(kael.tensor(y32), kael.tensor(x32)).numpy()
    assert _ulp_error(got, np.arctan2(y32.astype(np.float64), x32.astype(np.float64))) <= 0.5001


# ---- logit, clamp_min, clamp_max ---------------------------------------------------------------

LOGIT_VALUES = [0.0, 1e-7, 0.25, 0.5, 0.75, 1.0 - 1e-7, 1.0, 1.5, -0.5, np.nan, np.inf]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(
    "dtype", [kael.float32, kael.float64, kael.float16, kael.bfloat16], ids=str
)
@pytest.mark.parametrize("eps", [None, 0.0, 1e-3, 0.1, 0.6, -0.1])
def test_logit_matches_torch_with_and_without_eps(eps, dtype, layout):
    values = np.resize(np.array(LOGIT_VALUES), (3, 4))
    if layout == "transposed":
        kx, tx = pair(values.T.copy(), dtype)
        kx, tx = kx.t(), tx.t()
    elif layout == "sliced":
        kx, tx = pair(np.repeat(values, 2, axis=1), dtype)
        kx, tx = kx[:, ::2], tx[:, ::2]
    elif layout == "expanded":
        kx, tx = pair(values[:1], dtype)
        kx, tx = kx.expand(3, 4), tx.expand(3, 4)
    else:
        kx, tx = pair(values, dtype)
    close_to_torch(kael.logit(kx, eps), torch.logit(tx, eps), TOL[dtype], equal_nan=True)
    close_to_torch(kx.logit(eps=eps), tx.logit(eps=eps), TOL[dtype], equal_nan=True)


def test_logit_of_integers_bool_zero_d_and_empty_gives_the_default_float():
    for values, dtype in [([0, 1, 2], kael.int64), ([True, False], kael.bool), ([], kael.float32)]:
        kx, tx = pair(values, dtype)
        close_to_torch(kael.logit(kx), torch.logit(tx), 1e-6, equal_nan=True)
    kx, tx = pair(0.3, kael.float64)
    close_to_torch(kael.logit(kx, 0.4), torch.logit(tx, 0.4), 1e-14)


def test_logit_in_place_writes_self_and_refuses_integers():
    kx, tx = pair([0.1, 0.5, 0.9], kael.float32)
    assert kx.logit_(eps=0.2) is kx
    close_to_torch(kx, tx.logit_(eps=0.2), TOL[kael.float32])
    with pytest.raises(kael.TypeError, match=r"logit_: result type float32 can't be cast .* int64"):
        kael.tensor([0, 1]).logit_()
    with pytest.raises(kael.TypeError, match=r"logit\(\): eps must be a float or None, got 'x'"):
        kael.logit(kx, "x")


@pytest.mark.parametrize(
    "dtype", [kael.float32, kael.float64, kael.int64, kael.float16, kael.bfloat16], ids=str
)
@pytest.mark.parametrize("name", ["clamp_min", "clamp_max"])
def test_one_sided_clamps_match_torch_with_number_and_tensor_bounds(name, dtype):
    kx, tx = pair(np.arange(-6, 6).reshape(3, 4), dtype)
    kb, tb = pair(np.array([-2, 0, 1, 7]), dtype)
    for bound_k, bound_t in [(1, 1), (-2.5, -2.5), (kb, tb), (kb[0], tb[0])]:
        close_to_torch(getattr(kael, name)(kx, bound_k), getattr(torch, name)(tx, bound_t), 0)
        if not isinstance(bound_k, kael.Tensor) or not bound_k.ndim:
            got, want = getattr(kx.t(), name)(bound_k), getattr(tx.t(), name)(bound_t)
            close_to_torch(got, want, 0)
    k_empty, t_empty = pair(np.zeros((0, 2)), dtype)
    close_to_torch(getattr(kael, name)(k_empty, 0), getattr(torch, name)(t_empty, 0), 0)


@pytest.mark.parametrize("name", ["clamp_min", "clamp_max"])
def test_one_sided_clamps_take_bool_tensor_bounds_and_work_in_place(name):
    kx, tx = pair([True, False, True], kael.bool)
    kb, tb = pair([False, False, True], kael.bool)
    close_to_torch(getattr(kael, name)(kx, kb), getattr(torch, name)(tx, tb), 0)
    kf, tf = pair([-1.0, 0.5, 3.0], kael.float32)
    assert getattr(kf, f"{name}_")(0.75) is kf
    close_to_torch(kf, getattr(tf, f"{name}_")(0.75), 0)
    with pytest.raises(kael.TypeError, match=rf"{name}_: result type float32 can't be cast"):
        getattr(kael.tensor([1, 2]), f"{name}_")(0.5)
    what = name[-3:]
    with pytest.raises(kael.TypeError, match=rf"{name}\(\): {what} must be a number or a Tensor"):
        getattr(kael, name)(kf, None)
    with pytest.raises(kael.ValueError, match=rf"{name}: out has shape \[2\]"):
        getattr(kael, name)(kf, 0.0, out=kael.empty(2))
