"""Elementwise ops: kael against PyTorch and NumPy, side by side in one run.

Run: python benchmarks/bench_elementwise.py [--rounds N] [--check]
Targets (issue 3; float32, 16M elements, medians):
- add into a preallocated output (out=): at most 0.85x PyTorch's time
- allocating a + b: at most 0.7x PyTorch's time
- exp and tanh: at most 0.5x PyTorch's time (the chain is reported, no target)
- add of a 4096x4096 tensor and its transpose: at most PyTorch's time
- a + b on 4-element tensors: at most 10 microseconds
- first call of a new kernel at most 100 ms; a new process with a warm disk cache
  compiles nothing
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import common  # noqa: F401  (first: it quiets OpenBLAS before NumPy loads)
import numpy as np
import torch
from common import SIDE, Case, N, run, triple

import kael


def cases() -> list[Case]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(N, dtype=np.float32)
    y = rng.standard_normal(N, dtype=np.float32)
    kx, ky, kout = kael.tensor(x), kael.tensor(y), kael.empty(N)
    tx, ty, tout = torch.from_numpy(x.copy()), torch.from_numpy(y.copy()), torch.empty(N)
    nx, ny, nout = x.copy(), y.copy(), np.empty(N, np.float32)
    sq = x.reshape(SIDE, SIDE)
    ksq, tsq, nsq = triple(sq)
    small = np.ones(4, np.float32)
    ks, ts, ns = triple(small)
    return [
        Case(
            "add 16M into preallocated (out=)",
            {
                "kael": lambda: kael.add(kx, ky, out=kout),
                "torch": lambda: torch.add(tx, ty, out=tout),
                "numpy": lambda: np.add(nx, ny, out=nout),
            },
            target=("torch", 0.85),
        ),
        Case(
            "a + b 16M (allocating)",
            {"kael": lambda: kx + ky, "torch": lambda: tx + ty, "numpy": lambda: nx + ny},
            target=("torch", 0.7),
        ),
        Case(
            "exp 16M",
            {
                "kael": lambda: kael.exp(kx),
                "torch": lambda: torch.exp(tx),
                "numpy": lambda: np.exp(nx),
            },
            target=("torch", 0.5),
        ),
        Case(
            "tanh 16M",
            {
                "kael": lambda: kael.tanh(kx),
                "torch": lambda: torch.tanh(tx),
                "numpy": lambda: np.tanh(nx),
            },
            target=("torch", 0.5),
        ),
        Case(
            "tanh(x * 1.5 + 2.0) * x 16M, eager",
            {
                "kael": lambda: kael.tanh(kx * 1.5 + 2.0) * kx,
                "torch": lambda: torch.tanh(tx * 1.5 + 2.0) * tx,
                "numpy": lambda: np.tanh(nx * 1.5 + 2.0) * nx,
            },
        ),
        Case(
            "4096x4096 + its transpose",
            {
                "kael": lambda: ksq + ksq.T,
                "torch": lambda: tsq + tsq.T,
                "numpy": lambda: nsq + nsq.T,
            },
            target=("torch", 1.0),
        ),
        Case(
            "a + b on 4 elements, 1000 calls",
            {
                "kael": lambda: [ks + ks for _ in range(1000)],
                "torch": lambda: [ts + ts for _ in range(1000)],
                "numpy": lambda: [ns + ns for _ in range(1000)],
            },
        ),
    ]


_FIRST_CALL = """
import json, time, kael
from kael.runtime import kernel_cache
a = kael.ones(1000); b = kael.ones(1000)
a.to(kael.float64)  # LLVM itself is loaded and warm before the timed call
before = dict(kernel_cache.stats)
start = time.perf_counter()
kael.minimum(a * 3.0, b - 1.0)
ms = (time.perf_counter() - start) * 1e3
print(json.dumps({"ms": ms, **{k: kernel_cache.stats[k] - before[k] for k in before}}))
"""


def compile_times() -> tuple[dict, dict]:
    """(cold, warm): the first call of new kernels in a process with an empty, then warm, cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "KAEL_CACHE_DIR": cache}

        def once() -> dict:
            out = subprocess.run(
                [sys.executable, "-c", _FIRST_CALL],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            return json.loads(out.strip().splitlines()[-1])

        return once(), once()


def latency_and_compile(cases: list[Case]) -> bool:
    """The two targets that are not ratios: per-op latency and compile time."""
    latency = cases[-1].median_ms("kael")  # ms per 1000 calls = us per call
    met = latency <= 10.0
    print(f"a + b on 4 elements: {latency:.2f} us (target <= 10 us: {'met' if met else 'MISSED'})")
    cold, warm = compile_times()
    compile_ok = cold["ms"] / max(1, cold["compiled"]) <= 100 and warm["compiled"] == 0
    print(
        f"first call of new kernels: {cold['ms']:.1f} ms for {cold['compiled']} kernels compiled "
        f"({cold['ms'] / max(1, cold['compiled']):.1f} ms each, target <= 100 ms); "
        f"new process, warm disk cache: {warm['ms']:.1f} ms, {warm['compiled']} compiled, "
        f"{warm['disk_hits']} loaded ({'met' if compile_ok else 'MISSED'})"
    )
    return met and compile_ok


def main() -> int:
    return run(__doc__.splitlines()[0], cases, latency_and_compile)


if __name__ == "__main__":
    sys.exit(main())
