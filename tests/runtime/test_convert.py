"""convert_scalar: chapter 02's host conversion rules, checked against NumPy and PyTorch."""

import builtins
import math
import random
import warnings

import numpy as np
import pytest
import torch

from kael.runtime import dtypes
from kael.runtime.convert import CHECKED, WRAP, convert_scalar
from kael.runtime.errors import TypeError, ValueError

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
FLT_MAX = float(np.finfo(np.float32).max)
TWO_63 = 2.0**63


def torch_cast(value: float, dtype: torch.dtype):
    """PyTorch's conversion of a float64 value (defined only where C's cast is)."""
    return torch.tensor([value], dtype=torch.float64).to(dtype).item()


def c_float(value) -> float:
    """A C cast to float, as NumPy performs it."""
    with warnings.catch_warnings(), np.errstate(over="ignore"):
        warnings.simplefilter("ignore")
        return float(np.float32(value))


@pytest.mark.parametrize("value", [2.5, -0.1, math.inf, -math.inf, 1e-300, 5e-324, 3, -1, 2**62])
def test_any_nonzero_to_bool_is_true(value):
    assert convert_scalar(value, dtypes.bool_) is True
    source = torch.float64 if isinstance(value, float) else torch.int64
    assert torch.tensor([value], dtype=source).to(torch.bool).item() is True


@pytest.mark.parametrize("value", [0, 0.0, -0.0, False])
def test_zero_to_bool_is_false(value):
    assert convert_scalar(value, dtypes.bool_) is False


def test_nan_to_bool_is_true():
    assert convert_scalar(math.nan, dtypes.bool_) is torch_cast(math.nan, torch.bool) is True


@pytest.mark.parametrize("value", [-2.7, 2.7, -0.5, 0.99, 1e15 + 0.5, -123456.75])
def test_float_to_int_truncates_toward_zero(value):
    assert convert_scalar(value, dtypes.int64) == torch_cast(value, torch.int64)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(1e30, INT64_MAX), (math.inf, INT64_MAX), (-1e30, INT64_MIN), (-math.inf, INT64_MIN)],
)
def test_float_to_int_saturates(value, expected):
    assert convert_scalar(value, dtypes.int64) == expected


def test_float_to_int_nan_is_zero():
    assert convert_scalar(math.nan, dtypes.int64) == 0


def test_two_to_the_63_saturates_not_overflows():
    # float(INT64_MAX) rounds up to 2**63: the comparison must be >= 2**63.
    assert float(INT64_MAX) == TWO_63
    assert convert_scalar(TWO_63, dtypes.int64) == INT64_MAX


def test_largest_double_below_two_to_the_63_converts_exactly():
    below = math.nextafter(TWO_63, 0.0)
    assert convert_scalar(below, dtypes.int64) == int(below) == torch_cast(below, torch.int64)


def test_float_to_int_keeps_the_exact_lower_bound():
    assert convert_scalar(-TWO_63, dtypes.int64) == INT64_MIN == torch_cast(-TWO_63, torch.int64)
    inside = math.nextafter(-TWO_63, 0.0)
    assert convert_scalar(inside, dtypes.int64) == int(inside)
    assert convert_scalar(math.nextafter(-TWO_63, -math.inf), dtypes.int64) == INT64_MIN


@pytest.mark.parametrize("dtype", dtypes.ALL_DTYPES, ids=str)
@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**64, -(2**100)])
def test_int_outside_int64_raises_for_every_dtype(value, dtype):
    with pytest.raises(ValueError, match=f"^value {value} is out of range for int64$"):
        convert_scalar(value, dtype)
    with pytest.raises((RuntimeError, builtins.ValueError, OverflowError)):
        torch.tensor([value])


TORCH_DTYPES = {dtypes.float32: torch.float32, dtypes.float64: torch.float64,
                dtypes.int64: torch.int64, dtypes.bool_: torch.bool}  # fmt: skip


@pytest.mark.parametrize("dtype", list(TORCH_DTYPES), ids=str)
@pytest.mark.parametrize("value", [2**63, 2**64 - 1, 2**64, INT64_MIN - 1], ids=repr)
def test_int_beyond_int64_converts_as_a_pytorch_scalar_when_asked(value, dtype):
    # CHECKED: torch's Scalar range [-2**63, 2**64) fills float and bool by value, int64
    # refuses a uint64 (torch.full checks it so); WRAP takes it modulo 2**64 into int64, as
    # torch's binary ops do (int64 + 2**63); past the range both refuse.
    try:
        want = torch.full((1,), value, dtype=TORCH_DTYPES[dtype]).item()
    except OverflowError:
        want = None
    except RuntimeError:
        want = "checked"
    beyond = f"^value {value} is out of the range of int64 and uint64$"
    if want is None:
        for mode in (CHECKED, WRAP):
            with pytest.raises(ValueError, match=beyond):
                convert_scalar(value, dtype, mode)
        return
    if want == "checked":
        message = f"^value {value} cannot be converted to int64 without overflow$"
        with pytest.raises(ValueError, match=message):
            convert_scalar(value, dtype, CHECKED)
        assert convert_scalar(value, dtype, WRAP) == (torch.tensor([1]) + value).item() - 1
        return
    assert convert_scalar(value, dtype, CHECKED) == convert_scalar(value, dtype, WRAP) == want
    assert type(convert_scalar(value, dtype, CHECKED)) is type(want)


@pytest.mark.parametrize("value", [INT64_MAX, INT64_MIN])
def test_int64_limits_are_accepted(value):
    assert convert_scalar(value, dtypes.int64) == value == torch.tensor([value]).item()
    assert convert_scalar(value, dtypes.float64) == torch.tensor([value]).to(torch.float64).item()
    assert convert_scalar(value, dtypes.bool_) is True


@pytest.mark.parametrize(
    "value",
    [0.1, 1 / 3, 16777217.0, -16777219.0, 1e-40, 1e-46, -0.0, math.inf, FLT_MAX, 2.0**-149],
)
def test_float32_rounds_like_c_float(value):
    result = convert_scalar(value, dtypes.float32)
    assert result == c_float(value) == torch_cast(value, torch.float32)
    assert math.copysign(1.0, result) == math.copysign(1.0, c_float(value))


def test_float32_nan_stays_nan():
    assert math.isnan(convert_scalar(math.nan, dtypes.float32))


def test_float32_overflow_is_infinity_not_an_error():
    # Halfway between FLT_MAX and 2**128 ties to even, which is infinity; just below stays finite.
    halfway = 2.0**128 - 2.0**103
    below = math.nextafter(halfway, 0.0)
    for value in (halfway, below, 1e39, -1e39, 1e308, -math.inf):
        assert convert_scalar(value, dtypes.float32) == c_float(value)
    assert math.isinf(convert_scalar(halfway, dtypes.float32))
    assert convert_scalar(below, dtypes.float32) == FLT_MAX


def test_int_to_float32_rounds_once():
    # Through float64 this would round twice and land on 2**60 instead.
    value = 2**60 + 2**36 + 1
    expected = torch.tensor([value], dtype=torch.int64).to(torch.float32).item()
    assert convert_scalar(value, dtypes.float32) == expected == float(np.float32(np.int64(value)))


def test_random_int64_values_match_numpy_casts():
    rng = random.Random(0)
    values = [rng.randrange(INT64_MIN, INT64_MAX) >> rng.randrange(0, 63) for _ in range(2000)]
    values += [INT64_MIN, INT64_MAX, 2**24 + 1, 2**53 + 1, -(2**53) - 1, 2**63 - 2**39]
    for value in values:
        assert convert_scalar(value, dtypes.float32) == float(np.int64(value).astype(np.float32))
        assert convert_scalar(value, dtypes.float64) == float(np.int64(value).astype(np.float64))


@pytest.mark.parametrize("dtype", dtypes.ALL_DTYPES, ids=str)
@pytest.mark.parametrize("value", [True, False])
def test_bool_converts_to_one_and_zero(value, dtype):
    expected = torch.tensor([value]).to(getattr(torch, dtype.name)).item()
    result = convert_scalar(value, dtype)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("dtype", "kind"),
    [(dtypes.bool_, bool), (dtypes.int64, int), (dtypes.float64, float), (dtypes.float32, float)],
)
@pytest.mark.parametrize("value", [True, 7, 2.5])
def test_result_is_a_plain_python_scalar(value, dtype, kind):
    assert type(convert_scalar(value, dtype)) is kind


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        (np.float32(2.75), 2.75),
        (np.float64(-3.5), -3.5),
        (np.int64(-9), -9),
        (np.bool_(True), True),
    ],
    ids=repr,
)
def test_numpy_scalars_convert_like_python_scalars(value, plain):
    for dtype in dtypes.BOOK_DTYPES:
        assert convert_scalar(value, dtype) == convert_scalar(plain, dtype)


def test_numpy_uint64_outside_int64_raises():
    with pytest.raises(ValueError, match="out of range for int64"):
        convert_scalar(np.uint64(2**64 - 1), dtypes.float64)


@pytest.mark.parametrize("value", ["1", None, 1j, [1], b"1"], ids=repr)
def test_non_numbers_raise_type_error(value):
    with pytest.raises(TypeError, match="expected a Python bool, int or float"):
        convert_scalar(value, dtypes.float32)


def test_unknown_dtype_raises_type_error():
    with pytest.raises(TypeError):
        convert_scalar(1.0, "float32")


# ---- the dtypes beyond the book: PyTorch's rules -------------------------------------------

NARROW = (dtypes.int32, dtypes.int16, dtypes.int8, dtypes.uint8)
STORED_VALUES = [0, 1, -1, 127, 128, -128, -129, 255, 256, -255, -256, 32767, 32768, 2**31]
STORED_VALUES += [-(2**31), 2**31 - 1, 3.7, -1.5, 127.5, 255.9, 1e10, math.nan, math.inf]


def torch_full(value, dtype: dtypes.DType):
    """What torch.full stores for `value`, or the error type it raises."""
    try:
        return torch.full((1,), value, dtype=getattr(torch, dtype.name)).item()
    except RuntimeError:
        return ValueError


@pytest.mark.parametrize("dtype", NARROW, ids=str)
@pytest.mark.parametrize("value", STORED_VALUES, ids=repr)
def test_stored_narrow_int_is_checked_as_torch_full(dtype, value):
    expected = torch_full(value, dtype)
    if expected is ValueError:
        with pytest.raises(ValueError, match=f"cannot be converted to {dtype}"):
            convert_scalar(value, dtype, CHECKED)
    else:
        assert convert_scalar(value, dtype, CHECKED) == expected


@pytest.mark.parametrize("dtype", NARROW, ids=str)
@pytest.mark.parametrize(
    "value", [300, -1, 2**40 + 3, -(2**33), 3.7, -1.5, 1e10, 2.0**31], ids=repr
)
def test_op_scalar_wraps_into_narrow_int_as_torch(dtype, value):
    # A binary op's Scalar of the tensor's own category: torch adds it to 0 in that dtype.
    if isinstance(value, float):  # a float scalar promotes; its cast is the tensor cast
        expected = torch.tensor([value], dtype=torch.float32).to(getattr(torch, dtype.name))
        assert convert_scalar(value, dtype, WRAP) == expected.item()
    else:
        zero = torch.zeros(1, dtype=getattr(torch, dtype.name))
        assert convert_scalar(value, dtype, WRAP) == (zero + value).item()


@pytest.mark.parametrize("dtype", (dtypes.float16, dtypes.bfloat16), ids=str)
@pytest.mark.parametrize("value", [1.0, 65504.0, 65519.0, 65520.0, 1e5, 3e38, 1e300, math.inf])
def test_stored_half_rounds_as_torch_tensor(dtype, value):
    wide = convert_scalar(value, dtype, CHECKED)  # the float32 the kernel rounds on store
    expected = torch.tensor([value], dtype=torch.float64).to(getattr(torch, dtype.name))
    assert torch.tensor([wide]).to(expected.dtype).item() == expected.item()


def test_half_op_scalar_stays_float32_as_pytorch_opmath():
    assert convert_scalar(1e-4, dtypes.float16, WRAP) == float(np.float32(1e-4))
    assert convert_scalar(1e6, dtypes.float16, WRAP) == 1e6  # no overflow check for an op
