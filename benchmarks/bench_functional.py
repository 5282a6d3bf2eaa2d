"""torch.nn.functional's families in kael against PyTorch, side by side in one run.

Run: python benchmarks/bench_functional.py [--rounds N] [--check]
Targets (issue 13; float32, 16M elements, 2 threads, medians): every elementwise
activation at memory speed, i.e. at most 1.3x kael's own relu over the same bytes (one
read, one write; relu is the copy-speed reference), and dropout (training) likewise.
PyTorch's time is shown beside each.
"""

from __future__ import annotations

import sys

import common  # noqa: F401  (first: it quiets OpenBLAS before NumPy loads)
import numpy as np
import torch
import torch.nn.functional as TF
from common import Case, N, run

import kael
import kael.nn.functional as KF

RELU = "kael relu"
ACTIVATIONS = (
    "elu", "selu", "celu", "leaky_relu", "hardtanh", "relu6", "hardsigmoid", "hardswish",
    "mish", "softplus", "softsign", "logsigmoid", "tanhshrink", "silu", "gelu",
)  # fmt: skip


def cases() -> list[Case]:
    values = np.random.default_rng(0).standard_normal(N, dtype=np.float32) * 3
    k, t = kael.tensor(values), torch.from_numpy(values.copy())
    out = []
    for name in ACTIVATIONS:
        kf, tf = getattr(KF, name), getattr(TF, name)
        runs = {"kael": lambda f=kf: f(k), "torch": lambda f=tf: f(t), RELU: lambda: kael.relu(k)}
        out.append(Case(f"{name} 16M", runs, target=(RELU, 1.3)))
    runs = {
        "kael": lambda: KF.dropout(k, 0.2),
        "torch": lambda: TF.dropout(t, 0.2),
        RELU: lambda: kael.relu(k),
    }
    out.append(Case("dropout p=0.2 16M", runs, target=(RELU, 1.3)))
    return out


def main() -> int:
    return run(__doc__.splitlines()[0], cases)


if __name__ == "__main__":
    sys.exit(main())
