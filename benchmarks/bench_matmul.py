"""Matrix products: kael against PyTorch and NumPy, in GFLOP/s and time ratios.

Run: python benchmarks/bench_matmul.py [--rounds N] [--check]
Targets (issue 4): 2048^3 float32 and 1024^3 float64 reach at least 0.9x NumPy's
GFLOP/s (time at most 1/0.9 of NumPy's); 64x64 float32 takes at most 3x NumPy's
time; [64,128,128] @ [128,128] float32 reaches at least 0.9x PyTorch's GFLOP/s.

OpenBLAS's idle workers spin (sched_yield) for about 2^28 cycles after every NumPy call,
taking a core from whatever runs next (kael's 2048^3 product ran at 0.4x its speed right
after a NumPy call): OPENBLAS_THREAD_TIMEOUT=4 makes them sleep at once, so every
library starts on idle cores. The 64x64 case times 200 calls per sample for every
library: one call of a few microseconds measures cache misses after the previous case.
"""

from __future__ import annotations

import sys

import common  # noqa: F401  (first: it quiets OpenBLAS before NumPy loads)
import numpy as np
import torch
from common import Case, run

import kael

AT_LEAST_09 = 1 / 0.9  # time ratio of "at least 0.9x the GFLOP/s"
FLOPS: dict[str, float] = {}


def _case(name, a_shape, b_shape, dtype, target, flops, transpose_b=False, calls=1) -> Case:
    """One product per library; `calls` products per timed sample (FLOPS counts them all)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal(a_shape).astype(dtype)
    b = rng.standard_normal(b_shape).astype(dtype)
    ka, kb = kael.tensor(a), kael.tensor(b)
    ta, tb = torch.from_numpy(a.copy()), torch.from_numpy(b.copy())
    if transpose_b:
        b, kb, tb = b.T, kb.T, tb.T
    FLOPS[name] = flops * calls
    reps = range(calls)
    runs = {
        "kael": lambda: [ka @ kb for _ in reps],
        "torch": lambda: [ta @ tb for _ in reps],
        "numpy": lambda: [a @ b for _ in reps],
    }
    return Case(name, runs, target)


def cases() -> list[Case]:
    return [
        _case(
            "2048x2048x2048 float32",
            (2048, 2048),
            (2048, 2048),
            np.float32,
            ("numpy", AT_LEAST_09),
            2 * 2048**3,
        ),
        _case(
            "1024x1024x1024 float64",
            (1024, 1024),
            (1024, 1024),
            np.float64,
            ("numpy", AT_LEAST_09),
            2 * 1024**3,
        ),
        _case(
            "64x64x64 float32 (200 calls)",
            (64, 64),
            (64, 64),
            np.float32,
            ("numpy", 3.0),
            2 * 64**3,
            calls=200,
        ),
        _case(
            "[64,128,128] @ [128,128] float32",
            (64, 128, 128),
            (128, 128),
            np.float32,
            ("torch", AT_LEAST_09),
            2 * 64 * 128**3,
        ),
        *(
            _case(
                f"x @ W.T, x [{m}, 1024], W [1024, 1024] float32 (a linear's small batch)",
                (m, 1024),
                (1024, 1024),
                np.float32,
                None,
                2 * m * 1024**2,
                transpose_b=True,
                calls=20,
            )
            for m in (1, 4, 16)
        ),
        _case(
            "[64,128,128] @ [64,128,128] float32",
            (64, 128, 128),
            (64, 128, 128),
            np.float32,
            None,
            2 * 64 * 128**3,
        ),
        _case(
            "1000x1000 @ 1000x1000.T float32",
            (1000, 1000),
            (1000, 1000),
            np.float32,
            None,
            2 * 1000**3,
            transpose_b=True,
        ),
    ]


def gflops(measured: list[Case]) -> bool:
    """Print each library's GFLOP/s and kael's GFLOP/s ratios; no further targets."""
    print(
        f"\n{'case':44} {'kael GF/s':>10} {'torch GF/s':>11} {'numpy GF/s':>11} {'k/t':>6} {'k/n':>6}"
    )
    for c in measured:
        rate = {lib: FLOPS[c.name] / (c.median_ms(lib) * 1e-3) / 1e9 for lib in c.times}
        k, t, n = rate["kael"], rate["torch"], rate["numpy"]
        print(f"{c.name:44} {k:10.1f} {t:11.1f} {n:11.1f} {k / t:6.2f} {k / n:6.2f}")
    return True


def main() -> int:
    return run(__doc__.splitlines()[0], cases, gflops)


if __name__ == "__main__":
    sys.exit(main())
