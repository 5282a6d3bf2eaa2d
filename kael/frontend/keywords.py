"""PyTorch's NumPy-style keyword aliases: its argument parser reads `axis=` as `dim=` and
`keepdims=` as `keepdim=` for every op, so the op doors (tracing.op_door, fastpath.keyed)
rename them once, before any op sees its arguments."""

from __future__ import annotations

from kael.runtime.errors import TypeError

ALIASES = {"axis": "dim", "keepdims": "keepdim"}


def torch_keywords(kwargs: dict) -> dict:
    """`kwargs` with axis= and keepdims= under PyTorch's names (itself when neither is there);
    TypeError when both names of one argument are given."""
    if "axis" not in kwargs and "keepdims" not in kwargs:
        return kwargs
    renamed = {}
    for key, value in kwargs.items():
        name = ALIASES.get(key, key)
        if name in renamed or (name != key and name in kwargs):
            raise TypeError(f"got both '{key}' and '{name}', which name the same argument")
        renamed[name] = value
    return renamed
