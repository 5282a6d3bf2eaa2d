"""Flattening nested lists, tuples and dicts of arguments into leaves and back."""

from __future__ import annotations

import collections
from typing import Any

# A tree definition: LEAF, ("args", n) for n plain positional arguments, or (container
# kind, keys or length, child definitions).
TreeDef = tuple
LEAF = ("leaf",)


# The mappings flattened as containers (as torch's pytree: a state_dict is an OrderedDict)
MAPPINGS = (dict, collections.OrderedDict, collections.defaultdict)


def is_container(value) -> bool:
    """Whether flatten opens `value`: a list, any tuple (named tuples, kael.Size) or a
    mapping of MAPPINGS."""
    kind = type(value)
    return kind is list or kind in MAPPINGS or isinstance(value, tuple)


def flatten_call(args: tuple, kwargs: dict) -> tuple[list, TreeDef]:
    """flatten((args, kwargs)), with a short path for plain positional arguments."""
    if not kwargs:
        for a in args:
            if is_container(a):
                break
        else:
            return list(args), ("args", len(args))
    return flatten((args, kwargs))


def flatten(tree: Any, leaves: list | None = None) -> tuple[list, TreeDef]:
    """(the leaves in order, the tree's shape); lists, tuples and mappings are containers."""
    if leaves is None:
        leaves = []
    kind = type(tree)
    if kind is list or isinstance(tree, tuple):  # named tuples too (sort's values, indices)
        return leaves, (kind, len(tree), tuple(flatten(c, leaves)[1] for c in tree))
    if kind in MAPPINGS:
        keys = tuple(tree)
        # a defaultdict's factory rides along as part of its kind
        shape = (kind, tree.default_factory) if kind is collections.defaultdict else kind
        return leaves, (shape, keys, tuple(flatten(tree[k], leaves)[1] for k in keys))
    leaves.append(tree)
    return leaves, LEAF


def unflatten(treedef: TreeDef, leaves: list) -> Any:
    """The tree of `treedef` with `leaves` in order."""
    if treedef[0] == "args":
        return tuple(leaves), {}
    it = iter(leaves)
    return _build(treedef, it)


def _build(treedef: TreeDef, it) -> Any:
    if treedef[0] == "leaf":
        return next(it)
    kind, keys, children = treedef
    values = [_build(c, it) for c in children]
    if kind is dict or kind is collections.OrderedDict:
        return kind(zip(keys, values))
    if type(kind) is tuple:  # (defaultdict, its factory)
        return kind[0](kind[1], zip(keys, values))
    if hasattr(kind, "_fields"):  # a named tuple
        return kind(*values)
    return kind(values)  # a list, a tuple or another tuple (kael.Size)
