"""torch.nn.functional.ctc_loss: connectionist temporal classification."""

from __future__ import annotations

from collections.abc import Callable

FUNCTIONS: dict[str, Callable] = {}
