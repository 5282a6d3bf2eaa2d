"""python -m kael.check_gpu: says why and exits 0 without a GPU; its table, run on the host
at a tiny size, has a row for every workload and reports failures as rows."""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import pytest

from kael import check_gpu
from kael.runtime import cuda_driver


@pytest.mark.skipif(cuda_driver.is_available(), reason="with a GPU the check runs for real")
def test_without_a_gpu_it_says_why_and_exits_0():
    done = subprocess.run(
        [sys.executable, "-m", "kael.check_gpu"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "no GPU to check: CUDA is not available" in done.stdout


def test_the_table_on_the_host_has_a_row_for_every_workload(tmp_path):
    out = tmp_path / "report.txt"
    assert (
        check_gpu.main(["--device", "cpu", "--scale", "0.0005", "--no-tests", "--out", str(out)])
        == 0
    )
    report = out.read_text()
    assert "copy bandwidth (read + write):" in report
    names = [c.name for c in check_gpu.cases()]
    lines = report.splitlines()
    rows = [i for i, line in enumerate(lines) if line[:34].strip() in names]
    assert [lines[i][:34].strip() for i in rows] == names
    for i in rows:  # kael's time, or a '-' and kael's error on the next line
        kael_ms = lines[i][34:].split()[0]
        assert kael_ms == "-" and lines[i + 1].startswith("    kael: ") or float(kael_ms) > 0


def test_a_failing_workload_is_a_row_with_its_error():
    def build(lib, device, scale):
        raise ValueError("no such kernel on this device\nsecond line")

    case = check_gpu.Case("broken", build, lambda s: 1.0)
    assert check_gpu.measure(case, None, "cpu", 1.0) == "ValueError: no such kernel on this device"


@pytest.mark.parametrize(
    ("ratios", "verdict"),
    [
        ({"copy": 0.85}, ">= 85% of copy: met"),
        ({"copy": 0.849}, ">= 85% of copy: MISSED"),
        ({}, ">= 85% of copy: n/a"),
    ],
)
def test_a_target_is_met_at_its_limit_and_missed_below(ratios, verdict):
    case = check_gpu.Case("x", None, lambda s: 1.0, target=("copy", 0.85))
    assert case.verdict(ratios) == verdict
    assert check_gpu.Case("y", None, lambda s: 1.0).verdict(ratios) == ""


def test_on_the_emulated_device_it_runs_the_device_tests_but_no_table(monkeypatch, capsys):
    ran = []
    monkeypatch.setenv("KAEL_EMULATE_CUDA", "1")
    monkeypatch.setattr(cuda_driver, "unavailable_reason", lambda: "")
    monkeypatch.setattr(
        cuda_driver,
        "describe",
        lambda: dict(
            name="emulated", memory=1 << 33, multiprocessors=4, capability=(9, 0), driver=12080
        ),
    )
    monkeypatch.setattr(
        check_gpu, "run_tests", lambda timeout, log, wgmma=False: ran.append(wgmma) or True
    )
    monkeypatch.setattr(check_gpu, "table", lambda *a: pytest.fail("benchmarked the emulator"))
    args = argparse.Namespace(
        device="cuda", no_tests=False, tests_timeout=60, tests_log=None, scale=1.0
    )
    assert check_gpu._check(args) == 0
    out = capsys.readouterr().out
    # an sm_90 device: the products' tests run again on the wgmma kernel
    assert ran == [False, True] and "KAEL_CUDA_WGMMA=1" in out
    assert "emulator (KAEL_EMULATE_CUDA=1): no benchmark table" in out


def test_device_tests_past_their_time_are_stopped(tmp_path, capsys):
    log = tmp_path / "tests.log"
    assert check_gpu.run_tests(2.0, log) is False
    assert "device tests: stopped after 2 s" in capsys.readouterr().out
    assert log.exists()  # the outcomes so far stay readable


SPAWNS_A_WORKER = """
import subprocess, sys, time
worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(worker.pid, flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, killed but not reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


@pytest.mark.parametrize("timeout", [1.5, 60.0])
def test_a_run_past_its_time_or_interrupted_kills_its_workers(tmp_path, timeout):
    # a worker that outlives its parent would go on holding the GPU
    sink = (tmp_path / "out.txt").open("w+")
    command = [sys.executable, "-c", SPAWNS_A_WORKER]
    if timeout > 10:  # interrupted instead: the wait raises, as at Ctrl-C
        waits = []

        def interrupted(*args):
            waits.append(args)
            if len(waits) == 1:  # once the worker runs
                while not (tmp_path / "out.txt").read_text():
                    time.sleep(0.05)
                raise KeyboardInterrupt
            return 0

        with (
            pytest.raises(KeyboardInterrupt),
            mock.patch.object(subprocess.Popen, "wait", side_effect=interrupted),
        ):
            check_gpu.run_group(command, tmp_path, dict(os.environ), sink, timeout)
    else:
        assert check_gpu.run_group(command, tmp_path, dict(os.environ), sink, timeout) is None
    worker = int((tmp_path / "out.txt").read_text().split()[0])
    deadline = time.monotonic() + 5
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(worker)


def test_a_run_that_ends_gives_its_exit_code(tmp_path):
    sink = (tmp_path / "out.txt").open("w+")
    command = [sys.executable, "-c", "raise SystemExit(3)"]
    assert check_gpu.run_group(command, tmp_path, dict(os.environ), sink, 30) == 3


@pytest.mark.parametrize(("cores", "flags"), [(3, []), (4, ["-n", "2"]), (64, ["-n", "8"])])
def test_device_tests_spread_over_half_the_cores_up_to_8(monkeypatch, cores, flags):
    monkeypatch.setattr(check_gpu.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(check_gpu.importlib.util, "find_spec", lambda name: object())
    assert check_gpu._workers() == flags


def test_only_keeps_the_rows_whose_names_hold_a_word(tmp_path):
    out = tmp_path / "report.txt"
    argv = ["--device", "cpu", "--scale", "0.0005", "--no-tests", "--out", str(out)]
    assert check_gpu.main([*argv, "--only", "sum, exp"]) == 0
    names = [c.name for c in check_gpu.cases()]
    shown = [
        line[:34].strip() for line in out.read_text().splitlines() if line[:34].strip() in names
    ]
    assert shown == ["exp 256M float32", "sum 256M float32"]
