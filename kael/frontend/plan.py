"""A compiled plan: the steps of a traced function over numbered buffer slots, run per call.

Slots are the function's tensor arguments, tensors it reads from elsewhere (implicit
inputs, read at each call), buffers the plan allocates (intermediates and fresh outputs)
and buffers extern steps return. A step is a kernel launch (through eager's launch door,
so layouts and compiled code come from the same caches), an extern op called on tensors
over the slots, or the reservation of random counters. The same steps run while tracing
(on the trace's buffers) and on every later call.
"""

from __future__ import annotations

import array
import collections
import ctypes
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from kael.frontend import eager, pytree
from kael.frontend import replay as replay_module
from kael.ir.expr import walk
from kael.ir.fusion import costly
from kael.ir.kernel import Kernel, prefetching
from kael.ir.matmul import Product
from kael.ir.reduction import Reduction
from kael.ir.views import View, numel
from kael.runtime import debug, launches
from kael.runtime.allocator import allocator_for, block_capacity
from kael.runtime.convert import convert_scalar
from kael.runtime.device import CPU, Device
from kael.runtime.dtypes import DType, float64, int8, int16, int32, int64
from kael.runtime.errors import Error
from kael.runtime.errors import IndexError as KaelIndexError
from kael.runtime.launcher import launch, launch_block
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl, contiguous_strides
from kael.runtime.threadpool import get_num_threads

ARG, IMPLICIT, FRESH, EXTERN = "arg", "implicit", "fresh", "extern"
# a view an extern returned into memory the call passed, at an offset that follows the values
# (x[t] for a 0-d tensor t): its slot is that memory seen from where each call's view lies
WINDOW = "window"


def _trusted(impl: TensorImpl):
    """Tensor.trusted(impl); bound on first use (tensor.py imports what imports this)."""
    global _trusted
    from kael.frontend.tensor import Tensor

    _trusted = Tensor.trusted
    return _trusted(impl)


@dataclass(slots=True)
class Slot:
    """One buffer of the plan: where its storage comes from at each call."""

    kind: str
    nbytes: int
    device: Device
    arg: int = -1  # ARG: the position among the call's tensor leaves
    storage: Storage | None = None  # IMPLICIT: the storage read at every call
    base: int = -1  # WINDOW: the slot whose memory it shows
    # ARG of a 0-d tensor found at any offset (relative_args): the byte offset the trace
    # read it at, each call binding the storage shifted by the difference (a Window)
    origin: int | None = None
    block: tuple | None = None  # (capacity, allocator) of a new storage, found on first use

    def planned(self) -> tuple:
        """Storage.planned's arguments for a new storage of this slot (worked out once)."""
        block = self.block
        if block is None:
            block = self.block = (block_capacity(self.nbytes), allocator_for(self.device))
        return (self.nbytes, *block, self.device)

    def grow(self, nbytes: int) -> None:
        """This slot made `nbytes` (an empty one an out= resized): its block found again."""
        self.nbytes, self.block = nbytes, None

    def new_storage(self) -> Storage:
        """A new storage of this slot's size, from the caching allocator."""
        if self.nbytes == 0:
            return Storage(0, self.device)
        return Storage.planned(*self.planned())


class Window(Storage):
    """The memory of `base` (a real storage) seen `shift` bytes on: a WINDOW slot's storage
    in one call. The plan's steps address the view at the trace's offset; the shift moves
    them to where this call's view lies. Writes count on the base's version."""

    __slots__ = ("base", "shift", "ints")
    windowed = True

    def __init__(self, base: Storage, shift: int, ints: frozenset = frozenset()) -> None:
        self.base, self.shift, self.ints = base, shift, ints  # ints: those placing it (a trace's)
        self.nbytes, self.device, self.owner = base.nbytes, base.device, base
        self._capacity, self._allocator = 0, None

    @property
    def ptr(self) -> int:
        return self.base.ptr + self.shift

    @ptr.setter
    def ptr(self, value: int) -> None:
        pass  # the address is the base's, moved

    @property
    def version(self) -> int:
        return self.base.version

    @version.setter
    def version(self, value: int) -> None:
        self.base.version = value

    def overlaps(self, other: Storage) -> bool:
        return self.base.overlaps(real(other))

    def __repr__(self) -> str:
        return f"Window({self.base!r}, shift={self.shift})"


def relative_args(tensors: list) -> list[int]:
    """The positions of the 0-d tensors among a call's tensors whose storage no other one
    shares: a plan reads them wherever in their storage a call passes them (a timestep of
    `for t in scheduler.timesteps` is a view at a new offset each step), so their offset
    is no part of the signature."""
    count: dict[int, int] = {}
    for t in tensors:
        count[id(t._impl.storage)] = count.get(id(t._impl.storage), 0) + 1
    return [
        j for j, t in enumerate(tensors) if not t._impl.shape and count[id(t._impl.storage)] == 1
    ]


def at(impl: TensorImpl, origin: int) -> Storage:
    """The storage a relative argument's slot binds: impl's, shifted where impl lies other
    than at the trace's `origin` byte."""
    shift = impl.offset * impl.dtype.itemsize - origin
    return impl.storage if not shift else Window(impl.storage, shift)


def real(storage: Storage) -> Storage:
    """The storage whose memory `storage` is: a window's base, else itself."""
    return storage.base if type(storage) is Window else storage


def unwindowed(impl: TensorImpl) -> TensorImpl:
    """`impl`, or over a window the same elements as a view of the window's base (what a
    call hands to Python: an extern's operand, a result), where its itemsize divides the
    shift."""
    storage = impl.storage
    if type(storage) is not Window:
        return impl
    moved, rest = divmod(storage.shift, impl.dtype.itemsize)
    if rest:
        return impl
    return _impl(
        storage.base, impl.shape, impl.strides, impl.offset + moved, impl.dtype, impl.device
    )


@dataclass(frozen=True, slots=True)
class ArgScalar:
    """A run-time parameter taken from the call's Python float at leaf `index`, converted
    as the op converted it while tracing."""

    index: int
    conversions: tuple = ()

    def value(self, call: Call):
        return self.of(call.scalars)

    def of(self, scalars: list):
        """The value for a call whose leaves are `scalars`."""
        v = scalars[self.index]
        for dtype, mode in self.conversions:
            v = convert_scalar(v, dtype, mode)
        return v


@dataclass(frozen=True, slots=True)
class Derived:
    """A run-time value built per call from run-time ints: `fn` of `parts` (each an
    ArgScalar, a Derived or a constant): p + 1 of a dynamic int argument p, or the
    slice(p, p + 1) an x[p:p + 1] is given."""

    fn: Callable
    parts: tuple  # and a slice's bounds may be tensors over slots (View): x[:n] for a 0-d n

    def value(self, call: Call):
        return self.fn(*(_resolved(v, call) for v in self.parts))

    def of(self, scalars: list):
        return self.fn(*(v.of(scalars) if type(v) in _SCALAR_SOURCES else v for v in self.parts))


@dataclass(frozen=True, slots=True)
class Input:
    """A result that is the call's own tensor argument at position `index`: returned as is."""

    index: int


@dataclass(frozen=True, slots=True)
class RandomWord:
    """The seed or first counter of the call's `index`-th reservation of random counters."""

    index: int
    which: int  # 0 seed, 1 offset

    def value(self, call: Call):
        return call.random[self.index][self.which]


_SCALAR_SOURCES = (ArgScalar, Derived)  # a value from the call's own leaves
_CALL_SOURCES = (ArgScalar, RandomWord, Derived)  # a value each call works out


def _value(source, call: Call):
    return source.value(call) if type(source) in _CALL_SOURCES else source


class Call:
    """One run of a plan: the storage bound to each slot and the call's scalar values."""

    __slots__ = ("plan", "bound", "scalars", "random", "generators")

    def __init__(self, plan: Plan, bound: list, scalars: list) -> None:
        self.plan = plan
        self.bound = bound
        self.scalars = scalars
        self.random: list[tuple[int, int]] = []
        # id -> [a generator the call drew from, its position before, counters drawn since]
        self.generators: dict | None = None

    def drew(self, generator, start: tuple[int, int], count: int) -> None:
        """Note `count` counters this call's thread reserved from `generator`, which stood at
        `start` before (kept from the first draw): what a retrace puts back."""
        if count:
            if self.generators is None:
                self.generators = {}
            self.generators.setdefault(id(generator), [generator, start, 0])[2] += count

    def storage(self, slot: int) -> Storage:
        s = self.bound[slot]
        if s is None:
            s = self.bound[slot] = self.plan.slots[slot].new_storage()
        return s

    def impl(self, view: View) -> TensorImpl:
        device = self.plan.slots[view.buffer].device
        storage = self.storage(view.buffer)
        impl = _impl(storage, view.shape, view.strides, view.offset, view.dtype, device)
        return impl if type(storage) is not Window else unwindowed(impl)


_impl = TensorImpl.of_tuples


def _layout_only(view: View, slots: list[Slot]) -> TensorImpl:
    """An impl with a view's layout and no memory, for planning what a launch would run."""
    return TensorImpl(
        None, view.shape, view.strides, view.offset, view.dtype, slots[view.buffer].device
    )


@dataclass(slots=True)
class KernelCall:
    """One launch of a (fused) elementwise kernel or reduction."""

    template: eager.Template
    outs: list[View]
    ins: list[View]
    params: list  # per parameter slot: a value or a source
    covers: list[str]
    axes: tuple[int, ...] | None = None  # a reduction's; None for elementwise
    # per thread count: the launch with its words fixed (shapes never change within a
    # plan), and, where it needs no scratch, its argument block with the addresses left 0
    prepared: tuple[int, eager.Prepared | None, array.array | None] | None = None
    pointers: list[tuple[int, int]] | None = None  # per operand: (slot, byte offset)
    param_words: list[int] | None = None  # constants' words; the call's values fill `dynamic`
    dynamic: list[tuple[int, object, DType]] | None = None
    streaming: bool = True  # False inside a row group, where the next kernel reads the rows
    fetch: bool = True  # a large reduction's own prefetch (eager._fetching); off where a
    # later member of its row group prefetches the rows for it
    reference: list[KernelCall] = field(default_factory=list)  # the ops it fuses, unfused

    launches_kernels = True

    def views(self) -> list[View]:
        return self.outs + self.ins

    def _impls(self, slots: list[Slot]) -> tuple[list[TensorImpl], list[TensorImpl]]:
        """Memoryless impls of the outputs and inputs: their layouts, for planning."""
        return [_layout_only(v, slots) for v in self.outs], [
            _layout_only(v, slots) for v in self.ins
        ]

    def _prepare(self, slots: list[Slot], threads: int):
        outs, ins = self._impls(slots)
        self.pointers = [(v.buffer, v.offset * v.dtype.itemsize) for v in self.outs + self.ins]
        dtypes = self.template.kernel.params
        self.param_words = [
            0 if type(s) in (ArgScalar, RandomWord) else eager.param_word(s, d)
            for s, d in zip(self.params, dtypes)
        ]
        self.dynamic = [
            (i, s, d)
            for i, (s, d) in enumerate(zip(self.params, dtypes))
            if type(s) in (ArgScalar, RandomWord)
        ]
        prepared = eager.prepare(
            self.template, outs, ins, self.axes, self.streaming, fetch=self.fetch, optimized=True
        )
        block = None
        if prepared is not None and prepared.scratch is None:
            block = array.array("q", self.template_words(prepared))
        self.prepared = (threads, prepared, block)
        return self.prepared

    def layout(self, slots: list[Slot]) -> eager.Prepared | None:
        """The launch as `ready` would prepare it, with no code compiled (fn is None)."""
        outs, ins = self._impls(slots)
        return eager.prepare(
            self.template, outs, ins, self.axes, self.streaming, compile=False, fetch=self.fetch
        )

    def specialized(self, slots: list[Slot]) -> Kernel | Reduction:
        """The kernel as this step launches it: specialized for its operands' layouts (not
        compiled by asking)."""
        outs, ins = self._impls(slots)
        return eager.specialized(self.template, outs, ins, self.axes, self.streaming, self.fetch)

    @property
    def kernel(self) -> Kernel | Reduction:
        return self.template.kernel

    def ready(self, slots: list[Slot]) -> eager.Prepared | None:
        """The prepared launch for the current thread count (None: it runs through eager)."""
        return self._ready(slots)[1]

    def _ready(self, slots: list[Slot]) -> tuple:
        threads = get_num_threads()
        prepared = self.prepared
        if prepared is None or prepared[0] != threads:
            prepared = self._prepare(slots, threads)
        return prepared

    def operands(self, call: Call) -> tuple[list[int], list[int]]:
        """This call's operand addresses and parameter words."""
        bound = call.bound
        pointers = [(bound[s] or call.storage(s)).ptr + offset for s, offset in self.pointers]
        words = self.param_words
        if self.dynamic:
            words = list(words)
            for i, source, dtype in self.dynamic:
                words[i] = eager.param_word(source.value(call), dtype)
        return pointers, words

    def fetch_ahead(self, index: int, distance: int) -> None:
        """Launch the variant of the kernel that prefetches input `index` `distance`
        elements ahead of its reads (kernel.prefetching)."""
        self._launch_variant(prefetching(self.template.kernel, index))
        self.params = self.params + [distance]

    def defer_fence(self) -> None:
        """Launch the variant of the kernel whose streaming stores its caller publishes
        (the row driver: one fence after all its chunks, kernel.Kernel.fenced)."""
        self._launch_variant(dataclasses.replace(self.template.kernel, fenced=False))

    def _launch_variant(self, kernel: Kernel | Reduction) -> None:
        self.template = eager.fused_template(kernel)
        self.prepared = None

    def run_reference(self, call: Call) -> None:
        """The ops it fuses, one eager kernel each (what check=True compares with)."""
        for op in self.reference:
            op.run(call)

    def compared(self) -> list[KernelCall]:
        """What check=True compares after a run: this kernel's outputs."""
        return [self]

    def patched(self, template: array.array, call: Call, local=()) -> array.array:
        """A copy of the prebuilt argument block with this call's addresses and parameters;
        the words of `local` slots (a row group's chunk scratch) are left to the driver."""
        block = template[:]
        self.patch(block, call, 0, len(block), local=local)
        return block

    def patch(
        self, block: array.array, call: Call, start: int, end: int, shifts=None, local=()
    ) -> None:
        """Write this call's operand addresses (each moved by `shifts` bytes, for a slice of
        the operands) and run-time parameters into block[start:end], this kernel's words."""
        bound = call.bound
        for i, (s, offset) in enumerate(self.pointers):
            if s in local:
                continue
            moved = shifts[i] if shifts else 0
            block[start + i] = (bound[s] or call.storage(s)).ptr + offset + moved
        if self.dynamic:
            at = end - len(self.param_words)
            for k, source, dtype in self.dynamic:
                block[at + k] = eager.param_word(source.value(call), dtype)

    def template_words(self, prepared: eager.Prepared, scratch: bool = True) -> list[int]:
        """`prepared`'s argument words with the addresses left 0 and the constant
        parameters filled in: what `patch` completes per call (`scratch` False: a
        reduction's scratch addresses left 0 too, for a row driver to store)."""
        return prepared.words([0] * len(self.pointers), self.param_words, scratch)[0]

    def run(self, call: Call) -> None:
        _, p, template = self._ready(call.plan.slots)
        if template is not None:
            launch_block(
                p.fn, self.patched(template, call), p.total, p.moved, p.align, shape=p.shape
            )
            return
        if p is not None:  # a launch with scratch (a reduction over several blocks)
            p.launch(*self.operands(call))
            return
        outs = [call.impl(v) for v in self.outs]
        ins = [call.impl(v) for v in self.ins]
        names = self.template.scalars
        scalars = {name: _value(s, call) for name, s in zip(names, self.params)} if names else None
        if self.axes is None:
            eager.run(self.template, outs, ins, scalars)
        else:
            axes, keepdim = self.axes
            eager.run_reduction(self.template, outs, ins, axes, keepdim, scalars)


@dataclass(slots=True)
class Alias:
    """Slot `dst` takes the storage of slot `src`: the next step writes its result over an
    intermediate it reads at the same positions and that nothing reads afterwards."""

    dst: int
    src: int
    launches_kernels = False

    def views(self) -> list[View]:
        return [View(self.src, (), (), 0, None), View(self.dst, (), (), 0, None)]

    def run(self, call: Call) -> None:
        call.bound[self.dst] = call.storage(self.src)


def reuse_in_place(steps: list, slots: list[Slot], live: set[int], earlier=frozenset()) -> list:
    """The steps with each elementwise kernel writing over a fresh intermediate it reads only
    at the same positions where that is the intermediate's last read (softmax's divide writes
    its result over the stored exp): one buffer fewer, and one less pass to memory. Never
    where the output buffer holds values already: read by the kernel itself, or touched by
    a step before (`earlier`: the plan's steps before these; y.add_(...) after y = a @ b)."""
    out: list = []
    for i, step in enumerate(steps):
        if type(step) is KernelCall and step.axes is None and len(step.outs) == 1:
            dst = step.outs[0]
            later = {v.buffer for s in steps[i + 1 :] for v in s.views()}
            for v in step.ins:
                src = v.buffer
                if (
                    src != dst.buffer
                    and slots[src].kind == FRESH
                    and slots[dst.buffer].kind == FRESH
                    and slots[src].nbytes == slots[dst.buffer].nbytes
                    and all(u.same_positions(dst) for u in step.ins if u.buffer == src)
                    and src not in later
                    and src not in live
                    and dst.buffer not in {w.buffer for s in steps[:i] for w in s.views()}
                    and dst.buffer not in earlier
                    and all(u.buffer != dst.buffer for u in step.ins)
                ):
                    out.append(Alias(dst.buffer, src))
                    break
        out.append(step)
    return out


@dataclass(slots=True)
class RowGroup:
    """Kernels run one row at a time by the row driver (codegen/cpu/rowdriver.py): a
    reduction over rows and the kernels that read its result at the same rows, so each
    row comes from memory once. Each member is the KernelCall it would be alone. A
    reduction over rows longer than one block (ir/reduction.py BLOCK) runs as two of the
    driver's kernels: its blocks, with their partials in the chunk scratch, then its tree."""

    members: list[KernelCall]
    rows: int
    per_row: list[int]  # each member's output elements per row (a reduction's: 1)
    chunk: int = 1  # rows per driver work item: as many as stay in cache together
    row_bytes: int = 0  # the widest row a member reads or writes
    # per thread count: per member (prebuilt block, function address, tree address or
    # None, blocks a row), and bytes moved; or None where a layout changed and they run apart
    prepared: tuple | None = None
    # values only the members write and read: slot -> (byte offset in the driver's chunk
    # scratch, bytes a row), never in memory of their own (scratch_bytes in all)
    local: dict[int, tuple[int, int]] = field(default_factory=dict)
    scratch_bytes: int = 0
    # member index -> its partials' and index scratch's (byte offset, bytes a row), at the
    # start of the chunk scratch (partial_bytes of it)
    partials: dict[int, tuple[tuple[int, int], tuple[int, int]]] = field(default_factory=dict)
    partial_bytes: int = 0
    launches_kernels = True

    def patches(self, k: int, local) -> list[tuple[int, int, int]]:
        """(block word, scratch offset, bytes a row) of member k's chunk-local operands
        (those of `local`) and partials: what the driver stores into its copy of the block
        before each chunk."""
        member = self.members[k]
        out = []
        for word, (slot, offset) in enumerate(member.pointers):
            if slot in local:
                at, row_bytes = local[slot]
                out.append((word, at + offset, row_bytes))
        if k in self.partials:  # the two scratch words follow the operands' addresses
            values, indices = self.partials[k]
            out += [(len(member.pointers), *values), (len(member.pointers) + 1, *indices)]
        return out

    def records(self, ready: list, local) -> list[tuple[KernelCall, tuple]]:
        """The driver's kernels in order, each with its member: (function address, block
        template, work items a row, patches), as rowdriver.words takes them. A member
        reducing each row in several blocks runs twice: its blocks, then its tree (one
        item a row)."""
        out = []
        for k, (m, (template, main, tree, blocks)) in enumerate(zip(self.members, ready)):
            patches = self.patches(k, local)
            if tree is None:
                out.append((m, (main, template, self.per_row[k], patches)))
            else:
                out += [(m, (main, template, blocks, patches)), (m, (tree, template, 1, patches))]
        return out

    def views(self) -> list[View]:
        return [v for m in self.members for v in m.outs + m.ins]

    def traffic(self, slots: list[Slot], local) -> int:
        """Bytes the group moves to and from memory: each buffer outside the chunk scratch
        (`local`) once, at most its size (softmax 4096x4096: 128 MiB, where the members'
        own counts add up to 512)."""
        touched: dict[int, int] = {}
        for v in self.views():
            if v.buffer not in local:
                size = min(numel(v.shape) * v.dtype.itemsize, slots[v.buffer].nbytes)
                touched[v.buffer] = max(touched.get(v.buffer, 0), size)
        return sum(touched.values())

    def run_reference(self, call: Call) -> None:
        for m in self.members:
            m.run_reference(call)

    def compared(self) -> list[KernelCall]:
        return self.members

    def _ready(self, slots: list[Slot]) -> tuple:
        threads = get_num_threads()
        prepared = self.prepared
        if prepared is None or prepared[0] != threads:
            ready = [m._ready(slots) for m in self.members]
            found = [p for _, p, _ in ready]
            members = []
            for m, (_, p, block) in zip(self.members, ready):
                if p is not None and p.final is not None:  # several blocks a row
                    block = array.array("q", m.template_words(p, scratch=False))
                    members.append((block, p.fn.address, p.final.address, p.blocks))
                elif block is not None:
                    members.append((block, p.fn.address, None, 1))
            if len(members) < len(ready) or _row_items(self.members, found) != self.per_row:
                prepared = (threads, None)  # a new thread count changed a layout
            else:
                prepared = (threads, (members, sum(p.moved for p in found)))
            self.prepared = prepared
        return prepared

    @property
    def covers(self) -> list[str]:
        return [name for m in self.members for name in m.covers]

    @property
    def kernel(self) -> tuple[Kernel | Reduction, ...]:
        """The member kernels, which the driver runs row by row as one launch."""
        return tuple(m.kernel for m in self.members)

    def specialized(self, slots: list[Slot]) -> tuple[Kernel | Reduction, ...]:
        """The member kernels as the driver launches them."""
        return tuple(m.specialized(slots) for m in self.members)

    def run(self, call: Call, whole: bool = False) -> None:
        """One launch of the driver; `whole`: every value in a buffer of its own, none in the
        chunk scratch (check=True compares each member's outputs)."""
        ready = self._ready(call.plan.slots)[1]
        if ready is None:
            for m in self.members:
                m.run(call)
            return
        from kael.codegen.cpu import rowdriver

        members, moved = ready
        local = {} if whole else self.local
        records = [
            (address, m.patched(template, call, local), per_row, patches)
            for m, (address, template, per_row, patches) in self.records(members, local)
        ]
        scratch = self.scratch_bytes if local else self.partial_bytes
        words, _ = rowdriver.words(self.chunk, self.rows, scratch, records)
        chunks = -(-self.rows // self.chunk)
        members = traffic = None
        if launches.watched():  # the record shows the members and the bytes memory moves
            members = self.specialized(call.plan.slots)
            traffic = self.traffic(call.plan.slots, local)
        launch(rowdriver.driver(), words, chunks, moved, 1, shape=(self.rows,), kernel=members,
               recorded_bytes=traffic)  # fmt: skip


def _per_element(kernel: Kernel | Reduction) -> tuple:
    """The expressions a kernel computes for every element it reads: a reduction's
    prologues (its epilogues run once per output)."""
    if isinstance(kernel, Reduction):
        return (kernel.prologue,) + (() if kernel.second is None else (kernel.second,))
    return kernel.exprs


# A row whose bytes exceed this is not run by the row driver: it would not stay in the L2
# beside its chunk-local values between the group's kernels (softmax over rows of 128K
# float32: 0.62x the time of four kernels apart; of 256K, still 0.93x, of 1M, 1.1x). The
# driver takes rows in chunks of about CHUNK_BYTES.
ROW_BYTES = 512 * 1024
CHUNK_BYTES = 32 * 1024  # well inside L1 + L2 beside the next chunk it prefetches


def _row_items(members: list[KernelCall], prepared: list) -> list[int] | None:
    """Each member's work items per row when all of them walk the same rows in order: the
    reductions one output per item (one block each), the elementwise kernels the row's
    elements or one value a row (what reads the reductions' results alone)."""
    rows = length = None
    for p in prepared:
        if p.walk == eager.OUTPUTS:
            if rows is not None and (p.outputs, p.length) != (rows, length):
                return None
            rows, length = p.outputs, p.length
    if rows is None or rows < 2:
        return None
    items = []
    for p in prepared:
        if p.walk == eager.OUTPUTS:
            items.append(1)
        elif p.walk == eager.ELEMENTS and p.total == rows * length:
            items.append(length)
        elif p.walk == eager.ELEMENTS and p.total == rows:  # one value a row (logsumexp's +)
            items.append(1)
        else:
            return None
    return items


def _row_aligned(view: View, rows: int, per_row: int, written_per_row: int) -> bool:
    """Whether a reader walking `per_row` items a row reads, at row r, only row r of a buffer
    written `written_per_row` elements a row: its outer dims step by whole written rows and
    its inner dims stay inside one."""
    shape, strides = view.shape, view.strides
    k, inner = len(shape), 1
    while k > 0 and inner < per_row:
        k -= 1
        inner *= shape[k]
    if inner != per_row or view.offset != 0:
        return False
    step = written_per_row
    for d in range(k - 1, -1, -1):
        if shape[d] != 1 and strides[d] != step:
            return False
        step *= shape[d]
    reach = sum((shape[d] - 1) * strides[d] for d in range(k, len(shape)))
    return all(strides[d] >= 0 for d in range(k, len(shape))) and reach < written_per_row


def group_rows(steps: list, slots: list[Slot], live=frozenset()) -> list:
    """The steps with each run of KernelCalls that can share the row driver as one RowGroup:
    it holds a reduction, every member walks the same rows, and a value one member writes
    is read by later members only at the row being computed. Values only the members use
    (not in `live`, read by no other step) live in the driver's chunk scratch."""
    out: list = []
    layouts: dict[tuple, eager.Prepared | None] = {}  # each member's, asked once per span
    i = 0
    while i < len(steps):
        best = None
        for j in range(i + 2, len(steps) + 1):
            members = [s for s in steps[i:j] if type(s) is not Alias]
            if type(steps[j - 1]) is Alias:
                continue
            if type(steps[j - 1]) is not KernelCall or type(steps[i]) is not KernelCall:
                break
            group = _as_group(members, slots, layouts)
            if group is not None:
                best = group
        if best is None:
            out.append(steps[i])
            i += 1
            continue
        span = i  # the group stands for its members and the aliases between them
        found = 0
        while found < len(best.members):
            found += type(steps[span]) is not Alias
            span += 1
        if CHUNK_LOCAL:
            _chunk_local(best, steps, i, span, slots, live)
        # an alias onto a chunk-local value would put a later result in scratch: dropped,
        # the result gets memory of its own
        out += [a for a in steps[i:span] if type(a) is Alias and a.src not in best.local]
        _fetch_ahead(best, slots)
        if _streams(best.members[-1], slots):
            best.members[-1].defer_fence()
        out.append(best)
        i = span
    return out


def _chunk_local(
    group: RowGroup, steps: list, first: int, span: int, slots: list[Slot], live
) -> None:
    """Give `group` the values one member writes and only later members read (softmax's
    exp and row maxima, var's mean): FRESH, not `live`, touched by no step outside the
    group, no alias's target. Each takes chunk x its bytes a row of the driver's scratch,
    and the chunk shrinks so that its rows and their local values fit CHUNK_BYTES together
    (softmax 4096x4096: one row and its exp, 0.98x the time of two rows and theirs)."""
    outside = {v.buffer for st in steps[:first] + steps[span:] for v in st.views()}
    aliased = {a.dst for a in steps[first:span] if type(a) is Alias}
    writers: dict[int, int] = {}
    for k, m in enumerate(group.members):
        for v in m.outs:
            writers[v.buffer] = k if v.buffer not in writers else -1  # -1: written twice
    local = []  # (slot, bytes a row)
    for slot, k in writers.items():
        if k < 0 or slots[slot].kind != FRESH or slot in live or slot in outside or slot in aliased:
            continue
        readers = [j for j, m in enumerate(group.members) for v in m.ins if v.buffer == slot]
        if any(j <= k for j in readers):
            continue
        view = next(v for v in group.members[k].outs if v.buffer == slot)
        local.append((slot, group.per_row[k] * view.dtype.itemsize))
    if local and not group.partials:  # (partials come with rows past CHUNK_BYTES: chunk 1)
        together = group.row_bytes + sum(row_bytes for _, row_bytes in local)
        group.chunk = max(1, min(group.chunk, CHUNK_BYTES // max(together, 1)))
    offset = group.partial_bytes
    for slot, row_bytes in local:
        size = -(-group.chunk * row_bytes // 64) * 64  # each on its own cache lines
        if offset + size > LOCAL_BYTES:
            continue  # the driver's stack holds so much at most; the rest stay in memory
        group.local[slot] = (offset, row_bytes)
        offset += size
    group.scratch_bytes = offset


# Switches for in-process A/B measurements (benchmarks, tests): a later member that streams
# its output prefetches the next chunk; values only a group uses live in chunk scratch.
_PREFETCH_STREAMING = True
CHUNK_LOCAL = True
# The most chunk scratch one driver call takes on its thread's stack (worker threads have
# megabytes; a row is at most ROW_BYTES, so the first local value always fits).
LOCAL_BYTES = 1 << 20


def _streams(member: KernelCall, slots: list[Slot]) -> bool:
    """Whether an elementwise member writes its output with streaming stores."""
    if member.axes is not None or not member.streaming:
        return False
    return getattr(member.specialized(slots), "nontemporal", False)


def _fetch_ahead(group: RowGroup, slots: list[Slot]) -> None:
    """Let one later member that reads what the group's first kernel streams from memory
    (a dense input the group does not write, at the same positions) prefetch it into L2
    one chunk of rows ahead: the next chunk arrives while this one is computed on. The
    first such member that runs vector math (exp, erf, ...) is chosen (softmax 0.80-0.89x
    the time), else a last member writing its output with streaming stores (RMSNorm's
    x * r * w: its stores and the next chunk's loads share the memory bus instead of
    taking turns, 0.88x), else, where the rows are large enough for a lone reduction to
    fetch them ahead (eager.FETCH_FROM_BYTES), any later member (var's squared deviations,
    0.85x the time, where the first member's own prefetch no longer overlaps anything)."""
    first = group.members[0]
    rest = group.members[1:]
    later = [m for m in rest if any(costly(e) for e in _per_element(m.kernel))]
    last = rest[-1] if rest else None
    if _PREFETCH_STREAMING and last is not None and last not in later and _streams(last, slots):
        later.append(last)
    written = {v.buffer for m in group.members for v in m.outs}
    streamed = [
        v
        for v in first.ins
        if v.buffer not in written
        and v.offset == 0
        and v.strides == contiguous_strides(v.shape)
        and numel(v.shape) % group.rows == 0
    ]
    if any(numel(v.shape) * v.dtype.itemsize >= eager.FETCH_FROM_BYTES for v in streamed):
        later += [m for m in rest if m not in later]
    for m in later:
        for i, u in enumerate(m.ins):
            for v in streamed:
                if u.buffer == v.buffer and u.same_positions(v) and u.shape == v.shape:
                    m.fetch_ahead(i, group.chunk * (numel(v.shape) // group.rows))
                    # the first member's own prefetch would fetch the same rows again
                    # (softmax: 1.1x the time with both)
                    first.fetch, first.prepared = False, None
                    return


def _as_group(members: list[KernelCall], slots: list[Slot], layouts: dict) -> RowGroup | None:
    """The members as one row group, or None. `layouts` memoizes each member's launch
    layout (by the member and the flags a formed group changes) across group_rows's
    spans, which ask for the same members again and again."""
    prepared = []
    for m in members:
        key = (id(m), m.streaming, m.fetch)  # a member's template changes only once grouped
        if key not in layouts:
            layouts[key] = m.layout(slots)
        prepared.append(layouts[key])
    if any(p is None for p in prepared):
        return None
    items = _row_items(members, prepared)
    if items is None:
        return None
    first = prepared[0]
    rows = first.outputs if first.walk == eager.OUTPUTS else first.total // items[0]
    # elements a member reads per row: a reduction its reduced length, not its one item
    length = max(p.length if p.walk == eager.OUTPUTS else n for p, n in zip(prepared, items))
    row_bytes = length * max(v.dtype.itemsize for m in members for v in m.ins + m.outs)
    if row_bytes > ROW_BYTES:
        return None
    for m in members:  # a reduction's work item must be a run of its input's trailing dims
        if m.axes is not None:
            axes, _ = m.axes
            rank = len(m.ins[0].shape)
            if sorted(a % rank for a in axes) != list(range(rank - len(axes), rank)):
                return None
    written: dict[int, int] = {}
    for m, p, per_row in zip(members, prepared, items):
        reads = p.length if p.walk == eager.OUTPUTS else per_row  # input elements a row
        for v in m.ins:
            if v.buffer in written and not _row_aligned(v, rows, reads, written[v.buffer]):
                return None
        for v in m.outs:
            size = 1
            for s in v.shape:
                size *= s
            if v.offset != 0 or v.strides != contiguous_strides(v.shape) or size != rows * per_row:
                return None
            written[v.buffer] = per_row
    for m in members:  # a read before the write in another layout would see the new rows
        for v in m.ins:
            if v.buffer in written and slots[v.buffer].kind != FRESH:
                return None
    chunk = max(1, min(CHUNK_BYTES // max(row_bytes, 1), -(-rows // (4 * get_num_threads()))))
    for m in members[:-1]:  # their rows are read again from the caches: no streaming stores
        if m.streaming:
            m.streaming, m.prepared = False, None
    for m in members[1:]:  # they read the rows from the caches (or chunk scratch): no prefetch
        if m.fetch:
            m.fetch, m.prepared = False, None
    group = RowGroup(list(members), rows, items, chunk, row_bytes=row_bytes)
    _chunk_partials(group, prepared)
    return group


def _chunk_partials(group: RowGroup, prepared: list) -> None:
    """Give each member that reduces a row in several blocks its partials (one accumulator a
    block) and index scratch (one word a partial for arg ops and paired sums, else one word)
    at the start of the driver's chunk scratch, each on cache lines of its own."""
    offset = 0
    for k, p in enumerate(prepared):
        if p.walk != eager.OUTPUTS or p.blocks == 1:
            continue
        value_row = p.scratch[0] // p.outputs  # as eager sizes them for the whole launch
        index_row = p.scratch[1] // p.outputs if p.paired else 0
        spans = []
        for row_bytes in (value_row, index_row):
            spans.append((offset, row_bytes))
            offset += -(-max(8, group.chunk * row_bytes) // 64) * 64
        group.partials[k] = tuple(spans)
    group.partial_bytes = group.scratch_bytes = offset


@dataclass(slots=True)
class ExternCall:
    """An op kael runs as it would eagerly (a hand-written kernel, host work), on tensors
    over the plan's slots; each output tensor binds its slot."""

    name: str
    fn: object
    args: pytree.TreeDef
    leaves: list  # View (a tensor), ArgScalar, or a constant
    outs: pytree.TreeDef
    out_leaves: list  # (View, binds a new slot) for tensors, else the constant
    shaped: bool = False  # its Python read values: its output shapes may follow them
    retraces: bool = False  # a change of its output shapes traces the call again
    ints: bool = False  # it is given dynamic ints (tracing.SymInt): their values per call
    # x[t] for a 0-d integer tensor t whose row is a window: (t's view, the window's view,
    # the slot it shows, dim 0's size and byte stride, the row the trace took); each call
    # reads t and binds the window itself, without getitem's Python (Trace._fast_select)
    select: tuple | None = None
    # (positional arguments, keyword arguments, ((position, leaf), ...), ((keyword, leaf),
    # ...)) where every tensor and run-time leaf is a whole argument and no argument is a mutable
    # container (layer_norm(x, (C,), w, b, eps)): a call fills those in instead of rebuilding
    # the tree (_direct_call); the kael.Generators it is given (draw_marks)
    direct: tuple | None = field(init=False, default=None)
    generators: tuple = field(init=False, default=())
    passed: tuple = field(init=False, default=())  # the leaves a call passes whole: a generator?
    launches_kernels = False

    def __post_init__(self) -> None:
        from kael.frontend.random import Generator

        self.direct = _direct_call(self.args, self.leaves)
        self.generators = tuple(v for v in self.leaves if type(v) is Generator)
        self.passed = tuple(v for v in self.leaves if type(v) is ArgScalar and not v.conversions)

    def drawn_from(self, call: Call) -> tuple:
        """The kael.Generators this call of the step is given: its constants' and those of
        the call's arguments passed to it."""
        from kael.frontend.random import Generator

        given = (v.of(call.scalars) for v in self.passed)
        return self.generators + tuple(g for g in given if type(g) is Generator)

    def views(self) -> list[View]:
        return leaf_views(self.leaves) + [s[0] for s in self.out_leaves if type(s) is tuple]

    def run(self, call: Call) -> None:
        from kael.frontend.random import draw_marks

        if self.select is not None and self._selected(call):
            return
        direct = self.direct
        if direct is None:
            leaves = [_resolved(v, call) for v in self.leaves]
            args, kwargs = pytree.unflatten(self.args, leaves)
        else:
            given, kwargs, positional, keywords = direct
            args = list(given)
            for i, v in positional:
                args[i] = _resolved(v, call)
            if keywords:
                kwargs = dict(kwargs)
                for name, v in keywords:
                    kwargs[name] = _resolved(v, call)
        # its own draws (multinomial, randperm): a retrace's to undo
        marks = draw_marks(self.drawn_from(call) if self.passed else self.generators)
        result = self.fn(*args, **kwargs)
        for g, start, drawn in marks:
            call.drew(g, start, g.drawn_here() - drawn)
        got = (result,) if self.outs == pytree.LEAF else pytree.flatten(result)[0]
        slots = call.plan.slots
        for value, spec in zip(got, self.out_leaves):
            if type(spec) is not tuple:
                continue
            view, new = spec
            impl = value._impl
            slot = slots[view.buffer]
            if slot.kind == WINDOW and self._windows(call, view, impl, slot.base):
                continue
            if (impl.shape, impl.strides, impl.offset) != (view.shape, view.strides, view.offset):
                if self.retraces:
                    raise Retrace(self.name, call, self.ints)
                raise Error(
                    f"{self.name} returned a tensor of shape {list(impl.shape)} where its trace "
                    f"returned {list(view.shape)}: its output follows the data, and after an "
                    "in-place write to an argument the call cannot be traced again"
                )
            if new:
                call.bound[view.buffer] = impl.storage

    def _selected(self, call: Call) -> bool:
        """x[t]'s window bound from t's value read here (IndexError as eager's where it is
        out of range); False where this call's memory is not the trace's kind (no CPU
        integer in t, or the row past the base): getitem then runs as any extern."""
        key, view, base, size, step, traced = self.select
        key_impl, shown = call.impl(key), call.bound[base]
        reader = _INTEGER_READERS.get(key_impl.dtype)
        if shown is None or reader is None or key_impl.device is not CPU:
            return False
        value = reader.from_address(key_impl.data_ptr()).value
        if not -size <= value < size:  # kael's IndexError, as eager getitem raises
            raise KaelIndexError(f"index {value} is out of bounds for dimension 0 with size {size}")
        shift = ((value + size if value < 0 else value) - traced) * step
        if type(shown) is Window:  # x itself found at a call's place
            shift += shown.shift
        return _bind_window(call, view, real(shown), shift)

    @staticmethod
    def _windows(call: Call, view: View, impl: TensorImpl, base: int) -> bool:
        """Bind a WINDOW slot to where this call's view lies (the extern made it, or was
        given it and returned it: out=), if it has the trace's layout over the memory of
        the slot it shows (else the call is checked as any other)."""
        shown = call.bound[base]
        if (
            shown is None
            or impl.storage is not real(shown)
            or (impl.shape, impl.strides, impl.dtype) != (view.shape, view.strides, view.dtype)
        ):
            return False
        return _bind_window(
            call, view, impl.storage, (impl.offset - view.offset) * view.dtype.itemsize
        )


def _bind_window(call: Call, view: View, storage: Storage, shift: int) -> bool:
    """Bind the WINDOW slot of `view` to `storage` seen `shift` bytes on, unless a view of
    it the plan takes would then reach past the storage (Plan.reach): False, and the call
    is checked as any other."""
    lo, hi = call.plan.reach.get(view.buffer, (0, 0))
    if lo + shift < 0 or hi + shift > storage.nbytes:
        return False
    call.bound[view.buffer] = Window(storage, shift)
    return True


# The C integer type of each dtype a 0-d index tensor may have (indexing.INT_KEYS).
_INTEGER_READERS = {
    int64: ctypes.c_int64,
    int32: ctypes.c_int32,
    int16: ctypes.c_int16,
    int8: ctypes.c_int8,
}


def leaf_views(leaves) -> list[View]:
    """The views among an extern's leaves, those inside a Derived's parts too."""
    found = []
    for v in leaves:
        if type(v) is View:
            found.append(v)
        elif type(v) is Derived:
            found += leaf_views(v.parts)
    return found


def _runtime(leaf) -> bool:
    """Whether an extern's leaf takes its value per call: a tensor over a slot, a scalar
    argument or a random word."""
    return type(leaf) is View or type(leaf) in _CALL_SOURCES


def _resolved(leaf, call: Call):
    """An extern's leaf as this call passes it: a tensor over its slot, else its value."""
    return _trusted(call.impl(leaf)) if type(leaf) is View else _value(leaf, call)


# Arguments a call of an extern must build afresh: containers the callee may change.
_MUTABLE = (list, dict, collections.deque, *pytree.MAPPINGS)


def _mutable(value) -> bool:
    """Whether an argument is, or holds inside its tuples, a container the callee may change."""
    if isinstance(value, tuple):
        return any(_mutable(v) for v in value)
    return isinstance(value, _MUTABLE)


def _leaf_count(treedef: pytree.TreeDef) -> int:
    if treedef == pytree.LEAF:
        return 1
    return sum(_leaf_count(child) for child in treedef[2])


def _direct_call(treedef: pytree.TreeDef, leaves: list) -> tuple | None:
    """ExternCall.direct for a call flattened to `treedef` over `leaves`, or None where a
    run-time leaf sits inside an argument (cat's list of tensors) or an argument is
    mutable. Arguments of constants are built from their leaves as unflatten builds them."""
    if treedef[0] == "args":  # plain positional arguments, every one a leaf
        children, keys = [pytree.LEAF] * treedef[1], ()
    else:
        (_, _, children), (_, keys, kw_children) = treedef[2]
        children = [*children, *kw_children]
    built, fills, at = [], [], 0
    for position, child in enumerate(children):
        n = _leaf_count(child)
        part = leaves[at : at + n]
        at += n
        if child == pytree.LEAF and _runtime(part[0]):
            built.append(None)
            fills.append((position, part[0]))
            continue
        if any(_runtime(v) for v in part):
            return None
        value = part[0] if child == pytree.LEAF else pytree.unflatten(child, part)
        if _mutable(value):
            return None
        built.append(value)
    given = len(children) - len(keys)
    kwargs = dict(zip(keys, built[given:]))
    positional = tuple((p, leaf) for p, leaf in fills if p < given)
    keywords = tuple((keys[p - given], leaf) for p, leaf in fills if p >= given)
    return tuple(built[:given]), kwargs, positional, keywords


class Retrace(Exception):  # noqa: N818 - caught by CompiledFunction, never seen by users
    """An extern's output shapes differ from the trace's: trace the call again (nothing the
    caller can see was written before it), once the random streams are put back."""

    def __init__(self, name: str, call: Call, ints: bool = False) -> None:
        super().__init__(name)
        self.generators = call.generators or {}
        self.ints = ints  # the extern was given dynamic ints: their values shaped it

    def rewind(self) -> None:
        """Put back what the call drew from each generator, unless another thread drew from
        it meanwhile (its draws are never repeated; this call's draw anew)."""
        for generator, start, count in self.generators.values():
            generator.rewind(start, count)


@dataclass(slots=True)
class Reserve:
    """Random counters reserved from the default generator, in eager's order."""

    count: int
    launches_kernels = False

    def views(self) -> list[View]:
        return []

    def run(self, call: Call) -> None:
        from kael.frontend.random import default_generator, reserve_words
        from kael.frontend.tracing import random_hook

        hook = random_hook.reserve  # a kael.vmap randomness mode around this call
        seed, first = reserve_words(self.count) if hook is None else hook(self.count, None)
        call.random.append((seed, first))
        call.drew(default_generator, (seed % (1 << 64), first % (1 << 64)), self.count)


@dataclass(slots=True)
class Seed:
    """generator.manual_seed(seed) (set_state: and `offset`) where the traced function
    called it, between the steps that draw before and after; `generator` is an ArgScalar
    where the function was given it."""

    generator: object
    seed: int
    offset: int = 0
    launches_kernels = False

    def views(self) -> list[View]:
        return []

    def run(self, call: Call) -> None:
        _value(self.generator, call).restore(self.seed, self.offset)


@dataclass(slots=True)
class Plan:
    """The steps of one traced call signature, and how to build its results."""

    slots: list[Slot] = field(default_factory=list)
    steps: list = field(default_factory=list)
    outputs: pytree.TreeDef = pytree.LEAF
    out_leaves: list = field(default_factory=list)  # View for a tensor, else the constant
    # per result leaf, the first leaf holding the same traced tensor (a tensor returned
    # twice is one object, as eagerly); None where every tensor is returned once
    same: list[int] | None = None
    bumps: dict[int, int] = field(default_factory=dict)  # slot -> in-place writes
    release: list[list[int]] = field(default_factory=list)  # per step: slots freed after it
    fallback: str | None = None  # why this signature runs eagerly instead, if it does
    reach: dict = field(default_factory=dict)  # WINDOW slot -> (first, end) byte its views reach
    cuts: list = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)  # ops of kernels nobody read: dropped
    # filled by finish(): what each call starts from
    empty: list = field(default_factory=list)
    args: list[tuple[int, int]] = field(default_factory=list)
    relative: list[tuple[int, int, int]] = field(default_factory=list)  # (slot, arg, origin)
    schedule: list = field(default_factory=list)  # (step, slots freed after it or None)
    single: bool = False  # whether the result is one tensor and nothing needs bumping
    implicit: list = field(default_factory=list)  # the storages of the IMPLICIT slots
    replay: replay_module.Replay | None = None  # the call written out (frontend/replay.py)
    replay_tried: int = 0  # the thread count replay was last built for (0: never)

    @property
    def kernel_steps(self) -> list:
        """The launches of kernels: each KernelCall, each RowGroup as one launch, and each
        matrix product with its epilogue."""
        return [s for s in self.steps if s.launches_kernels]

    def finish(self) -> None:
        """Drop the kernels whose results nobody reads, then work out, once, after which
        step each intermediate slot can be freed."""
        self._drop_unread()
        self._check_reach()
        self._window_reach()
        last: dict[int, int] = {}
        for i, step in enumerate(self.steps):
            for v in step.views():
                last[v.buffer] = i
        keep = {v.buffer for v in self.out_leaves if type(v) is View}
        self.release = [[] for _ in self.steps]
        for slot, i in last.items():
            if self.slots[slot].kind in (FRESH, EXTERN, WINDOW) and slot not in keep:
                self.release[i].append(slot)
        self.empty = [None] * len(self.slots)
        for i, slot in enumerate(self.slots):
            if slot.kind == IMPLICIT:
                self.empty[i] = slot.storage
        self.implicit = [slot.storage for slot in self.slots if slot.kind == IMPLICIT]
        self.args = [(i, slot.arg) for i, slot in enumerate(self.slots) if slot.kind == ARG]
        self.relative = [
            (i, slot.arg, slot.origin)
            for i, slot in enumerate(self.slots)
            if slot.kind == ARG and slot.origin is not None
        ]
        self.schedule = [(s, r) if r else (s, None) for s, r in zip(self.steps, self.release)]
        self.single = (
            self.outputs is pytree.LEAF and type(self.out_leaves[0]) is View and not self.bumps
        )

    def _check_reach(self) -> None:
        """Run this signature eagerly if a step's view reaches past the memory of an argument
        or an implicit input (a layout the trace changed under it): a plan must never read
        or write outside the storages a call passes."""
        for step in self.steps:
            for v in step.views():
                slot = self.slots[v.buffer]
                if slot.kind in (ARG, IMPLICIT) and _end_byte(v) > slot.nbytes:
                    self.fallback = self.fallback or (
                        f"a step's view of shape {list(v.shape)} reaches byte {_end_byte(v)} "
                        f"of a {slot.nbytes}-byte argument"
                    )
                    return

    def _window_reach(self) -> None:
        """Per WINDOW slot, the bytes the plan's views of it reach at the trace's offsets:
        a call binds the window only where they stay inside its base (ExternCall._windows)."""
        views = [v for step in self.steps for v in step.views()]
        views += [v for v in self.out_leaves if type(v) is View]
        for v in views:
            if self.slots[v.buffer].kind == WINDOW and 0 not in v.shape:
                lo, hi = byte_range(v)
                was = self.reach.get(v.buffer, (lo, hi))
                self.reach[v.buffer] = (min(lo, was[0]), max(hi, was[1]))

    def _drop_unread(self) -> None:
        """Remove each kernel (or row group) that writes only intermediates no later step
        reads and no result is (the rollback of an op that turned extern takes back the
        op's own steps; this catches what else a trace leaves unread). A kernel that may
        fault stays: its error is part of the call."""
        live = self._shown({v.buffer for v in self.out_leaves if type(v) is View})
        kept = []
        for step in reversed(self.steps):
            members = step.members if type(step) is RowGroup else [step]
            if type(step) in (KernelCall, RowGroup) and not any(
                m.template.kernel.may_fault
                or any(v.buffer in live or self.slots[v.buffer].kind != FRESH for v in m.outs)
                for m in members
            ):
                self.unread += [op for m in members for op in m.covers]
                continue
            live.update(self._shown({v.buffer for v in step.views()}))
            kept.append(step)
        self.steps = kept[::-1]

    def _shown(self, buffers: set[int]) -> set[int]:
        """`buffers` and the memory each WINDOW among them shows (its base, and so on): a
        window read later reads what a kernel writes into its base."""
        found = set(buffers)
        for b in buffers:
            while self.slots[b].kind == WINDOW:
                b = self.slots[b].base
                found.add(b)
        return found

    def run(self, tensors: list, scalars: list):
        """Run every step for one call and return its results: through the plan's replay
        (frontend/replay.py) where it has one for this thread count and nothing watches
        the launches, else step by step (and then write the replay)."""
        threads = get_num_threads()
        replay = self.replay
        quiet = launches.recorder is None and debug.level < 1
        if replay is not None and replay.threads == threads and quiet:
            return replay.fn(self, tensors, scalars)
        result = self._interpret(tensors, scalars)
        if quiet and self.replay_tried != threads:
            self.replay_tried = threads
            self.replay = replay_module.build(self, threads)
        return result

    def _interpret(self, tensors: list, scalars: list):
        bound = list(self.empty)
        for i, arg in self.args:
            bound[i] = tensors[arg]._impl.storage
        for i, arg, origin in self.relative:
            bound[i] = at(tensors[arg]._impl, origin)
        call = Call(self, bound, scalars)
        for step, release in self.schedule:
            step.run(call)
            if release is not None:
                for slot in release:
                    bound[slot] = None
        if self.single:  # one tensor out, no version to bump: a short path for small plans
            return _trusted(call.impl(self.out_leaves[0]))
        for slot, count in self.bumps.items():
            if bound[slot] is not None:
                bound[slot].version += count
        leaves = [
            _trusted(call.impl(v))
            if type(v) is View
            else tensors[v.index]
            if type(v) is Input
            else _value(v, call)
            for v in self.out_leaves
        ]
        if self.same is not None:
            leaves = [leaves[j] for j in self.same]
        if self.outputs is pytree.LEAF:
            return leaves[0]
        return pytree.unflatten(self.outputs, leaves)

    def check(self, tensors: list, scalars: list, name: str) -> None:
        """Run the plan and, beside it, each fused kernel's ops one eager kernel at a time,
        on copies of `tensors` (the arguments before the call); kael.Error naming the first
        fused kernel whose output differs from its ops' (any bit, NaN payloads included).
        Both runs draw the same numbers, and every generator ends where the call left it (as
        eagerly)."""
        generators = self._generators(scalars)
        start = [g.position() for g in generators]
        try:
            self._check(tensors, scalars, name, generators)
        finally:
            for g, position in zip(generators, start, strict=True):
                g.restore(*position)

    def _generators(self, scalars: list) -> list:
        """The generators the steps may draw from or reseed, for a call whose leaves are
        `scalars`: the default one (Reserve), those given to extern steps, and those the
        function reseeded."""
        from kael.frontend.random import Generator, default_generator

        found = {id(default_generator): default_generator}
        for step in self.steps:
            if type(step) is Seed:
                source = step.generator
                given = [source.of(scalars) if type(source) is ArgScalar else source]
            else:
                given = list(getattr(step, "generators", ()))
                given += [v.of(scalars) for v in getattr(step, "passed", ())]
            for g in given:
                if type(g) is Generator:
                    found.setdefault(id(g), g)
        return list(found.values())

    def _check(self, tensors: list, scalars: list, name: str, generators: list) -> None:
        calls = [Call(self, list(self.empty), scalars) for _ in range(2)]
        for call in calls:
            for i, arg in self.args:
                call.bound[i] = _copy(tensors[arg]._impl.storage)
            for i, arg, origin in self.relative:
                shift = at(tensors[arg]._impl, origin)
                if type(shift) is Window:
                    call.bound[i] = Window(call.bound[i], shift.shift)
            for i, slot in enumerate(self.slots):
                if slot.kind == IMPLICIT:
                    call.bound[i] = _copy(slot.storage)
        fused, unfused = calls
        for step in self.steps:
            if step.launches_kernels:
                step.run_reference(unfused)
                parts = step.compared()
                if not any(_half_eps(part.kernel) for part in parts):  # compared bit for bit
                    if type(step) is RowGroup:
                        step.run(fused, whole=True)
                    else:
                        step.run(fused)
                    for part in parts:
                        _compare(part, fused, unfused, name)
                    continue
                # Half types: each kernel runs alone from its ops' values, so the roundings
                # a kernel may differ by do not reach the next one's comparison.
                for part in parts:
                    part.run(fused)
                    _compare(part, fused, unfused, name)
                    for view in part.outs:
                        eager.copy_into(fused.impl(view), unfused.impl(view))
            else:  # the same draws and extern work in both
                here = [g.position() for g in generators]
                step.run(unfused)
                for g, position in zip(generators, here, strict=True):
                    g.restore(*position)
                step.run(fused)

    @property
    def peak_bytes(self) -> int:
        """The most bytes of intermediates alive at once (outputs and inputs not counted; a
        row group's chunk-local values live in the driver's chunk scratch)."""
        keep = {v.buffer for v in self.out_leaves if type(v) is View}
        keep |= {slot for step in self.steps if type(step) is RowGroup for slot in step.local}
        alive: set[int] = set()
        peak = 0
        for step, release in zip(self.steps, self.release):
            for v in step.views():
                if self.slots[v.buffer].kind == FRESH and v.buffer not in keep:
                    alive.add(v.buffer)
            peak = max(peak, sum(self.slots[b].nbytes for b in alive))
            alive.difference_update(release)
        return peak


def _copy(storage: Storage) -> Storage:
    """A new storage holding `storage`'s bytes (a byte copy for check=True's comparison)."""
    copy = Storage(storage.nbytes, storage.device)
    if storage.nbytes:
        ctypes.memmove(copy.ptr, storage.ptr, storage.nbytes)
    return copy


def snapshot(tensors: list) -> list:
    """Tensors with the same layouts over copies of their storages (shared where theirs are)."""

    made: dict[int, Storage] = {}
    out = []
    for t in tensors:
        impl = t._impl
        copy = made.get(id(impl.storage))
        if copy is None:
            copy = made[id(impl.storage)] = _copy(impl.storage)
        view = TensorImpl(copy, impl.shape, impl.strides, impl.offset, impl.dtype, impl.device)
        out.append(_trusted(view))
    return out


# check=True's allowance for a kernel with float16/bfloat16 values: it keeps float32 between
# its ops where they round each result, and an op like exp amplifies those roundings (exp(y)
# moves by |y| steps of its own), so it may differ by this many of the half type's rounding
# steps, relative to the element or to the output's largest (where sums cancel).
HALF_STEPS = 16


def _compare(step: KernelCall, fused: Call, unfused: Call, name: str) -> None:
    """kael.Error when the fused kernel wrote other bytes than its ops did (beyond HALF_STEPS
    rounding steps for a kernel over half types)."""
    from kael.frontend.interop import numpy_view

    eps = _half_eps(step.kernel)
    for k, view in enumerate(step.outs):
        got, want = (numpy_view(c.impl(view)) for c in (fused, unfused))
        if got.tobytes() == want.tobytes():
            continue
        off = got != want
        allowed = ""
        dtype = fused.impl(view).dtype
        if eps and dtype.is_floating_point and not dtype.is_complex:
            off = _beyond_half_steps(fused.impl(view), unfused.impl(view), eps)
            if not off.any():
                continue
            allowed = f" by more than {HALF_STEPS} rounding steps of its half type"
        where = np.argwhere(off)
        at = tuple(int(i) for i in where[0]) if len(where) else ()
        detail = (
            f" at {list(at)}: {got[at].item()!r} where its ops give {want[at].item()!r}"
            if at
            else ""
        )
        raise Error(
            f"kael.compile({name}, check=True): kernel {step.kernel.name} (fusing "
            f"{', '.join(step.covers)}) output {k} differs from its ops run one by one"
            f"{allowed}{detail}"
        )


def _beyond_half_steps(got: TensorImpl, want: TensorImpl, eps: float) -> np.ndarray:
    """Where got lies further than HALF_STEPS rounding steps (eps each) from want, relative to
    the element or to want's largest (where sums cancel); an infinity beside the range edge
    is near the finite value past it, and NaN matches NaN. Both read as float64 by kael's
    own conversion."""
    from kael.frontend.interop import numpy_view
    from kael.frontend.tensor import clone_impl

    wide, ref = (numpy_view(clone_impl(t, float64)) for t in (got, want))
    finite = np.isfinite(ref)
    scale = np.abs(ref[finite]).max(initial=0.0)
    limit = HALF_STEPS * eps * np.maximum(np.abs(ref), scale)
    edge = got.dtype.largest / (1 + HALF_STEPS * eps)
    with np.errstate(invalid="ignore"):
        near = finite & np.isfinite(wide) & (np.abs(wide - ref) <= limit)
        beside = (np.isinf(wide) | np.isinf(ref)) & (np.sign(wide) == np.sign(ref))
        near |= beside & (np.minimum(np.abs(wide), np.abs(ref)) >= edge)
    same = (wide == ref) | (np.isnan(wide) & np.isnan(ref))
    return ~(near | same)


def _half_eps(kernel) -> float:
    """The rounding step (eps) of the widest-stepped half type among a kernel's values (a
    product's: its dtype's and its epilogue's), or 0 when it has none."""
    if isinstance(kernel, Product):
        own = _HALF_EPS.get(kernel.dtype.name, 0.0)
        return own if kernel.epilogue is None else max(own, _half_eps(kernel.epilogue))
    if isinstance(kernel, Reduction):
        exprs = [kernel.prologue, *kernel.epilogues]
        exprs += [] if kernel.second is None else [kernel.second]
    else:
        exprs = kernel.exprs
    steps = [_HALF_EPS[n.dtype.name] for e in exprs for n in walk(e) if n.dtype.is_half]
    return max(steps, default=0.0)


_HALF_EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7}  # the step from 1 to the next value


def _end_byte(v: View) -> int:
    """One past the last byte a view reaches (0 when it holds no element)."""
    return byte_range(v)[1]


def byte_range(v: View) -> tuple[int, int]:
    """The first byte a view reaches and one past its last ((0, 0) when it holds none)."""
    if 0 in v.shape:
        return 0, 0
    steps = [(n - 1) * s for n, s in zip(v.shape, v.strides, strict=True)]
    first = v.offset + sum(d for d in steps if d < 0)
    last = v.offset + sum(d for d in steps if d > 0)
    return first * v.dtype.itemsize, (last + 1) * v.dtype.itemsize
