"""@kael.compile: a function traced once per call signature into a fused plan, replayed after.

A call's signature is its argument tree with, per tensor, dtype, device, shape, strides,
offset, storage size and which earlier argument's storage it shares (so aliasing is part
of the key), and the value of every other argument except Python floats, which are
run-time parameters (unless the trace used their value in Python, or the function names
math, cmath or struct, whose C code reads a float unseen). An argument object that the
pytree does not open (a user's class, a dataclass, a dict or list subclass) is described
by what it holds, HELD_DEPTH deep: its tensors are inputs of the plan as tensor arguments
are, its other values are guarded by value (floats too) or identity; a call that rebinds
what one holds, or one holding more than MAX_HELD values, runs eagerly. Tensors and
constants the function reads from its globals, closure cells and default arguments (or
objects there), and the identity of every function or callable it names there, are checked
at every call (_implicit_sources), and so are those of the functions it reaches (helpers,
methods of the objects it names, functions a dict holds): one rebound traces again; what
lies past HELPER_DEPTH functions or HELD_DEPTH attributes makes it run eagerly, warned of.
A tensor argument's class is part of its signature. Calls with the same
signature run the plan; a new shape re-traces in Python but compiles nothing new, since
kernels take sizes and strides at run time. A new guard (dtype, rank, size-1 pattern,
layout class, aliasing, constants) counts as a recompile, and each says what changed.

The signature a function last ran by the positional path is also written out as a guard
in front of its plan's replay (frontend/guard.py): a call like the last one is checked and
run by one generated function, without building its signature.
"""

from __future__ import annotations

import collections
import enum
import functools
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from kael.frontend import autocast, factories, pytree, replay, tracing
from kael.frontend import plan as p
from kael.frontend.guard import MISS, supported
from kael.frontend.plan_matmul import MatmulCall
from kael.frontend.random import Generator, default_generator
from kael.frontend.tensor import Tensor
from kael.runtime import debug, sync, user_warning
from kael.runtime.device import Device
from kael.runtime.dtypes import DType, on_default_dtype_change
from kael.runtime.errors import ValueError as KaelValueError
from kael.runtime.tensor_impl import contiguous_strides
from kael.runtime.threadpool import get_num_threads
from kael.runtime.tracestate import epoch, handle_epoch, state

MAX_PLANS = 256  # traced signatures kept per function (shapes are unbounded)


@dataclass
class CacheInfo:
    """What a compiled function holds: traced plans, guards, and why each recompile ran."""

    plans: int
    guards: int
    hits: int
    traces: int
    recompiles: list[str] = field(default_factory=list)


@dataclass
class _Entry:
    """The plans of one signature, by the values of the float arguments the trace used."""

    used: tuple[int, ...]
    plans: dict[tuple, p.Plan]
    implicit: list  # (getter, layout, words): tensors read from globals and closure cells
    constants: list  # (getter, value, its part, words): constants read from them
    sizes: list  # (getter, length, words): the lists and dicts among them (_Sources.sizes)
    items: list  # (getter, a copy, words): the lists and dicts of constants (_Sources.items)
    # the plan every call of this signature runs, where the signature and still_read decide
    # it (no float argument used as a value, no fallback)
    positional: p.Plan | None = None
    guarded: replay.Replay | None = None  # positional's replay behind this signature's guard
    # the unhashable arguments the signature names by id, kept alive so no new object can
    # take that id and this signature's plans while they exist
    held: list = field(default_factory=list)
    test: Callable[[], bool] | None = None  # still_read's generated test

    @property
    def reads_outside(self) -> bool:
        """Whether its plans read anything from outside the arguments that is guarded."""
        return bool(self.implicit or self.constants or self.sizes or self.items)

    def still_read(self) -> bool:
        """Whether the names and paths its plans read from outside the arguments still hold
        what they held at the trace: the same tensors (by layout) and constants (the same
        object, or an equal value), lists and dicts of the same lengths. One generated
        function, a line per name, tests them all (every guarded call runs it)."""
        test = self.test
        if test is None:
            test = self.test = _still_reading(self)
        return test()

    def source_words(self) -> list[str]:
        """What its plans read from outside the arguments, in words (Inspection's guard)."""
        tensors = [f"{words}: this tensor (storage and layout)" for *_, words in self.implicit]
        values = [f"{words} == {_held_word(part)}" for _, _, part, words in self.constants]
        sizes = [f"len({words}) == {n}" for _, n, words in self.sizes]
        return (
            tensors + values + sizes + [f"{words} == {len(c)} items" for _, c, words in self.items]
        )


def _still_reading(entry: _Entry) -> Callable[[], bool]:
    """_Entry.still_read's test, written out for `entry`: what a loop over its lists did."""
    names: dict = {"_reads": _reads, "_part": _constant_part, "_length": _length}
    lines = []
    for k, (get, layout, _) in enumerate(entry.implicit):
        names[f"tg{k}"], names[f"tl{k}"] = get, layout
        lines.append(f"if not _reads(tg{k}, tl{k}): return False")
    for k, (get, value, part, _) in enumerate(entry.constants):
        names[f"cg{k}"], names[f"cv{k}"], names[f"cp{k}"] = get, value, part
        lines += [f"n = cg{k}()", f"if n is not cv{k} and _part(n) != cp{k}: return False"]
    for k, (get, length, _) in enumerate(entry.sizes):
        names[f"sg{k}"] = get
        lines.append(f"if _length(sg{k}()) != {length}: return False")
    for k, (get, copy, _) in enumerate(entry.items):
        names[f"ig{k}"], names[f"ic{k}"] = get, copy
        lines.append(f"if ig{k}() != ic{k}: return False")
    return replay.function("still_read()", [*lines, "return True"], names, "guard")[0]


_FLOAT = (float,)
_INT = (int,)  # an int argument made dynamic: its value is no part of the signature


def _dynamic_leaves(key: tuple) -> list[int]:
    """The leaves a signature takes as dynamic ints."""
    return [i for i, part in enumerate(key[1]) if part is _INT]


def _int_constant(part: tuple) -> bool:
    """Whether a signature part is an int argument's value (one that may turn dynamic)."""
    return part[0] == "const" and part[1] is int


def _generator_part(generator, seen: list) -> tuple:
    """A generator leaf's part: the default generator by name (an op reserves from it
    apart, and code may test `g is kael.default_generator`), any other by the first
    earlier leaf that is the same object (one generator passed twice is one stream),
    else by kind alone."""
    if generator is default_generator:
        return ("generator", "default")
    for i, g in enumerate(seen):
        if g is generator:
            return ("generator", i)
    seen.append(generator)
    return ("generator", len(seen) - 1)


# Kinds of constant whose every value hashes (kael.compile(step)(kael, x): a module, a dim,
# a name, a dtype): a Tensor subclass is none of them.
_HASHED = frozenset({int, bool, str, type(None), types.ModuleType, DType, Device})


def _describe(leaf) -> tuple:
    """A non-tensor leaf's part of the signature (a float's value is added only where it
    was used; _signature describes tensors)."""
    kind = type(leaf)
    if kind is float:
        return _FLOAT
    try:
        hash(leaf)
    except TypeError:
        return ("object", kind, id(leaf))
    return ("const", kind, leaf)


def _signature(leaves: list, treedef, plain: bool = False) -> tuple[list, tuple | None]:
    """(the call's tensors, the call's signature key). The tensors are the tensor leaves
    and the tensors each argument object holds (_held), in leaf order: the plan's inputs. With `plain` (the arguments as they were passed), the key is None
    where one is a list, tuple or dict (_positional leaves those to _lookup, which
    flattens them)."""
    tensors = []
    storages = []  # of the tensors so far: a new one's alias is the first it is
    generators: list = []  # of the generator leaves so far, likewise
    parts = []
    for leaf in leaves:
        kind = type(leaf)
        if kind is float:
            parts.append(_FLOAT)
        elif kind in _HASHED:  # _describe's answer for the usual constants, without a frame
            parts.append(("const", kind, leaf))
        elif kind is Tensor or isinstance(leaf, Tensor):
            parts.append(_tensor_part(leaf, tensors, storages))
        elif kind is Generator:  # any generator: a plan takes the call's own
            parts.append(_generator_part(leaf, generators))
        elif plain and pytree.is_container(leaf):
            return tensors, None
        else:
            parts.append(_held(leaf, tensors, storages) or _describe(leaf))
    for j in p.relative_args(tensors) if tensors else ():  # its offset: any, each call's
        k = next((i for i, v in enumerate(leaves) if v is tensors[j]), None)  # a leaf's
        if k is not None:
            parts[k] = (*parts[k][:5], None, *parts[k][6:])
    return tensors, (treedef, tuple(parts))


def _tensor_part(tensor: Tensor, tensors: list, storages: list) -> tuple:
    """A tensor's part of the signature, with the first earlier tensor of the call whose
    storage it shares (its alias) and its class (a subclass's methods may do otherwise);
    the tensor joins `tensors` and its storage `storages`."""
    impl = tensor._impl
    storage = impl.storage
    alias = len(tensors)
    for i, s in enumerate(storages):
        if s is storage:
            alias = i
            break
    tensors.append(tensor)
    storages.append(storage)
    return (
        "tensor", impl.dtype, impl.device, impl.shape, impl.strides, impl.offset,
        storage.nbytes, alias, type(tensor),
    )  # fmt: skip


# How deep an argument object is looked into (o.layers[0].weight is three deep) and how
# many values it may hold: past either, calls with it run eagerly.
HELD_DEPTH = 4
MAX_HELD = 256


class _Same:
    """A value a signature compares by identity (kept alive, so no other object takes its
    id while the signature exists)."""

    __slots__ = ("value",)

    def __init__(self, value) -> None:
        self.value = value

    def __eq__(self, other) -> bool:
        return type(other) is _Same and other.value is self.value

    def __hash__(self) -> int:
        return id(self.value)

    def __repr__(self) -> str:
        return f"the {type(self.value).__name__} object at {id(self.value):#x}"


def _held(leaf, tensors: list, storages: list) -> tuple | None:
    """An argument object's part of the signature (a user's class, a dataclass, a dict or
    list subclass...: a leaf that holds values): its kind, the path of everything it holds
    and each value's part. Its tensors are inputs of the plan, as arguments are (so one
    rebound between calls is read, and guarded by layout); any other value is guarded by
    value or identity (so the plan is traced again for a new `o.scale`). None for a leaf
    described as a whole (_describe); ("holds", kind, None) for one too big to guard."""
    if not _looked_into(leaf):
        return None
    found = contents(leaf)
    if found is None:
        return ("holds", type(leaf), None)
    paths, values = found
    parts = [_tensor_part(v, tensors, storages) if isinstance(v, Tensor) else v for v in values]
    return ("holds", type(leaf), paths, tuple(parts))


def contents(node) -> tuple[tuple, list] | None:
    """(the path of each value an argument object holds, the values: a tensor as it is,
    anything else as its part), or None where it holds too much to guard (_gather)."""
    paths, values = [], []
    if not _gather(node, (), HELD_DEPTH, {id(node)}, paths, values):
        return None
    return tuple(paths), values


def _looked_into(value) -> bool:
    """Whether a signature describes `value` by what it holds: an object that is not kept
    whole (tracing.kept_whole) with attributes, or a dict, list or tuple."""
    return not tracing.kept_whole(value) and (
        isinstance(value, _NODES) or hasattr(value, "__dict__") or bool(_slot_names(type(value)))
    )


_SEQUENCES = (list, tuple, collections.deque)
_NODES = (*_SEQUENCES, dict)


def _gather(node, path: tuple, depth: int, seen: set, paths: list, values: list) -> bool:
    """Append the path and value of everything `node` holds, `depth` nodes deep: a tensor
    as it is, a nested node as ("node", its kind) followed by what it holds, any other
    value as its part (_value_part). False where that passes MAX_HELD values or the depth."""
    for key, value in _members(node):
        here = (*path, key)
        paths.append(here)
        if isinstance(value, Tensor):
            values.append(value)
        elif id(value) not in seen and _looked_into(value):
            if not depth:
                return False
            values.append(("node", type(value)))
            if not _gather(value, here, depth - 1, seen | {id(value)}, paths, values):
                return False
        else:
            values.append(_value_part(value))
        if len(values) > MAX_HELD:
            return False
    return True


def _members(node) -> list[tuple[tuple, object]]:
    """(key, value) of what `node` holds: its items (by key or position), then its
    attributes (its __dict__ and __slots__), then its class's constants it does not shadow
    (`self.eps` of `class Cfg: eps = 1e-5`); a key is ("[]", key) or (".", name)."""
    # (list() copies at once: another thread may add a key or an attribute meanwhile)
    if isinstance(node, dict):
        found = [(("[]", _key(k)), v) for k, v in list(node.items())]
    elif isinstance(node, _SEQUENCES):
        found = [(("[]", i), v) for i, v in enumerate(list(node))]
    else:
        found = []
    own = list((getattr(node, "__dict__", None) or {}).items())
    found += [((".", k), v) for k, v in own]
    kind = type(node)
    for name in _slot_names(kind):
        if hasattr(node, name):
            found.append(((".", name), getattr(node, name)))
    names = _class_constants(kind)
    if names:
        shadowed = {k for k, _ in own}
        found += [((".", n), getattr(kind, n, _GONE)) for n in names if n not in shadowed]
    return found


# class -> (the sizes of its classes' namespaces, the names _class_constants found then)
_class_names: dict[type, tuple[tuple | None, tuple]] = {}


def _class_constants(kind: type) -> tuple[str, ...]:
    """The names a user class (or a base of it) holds a constant or a tensor under in its
    own namespace (not a dunder, a method or a descriptor): values its instances read as
    their attributes, which a plan may bake in. Kept per class while no namespace of its
    classes changes size (a constant added later is found)."""
    known = _class_names.get(kind)
    if known is not None and known[0] is None:  # kael's, NumPy's, torch's, a builtin type
        return ()
    if known is None and (_own(kind.__module__ or "") or kind.__module__ == "types"):
        if len(_class_names) >= 1024:
            _class_names.clear()
        _class_names[kind] = (None, ())
        return ()
    classes = kind.__mro__[:-1]  # object's own namespace holds none
    sizes = tuple(map(len, map(vars, classes)))
    if known is not None and known[0] == sizes:
        return known[1]
    names = []
    for klass in classes:
        for name, value in list(vars(klass).items()):
            fresh = not name.startswith("__") and name not in names
            if fresh and (isinstance(value, Tensor) or _guarded(value)):
                names.append(name)
    if len(_class_names) >= 1024:
        _class_names.clear()
    _class_names[kind] = (sizes, tuple(names))
    return tuple(names)


def _key(key):
    """A dict key as a signature holds it: by value, or by identity where its == is not a
    plain bool (a tensor)."""
    return key if type(key) in _HASHED else _Same(key)


@functools.cache
def _slot_names(kind: type) -> tuple[str, ...]:
    """The __slots__ of `kind` and its bases (their __dict__ and __weakref__ left out)."""
    names = []
    for base in kind.__mro__:
        slots = base.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else list(slots)
    return tuple(n for n in names if n not in ("__dict__", "__weakref__"))


def _value_part(value) -> tuple:
    """The part of a value an argument object holds: a float by its exact value (float.hex
    tells -0.0 from 0.0 and finds a NaN again), the usual constants by value, anything else
    by identity."""
    kind = type(value)
    if isinstance(value, float):
        return ("float", kind, float.hex(value))
    if isinstance(value, complex):  # both parts by their exact values, as a float
        return ("complex", kind, float.hex(value.real), float.hex(value.imag))
    if kind in _HASHED:
        return ("const", kind, value)
    return ("same", _Same(value))


def _float_key(values: list) -> tuple:
    """The floats, dynamic ints (and generators) a trace used as values, as a key that
    tells -0.0 from 0.0 and finds a NaN again (float.hex: exact, signed, and NaN equal to
    itself); a generator whose state Python read, by identity."""
    return tuple(
        float(v).hex() if type(v) is float else v if type(v) is int else _key_part(v)
        for v in values
    )


def _key_part(value) -> object:
    """A used leaf that is no number: a 0-d tensor argument whose place the plan read
    (Trace._settle_arguments) by its offset, anything else (a generator) by identity."""
    if isinstance(value, Tensor):
        return ("at", value._impl.offset)
    return _Same(value)


def _coarse(key: tuple, used_values: tuple) -> tuple:
    """The coarse form of a signature: sizes dropped, their size-1 pattern and layout kept."""
    treedef, parts = key
    return (treedef, tuple(map(_coarse_part, parts)), used_values)


def _coarse_part(part: tuple) -> tuple:
    """One part's coarse form (an argument object's: that of each tensor it holds)."""
    if part[0] == "tensor":
        _, dtype, device, shape, strides, offset, _, alias, kind = part
        dense = strides == contiguous_strides(shape)
        return (dtype, device, len(shape), tuple(s == 1 for s in shape), dense, alias, kind)
    if part[0] == "holds" and part[2] is not None:
        return (*part[:3], tuple(map(_coarse_part, part[3])))
    return part


def _what_changed(old: tuple, new: tuple) -> str:
    """Words for the first difference between two guards."""
    if old[0] != new[0]:
        return "the structure of the arguments changed"
    names = ("dtype", "device", "rank", "size-1 dims", "contiguity", "aliasing", "class")
    for i, (a, b) in enumerate(zip(old[1], new[1])):
        if a == b:
            continue
        if a[0] == b[0] == "holds" and a[1] is b[1]:
            return f"argument {i}: {_held_change(a, b)}"
        if len(a) == len(b) == len(names):
            for name, x, y in zip(names, a, b):
                if x != y:
                    return f"argument {i}: {name} changed from {_word(x)} to {_word(y)}"
        if _word(a) == _word(b):  # equal in repr, another object: a Generator, a module
            return f"argument {i} is another {type(b[2]).__name__} object ({_word(b)}): a plan is kept per object"
        return f"argument {i} changed from {_word(a)} to {_word(b)}"
    if len(old[1]) != len(new[1]):  # _lookup appends the default device and autocast state
        settings = [dict(p for p in guard[1] if _is_setting(p)) for guard in (old, new)]
        for name in ("default device", "autocast"):
            if settings[0].get(name) != settings[1].get(name):
                return f"the {name} changed (now {settings[1].get(name, 'none')})"
    if old[3] != new[3]:
        return _source_change(dict(old[3]), dict(new[3]))
    values = [
        tuple(float.fromhex(h) if type(h) is str else h for h in guard[2]) for guard in (old, new)
    ]
    return (
        "arguments used as Python values (floats, ints, generators' states) changed:"
        f" {values[0]} -> {values[1]}"
    )


def _source_change(old: dict, new: dict) -> str:
    """Words for the first difference between what two traces read from outside the
    arguments (a constant's part, or a list's or dict's length, by its words)."""
    for words, part in new.items():
        was = old.get(words)
        if was == part:
            continue
        if was is None:
            return f"{words} is read now"
        if isinstance(part, int):
            return f"the length of {words} changed from {was} to {part}"
        return f"{words} changed from {_held_word(was)} to {_held_word(part)}"
    return "a global it read is gone"


def _held_change(old: tuple, new: tuple) -> str:
    """Words for the first difference between what two argument objects of one kind hold
    (coarse parts: _coarse_part)."""
    kind = old[1].__name__
    if old[2] != new[2]:
        return f"the {kind} holds other attributes or items"
    for path, a, b in zip(new[2], old[3], new[3]):
        if a != b:
            where = kind + "".join(f".{k}" if how == "." else f"[{k!r}]" for how, k in path)
            return f"{where} changed from {_held_word(a)} to {_held_word(b)}"
    return f"the {kind} changed"


def _held_word(part: tuple) -> str:
    """A value an argument object holds, in words, from its (coarse) part."""
    tag = part[0]
    if tag == "float":
        return repr(float.fromhex(part[2]))
    if tag in ("const", "same"):
        return repr(part[-1])
    if tag == "bits":  # a NumPy scalar (_constant_part)
        return part[3]
    if tag == "complex":
        return repr(complex(float.fromhex(part[2]), float.fromhex(part[3])))
    if tag == "node":
        return f"a {part[1].__name__}"
    if tag == "items":  # a list or dict of constants (_Sources.items)
        return repr(part[1]) if len(part[1]) <= 6 else f"{len(part[1])} items"
    dtype, device, rank = part[:3]  # a tensor's coarse part
    return f"a {dtype} tensor of rank {rank} on {device}"


def _is_setting(part) -> bool:
    """A signature part _lookup appended: ("default device", ...) or ("autocast", ...)."""
    return isinstance(part, tuple) and len(part) == 2 and part[0] in ("default device", "autocast")


def _word(value) -> str:
    if value == _INT:
        return "a dynamic int"
    if isinstance(value, tuple) and value and value[0] == "const":
        return repr(value[2])
    if isinstance(value, type):
        return value.__name__
    return str(value)


# How deep _implicit_sources follows the functions a function calls by name.
HELPER_DEPTH = 16
# How many values the objects a function names in its globals and closure cells may hold
# (a list of tensors, a config): past it, calls of that function run eagerly.
MAX_SOURCES = 4096

# Kinds of value read from a global, a closure cell or an object there that a trace takes
# as a constant of its plan, so a plan guards them by value (_constant_part).
_GUARDED_VALUES = (int, float, complex, bool, str, type(None), DType, Device, enum.Enum)
_OWN_MODULES = ("kael", "numpy", "torch", "builtins")


@dataclass
class _Sources:
    """What a function reads from outside its arguments, found by name (_implicit_sources):
    its tensors by storage id, each (a getter of the name or path, the layout a plan read,
    its words); its numbers and other constants, each (a getter, the value, its
    _constant_part, its words); the lengths of the lists and dicts it may walk, each (a
    getter, the length, its words); and, where what it reads is too much or too deep to
    guard, why (the signature then runs eagerly)."""

    tensors: dict = field(default_factory=dict)
    values: list = field(default_factory=list)
    sizes: list = field(default_factory=list)
    items: list = field(default_factory=list)  # (getter, a copy, words): _collect_held's
    overflow: str | None = None
    read: frozenset = frozenset()  # the names the code of the function and its helpers reads

    def parts(self) -> tuple:
        """What a trace read, by value: two snapshots around a call are equal unless the
        call (or another thread) rebound one."""
        tensors = tuple((w, id(layout[0]), layout[1:]) for _, layout, w in self.tensors.values())
        return tensors, self.constant_parts(), self.overflow

    def constant_parts(self) -> tuple:
        """(words, part) of every constant, list length and list of constants it read."""
        values = tuple((w, part) for _, _, part, w in self.values)
        sizes = tuple((w, n) for _, n, w in self.sizes)
        return values + sizes + tuple((w, ("items", copy)) for _, copy, w in self.items)


def _implicit_sources(fn: Callable) -> _Sources:
    """Tensors and constants the function reads from its globals and closure cells,
    directly or held by an object there (`cfg.w`, `params["w"]`, `cfg.eps`, a class's or a
    module's attribute the code names; HELD_DEPTH deep, an nn.Module left to the handle
    epoch), and those of the plain functions it names there or reaches through what it
    names (_reachable; HELPER_DEPTH deep; kael's own left out), of a partial's function and
    arguments and of a bound method's object; each function or callable it names by
    identity, and its default arguments: a plan is traced again when one is rebound, as
    torch.compile's guards do."""
    found = _Sources()
    fn, bound = _unwrapped(fn)
    found.read = _names_read(fn, HELPER_DEPTH, set())
    for words, value in bound:
        get = functools.partial(_same_object, value)
        _collect_value(words, get, value, found.read, found, [])
    _collect_sources(fn, found, HELPER_DEPTH, set())
    return found


def _names_read(fn, depth: int, seen: set) -> frozenset:
    """The names (and string constants) the code of fn and of the helpers it names reads:
    an attribute of an object a helper is handed (`helper(cfg, x)` reading cfg.eps) counts."""
    code = getattr(fn, "__code__", None)
    if code is None or id(fn) in seen:
        return frozenset()
    seen.add(id(fn))
    read = _code_names(code)
    if depth:
        g = getattr(fn, "__globals__", {})
        named = [g.get(name) for name in read] + _cell_values(fn)
        named += [value for _, value in _defaults(fn)]
        for value in named:
            found = [_plain_fn(value)] if _helper(value) else _reachable(value, read)
            for helper in found:
                read = read | _names_read(helper, depth - 1, seen)
    return read


def _reachable(value, read: frozenset) -> list:
    """The user's functions an object, class, module or container named in globals or a
    closure leads to under the names the code reads: its methods (and __call__), a class's
    static and class methods, a module's functions, the functions a dict holds under a key
    the code names or a list holds: what `OBJ.apply(x)` or `FNS["act"](x)` runs."""
    if _helper(value) or isinstance(value, Tensor) or _guarded(value):
        return []
    if isinstance(value, dict):
        found = [v for k, v in list(value.items()) if k in read]
    elif isinstance(value, _SEQUENCES):
        found = list(value)
    elif isinstance(value, types.ModuleType):
        found = [] if _own(value.__name__) else [getattr(value, n, None) for n in read]
    else:  # each name as Python finds it (the first class holding it), __call__ too
        get = functools.partial(_same_object, value)
        names = read if isinstance(value, type) else read | {"__call__"}
        found = [_static_attribute(get, n) for n in names]
    found = [_code_of(v) for v in found]
    return [_plain_fn(v) for v in found if _helper(v)]


def _code_of(value):
    """The function behind a static or class method's or a property's (its getter)."""
    if isinstance(value, property):
        return value.fget
    return getattr(value, "__func__", value)


def _helper(value) -> bool:
    """Whether `value` is a function whose code _implicit_sources looks into."""
    return isinstance(value, CompiledFunction) or _user_function(value)


def _plain_fn(helper):
    """The plain function a helper runs (a compiled one's own)."""
    return helper.fn if isinstance(helper, CompiledFunction) else helper


def _defaults(fn) -> list:
    """fn's default arguments, each (its position or keyword's name, its value)."""
    defaults = [*enumerate(getattr(fn, "__defaults__", None) or ())]
    return defaults + list((getattr(fn, "__kwdefaults__", None) or {}).items())


def _unwrapped(fn) -> tuple[Callable | None, list]:
    """The plain function a compiled callable runs, and the objects it is bound to (a
    partial's arguments, a bound method's self), each (words, object)."""
    from kael.nn.modules.module import Module  # kael.nn imports this module's package

    bound = []
    for _ in range(8):
        if isinstance(fn, CompiledFunction):
            fn = fn.fn
        elif isinstance(fn, functools.partial):
            bound += [(f"an argument of {fn!r}", v) for v in (*fn.args, *fn.keywords.values())]
            fn = fn.func
        elif isinstance(fn, types.MethodType):
            bound.append((f"the object of {fn.__func__.__qualname__}", fn.__self__))
            fn = fn.__func__
        elif isinstance(fn, Module):
            fn = type(fn).forward
        else:
            break
    return (fn if hasattr(fn, "__code__") else None), bound


def _same_object(value):
    return value


def _own(module: str) -> bool:
    """Whether a module name is kael's, NumPy's, torch's or the builtins' (their constants
    are not the user's to rebind)."""
    return module.split(".", 1)[0] in _OWN_MODULES


def _collect_sources(fn, found: _Sources, depth: int, seen: set) -> None:
    code = getattr(fn, "__code__", None)
    if code is None or id(fn) in seen:
        return
    seen.add(id(fn))
    g = getattr(fn, "__globals__", {})
    read = found.read  # the paths into objects: the names any of the code reads
    # the globals its own code names, its nested code's too (a comprehension, a lambda)
    named = [(f"global {name}", functools.partial(g.get, name, _GONE), g[name])
             for name in sorted(_code_names(code)) if name in g]  # fmt: skip
    free = code.co_freevars
    for name, cell in zip(free, getattr(fn, "__closure__", None) or ()):
        try:
            value = cell.cell_contents
        except ValueError:  # a cell not yet assigned
            continue
        named.append((f"closure {name}", functools.partial(getattr, cell, "cell_contents"), value))
    own = _own(getattr(fn, "__module__", None) or "")
    helpers: list = []
    for words, get, value in named:
        if own and not isinstance(value, Tensor):  # kael's constants and helpers stay
            continue
        _collect_value(words, get, value, read, found, helpers)
    if not own:  # its defaults, as what it names (held values, a list compared whole)
        for which, value in _defaults(fn):
            get = functools.partial(_default, fn, which)
            _collect_value(
                f"default {which} of {fn.__qualname__}", get, value, read, found, helpers
            )
    for helper in helpers:
        if id(helper) in seen:
            continue
        if depth:
            _collect_sources(helper, found, depth - 1, seen)
            continue
        probe = _Sources(read=read)  # past the depth: only a helper that reads nothing
        _collect_sources(helper, probe, 0, set(seen))
        if probe.tensors or probe.constant_parts() or probe.overflow:
            found.overflow = found.overflow or (
                f"it calls {helper.__qualname__} through more than {HELPER_DEPTH} functions, "
                "too deep to guard what it reads"
            )


def _collect_value(words: str, get: Callable, value, read: frozenset, found, helpers) -> None:
    """Record one named value: a tensor, a constant, a helper function to look into, or
    what an object holds (for a class or a module: the attributes the code names)."""
    if isinstance(value, Tensor):
        found.tensors.setdefault(id(value._impl.storage), (get, _layout_of(value._impl), words))
        return
    if _guarded(value):
        found.values.append((get, value, _constant_part(value), words))
        return
    if _callable(value):  # a function, a module, a callable: rebound, traced again
        found.values.append((get, value, ("same", _Same(value)), words))
    if _helper(value):
        helpers.append(_plain_fn(value))
        return
    if isinstance(value, (type, types.ModuleType)):
        if not _own(getattr(value, "__module__", None) or getattr(value, "__name__", "")):
            _collect_attributes(words, get, value, read, found, helpers)
        return
    if not isinstance(value, _NODES):
        _collect_methods(words, get, value, read, found, helpers)
    if _looked_into(value):
        _collect_held(words, get, value, read, found, helpers)


def _collect_attributes(
    words: str, get: Callable, owner, read: frozenset, found, helpers: list
) -> None:
    """The tensors, constants and callables a class or module holds under the names the
    code reads (a module's function, a class's static or class method: by identity, and
    the user's looked into as helpers)."""
    space = vars(owner)
    for name in sorted(read & space.keys()):
        value = space[name]
        if name.startswith("__"):  # the module's or class's own (its __name__, __doc__)
            continue
        where = f"{words}.{name}"
        if isinstance(value, Tensor) or _guarded(value):
            follow = functools.partial(_follow, get, ((".", name),))
            _collect_value(where, follow, value, read, found, [])
        elif _callable(value):
            follow = functools.partial(_static_attribute, get, name)
            _guard_callable(where, follow, value, found, helpers)


def _collect_methods(words: str, get: Callable, value, read: frozenset, found, helpers) -> None:
    """The methods (and __call__) of an object the code names, looked up in its class as
    Python finds them, each guarded by identity (a method rebound on the class traces
    again) and the user's looked into as helpers."""
    kind = type(value)
    if _own(kind.__module__):
        return
    for name in sorted(read | {"__call__"}):
        method = _static_attribute(functools.partial(_same_object, value), name)
        if method is not _GONE and _callable(method) and not _own(_module_of(method)):
            follow = functools.partial(_static_attribute, get, name)
            _guard_callable(f"{words}.{name}", follow, method, found, helpers)


def _guard_callable(where: str, get: Callable, value, found, helpers: list) -> None:
    found.values.append((get, value, ("same", _Same(value)), where))
    inner = _code_of(value)
    if _helper(inner):
        helpers.append(_plain_fn(inner))


def _callable(value) -> bool:
    """Whether a value is code a call may run: a function, a callable object, a static or
    class method (not a class: calling one builds an object the trace sees)."""
    if isinstance(value, (staticmethod, classmethod, property)):  # (a property runs a getter)
        return True
    return callable(value) and not isinstance(value, type)


def _module_of(value) -> str:
    return getattr(_code_of(value), "__module__", None) or ""


def _instance_dict(value) -> dict:
    """An object's own attributes, or {} where it has none or its __dict__ raises (a
    user's __getattr__ may raise anything)."""
    try:
        return getattr(value, "__dict__", None) or {}
    except Exception:
        return {}


def _static_attribute(get: Callable, name: str):
    """`name` as Python finds it on the object get() returns, unbound: the instance's own
    attribute, else the first class in its MRO holding it (the function, staticmethod or
    classmethod object itself, rebound or not); _GONE where none does."""
    owner = get()
    if not isinstance(owner, type):
        mine = _instance_dict(owner)
        if name in mine:
            return mine[name]
        owner = type(owner)
    for kind in owner.__mro__:
        if name in vars(kind):
            return vars(kind)[name]
    return _GONE


def _collect_held(
    words: str, get: Callable, node, read: frozenset, found: _Sources, helpers: list
) -> None:
    """The tensors and constants an object named in globals or a closure holds, each with a
    getter of its path from the name (through the attributes the code names, every item of
    a list or dict), with the class constants the code names of each object (_members) and
    the length of each list and dict in it (a list or dict of more than
    WHOLE_ITEMS constants alone: its copy, compared whole with ==, one C-level test a call,
    which tells neither 1 from 1.0 nor 0.0 from -0.0 in it); past MAX_SOURCES values,
    `found.overflow`, as past HELD_DEPTH. A function it holds (`HO.fn`) is guarded by
    identity and looked into as a helper."""
    whole = set()  # the paths of the lists and dicts of constants compared whole
    count = 0
    for path, value in _walk(node, (), HELD_DEPTH, {id(node)}, read):
        if path[:-1] in whole:  # an item of a list compared whole: no guard of its own
            continue
        count += 1
        where = words + _path_words(path)
        if count > MAX_SOURCES or value is _TOO_DEEP:
            found.overflow = (
                f"{where} nests deeper than {HELD_DEPTH}, too deep to guard"
                if value is _TOO_DEEP
                else f"{words} holds more than {MAX_SOURCES} values, too many to guard"
            )
            return
        follow = functools.partial(_follow, get, path) if path else get
        if path and _callable(value) and not isinstance(value, Tensor):
            _guard_callable(where, follow, value, found, helpers)
        elif isinstance(value, Tensor):
            found.tensors.setdefault(
                id(value._impl.storage), (follow, _layout_of(value._impl), where)
            )
        elif (
            type(value) in _PLAIN_NODES
            and len(value) > WHOLE_ITEMS
            and all(map(_guarded, _contents(value)))
        ):
            whole.add(path)
            found.items.append((follow, type(value)(value), where))
        elif isinstance(value, _NODES):
            found.sizes.append((follow, len(value), where))
        elif _guarded(value):  # (the walk took only the attributes the code names)
            found.values.append((follow, value, _constant_part(value), where))


_PLAIN_NODES = (list, tuple, dict, collections.deque)
# Lists and dicts of constants longer than this are compared whole (_collect_held); shorter
# ones item by item, each by type and exact value.
WHOLE_ITEMS = 32


def _contents(node) -> list:
    """The values a list, tuple, deque or dict holds (a copy: another thread may add one)."""
    return list(node.values()) if isinstance(node, dict) else list(node)


def _walk(node, path: tuple, depth: int, seen: set, read: frozenset):
    """(path, value) of `node` itself and everything it holds, `depth` nodes deep: every
    item of a list or dict, an object's attributes only where the code names them (a
    logger's or a model's internals are not walked)."""
    yield path, node
    for key, value in _members(node):
        if key[0] == "." and key[1] not in read:
            continue
        here = (*path, key)
        if isinstance(value, Tensor) or id(value) in seen or not _looked_into(value):
            yield here, value
        elif depth:
            yield from _walk(value, here, depth - 1, seen | {id(value)}, read)
        elif type(key[1]) is not str or key[1] in read:  # a path the code may read goes on
            yield here, _TOO_DEEP


def _path_words(path: tuple) -> str:
    return "".join(f".{k}" if how == "." else f"[{_word_of_key(k)}]" for how, k in path)


def _word_of_key(key) -> str:
    return repr(key.value if type(key) is _Same else key)


def _guarded(value) -> bool:
    """Whether a value read from outside the arguments is guarded as a constant."""
    return isinstance(value, (*_GUARDED_VALUES, np.generic))


def _constant_part(value) -> tuple:
    """A guarded constant by value: _value_part's, a NumPy scalar by its bits."""
    if isinstance(value, np.generic) and not isinstance(value, (float, complex)):
        return ("bits", type(value), value.tobytes(), repr(value))
    return _value_part(value)


@functools.lru_cache(maxsize=1024)
def _code_names(code: types.CodeType) -> frozenset:
    """The names and string constants `code` and its nested code read: the globals, the
    attributes and keys a path into an object may take."""
    read = set()
    stack = [code]
    while stack:
        c = stack.pop()
        read.update(c.co_names)
        for const in c.co_consts:
            if isinstance(const, str):
                read.add(const)
            elif isinstance(const, types.CodeType):
                stack.append(const)
    return frozenset(read)


def _follow(get: Callable, path: tuple):
    """The value at `path` (_members' keys) from the object get() returns; _GONE where a
    step no longer exists."""
    node = get()
    for kind, key in path:
        try:
            if kind == ".":
                node = getattr(node, key)
            else:
                node = node[key.value if type(key) is _Same else key]
        except (LookupError, AttributeError, TypeError):
            return _GONE
    return node


_GONE = object()
_TOO_DEEP = object()  # _walk's value for a node past HELD_DEPTH that the code reads into


def _default(fn, which):
    """fn's default argument `which` (a position or a keyword's name), or _GONE."""
    try:
        return fn.__defaults__[which] if type(which) is int else fn.__kwdefaults__[which]
    except (LookupError, TypeError):
        return _GONE


def _length(value) -> int:
    return len(value) if isinstance(value, _NODES) else -1


def _user_function(value) -> bool:
    """Whether `value` is a plain Python function outside kael (a user's helper)."""
    module = getattr(value, "__module__", None) or ""
    return isinstance(value, types.FunctionType) and not _own(module)


# Modules whose functions read a float's value in C, past SymFloat's hooks: math.sqrt(d) of a
# float argument would leave its value a constant of the plan.
_C_READERS = frozenset({"math", "cmath", "struct"})


def _reads_floats_in_c(fn: Callable) -> bool:
    """Whether fn (a module: its forward) can reach one of _C_READERS or a function of
    theirs: a name its code (or its nested functions' code) imports or reads from its
    globals, a closure cell, a default argument. Its float arguments are then specialized
    to their values (a helper it calls is not looked into)."""
    fn = getattr(fn, "forward", fn)
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return False
    g = getattr(fn, "__globals__", {})
    cells = _cell_values(fn)
    defaults = [*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values()]
    if any(map(_c_reader, cells + defaults)):
        return True
    stack = [code]
    while stack:
        code = stack.pop()
        for name in code.co_names:  # a global, an attribute, or `import math` in the body
            if name in _C_READERS or _c_reader(g.get(name)):
                return True
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return False


def _c_reader(value) -> bool:
    """Whether `value` is one of _C_READERS or a function of theirs."""
    module = value.__name__ if isinstance(value, types.ModuleType) else None
    return (module or getattr(value, "__module__", None)) in _C_READERS


def _cell_values(fn) -> list:
    """The values in fn's closure cells (a cell not yet assigned left out)."""
    values = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:
            continue
    return values


def _held_moved(leaves: list, treedef, tensors: list, key: tuple) -> str | None:
    """Why a plan cannot stand for a traced call's argument objects: one held too much to
    guard, or the call rebound what one holds (an attribute, an item), which a plan
    does not repeat; None where neither."""
    held = [(i, part) for i, part in enumerate(key[1]) if part[0] == "holds"]
    for i, part in held:
        if part[2] is None:
            return (
                f"argument {i} (a {part[1].__name__}) holds more than {MAX_HELD} values or "
                f"nests deeper than {HELD_DEPTH}, too much to guard"
            )
    if not held:
        return None
    after, (_, parts) = _signature(leaves, treedef)
    parts = tuple(_INT if was is _INT else now for now, was in zip(parts, key[1]))  # dynamic
    if parts != key[1][: len(parts)] or any(a is not b for a, b in zip(after, tensors)):
        return (
            "the function rebinds what an argument object holds (an attribute or item), "
            "which a plan does not repeat"
        )
    return None


def _twins(storages: list) -> tuple[int, int] | None:
    """The positions of two storages that are different objects over overlapping memory
    (two from_numpy of one array), else None (an empty one shares no byte). The trace
    tells aliasing by storage identity, so the plan would treat them as independent."""
    if len(storages) < 3:  # the common small call: x and one weight, or x alone
        if len(storages) < 2:
            return None
        a, b = storages
        return (0, 1) if a is not b and a.nbytes and b.nbytes and a.overlaps(b) else None
    # One sweep in address order (each call of a plan asks, over every argument and
    # implicit input: pairwise, 14 parameters took 91 overlaps calls a call): a storage
    # starting before the farthest end so far overlaps the one that reached it.
    spans = sorted((s.ptr, k) for k, s in enumerate(storages) if s.nbytes and not s.lazy)
    reach, owner = 0, None
    for ptr, k in spans:
        here = storages[k]
        if owner is not None and ptr < reach and storages[owner] is not here:
            return min(owner, k), max(owner, k)
        if owner is None or ptr + here.nbytes > reach:
            reach, owner = ptr + here.nbytes, k
    return None


def _call_twins(tensors: list, plan: p.Plan | None) -> tuple[str, str] | None:
    """Names of two tensors of a call, arguments or the plan's implicit inputs (globals,
    closures, attributes it read while tracing), sharing memory through two storages."""
    storages = [t._impl.storage for t in tensors]
    implicit = plan.implicit if plan is not None else []
    if implicit:  # an argument that is the very storage of a global the plan reads
        held = {id(s) for s in implicit}
        for i, s in enumerate(storages):
            if id(s) in held:
                return f"argument {i}", "a tensor it reads from outside its arguments"
    found = _twins(storages + implicit)
    if found is None:
        return None
    return tuple(
        f"argument {i}" if i < len(storages) else "a tensor it reads from outside its arguments"
        for i in found
    )


def _reads(get: Callable, layout: tuple) -> bool:
    """Whether a global or closure name still holds a tensor of that layout (the storage
    itself, and the shape, strides, offset and dtype the plan's steps read it with)."""
    value = get()
    return isinstance(value, Tensor) and _same_layout(value._impl, layout)


def _layout_of(impl) -> tuple:
    return (impl.storage, impl.shape, impl.strides, impl.offset, impl.dtype)


def _same_layout(impl, layout: tuple) -> bool:
    storage, shape, strides, offset, dtype = layout
    return (
        impl.storage is storage
        and impl.shape == shape
        and impl.strides == strides
        and impl.offset == offset
        and impl.dtype == dtype
    )


# Every compiled function, so set_default_dtype can drop plans traced under the old one.
_instances: weakref.WeakSet = weakref.WeakSet()


def _forget_all() -> None:
    for fn in list(_instances):
        fn._forget()


on_default_dtype_change(_forget_all)


class CompiledFunction:
    """A function of tensors run as fused kernels; see kael.compile."""

    def __init__(
        self,
        fn: Callable,
        fullgraph: bool = True,
        max_recompiles: int | None = 8,
        check: bool = False,
        dynamic: bool | None = None,
    ) -> None:
        """`max_recompiles` None: kael's own use (an eager op's generated plans), which
        keeps no history of guards and never warns. `dynamic` (torch's): None makes an int
        argument dynamic once its value changed, True from the start, False never."""
        functools.update_wrapper(self, fn)
        if not hasattr(self, "__name__"):  # a callable object, such as an nn.Module
            self.__name__ = self.__qualname__ = type(fn).__name__
        self.fn = fn
        self.fullgraph = fullgraph
        self.check = check
        self.max_recompiles = max_recompiles
        self.dynamic = dynamic if fullgraph and max_recompiles is not None else False
        self._entries: dict[tuple, _Entry] = {}
        self._guards: list[tuple] = []
        self._moves: dict[tuple, int] = {}  # traces per signature whose call moved a source
        # automatic dynamic ints, as torch's: per argument structure, the positions of the
        # int leaves whose value changed between two traces (traced as SymInts since), the
        # int values first traced per signature with them blanked, and the signatures whose
        # plan must take their values (a shape followed one: each value its own plan)
        self._dynamic: dict = {}
        self._ints_seen: dict = {}
        self._pinned: set = set()
        # signatures whose calls have side effects a plan would skip: they run eagerly, and
        # plans forgotten (a module changed) do not make them trace again
        self._eager: dict[tuple, str] = {}
        self._info = CacheInfo(0, 0, 0, 0)
        self._warned_fallback: set[str] = set()
        self._lock = sync.lock(owner=self)
        # the guarded replays of the last two positional signatures called, latest first
        self._guarded: Callable | None = None
        self._other: Callable | None = None
        # whether some plan reads a tensor through an attribute (a module's parameter), and
        # the epochs its plans were made under (tracestate: any move, handle moves); the
        # modules its plans read, id -> (weakref, state version then)
        self._attribute_reads = False
        self._epoch, self._handle_epoch = epoch.value, handle_epoch.value
        self._modules: dict[int, tuple] = {}
        _instances.add(self)

    def _forget(self) -> None:
        """Drop every plan and guard (a signature's retrace counts stay: a call whose side
        effect made them forget traces again a bounded number of times)."""
        with self._lock:
            self._entries.clear()
            self._guards.clear()
            self._modules.clear()
            self._guarded = self._other = None

    def _moved(self) -> None:
        """Some tensor handle or module state moved since the plans were made: a plan that
        reads tensors through attributes (which no signature records) may hold the old
        memory, so a function whose plans do traces again after a handle moved, and after
        a change of a module its plans read (a module elsewhere changing leaves it be)."""
        handles = self._handle_epoch != handle_epoch.value
        if (handles and self._attribute_reads) or self._modules_changed():
            self._forget()
            self._attribute_reads = False
        self._epoch, self._handle_epoch = epoch.value, handle_epoch.value

    def _modules_changed(self) -> bool:
        for ref, version in list(self._modules.values()):
            module = ref()
            if module is None or module.__dict__.get("_state_version", 0) != version:
                return True
        return False

    def __get__(self, obj, objtype=None):
        return self if obj is None else types.MethodType(self, obj)

    def __call__(self, *args, **kwargs):
        if state.trace is not None:  # called from a function being traced: part of its trace
            return self.fn(*args, **kwargs)
        if self._epoch != epoch.value:
            self._moved()
        try:
            if (
                not kwargs
                and not self.check
                and factories.DEFAULT.device is None
                and not autocast.ACTIVE[0]
            ):
                guarded = self._guarded
                if guarded is not None:
                    result = guarded(args)
                    if result is not MISS:
                        return result
                    other = self._other
                    if other is not None:
                        result = other(args)
                        if result is not MISS:  # two signatures in turn: both stay guarded
                            self._guarded, self._other = other, guarded
                            return result
                plan, tensors, key = self._positional(args)
                if plan is not None:
                    self._info.hits += 1
                    result = plan.run(tensors, list(args))
                    self._install_guarded(key, plan)
                    return result
            plan, tensors, leaves, treedef, key = self._lookup(args, kwargs)
            twins = _call_twins(tensors, plan)
            if twins is not None:
                self._warn_once(
                    f"kael.compile({self.__name__}): {twins[0]} and {twins[1]} share memory "
                    "(one storage, or two from_numpy of one array) where the trace saw them "
                    "apart; calls like this run eagerly, which keeps eager's results"
                )
                return self.fn(*args, **kwargs)
            before = p.snapshot(tensors) if self.check else None
            if plan is None and key in self._eager:  # its side effects (warned of once)
                return self.fn(*args, **kwargs)
            if plan is None:
                result, plan = self._trace(leaves, treedef, tensors, key)
            else:
                self._info.hits += 1
                if plan.fallback is not None:
                    return self.fn(*args, **kwargs)
                result = plan.run(tensors, leaves)
            if before is not None and plan.fallback is None:
                plan.check(before, leaves, self.__name__)
            return result
        except p.Retrace as retrace:  # an extern's output shapes changed: trace the call again
            retrace.rewind()
            _, tensors, leaves, treedef, key = self._lookup(args, kwargs)
            if retrace.ints:  # they followed a dynamic int: a plan per value from now on
                with self._lock:
                    if len(self._pinned) >= MAX_PLANS:
                        self._pinned.clear()
                    self._pinned.add(key)
            return self._trace(leaves, treedef, tensors, key)[0]

    def _warn_once(self, message: str) -> None:
        """A warning shown the first time this function meets its case."""
        if message not in self._warned_fallback:
            self._warned_fallback.add(message)
            user_warning.warn(message)

    def _positional(self, args: tuple) -> tuple[p.Plan | None, list, tuple | None]:
        """The plan of a call of positional leaves (tensors, numbers, a module...) whose
        signature holds no float used as a value, no fallback and no twin storages, and
        whose globals still hold what the plan read (the common call), with its tensors and
        signature; else (None, _, _) for _lookup to decide. No pytree walk."""
        tensors, key = _signature(args, ("args", len(args)), plain=True)
        if (self._dynamic or self.dynamic) and key is not None:
            key = self._dynamic_key(key)
        entry = self._entries.get(key) if key is not None else None
        plan = None if entry is None else entry.positional
        if plan is None or (entry.reads_outside and not entry.still_read()):
            return None, tensors, key
        if len(tensors) == 2 and not plan.implicit:  # _call_twins for two, inlined
            a, b = tensors[0]._impl.storage, tensors[1]._impl.storage
            if a is not b and a.overlaps(b):
                return None, tensors, key
        elif (len(tensors) > 1 or plan.implicit) and _call_twins(tensors, plan) is not None:
            return None, tensors, key
        return plan, tensors, key

    def _install_guarded(self, key: tuple, plan: p.Plan) -> None:
        """Put the replay of `plan`, the positional plan of signature `key` that just ran,
        behind that signature's guard, for the next calls to try first: written once per
        signature and thread count (under the lock), when the plan has its replay. A guard
        that outlives a re-trace of its signature still runs a correct plan of it."""
        ready = plan.replay
        if ready is None or ready.threads != get_num_threads():
            return
        entry = self._entries.get(key)
        if entry is None or entry.positional is not plan:
            return
        guarded = entry.guarded
        if guarded is None or guarded.threads != ready.threads:
            if not supported(key[1]):
                return
            with self._lock:
                if entry.positional is not plan:
                    return
                guarded = entry.guarded
                if guarded is None or guarded.threads != ready.threads:
                    twins = functools.partial(_call_twins, plan=plan)
                    still = entry.still_read if entry.reads_outside else None
                    guarded = replay.build_guarded(plan, ready, key[1], twins, self._info, still)
                    entry.guarded = guarded
        if self._guarded is not guarded.fn:
            self._guarded, self._other = guarded.fn, self._guarded

    def _lookup(self, args, kwargs):
        leaves, treedef = pytree.flatten_call(args, kwargs)
        tensors, key = _signature(leaves, treedef)
        if self._dynamic or self.dynamic:
            key = self._dynamic_key(key)
        device = factories.default_device()
        if device is not None:  # set_default_device: where the function's factories create
            key = (key[0], (*key[1], ("default device", device)))
        casts = autocast.signature() if autocast.ACTIVE[0] else ()
        if casts:  # kael.autocast: which ops the trace cast, and to what
            key = (key[0], (*key[1], ("autocast", casts)))
        entry = self._entries.get(key)
        plan = None
        if entry is not None and entry.still_read():
            plan = entry.plans.get(_float_key([leaves[i] for i in entry.used]))
        return plan, tensors, leaves, treedef, key

    def _dynamic_key(self, key: tuple) -> tuple:
        """The signature with the int leaves made dynamic for its structure blanked."""
        positions = self._dynamic.get(key[0], ())
        every = self.dynamic is True
        parts = [
            _INT if (every or i in positions) and _int_constant(part) else part
            for i, part in enumerate(key[1])
        ]
        return key[0], tuple(parts)

    def _note_ints(self, key: tuple) -> None:
        """Make dynamic the int leaves whose values differ from those an earlier trace of
        the same signature (its ints blanked) had: torch's automatic dynamic, so a decode
        step's position traces twice (the first value, then dynamic), not once per token."""
        parts = key[1]
        ints = [i for i, part in enumerate(parts) if _int_constant(part)]
        if not ints or self.dynamic is not None:  # (False: kael's own plans, fullgraph=False)
            return
        blank = (key[0], tuple(_INT if i in ints else part for i, part in enumerate(parts)))
        values = tuple(parts[i][2] for i in ints)
        with self._lock:
            if len(self._ints_seen) >= MAX_PLANS:  # shapes are unbounded: forget, as plans
                self._ints_seen.clear()
            seen = self._ints_seen.setdefault(blank, values)
            changed = {i for i, a, b in zip(ints, seen, values) if a != b}
            if changed:
                self._dynamic[key[0]] = self._dynamic.get(key[0], frozenset()) | changed

    def _trace(self, leaves, treedef, tensors, key):
        """Run the function once under a trace; keep the plan it leaves."""
        trace = tracing.Trace(self.fn, self.fullgraph, tensors, leaves)
        trace.generator_args = {  # the first leaf of each (a second one is the same stream)
            id(v): i
            for i, v in reversed(list(enumerate(leaves)))
            if type(v) is Generator and v is not default_generator
        }
        self._note_ints(key)
        if self._dynamic:  # one that changed just now is dynamic in this trace already
            key = self._dynamic_key(key)
        dynamic = _dynamic_leaves(key)
        if key in self._pinned:  # a shape followed the ints: the plan takes their values
            trace.used_scalars.update(dynamic)
            dynamic = []
        symbolic = [
            tracing.SymFloat.make(v, i, trace) if type(v) is float else v
            for i, v in enumerate(leaves)
        ]
        for i in dynamic:
            symbolic[i] = tracing.SymInt.make(leaves[i], p.ArgScalar(i), frozenset({i}), trace)
        trace.dynamic = bool(dynamic)
        floats = [i for i, v in enumerate(leaves) if type(v) is float]
        if floats and _reads_floats_in_c(self.fn):
            trace.used_scalars.update(floats)
        args, kwargs = pytree.unflatten(treedef, symbolic)
        sources = _implicit_sources(self.fn)  # what the trace reads, as it reads it
        trace.shared = set(sources.tensors)
        state.trace = trace
        try:
            result = self.fn(*args, **kwargs)
            if state.trace is trace:
                result = trace.finish(result)
        except BaseException:
            if state.trace is trace:
                trace.flush()  # what eager would have run before the error; its own fault first
            raise
        finally:
            state.trace = None
            trace.release_ints()
        side_effect = trace.side_effect  # Python a plan would skip: set module state, hooks
        if side_effect is None:  # moves made by the traced call itself are in the plan
            self._epoch, self._handle_epoch = epoch.value, handle_epoch.value
        with self._lock:  # what a side effect changed forgets the plans that read it
            self._modules.update(trace.modules_read)
        trace.broken = trace.broken or _held_moved(leaves, treedef, tensors, key)
        if trace.broken is None and sources.overflow is not None:
            trace.broken = sources.overflow
        moved = trace.broken is None and sources.parts() != _implicit_sources(self.fn).parts()
        if moved or (trace.broken is None and side_effect is not None):
            with self._lock:  # a first fill of a cache (a lazy module's first forward): the
                if len(self._moves) >= MAX_PLANS:  # next trace is clean
                    self._moves.clear()
                moves = self._moves[key] = self._moves.get(key, 0) + 1
                if moves < 2:
                    self._info.traces += 1
                    return result, trace.plan  # kept by no signature
                del self._moves[key]
                if side_effect is not None and len(self._eager) < MAX_PLANS:
                    self._eager[key] = side_effect
            trace.broken = (
                f"it {side_effect} inside the call, which a plan does not repeat"
                if side_effect is not None
                else "it rebinds a global or what an object in its globals or closure holds "
                "(or another thread did meanwhile), which a plan does not repeat"
            )
        plan = trace.plan
        if trace.broken is not None:
            plan.fallback = trace.broken
            self._warn_once(
                f"kael.compile({self.__name__}): {trace.broken}, so this call signature "
                "runs eagerly"
            )
        self._store(trace, plan, leaves, key, sources)
        if debug.level >= 1:
            stages = ("kael", "llvm", "asm")[: debug.level - 1]
            debug.emit(f"[kael] traced {Inspection(self.__name__, plan, stages)}")
        return result, plan

    def _store(self, trace, plan: p.Plan, leaves: list, key: tuple, sources: _Sources) -> None:
        used = tuple(sorted(trace.used_scalars))
        values = _float_key([leaves[i] for i in used])
        implicit = [
            sources.tensors[id(s.storage)]
            for s in plan.slots
            if s.kind == p.IMPLICIT and id(s.storage) in sources.tensors
        ]
        if plan.fallback is not None:  # it runs eagerly: reading the globals as they are
            sources = _Sources()
        constants, sizes, items = sources.values, sources.sizes, sources.items
        guard = (*_coarse(key, values), sources.constant_parts())
        with self._lock:
            info = self._info
            info.traces += 1
            if self.max_recompiles is not None and guard not in self._guards:
                if self._guards:
                    reason = _what_changed(self._guards[-1], guard)
                    info.recompiles.append(reason)
                    if len(info.recompiles) == self.max_recompiles + 1:  # once: no flood
                        user_warning.warn(
                            f"kael.compile({self.__name__}) recompiled "
                            f"{len(info.recompiles)} times; this time because {reason}"
                            " (it goes on tracing each new case, warning no more:"
                            " cache_info().recompiles says why each time)"
                        )
                self._guards.append(guard)
            entry = self._entries.get(key)
            if entry is not None and entry.guarded is not None:  # its signature's guard goes
                stale = entry.guarded.fn
                self._guarded = None if self._guarded is stale else self._guarded
                self._other = None if self._other is stale else self._other
            if sum(len(e.plans) for e in self._entries.values()) >= MAX_PLANS:
                self._entries.clear()
                entry = self._guarded = self._other = None
            same = (
                entry is not None
                and [t[1] for t in entry.implicit] == [t[1] for t in implicit]
                and [c[2] for c in entry.constants] == [c[2] for c in constants]
                and [n for _, n, _ in entry.sizes] == [n for _, n, _ in sizes]
                and [c for _, c, _ in entry.items] == [c for _, c, _ in items]
            )
            modules = trace.reads_module  # it read an nn.Module's state or settings
            if modules or len(implicit) < sum(s.kind == p.IMPLICIT for s in plan.slots):
                self._attribute_reads = True  # a tensor read through an object: see __call__
            if not same or entry.used != used:
                entry = self._entries[key] = _Entry(used, {}, implicit, constants, sizes, items)
            entry.plans[values] = plan
            entry.held = [v for v in leaves if not _looked_into(v) and _describe(v)[0] == "object"]
            plain = not used and plan.fallback is None
            entry.positional = plan if plain else None
            entry.guarded = None  # built again from the new positional plan when it runs

    # ---- looking inside ------------------------------------------------------------------

    def cache_info(self) -> CacheInfo:
        """How many plans and guards exist, hits, traces and the reason of each recompile."""
        info = self._info
        plans = sum(len(e.plans) for e in self._entries.values())
        return CacheInfo(plans, len(self._guards), info.hits, info.traces, list(info.recompiles))

    def plan_for(self, *args, **kwargs) -> p.Plan:
        """The plan that a call with these arguments runs (traced by running it once if new)."""
        plan, tensors, leaves, treedef, key = self._lookup(args, kwargs)
        if plan is None:
            plan = self._trace(leaves, treedef, tensors, key)[1]
        return plan

    def kernels(self, *args, **kwargs) -> list:
        """The kernels (Kernel or Reduction) a call with these arguments launches, in order,
        specialized for its operands' layouts: each one `kernel_stage` can show. A signature
        not traced yet is traced by one real call (as plan_for: in-place ops change the
        arguments, random ops draw)."""
        return Inspection(self.__name__, self.plan_for(*args, **kwargs), ()).kernels

    def inspect(self, *args, stages: tuple[str, ...] = ("kael",), **kwargs) -> Inspection:
        """What a call with these arguments runs: the steps, what each fused, why values were
        stored between kernels, and each kernel at the chosen stages (kael, llvm, asm, ptx).
        A signature not traced yet is traced by one real call (as plan_for: in-place ops
        change the arguments, random ops draw)."""
        plan = self.plan_for(*args, **kwargs)
        _, _, leaves, _, key = self._lookup(args, kwargs)
        entry = self._entries.get(key)
        used = entry.used if entry is not None else ()
        dynamic = _dynamic_leaves(key)
        words = _guard_words(leaves, used, dynamic)
        words += entry.source_words() if entry is not None else []
        return Inspection(self.__name__, plan, stages, words)


def _guard_words(leaves: list, used: tuple[int, ...], dynamic=()) -> list[str]:
    """The guard of a call in words: what a call must match to reuse its plan."""
    words = []
    storages: dict[int, int] = {}
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, Tensor):
            impl = leaf._impl
            dense = "contiguous" if impl.strides == contiguous_strides(impl.shape) else "strided"
            ones = [d for d, s in enumerate(impl.shape) if s == 1]
            kind = "tensor" if type(leaf) is Tensor else f"{type(leaf).__name__} (a Tensor)"
            text = (
                f"leaf {i}: {impl.dtype} {kind} of rank {len(impl.shape)} on {impl.device}, {dense}"
            )
            if ones:
                text += f", size 1 in dims {ones}"
            first = storages.setdefault(id(impl.storage), i)
            if first != i:
                text += f", sharing storage with leaf {first}"
            words.append(text)
        elif type(leaf) is float or i in dynamic:
            how = f"specialized to {leaf!r}" if i in used else "a run-time parameter"
            words.append(f"leaf {i}: {'a float' if type(leaf) is float else 'an int'}, {how}")
        elif _looked_into(leaf):
            words.append(
                f"leaf {i}: an object of class {type(leaf).__name__}: the tensors it holds are "
                "inputs (guarded as arguments are), its other values constants of the plan"
            )
        else:
            words.append(f"leaf {i}: the constant {leaf!r}")
    return words


class Inspection:
    """The text of a compiled plan (print it), with the plan itself in `.plan`."""

    def __init__(
        self, name: str, plan: p.Plan, stages: tuple[str, ...], guard: list[str] | None = None
    ) -> None:
        self.name = name
        self.plan = plan
        self.stages = stages
        self.guard = guard or []

    @property
    def kernels(self) -> list:
        """Each fused kernel as the plan launches it (specialized for its operands' layouts),
        ready for `kernel_stage`."""
        return [s.specialized(self.plan.slots) for s in self.plan.kernel_steps]

    def _kernel_lines(self, label: str, s: p.KernelCall, plan: p.Plan) -> list[str]:
        from kael.frontend.inspection import kernel_stage

        kind = "reduction" if s.axes is not None else "kernel"
        prepared = s.ready(plan.slots)
        moved = f", moves {prepared.moved} bytes" if prepared is not None else ""
        lines = [f"  {label} {kind} {s.kernel.name}: fuses {', '.join(s.covers)}{moved}"]
        kernel = s.specialized(plan.slots)
        for stage in self.stages:
            text = kernel_stage(kernel, stage)
            lines += ["      " + line for line in text.splitlines()]
        return lines

    def _product_lines(self, label: str, s: MatmulCall, plan: p.Plan) -> list[str]:
        from kael.frontend.inspection import product_stage

        a, b = (list(v.shape) for v in (s.a, s.b))
        what = f"matmul {a} @ {b}" if s.geometry is None else f"conv of {a} by weight {b}"
        lines = [f"  {label} {what}: hand-written {s.c.dtype} kernels"]
        for stage in self.stages:
            text = product_stage(s.c.dtype, stage, s.op)
            lines += ["      " + line for line in text.splitlines()]
        if s.epilogue is not None:
            inside = s.ready(plan.slots)[2] is not None
            where = "on each block as it completes" if inside else "after it (for these shapes)"
            lines += self._kernel_lines(f"  {label} epilogue, run {where}:", s.epilogue, plan)
        return lines

    def __str__(self) -> str:
        plan = self.plan
        lines = [f"compiled {self.name}:"]
        if plan.fallback is not None:
            lines.append(f"  runs eagerly: {plan.fallback}")
            return "\n".join(lines)
        externs = sum(1 for s in plan.steps if type(s) is p.ExternCall)
        lines.append(
            f"  {len(plan.kernel_steps)} kernels, {externs} extern steps, "
            f"peak intermediate memory {plan.peak_bytes} bytes"
        )
        if self.guard:
            lines.append("  guard (sizes may change without a recompile):")
            lines += [f"    {w}" for w in self.guard]
        for i, s in enumerate(plan.steps):
            if type(s) is p.KernelCall:
                lines += self._kernel_lines(f"[{i}]", s, plan)
            elif type(s) is p.RowGroup:
                lines.append(
                    f"  [{i}] row group: {len(s.members)} kernels run row by row over {s.rows} "
                    "rows, each row read from memory once"
                )
                if s.local:
                    held = ", ".join(str(slot) for slot in s.local)
                    lines.append(
                        f"    buffers {held} live in the driver's chunk scratch "
                        f"({s.scratch_bytes} bytes a thread), never in memory"
                    )
                for j, m in enumerate(s.members):
                    lines += self._kernel_lines(f"  [{i}.{j}]", m, plan)
            elif type(s) is MatmulCall:
                lines += self._product_lines(f"[{i}]", s, plan)
            elif type(s) is p.ExternCall:
                shaped = (
                    "; its output shapes depend on the values (checked each call: a change "
                    "traces the call again)"
                    if s.shaped
                    else ""
                )
                windows = [
                    str(v.buffer)
                    for v, new in (o for o in s.out_leaves if type(o) is tuple)
                    if new and plan.slots[v.buffer].kind == p.WINDOW
                ]
                if windows:
                    shaped += (
                        f"; buffer {', '.join(windows)} is the view it returns, found where "
                        "each call's values put it in the memory it was given"
                    )
                lines.append(f"  [{i}] extern {s.name}: runs eagerly, never fused{shaped}")
            elif type(s) is p.Alias:
                lines.append(f"  [{i}] buffer {s.dst} reuses the memory of buffer {s.src}")
            elif type(s) is p.Seed:
                g = s.generator
                of = f"the generator of leaf {g.index}" if type(g) is p.ArgScalar else repr(g)
                what = (
                    f"manual_seed({s.seed})" if not s.offset else f"set_state({s.seed}, {s.offset})"
                )
                lines.append(f"  [{i}] {what} of {of}")
            else:
                lines.append(f"  [{i}] reserve {s.count} random counters")
        for c in plan.cuts:
            lines.append(f"  stored: {c.producer} -> {c.consumer}: {c.reason}")
        if plan.dropped:
            lines.append(f"  fused away: {', '.join(plan.dropped)}")
        if plan.unread:
            lines.append(f"  never run (no one reads them): {', '.join(plan.unread)}")
        return "\n".join(lines)

    __repr__ = __str__


MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def compile(
    fn: Callable | None = None,
    *,
    fullgraph: bool = True,
    dynamic=None,
    max_recompiles: int = 8,
    check: bool = False,
    backend=None,
    mode: str | None = None,
    options: dict | None = None,
    name: str | None = None,
    disable: bool = False,
    recompile_limit: int | None = None,
    **torch_only,
):
    """Trace `fn` into fused kernels once per call signature; `@kael.compile` or
    `@kael.compile(fullgraph=False)`. With fullgraph=False, Python that needs a tensor's
    values ends the trace and that signature runs eagerly (with one warning); by default it
    raises kael.Error naming the line. `check=True` (for debugging) also runs each fused
    kernel's ops one eager kernel at a time on copies of the arguments and raises kael.Error
    naming the first fused kernel whose output differs (bit for bit; a kernel over half
    types, which keeps float32 between its ops, within 16 of their rounding steps).

    An nn.Module comes back as a Module (OptimizedModule: its state under `_orig_mod.`, its
    attributes and train/eval forwarded), as torch.compile returns it.

    A Python int argument whose value changes between calls (a decode step's position) is
    dynamic from the second trace on (the first call's value a constant), as torch's
    automatic dynamic: the ops it indexes take
    each call's value (x[p : p + 1] is one plan for every p), and any other use of its value
    in Python (a branch, range(p), a shape) keeps a plan per value. `dynamic=False` keeps
    every int a constant, `True` makes them dynamic from the first call; a function traced
    with fullgraph=False keeps them constants (its eager rest sees the caller's ints).
    While traced, a dynamic int is a stand-in whose `isinstance(p, int)` holds but whose
    `type(p) is int` does not: branch with isinstance, or pass dynamic=False.

    torch's other arguments are taken for its spelling (sizes never recompile here, dynamic
    or not): `backend`, `mode` (one of torch's), `options`, `name`, the rest of torch's keywords (ignored: kael
    has one compiler); `recompile_limit` is max_recompiles, and disable=True returns `fn`."""
    if mode not in MODES:
        raise KaelValueError(f"Unknown mode={mode!r}: kael.compile takes torch's modes {MODES[1:]}")
    if recompile_limit is not None:
        max_recompiles = recompile_limit
    if fn is None:
        return lambda f: compile(
            f, fullgraph=fullgraph, dynamic=dynamic, max_recompiles=max_recompiles, check=check,
            disable=disable,
        )  # fmt: skip
    if disable:
        return fn
    from kael.nn.modules.module import Module  # kael.nn imports this module's package

    if isinstance(fn, Module):
        from kael.nn.modules.optimized import OptimizedModule

        compiled = CompiledFunction(fn, fullgraph, max_recompiles, check, dynamic)
        return OptimizedModule(fn, compiled)
    return CompiledFunction(fn, fullgraph, max_recompiles, check, dynamic)
