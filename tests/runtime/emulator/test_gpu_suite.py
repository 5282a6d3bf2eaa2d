"""The device tests (`pytest -m gpu`, what `python -m kael.check_gpu` runs on a GPU) pass on
the emulated device, so every CI run executes kael's PTX, not only ptxas's check of it."""

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from kael.check_gpu import WGMMA_TESTS

ROOT = Path(__file__).resolve().parents[3]


# The device tests in two halves of about equal time (the golden replay, the rest), run at
# once: the emulator is one core's Python, and this test waits on them (267 s -> ~150 s).
HALVES = (["tests/test_golden_cuda.py"], ["tests", "--ignore=tests/test_golden_cuda.py"])


def test_the_device_tests_pass_on_the_emulated_device(tmp_path):
    env = {**os.environ, "KAEL_EMULATE_CUDA": "1", "KAEL_REQUIRE_GPU": "1"}
    procs = []
    for k, half in enumerate(HALVES):
        cmd = [sys.executable, "-m", "pytest", "-m", "gpu", "-p", "no:cacheprovider", *half]
        cmd.append(f"--junitxml={tmp_path / f'gpu{k}.xml'}")
        with open(tmp_path / f"gpu{k}.log", "w") as out:  # the child keeps its own handle
            procs.append(subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=out))
    ran = skipped = expected_failures = 0
    for k, proc in enumerate(procs):
        proc.wait(timeout=900)
        assert proc.returncode == 0, (tmp_path / f"gpu{k}.log").read_text()[-6000:]
        suite = ET.parse(tmp_path / f"gpu{k}.xml").getroot().find("testsuite")
        ran += int(suite.get("tests"))
        skipped += int(suite.get("skipped"))
        expected_failures += sum(
            1
            for case in suite.iter("testcase")
            if case.find("skipped") is not None
            and "xfail" in (case.find("skipped").get("type") or "")
        )
    assert ran >= 90 and skipped == expected_failures, (ran, skipped, expected_failures)


def test_the_products_device_tests_pass_on_the_wgmma_kernel(tmp_path):
    # the emulated device is an sm_90: with the switch on, half-type products take wgmma
    env = {**os.environ, "KAEL_EMULATE_CUDA": "1", "KAEL_REQUIRE_GPU": "1"}
    env["KAEL_CUDA_WGMMA"] = "1"
    cmd = [sys.executable, "-m", "pytest", "-m", "gpu", "-p", "no:cacheprovider", "tests"]
    cmd += ["-k", WGMMA_TESTS, f"--junitxml={tmp_path / 'products.xml'}"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    suite = ET.parse(tmp_path / "products.xml").getroot().find("testsuite")
    assert int(suite.get("tests")) >= 100 and suite.get("skipped") == "0"


WARP_SERIAL_CHECK = """
import numpy as np
import kael
for dtype in (kael.float32, kael.float64, kael.int64):  # the tiled matmul: tiles in shared memory
    a, b = (kael.randn(33, 20) * 10).to(dtype), (kael.randn(20, 17) * 10).to(dtype)
    np.testing.assert_allclose((a.cuda() @ b.cuda()).cpu().numpy(), (a @ b).numpy(), rtol=1e-5)
x = kael.randn(7, 300)
for op in ("amax", "argmax", "amin"):  # the CTA-per-output reduction: warps meet in shared memory
    want = getattr(kael, op)(x, 1).numpy()
    np.testing.assert_array_equal(getattr(kael, op)(x.cuda(), 1).cpu().numpy(), want)
from kael.codegen.ptx import rows
rows.MAX_BLOCKS = 1  # one CTA takes every row: its partials in shared memory, row after row
y = kael.randn(3, 1028)
for fn in (lambda t: kael.softmax(t, -1), lambda t: kael.nn.functional.rms_norm(t, (1028,))):
    np.testing.assert_allclose(fn(y.cuda()).cpu().numpy(), fn(y).numpy(), rtol=2e-6, atol=2e-6)
"""


def test_kernels_with_shared_memory_are_right_with_warps_run_one_at_a_time():
    # lockstep would hide a missing barrier; warp-serial emulation shows it as wrong values
    env = {**os.environ, "KAEL_EMULATE_CUDA": "1", "KAEL_EMULATE_CUDA_SERIAL": "1"}
    cmd = [sys.executable, "-c", WARP_SERIAL_CHECK]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
