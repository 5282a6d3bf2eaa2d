"""use_deterministic_algorithms: PyTorch's switch, its typed errors, and the CPU's kernels,
whose bits repeat run to run whichever way it is set."""

import numpy as np
import pytest

import kael


def test_the_switch_reads_back_what_was_set_and_starts_off():
    assert kael.are_deterministic_algorithms_enabled() is False
    try:
        kael.use_deterministic_algorithms(True, warn_only=True)
        assert kael.are_deterministic_algorithms_enabled() is True
        assert kael.is_deterministic_algorithms_warn_only_enabled() is True
    finally:
        kael.use_deterministic_algorithms(False)
    assert kael.are_deterministic_algorithms_enabled() is False
    assert kael.is_deterministic_algorithms_warn_only_enabled() is False


@pytest.mark.parametrize("args, kwargs", [((1,), {}), ((True,), {"warn_only": "no"})])
def test_the_switch_takes_bools_only(args, kwargs):
    with pytest.raises(kael.TypeError, match="must be a bool, got (int|str)"):
        kael.use_deterministic_algorithms(*args, **kwargs)
    assert kael.are_deterministic_algorithms_enabled() is False


def test_a_cpu_scatter_add_has_the_same_bits_either_way():
    rng = np.random.default_rng(5)
    index = kael.tensor(rng.integers(0, 9, 200_000))
    src = kael.tensor(rng.standard_normal(200_000).astype(np.float32))
    fast = kael.zeros(9).scatter_add_(0, index, src)
    try:
        kael.use_deterministic_algorithms(True)
        slow = kael.zeros(9).scatter_add_(0, index, src)
    finally:
        kael.use_deterministic_algorithms(False)
    np.testing.assert_array_equal(fast.numpy(), slow.numpy())
