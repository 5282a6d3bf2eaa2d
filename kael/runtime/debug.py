"""KAEL_DEBUG levels: 1 kernel launches with times, 2 kael IR, 3 LLVM IR, 4 assembly or PTX."""

from __future__ import annotations

import os
import sys

from kael.runtime.errors import ValueError


def _from_env() -> int:
    raw = os.environ.get("KAEL_DEBUG", "0").strip() or "0"
    return max(0, min(4, int(raw))) if raw.isdigit() else 0


level = _from_env()


def set_debug(new_level: int) -> None:
    """Set the debug level at run time (0 turns output off)."""
    global level
    if isinstance(new_level, bool) or not isinstance(new_level, int) or not 0 <= new_level <= 4:
        raise ValueError(f"debug level must be an int from 0 to 4, got {new_level!r}")
    level = new_level


def get_debug() -> int:
    return level


def emit(text: str) -> None:
    """Write one debug record to stderr."""
    sys.stderr.write(text if text.endswith("\n") else text + "\n")
    sys.stderr.flush()


def report_kernel(
    symbol: str, how: str, seconds: float, stages: list[tuple[int, str, object]]
) -> None:
    """At level 1 how a kernel was had; at each higher level its stage (label, text thunk)."""
    if level < 1:
        return
    emit(f"[kael] kernel {symbol}: {how} in {seconds * 1e3:.2f} ms")
    for at, label, text in stages:
        if level >= at:
            emit(f"[kael] {label} of {symbol}:\n{text()}")
