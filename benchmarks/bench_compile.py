"""@kael.compile: kael eager, kael compiled, torch eager, torch.compile and NumPy side by side.

Run: python benchmarks/bench_compile.py [--rounds N] [--check] [--only NAME]
Float32, medians of interleaved rounds (steady state: every first call is made before
timing; in a round each library is timed as the median of three back-to-back runs, as its
floor is). For each workload it prints the times (NumPy where it has the ops: no erf, so
no gelu rows), kael compiled's ratios to each, the
kernels kael runs eagerly and compiled (extern steps in brackets), and kael compiled's
time over its floor: the bytes the workload must read and write at the bandwidth of
kael's own streaming copy, or, where the math outweighs the memory traffic, the time of
its most expensive op alone into a preallocated output, or its flops at the matmul
kernel's measured speed. The floor is measured again in every round, right after the
workload, and c/floor is the median of the rounds' ratios: on this shared machine speed
swings up to 2x within minutes, and both sides of a round's ratio swing together.
Targets (issue 10), each against the floor or torch.compile as named in its row.
`--first-calls` times instead each workload's first compiled call in a new process
(kael with an empty and then a warm KAEL_CACHE_DIR, and torch.compile).
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from dataclasses import dataclass, field

import common  # noqa: F401  (first: it quiets OpenBLAS before NumPy loads)
import numpy as np
import torch
import torch.nn.functional as F

import kael
from kael.frontend.inspection import record_launches

LIBS = ("kael", "kael.compile", "torch", "torch.compile", "numpy")


@dataclass
class Workload:
    name: str
    kael_fn: object
    torch_fn: object
    kael_args: tuple
    torch_args: tuple
    floor: object  # () -> seconds
    target: tuple[str, float] | None = None  # ("floor", 1.3) or ("torch.compile", 0.5)
    numpy_fn: object = None  # the same computation in NumPy, where NumPy has its ops
    runs: dict = field(default_factory=dict)
    times: dict = field(default_factory=dict)
    floors: list = field(default_factory=list)  # seconds, measured once per round
    kernels: str = ""

    def median(self, lib: str) -> float:
        return statistics.median(self.times[lib])


def _copy_bandwidth(n: int) -> float:
    """Bytes per second of kael's streaming copy of n float32 (read + write)."""
    src, dst = kael.randn(n), kael.empty(n)
    for _ in range(3):
        dst.copy_(src)
    best = []
    for _ in range(7):
        start = time.perf_counter()
        dst.copy_(src)
        best.append(time.perf_counter() - start)
    return 2 * n * 4 / statistics.median(best)


def _median_time(call, samples: int, reps: int = 1, warm: int = 0) -> float:
    """The median over `samples` back-to-back timings of `reps` calls of `call()` each (per
    call), after `warm` untimed calls."""
    for _ in range(warm):
        call()
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        for _ in range(reps):
            call()
        times.append((time.perf_counter() - start) / reps)
    return statistics.median(times)


def _op_time(fn, *args, **kwargs) -> float:
    return _median_time(lambda: fn(*args, **kwargs), 7, warm=2)


def _steady(fn, reps: int) -> float:
    """One library's time in a round: the median of three back-to-back timings of `reps`
    calls, as an op floor is timed (the first call after another library's run finds the
    caches and idle threads as that run left them, which no floor pays)."""
    return _median_time(fn, 3, reps)


def _pair(shape, seed: int = 0, scale: float = 1.0):
    x = np.random.default_rng(seed).standard_normal(shape, dtype=np.float32) * scale
    return kael.tensor(x), torch.from_numpy(x.copy())


def workloads(bandwidth) -> list[Workload]:
    def memory(nbytes: int):
        return lambda: nbytes / bandwidth()

    out = []
    n = 16 * 1024 * 1024
    kx, tx = _pair((n,))
    tanh_out = kael.empty(n)

    def tanh_chain(x, m=None):
        return (x * 1.5 + 2.0).tanh() * x

    out.append(
        Workload(
            "tanh(x*1.5+2)*x, 16M",
            tanh_chain,
            tanh_chain,
            (kx,),
            (tx,),
            lambda: max(2 * n * 4 / bandwidth(), _op_time(kael.tanh, kx, out=tanh_out)),
            ("floor", 1.3),
        )
    )
    side = 4096
    ks, ts = _pair((side, side), 1)

    def softmax(x):
        e = (x - x.amax(-1, keepdim=True)).exp()
        return e / e.sum(-1, keepdim=True)

    square_out = kael.empty(side, side)
    out.append(
        Workload(
            "softmax from primitives 4096x4096",
            softmax,
            softmax,
            (ks,),
            (ts,),
            lambda: max(2 * side * side * 4 / bandwidth(), _op_time(kael.exp, ks, out=square_out)),
            ("floor", 1.3),
        )
    )

    def var_chain(x):
        return ((x - x.mean(-1, keepdim=True)) ** 2).mean(-1)

    out.append(
        Workload(
            "((x - mean) ** 2).mean(-1) 4096x4096",
            var_chain,
            var_chain,
            (ks,),
            (ts,),
            memory(side * side * 4),
            ("floor", 1.4),
        )
    )
    rows, cols = 8192, 1024
    kl, tl = _pair((rows, cols), 2)
    kw, tw = _pair((cols,), 3)

    def rms_norm(x, w):
        return x * (x * x).mean(-1, keepdim=True).add(1e-6).rsqrt() * w

    out.append(
        Workload(
            "RMSNorm [8192, 1024]",
            rms_norm,
            rms_norm,
            (kl, kw),
            (tl, tw),
            memory(2 * rows * cols * 4),
            ("floor", 1.4),
        )
    )

    def ln_gelu(x, w, lib):
        m = x.mean(-1, keepdim=True)
        d = x - m
        v = (d * d).mean(-1, keepdim=True)
        return lib.nn.functional.gelu(d * (v + 1e-5).rsqrt() * w)

    gelu_out = kael.empty(rows, cols)
    out.append(
        Workload(
            "layer_norm + gelu [8192, 1024]",
            lambda x, w: ln_gelu(x, w, kael),
            lambda x, w: ln_gelu(x, w, torch),
            (kl, kw),
            (tl, tw),
            lambda: max(
                2 * rows * cols * 4 / bandwidth(),
                _op_time(kael.nn.functional.gelu, kl, out=gelu_out),
            ),
            ("floor", 1.4),
        )
    )
    b, h, t, d = 1, 8, 512, 64
    e = h * d
    kq, tq = _pair((b, t, e), 4)
    weights = [_pair((e, e), 5 + i, 1 / e**0.5) for i in range(4)]
    kW = tuple(k for k, _ in weights)
    tW = tuple(v for _, v in weights)
    kmask = kael.triu(kael.full((t, t), float("-inf")), 1)
    tmask = torch.triu(torch.full((t, t), float("-inf")), 1)

    def attention(x, wq, wk, wv, wo, mask, lib):
        q = (x @ wq).view(b, t, h, d).transpose(1, 2)
        k = (x @ wk).view(b, t, h, d).transpose(1, 2)
        v = (x @ wv).view(b, t, h, d).transpose(1, 2)
        s = (q @ k.transpose(-2, -1)) * (d**-0.5) + mask
        p = lib.softmax(s, -1)
        y = (p @ v).transpose(1, 2).reshape(b, t, e) @ wo + x
        m = y.mean(-1, keepdim=True)
        c = y - m
        return c * ((c * c).mean(-1, keepdim=True) + 1e-5).rsqrt()

    flops = 2 * t * e * e * 4 + 2 * 2 * h * t * t * d
    gemm_rate = _gemm_rate()
    out.append(
        Workload(
            "attention block [1, 8, 512, 64]",
            lambda x, *w: attention(x, *w, kmask, kael),
            lambda x, *w: attention(x, *w, tmask, torch),
            (kq, *kW),
            (tq, *tW),
            lambda: flops / gemm_rate,
            ("torch.compile", 0.5),
        )
    )
    rows, width = 4096, 1024
    km, tm = _pair((rows, width), 9)
    layers = [
        (_pair((width, width), 10 + i, 1 / width**0.5), _pair((width,), 20 + i)) for i in range(3)
    ]
    kL = tuple(v for (kw, _), (kb, _) in layers for v in (kw, kb))
    tL = tuple(v for (_, tw), (_, tb) in layers for v in (tw, tb))

    def mlp(x, *params, act):
        for i in range(0, len(params), 2):
            x = act(x @ params[i] + params[i + 1])
        return x

    mlp_flops = 3 * 2 * rows * width * width
    for act_name in ("relu", "gelu"):
        kact = getattr(kael.nn.functional, act_name)
        tact = getattr(F, act_name)
        out.append(
            Workload(
                f"3-layer MLP [4096, 1024], {act_name}",
                lambda x, *p, a=kact: mlp(x, *p, act=a),
                lambda x, *p, a=tact: mlp(x, *p, act=a),
                (km, *kL),
                (tm, *tL),
                lambda: mlp_flops / gemm_rate,
                ("floor", 1.15),
            )
        )
    k8, t8 = _pair((64, 64), 30)

    def eight(x):
        y = x * 2.0 + 1.0
        y = y.exp() - x
        y = y * y + x.abs()
        return y.sqrt() - 0.5

    out.append(Workload("8 ops on 64x64", eight, eight, (k8,), (t8,), lambda: 5e-6, ("us", 5)))
    k4, t4 = _pair((4,), 31)

    def twenty(x):
        for i in range(10):
            x = x * 1.01 + 0.001 * i
        return x

    out.append(
        Workload("20 ops on 4 elements", twenty, twenty, (k4,), (t4,), lambda: 5e-6, ("us", 5))
    )
    numpy_fns = _numpy_versions(b, t, h, d, e)
    for w in out:
        w.numpy_fn = numpy_fns.get(w.name)
    return out


def _numpy_versions(b: int, t: int, h: int, d: int, e: int) -> dict:
    """NumPy forms of the workloads, by name (NumPy has no erf: no gelu workloads)."""

    def softmax(x):
        z = np.exp(x - x.max(-1, keepdims=True))
        return z / z.sum(-1, keepdims=True)

    mask = np.triu(np.full((t, t), -np.inf, np.float32), 1)

    def attention(x, wq, wk, wv, wo):
        q, k, v = ((x @ w).reshape(b, t, h, d).transpose(0, 2, 1, 3) for w in (wq, wk, wv))
        p = softmax((q @ k.transpose(0, 1, 3, 2)) * np.float32(d**-0.5) + mask)
        y = (p @ v).transpose(0, 2, 1, 3).reshape(b, t, e) @ wo + x
        c = y - y.mean(-1, keepdims=True)
        return c / np.sqrt((c * c).mean(-1, keepdims=True) + np.float32(1e-5))

    def mlp_relu(x, *params):
        for i in range(0, len(params), 2):
            x = np.maximum(x @ params[i] + params[i + 1], 0)
        return x

    def eight(x):
        y = x * 2.0 + 1.0
        y = np.exp(y) - x
        y = y * y + np.abs(x)
        return np.sqrt(y) - 0.5

    def twenty(x):
        for i in range(10):
            x = x * 1.01 + 0.001 * i
        return x

    return {
        "tanh(x*1.5+2)*x, 16M": lambda x: np.tanh(x * 1.5 + 2.0) * x,
        "softmax from primitives 4096x4096": softmax,
        "((x - mean) ** 2).mean(-1) 4096x4096": lambda x: (
            (x - x.mean(-1, keepdims=True)) ** 2
        ).mean(-1),
        "RMSNorm [8192, 1024]": lambda x, w: (
            x / np.sqrt((x * x).mean(-1, keepdims=True) + np.float32(1e-6)) * w
        ),
        "attention block [1, 8, 512, 64]": attention,
        "3-layer MLP [4096, 1024], relu": mlp_relu,
        "8 ops on 64x64": eight,
        "20 ops on 4 elements": twenty,
    }


def _gemm_rate() -> float:
    """FLOP/s of kael's plain float32 matmul on [4096, 1024] @ [1024, 1024]."""
    a, w = kael.randn(4096, 1024), kael.randn(1024, 1024)
    return 2 * 4096 * 1024 * 1024 / _op_time(lambda: a @ w)


def _kernel_counts(w: Workload, compiled) -> str:
    _, eager = record_launches(w.kael_fn, *w.kael_args)
    plan = compiled.plan_for(*w.kael_args)
    externs = sum(1 for s in plan.steps if type(s).__name__ == "ExternCall")
    return f"{len(eager)} / {len(plan.kernel_steps)} [{externs}]"


def _first_call(name: str, lib: str) -> None:
    """In this fresh process: the first call's seconds of one workload, compiled by `lib`."""
    [w] = [w for w in workloads(1.0) if w.name == name]
    if lib == "kael":
        fn, args = kael.compile(w.kael_fn), w.kael_args
    else:
        fn, args = torch.compile(w.torch_fn), w.torch_args
    start = time.perf_counter()
    if lib == "kael":
        _, made = record_launches(fn, *args)
        kernels = sum(launch.seconds for launch in made)
    else:
        fn(*args)
        kernels = math.nan
    first = time.perf_counter() - start
    start = time.perf_counter()
    fn(*args)
    print(f"first-call {first:.4f} {time.perf_counter() - start:.4f} {kernels:.4f}")


def first_calls(names: list[str], with_torch: bool) -> bool:
    """Each workload's first compiled call in a new process: kael with an empty
    KAEL_CACHE_DIR, then again with the cache it left; torch.compile (its own caches as
    they are), less its second call. For kael, the first call less the time its own
    kernels ran (tracing, fusion, compiling or loading code), and in brackets the whole
    first call: the difference is the kernels' first run, which page faults on fresh
    memory make 10-100 ms slower than a later one here, varying from run to run (a
    steady call is no fair baseline: it may fault too). Targets: at most 0.3 s cold and
    20 ms warm, judged on the first figures."""
    import os
    import subprocess
    import tempfile

    ok = True
    print(
        f"\n{'first call in a new process':38} {'kael cold [call]':>18} "
        f"{'kael warm [call]':>18} {'t.compile':>10}"
    )
    for name in names:
        times, overheads = [], []
        with tempfile.TemporaryDirectory() as cache:
            runs = [("kael", cache), ("kael", cache)] + ([("torch", None)] if with_torch else [])
            for lib, cache_dir in runs:
                env = dict(os.environ)
                if cache_dir:
                    env["KAEL_CACHE_DIR"] = cache_dir
                res = subprocess.run(
                    [sys.executable, __file__, "--first-call-of", name, "--lib", lib],
                    capture_output=True, text=True, env=env, timeout=600,
                )  # fmt: skip
                line = [x for x in res.stdout.splitlines() if x.startswith("first-call")]
                first, steady, kernels = (
                    map(float, line[0].split()[1:]) if line else (math.nan,) * 3
                )
                times.append(first if lib == "kael" else first - steady)
                overheads.append(first - kernels)
        while len(times) < 3:
            times.append(float("nan"))
        met = overheads[0] <= 0.3 and overheads[1] <= 0.02
        ok &= met
        cold, warm = (f"{overheads[i] * 1e3:6.1f} [{times[i] * 1e3:6.1f}]ms" for i in (0, 1))
        print(
            f"{name:38} {cold:>18} {warm:>18} {times[2] * 1e3:8.1f}ms"
            f"  <= 300 ms cold, 20 ms warm: {'met' if met else 'MISSED'}"
        )
    return ok


def main() -> int:
    import argparse

    parser = common.parser(__doc__.splitlines()[0], rounds=9)
    parser.add_argument("--only", default="", help="run the workloads whose name contains this")
    parser.add_argument("--no-torch-compile", action="store_true")
    parser.add_argument("--first-calls", action="store_true", help="time first calls instead")
    parser.add_argument("--first-call-of", default="", help=argparse.SUPPRESS)
    parser.add_argument("--lib", default="kael", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_call_of:
        _first_call(args.first_call_of, args.lib)
        return 0
    if args.first_calls:
        names = [w.name for w in workloads(1.0) if args.only in w.name]
        ok = first_calls(names, not args.no_torch_compile)
        return 0 if ok or not args.check else 1
    torch.set_num_threads(kael.get_num_threads())
    print(f"kael threads {kael.get_num_threads()}, torch threads {torch.get_num_threads()}")
    copies = []

    def bandwidth() -> float:  # measured again with each round's floors: the machine drifts
        copies.append(_copy_bandwidth(16 * 1024 * 1024))
        return copies[-1]

    cases = [w for w in workloads(bandwidth) if args.only in w.name]
    for w in cases:
        compiled = kael.compile(w.kael_fn)
        w.runs = {
            "kael": lambda w=w: w.kael_fn(*w.kael_args),
            "kael.compile": lambda w=w, c=compiled: c(*w.kael_args),
            "torch": lambda w=w: w.torch_fn(*w.torch_args),
        }
        if not args.no_torch_compile:
            tc = torch.compile(w.torch_fn)
            w.runs["torch.compile"] = lambda w=w, c=tc: c(*w.torch_args)
        if w.numpy_fn is not None:
            arrays = tuple(a.numpy() for a in w.torch_args)
            w.runs["numpy"] = lambda w=w, a=arrays: w.numpy_fn(*a)
        for fn in w.runs.values():
            for _ in range(2):
                fn()
        w.kernels = _kernel_counts(w, compiled)
        w.times = {lib: [] for lib in w.runs}
    reps = {w.name: 200 if w.target and w.target[0] == "us" else 1 for w in cases}
    for _ in range(args.rounds):
        for w in cases:
            for lib, fn in w.runs.items():
                w.times[lib].append(_steady(fn, reps[w.name]))
            w.floors.append(w.floor())
    ok = True
    if copies:
        print(f"kael streaming copy: {statistics.median(copies) / 1e9:.1f} GB/s (read + write)")
    print(
        f"\n{'workload':38} {'kael':>9} {'compiled':>9} {'torch':>9} {'t.comp':>9} "
        f"{'numpy':>9} {'c/eager':>7} {'c/torch':>7} {'c/t.co':>7} {'c/numpy':>7} "
        f"{'c/floor':>7}  kernels e/c [ext]  target"
    )
    for w in cases:
        ms = {lib: w.median(lib) * 1e3 for lib in w.times}
        c = ms["kael.compile"]
        tco = ms.get("torch.compile", float("nan"))
        npy = ms.get("numpy", float("nan"))
        # each round's time over that round's floor: both move together with the machine
        over_floor = statistics.median(
            t / f for t, f in zip(w.times["kael.compile"], w.floors, strict=True)
        )
        verdict = ""
        if w.target:
            what, limit = w.target
            if what == "floor":
                ratio = over_floor
            elif what == "us":
                ratio, limit = c * 1e3, limit
            else:
                ratio = c / ms.get(what, float("nan"))
            met = ratio <= limit
            ok &= met
            unit = "us" if what == "us" else f"x {what}"
            verdict = f"<= {limit}{unit}: {'met' if met else 'MISSED'}"
        unit = 1e3 if w.target and w.target[0] == "us" else 1
        label = "us" if unit == 1e3 else "ms"
        print(
            f"{w.name + f' ({label})':38} {ms['kael'] * unit:9.3f} {c * unit:9.3f} "
            f"{ms['torch'] * unit:9.3f} {tco * unit:9.3f} {npy * unit:9.3f} "
            f"{c / ms['kael']:7.2f} {c / ms['torch']:7.2f} {c / tco:7.2f} {c / npy:7.2f} "
            f"{over_floor:7.2f}  {w.kernels:17}  {verdict}"
        )
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
