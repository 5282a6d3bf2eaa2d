"""torch.multiprocessing's sharing-strategy setting. kael pickles tensors by value, so the
strategy is recorded for programs that set or read it but changes nothing kael sends."""

from __future__ import annotations

import sys

from kael.runtime.errors import ValueError

__all__ = ["get_all_sharing_strategies", "get_sharing_strategy", "set_sharing_strategy"]

# Each platform's strategies, its default first: macOS and Windows have only file_system.
_BY_PLATFORM = {"darwin": ("file_system",), "win32": ("file_system",)}
_STRATEGIES = _BY_PLATFORM.get(sys.platform, ("file_descriptor", "file_system"))
_current = _STRATEGIES[0]


def set_sharing_strategy(new_strategy: str) -> None:
    """Select the strategy for sharing CPU tensors: one of get_all_sharing_strategies()."""
    global _current
    if new_strategy not in _STRATEGIES:
        raise ValueError(
            f"invalid sharing strategy {new_strategy!r}, expected one of {sorted(_STRATEGIES)}"
        )
    _current = new_strategy


def get_sharing_strategy() -> str:
    """The current strategy for sharing CPU tensors."""
    return _current


def get_all_sharing_strategies() -> set[str]:
    """The sharing strategies this system supports (a new set each call)."""
    return set(_STRATEGIES)
