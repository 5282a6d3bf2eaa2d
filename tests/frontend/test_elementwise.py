"""Elementwise ops against PyTorch: values, dtype and shape, over dtypes, layouts and edge cases.

Every binary op of elementwise.BINARY and every unary op of elementwise.UNARY is covered
except the transcendental ones (exp, exp2, expm1, log, log2, log1p, sin, cos, tan, tanh,
sigmoid, silu, erf, erfc, gelu) and float pow, whose vector math has its own tests. Where the
book decides differently from PyTorch (bool + bool is int64, pow refuses bool), the test
pins the book's rule and says so.
"""

import math
import operator as operator_module
import re
import warnings

import numpy as np
import pytest
import torch
from kernel_helpers import KAEL_DTYPES
from parity_helpers import resized_out

import kael
from kael.frontend import elementwise as ew

TO_KAEL = KAEL_DTYPES
DTYPES = [torch.float32, torch.float64, torch.int64, torch.bool]
DTYPE_IDS = ["f32", "f64", "i64", "bool"]
INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)

TRANSCENDENTAL = {
    "exp", "exp2", "expm1", "log", "log2", "log1p", "sin", "cos", "tan", "tanh", "sigmoid",
    "silu", "erf", "erfc", "gelu",
}  # fmt: skip
BINARY_OPS = list(ew.BINARY)
UNARY_OPS = [name for name in ew.UNARY if name not in TRANSCENDENTAL]
FLOAT_SAFE_BINARY = [n for n in BINARY_OPS if n != "pow" and not n.startswith("bitwise")]

# Python operator spellings of the binary ops (torch's wrapped-number semantics for scalars).
# Not div's: torch's `3 / t` is t.reciprocal() * 3, rounding twice (kael's too), where the
# function form divides once (DIV_OPERATOR below).
OPERATOR_FORMS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "floor_divide": lambda a, b: a // b,
    "remainder": lambda a, b: a % b,
    "pow": lambda a, b: a**b,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "bitwise_and": lambda a, b: a & b,
    "bitwise_or": lambda a, b: a | b,
    "bitwise_xor": lambda a, b: a ^ b,
}
DIV_OPERATOR = operator_module.truediv

# ---- helpers ---------------------------------------------------------------------------------

FLOAT_VALUES = [-2.5, 3.0, 0.5, -7.0, 1.25, -0.0, 4.0, -0.5, 6.0, 0.0, -3.75, 9.5]
INT_VALUES = [-7, 3, 5, -2, 1, 4, -3, 6, 2, -9, 8, -1]  # no zero: they divide too
BOOL_VALUES = [True, False, True, True, False, False, True, False, True, False, False, True]


def values(dtype: torch.dtype, shape: tuple, shift: int = 0, divisor: bool = False):
    """A torch tensor of `shape` cycling through the dtype's value list from `shift`."""
    n = math.prod(shape)
    pool = {
        torch.float32: FLOAT_VALUES,
        torch.float64: FLOAT_VALUES,
        torch.int64: INT_VALUES,
        torch.bool: [True] * 12 if divisor else BOOL_VALUES,
    }[dtype]
    data = [pool[(i + shift) % len(pool)] for i in range(n)]
    return torch.tensor(data, dtype=dtype).reshape(shape)


def to_kael(t: torch.Tensor) -> kael.Tensor:
    """A kael copy of a contiguous torch tensor (same values, dtype and shape)."""
    k = kael.tensor(t.contiguous().numpy())
    assert k.dtype is TO_KAEL[t.dtype] and k.shape == tuple(t.shape)
    return k


def twin(base: torch.Tensor, view=lambda x: x):
    """(kael, torch) holding `base`'s values, both seen through the same view."""
    return view(to_kael(base)), view(base)


def assert_same(k, t: torch.Tensor, zero_sign: bool = True) -> None:
    """Same shape, dtype and values; NaN matches NaN; signed zeros must match bit for bit
    (unless zero_sign is False: then a zero result may have either sign)."""
    assert isinstance(k, kael.Tensor), type(k)
    assert k.shape == tuple(t.shape)
    assert k.dtype is TO_KAEL[t.dtype], (k.dtype, t.dtype)
    got, want = np.asarray(k.numpy()), t.detach().numpy()
    np.testing.assert_array_equal(got, want)
    if t.is_floating_point():
        nan = np.isnan(want) | (~np.bool_(zero_sign) & (want == 0))
        assert torch.equal(
            torch.from_numpy(np.signbit(got[~nan]).copy()),
            torch.from_numpy(np.signbit(want[~nan]).copy()),
        ), (got, want)


def torch_binary(name: str, a, b, operator: bool = False):
    """PyTorch's result for kael.NAME(a, b) (or, with `operator`, for the Python operator):
    the function form raises TypeError for a number where its signature takes only a Tensor
    (maximum, minimum and the logical ops; a comparison's input); a number taken means a
    wrapped number on either side (div's function form: `/` rounds twice in torch)."""
    form = OPERATOR_FORMS.get(name)
    if operator and (form or name == "div"):
        return (form or DIV_OPERATOR)(a, b)
    result = getattr(torch, name)(a, b)
    tensors = isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
    return form(a, b) if form and not tensors else result


def _is_bool(x) -> bool:
    return x.dtype == torch.bool if isinstance(x, torch.Tensor) else isinstance(x, bool)


def _long(x):
    if isinstance(x, torch.Tensor):
        return x.long() if x.dtype == torch.bool else x
    return int(x) if isinstance(x, bool) else x


def expected_binary(name: str, a, b, operator: bool = False):
    """torch's result, or the exception kael must raise, with the book's two deliberate rules."""
    if name == "add" and _is_bool(a) and _is_bool(b):
        return torch_binary(name, _long(a), _long(b))  # the book: bool + bool counts in int64
    if name == "pow" and _is_bool(a) and _is_bool(b):
        return kael.TypeError  # the book: pow throws on bool (torch keeps bool)
    try:
        return torch_binary(name, a, b, operator)
    except TypeError:
        return kael.TypeError
    except (RuntimeError, NotImplementedError):
        return kael.Error


def check_binary(name: str, ka, kb, ta, tb) -> None:
    expected = expected_binary(name, ta, tb)
    if isinstance(expected, type):
        with pytest.raises(expected):
            getattr(kael, name)(ka, kb)
    else:
        # torch's maximum(0.0, -0.0) picks either zero depending on its loop (vectorized or
        # not), so only those two ops leave the sign of a zero result open.
        zero_sign = name not in ("maximum", "minimum")
        assert_same(getattr(kael, name)(ka, kb), expected, zero_sign)


def float_pow(a, b) -> bool:
    """Whether pow(a, b) would compute in a floating dtype (vector math, tested elsewhere)."""
    return torch.result_type(a, b).is_floating_point


# ---- binary ops: every dtype pair, every layout, scalars and 0-d tiers ------------------------


def _dtype_id(dtype: torch.dtype) -> str:
    return DTYPE_IDS[DTYPES.index(dtype)]


DTYPE_PAIR_CASES = [
    pytest.param(name, a, b, id=f"{name}-{_dtype_id(a)}-{_dtype_id(b)}")
    for name in BINARY_OPS
    for a in DTYPES
    for b in DTYPES
    if not (name == "pow" and (a.is_floating_point or b.is_floating_point))
]


@pytest.mark.parametrize(("name", "da", "db"), DTYPE_PAIR_CASES)
def test_binary_dtype_promotion_and_values_match_torch_for_every_dtype_pair(name, da, db):
    divisor = name in ("floor_divide", "remainder")
    # broadcast [3, 1] x [4], then the 0-d tier: 0-d float64 beats int64 dims but not
    # float32 dims; a 0-d bool never changes the dtype of dims. (The layout grid below puts
    # the 0-d operand on the left too.)
    cases = [((3, 1), (4,)), ((3, 4), ())]
    for shape_a, shape_b in cases:
        ta, tb = values(da, shape_a), values(db, shape_b, shift=5, divisor=divisor)
        check_binary(name, to_kael(ta), to_kael(tb), ta, tb)


def _T(x):
    return x.T


def _stepped(x):
    return x[::2, 1::2]


BINARY_LAYOUTS = {
    "contiguous": (((3, 4), None), ((3, 4), None)),
    "transposed": (((4, 3), _T), ((4, 3), _T)),
    "transposed_with_contiguous": (((4, 3), _T), ((3, 4), None)),
    "stepped": (((6, 8), _stepped), ((3, 8), lambda x: x[:, 1::2])),
    "expanded": (((3, 1), lambda x: x.expand(3, 4)), ((1, 4), lambda x: x.expand(3, 4))),
    "broadcast_row": (((3, 4), None), ((4,), None)),
    "broadcast_outer": (((3, 1), None), ((1, 4), None)),
    "broadcast_rank3": (((2, 1, 4), None), ((3, 1), None)),
    "zero_dim_right": (((3, 4), None), ((), None)),
    "zero_dim_left": (((), None), ((2, 3), None)),
    "both_zero_dim": (((), None), ((), None)),
    "empty": (((0, 4), None), ((4,), None)),
    "empty_broadcast": (((3, 0), None), ((3, 1), None)),
}

# One mixed dtype pair per op for the layout grid (the dtype grid covers the rest).
LAYOUT_DTYPES = {name: (torch.int64, torch.float32) for name in BINARY_OPS}
LAYOUT_DTYPES.update(
    pow=(torch.int64, torch.int64),
    bitwise_and=(torch.int64, torch.bool),
    bitwise_or=(torch.bool, torch.int64),
    bitwise_xor=(torch.int64, torch.int64),
)


@pytest.mark.parametrize("layout", list(BINARY_LAYOUTS))
@pytest.mark.parametrize("name", BINARY_OPS)
def test_binary_reads_every_layout_like_torch(name, layout):
    (shape_a, view_a), (shape_b, view_b) = BINARY_LAYOUTS[layout]
    da, db = LAYOUT_DTYPES[name]
    ka, ta = twin(values(da, shape_a), view_a or (lambda x: x))
    kb, tb = twin(values(db, shape_b, shift=7, divisor=True), view_b or (lambda x: x))
    check_binary(name, ka, kb, ta, tb)


SCALARS = [True, False, -3, 2**40, 2.5, -0.0]


SCALAR_CASES = [
    pytest.param(name, dtype, id=f"{name}-{_dtype_id(dtype)}")
    for name in BINARY_OPS
    for dtype in DTYPES
    if not (name == "pow" and dtype.is_floating_point)
]


@pytest.mark.parametrize(("name", "dtype"), SCALAR_CASES)
def test_binary_with_python_scalar_on_either_side_follows_the_scalar_tier(name, dtype):
    t = values(dtype, (2, 3))
    k = to_kael(t)
    checked = 0
    for scalar in SCALARS:
        for left in (False, True):
            a, b = (scalar, t) if left else (t, scalar)
            ka, kb = (scalar, k) if left else (k, scalar)
            if name == "pow" and float_pow(a, b):
                continue
            if (
                name in ("floor_divide", "remainder", "fmod", "pow")
                and not left
                and scalar in (0, False)
            ):
                continue  # zero divisors and exponents have their own tests
            check_binary(name, ka, kb, a, b)
            checked += 1
    assert checked


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("number", [3.3, 7, -0.1, True], ids=repr)
def test_number_over_tensor_is_reciprocal_times_number_as_torch(dtype, number):
    """PyTorch's `number / tensor` is tensor.reciprocal() * number: two roundings, which a
    single division differs from in the last bit for about a quarter of float32 values."""
    values = torch.from_numpy(np.random.default_rng(0).standard_normal(1000) * 4).to(dtype)
    got = number / kael.tensor(values.numpy())
    want = number / values
    assert got.dtype is TO_KAEL[want.dtype] and got.shape == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize(
    ("tensor_dtype", "scalar", "want"),
    [
        (torch.int64, 2.5, torch.float32),
        (torch.float64, 2.5, torch.float64),
        (torch.float32, 2**40, torch.float32),
        (torch.bool, 3, torch.int64),
        (torch.bool, True, torch.bool),
        (torch.int64, True, torch.int64),
    ],
)
def test_zero_dim_tensor_outranks_python_scalar_of_the_same_category(tensor_dtype, scalar, want):
    t = values(tensor_dtype, ())
    expected = t * scalar
    assert expected.dtype == want
    assert_same(kael.mul(to_kael(t), scalar), expected)
    assert_same(to_kael(t) * scalar, expected)


def test_dimensioned_tensor_outranks_zero_dim_tensor_of_the_same_category():
    x32, x64 = torch.tensor([1.5, 2.5]), torch.tensor(0.25, dtype=torch.float64)
    assert_same(kael.add(to_kael(x32), to_kael(x64)), x32 + x64)
    assert (x32 + x64).dtype == torch.float32
    i, f = torch.tensor([1, 2]), torch.tensor(0.5, dtype=torch.float64)
    assert_same(kael.add(to_kael(i), to_kael(f)), i + f)  # higher category: the 0-d dtype
    assert (i + f).dtype == torch.float64


# (call, the argument the number is) for a number beside an int64 tensor t.
NUMBER_FORMS = {
    "function other": (lambda lib, name, t, v: getattr(lib, name)(t, v), "other"),
    "function input": (lambda lib, name, t, v: getattr(lib, name)(v, t), "input"),
    "method other": (lambda lib, name, t, v: getattr(t, name)(v), "other"),
}


@pytest.mark.parametrize("form", list(NUMBER_FORMS))
@pytest.mark.parametrize("name", BINARY_OPS)
def test_binary_functions_and_methods_refuse_a_number_exactly_where_torch_does(name, form):
    # maximum, minimum and the logical ops have Tensor-only signatures; a comparison takes a
    # Number other but never a Number input; the rest take a number on either side.
    call, what = NUMBER_FORMS[form]
    t = torch.tensor([1, 3])
    for number in (2, 1.0, True, np.int64(2)):
        try:
            want = call(torch, name, t, number)
        except TypeError:
            message = rf"^{name}\(\): {what} must be a Tensor, got {type(number).__name__}$"
            with pytest.raises(kael.TypeError, match=message):
                call(kael, name, to_kael(t), number)
            continue
        except (RuntimeError, NotImplementedError):  # a dtype refusal: bitwise of a float
            with pytest.raises(kael.Error):
                call(kael, name, to_kael(t), number)
            continue
        assert_same(call(kael, name, to_kael(t), number), want)


def test_maximum_refuses_a_number_other_like_torch():
    t = torch.tensor([1, 3])
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        torch.maximum(t, 2)
    for fn in (kael.maximum, kael.minimum, kael.Tensor.maximum, kael.logical_or):
        with pytest.raises(
            kael.TypeError, match=rf"^{fn.__name__}\(\): other must be a Tensor, got int$"
        ):
            fn(to_kael(t), 2)
    # A tensor other (0-d too) is taken; kael's own code takes a number through ew.binary.
    two = torch.tensor(2)
    assert_same(kael.maximum(to_kael(t), to_kael(two)), torch.maximum(t, two))
    assert_same(kael.max(to_kael(t), to_kael(two)), torch.max(t, two))
    assert_same(ew.binary("maximum", to_kael(t), 2), torch.maximum(t, two))
    assert_same(ew.binary("logical_xor", to_kael(t), 1.0), torch.logical_xor(t, torch.tensor(1.0)))


BEYOND_INT64 = [2**63, 2**64 - 1, 2**64, -(2**63) - 1]
# Each op with its number argument v: a binary operand, a bound, a selected or filled value.
NUMBER_ARGUMENT_CALLS = {
    "add": lambda x, v: x + v,
    "rsub": lambda x, v: v - x,
    "mul_": lambda x, v: x.clone().mul_(v),
    "div": lambda x, v: x / v,
    "floor_divide": lambda x, v: x // v,
    "rfloor_divide": lambda x, v: v // x,
    "remainder": lambda x, v: x % v,
    "pow": lambda x, v: x**v,
    "rpow": lambda x, v: v**x,
    "eq": lambda x, v: x == v,
    "lt": lambda x, v: x < v,
    "ge": lambda x, v: x >= v,
    "bitwise_and": lambda x, v: x & v,
    "clamp max": lambda x, v: x.clamp(None, v),
    "clamp_ min": lambda x, v: x.clone().clamp_(v),
    "where": lambda x, v: x.where(x > 0, v),
    "masked_fill": lambda x, v: x.masked_fill(x > 0, v),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name", list(NUMBER_ARGUMENT_CALLS))
def test_an_int_beyond_int64_is_a_uint64_scalar_like_torch(name, dtype):
    # torch reads an int in [2**63, 2**64) as a uint64 Scalar: by value in float ops; taken
    # modulo 2**64 by int64 arithmetic and comparisons (x < 2**63 is false: it is -2**63);
    # refused where it is checked into int64 (pow's exponent, clamp, where, masked_fill) and
    # beside a bool tensor. Beyond uint64 or below int64 it is refused.
    call = NUMBER_ARGUMENT_CALLS[name]
    t = torch.tensor([INT64_MIN, -1, 3, 0 if dtype is torch.bool else 2]).to(dtype)
    for v in BEYOND_INT64:
        try:
            want = call(t, v)
        except (RuntimeError, OverflowError):
            k = to_kael(t)
            with pytest.raises((kael.ValueError, kael.TypeError)):
                call(k, v)
            assert_same(k, t)
            continue
        assert_same(call(to_kael(t), v), want)


def test_an_int_beyond_int64_names_its_range_where_refused():
    # Both ends of torch's Scalar range [-2**63, 2**64) answer; one past either is refused.
    x = kael.tensor([1.0])
    assert (x + 2**63).tolist() == [2.0**63] and (x * INT64_MIN).tolist() == [-(2.0**63)]
    assert (x + (2**64 - 1)).tolist() == [2.0**64]
    assert (kael.tensor([1]) + 2**63).tolist() == [1 - 2**63]
    for v in (2**64, INT64_MIN - 1):
        with pytest.raises(OverflowError):
            torch.tensor([1.0]) + v
        message = f"^value {v} is out of the range of int64 and uint64$"
        with pytest.raises(kael.ValueError, match=message):
            x + v
    message = "^value 9223372036854775808 cannot be converted to int64 without overflow$"
    for call in (
        lambda lib: lib.tensor([1]).clamp(max=2**63),
        lambda lib: lib.tensor([1]) ** 2**63,
        lambda lib: lib.tensor([1]).masked_fill(lib.tensor([True]), 2**63),
    ):
        with pytest.raises(RuntimeError, match="cannot be converted to type int64_t"):
            call(torch)
        with pytest.raises(kael.ValueError, match=message):
            call(kael)
    message = (
        r"^add: a bool tensor and 9223372036854775808, an int beyond int64 \(a uint64 in "
        r"PyTorch\), do not promote$"
    )
    with pytest.raises(kael.TypeError, match=message):
        kael.tensor([True]) + 2**63
    assert kael.tensor([True]).masked_fill(kael.tensor([True]), 2**63).tolist() == [True]


# ---- special values ---------------------------------------------------------------------------

NAN, INF = float("nan"), float("inf")
FLOAT_SPECIALS = [NAN, INF, -INF, -0.0, 0.0, 1.0, -1.0, 2.5, -7.0, 0.5, 3e38, -3e38, 1e-45, 1e-38]
FLOAT64_EXTRA = [1e308, -1e308, 5e-324]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", FLOAT_SAFE_BINARY)
def test_binary_special_values_match_torch_bit_for_bit(name, dtype):
    specials = FLOAT_SPECIALS + (FLOAT64_EXTRA if dtype == torch.float64 else [])
    col = torch.tensor(specials, dtype=dtype).reshape(-1, 1)
    row = torch.tensor(specials, dtype=dtype).reshape(1, -1)
    if name == "remainder":
        expected = fmod_remainder(col, row)
        got = kael.remainder(to_kael(col), to_kael(row))
        assert_same(got, expected)
        # torch's vectorized loop gives NaN where a / b overflows or underflows (1e308 % 0.5);
        # everywhere else it agrees with the fmod rule the book (and torch's scalar loop) use.
        ours = torch.remainder(col, row)
        agree = ~ours.isnan()
        assert torch.equal(ours[agree], expected[agree])
        assert torch.equal(ours[agree].signbit(), expected[agree].signbit())
        return
    if name == "fmod":  # C's fmod exactly (NumPy's); torch's vectorized loop has the same NaNs
        with np.errstate(invalid="ignore"):
            expected = torch.from_numpy(np.fmod(*np.broadcast_arrays(col.numpy(), row.numpy())))
        assert_same(kael.fmod(to_kael(col), to_kael(row)), expected)
        ours = torch.fmod(col, row)
        agree = ~ours.isnan()
        assert torch.equal(ours[agree], expected[agree])
        return
    check_binary(name, to_kael(col), to_kael(row), col, row)


def fmod_remainder(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The book's float remainder in numpy: fmod, then move a nonzero result to b's sign."""
    x, y = np.broadcast_arrays(a.numpy(), b.numpy())
    with np.errstate(invalid="ignore"):
        mod = np.fmod(x, y)
        fix = (mod != 0) & ((y < 0) != (mod < 0))
        return torch.from_numpy(np.where(fix, mod + y, mod).astype(x.dtype))


def test_float_division_by_zero_follows_ieee():
    a = torch.tensor([1.0, -1.0, 0.0, -0.0, NAN])
    assert_same(kael.div(to_kael(a), 0.0), a / 0.0)
    assert_same(kael.div(to_kael(a), -0.0), a / -0.0)
    got = kael.div(to_kael(a), 0.0).tolist()
    assert got[:2] == [INF, -INF] and all(math.isnan(v) for v in got[2:])


def test_integer_true_division_gives_float32():
    i = torch.tensor([1, 2, 3, -7])
    assert_same(kael.div(to_kael(i), 2), i / 2)
    assert kael.div(to_kael(i), 2).tolist() == [0.5, 1.0, 1.5, -3.5]
    assert_same(
        kael.div(to_kael(i), to_kael(torch.tensor([2, 4, 3, 2]))), i / torch.tensor([2, 4, 3, 2])
    )


INT_SPECIALS = [
    *(INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1),
    *(-1, 0, 1, 2, -2, 3, 2**32, -(2**31)),
]


@pytest.mark.parametrize(
    "name", ["add", "sub", "mul", "maximum", "minimum", "eq", "lt", "ge", "bitwise_xor"]
)
def test_integer_extremes_match_torch(name):
    col = torch.tensor(INT_SPECIALS).reshape(-1, 1)
    row = torch.tensor(INT_SPECIALS).reshape(1, -1)
    check_binary(name, to_kael(col), to_kael(row), col, row)


def _wrap(v: int) -> int:
    return (v + 2**63) % 2**64 - 2**63


@pytest.mark.parametrize(
    ("name", "a", "b"),
    [
        ("add", INT64_MAX, 1),
        ("add", INT64_MIN, -1),
        ("sub", INT64_MIN, 1),
        ("sub", 0, INT64_MIN),
        ("mul", INT64_MAX, 2),
        ("mul", 2**32, 2**32),
        ("mul", INT64_MIN, -1),
        ("floor_divide", INT64_MIN, -1),
        ("pow", 2, 63),
        ("pow", 3, 40),
        ("pow", -2, 64),
    ],
)
def test_integer_overflow_wraps_in_twos_complement(name, a, b):
    python = {
        "add": lambda: a + b,
        "sub": lambda: a - b,
        "mul": lambda: a * b,
        "floor_divide": lambda: a // b,
        "pow": lambda: a**b,
    }[name]()
    ta, tb = torch.tensor([a]), torch.tensor([b])
    got = getattr(kael, name)(to_kael(ta), to_kael(tb))
    assert_same(got, getattr(torch, name)(ta, tb))
    assert got.tolist() == [_wrap(python)]
    scalar = getattr(kael, name)(to_kael(ta), b)  # the scalar path wraps too
    assert scalar.tolist() == [_wrap(python)]


def test_integer_minimum_divided_by_minus_one_wraps_to_minimum():
    k = kael.tensor([INT64_MIN, INT64_MIN])
    assert kael.floor_divide(k, -1).tolist() == [INT64_MIN, INT64_MIN]
    assert kael.floor_divide(k, kael.tensor([-1, 1])).tolist() == [INT64_MIN, INT64_MIN]
    assert kael.remainder(k, -1).tolist() == [0, 0]
    t = torch.tensor([INT64_MIN, INT64_MIN])
    assert_same(kael.remainder(k, kael.tensor([-1, 7])), torch.remainder(t, torch.tensor([-1, 7])))


@pytest.mark.parametrize("name", ["neg", "abs"])
def test_unary_integer_overflow_wraps(name):
    t = torch.tensor([INT64_MIN, INT64_MAX, INT64_MIN + 1, -1, 0])
    got = getattr(kael, name)(to_kael(t))
    assert_same(got, getattr(torch, name)(t))
    assert got.tolist()[0] == INT64_MIN  # -INT64_MIN and |INT64_MIN| wrap to INT64_MIN


# ---- floor_divide and remainder ---------------------------------------------------------------


def test_floor_divide_rounds_toward_negative_infinity_for_integers():
    a, b = torch.tensor([7, -7, 7, -7]), torch.tensor([2, 2, -2, -2])
    got = kael.floor_divide(to_kael(a), to_kael(b))
    assert got.tolist() == [3, -4, -4, 3]  # the book's trace
    assert_same(got, torch.floor_divide(a, b))


@pytest.mark.parametrize("name", ["floor_divide", "remainder"])
def test_integer_floor_divide_and_remainder_sign_rules_match_torch(name):
    a = torch.arange(-9, 10).reshape(-1, 1)
    b = torch.tensor([-4, -3, -2, -1, 1, 2, 3, 5]).reshape(1, -1)
    check_binary(name, to_kael(a), to_kael(b), a, b)
    got = getattr(kael, name)(to_kael(a), to_kael(b))
    python = [[getattr(int, "__floordiv__" if name == "floor_divide" else "__mod__")(x, y)
               for y in b.flatten().tolist()] for x in a.flatten().tolist()]  # fmt: skip
    assert got.tolist() == python


def test_remainder_takes_the_sign_of_the_divisor():
    a = torch.tensor([7, -7, 7, -7])
    b = torch.tensor([3, 3, -3, -3])
    assert kael.remainder(to_kael(a), to_kael(b)).tolist() == [1, 2, -2, -1]
    f = torch.tensor([7.5, -7.5, 7.5, -7.5])
    assert_same(kael.remainder(to_kael(f), to_kael(b.double())), torch.remainder(f, b.double()))
    assert kael.remainder(to_kael(f), to_kael(b.float())).tolist() == [1.5, 1.5, -1.5, -1.5]


FLOOR_A = [7.0, -7.0, 5.5, -5.5, 0.0, -0.0, 1.0, -1.0, 6.0, -6.0, 1e-30, INF, -INF, NAN]
FLOOR_B = [2.0, -2.0, 3.0, -3.0, 0.5, 0.0, -0.0, INF, -INF, NAN, 1e30]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", ["floor_divide", "remainder"])
def test_float_floor_divide_and_remainder_keep_torch_signed_zeros(name, dtype):
    a = torch.tensor(FLOOR_A, dtype=dtype).reshape(-1, 1)
    b = torch.tensor(FLOOR_B, dtype=dtype).reshape(1, -1)
    check_binary(name, to_kael(a), to_kael(b), a, b)


def test_float_floor_divide_signed_zero_examples():
    a = torch.tensor([0.5, -0.5, -0.0, 0.0, 1.0])
    b = torch.tensor([2.0, 2.0, 3.0, -3.0, -INF])
    got = kael.floor_divide(to_kael(a), to_kael(b))
    assert_same(got, torch.floor_divide(a, b))
    assert [math.copysign(1, v) for v in got.tolist()] == [1, -1, -1, -1, -1]


@pytest.mark.parametrize("name", ["floor_divide", "remainder"])
@pytest.mark.parametrize(
    "divisor",
    [
        pytest.param(lambda: kael.tensor([2, 0, 1]), id="tensor"),
        pytest.param(lambda: 0, id="python_int"),
        pytest.param(lambda: kael.tensor(0), id="zero_dim"),
        pytest.param(lambda: kael.tensor([True, False, True]), id="bool_tensor"),
        pytest.param(lambda: False, id="python_false"),
    ],
)
def test_integer_division_by_zero_raises(name, divisor):
    with pytest.raises(kael.Error, match="ZeroDivisionError"):
        getattr(kael, name)(kael.tensor([4, 5, 6]), divisor())


@pytest.mark.parametrize("name", ["floor_divide", "remainder"])
def test_integer_division_by_nonzero_and_float_division_by_zero_do_not_raise(name):
    i = torch.tensor([4, -5, 6])
    assert_same(getattr(kael, name)(to_kael(i), to_kael(torch.tensor([2, 1, -4]))),
                getattr(torch, name)(i, torch.tensor([2, 1, -4])))  # fmt: skip
    f = torch.tensor([4.0, -5.0, 0.0])
    assert_same(getattr(kael, name)(to_kael(f), 0), getattr(torch, name)(f, 0))
    assert_same(getattr(kael, name)(to_kael(i), 0.0), getattr(torch, name)(i, 0.0))


# ---- pow --------------------------------------------------------------------------------------


def test_integer_pow_by_squaring_matches_torch_and_python():
    base = torch.tensor([-3, -2, -1, 0, 1, 2, 3, 7, 10]).reshape(-1, 1)
    exponent = torch.tensor([0, 1, 2, 3, 5, 13, 39, 40, 62, 63, 64]).reshape(1, -1)
    got = kael.pow(to_kael(base), to_kael(exponent))
    assert_same(got, torch.pow(base, exponent))
    python = [[_wrap(b**e) for e in exponent.flatten().tolist()] for b in base.flatten().tolist()]
    assert got.tolist() == python


def test_integer_pow_with_negative_tensor_exponent_truncates():
    base = torch.tensor([2, 1, -1, -1, 0, 5, -5, 1, -1])
    exponent = torch.tensor([-1, -1, -1, -2, -1, -3, -3, -(2**62), INT64_MIN + 1])
    got = kael.pow(to_kael(base), to_kael(exponent))
    assert got.tolist() == [0, 1, -1, 1, 0, 0, 0, 1, -1]  # base 1 -> 1, -1 -> +-1, else 0
    assert_same(got, torch.pow(base, exponent))


def test_integer_pow_with_negative_zero_dim_tensor_exponent_is_not_checked():
    base = torch.tensor([2, 1, -1])
    got = kael.pow(to_kael(base), kael.tensor(-1))
    assert got.tolist() == [0, 1, -1]
    assert_same(got, torch.pow(base, torch.tensor(-1)))


@pytest.mark.parametrize("exponent", [-1, -2, -(2**40)])
def test_negative_python_int_exponent_on_integer_tensor_raises_value_error(exponent):
    t = kael.tensor([1, 2, 3])
    with pytest.raises(kael.ValueError, match="negative integer powers"):
        kael.pow(t, exponent)
    with pytest.raises(kael.ValueError, match="negative integer powers"):
        t**exponent
    with pytest.raises(RuntimeError):
        torch.tensor([1, 2, 3]) ** exponent


@pytest.mark.parametrize("exponent", [0, 1, 2, True, False])
def test_non_negative_python_int_exponent_on_integer_tensor_works(exponent):
    t = torch.tensor([-3, 0, 1, 4])
    assert_same(kael.pow(to_kael(t), exponent), torch.pow(t, exponent))


def test_integer_scalar_base_to_integer_tensor_power():
    e = torch.tensor([0, 1, 5, 62, 63])
    assert_same(2 ** to_kael(e), 2**e)
    assert_same(kael.pow(-1, to_kael(e)), torch.pow(-1, e))
    assert (2 ** to_kael(e)).tolist() == [1, 2, 32, 2**62, INT64_MIN]


POW_BASES = [INF, -INF, 0.0, -0.0, -1.5, 2.0, -2.0, 1e-30, 3.0, NAN, 1.0, -1.0, 1e30, 0.5, 7.0]
POW_EXPONENTS = [
    1e-50,
    -1e-50,
    2.0000000001,
    1 + 1e-9,
    0.1,
    1e10,
    -2.5,
    3.0,
    1e300,
    7,
    -3,
    2**53 + 1,
]


def _ipow(x, exponent):
    x **= exponent
    return x


POW_FORMS = {
    "operator": lambda lib, x, e: x**e,
    "function": lambda lib, x, e: lib.pow(x, e),
    "method": lambda lib, x, e: x.pow(e),
    "in place": lambda lib, x, e: x.clone().pow_(e),
    "augmented": lambda lib, x, e: _ipow(x.clone(), e),
}


@pytest.mark.parametrize("form", list(POW_FORMS))
@pytest.mark.parametrize("exponent", POW_EXPONENTS, ids=repr)
def test_float32_pow_keeps_a_number_exponent_in_float64_like_torch(exponent, form):
    # torch keeps a Scalar exponent in double: its scalar loop (a tensor under 32 elements)
    # computes std::pow(float, double), so x ** 1e-50 is not 1 for 0, inf or -1.5, and
    # -2.0 ** 2.0000000001 is NaN. Its vector loop rounds the exponent to float32 first: a
    # longer tensor is checked against torch's float64 answer rounded to float32.
    call = POW_FORMS[form]
    t = torch.tensor(POW_BASES)
    assert_same(call(kael, to_kael(t), exponent), call(torch, t, exponent))
    long = t.repeat(4)
    assert_same(call(kael, to_kael(long), exponent), call(torch, long.double(), exponent).float())


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.int64], ids=["f32", "f64", "i64"]
)
@pytest.mark.parametrize("exponent", [0.5, -0.5])
def test_pow_by_a_number_half_is_sqrt_or_rsqrt_like_torch(exponent, dtype):
    # torch computes x ** 0.5 as sqrt(x) and x ** -0.5 as rsqrt(x), whose special values are
    # not pow's: sqrt(-0.0) is -0.0 and sqrt(-inf) NaN, rsqrt(-0.0) is -inf. A tensor
    # exponent (a 0-d one too) is pow: +0.0, inf and +inf, 0.0 there. Finite values have
    # exact roots: torch's sqrt is not correctly rounded on every host (float64 sqrt(2.0)
    # came out 1 ulp low on an AVX-512 Xeon; kael's is IEEE sqrt).
    base = [-0.0, -INF, 0.0, INF, 4.0, -4.0, 16.0, 2.0**-100, 0.25]
    t = torch.tensor(base).to(dtype) if dtype.is_floating_point else torch.tensor([0, 4, -4, 7])
    assert_same(to_kael(t) ** exponent, t**exponent)
    if dtype.is_floating_point:  # in place too, and the tensor exponent
        assert_same(to_kael(t).pow_(exponent), t.clone().pow_(exponent))
        e = torch.tensor(exponent, dtype=dtype)
        want, got = torch.pow(t, e), kael.pow(to_kael(t), to_kael(e))
        assert_same(got[:4], want[:4])  # the special values; the rest within an ulp
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-15)
        assert want[0].item() == (0.0 if exponent > 0 else INF) and not want[0].signbit()


def test_pow_rounds_a_tensor_exponent_and_a_number_base_to_float32_like_torch():
    # The other operands keep the float32 path: a float32 exponent tensor, and the Python
    # float base of __rpow__ (torch rounds it to float32: (1 + 1e-9) ** x is 1).
    x = torch.tensor([-2.0, 3.0, 1e10])
    e = torch.tensor([2.0000000001, 1 + 1e-9, 1.0])
    assert_same(kael.pow(to_kael(x), to_kael(e)), torch.pow(x, e))
    assert (kael.pow(to_kael(x), to_kael(e)).tolist()[0]) == 4.0
    assert_same((1 + 1e-9) ** to_kael(x), (1 + 1e-9) ** x)
    assert ((1 + 1e-9) ** to_kael(x)).tolist()[2] == 1.0
    assert_same(kael.pow(2.0000000001, to_kael(x)), torch.pow(2.0000000001, x))
    i = torch.tensor([3, -2, 0])  # an int base computes in float32, from float32 values
    assert_same(to_kael(i) ** 2.5, i**2.5)
    assert_same(to_kael(i.double()) ** 2.0000000001, i.double() ** 2.0000000001)


# ---- bool refusals ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "a", "b"),
    [
        ("sub", [True, False], [True, True]),
        ("sub", [1, 2], [True, False]),
        ("sub", [True, False], [1, 2]),
        ("sub", [1, 2], True),
        ("sub", True, [1, 2]),
        ("floor_divide", [True, True], [True, True]),
        ("remainder", [True, True], [True, True]),
        ("pow", [True, False], [True, True]),
        ("pow", [True, False], True),
    ],
)
def test_bool_operands_raise_type_error_where_the_book_says(name, a, b):
    ka = kael.tensor(a) if isinstance(a, list) else a
    kb = kael.tensor(b) if isinstance(b, list) else b
    with pytest.raises(kael.TypeError):
        getattr(kael, name)(ka, kb)


def test_sub_message_suggests_logical_not_and_neg_of_bool_raises():
    with pytest.raises(kael.TypeError, match="logical_not"):
        kael.tensor([True]) - kael.tensor([False])
    with pytest.raises(kael.TypeError, match="logical_not"):
        -kael.tensor([True, False])
    with pytest.raises(kael.TypeError):
        kael.neg(kael.tensor([True]))


def test_bool_mixed_with_higher_category_works_where_the_book_allows():
    b, i = torch.tensor([True, False, True]), torch.tensor([3, 4, 5])
    assert_same(kael.floor_divide(to_kael(i), to_kael(torch.tensor([True] * 3))), i // True)
    assert_same(kael.pow(to_kael(b), 3), b**3)  # bool tensor, int exponent: int64
    assert_same(kael.pow(2, to_kael(b)), 2**b)
    assert_same(kael.mul(to_kael(b), to_kael(b)), b * b)  # bool * bool stays bool


def test_add_of_two_bools_gives_int64_in_kael():
    b = torch.tensor([True, True, False])
    got = kael.add(to_kael(b), to_kael(b))
    assert got.dtype is kael.int64
    assert got.tolist() == [2, 2, 0]
    assert (to_kael(b) + True).tolist() == [2, 2, 1]
    assert (torch.add(b, b)).dtype == torch.bool  # PyTorch differs: documented in API.md


# ---- comparisons, logical and bitwise ops ----------------------------------------------------


def test_comparisons_compute_in_the_promoted_dtype():
    i = torch.tensor([0, 1, 2])
    assert kael.lt(to_kael(i), 1.5).tolist() == [True, True, False]
    assert (to_kael(i) == 1.5).tolist() == [False, False, False]
    assert (to_kael(i) > 0.5).tolist() == [False, True, True]
    assert_same(to_kael(i) <= 1.5, i <= 1.5)
    big = torch.tensor([2**53 + 1, 2**53])
    f64 = torch.tensor([2.0**53, 2.0**53], dtype=torch.float64)
    assert_same(kael.eq(to_kael(big), to_kael(f64)), torch.eq(big, f64))
    assert kael.eq(to_kael(big), to_kael(big)).tolist() == [True, True]
    assert kael.eq(to_kael(big), 2**53).tolist() == [False, True]  # int64 scalar: exact


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_nan_compares_unequal_to_everything_and_only_ne_is_true(dtype):
    a = torch.tensor([NAN, NAN, NAN, 1.0], dtype=dtype)
    b = torch.tensor([NAN, 1.0, INF, NAN], dtype=dtype)
    for name in ("eq", "lt", "le", "gt", "ge"):
        got = getattr(kael, name)(to_kael(a), to_kael(b))
        assert got.tolist() == [False] * 4, name
    assert kael.ne(to_kael(a), to_kael(b)).tolist() == [True] * 4
    assert (to_kael(a) != NAN).tolist() == [True] * 4
    assert (to_kael(a) == NAN).tolist() == [False] * 4


def test_signed_zeros_compare_equal():
    z = torch.tensor([0.0, -0.0])
    assert kael.eq(to_kael(z), -0.0).tolist() == [True, True]
    assert kael.lt(to_kael(z), 0.0).tolist() == [False, False]


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical_ops_treat_nonzero_and_nan_as_true(name):
    a = torch.tensor([0.0, -0.0, NAN, 2.5, 0.0, -1.0]).reshape(-1, 1)
    b = torch.tensor([0, 3, -1]).reshape(1, -1)
    check_binary(name, to_kael(a), to_kael(b), a, b)
    assert getattr(kael, name)(to_kael(a), to_kael(b)).dtype is kael.bool


def test_logical_not_and_bitwise_not_on_bool_agree():
    b = torch.tensor([True, False])
    assert kael.logical_not(to_kael(b)).tolist() == [False, True]
    assert kael.bitwise_not(to_kael(b)).tolist() == [False, True]
    assert (~to_kael(b)).tolist() == [False, True]
    assert (~to_kael(torch.tensor([0, 5, -1]))).tolist() == [-1, -6, 0]


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor"])
@pytest.mark.parametrize(
    ("a", "b"),
    [
        (torch.tensor([1.5, 2.0]), torch.tensor([1, 2])),
        (torch.tensor([1, 2]), torch.tensor([1.0, 2.0], dtype=torch.float64)),
        (torch.tensor([1, 2]), 1.0),
        (torch.tensor([True, False]), 0.5),
    ],
    ids=["f32-i64", "i64-f64", "i64-pyfloat", "bool-pyfloat"],
)
def test_bitwise_ops_on_floats_raise_type_error(name, a, b):
    with pytest.raises(RuntimeError):
        getattr(torch, name)(a, torch.tensor(b) if not isinstance(b, torch.Tensor) else b)
    kb = to_kael(b) if isinstance(b, torch.Tensor) else b
    with pytest.raises(kael.TypeError, match="integer and bool"):
        getattr(kael, name)(to_kael(a), kb)


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor"])
def test_bitwise_ops_on_int_and_bool_match_torch(name):
    i = torch.tensor([INT64_MIN, -1, 0, 5, 12, INT64_MAX]).reshape(-1, 1)
    j = torch.tensor([-1, 6, 3]).reshape(1, -1)
    check_binary(name, to_kael(i), to_kael(j), i, j)
    b = torch.tensor([True, False, True, False])
    c = torch.tensor([True, True, False, False])
    check_binary(name, to_kael(b), to_kael(c), b, c)
    assert_same(getattr(kael, name)(to_kael(b), True), torch_binary(name, b, True))


def test_maximum_and_minimum_propagate_nan_from_either_side():
    a = torch.tensor([NAN, 1.0, NAN, -0.0, 0.0])
    b = torch.tensor([1.0, NAN, NAN, 0.0, -0.0])
    for name in ("maximum", "minimum"):
        got = getattr(kael, name)(to_kael(a), to_kael(b))
        assert_same(got, getattr(torch, name)(a, b), zero_sign=False)
        assert [math.isnan(v) for v in got.tolist()] == [True, True, True, False, False]


# ---- unary ops --------------------------------------------------------------------------------

UNARY_LAYOUTS = {
    "contiguous": ((3, 4), None),
    "transposed": ((4, 3), _T),
    "stepped": ((6, 8), _stepped),
    "expanded": ((3, 1), lambda x: x.expand(3, 4)),
    "zero_dim": ((), None),
    "empty": ((0, 3), None),
}


def check_unary(name: str, k, t) -> None:
    try:
        expected = getattr(torch, name)(t)
    except (RuntimeError, NotImplementedError):
        with pytest.raises(kael.TypeError):
            getattr(kael, name)(k)
        return
    got = getattr(kael, name)(k)
    if name in ("sqrt", "rsqrt") and expected.numel():
        # torch's float sqrt may go through MKL's VML, which is not correctly rounded
        # (sqrt(3e38f) is 1 ulp off): within 1 ulp of torch, and exactly IEEE sqrt.
        assert got.dtype is TO_KAEL[expected.dtype] and got.shape == tuple(expected.shape)
        np.testing.assert_array_max_ulp(got.numpy(), expected.numpy(), maxulp=1)
        x = t.numpy().astype(expected.numpy().dtype)
        with np.errstate(invalid="ignore", divide="ignore"):
            exact = np.sqrt(x) if name == "sqrt" else x.dtype.type(1) / np.sqrt(x)
        assert_same(got, torch.from_numpy(np.array(exact, dtype=x.dtype)))
        return
    assert_same(got, expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name", UNARY_OPS)
def test_unary_matches_torch_in_every_layout(name, dtype):
    for shape, view in UNARY_LAYOUTS.values():
        k, t = twin(values(dtype, shape), view or (lambda x: x))
        if name == "bitwise_not" and dtype.is_floating_point:
            with pytest.raises(kael.TypeError, match="integer and bool"):
                kael.bitwise_not(k)
            continue
        check_unary(name, k, t)


UNARY_SPECIALS = FLOAT_SPECIALS + [1.5, 2.5, -2.5, -0.5, 0.49999997, 4.0, 1e-40, -1e-40]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", [n for n in UNARY_OPS if n != "bitwise_not"])
def test_unary_special_values_match_torch_bit_for_bit(name, dtype):
    specials = UNARY_SPECIALS + (FLOAT64_EXTRA if dtype == torch.float64 else [])
    t = torch.tensor(specials, dtype=dtype)
    check_unary(name, to_kael(t), t)


def test_round_is_half_to_even():
    t = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5])
    got = kael.round(to_kael(t))
    assert got.tolist() == [0.0, 2.0, 2.0, -0.0, -2.0, -2.0]
    assert_same(got, torch.round(t))


@pytest.mark.parametrize("name", ["neg", "abs", "relu", "floor", "ceil", "round", "trunc"])
def test_unary_ops_refuse_bool(name):
    with pytest.raises(kael.TypeError):
        getattr(kael, name)(kael.tensor([True, False]))
    assert getattr(kael, name)(kael.tensor([1, -2])).dtype is kael.int64  # int64 is fine


@pytest.mark.parametrize(
    ("name", "dtype", "want"),
    [
        ("sqrt", torch.int64, kael.float32),
        ("rsqrt", torch.bool, kael.float32),
        ("reciprocal", torch.int64, kael.float32),
        ("reciprocal", torch.float64, kael.float64),
        ("square", torch.bool, kael.int64),
        ("square", torch.int64, kael.int64),
        ("sign", torch.bool, kael.bool),
        ("isnan", torch.int64, kael.bool),
        ("floor", torch.int64, kael.int64),
    ],
)
def test_unary_result_dtype_rules(name, dtype, want):
    t = values(dtype, (5,))
    got = getattr(kael, name)(to_kael(t))
    assert got.dtype is want
    assert_same(got, getattr(torch, name)(t))


FLOAT_RULE_OPS = [name for name, op in ew.UNARY.items() if op.rule == "float"]
TORCH_FLOAT_RULE = {name: getattr(torch, name, None) for name in FLOAT_RULE_OPS}
TORCH_FLOAT_RULE["silu"] = torch.nn.functional.silu


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool], ids=["i64", "bool"])
@pytest.mark.parametrize("name", [*FLOAT_RULE_OPS, "gelu", "gelu_tanh"])
def test_float_activations_refuse_int_and_bool_where_torch_does(name, dtype):
    # torch computes ints and bools in float32 for every "float" rule op but silu and gelu,
    # whose kernels are float only (they refuse even an empty input).
    if name.startswith("gelu"):
        approximate = "tanh" if name == "gelu_tanh" else "none"
        ops = [lambda lib, x: lib.nn.functional.gelu(x, approximate=approximate)]
    else:
        torch_fn = TORCH_FLOAT_RULE[name]
        ops = [lambda lib, x: getattr(lib, name)(x) if lib is kael else torch_fn(x)]
        ops.append(lambda lib, x: getattr(x, name)() if lib is kael else torch_fn(x))
    for shape in ((5,), (0,)):
        t = values(dtype, shape)
        for op in ops:
            try:
                want = op(torch, t)
            except NotImplementedError:
                base = "gelu" if name.startswith("gelu") else name
                message = (
                    f"^{base} is only supported for floating point dtypes, got {TO_KAEL[dtype]}$"
                )
                with pytest.raises(kael.TypeError, match=message):
                    op(kael, to_kael(t))
                continue
            got = op(kael, to_kael(t))
            assert got.dtype is kael.float32 and want.dtype is torch.float32
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)
    float_input = values(torch.float64, (5,))  # the other side: floats compute
    for op in ops:
        got, want = op(kael, to_kael(float_input)), op(torch, float_input)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-14)


# ---- where ------------------------------------------------------------------------------------


def test_where_broadcasts_all_three_operands():
    cond = torch.tensor([True, False, True]).reshape(3, 1, 1)
    a = torch.arange(4).reshape(1, 4)
    b = torch.tensor([[0.5], [-1.5]], dtype=torch.float64)
    got = kael.where(to_kael(cond), to_kael(a), to_kael(b))
    assert_same(got, torch.where(cond, a, b))
    assert got.shape == (3, 2, 4)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (1, 0.5),
        (True, False),
        (2, -3),
        ([1, 2, 3], 0.5),
        (0.5, [1, 2, 3]),
        ([1.5, 2.5, 3.5], 7),
        (2**40, [True, False, True]),
    ],
)
def test_where_scalar_branches_follow_the_scalar_tier(a, b):
    cond = torch.tensor([True, False, True])
    ta = torch.tensor(a) if isinstance(a, list) else a
    tb = torch.tensor(b) if isinstance(b, list) else b
    ka = to_kael(ta) if isinstance(ta, torch.Tensor) else ta
    kb = to_kael(tb) if isinstance(tb, torch.Tensor) else tb
    assert_same(kael.where(to_kael(cond), ka, kb), torch.where(cond, ta, tb))


def test_where_on_layouts_and_zero_dim_and_empty():
    cond = torch.tensor([[True, False, True, False]] * 3)
    kc, tc = twin(cond.T.contiguous(), _T)
    ka, ta = twin(values(torch.float32, (6, 8)), _stepped)
    kb = kael.tensor(2.5, dtype=kael.float64)
    tb = torch.tensor(2.5, dtype=torch.float64)
    assert_same(kael.where(kc, ka, kb), torch.where(tc, ta, tb))
    e = torch.zeros(0, 4, dtype=torch.bool)
    assert_same(kael.where(to_kael(e), 1, 2), torch.where(e, 1, 2))
    assert_same(
        kael.where(to_kael(torch.tensor(False)), 1.5, 2), torch.where(torch.tensor(False), 1.5, 2)
    )


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32])
def test_where_with_non_bool_condition_raises_type_error(dtype):
    cond = torch.tensor([1, 0], dtype=dtype)
    with pytest.raises(RuntimeError):
        torch.where(cond, 1, 2)
    with pytest.raises(kael.TypeError, match="bool"):
        kael.where(to_kael(cond), 1, 2)
    assert kael.where(to_kael(cond.bool()), 1, 2).tolist() == [1, 2]  # bool works


def test_where_shapes_that_do_not_broadcast_raise_value_error():
    with pytest.raises(kael.ValueError, match=r"\[3\].*\[2\]"):
        kael.where(kael.tensor([True, False, True]), kael.tensor([1, 2]), 0)


# ---- clamp ------------------------------------------------------------------------------------

CLAMP_VALUES = torch.tensor([-3.5, -1.0, 0.0, -0.0, 0.5, 2.0, 7.25, NAN, INF, -INF])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64], ids=DTYPE_IDS[:3])
@pytest.mark.parametrize(
    ("lo", "hi"), [(-1, None), (None, 2), (-1, 2), (0.5, None), (None, 1.5), (-0.5, 1.5), (3, -1)]
)
def test_clamp_with_scalar_bounds_matches_torch(dtype, lo, hi):
    t = CLAMP_VALUES.to(dtype) if dtype.is_floating_point else torch.arange(-4, 5)
    assert_same(kael.clamp(to_kael(t), lo, hi), torch.clamp(t, lo, hi))
    assert_same(to_kael(t).clamp(min=lo, max=hi), t.clamp(min=lo, max=hi))


def test_clamp_min_greater_than_max_gives_max():
    t = torch.tensor([-5.0, 0.0, 5.0])
    got = kael.clamp(to_kael(t), 3.0, 1.0)
    assert got.tolist() == [1.0, 1.0, 1.0]
    assert_same(got, torch.clamp(t, 3.0, 1.0))


def test_clamp_with_nan_bound_gives_nan():
    t = torch.tensor([-1.0, 0.0, 1.0])
    for lo, hi in ((NAN, None), (None, NAN), (NAN, 1.0), (0.0, NAN)):
        got = kael.clamp(to_kael(t), lo, hi)
        assert all(math.isnan(v) for v in got.tolist())
        assert_same(got, torch.clamp(t, lo, hi))
    lo = torch.tensor([NAN, 0.0, 0.0])
    assert_same(kael.clamp(to_kael(t), to_kael(lo)), torch.clamp(t, lo))
    assert math.isnan(kael.clamp(to_kael(t), to_kael(lo)).tolist()[0])


def test_clamp_of_int_tensor_with_float_bound_promotes_to_float32():
    t = torch.tensor([0, 1, 2, 3])
    got = kael.clamp(to_kael(t), 0.5, 2.5)
    assert got.dtype is kael.float32
    assert got.tolist() == [0.5, 1.0, 2.0, 2.5]
    assert_same(got, torch.clamp(t, 0.5, 2.5))
    assert kael.clamp(to_kael(t), 1, 2).dtype is kael.int64  # int bounds keep int64


def test_clamp_with_tensor_bounds_broadcasts_and_promotes():
    t = torch.tensor([-2.0, 0.0, 3.0])
    lo = torch.tensor([[-1.0], [0.5]])
    hi = torch.tensor([2, 2, 2])
    got = kael.clamp(to_kael(t), to_kael(lo), to_kael(hi))
    assert got.shape == (2, 3)
    assert_same(got, torch.clamp(t, lo, hi))
    i = torch.tensor([0, 1, 2])
    lo64 = torch.tensor(0.5, dtype=torch.float64)
    assert_same(kael.clamp(to_kael(i), min=to_kael(lo64)), torch.clamp(i, min=lo64))


def _clamp(lib, fn: str, x, lo, hi):
    """clamp (on x) or clamp_ (on a copy of x) in one library."""
    return lib.clamp(x, lo, hi) if fn == "clamp" else x.clone().clamp_(lo, hi)


@pytest.mark.parametrize("fn", ["clamp", "clamp_"])
def test_clamp_refuses_a_tensor_bound_beside_a_number_like_torch(fn):
    t = torch.tensor([-2.0, 0.0, 3.0, 9.0])
    bound = torch.tensor([1.0, -1.0, 2.0, 8.0])
    for lo, hi, name in ((-1.5, bound, "max"), (bound, 2.5, "min"), (True, bound, "max")):
        with pytest.raises(TypeError, match="invalid combination of arguments"):
            _clamp(torch, fn, t, lo, hi)
        k = to_kael(t)
        message = (
            rf"^{fn}\(\): {name} must be a number when the other bound is one \(Tensor bounds"
            r" or number bounds, not both\), got a Tensor of shape \[4\]$"
        )
        klo, khi = (to_kael(v) if isinstance(v, torch.Tensor) else v for v in (lo, hi))
        with pytest.raises(kael.TypeError, match=message):
            _clamp(kael, fn, k, klo, khi)
        assert k.tolist() == t.tolist()
    for lo, hi in ((None, bound), (bound, bound), (-1.5, 2.5)):  # not mixed: both answer
        klo, khi = (to_kael(v) if isinstance(v, torch.Tensor) else v for v in (lo, hi))
        assert_same(_clamp(kael, fn, to_kael(t), klo, khi), _clamp(torch, fn, t, lo, hi))


@pytest.mark.parametrize("fn", ["clamp", "clamp_"])
def test_clamp_reads_a_0d_tensor_bound_beside_a_number_as_that_number_like_torch(fn):
    # torch's Number overload takes a 0-d tensor for a Number: its value then promotes as a
    # Python number (float32 here), where two tensor bounds promote as tensors (float64).
    x = torch.tensor([0.0, 3.0])
    lo64, hi64 = torch.tensor(0.5, dtype=torch.float64), torch.tensor(2.5, dtype=torch.float64)
    cases = [(lo64, 1), (1, hi64), (torch.tensor(True), 2.0), (lo64, hi64), (lo64, None)]
    for lo, hi in cases:
        klo, khi = (to_kael(v) if isinstance(v, torch.Tensor) else v for v in (lo, hi))
        assert_same(_clamp(kael, fn, to_kael(x), klo, khi), _clamp(torch, fn, x, lo, hi))
    i = torch.tensor([0, 3])
    assert torch.clamp(i, lo64, 1).dtype is torch.float32
    assert_same(kael.clamp(to_kael(i), to_kael(lo64), 1), torch.clamp(i, lo64, 1))
    assert_same(kael.clamp(to_kael(i), to_kael(lo64), None), torch.clamp(i, lo64, None))


BOOL_CLAMP_BOUNDS = {
    "tensor min": (torch.tensor([True, False]), None, True),
    "tensor max": (None, torch.tensor([True, False]), True),
    "0-d tensor min": (torch.tensor(True), None, True),
    "row of tensor max": (None, torch.tensor([[False], [True]]), True),
    "two tensors": (torch.tensor([True, False]), torch.tensor([True, True]), False),
    "two 0-d tensors": (torch.tensor(True), torch.tensor(False), False),
    "number min": (True, None, False),
    "number max": (None, False, False),
    "numbers": (True, False, False),
    "0-d tensor and a number": (torch.tensor(True), False, False),
}


@pytest.mark.parametrize("fn", ["clamp", "clamp_"])
@pytest.mark.parametrize("name", list(BOOL_CLAMP_BOUNDS))
def test_clamp_of_bool_takes_one_tensor_bound_like_torch(name, fn):
    lo, hi, answers = BOOL_CLAMP_BOUNDS[name]
    x = torch.tensor([False, True])
    klo, khi = (to_kael(v) if isinstance(v, torch.Tensor) else v for v in (lo, hi))
    if fn == "clamp_" and name == "row of tensor max":
        answers = False  # the broadcast shape [2, 2] is not x's: both refuse
    if answers:
        assert_same(_clamp(kael, fn, to_kael(x), klo, khi), _clamp(torch, fn, x, lo, hi))
        return
    with pytest.raises((NotImplementedError, RuntimeError)):
        _clamp(torch, fn, x, lo, hi)
    k = to_kael(x)
    with pytest.raises(kael.Error):
        _clamp(kael, fn, k, klo, khi)
    assert k.tolist() == [False, True]


def test_clamp_of_bool_refusal_names_the_bounds():
    b, t = kael.tensor([False, True]), kael.tensor([True, False])
    for fn, args, given in (
        (kael.clamp, (b, t, t), "two Tensor bounds"),
        (kael.clamp, (b, True), "number bounds"),
        (kael.Tensor.clamp_, (b, None, False), "number bounds"),
        (kael.clamp, (kael.zeros(0, dtype=kael.bool), t[:0], t[:0]), "two Tensor bounds"),
    ):
        op = "clamp_" if fn is kael.Tensor.clamp_ else "clamp"
        message = f"^{op} does not support bool with {given}, only with one Tensor bound$"
        with pytest.raises(kael.TypeError, match=message):
            fn(*args)
    with pytest.raises(NotImplementedError):  # torch refuses the empty one too
        empty = torch.zeros(0, dtype=torch.bool)
        torch.clamp(empty, empty, empty)


def test_clamp_without_bounds_raises_and_bool_is_refused():
    with pytest.raises(kael.ValueError, match="at least one"):
        kael.clamp(kael.tensor([1.0]))
    with pytest.raises(kael.TypeError):
        kael.clamp(kael.tensor([True, False]), True)
    b = torch.tensor([True, False])
    assert_same(kael.clamp(to_kael(b), 0), torch.clamp(b, 0))  # int bound: int64 result
    assert_same(kael.clip(to_kael(b), max=0), torch.clip(b, max=0))


def test_clamp_on_layouts_and_empty():
    k, t = twin(values(torch.float32, (6, 8)), _stepped)
    assert_same(kael.clamp(k, -1.0, 2.0), torch.clamp(t, -1.0, 2.0))
    k, t = twin(values(torch.int64, (4, 3)), _T)
    assert_same(kael.clamp(k, min=0), torch.clamp(t, min=0))
    e = torch.zeros(0, 3)
    assert_same(kael.clamp(to_kael(e), 0.0, 1.0), torch.clamp(e, 0.0, 1.0))


# ---- masked_fill ------------------------------------------------------------------------------


def test_masked_fill_with_mask_of_the_same_or_narrower_shape():
    t = values(torch.float32, (3, 4))
    for mask in (torch.tensor(BOOL_VALUES).reshape(3, 4), torch.tensor([True, False, False, True])):
        got = kael.masked_fill(to_kael(t), to_kael(mask), -9.5)
        assert_same(got, t.masked_fill(mask, -9.5))
    k = to_kael(t)
    kael.masked_fill(k, kael.tensor([True] * 4), 0.0)
    assert_same(k, t)  # out of place: the input is unchanged


def test_masked_fill_with_a_wider_mask_broadcasts_the_result():
    t = torch.tensor([1.0, 2.0, 3.0])
    mask = torch.tensor([[True, False, True], [False, False, False]])
    got = kael.masked_fill(to_kael(t), to_kael(mask), 9.0)
    assert got.shape == (2, 3)
    assert_same(got, t.masked_fill(mask, 9.0))


def test_masked_fill_converts_the_value_to_the_tensor_dtype():
    t = torch.tensor([1, -2, 3])
    mask = torch.tensor([True, False, True])
    for value in (2.7, -2.7, True, torch.tensor(5), torch.tensor(4.5)):
        kvalue = to_kael(value) if isinstance(value, torch.Tensor) else value
        assert_same(kael.masked_fill(to_kael(t), to_kael(mask), kvalue), t.masked_fill(mask, value))
    f = torch.tensor([1.5, 2.5])
    assert_same(
        kael.masked_fill(to_kael(f), to_kael(torch.tensor([False, True])), NAN),
        f.masked_fill(torch.tensor([False, True]), NAN),
    )


def test_masked_fill_refuses_non_bool_masks_and_non_scalar_values():
    t = kael.tensor([1.0, 2.0])
    with pytest.raises(kael.TypeError, match="bool mask"):
        kael.masked_fill(t, kael.tensor([1, 0]), 0.0)
    with pytest.raises(kael.ValueError, match="0-dim"):
        kael.masked_fill(t, kael.tensor([True, False]), kael.tensor([1.0, 2.0]))
    with pytest.raises(kael.ValueError):
        kael.masked_fill(t, kael.tensor([True, False, True]), 0.0)


MASKED_FILL_BEYOND = {
    "float16, 65505": (lambda m: m.float16, lambda m: 65505),
    "float16, 0-d 2**40": (lambda m: m.float16, lambda m: m.tensor(2**40)),
    "float16, 0-d 7e4": (lambda m: m.float16, lambda m: m.tensor(7e4)),
    "bfloat16, 1e300": (lambda m: m.bfloat16, lambda m: 1e300),
    "bfloat16, 0-d 3.4e38": (lambda m: m.bfloat16, lambda m: m.tensor(3.4e38)),
    "float32, -3.5e38": (lambda m: m.float32, lambda m: -3.5e38),
    "float32, 0-d float64 1e300": (lambda m: m.float32, lambda m: m.tensor(1e300, dtype=m.float64)),
}


@pytest.mark.parametrize(("dtype", "value"), MASKED_FILL_BEYOND.values(), ids=MASKED_FILL_BEYOND)
def test_masked_fill_refuses_a_value_beyond_a_float_dtypes_range(dtype, value):
    """PyTorch's masked_fill_ converts the value (a 0-d tensor's too) checked: a finite one
    beyond the dtype's largest is refused, even where it would round to it (65505 in
    float16), even where the mask selects nothing."""
    for m, error in ((torch, RuntimeError), (kael, kael.ValueError)):
        x = m.zeros(2, dtype=dtype(m))
        with pytest.raises(error, match="cannot be converted to type .* without overflow"):
            x.masked_fill_(m.tensor([False, False]), value(m))
        with pytest.raises(error, match="cannot be converted to type .* without overflow"):
            m.masked_fill(x, m.tensor([True, False]), value(m))


@pytest.mark.parametrize("value", [65504.0, math.inf, -math.inf, math.nan, -65504])
def test_masked_fill_takes_a_half_dtypes_largest_and_the_special_values(value):
    """What the overflow check lets through (held before it too): the largest finite
    value, the infinities and NaN."""
    t = torch.zeros(2, dtype=torch.float16).masked_fill_(torch.tensor([True, False]), value)
    k = kael.zeros(2, dtype=kael.float16).masked_fill_(kael.tensor([True, False]), value)
    assert_same(k, t)


def test_masked_store_keeps_setitems_half_overflow_as_torch():
    """tensor[mask] = value stores a float16 value beyond the range as inf in PyTorch, where
    masked_fill_ refuses it: masked_store_ is the fill without that check."""
    t = torch.zeros(2, dtype=torch.float16)
    t[torch.tensor([True, False])] = 1e6
    k = ew.masked_store_(kael.zeros(2, dtype=kael.float16), kael.tensor([True, False]), 1e6)
    assert_same(k, t)


def test_masked_fill_on_transposed_and_stepped_inputs():
    k, t = twin(values(torch.int64, (4, 3)), _T)
    mask = torch.tensor([[True, False, True, False]] * 3)
    assert_same(kael.masked_fill(k, to_kael(mask), 0), t.masked_fill(mask, 0))
    k, t = twin(values(torch.float64, (6, 8)), _stepped)
    assert_same(kael.masked_fill(k, to_kael(mask), 1.5), t.masked_fill(mask, 1.5))


# ---- equal and allclose -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0])),
        (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5])),
        (torch.tensor([1.0, 2.0]), torch.tensor([[1.0, 2.0]])),
        (torch.tensor([1.0]), torch.tensor([1.0, 1.0])),
        (torch.tensor([NAN]), torch.tensor([NAN])),
        (torch.tensor([0.0]), torch.tensor([-0.0])),
        (torch.tensor([1, 2]), torch.tensor([1.0, 2.0])),
        (torch.tensor([True, False]), torch.tensor([1, 0])),
        (torch.zeros(0, 3), torch.zeros(0, 3)),
        (torch.zeros(0, 3), torch.zeros(3, 0)),
        (torch.tensor(3), torch.tensor(3)),
        (torch.tensor(3), torch.tensor([3])),
        (torch.tensor([INF, -INF]), torch.tensor([INF, -INF])),
    ],
)
def test_equal_matches_torch(a, b):
    want = torch.equal(a, b)
    got = kael.equal(to_kael(a), to_kael(b))
    assert type(got) is bool
    assert got == want


def test_equal_reads_non_contiguous_layouts():
    t = values(torch.float32, (4, 3))
    ka, ta = twin(t, _T)
    kb = to_kael(t.T.contiguous())
    assert kael.equal(ka, kb) is True
    assert torch.equal(ta, t.T.contiguous())
    assert kael.equal(ka, kael.add(kb, 1.0)) is False
    same_nan = kael.tensor([NAN, 1.0])
    assert kael.equal(same_nan, same_nan) is False  # NaN is never equal, even to itself


@pytest.mark.parametrize(
    ("a", "b", "kwargs"),
    [
        ([100.0], [100.001], {}),
        ([100.0], [100.0011], {}),
        ([100.001], [100.0], {}),
        ([1.0], [1.1], {"rtol": 0.095}),
        ([1.1], [1.0], {"rtol": 0.095}),
        ([0.0], [1e-8], {}),
        ([0.0], [2e-8], {}),
        ([0.0], [0.5], {"atol": 0.5, "rtol": 0.0}),
        ([0.0], [0.5000001], {"atol": 0.5, "rtol": 0.0}),
        ([NAN], [NAN], {}),
        ([NAN], [NAN], {"equal_nan": True}),
        ([NAN], [1.0], {"equal_nan": True}),
        ([INF], [INF], {}),
        ([-INF], [-INF], {}),
        ([INF], [-INF], {}),
        ([1.0], [INF], {}),
        ([INF], [1.0], {}),
        ([1e308], [INF], {"rtol": 1.0}),
        ([1.0, 2.0], [[1.0, 2.0], [1.0, 2.0 + 1e-3]], {}),
        ([1.0, 2.0], [[1.0, 2.0], [1.0, 2.0]], {}),
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_allclose_matches_torch(a, b, kwargs, dtype):
    ta, tb = torch.tensor(a, dtype=dtype), torch.tensor(b, dtype=dtype)
    want = torch.allclose(ta, tb, **kwargs)
    got = kael.allclose(to_kael(ta), to_kael(tb), **kwargs)
    assert type(got) is bool
    assert got == want


@pytest.mark.parametrize(
    "kwargs",
    [{"atol": math.inf}, {"rtol": 0}, {"atol": 0.0}, {"rtol": True}, {"atol": np.float32(0.5)}],
    ids=repr,
)
def test_allclose_takes_any_tolerance_at_least_zero_like_torch(kwargs):
    ta, tb = torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5])
    assert kael.allclose(to_kael(ta), to_kael(tb), **kwargs) == torch.allclose(ta, tb, **kwargs)


@pytest.mark.parametrize("name", ["rtol", "atol"])
@pytest.mark.parametrize("value", [NAN, -1.0, -1e-300, -INF], ids=repr)
def test_allclose_tolerance_below_zero_or_nan_is_a_value_error(name, value):
    t = torch.zeros(3)
    with pytest.raises(RuntimeError, match="greater than or equal to zero"):
        torch.allclose(t, t, **{name: value})
    message = f"^allclose\\(\\): {name} must be greater than or equal to zero, got {value}$"
    with pytest.raises(kael.ValueError, match=message):
        kael.allclose(to_kael(t), to_kael(t), **{name: value})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rtol": "a"}, "rtol must be a float, got str"),
        ({"atol": None}, "atol must be a float, got NoneType"),
        ({"equal_nan": 1}, "equal_nan must be a bool, got int"),
        ({"equal_nan": "yes"}, "equal_nan must be a bool, got str"),
    ],
    ids=repr,
)
def test_allclose_argument_types_are_type_errors_naming_them(kwargs, message):
    t = torch.zeros(3)
    with pytest.raises(TypeError):
        torch.allclose(t, t, **kwargs)
    with pytest.raises(kael.TypeError, match=f"^allclose\\(\\): {message}$"):
        kael.allclose(to_kael(t), to_kael(t), **kwargs)


@pytest.mark.parametrize("da", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("db", DTYPES, ids=DTYPE_IDS)
def test_allclose_refuses_mixed_dtypes_like_torch_and_equal_promotes_them(da, db):
    ta, tb = torch.tensor([1, 0]).to(da), torch.tensor([1, 0]).to(db)
    for a, b in ((ta, tb), (ta[:1], tb.reshape(2, 1)), (ta[:0], tb[:0]), (ta[0], tb)):
        assert kael.equal(to_kael(a), to_kael(b)) == torch.equal(a, b)
        if da is db:
            assert kael.allclose(to_kael(a), to_kael(b)) == torch.allclose(a, b)
            continue
        with pytest.raises(RuntimeError, match="did not match"):
            torch.allclose(a, b)
        message = (
            rf"^allclose\(\): input has dtype {TO_KAEL[da]} but other has dtype "
            rf"{TO_KAEL[db]}; they must match$"
        )
        with pytest.raises(kael.TypeError, match=message):
            kael.allclose(to_kael(a), to_kael(b))


def test_allclose_on_integers_and_bools():
    for a, b in (([1, 2], [1, 2]), ([1, 2], [1, 3]), ([True], [True]), ([True], [False])):
        ta, tb = torch.tensor(a), torch.tensor(b)
        assert kael.allclose(to_kael(ta), to_kael(tb)) == torch.allclose(ta, tb)


# ---- broadcasting, out=, operators ------------------------------------------------------------


@pytest.mark.parametrize(
    ("sa", "sb"), [((2, 3), (4,)), ((3,), (2,)), ((2, 3, 4), (3, 1, 5)), ((0,), (2,))]
)
def test_shapes_that_do_not_broadcast_raise_value_error_naming_both(sa, sb):
    a, b = kael.zeros(*sa), kael.zeros(*sb)
    with pytest.raises(RuntimeError):
        torch.zeros(*sa) + torch.zeros(*sb)
    fa, fb = (f"[{', '.join(map(str, s))}]" for s in (sa, sb))
    for fn in (kael.add, kael.eq, kael.logical_and, kael.maximum):
        with pytest.raises(kael.ValueError) as info:
            fn(a, b)
        assert fa in str(info.value) and fb in str(info.value)


OUT_CALLS = {
    "add": (lambda a, b, **o: kael.add(a, b, **o), lambda a, b: a + b),
    "div": (lambda a, b, **o: kael.div(a.long(), 2, **o), lambda a, b: a.long() / 2),
    "lt": (lambda a, b, **o: kael.lt(a, b, **o), lambda a, b: a < b),
    "neg": (lambda a, b, **o: kael.neg(a, **o), lambda a, b: -a),
    "where": (
        lambda a, b, **o: kael.where(a > 0, a, b, **o),
        lambda a, b: torch.where(a > 0, a, b),
    ),
    "clamp": (lambda a, b, **o: kael.clamp(a, 0.0, **o), lambda a, b: torch.clamp(a, 0.0)),
}


@pytest.mark.parametrize("name", list(OUT_CALLS))
def test_out_of_the_result_shape_and_dtype_is_written_and_returned(name):
    call, reference = OUT_CALLS[name]
    ta = torch.tensor([[-1.5, 2.0, 0.5], [3.0, -4.0, 1.0]])
    tb = torch.tensor([0.25, -1.0, 2.0])
    expected = reference(ta, tb)
    out = kael.zeros(*expected.shape, dtype=TO_KAEL[expected.dtype])
    got = call(to_kael(ta), to_kael(tb), out=out)
    assert got is out
    assert_same(out, expected)


def test_out_in_a_transposed_layout_is_written_in_its_own_layout():
    base = kael.zeros(3, 2)
    out = base.T
    ta, tb = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), torch.tensor([10.0, 20.0, 30.0])
    got = kael.add(to_kael(ta), to_kael(tb), out=out)
    assert got is out
    assert_same(out, ta + tb)
    assert_same(base, (ta + tb).T)


@pytest.mark.parametrize("dtype", [kael.float64, kael.int64], ids=str)
def test_out_of_the_wrong_dtype_raises_and_writes_nothing(dtype):
    # add casts into a float64 out (test_out_casting.py), never into an int64 one; neg
    # takes its own dtype only
    a, b = kael.ones(2, 3), kael.ones(3)
    out = kael.zeros(2, 3, dtype=dtype)
    if dtype is kael.int64:
        with pytest.raises(kael.TypeError, match="float32 can't be cast"):
            kael.add(a, b, out=out)
    with pytest.raises(kael.TypeError, match=f"out has dtype {dtype}"):
        kael.neg(a, out=out)
    assert kael.equal(out, kael.zeros(2, 3, dtype=dtype))  # nothing written


@pytest.mark.parametrize("shape", [(3, 2), (2, 3, 1), (6,), (0,)])
def test_out_of_another_shape_is_resized_as_torch_does(shape):
    # torch resizes it, warning when it held elements
    a, b = kael.ones(2, 3), kael.ones(3)
    got = resized_out(lambda o: kael.add(a, b, out=o), kael.zeros(*shape), (2, 3))
    assert got.tolist() == [[2.0] * 3] * 2
    got = resized_out(lambda o: kael.neg(a, out=o), kael.zeros(*shape), (2, 3))
    assert got.tolist() == [[-1.0] * 3] * 2


def test_out_that_overlaps_itself_raises():
    out = kael.zeros(1, 3).expand(2, 3)
    with pytest.raises(kael.Error, match=r"clone\(\)"):
        kael.add(kael.ones(2, 3), 1.0, out=out)


def test_out_that_aliases_an_input_in_another_layout_reads_a_copy():
    t = torch.arange(9.0).reshape(3, 3)
    k = to_kael(t)
    kael.add(k, k.T, out=k)
    assert_same(k, t + t.T)


OPERATOR_NAMES = {
    "+": "add", "-": "sub", "*": "mul", "/": "div", "//": "floor_divide", "%": "remainder",
    "**": "pow", "&": "bitwise_and", "|": "bitwise_or", "^": "bitwise_xor", "==": "eq",
    "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge",
}  # fmt: skip
BINARY_OPERATORS = [
    ("+", lambda a, b: a + b),
    ("-", lambda a, b: a - b),
    ("*", lambda a, b: a * b),
    ("/", lambda a, b: a / b),
    ("//", lambda a, b: a // b),
    ("%", lambda a, b: a % b),
    ("**", lambda a, b: a**b),
    ("&", lambda a, b: a & b),
    ("|", lambda a, b: a | b),
    ("^", lambda a, b: a ^ b),
    ("==", lambda a, b: a == b),
    ("!=", lambda a, b: a != b),
    ("<", lambda a, b: a < b),
    ("<=", lambda a, b: a <= b),
    (">", lambda a, b: a > b),
    (">=", lambda a, b: a >= b),
]


@pytest.mark.parametrize(("symbol", "op"), BINARY_OPERATORS, ids=[s for s, _ in BINARY_OPERATORS])
def test_python_operators_and_reflected_operators_match_torch(symbol, op):
    name = OPERATOR_NAMES[symbol]
    ti, tj = torch.tensor([[5, -7, 3]]), torch.tensor([[2], [-3]])
    tf = torch.tensor([1.5, -2.0, 4.0])
    tb = torch.tensor([True, False, True])
    cases = [(ti, tj), (ti, 3), (3, ti), (-2, tj), (True, ti), (tb, ti), (ti, tb)]
    if symbol not in ("**", "&", "|", "^"):
        cases += [(tf, ti), (ti, tf), (1, tf), (tf, 2.5), (2.5, tf), (0.5, ti), (tb, 2.5)]
    for a, b in cases:
        ka = to_kael(a) if isinstance(a, torch.Tensor) else a
        kb = to_kael(b) if isinstance(b, torch.Tensor) else b
        expected = expected_binary(name, a, b, operator=True)
        if isinstance(expected, type):
            with pytest.raises(expected):
                op(ka, kb)
        else:
            assert_same(op(ka, kb), expected)


def test_named_reflected_examples():
    t = torch.tensor([1, 2, 4])
    k = to_kael(t)
    assert (1 - k).tolist() == [0, -1, -3]
    assert (2**k).tolist() == [2, 4, 16]
    assert (3 / k).tolist() == [3.0, 1.5, 0.75]
    assert (3 / k).dtype is kael.float32
    assert (7 // k).tolist() == [7, 3, 1]
    assert (7 % k).tolist() == [0, 1, 3]


def test_unary_python_operators_match_torch():
    for t in (torch.tensor([-1.5, 0.0, -0.0, 2.0]), torch.tensor([INT64_MIN, -3, 0, 7])):
        k = to_kael(t)
        assert_same(-k, -t)
        assert_same(abs(k), abs(t))
        assert (+k) is k
    assert_same(~to_kael(torch.tensor([0, 7, -1])), ~torch.tensor([0, 7, -1]))


@pytest.mark.parametrize(
    ("symbol", "op"),
    [
        ("+=", lambda a, b: a.__iadd__(b)),
        ("-=", lambda a, b: a.__isub__(b)),
        ("*=", lambda a, b: a.__imul__(b)),
        ("/=", lambda a, b: a.__itruediv__(b)),
    ],
    ids=["iadd", "isub", "imul", "itruediv"],
)
def test_in_place_operators_write_into_the_same_tensor(symbol, op):
    t, other = torch.tensor([[1.5, -2.0, 4.0]]), torch.tensor([[2.0], [0.5], [-1.0]]).T
    k = to_kael(t)
    storage = k._impl.storage
    result = op(k, to_kael(other))
    assert result is k and k._impl.storage is storage
    assert_same(k, op(t.clone(), other))
    k2 = to_kael(t)
    op(k2, 3)
    assert_same(k2, op(t.clone(), 3))
    i = to_kael(torch.tensor([1, 2]))
    if symbol == "/=":
        with pytest.raises(kael.TypeError):
            i /= 2
    else:
        assert_same(op(i, 2), op(torch.tensor([1, 2]), 2))


def test_in_place_operator_statements_rebind_to_the_same_object():
    k = kael.tensor([1.0, 2.0])
    before = k
    k += 1
    k -= 0.5
    k *= 2
    k /= 4
    assert k is before
    assert k.tolist() == [0.75, 1.25]


def test_aliases_are_the_same_ops():
    for alias, name in (
        ("subtract", "sub"),
        ("multiply", "mul"),
        ("divide", "div"),
        ("true_divide", "div"),
        ("negative", "neg"),
        ("absolute", "abs"),
        ("clip", "clamp"),
        ("greater", "gt"),
        ("greater_equal", "ge"),
        ("less", "lt"),
        ("less_equal", "le"),
        ("not_equal", "ne"),
    ):
        assert getattr(kael, alias) is getattr(kael, name), alias


def test_non_tensor_operands_raise_type_error():
    with pytest.raises(kael.TypeError):
        kael.add(kael.tensor([1.0]), "1")
    with pytest.raises(kael.TypeError):
        kael.add(1, 2)
    with pytest.raises(kael.TypeError):
        kael.neg(1.0)


@pytest.mark.parametrize("mode", ["trunc", "floor"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_div_rounding_modes_match_torch(mode, dtype):
    a = values(dtype, (4, 5))
    b = values(dtype, (5,))
    if not dtype.is_floating_point:
        b = torch.where(b == 0, torch.ones_like(b), b)  # integer zero divisors raise (below)
    check_binary_fn = kael.div(to_kael(a), to_kael(b), rounding_mode=mode)
    expected = torch.div(a, b, rounding_mode=mode)
    assert_same(check_binary_fn, expected)
    assert_same(to_kael(a).div(3, rounding_mode=mode), a.div(3, rounding_mode=mode))
    k = to_kael(a.clone())
    assert k.div_(to_kael(b), rounding_mode=mode) is k
    assert_same(k, a.clone().div_(b, rounding_mode=mode))


def _half_trunc_layouts(m, dtype, a, b) -> dict:
    """div(..., rounding_mode='trunc') of float16/bfloat16 operands in the layouts whose
    divisor PyTorch reads per element (the quotient rounded to the half type before the
    truncation) and in those whose divisor is one element everywhere (TensorIterator's
    scalar: the float32 quotient truncated, the divisor's own value read)."""
    a, b = m.tensor(a).to(dtype), m.tensor(b).to(dtype)

    def trunc(x, y):
        return m.div(x, y, rounding_mode="trunc")

    return {
        "same shape": trunc(a, b),
        "3 elements": trunc(a[:3], b[:3]),
        "column divisor": trunc(a.reshape(8, 8), b[:8].reshape(8, 1)),
        "transposed": trunc(a.reshape(8, 8).T, b.reshape(8, 8)),
        "number dividend": trunc(300.1, b),
        "in place": a.clone().div_(b, rounding_mode="trunc"),
        "1 element": trunc(a[:1], b[:1]),
        "0-d divisor": trunc(a, b[0]),
        "expanded divisor": trunc(a, b[:1].expand(64)),
        "number divisor": trunc(a, 0.3),
        "float32 0-d divisor": trunc(a, m.tensor(0.3)),
        "int32 divisor beyond float16": trunc(a, m.tensor([70000], dtype=m.int32)),
    }


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_half_div_trunc_rounds_the_quotient_to_the_half_dtype_as_torch(dtype):
    """div([300.] * 4, [0.3] * 4, 'trunc') in float16 is 1000 (999.84 rounded first), and
    -1000 / 7.875 in bfloat16 is -127; by a one-element divisor the quotient is not
    rounded (300 / 0.3 is 999), as in PyTorch: every layout bit for bit."""
    rng = np.random.default_rng(11)
    a = (rng.standard_normal(64) * 10 ** rng.uniform(0, 4, 64)).astype(np.float32)
    b = (rng.standard_normal(64) * 10 ** rng.uniform(-2, 1, 64)).astype(np.float32)
    a[:4], b[:4] = [300.0, -1000.0, 65504.0, np.inf], [0.3, 7.875, 0.5, 2.0]
    want = _half_trunc_layouts(torch, dtype, a, b)
    got = _half_trunc_layouts(kael, TO_KAEL[dtype], a, b)
    for name, t in want.items():
        k = got[name]
        assert k.dtype is TO_KAEL[t.dtype] and k.shape == tuple(t.shape), name
        np.testing.assert_array_equal(k.float().numpy(), t.float().numpy(), err_msg=name)


def test_div_rounding_mode_refusals():
    with pytest.raises(kael.ValueError, match="rounding_mode"):
        kael.div(kael.ones(2), 2, rounding_mode="up")
    with pytest.raises(kael.Error, match="ZeroDivisionError"):
        kael.div(kael.tensor([3]), kael.tensor([0]), rounding_mode="trunc")
    with pytest.raises(kael.Error, match="ZeroDivisionError"):
        kael.fmod(kael.tensor([3]), 0)


def test_shift_operators_match_torch():
    a, b = torch.tensor([1, -8, 5, 3, 7]), torch.tensor([1, 2, 70, -1, 0])
    ka, kb = to_kael(a), to_kael(b)
    assert_same(ka << kb, a << b)
    assert_same(ka >> kb, a >> b)
    assert_same(2 << ka[:2], 2 << a[:2])
    k = ka.clone()
    k <<= 1
    assert_same(k, a << 1)


@pytest.mark.parametrize("mode", ["trunc", "floor"])
@pytest.mark.parametrize("dtype", [kael.int32, kael.int8, kael.uint8], ids=str)
def test_div_rounding_modes_of_narrow_integers_match_torch(mode, dtype):
    from parity_helpers import close_to_torch, torch_pair

    low = 0 if dtype is kael.uint8 else -60
    ka, ta = torch_pair(np.random.default_rng(3).integers(low, 100, (4, 5)), dtype)
    kb, tb = torch_pair(np.random.default_rng(4).integers(1, 9, 5), dtype)
    close_to_torch(kael.div(ka, kb, rounding_mode=mode), torch.div(ta, tb, rounding_mode=mode), 0)


ALPHAS = [(d, a) for d in (torch.float32, torch.float64) for a in (2, -1, 0.5, 0.1, 3.7)]
ALPHAS += [(torch.int64, 2), (torch.int64, -3)]  # an integral input takes an integer alpha


@pytest.mark.parametrize("name", ["add", "sub"])
@pytest.mark.parametrize(("dtype", "alpha"), ALPHAS, ids=str)
def test_add_and_sub_scale_other_by_alpha_as_torch(name, dtype, alpha):
    """input + alpha * other (sub: minus) as a function, a method and in place, broadcast:
    the same bits as PyTorch, whose float kernel is one fma (kael's too)."""
    rng = np.random.default_rng(0)
    a = torch.from_numpy(rng.standard_normal((3, 4)) * 10).to(dtype)
    b = torch.from_numpy(rng.standard_normal(4) * 10).to(dtype)
    ka, kb = kael.tensor(a.numpy()), kael.tensor(b.numpy())
    want = getattr(torch, name)(a, b, alpha=alpha)
    inplace = getattr(ka.clone(), f"{name}_")(kb, alpha=alpha)
    for got in (
        getattr(kael, name)(ka, kb, alpha=alpha),
        getattr(ka, name)(kb, alpha=alpha),
        inplace,
    ):
        assert_same(got, want)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_half_add_with_alpha_rounds_once_as_torch(dtype):
    values = np.random.default_rng(0).standard_normal(256).astype(np.float32)
    t = torch.from_numpy(values).to(dtype)
    k = kael.tensor(values).to(TO_KAEL[dtype])
    got = kael.add(k, k.flip(0), alpha=0.3)
    want = torch.add(t, t.flip(0), alpha=0.3)
    assert got.dtype is TO_KAEL[dtype]
    step = torch.finfo(dtype).eps
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=step, atol=step)


def test_alpha_with_a_number_operand_scales_the_number():
    x = np.arange(4.0, dtype=np.float32)
    got = kael.sub(kael.tensor(x), 2.0, alpha=3)
    np.testing.assert_array_equal(got.numpy(), torch.sub(torch.from_numpy(x), 2.0, alpha=3))


INF = math.inf
# float add and sub with alpha whose rounded product alpha * other would overflow or lose
# the sum: torch computes fma(other, +-alpha, input), rounded once.
FMA_CALLS = {
    "inf + 2 * -3e38": lambda m: m.tensor([INF]).add(m.tensor([-3e38]), alpha=2),
    "3e38 + 2 * -3e38": lambda m: m.tensor([3e38]).add(m.tensor([-3e38]), alpha=2),
    "f64 inf + 2 * -1e308": lambda m: m.add(
        m.tensor([INF], dtype=m.float64), m.tensor([-1e308], dtype=m.float64), alpha=2
    ),
    "3e38 - 2 * 3e38, broadcast": lambda m: m.sub(
        m.tensor([[3e38], [1.0]]), m.tensor([3e38]), alpha=2
    ),
    "1 + 3 * y (last bit)": lambda m: m.add(
        m.ones(64), m.full((64,), -0.5356693863868713), alpha=3
    ),
    "number other": lambda m: m.tensor([INF, 3e38]).add(-3e38, alpha=2),
    "f64 number other": lambda m: m.sub(m.tensor([-INF, -1e308], dtype=m.float64), 1e308, alpha=-2),
    "number other beyond float32": lambda m: m.tensor([1.5]).add(-1e39, alpha=0),
    "number input": lambda m: m.add(3e38, m.tensor([-3e38]), alpha=2),
    "rsub": lambda m: m.rsub(m.tensor([3e38]), 3e38, alpha=2),
    "add_": lambda m: m.tensor([3e38, INF]).add_(m.tensor([-3e38]), alpha=2),
    "sub_ number": lambda m: m.tensor([3e38, INF]).sub_(3e38, alpha=2),
    "out=": lambda m: m.add(m.tensor([3e38]), m.tensor([-3e38]), alpha=2, out=m.empty(1)),
    "int input, float other": lambda m: m.add(
        m.tensor([1]), m.tensor([-0.5356693863868713]), alpha=3
    ),
}


@pytest.mark.parametrize("call", FMA_CALLS.values(), ids=FMA_CALLS)
def test_float_add_and_sub_with_alpha_round_once_as_torchs_fma(call):
    assert_same(call(kael), call(torch))


def test_complex_add_with_alpha_takes_the_product_as_torch_past_int64():
    """A number's product alpha * other is torch's complex one in the result dtype: an int
    product beyond int64 is a value (2**40 * 2**40), an infinite part gives a NaN imaginary
    part (inf * 0); an int operand beyond uint64 is still refused."""
    calls = [
        lambda m: m.add(m.tensor([1j]), 2**40, alpha=2**40),
        lambda m: m.sub(m.tensor([1j], dtype=m.complex128), 2**40 + 1, alpha=2**40),
        lambda m: m.tensor([1j]).add_(2**62, alpha=-(2**62)),
        lambda m: m.add(m.tensor([1j]), INF, alpha=2),
        lambda m: m.add(m.tensor([1j]), m.tensor([INF]), alpha=2),
        lambda m: m.add(m.tensor([complex(1, -0.0)]), 3, alpha=2),
    ]
    for call in calls:
        want, got = call(torch), call(kael)
        assert got.dtype is getattr(kael, str(want.dtype).removeprefix("torch."))
        assert_same(kael.view_as_real(got), torch.view_as_real(want))
    for other, alpha in ((2**70, 2), (2, 2**70)):
        with pytest.raises(OverflowError):
            torch.add(torch.tensor([1j]), other, alpha=alpha)
        with pytest.raises(kael.ValueError, match=f"^value {2**70} is out of the range"):
            kael.add(kael.tensor([1j]), other, alpha=alpha)


def _half_grid(dtype: torch.dtype) -> list[float]:
    """Values of a half dtype: finite, near its largest, infinite and NaN."""
    big = torch.finfo(dtype).max
    return [0.0, -0.0, 1.5, -2.25, 0.1, 3.0, big, -big, big / 2, INF, -INF, math.nan]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name", ["add", "sub"])
def test_half_add_with_alpha_is_torchs_vector_fma_in_float32(dtype, name):
    """float16/bfloat16 take fma(other, +-alpha, input) in float32 from the half operands
    (a number other rounded to the half dtype first: -1e30 is -inf, so 0 * it is NaN),
    rounded once, as torch's vector loop does (whole 64-element blocks here; its scalar
    loop rounds a half product first, documented at elementwise.scaled)."""
    grid = _half_grid(dtype)
    xs, ys = zip(*[(a, b) for a in grid for b in grid])
    pad = [0.0] * (-len(xs) % 64)
    tx, ty = (torch.tensor(list(v) + pad).to(dtype) for v in (xs, ys))
    kx, ky = (to_kael(t.float()).to(TO_KAEL[dtype]) for t in (tx, ty))
    for alpha in (2, -1, 0.3, 0, 3.7):
        for other in (ty, *grid, -1e30, 1e-30):
            want = getattr(torch, name)(tx, other, alpha=alpha)
            got = getattr(kael, name)(kx, ky if other is ty else other, alpha=alpha)
            assert got.dtype is TO_KAEL[dtype]
            assert_same(got.float(), want.float())


def test_compiled_add_with_alpha_gives_the_eager_bits():
    """kael.compile fuses the fma into its chain: the same bits as eager, as torch's."""

    def fn(x, y, alpha):
        z = x.add(y, alpha=2)
        w = z.sub(y, alpha=alpha) * 1.5
        x.sub_(3e38, alpha=alpha)
        return z, w

    compiled = kael.compile(fn)
    base = torch.tensor([INF, 3e38, 1.0, -2.0] * 16)
    ty = torch.tensor([-3e38, -3e38, 0.1, 0.3] * 16)
    for alpha in (0.3, -2.0, 0.3):
        tx, ex, cx = base.clone(), to_kael(base), to_kael(base)
        want = fn(tx, ty, alpha)
        eager_out, compiled_out = fn(ex, to_kael(ty), alpha), compiled(cx, to_kael(ty), alpha)
        for e, c, t in zip((*eager_out, ex), (*compiled_out, cx), (*want, tx)):
            assert_same(e, t)
            assert_same(c, t)


# A number input and a tensor other whose alpha * other leaves the tensor's dtype: PyTorch
# scales in the result dtype (float32 beside a float number, int8 wrapping at the end). The
# last three held before too: they guard the int8 wrap, the half rounding and float32.
NUMBER_INPUT_ALPHA = {
    "-2.5 + 3 * int8": lambda m: m.add(-2.5, m.tensor([126, -128, 5], dtype=m.int8), alpha=3),
    "0.5 - 3 * uint8": lambda m: m.sub(0.5, m.tensor([200, 0], dtype=m.uint8), alpha=3),
    "0.5 + 3 * int64": lambda m: m.add(0.5, m.tensor([2**62, -(2**62)]), alpha=3),
    "rsub int8, -2.5": lambda m: m.rsub(m.tensor([126, -128], dtype=m.int8), -2.5, alpha=3),
    "300 + 3 * int8": lambda m: m.add(300, m.tensor([126, -7], dtype=m.int8), alpha=3),
    "0.1 + 3 * float16": lambda m: m.add(0.1, m.tensor([2049.0, 0.3], dtype=m.float16), alpha=3),
    "1e30 - 0.5 * f32": lambda m: m.sub(1e30, m.tensor([[1e38], [-2.0]]), alpha=0.5),
}


@pytest.mark.parametrize("call", NUMBER_INPUT_ALPHA.values(), ids=NUMBER_INPUT_ALPHA)
def test_alpha_with_a_number_input_scales_in_the_result_dtype(call):
    want, got = call(torch), call(kael)
    assert got.dtype is TO_KAEL[want.dtype] and got.shape == tuple(want.shape)
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


def test_alpha_with_a_number_input_writes_into_out_even_over_other():
    t = torch.tensor([126, -128], dtype=torch.int8)
    k = to_kael(t)
    want = torch.add(-2.5, t, alpha=3)
    into = kael.empty(2)
    assert kael.add(-2.5, k, alpha=3, out=into) is into
    assert_same(into, want)
    kf, tf = to_kael(t.float()), t.float()
    assert_same(kael.sub(0.5, kf, alpha=3, out=kf), torch.sub(0.5, tf, alpha=3, out=tf))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_half_alpha_is_rounded_to_the_half_dtype_as_torch(dtype):
    """PyTorch converts alpha to the result dtype: 0.3 is float16's 0.30005, and 0.1 - 0.3 *
    0.3 is 0.009949 where an unrounded alpha gives 0.009964 (64 elements: PyTorch's vector
    loop, which rounds once; flip(0) pairs 0.1 with 0.3)."""
    t = torch.tensor([2049.0, 0.3, 0.1, 7.5] * 16).to(dtype)
    k = kael.tensor(t.float().numpy()).to(TO_KAEL[dtype])
    for call in (
        lambda m, x: m.sub(0.1, x, alpha=0.3),
        lambda m, x: m.add(x, x.flip(0), alpha=0.3),
        lambda m, x: x.clone().sub_(x.flip(0), alpha=0.3),
    ):
        got, want = call(kael, k), call(torch, t)
        np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


ALPHA_BEYOND = [(torch.float16, 2**40), (torch.float16, 65505), (torch.bfloat16, 1e300)]
ALPHA_BEYOND += [(torch.float32, -1e39), (torch.int8, 300)]


@pytest.mark.parametrize(("dtype", "alpha"), ALPHA_BEYOND, ids=str)
def test_alpha_beyond_the_result_dtype_is_refused_as_torch(dtype, alpha):
    t = torch.ones(3, dtype=dtype)
    k = kael.ones(3, dtype=TO_KAEL[dtype])
    value = re.escape(f"value {alpha} cannot be converted to")
    match = f"^{value} (type )?{TO_KAEL[dtype]} without overflow$"
    for call in (
        lambda m, x: m.add(x, x, alpha=alpha),
        lambda m, x: m.sub(2, x, alpha=alpha),
        lambda m, x: x.add_(x, alpha=alpha),
    ):
        with pytest.raises(RuntimeError):
            call(torch, t)
        with pytest.raises(kael.ValueError, match=match):
            call(kael, k)


def test_a_number_beyond_int64_beside_a_bool_tensor_and_alpha_is_refused_as_torch():
    with pytest.raises(RuntimeError):
        torch.add(2**63 + 5, torch.tensor([True]), alpha=3)
    with pytest.raises(kael.TypeError, match="do not promote"):
        kael.add(2**63 + 5, kael.tensor([True]), alpha=3)


@pytest.mark.parametrize(
    ("args", "alpha", "match"),
    [
        ((1, 2), 0.5, "For integral input tensors, argument alpha must not be a floating point"),
        ((1.0, 2.0), True, "Boolean alpha only supported for Boolean results"),
        ((1.0, 2.0), "2", "argument 'alpha' must be a number, not str"),
    ],
)
def test_alpha_that_torch_refuses_is_a_type_error(args, alpha, match):
    a, b = (kael.tensor([v]) for v in args)
    with pytest.raises(kael.TypeError, match=match):
        kael.add(a, b, alpha=alpha)
    with pytest.raises(kael.TypeError, match=match):
        a.clone().sub_(b, alpha=alpha)


ROUND_VALUES = np.array(
    [0.125, 2.5, -0.125, -2.5, 1e10, np.inf, -np.inf, np.nan, 1.23456, -45.678, 0.0, -0.0],
    np.float32,
)


@pytest.mark.parametrize("decimals", [1, 2, 3, -1, -2, 10, 50, -40, 400])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_round_to_decimals_gives_torchs_bits(dtype, decimals):
    # x * 10**d rounded half to even, divided back, in float32 for the half types
    rng = np.random.default_rng(decimals + 400)
    values = np.concatenate([ROUND_VALUES, (rng.standard_normal(500) * 100).astype(np.float32)])
    k = kael.tensor(values).to(getattr(kael, dtype))
    t = torch.from_numpy(values).to(getattr(torch, dtype))
    layouts = {
        "contiguous": (k, t),
        "transposed": (k[:500].reshape(20, 25).mT, t[:500].reshape(20, 25).mT),
        "0-d": (k[4], t[4]),
        "empty": (k[:0], t[:0]),
    }
    for name, (kx, tx) in layouts.items():
        got, want = kael.round(kx, decimals=decimals), torch.round(tx, decimals=decimals)
        assert got.dtype is kx.dtype and got.shape == tuple(want.shape), name
        np.testing.assert_array_equal(np.asarray(got.float()), want.float().numpy(), err_msg=name)
        np.testing.assert_array_equal(
            np.asarray(kx.round(decimals=decimals).float()), want.float().numpy()
        )
    out = kael.empty(k.shape, dtype=k.dtype)
    assert kael.round(k, decimals=decimals, out=out) is out
    inplace = k.clone()
    assert inplace.round_(decimals=decimals) is inplace
    want = torch.round(t, decimals=decimals).float().numpy()
    np.testing.assert_array_equal(np.asarray(out.float()), want)
    np.testing.assert_array_equal(np.asarray(inplace.float()), want)


def test_round_to_decimals_under_compile_is_the_eager_value():
    x = kael.tensor(ROUND_VALUES)
    compiled = kael.compile(lambda t: kael.round(t * 3, decimals=2))
    np.testing.assert_array_equal(compiled(x).numpy(), kael.round(x * 3, decimals=2).numpy())


@pytest.mark.parametrize(
    "make, decimals, error, match",
    [
        (lambda: kael.tensor([15, 25]), 1, kael.TypeError, r"decimals=1 .* int64"),
        (lambda: kael.tensor([True]), -1, kael.TypeError, r"decimals=-1 .* bool"),
        (lambda: kael.tensor([1.5]), 1.5, kael.TypeError, r"'decimals' must be int, not float"),
        (lambda: kael.tensor([1.5]), None, kael.TypeError, r"'decimals' must be int, not None"),
    ],
)
def test_round_refuses_decimals_torch_refuses(make, decimals, error, match):
    with pytest.raises(error, match=match):
        kael.round(make(), decimals=decimals)


def test_round_without_decimals_keeps_integers():
    x = kael.tensor([15, -25], dtype=kael.int32)
    got = kael.round(x, decimals=0)
    assert got.dtype is kael.int32 and got.tolist() == [15, -25]


# ---- gelu's approximate= as torch parses it ----------------------------------------------------

GELU_NOT_STR = [None, 1, True, 0.5, ["tanh"], bytearray(b"none")]


@pytest.mark.parametrize("approximate", GELU_NOT_STR, ids=repr)
def test_gelu_approximate_not_a_str_is_a_type_error(approximate):
    message = f"gelu(): argument 'approximate' must be str, not {type(approximate).__name__}"
    t = values(torch.float32, (5,))
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        torch.nn.functional.gelu(t, approximate=approximate)
    with pytest.raises(kael.TypeError, match=f"^{re.escape(message)}$"):
        kael.nn.functional.gelu(to_kael(t), approximate=approximate)


@pytest.mark.parametrize("approximate", ["fast", "Tanh", "", "none\x00", b"x"], ids=repr)
def test_gelu_unknown_approximate_str_is_a_value_error(approximate):
    """torch's RuntimeError; kael's ValueError is one, naming the value."""
    t = values(torch.float32, (5,))
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        torch.nn.functional.gelu(t, approximate=approximate)
    message = f"approximate argument must be either none or tanh, got {approximate!r}"
    with pytest.raises(kael.ValueError, match=f"^{re.escape(message)}$"):
        kael.nn.functional.gelu(to_kael(t), approximate=approximate)


@pytest.mark.parametrize("approximate", ["none", "tanh", b"none", b"tanh"], ids=repr)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_gelu_takes_approximate_as_str_or_bytes_like_torch(approximate, dtype):
    t = values(dtype, (3, 4))
    for view in (lambda x: x, lambda x: x.T, lambda x: x[1:, ::2]):
        got = kael.nn.functional.gelu(view(to_kael(t)), approximate=approximate)
        want = torch.nn.functional.gelu(view(t), approximate=approximate)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)
        assert got.dtype is TO_KAEL[dtype] and got.shape == tuple(want.shape)


def test_gelu_remembered_call_still_refuses_a_bad_approximate():
    """A call the fast door remembers takes it; the same input with approximate=None does
    not slip through it."""
    x = to_kael(values(torch.float32, (5,)))
    first = kael.nn.functional.gelu(x, approximate="tanh")
    again = kael.nn.functional.gelu(x, approximate="tanh")
    np.testing.assert_array_equal(first.numpy(), again.numpy())
    with pytest.raises(kael.TypeError, match="must be str, not NoneType"):
        kael.nn.functional.gelu(x, approximate=None)


def test_where_takes_torchs_deprecated_uint8_condition_as_nonzero():
    cond = [1, 0, 3]
    with pytest.warns(UserWarning, match="uint8 condition"):
        expected = torch.where(torch.tensor(cond, dtype=torch.uint8), torch.ones(3), torch.zeros(3))
    with pytest.warns(UserWarning, match="uint8 condition"):
        got = kael.where(kael.tensor(cond, dtype=kael.uint8), kael.ones(3), kael.zeros(3))
    assert got.tolist() == expected.tolist() == [1.0, 0.0, 1.0]
    with pytest.raises(kael.TypeError, match="bool tensor, got int64"):
        kael.where(kael.tensor(cond), kael.ones(3), kael.zeros(3))


HALF_SCALAR_OPERANDS = {
    "b * tensor(257)": lambda L, b, h: b * L.tensor(257),
    "b // tensor(1.001)": lambda L, b, h: b // L.tensor(1.001),
    "h * tensor(1e5)": lambda L, b, h: h * L.tensor(1e5),
    "h / tensor(1e5)": lambda L, b, h: h / L.tensor(1e5),
    "h / tensor([1e5])": lambda L, b, h: h / L.tensor([1e5]),
    "trunc div": lambda L, b, h: L.div(b, L.tensor(3.0), rounding_mode="trunc"),
    "mul(1e5, h)": lambda L, b, h: L.mul(1e5, h),  # a leading number rounds
    "1e5 * h": lambda L, b, h: 1e5 * h,  # the reflected mul: the number second
    "b + tensor(257)": lambda L, b, h: b + L.tensor(257),  # add rounds it
}


@pytest.mark.parametrize("call", HALF_SCALAR_OPERANDS.values(), ids=HALF_SCALAR_OPERANDS.keys())
def test_half_mul_and_division_read_a_one_element_second_operand_unrounded_as_torch(call):
    """torch's CPU mul and div kernels read a scalar second operand (a number or a one-element
    tensor) as float32, unrounded; every other operand rounds to the half type first."""
    got, want = (
        call(L, L.tensor([3.0], dtype=L.bfloat16), L.tensor([1e-3, 3.0], dtype=L.float16))
        for L in (kael, torch)
    )
    assert str(got.dtype) == str(want.dtype)[6:]
    assert got.float().tolist() == want.float().tolist()


# add/sub with alpha where the operands' dtypes differ from the result's: torch converts
# both to the result dtype first, then scales
ALPHA_CASES = {
    "complex + uint8 * 2": lambda L: L.add(L.tensor([0j]), L.tensor([128], dtype=L.uint8), alpha=2),
    "complex + int8 * 2": lambda L: L.add(L.tensor([0j]), L.tensor([100], dtype=L.int8), alpha=2),
    "complex - int8 * 3": lambda L: L.sub(L.tensor([0j]), L.tensor([100], dtype=L.int8), alpha=3),
    "complex + uint8 * -1": lambda L: L.add(L.tensor([0j]), L.tensor([200], dtype=L.uint8), alpha=-1),
    "complex add_ uint8 * 2": lambda L: L.tensor([0j]).add_(L.tensor([128], dtype=L.uint8), alpha=2),
    "complex + number * 2.5": lambda L: L.add(L.tensor([1j]), 2, alpha=2.5),
    "bool + 1j * 2": lambda L: L.add(L.tensor([True, False]), 1j, alpha=2),
    "complex sub_ number": lambda L: L.tensor([0j]).sub_(3, alpha=2),
    "complex128 - int32 * 0.5": lambda L: L.sub(L.tensor([1j], dtype=L.complex128), L.tensor([3], dtype=L.int32), alpha=0.5),
    "bfloat16 + int32 * 3": lambda L: L.add(L.tensor([0.0], dtype=L.bfloat16), L.tensor([257], dtype=L.int32), alpha=3),
    "float16 + int16 * 3": lambda L: L.add(L.tensor([0.0], dtype=L.float16), L.tensor([2049], dtype=L.int16), alpha=3),
    "bfloat16 add_ int32 * 3": lambda L: L.tensor([0.0], dtype=L.bfloat16).add_(L.tensor([257], dtype=L.int32), alpha=3),
    "int64 + 2**62 * 4": lambda L: L.tensor([1, 2]).add(2**62, alpha=4),
    "int16 + (2**63 - 1) * 3": lambda L: L.tensor([1, 2], dtype=L.int16).add(2**63 - 1, alpha=3),
    "uint8 add_ -2**63 * 2": lambda L: L.tensor([1, 2], dtype=L.uint8).add_(-(2**63), alpha=2),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(ALPHA_CASES))
def test_alpha_scales_in_the_result_dtype_as_torch(name):
    """An integer other scaled in its own dtype wrapped (int8 100 * 2 gave -56 in a complex
    sum), a half result rounded nothing first (bfloat16 257 * 3 gave 772, torch 768), a
    number product past int64 was refused."""
    got, want = ALPHA_CASES[name](kael), ALPHA_CASES[name](torch)
    assert str(got.dtype) == str(want.dtype).removeprefix("torch.")
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda L: L.add(L.tensor([1j]), L.tensor([1.0]), alpha=True), "Boolean alpha only supported"),
        (lambda L: L.add(L.tensor([1j]), L.tensor([1.0]), alpha=1e39), "cannot be converted"),
        (lambda L: L.add(L.tensor([1.0]), L.tensor([1.0]), alpha=2j), "alpha must not be a complex number"),
        (lambda L: L.tensor([1.0]).add_(L.tensor([1.0]), alpha=2j), "alpha must not be a complex number"),
    ],
)  # fmt: skip
def test_alpha_refusals_hold_for_complex_results_as_torch(call, message):
    with pytest.raises(RuntimeError, match=message):
        call(torch)
    with pytest.raises(kael.Error, match=message):
        call(kael)


@pytest.mark.parametrize("exponent", [0.5, -0.5])
def test_float16_pow_of_half_is_pow_not_sqrt_as_torch(exponent):
    """torch's float16 pow has no sqrt/rsqrt shortcut: (-inf) ** 0.5 is inf, (-0.0) ** 0.5 0."""
    values = [-math.inf, -0.0, 4.0, 0.0, math.inf]
    got = kael.tensor(values, dtype=kael.float16) ** exponent
    want = torch.tensor(values, dtype=torch.float16) ** exponent
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
    assert [math.copysign(1, v) for v in got.tolist()] == [
        math.copysign(1, v) for v in want.tolist()
    ]


# ---- NumPy array operands of the operators ----------------------------------------------------

# torch's Tensor operators hand an ndarray operand to NumPy (x + np.arange(3.) is NumPy's
# add, wrapped back as a tensor): its dtype is NumPy's promotion of the pair, a 0-d array
# counting as fully as any other. Divisors and exponents here are nonzero and non-negative.
ARRAY_OPERATORS = {
    "+": operator_module.add,
    "-": operator_module.sub,
    "*": operator_module.mul,
    "/": operator_module.truediv,
    "//": operator_module.floordiv,
    "%": operator_module.mod,
    "**": operator_module.pow,
}
BITWISE_ARRAY_OPERATORS = {
    "&": operator_module.and_,
    "|": operator_module.or_,
    "^": operator_module.xor,
    "<<": operator_module.lshift,
    ">>": operator_module.rshift,
}
ARRAY_PAIRS = {
    "f32 tensor, f64 array": (torch.float32, np.array([2.0, 3.0, 1.0])),
    "f32 tensor, f32 array": (torch.float32, np.array([2.0, 3.0, 1.0], np.float32)),
    "f32 tensor, i32 array": (torch.float32, np.array([2, 3, 1], np.int32)),
    "i64 tensor, f32 array": (torch.int64, np.array([2.0, 3.0, 1.0], np.float32)),
    "i32 tensor, i64 array": (torch.int32, np.array([2, 3, 1])),
    "i32 tensor, u8 array": (torch.int32, np.array([2, 3, 1], np.uint8)),
    "f16 tensor, i16 array": (torch.float16, np.array([2, 3, 1], np.int16)),
    "f32 tensor, u16 array": (torch.float32, np.array([2, 3, 1], np.uint16)),
    "f32 tensor, 0-d f64 array": (torch.float32, np.array(2.0)),
    "i32 tensor, 0-d i64 array": (torch.int32, np.array(3)),
    "f32 tensor, stepped array": (torch.float32, np.array([2.0, 9.0, 3.0, 9.0, 1.0, 9.0])[::2]),
    "f32 tensor, reversed array": (torch.float32, np.array([1.0, 3.0, 2.0])[::-1]),
    "f64 tensor, big-endian array": (torch.float64, np.array([2.0, 3.0, 1.0], ">f4")),
}  # fmt: skip


def _array_case(pair: str):
    """(kael tensor, torch tensor, array) of an ARRAY_PAIRS entry: a [2, 3] tensor."""
    dtype, array = ARRAY_PAIRS[pair]
    t = torch.tensor([[1, -2, 4], [3, 5, -6]]).to(dtype)
    return to_kael(t), t, array


@pytest.mark.parametrize("pair", sorted(ARRAY_PAIRS))
@pytest.mark.parametrize("symbol", sorted(ARRAY_OPERATORS))
def test_an_ndarray_operand_of_an_operator_takes_numpys_dtype_like_torch(symbol, pair):
    """kael refused an array ("add: expected a Tensor or a number, got ndarray") and read a
    0-d one as a number (x(float32) * np.array(2.0) gave float32, torch float64)."""
    k, t, array = _array_case(pair)
    op = ARRAY_OPERATORS[symbol]
    with np.errstate(all="ignore"):
        assert_same(op(k, array), op(t, array), zero_sign=False)


@pytest.mark.parametrize("pair", ["i32 tensor, i64 array", "i32 tensor, u8 array"])
@pytest.mark.parametrize("symbol", sorted(BITWISE_ARRAY_OPERATORS))
def test_an_ndarray_operand_of_a_bitwise_operator_matches_torch(symbol, pair):
    k, t, array = _array_case(pair)
    op = BITWISE_ARRAY_OPERATORS[symbol]
    assert_same(op(k, array), op(t, array))


EQ_ARRAY_CASES = {
    "f32 == f64 array": (torch.float32, [2.0, 0.1], np.array([2.0, 0.1])),
    "f32 == i32 array": (torch.float32, [16777216.0, 1.0], np.array([16777217, 1], np.int32)),
    "f32 == 0-d f64 array": (torch.float32, [16777216.0, 1.0], np.array(16777217.0)),
    "i32 == 0-d f64 array": (torch.int32, [1, 2], np.array(1.0)),
    "bf16 == f64 array": (torch.bfloat16, [1.0, 2.0], np.array([1.0, 3.0])),
    "bool == bool array": (torch.bool, [True, False], np.array([True, True])),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(EQ_ARRAY_CASES))
def test_eq_and_ne_with_an_ndarray_compare_it_as_a_tensor_like_torch(case):
    """torch's == converts the array as torch.from_numpy and promotes as tensors (float32 ==
    int32 array compares in float32, a 0-d array is a 0-d tensor), where its arithmetic
    operators hand the pair to NumPy. Its != falls back to Python's identity test (True);
    kael's compares each element, as its == does."""
    dtype, data, array = EQ_ARRAY_CASES[case]
    t, k = torch.tensor(data, dtype=dtype), kael.tensor(data, dtype=TO_KAEL[dtype])
    assert_same(k == array, t == array)
    assert_same(array == k, array == t)
    assert (t != array) is True
    assert_same(k != array, ~(t == array))


@pytest.mark.parametrize(
    "array",
    [np.array([1.0, 2.0, 3.0])[::-1], np.array([1.0, 2.0, 3.0], ">f8")],
    ids=["reversed", "big-endian"],
)
def test_eq_with_an_ndarray_torch_from_numpy_refuses_is_a_value_error(array):
    with pytest.raises(ValueError):
        torch.ones(3) == array  # noqa: B015
    with pytest.raises(kael.ValueError, match="numpy array has"):
        kael.ones(3) == array  # noqa: B015


def test_an_ndarray_broadcasts_against_the_tensor_like_torch():
    t = torch.tensor([1.5, -2.0, 4.0])
    for array in (np.ones((2, 3)), np.ones((0, 3), np.float32), np.ones(1, np.float32)):
        assert_same(to_kael(t) + array, t + array)


def test_a_read_only_ndarray_operand_is_read_without_a_warning():
    array = np.broadcast_to(np.arange(3.0), (2, 3))
    t = torch.tensor([1.5, -2.0, 4.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = to_kael(t) * array
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert_same(got, t * array)


@pytest.mark.parametrize("symbol", sorted(ARRAY_OPERATORS))
def test_an_ndarray_on_the_left_of_an_operator_is_a_tensor_too(symbol):
    """NumPy defers to a tensor's reflected operator (its priority): array OP x is computed as
    x OP array is, in NumPy's dtype for the pair. torch answers NotImplemented there for all
    but / (a TypeError); kael computes them all (its reflected forms cannot tell)."""
    op = ARRAY_OPERATORS[symbol]
    t = torch.tensor([[1.0, 2.0, 4.0], [3.0, 5.0, 6.0]])
    array = np.array([2, 3, 1], np.int32)
    got = op(array, to_kael(t))
    want = op(torch.from_numpy(array).double(), t.double())  # NumPy's float64
    assert_same(got, want)


def test_an_ndarray_divided_by_a_tensor_has_torchs_dtype():
    """torch's array / x is x.reciprocal() * array, NumPy's product of the two (float64); kael
    divides once in that dtype: the same values where the reciprocals are exact, as here."""
    t = torch.tensor([2.0, 4.0, 8.0])
    assert_same(np.array([1.0, 3.0, 2.0]) / to_kael(t), np.array([1.0, 3.0, 2.0]) / t)
    assert_same(np.array(2.0) / to_kael(t), np.array(2.0) / t)  # a 0-d array too: float64


IN_PLACE_OPERATORS = {
    "+=": operator_module.iadd,
    "-=": operator_module.isub,
    "*=": operator_module.imul,
    "/=": operator_module.itruediv,
    "**=": operator_module.ipow,
}
ORDERINGS = {
    "<": operator_module.lt,
    "<=": operator_module.le,
    ">": operator_module.gt,
    ">=": operator_module.ge,
}


@pytest.mark.parametrize("symbol", sorted(IN_PLACE_OPERATORS))
def test_in_place_operator_with_an_ndarray_writes_into_the_tensor(symbol):
    """kael writes x OP= array into x, in x's dtype, as x OP= tensor does; torch's operator
    falls back to x = x OP array, a new tensor of NumPy's dtype (the same values here, where
    x's dtype is that one)."""
    op = IN_PLACE_OPERATORS[symbol]
    t = torch.tensor([[1.0, -2.0, 4.0], [3.0, 5.0, -6.0]], dtype=torch.float64)
    k = to_kael(t)
    storage = k._impl.storage
    array = np.array([2.0, 3.0, 1.0], np.float32)
    assert op(k, array) is k and k._impl.storage is storage
    assert_same(k, op(t.clone(), array))


def test_in_place_operator_with_an_ndarray_keeps_the_in_place_refusals():
    k = kael.tensor([1, 2, 3], dtype=kael.int32)
    with pytest.raises(kael.TypeError, match="result type float64 can't be cast"):
        k += np.array([0.5, 1.0, 1.5])
    with pytest.raises(kael.ValueError, match=r"output with shape \[3\]"):
        k += np.ones((2, 3), np.int32)


@pytest.mark.parametrize("symbol", sorted(ORDERINGS))
def test_ordering_comparisons_refuse_an_ndarray_like_torch(symbol):
    op = ORDERINGS[symbol]
    array = np.array([2.0, 3.0, 1.0])
    for left, right in ((torch.ones(3), array), (array, torch.ones(3))):
        with pytest.raises(TypeError):
            op(left, right)
    for left, right in ((kael.ones(3), array), (array, kael.ones(3))):
        with pytest.raises(kael.TypeError, match=r"NumPy array operand \(dtype float64, shape"):
            op(left, right)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda L: L.ones(3, dtype=L.bfloat16) + np.ones(3), "bfloat16 tensor and a NumPy"),
        (lambda L: L.ones(3) + np.array([1, 2, 3], dtype=object), "dtype object have no"),
        (lambda L: L.ones(3) + np.array(["a", "b", "c"]), "dtype <U1 have no"),
        (lambda L: L.ones(3, dtype=L.bool) - np.ones(3, bool), "Subtraction, the `-` operator"),
        (lambda L: L.add(L.ones(3), np.ones(3), alpha=2), "expected a Tensor or a number"),
        (lambda L: L.where(L.ones(3) > 0, L.ones(3), np.array(2.0)), "got ndarray"),
        (lambda L: L.clamp(L.ones(3), np.array(2.0)), "got ndarray"),
        (lambda L: L.ones(3).masked_fill(L.ones(3) > 0, np.array(2.0)), "got ndarray"),
        (lambda L: L.add(L.ones(3), L.ones(3), alpha=np.array(2.0)), "alpha' must be a number"),
        (lambda L: L.maximum(L.ones(3), np.ones(3)), "other"),
    ],
    ids=[
        "bfloat16", "object", "str", "bool minus bool", "alpha", "where 0-d", "clamp 0-d",
        "masked_fill 0-d", "0-d alpha", "maximum",
    ],
)  # fmt: skip
def test_ndarray_operands_torch_refuses_are_type_errors(make, match):
    """torch refuses these (a 0-d array is no Number to its signatures); kael read a 0-d
    array as a number."""
    with pytest.raises(TypeError), np.errstate(all="ignore"):
        make(torch)
    with pytest.raises(kael.TypeError, match=match):
        make(kael)


def test_an_ndarray_operand_needs_a_tensor_beside_it():
    with pytest.raises(kael.TypeError, match="needs a Tensor beside it, got ndarray and int"):
        kael.add(np.ones(3), 2)
    with pytest.raises(kael.TypeError, match="got ndarray and ndarray"):
        kael.mul(np.ones(3), np.ones(3))


def test_comparison_with_none_or_a_sequence_falls_back_to_identity_as_torch():
    k, t = kael.ones(3), torch.ones(3)
    assert (k == None) is (t == None) is False  # noqa: E711  (the idiom under test)
    assert (k != None) is (t != None) is True  # noqa: E711
    assert (None == k) is False and (None != k) is True  # noqa: E711, SIM300
    for other in ("x", [1.0, 1.0, 1.0], (1.0,), {}):  # refused by torch's parser, so identity
        assert (k == other) is (t == other) is False
        assert (k != other) is (t != other) is True
    for compare in (lambda a: a < None, lambda a: a >= None):
        with pytest.raises(TypeError, match="not supported between instances"):
            compare(t)
        with pytest.raises(TypeError, match="not supported between instances"):
            compare(k)
