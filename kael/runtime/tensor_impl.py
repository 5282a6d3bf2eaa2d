"""TensorImpl: a lens over a Storage (shape, strides, offset in elements, dtype, device).

`validate()` enforces chapter 02's seven rules in order, so a wrong view raises before any
element is read. Python ints do not wrap, but kernels index with int64: every size and
extent is checked against INT64_MAX and reported as the first overflowing step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kael.runtime.device import CPU, Device
from kael.runtime.dtypes import INT64_MAX, INT64_MIN, DType
from kael.runtime.errors import Error, ValueError
from kael.runtime.storage import Storage


def format_shape(dims: Sequence[int]) -> str:
    """Shapes and strides print as "[2, 3]"."""
    return "[" + ", ".join(str(d) for d in dims) + "]"


def checked_mul(a: int, b: int, what: str = "result") -> int:
    """a * b for non-negative int64 operands; ValueError when the product leaves int64."""
    if a < 0 or b < 0:
        raise ValueError(f"{what} has a negative operand ({a} * {b})")
    product = a * b
    if product > INT64_MAX:
        raise ValueError(f"{what} overflows int64 ({a} * {b})")
    return product


def checked_add(a: int, b: int, what: str = "result") -> int:
    """a + b; ValueError when the sum leaves int64."""
    total = a + b
    if not INT64_MIN <= total <= INT64_MAX:
        raise ValueError(f"{what} overflows int64 ({a} + {b})")
    return total


# The most dimensions a tensor may have: NumPy's limit, which item, tolist, printing and
# numpy() go through (PyTorch 2.13 creates more, and its numpy() refuses them too).
MAX_DIMS = 64


def check_rank(shape: Sequence[int]) -> None:
    """Refuse a shape with more than MAX_DIMS dimensions, naming how many it has."""
    if len(shape) > MAX_DIMS:
        raise ValueError(f"a tensor can have at most {MAX_DIMS} dimensions, got {len(shape)}")


def validate_shape(shape: Sequence[int]) -> None:
    """Reject more than MAX_DIMS dimensions, negative ones, and ones an int64 cannot hold."""
    check_rank(shape)
    for d in shape:
        if not 0 <= d <= INT64_MAX:
            if d < 0:
                raise ValueError(f"negative dimension {d} in shape {format_shape(shape)}")
            raise ValueError(f"dimension {d} in shape {format_shape(shape)} overflows int64")


def shape_numel(shape: Sequence[int]) -> int:
    """The number of elements of a shape; ValueError at the first product that leaves int64."""
    n = 1
    for d in shape:
        product = n * d
        if product > INT64_MAX:
            raise ValueError(f"tensor element count overflows int64 ({n} * {d})")
        n = product
    return n


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides in elements: the last dimension is 1, each earlier one the product after it."""
    strides = [1] * len(shape)
    step = 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = step
        step *= max(shape[i], 1)
    return tuple(strides)


_new = object.__new__


class TensorImpl:
    """Storage plus its interpretation; plain fields, validated once before it becomes a Tensor."""

    __slots__ = ("storage", "shape", "strides", "offset", "dtype", "device")

    @classmethod
    def of_tuples(cls, storage, shape: tuple, strides: tuple, offset: int, dtype, device):
        """An impl from fields that are already tuples and ints (a compiled plan's views):
        the constructor without its conversions."""
        self = _new(cls)
        self.storage, self.shape, self.strides = storage, shape, strides
        self.offset, self.dtype, self.device = offset, dtype, device
        return self

    def __init__(
        self,
        storage: Storage,
        shape: Sequence[int],
        strides: Sequence[int],
        offset: int,
        dtype: DType,
        device: Device,
    ) -> None:
        self.storage = storage
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.offset = offset
        self.dtype = dtype
        self.device = device

    def numel(self) -> int:
        """The number of elements."""
        return shape_numel(self.shape)

    def dim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    def nbytes(self) -> int:
        """Bytes the elements occupy (numel * itemsize), not the storage size."""
        return self.numel() * self.dtype.itemsize

    def data_ptr(self) -> int:
        """Address of the first element; the storage address itself when there is none."""
        if self.numel() == 0:  # an empty view's offset may point past its storage
            return self.storage.ptr
        return self.storage.ptr + self.offset * self.dtype.itemsize

    def is_contiguous(self) -> bool:
        """Row-major with no gaps; size-1 dims are ignored and empty tensors are contiguous."""
        shape, strides = self.shape, self.strides
        if 0 in shape:
            return True
        expected = 1
        for i in range(len(shape) - 1, -1, -1):
            size = shape[i]
            if size == 1:  # its stride never steps, so any value is fine
                continue
            if strides[i] != expected:
                return False
            expected *= size
        return True

    def validate(self) -> None:
        """Chapter 02's seven rules, in order; the first broken one raises."""
        storage = self.storage
        if storage is None:
            raise Error("tensor has no storage")
        shape, strides, offset = self.shape, self.strides, self.offset
        validate_shape(shape)
        if len(shape) != len(strides):
            raise ValueError(
                f"shape {format_shape(shape)} and strides {format_shape(strides)} "
                "have different number of dimensions"
            )
        for i, s in enumerate(strides):
            if not 0 <= s <= INT64_MAX:
                problem = "negative stride" if s < 0 else "int64 overflow in stride"
                raise ValueError(
                    f"{problem} {s} at dimension {i} in strides {format_shape(strides)}"
                )
        if not 0 <= offset <= INT64_MAX:
            problem = "negative" if offset < 0 else "int64 overflow in"
            raise ValueError(f"{problem} storage offset {offset}")
        if self.device is not storage.device:  # devices are interned
            raise Error(
                f"tensor device {self.device} does not match storage device {storage.device}"
            )
        if shape_numel(shape) > 0:
            self._check_fits_in_storage()

    def _check_fits_in_storage(self) -> None:
        """The last reachable element, offset + sum((size - 1) * stride), must fit in storage."""
        last = self.offset
        for size, stride in zip(self.shape, self.strides, strict=True):
            last += (size - 1) * stride
        bytes_needed = (last + 1) * self.dtype.itemsize
        if (
            bytes_needed > INT64_MAX
        ):  # terms are non-negative: redo step by step to name the overflow
            bytes_needed = self._checked_bytes_needed()
        available = self.storage.nbytes
        if bytes_needed > available:
            raise Error(
                f"tensor with shape {format_shape(self.shape)}, strides "
                f"{format_shape(self.strides)}, offset {self.offset} and dtype {self.dtype} "
                f"needs {bytes_needed} bytes but storage has {available}"
            )

    def _checked_bytes_needed(self) -> int:
        """The same extent as _check_fits_in_storage with every step checked, as the book does."""
        last = self.offset
        for size, stride in zip(self.shape, self.strides, strict=True):
            last = checked_add(
                last, checked_mul(size - 1, stride, "tensor extent"), "tensor extent"
            )
        last = checked_add(last, 1, "tensor extent")
        return checked_mul(last, self.dtype.itemsize, "tensor extent in bytes")

    def __repr__(self) -> str:
        return (
            f"TensorImpl(shape={format_shape(self.shape)}, strides={format_shape(self.strides)}, "
            f"offset={self.offset}, dtype={self.dtype}, device={self.device})"
        )


def ptr_on(impl: TensorImpl, device: Device, op: str) -> int:
    """impl.data_ptr() for a kernel that runs on `device`, kael.Error when impl's memory is
    elsewhere: a kernel would read another device's address as its own (a segfault)."""
    if impl.device is not device:
        kind = "host" if device is CPU else str(device)
        raise Error(
            f"{op}: {kind} kernel given memory on {impl.device}: expected all tensors on {device}"
        )
    return impl.data_ptr()


def host_ptr(impl: TensorImpl, op: str) -> int:
    """impl.data_ptr() for a host kernel (codegen/cpu); kael.Error for cuda memory."""
    return ptr_on(impl, CPU, op)


# Steps the exact overlap search may take before `overlapping` answers a conservative True
OVERLAP_SEARCH_STEPS = 4096


def overlapping(a: TensorImpl, b: TensorImpl) -> bool:
    """Whether two tensors share a byte of memory, element by element (x[::2] and x[1::2]
    do not). Exact, except that a search past OVERLAP_SEARCH_STEPS answers True: it may
    refuse a pair, never miss one (torch's own test refuses only dense pairs)."""
    if not (a.numel() and b.numel() and a.storage.overlaps(b.storage)):
        return False
    terms, low, high = _address_difference(a, b)
    return _reaches(terms, low, high)


def _moving_dims(t: TensorImpl, sign: int) -> list[tuple[int, int]]:
    """(sign * stride in bytes, size - 1) of each dimension of t that reaches another element."""
    size = t.dtype.itemsize
    return [(sign * s * size, n - 1) for n, s in zip(t.shape, t.strides) if n > 1 and s]


def _address_difference(a: TensorImpl, b: TensorImpl) -> tuple[list[tuple[int, int]], int, int]:
    """(terms, low, high): a and b share a byte iff some sum of c * x over terms, each c > 0
    and 0 <= x <= its bound, lies in [low, high] (a's element address less b's, shifted so
    that each term counts up from 0; largest c first)."""
    shift = 0 if a.storage is b.storage else a.storage.ptr - b.storage.ptr
    start = shift + a.offset * a.dtype.itemsize - b.offset * b.dtype.itemsize
    low, high = 1 - a.dtype.itemsize - start, b.dtype.itemsize - 1 - start
    bounds: dict[int, int] = {}  # terms of one c merge: x + y spans [0, bound_x + bound_y]
    for c, bound in _moving_dims(a, 1) + _moving_dims(b, -1):
        if c < 0:  # c * x == c * bound + |c| * (bound - x)
            low, high = low - c * bound, high - c * bound
        bounds[abs(c)] = bounds.get(abs(c), 0) + bound
    return sorted(bounds.items(), reverse=True), low, high


def _reaches(terms: list[tuple[int, int]], low: int, high: int) -> bool:
    """Whether a sum of c * x, 0 <= x <= bound, over terms (largest c first) lands in
    [low, high]: the largest term's few values that leave the rest a chance, each searched
    in turn; True once the search has taken OVERLAP_SEARCH_STEPS steps."""
    steps = OVERLAP_SEARCH_STEPS

    def search(at: int, low: int, high: int) -> bool:
        nonlocal steps
        steps -= 1
        if steps < 0:
            return True
        rest = sum(c * bound for c, bound in terms[at:])
        if high < 0 or low > rest or _no_multiple(terms[at:], low, high):
            return False
        if at == len(terms):
            return True
        c, bound = terms[at]
        lowest = max(0, -((rest - c * bound - low) // c))  # the rest reaches low from here up
        highest = min(bound, high // c)
        return any(search(at + 1, low - c * x, high - c * x) for x in range(lowest, highest + 1))

    return search(0, low, high)


def _no_multiple(terms: list[tuple[int, int]], low: int, high: int) -> bool:
    """Whether [low, high] holds no multiple of the terms' common divisor (no sum can land)."""
    step = math.gcd(*(c for c, _ in terms))
    return step > 1 and high // step * step < low


def read_hazard(src: TensorImpl, dst: TensorImpl) -> bool:
    """Whether writing dst element by element may change elements of src not read yet: they
    share memory in another layout, in one storage (x.add_(x.T)) or in two over one array
    (two from_numpy of one array: storage identity alone misses those)."""
    if src.storage is dst.storage:
        return src.strides != dst.strides or src.offset != dst.offset
    if not src.storage.overlaps(dst.storage):
        return False
    start = src.storage.ptr + src.offset * src.dtype.itemsize
    return (
        start != dst.storage.ptr + dst.offset * dst.dtype.itemsize
        or src.strides != dst.strides
        or src.dtype.itemsize != dst.dtype.itemsize
    )
