"""The eager fast door: a dense elementwise op served from one cache lookup.

An elementwise op whose tensor operands all have the result's shape and are dense (row-major,
no gaps; any offset) runs one rank-1 kernel whatever that shape is, so everything the full
door decides (dtype rules and refusals, layout planning, the specialized code, the argument
block) depends only on the op, the operands' dtypes and kinds and whether they are 0-d.
After the full door has run such a call once, `remember` keeps what it decided; a later call
with the same key then costs a lookup, an allocation, a patched copy of the argument block
and the kernel call (elementwise.py's `binary` and `unary` ask `binary`/`unary` here first).

A 0-d tensor operand (`v / v.sum()`) is served too, read with stride 0 at every element.
Launches that move 1 MiB or more go to the thread pool as the full door's would. An `out=`
tensor that is dense, of the result's shape and dtype and shares no operand's memory
elsewhere takes the remembered launch too (`binary_out`, `unary_out`). Everything
else takes the full door: other broadcasting, strided views, other outs, results big enough
for streaming stores, kernels that can fault (integer
division), scalars the full door treats by value (ints beyond int64, pow's exponents), an
in-place write whose operand sits elsewhere in self's storage, tracing, and launches that
are being recorded (KAEL_DEBUG, kael.explain). Factories fill through `fill`; arange of
Python ints remembers its one launch on first use (`arange`).

Reductions, the row kernels and the hand-written one-launch ops (`keyed`, wrapping sum,
mean, amax, max/min(x, dim), ..., softmax, log_softmax, logsumexp, cumsum, cumprod,
logcumsumexp, sort, argsort, topk, gather, index_select and F.embedding) are keyed by their
public arguments, tensor arguments by dtype, shape and strides (a reduction's layout plan
depends on the shape): the full door's one launch is captured as it runs (`capture`,
`capture_rows`, `capture_launch`) and replayed into fresh storages, the results (a pair
of them included) viewing them as the full door's did. A kernel that checks its indices
reports a bad one in an error word; the replay then hands the call to the full door,
which raises. Only ops whose outputs that one launch completes are keyed: a launch the
op makes first (a conversion, a copy) is seen, as the captured launch then reads no
argument of the door, but one made after it would not be.
Matrix products (`matmul`) are keyed by both operands' dtype, shape and strides and
replay the gemm plan the full door ran (gemm_run.run: packing buffers, threads).
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import threading
from dataclasses import dataclass

from kael.codegen.cpu import gemm_run, native_launch
from kael.frontend import eager
from kael.frontend.keywords import torch_keywords
from kael.runtime import debug, launches, threadpool
from kael.runtime.convert import CHECKED, REFUSE, convert_scalar
from kael.runtime.device import CPU
from kael.runtime.dtypes import DType, bfloat16, int64, on_default_dtype_change
from kael.runtime.launcher import (
    PARALLEL_BYTES,
    PROMOTE_BYTES,
    count_launch,
    replayable,
    run_pooled,
    runs_inline,
)
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl, contiguous_strides, read_hazard, shape_numel
from kael.runtime.threadpool import get_num_threads
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
    dtype: DType  # the result's
    buffers: int  # output, then each tensor operand: the first words
    itemsizes: tuple[int, ...]  # of each buffer
    limit: int  # the most elements a call may have here (below streaming stores' size)
    width: int  # bytes a call moves per element: sum(itemsizes)
    # (word index, parameter dtype, conversion mode) of each number operand
    scalars: tuple[tuple, ...]
    # the argument block with the addresses and the size left 0, and the words a call
    # supplies: each buffer's address, the size, the number's word (native_launch.py)
    native: native_launch.Descriptor


_entries: dict[tuple, _Entry] = {}
_native = None  # native_launch.launcher(), bound by `bind`
_BROADCAST = {"a0": 1, "b0": 2}  # a binary key's 0-d operand: its buffer, after the output
Tensor = None  # kael.frontend.tensor.Tensor, bound by ops.py through `bind`
# The exact types this door serves as tensors: Tensor, and subclasses that change no op
# (kael.nn.Parameter registers itself), so a layer's weights take the fast door too.
PLAIN: set[type] = set()
_strides: dict[tuple, tuple] = {}
_numels: dict[tuple, int] = {}  # beside _strides: each shape's element count


def _dense_strides(shape: tuple) -> tuple:
    """contiguous_strides(shape), memoized: asked on every fast call."""
    st = _strides.get(shape)
    if st is None:
        if len(_strides) >= _STRIDES_MAX:
            _strides.clear()
            _numels.clear()
        st = _strides[shape] = contiguous_strides(shape)
        _numels[shape] = shape_numel(shape)
    return st


dense_strides = _dense_strides  # for other doors' density checks


def bind(tensor_class) -> None:
    """Name the Tensor class (ops.py, at import: tensor.py imports what imports this) and
    the launch builtin every remembered launch goes through."""
    global Tensor, _native
    Tensor = tensor_class
    PLAIN.add(tensor_class)
    _native = native_launch.launcher()


def _open() -> bool:
    """Whether this call may take the fast door: nothing traces or records launches."""
    # launches.watched(), inlined: this runs before every fast call (ops.py binds Tensor)
    return _trace_state.trace is None and launches.recorder is None and debug.level < 1


def _tensor_key(t) -> tuple | None:
    """What the door's decisions see of a tensor operand, or None where it cannot serve it."""
    impl = t._impl
    dense = _strides.get(impl.shape)  # _dense_strides, inlined for shapes seen before
    if dense is None:
        dense = _dense_strides(impl.shape)
    return impl.dtype if impl.strides == dense and impl.device is CPU else None


def number_key(x) -> type | None:
    """A number operand's type where the door serves it (a float, an int within int64)."""
    kind = type(x)
    if kind is float or (kind is int and x in _INT_RANGE):
        return kind
    return None


# Ops whose kernel depends on the value of a number right operand, not only its type: the
# op's name -> what of that value the key holds (elementwise.py registers pow's exponent).
value_keys: dict = {}


def _right_number_key(name: str, x):
    judge = value_keys.get(name)
    return number_key(x) if judge is None else judge(x)


def _binary_parts(name: str, a, b) -> tuple | None:
    """(key, shape, tensor operands, number operand) of a binary call whose operands could
    be served here (their own checks aside), or None."""
    ta, tb = type(a) in PLAIN, type(b) in PLAIN
    if ta and tb:
        ai, bi = a._impl, b._impl
        shape = ai.shape
        if bi.shape == shape:
            zero_d = not shape
        elif not bi.shape:  # v / v.sum(): the 0-d operand is read at every element
            zero_d = "b0"
        elif not shape:
            zero_d, shape = "a0", bi.shape
        else:
            return None
        return (name, _tensor_key(a), _tensor_key(b), zero_d), shape, (ai, bi), None
    if ta:
        shape = a._impl.shape
        return (name, _tensor_key(a), _right_number_key(name, b), not shape), shape, (a._impl,), b
    if tb:
        shape = b._impl.shape
        return (name, number_key(a), _tensor_key(b), not shape), shape, (b._impl,), a
    return None


def _shaped_parts(name: str, a, b) -> tuple | None:
    """(key, tensor operands, number operand) of a binary call on CPU tensors of any layout
    (broadcast, strided), keyed by every operand's exact layout; or None."""
    ta, tb = type(a) in PLAIN, type(b) in PLAIN
    if ta and tb:
        ai, bi = a._impl, b._impl
        if ai.device is not CPU or bi.device is not CPU:
            return None
        key = (SHAPED, name, ai.dtype, ai.shape, ai.strides, bi.dtype, bi.shape, bi.strides)
        return key, (ai, bi), None
    if ta:
        ai = a._impl
        if ai.device is not CPU:
            return None
        key = (SHAPED, name, ai.dtype, ai.shape, ai.strides, _right_number_key(name, b))
        return key, (ai,), b
    if tb:
        bi = b._impl
        if bi.device is not CPU:
            return None
        return (SHAPED, name, number_key(a), bi.dtype, bi.shape, bi.strides), (bi,), a
    return None


def binary(name: str, a, b):
    """a (op) b through a remembered launch, or None (the caller takes the full door)."""
    # _open(), inlined: every binary operator asks
    if _trace_state.trace is not None or launches.recorder is not None or debug.level >= 1:
        return None
    # the common calls first: dense tensors of one shape, a dense tensor and a number
    ta, tb = type(a) in PLAIN, type(b) in PLAIN
    if ta and tb:
        ai, bi = a._impl, b._impl
        shape = ai.shape
        dense = _strides.get(shape)
        if ai.strides == dense and ai.device is CPU and bi.device is CPU:
            if bi.shape == shape and bi.strides == dense:
                entry = _entries.get((name, ai.dtype, bi.dtype, not shape))
                return None if entry is None else _launch(entry, shape, (ai, bi), None)
            if not bi.shape and shape:  # v / v.sum(): the 0-d operand read at every element
                entry = _entries.get((name, ai.dtype, bi.dtype, "b0"))
                return None if entry is None else _launch(entry, shape, (ai, bi), None)
    elif ta or tb:
        impl, number = (a._impl, b) if ta else (b._impl, a)
        kind = type(number)
        shape = impl.shape
        if (
            (kind is float or kind is int and number in _INT_RANGE)
            and impl.strides == _strides.get(shape)
            and impl.device is CPU
            and (tb or name not in value_keys)
        ):
            key = (name, impl.dtype, kind, not shape) if ta else (name, kind, impl.dtype, not shape)
            entry = _entries.get(key)
            return None if entry is None else _launch(entry, shape, (impl,), number)
    parts = _binary_parts(name, a, b)
    if parts is not None:
        key, shape, operands, number = parts
        entry = _entries.get(key)
        if entry is not None:
            return _launch(entry, shape, operands, number)
        if None not in key:  # a dense call the door has not seen: not a shaped one either
            return None
    parts = _shaped_parts(name, a, b)
    if parts is None:
        return None
    key, operands, number = parts
    entry = _shaped.get(key)
    return None if entry is None else _launch_shaped(entry, operands, number)


def _into(out, entry: _Entry | None, shape: tuple, operands: tuple) -> TensorImpl | None:
    """out's impl where a remembered launch may write the result into it: a dense CPU
    tensor of the result's shape and dtype that shares no operand's memory elsewhere
    (the full door judges the rest, and raises its errors)."""
    if entry is None or not dense_out(out):
        return None
    impl = out._impl
    if impl.shape != shape or impl.dtype is not entry.dtype:
        return None
    for t in operands:
        if not _apart(t.storage, impl.storage) and read_hazard(t, impl):
            return None
    return impl


def _apart(a: Storage, b: Storage) -> bool:
    """Whether two host storages share no byte: read_hazard's common answer, asked first."""
    return a is not b and (a.ptr >= b.ptr + b.nbytes or b.ptr >= a.ptr + a.nbytes)


def binary_out(name: str, a, b, out):
    """a (op) b written into `out` through a remembered launch (out returned), or None."""
    if not _open():
        return None
    parts = _binary_parts(name, a, b)
    if parts is None:
        return None
    key, shape, operands, number = parts
    entry = _entries.get(key)
    impl = _into(out, entry, shape, operands)
    if impl is None or _launch(entry, shape, operands, number, impl) is None:
        return None
    return out


def unary_out(name: str, x, out):
    """op(x) written into `out` through a remembered launch (out returned), or None."""
    if not _open() or type(x) not in PLAIN:
        return None
    dtype = _tensor_key(x)
    entry = _entries.get((name, dtype)) if dtype is not None else None
    impl = _into(out, entry, x._impl.shape, (x._impl,))
    if impl is None or _launch(entry, impl.shape, (x._impl,), None, impl) is None:
        return None
    return out


def dense_out(out) -> bool:
    """Whether an out= tensor is dense on the CPU: a call into it may be remembered for
    later calls, which make dense results."""
    return type(out) in PLAIN and _tensor_key(out) is not None


def binary_key(name: str, a, b, shape: tuple) -> tuple | None:
    """The key to remember a full-door call of a (op) b with result `shape` under (a dense
    one where it serves every size, else the operands' exact layouts), or None where this
    door could never serve such a call."""
    if not _open():
        return None
    parts = _binary_parts(name, a, b)
    if parts is not None and parts[1] == shape and None not in parts[0]:
        return parts[0]
    parts = _shaped_parts(name, a, b)
    return None if parts is None or None in parts[0] else parts[0]


def unary(name: str, x):
    """op(x) through a remembered launch, or None."""
    if not _open() or type(x) not in PLAIN:
        return None
    impl = x._impl
    dtype = _tensor_key(x)
    if dtype is not None:
        entry = _entries.get((name, dtype))
        return None if entry is None else _launch(entry, impl.shape, (impl,), None)
    if impl.device is not CPU:  # a CPU layout's launch must never run on device memory
        return None
    entry = _shaped.get((SHAPED, name, impl.dtype, impl.shape, impl.strides))
    return None if entry is None else _launch_shaped(entry, (impl,), None)


def unary_first(name: str, slow, takes_out: bool = False):
    """The unary function or method `slow` (kael.exp(x), x.exp(), -x, F.relu(x)), asking
    this door first when called with the tensor alone, or (`takes_out`: a function whose
    signature has out=) with out= alone (inplace= and the rest are `slow`'s to judge, and
    an out= it does not take is its error to raise)."""

    @functools.wraps(slow)
    def fast(input, *args, **kwargs):  # `input`, as torch names it: kael.exp(input=x)
        if not args:
            if not kwargs:
                done = unary(name, input)
            elif takes_out and len(kwargs) == 1:  # exp(a, out=o): 2.5 -> 1.35 us
                out = kwargs.get("out")
                done = None if out is None else unary_out(name, input, out)
            else:
                done = None
            if done is not None:
                return done
        return slow(input, *args, **kwargs)

    return fast


def unary_key(name: str, x) -> tuple | None:
    """The key to remember a full-door call of op(x) under, or None."""
    if not _open() or type(x) not in PLAIN:
        return None
    dtype = _tensor_key(x)
    if dtype is not None:
        return (name, dtype)
    impl = x._impl
    if impl.device is not CPU:
        return None
    return (SHAPED, name, impl.dtype, impl.shape, impl.strides)


def binary_(name: str, self, other):
    """self (op)= other through a remembered launch (self returned, its version moved), or
    None; `name` is the in-place op's ("sub_"). `other` must not share self's storage in
    another place: the full door copies it."""
    # _open(), inlined: every in-place operator asks
    if _trace_state.trace is not None or launches.recorder is not None or debug.level >= 1:
        return None
    if type(self) not in PLAIN:
        return None
    impl = self._impl
    if type(other) in PLAIN:  # the common call first: dense tensors of one shape
        oi = other._impl
        shape = impl.shape
        dense = _strides.get(shape)
        if (
            oi.shape == shape
            and impl.strides == dense
            and oi.strides == dense
            and impl.device is CPU
            and oi.device is CPU
            and (_apart(oi.storage, impl.storage) or not read_hazard(oi, impl))
        ):
            entry = _entries.get((name, impl.dtype, oi.dtype, not shape))
            if entry is None or _launch(entry, shape, (impl, oi), None, impl) is None:
                return None
            impl.storage.version += 1
            return self
    parts = _binary_parts(name, self, other)
    entry = None
    if parts is not None:
        key, shape, operands, number = parts
        entry = _entries.get(key)
        if entry is None and None not in key:
            return None
    if entry is None:
        parts = _shaped_parts(name, self, other)
        if parts is None:
            return None
        key, operands, number = parts
        entry = _shaped.get(key)
        if entry is None:
            return None
    impl = self._impl
    other = operands[1] if len(operands) == 2 else None
    # other sharing self's memory elsewhere (a shifted twin storage, or a 0-d view of self's
    # first element: A /= A[0]) would be read after the kernel wrote it: the full door
    # copies it first
    if other is not None and read_hazard(other, impl):
        return None
    if type(entry) is _Shaped:
        _launch_shaped(entry, operands, number, impl)
    elif _launch(entry, shape, operands, number, impl) is None:
        return None
    impl.storage.version += 1
    return self


def _dense_parts(tensors: tuple, numbers: tuple) -> tuple | None:
    """((tensor dtypes, number kinds) or None, shape, each tensor's element 0) of an op over
    dense CPU tensors of one shape and numbers this door converts, or None."""
    first = tensors[0]
    if type(first) not in PLAIN:
        return None
    shape = first._impl.shape
    dense = _strides.get(shape)
    if dense is None:
        dense = _dense_strides(shape)
    addresses, dtypes = [], []
    for t in tensors:
        if type(t) not in PLAIN:
            return None
        impl = t._impl
        if impl.shape != shape or impl.strides != dense or impl.device is not CPU:
            return None
        dtype = impl.dtype
        addresses.append(impl.storage.ptr + impl.offset * dtype.itemsize)
        dtypes.append(dtype)
    kinds = tuple(map(number_key, numbers)) if numbers else ()
    return (None if None in kinds else (tuple(dtypes), kinds)), shape, addresses


def dense(name: str, tensors: tuple, numbers: tuple = ()):
    """op `name` (clamp, where, masked_fill, ...) of dense CPU tensors of one shape and
    numbers (floats, ints within int64) through a remembered launch, or None. Its key
    holds the tensors' dtypes and the numbers' types: the caller's name says what else
    (which bounds are given) decides the kernel."""
    if _trace_state.trace is not None or launches.recorder is not None or debug.level >= 1:
        return None
    parts = _dense_parts(tensors, numbers)
    if parts is None or parts[0] is None:
        return None
    kinds, shape, addresses = parts
    entry = _entries.get((name, *kinds, not shape))
    return None if entry is None else _launch_dense(entry, shape, addresses, numbers)


def dense_key(name: str, tensors: tuple, numbers: tuple = ()) -> tuple | None:
    """The key to remember a full-door call of `dense`'s form under (its result a fresh
    dense tensor of the operands' shape), or None where this door could never serve it."""
    if not _open():
        return None
    parts = _dense_parts(tensors, numbers)
    if parts is None or parts[0] is None:
        return None
    kinds, shape, _ = parts
    return (name, *kinds, not shape)


def _launch_dense(entry: _Entry, shape: tuple, addresses: list, numbers: tuple):
    """The remembered launch of `dense` over the operands at `addresses` into a new dense
    tensor; None where the call is empty or too big for this door."""
    n = _numels.get(shape)
    if n is None:
        n = shape_numel(shape)
    if n == 0 or n > entry.limit:
        return None
    if _capturing:  # as in _launch
        _inside_a_capture()
    storage = Storage.host(n * entry.itemsizes[0])
    words = [storage.ptr, *addresses, n]
    words += [_number_word(number, spec) for number, spec in zip(numbers, entry.scalars)]
    moved = n * entry.width
    if moved < PROMOTE_BYTES or runs_inline(entry.fn, moved):
        _native(entry.native.address, n, *words)
    else:
        run_pooled(entry.fn, entry.native.block(words), n)
    strides = _strides.get(shape)
    if strides is None:  # the memo was cleared since the caller's lookup
        strides = _dense_strides(shape)
    return _result(storage, shape, strides, entry.dtype)


def cast(x, dtype: DType):
    """x converted to `dtype` as a new dense tensor through a remembered converting copy
    (remembered here on first use), or None where the full door must convert it (a view, a
    device, complex parts)."""
    if not _open() or type(x) not in PLAIN:
        return None
    impl = x._impl
    if impl.dtype is dtype:
        return None
    return _copy(impl, dtype)


def copy(x):
    """A new tensor holding x's elements in x's own layout where that is dense row-major
    (clone), through a remembered copy; None where the full door must copy it (a view, a
    device, complex parts, bfloat16, whose copies move bits as int16)."""
    if not _open() or type(x) not in PLAIN:
        return None
    impl = x._impl
    return None if impl.dtype is bfloat16 else _copy(impl, impl.dtype)


def converted(impl: TensorImpl, dtype: DType):
    """A new dense tensor of the dense host impl's elements converted to another dtype
    (kael.tensor's packed buffer), through the remembered converting copy; None where the
    full door must convert it."""
    return _copy(impl, dtype) if _open() and impl.dtype is not dtype else None


def _copy(impl, dtype: DType):
    """The dense host impl's elements converted to `dtype` through the converting copy
    remembered for the pair (here on first use), or None."""
    src = impl.dtype
    if impl.device is not CPU or src.llvm is None or dtype.llvm is None:
        return None
    shape = impl.shape
    dense = _strides.get(shape)
    if dense is None:
        dense = _dense_strides(shape)
    if impl.strides != dense:
        return None
    key = (("to", dtype), src)
    entry = _entries.get(key)
    if entry is None:
        remember(key, eager.copy_template(src, dtype), (dtype, src))
        entry = _entries.get(key)
        if entry is None:
            return None
    return _launch(entry, shape, (impl,), None)


def contiguous(x):
    """A row-major copy of the strided host tensor x through the copy remembered for its
    exact layout (remember_contiguous), or None."""
    if not _open() or type(x) not in PLAIN:
        return None
    return contiguous_impl(x._impl)


def contiguous_impl(impl: TensorImpl):
    """contiguous of an impl (a kernel-only view too: flip's negative strides), or None."""
    if not _open() or impl.device is not CPU:
        return None
    entry = _shaped.get((SHAPED, "copy", impl.dtype, impl.shape, impl.strides))
    return None if entry is None else _launch_shaped(entry, (impl,), None)


def _by_element(out: TensorImpl, src: TensorImpl) -> bool:
    """Whether the full door's copy of src into out (host impls of one shape) is the
    element-by-element copy kernel a remembered launch repeats: not complex parts, not
    bfloat16 (moved as int16 bits), not a row of small inner dims moved as one word
    (eager.as_words)."""
    kinds = (out.dtype, src.dtype)
    if not _open() or out.device is not CPU or src.device is not CPU or bfloat16 in kinds:
        return False
    if out.dtype.llvm is None or src.dtype.llvm is None or src.shape != out.shape:
        return False
    return out.dtype is not src.dtype or eager.as_words(out, src) is None


def remember_contiguous(out: TensorImpl, src: TensorImpl) -> None:
    """Keep the full door's row-major copy `out` of the strided host `src` for its layout,
    where the full door copies element by element (_by_element)."""
    if _by_element(out, src):
        key = (SHAPED, "copy", src.dtype, src.shape, src.strides)
        _remember_shaped(key, eager.copy_template(src.dtype, src.dtype), out, (src,), None)


def copy_into(dst, src) -> bool:
    """dst.copy_(src) of a source of dst's shape in another host storage, through the copy
    remembered for the pair of layouts (remember_copy_into); False where the full door
    must copy it."""
    if not _open() or type(src) not in PLAIN:
        return False
    return copy_impl(dst._impl, src._impl)


def copy_impl(out: TensorImpl, impl: TensorImpl) -> bool:
    """copy_into of impls (kernel-level views, an op's own buffers): out[...] = impl through
    the copy remembered for their layouts; False where the caller must copy it (eager's
    copy_into, then remember_copy_into)."""
    if not _open() or impl.shape != out.shape or out.device is not CPU or impl.device is not CPU:
        return False
    key = (SHAPED, "copy_", out.dtype, impl.dtype, out.shape, out.strides, impl.strides)
    entry = _shaped.get(key)
    if entry is None or not _apart(out.storage, impl.storage):
        return False
    _launch_shaped(entry, (impl,), None, out)
    return True


def remember_copy_into(out: TensorImpl, src: TensorImpl) -> None:
    """Keep the full door's copy of `src` into `out` (one shape, two host storages) for
    their layouts, where the full door copies element by element (_by_element); `out`'s
    layout was checked to have no element twice."""
    if _by_element(out, src) and _apart(out.storage, src.storage):
        key = (SHAPED, "copy_", out.dtype, src.dtype, out.shape, out.strides, src.strides)
        _remember_shaped(key, eager.copy_template(src.dtype, out.dtype), out, (src,), None)


def typed_key(values: tuple) -> tuple | None:
    """Arguments as a door's key: each by its exact type and value, a tuple's items too, a
    float by its bits (True, 1 and 1.0 are one key to ==, and -0.0 and 0.0, but not one
    argument to the full door), None where one is not an int, float, bool, str, None or a
    tuple of those numbers."""
    key = []
    for v in values:
        kind = type(v)
        if kind is float:
            key.append((kind, v.hex()))
        elif kind in (int, bool, str, type(None)):
            key.append((kind, v))
        elif kind is tuple:
            items = typed_key(v)
            if items is None or any(type(e) not in (int, float, bool) for e in v):
                return None
            key.append((kind, items))
        else:
            return None
    return tuple(key)


def tensor_key(input, arguments: tuple, *head) -> tuple | None:
    """An op door's key of a call on one plain host tensor with plain arguments: `head`,
    the tensor's dtype and layout, then the arguments by type (typed_key); None where the
    full door must take the call (a trace, a recorder, another device, other arguments)."""
    if type(input) not in PLAIN or not _open():
        return None
    typed = typed_key(arguments)
    x = input._impl
    if typed is None or x.device is not CPU:
        return None
    return (*head, x.dtype, x.shape, x.strides, typed)


def inline_launch(template: eager.Template, out, ins, patched: tuple, fixed: dict):
    """(native descriptor, work items, kernel) of the full door's launch of `template` over
    the host impls `out` and `ins`, the words a call supplies being each buffer's address
    (output first), then the parameters named in `patched`, in that order (the others at
    their `fixed` values), for a door replaying it by addresses; None where the kernel can
    fault, the launch needs the pool or its block is too large to describe."""
    impls = (out, *ins)
    if out.numel() == 0:  # nothing to launch (and no empty host storage to make)
        return None
    plan = eager._plan(template, out, impls)
    if plan.compiled is None or plan.faults or not replayable(plan.compiled.fn, plan.moved):
        return None
    words = [0] * len(impls) + list(plan.tail)
    first = len(words)
    words += _fixed_words(template, fixed)
    at = tuple(first + template.scalars.index(name) for name in patched)
    per_item = plan.moved // max(1, plan.total)
    fn = plan.compiled.fn
    native = native_launch.describe(fn, words, (*range(len(impls)), *at), per_item)
    return None if native is None else (native, plan.total, fn)


def inline_copy(dtype: DType, shape: tuple, out_strides: tuple, src_strides: tuple):
    """(native descriptor, work items) of the copy remembered for these layouts (one
    dtype) where it runs on the calling thread, for a door replaying it by addresses (the
    output's, then the source's; the door holds the descriptor: this memo may be cleared);
    None where none is remembered or it needs the pool."""
    entry = _shaped.get((SHAPED, "copy_", dtype, dtype, shape, out_strides, src_strides))
    if entry is None or not replayable(entry.fn, entry.moved):
        return None
    return entry.native, entry.total


def copy_remembered(out: TensorImpl, src: TensorImpl) -> None:
    """out[...] = src (an op's own buffer from another storage, one shape): the copy
    remembered for their layouts, else eager's, then remembered (roll's blocks,
    attention's transposed keys)."""
    if not copy_impl(out, src):
        eager.copy_into(out, src)
        remember_copy_into(out, src)


def fill(impl, value) -> bool:
    """Set every element of the dense CPU impl to the number `value` through a remembered
    fill launch (remembered here on first use); False where the full door must run it
    (a complex impl: eager.fill fills its parts)."""
    if not _open() or impl.device is not CPU or impl.strides != _dense_strides(impl.shape):
        return False
    if impl.dtype.llvm is None:
        return False
    found = _fill_launch(impl.dtype, value)
    return (
        found is not None and _launch(found[0], impl.shape, (), value, impl, found[1]) is not None
    )


def full(shape: tuple, dtype: DType, value):
    """A new dense host tensor of a checked `shape` with every element the number `value`,
    through a remembered fill launch; None where the full door must make it."""
    if not _open() or dtype.llvm is None:
        return None
    kind = type(value)
    if kind is not float:  # zeros, ones: everything but the allocation worked out once
        made = _filled.get((shape, dtype, kind, value))
        if made is not None:
            if _capturing:  # as in _launch
                _inside_a_capture()
            native, n, nbytes, word, strides = made
            storage = Storage.host(nbytes)
            _native(native.address, n, storage.ptr, n, word)
            return _result(storage, shape, strides, dtype)
    found = _fill_launch(dtype, value)
    if found is None:
        return None
    result = _launch(found[0], shape, (), value, None, found[1])
    if result is not None and kind is not float and len(_filled) < 1024:
        entry, word = found
        n = result._impl.storage.nbytes // dtype.itemsize
        if n * dtype.itemsize < PARALLEL_BYTES:  # inline: the launch above ran so
            key = (shape, dtype, kind, value)
            _filled[key] = (entry.native, n, n * dtype.itemsize, word, _dense_strides(shape))
    return result


# (shape, dtype, int or bool, value) -> (the fill's Descriptor, elements, bytes, the value's
# word, strides): a small factory's whole launch but the allocation (floats are not kept:
# -0.0 == 0.0 as a key)
_filled: dict[tuple, tuple] = {}


_ARANGE = ("arange", int64)


def arange(count: int, start: int, step: int):
    """A new int64 host tensor of start + i * step for i < count (Python ints whose values
    int64 holds, count > 0), through the arange launch remembered on first use; None where
    the full door must make it (arange(100): 7.0 -> 2.5 us, torch 1.6)."""
    if not _open() or start not in _INT_RANGE or step not in _INT_RANGE:
        return None
    entry = _entries.get(_ARANGE)
    if entry is None:
        scalars = (("start", REFUSE), ("step", REFUSE))
        remember(_ARANGE, eager.arange_template(int64), (int64,), scalars)
        entry = _entries.get(_ARANGE)
        if entry is None:
            return None
    nbytes = count * 8
    if count > entry.limit or nbytes >= PROMOTE_BYTES and not runs_inline(entry.fn, nbytes):
        return None  # the pool's launches: the full door's
    if _capturing:  # as in _launch
        _inside_a_capture()
    storage = Storage.host(nbytes)
    _native(entry.native.address, count, storage.ptr, count, start, step)  # int64 words
    return _result(storage, (count,), (1,), int64)


def inline_fill(dtype: DType, value, n: int) -> tuple | None:
    """(native descriptor, the value's word) of the fill of n `dtype` elements with the
    number `value`, for a door replaying it by the output's address (its words: the
    address, n, the value's word); None where the full door judges the value or n
    elements need the pool."""
    if not 0 < n * dtype.itemsize < PARALLEL_BYTES or dtype.llvm is None:
        return None
    found = _fill_launch(dtype, value)
    if found is None:
        return None
    entry, word = found
    return entry.native, _number_word(value, entry.scalars[0]) if word is None else word


def _fill_launch(dtype: DType, value) -> tuple | None:
    """(the fill entry of `dtype`, value's word or None for a float) or None where the
    value is judged by the full door (a kind it converts apart, an int beyond int64)."""
    kind = type(value)
    if kind is int and value not in _INT_RANGE or kind not in (int, float, bool):
        return None
    key = ("fill", dtype, kind)
    entry = _entries.get(key)
    if entry is None:
        remember(key, eager.fill_template(dtype), (dtype,), (("value", CHECKED),))
        entry = _entries.get(key)
        if entry is None:
            return None
    # a float's word is found per call (_launch): its key could not tell -0.0 from 0.0
    return entry, None if kind is float else _number_word(value, entry.scalars[0])


def _number_word(number, scalar: tuple) -> int:
    """The argument word of a number operand, converted as `scalar` (word index, dtype,
    mode) says. The last one is kept by identity: a loop's learning rate or constant is one
    float object call after call (and -0.0 and 0.0 are two), so it converts once."""
    global _last_word
    seen, how, word = _last_word
    if number is seen and how is scalar:
        return word
    kind = type(number)
    keyed = number or kind is not float  # a float key equal to 0 serves 0.0 and -0.0 alike
    word = _words.get((kind, number, scalar)) if keyed else None
    if word is None:
        _, dtype, mode = scalar
        word = eager.param_word(convert_scalar(number, dtype, mode), dtype)
        if keyed:
            if len(_words) >= 1024:
                _words.clear()
            _words[kind, number, scalar] = word
    _last_word = (number, scalar, word)  # one tuple: threads see it whole
    return word


_last_word: tuple = (None, None, 0)
# (type, number, how it converts) -> its word: a call's several numbers (clamp's bounds) and
# fills (zeros, ones) convert once each. NaN is no key (NaN != NaN): it converts each time.
_words: dict[tuple, int] = {}


def _launch(entry: _Entry, shape: tuple, operands: tuple, number, into=None, word=None):
    """The remembered launch over `operands`, into a new dense tensor (returned) or into
    the dense impl `into`; None where the call is empty or too big for this door."""
    n = _numels.get(shape)
    if n is None:
        n = shape_numel(shape)
    if n == 0 or n > entry.limit:
        return None
    if _capturing:  # a launch no capture sees: the capturing door (if this thread's) keeps
        _inside_a_capture()  # nothing, as a replay would leave it out
    sizes = entry.itemsizes
    if into is None:
        storage = Storage.host(n * sizes[0])
        out = storage.ptr
    else:
        out = into.storage.ptr + into.offset * sizes[0]
    if entry.scalars and word is None:
        spec = entry.scalars[0]
        seen, how, word = _last_word  # _number_word's memo, inlined
        if number is not seen or how is not spec:
            word = _number_word(number, spec)
    moved = n * entry.width
    if moved < PROMOTE_BYTES or runs_inline(entry.fn, moved):
        at = entry.native.address
        if len(operands) == 2:
            a, b = operands
            _native(at, n, out, a.storage.ptr + a.offset * sizes[1],
                    b.storage.ptr + b.offset * sizes[2], n)  # fmt: skip
        elif not operands:
            _native(at, n, out, n, word)
        else:
            a = operands[0]
            if word is None:
                _native(at, n, out, a.storage.ptr + a.offset * sizes[1], n)
            else:
                _native(at, n, out, a.storage.ptr + a.offset * sizes[1], n, word)
    else:
        words = [out, *_addresses(operands, sizes), n] + ([] if word is None else [word])
        run_pooled(entry.fn, entry.native.block(words), n)
    if into is not None:
        return into
    strides = _strides.get(shape)
    if strides is None:  # the memo was cleared since the caller's lookup
        strides = _dense_strides(shape)
    impl = _new(TensorImpl)  # _result, inlined: every fast op's result is made here
    impl.storage, impl.shape, impl.strides = storage, shape, strides
    impl.offset, impl.dtype, impl.device = 0, entry.dtype, CPU
    t = _new(Tensor)
    t._impl = impl
    return t


def _addresses(operands: tuple, sizes: tuple) -> list[int]:
    """Each operand's element 0 (sizes[0] is the output's itemsize)."""
    return [impl.storage.ptr + impl.offset * size for impl, size in zip(operands, sizes[1:])]


def new_tensor(storage: Storage, shape: tuple, dtype: DType):
    """A dense Tensor of a checked `shape` over a fresh host storage of its bytes."""
    return _result(storage, shape, _dense_strides(shape), dtype)


def _result(storage: Storage, shape: tuple, strides: tuple, dtype: DType, offset: int = 0):
    """A Tensor over a fresh host storage in a layout this door made (valid by making)."""
    impl = _new(TensorImpl)  # TensorImpl.of_tuples and Tensor.trusted, without their frames
    impl.storage, impl.shape, impl.strides = storage, shape, strides
    impl.offset, impl.dtype, impl.device = offset, dtype, CPU
    t = _new(Tensor)
    t._impl = impl
    return t


_new = object.__new__


@dataclass(frozen=True, slots=True)
class _Shaped:
    """A remembered launch over operands of one exact layout each (broadcast, strided): the
    full door's argument block with the addresses left 0, and its launch."""

    native: native_launch.Descriptor  # words: the output's address, each operand's, the number's
    fn: object
    shape: tuple  # a fresh result's, with its strides, dtype and bytes
    strides: tuple
    dtype: DType
    nbytes: int
    itemsizes: tuple[int, ...]  # of the output and each tensor operand
    total: int  # work items
    moved: int  # bytes read and written
    align: int
    scalar: tuple | None  # (word index, parameter dtype, conversion mode) of a number operand


_shaped: dict[tuple, _Shaped] = {}


class _ShapedKey:
    """The first item of a key by exact layouts (no op name can equal it)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "SHAPED"


SHAPED = _ShapedKey()


def _launch_shaped(entry: _Shaped, operands: tuple, number, into=None):
    """The remembered launch over `operands`, into a new tensor (returned) or into `into`."""
    if _capturing:  # as in _launch
        _inside_a_capture()
    sizes = entry.itemsizes
    if into is None:
        storage = Storage.host(entry.nbytes)
        out = storage.ptr
    else:
        out = into.storage.ptr + into.offset * sizes[0]
    word = None if entry.scalar is None else _number_word(number, entry.scalar)
    if entry.moved < PROMOTE_BYTES or runs_inline(entry.fn, entry.moved):
        at, total = entry.native.address, entry.total
        a = operands[0]
        if len(operands) == 2:
            b = operands[1]
            _native(at, total, out, a.storage.ptr + a.offset * sizes[1],
                    b.storage.ptr + b.offset * sizes[2])  # fmt: skip
        elif len(operands) > 2:  # a formula's operands (frontend/formula.py)
            _native(at, total, out, *_addresses(operands, sizes))
        elif word is None:
            _native(at, total, out, a.storage.ptr + a.offset * sizes[1])
        else:
            _native(at, total, out, a.storage.ptr + a.offset * sizes[1], word)
    else:
        words = [out, *_addresses(operands, sizes)] + ([] if word is None else [word])
        run_pooled(entry.fn, entry.native.block(words), entry.total, entry.align)
    if into is not None:
        return into
    return _result(storage, entry.shape, entry.strides, entry.dtype)


def shaped_launch(key: tuple, operands: tuple, into=None):
    """The launch remembered under `key` (a key by exact layouts, SHAPED first) over the
    impls `operands`, into a new tensor or `into`; None when none is remembered or the door
    is closed (a trace, a recorder, KAEL_DEBUG)."""
    if not _open():
        return None
    entry = _shaped.get(key)
    return None if entry is None else _launch_shaped(entry, operands, None, into)


def _fixed_words(template: eager.Template, fixed: dict | None) -> list[int]:
    """The kernel's parameter words: `fixed` values (a formula's parameters at the call's
    values, which its key stands for) in place, the others 0 (patched per call, or none)."""
    kernel = template.kernel
    if not fixed:
        return [0] * len(kernel.params)
    return [
        eager.param_word(fixed[n], d) if n in fixed else 0
        for n, d in zip(template.scalars, kernel.params)
    ]


def _remember_shaped(
    key: tuple, template: eager.Template, out, ins, scalar, fixed: dict | None = None
) -> None:
    """Keep the launch the full door just ran for `key` over `out` and the broadcast views
    `ins` of the tensor operands."""
    impls = (out, *ins)
    if key in _shaped or template.kernel.may_fault or out.numel() == 0:
        return
    plan = eager._plan(template, out, impls)
    if plan.compiled is None or plan.faults:
        return
    kernel = template.kernel
    words = [0] * len(impls) + list(plan.tail)
    at = None
    if scalar is not None:
        name, mode = scalar
        i = template.scalars.index(name)
        at = (len(words) + i, kernel.params[i], mode)
    words += _fixed_words(template, fixed)
    positions = tuple(range(len(impls))) + (() if at is None else (at[0],))
    per_item = max(1, plan.moved // max(1, plan.total))
    native = native_launch.describe(plan.compiled.fn, words, positions, per_item)
    if native is None:
        return
    itemsizes = tuple(t.dtype.itemsize for t in impls)
    nbytes = out.numel() * itemsizes[0]
    entry = _Shaped(native, plan.compiled.fn, out.shape, out.strides, out.dtype, nbytes,
                    itemsizes, plan.total, plan.moved, plan.align, at)  # fmt: skip
    if len(_shaped) >= _MAX_ENTRIES:
        _shaped.clear()
    _shaped[key] = entry


def remember(
    key: tuple,
    template: eager.Template,
    dtypes: tuple,
    scalars: tuple = (),
    out=None,
    ins=(),
    fixed: dict | None = None,
    order: tuple[int, ...] | None = None,
) -> None:
    """Keep the launch of `template` for `key` (binary: (name, kind of a, kind of b, 0-d);
    unary: (name, dtype); or a key by exact layouts, then `out` and `ins` are the impls
    it ran over): `dtypes` are the output's and each tensor operand's, `scalars` hold
    (parameter name, conversion mode) of each number operand (at most one by layouts),
    `fixed` the parameters whose values the key stands for, `order` which operand (as a
    call passes them) each kernel input is, where not the same. Only for kernels that
    cannot fault; the full door has just run the call this key stands for."""
    if key[0] is SHAPED:
        _remember_shaped(key, template, out, ins, scalars[0] if scalars else None, fixed)
        return
    if key in _entries or None in key or template.kernel.may_fault:
        return
    probe = 64  # elements: a rank-1 dense layout of any length specializes the same way
    spread = _BROADCAST.get(key[-1])  # the buffer a 0-d operand is, read with stride 0
    order = tuple(range(len(dtypes) - 1)) if order is None else order
    kernel_dtypes = (dtypes[0], *(dtypes[1 + j] for j in order))
    impls = [
        TensorImpl(None, (probe,), (0 if i == spread else 1,), 0, d, CPU)
        for i, d in enumerate(kernel_dtypes)
    ]
    plan = eager._plan(template, impls[0], tuple(impls))
    if plan.compiled is None or plan.kernel.nontemporal or plan.kernel.rank != 1:
        return
    words = [0] * len(impls) + list(plan.tail)
    kernel = template.kernel
    at = []
    for name, mode in scalars:
        i = template.scalars.index(name)
        at.append((len(words) + i, kernel.params[i], mode))
    words += _fixed_words(template, fixed)
    itemsizes = tuple(d.itemsize for d in dtypes)
    # lengths whose stores never stream (eager.streams; a 0-d operand's bytes counted too)
    threshold = eager.NONTEMPORAL_BYTES
    limit = min((threshold - 1) // itemsizes[0], (2 * threshold - 1) // sum(itemsizes))
    # a call's words: the output's address, each operand's in its call order, the size,
    # the numbers
    operands = (1 + order.index(j) for j in range(len(order)))
    positions = (0, *operands, len(impls), *(a[0] for a in at))
    native = native_launch.describe(plan.compiled.fn, words, positions, sum(itemsizes))
    if native is None:
        return
    entry = _Entry(plan.compiled.fn, dtypes[0], len(impls), itemsizes, limit, sum(itemsizes),
                   tuple(at), native)  # fmt: skip
    if len(_entries) >= _MAX_ENTRIES:
        _entries.clear()
    _entries[key] = entry


# ---- reductions and row kernels --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Kept:
    """A remembered launch of a keyed door: one pass (then, for inputs reduced in several
    blocks, the fixed tree over their partials, `final`, in per-call scratch) into fresh
    storages, the call's results views of them."""

    fn: object
    # its block; words: the outputs', then each tensor read's (then the scratch, then the
    # error word)
    native: native_launch.Descriptor
    total: int  # work items
    storages: tuple[int, ...]  # bytes of each output's storage, in the block's order
    reads: tuple[
        tuple[int, int], ...
    ]  # per tensor read: the door's tensor (0: the input), itemsize
    views: tuple[tuple, ...]  # per result tensor: (storage, shape, strides, offset, dtype)
    moved: int  # bytes read and written: the thread pool's from launcher.PARALLEL_BYTES
    final: native_launch.Descriptor | None = None  # the tree, one work item per output
    outputs: int = 0
    scratch: tuple[int, int] = (0, 0)  # bytes of the partials and of their indices
    align: int = 1  # work items per split unit on the thread pool
    pack: type | None = None  # the results' tuple type (max(x, dim)'s pair); None: one tensor
    # whether replays count toward the kernel's promotion from tier 0 (launcher.count_launch):
    # the scalar hand-written kernels (scans, sorts, gathers) want LLVM's optimizer, kael's
    # vectorized kernels hardly (codegen/cpu/tiers.py)
    counted: bool = False
    # the error word's first value where the kernel checks indices: any other after a
    # replay sends the call through the full door, which raises as it would have
    error: int | None = None
    # where the launch read the input alone into one result returned dense as made, its
    # replays uncounted (a reduction, a row kernel): its (shape, strides, dtype, input
    # itemsize), which the door's _replay_plain takes without the general lists; else None
    plain: tuple | None = None


_keyed: dict[tuple, _Kept | object] = {}
_UNSERVED = object()  # a key whose call this door cannot replay (too big, several launches)
_captured = threading.local()
# one entry per door capturing a first call, in any thread (list.append and pop are
# atomic): while it is empty, as nearly always, a served call skips the thread-local look
_capturing: list = eager.capturing


def _inside_a_capture() -> None:
    """A door called while this thread's outer door captures: the outer one keeps nothing
    (this door's replay, or its own launches, are not the outer call's one launch)."""
    outer = getattr(_captured, "slot", None)
    if outer is not None:
        outer.append(None)


def capture(entry: eager.Template, outs: list, ins: list, axes, keepdim, scalars) -> None:
    """Called by reduce_door.reduce after each launch: kept when a fast door asked."""
    _offer(tuple(outs), _remember_reduction, entry, outs, ins, axes, keepdim, scalars)


def capture_rows(fn, words: list[int], rows: int, moved: int, align: int, src, out) -> None:
    """Called by the row kernels' door (nn.py) after each launch of `fn` over `rows` rows
    with the block `words` (src's address, out's, then fixed words): kept when a fast door
    asked."""
    capture_launch(fn, words, rows, moved, align, (src,), (out,), (1, 0), counted=False)


def capture_launch(
    fn, words: list[int], items: int, moved: int, align: int, reads, outs, at,
    counted: bool = True, error: tuple[int, int] | None = None,
) -> None:  # fmt: skip
    """Called after a hand-written kernel's launch of `fn` over `items` work items that
    read the tensors `reads` and made `outs` (a scan's, sort's, gather's): `at` names the
    words holding each output's address, then each read's; `error` = (its word, its
    first value) where the kernel checks indices. Kept when a fast door asked; `counted`:
    its replays count toward the kernel's promotion from tier 0."""
    outs = tuple(outs)
    remember = _remember_launch
    _offer(outs, remember, fn, words, items, moved, align, tuple(reads), outs, at, counted, error)


def _capture_elementwise(plan, outs, ins, addresses: list, params: list) -> None:
    """eager.run's launch while a door captures: offered as a launch by addresses (its
    template's layout words fixed); one with an error word (a flag, a fault) is not kept,
    nor is a GPU's (the door keeps nothing then)."""
    if plan.faults or plan.compiled is None or outs[0].device is not CPU:
        _inside_a_capture()
        return
    words = [*addresses, *plan.tail, *params]
    at = tuple(range(len(addresses)))
    fn = plan.compiled.fn
    capture_launch(fn, words, plan.total, plan.moved, plan.align, ins, outs, at, counted=False)


eager.capture = _capture_elementwise


def capturing() -> bool:
    """Whether a fast door is asking for this call's launch (else no capture need be made)."""
    return getattr(_captured, "slot", None) is not None and _trace_state.trace is None


def _offer(outs: tuple, remember, *launch) -> None:
    """Hand a launch that made `outs` to the fast door that asked (`keyed`), if one did:
    remember(*launch, key, impls, pack, views) keeps it for that door's key."""
    slot = getattr(_captured, "slot", None)
    # (under a trace the launch is recorded, not run: holding its output would keep a
    # traced value alive, and out of the row driver's chunk scratch)
    if slot is not None and _trace_state.trace is None:
        slot.append((outs, functools.partial(remember, *launch)))


def _views_of(result, outs: tuple) -> tuple | None:
    """(pack, views) of a result that is tensors viewing the launch's outputs: one tensor
    (pack None) or a tuple of them (its type: a named pair such as max(x, dim)'s), each a
    view (storage index, shape, strides, offset, dtype) of an output's storage; else None."""
    if type(result) is Tensor:
        tensors, pack = (result,), None
    else:
        pack = type(result)
        if not isinstance(result, tuple) or not (pack is tuple or hasattr(pack, "_make")):
            return None
        if any(type(r) is not Tensor for r in result):
            return None
        tensors = result
    storages = [o.storage for o in outs]
    views = []
    for t in tensors:
        i = t._impl
        k = next((k for k, s in enumerate(storages) if i.storage is s), None)
        if k is None or _extent(i) > outs[k].numel() * outs[k].dtype.itemsize:
            return None  # (a view past what the launch wrote: a replay makes only that)
        views.append((k, i.shape, i.strides, i.offset, i.dtype))
    return pack, tuple(views)


def _extent(t: TensorImpl) -> int:
    """The bytes from its storage's start to the end of t's last element (0 if empty)."""
    if not t.numel():
        return 0
    last = t.offset + sum((s - 1) * st for s, st in zip(t.shape, t.strides, strict=True))
    return (last + 1) * t.dtype.itemsize


def keyed(fn, traced=None, steps: int = 1):
    """The public op `fn(input, ...)` (a reduction, a row kernel, a gather) behind a fast
    door keyed by its arguments (tensor arguments by dtype and layout); a call the door
    has not seen runs `fn`, and its launch is remembered when it was the call's one launch
    on CPU, no other door ran inside the call, and its results view what it made (a tree
    over several blocks included, unless the tree itself is big enough for the pool).
    `steps` > 1: an op whose calls make up to that many captured launches, each reading
    the door's tensors or earlier launches' outputs, and nothing else writing what they
    made (var's mean then deviations: audited per op, reductions.STEPS), is remembered
    as the chain (_Steps).
    `traced`: what runs while the door is closed (the op door, under @kael.compile's
    trace) and for every call it does not serve (a complex operand: its dispatch to the
    complex form), else fn; a first call it may serve later runs fn itself. A door from a
    door wraps the same function (`__wrapped__`), never the door itself."""
    fn = getattr(fn, "__wrapped__", fn)
    closed = fn if traced is None else traced
    name = fn.__name__

    @functools.wraps(fn)
    def door(input, *args, **kwargs):
        if kwargs:
            kwargs = torch_keywords(kwargs)
        if not _open() or type(input) not in PLAIN:
            return closed(input, *args, **kwargs)
        if _capturing:  # some door is capturing: if it is this thread's, it keeps nothing
            _inside_a_capture()
        impl = input._impl
        if "out" in kwargs or impl.dtype.is_complex:  # complex: parts or a cast run first,
            return closed(input, *args, **kwargs)  # so the kernel reads not the input itself
        impls = [impl]
        given = _plain_arguments(args, kwargs, impls) if args or kwargs else ()
        if given is None:  # a list of dims, a 1 for True, a complex operand: the full door's
            return closed(input, *args, **kwargs)
        key = (name, impl.dtype, impl.device, impl.shape, impl.strides, given, get_num_threads())
        if len(impls) > 1:  # which tensors are one another: a kept launch reads by place
            key += (_places(impls),)
        entry = _keyed.get(key)
        if entry is not None:
            if entry is not _UNSERVED:
                if entry.plain is not None:
                    return _replay_plain(entry, impl)
                chain = type(entry) is _Steps
                result = _replay_steps(entry, impls) if chain else _replay_kept(entry, impls)
                if result is not None:
                    return result
            return closed(input, *args, **kwargs)
        outer = getattr(_captured, "slot", None)
        _captured.slot = []
        _capturing.append(None)
        try:
            result = fn(input, *args, **kwargs)
            launched = _captured.slot
        finally:
            _captured.slot = outer
            _capturing.pop()
        kept = None
        if len(launched) == 1 and launched[0] is not None:
            kept = _views_of(result, launched[0][0])
        served = kept is not None and launched[0][1](key, impls, *kept)
        if not served and 1 < len(launched) <= steps and None not in launched:
            served = _remember_steps(key, impls, result, launched)
        if not served and len(_keyed) < _MAX_ENTRIES:
            _keyed[key] = _UNSERVED  # the same call runs the same way: never ask again
        return result

    return door


_PLAIN = (int, bool, type(None), DType)


def _plain(value, tensors: list) -> tuple | None:
    """(exact type, value): 1, True and 1.0 are equal keys, but not equal arguments; a host
    tensor's dtype and layout, its impl appended to `tensors`."""
    kind = type(value)
    if kind in _PLAIN:
        return (kind, value)
    if kind is float:  # by its bits: -0.0 is not 0.0, and each NaN keys alike
        return (kind, value.hex())
    if kind is tuple:
        return (kind, value) if all(type(d) is int for d in value) else None
    if kind in PLAIN:
        t = value._impl
        if t.device is not CPU or t.dtype.is_complex:
            return None
        if not t.shape and not t.dtype.is_floating_point:  # x.sum(kael.tensor(1)): an op
            return None  # may read it as an int (a dim, a k), which a key by layout misses
        tensors.append(t)
        return (kind, t.dtype, t.shape, t.strides)
    return None


def _places(impls: list) -> tuple[int, ...]:
    """Per tensor argument, the first one starting where it starts (itself, or an earlier
    argument at the same storage and offset): a capture maps each read to the first, so a
    call passing one tensor twice keeps a chain only calls passing it twice may replay.
    () where no two start at one place, the common call (told apart quickly)."""
    if len(impls) == 2:
        a, b = impls
        return (0, 0) if a.storage is b.storage and a.offset == b.offset else ()
    spots = [(id(t.storage), t.offset) for t in impls]
    if len(set(spots)) == len(spots):
        return ()
    first: dict = {}
    return tuple(first.setdefault(spot, i) for i, spot in enumerate(spots))


def _plain_arguments(args: tuple, kwargs: dict, tensors: list) -> tuple | None:
    """The arguments as a key, each value beside its exact type, or None where one is not
    an int, float, bool, None, dtype, tuple of ints or host tensor (a list of dims: the
    full door judges it); the tensors' impls are appended to `tensors` in order."""
    out = []
    for value in args:
        plain = _plain(value, tensors)
        if plain is None:
            return None
        out.append(plain)
    for name, value in kwargs.items():
        plain = _plain(value, tensors)
        if plain is None:
            return None
        out.append((name, plain))
    return tuple(out)


def _fresh_dense(out) -> bool:
    """Whether `out` is a host result in the layout this door makes, with room to keep it."""
    dense = out.strides == _dense_strides(out.shape) and not out.offset
    return out.device is CPU and dense and len(_keyed) < _MAX_ENTRIES


def _storage_bytes(outs) -> tuple[int, ...]:
    return tuple(o.numel() * o.dtype.itemsize for o in outs)


def _read_from(reads, impls) -> tuple | None:
    """Per tensor the launch read, (which of the door's tensors it is, its itemsize): it
    must be one of them, its own elements (a view of them from the same start, not a
    converted copy), as a replay passes that tensor's address in its place; else None."""
    found = []
    for src in reads:
        j = next((j for j, t in enumerate(impls) if _reads(src, t)), None)
        if j is None:
            return None
        found.append((j, src.dtype.itemsize))
    return tuple(found)


def _reads(src, impl) -> bool:
    same = src.storage is impl.storage and src.offset == impl.offset
    return same and src.dtype is impl.dtype


def _keep(key, *fields, **more) -> _Kept:
    """_keyed[key] = the _Kept of these fields, its `plain` form filled in where it has one;
    key None: a step of a door's several launches (_remember_steps), returned, not kept."""
    kept = _Kept(*fields, **more)
    if key is None:
        return kept
    views, reads = kept.views, kept.reads
    one = len(kept.storages) == len(views) == len(reads) == 1
    if one and reads[0][0] == 0 and kept.pack is None and not kept.counted:
        k, shape, strides, offset, dtype = views[0]
        if not (k or offset) and kept.error is None and strides == _dense_strides(shape):
            kept = dataclasses.replace(kept, plain=(shape, strides, dtype, kept.reads[0][1]))
    _keyed[key] = kept
    return kept


def _remember_launch(
    fn, words, items, moved, align, reads, outs, at, counted, error, key, impls, pack, views
):
    """Keep a captured hand-written launch for `key` when it read the door's tensors into
    fresh dense outputs: its _Kept, or False (key None: a step, see _keep)."""
    found = _read_from(reads, impls)
    if found is None or not all(_fresh_dense(o) for o in outs):
        return False
    if _in_place(outs, impls):
        return False
    positions = at if error is None else (*at, error[0])
    template = [0 if i in positions else word for i, word in enumerate(words)]
    native = native_launch.describe(fn, template, positions, moved // max(1, items))
    if native is None:
        return False
    return _keep(
        key, fn, native, items, _storage_bytes(outs), found, views, moved, align=align,
        pack=pack, counted=counted, error=None if error is None else error[1],
    )  # fmt: skip


def _in_place(outs, impls) -> bool:
    """Whether a launch wrote into a tensor the door was given or an earlier step made: a
    replay's fresh buffer would leave that tensor as it was."""
    return any(o.storage is t.storage for o in outs for t in impls)


def _remember_reduction(entry, outs, ins, axes, keepdim, scalars, key, impls, pack, views):
    """Keep the captured launch for `key` when this door can replay it: its _Kept, or
    False. It reads the door's input alone, or (a step, key None) what impls holds: the
    door's tensors and the earlier steps' outputs."""
    found = _read_from(ins, impls if key is None else impls[:1])
    if found is None or not all(_fresh_dense(o) for o in outs) or _in_place(outs, impls):
        return False
    prepared = eager.prepare(entry, outs, ins, (axes, keepdim))
    if prepared is None:
        return False
    names = entry.scalars
    params = [eager.param_word(scalars[n], d) for n, d in zip(names, entry.kernel.params)]
    addresses = len(outs) + len(ins)
    words, _ = prepared.words([0] * addresses, params)
    # the outputs' and the inputs' addresses, then the two scratches' where a tree follows
    positions = tuple(range(addresses + (0 if prepared.final is None else 2)))
    per_item = prepared.moved // max(1, prepared.total)
    native = native_launch.describe(prepared.fn, words, positions, per_item)
    final = scratch = None
    if prepared.final is not None:
        scratch = prepared.scratch
        # the tree's work items are the outputs, as the full door launches it
        per_output = scratch[0] // max(1, prepared.outputs)
        final = native_launch.describe(prepared.final, words, positions, per_output)
        if final is None or scratch[0] >= PARALLEL_BYTES:
            return False  # a tree big enough for the pool: the full door runs it
    if native is None:
        return False
    return _keep(
        key, prepared.fn, native, prepared.total, _storage_bytes(outs), found, views,
        prepared.moved, final, prepared.outputs, scratch or (0, 0), pack=pack,
    )  # fmt: skip


def _launch_kept(entry: _Kept, words: list, tail: tuple = ()) -> None:
    """Run `entry`'s launch, then its tree, over `words` (the buffers' addresses), its
    scratch's addresses and then `tail` appended."""
    final = entry.final
    if final is not None:
        held, partials, indices = eager.scratch_storage(entry.scratch)  # noqa: F841 (kept)
        words += (partials, indices)
    words += tail
    if entry.moved < PROMOTE_BYTES or runs_inline(entry.fn, entry.moved):
        _native(entry.native.address, entry.total, *words)
    else:
        run_pooled(entry.fn, entry.native.block(words), entry.total, entry.align)
    if final is not None:
        _native(final.address, entry.outputs, *words)


@dataclass(frozen=True, slots=True)
class _Steps:
    """A keyed door's call of several launches (keyed's `steps`), replayed in order: each
    step a _Kept whose reads index the door's tensors, then every earlier step's outputs;
    the results views (storage index over all steps' outputs, shape, strides, offset,
    dtype), in the call's tuple type `pack` (None: one tensor)."""

    steps: tuple
    views: tuple
    pack: type | None
    plain = None  # (the door asks every entry for a plain form first)


def _remember_steps(key, impls: list, result, launched: list) -> bool:
    """Keep a call's captured launches as a chain for `key`: each must read only the
    door's tensors and earlier launches' outputs (_read_from, over that growing table),
    check no index (an error word), and the results must view what they made."""
    table, steps, made = list(impls), [], []
    for outs, remember in launched:
        kept = remember(None, table, None, ())
        if not kept or kept.error is not None:
            return False
        steps.append(kept)
        table += outs
        made += outs
    found = _views_of(result, tuple(made))
    if found is None:
        return False
    pack, views = found
    _keyed[key] = _Steps(tuple(steps), views, pack)
    return True


def _replay_steps(entry: _Steps, impls: list):
    """The remembered chain over this call's tensors: its results."""
    addresses = [t.storage.ptr + t.offset * t.dtype.itemsize for t in impls]
    storages = []
    for kept in entry.steps:
        if kept.counted:
            count_launch(kept.fn)
        made = [Storage.host(nbytes) for nbytes in kept.storages]
        _launch_kept(kept, [s.ptr for s in made] + [addresses[j] for j, _ in kept.reads])
        storages += made
        addresses += [s.ptr for s in made]
    return _packed(storages, entry.views, entry.pack)


def _packed(storages: list, views: tuple, pack: type | None):
    """A replay's results: each view (storage index, shape, strides, offset, dtype) of the
    storages it made, one tensor or in the call's tuple type `pack`."""
    results = [
        _result(storages[k], shape, strides, dtype, offset)
        for k, shape, strides, offset, dtype in views
    ]
    return results[0] if pack is None else pack(results) if pack is tuple else pack._make(results)


def _replay_plain(entry: _Kept, impl):
    """_replay_kept of a `plain` entry: one storage, the input's address, one dense result."""
    shape, strides, dtype, itemsize = entry.plain
    storage = Storage.host(entry.storages[0])
    _launch_kept(entry, [storage.ptr, impl.storage.ptr + impl.offset * itemsize])
    return _result(storage, shape, strides, dtype)


def _replay_kept(entry: _Kept, impls: list):
    """The remembered launch over this call's tensors: its results, or None where the
    kernel found a bad index (the full door then raises for it)."""
    if entry.counted:
        count_launch(entry.fn)
    storages = [Storage.host(nbytes) for nbytes in entry.storages]
    words = [s.ptr for s in storages]
    for j, size in entry.reads:
        t = impls[j]
        words.append(t.storage.ptr + t.offset * size)
    error = entry.error
    if error is None:
        _launch_kept(entry, words)
    else:
        flag = ctypes.c_int64(error)
        _launch_kept(entry, words, (ctypes.addressof(flag),))
        if flag.value != error:
            return None
    return _packed(storages, entry.views, entry.pack)


# ---- matrix products -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Product:
    plan: gemm_run.Plan  # one native call where it is one inline launch (Plan.native)
    shape: tuple  # the result's, with its strides
    strides: tuple
    dtype: DType
    nbytes: int
    itemsize: int
    # where the plan is one native launch of three words (a small product, gemv): its
    # kernel, address, total, and per word the operand (A, B or C) and byte offset it
    # takes; the door calls it itself while the kernel is promoted, as gemm_run.run's
    # first branch would, without its frames. Else None
    direct: tuple | None


_products: dict[tuple, _Product] = {}


def _forget() -> None:
    """Drop every remembered launch: its result dtype may come from the old default dtype
    (int64 + 2.5 gives the default float), so set_default_dtype calls this."""
    for table in (_entries, _filled, _words, _shaped, _keyed, _products):
        table.clear()


on_default_dtype_change(_forget)


def _product_key(a, b) -> tuple | None:
    if type(a) not in PLAIN or type(b) not in PLAIN:
        return None
    ai, bi = a._impl, b._impl
    if ai.device is not CPU or bi.device is not CPU:
        return None
    return (ai.dtype, ai.shape, ai.strides, bi.dtype, bi.shape, bi.strides, get_num_threads())


def matmul(a, b):
    """a @ b through a remembered gemm plan, or None."""
    # _open() and _product_key, inlined: every small product starts here
    if _trace_state.trace is not None or launches.recorder is not None or debug.level >= 1:
        return None
    if type(a) not in PLAIN or type(b) not in PLAIN:
        return None
    ai, bi = a._impl, b._impl
    key = (ai.dtype, ai.shape, ai.strides, bi.dtype, bi.shape, bi.strides, threadpool._num_threads)
    entry = _products.get(key)
    if entry is None or ai.device is not CPU or bi.device is not CPU:
        return None
    size = entry.itemsize
    storage = Storage.host(entry.nbytes)
    run_product(entry, ai.storage.ptr + ai.offset * size, bi.storage.ptr + bi.offset * size,
                storage.ptr)  # fmt: skip
    impl = _new(TensorImpl)  # _result, inlined
    impl.storage, impl.shape, impl.strides = storage, entry.shape, entry.strides
    impl.offset, impl.dtype, impl.device = 0, entry.dtype, CPU
    t = _new(Tensor)
    t._impl = impl
    return t


def run_product(entry: _Product, pa: int, pb: int, pc: int) -> None:
    """The remembered product over A, B and C at these addresses: its one native call where
    the kernel is promoted, else its plan through gemm_run (which counts the launch)."""
    if _capturing:  # as in _launch
        _inside_a_capture()
    direct = entry.direct
    if direct is not None and direct[0].tier0 is None:
        _, address, total, w0, o0, w1, o1, w2, o2 = direct
        bases = (pa, pb, pc)
        _native(address, total, bases[w0] + o0, bases[w1] + o1, bases[w2] + o2)
    else:
        gemm_run.run(entry.plan, pa, pb, pc)


def remembered_product(a, b) -> _Product | None:
    """The product the door keeps for a @ b's operand layouts (plain host tensors), or None."""
    key = _product_key(a, b)
    return None if key is None else _products.get(key)


def remembered_shaped(key: tuple | None) -> _Shaped | None:
    """The launch kept under a key by exact layouts (binary_key's), for _launch_shaped."""
    return None if key is None else _shaped.get(key)


def remember_matmul(a, b, plan, target) -> None:
    """Keep the plan the full door ran for a @ b into the fresh dense `target`."""
    if not _open():
        return
    key = _product_key(a, b)
    t = target._impl
    if key is None or key in _products or t.strides != _dense_strides(t.shape) or t.offset:
        return
    if len(_products) >= _MAX_ENTRIES:
        _products.clear()
    nbytes = t.numel() * t.dtype.itemsize
    direct = None
    if plan.native is not None and len(plan.native[1]) == 3:
        descriptor, sources = plan.native
        step = plan.launches[0]
        direct = (step.fn, descriptor.address, step.total, *(x for ws in sources for x in ws))
    _products[key] = _Product(plan, t.shape, t.strides, t.dtype, nbytes, t.dtype.itemsize, direct)
