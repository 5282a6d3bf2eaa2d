"""kael's GPU product kernels for the half types side by side with PyTorch's (cuBLAS) on one
device: mma.sync (ptx/mma.py) and each wgmma variant (ptx/wgmma.py: N tile, stages), first
checked against PyTorch's values on awkward shapes and every operand layout, then timed on
square products. `python benchmarks/bench_gpu_matmul.py [--side 8192]`; on a machine
without a GPU it says so and exits 0 (KAEL_EMULATE_CUDA=1 runs it on the emulated device,
with --side 256, to test the script).
"""

from __future__ import annotations

import argparse
import sys

import common  # noqa: F401  (this checkout's kael on sys.path)
import numpy as np

import kael
from kael.check_gpu import time_call
from kael.codegen.ptx import gemm, wgmma
from kael.runtime import cuda_driver

VARIANTS = [(256, 4), (256, 3), (128, 4), (128, 6)]  # (tile_n, stages) of wgmma
CHECKS = [  # (a shape, b shape, a transposed in memory, b transposed in memory)
    ((200, 328), (328, 264), False, False),
    ((136, 100), (100, 72), True, False),
    ((72, 96), (96, 520), False, True),
    ((2, 64, 40), (40, 136), True, True),
]


def force(choice) -> None:
    """Make gemm.matmul take `choice`: "mma" (mma.sync) or a wgmma (tile_n, stages)."""

    def pick(c, a, b):
        if choice == "mma":
            return None
        layout = wgmma.layout(a.strides[-2:], b.strides[-2:])
        if layout is None:
            raise SystemExit(f"wgmma does not take strides {a.strides} x {b.strides}")
        return gemm._wgmma_function(wgmma.Variant(c.dtype, layout, *choice))

    gemm._wgmma_kernel = pick


def _operand(shape, dtype, transposed: bool, seed: int):
    """(a kael cuda tensor of the dtype, its values as float32) of standard normal values;
    `transposed`: stored with the last two dimensions swapped."""
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    k = kael.tensor(values).to(dtype).cuda()
    if transposed:
        k = k.mT.contiguous().mT
    return k, np.asarray(k.float().cpu())


def check(torch, dtype) -> bool:
    """Each CHECKS product against PyTorch's (float32 sums of the same half values on the
    host, rounded once to the dtype) within a unit of the dtype: True if all are."""
    ok = True
    for i, (sa, sb, ta, tb) in enumerate(CHECKS):
        (ka, va), (kb, vb) = _operand(sa, dtype, ta, i), _operand(sb, dtype, tb, 9 + i)
        got = np.asarray((ka @ kb).float().cpu())
        want = torch.from_numpy(va) @ torch.from_numpy(vb)
        want = want.to(getattr(torch, dtype.name)).float().numpy()
        ulp = 2.0**-10 if dtype is kael.float16 else 2.0**-7
        bad = ~np.isclose(got, want, rtol=2 * ulp, atol=1e-2)
        if bad.any():
            ok = False
            print(f"    {sa} x {sb} (transposed {ta}, {tb}): {int(bad.sum())} wrong of {bad.size}")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--side", type=int, default=8192)
    args = parser.parse_args(argv)
    if not kael.cuda.is_available():
        print("no CUDA device here: nothing to measure")
        return 0
    import torch

    emulated = cuda_driver.emulated()
    on_torch = torch.cuda.is_available() and not emulated
    side = min(args.side, 256) if emulated else args.side
    flops = 2 * side**3
    failed = False
    for dtype in (kael.float16, kael.bfloat16):
        (a, va), (b, vb) = (_operand((side, side), dtype, False, seed) for seed in (1, 2))
        base = float("nan")
        if on_torch:
            half = getattr(torch, dtype.name)
            ta, tb = (torch.from_numpy(v).to(half).cuda() for v in (va, vb))
            base = time_call(torch, "cuda", lambda ta=ta, tb=tb: ta @ tb)
        print(f"{dtype.name} {side}^3: torch {flops / base / 1e12:7.1f} TFLOP/s")
        for choice in ["mma", *VARIANTS]:
            force(choice)
            right = check(torch, dtype)
            failed |= not right
            seconds = time_call(kael, "cuda", lambda a=a, b=b: a @ b, repeats=3 if emulated else 5)
            name = "mma.sync" if choice == "mma" else f"wgmma n{choice[0]} x{choice[1]}"
            print(
                f"  {name:16s} {flops / seconds / 1e12:7.1f} TFLOP/s  "
                f"{base / seconds:5.2f}x torch  values {'ok' if right else 'WRONG'}",
                flush=True,
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
