"""PyTorch's older linear-algebra names (torch.lu, lu_solve, lu_unpack, triangular_solve,
cholesky_inverse, ...) and torch.linalg's remaining ones, on kael's dense kernels."""

from __future__ import annotations

from collections.abc import Callable

FUNCTIONS: dict[str, Callable] = {}
NOT_METHODS: frozenset[str] = frozenset()
METHODS: dict[str, Callable] = {}
LINALG: dict[str, Callable] = {}
