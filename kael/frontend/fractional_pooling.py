"""torch.nn.functional's fractional max pooling (2-d and 3-d, with indices)."""

from __future__ import annotations

from collections.abc import Callable

FUNCTIONS: dict[str, Callable] = {}
