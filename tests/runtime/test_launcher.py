"""The launcher's rules (kael/runtime/launcher.py) that the fast doors lean on."""

from types import SimpleNamespace

from kael.runtime.launcher import PARALLEL_BYTES, PROMOTE_BYTES, replayable


class _Tier:
    """A tier-0 kernel's promotion, counted."""

    def __init__(self):
        self.promoted = 0

    def promote(self):
        self.promoted += 1


def test_a_door_may_replay_launches_below_the_pools_threshold_and_promotes_the_big_ones():
    """Below PARALLEL_BYTES a launch runs on the calling thread at any thread count, so a
    door may keep it; from PROMOTE_BYTES on, keeping it optimizes its kernel as its launch
    would have."""
    fn = SimpleNamespace(tier0=_Tier())
    assert replayable(fn, PROMOTE_BYTES - 1) and fn.tier0.promoted == 0
    assert replayable(fn, PROMOTE_BYTES) and fn.tier0.promoted == 1
    assert replayable(fn, PARALLEL_BYTES - 1) and fn.tier0.promoted == 2
    assert not replayable(fn, PARALLEL_BYTES) and fn.tier0.promoted == 2
    assert replayable(SimpleNamespace(), PROMOTE_BYTES)  # optimized code: nothing to promote
