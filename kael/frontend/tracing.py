"""Tracing: running a function's ops through the eager door while recording, not launching.

While a Trace is active on a thread, eager.run and eager.run_reduction append one fusion
Step per op (the op's own kernel template, checks and dtype rules ran as in eager), and
new tensors get a LazyStorage: a buffer that gets memory only if the fused plan stores it.
Each public op runs inside `op_door`: when an op needs a hand-written kernel or host work
(matmul, sort, the softmax rows), the steps it recorded are rolled back and it becomes an
extern step, run eagerly on materialized inputs, as does an op whose own Python reads
values (a host sort, a size from the data). Each call checks an extern's output shapes
and traces the call again when they change. The user's Python reading values (item, bool,
numpy, print) is data-dependent: it raises a kael.Error naming the user's line, or with
fullgraph=False ends the trace and lets the function go on eagerly.

The trace runs the function once, for real: pending steps are fused and executed whenever
an extern needs its inputs and at the end, and the plan it leaves repeats them per call.
A result leaf is a tensor, an argument (returned as each call passes it), or a value kept
whole (kept_whole: a number, a string, a dtype, a class...); any other object the call
built and may hold tensors, which a plan cannot build again, so that signature runs eagerly.
"""

from __future__ import annotations

import builtins
import enum
import functools
import linecache
import math
import operator
import os
import re
import sys
import threading
import types
import weakref
from collections.abc import Callable

import numpy as np

from kael.frontend import eager, pytree
from kael.frontend import plan as p
from kael.frontend.keywords import torch_keywords
from kael.ir.fusion import Step, fuse
from kael.ir.reduction import Reduction
from kael.ir.views import View
from kael.runtime import errors, profiling
from kael.runtime.device import Device
from kael.runtime.dtypes import DType
from kael.runtime.errors import Error
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl
from kael.runtime.tracestate import NeedsExtern, state

_KAEL_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MADE = (p.FRESH, p.EXTERN)  # the slot kinds of buffers a plan makes: nobody else sees them


def active() -> Trace | None:
    """The calling thread's trace, or None when ops run eagerly."""
    return state.trace


class GraphBreak(Exception):  # noqa: N818 - unwinds an op to its door, never seen by users
    """An op's own Python reads values (a host sort, a size from the data)."""

    def __init__(self, what: str) -> None:
        self.what = what


class LazyStorage(Storage):
    """A traced tensor's buffer: memory only once the fused plan stores it."""

    __slots__ = ("call", "index")
    lazy = True

    def __init__(self, nbytes: int, device: Device, call: p.Call, index: int) -> None:
        self._set(0, nbytes, device, None)
        self.call = call
        self.index = index

    @property
    def ptr(self) -> int:
        storage = self.call.bound[self.index]
        if storage is None:
            trace = state.trace
            if trace is None:
                raise Error(
                    "this tensor was made inside a compiled function whose trace did not finish"
                )
            trace.host_read("reading a traced tensor's memory")
        return storage.ptr

    @ptr.setter
    def ptr(self, value: int) -> None:
        pass  # the address is that of the storage the plan binds to the slot

    def __repr__(self) -> str:
        return f"LazyStorage(nbytes={self.nbytes}, device={self.device}, slot={self.index})"


class SymFloat(float):
    """A Python float argument of a traced function: ops take it as a run-time parameter.
    Any other use of its value (arithmetic, comparison, printing) marks it `used`, and then
    the plan is specialized to its value."""

    __slots__ = ("index", "conversions", "trace")

    @classmethod
    def make(cls, value: float, index: int, trace: Trace) -> SymFloat:
        out = float.__new__(cls, value)
        out.index, out.conversions, out.trace = index, (), trace
        return out

    def _use(self) -> float:
        self.trace.used_scalars.add(self.index)
        return float.__float__(self)

    def kael_convert(self, dtype, mode):
        """convert_scalar of this argument: a float result stays tied to the argument."""
        from kael.runtime.convert import convert_scalar

        result = convert_scalar(float.__float__(self), dtype, mode)
        if type(result) is not float:
            self._use()
            return result
        out = SymFloat.make(result, self.index, self.trace)
        out.conversions = (*self.conversions, (dtype, mode))
        return out


def _used(name: str):
    base = getattr(float, name)
    binary = name in _BINARY

    def method(self, *args):
        if binary and not isinstance(args[0], int | float):
            return NotImplemented  # `lr * tensor`: the tensor's reflected op takes it as a scalar
        self._use()
        return base(self, *args)

    method.__name__ = name
    return method


_BINARY = {
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
    "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__",
    "__rpow__", "__divmod__", "__rdivmod__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
    "__ge__",
}  # fmt: skip

# Messages that name an argument's type ("got float") read the same as in eager.
SymFloat.__name__ = SymFloat.__qualname__ = "float"

for _name in (
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
    "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__",
    "__rpow__", "__divmod__", "__rdivmod__", "__neg__", "__pos__", "__abs__", "__eq__",
    "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__int__", "__float__",
    "__hash__", "__repr__", "__str__", "__format__", "__round__", "__trunc__", "__floor__",
    "__ceil__", "is_integer", "as_integer_ratio", "hex", "__getnewargs__",
):  # fmt: skip
    setattr(SymFloat, _name, _used(_name))


class SymInt:
    """A Python int argument made dynamic (compiled.py: its value changed between traces):
    an op given it runs as an extern step that takes each call's value, and arithmetic of
    the user's with ints stays tied to it (`p + 1`, then `x[p : p + 1]`); any other use of
    its value (a comparison, range(p), printing, kael's own arithmetic) marks the arguments
    it comes from `used`, and then the plan is specialized to their values. Not an int
    subclass, whose value C code (range, list repetition, NumPy) reads unseen: every use
    goes through a method here. isinstance(p, int) holds, as of the argument itself."""

    __slots__ = ("value", "source", "roots", "trace")

    @property
    def __class__(self) -> type:  # noqa: D401 - isinstance(p, int), as eagerly
        return int

    @classmethod
    def make(cls, value: int, source, roots: frozenset, trace: Trace) -> SymInt:
        out = object.__new__(cls)
        out.value, out.source, out.roots, out.trace = value, source, roots, trace
        trace.ints_made.append(out)  # let go of the trace when it ends (release_ints)
        return out

    def _use(self) -> int:
        trace = self.trace
        if trace is not None:
            trace.used_scalars.update(self.roots)
        return self.value

    def __getattr__(self, name: str):  # .real, .bit_length(), .numerator...
        if name.startswith("__") or name in SymInt.__slots__:
            raise AttributeError(name)
        return getattr(self._use(), name)

    def __copy__(self) -> SymInt:
        return self  # an int: immutable

    def __deepcopy__(self, memo) -> SymInt:
        return self

    def __reduce__(self):
        return int, (self._use(),)

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self._use(), dtype=dtype)


def _plain(value):
    return value._use() if type(value) is SymInt else value


def _tied(fn: Callable, reflected: bool = False, unary: bool = False):
    """An operator that stays tied to the arguments when the user's code applies it with an
    int (`p + 1`, `2 * p`, `-p`); else it uses the value."""

    def method(self, other=None):
        kind = type(other)
        live = self.trace is not None and state.trace is self.trace
        if (unary or kind is int or kind is SymInt) and live and _users_code():
            parts = (self,) if unary else (other, self) if reflected else (self, other)
            value = fn(*(v.value if type(v) is SymInt else v for v in parts))
            roots = self.roots | (other.roots if kind is SymInt else frozenset())
            return SymInt.make(value, p.Derived(fn, tuple(map(_source, parts))), roots, self.trace)
        return _applied(self, fn, other, reflected, unary)

    return method


def _applied(self, fn: Callable, other, reflected: bool, unary: bool):
    if unary:
        return fn(self._use())
    if _is_tensor(other):
        return NotImplemented  # `p * x`: the tensor's reflected op takes it (an extern)
    a, b = self._use(), _plain(other)
    return fn(b, a) if reflected else fn(a, b)


def _used(fn: Callable, reflected: bool = False, unary: bool = False):
    def method(self, *args):
        if unary:
            return fn(self._use(), *args)
        return _applied(self, fn, args[0], reflected, False)

    return method


def _users_code() -> bool:
    """Whether the caller of a SymInt's operator is outside kael (kael's own arithmetic
    on it, where it reached an op past a door, specializes instead)."""
    caller = sys._getframe(2).f_globals.get("__name__", "")
    return not (caller == "kael" or caller.startswith("kael."))


def _is_tensor(value) -> bool:
    from kael.frontend.tensor import Tensor

    return isinstance(value, Tensor)


# SymInt's operators: (name, function, whether the user's int arithmetic stays tied to the
# arguments, its form: a binary operator and its reflection, a comparison, or unary)
_OPERATORS = (
    *((name, fn, True, "binary") for name, fn in (
        ("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
        ("floordiv", operator.floordiv), ("mod", operator.mod))),
    *((name, fn, False, "binary") for name, fn in (
        ("truediv", operator.truediv), ("pow", operator.pow), ("divmod", divmod),
        ("and", operator.and_), ("or", operator.or_), ("xor", operator.xor),
        ("lshift", operator.lshift), ("rshift", operator.rshift))),
    *((name, getattr(operator, name), False, "compare")
      for name in ("eq", "ne", "lt", "le", "gt", "ge")),
    *((name, fn, True, "unary") for name, fn in (
        ("neg", operator.neg), ("pos", operator.pos), ("abs", abs))),
    *((name, fn, False, "unary") for name, fn in (
        ("invert", operator.invert), ("bool", bool), ("int", int), ("index", int),
        ("float", float), ("complex", complex), ("hash", hash), ("repr", repr), ("str", str),
        ("format", format), ("round", round), ("trunc", math.trunc), ("floor", math.floor),
        ("ceil", math.ceil))),
)  # fmt: skip
for _name, _fn, _stays, _form in _OPERATORS:
    _make = _tied if _stays else _used
    setattr(SymInt, f"__{_name}__", _make(_fn, unary=_form == "unary"))
    if _form == "binary":
        setattr(SymInt, f"__r{_name}__", _make(_fn, reflected=True))
SymInt.__name__ = SymInt.__qualname__ = "int"


def sym_ints(tree) -> frozenset:
    """The arguments the dynamic ints in an op's arguments come from (in nested tuples,
    lists, dicts and slices)."""
    kind = type(tree)
    if kind is SymInt:
        return tree.roots
    if kind is slice:
        return sym_ints((tree.start, tree.stop, tree.step))
    if kind in (tuple, list) or isinstance(tree, tuple):
        return frozenset().union(*map(sym_ints, tree)) if tree else frozenset()
    if isinstance(tree, dict):
        return sym_ints(tuple(tree.values()))
    return frozenset()


def concrete(tree):
    """`tree` with each dynamic int as the plain int it holds this call (nothing used)."""
    kind = type(tree)
    if kind is SymInt:
        return tree.value
    if kind is slice:
        return slice(*concrete((tree.start, tree.stop, tree.step)))
    if not sym_ints(tree):
        return tree
    leaves, treedef = pytree.flatten(tree)
    return (
        tree if treedef == pytree.LEAF else pytree.unflatten(treedef, list(map(concrete, leaves)))
    )


def _shapes_fixed(name: str, args: tuple) -> bool:
    """Whether an indexing op's output shapes follow no value: x[...] = v (no output), or
    x[key] where the key holds ints, static slices, None, Ellipsis and 0-d integer
    tensors (a place, never a count)."""
    if name == "Tensor.__setitem__":
        return True
    if name != "Tensor.__getitem__" or len(args) != 2:
        return False
    keys = args[1] if type(args[1]) is tuple else (args[1],)
    return all(map(_a_place, keys))


def _a_place(key) -> bool:
    """Whether an index key picks a place, never a count: an int, a static slice, None,
    Ellipsis or a 0-d integer tensor (uint8 and bool ones are masks)."""
    from kael.frontend.indexing import INT_KEYS

    if key is None or key is Ellipsis or type(key) is int or type(key) is SymInt:
        return True
    if type(key) is slice:
        return all(type(b) in (int, type(None)) for b in (key.start, key.stop, key.step))
    return _is_tensor(key) and key.ndim == 0 and key.dtype in INT_KEYS


def _tensor_bound(s: slice) -> bool:
    return any(_is_tensor(v) for v in (s.start, s.stop, s.step))


def _bound_source(value):
    """A slice bound's per-call source: a tensor's view of its slot, else _source's."""
    if _is_tensor(value):
        return state.trace.view(value._impl)
    return _source(value)


def _source(value):
    """A recorded step's parameter: the value, or where each call takes it from (a float
    argument, or a generator argument: ArgScalar; a dynamic int, or a slice of them)."""
    kind = type(value)
    if kind is SymFloat:
        return p.ArgScalar(value.index, value.conversions)
    if kind is SymInt:
        return value.source
    if kind is slice and (sym_ints(value) or _tensor_bound(value)):  # x[p:p + 1], x[:n]
        bounds = (value.start, value.stop, value.step)
        return p.Derived(slice, tuple(_bound_source(v) for v in bounds))
    trace = state.trace
    if trace is not None and trace.generator_args:
        index = trace.generator_args.get(id(value))
        if index is not None:
            return p.ArgScalar(index)
    return value


class Buffer:
    """What the trace knows of one buffer: its slot in the plan and, for a fresh one, the
    LazyStorage that stands for it while user code may still hold it."""

    __slots__ = ("slot", "lazy")

    def __init__(self, slot: int, lazy: LazyStorage | None) -> None:
        self.slot = slot
        self.lazy = weakref.ref(lazy) if lazy is not None else None

    def alive(self) -> bool:
        return self.lazy is None or self.lazy() is not None


class Trace:
    """The recording of one call of a compiled function, and the plan it builds."""

    def __init__(self, fn: Callable, fullgraph: bool, tensors: list, scalars: list) -> None:
        self.fn = fn
        self.fullgraph = fullgraph
        self.tensors = tensors
        self.plan = p.Plan()
        self.call = p.Call(self.plan, [], scalars)
        self.buffers: list[Buffer] = []
        self.by_storage: dict[int, int] = {}  # id(real storage) -> slot (kept alive in bound)
        self.pending: list[tuple[Step, object]] = []
        self.reservations: list[int] = []  # counts reserved since the last flush
        self.ran = 0  # plan.steps[:ran] have run on this call's data
        self.depth = 0
        # [pending, reservations, plan steps, cuts, dropped] at the start of the op now
        # running (depth 1): what a rollback goes back to (the fusion notes with the steps);
        # a flush inside the op settles what came before first
        self.entry: list[int] | None = None
        self.used_scalars: set[int] = set()
        # id -> leaf index of each kael.Generator argument: a plan takes it from the call
        # (compiled._signature names it by kind), unless its state was read (used_scalars)
        self.generator_args: dict[int, int] = {}
        self.broken: str | None = None
        self.reads_module = False  # whether it read a kael.nn.Module (set by the module)
        # id -> (weakref, _state_version at the first read) of each module it read
        self.modules_read: dict[int, tuple] = {}
        # id -> (weakref, its plain held values' fingerprints at the first read)
        self.held: dict[int, tuple] = {}
        # Python the call ran that a plan would not repeat (what, for the warning): it set a
        # module's state, or ran a module's forward hooks; modules it built are its own
        self.side_effect: str | None = None
        # id -> weakref of each module it built (by identity: a module may define __eq__)
        self.built: dict[int, weakref.ref] = {}
        self.versions: dict[int, int] = {}
        self.extern_bumps: dict[int, int] = {}  # id(storage) -> bumps made inside extern steps
        self.bumped_visible = False  # whether one bumped a storage the plan did not make
        self.windows: set[int] = set()  # WINDOW slots and the slots they show (_window)
        self.dynamic = False  # whether some argument is a SymInt (ops check theirs)
        self.ints_made: list = []  # every SymInt of this trace (release_ints)
        self.layouts = [_layout(t._impl) for t in tensors]  # as the call passed them
        for i, t in enumerate(tensors):
            storage = t._impl.storage
            if id(storage) not in self.by_storage:
                self._real(storage, p.ARG, i)
        for j in p.relative_args(tensors):  # read wherever a call passes them
            impl = tensors[j]._impl
            self.plan.slots[self.by_storage[id(impl.storage)]].origin = (
                impl.offset * impl.dtype.itemsize
            )
        self.pinned: set[int] = set()  # relative arguments' slots whose place Python read
        self.shared: set = set()  # ids of the storages of the tensors the globals hold

    def placed(self, storage: Storage) -> None:
        """Python read where a tensor lies in `storage` (its offset, its address, a layout
        from the storage's start): an argument read wherever it lies stops being so."""
        slot = self.by_storage.get(id(storage))
        if slot is not None and self.plan.slots[slot].origin is not None:
            self.pinned.add(slot)

    def _module_storages(self) -> set[int]:
        """The ids of the storages of the tensors the modules the call read hold
        (parameters, buffers, plain tensor attributes): memory read other than through the
        arguments, which the trace merges into an argument's slot where they are one."""
        from kael.frontend.tensor import Tensor

        found = set()
        for ref, _ in self.modules_read.values():
            module = ref()
            if module is None:
                continue
            space = module.__dict__
            tables = (space.get("_parameters") or {}, space.get("_buffers") or {}, space)
            found.update(
                id(v._impl.storage)
                for t in tables
                for v in list(t.values())
                if isinstance(v, Tensor)
            )
        return found

    def _settle_arguments(self) -> None:
        """An argument whose memory a global or a module the call read holds too is one
        slot with it: a later call passing other memory would be read in its place, so
        the signature runs eagerly. Keep an argument found at any offset (Slot.origin)
        only where the plan reads nothing of its storage but its own element; else the
        plan is kept per offset of it (its leaf `used`)."""
        held = self.shared | self._module_storages()
        for slot in self.plan.slots:
            if slot.kind == p.ARG and id(self.tensors[slot.arg]._impl.storage) in held:
                self.broken = self.broken or (
                    f"argument tensor {slot.arg} is the memory of a tensor it also reads from "
                    "outside its arguments (a global, a module's), which a plan cannot tell "
                    "apart from other memory a later call passes"
                )
        views = [v for step in self.plan.steps for v in step.views()]
        views += [v for v in self.plan.out_leaves if type(v) is View]
        leaves = {id(v): i for i, v in enumerate(self.call.scalars)}
        for index, slot in enumerate(self.plan.slots):
            if slot.kind != p.ARG or slot.origin is None:
                continue
            tensor = self.tensors[slot.arg]
            own = (slot.origin, slot.origin + tensor._impl.dtype.itemsize)
            reached = [p.byte_range(v) for v in views if v.buffer == index and 0 not in v.shape]
            outside = any(lo < own[0] or hi > own[1] for lo, hi in reached)
            if index in self.pinned or outside:
                slot.origin = None
                leaf = leaves.get(id(tensor))
                if leaf is not None:
                    self.used_scalars.add(leaf)

    def _fast_select(self, args: tuple, specs: list, out_specs: list) -> tuple | None:
        """ExternCall.select for x[t] (t a 0-d integer tensor, its row a window), else None."""
        from kael.frontend.indexing import INT_KEYS
        from kael.frontend.tensor import Tensor

        if len(args) != 2 or len(out_specs) != 1 or not isinstance(args[1], Tensor):
            return None
        x, key = args[0]._impl, args[1]._impl
        if key.shape or key.dtype not in INT_KEYS or not x.shape:
            return None
        view = out_specs[0][0]
        step = x.strides[0] * x.dtype.itemsize
        traced = (view.offset - x.offset) // x.strides[0] if x.strides[0] else 0
        base = self.plan.slots[view.buffer].base
        return specs[1], view, base, x.shape[0], step, traced

    def release_ints(self) -> None:
        """The trace ended: a SymInt Python kept (in a list, an attribute) is its value now,
        and no longer holds the trace and its buffers."""
        for v in self.ints_made:
            v.trace = None
        self.ints_made = []

    # ---- buffers -------------------------------------------------------------------------

    def _add(self, slot: p.Slot, storage: Storage | None, lazy: LazyStorage | None = None) -> int:
        index = len(self.plan.slots)
        self.plan.slots.append(slot)
        self.call.bound.append(storage)
        self.buffers.append(Buffer(index, lazy))
        return index

    def _real(self, storage: Storage, kind: str, arg: int = -1) -> int:
        slot = p.Slot(
            kind, storage.nbytes, storage.device, arg, storage if kind == p.IMPLICIT else None
        )
        index = self._add(slot, storage)
        self.by_storage[id(storage)] = index
        self.versions[index] = storage.version
        return index

    def new_storage(self, nbytes: int, device: Device) -> LazyStorage:
        """The storage of a tensor made under tracing: memory only if the plan stores it."""
        index = len(self.plan.slots)
        lazy = LazyStorage(nbytes, device, self.call, index)
        self._add(p.Slot(p.FRESH, nbytes, device), None, lazy)
        return lazy

    def grow_unwritten(self, storage: LazyStorage, nbytes: int) -> bool:
        """Give a storage the function made `nbytes` where no step uses it yet (an `out=`
        that torch's ops resize, kael.empty(0) the commonest; kael.empty(3) too, whose
        bytes nothing wrote): its slot simply becomes that big. False where it is bound or
        a step reads or writes it (resize_ then refuses, as for any lazy storage)."""
        index = storage.index
        if storage.call is not self.call or self.call.bound[index] is not None:
            return False
        views = [v for step in self.plan.steps for v in step.views()]
        views += [v for step, _, _ in self.pending for v in (*step.outs, *step.ins)]
        if any(v.buffer == index for v in views):
            return False
        self.plan.slots[index].grow(nbytes)
        storage.nbytes = nbytes
        return True

    def slot_of(self, storage: Storage) -> int:
        if type(storage) is LazyStorage and storage.call is self.call:
            return storage.index
        index = self.by_storage.get(id(storage))
        if index is None:
            # Storage.overlaps is False for lazy storages: only real memory is compared
            if any(s is not None and s.overlaps(storage) for s in self.call.bound):
                raise Error(
                    "kael.compile: a tensor the function reads from outside its arguments"
                    f"{user_line()} shares memory with another tensor of the call through a "
                    "second storage (two from_numpy of one array?), which the trace cannot "
                    "tell apart; pass it as an argument, or clone() it"
                )
            index = self._real(storage, p.IMPLICIT)
        return index

    def view(self, impl) -> View:
        return View(self.slot_of(impl.storage), impl.shape, impl.strides, impl.offset, impl.dtype)

    # ---- recording -----------------------------------------------------------------------

    def record(self, entry, outs, ins, scalars, axes=None) -> bool:
        """One op's launch, recorded instead of run; a launch whose result Python reads (a
        kernel-side flag) needs the data, so its op runs as an extern."""
        kernel, names = entry
        if kernel.may_fault and _flags(kernel):
            self.host_read("an op that reads its own result")
        params = [_source(scalars[n]) for n in names] if names else []
        written = [self.view(o) for o in outs]
        step = Step(
            kernel, written, [self.view(i) for i in ins], params, kernel.name,
            *(axes or ((), False)),
        )  # fmt: skip
        apart = self.windows and any(v.buffer in self.windows for v in written)
        if apart:  # a write to memory a window shows: a step of its own (_window)
            self.flush()
        self.pending.append((step, entry, axes))
        if kernel.may_fault or apart:  # a fault raises at the op, before it bumps versions
            self.flush()
        return False

    def reserve(self, count: int):
        """Random counters for one op: reserved now, and by the plan at each call."""
        from kael.frontend.random import reserve_words

        self.call.random.append(reserve_words(count))
        self.reservations.append(count)
        k = len(self.call.random) - 1
        return p.RandomWord(k, 0), p.RandomWord(k, 1)

    def hand_written(self, symbol: str) -> None:
        if self.depth == 0:
            raise Error(f"kael internal: {symbol} launched under tracing outside an op door")
        raise NeedsExtern(symbol)

    def host_read(self, what: str) -> None:
        """Host code reads a traced value: inside an op, the op becomes an extern step."""
        if self.depth:
            raise NeedsExtern(what)
        self.data_dependent(what)

    def data_dependent(self, what: str) -> None:
        """Python needs a traced tensor's values: kael.Error naming the user's line, or,
        with fullgraph=False, the rest of the call runs eagerly."""
        if self.depth:
            raise GraphBreak(what)
        where = user_line()
        if self.fullgraph:
            raise Error(
                f"{what} needs a tensor's values while @kael.compile traces the function"
                f"{where}. Values exist only when the compiled plan runs, so Python cannot "
                "branch on them: compute both sides and pick with kael.where(cond, a, b), or "
                "move this out of the compiled function (or pass fullgraph=False to run the "
                "rest of the function eagerly from here)"
            )
        self.broken = f"{what}{where} needs a tensor's values (fullgraph=False)"
        self.flush()
        # the rest runs eagerly on this call's memory: a tensor no step wrote yet (an
        # empty()) gets its own now, and a resize_ of it resizes that (_grow_empty_slot)
        for b in self.buffers:
            if b.lazy is not None and b.lazy() is not None:
                self.call.storage(b.slot)
        self.plan.fallback = self.broken
        state.trace = None

    def build(self, module) -> None:
        """The call built `module`: setting it up is no side effect."""
        self.built[id(module)] = weakref.ref(module)

    def _built(self, module) -> bool:
        ref = self.built.get(id(module))
        return ref is not None and ref() is module

    def read_module(self, module) -> None:
        """The call read `module` (a parameter, a buffer, a child, or called it): its plans
        hold what the module held then, as of its state version at that first read."""
        self.reads_module = True
        if not self._built(module) and id(module) not in self.modules_read:
            version = module.__dict__.get("_state_version", 0)
            self.modules_read[id(module)] = (weakref.ref(module), version)
            self.held[id(module)] = (weakref.ref(module), module._held_values())

    def _held_changed(self) -> None:
        """A module's plain value (a list it appends to, a dict of counts, a state
        object's attribute) changed in place during the call: a side effect the plan
        would not repeat."""
        for ref, before in self.held.values():
            module = ref()
            if module is None or self.side_effect is not None:
                continue
            after = module._held_values()
            names = [*before, *(n for n in after if n not in before)]
            changed = [n for n in names if before.get(n) != after.get(n)]
            if changed:
                kind = type(module.__dict__.get(changed[0])).__name__
                self.side_effect = (
                    f"changes {changed[0]!r} (a {kind}) of a {type(module).__name__} module"
                )

    def module_side_effect(self, module, what: str) -> None:
        """The call did `what` to a module it did not build (sets 'k_cache' of it, runs its
        forward hooks): a plan would skip that Python at every later call."""
        if self.side_effect is None and not self._built(module):
            self.side_effect = f"{what} of a {type(module).__name__} module"

    def moved(self, impl) -> None:
        """A tensor handle shows other memory or another layout (t_, set_, resize_,
        .data =): the plan cannot repeat that for a tensor it did not make (a global, a
        closure's, a module's), a side effect like a module's state set: the call traces
        again once (a lazy module's first forward materializes its parameters so), then
        runs eagerly."""
        storage = impl.storage
        if type(storage) is LazyStorage and storage.call is self.call or self.side_effect:
            return
        slot = self.by_storage.get(id(storage))
        if slot is not None and self.plan.slots[slot].kind == p.ARG:
            return  # an argument's handles: finish() compares their layouts at the end
        self.side_effect = (
            "changes in place the layout of a tensor it did not make (t_, set_, resize_, .data =)"
        )

    def _reshaped_argument(self) -> str | None:
        """Why the plan cannot repeat this call, when the function changed an argument's
        shape, strides or memory in place (resize_, set_, t_, an out= that was resized):
        a plan's steps are fixed views of the memory each call passes."""
        for i, (t, before) in enumerate(zip(self.tensors, self.layouts, strict=True)):
            after = _layout(t._impl)
            # the impl itself may be new with the same layout (a no-op squeeze_)
            if any(a is not b and a != b for a, b in zip(before[1:], after[1:], strict=True)):
                return (
                    f"argument tensor {i} changed its layout in place ({list(before[1])} -> "
                    f"{list(after[1])}, or its memory: resize_, set_, t_ or an out= that was "
                    "resized)"
                )
        return None

    # ---- ops -------------------------------------------------------------------------------

    def call_op(self, name: str, fn: Callable, args: tuple, kwargs: dict):
        """One public op under tracing: recorded through the eager door when it can be, else
        run as an extern step (data-shaped where its own Python read values)."""
        from kael.frontend.random import draw_marks

        ints = sym_ints((args, kwargs)) if self.dynamic else None
        if ints:
            why = f"{name} (the value of a Python int argument)"
            if self._restartable():  # each call's values (a new shape traces again)
                return self.extern(name, fn, args, kwargs, shaped=why, ints=ints)
            if _shapes_fixed(name, args):  # cache[p] = v, x[p]: a place, never a shape
                return self.extern(name, fn, args, kwargs, shaped=why, ints=ints, fixed=True)
            # a write the caller sees came first, so a new shape could not trace again:
            # the plan is specialized to these values
            self.used_scalars.update(ints)
            args, kwargs = concrete(args), concrete(kwargs)
        mark = (len(self.call.random), draw_marks((*args, *kwargs.values())))
        self.entry = self._lengths()
        self.depth += 1
        try:
            return fn(*args, **kwargs)
        except NeedsExtern:
            why = None
        except GraphBreak as brk:  # the op's Python read values: its outputs may follow them
            why = brk.what
        finally:
            self.depth -= 1
        self._rollback(mark)
        if why is None:
            return self.extern(name, fn, args, kwargs)
        if self._restartable():
            return self.extern(name, fn, args, kwargs, shaped=f"{name} ({why})")
        if _shapes_fixed(name, args):  # x[t] = v, x[t]: only a place follows the values
            return self.extern(name, fn, args, kwargs, shaped=f"{name} ({why})", fixed=True)
        why += "; after an in-place write to an argument, a call cannot be traced again"
        self.data_dependent(f"{name} ({why})")
        return fn(*args, **kwargs)  # tracing ended (fullgraph=False): the op runs eagerly

    def _lengths(self) -> list[int]:
        """An op's `entry`: how many pending steps, reservations, plan steps, cuts and
        dropped buffers there are now."""
        plan = self.plan
        return [
            len(self.pending), len(self.reservations), len(plan.steps), len(plan.cuts),
            len(plan.dropped),
        ]  # fmt: skip

    def _rollback(self, mark) -> None:
        """Forget what an op that turned extern recorded and drew: it runs again whole.
        That includes the steps it added to the plan itself (a matrix product adds itself
        at once, a kernel that may fault flushes what is pending), which would otherwise
        run at every call beside the extern that repeats them (TransformerEncoderLayer's
        attention: its three input projections ran twice); what came before the op stays
        (`entry`: a flush inside the op adds that to the plan first). A generator goes
        back only by this thread's draws, and only if no other thread drew from it
        meanwhile (their counters are never handed out twice)."""
        drawn, generators = mark
        pending, reservations, steps, cuts, dropped = self.entry
        del self.plan.steps[steps:]
        del self.plan.cuts[cuts:]
        del self.plan.dropped[dropped:]
        self.ran = min(self.ran, steps)
        del self.pending[pending:]
        del self.reservations[reservations:]
        del self.call.random[drawn:]
        for g, start, before in generators:
            g.rewind(start, g.drawn_here() - before)

    def _restartable(self) -> bool:
        """Whether nothing the caller can see was written so far in this call: a plan can
        then be dropped midway, and the call traced again, when an extern's output shapes
        change. Version counters do not tell (an `out=` write bumps none): every step so
        far, run or pending, must write only buffers the plan made, and an extern's
        in-place writes must bump only those."""
        slots = self.plan.slots
        steps = [*self.plan.steps, *(step for step, _, _ in self.pending)]
        return not self.bumped_visible and all(
            slots[v.buffer].kind in MADE for step in steps for v in _writes(step)
        )

    def _made(self, storage: Storage) -> bool:
        """Whether the plan made this storage (a fresh buffer, an extern's output)."""
        lazy = type(storage) is LazyStorage
        index = storage.index if lazy else self.by_storage.get(id(storage))
        return index is not None and self.plan.slots[index].kind in MADE

    def _window(self, t, ints: frozenset):
        """A tensor an extern that read values returned over memory the call has (an
        argument's, an implicit input's, an intermediate's): the same view over a WINDOW
        slot of its own, so that each call finds it where that call's values put it (x[t]
        for a 0-d tensor t) instead of tracing again per offset. Every later write to that
        memory, or to the view, is a step of its own: the fusion, which tells memory apart
        by slot, never moves a read of one across a write of the other; and the memory a
        window shows stays live (stored, never written over in place) for the fusion."""
        from kael.frontend.tensor import Tensor

        storage = t._impl.storage
        lazy = type(storage) is LazyStorage and storage.call is self.call
        base = storage.index if lazy else self.by_storage.get(id(storage))
        if base is None:
            return t
        window = p.Window(p.real(storage), 0, ints)
        slot = p.Slot(p.WINDOW, storage.nbytes, storage.device, base=base)
        index = self._add(slot, window)
        self.by_storage[id(window)] = index
        self.windows.update((index, base))
        impl = t._impl
        return Tensor.trusted(
            TensorImpl.of_tuples(
                window, impl.shape, impl.strides, impl.offset, impl.dtype, impl.device
            )
        )

    def extern(
        self,
        name: str,
        fn: Callable,
        args: tuple,
        kwargs: dict,
        shaped: str = "",
        ints=None,
        fixed: bool = False,
    ):
        """Run an op eagerly on real inputs, now and at every call of the plan; `shaped`
        (why): its Python read values, so each call checks its output shapes, and one that
        returns a Python value (equal, allclose) ends the trace as the user's read would.
        `ints`: the dynamic int arguments it is given (each call's values), of which a
        Python result is specialized instead. `fixed`: its output shapes follow no value
        (_shapes_fixed), so it may come after a write the caller sees, where a call could
        not trace again, as long as each view it returns is a window."""
        from kael.frontend.tensor import Tensor

        self.flush()
        leaves, treedef = pytree.flatten((args, kwargs))
        bounds = [b for v in leaves if type(v) is slice for b in (v.start, v.stop, v.step)]
        for v in (*leaves, *bounds):  # bind what no kernel wrote (an empty tensor): it is read
            if isinstance(v, Tensor) and type(v._impl.storage) is LazyStorage:
                self.call.storage(v._impl.storage.index)
        specs = [self.view(v._impl) if isinstance(v, Tensor) else _source(v) for v in leaves]
        storages = {id(s): s for s in self.call.bound if s is not None}
        for v in leaves:
            if isinstance(v, Tensor):
                storages[id(v._impl.storage)] = v._impl.storage
        before = {k: s.version for k, s in storages.items()}
        state.trace, state.extern_call = None, self.call
        try:
            result = fn(*concrete(args), **concrete(kwargs)) if ints else fn(*args, **kwargs)
        finally:
            state.trace, state.extern_call = self, None
        for k, s in storages.items():  # the op bumps them itself at every replay
            if s.version != before[k]:
                self.extern_bumps[k] = self.extern_bumps.get(k, 0) + s.version - before[k]
                self.bumped_visible |= not self._made(s)
        got, out_def = pytree.flatten(result)
        windowed = False
        if shaped and any(v is not None and not isinstance(v, Tensor) for v in got):
            if ints and not any(isinstance(v, Tensor) for v in got):  # x.size(p)
                self.used_scalars.update(ints)
                return result
            self.data_dependent(shaped)
            return result  # tracing ended (fullgraph=False): the op ran eagerly
        given = {id(v) for v in leaves}
        out_specs = []
        for k, v in enumerate(got):
            if isinstance(v, Tensor):
                storage = v._impl.storage
                new = type(storage) is not LazyStorage and id(storage) not in self.by_storage
                if new:
                    index = self._add(p.Slot(p.EXTERN, storage.nbytes, storage.device), storage)
                    self.by_storage[id(storage)] = index
                elif shaped and id(v) not in given:
                    got[k] = v = self._window(v, ints or frozenset())
                    new = windowed = type(v._impl.storage) is p.Window
                    if fixed and not windowed:  # its place could move unseen: as before
                        self.data_dependent(f"{shaped}; after an in-place write to an argument")
                        return result
                out_specs.append((self.view(v._impl), new))
            else:
                out_specs.append(v)
        if windowed:
            result = pytree.unflatten(out_def, got)
        step = p.ExternCall(name, fn, treedef, specs, out_def, out_specs, bool(shaped))
        step.ints = bool(ints)
        if name == "Tensor.__getitem__" and windowed and not kwargs:
            step.select = self._fast_select(args, specs, out_specs)
        self.plan.steps.append(step)
        self.ran = len(self.plan.steps)  # it ran just now
        # Any extern's shapes may follow the values (unique_consecutive scans before it reads):
        # a change traces the call again where that is safe, and raises where it is not.
        # (a `fixed` one after a write the caller sees never does: it raises instead)
        step.retraces = bool(shaped) and not fixed or self._restartable()
        return result

    def reseed(self, generator, seed: int, offset: int = 0) -> None:
        """generator.manual_seed(seed) (or set_state: at `offset`) in the traced function: a
        plan step of its own, after the reservations made so far (the generator itself is
        reseeded by the caller)."""
        self.flush()
        self.plan.steps.append(p.Seed(_source(generator), seed, offset))
        self.ran = len(self.plan.steps)

    def generator_read(self, generator) -> None:
        """Python read a generator argument's state: the plan holds what it read, so it is
        kept for that generator only (as a float argument used as a value)."""
        index = self.generator_args.get(id(generator))
        if index is not None:
            self.used_scalars.add(index)

    def matmul(self, c, a, b, geometry=None) -> None:
        """c = a @ b (impls, checked and laid out by the op), or with `geometry` the
        convolution of a by b: a plan step of its own, which the elementwise kernel after
        it may join as its epilogue."""
        from kael.frontend.plan_matmul import MatmulCall

        self.flush(run=False)
        step = MatmulCall(self.view(a), self.view(b), self.view(c), geometry=geometry)
        self.call.storage(step.c.buffer)  # allocated now: running out of memory raises here
        self.plan.steps.append(step)
        if step.c.buffer in self.windows:  # no epilogue joins it (_window)
            self.flush()

    # ---- running -------------------------------------------------------------------------

    def flush(self, run: bool = True) -> None:
        """Fuse the pending steps and add them to the plan; with `run`, also run every step
        not run yet on this call's data (its new kernels compiled side by side first). A
        matrix product adds itself unrun (run=False): what follows it joins the same batch
        of compiles, and its epilogue runs inside it already at the trace."""
        entry = self.entry
        if self.depth and entry is not None and (entry[0] or entry[1]):
            # inside an op: what came before it goes into the plan on its own, so that a
            # rollback to the op's start keeps it
            inner, self.pending = self.pending[entry[0] :], self.pending[: entry[0]]
            drawn, self.reservations = self.reservations[entry[1] :], self.reservations[: entry[1]]
            self.entry = None
            self.flush(run=False)
            entry[:] = self._lengths()  # nothing pending or reserved: the op's own start at 0
            self.pending, self.reservations = inner, drawn
            self.entry = entry
        for count in self.reservations:  # their counters were reserved at the op itself
            self.plan.steps.append(p.Reserve(count))
        self.reservations = []
        if self.pending:
            self._add_pending()
        if run:
            self._run_added()

    def _add_pending(self) -> None:
        from kael.frontend.plan_matmul import MatmulCall, join_epilogue

        pending, self.pending = self.pending, []
        live = {b.slot for b in self.buffers if b.alive()} | self.windows
        program = fuse([s for s, _, _ in pending], [s.nbytes for s in self.plan.slots], live)
        self.plan.cuts += program.cuts
        self.plan.dropped += program.dropped
        steps = []
        start = 0
        for k, f in enumerate(program.steps):
            _, entry, _ = pending[f.index]
            template = entry if f.kernel is entry.kernel else eager.fused_template(f.kernel)
            axes = (f.axes, f.keepdim) if isinstance(f.kernel, Reduction) else None
            step = p.KernelCall(template, f.outs, f.ins, f.params, f.covers, axes)
            # the ops it stands for, each its own eager kernel: what check=True compares with
            stop = f.index + 1 if k + 1 < len(program.steps) else len(pending)
            step.reference = [
                p.KernelCall(e, s.outs, s.ins, s.params, [s.name], a)
                for s, e, a in pending[start:stop]
            ]
            start = stop
            steps.append(step)
        saved, state.trace = state.trace, None
        try:
            earlier = {v.buffer for s in self.plan.steps for v in s.views()}
            steps = p.reuse_in_place(steps, self.plan.slots, live, earlier)
            steps = p.group_rows(steps, self.plan.slots, live)
        finally:
            state.trace = saved
        last = self.plan.steps[-1] if self.plan.steps else None
        before_op = self.depth and self.entry is not None and len(self.plan.steps) <= self.entry[2]
        if type(last) is MatmulCall and self.ran < len(self.plan.steps) and not before_op:
            steps = join_epilogue(self.plan.steps.pop(), steps)
        self.plan.steps += steps

    def _run_added(self) -> None:
        """Run the plan's steps added since the last run (reservations excepted: their
        counters were drawn at the op), after compiling their new kernels side by side."""
        todo = [s for s in self.plan.steps[self.ran :] if type(s) is not p.Reserve]
        self.ran = len(self.plan.steps)
        if not todo:
            return
        saved, state.trace = state.trace, None
        try:
            _compile_ahead(todo, self.plan.slots)
            for step in todo:
                step.run(self.call)
        finally:
            state.trace = saved

    def finish(self, result):
        """The end of the traced call: run what is pending and describe the results."""
        from kael.frontend.tensor import Tensor

        leaves, treedef = pytree.flatten(result)
        self.flush()
        self._held_changed()
        reshaped = self._reshaped_argument()
        if reshaped is not None:  # this call ran right; the next ones of its kind run eagerly
            self.broken = reshaped
        plan = self.plan
        plan.outputs = treedef
        inputs = {id(t): i for i, t in enumerate(self.tensors)}
        arguments = {id(v): i for i, v in enumerate(self.call.scalars) if not kept_whole(v)}
        plan.out_leaves = [self._out_leaf(v, inputs, arguments) for v in leaves]
        made = [id(v) if isinstance(v, Tensor) and id(v) not in inputs else None for v in leaves]
        plan.same = _repeats(made)
        for index, before in self.versions.items():
            storage = self.call.bound[index]
            if storage is not None:
                count = storage.version - before - self.extern_bumps.get(id(storage), 0)
                if count:
                    plan.bumps[index] = count
        for b in self.buffers:
            lazy = b.lazy() if b.lazy is not None else None
            count = lazy.version - self.extern_bumps.get(id(lazy), 0) if lazy is not None else 0
            if count:
                plan.bumps[b.slot] = count
        moved: set[int] = set()
        # results, and arguments given memory in place, get the real storage, with the
        # writes counted on the lazy one
        for v in [*leaves, *self.tensors]:
            lazy = v._impl.storage if isinstance(v, Tensor) else None
            if type(lazy) is p.Window:  # shift 0 while tracing: the base's own view
                v._impl = p.unwindowed(v._impl)
                lazy = v._impl.storage
            if type(lazy) is LazyStorage:
                real = self.call.storage(lazy.index)
                if id(lazy) not in moved:
                    moved.add(id(lazy))
                    real.version = lazy.version
                v._impl.storage = real
        self._settle_arguments()
        plan.finish()
        return concrete(result) if self.dynamic else result  # the caller's ints, as eagerly

    def _out_leaf(self, v, inputs: dict[int, int], arguments: dict[int, int]):
        """How each call gets result leaf `v`: an argument (tensor or object) as the call
        passes it, a tensor the plan makes, a float argument's value, or a constant. Any
        other object was built by this call and may hold tensors: a plan returning it would
        hand every call the first call's object, so the signature runs eagerly after."""
        from kael.frontend.tensor import Tensor

        if isinstance(v, Tensor):
            index = inputs.get(id(v))
            return self.view(v._impl) if index is None else p.Input(index)
        if type(v) is SymFloat or type(v) is SymInt:
            return _source(v)
        index = self.generator_args.get(id(v), arguments.get(id(v)))
        if index is not None:
            return p.ArgScalar(index)
        if not kept_whole(v) and self.broken is None:
            self.broken = (
                f"the result holds a {type(v).__name__} object, which a plan cannot build "
                "again at each call (it rebuilds lists, tuples and dicts only)"
            )
        return v


@functools.cache
def _kept_kinds() -> tuple[type, ...]:
    """kept_whole's kinds (nn.Module and Generator import this module: looked up once)."""
    from kael.frontend.random import Generator
    from kael.nn.modules.module import Module

    return _KEPT + (Module, Generator)


# Values that cannot change, and objects of their own that a call does not build.
_KEPT = (
    type(None), bool, int, float, complex, str, bytes, type(...), type(NotImplemented), range,
    slice, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
    types.ModuleType, enum.Enum, DType, Device,
)  # fmt: skip


def kept_whole(value) -> bool:
    """Whether a plan may keep `value` as it is from call to call (a result it returns, a
    part of a signature compared by value or identity): a value that cannot change (a
    number, a string, a dtype) or an object of its own that a call does not build (a
    class, a function, a module, an nn.Module, a Generator). Any other object may hold
    tensors, which a plan reads per call only as arguments."""
    return isinstance(value, _kept_kinds())


def _repeats(made: list[int | None]) -> list[int] | None:
    """Plan.same from the ids of the tensors the plan makes per result leaf (None for any
    other leaf: an argument returned as is is one object already); None when no tensor
    comes twice."""
    first: dict[int, int] = {}
    same = [i if key is None else first.setdefault(key, i) for i, key in enumerate(made)]
    return same if same != list(range(len(made))) else None


def _layout(impl) -> tuple:
    """What a plan assumes of an argument: its impl, shape, strides, offset, storage and the
    storage's size (compared by identity, then by value)."""
    return (impl, impl.shape, impl.strides, impl.offset, impl.storage, impl.storage.nbytes)


def _writes(step) -> list[View]:
    """The views a recorded or planned step writes (an extern: the tensors it returned that
    it did not make, as an `out=` write returns them; its in-place writes bump versions,
    which extern_bumps counts)."""
    if type(step) is p.ExternCall:
        return [spec[0] for spec in step.out_leaves if type(spec) is tuple and not spec[1]]
    if type(step) is p.RowGroup:
        return [v for m in step.members for v in m.outs]
    return list(getattr(step, "outs", ()))


def _compile_ahead(steps: list, slots: list) -> None:
    """Compile the new CPU kernels of a segment's launches side by side (cpu/ahead.py)."""
    from kael.codegen.cpu.ahead import compile_ahead
    from kael.ir.views import numel
    from kael.runtime.device import CPU

    calls = []
    for s in steps:
        if type(s) is p.RowGroup:
            calls += s.members
        elif type(s) is p.KernelCall:
            calls.append(s)
        elif getattr(s, "epilogue", None) is not None:  # a matrix product's
            calls.append(s.epilogue)
    compile_ahead(
        [
            c.specialized(slots)
            for c in calls
            if slots[c.outs[0].buffer].device is CPU and numel(c.outs[0].shape)
        ]
    )


def _flags(kernel) -> bool:
    from kael.ir.expr import Unary, walk
    from kael.ir.reduction import Reduction

    exprs = kernel.epilogues if isinstance(kernel, Reduction) else kernel.exprs
    return any(isinstance(n, Unary) and n.op == "flag" for e in exprs for n in walk(e))


def user_line() -> str:
    """' at FILE:LINE: `source`' for the innermost frame outside kael, or ''."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_KAEL_DIR):
        frame = frame.f_back
    if frame is None:
        return ""
    filename, line = frame.f_code.co_filename, frame.f_lineno
    source = linecache.getline(filename, line).strip()
    return f" at {filename}:{line}" + (f": `{source}`" if source else "")


# ---- the op door ---------------------------------------------------------------------------


# Python's own errors that a bad argument can raise deep inside an op (an int where a
# sequence goes, None compared with a number, a list built from a huge count), and the
# kael error each becomes at the op's door: typed, naming the op, the message kept.
_LEAKED = {
    builtins.TypeError: errors.TypeError,
    builtins.AttributeError: errors.TypeError,  # a value of the wrong type had no such attribute
    builtins.ValueError: errors.ValueError,
    builtins.ZeroDivisionError: errors.ValueError,
    builtins.OverflowError: errors.ValueError,
    builtins.MemoryError: errors.ValueError,
    builtins.IndexError: errors.IndexError,
    builtins.KeyError: errors.KeyError,
}


def _typed(name: str, error: BaseException) -> BaseException:
    """A Python error an op leaked as the kael error _LEAKED gives its type: itself when it
    is a kael error or another kind, or when the innermost Python frame it passed is not
    kael's (a user's callback: apply_'s function, an __index__) and its type is theirs."""
    if isinstance(error, errors.Error) or not _raised_in_kael(error):
        return error
    for kind, typed in _LEAKED.items():
        if isinstance(error, kind):
            message = str(error)
            called = _NAMED.match(message)  # Python's argument errors name the function
            if called is None or not called.group(1).endswith(name.rsplit(".", 1)[-1]):
                message = f"{name}(): {message}"
            if not isinstance(error, (builtins.TypeError, builtins.ValueError)):
                message += f" ({type(error).__name__})"
            return typed(message)
    return error


def _raised_in_kael(error: BaseException) -> bool:
    """Whether the innermost Python frame `error` passed is in kael's package (a builtin
    kael called raised it, or kael's own code)."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is None or tb.tb_frame.f_code.co_filename.startswith(_KAEL_DIR)


_NAMED = re.compile(r"^([\w.]+)\(\) ")


def op_door(name: str, fn: Callable) -> Callable:
    """`fn` as a public op: eager as it is, and recorded or run as an extern under tracing.
    A Python error it leaks (_LEAKED) leaves it as a kael error."""

    def door(*args, **kwargs):
        try:
            if kwargs:
                kwargs = torch_keywords(kwargs)
            trace = state.trace
            if trace is None or trace.depth:
                if profiling.active is not None:  # kael.profiler records the call
                    return profiling.active.op(name, fn, args, kwargs)
                return fn(*args, **kwargs)
            return trace.call_op(name, fn, args, kwargs)
        except tuple(_LEAKED) as error:
            typed = _typed(name, error)
            if typed is error:
                raise
            raise typed from error

    door.__name__ = getattr(fn, "__name__", name)
    door.__qualname__ = getattr(fn, "__qualname__", name)
    door.__doc__ = fn.__doc__
    door.__wrapped__ = fn
    return door


def data_dependent(what: str) -> None:
    """Mark Python that needs a tensor's values (item, bool, numpy, a data-sized shape): the
    user's ends the trace; an op's makes it an extern step whose output shapes each call
    checks."""
    trace = state.trace
    if trace is not None:
        trace.data_dependent(what)


def reseed(generator, seed: int, offset: int = 0) -> None:
    """Mark a manual_seed (or set_state): under a trace, the plan repeats it at its place."""
    trace = state.trace
    if trace is not None and not trace.depth:
        trace.reseed(generator, seed, offset)


def generator_read(generator) -> None:
    """Mark Python reading a generator's state (initial_seed, get_state)."""
    trace = state.trace
    if trace is not None:
        trace.generator_read(generator)


def host_read(what: str) -> None:
    """Mark kael code reading a tensor's memory on the host."""
    trace = state.trace
    if trace is not None:
        trace.host_read(what)


class _RandomHook(threading.local):
    """The calling thread's stand-in for `fresh_reserve`: kael.func.vmap's randomness mode
    (refuse, or hand every slice the same counters), or None outside vmap."""

    reserve = None


random_hook = _RandomHook()


def reserve(count: int, generator=None):
    """(seed, first counter) words for `count` random counters of `generator` (None: the
    default one): fresh_reserve's, or those of the vmap randomness mode in force."""
    hook = random_hook.reserve
    if hook is not None:
        return hook(count, generator)
    return fresh_reserve(count, generator)


def fresh_reserve(count: int, generator=None):
    """Fresh counters, traced or eager. A plan draws from the default generator only: an
    op with its own generator runs as an extern step, drawing from it at each call."""
    from kael.frontend.random import default_generator, reserve_words

    trace = state.trace
    if trace is not None:
        if generator is not None and generator is not default_generator:
            raise NeedsExtern("a random op with its own generator")
        return trace.reserve(count)
    return reserve_words(count, generator)


def new_storage(nbytes: int, device: Device) -> Storage:
    trace = state.trace
    if trace is not None:
        return trace.new_storage(nbytes, device)
    return Storage(nbytes, device)
