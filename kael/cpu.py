"""kael.cpu: torch.cpu's device-module answers for the host (always available, one device,
nothing to synchronize) and its deprecated `kael.cpu.amp.autocast` (bfloat16 by default)."""

from __future__ import annotations

import types

from kael.frontend.autocast import autocast as _autocast
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


class _CpuAutocast(_autocast):
    """torch.cpu.amp.autocast: kael.autocast("cpu", ...), bfloat16 by default."""

    def __init__(self, enabled: bool = True, dtype=_bfloat16, cache_enabled: bool = True) -> None:
        super().__init__("cpu", dtype, enabled, cache_enabled)


amp = types.SimpleNamespace(autocast=_CpuAutocast)
