"""kael.signal: torch.signal's names (its window functions, kael.signal.windows)."""

from kael.signal import windows

__all__ = ["windows"]
