"""kael.serialization: torch.serialization's names: save and load, and the globals a
weights_only load may also meet (add_safe_globals, safe_globals, ...)."""

from kael.frontend.serialization import (
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    load,
    safe_globals,
    save,
)

__all__ = [
    "add_safe_globals",
    "clear_safe_globals",
    "get_safe_globals",
    "load",
    "safe_globals",
    "save",
]
