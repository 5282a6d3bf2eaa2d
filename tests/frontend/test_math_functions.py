"""The math functions of frontend/math_functions.py against PyTorch (values, dtype, shape,
special values, layouts, half types) and their measured accuracy against float64
references; typed errors for what PyTorch refuses."""

import numpy as np
import pytest
import torch
from kernel_helpers import TORCH_DTYPES
from parity_helpers import LAYOUTS, close_to_torch, resized_out
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


def test_nan_to_num_writes_out_as_torch():
    kx, tx = pair(np.array(SPECIAL))
    kout, tout = kael.empty(0), torch.empty(0)
    assert kael.nan_to_num(kx, 1.0, out=kout) is kout
    close_to_torch(kout, torch.nan_to_num(tx, 1.0, out=tout), 0)
    with pytest.raises(
        kael.TypeError, match="out has dtype float64 but the result has dtype float32"
    ):
        kael.nan_to_num(kx, out=kael.empty(len(SPECIAL), dtype=kael.float64))


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


def test_atan2_of_an_infinite_y_beside_a_huge_x_is_a_right_angle():
    """An infinite |y| is past tan(3 pi/8) |x| where that product overflows (float64 x near
    its largest), and a subnormal y over 0 is pi/2, not an underflowed ratio's angle."""
    y = np.array([np.inf, -np.inf, np.inf, np.inf, 5e-324, -5e-324])
    x = np.array([1e308, 1e308, -1.7976931348623157e308, 7.5e307, 0.0, -0.0])
    got = kael.atan2(kael.tensor(y), kael.tensor(x)).numpy()
    want = torch.atan2(torch.from_numpy(y), torch.from_numpy(x)).numpy()
    np.testing.assert_array_max_ulp(got, want, maxulp=1)  # pi - pi/2 rounds once more


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
    resized_out(lambda o: getattr(kael, name)(kf, 0.0, out=o), kael.empty(2), (3,))


# ---- signbit, isposinf, isneginf, isreal, positive, sinc, frexp -----------------------------------

ALL_DTYPES = [
    kael.float32, kael.float64, kael.float16, kael.bfloat16, kael.int64, kael.int32, kael.uint8,
    kael.bool,
]  # fmt: skip
SHAPED = ["contiguous", "transposed", "sliced", "expanded", "zero_d", "empty"]
FLOAT_SPECIAL = [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1.0, -1.0, 0.3, -2.5, 1e-40, 7.0]


def _dtype_values(dtype, count: int = 12) -> np.ndarray:
    """count values of `dtype`'s kind: floats with the special ones, signed and unsigned
    integers, bools."""
    if dtype is kael.bool:
        return np.resize([True, False, True], count)
    if dtype is kael.uint8:
        return np.resize(np.array([0, 1, 2, 7, 12, 255, 30, 4]), count)
    if not dtype.is_floating_point:
        return np.resize(np.array([0, -1, 3, -4, 12, 7, -30, 5]), count)
    return np.resize(np.array(FLOAT_SPECIAL), count)


def _laid_out(values: np.ndarray, dtype, layout: str):
    """A kael tensor and the equal torch tensor of values (12 of them) in `layout`: a 3 x 4
    view (contiguous, transposed, sliced, expanded from one row), a 0-d one or an empty one."""
    values = np.asarray(values)
    if layout == "zero_d":
        return pair(values[1], dtype)
    if layout == "empty":
        k, t = pair(values.reshape(3, 4), dtype)
        return k[:0], t[:0]
    grid = values.reshape(3, 4)
    if layout == "transposed":
        k, t = pair(grid.T.copy(), dtype)
        return k.t(), t.t()
    if layout == "sliced":
        k, t = pair(np.repeat(grid, 2, axis=1), dtype)
        return k[:, ::2], t[:, ::2]
    if layout == "expanded":
        k, t = pair(grid[:1], dtype)
        return k.expand(3, 4), t.expand(3, 4)
    return pair(grid, dtype)


def _same_bits_or_both_nan(k, t) -> None:
    """kael's result against torch's: shape, dtype, and the same bits (-0.0 apart from 0.0)
    wherever torch's is not NaN, NaN where torch's is."""
    assert k.shape == tuple(t.shape) and TORCH_DTYPES[k.dtype] == t.dtype
    got = torch.from_dlpack(k.contiguous())
    if not t.dtype.is_floating_point:
        assert torch.equal(got, t)
        return
    bits = {8: torch.int64, 4: torch.int32, 2: torch.int16}[t.element_size()]
    nan = t.isnan()
    assert torch.equal(got.isnan(), nan)
    assert torch.equal(got.view(bits)[~nan], t.view(bits)[~nan])


def _same_refusal(call_kael, call_torch, error=kael.TypeError, named: str = "") -> bool:
    """Whether torch refuses the call; if so kael must too, with a typed error naming `named`."""
    try:
        call_torch()
    except (RuntimeError, TypeError, NotImplementedError):
        with pytest.raises(error, match=named):
            call_kael()
        return True
    return False


EXACT_UNARY = ["signbit", "isposinf", "isneginf", "isreal", "positive", "frexp"]


@pytest.mark.parametrize("layout", SHAPED)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("name", EXACT_UNARY)
def test_exact_unary_functions_match_torch_bit_for_bit_on_every_dtype_and_layout(
    name, dtype, layout
):
    kx, tx = _laid_out(_dtype_values(dtype), dtype, layout)
    if _same_refusal(
        lambda: getattr(kael, name)(kx), lambda: getattr(torch, name)(tx), named=str(dtype)
    ):
        return
    got, want = getattr(kael, name)(kx), getattr(torch, name)(tx)
    if name == "frexp":
        assert type(got).__name__ == "Frexp" and got._fields == ("mantissa", "exponent")
        _same_bits_or_both_nan(got.mantissa, want.mantissa)
        _same_bits_or_both_nan(got.exponent, want.exponent)
        got = kx.frexp()
        _same_bits_or_both_nan(got[0], want[0])
        return
    _same_bits_or_both_nan(got, want)
    _same_bits_or_both_nan(getattr(kx, name)(), getattr(tx, name)())


def test_positive_is_the_input_itself_and_refuses_bool():
    kx = kael.tensor([1.0, -2.0])
    assert kael.positive(kx) is kx and kx.positive() is kx
    with pytest.raises(kael.TypeError, match=r"positive\(\): the `\+` operator, on a bool tensor"):
        kael.positive(kael.tensor([True]))


@pytest.mark.parametrize(
    "dtype", [kael.float32, kael.float64, kael.float16, kael.bfloat16], ids=str
)
def test_signbit_sees_negative_zero_and_negative_nan(dtype):
    """-0.0 and a NaN with its sign bit set (made from bits: torch's bfloat16 conversion of
    -nan drops the sign) have their sign bit; +0.0 and +nan do not."""
    bits = {
        kael.float32: [0, -(1 << 31), 0x7FC00000, 0xFFC00000 - (1 << 32)],
        kael.float64: [0, -(1 << 63), 0x7FF8 << 48, -(0x8 << 48)],
        kael.float16: [0, -0x8000, 0x7E00, -0x0200],
        kael.bfloat16: [0, -0x8000, 0x7FC0, -0x0040],
    }[dtype]
    as_int = {8: torch.int64, 4: torch.int32, 2: torch.int16}[dtype.itemsize]
    t = torch.tensor(bits, dtype=as_int).view(TORCH_DTYPES[dtype])
    k = kael.from_dlpack(t.clone())
    assert kael.signbit(k).tolist() == [False, True, False, True] == torch.signbit(t).tolist()


@pytest.mark.parametrize("dtype", [kael.int64, kael.int32, kael.uint8, kael.bool], ids=str)
def test_isposinf_isneginf_of_integers_are_all_false_and_isreal_all_true(dtype):
    kx, _ = pair(_dtype_values(dtype), dtype)
    assert not kael.isposinf(kx).any().item() and not kael.isneginf(kx).any().item()
    assert kael.isreal(kx).all().item() and kael.isreal(kael.tensor([np.nan])).all().item()


def test_frexp_of_zero_inf_nan_and_subnormals_is_torchs():
    """0, -0, +-inf and NaN give themselves and exponent 0; subnormals their true exponent
    (float64 5e-324: 0.5 * 2**-1073)."""
    for dtype in (kael.float64, kael.float32, kael.float16, kael.bfloat16):
        fi = torch.finfo(TORCH_DTYPES[dtype])
        extra = [fi.tiny, fi.tiny / 8, fi.max, -fi.max, fi.tiny * fi.eps, -3 * fi.tiny * fi.eps]
        kx, tx = pair(FLOAT_SPECIAL + extra + [5e-324], dtype)
        got, want = kael.frexp(kx), torch.frexp(tx)
        _same_bits_or_both_nan(got.mantissa, want.mantissa)
        _same_bits_or_both_nan(got.exponent, want.exponent)
        m = got.mantissa.double().abs()
        finite = (m > 0) & (m < np.inf)
        assert ((m[finite] >= 0.5) & (m[finite] < 1)).all().item()


@pytest.mark.parametrize("layout", SHAPED)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_sinc_matches_torch_on_every_dtype_and_layout_and_is_one_at_zero(dtype, layout):
    """Values within |x| <= 30 (where torch's own sin(pi x) / (pi x) is accurate); integers
    and bool give the default float dtype."""
    kx, tx = _laid_out(_dtype_values(dtype), dtype, layout)
    tol = TOL[dtype if dtype.is_floating_point else kael.float32]
    close_to_torch(kael.sinc(kx), torch.sinc(tx), tol, equal_nan=True)
    close_to_torch(kx.sinc(), tx.sinc(), tol, equal_nan=True)
    assert kael.sinc(kael.tensor([0.0, -0.0])).tolist() == [1.0, 1.0]


# ---- fmax, fmin, heaviside, ldexp, nextafter, float_power, gcd, lcm ------------------------------

BINARY_NEW = ["fmax", "fmin", "heaviside", "ldexp", "nextafter", "float_power", "gcd", "lcm"]
EXACT_BINARY = ("heaviside", "nextafter", "gcd", "lcm")  # bit for bit
SIGNED_ZERO_FREE = ("fmax", "fmin")  # exact values; which zero of 0 and -0 is torch's own


def _check_binary(name, ka, kb, ta, tb) -> None:
    got, want = getattr(kael, name)(ka, kb), getattr(torch, name)(ta, tb)
    if name in EXACT_BINARY:
        _same_bits_or_both_nan(got, want)
        _same_bits_or_both_nan(getattr(ka, name)(kb), getattr(ta, name)(tb))
        return
    tol = 1e-14 if want.dtype == torch.float64 else TOL.get(KAEL_OF[want.dtype], 0)
    tol = 0 if name in SIGNED_ZERO_FREE else tol
    close_to_torch(got, want, tol, equal_nan=True)
    close_to_torch(getattr(ka, name)(kb), getattr(ta, name)(tb), tol, equal_nan=True)


KAEL_OF = {v: k for k, v in TORCH_DTYPES.items()}


@pytest.mark.parametrize("other", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("name", BINARY_NEW)
def test_binary_functions_follow_torch_dtype_rules_and_values_on_every_dtype_pair(
    name, dtype, other
):
    """A column of `dtype` values against a row of `other` values (broadcast): torch's result
    dtype and values (bit for bit for the exact ones), or its refusal as a kael.TypeError
    naming the dtypes."""
    ka, ta = pair(_dtype_values(dtype, 8).reshape(-1, 1), dtype)
    kb, tb = pair(_dtype_values(other, 12)[None, 4:], other)  # another order of values
    if _same_refusal(
        lambda: getattr(kael, name)(ka, kb),
        lambda: getattr(torch, name)(ta, tb),
        named="bool|int|uint8|float",
    ):
        return
    _check_binary(name, ka, kb, ta, tb)


@pytest.mark.parametrize("layout", SHAPED)
@pytest.mark.parametrize("name", BINARY_NEW)
def test_binary_functions_on_every_layout(name, layout):
    """Both operands in `layout` (one of them 0-d against the other's grid as well)."""
    dtype = kael.int64 if name in ("gcd", "lcm") else kael.float32
    ka, ta = _laid_out(_dtype_values(dtype), dtype, layout)
    kb, tb = _laid_out(np.roll(_dtype_values(dtype), 5), dtype, layout)
    _check_binary(name, ka, kb, ta, tb)
    kg, tg = _laid_out(_dtype_values(dtype), dtype, "contiguous")
    kg, tg = (kg[:1, :1], tg[:1, :1]) if layout == "empty" else (kg, tg)
    _check_binary(name, kg, kb, tg, tb)  # a grid against the layout (0-d: broadcast)


@pytest.mark.parametrize(
    "dtype", [kael.float64, kael.float32, kael.float16, kael.bfloat16], ids=str
)
def test_nextafter_is_bit_exact_over_random_bits_and_special_values(dtype):
    """Random bit patterns (subnormals, NaNs with payloads, both signs) and +-0, +-inf,
    the smallest normal, the largest finite, powers of 2, each toward every special value:
    torch's bits wherever its result is not NaN, NaN where it is."""
    td = TORCH_DTYPES[dtype]
    as_int = {8: torch.int64, 4: torch.int32, 2: torch.int16}[dtype.itemsize]
    info = torch.iinfo(as_int)
    raw = torch.from_numpy(RNG.integers(info.min, info.max, 3000, endpoint=True)).to(as_int)
    fi = torch.finfo(td)
    special = torch.tensor(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, fi.tiny, -fi.tiny, fi.max, -fi.max]
        + [fi.tiny * fi.eps, -fi.tiny * fi.eps, 0.5, 2.0**-3, 1024.0],
        dtype=torch.float64,
    ).to(td)
    x = torch.cat([raw.view(td), special]).reshape(-1, 1)
    y = torch.cat([special, raw.view(td)[:4]]).reshape(1, -1)
    got = kael.nextafter(kael.from_dlpack(x.clone()), kael.from_dlpack(y.clone()))
    _same_bits_or_both_nan(got, torch.nextafter(x, y))


@pytest.mark.parametrize("dtype", [kael.int8, kael.int32, kael.int64, kael.uint8], ids=str)
def test_gcd_lcm_signs_zeros_and_the_most_negative_value_follow_torch(dtype):
    """gcd(0, 0) = 0, results non-negative, |min| wrapping as in PyTorch; the longest
    Euclid chains (consecutive Fibonacci numbers) finish."""
    lo, hi = (0, 255) if dtype is kael.uint8 else (-(1 << (8 * dtype.itemsize - 1)), None)
    fib = [1, 2]
    top = (1 << (8 * dtype.itemsize - (dtype is not kael.uint8))) - 1
    while fib[-1] + fib[-2] <= top:
        fib.append(fib[-1] + fib[-2])
    a = [0, 0, 6, lo, lo, fib[-1], fib[-2], 12, 9] + ([] if hi else [-4, -9])
    b = [0, 5, 0, 0, 6, fib[-2], fib[-1], 18, 6] + ([] if hi else [6, -6])
    ka, ta = pair(np.array(a, dtype=np.int64), dtype)
    kb, tb = pair(np.array(b, dtype=np.int64), dtype)
    _same_bits_or_both_nan(kael.gcd(ka, kb), torch.gcd(ta, tb))
    _same_bits_or_both_nan(kael.lcm(ka, kb), torch.lcm(ta, tb))


def test_fmax_fmin_a_nan_loses_to_a_number_and_heaviside_of_nan_is_zero():
    ka, ta = pair([1.0, np.nan, np.nan, -np.inf], kael.float32)
    kb, tb = pair([np.nan, 2.0, np.nan, np.nan], kael.float32)
    assert np.array_equal(kael.fmax(ka, kb).numpy(), [1.0, 2.0, np.nan, -np.inf], equal_nan=True)
    assert np.array_equal(kael.fmin(ka, kb).numpy(), [1.0, 2.0, np.nan, -np.inf], equal_nan=True)
    assert kael.heaviside(kb, ka).tolist()[0] == 0.0 == torch.heaviside(tb, ta).tolist()[0]


def test_ldexp_scales_exactly_for_integer_exponents_and_float_power_takes_numbers():
    kx, tx = pair([1.0, 3.0, 0.0, np.inf, 3.0, 1.5, 1.0], kael.float64)
    kn, tn = pair([2**32 + 1, -1075, 5000, -5000, -1076, 1023, -1074], kael.int64)
    _same_bits_or_both_nan(kael.ldexp(kx, kn), torch.ldexp(tx, tn))
    kh, th = pair([1.5, 1.75, 1.25, 1.0], kael.float16)
    kn, tn = pair([-25, -25, -25, 20], kael.int32)
    _same_bits_or_both_nan(kael.ldexp(kh, kn), torch.ldexp(th, tn))
    ki, ti = pair([1, 2, 3], kael.int64)
    cases = [((ki, 0.5), (ti, 0.5)), ((ki, True), (ti, True)), ((2, ki), (2, ti))]
    for (kb, ke), (tb, te) in cases + [((1.5, ki[0]), (1.5, ti[0]))]:
        close_to_torch(kael.float_power(kb, ke), torch.float_power(tb, te), 1e-15)
    close_to_torch(ki.float_power(2), ti.float_power(2), 0)


def _mp_ulp_error(got: np.ndarray, ref: np.ndarray, dtype) -> float:
    finite = np.isfinite(ref) & (ref != 0)
    spacing = np.spacing(np.abs(ref[finite]).astype(dtype)).astype(np.float64)
    return float((np.abs(got[finite].astype(np.float64) - ref[finite]) / spacing).max())


def test_sinc_and_float_power_accuracy_against_mpmath():
    """Measured: sinc float32 0.4999 ulp (float64 inside, rounded once), float64 2.0 ulp
    (sin(pi r) of r = x - round(x), so exact zeros and no loss for large x, where torch's
    sin(pi x) / (pi x) is off by up to 5e13 ulp); float_power 1 ulp."""
    import mpmath

    x = np.concatenate(
        [RNG.uniform(-10, 10, 3000), np.exp(RNG.uniform(-30, 30, 3000)) * RNG.choice([-1, 1], 3000)]
    )
    ref = np.array([float(mpmath.sincpi(mpmath.mpf(float(v)))) for v in x])
    x32 = x.astype(np.float32)
    ref32 = np.array([float(mpmath.sincpi(mpmath.mpf(float(v)))) for v in x32])
    assert _mp_ulp_error(kael.sinc(kael.tensor(x32)).numpy(), ref32, np.float32) <= 0.5001
    assert _mp_ulp_error(kael.sinc(kael.tensor(x)).numpy(), ref, np.float64) <= 2.0
    b, e = np.exp(RNG.uniform(-20, 20, 3000)), RNG.uniform(-15, 15, 3000)
    ref = np.array([float(mpmath.power(mpmath.mpf(float(u)), float(v))) for u, v in zip(b, e)])
    got = kael.float_power(kael.tensor(b), kael.tensor(e)).numpy()
    assert _mp_ulp_error(got, ref, np.float64) <= 1.0


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: kael.fmax(kael.ones(3), 2.0), kael.TypeError, "fmax\\(\\): other must be a Tensor, got float"),
        (lambda: kael.gcd(kael.ones(3, dtype=kael.int64), 2), kael.TypeError, "gcd\\(\\): other must be a Tensor, got int"),
        (lambda: kael.gcd(kael.ones(3), kael.ones(3)), kael.TypeError, '"gcd" not implemented for float32'),
        (lambda: kael.lcm(kael.tensor([True]), kael.tensor([True])), kael.TypeError, '"lcm" not implemented for bool'),
        (lambda: kael.nextafter(kael.tensor([1]), kael.tensor([2])), kael.TypeError, '"nextafter" not implemented for int64'),
        (lambda: kael.heaviside(kael.ones(2), kael.ones(2, dtype=kael.float64)), kael.TypeError, "different dtypes: input is float32, values is float64"),
        (lambda: kael.heaviside(kael.ones(2), 0.5), kael.TypeError, "values must be a Tensor, got float"),
        (lambda: kael.ldexp(kael.ones(2), kael.tensor([True])), kael.TypeError, "bool exponent with float32"),
        (lambda: kael.frexp(kael.tensor([1, 2])), kael.TypeError, "only supports floating-point dtypes, got int64"),
        (lambda: kael.float_power(kael.ones(2), "a"), kael.TypeError, "exponent must be a Tensor or a real number, got str"),
        (lambda: kael.float_power(2, 3), kael.TypeError, "expected a Tensor input or exponent, got int and int"),
        (lambda: kael.signbit([1.0]), kael.TypeError, "signbit\\(\\): input must be a Tensor, got list"),
        (lambda: kael.fmin(kael.ones(2), kael.ones(3)), kael.ValueError, "shapes \\[2\\] and \\[3\\] cannot be broadcast"),
        (lambda: kael.nextafter(kael.ones(2), kael.ones(3)), kael.ValueError, "cannot be broadcast"),
        (lambda: kael.gcd(kael.ones(2, dtype=kael.int64), kael.ones(3, dtype=kael.int64)), kael.ValueError, "cannot be broadcast"),
    ],
)  # fmt: skip
def test_new_functions_refuse_bad_inputs_with_typed_errors_naming_the_values(call, error, message):
    with pytest.raises(error, match=message):
        call()
    assert issubclass(error, kael.Error)


def test_new_functions_inside_compile_match_eager():
    @kael.compile
    def f(a, b):
        return kael.nextafter(a, b) + kael.sinc(a) * kael.fmax(a, b), kael.frexp(a).exponent

    ka, _ = pair(np.linspace(-3, 3, 12), kael.float32)
    kb, _ = pair(np.ones(12), kael.float32)
    for _ in range(2):  # traced, then replayed
        got = f(ka, kb)
        want = (kael.nextafter(ka, kb) + kael.sinc(ka) * kael.fmax(ka, kb), kael.frexp(ka)[1])
        for g_, w in zip(got, want):
            assert np.array_equal(g_.numpy(), w.numpy())


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_and_fmin_keep_the_first_operand_on_a_signed_zero_tie(name):
    a, b = [0.0, -0.0, -0.0, 0.0], [-0.0, 0.0, -0.0, 0.0]
    got = getattr(kael, name)(kael.tensor(a), kael.tensor(b))
    want = getattr(torch, name)(torch.tensor(a), torch.tensor(b))
    assert (
        np.signbit(got.numpy()).tolist()
        == torch.signbit(want).tolist()
        == [False, True, True, False]
    )


@pytest.mark.parametrize("dtype", [kael.int8, kael.uint8], ids=str)
def test_lcm_overflow_keeps_torch_sign_over_every_pair(dtype):
    """PyTorch takes |x / gcd * y| after int promotion and then wraps to the dtype, so an
    lcm past the dtype's top keeps the wrapped sign (lcm(16, 9) = 144 -> -112 in int8):
    every pair of the dtype, bit for bit, broadcast column against row."""
    values = np.arange(256) - (128 if dtype is kael.int8 else 0)
    ka, ta = pair(values.reshape(-1, 1), dtype)
    kb, tb = pair(values.reshape(1, -1), dtype)
    _same_bits_or_both_nan(kael.lcm(ka, kb), torch.lcm(ta, tb))
    _same_bits_or_both_nan(kael.lcm(kb.T, ka.T), torch.lcm(tb.T, ta.T))


def test_lcm_int16_both_sides_of_the_overflow_follow_torch():
    """int16 just below and just above 2**15 (and below -2**15), and a random sample."""
    edge = [(181, 181), (182, 181), (-182, 181), (181, -181), (255, 128), (-256, 128)]
    edge += [(32767, 1), (-32768, 1), (-32768, -1), (32767, 2), (-32767, -2), (0, -32768)]
    a, b = np.array(edge).T
    a = np.concatenate([a, RNG.integers(-(2**15), 2**15, 2000)])
    b = np.concatenate([b, RNG.integers(-(2**15), 2**15, 2000)])
    ka, ta = pair(a, kael.int16)
    kb, tb = pair(b, kael.int16)
    _same_bits_or_both_nan(kael.lcm(ka, kb), torch.lcm(ta, tb))
    _same_bits_or_both_nan(kael.lcm(ka[::3], kb[1::3]), torch.lcm(ta[::3], tb[1::3]))


# Each call: a Python number beside an integer (or bool) tensor, whose promoted dtype is
# integral; PyTorch converts the number straight to the float the function computes in.
NUMBER_BESIDE_INTEGERS = {
    "int8 tensor, 1000": lambda m: m.xlogy(m.tensor([42, 3], dtype=m.int8), 1000),
    "uint8 tensor, -3": lambda m: m.xlogy(m.tensor([2, 0], dtype=m.uint8), -3),
    "-3, uint8 tensor": lambda m: m.xlogy(-3, m.tensor([2, 7], dtype=m.uint8)),
    "int32 tensor, 2**31": lambda m: m.xlogy(m.tensor([2], dtype=m.int32), 2**31),
    "int64 tensor, 2**64 - 1": lambda m: m.xlogy(m.tensor([2, 5]), 2**64 - 1),
    "xlog1py uint8, -3": lambda m: m.special.xlog1py(m.tensor([2], dtype=m.uint8), -3),
    "xlog1py int32, 2**31": lambda m: m.special.xlog1py(m.tensor([3], dtype=m.int32), 2**31),
    "zeta int16, 2**40": lambda m: m.special.zeta(m.tensor([2, 3], dtype=m.int16), 2**40),
    "zeta -300, int8": lambda m: m.special.zeta(m.tensor([2], dtype=m.int8), -300),
}


@pytest.mark.parametrize("call", NUMBER_BESIDE_INTEGERS.values(), ids=NUMBER_BESIDE_INTEGERS)
def test_a_number_beside_an_integer_tensor_keeps_its_value(call):
    """The number is not first cast to the integer dtype (no wrap, no overflow refusal):
    the result dtype stays the promoted one's float (float32)."""
    want = call(torch)
    got = call(kael)
    assert want.dtype == torch.float32
    close_to_torch(got, want, TOL[kael.float32], equal_nan=True)


@pytest.mark.parametrize("name", ["sinh", "cosh", "log10", "sgn"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "complex64"])
def test_out_of_sinh_cosh_log10_and_sgn_matches_torch(name, dtype):
    values = [0.5, -1.5, 2.0, 0.0]
    x = kael.tensor(values, dtype=getattr(kael, dtype))
    want = getattr(torch, name)(torch.tensor(values, dtype=getattr(torch, dtype)))
    out = kael.empty(0, dtype=getattr(kael, str(want.dtype)[6:]))
    assert getattr(kael, name)(x, out=out) is out
    assert out.shape == tuple(want.shape)
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ["sinh", "cosh", "log10", "sgn"])
def test_out_of_sinh_cosh_log10_and_sgn_refuses_a_wrong_dtype_or_expanded_out(name):
    x = kael.tensor([0.5, -1.5])
    words = "out has dtype int64" if name == "sgn" else "float32 can't be cast to the desired"
    with pytest.raises(kael.TypeError, match=words):  # sgn keeps its dtype, the others cast
        getattr(kael, name)(x, out=kael.empty(2, dtype=kael.int64))
    with pytest.raises(kael.Error, match="more than one element of the written-to tensor"):
        getattr(kael, name)(x, out=kael.zeros(1).expand(2))
    z = kael.tensor([0.5 + 1j])
    with pytest.raises(kael.TypeError, match="complex64 can't be cast to the desired output type"):
        getattr(kael, name)(z, out=kael.empty(1))


HALF_CASTS = {
    "xlogy int 70000": lambda L: L.xlogy(L.tensor([2.0], dtype=L.float16), L.tensor([70000])),
    "atan2 0-d 1e5": lambda L: L.atan2(L.tensor([2.0], dtype=L.float16), L.tensor(1e5)),
    "hypot int": lambda L: L.hypot(L.tensor([70000]), L.tensor([float("nan")], dtype=L.float16)),
    "xlogy 0-d float64": lambda L: L.xlogy(
        L.tensor([1.0], dtype=L.float16), L.tensor(1.0001, dtype=L.float64)
    ),
    "logaddexp bfloat16": lambda L: L.logaddexp(L.tensor([1.0], dtype=L.bfloat16), L.tensor(300)),
}


@pytest.mark.parametrize("call", HALF_CASTS.values(), ids=HALF_CASTS.keys())
def test_binary_math_casts_operands_to_the_result_dtype_first_as_torch(call):
    got, want = call(kael), call(torch)
    assert str(got.dtype) == str(want.dtype)[6:]
    assert got.float().tolist() == want.float().tolist()


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8], ids=str)
def test_isclose_of_integers_with_no_tolerance_is_exact_equality_as_torch(dtype):
    info = torch.iinfo(dtype)
    a = torch.tensor([info.max, info.max - 1, info.min, 5, 0], dtype=dtype)
    b = torch.tensor([info.max - 1, info.max - 1, info.min + 1, 7, 0], dtype=dtype)
    want = torch.isclose(a, b, rtol=0, atol=0)
    got = kael.isclose(kael.from_dlpack(a.clone()), kael.from_dlpack(b.clone()), rtol=0, atol=0)
    assert got.tolist() == want.tolist() == [False, True, False, False, True]


@pytest.mark.parametrize(
    "dtype, a, b, atol",
    [
        (torch.uint8, 0, 1, 1.0),
        (torch.uint8, 255, 0, 1.0),
        (torch.int8, 127, -128, 1.0),
        (torch.int8, 0, -128, 1e-8),
        (torch.int64, 2**63 - 1, -(2**63), 1.0),
        (torch.int32, -5, 5, 10.0),
    ],
    ids=str,
)
def test_isclose_of_integers_measures_their_difference_without_wrapping_as_torch(dtype, a, b, atol):
    """127 and -128 are 255 apart, not the -1 an int8 subtraction wraps to."""
    ta, tb = torch.tensor([a], dtype=dtype), torch.tensor([b], dtype=dtype)
    want = torch.isclose(ta, tb, rtol=0, atol=atol).item()
    got = kael.isclose(
        kael.from_dlpack(ta.clone()), kael.from_dlpack(tb.clone()), rtol=0, atol=atol
    )
    assert got.item() == want


def test_nan_to_num_takes_none_for_nan_as_torch():
    x = torch.tensor([float("nan"), 1.0, float("inf")])
    close_to_torch(
        kael.nan_to_num(kael.tensor(x.numpy()), nan=None), torch.nan_to_num(x, nan=None), 0
    )


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
@pytest.mark.parametrize("weight", [0.25, 0.5, 1.0, -2.0, 0.3 + 0.4j, "tensor"], ids=str)
def test_lerp_of_complex_tensors_matches_torch(dtype, weight):
    g = torch.Generator().manual_seed(7)
    a, b, w = (torch.randn(3, 4, dtype=dtype, generator=g) for _ in range(3))
    k = lambda t: kael.from_dlpack(t.clone())  # noqa: E731
    got = kael.lerp(k(a), k(b), k(w) if weight == "tensor" else weight)
    want = torch.lerp(a, b, w if weight == "tensor" else weight)
    assert str(got.dtype) == str(want.dtype).replace("torch.", "")
    tol = 1e-6 if dtype == torch.complex64 else 1e-14
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=tol)


def test_lerp_of_complex_tensors_refuses_a_real_weight_tensor_as_torch():
    a = kael.ones(2, dtype=kael.complex64)
    with pytest.raises(kael.TypeError, match="weight of dtype complex64, got float32"):
        kael.lerp(a, a, kael.ones(2))
