"""Element types, PyTorch's promotion lattice, and the scalar rule.

Chapter 02 defines the book's four (float32, float64, int64, bool) and decides everything
among them; int32, int16, int8, uint8, float16 and bfloat16 follow PyTorch, and so do
complex64 and complex128, the category above the floats: interleaved (real, imag) pairs of
float32 or float64 that kernels only ever see as their float view (frontend/complex.py).
"""

from __future__ import annotations

import numpy as np

from kael.runtime.errors import TypeError

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1  # a Python int up to here is a Scalar in PyTorch (uint64)

BOOL_CATEGORY, INT_CATEGORY, FLOAT_CATEGORY, COMPLEX_CATEGORY = 0, 1, 2, 3


class DType:
    """One element type: its name, size, category, signedness and machine types.

    `llvm` is the type in memory; `compute` is the dtype arithmetic runs in: itself, except
    float16 and bfloat16, which kernels widen to float32 on load and round back on store.
    A complex dtype has no `llvm` type: no kernel takes it, only its float view.
    """

    __slots__ = ("name", "itemsize", "category", "signed", "numpy", "llvm", "_compute")

    def __init__(
        self,
        name: str,
        itemsize: int,
        category: int,
        numpy_dtype,
        llvm: str | None,
        signed: bool = True,
        compute: DType | None = None,
    ):
        self.name = name
        self.itemsize = itemsize
        self.category = category
        self.signed = signed
        # bfloat16 has no NumPy dtype: its bytes travel as uint16.
        self.numpy = np.dtype(numpy_dtype)
        self.llvm = llvm
        self._compute = compute

    @property
    def compute(self) -> DType:
        """The dtype kernels compute in: float32 for the two half-precision types."""
        return self._compute or self

    @property
    def is_floating_point(self) -> bool:
        return self.category == FLOAT_CATEGORY

    @property
    def is_complex(self) -> bool:
        return self.category == COMPLEX_CATEGORY

    @property
    def is_signed(self) -> bool:
        """Whether it holds negative values (torch's: floats do, bool and uint8 do not)."""
        return self.signed

    def to_real(self) -> DType:
        """The float dtype of a complex dtype's parts (float32 for complex64); others: itself."""
        return _COMPLEX_PARTS.get(self, self)

    def to_complex(self) -> DType:
        """The complex dtype holding this float dtype (float16 and bfloat16: complex64, as
        kael has no complex32); complex dtypes: themselves."""
        if self.is_complex:
            return self
        if not self.is_floating_point:
            raise TypeError(f"{self} has no complex counterpart")
        return complex128 if self is float64 else complex64

    @property
    def is_bool(self) -> bool:
        return self.category == BOOL_CATEGORY

    @property
    def min(self) -> int:
        """The lowest value of an integer (or bool) dtype."""
        return -(1 << (8 * self.itemsize - 1)) if self.signed else 0

    @property
    def max(self) -> int:
        """The highest value of an integer (or bool) dtype."""
        return 1 if self.is_bool else (1 << (8 * self.itemsize - self.signed)) - 1

    @property
    def largest(self) -> float:
        """The largest finite value of a floating dtype."""
        mantissa, exponent = {2: (10, 15), 4: (23, 127), 8: (52, 1023)}[self.itemsize]
        if self.name == "bfloat16":
            mantissa, exponent = 7, 127
        return (2 - 2.0**-mantissa) * 2.0**exponent

    def wrap(self, value: int) -> int:
        """An int taken modulo 2**bits into this integer dtype's range (C's conversion)."""
        bits = 8 * self.itemsize
        value &= (1 << bits) - 1
        return value - (1 << bits) if self.signed and value > self.max else value

    @property
    def is_half(self) -> bool:
        """float16 or bfloat16: stored narrow, computed in float32."""
        return self._compute is not None

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"kael.{self.name}"

    def __reduce__(self):
        return (dtype_from_name, (self.name,))


float32 = DType("float32", 4, FLOAT_CATEGORY, np.float32, "float")
float64 = DType("float64", 8, FLOAT_CATEGORY, np.float64, "double")
float16 = DType("float16", 2, FLOAT_CATEGORY, np.float16, "half", compute=float32)
bfloat16 = DType("bfloat16", 2, FLOAT_CATEGORY, np.uint16, "bfloat", compute=float32)
int64 = DType("int64", 8, INT_CATEGORY, np.int64, "i64")
int32 = DType("int32", 4, INT_CATEGORY, np.int32, "i32")
int16 = DType("int16", 2, INT_CATEGORY, np.int16, "i16")
int8 = DType("int8", 1, INT_CATEGORY, np.int8, "i8")
uint8 = DType("uint8", 1, INT_CATEGORY, np.uint8, "i8", signed=False)
bool_ = DType("bool", 1, BOOL_CATEGORY, np.bool_, "i8", signed=False)
complex64 = DType("complex64", 8, COMPLEX_CATEGORY, np.complex64, None)
complex128 = DType("complex128", 16, COMPLEX_CATEGORY, np.complex128, None)
_COMPLEX_PARTS = {complex64: float32, complex128: float64}

# The book's four (chapter 02), whose rules decide everything among themselves.
BOOK_DTYPES = (float32, float64, int64, bool_)
ALL_DTYPES = (float32, float64, float16, bfloat16, int64, int32, int16, int8, uint8, bool_)
INTEGER_DTYPES = (int64, int32, int16, int8, uint8)
# Not among ALL_DTYPES (every kernel's dtypes): only complex-aware ops take them.
COMPLEX_DTYPES = (complex64, complex128)
_BY_NAME = {d.name: d for d in (*ALL_DTYPES, *COMPLEX_DTYPES)}
# The Python types torch takes as dtypes (torch.zeros(2, dtype=float) is float64).
_PYTHON_TYPES = {bool: bool_, int: int64, float: float64, complex: complex128}
# PyTorch's aliases: kael.long, kael.half, ...
ALIASES = {
    "long": int64,
    "int": int32,
    "short": int16,
    "float": float32,
    "double": float64,
    "half": float16,
    "cfloat": complex64,
    "cdouble": complex128,
}
_BY_NUMPY = {d.numpy: d for d in (*ALL_DTYPES, *COMPLEX_DTYPES) if d is not bfloat16}
# The default dtype of each scalar category: a Python float is float32, as in PyTorch
# (set_default_dtype changes the float entry).
_CATEGORY_DEFAULT = {BOOL_CATEGORY: bool_, INT_CATEGORY: int64, FLOAT_CATEGORY: float32}


# Callbacks that drop what was worked out under the old default dtype (memoized promotion,
# remembered launches, compiled plans); registered by the modules that keep such caches.
_default_hooks: list = []


def get_default_dtype() -> DType:
    """The dtype of Python floats and of float factories (float32 unless set)."""
    return _CATEGORY_DEFAULT[FLOAT_CATEGORY]


def set_default_dtype(dtype: DType) -> None:
    """Make `dtype` (a floating dtype) the default, as torch.set_default_dtype does; it is
    process-wide, and every cache that depended on the old one is dropped."""
    if dtype is bool or dtype is int or dtype is float or dtype is complex:  # as torch refuses
        raise TypeError(
            f"invalid dtype object: only floating-point types are supported as the default"
            f" type, got the Python type {dtype.__name__}"
        )
    dtype = as_dtype(dtype)
    if not dtype.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {dtype}")
    if dtype is not _CATEGORY_DEFAULT[FLOAT_CATEGORY]:
        _CATEGORY_DEFAULT[FLOAT_CATEGORY] = dtype
        for hook in _default_hooks:
            hook()


def on_default_dtype_change(hook) -> None:
    """Call `hook()` whenever set_default_dtype changes the default."""
    _default_hooks.append(hook)


def dtype_from_name(name: str) -> DType:
    """The dtype called `name` ("float32", ...); TypeError for any other name."""
    try:
        return _BY_NAME.get(name) or ALIASES[name]
    except KeyError:
        raise TypeError(f"unknown dtype '{name}', expected one of {', '.join(_BY_NAME)}") from None


def from_numpy_dtype(dt) -> DType:
    """The kael dtype of a NumPy dtype; TypeError for the ones kael does not have."""
    key = np.dtype(dt)
    try:
        return _BY_NUMPY[key.newbyteorder("=") if key.byteorder == ">" else key]
    except KeyError:
        raise TypeError(
            f"unsupported numpy dtype {key}, kael supports {', '.join(map(str, _BY_NUMPY))}"
        ) from None


def as_dtype(dtype) -> DType:
    """Accept a kael dtype, its name, or a Python type as torch takes one (bool, int, float,
    complex: bool, int64, float64, complex128); TypeError for anything else."""
    if isinstance(dtype, DType):
        return dtype
    if isinstance(dtype, str):
        return dtype_from_name(dtype)
    found = python_dtype(dtype)
    if found is None:
        raise TypeError(f"expected a kael dtype, got {dtype!r}")
    return found


def python_dtype(value) -> DType | None:
    """The dtype torch reads a Python type as (bool, int, float, complex: bool, int64,
    float64, complex128), or None for any other value."""
    return _PYTHON_TYPES.get(value) if type(value) is type else None


def promote_types(a: DType, b: DType) -> DType:
    """PyTorch's promotion lattice: the higher category wins; within one, the wider type,
    with uint8 + int8 -> int16 and float16 + bfloat16 -> float32 (neither holds the other);
    a complex dtype with a float one holds the wider float's parts (complex64 + float64 ->
    complex128)."""
    a, b = as_dtype(a), as_dtype(b)
    if a is b:
        return a
    if a.is_complex or b.is_complex:
        parts = [d.to_real() for d in (a, b) if d.is_complex or d.is_floating_point]
        return promote_types(*parts).to_complex() if len(parts) == 2 else (a if a.is_complex else b)
    if a.category != b.category:
        return a if a.category > b.category else b
    if a.itemsize == b.itemsize:  # uint8/int8 or float16/bfloat16
        return int16 if a.category == INT_CATEGORY else float32
    if a is uint8 or b is uint8:  # every wider integer is signed and holds uint8
        return b if a is uint8 else a
    return a if a.itemsize > b.itemsize else b


def get_default_complex_dtype() -> DType:
    """The dtype of Python complex numbers: the default float dtype's complex counterpart."""
    return _CATEGORY_DEFAULT[FLOAT_CATEGORY].to_complex()


def scalar_dtype(value) -> DType:
    """The category default of a Python scalar: bool, int64, the default float dtype or its
    complex counterpart."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    if isinstance(value, (float, np.floating)):
        return _CATEGORY_DEFAULT[FLOAT_CATEGORY]
    if isinstance(value, (complex, np.complexfloating)):
        return get_default_complex_dtype()
    raise TypeError(
        f"expected a Python bool, int, float or complex scalar, got {type(value).__name__}"
    )


def promote_with_scalar(tensor_dtype: DType, value) -> DType:
    """A scalar changes the dtype only when its category is higher: int64 + 2.5 -> float32,
    float64 + 1j -> complex128."""
    return _combine(tensor_dtype, scalar_dtype(value))


def _combine(higher: DType | None, lower: DType | None) -> DType | None:
    """PyTorch's merge of a higher tier's dtype with a lower tier's: the lower one wins only
    by a higher category, and a complex one then takes a float higher tier's precision."""
    if higher is None or lower is None:
        return higher or lower
    if lower.category <= higher.category:
        return higher
    if lower.is_complex and higher.is_floating_point:
        return higher.to_complex()
    return lower


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
    return _combine(tiers[0], _combine(tiers[1], tiers[2]))
