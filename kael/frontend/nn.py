"""The softmax family and friends: softmax, log_softmax, cross_entropy, layer_norm
(kael.nn.functional re-exports them)."""

from __future__ import annotations

from collections.abc import Callable

# kael.NAME for each entry; also Tensor.NAME unless the name is in NOT_METHODS.
FUNCTIONS: dict[str, Callable] = {}
# Tensor-only methods (in-place variants, operators).
METHODS: dict[str, Callable] = {}
NOT_METHODS: frozenset[str] = frozenset()
