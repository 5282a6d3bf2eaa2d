"""`python -m kael.check_gpu`: what kael does on an NVIDIA GPU, checked in one unattended run.

On a machine with a usable GPU it prints the device and the versions, runs the device
tests (`pytest -m gpu`), then times kael against PyTorch on the same GPU and prints one
table with each workload's target (issue 12). A step that fails is reported and the run
goes on, so one short device session shows everything at once. Without a GPU it says why
and exits 0. `--device cpu --scale 0.001` runs the same table on the host at a tiny size:
how the script itself is tested on machines without a GPU.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import functools
import importlib.util
import io
import math
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import kael
from kael.runtime import cubin, cuda_driver

GiB = 1 << 30


@dataclass
class Case:
    """One workload: `build(lib, device, scale)` makes its inputs with `lib` (kael or torch)
    and returns the call to time; `work` is what one call moves or computes at `scale`."""

    name: str
    build: Callable
    work: Callable[[float], float]  # bytes, or flops where `unit` is TFLOP/s
    unit: str = "GB/s"
    # ("copy", f): at least f of the copy bandwidth; ("torch", f): f of torch's speed
    target: tuple[str, float] | None = None

    def verdict(self, ratios: dict[str, float]) -> str:
        if self.target is None:
            return ""
        against, least = self.target
        got = ratios.get(against)
        shown = f">= {least:.0%} of {against}"
        return f"{shown}: " + ("n/a" if got is None else "met" if got >= least else "MISSED")


@functools.lru_cache(maxsize=8)  # kael's and torch's inputs: drawn once (1 GiB takes seconds)
def _host(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def _on(lib, array: np.ndarray, device: str):
    return lib.from_numpy(array).to(device)


def _size(base: int, scale: float) -> int:
    return max(16, int(base * scale))


def _side(base: int, scale: float) -> int:
    return max(16, int(base * math.sqrt(scale)))


def _elementwise(fn: Callable, inputs: int):
    def build(lib, device, scale):
        n = _size(1 << 28, scale)
        xs = [_on(lib, _host((n,), i), device) for i in range(inputs)]
        return lambda: fn(lib, *xs)

    return build


def _rows(fn: Callable):
    def build(lib, device, scale):
        side = _side(8192, scale)
        x = _on(lib, _host((side, side)), device)
        return lambda: fn(lib, x)

    return build


def _matmul(half: bool, wgmma: bool = False):
    """A square product in float32, or in float16 (the tensor cores' kernel); `wgmma`: kael's
    with KAEL_CUDA_WGMMA=1, its values first checked against mma.sync's."""

    def build(lib, device, scale):
        n = _side(8192, scale)
        a, b = (_on(lib, _host((n, n), s), device) for s in (1, 2))
        if half:
            a, b = a.half(), b.half()
        if not (wgmma and lib is kael):
            return lambda: a @ b
        call = functools.partial(_with_wgmma, lambda: a @ b)
        _agree(call(), a @ b)
        return call

    return build


WGMMA = "KAEL_CUDA_WGMMA"


def _with_wgmma(call: Callable):
    """call() with half-type products allowed on the wgmma kernel (gemm.wgmma_enabled)."""
    before = os.environ.get(WGMMA)
    os.environ[WGMMA] = "1"
    try:
        return call()
    finally:
        if before is None:
            del os.environ[WGMMA]
        else:
            os.environ[WGMMA] = before


def _agree(got, want) -> None:
    """kael.Error unless two half products of the same operands agree within a unit of
    float16 (the same float32 sums, added in another order) plus float32's error."""
    got, want = np.asarray(got.float().cpu()), np.asarray(want.float().cpu())
    bad = ~np.isclose(got, want, rtol=2.0**-9, atol=1e-2)
    if bad.any():
        raise kael.Error(
            f"wgmma's product differs from mma.sync's at {int(bad.sum())} of {bad.size}"
        )


def _layer_norm(lib, x):
    return lib.nn.functional.layer_norm(x, (x.shape[-1],))


def _conv2d(lib, device, scale):  # a ResNet-50 layer: 3x3, 256 channels, 14x14, batch 32
    batch = max(1, int(32 * scale))
    x = _on(lib, _host((batch, 256, 14, 14)), device)
    w = _on(lib, _host((256, 256, 3, 3), 1), device)
    return lambda: lib.nn.functional.conv2d(x, w, padding=1)


def _attention_shape(scale: float) -> tuple[int, int, int, int]:
    return max(1, int(8 * scale)), 16, _side(1024, min(1.0, 8 * scale)), 64


def _attention(lib, device, scale):  # one compiled GPT-style block, [8, 16, 1024, 64]
    b, h, t, d = _attention_shape(scale)
    q, k, v = (_on(lib, _host((b, h, t, d), s), device) for s in range(3))

    def block(q, k, v):
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
        return lib.softmax(s, -1) @ v

    compiled = kael.compile(block) if lib is kael else lib.compile(block)
    return lambda: compiled(q, k, v)


def cases() -> list[Case]:
    f32 = 4
    return [
        Case("add 256M float32", _elementwise(lambda lib, a, b: a + b, 2),
             lambda s: 3 * f32 * _size(1 << 28, s), target=("copy", 0.85)),
        Case("exp 256M float32", _elementwise(lambda lib, a: lib.exp(a), 1),
             lambda s: 2 * f32 * _size(1 << 28, s), target=("copy", 0.85)),
        Case("sum 256M float32", _elementwise(lambda lib, a: a.sum(), 1),
             lambda s: f32 * _size(1 << 28, s), target=("copy", 0.80)),
        Case("softmax 8192x8192", _rows(lambda lib, x: lib.softmax(x, -1)),
             lambda s: 2 * f32 * _side(8192, s) ** 2),
        Case("layer_norm 8192x8192", _rows(_layer_norm), lambda s: 2 * f32 * _side(8192, s) ** 2),
        Case("matmul 8192 float32", _matmul(False), lambda s: 2 * _side(8192, s) ** 3,
             "TFLOP/s", ("torch", 0.50)),
        Case("matmul 8192 float16", _matmul(True), lambda s: 2 * _side(8192, s) ** 3,
             "TFLOP/s", ("torch", 0.60)),
        Case("matmul 8192 float16, wgmma", _matmul(True, wgmma=True),
             lambda s: 2 * _side(8192, s) ** 3, "TFLOP/s", ("torch", 0.60)),
        Case("conv2d ResNet 3x3x256, 14x14", _conv2d,
             lambda s: 2 * max(1, int(32 * s)) * 256 * 14 * 14 * 256 * 9, "TFLOP/s"),
        Case("compiled attention [8,16,1024,64]", _attention,
             lambda s: 4 * math.prod(_attention_shape(s)) * _attention_shape(s)[2], "TFLOP/s"),
    ]  # fmt: skip


def _sync(lib, device: str) -> None:
    if device == "cpu":
        return
    if lib is kael:
        kael.cuda.synchronize()
    else:
        lib.cuda.synchronize()


def time_call(lib, device: str, call: Callable, repeats: int = 5, calls: int = 10) -> float:
    """Seconds a call takes on the device: the median over `repeats` rounds of `calls`
    back-to-back calls waited for once (a round's time / calls), after two warm-ups. The
    device stays busy while the host queues the next call, as in a program, so a time is
    the kernels' and not the host's latency of one launch and one wait."""
    for _ in range(2):
        call()
    _sync(lib, device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        _sync(lib, device)
        times.append((time.perf_counter() - start) / calls)
    return statistics.median(times)


def _error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:90] if text else ''}"


def measure(case: Case, lib, device: str, scale: float) -> float | str:
    """Seconds a call takes, or the error that stopped it."""
    try:
        return time_call(lib, device, case.build(lib, device, scale))
    except Exception as exc:  # every failure is a row of the table, not the end of the run
        return _error(exc)


def copy_bandwidth(device: str, scale: float) -> float:
    """Bytes a second a device-to-device copy moves (read + write), by the driver's
    cuMemcpyDtoD on the GPU, by a kael copy on the host."""
    n = _size(1 << 28, scale)
    src = kael.from_numpy(_host((n,))).to(device)
    dst = kael.empty(n, device=device)
    if device == "cpu":
        seconds = time_call(kael, device, lambda: dst.copy_(src))
    else:
        move = lambda: cuda_driver.memcpy_dtod(dst.data_ptr(), src.data_ptr(), 4 * n)  # noqa: E731
        seconds = time_call(kael, device, move)
    return 2 * 4 * n / seconds


def _rate(case: Case, seconds: float | str, scale: float) -> str:
    if isinstance(seconds, str):
        return ""
    value = case.work(scale) / seconds
    return f"{value / 1e12:.1f}" if case.unit == "TFLOP/s" else f"{value / 1e9:.0f}"


# errors after which the context is unusable: every later row, torch's too, would fail
STICKY = ("ILLEGAL_ADDRESS", "LAUNCH_FAILED", "MISALIGNED_ADDRESS", "ILLEGAL_INSTRUCTION")


def table(device: str, scale: float, torch_lib, only: str = "") -> bool:
    """Print the benchmark table a row at a time (a crash keeps the rows before it);
    whether every kael case ran. `only`: comma-separated words, the rows whose names hold one."""
    try:
        copy = copy_bandwidth(device, scale)
        print(f"copy bandwidth (read + write): {copy / 1e9:.0f} GB/s")
    except Exception as exc:
        copy = math.nan
        print(f"copy bandwidth: n/a ({_error(exc)})")
    print(
        f"{'workload':34} {'kael ms':>9} {'torch ms':>9} {'kael':>7} {'torch':>7}  {'unit':7}"
        f" {'t/kael':>6} {'of copy':>7}  target"
    )
    ran = True
    words = [w.strip() for w in only.split(",") if w.strip()]
    for case in cases():
        if words and not any(w in case.name for w in words):
            continue
        mine = measure(case, kael, device, scale)
        theirs = measure(case, torch_lib, device, scale) if torch_lib else "no torch"
        ran &= not isinstance(mine, str)
        ratios = {}  # kael's speed over torch's, and over the copy's
        if not isinstance(mine, str) and not isinstance(theirs, str):
            ratios["torch"] = theirs / mine
        if not isinstance(mine, str) and case.unit == "GB/s":
            ratios["copy"] = case.work(scale) / mine / copy
        ms = [f"{t * 1e3:9.3f}" if not isinstance(t, str) else f"{'-':>9}" for t in (mine, theirs)]
        shown = [f"{ratios[k]:.2f}" if k in ratios else "" for k in ("torch", "copy")]
        print(
            f"{case.name:34} {ms[0]} {ms[1]} {_rate(case, mine, scale):>7} "
            f"{_rate(case, theirs, scale):>7}  {case.unit:7} {shown[0]:>6} {shown[1]:>7}  "
            f"{case.verdict(ratios)}"
        )
        for who, result in (("kael", mine), ("torch", theirs)):
            if isinstance(result, str):
                print(f"    {who}: {result}")
        if isinstance(mine, str) and any(code in mine for code in STICKY):
            print("the CUDA context is broken by that error: the table stops here")
            return False
    return ran


TEST_TAIL = 20000  # characters of the tests' output the report repeats (the log has all)


def _workers() -> list[str]:
    """pytest-xdist's flags where it is installed and the host has cores to spare: the
    device tests are mostly kernel compiles on the host, which run side by side."""
    count = min(8, (os.cpu_count() or 1) // 2)
    if count < 2 or importlib.util.find_spec("xdist") is None:
        return []
    return ["-n", str(count)]


WGMMA_TESTS = "matmul or mm or linear or mma or einsum or attention or conv or bilinear"


def run_tests(timeout: float, log: Path | None = None, wgmma: bool = False) -> bool:
    """The device tests, `pytest -m gpu`, one line a test, in a child process; whether they passed. The
    child must find the device (KAEL_REQUIRE_GPU: conftest.py stops instead of skipping),
    dumps its threads' stacks where a test hangs, and writes every outcome to `log` as it
    comes, so a run stopped at `timeout` (the child's whole process group) still says
    which tests passed and failed. `wgmma`: the tests of products (WGMMA_TESTS) again, with
    KAEL_CUDA_WGMMA=1."""
    root = Path(__file__).resolve().parent.parent
    command = [sys.executable, "-m", "pytest", "-m", "gpu", "-p", "no:cacheprovider", "-vv"]
    command += ["-rfE", "--tb=short", "-o", "faulthandler_timeout=60", *_workers()]
    env = dict(os.environ, KAEL_REQUIRE_GPU="1", PYTHONUNBUFFERED="1")
    if wgmma:
        command += ["-k", WGMMA_TESTS]
        env[WGMMA] = "1"
    with contextlib.ExitStack() as stack:
        if log is None:
            sink = stack.enter_context(tempfile.TemporaryFile("w+", errors="replace"))
        else:
            sink = stack.enter_context(open(log, "w+", errors="replace"))  # noqa: SIM115
        code = run_group(command, root, env, sink, timeout)
        sink.flush()
        sink.seek(0)
        print(sink.read()[-TEST_TAIL:])
    if code is None:
        print(f"device tests: stopped after {timeout:.0f} s")
    return code == 0


def run_group(command: list[str], cwd: Path, env: dict, sink, timeout: float) -> int | None:
    """Run `command` in a process group of its own, its output to `sink`; its exit code,
    or None when it ran past `timeout`. However this ends (the time limit, Ctrl-C), the
    whole group is killed: xdist's workers must not go on holding the GPU."""
    child = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        return child.wait(timeout)
    except subprocess.TimeoutExpired:
        return None
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()


def versions() -> str:
    found = [f"python {platform.python_version()}"]
    for name in ("llvmlite", "numpy", "cuda.bindings", "torch"):
        try:
            module = __import__(name, fromlist=["__version__"])
            found.append(f"{name} {getattr(module, '__version__', '?')}")
        except Exception:
            found.append(f"{name} missing")
    return ", ".join(found)


def _torch(device: str):
    try:
        import torch
    except Exception:
        return None
    return torch if device == "cpu" or torch.cuda.is_available() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kael.check_gpu", description=__doc__)
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the sizes")
    parser.add_argument("--no-tests", action="store_true", help="only the benchmark table")
    parser.add_argument("--only", default="", help="table rows whose names hold one of these")
    parser.add_argument("--tests-timeout", type=float, default=150.0)
    parser.add_argument("--out", type=Path, help="also write the report here (a file)")
    parser.add_argument("--tests-log", type=Path, help="the device tests' whole output")
    args = parser.parse_args(argv)
    faulthandler.enable()  # a crash in a kernel launch still says where
    with contextlib.ExitStack() as stack:
        report = stack.enter_context(open(args.out, "w")) if args.out else None  # noqa: SIM115

        class Tee(io.TextIOBase):
            """Each line to the terminal and the report as it comes: a crash keeps both."""

            def write(self, text):
                sys.__stdout__.write(text)
                sys.__stdout__.flush()
                if report is not None:
                    report.write(text)
                    report.flush()
                return len(text)

        stack.enter_context(contextlib.redirect_stdout(Tee()))
        return _check(args)


def _check(args) -> int:
    print(f"kael {kael.__version__}: {versions()}")
    if args.device == "cuda":
        reason = cuda_driver.unavailable_reason()
        if reason:
            print(f"no GPU to check: {reason}")
            return 0
        d = cuda_driver.describe()
        major, minor = d["capability"]
        print(
            f"device: {d['name']}, {d['memory'] / GiB:.0f} GiB, {d['multiprocessors']} SMs,"
            f" sm_{major}{minor}, driver CUDA {d['driver'] // 1000}.{d['driver'] % 1000 // 10}"
        )
    ok = True
    if not args.no_tests:
        print("\n== device tests (pytest -m gpu)")
        ok = run_tests(args.tests_timeout, args.tests_log)
        if args.device == "cuda" and cuda_driver.describe()["capability"] == (9, 0):
            print(f"\n== the products' device tests again on the wgmma kernel ({WGMMA}=1)")
            log = args.tests_log and args.tests_log.with_suffix(".wgmma.log")
            ok &= run_tests(args.tests_timeout, log, wgmma=True)
    if args.device == "cuda" and cuda_driver.emulated():
        print("\nthe device is kael's emulator (KAEL_EMULATE_CUDA=1): no benchmark table")
        return 0 if ok else 1
    print(f"\n== kael against torch on {args.device} (scale {args.scale:g})")
    ran = table(args.device, args.scale, _torch(args.device), args.only)
    if args.device == "cuda":
        shown = ", ".join(f"{how} {count}" for how, count in cubin.stats.items())
        print(f"\nthis process's modules (cubin cache): {shown}")
    print(
        f"\ndevice tests {'passed' if ok else 'FAILED'}; kael ran {'every' if ran else 'not every'} case"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
