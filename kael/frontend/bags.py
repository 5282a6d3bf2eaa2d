"""torch.nn.functional.embedding_bag: sums, means and maxima of bags of embedding rows."""

from __future__ import annotations

from collections.abc import Callable

FUNCTIONS: dict[str, Callable] = {}
