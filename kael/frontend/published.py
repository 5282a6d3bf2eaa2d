"""Public callables named where they are published (kael.add, kael.nn.functional.relu), so
that pickle, which saves a function by its module and name, finds each one again: an op's
door or wrapper is defined inside kael.frontend under another name (tracing.door)."""

from __future__ import annotations

import sys
import types


def _found_at_its_name(obj) -> bool:
    """Whether obj's __module__ and __qualname__ lead back to obj itself."""
    found = sys.modules.get(getattr(obj, "__module__", None) or "")
    for part in (getattr(obj, "__qualname__", None) or "<>").split("."):
        found = getattr(found, part, None)
    return found is obj


def publish(module_name: str, namespace: dict) -> None:
    """Give each public function of `namespace` (the module `module_name`'s globals) that
    pickle could not find by its own names the module and name it is published under."""
    for name, obj in namespace.items():
        if name.startswith("_") or not isinstance(obj, types.FunctionType):
            continue
        if not _found_at_its_name(obj):
            obj.__module__, obj.__qualname__ = module_name, name
