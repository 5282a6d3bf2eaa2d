import pytest
from kernel_helpers import run_python

from kael.runtime import debug
from kael.runtime.errors import ValueError as KaelValueError


@pytest.mark.parametrize("bad", [-1, 5, 1.0, "2", True])
def test_set_debug_rejects_levels_outside_0_to_4(bad):
    with pytest.raises(KaelValueError, match="0 to 4"):
        debug.set_debug(bad)


def test_set_debug_accepts_both_ends():
    saved = debug.get_debug()
    try:
        debug.set_debug(4)
        assert debug.get_debug() == 4
        debug.set_debug(0)
        assert debug.get_debug() == 0
    finally:
        debug.set_debug(saved)


_SCRIPT = """
import numpy as np
from kernel_helpers import empty_like_np
from kael.frontend import eager
out, dst = empty_like_np((1000,), np.float64)
eager.fill(dst, 1.5)
"""


def _stderr(level: int, tmp_path) -> str:
    return run_python(_SCRIPT, KAEL_DEBUG=str(level), KAEL_CACHE_DIR=str(tmp_path)).stderr


def test_each_debug_level_adds_its_stage(tmp_path):
    quiet = _stderr(0, tmp_path)
    one, two, three, four = (_stderr(n, tmp_path) for n in (1, 2, 3, 4))
    assert "[kael]" not in quiet
    assert "launch kael_fill_float64" in one and "GB/s" in one and "kael IR" not in one
    assert "kernel fill_float64 rank=1" in two and "LLVM IR" not in two
    assert "define void @kael_fill_float64" in three and "assembly" not in three
    assert "assembly of kael_fill_float64" in four and "ret" in four


_HANDWRITTEN = """
import kael
kael.cumsum(kael.ones(5, 7), 1)
kael.matmul(kael.ones(16, 8), kael.ones(8, 4))
"""


def test_level_1_prints_hand_written_launches_with_their_rate(tmp_path):
    quiet = run_python(_HANDWRITTEN, KAEL_DEBUG="0", KAEL_CACHE_DIR=str(tmp_path)).stderr
    one = run_python(_HANDWRITTEN, KAEL_DEBUG="1", KAEL_CACHE_DIR=str(tmp_path)).stderr
    assert "[kael]" not in quiet
    lines = [line for line in one.splitlines() if line.startswith("[kael] launch")]
    scan = [line for line in lines if "kael_scan_cumsum_float32_float32" in line]
    assert len(scan) == 1 and "items=5 " in scan[0] and "GB/s" in scan[0]
    assert any("GFLOP/s" in line for line in lines)
