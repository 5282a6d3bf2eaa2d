"""Thread safety of first use: many threads making the first calls of every op family at
once get exactly the values one thread gets (tests/concurrency_workload.py holds the calls).

Each run is a fresh process, so every template, launch plan and compiled kernel is built
while the threads race for it; one run also starts from an empty disk cache, so the
threads race through LLVM too. Before the caches were keyed by their template objects,
4 of 6 runs gave wrong values (a launch took the plan of another op whose template had
died and whose id had been reused).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from kernel_helpers import ROOT

WORKLOAD = ROOT / "tests" / "concurrency_workload.py"
THREADS = 4
RUNS = 5


def _run(threads: int, out, **env: str) -> dict[str, np.ndarray]:
    res = subprocess.run(
        [sys.executable, str(WORKLOAD), str(threads), str(out)],
        env={**os.environ, "KAEL_NUM_THREADS": "2", **env},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert res.returncode == 0, res.stderr[-4000:]
    with np.load(out) as saved:
        return {name: saved[name] for name in saved.files}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, np.ndarray]:
    saved = _run(1, tmp_path_factory.mktemp("ref") / "one.npz")
    return {name.split("/", 1)[1]: arr for name, arr in saved.items()}


def _wrong(saved: dict[str, np.ndarray], reference: dict[str, np.ndarray]) -> list[str]:
    wrong = []
    for name, got in saved.items():
        want = reference[name.split("/", 1)[1]]
        same = got.dtype == want.dtype and got.shape == want.shape
        if not same or not np.array_equal(got, want, equal_nan=got.dtype.kind == "f"):
            wrong.append(name)
    return wrong


@pytest.mark.parametrize("run", range(RUNS))
def test_racing_first_calls_give_single_thread_values(run, reference, tmp_path):
    saved = _run(THREADS, tmp_path / "threads.npz")
    assert len(saved) == THREADS * len(reference)
    assert _wrong(saved, reference) == []


def test_racing_first_compiles_give_single_thread_values(reference, tmp_path):
    saved = _run(THREADS, tmp_path / "threads.npz", KAEL_CACHE_DIR=str(tmp_path / "cache"))
    assert len(saved) == THREADS * len(reference)
    assert _wrong(saved, reference) == []
