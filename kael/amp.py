"""kael.amp: torch.amp's autocast (kael.autocast) and is_autocast_available. kael has no
autograd, so torch's GradScaler, which scales gradients, has nothing to do here."""

from __future__ import annotations

from kael.frontend.autocast import autocast

__all__ = ["autocast", "is_autocast_available"]


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast works for the device type: the CPU and CUDA."""
    return device_type in ("cpu", "cuda")
