"""Names PyTorch has at torch.NAME with torch's own signatures: the function forms of
in-place methods (torch.abs_, torch.zero_, ...) and of nn.functional's layers."""

from __future__ import annotations

from collections.abc import Callable

FUNCTIONS: dict[str, Callable] = {}
