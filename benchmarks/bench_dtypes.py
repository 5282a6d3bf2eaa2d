"""The dtypes beyond the book: kael against PyTorch (and kael's own float32), in one run.

Run: python benchmarks/bench_dtypes.py [--rounds N] [--check]
Targets (issue 13; 16M elements, 2 threads, medians): float16 and bfloat16 elementwise at
memory speed, i.e. half the bytes of float32: a + b, relu and the cast to float32 at most
0.6x kael's float32 time (0.5x is the byte count); the narrow integers' a + b likewise
(int8/uint8: a quarter of float32's bytes, at most 0.35x). Every case also shows PyTorch on
the same dtype (no target: PyTorch's float16/bfloat16 CPU kernels convert element by
element) and NumPy where it has the dtype. The targets are judged back to back
(common.back_to_back): a single call here may run as if on one core.
"""

from __future__ import annotations

import sys

import common  # noqa: F401  (first: it quiets OpenBLAS before NumPy loads)
import numpy as np
import torch
from common import Case, N, back_to_back, run

import kael

F32 = "kael float32"
# The targets by case name: at most this many times kael float32's time.
LIMITS: dict[str, float] = {}


def _pair(dtype: str, seed: int):
    values = np.random.default_rng(seed).standard_normal(N, dtype=np.float32) * 50
    k = kael.tensor(values).to(getattr(kael, dtype))
    t = torch.from_numpy(values).to(getattr(torch, dtype))
    n = None if dtype == "bfloat16" else values.astype(dtype)
    return k, t, n


def cases() -> list[Case]:
    base = {d: [_pair(d, s) for s in (1, 2)] for d in ("float32", "float16", "bfloat16")}
    base |= {d: [_pair(d, s) for s in (1, 2)] for d in ("int16", "int8", "uint8")}
    (f32a, _, _), (f32b, _, _) = base["float32"]
    out = []
    for dtype, limit in (("float16", 0.6), ("bfloat16", 0.6), ("int16", 0.6), ("int8", 0.35)):
        (ka, ta, na), (kb, tb, nb) = base[dtype]
        runs = {"kael": lambda a=ka, b=kb: a + b, "torch": lambda a=ta, b=tb: a + b}
        if na is not None:
            runs["numpy"] = lambda a=na, b=nb: a + b
        runs[F32] = lambda: f32a + f32b
        out.append(_case(f"{dtype} a + b 16M", runs, limit))
    for dtype in ("float16", "bfloat16"):
        (ka, ta, na), _ = base[dtype]
        relu = {"kael": lambda a=ka: kael.relu(a), "torch": lambda a=ta: torch.relu(a)}
        relu[F32] = lambda: kael.relu(f32a)
        out.append(_case(f"{dtype} relu 16M", relu, 0.6))
        cast = {"kael": lambda a=ka: a.float(), "torch": lambda a=ta: a.float()}
        if na is not None:
            cast["numpy"] = lambda a=na: a.astype(np.float32)
        cast[F32] = lambda: f32a.double()  # float32 to float64: twice the bytes read
        out.append(_case(f"{dtype} to float32 16M", cast, 0.6))
        exp = {"kael": lambda a=ka: kael.exp(a), "torch": lambda a=ta: torch.exp(a)}
        exp[F32] = lambda: kael.exp(f32a)
        out.append(Case(f"{dtype} exp 16M (no target)", exp))
        total = {"kael": lambda a=ka: a.sum(), "torch": lambda a=ta: a.sum()}
        total[F32] = lambda: f32a.sum()
        out.append(Case(f"{dtype} sum 16M (no target)", total))
    return out


def _case(name: str, runs: dict, limit: float) -> Case:
    LIMITS[name] = limit
    return Case(name, runs)


def target(case: Case) -> tuple[str, float] | None:
    """A case's target against kael float32, judged back to back."""
    limit = LIMITS.get(case.name)
    return None if limit is None else (F32, limit)


def versus_float32(cases: list[Case]) -> bool:
    """Each case's time over kael's float32 time: the memory-speed column."""
    for c in cases:
        print(f"{c.name:44} kael/kael float32 {c.median_ms('kael') / c.median_ms(F32):5.2f}")
    return True


def main() -> int:
    return run(
        __doc__.splitlines()[0], cases, lambda c: versus_float32(c) & back_to_back(c, target)
    )


if __name__ == "__main__":
    sys.exit(main())
