"""One kernel launch on the emulated device: its threads as NumPy lanes run in lockstep.

Every thread has a program counter. Each step runs the instruction at the lowest counter
for the threads that are there (a group), so straight code runs all threads at once,
divergent branches run each side in turn and meet again where their counters do, and a
barrier or a warp shuffle sees exactly the threads that reached it, which is how
`bar.sync` reached by part of a CTA, or a shuffle from a thread that is elsewhere, is
reported instead of answered. CTAs run in chunks of about LANES lanes (their order is
free on a GPU too), each chunk with its own registers, shared and local windows.
"""

from __future__ import annotations

import os

import numpy as np

from kael.runtime.emulator import instructions
from kael.runtime.emulator.memory import Fault, Memory
from kael.runtime.emulator.ptx import (
    NP,
    SIGNED,
    TYPE_BYTES,
    UNSIGNED,
    Function,
    Imm,
    Instruction,
    Reg,
    Sink,
    SReg,
    Sym,
)

LANES = 1 << 15
MAX_STEPS = 2_000_000  # per chunk: a kernel still running after this many is hung
SHARED_BASE = 0x1000_0000_0000
LOCAL_BASE = 0x2000_0000_0000
STACK_BYTES = 1024  # each thread's stack for alloca, where a kernel uses one
LOCAL_CHUNK_BYTES = 64 << 20
# KAEL_EMULATE_CUDA_SERIAL=1: warps run one at a time between barriers (Chunk._next_warp),
# slower, and a kernel missing a barrier gives wrong results instead of lockstep's right ones
WARP_SERIAL = os.environ.get("KAEL_EMULATE_CUDA_SERIAL", "").strip() == "1"


def launch(
    fn: Function,
    memory: Memory,
    module_addresses: dict[str, int],
    grid: int,
    block: int,
    params: dict[str, bytes],
    dynamic_shared: int = 0,
) -> None:
    """Run `fn` over `grid` CTAs of `block` threads, each with `dynamic_shared` bytes of
    dynamic shared memory (its `.extern .shared` arrays); Fault where a GPU would fault."""
    lanes = LANES // 4 if any(i.parts[0] == "alloca" for i in fn.code) else LANES
    if fn.local_bytes:  # each thread's local window: a chunk's at most LOCAL_CHUNK_BYTES
        lanes = min(lanes, max(block, LOCAL_CHUNK_BYTES // fn.local_bytes))
    per_chunk = max(1, lanes // block)
    for first in range(0, grid, per_chunk):
        ctas = min(per_chunk, grid - first)
        Chunk(fn, memory, module_addresses, grid, block, first, ctas, params, dynamic_shared).run()


class Chunk:
    """The state of `ctas` CTAs from CTA `first`: registers, windows, program counters."""

    def __init__(
        self, fn, memory, module_addresses, grid, block, first, ctas, params, dynamic_shared=0
    ):
        self.fn = fn
        self.shared_bytes = fn.shared_window(dynamic_shared)  # each CTA's, static and dynamic
        self.memory = memory
        self.module_addresses = module_addresses
        self.params = params
        self.block = block
        self.n = n = ctas * block
        lane = np.arange(n, dtype=np.int64)
        self.cta = lane // block  # the CTA within this chunk
        tid = (lane % block).astype(np.uint32)
        self.warp = self.cta * -(-block // 32) + tid // 32  # warps do not span CTAs
        self.warpgroup = self.cta * -(-block // 128) + tid // 128  # 4 warps: wgmma's
        self.special = {
            "%tid.x": tid,
            "%ntid.x": np.uint32(block),
            "%ctaid.x": (self.cta + first).astype(np.uint32),
            "%nctaid.x": np.uint32(grid),
            "%laneid": tid % 32,
            "%warpid": tid // 32,
        }
        for axis in "yz":
            self.special.update({f"%tid.{axis}": np.uint32(0), f"%ctaid.{axis}": np.uint32(0)})
            self.special.update({f"%ntid.{axis}": np.uint32(1), f"%nctaid.{axis}": np.uint32(1)})
        self.regs: dict[str, np.ndarray] = {}
        self.carry = np.zeros(n, np.uint64)
        self.windows = []
        if self.shared_bytes:
            self._window(SHARED_BASE, ctas * self.shared_bytes)
        # each thread's local memory: its .local variables, then a stack for alloca
        dynamic = any(ins.parts[0] in ("alloca", "stacksave") for ins in fn.code)
        self.stack_base = -(-fn.local_bytes // 16) * 16
        self.local_bytes = self.stack_base + (STACK_BYTES if dynamic else 0)
        self.stack = np.full(n, self.stack_base, np.uint64)
        if self.local_bytes:
            self._window(LOCAL_BASE, n * self.local_bytes)
        self.copies = instructions.AsyncCopies(n)  # cp.async copies in flight
        self.at: Instruction | None = None
        self.serial = WARP_SERIAL

    def _window(self, base: int, nbytes: int) -> None:
        self.memory.add(base, np.zeros(-(-nbytes // 8) * 8, np.uint8))
        self.windows.append(base)

    # -- operands -----------------------------------------------------------------------
    def read(self, op, type_: str, lanes):
        """The operand's value for `lanes` as PTX type `type_` (an array or a scalar)."""
        if type_ not in TYPE_BYTES:
            raise self.fault("CUDA_ERROR_NOT_SUPPORTED", f"operands of type .{type_}")
        if isinstance(op, Reg):
            return self._as_type(self._reg(op.name, type_)[lanes], type_)
        if isinstance(op, Imm):
            return _immediate(op, type_)
        if isinstance(op, SReg):
            value = self.special.get(op.name)
            if value is None:
                raise self.fault("CUDA_ERROR_NOT_SUPPORTED", f"special register {op.name}")
            value = value[lanes] if isinstance(value, np.ndarray) else value
            return self._as_type(np.asarray(value, np.uint32), type_)
        if isinstance(op, Sym):
            return np.asarray(self.address_of(op.name), NP[type_])
        raise self.fault("CUDA_ERROR_ILLEGAL_INSTRUCTION", f"cannot read {op} as a value")

    def address_of(self, name: str) -> int:
        for space in (self.fn.shared, self.fn.dynamic, self.fn.local):
            if name in space:
                return space[name].offset
        if name in self.module_addresses:
            return self.module_addresses[name]
        raise self.fault("CUDA_ERROR_NOT_FOUND", f"no variable named {name}")

    def _reg(self, name: str, type_: str | None = None) -> np.ndarray:
        found = self.regs.get(name)
        if found is None:
            declared = self.fn.reg_type(name) or type_
            dtype = np.bool_ if declared == "pred" else UNSIGNED[TYPE_BYTES[declared]]
            found = self.regs[name] = np.zeros(self.n, dtype)
        return found

    @staticmethod
    def _as_type(raw: np.ndarray, type_: str) -> np.ndarray:
        if type_ == "pred" or raw.dtype == np.bool_:
            return raw.astype(NP[type_], copy=False)
        width, have = TYPE_BYTES[type_], raw.dtype.itemsize
        if width == have:
            return raw.view(NP[type_])
        if width < have:
            return raw.astype(UNSIGNED[width]).view(NP[type_])
        if type_.startswith("s"):
            return raw.view(SIGNED[have]).astype(NP[type_])
        return raw.astype(UNSIGNED[width]).view(NP[type_])

    def write(self, op, values, lanes) -> None:
        if isinstance(op, Sink):
            return
        if not isinstance(op, Reg):
            raise self.fault("CUDA_ERROR_ILLEGAL_INSTRUCTION", f"cannot write {op}")
        values = np.asarray(values)
        target = self._reg(op.name, _type_of(values))
        if target.dtype == np.bool_:
            target[lanes] = values.astype(bool, copy=False)
            return
        width = target.dtype.itemsize
        if values.dtype == np.bool_:
            values = values.astype(UNSIGNED[width])
        if values.dtype.kind == "i" and values.dtype.itemsize < width:
            values = values.astype(SIGNED[width])
        raw = values.view(UNSIGNED[values.dtype.itemsize]) if values.ndim else values
        if raw.ndim == 0:
            raw = np.asarray(values).reshape(1).view(UNSIGNED[values.dtype.itemsize])[0]
        target[lanes] = raw.astype(target.dtype, copy=False)

    # -- memory -------------------------------------------------------------------------
    def generic(self, space: str, addresses, lanes, size: int) -> np.ndarray:
        """Addresses of `space` as generic ones, checked against each thread's window."""
        addresses = np.broadcast_to(np.asarray(addresses, np.uint64), (self.count(lanes),))
        if space == "shared":
            window, owner = self.shared_bytes, self.cta[lanes]
            base = SHARED_BASE
        elif space == "local":
            window, owner = self.local_bytes, np.arange(self.n)[lanes]
            base = LOCAL_BASE
        else:
            return addresses
        outside = addresses + np.uint64(size) > np.uint64(window)
        if np.any(outside):
            bad = int(addresses[outside][0])
            raise self.fault(
                "CUDA_ERROR_ILLEGAL_ADDRESS", f"{space} address {bad:#x} past {window} bytes"
            )
        return np.uint64(base) + owner.astype(np.uint64) * np.uint64(window) + addresses

    def shared_at(self, ctas: np.ndarray, addresses: np.ndarray) -> np.ndarray:
        """Generic addresses of shared-window `addresses` of the chunk's CTAs `ctas`."""
        window = np.uint64(self.shared_bytes)
        return np.uint64(SHARED_BASE) + ctas.astype(np.uint64) * window + addresses

    def count(self, lanes) -> int:
        return self.n if isinstance(lanes, slice) else len(lanes)

    def fault(self, code: str, message: str) -> Fault:
        where = self.at.where(self.fn.name) if self.at is not None else self.fn.name
        return Fault(code, f"{message}, at {where}")

    # -- execution ----------------------------------------------------------------------
    def run(self) -> None:
        try:
            self._run()
        except Fault as exc:
            if self.at is not None and "(line " not in str(exc):
                raise Fault(exc.code, f"{exc}, at {self.at.where(self.fn.name)}") from None
            raise
        finally:
            for base in self.windows:
                self.memory.remove(base)

    def _run(self) -> None:
        code, labels = self.fn.code, self.fn.labels
        groups: dict[int, object] = {0: slice(None)}
        members = {unit: np.bincount(getattr(self, unit)) for unit in ("cta", "warp", "warpgroup")}
        steps = 0
        while groups:
            pc, lanes = self._next(groups, members)
            ins = self.at = code[pc]
            steps += 1
            if steps > MAX_STEPS:
                raise self.fault("CUDA_ERROR_LAUNCH_TIMEOUT", f"still running after {steps} steps")
            on, off = lanes, None
            if ins.guard is not None:
                taken = self._reg(ins.guard, "pred")[lanes]
                if ins.negated:
                    taken = ~taken
                if not taken.all():
                    on, off = self._select(lanes, taken), self._select(lanes, ~taken)
                    if not len(on):
                        self._join(groups, pc + 1, off)
                        continue
            head = ins.parts[0]
            if head == "bra":
                self._join(groups, labels[ins.operands[0].name], on)
            elif head in ("ret", "exit"):
                for unit, counts in members.items():  # done: no barrier waits for them
                    counts -= np.bincount(getattr(self, unit)[on], minlength=len(counts))
            else:
                instructions.execute(self, ins, on)
                self._join(groups, pc + 1, on)
            if off is not None:
                self._join(groups, pc + 1, off)

    def _next(self, groups: dict, members: dict) -> tuple[int, object]:
        """The lowest program counter whose threads can run: at a barrier (a CTA's) or a
        warp-wide instruction (a warp's) only the threads whose every partner is there
        too; the others wait, and the rest of the program runs first. Threads that exited
        count as arrived ("barriers exclusively waiting on threads that have exited are
        always resolved", PTX ISA on exit); a partner waiting elsewhere is reported."""
        if self.serial:
            return self._next_warp(groups, members)
        for pc in sorted(groups):
            if pc >= len(self.fn.code):
                raise self.fault("CUDA_ERROR_ILLEGAL_INSTRUCTION", "ran past the kernel's end")
            lanes = groups[pc]
            unit = _waits_for(self.fn.code[pc])
            if unit is None or isinstance(lanes, slice):
                del groups[pc]
                return pc, lanes
            ready = self._ready(pc, lanes, members)
            if ready.all():
                del groups[pc]
                return pc, lanes
            if ready.any():
                groups[pc] = lanes[~ready]
                return pc, lanes[ready]
        raise self._deadlock(groups)

    def _ready(self, pc: int, lanes, members: dict) -> np.ndarray:
        """Which of the threads at `pc` may run it (all, unless it waits for partners)."""
        unit = _waits_for(self.fn.code[pc])
        if unit is None:
            return np.ones(len(lanes), bool)
        owner = getattr(self, unit)[lanes]
        counts = members[unit]
        return (np.bincount(owner, minlength=len(counts)) == counts)[owner]

    def _next_warp(self, groups: dict, members: dict) -> tuple[int, np.ndarray]:
        """Warp by warp (WARP_SERIAL): the highest-numbered warp that can run goes on, from
        its lowest program counter, until it waits at a barrier or exits; then the next.
        So a warp runs far ahead of the others, and a missing barrier (a shared value read
        before its writer ran) shows in the results instead of hiding in lockstep."""
        best = None
        for pc in sorted(groups):
            if pc >= len(self.fn.code):
                raise self.fault("CUDA_ERROR_ILLEGAL_INSTRUCTION", "ran past the kernel's end")
            lanes = self._indices(groups[pc])
            ready = lanes[self._ready(pc, lanes, members)]
            if len(ready):
                warp = int(self.warp[ready].max())
                if best is None or warp > best[0]:
                    best = (warp, pc, ready)
        if best is None:
            raise self._deadlock(groups)
        warp, pc, ready = best
        take = ready[self.warp[ready] == warp]
        unit = _waits_for(self.fn.code[pc])
        if unit in ("cta", "warpgroup"):  # a barrier releases its whole CTA at once
            owner = getattr(self, unit)
            take = ready[owner[ready] == owner[take[0]]]
        rest = np.setdiff1d(self._indices(groups[pc]), take, assume_unique=True)
        if len(rest):
            groups[pc] = rest
        else:
            del groups[pc]
        return pc, take

    def _deadlock(self, groups: dict) -> Fault:
        self.at = self.fn.code[min(groups)]
        return self.fault(
            "CUDA_ERROR_LAUNCH_FAILED",
            "every running thread waits at a barrier or warp-wide instruction that part of"
            f" its CTA or warp never reaches (threads wait at lines"
            f" {sorted(self.fn.code[pc].line for pc in groups)})",
        )

    def _select(self, lanes, mask: np.ndarray) -> np.ndarray:
        return np.nonzero(mask)[0] if isinstance(lanes, slice) else lanes[mask]

    def _join(self, groups: dict, pc: int, lanes) -> None:
        have = groups.get(pc)
        if have is None:
            groups[pc] = lanes
            return
        merged = np.concatenate([self._indices(have), self._indices(lanes)])
        groups[pc] = slice(None) if len(merged) == self.n else merged

    def _indices(self, lanes) -> np.ndarray:
        return np.arange(self.n) if isinstance(lanes, slice) else lanes

    def converged(self, lanes) -> np.ndarray:
        """A mask of the threads taking part in this step (for warp-wide instructions)."""
        mask = np.zeros(self.n, bool)
        mask[lanes] = True
        return mask


def _waits_for(ins: Instruction) -> str | None:
    """Whom the instruction waits for: its CTA (barriers), its warpgroup (wgmma), its warp
    (bar.warp.sync, shuffles, votes, mma, ldmatrix), or nobody."""
    head = ins.parts[0]
    if head in ("bar", "barrier"):
        return "warp" if ins.parts[1] == "warp" else "cta"
    if head == "wgmma":
        return "warpgroup"
    return "warp" if head in ("shfl", "vote", "mma", "ldmatrix") else None


def _type_of(values: np.ndarray) -> str:
    if values.dtype == np.bool_:
        return "pred"
    return {1: "b8", 2: "b16", 4: "b32", 8: "b64"}[values.dtype.itemsize]


def _immediate(op: Imm, type_: str):
    dtype = np.dtype(NP[type_])
    if type_ == "pred":
        return np.bool_(op.value)
    if op.bits:
        if op.bits == dtype.itemsize:
            return np.asarray(op.value, UNSIGNED[op.bits]).view(dtype)
        number = np.asarray(op.value, UNSIGNED[op.bits]).view(
            np.float32 if op.bits == 4 else np.float64
        )
        return number.astype(dtype)
    if dtype.kind == "f":
        return dtype.type(op.value)
    return np.asarray(
        int(op.value) & ((1 << 8 * dtype.itemsize) - 1), UNSIGNED[dtype.itemsize]
    ).view(dtype)
