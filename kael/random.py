"""kael.random: torch.random's names for the default generator (manual_seed, seed,
initial_seed, get_rng_state, set_rng_state), and fork_rng, which lets a block draw and
puts the stream back where it was. kael draws on every device from the one default
generator, so its state is the whole state to save."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from kael.frontend.random import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)

__all__ = [
    "Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed",
    "manual_seed", "seed", "set_rng_state",
]  # fmt: skip


@contextlib.contextmanager
def fork_rng(
    devices=None, enabled: bool = True, _caller: str = "fork_rng", _devices_kw: str = "devices",
    device_type: str = "cuda",
) -> Iterator[None]:  # fmt: skip
    """Within the block draw freely; on leaving it (even by an exception) the default
    generator is back at its state on entry. `devices` and `device_type` are torch's: the
    one generator covers them all. enabled=False does nothing."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
