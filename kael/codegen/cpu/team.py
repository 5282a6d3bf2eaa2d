"""Two work items of one launch that share the steps of a sequential loop: a blocked
eigh panel's 32 columns each need a product A v over the whole trailing matrix, between
steps only one thread can take (symmetric_eigen._panel).

Whichever item starts first leads: it runs the loop and, at each shared step, publishes
the step (JOB), does its own part, and then takes the other part too unless the helper
claimed it first (CLAIM), in which case it waits for the helper's DONE. The other item
helps: it waits for each new step, claims its part, does it and marks it done, until
the leader publishes END. So nobody ever waits for an item that has not started: on one
thread (or with the second item run after the first) the leader does every part alone
and the helper finds END at once, and a helper only runs once a leader is running.
Waiting spins with pause, giving up the CPU every parallel.YIELD_EVERY rounds where
the system has sched_yield (the two threads may share one). The caller passes SIZE zeroed int64 words per launch.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable

from llvmlite import ir

from kael.codegen.cpu.dense import Dense
from kael.codegen.cpu.parallel import YIELD_EVERY

I32, I64 = ir.IntType(32), ir.IntType(64)
LINE = 8  # int64 words a cache line: each word below on its own line
JOB, CLAIM, DONE, LEADER = (k * LINE for k in range(4))
SIZE = 4 * LINE
END = 1 << 62  # the JOB that ends the helper's service


def i0() -> ir.Constant:
    return ir.Constant(I64, 0)


def _declared(module: ir.Module, name: str, ret: ir.Type) -> ir.Function:
    """The module's declaration of `name` (no arguments), made once."""
    if name in module.globals:
        return module.globals[name]
    return ir.Function(module, ir.FunctionType(ret, []), name)


class Team:
    """The leader's and helper's sides of the protocol, over the words at `sync` (i64*)."""

    def __init__(self, d: Dense, sync: ir.Value) -> None:
        self.d, self.b, self.sync = d, d.b, sync

    def _word(self, k: int) -> ir.Value:
        return self.b.gep(self.sync, [ir.Constant(I64, k)])

    def _load(self, k: int) -> ir.Value:
        return self.b.load_atomic(self._word(k), "acquire", 8)

    def _store(self, k: int, value: ir.Value) -> None:
        self.b.store_atomic(value, self._word(k), "release", 8)

    def _swap(self, k: int, old: ir.Value, new: ir.Value) -> ir.Value:
        """Whether word k went from `old` to `new` (compare and swap)."""
        pair = self.b.cmpxchg(self._word(k), old, new, "acq_rel", "acquire")
        return self.b.extract_value(pair, 1)

    def _spin(self, waiting: Callable[[], ir.Value]) -> None:
        """Wait while waiting() holds: pause, and sched_yield every YIELD_EVERY rounds."""
        d, b = self.d, self.b
        module = d.fn.module
        rounds = d.var(ir.Constant(I64, 0), "rounds")
        with d.while_(waiting):
            if platform.machine() in ("x86_64", "AMD64"):
                b.call(_declared(module, "llvm.x86.sse2.pause", ir.VoidType()), [])
            if os.name == "posix":  # (sched_yield is POSIX's)
                n = b.add(rounds.get(), ir.Constant(I64, 1))
                rounds.set(n)
                every = ir.Constant(I64, YIELD_EVERY - 1)  # a power of two
                with d.when(b.icmp_unsigned("==", b.and_(n, every), i0())):
                    b.call(_declared(module, "sched_yield", I32), [])

    def leads(self) -> ir.Value:
        """Whether this item started first (and so leads)."""
        return self._swap(LEADER, i0(), ir.Constant(I64, 1))

    def share(self, job: ir.Value, mine: Callable[[], None], theirs: Callable[[], None]):
        """The leader's shared step `job` (1, 2, ...: each once, in order): publish it, do
        mine(), then theirs() here unless the helper claimed it first (serve's theirs, the
        same work), in which case wait until the helper is done."""
        b = self.b
        self._store(JOB, job)
        mine()
        claimed = self._swap(CLAIM, b.sub(job, ir.Constant(I64, 1)), job)
        with self.d.either(claimed) as (here, helped):
            with here:
                theirs()
            with helped:
                self._spin(lambda: b.icmp_signed("!=", self._load(DONE), job))

    def end(self) -> None:
        """The leader is done: the helper stops."""
        self._store(JOB, ir.Constant(I64, END))

    def serve(self, theirs: Callable[[ir.Value], None]) -> None:
        """The helper: theirs(job) for each step it claims, until END."""
        d, b = self.d, self.b
        seen = d.var(i0(), "seen")
        job = d.var(i0(), "job")

        def waiting() -> ir.Value:
            job.set(self._load(JOB))
            return b.icmp_signed("==", job.get(), seen.get())

        with d.while_(lambda: b.icmp_signed("!=", seen.get(), ir.Constant(I64, END))):
            self._spin(waiting)
            now = job.get()
            seen.set(now)
            # (the claim's compare-and-swap is emitted inside the first test: not on END)
            with (
                d.when(b.icmp_signed("!=", now, ir.Constant(I64, END))),
                d.when(self._swap(CLAIM, b.sub(now, ir.Constant(I64, 1)), now)),
            ):
                theirs(now)
                self._store(DONE, now)
