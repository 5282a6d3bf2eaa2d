"""kael's own vector math on 16M elements in the main range, against PyTorch and NumPy.

Run: python benchmarks/bench_vmath.py [--rounds N] [--check]
Cases: exp, tanh, sin, cos, tan and pow in float32, sin and pow in float64 (arguments in
the main range: trigonometry near 0, pow with moderate bases and exponents), so changes to
the rarely taken paths (huge arguments) show here only if they slow the common path.
Target (vmath issue): exp and tanh at most 0.5x PyTorch's time. The kael kernels are
launched through eager.run as the frontend will, into preallocated outputs; torch and NumPy
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
from kael.runtime import dtypes

TARGETS = {"exp": ("torch", 0.5), "tanh": ("torch", 0.5)}


def _kael(op: str, inputs: list[np.ndarray]):
    """A launch of op over `inputs` (one: Unary, two: Binary) into a preallocated output."""
    dt = dtypes.from_numpy_dtype(inputs[0].dtype)

    def build():
        args = [g.Input(dt, (), f"x{i}") for i in range(len(inputs))]
        node = g.Unary(dt, (), op, *args) if len(args) == 1 else g.Binary(dt, (), op, *args)
        return f"{op}_{dt}", [node]

    entry = eager.template(("bench_vmath", op, dt), build)
    _, out = empty_like_np(inputs[0].shape, inputs[0].dtype)
    srcs = [impl_of(x) for x in inputs]
    return lambda: eager.run(entry, [out], srcs)


def _case(op: str, inputs: list[np.ndarray]) -> Case:
    dt = inputs[0].dtype
    ts = [torch.from_numpy(x.copy()) for x in inputs]
    t_out, n_out = torch.empty(N, dtype=ts[0].dtype), np.empty(N, dt)
    np_op = {"pow": np.power}.get(op, getattr(np, op, None))
    return Case(
        f"{op} 16M {dt}",
        {
            "kael": _kael(op, inputs),
            "torch": lambda: getattr(torch, op)(*ts, out=t_out),
            "numpy": lambda: np_op(*inputs, out=n_out),
        },
        target=TARGETS.get(op),
    )


def cases() -> list[Case]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(N, dtype=np.float32) * 4
    base = rng.uniform(0.1, 10, N).astype(np.float32)
    expo = rng.uniform(-20, 20, N).astype(np.float32)
    out = [_case(op, [x]) for op in ("exp", "tanh", "sin", "cos", "tan")]
    out.append(_case("pow", [base, expo]))
    out.append(_case("sin", [x.astype(np.float64)]))
    out.append(_case("pow", [base.astype(np.float64), expo.astype(np.float64)]))
    return out


def main() -> int:
    return run(__doc__.splitlines()[0], cases)


if __name__ == "__main__":
    sys.exit(main())
