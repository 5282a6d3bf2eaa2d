"""kael.nn models against the same torch.nn models (the same weights), side by side.

Run: python benchmarks/bench_modules.py [--rounds N] [--check]
Each model is built with kael.nn and torch.nn, kael's loaded with torch's state_dict, both
in eval mode, float32, 2 threads; kael runs it eagerly (module by module, as PyTorch does)
and as one plan under kael.compile(model). No targets: the issues set none for whole
models; the ratios show where a model's time goes against PyTorch's.
- an MLP classifier: [64, 784] -> 256 -> 10, ReLU
- a CNN block: conv 3x3 + batch norm + ReLU + max pool on [16, 32, 32, 32]
- a transformer encoder layer: d_model 256, 4 heads, feed-forward 1024, [8, 128, 256]
- an LSTM: 2 layers, 128 hidden, input 64, 50 steps of a batch of 16
"""

from __future__ import annotations

import sys

import common  # noqa: F401  (first: it quiets OpenBLAS before NumPy loads)
import numpy as np
import torch
from common import Case, run

import kael


def _mlp(lib):
    return lib.Sequential(lib.Linear(784, 256), lib.ReLU(), lib.Linear(256, 10))


def _cnn(lib):
    return lib.Sequential(
        lib.Conv2d(32, 64, 3, padding=1, bias=False), lib.BatchNorm2d(64), lib.ReLU(),
        lib.MaxPool2d(2),
    )  # fmt: skip


def _encoder(lib):
    return lib.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True)


def _lstm(lib):
    return lib.LSTM(64, 128, 2)


MODELS = [
    ("MLP [64,784]->256->10", _mlp, (64, 784)),
    ("conv+bn+relu+pool [16,32,32,32]", _cnn, (16, 32, 32, 32)),
    ("transformer encoder layer [8,128,256]", _encoder, (8, 128, 256)),
    ("LSTM 2x128, 50 steps x 16", _lstm, (50, 16, 64)),
]


def _forward(model, x):
    def call():
        out = model(x)
        return out[0] if isinstance(out, tuple) else out

    return call


def cases() -> list[Case]:
    rng = np.random.default_rng(0)
    out = []
    torch.set_grad_enabled(False)
    for name, build, shape in MODELS:
        theirs, ours = build(torch.nn).eval(), build(kael.nn).eval()
        ours.load_state_dict(theirs.state_dict())
        x = rng.standard_normal(shape, dtype=np.float32)
        kx, tx = kael.tensor(x), torch.from_numpy(x.copy())
        fast = kael.compile(ours)
        out.append(
            Case(f"{name}, eager", {"kael": _forward(ours, kx), "torch": _forward(theirs, tx)})
        )
        out.append(
            Case(
                f"{name}, kael compiled",
                {"kael": _forward(fast, kx), "torch": _forward(theirs, tx)},
            )
        )
    return out


def main() -> int:
    return run(__doc__.splitlines()[0], cases)


if __name__ == "__main__":
    sys.exit(main())
