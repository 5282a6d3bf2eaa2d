import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_python_m_kael_shows_host_ops_and_every_stage():
    res = subprocess.run(
        [sys.executable, "-m", "kael"], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert res.returncode == 0, res.stderr
    out = res.stdout
    for heading in ("== host", "== eager tensors", "-- kael IR", "-- LLVM IR", "-- assembly"):
        assert heading in out
    assert "vector features:" in out
    assert "9223372036854775807" in out  # 1e30 saturates to INT64_MAX
    assert "kernel copy_float32_to_float64 rank=1 flat" in out
    assert "fpext <" in out
    assert "vcvtps2pd" in out
    assert "== @kael.compile" in out
    assert "1 kernels, 0 extern steps" in out and "row group: 2 kernels" in out
