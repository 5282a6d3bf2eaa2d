"""kael.finfo and kael.iinfo: the numeric limits of a dtype, as torch.finfo and torch.iinfo
give them (same fields, same repr), e.g. finfo(x.dtype).min for an attention mask."""

from __future__ import annotations

import math

from kael.runtime import dtypes
from kael.runtime.dtypes import DType
from kael.runtime.errors import TypeError

# Significand bits after the point, and the lowest normal exponent, of each float format.
_FLOAT_FORMATS = {
    "float64": (52, -1022),
    "float32": (23, -126),
    "float16": (10, -14),
    "bfloat16": (7, -126),
}


def _fields(info) -> str:
    return ", ".join(f"{name}={float(getattr(info, name)):g}" for name in info._shown)


class _Info:
    """What finfo and iinfo share: equality by dtype, and PyTorch's repr."""

    _shown: tuple[str, ...] = ()
    dtype: str

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.dtype))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({_fields(self)}, dtype={self.dtype})"


class finfo(_Info):  # noqa: N801 (PyTorch's name)
    """The limits of a floating dtype (the default dtype when none is given): bits, eps
    (the step after 1), max, min (= -max), tiny and smallest_normal (the least positive
    normal number) and resolution (10 ** -decimal digits)."""

    _shown = ("resolution", "min", "max", "eps", "smallest_normal", "tiny")

    def __init__(self, type: DType | None = None) -> None:
        dtype = dtypes.get_default_dtype() if type is None else dtypes.python_dtype(type) or type
        if isinstance(dtype, DType) and dtype.is_complex:
            dtype = dtype.to_real()  # a complex dtype's limits are its parts', as in PyTorch
        if not isinstance(dtype, DType) or not dtype.is_floating_point:
            raise TypeError(
                "kael.finfo() requires a floating point input type. Use kael.iinfo to handle"
                f" {dtype!r}"
            )
        mantissa, lowest = _FLOAT_FORMATS[dtype.name]
        self.bits = 8 * dtype.itemsize
        self.eps = 2.0**-mantissa
        self.max = dtype.largest
        self.min = -dtype.largest
        self.tiny = self.smallest_normal = 2.0**lowest
        self.resolution = 10.0 ** -math.floor(mantissa * math.log10(2))
        self.dtype = dtype.name


class iinfo(_Info):  # noqa: N801 (PyTorch's name)
    """The limits of an integer dtype: bits, min and max."""

    _shown = ("min", "max")

    def __init__(self, type: DType) -> None:
        type = dtypes.python_dtype(type) or type
        if isinstance(type, DType) and type.is_bool:
            raise TypeError(f"{type!r} is not supported by kael.iinfo")
        if not isinstance(type, DType) or type.is_floating_point:
            raise TypeError(
                f"kael.iinfo() requires an integer input type. Use kael.finfo to handle {type!r}"
            )
        self.bits = 8 * type.itemsize
        self.min = type.min
        self.max = type.max
        self.dtype = type.name
