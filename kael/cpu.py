"""kael.cpu: torch.cpu's device-module answers for the host (always available, one device,
nothing to synchronize) and its deprecated `kael.cpu.amp.autocast` (bfloat16 by default)."""

from __future__ import annotations

import types

from kael.frontend import autocast as _autocast
from kael.runtime.dtypes import bfloat16 as _bfloat16

__all__ = ["amp", "current_device", "device_count", "is_available", "synchronize"]


def is_available() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def synchronize(device=None) -> None:
    """Nothing to wait for: host kernels finish before their launch returns."""


amp = types.SimpleNamespace(autocast=_autocast.for_device("cpu", _bfloat16))
