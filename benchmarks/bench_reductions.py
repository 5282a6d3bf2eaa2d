"""Reductions of float32 data: kael against PyTorch and NumPy, 2 threads.

Run: python benchmarks/bench_reductions.py [--rounds N] [--check]
Targets (issue 4): the sum of 16M elements, and sums over dim 0 and over dim 1 of a
4096x4096 tensor, each take at most 1.1x PyTorch's time, each call started on idle cores.
Then (issue 11) the sum of 16M and the sum over dim 1 back to back, in alternating blocks
of calls: at most 1.0x PyTorch's. kael adds float32 in float32 runs of 16 per lane,
accumulated in float64 in fixed blocks (deterministic for any thread count); the other
cases are reported without a target.
"""

from __future__ import annotations

import sys

import common  # noqa: F401  (first: it quiets OpenBLAS before NumPy loads)
import numpy as np
import torch
from common import SIDE, Case, N, back_to_back, run, triple

import kael


def cases() -> list[Case]:
    base = np.random.default_rng(0).standard_normal(N, dtype=np.float32)
    square = base.reshape(SIDE, SIDE)
    k, t, n = triple(base)
    ks, ts, ns = triple(square)
    target = ("torch", 1.1)
    return [
        Case(
            "sum 16M float32",
            {"kael": lambda: kael.sum(k), "torch": lambda: torch.sum(t), "numpy": n.sum},
            target=target,
        ),
        Case(
            "sum 4096x4096 over dim 0",
            {
                "kael": lambda: kael.sum(ks, 0),
                "torch": lambda: torch.sum(ts, 0),
                "numpy": lambda: ns.sum(0),
            },
            target=target,
        ),
        Case(
            "sum 4096x4096 over dim 1",
            {
                "kael": lambda: kael.sum(ks, 1),
                "torch": lambda: torch.sum(ts, 1),
                "numpy": lambda: ns.sum(1),
            },
            target=target,
        ),
        Case(
            "amax 4096x4096 over dim 1",
            {
                "kael": lambda: kael.amax(ks, 1),
                "torch": lambda: torch.amax(ts, 1),
                "numpy": lambda: ns.max(1),
            },
        ),
        Case(
            "norm 16M float32",
            {
                "kael": lambda: kael.norm(k),
                "torch": lambda: torch.norm(t),
                "numpy": lambda: np.linalg.norm(n),
            },
        ),
        Case(
            "var 4096x4096 over dim 1",
            {
                "kael": lambda: kael.var(ks, 1),
                "torch": lambda: torch.var(ts, 1),
                "numpy": lambda: ns.var(1, ddof=1),
            },
        ),
        Case(
            "argmax 4096x4096 over dim 1",
            {
                "kael": lambda: kael.argmax(ks, 1),
                "torch": lambda: torch.argmax(ts, 1),
                "numpy": lambda: ns.argmax(1),
            },
        ),
    ]


BACK_TO_BACK = ("sum 16M float32", "sum 4096x4096 over dim 1")  # issue 11's two sums


def sum_target(case: Case) -> tuple[str, float] | None:
    """Issue 11's two sums at most PyTorch's time, back to back (common.back_to_back)."""
    return ("torch", 1.0) if case.name in BACK_TO_BACK else None


if __name__ == "__main__":
    kael.set_num_threads(2)
    torch.set_num_threads(2)
    sys.exit(run(__doc__.splitlines()[0], cases, lambda c: back_to_back(c, sum_target, 15)))
