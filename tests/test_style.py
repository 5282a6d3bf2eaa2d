"""The code style gate: ruff check and ruff format must both be clean."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PATHS = ["kael", "tests", "benchmarks"]


def _ruff(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("ruff")
    if exe is None:
        pytest.fail("ruff is not installed: it is part of the test extra")
    return subprocess.run(
        [exe, *args, *PATHS], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_ruff_check_is_clean():
    res = _ruff("check")
    assert res.returncode == 0, res.stdout + res.stderr


def test_ruff_format_is_clean():
    res = _ruff("format", "--check")
    assert res.returncode == 0, res.stdout + res.stderr
