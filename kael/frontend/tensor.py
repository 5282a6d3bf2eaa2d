"""The Tensor handle: one validated TensorImpl, its queries, data access and conversions."""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Callable, Iterator

import numpy as np

from kael.frontend import eager, fastpath, indexing, interop, memory_formats, printing, views
from kael.runtime import cuda_driver, dtypes, user_warning
from kael.runtime.allocator import PINNED
from kael.runtime.device import CPU, CUDA, Device, parse_device
from kael.runtime.dtypes import DType, as_dtype, bfloat16, float32, python_dtype
from kael.runtime.errors import Error, TypeError, ValueError
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import (
    TensorImpl,
    check_rank,
    checked_mul,
    contiguous_strides,
    format_shape,
    read_hazard,
    shape_numel,
)
from kael.runtime.tracestate import bump_epoch
from kael.runtime.tracestate import state as _trace_state


class Size(tuple):
    """torch.Size: a tensor's shape, a tuple of ints with numel(); made from any iterable of
    integers (NumPy's, 0-d integer tensors), repeated by *, joined with a tuple by + and
    sliced (x.shape[1:].numel()) as a Size."""

    __slots__ = ()

    def __new__(cls, dims=()) -> Size:
        dims = tuple(dims)
        if not all(type(d) is int for d in dims):
            dims = tuple(_size_item(d, i) for i, d in enumerate(dims))
        return tuple.__new__(cls, dims)

    def __getitem__(self, key):
        item = tuple.__getitem__(self, key)
        return tuple.__new__(Size, item) if type(key) is slice else item

    def __mul__(self, times) -> Size:
        return Size(tuple.__mul__(self, times))

    __rmul__ = __mul__

    def __add__(self, other) -> Size:
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(self, other))

    def __radd__(self, other) -> Size:
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __repr__(self) -> str:
        return f"kael.Size({list(self)})"

    def numel(self) -> int:
        return math.prod(self)


def _size_item(dim, i: int) -> int:
    """Size()'s item i as an int, as torch.Size takes it (a bool counts as its int)."""
    try:
        return operator.index(dim)
    except builtins.TypeError:
        raise TypeError(
            f"Size() takes an iterable of 'int' (item {i} is '{type(dim).__name__}')"
        ) from None


# shape tuple -> its Size: Tensor.shape hands out one Size per shape instead of making one
# per read (a dict lookup is half the cost of the subclass's construction).
_sizes: dict[tuple, Size] = {}


def _size_of(shape: tuple) -> Size:
    if len(_sizes) >= 4096:
        _sizes.clear()
    size = _sizes[shape] = Size(shape)
    return size


# (shape, dtype) -> (bytes, strides) of the host results made lately: every op makes one
_host_layouts: dict[tuple, tuple[int, tuple]] = {}


def empty_impl(shape: tuple[int, ...], dtype: DType, device: Device) -> TensorImpl:
    """A contiguous impl over new, uninitialised storage sized exactly for its elements; the
    rank is checked first, so no kernel fills a result that could never become a Tensor.
    A host layout made before skips the checks and arithmetic (_host_layouts)."""
    trace = _trace_state.trace
    if device is CPU and trace is None and type(shape) is tuple:
        known = _host_layouts.get((shape, dtype))
        if known is not None:
            nbytes, strides = known
            storage = Storage.host(nbytes) if nbytes else Storage(0, CPU)
            return TensorImpl.of_tuples(storage, shape, strides, 0, dtype, CPU)
    check_rank(shape)
    nbytes = checked_mul(shape_numel(shape), dtype.itemsize, "tensor size in bytes")
    if device is not CPU:
        cuda_driver.require()  # a clear error even for 0 bytes, which allocate nothing
    storage = Storage(nbytes, device) if trace is None else trace.new_storage(nbytes, device)
    strides = contiguous_strides(shape)
    if device is CPU and type(shape) is tuple:
        if len(_host_layouts) >= 4096:
            _host_layouts.clear()
        _host_layouts[(shape, dtype)] = (nbytes, strides)
    return TensorImpl(storage, shape, strides, 0, dtype, device)


def clone_impl(impl: TensorImpl, dtype: DType | None = None) -> TensorImpl:
    """A new contiguous impl holding impl's elements, converted to `dtype` by a kernel."""
    out = empty_impl(impl.shape, impl.dtype if dtype is None else dtype, impl.device)
    eager.copy_into(out, impl)
    return out


def transfer_impl(impl: TensorImpl, device: Device, non_blocking: bool = False) -> TensorImpl:
    """impl's elements in a new contiguous impl on another device (a host <-> GPU memcpy);
    `non_blocking` from pinned memory to the GPU: queued on the current stream, the pinned
    block kept from reuse until the copy is done."""
    if not impl.is_contiguous():
        impl = clone_impl(impl)
    out = empty_impl(impl.shape, impl.dtype, device)
    nbytes = impl.nbytes()
    if not nbytes:
        return out
    if non_blocking and device is CUDA and impl.storage.is_pinned:
        cuda_driver.memcpy_htod_async(out.storage.ptr, impl.data_ptr(), nbytes)
        PINNED.record_stream(impl.storage.ptr, cuda_driver.current_stream())
        return out
    memcpy = cuda_driver.memcpy_htod if device is CUDA else cuda_driver.memcpy_dtoh
    memcpy(out.storage.ptr, impl.data_ptr(), nbytes)
    return out


def has_internal_overlap(impl: TensorImpl) -> bool:
    """Whether two indices surely reach one element: a stride-0 dim with more than one entry
    (never in an empty tensor, whose strides may be anything: NumPy's and torch's (0, 0))."""
    return 0 not in impl.shape and any(
        stride == 0 and size > 1 for size, stride in zip(impl.shape, impl.strides, strict=True)
    )


def _without_repeats(impl: TensorImpl) -> TensorImpl:
    """The same memory with every stride-0 dim cut to size 1, so each element is written once."""
    if 0 not in impl.strides or 0 in impl.shape:  # an empty tensor is never written
        return impl
    shape = [
        1 if stride == 0 else size for size, stride in zip(impl.shape, impl.strides, strict=True)
    ]
    return views.derive(impl, shape, impl.strides, impl.offset)


def _format(memory_format, op: str) -> memory_formats.memory_format:
    """A conversion method's memory_format (None: preserve_format) for to(); a bad one is a
    kael.TypeError naming the method, as torch's parser names it."""
    return memory_formats.format_arg(memory_format, op, optional=True)


def _flag(value, op: str, what: str) -> bool:
    """outputs.bool_arg for a method's flag (imported here: outputs imports this module)."""
    from kael.frontend import outputs

    return outputs.bool_arg(value, op, f"argument '{what}'")


def placed(impl, what: str, always: bool = False) -> None:
    """Mark Python that reads where a view lies in its storage (its offset, its address, a
    layout from the storage's start) where a compiled plan finds it per call (x[t]: a
    window): that needs the values, as Tensor.item() does. Inside an op, kael's own reads
    (diagonal's, a pool's windows) are relative and pass, unless `always`: a public door
    taking the user's layout (kael.as_strided)."""
    storage = impl.storage
    trace = _trace_state.trace
    if trace is not None and trace.depth and not always:
        return
    if trace is not None:
        trace.placed(storage)  # an argument read at any offset: its own now
    if storage.windowed:
        if storage.ints and trace is not None:  # placed by dynamic ints: their values
            trace.used_scalars.update(storage.ints)
        else:
            _needs_values(f"{what} of a view whose place follows the values (x[t])")


def _needs_values(what: str) -> None:
    """Mark Python that reads a tensor's values: under @kael.compile's trace they do not
    exist yet (kael.Error naming the line, or the rest of the call runs eagerly)."""
    trace = _trace_state.trace
    if trace is not None:
        trace.data_dependent(what)


# Tensor.type()'s names, PyTorch's legacy tensor type per dtype.
_TYPE_NAMES = {
    dtypes.float32: "FloatTensor",
    dtypes.float64: "DoubleTensor",
    dtypes.float16: "HalfTensor",
    dtypes.bfloat16: "BFloat16Tensor",
    dtypes.int64: "LongTensor",
    dtypes.int32: "IntTensor",
    dtypes.int16: "ShortTensor",
    dtypes.int8: "CharTensor",
    dtypes.uint8: "ByteTensor",
    dtypes.bool_: "BoolTensor",
    dtypes.complex64: "ComplexFloatTensor",
    dtypes.complex128: "ComplexDoubleTensor",
}


def _numpy_has(dtype: DType) -> None:
    """Refuse an array of bfloat16, which NumPy has no dtype for (PyTorch's TypeError)."""
    if dtype is bfloat16:
        raise TypeError(
            "Got unsupported ScalarType BFloat16: NumPy has no bfloat16;"
            " convert first, e.g. tensor.float().numpy()"
        )


def _other(other, op: str) -> Tensor:
    """outputs.tensor_arg for a method's `other` (imported here: outputs imports this module)."""
    from kael.frontend import outputs

    return outputs.tensor_arg(other, op, "other")


class Layout:
    """A memory layout (torch.layout); kael's tensors are all dense: `strided`."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"kael.{self.name}"

    def __reduce__(self) -> str:
        """Pickled by name, as torch's layouts: unpickling gives the one kael.strided."""
        return self.name


strided = Layout("strided")


_IDENTITY_ON_SCALARS = "is deprecated on 0-D tensors. This function is the identity in these cases."


def _transpose_of_other_rank(ndim: int) -> None:
    """PyTorch's warnings (once) for x.T of a tensor that is no matrix."""
    if ndim == 0:
        user_warning.warn_once(f"Tensor.T {_IDENTITY_ON_SCALARS}")
        return
    user_warning.warn_once(
        "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is"
        " deprecated and it will throw an error in a future release. Consider `x.mT` to"
        " transpose batches of matrices or `x.permute(*kael.arange(x.ndim - 1, -1, -1))` to"
        " reverse the dimensions of a tensor."
    )


def _deprecated_on_scalar(what: str) -> None:
    """PyTorch's warning for a matrix transpose taken of a 0-d tensor (the tensor itself)."""
    user_warning.warn_once(
        f"{what} is deprecated on 0-D tensors. Consider using x.conj().", UserWarning
    )


def _strides_arg(stride) -> tuple[int, ...]:
    """set_'s stride: a sequence of ints, none negative (PyTorch's views have none either)."""
    if not isinstance(stride, tuple | list) or not all(type(s) is int and s >= 0 for s in stride):
        raise TypeError(f"set_(): stride must be a sequence of ints >= 0, got {stride!r}")
    return tuple(stride)


def _dim_before(shape, strides, a: int, b: int) -> int:
    """PyTorch's comparison for dim_order: 1 when dim a lies inside dim b in memory, -1 when
    outside, 0 when the strides cannot tell (a stride 0, or equal strides and sizes)."""

    def ge(x: int, y: int) -> bool:
        return y == 0 or (x != 0 and (x >= y or x % y == 0))

    sa, sb = strides[a], strides[b]
    if sa == 0 or sb == 0:
        return 0
    if sa == sb:
        return 0 if ge(shape[b], shape[a]) else 1
    return -1 if ge(sb, sa) else 1 if ge(sa, sb) else 0


def _channels_last(shape, strides) -> bool:
    """Whether a 4-d or 5-d layout is dense with channels innermost (size-1 dims ignored)."""
    if len(shape) not in (4, 5):
        return False
    expected = 1
    for d in (1, *range(len(shape) - 1, 1, -1), 0):
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def _dim_order(impl: TensorImpl, ambiguity_check: bool = False) -> tuple[int, ...]:
    """The dims from outermost to innermost in memory, as torch's dim_order sorts them; with
    `ambiguity_check`, kael.Error where a neighbouring pair's order is not strictly decided
    (PyTorch's check after its sort)."""
    shape, strides, ndim = impl.shape, impl.strides, len(impl.shape)
    contiguous, last = impl.is_contiguous(), _channels_last(shape, strides)
    if ndim < 2 or (contiguous and not last):
        return tuple(range(ndim))
    if last and not contiguous:
        return (0, *range(2, ndim), 1)
    perm = list(range(ndim - 1, -1, -1))  # an insertion sort, innermost first
    for i in range(1, ndim):
        j = i
        for k in range(i - 1, -1, -1):
            order = _dim_before(shape, strides, perm[k], perm[j])
            if order > 0:
                perm[k], perm[j] = perm[j], perm[k]
                j = k
            elif order < 0:
                break
    if ambiguity_check and any(
        _dim_before(shape, strides, a, b) != -1 for a, b in zip(perm, perm[1:])
    ):
        raise Error(
            f"The tensor does not have unique dim order: shape {list(shape)}, strides"
            f" {list(strides)}"
        )
    return tuple(reversed(perm))


def legacy_new(dtype, default_device, args: tuple, device, op: str) -> Tensor:
    """PyTorch's legacy constructors (Tensor.new, kael.Tensor(...), kael.FloatTensor(...)):
    () empty, (*sizes) or (Size) uninitialised, (sequence) a tensor of that data, (tensor)
    that tensor (of `dtype` and the device only), on `device` or the default one."""
    from kael.frontend import factories  # it imports this module

    device = default_device if device is None else Device(device)
    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if other.dtype is not dtype or other.device is not device:
            raise TypeError(
                f"{op}(): expected a {dtype} tensor on {device} (got a {other.dtype} tensor"
                f" on {other.device})"
            )
        return other.detach()
    if len(args) == 1 and (type(args[0]) in (list, tuple) or hasattr(args[0], "__array__")):
        return factories.tensor(args[0], dtype=dtype, device=device)
    for arg in args:
        if not isinstance(arg, (int, tuple)) or isinstance(arg, bool):
            what = "data must be a sequence" if isinstance(arg, float) else "invalid data type"
            raise TypeError(f"{op}(): {what} (got {type(arg).__name__})")
    return factories.empty(*(args or (0,)), dtype=dtype, device=device)


class Tensor:
    """A handle to one TensorImpl: binding a name shares it, clone() copies the data."""

    __slots__ = ("_impl", "__weakref__")

    def __init__(self, impl: TensorImpl = None, *sizes, device=None) -> None:
        """A handle to `impl` (kael's own use); torch's legacy constructor otherwise:
        kael.Tensor(2, 3) uninitialised, kael.Tensor([1, 2]) of that data, kael.Tensor()
        empty, all in the default dtype; kael.Tensor(t) another handle to t's data."""
        if impl.__class__ is TensorImpl and not sizes:
            impl.validate()
            self._impl = impl
        elif isinstance(impl, Tensor) and not sizes:
            self._impl = impl._impl
        else:
            args = (impl, *sizes) if impl is not None else sizes
            self._impl = legacy_new(dtypes.get_default_dtype(), CPU, args, device, "Tensor")._impl

    @classmethod
    def trusted(cls, impl: TensorImpl) -> Tensor:
        """A handle to an impl whose layout was validated before (a compiled plan's outputs,
        which repeat a traced, validated layout over a storage of the traced size)."""
        t = cls.__new__(cls)
        t._impl = impl
        return t

    # ---- metadata -------------------------------------------------------------------------

    @property
    def shape(self) -> Size:
        shape = self._impl.shape
        size = _sizes.get(shape)
        return _size_of(shape) if size is None else size

    @property
    def dtype(self) -> DType:
        return self._impl.dtype

    @property
    def device(self) -> Device:
        return self._impl.device

    @property
    def ndim(self) -> int:
        return len(self._impl.shape)

    @property
    def nbytes(self) -> int:
        """Bytes the elements occupy (not the storage size, which a view may exceed)."""
        return self._impl.nbytes()

    @property
    def itemsize(self) -> int:
        return self._impl.dtype.itemsize

    @property
    def is_cuda(self) -> bool:
        return self._impl.device is CUDA

    @property
    def is_cpu(self) -> bool:
        return self._impl.device is CPU

    def get_device(self) -> int:
        """The device's index: -1 for the CPU, the GPU's ordinal for a cuda tensor."""
        device = self._impl.device
        return -1 if device is CPU else device.index

    def dim(self) -> int:
        return len(self._impl.shape)

    def ndimension(self) -> int:
        return len(self._impl.shape)

    def numel(self) -> int:
        return self._impl.numel()

    def nelement(self) -> int:
        return self._impl.numel()

    def is_same_size(self, other: Tensor) -> bool:
        """Whether both tensors have one shape."""
        return self._impl.shape == _other(other, "is_same_size").shape

    def is_signed(self) -> bool:
        """Whether the dtype holds negative values (every one but uint8 and bool)."""
        return self._impl.dtype.signed

    def is_complex(self) -> bool:
        """Whether the dtype is complex64 or complex128."""
        return self._impl.dtype.is_complex

    # ---- complex parts (frontend/complex.py) ---------------------------------------------------

    @property
    def real(self) -> Tensor:
        """The real parts: a float view of a complex tensor; a real tensor itself."""
        from kael.frontend import complex

        return complex.real(self)

    @real.setter
    def real(self, value) -> None:
        self.real.copy_(value)

    @property
    def imag(self) -> Tensor:
        """The imaginary parts of a complex tensor (a float view); kael.TypeError for a real
        tensor, as PyTorch refuses."""
        from kael.frontend import complex

        return complex.imag(self)

    @imag.setter
    def imag(self, value) -> None:
        self.imag.copy_(value)

    def conj(self) -> Tensor:
        """The conjugate: a new tensor for a complex one (kael has no lazy conjugate bit), the
        tensor itself for a real one."""
        return self.conj_physical() if self._impl.dtype.is_complex else self

    def conj_physical(self) -> Tensor:
        """The conjugate as a new tensor (a real tensor: a copy, as PyTorch's)."""
        from kael.frontend import complex

        if self._impl.dtype.is_complex:
            return complex.unary("conj_physical", self)
        return self.clone()

    def resolve_conj(self) -> Tensor:
        return self

    def resolve_neg(self) -> Tensor:
        return self

    def is_conj(self) -> bool:
        return False

    def is_neg(self) -> bool:
        return False

    def size(self, dim=None) -> Size | int:
        """The shape (a kael.Size), or the size of one dim (negative dims count from the end)."""
        shape = self._impl.shape
        if dim is None:
            size = _sizes.get(shape)
            return _size_of(shape) if size is None else size
        return shape[views.wrap_dim(dim, len(shape), False)]

    def stride(self, dim=None) -> tuple[int, ...] | int:
        """The strides in elements, or the stride of one dim."""
        strides = self._impl.strides
        return strides if dim is None else strides[views.wrap_dim(dim, len(strides), False)]

    def strides(self) -> tuple[int, ...]:
        return self._impl.strides

    def storage_offset(self) -> int:
        placed(self._impl, "storage_offset()")
        return self._impl.offset

    def element_size(self) -> int:
        return self._impl.dtype.itemsize

    @property
    def _version(self) -> int:
        """torch's version counter: the in-place writes to this tensor's memory so far (its
        views share it), which code checking for modified inputs compares."""
        return self._impl.storage.version

    def data_ptr(self) -> int:
        """The address of the first element (a device address for CUDA tensors)."""
        placed(self._impl, "data_ptr()")
        return self._impl.data_ptr()

    def const_data_ptr(self) -> int:
        """data_ptr() (PyTorch's read-only spelling of it)."""
        return self._impl.data_ptr()

    def is_shared(self) -> bool:
        """Whether the storage is in shared memory (share_memory_; always True on a GPU)."""
        from kael.frontend import storages  # it imports this module

        return storages.is_shared_storage(self._impl.storage)

    def share_memory_(self) -> Tensor:
        """Move the storage into shared memory, for every tensor over it: fork children
        see writes both ways. A no-op on a GPU or when already shared; returns self."""
        from kael.frontend import storages  # it imports this module

        storages.share_storage(self._impl.storage)
        return self

    def untyped_storage(self):
        """The storage's bytes as a kael.UntypedStorage (one per storage: views agree)."""
        from kael.frontend import storages  # it imports this module

        placed(self._impl, "untyped_storage()")
        return storages.UntypedStorage.of(self._impl.storage)

    def is_set_to(self, tensor: Tensor) -> bool:
        """Whether both tensors view one storage with one offset, shape and strides."""
        if not isinstance(tensor, Tensor):
            raise TypeError(
                "is_set_to(): argument 'tensor' (position 1) must be Tensor, not"
                f" {type(tensor).__name__}"
            )
        mine, other = self._impl, tensor._impl
        return (mine.storage, mine.offset, mine.shape, mine.strides) == (
            other.storage,
            other.offset,
            other.shape,
            other.strides,
        )

    def dim_order(self, *, ambiguity_check: bool = False) -> tuple[int, ...]:
        """The dims from outermost to innermost in memory (by stride, ties as PyTorch breaks
        them); ambiguity_check=True refuses a layout with more than one such order."""
        if not isinstance(ambiguity_check, bool):
            raise TypeError(
                "The ambiguity_check argument must be a bool or a list of memory formats."
            )
        impl = self._impl
        strides = impl.strides
        repeated = any(a == b for a, b in zip(strides, strides[1:]))
        if ambiguity_check and (repeated or 1 in impl.shape):
            raise Error(
                "The tensor does not have unique dim order, or cannot map to exact one of"
                f" the given memory formats: shape {list(impl.shape)}, strides {list(strides)}"
            )
        return _dim_order(impl, ambiguity_check)

    def is_contiguous(self, memory_format=memory_formats.contiguous_format) -> bool:
        """Whether the layout is dense in the format's dim order (torch's rules for size-1
        and empty dims; False for channels_last at a rank other than 4)."""
        if memory_format is memory_formats.contiguous_format:
            return self._impl.is_contiguous()
        fmt = memory_formats.format_arg(memory_format, "is_contiguous")
        return memory_formats.is_contiguous_in(self._impl, fmt)

    def is_same(self, other: Tensor) -> bool:
        """Whether both handles refer to one tensor (one impl)."""
        return self._impl is _other(other, "is_same")._impl

    def shares_storage(self, other: Tensor) -> bool:
        """Whether a write through one tensor can change the other."""
        return self._impl.storage is _other(other, "shares_storage")._impl.storage

    @property
    def T(self) -> Tensor:
        """All dims reversed: the transpose of a matrix (PyTorch deprecates it, warning once,
        for other ranks)."""
        # a permutation of a validated layout reads the same elements: nothing to validate
        impl = self._impl
        if len(impl.shape) != 2:
            _transpose_of_other_rank(len(impl.shape))
        return Tensor.trusted(
            TensorImpl.of_tuples(
                impl.storage,
                impl.shape[::-1],
                impl.strides[::-1],
                impl.offset,
                impl.dtype,
                impl.device,
            )
        )

    @property
    def mT(self) -> Tensor:
        """The last two dims swapped (a batch of matrices transposed); a 0-d tensor itself, as
        in PyTorch 2.13 (which deprecates it), and a 1-d one refused."""
        if not self._impl.shape:
            user_warning.warn_once(f"Tensor.mT {_IDENTITY_ON_SCALARS}")
            return self
        if len(self._impl.shape) < 2:
            raise ValueError(
                "tensor.mT is only supported on matrices or batches of matrices."
                f" Got {len(self._impl.shape)}-D tensor."
            )
        return Tensor.trusted(views.transpose(self._impl, -2, -1))

    @property
    def mH(self) -> Tensor:
        """The conjugate transpose of a batch of matrices: mT for a real dtype, a conjugated
        copy for a complex one."""
        return self._matrix_transpose("tensor.mH", "Tensor.mH")

    @property
    def H(self) -> Tensor:
        """The conjugate transpose of a matrix (2-d only; a 0-d tensor is itself)."""
        ndim = len(self._impl.shape)
        if ndim not in (0, 2):
            hint = " For batches of matrices, consider using tensor.mH" if ndim > 2 else ""
            raise ValueError(
                f"tensor.H is only supported on matrices (2-D tensors). Got {ndim}-D tensor.{hint}"
            )
        return self._matrix_transpose("tensor.H", "Tensor.H")

    def adjoint(self) -> Tensor:
        """The conjugate transpose (mH): a view for a real dtype, a copy for a complex one."""
        return self._matrix_transpose("tensor.adjoint()", "adjoint()")

    def _matrix_transpose(self, what: str, warned: str) -> Tensor:
        """The conjugate of the last two dims swapped: a view of a real tensor, a copy of a
        complex one (kael has no lazy conjugate bit); a 0-d tensor is its conjugate, with
        PyTorch's deprecation warning, a 1-d one is refused."""
        ndim = len(self._impl.shape)
        if ndim == 0:
            _deprecated_on_scalar(warned)
            return self.conj()
        if ndim < 2:
            raise ValueError(
                f"{what} is only supported on matrices or batches of matrices. Got {ndim}-D tensor."
            )
        return Tensor.trusted(views.transpose(self._impl, -2, -1)).conj()

    # ---- PyTorch's layout queries: every kael tensor is a dense, strided, real one ----------

    @property
    def layout(self) -> Layout:
        return strided

    is_sparse = is_sparse_csr = is_quantized = is_meta = is_nested = is_mkldnn = property(
        lambda self: False, doc="False: kael's tensors are dense, plain and on a real device."
    )

    def is_inference(self) -> bool:
        """False: kael has no inference tensors (no autograd to keep them out of)."""
        return False

    @property
    def data(self) -> Tensor:
        """A new tensor over the same elements (detach())."""
        return self.detach()

    @data.setter
    def data(self, value: Tensor) -> None:
        """`x.data = y`: x becomes a handle to y's elements, as PyTorch's setter swaps them in."""
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be set to a Tensor, not {type(value).__name__}")
        impl = value._impl
        old = self._impl
        self._impl = views.derive(impl, impl.shape, impl.strides, impl.offset)
        if _trace_state.trace is not None:
            _trace_state.trace.moved(old)
        bump_epoch()

    # ---- data -----------------------------------------------------------------------------

    def _host_array(self) -> np.ndarray:
        """A NumPy array over the elements: a view on CPU, over a host copy otherwise;
        bfloat16 (which NumPy lacks) as the float32 values kael's cast gives."""
        impl = self._impl
        if impl.dtype is bfloat16:
            impl = self.to(float32)._impl
        if impl.device is not CPU:
            impl = transfer_impl(impl, CPU)
        return interop.numpy_view(impl)

    def item(self) -> bool | int | float:
        """The one element as a Python number; any shape with exactly one element works."""
        n = self._impl.numel()
        if n != 1:
            raise ValueError(f"a Tensor with {n} elements cannot be converted to Scalar")
        _needs_values("Tensor.item()")
        return self._host_array().item()

    def tolist(self) -> list | bool | int | float:
        """The elements as nested Python lists (a number for a 0-d tensor)."""
        _needs_values("Tensor.tolist()")
        return self._host_array().tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """A NumPy array over the same bytes (no copy); it keeps the storage alive.
        `force` (torch's): a GPU tensor is copied to the host first."""
        _needs_values("Tensor.numpy()")
        _numpy_has(self._impl.dtype)
        if force and self._impl.device is not CPU:
            return self.cpu().numpy()
        if self._impl.device is not CPU:
            raise TypeError(
                f"can't convert {self._impl.device} device type tensor to numpy."
                " Use Tensor.cpu() to copy the tensor to host memory first."
            )
        return interop.numpy_view(self._impl)

    # NumPy defers to a tensor's reflected operators (np.float64(2) * t is t.__rmul__, a
    # Tensor, as torch's priority makes it), and a NumPy function called on a tensor hands
    # its result back as a tensor (np.sqrt(t)), as torch's __array_wrap__ does.
    __array_priority__ = 1000

    def __array_wrap__(self, array: np.ndarray, context=None, return_scalar: bool = False):
        """NumPy's result for a tensor argument, as a kael tensor (a bool array as uint8,
        as torch's wrap gives it)."""
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        return Tensor(interop.from_numpy_impl(np.ascontiguousarray(array)))

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        _needs_values("converting a tensor to a NumPy array")
        _numpy_has(self._impl.dtype)
        needs_copy = self._impl.device is not CPU or (
            dtype is not None and np.dtype(dtype) != self._impl.dtype.numpy
        )
        if copy is False and needs_copy:
            raise ValueError("converting this tensor to the requested NumPy array needs a copy")
        array = self._host_array()
        if dtype is not None and np.dtype(dtype) != array.dtype:
            return array.astype(dtype)
        return array.copy() if copy else array

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule over this tensor's bytes (every dtype, bfloat16 included):
        DLPack 1.0's versioned one when `max_version` allows, else the classic one;
        `copy=True` exports a copy. On the GPU, the work queued on the current stream is
        finished first unless `stream` is -1 (the consumer's stream may then read at once)."""
        from kael.frontend import dlpack  # it imports the runtime only; this module is above

        _needs_values("exporting a tensor through DLPack")
        impl = self._impl
        own = dlpack.device_code(impl.device)
        if dl_device is not None and tuple(dl_device) != own:
            raise BufferError(f"this tensor is on {impl.device} {own}, got dl_device {dl_device}")
        if impl.device is CPU and stream is not None and stream != -1:
            raise BufferError("a CPU tensor has no stream to synchronize with")
        if stream == 0:  # DLPack: 0 is ambiguous for CUDA, 1 is the legacy default stream
            raise BufferError("stream=0 is not a CUDA stream for DLPack: pass 1 for the null one")
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        made = dlpack.capsule(self.clone()._impl if copy else impl, versioned)
        if impl.device is not CPU and stream != -1:
            cuda_driver.stream_synchronize(cuda_driver.current_stream())
        return made

    def __dlpack_device__(self) -> tuple[int, int]:
        """DLPack's (device type, id) of this tensor: (1, 0) on the host, (2, 0) on cuda."""
        from kael.frontend import dlpack

        return dlpack.device_code(self._impl.device)

    def __len__(self) -> int:
        if not self._impl.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._impl.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        impl = self._impl
        if not impl.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (Tensor(views.select(impl, 0, i)) for i in range(impl.shape[0]))

    def __contains__(self, element) -> bool:
        """`element in t`: whether any element of t equals it (a number or a tensor that
        broadcasts), as torch reads `in`; Python's row-by-row fallback compared whole rows."""
        if not isinstance(element, (Tensor, bool, int, float, complex)):
            raise TypeError(
                "Tensor.__contains__ only supports Tensor or scalar, but you passed in a"
                f" {type(element)}."
            )
        return bool((self == element).any().item())

    def __bool__(self) -> bool:
        n = self._impl.numel()
        if n != 1:
            raise ValueError(f"Boolean value of a Tensor with {n} elements is ambiguous")
        _needs_values("bool(tensor) (an `if` or `while` on a tensor)")
        return bool(self.item())

    def is_nonzero(self) -> bool:
        """Whether the one element is not zero (NaN is nonzero); any other count is refused."""
        n = self._impl.numel()
        if n != 1:
            how = "no values" if n == 0 else f"more than one value ({n} elements)"
            raise ValueError(f"is_nonzero(): Boolean value of Tensor with {how} is ambiguous")
        _needs_values("Tensor.is_nonzero()")
        return bool(self.item())

    def __float__(self) -> float:
        _needs_values("float(tensor)")
        return float(self._real_item("double"))

    def __int__(self) -> int:
        _needs_values("int(tensor)")
        return int(self._real_item("int64"))

    def __complex__(self) -> complex:
        """The one element as a Python complex (complex(t)), of any dtype."""
        _needs_values("complex(tensor)")
        return complex(self.item())

    def _real_item(self, target: str) -> bool | int | float:
        """The one element for float() or int(): a complex one's real part where its
        imaginary part is 0, else refused as PyTorch refuses it."""
        value = self.item()
        if isinstance(value, complex):
            if value.imag != 0:
                raise TypeError(f"value cannot be converted to type {target} without overflow")
            return value.real
        return value

    def __index__(self) -> int:
        """An integer or bool tensor of one element as an index (range(n), seq[i], ...)."""
        dtype = self._impl.dtype
        if self._impl.numel() != 1 or dtype.is_floating_point or dtype.is_complex:
            raise TypeError(
                "only integer tensors of a single element can be converted to an index (got"
                f" a {dtype} tensor of {self._impl.numel()} elements)"
            )
        _needs_values("operator.index(tensor)")
        return int(self.item())

    def __format__(self, spec: str) -> str:
        """A 0-d tensor formats as its number (f"{loss:.4f}"); others only with no spec."""
        if not self._impl.shape:
            _needs_values("formatting a tensor")
            return format(self.item(), spec)
        if spec:
            raise TypeError(
                f"unsupported format string {spec!r} passed to Tensor.__format__ (only a 0-d"
                f" tensor formats as a number; this one has shape {list(self._impl.shape)})"
            )
        return str(self)

    def __repr__(self) -> str:
        _needs_values("printing a tensor")
        return printing.format_tensor(self)

    # ---- conversion -----------------------------------------------------------------------

    def to(
        self,
        *args,
        dtype=None,
        device=None,
        non_blocking: bool = False,
        copy: bool = False,
        memory_format=None,
    ) -> Tensor:
        """This tensor with another dtype, device and/or memory format (preserve_format by
        default); self when nothing changes, as torch decides it (a format asked for is
        already there when it is the one torch's suggest_memory_format reads), a new tensor
        anyway with `copy`. `non_blocking`: a copy from pinned host memory to a GPU does
        not wait for the device (it runs on the current stream); any other copy waits."""
        if memory_format is None and device is None and not (copy or non_blocking):
            wanted = args[0] if len(args) == 1 and dtype is None else None if args else dtype
            if type(wanted) is DType:  # x.to(kael.float64), x.double(): a dense cast's door
                if wanted is self._impl.dtype:
                    return self
                done = fastpath.cast(self, wanted)
                if done is not None:
                    return done
        dtype, device, non_blocking, copy = to_arguments(args, dtype, device, non_blocking, copy)
        fmt = memory_formats.format_arg(memory_format, "to", optional=True)
        impl = self._impl
        dtype = impl.dtype if dtype is None else as_dtype(dtype)
        device = impl.device if device is None else parse_device(device)
        kept = fmt is memory_formats.preserve_format or memory_formats.suggested(impl) is fmt
        if dtype is impl.dtype and device is impl.device and kept:
            return self.clone(memory_format=memory_format) if copy else self
        strides = memory_formats.layout_for(impl, fmt)
        if device is impl.device:
            return Tensor(memory_formats.copy_with(impl, strides, dtype))
        convert = dtype is not impl.dtype
        if convert and impl.device is CPU:  # convert where the kernels run
            impl, convert = clone_impl(impl, dtype), False
        if device is not impl.device:
            if not isinstance(non_blocking, bool):
                raise TypeError(
                    f"to(): non_blocking must be a bool, got {type(non_blocking).__name__}"
                )
            impl = transfer_impl(impl, device, non_blocking)
        if convert or impl.strides != strides:
            impl = memory_formats.copy_with(impl, strides, dtype)
        return Tensor(impl)

    def pin_memory(self) -> Tensor:
        """A copy of this CPU tensor in page-locked host memory (self if it is in some)."""
        impl = self._impl
        if impl.device is not CPU:
            raise Error(f"pin_memory(): only CPU tensors can be pinned, got one on {impl.device}")
        if impl.storage.is_pinned:
            return self
        storage = Storage.pinned(impl.nbytes())
        out = TensorImpl(storage, impl.shape, contiguous_strides(impl.shape), 0, impl.dtype, CPU)
        eager.copy_into(out, impl)
        return Tensor(out)

    def is_pinned(self) -> bool:
        """Whether this tensor's memory is page-locked host memory (pin_memory)."""
        return self._impl.storage.is_pinned

    def cpu(self, *, memory_format=None) -> Tensor:
        """This tensor on the host, laid out in the format (self when nothing changes)."""
        return self.to(device=CPU, memory_format=_format(memory_format, "cpu"))

    def cuda(self, device=None, non_blocking: bool = False, memory_format=None) -> Tensor:
        """This tensor on the GPU (`device`: a CUDA device or its index), laid out in the
        format (self when nothing changes)."""
        fmt = _format(memory_format, "cuda")
        non_blocking = _flag(non_blocking, "cuda", "non_blocking")
        target = CUDA if device is None else Device(device)
        if target.type != "cuda":
            raise ValueError(f"cuda(): invalid device, must be a cuda device, got {target}")
        return self.to(device=target, non_blocking=non_blocking, memory_format=fmt)

    def record_stream(self, stream) -> None:
        """Mark this cuda tensor's memory as used by `stream` (kael.cuda.record_stream)."""
        from kael import cuda  # kael.cuda imports the runtime only; this module is below it

        cuda.record_stream(self, stream)

    def type(
        self, dtype: DType | str | None = None, non_blocking: bool = False, *, memory_format=None
    ) -> Tensor | str:
        """Without a dtype, the type's name as PyTorch spells it ("kael.FloatTensor",
        "kael.cuda.FloatTensor"); with a dtype (or such a name), this tensor converted into
        the memory format."""
        fmt = _format(memory_format, "type")
        non_blocking = _flag(non_blocking, "type", "non_blocking")
        if dtype is None:
            place = "cuda." if self._impl.device is not CPU else ""
            return f"kael.{place}{_TYPE_NAMES[self._impl.dtype]}"
        if dtype is bool or dtype is int or dtype is float or dtype is complex:  # no type here
            raise ValueError(f"invalid type: '{dtype.__name__}'")
        dtype = getattr(dtype, "legacy_dtype", dtype)  # kael.FloatTensor and the like
        if isinstance(dtype, str) and dtype.startswith(("kael.", "torch.")):  # a port's names
            names = {n: d for d, n in _TYPE_NAMES.items()}
            bare = dtype.removeprefix("kael.").removeprefix("torch.")
            found = names.get(bare.removeprefix("cuda."))
            if found is None:
                raise TypeError(f"invalid type: '{dtype}'")
            device = CUDA if ".cuda." in dtype else CPU  # torch.FloatTensor is the host's
            return self.to(found, device=device, non_blocking=non_blocking, memory_format=fmt)
        return self.to(dtype=dtype, non_blocking=non_blocking, memory_format=fmt)

    def type_as(self, other: Tensor) -> Tensor:
        """This tensor in other's dtype and on its device (self when both already match)."""
        other = _other(other, "type_as")
        return self.to(dtype=other.dtype, device=other.device)

    def is_floating_point(self) -> bool:
        return self._impl.dtype.is_floating_point

    # ---- autograd's attributes: kael has no autograd yet, so nothing requires grad ---------

    @property
    def requires_grad(self) -> bool:
        return False

    @property
    def grad(self) -> None:
        return None

    @property
    def is_leaf(self) -> bool:
        return True

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Self when asked for no grad; kael.Error when asked for one (no autograd yet)."""
        if requires_grad:
            raise Error(
                "requires_grad_(True): kael has no autograd yet, so no tensor can require grad"
            )
        return self

    def __deepcopy__(self, memo: dict) -> Tensor:
        """copy.deepcopy: the same layout over a copy of the storage; tensors sharing one
        storage in the copied object still share one (the copy is made once per memo), and
        a subclass (nn.Parameter) stays one."""
        impl = self._impl
        storage = memo.get(id(impl.storage))
        if storage is None:
            storage = memo[id(impl.storage)] = _storage_copy(impl.storage)
            memo.setdefault(id(memo), []).append(impl.storage)  # keeps the id unique
        out = object.__new__(type(self))
        Tensor.__init__(
            out, TensorImpl(storage, impl.shape, impl.strides, impl.offset, impl.dtype, impl.device)
        )
        for name, value in self._subclass_state().items():
            setattr(out, name, value)
        return out

    def _subclass_state(self) -> dict:
        """A subclass's own slots (nn.Parameter's requires_grad, nn.Buffer's persistent)."""
        own = [n for n in getattr(type(self), "__slots__", ()) if n not in Tensor.__slots__]
        state = {n: getattr(self, n) for n in own if hasattr(self, n)}
        return {**getattr(self, "__dict__", {}), **state}  # a subclass without __slots__

    def __reduce_ex__(self, protocol):
        """Pickling (multiprocessing queues, pickle.dumps): the elements as little-endian
        bytes with dtype, shape and device; views are pickled as the elements they show."""
        impl = self._impl
        dense = (self if impl.device is CPU else self.cpu()).contiguous()._impl
        data = _byte_view(dense.storage, dense.offset * impl.dtype.itemsize, dense.nbytes())
        args = (type(self), data.tobytes(), impl.dtype.name, impl.shape, str(impl.device))
        state = self._subclass_state()
        return (_unpickle, args, (None, state)) if state else (_unpickle, args)

    def clone(self, *, memory_format=None) -> Tensor:
        """A new tensor with offset 0 and storage sized for its elements, laid out in the
        format (preserve_format by default: input's strides where dense, as torch.clone)."""
        if memory_format is None:
            done = fastpath.copy(self)  # a dense row-major input keeps its layout
            if done is not None:
                return done
        impl = self._impl
        fmt = memory_formats.format_arg(memory_format, "clone", optional=True)
        return Tensor(memory_formats.copy_with(impl, memory_formats.layout_for(impl, fmt)))

    def contiguous(self, memory_format=memory_formats.contiguous_format) -> Tensor:
        """Self when already contiguous in the format, else a copy laid out in it."""
        impl = self._impl
        if memory_format is memory_formats.contiguous_format:
            if impl.is_contiguous():
                return self
            done = fastpath.contiguous(self)
            if done is not None:
                return done
            out = clone_impl(impl)
            fastpath.remember_contiguous(out, impl)
            return Tensor(out)
        fmt = memory_formats.format_arg(memory_format, "contiguous")
        if memory_formats.is_contiguous_in(impl, fmt):
            return self
        if fmt is memory_formats.preserve_format:
            raise Error("preserve memory format is unsupported by the contiguous operator")
        return Tensor(
            memory_formats.copy_with(impl, memory_formats.format_strides(impl.shape, fmt))
        )

    def detach(self) -> Tensor:
        """A new tensor (its own impl) over the same elements."""
        impl = self._impl
        return Tensor(views.derive(impl, impl.shape, impl.strides, impl.offset))

    def detach_(self) -> Tensor:
        """Self: without autograd there is no graph to detach it from."""
        return self

    # ---- in-place writes ------------------------------------------------------------------

    def copy_(self, src: Tensor) -> Tensor:
        """Write src, broadcast to self's shape and converted to self's dtype, into self."""
        if not isinstance(src, Tensor):
            raise TypeError(f"copy_ expects a Tensor, got {type(src).__name__}")
        if type(self) in fastpath.PLAIN and fastpath.copy_into(self, src):
            self._impl.storage.bump_version()
            return self
        dst = self._impl
        if has_internal_overlap(dst):
            raise Error(
                "unsupported operation: more than one element of the written-to tensor refers"
                " to a single memory location. Please clone() the tensor before performing the"
                " operation."
            )
        source = src._impl
        if source.device is not dst.device:
            source = transfer_impl(source, dst.device)
        expanded = views.expand(source, (dst.shape,))
        in_place = True  # the kernel reads src itself
        if read_hazard(expanded, dst) or (
            expanded.dtype is not dst.dtype and source.storage.overlaps(dst.storage)
        ):
            expanded = views.expand(clone_impl(source), (dst.shape,))  # reads before writes
            in_place = False
        eager.copy_into(dst, expanded)
        if in_place and source is src._impl and source.shape == dst.shape:
            fastpath.remember_copy_into(dst, source)  # the pair of layouts, for the next
        dst.storage.bump_version()
        return self

    def fill_(self, value) -> Tensor:
        """Set every element to a number (or a 0-d tensor's value), converted to self's dtype."""
        if isinstance(value, Tensor):
            if value.ndim:
                raise ValueError(
                    f"fill_ only supports a 0-dim value tensor, got {value.ndim} dimensions"
                )
            # converted as a copy converts (torch: int16 from 70000 wraps to 4464, unchecked)
            value = value.to(self._impl.dtype).item()
        dst = self._impl
        eager.fill(_without_repeats(dst), value)
        dst.storage.bump_version()
        return self

    def zero_(self) -> Tensor:
        return self.fill_(0)

    def fill_diagonal_(self, fill_value, wrap: bool = False) -> Tensor:
        """Set the main diagonal (index i in every dim) to a number; a tall matrix with
        wrap=True starts the diagonal again every width + 1 rows, as PyTorch does."""
        if isinstance(fill_value, Tensor) and not fill_value.ndim:  # a 0-d tensor's number
            fill_value = fill_value.item()
        if not isinstance(fill_value, int | float):
            raise TypeError(
                "fill_diagonal_(): argument 'fill_value' must be a number, not"
                f" {type(fill_value).__name__}"
            )
        if not isinstance(wrap, bool):
            raise TypeError(
                f"fill_diagonal_(): argument 'wrap' must be bool, not {type(wrap).__name__}"
            )
        impl = self._impl
        shape = impl.shape
        if len(shape) < 2:
            raise ValueError(f"fill_diagonal_(): dimensions must larger than 1, got {len(shape)}")
        height, width = shape[0], shape[1]
        if len(shape) > 2 and any(size != height for size in shape[1:]):
            raise ValueError(
                "fill_diagonal_(): all dimensions of input must be of equal length, got shape"
                f" {list(shape)}"
            )
        size = min(height, width)
        self.as_strided((size,), (sum(impl.strides),), impl.offset).fill_(fill_value)
        if wrap and len(shape) == 2 and height > width + 1 and width:
            from kael.frontend import factories  # it imports this module

            step = width + 1
            flat = factories.arange(size * step, height * width, step, device=impl.device)
            self[flat // width, flat % width] = fill_value
        return self

    # ---- views ----------------------------------------------------------------------------

    def view(self, *shape, size=None, dtype=None) -> Tensor:
        """The same elements in another shape; kael.Error when the strides do not allow it.
        `view(dtype)` reads the same bytes as another dtype (torch's keywords: size, dtype)."""
        if size is not None and dtype is not None:
            raise TypeError("view() takes a size or a dtype, not both")
        if size is not None or dtype is not None:
            shape = (*shape, size if dtype is None else dtype)
        impl = self._impl
        if len(shape) == 1 and (isinstance(shape[0], DType) or python_dtype(shape[0]) is not None):
            return Tensor(views.view_dtype(impl, as_dtype(shape[0])))
        return self._remembered("view", shape, views.view, shape)

    def reshape(self, *sizes, shape=None) -> Tensor:
        """A view when one exists, otherwise a contiguous copy in the new shape (given as
        sizes, one sequence, or shape=)."""
        shape = sizes if shape is None else (*sizes, shape)
        impl = self._impl
        given = views.exact_key(shape)
        key = None if given is None else ("view", impl.shape, impl.strides, given)
        if key is not None:  # a remembered view: reshape gives the same one
            hit = views.remembered(key, impl)
            if hit is not None:
                return Tensor.trusted(hit)
        view = views.try_view(impl, shape)
        if view is None:
            return Tensor(views.view(clone_impl(impl), shape))
        result = Tensor(view)
        if key is not None:
            views.remember(key, impl, result._impl)
        return result

    def transpose(self, dim0, dim1) -> Tensor:
        return Tensor.trusted(views.transpose(self._impl, dim0, dim1))  # a permutation

    def _remembered(self, op: str, args: tuple, make: Callable, *extra) -> Tensor:
        """The view `make(impl, *extra)` of op(*args), remembered by layout and exact
        arguments (views.remembered; reshape shares view's keys): a repeated call skips the
        parsing and checks."""
        impl = self._impl
        given = views.exact_key(args)
        key = None if given is None else (op, impl.shape, impl.strides, given)
        if key is not None:
            hit = views.remembered(key, impl)
            if hit is not None:
                return Tensor.trusted(hit)
        result = Tensor(make(impl, *extra))
        if key is not None:
            views.remember(key, impl, result._impl)
        return result

    def permute(self, *order, dims=None) -> Tensor:
        dims = order if dims is None else (*order, dims)
        return self._remembered("permute", dims, views.permute, dims)

    def expand(self, *sizes, size=None) -> Tensor:
        sizes = sizes if size is None else (*sizes, size)
        return self._remembered("expand", sizes, views.expand, sizes)

    def expand_as(self, other: Tensor) -> Tensor:
        return Tensor(views.expand(self._impl, (_other(other, "expand_as").shape,)))

    def narrow(self, dim, start, length) -> Tensor:
        return Tensor(views.narrow(self._impl, dim, start, length))

    def select(self, dim, index) -> Tensor:
        return Tensor(views.select(self._impl, dim, index))

    def unsqueeze(self, dim) -> Tensor:
        return self._remembered("unsqueeze", (dim,), views.unsqueeze, dim)

    def squeeze(self, dim=None) -> Tensor:
        return self._remembered("squeeze", (dim,), views.squeeze, dim)

    def flatten(self, start_dim=0, end_dim=-1) -> Tensor:
        """Dims start_dim..end_dim merged into one (a view when the layout allows)."""
        shape = views.flatten_shape(self._impl.shape, start_dim, end_dim)
        return self if shape is None else self.reshape(shape)

    def unflatten(self, dim, sizes) -> Tensor:
        return Tensor(views.unflatten(self._impl, dim, sizes))

    def unfold(self, dimension, size, step) -> Tensor:
        """A view of every window of `size` elements along `dimension`, `step` apart, as a
        new last dim (shares this tensor's storage)."""
        return Tensor(views.unfold(self._impl, dimension, size, step))

    def as_strided(self, size, stride, storage_offset=None) -> Tensor:
        """Any layout over the same storage; one that leaves the storage raises kael.Error."""
        placed(self._impl, "as_strided")
        return Tensor(views.as_strided(self._impl, size, stride, storage_offset))

    def unsafe_chunk(self, chunks, dim=0) -> tuple[Tensor, ...]:
        """chunk (PyTorch's unsafe_ form differs only in autograd's view tracking)."""
        return self.chunk(chunks, dim)

    def unsafe_split(self, split_size, dim=0) -> tuple[Tensor, ...]:
        """split by one size (the last piece may be shorter)."""
        return self.split(split_size, dim)

    def unsafe_split_with_sizes(self, split_sizes, dim=0) -> tuple[Tensor, ...]:
        """split_with_sizes: pieces of the given sizes, which must add up to the dim's size."""
        return self.split_with_sizes(split_sizes, dim)

    def angle(self) -> Tensor:
        """The argument of each element: atan2(imag, real) of a complex one; of a real one
        0 for x >= 0, pi for x < 0, NaN kept (integer and bool: the default float dtype)."""
        if self._impl.dtype.is_complex:
            from kael.frontend import complex

            return complex.unary("angle", self)
        x = self if self._impl.dtype.is_floating_point else self.to(dtypes.get_default_dtype())
        return ((x < 0).to(x.dtype) * math.pi).where(x == x, x)

    def sum_to_size(self, *size) -> Tensor:
        """Sums over the dims that broadcasting `size` to this shape would expand: leading
        dims dropped, size-1 dims kept; self when the shapes match."""
        if not size:
            raise TypeError('sum_to_size() missing 1 required positional arguments: "size"')
        shape = views.parse_size(size)
        mine = self._impl.shape
        lead = len(mine) - len(shape)
        if lead < 0 or any(s not in (1, m) for s, m in zip(shape, mine[lead:], strict=True)):
            raise ValueError(
                f"size {{{format_shape(shape)}}} is not expandable to size"
                f" {{{format_shape(mine)}}}."
            )
        if shape == mine:
            return self
        kept = [lead + i for i, s in enumerate(shape) if s == 1 and mine[lead + i] != 1]
        out = self.sum(tuple(kept), keepdim=True) if kept else self
        return out.sum(tuple(range(lead))) if lead else out

    def new_empty_strided(self, size, stride, *, dtype=None, device=None) -> Tensor:
        """A new uninitialised tensor of this one's dtype and device with a given layout."""
        from kael.frontend import factories  # it imports this module

        dtype = self._impl.dtype if dtype is None else dtype
        device = self._impl.device if device is None else device
        return factories.empty_strided(size, stride, dtype=dtype, device=device)

    def new(self, *args, device=None) -> Tensor:
        """PyTorch's legacy constructor in self's dtype: new() empty, new(*sizes) or new(Size)
        uninitialised, new(sequence) a tensor of that data, new(tensor) that tensor (same
        dtype and device only), on self's device unless told."""
        return legacy_new(self._impl.dtype, self._impl.device, args, device, "new")

    def resize_(self, *sizes) -> Tensor:
        """This tensor made contiguous of shape `sizes` at its offset, its storage grown
        (old bytes kept, for every view of it; storages.resize_storage) when too small; the
        same shape changes nothing."""
        shape = views.check_shape(views.parse_size(sizes))
        impl = self._impl
        if shape == impl.shape:
            return self
        check_rank(shape)
        numel = shape_numel(shape)
        if numel:
            end = checked_mul(impl.offset + numel, impl.dtype.itemsize, "resize_ storage size")
            if end > impl.storage.nbytes:
                from kael.frontend import storages  # it imports this module

                storages.resize_storage(impl.storage, end)
        strides = contiguous_strides(shape)
        self._impl = TensorImpl(impl.storage, shape, strides, impl.offset, impl.dtype, impl.device)
        _moved(self, impl, rare=True)
        return self

    def resize_as_(self, the_template: Tensor) -> Tensor:
        """resize_ to the_template's shape."""
        if not isinstance(the_template, Tensor):
            raise TypeError(
                "resize_as_(): argument 'the_template' (position 1) must be Tensor, not"
                f" {type(the_template).__name__}"
            )
        return self.resize_(the_template.shape)

    def set_(self, source=None, storage_offset=None, size=None, stride=None) -> Tensor:
        """Make self a view of source's storage (a tensor's or a kael.UntypedStorage): a
        tensor's own layout, a whole storage as 1-d, or `size` and `stride` (contiguous by
        default) from `storage_offset` in elements, the storage grown when too small;
        set_() makes self empty. Returns self."""
        if source is None:
            if (storage_offset, size, stride) != (None, None, None):
                raise TypeError("set_(): a storage_offset, size or stride needs a source tensor")
            impl = empty_impl((0,), self._impl.dtype, self._impl.device)
        else:
            if isinstance(source, Tensor):
                placed(source._impl, "set_")
            impl = self._set_source(source, storage_offset, size, stride)
        before, self._impl = self._impl, impl
        _moved(self, before, rare=True)
        return self

    def _set_source(self, source, storage_offset, size, stride) -> TensorImpl:
        """set_'s new impl over source's storage (checked: a tensor of self's dtype and
        device, or a storage on self's device; an offset and size together)."""
        src = self._source_impl(source)
        if size is None:
            if storage_offset is not None or stride is not None:
                raise TypeError("set_(): storage_offset and stride need a size")
            return views.derive(src, src.shape, src.strides, src.offset)
        if storage_offset is None:
            raise TypeError("set_(): a size needs a storage_offset")
        shape = views.check_shape(views.parse_size((size,)))
        strides = contiguous_strides(shape) if stride is None else _strides_arg(stride)
        if len(strides) != len(shape):
            raise ValueError(
                f"unequal size length ({len(shape)}) and stride length ({len(strides)})"
            )
        if type(storage_offset) is not int:
            raise TypeError(
                f"set_(): storage_offset must be an int, not {type(storage_offset).__name__}"
            )
        if storage_offset < 0:
            raise ValueError(f"Tensor: invalid storage offset {storage_offset!r}")
        if shape_numel(shape):
            extent = 1 + sum((n - 1) * st for n, st in zip(shape, strides, strict=True))
            end = checked_mul(storage_offset + extent, src.dtype.itemsize, "set_ storage size")
            if end > src.storage.nbytes:
                from kael.frontend import storages  # it imports this module

                storages.resize_storage(src.storage, end)
        # through Tensor(), which checks the layout against the storage as every view's
        return Tensor(views.as_strided(src, shape, strides, storage_offset))._impl

    def _source_impl(self, source) -> TensorImpl:
        """set_'s source as an impl of self's dtype: a tensor's own, or a whole storage's
        bytes read as 1-d elements (a partial last element left out, as torch does)."""
        from kael.frontend import storages  # it imports this module

        mine = self._impl
        if isinstance(source, storages.UntypedStorage):
            storage = source._storage
            if storage.device is not mine.device:
                raise Error(
                    f'Attempted to set the storage of a tensor on device "{mine.device}" to a'
                    f' storage on different device "{storage.device}".  This is no longer'
                    " allowed; the devices must match."
                )
            count = storage.nbytes // mine.dtype.itemsize
            return TensorImpl(storage, (count,), (1,), 0, mine.dtype, mine.device)
        if not isinstance(source, Tensor):
            raise TypeError(
                "set_(): source must be a Tensor or a kael.UntypedStorage, not"
                f" {type(source).__name__}"
            )
        src = source._impl
        if src.dtype is not mine.dtype or src.device is not mine.device:
            raise TypeError(
                f"Could not set tensor of type {src.dtype} on {src.device} to a tensor of type"
                f" {mine.dtype} on {mine.device}"
            )
        return src

    def __getitem__(self, key) -> Tensor:
        """A view for ints, slices, None and ...; a copy for int and bool tensor keys."""
        return indexing.getitem(self, key)

    def __setitem__(self, key, value) -> None:
        indexing.setitem(self, key, value)


# PyTorch's conversion methods, each `to(dtype)` by another name: tensor.half(), .byte(), ...
CONVERSIONS = {
    "float": dtypes.float32,
    "double": dtypes.float64,
    "half": dtypes.float16,
    "bfloat16": dtypes.bfloat16,
    "long": dtypes.int64,
    "int": dtypes.int32,
    "short": dtypes.int16,
    "char": dtypes.int8,
    "byte": dtypes.uint8,
    "bool": dtypes.bool_,
    "cfloat": dtypes.complex64,
    "cdouble": dtypes.complex128,
}


def _conversion(name: str, dtype: DType):
    def convert(self: Tensor, *, memory_format=None) -> Tensor:
        if memory_format is None:  # to()'s dense cast door
            return self.to(dtype=dtype)
        return self.to(dtype=dtype, memory_format=_format(memory_format, name))

    convert.__name__, convert.__qualname__ = name, f"Tensor.{name}"
    convert.__doc__ = (
        f"This tensor as {dtype}, laid out in the memory format (self when nothing changes)."
    )
    return convert


for _name, _dtype in CONVERSIONS.items():
    setattr(Tensor, _name, _conversion(_name, _dtype))


# The in-place view methods: self takes the view's layout over the same storage, as
# PyTorch's squeeze_, t_, ... change the tensor's own sizes and strides and return it.
IN_PLACE_VIEWS = {
    "squeeze_": "squeeze",
    "unsqueeze_": "unsqueeze",
    "t_": "t",
    "transpose_": "transpose",
    "swapaxes_": "swapaxes",
    "swapdims_": "swapdims",
    "as_strided_": "as_strided",
}


def _in_place_view(name: str, view: str):
    def in_place(self: Tensor, *args, **kwargs) -> Tensor:
        before, self._impl = self._impl, getattr(self, view)(*args, **kwargs)._impl
        _moved(self, before)
        return self

    in_place.__name__, in_place.__qualname__ = name, f"Tensor.{name}"
    in_place.__doc__ = f"self made its own {view}(...) view (same storage); returns self."
    return in_place


for _name, _view in IN_PLACE_VIEWS.items():
    setattr(Tensor, _name, _in_place_view(_name, _view))


def to_arguments(args: tuple, dtype, device, non_blocking: bool, copy: bool = False) -> tuple:
    """(dtype, device, non_blocking, copy) from to()'s positional arguments over its
    keywords, as torch parses them: a dtype, a device (or its name), a tensor for both, and
    after them up to two bools, non_blocking then copy (Tensor.to and nn.Module.to)."""
    flags = 0
    for arg in args:
        if isinstance(arg, bool):
            if flags == 2:
                raise TypeError("to() takes at most two bools: non_blocking and copy")
            non_blocking, copy = (arg, copy) if flags == 0 else (non_blocking, arg)
            flags += 1
        elif isinstance(arg, DType) or python_dtype(arg) is not None:
            dtype = as_dtype(arg)
        elif isinstance(arg, Tensor):
            dtype, device = arg.dtype, arg.device
        elif isinstance(arg, (str, Device)):
            device = arg
        else:
            raise TypeError(f"to() expects a dtype, a device or a tensor, got {type(arg).__name__}")
    return dtype, device, non_blocking, copy


def _storage_copy(storage: Storage) -> Storage:
    """A new storage on the same device holding storage's bytes, copied by a kernel."""
    out = Storage(storage.nbytes, storage.device)
    if storage.nbytes:
        size = (storage.nbytes,)
        eager.copy_into(
            TensorImpl(out, size, (1,), 0, dtypes.uint8, storage.device),
            TensorImpl(storage, size, (1,), 0, dtypes.uint8, storage.device),
        )
    return out


def _byte_view(storage: Storage, start: int, nbytes: int) -> np.ndarray:
    """nbytes of a host storage from byte `start`, as a NumPy uint8 array over them."""
    return interop.numpy_view(TensorImpl(storage, (nbytes,), (1,), start, dtypes.uint8, CPU))


def _unpickle(kind: type, data: bytes, dtype: str, shape: tuple, device: str) -> Tensor:
    """Tensor.__reduce_ex__'s inverse: a tensor of `kind` holding `data`'s elements (a
    pickle stream is outside data: its bytes must fill the shape exactly)."""
    if not (isinstance(kind, type) and issubclass(kind, Tensor)):
        raise TypeError(f"a pickled tensor names {kind!r}, which is no Tensor class")
    impl = empty_impl(tuple(shape), as_dtype(dtype), CPU)
    if len(data) != impl.nbytes():
        raise ValueError(
            f"a pickled tensor of shape {list(impl.shape)} and dtype {impl.dtype} needs "
            f"{impl.nbytes()} bytes, got {len(data)}"
        )
    _byte_view(impl.storage, 0, len(data))[:] = np.frombuffer(data, np.uint8)
    if device != "cpu":
        impl = transfer_impl(impl, parse_device(device))
    out = object.__new__(kind)
    Tensor.__init__(out, impl)
    return out


def _moved(t: Tensor, before: TensorImpl, rare: bool = False) -> None:
    """Handle t now shows other memory or another layout than `before`. Under a trace the
    plan cannot repeat that unless the trace made t's memory (Trace.moved). Compiled plans
    that read a module's tensors look again (tracestate.epoch) after a `rare` move (set_,
    resize_: a module's plain buffer too) or any move of an nn.Parameter; a plain tensor's
    in-place views (x.unsqueeze_(0) in a loop) leave them be, or every compiled model
    would trace again at every call."""
    trace = _trace_state.trace
    if trace is not None:
        trace.moved(before)
    if rare or type(t) is not Tensor:
        bump_epoch()
