"""The softmax family: kael against PyTorch and NumPy, side by side in one run.

Run: python benchmarks/bench_nn.py [--rounds N] [--check]
Targets (issue 4; float32, a 4096x4096 tensor, medians):
- softmax over the last dim: at most 0.6x PyTorch's time
- layer_norm over the last dim: at most PyTorch's time
log_softmax, logsumexp, cross_entropy and softmax over dim 0 (the composed path) are
reported without a target. NumPy's versions are written out of its own ops.
"""

from __future__ import annotations

import sys

import common  # noqa: F401  (first: it quiets OpenBLAS before NumPy loads)
import numpy as np
import torch
import torch.nn.functional as F
from common import SIDE, Case, run

import kael


def _np_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _np_layer_norm(x: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)


def cases() -> list[Case]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((SIDE, SIDE), dtype=np.float32)
    labels = rng.integers(0, SIDE, SIDE)
    kx, tx = kael.tensor(x), torch.from_numpy(x.copy())
    kt, tt = kael.tensor(labels), torch.from_numpy(labels.copy())
    return [
        Case(
            "softmax 4096x4096, last dim",
            {
                "kael": lambda: kael.softmax(kx, -1),
                "torch": lambda: torch.softmax(tx, -1),
                "numpy": lambda: _np_softmax(x, -1),
            },
            target=("torch", 0.6),
        ),
        Case(
            "layer_norm 4096x4096, last dim",
            {
                "kael": lambda: kael.nn.functional.layer_norm(kx, (SIDE,)),
                "torch": lambda: F.layer_norm(tx, (SIDE,)),
                "numpy": lambda: _np_layer_norm(x),
            },
            target=("torch", 1.0),
        ),
        Case(
            "log_softmax 4096x4096, last dim",
            {"kael": lambda: kael.log_softmax(kx, -1), "torch": lambda: torch.log_softmax(tx, -1)},
        ),
        Case(
            "logsumexp 4096x4096, last dim",
            {"kael": lambda: kael.logsumexp(kx, -1), "torch": lambda: torch.logsumexp(tx, -1)},
        ),
        Case(
            "cross_entropy 4096x4096 (mean)",
            {
                "kael": lambda: kael.nn.functional.cross_entropy(kx, kt),
                "torch": lambda: F.cross_entropy(tx, tt),
            },
        ),
        Case(
            "softmax 4096x4096, dim 0 (composed)",
            {
                "kael": lambda: kael.softmax(kx, 0),
                "torch": lambda: torch.softmax(tx, 0),
                "numpy": lambda: _np_softmax(x, 0),
            },
        ),
    ]


if __name__ == "__main__":
    sys.exit(run(__doc__.splitlines()[0], cases))
