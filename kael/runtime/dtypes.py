"""The four element types, promotion by rank and category, and the scalar rule (chapter 02)."""

from __future__ import annotations

import numpy as np

from kael.runtime.errors import TypeError

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1  # a Python int up to here is a Scalar in PyTorch (uint64)

BOOL_CATEGORY, INT_CATEGORY, FLOAT_CATEGORY = 0, 1, 2


class DType:
    """One element type: its name, size, promotion rank, category and machine types."""

    __slots__ = ("name", "itemsize", "rank", "category", "numpy", "llvm")

    def __init__(self, name: str, itemsize: int, rank: int, category: int, numpy_dtype, llvm: str):
        self.name = name
        self.itemsize = itemsize
        self.rank = rank
        self.category = category
        self.numpy = np.dtype(numpy_dtype)
        self.llvm = llvm

    @property
    def is_floating_point(self) -> bool:
        return self.category == FLOAT_CATEGORY

    @property
    def is_bool(self) -> bool:
        return self.category == BOOL_CATEGORY

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"kael.{self.name}"

    def __reduce__(self):
        return (dtype_from_name, (self.name,))


# The promotion rank is its own table, not the declaration order: Bool < I64 < F32 < F64.
float32 = DType("float32", 4, 2, FLOAT_CATEGORY, np.float32, "float")
float64 = DType("float64", 8, 3, FLOAT_CATEGORY, np.float64, "double")
int64 = DType("int64", 8, 1, INT_CATEGORY, np.int64, "i64")
bool_ = DType("bool", 1, 0, BOOL_CATEGORY, np.bool_, "i8")

ALL_DTYPES = (float32, float64, int64, bool_)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NUMPY = {d.numpy: d for d in ALL_DTYPES}
# The default dtype of each scalar category: a Python float is float32, as in PyTorch.
_CATEGORY_DEFAULT = {BOOL_CATEGORY: bool_, INT_CATEGORY: int64, FLOAT_CATEGORY: float32}


def dtype_from_name(name: str) -> DType:
    """The dtype called `name` ("float32", ...); TypeError for any other name."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise TypeError(f"unknown dtype '{name}', expected one of {', '.join(_BY_NAME)}") from None


def from_numpy_dtype(dt) -> DType:
    """The kael dtype of a NumPy dtype; TypeError for the ones kael does not have."""
    key = np.dtype(dt)
    try:
        return _BY_NUMPY[key.newbyteorder("=") if key.byteorder == ">" else key]
    except KeyError:
        raise TypeError(
            f"unsupported numpy dtype {key}, kael supports float32, float64, int64 and bool"
        ) from None


def as_dtype(dtype) -> DType:
    """Accept a kael dtype (or its name); TypeError for anything else."""
    if isinstance(dtype, DType):
        return dtype
    if isinstance(dtype, str):
        return dtype_from_name(dtype)
    raise TypeError(f"expected a kael dtype, got {dtype!r}")


def promote_types(a: DType, b: DType) -> DType:
    """The higher of two dtypes by promotion rank."""
    a, b = as_dtype(a), as_dtype(b)
    return a if a.rank >= b.rank else b


def scalar_dtype(value) -> DType:
    """The category default of a Python scalar: bool, int64 or float32."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    if isinstance(value, (float, np.floating)):
        return float32
    raise TypeError(f"expected a Python bool, int or float scalar, got {type(value).__name__}")


def promote_with_scalar(tensor_dtype: DType, value) -> DType:
    """A scalar changes the dtype only when its category is higher: int64 + 2.5 -> float32."""
    s = scalar_dtype(value)
    return tensor_dtype if s.category <= tensor_dtype.category else s


def result_type(*operands) -> DType:
    """PyTorch's rule: tensors with dims, then 0-d tensors, then scalars, each tier by category."""
    if not operands:
        raise TypeError("result_type needs at least one operand")
    tiers: list[DType | None] = [None, None, None]
    for op in operands:
        # NumPy scalars have dtype and shape too, but PyTorch treats them as scalars.
        if not isinstance(op, np.generic) and hasattr(op, "dtype") and hasattr(op, "shape"):
            tier, d = (0 if len(op.shape) > 0 else 1), as_dtype(op.dtype)
        else:
            tier, d = 2, scalar_dtype(op)
        tiers[tier] = d if tiers[tier] is None else promote_types(tiers[tier], d)
    result = None
    for d in tiers:
        if d is not None and (result is None or d.category > result.category):
            result = d
    return result
