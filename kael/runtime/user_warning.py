"""Warnings that point at the user's line, as PyTorch's do: the stack level is the first
frame outside the kael package, however deep the op's path from the user's call runs
(a fixed stacklevel named a kael file from any door but the one it was counted on)."""

from __future__ import annotations

import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """warnings.warn(message, category) attributed to the innermost caller outside kael."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


# The messages warn_once has given (a forked child inherits them, as its parent's process
# has warned); `always`: torch.set_warn_always(True), under which they repeat.
_given: set[str] = set()
always = False


def warn_once(message: str, category: type[Warning] = UserWarning) -> None:
    """warn, the first time only in this process, as PyTorch's TORCH_WARN_ONCE (every time
    after set_warn_always(True)). Two threads warning at once may both warn."""
    if not always:
        if message in _given:
            return
        _given.add(message)
    warn(message, category)
