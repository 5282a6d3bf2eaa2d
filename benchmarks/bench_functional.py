"""torch.nn.functional's families in kael against PyTorch, side by side in one run.

Run: python benchmarks/bench_functional.py [--rounds N] [--check]
Targets (issue 13; float32, 2 threads, medians): every elementwise activation (16M
elements) at memory speed, i.e. at most 1.3x kael's own relu over the same bytes (one
read, one write; relu is the copy-speed reference), and dropout (training) likewise;
conv2d of a ResNet layer ([32, 64, 56, 56], 3x3, 64 filters, padding 1) and of a 1x1
layer at most PyTorch's time (oneDNN); max_pool2d and avg_pool2d (3x3, stride 2) at most
0.7x PyTorch's; interpolate bilinear (2x up) at most PyTorch's;
scaled_dot_product_attention ([8, 8, 1024, 64], causal) at most PyTorch's.
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
    return out + layer_cases()


def layer_cases() -> list[Case]:
    """Convolution, pooling and attention at the issue's sizes."""
    rng = np.random.default_rng(1)

    def both(*shape):
        a = rng.standard_normal(shape, dtype=np.float32)
        return kael.tensor(a), torch.from_numpy(a.copy())

    kx, tx = both(32, 64, 56, 56)
    kw, tw = both(64, 64, 3, 3)
    k1, t1 = both(64, 64, 1, 1)
    kq, tq = both(8, 8, 1024, 64)
    kk, tk = both(8, 8, 1024, 64)
    kv, tv = both(8, 8, 1024, 64)
    pairs = [
        (
            "conv2d 3x3 [32,64,56,56]",
            lambda: KF.conv2d(kx, kw, padding=1),
            lambda: TF.conv2d(tx, tw, padding=1),
            1.0,
        ),
        ("conv2d 1x1 [32,64,56,56]", lambda: KF.conv2d(kx, k1), lambda: TF.conv2d(tx, t1), 1.0),
        (
            "max_pool2d 3x3/2 [32,64,56,56]",
            lambda: KF.max_pool2d(kx, 3, 2, 1),
            lambda: TF.max_pool2d(tx, 3, 2, 1),
            0.7,
        ),
        (
            "avg_pool2d 3x3/2 [32,64,56,56]",
            lambda: KF.avg_pool2d(kx, 3, 2, 1),
            lambda: TF.avg_pool2d(tx, 3, 2, 1),
            0.7,
        ),
        (
            "interpolate bilinear [32,64,56,56]x2",
            lambda: KF.interpolate(kx, scale_factor=2, mode="bilinear"),
            lambda: TF.interpolate(tx, scale_factor=2, mode="bilinear"),
            1.0,
        ),
        (
            "sdpa causal [8,8,1024,64]",
            lambda: KF.scaled_dot_product_attention(kq, kk, kv, is_causal=True),
            lambda: TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True),
            1.0,
        ),
    ]
    return [
        Case(name, {"kael": k, "torch": t}, target=("torch", limit)) for name, k, t, limit in pairs
    ]


def main() -> int:
    return run(__doc__.splitlines()[0], cases)


if __name__ == "__main__":
    sys.exit(main())
