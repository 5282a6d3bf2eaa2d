"""PyTorch's switch between fast and run-to-run reproducible kernels.

kael's CPU kernels repeat their bits run to run whatever the switch says, for a given
thread count (a long scatter sum into fewer lines than threads adds in one partial table
per thread, combined in thread order, so its float bits follow the thread count). On a GPU,
scatter_add and the ops built on it (index_add_, index_put_ with accumulate, bincount,
scatter_reduce's sum and mean) add with atomics by default, whose float sums round in
the order the hardware serializes them; with the switch on they walk each line in index
order instead, as on the CPU (slower: one thread per line).
"""

from __future__ import annotations

from kael.runtime.errors import TypeError

_enabled = False
_warn_only = False


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Make every kernel reproducible run to run (True) or allow faster ones (False).
    `warn_only` is kept for PyTorch's signature: kael has no op that refuses instead."""
    global _enabled, _warn_only
    for name, value in (("mode", mode), ("warn_only", warn_only)):
        if not isinstance(value, bool):
            raise TypeError(
                f"use_deterministic_algorithms(): {name} must be a bool, got {type(value).__name__}"
            )
    _enabled, _warn_only = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    return _enabled


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _warn_only
