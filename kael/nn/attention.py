"""kael.nn.attention: torch.nn.attention's backend selection for scaled_dot_product_attention.
kael has one attention kernel (fused, exact softmax), so sdpa_kernel checks its arguments
and changes nothing: code that pins a backend runs as written."""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterable, Iterator

from kael.runtime.errors import TypeError

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(enum.IntEnum):
    """torch's attention backends, under their names and values."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False) -> Iterator[None]:
    """A block whose attention calls may use only `backends` (one or a list): kael's one
    kernel serves them all."""
    chosen = [backends] if isinstance(backends, SDPBackend) else backends
    if not isinstance(chosen, Iterable) or not all(isinstance(b, SDPBackend) for b in chosen):
        raise TypeError("sdpa_kernel expects an SDPBackend or a list of them")
    yield
