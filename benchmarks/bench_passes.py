"""kael's two tiers of kernel code against LLVM's O3 pipeline: compile and run time, one process.

Run: python benchmarks/bench_passes.py [--rounds N] [--check]

Each case's kernel (an eager elementwise kernel or a reduction, as kael launches it) is
compiled three times in this process: at tier 0 (-O0 code behind its trampoline, what a
kernel new to the machine first runs: codegen/cpu/tiers.py), optimized as kael promotes
it (compiler.kernel_passes: KERNEL_PASSES where kael vectorized it, O3 where it left it
scalar), and through O3 for every kernel; all linked under their own names and run on
the same argument block, interleaved round by round on one thread, the order rotating
from round to round. Printed per case: the three run times, optimized over O3 and tier 0
over optimized (medians of the rounds' ratios), then each variant's mean compile time.
Targets (issue 11, first call): a new kernel compiles in at most 10 ms (its tier 0; the
mean over the cases, which the machine's load moves) and the optimized code runs at most
1.05x O3's in the median over the cases.
"""

from __future__ import annotations

import array
import ctypes
import statistics
import time

import common  # noqa: F401  (first: it quiets OpenBLAS before NumPy loads)
from common import parser

import kael
from kael.codegen.cpu import compiler, jit, tiers
from kael.codegen.cpu import reduce as cpu_reduce
from kael.frontend import fastpath
from kael.ir.reduction import Reduction
from kael.runtime import launcher, launches

_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


def cases() -> dict:
    n = 1 << 22
    a, b = kael.randn(n), kael.randn(n)
    s = kael.randn(2048, 2048)
    row = kael.randn(2048)
    cube = kael.randn(64, 64, 64)
    ints = kael.arange(n)
    return {
        "a + b": lambda: a + b,
        "strided x * 2": lambda: s[:, ::2] * 2.0,
        "x + x.T": lambda: s + s.T,
        "x + row (broadcast)": lambda: s + row,
        "where(a > 0, a, b)": lambda: kael.where(a > 0, a, b),
        "exp": lambda: a.exp(),
        "tanh": lambda: a.tanh(),
        "gelu": lambda: kael.nn.functional.gelu(a),
        "permute copy": lambda: cube.permute(2, 0, 1).contiguous(),
        "x.T copy": lambda: s.T.contiguous(),
        "int64 * 3": lambda: ints * 3,
        "float32 -> int64": lambda: a.to(kael.int64),
        "sum over dim 1": lambda: s.sum(1),
        "amax over dim 1": lambda: s.amax(1),
        "mean over dim 1, keepdim": lambda: s.mean(1, keepdim=True),
    }


def _captured(fn) -> tuple | None:
    """(kernel function, argument block, work items) of the last single-block launch fn makes."""
    made = []
    real = launcher.run_block

    def capture(f, block, total, moved, align=launcher.ALIGN_ITEMS):
        made.append((f, array.array("q", block), total))
        return real(f, block, total, moved, align)

    fn()  # compile and warm up through the usual path first
    # A recorded call skips the native launches, so every launch reaches run_block.
    launcher.run_block = fastpath.run_block = capture
    saved, launches.recorder = launches.recorder, []
    try:
        fn()
    finally:
        launcher.run_block = fastpath.run_block = real
        launches.recorder = saved
    return made[-1] if made else None


VARIANTS = ("tier 0", "optimized", "O3")


def _build(kernel, variant: str, tag: str) -> tuple[object, object, float]:
    """(callable, tracker, compile seconds) of `kernel` compiled as `variant`."""
    symbol = f"kael_passes_{tag}_{abs(hash(kernel)) % 10**12}"
    module = cpu_reduce if isinstance(kernel, Reduction) else jit
    source = module.source(kernel, symbol)
    start = time.perf_counter()
    if variant == "tier 0":
        payload = tiers.tier0_payload(source)
    else:
        passes = compiler.kernel_passes if variant == "optimized" else (lambda text: None)
        payload = tiers.optimized_payload(source, passes)
    seconds = time.perf_counter() - start
    addresses, tracker = compiler.load_object_symbols(tiers.unpack(payload)[1], (symbol,), symbol)
    return _SIGNATURE(addresses[symbol]), tracker, seconds


def main() -> int:
    options = parser(__doc__, rounds=20).parse_args()
    kael.set_num_threads(1)
    built = {}
    compile_times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for name, fn in cases().items():
        found = _captured(fn)
        kernel = getattr(found[0], "kernel", None) if found else None
        if kernel is None:
            print(f"{name}: no single-block launch to compare")
            continue
        variants = []
        for i, variant in enumerate(VARIANTS):
            f, tracker, seconds = _build(kernel, variant, str(i))
            compile_times[variant].append(seconds)
            variants.append((f, tracker))
        built[name] = (variants, found[1], found[2])
    times = {name: ([], [], []) for name in built}
    for r in range(options.rounds):
        for name, (variants, block, total) in built.items():
            address = block.buffer_info()[0]
            # the later ones find the data in cache: the order rotates from round to round
            for i in (r % 3, (r + 1) % 3, (r + 2) % 3):
                f = variants[i][0]
                start = time.perf_counter()
                for _ in range(3):
                    f(address, 0, total)
                times[name][i].append((time.perf_counter() - start) / 3)
    print(
        f"\n{'case (1 thread)':32} {'tier 0 ms':>10} {'optimized':>10} {'O3 ms':>8}"
        f" {'opt/O3':>7} {'t0/opt':>7}"
    )
    ratios = []
    for name, (tier0, ours, o3) in times.items():
        ratio = statistics.median(a / b for a, b in zip(ours, o3))
        slower = statistics.median(a / b for a, b in zip(tier0, ours))
        ratios.append(ratio)
        print(
            f"{name:32} {statistics.median(tier0) * 1e3:10.3f} {statistics.median(ours) * 1e3:10.3f}"
            f" {statistics.median(o3) * 1e3:8.3f} {ratio:7.2f} {slower:7.2f}"
        )
    mean = {k: statistics.mean(v) * 1e3 for k, v in compile_times.items()}
    overall = statistics.median(ratios)
    fast_enough = mean["tier 0"] <= 10
    print(
        f"\ncompile per kernel: tier 0 {mean['tier 0']:.1f} ms, optimized {mean['optimized']:.1f}"
        f" ms, O3 {mean['O3']:.1f} ms  (a new kernel, target <= 10 ms:"
        f" {'met' if fast_enough else 'MISSED'})"
    )
    print(
        f"run time, median over cases: optimized {overall:.2f}x O3's"
        f"  (target <= 1.05x: {'met' if overall <= 1.05 else 'MISSED'})"
    )
    return 0 if not options.check or (fast_enough and overall <= 1.05) else 1


if __name__ == "__main__":
    raise SystemExit(main())
