"""Indexing ops: cat, stack, index_select, gather, scatter_add, index_add_, take_along_dim,
nonzero, sort, argsort and topk."""

from __future__ import annotations

from collections.abc import Callable

# kael.NAME for each entry; also Tensor.NAME unless the name is in NOT_METHODS.
FUNCTIONS: dict[str, Callable] = {}
# Tensor-only methods (in-place variants, operators).
METHODS: dict[str, Callable] = {}
NOT_METHODS: frozenset[str] = frozenset()
