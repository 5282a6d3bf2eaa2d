"""Spatial sampling as torch.nn.functional spells it: affine_grid and grid_sample."""

from __future__ import annotations

from collections.abc import Callable

FUNCTIONS: dict[str, Callable] = {}
