"""Side-by-side timing of kael, PyTorch and NumPy: interleaved rounds, medians, ratios.

Each round runs every library once per case, so a noisy neighbour slows all of them
alike instead of whichever happened to run at the time.

Importing this module (ruff's isort keeps it above NumPy) puts this checkout's kael on
sys.path and sets OPENBLAS_THREAD_TIMEOUT=4 before NumPy loads. OpenBLAS's idle
workers otherwise spin for about 2^28 cycles after each NumPy call that used them,
taking a core from whatever runs next (kael's 2048^3 product ran at 0.4x its speed right
after a NumPy call, and sums lost up to 2x); with the timeout they sleep at once, so
every library starts on idle cores. For the same reason `measure` pauses SETTLE seconds
before each timed call: after its last parallel op PyTorch's OpenMP worker spins for
about 8 ms (process CPU time against wall time, 2 threads) and kael's pool for about
0.6 ms, and a library timed while the other one's spinner held the second core ran as if
on one (kael's 20 back-to-back ops on 512x512 on two threads: 0.95 ms alone, 5.4 ms
right after torch's; a 1 MiB sum 23 us alone, 70-130 us within 10 ms of torch's).
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

N = 16 * 1024 * 1024  # elements of the large cases: 64 MiB of float32, past every cache
SIDE = 4096  # N as a square


@dataclass
class Case:
    """One measured operation: a callable per library, and an optional target for kael."""

    name: str
    runs: dict[str, Callable[[], object]]
    target: tuple[str, float] | None = None  # ("torch", 0.8): kael time <= 0.8x torch's
    times: dict[str, list[float]] = field(default_factory=dict)

    def median_ms(self, lib: str) -> float:
        return statistics.median(self.times[lib]) * 1e3


def triple(array) -> tuple:
    """The values of a NumPy array as a kael tensor, a torch tensor and a NumPy array,
    none sharing memory with another."""
    import torch

    import kael

    return kael.tensor(array), torch.from_numpy(array.copy()), array.copy()


SETTLE = 0.015  # seconds before each timed call: the other library's spinners give up


def measure(cases: list[Case], rounds: int = 15, warmup: int = 2, block: int = 0) -> None:
    """Fill each case's times with `rounds` interleaved samples per library, each call
    started on idle cores (SETTLE). With `block`, a sample is instead the mean of `block`
    back-to-back calls after SETTLE and `warmup` more calls, as a loop of them runs: the
    pause lets the other library's spinning workers give up their cores, the warmup calls
    bring this VM's parked second vCPU back. The libraries' order goes through every
    permutation from round to round: what ran just before a single call changes its time
    on this VM even after the pause (kael's 512 qr: 12.7 ms after NumPy's qr, 17 ms after
    NumPy's det; NumPy's own qr 28 or 41 ms), and a fixed order gave one library the same
    predecessor every time."""
    for case in cases:
        for fn in case.runs.values():
            for _ in range(warmup):
                fn()
        case.times = {lib: [] for lib in case.runs}
    for r in range(rounds):
        for case in cases:
            orders = list(itertools.permutations(case.runs.items()))
            for lib, fn in orders[r % len(orders)]:
                time.sleep(SETTLE)
                for _ in range(warmup if block else 0):
                    fn()
                start = time.perf_counter()
                for _ in range(max(block, 1)):
                    fn()
                case.times[lib].append((time.perf_counter() - start) / max(block, 1))


def report(cases: list[Case]) -> bool:
    """Print medians and kael's ratios; returns whether every target was met."""
    ok = True
    print(
        f"{'case':44} {'kael ms':>9} {'torch ms':>9} {'numpy ms':>9} {'k/torch':>8} {'k/numpy':>8}  target"
    )
    for c in cases:
        k = c.median_ms("kael")
        t = c.median_ms("torch") if "torch" in c.times else float("nan")
        n = c.median_ms("numpy") if "numpy" in c.times else float("nan")
        verdict = ""
        if c.target:
            lib, limit = c.target
            ratio = k / c.median_ms(lib)
            met = ratio <= limit
            ok &= met
            verdict = f"<= {limit}x {lib}: {'met' if met else 'MISSED'} ({ratio:.2f}x)"
        print(f"{c.name:44} {k:9.3f} {t:9.3f} {n:9.3f} {k / t:8.2f} {k / n:8.2f}  {verdict}")
    return ok


BLOCK = 10  # calls per back-to-back sample


def back_to_back(
    cases: list[Case], target_of: Callable[[Case], tuple[str, float] | None], rounds: int = 9
) -> bool:
    """The cases `target_of` gives a target measured again, each sample BLOCK calls back
    to back, and judged there: a single call after SETTLE's pause may find this VM's
    second vCPU parked and run as if on one core (gelu 8.7 ms alone, 4.4 ms in a row;
    a float32 cast 7.4 or 3.8 ms from one call to the next), while a program runs its
    ops one after another. Returns whether every target was met."""
    again = [
        Case(f"{c.name}, back to back", c.runs, target=target_of(c))
        for c in cases
        if target_of(c) is not None
    ]
    measure(again, rounds=rounds, warmup=3, block=BLOCK)
    print(f"\nback to back (the mean of {BLOCK} consecutive calls per sample):")
    return report(again)


def parser(description: str, rounds: int = 15) -> argparse.ArgumentParser:
    """The options every benchmark script takes: --rounds and --check."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--rounds", type=int, default=rounds)
    p.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    return p


def run(
    description: str,
    make_cases: Callable[[], list[Case]],
    extra: Callable[[list[Case]], bool] | None = None,
) -> int:
    """The command line of a benchmark script: measure, report, check the targets.

    `extra` reports further targets from the measured cases and says whether they were met.
    """
    import torch

    import kael

    args = parser(description).parse_args()
    print(f"kael threads {kael.get_num_threads()}, torch threads {torch.get_num_threads()}")
    cases = make_cases()
    measure(cases, rounds=args.rounds)
    ok = report(cases)
    if extra is not None:
        ok = extra(cases) and ok
    return 0 if ok or not args.check else 1
