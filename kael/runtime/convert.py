"""Host side of the conversion rules (chapter 02, and PyTorch's for the other dtypes): the
value a tensor of a dtype stores for a scalar."""

from __future__ import annotations

import math
import struct

import numpy as np

from kael.runtime import dtypes
from kael.runtime.dtypes import INT64_MAX, INT64_MIN, UINT64_MAX, DType
from kael.runtime.errors import TypeError, ValueError

# -float(INT64_MIN) is exactly 2**63; float(INT64_MAX) would round up to the same 2**63,
# so the saturation test compares with >= 2**63, never with INT64_MAX.
_INT64_LOWEST = float(INT64_MIN)
_INT64_LIMIT = -_INT64_LOWEST
_FLOAT32 = struct.Struct("f")
_FLOAT16 = struct.Struct("e")
_BITS32 = struct.Struct("I")


# How an int beyond int64 that uint64 holds converts (convert_scalar's `beyond_int64`).
# ROUNDED is WRAP for a binary op's number operand that PyTorch casts to the op's dtype
# first: a float16/bfloat16 op then computes with the number rounded to that dtype.
REFUSE, CHECKED, WRAP, ROUNDED = "refuse", "checked", "wrap", "rounded"


def convert_scalar(
    value: bool | int | float, dtype: DType, beyond_int64: str = REFUSE
) -> bool | int | float:
    """The Python value a `dtype` element holds for `value`, converted as C would without UB.

    An int beyond int64 is refused (kael.ValueError) unless `beyond_int64` reads one that
    uint64 holds as PyTorch reads an op's Scalar argument: CHECKED converts it to float and
    bool dtypes by value and refuses it for int64 (a fill value, a clamp bound); WRAP takes it
    modulo 2**64 into int64, as PyTorch's binary ops cast a uint64 Scalar (int64 x + 2**63 is
    x - 2**63). Beyond uint64 (or below int64) every mode refuses it.
    """
    kind = type(value)
    if kind is not float and kind is not int and kind is not bool:
        traced = getattr(kind, "kael_convert", None)  # a traced function's float argument
        if traced is not None:
            return traced(value, dtype, beyond_int64)
        value = _as_python_scalar(value)
    if type(value) is int and not INT64_MIN <= value <= INT64_MAX:
        value = _beyond_int64(value, dtype, beyond_int64)
    if dtype is dtypes.bool_:
        return value != 0  # NaN != 0, so NaN is True, as in PyTorch
    if dtype is dtypes.int64:  # the book's saturating cast, fills too (torch refuses them)
        return saturate_to_int64(value) if type(value) is float else int(value)
    if dtype is dtypes.float64:
        return float(value)
    if dtype is dtypes.float32:
        return int_to_float32(value) if type(value) is int else to_float32(value)
    if not isinstance(dtype, DType):
        raise TypeError(f"expected a kael dtype, got {dtype!r}")
    if dtype.is_complex:  # complex-aware ops convert their numbers by parts (frontend/complex.py)
        raise TypeError(f"this operation does not support {dtype} tensors")
    if dtype.is_half:
        wide = _to_half_precision(value, dtype)
        return to_half_precision(wide, dtype) if beyond_int64 == ROUNDED else wide
    if dtype in dtypes.INTEGER_DTYPES:
        return _to_narrow_int(value, dtype, beyond_int64)
    raise TypeError(f"expected a kael dtype, got {dtype!r}")


def _to_half_precision(value: bool | int | float, dtype: DType) -> float:
    """The float32 a float16/bfloat16 op computes with (PyTorch's opmath); kernels round it
    to the dtype when they store it, beyond its range to +-inf, as torch.tensor does."""
    return int_to_float32(value) if type(value) is int else to_float32(value)


def _to_narrow_int(value: bool | int | float, dtype: DType, mode: str) -> int:
    """An op's scalar (WRAP) as PyTorch's CPU kernels convert it: floats through int32 as
    x86's cvtt does, then modulo 2**bits. A stored value must fit the dtype, except that
    uint8 takes -255..-1 modulo 256 as c10's checked conversion does."""
    if mode in (WRAP, ROUNDED):
        if type(value) is float:
            inside = -(2.0**31) <= value < 2.0**31
            value = int(value) if inside else dtypes.int32.min
        return dtype.wrap(int(value))
    lowest = -dtype.max if not dtype.signed and type(value) is not float else dtype.min
    if not (lowest <= value <= dtype.max):  # False for NaN
        raise ValueError(f"value {value} cannot be converted to {dtype} without overflow")
    return dtype.wrap(int(value))


def _beyond_int64(value: int, dtype: DType, mode: str) -> int:
    """An int outside int64 as `mode` reads it for `dtype` (see convert_scalar)."""
    if mode == REFUSE:
        raise ValueError(f"value {value} is out of range for int64")
    if not INT64_MIN <= value <= UINT64_MAX:
        raise ValueError(f"value {value} is out of the range of int64 and uint64")
    if dtype is not dtypes.int64:
        return value
    if mode in (WRAP, ROUNDED):
        return value - 2**64
    raise ValueError(f"value {value} cannot be converted to int64 without overflow")


def _as_python_scalar(value) -> bool | int | float:
    """A Python bool, int or float for a Python or NumPy scalar; TypeError for anything else."""
    kind = type(value)
    if kind is float or kind is int or kind is bool:
        return value
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    raise TypeError(f"expected a Python bool, int or float scalar, got {kind.__name__}")


def saturate_to_int64(value: float) -> int:
    """Truncate toward zero; saturate outside int64; NaN gives 0 (as Rust's `as` does)."""
    if value != value:
        return 0
    if value <= _INT64_LOWEST:
        return INT64_MIN
    if value >= _INT64_LIMIT:
        return INT64_MAX
    return int(value)


def to_float32(value: float) -> float:
    """Round a double to the nearest float32 like a C cast: beyond float32's range is +-inf."""
    try:
        return _FLOAT32.unpack(_FLOAT32.pack(value))[0]
    except OverflowError:  # struct refuses what C's cast rounds to infinity
        return math.copysign(math.inf, value)


def int_to_float32(value: int) -> float:
    """Round an int64 straight to the nearest float32 (ties to even), like static_cast<float>.

    Going through float64 first would round twice and can land one float32 step off.
    """
    magnitude = abs(value)
    shift = magnitude.bit_length() - 24  # float32 keeps 24 significant bits
    if shift > 0:
        quotient, remainder = divmod(magnitude, 1 << shift)
        half = 1 << (shift - 1)
        if remainder > half or (remainder == half and quotient & 1):
            quotient += 1
        magnitude = quotient << shift
    return float(magnitude if value >= 0 else -magnitude)


def to_half_precision(value: float, dtype: DType) -> float:
    """A double rounded as a kernel stores it in float16/bfloat16: to float32 first (as
    c10::Half and c10::BFloat16 are built), then to nearest even; beyond range +-inf."""
    wide = to_float32(value)
    if dtype is dtypes.float16:
        try:
            return _FLOAT16.unpack(_FLOAT16.pack(wide))[0]
        except OverflowError:
            return math.copysign(math.inf, wide)
    if wide != wide:
        return wide
    bits = _BITS32.unpack(_FLOAT32.pack(wide))[0]
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return _FLOAT32.unpack(_BITS32.pack(bits & 0xFFFFFFFF))[0]
