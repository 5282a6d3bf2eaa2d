import os
import sys
from pathlib import Path

# Tests import their helpers (tests/kernel_helpers.py) by module name.
sys.path.insert(0, str(Path(__file__).parent))


def pytest_collection_modifyitems(config, items):
    """Skip the `gpu` tests, naming why, where no CUDA device is usable (probed only when
    some are collected): `python -m kael.check_gpu` runs them on a machine with one, and
    sets KAEL_REQUIRE_GPU so that a device the child cannot use stops the run instead
    of passing it with every test skipped."""
    on_gpu = [item for item in items if item.get_closest_marker("gpu")]
    if not on_gpu:
        return
    import pytest

    from kael.runtime import cuda_driver

    reason = cuda_driver.unavailable_reason()
    if reason and os.environ.get("KAEL_REQUIRE_GPU"):
        raise pytest.UsageError(f"KAEL_REQUIRE_GPU is set, but {reason}")
    if reason:
        skip = pytest.mark.skip(reason=f"needs a CUDA device: {reason}")
        for item in on_gpu:
            item.add_marker(skip)


def pytest_runtest_setup(item):
    """Each test sees the warnings PyTorch gives once per process (user_warning.warn_once)
    as a fresh process would: an earlier test's call does not use them up."""
    from kael.runtime import user_warning

    user_warning._given.clear()
