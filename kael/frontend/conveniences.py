"""torch.NAME utilities outside the op families: asarray, frombuffer, typename,
set_printoptions, the float32 matmul precision switch, ..."""

from __future__ import annotations

from collections.abc import Callable

FUNCTIONS: dict[str, Callable] = {}
METHODS: dict[str, Callable] = {}  # Tensor methods (installed by kael/__init__.py)
