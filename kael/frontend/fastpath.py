"""The eager fast door: a dense elementwise op served from one cache lookup.

An elementwise op whose tensor operands all have the result's shape and are dense (row-major,
no gaps; any offset) runs one rank-1 kernel whatever that shape is, so everything the full
door decides (dtype rules and refusals, layout planning, the specialized code, the argument
block) depends only on the op, the operands' dtypes and kinds and whether they are 0-d.
After the full door has run such a call once, `remember` keeps what it decided; a later call
with the same key then costs a lookup, an allocation, a patched copy of the argument block
and the kernel call (elementwise.py's `binary` and `unary` ask `binary`/`unary` here first).

Everything else takes the full door: broadcasting, strided views, `out=`, results that
would go to the thread pool or take streaming stores, kernels that can fault (integer
division), scalars the full door treats by value (ints beyond int64, pow's exponents),
tracing, and launches that are being recorded (KAEL_DEBUG, kael.explain).
"""

from __future__ import annotations

import array
from dataclasses import dataclass

from kael.frontend import eager
from kael.runtime import launches
from kael.runtime.allocator import allocator_for, block_capacity
from kael.runtime.convert import convert_scalar
from kael.runtime.device import CPU
from kael.runtime.dtypes import DType
from kael.runtime.launcher import PARALLEL_BYTES
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl, contiguous_strides, shape_numel
from kael.runtime.tracestate import state as _trace_state

# An int scalar inside this range converts the same way on both doors.
_INT_RANGE = range(-(2**63), 2**63)
_MAX_ENTRIES = 4096
_STRIDES_MAX = 1024


@dataclass(frozen=True, slots=True)
class _Entry:
    """A remembered launch: the rank-1 code, its argument block with the addresses and the
    size left 0, and what to patch per call."""

    fn: object
    block: array.array
    dtype: DType  # the result's
    buffers: int  # output, then each tensor operand: the first words
    itemsizes: tuple[int, ...]  # of each buffer
    limit: int  # the most elements a call may have to run here (inline, no streaming)
    scalar: tuple | None  # (word index, parameter dtype, conversion mode) of a number operand


_entries: dict[tuple, _Entry] = {}
Tensor = None  # kael.frontend.tensor.Tensor, bound by _bind (tensor.py imports what imports this)
_strides: dict[tuple, tuple] = {}
_allocator = allocator_for(CPU)


def _dense_strides(shape: tuple) -> tuple:
    """contiguous_strides(shape), memoized: asked on every fast call."""
    st = _strides.get(shape)
    if st is None:
        if len(_strides) >= _STRIDES_MAX:
            _strides.clear()
        st = _strides[shape] = contiguous_strides(shape)
    return st


def _bind() -> None:
    global Tensor
    from kael.frontend.tensor import Tensor


def _open() -> bool:
    """Whether this call may take the fast door: nothing traces or records launches."""
    if Tensor is None:
        _bind()
    return _trace_state.trace is None and not launches.watched()


def _tensor_key(t) -> tuple | None:
    """What the door's decisions see of a tensor operand, or None where it cannot serve it."""
    impl = t._impl
    if impl.device is not CPU or impl.strides != _dense_strides(impl.shape):
        return None
    return impl.dtype


def _number_key(x) -> type | None:
    kind = type(x)
    if kind is float or (kind is int and x in _INT_RANGE):
        return kind
    return None


def _binary_parts(name: str, a, b) -> tuple | None:
    """(key, shape, tensor operands, number operand) of a binary call whose operands could
    be served here (their own checks aside), or None."""
    ta, tb = type(a) is Tensor, type(b) is Tensor
    if ta and tb:
        shape = a._impl.shape
        if b._impl.shape != shape:
            return None
        return (name, _tensor_key(a), _tensor_key(b), not shape), shape, (a._impl, b._impl), None
    if ta:
        shape = a._impl.shape
        return (name, _tensor_key(a), _number_key(b), not shape), shape, (a._impl,), b
    if tb:
        shape = b._impl.shape
        return (name, _number_key(a), _tensor_key(b), not shape), shape, (b._impl,), a
    return None


def binary(name: str, a, b):
    """a (op) b through a remembered launch, or None (the caller takes the full door)."""
    if not _open():
        return None
    parts = _binary_parts(name, a, b)
    if parts is None:
        return None
    key, shape, operands, number = parts
    entry = _entries.get(key)
    return None if entry is None else _launch(entry, shape, operands, number)


def binary_key(name: str, a, b, shape: tuple) -> tuple | None:
    """The key to remember a full-door call of a (op) b with result `shape` under, or None
    where this door could never serve such a call."""
    if not _open():
        return None
    parts = _binary_parts(name, a, b)
    if parts is None or parts[1] != shape or None in parts[0]:
        return None
    return parts[0]


def unary(name: str, x):
    """op(x) through a remembered launch, or None."""
    if not _open() or type(x) is not Tensor:
        return None
    entry = _entries.get((name, _tensor_key(x)))
    return None if entry is None else _launch(entry, x._impl.shape, (x._impl,), None)


def unary_key(name: str, x) -> tuple | None:
    """The key to remember a full-door call of op(x) under, or None."""
    if not _open() or type(x) is not Tensor or _tensor_key(x) is None:
        return None
    return (name, _tensor_key(x))


def binary_(name: str, self, other):
    """self (op)= other through a remembered launch (self returned, its version moved), or
    None. `other` must not share self's storage in another place: the full door copies it."""
    if not _open() or type(self) is not Tensor:
        return None
    parts = _binary_parts(f"{name}_", self, other)
    if parts is None:
        return None
    key, shape, operands, number = parts
    entry = _entries.get(key)
    if entry is None:
        return None
    impl = self._impl
    shared = len(operands) == 2 and operands[1].storage is impl.storage
    if shared and operands[1].offset != impl.offset:
        return None
    if _launch(entry, shape, operands, number, impl) is None:
        return None
    impl.storage.version += 1
    return self


def _launch(entry: _Entry, shape: tuple, operands: tuple, number, into=None):
    """The remembered launch over `operands`, into a new dense tensor (returned) or into
    the dense impl `into`; None where the call is empty or too big for this door."""
    n = shape_numel(shape)
    if n == 0 or n > entry.limit:
        return None
    sizes = entry.itemsizes
    block = entry.block[:]
    if into is None:
        nbytes = n * sizes[0]
        storage = Storage.planned(nbytes, block_capacity(nbytes), _allocator, CPU)
        block[0] = storage.ptr
    else:
        block[0] = into.storage.ptr + into.offset * sizes[0]
    for i, impl in enumerate(operands, 1):
        block[i] = impl.storage.ptr + impl.offset * sizes[i]
    block[entry.buffers] = n
    if entry.scalar is not None:
        at, dtype, mode = entry.scalar
        block[at] = eager.param_word(convert_scalar(number, dtype, mode), dtype)
    entry.fn(block.buffer_info()[0], 0, n)
    if into is not None:
        return into
    impl = TensorImpl.of_tuples(storage, shape, _dense_strides(shape), 0, entry.dtype, CPU)
    return Tensor.trusted(impl)


def remember(key: tuple, template: eager.Template, dtypes: tuple, scalar: tuple | None) -> None:
    """Keep the launch of `template` for `key` (binary: (name, kind of a, kind of b, 0-d);
    unary: (name, dtype)): `dtypes` are the output's and each tensor operand's, `scalar`
    is (parameter name, conversion mode) of a number operand. Only for kernels that
    cannot fault; the full door has just run the call this key stands for."""
    if key in _entries or None in key or template.kernel.may_fault:
        return
    probe = 64  # elements: a rank-1 dense layout of any length specializes the same way
    impls = [TensorImpl(None, (probe,), (1,), 0, d, CPU) for d in dtypes]
    plan = eager._plan(template, impls[0], tuple(impls))
    if plan.compiled is None or plan.kernel.nontemporal or plan.kernel.rank != 1:
        return
    words = [0] * len(impls) + list(plan.tail)
    at = None
    kernel = template.kernel
    if scalar is not None:
        name, mode = scalar
        i = template.scalars.index(name)
        at = (len(words) + i, kernel.params[i], mode)
    words += [0] * len(kernel.params)
    itemsizes = tuple(d.itemsize for d in dtypes)
    limit = min(PARALLEL_BYTES, eager.NONTEMPORAL_BYTES) // sum(itemsizes) - 1
    entry = _Entry(plan.compiled.fn, array.array("q", words), dtypes[0], len(impls),
                   itemsizes, limit, at)  # fmt: skip
    if len(_entries) >= _MAX_ENTRIES:
        _entries.clear()
    _entries[key] = entry
