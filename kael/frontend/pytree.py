"""Flattening nested lists, tuples and dicts of arguments into leaves and back.

The nodes are torch's pytree's (torch/utils/_pytree.py): list, tuple, named tuples, dict,
OrderedDict, defaultdict and deque, each of exactly that type (a dict or list subclass is a
leaf), with one deviation: any other tuple subclass (kael.Size, a user's Pair) is opened
too, where torch's pytree keeps it whole, because a compiled plan takes tensors only from
the opened tree: a tensor inside a leaf would be a constant of the plan. It is rebuilt
with tuple.__new__, so its own __new__ (any signature) does not run. A tuple subclass
that cannot be rebuilt so stays a leaf, as in torch: a C struct sequence (os.stat_result)
and an instance carrying attributes of its own.
"""

from __future__ import annotations

import collections
from typing import Any

# A tree definition: LEAF, ("args", n) for n plain positional arguments, or (node kind,
# keys or length, child definitions).
TreeDef = tuple
LEAF = ("leaf",)


# The mappings flattened as containers (as torch's pytree: a state_dict is an OrderedDict)
MAPPINGS = (dict, collections.OrderedDict, collections.defaultdict)


def _is_namedtuple(kind: type) -> bool:
    """torch's is_namedtuple_class: a tuple class with string _fields, _make and _asdict."""
    fields = getattr(kind, "_fields", None)
    return (
        isinstance(fields, tuple)
        and all(type(f) is str for f in fields)
        and callable(getattr(kind, "_make", None))
        and callable(getattr(kind, "_asdict", None))
    )


def _opens_tuple(value: tuple) -> bool:
    """Whether a tuple (of any subclass) is a node: not a struct sequence, whose C
    constructor tuple.__new__ may not stand in for, nor an instance with attributes,
    which a rebuild from its items would lose."""
    kind = type(value)
    if kind is tuple or _is_namedtuple(kind):
        return True
    return not hasattr(kind, "n_sequence_fields") and not getattr(value, "__dict__", None)


def is_container(value) -> bool:
    """Whether flatten opens `value` (the module docstring's nodes)."""
    kind = type(value)
    if kind is list or kind in MAPPINGS or kind is collections.deque:
        return True
    return isinstance(value, tuple) and _opens_tuple(value)


def flatten_call(args: tuple, kwargs: dict) -> tuple[list, TreeDef]:
    """flatten((args, kwargs)), with a short path for plain positional arguments."""
    if not kwargs:
        for a in args:
            if is_container(a):
                break
        else:
            return list(args), ("args", len(args))
    return flatten((args, kwargs))


def _shape(tree) -> tuple[Any, tuple]:
    """(the node's kind in its TreeDef, its keys or length): the context a rebuild needs
    (a defaultdict's factory, a deque's maxlen) rides along with the kind."""
    kind = type(tree)
    if kind in MAPPINGS:
        if kind is collections.defaultdict:
            return (kind, tree.default_factory), tuple(tree)
        return kind, tuple(tree)
    if kind is collections.deque:
        return (kind, tree.maxlen), len(tree)
    return kind, len(tree)


def flatten(tree: Any, leaves: list | None = None) -> tuple[list, TreeDef]:
    """(the leaves in order, the tree's shape); the module docstring's nodes are opened."""
    if leaves is None:
        leaves = []
    if not is_container(tree):
        leaves.append(tree)
        return leaves, LEAF
    kind, keys = _shape(tree)
    children = tree.values() if type(tree) in MAPPINGS else tree
    return leaves, (kind, keys, tuple(flatten(c, leaves)[1] for c in children))


def unflatten(treedef: TreeDef, leaves: list) -> Any:
    """The tree of `treedef` with `leaves` in order."""
    if treedef[0] == "args":
        return tuple(leaves), {}
    it = iter(leaves)
    return _build(treedef, it)


# How each node kind with context (kind, context) is rebuilt from its keys and values.
_REBUILD_WITH_CONTEXT = {
    collections.defaultdict: lambda factory, keys, values: collections.defaultdict(
        factory, zip(keys, values)
    ),
    collections.deque: lambda maxlen, keys, values: collections.deque(values, maxlen),
}


def _rebuild(kind, keys, values: list) -> Any:
    """The node of `kind` (a _shape kind) holding `values`."""
    if type(kind) is tuple:  # (kind, its context)
        return _REBUILD_WITH_CONTEXT[kind[0]](kind[1], keys, values)
    if kind is list:
        return values
    if kind is dict or kind is collections.OrderedDict:
        return kind(zip(keys, values))
    if _is_namedtuple(kind):
        return kind(*values)
    return tuple.__new__(kind, values)  # a tuple, kael.Size, another subclass


def _build(treedef: TreeDef, it) -> Any:
    if treedef[0] == "leaf":
        return next(it)
    kind, keys, children = treedef
    return _rebuild(kind, keys, [_build(c, it) for c in children])
