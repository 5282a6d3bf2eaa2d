"""Flattening nested lists, tuples and dicts of arguments into leaves and back."""

from __future__ import annotations

from typing import Any

# A tree definition: LEAF, ("args", n) for n plain positional arguments, or (container
# kind, keys or length, child definitions).
TreeDef = tuple
LEAF = ("leaf",)


def flatten_call(args: tuple, kwargs: dict) -> tuple[list, TreeDef]:
    """flatten((args, kwargs)), with a short path for plain positional arguments."""
    if not kwargs:
        for a in args:
            kind = type(a)
            if kind is list or kind is dict or isinstance(a, tuple):
                break
        else:
            return list(args), ("args", len(args))
    return flatten((args, kwargs))


def flatten(tree: Any, leaves: list | None = None) -> tuple[list, TreeDef]:
    """(the leaves in order, the tree's shape); lists, tuples and dicts are containers."""
    if leaves is None:
        leaves = []
    kind = type(tree)
    if kind is list or isinstance(tree, tuple):  # named tuples too (sort's values, indices)
        return leaves, (kind, len(tree), tuple(flatten(c, leaves)[1] for c in tree))
    if kind is dict:
        keys = tuple(tree)
        return leaves, (dict, keys, tuple(flatten(tree[k], leaves)[1] for k in keys))
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
    if kind is dict:
        return dict(zip(keys, values))
    if kind is list or kind is tuple:
        return kind(values)
    return kind(*values)  # a named tuple
