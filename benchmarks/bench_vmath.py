"""exp and tanh of 16M float32 elements: kael's own vector math against PyTorch and NumPy.

Run: python benchmarks/bench_vmath.py [--rounds N] [--check]
Target (vmath issue): each at most 0.5x PyTorch's time. The kael kernels are launched
through eager.run as the frontend will, into preallocated outputs; torch and NumPy
write into preallocated outputs too (out=).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import common  # noqa: F401  (first: it quiets OpenBLAS before NumPy loads)
import numpy as np
import torch
from common import Case, N, run
from kernel_helpers import empty_like_np, impl_of

from kael.frontend import eager
from kael.ir import graph as g
from kael.runtime.dtypes import float32


def _kael_unary(op: str, x: np.ndarray):
    entry = eager.template(
        ("bench_vmath", op),
        lambda: (f"{op}_f32", [g.Unary(float32, (), op, g.Input(float32, (), "x"))]),
    )
    _, out = empty_like_np(x.shape, x.dtype)
    src = impl_of(x)
    return lambda: eager.run(entry, [out], [src])


def cases() -> list[Case]:
    x = np.random.default_rng(0).standard_normal(N, dtype=np.float32) * 4
    t, t_out, n_out = torch.from_numpy(x.copy()), torch.empty(N), np.empty(N, np.float32)
    return [
        Case(
            f"{op} 16M float32",
            {
                "kael": _kael_unary(op, x),
                "torch": lambda op=op: getattr(torch, op)(t, out=t_out),
                "numpy": lambda op=op: getattr(np, op)(x, out=n_out),
            },
            target=("torch", 0.5),
        )
        for op in ("exp", "tanh")
    ]


def main() -> int:
    return run(__doc__.splitlines()[0], cases)


if __name__ == "__main__":
    sys.exit(main())
