"""Tiered CPU code: a kernel runs LLVM's -O0 code first, its optimized code once it is big.

LLVM's optimizing code generation was most of a new program's start: 0.47 s of the
README's examples, against 0.20 s for the same kernels at -O0. kael's kernels arrive
vectorized by kael itself, so their -O0 code runs at 1.0-1.45x the optimized code's time
(add: the same, being memory-bound; tanh and gelu 1.3-1.4x; a transposed copy and a mean
over dim 0 1.35-1.45x), while most kernels a program compiles only ever see small
tensors, where that difference is a fraction of a microsecond. kael's scalar hand-written
kernels (scans, gathers) lose more at -O0 (up to 4x: they want LLVM's loop vectorizer).
So a kernel is linked at tier 0 first, and gets its optimized code before the first
launch that moves launcher.PROMOTE_BYTES (64 KiB, a microsecond of memory-bound work or
more), before its PROMOTE_LAUNCHES-th launch through launcher.launch_block or eager's full
door (every launch but the fast door's remembered ones, which run kael-vectorized kernels
on small tensors: there vector math's -O0 code costs 1.1-1.2x, sin on 8000 elements 8.6
against 7.6 us), or when a compiled plan fuses it (a compiled function is called again
and again; its extern steps promote as eager ops do).

How code already handed out follows: tier-0 code exports each kernel `sym` as a
trampoline that calls through a slot, `@"sym.slot"`, holding the -O0 body's address.
Every address kael keeps (launch descriptors, compiled plans' argument blocks, a row
driver's member table) is the trampoline's, so promotion only links the optimized object
and stores its address into the slots: the next call of every launch runs the new code.
The -O0 body stays linked, as another thread may be inside it. Both tiers give the same
bits: kael emits no fast-math flags, so no pass may reassociate, contract or approximate.

The disk cache holds each tier under its own key; a process finding the optimized
object on disk links that and skips tier 0. KAEL_TIERS=0 links every kernel optimized
at once (what the tier-0 path saves is then the time to compare).
"""

from __future__ import annotations

import ctypes
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from kael.codegen.cpu import compiler
from kael.runtime import debug, kernel_cache, sync
from kael.runtime.launcher import kernel_fn

PROMOTE_LAUNCHES = 16
ENABLED = os.environ.get("KAEL_TIERS", "1") != "0"

# (exported kernel symbols, the module's LLVM IR text with the host target)
Source = Callable[[], tuple[list[str], str]]
Passes = Callable[[str], tuple[str, ...] | None]  # the optimized tier's passes, by the text

_TRAMPOLINE = """
@"{s}.slot" = global void (i64*, i64, i64)* @"{s}.tier0", align 8
define void @"{s}"(i64* noalias %args, i64 %begin, i64 %end) nounwind {{
  %body = load void (i64*, i64, i64)*, void (i64*, i64, i64)** @"{s}.slot", align 8
  tail call void %body(i64* %args, i64 %begin, i64 %end)
  ret void
}}
"""


def trampolined(text: str, symbols: list[str]) -> str:
    """`text` with each kernel `sym` renamed `sym.tier0` and called through a trampoline
    `sym` that loads its target from `sym.slot` (calls inside the module go straight to
    the body)."""
    for s in symbols:
        name = re.escape(s)
        text = re.sub(rf'@(?:"{name}"|{name}(?![-\w.$]))', f'@"{s}.tier0"', text)
    return text + "".join(_TRAMPOLINE.format(s=s) for s in symbols)


def _pack(symbols: list[str], obj: bytes) -> bytes:
    return "\n".join(symbols).encode() + b"\0" + obj


def unpack(payload: bytes) -> tuple[list[str], bytes]:
    """(symbols, object code) of a payload stored by `link`."""
    head, _, obj = payload.partition(b"\0")
    return head.decode().split("\n"), obj


def optimized_payload(source: Source, passes: Passes) -> bytes:
    """The disk payload of the optimized tier: its symbols, then its object code."""
    symbols, text = source()
    return _pack(symbols, compiler.emit_object(text, passes(text)))


def tier0_payload(source: Source) -> bytes:
    """The disk payload of tier 0: its symbols, then its object code (trampolines included)."""
    symbols, text = source()
    return _pack(symbols, compiler.emit_tier0(trampolined(text, symbols)))


def tier0_key(key: str) -> str:
    return kernel_cache.key_of(key, "tier0")


class Tier0:
    """A module linked at tier 0: `promote` links its optimized code and retargets the
    trampolines' slots. Kernel functions of the module carry it as `fn.tier0` (None once
    promoted), which the launcher reads (launcher.optimize)."""

    __slots__ = ("name", "slots", "fns", "launches", "_optimized", "_tracker", "_lock", "done")

    def __init__(self, name: str, slots: dict[str, int], optimized: Callable) -> None:
        self.name = name
        self.slots = slots  # symbol -> its slot's address
        self.fns: list = []
        self.launches = 0  # counted without a lock: a lost count only delays promotion
        self._optimized = optimized  # () -> ({symbol: address}, tracker, how)
        self._tracker = None  # keeps the optimized code linked
        self._lock = sync.lock()
        self.done = False

    def launched(self) -> None:
        """Count a launch through launcher.launch_block; the PROMOTE_LAUNCHES-th promotes."""
        self.launches += 1
        if self.launches >= PROMOTE_LAUNCHES:
            self.promote()

    def promote(self) -> None:
        """Run the optimized code from every launch's next call on (once; thread-safe)."""
        if self.done:
            return
        with self._lock:
            if self.done:
                return
            start = time.perf_counter()
            addresses, self._tracker, how = self._optimized()
            for symbol, slot in self.slots.items():
                ctypes.c_void_p.from_address(slot).value = addresses[symbol]
            self.done = True
            for fn in self.fns:
                fn.tier0 = None
            debug.report_kernel(self.name, f"promoted to optimized code ({how})",
                                time.perf_counter() - start, [])  # fmt: skip


@dataclass
class Linked:
    """A module's code linked into this process: `fn(symbol)` is a kernel function."""

    addresses: dict[str, int]
    tracker: object  # dropping it would unload the code
    how: str  # "compiled" or "disk cache", at tier 0 saying so
    tier0: Tier0 | None

    def fn(self, symbol: str, kernel: object = None, library: object = None):
        made = kernel_fn(self.addresses[symbol], symbol, kernel, library)
        if self.tier0 is not None and not self.tier0.done:
            made.tier0 = self.tier0
            self.tier0.fns.append(made)
        return made


def link(
    kind: str, key: str, name: str, source: Source, passes: Passes, optimized: bool = False
) -> Linked:
    """Link the module `source` builds as `name`: its optimized object code if the disk
    cache has it under `key` or `optimized` asks for it, else its tier-0 code (from the
    disk or compiled now). `passes` gives the optimized tier's passes for its text."""

    def full() -> tuple[dict[str, int], object, str]:
        payload, how = kernel_cache.fetch(kind, key, lambda: optimized_payload(source, passes))
        symbols, obj = unpack(payload)
        addresses, tracker = compiler.load_object_symbols(obj, tuple(symbols), name)
        return addresses, tracker, how

    if optimized or not ENABLED or kernel_cache.exists(kind, key):
        addresses, tracker, how = full()
        return Linked(addresses, tracker, how, None)
    payload, how = kernel_cache.fetch(kind, tier0_key(key), lambda: tier0_payload(source))
    symbols, obj = unpack(payload)
    slots = tuple(f"{s}.slot" for s in symbols)
    addresses, tracker = compiler.load_object_symbols(obj, (*symbols, *slots), f"{name}.tier0")
    tier = Tier0(name, {s: addresses[f"{s}.slot"] for s in symbols}, full)
    return Linked({s: addresses[s] for s in symbols}, tracker, f"{how}, tier 0 (-O0)", tier)
