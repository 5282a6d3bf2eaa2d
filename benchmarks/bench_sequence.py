"""Scans, flip and roll on 16M float32 elements: kael against PyTorch and NumPy.

Run: python benchmarks/bench_sequence.py [--rounds N] [--check]
No targets yet (issue 4 asks for the figures): cumsum of a 16M line, and of a
4096x4096 matrix along each dim, plus flip and roll of the matrix.
"""

from __future__ import annotations

import sys

import common  # noqa: F401  (first: it quiets OpenBLAS before NumPy loads)
import numpy as np
import torch
from common import SIDE, Case, N, run, triple

import kael


def cases() -> list[Case]:
    base = np.random.default_rng(0).standard_normal(N, dtype=np.float32)
    square = base.reshape(SIDE, SIDE)
    k_line, t_line, n_line = triple(base)
    k_sq, t_sq, n_sq = triple(square)
    out = [
        Case(
            "cumsum 16M float32",
            {
                "kael": lambda: kael.cumsum(k_line, 0),
                "torch": lambda: torch.cumsum(t_line, 0),
                "numpy": lambda: np.cumsum(n_line, 0),
            },
        )
    ]
    for dim in (0, 1):
        out.append(
            Case(
                f"cumsum 4096x4096 float32 dim {dim}",
                {
                    "kael": lambda dim=dim: kael.cumsum(k_sq, dim),
                    "torch": lambda dim=dim: torch.cumsum(t_sq, dim),
                    "numpy": lambda dim=dim: np.cumsum(n_sq, dim),
                },
            )
        )
    for dims in ((0,), (1,)):
        out.append(
            Case(
                f"flip 4096x4096 float32 dims {dims}",
                {
                    "kael": lambda dims=dims: kael.flip(k_sq, dims),
                    "torch": lambda dims=dims: torch.flip(t_sq, dims),
                    "numpy": lambda dims=dims: np.flip(n_sq, dims).copy(),
                },
            )
        )
    out.append(
        Case(
            "roll 4096x4096 float32 (100, 200)",
            {
                "kael": lambda: kael.roll(k_sq, (100, 200), (0, 1)),
                "torch": lambda: torch.roll(t_sq, (100, 200), (0, 1)),
                "numpy": lambda: np.roll(n_sq, (100, 200), (0, 1)),
            },
        )
    )
    return out


def main() -> int:
    return run(__doc__.splitlines()[0], cases)


if __name__ == "__main__":
    sys.exit(main())
