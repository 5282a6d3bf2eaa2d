"""Reductions: sum, prod, mean, var, std, max, min, amax, amin, argmax, argmin, all, any,
norm, logsumexp, count_nonzero, each a Reduce kernel with its elementwise prologue fused."""

from __future__ import annotations

from collections.abc import Callable

# kael.NAME for each entry; also Tensor.NAME unless the name is in NOT_METHODS.
FUNCTIONS: dict[str, Callable] = {}
# Tensor-only methods (in-place variants, operators).
METHODS: dict[str, Callable] = {}
NOT_METHODS: frozenset[str] = frozenset()
