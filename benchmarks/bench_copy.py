"""Copies and dtype conversions of 16M float32 elements: kael against PyTorch and NumPy.

Run: python benchmarks/bench_copy.py [--rounds N] [--check]
Targets (issue 2): a contiguous copy into a preallocated tensor takes at most 0.8x
PyTorch's `copy_`; a transposed 4096x4096 copy at most PyTorch's time.
"""

from __future__ import annotations

import sys

import common  # noqa: F401  (first: it quiets OpenBLAS before NumPy loads)
import numpy as np
import torch
from common import SIDE, Case, N, run, triple

import kael


def cases() -> list[Case]:
    rng = np.random.default_rng(0)
    base = rng.standard_normal(N, dtype=np.float32)
    square = base.reshape(SIDE, SIDE)

    k_src, t_src, n_src = triple(base)
    k_dst, t_dst, n_dst = kael.empty(N), torch.empty(N), np.empty(N, np.float32)
    k_sq, t_sq, n_sq = triple(square)
    k_sq_dst, t_sq_dst = kael.empty(SIDE, SIDE), torch.empty(SIDE, SIDE)
    n_sq_dst = np.empty((SIDE, SIDE), np.float32)
    k_f64, t_f64, n_f64 = (
        kael.empty(N, dtype=kael.float64),
        torch.empty(N, dtype=torch.float64),
        np.empty(N, np.float64),
    )
    return [
        Case(
            "copy 16M float32 into preallocated",
            {
                "kael": lambda: k_dst.copy_(k_src),
                "torch": lambda: t_dst.copy_(t_src),
                "numpy": lambda: np.copyto(n_dst, n_src),
            },
            target=("torch", 0.8),
        ),
        Case(
            "clone 16M float32 (allocating)",
            {"kael": k_src.clone, "torch": t_src.clone, "numpy": n_src.copy},
        ),
        Case(
            "transposed 4096x4096 copy into preallocated",
            {
                "kael": lambda: k_sq_dst.copy_(k_sq.T),
                "torch": lambda: t_sq_dst.copy_(t_sq.T),
                "numpy": lambda: np.copyto(n_sq_dst, n_sq.T),
            },
            target=("torch", 1.0),
        ),
        Case(
            "transposed 4096x4096 .contiguous()",
            {
                "kael": lambda: k_sq.T.contiguous(),
                "torch": lambda: t_sq.T.contiguous(),
                "numpy": lambda: np.ascontiguousarray(n_sq.T),
            },
        ),
        Case(
            "float32 -> float64 16M into preallocated",
            {
                "kael": lambda: k_f64.copy_(k_src),
                "torch": lambda: t_f64.copy_(t_src),
                "numpy": lambda: np.copyto(n_f64, n_src),
            },
        ),
        Case(
            "float32 -> int64 16M .to() (allocating)",
            {
                "kael": lambda: k_src.to(kael.int64),
                "torch": lambda: t_src.to(torch.int64),
                "numpy": lambda: n_src.astype(np.int64),
            },
        ),
    ]


def main() -> int:
    return run(__doc__.splitlines()[0], cases)


if __name__ == "__main__":
    sys.exit(main())
