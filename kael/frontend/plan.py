"""A compiled plan: the steps of a traced function over numbered buffer slots, run per call.

Slots are the function's tensor arguments, tensors it reads from elsewhere (implicit
inputs, read at each call), buffers the plan allocates (intermediates and fresh outputs)
and buffers extern steps return. A step is a kernel launch (through eager's launch door,
so layouts and compiled code come from the same caches), an extern op called on tensors
over the slots, or the reservation of random counters. The same steps run while tracing
(on the trace's buffers) and on every later call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kael.frontend import eager, pytree
from kael.ir.fusion import View
from kael.ir.kernel import Kernel
from kael.ir.reduction import Reduction
from kael.runtime.convert import convert_scalar
from kael.runtime.device import Device
from kael.runtime.dtypes import DType
from kael.runtime.errors import Error
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl
from kael.runtime.threadpool import get_num_threads

ARG, IMPLICIT, FRESH, EXTERN = "arg", "implicit", "fresh", "extern"


@dataclass(slots=True)
class Slot:
    """One buffer of the plan: where its storage comes from at each call."""

    kind: str
    nbytes: int
    device: Device
    arg: int = -1  # ARG: the position among the call's tensor leaves
    storage: Storage | None = None  # IMPLICIT: the storage read at every call


@dataclass(frozen=True, slots=True)
class ArgScalar:
    """A run-time parameter taken from the call's Python float at leaf `index`, converted
    as the op converted it while tracing."""

    index: int
    conversions: tuple = ()

    def value(self, call: Call):
        v = call.scalars[self.index]
        for dtype, mode in self.conversions:
            v = convert_scalar(v, dtype, mode)
        return v


@dataclass(frozen=True, slots=True)
class RandomWord:
    """The seed or first counter of the call's `index`-th reservation of random counters."""

    index: int
    which: int  # 0 seed, 1 offset

    def value(self, call: Call):
        return call.random[self.index][self.which]


def _value(source, call: Call):
    kind = type(source)
    if kind is ArgScalar or kind is RandomWord:
        return source.value(call)
    return source


class Call:
    """One run of a plan: the storage bound to each slot and the call's scalar values."""

    __slots__ = ("plan", "bound", "scalars", "random")

    def __init__(self, plan: Plan, bound: list, scalars: list) -> None:
        self.plan = plan
        self.bound = bound
        self.scalars = scalars
        self.random: list[tuple[int, int]] = []

    def storage(self, slot: int) -> Storage:
        s = self.bound[slot]
        if s is None:
            spec = self.plan.slots[slot]
            s = self.bound[slot] = Storage(spec.nbytes, spec.device)
        return s

    def impl(self, view: View) -> TensorImpl:
        device = self.plan.slots[view.buffer].device
        storage = self.storage(view.buffer)
        return TensorImpl(storage, view.shape, view.strides, view.offset, view.dtype, device)


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
    # the launch with its words fixed (shapes never change within a plan), per thread count
    prepared: tuple[int, eager.Prepared | None] | None = None
    pointers: list[tuple[int, int]] | None = None  # per operand: (slot, byte offset)
    param_words: list[int] | None = None  # constants' words; the call's values fill `dynamic`
    dynamic: list[tuple[int, object, DType]] | None = None

    def _prepare(self, slots: list[Slot], threads: int):
        outs, ins = ([_layout_only(v, slots) for v in vs] for vs in (self.outs, self.ins))
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
        self.prepared = (threads, eager.prepare(self.template, outs, ins, self.axes))
        return self.prepared

    def specialized(self, slots: list[Slot]) -> Kernel | Reduction:
        """The kernel as this step launches it: specialized for its operands' layouts."""
        outs, ins = ([_layout_only(v, slots) for v in vs] for vs in (self.outs, self.ins))
        if self.axes is None:
            return eager._plan(self.template, outs[0], (*outs, *ins)).kernel
        axes, keepdim = self.axes
        shape = ins[0].shape
        return eager._reduction_plan(self.template.kernel, outs, ins, shape, axes, keepdim).kernel

    def run(self, call: Call) -> None:
        threads = get_num_threads()
        prepared = self.prepared
        if prepared is None or prepared[0] != threads:
            prepared = self._prepare(call.plan.slots, threads)
        if prepared[1] is not None:
            bound = call.bound
            pointers = [(bound[s] or call.storage(s)).ptr + offset for s, offset in self.pointers]
            words = self.param_words
            if self.dynamic:
                words = list(words)
                for i, source, dtype in self.dynamic:
                    words[i] = eager.param_word(source.value(call), dtype)
            prepared[1].launch(pointers, words)
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
class ExternCall:
    """An op kael runs as it would eagerly (a hand-written kernel, host work), on tensors
    over the plan's slots; each output tensor binds its slot."""

    name: str
    fn: object
    args: pytree.TreeDef
    leaves: list  # View (a tensor), ArgScalar, or a constant
    outs: pytree.TreeDef
    out_leaves: list  # (View, binds a new slot) for tensors, else the constant

    def run(self, call: Call) -> None:
        from kael.frontend.tensor import Tensor

        leaves = [Tensor(call.impl(v)) if type(v) is View else _value(v, call) for v in self.leaves]
        args, kwargs = pytree.unflatten(self.args, leaves)
        result = self.fn(*args, **kwargs)
        got, _ = pytree.flatten(result)
        for value, spec in zip(got, self.out_leaves):
            if type(spec) is not tuple:
                continue
            view, new = spec
            impl = value._impl
            if (impl.shape, impl.strides, impl.offset) != (view.shape, view.strides, view.offset):
                raise Error(
                    f"{self.name} returned a tensor of shape {list(impl.shape)} where its trace "
                    f"returned {list(view.shape)}; its output depends on the data"
                )
            if new:
                call.bound[view.buffer] = impl.storage


@dataclass(slots=True)
class Reserve:
    """Random counters reserved from the default generator, in eager's order."""

    count: int

    def run(self, call: Call) -> None:
        from kael.frontend.random import reserve_words

        call.random.append(reserve_words(self.count))


@dataclass(slots=True)
class Plan:
    """The steps of one traced call signature, and how to build its results."""

    slots: list[Slot] = field(default_factory=list)
    steps: list = field(default_factory=list)
    outputs: pytree.TreeDef = pytree.LEAF
    out_leaves: list = field(default_factory=list)  # View for a tensor, else the constant
    bumps: dict[int, int] = field(default_factory=dict)  # slot -> in-place writes
    release: list[list[int]] = field(default_factory=list)  # per step: slots freed after it
    fallback: str | None = None  # why this signature runs eagerly instead, if it does
    cuts: list = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    # filled by finish(): what each call starts from
    empty: list = field(default_factory=list)
    args: list[tuple[int, int]] = field(default_factory=list)
    schedule: list = field(default_factory=list)

    @property
    def kernel_steps(self) -> list[KernelCall]:
        return [s for s in self.steps if type(s) is KernelCall]

    def finish(self) -> None:
        """Work out, once, after which step each intermediate slot can be freed."""
        last: dict[int, int] = {}
        for i, step in enumerate(self.steps):
            for v in _views(step):
                last[v.buffer] = i
        keep = {v.buffer for v in self.out_leaves if type(v) is View}
        self.release = [[] for _ in self.steps]
        for slot, i in last.items():
            if self.slots[slot].kind in (FRESH, EXTERN) and slot not in keep:
                self.release[i].append(slot)
        self.empty = [None] * len(self.slots)
        for i, slot in enumerate(self.slots):
            if slot.kind == IMPLICIT:
                self.empty[i] = slot.storage
        self.args = [(i, slot.arg) for i, slot in enumerate(self.slots) if slot.kind == ARG]
        self.schedule = list(zip(self.steps, self.release))

    def run(self, tensors: list, scalars: list):
        """Run every step for one call and return its results."""
        from kael.frontend.tensor import Tensor

        bound = list(self.empty)
        for i, arg in self.args:
            bound[i] = tensors[arg]._impl.storage
        call = Call(self, bound, scalars)
        for step, release in self.schedule:
            step.run(call)
            for slot in release:
                bound[slot] = None
        for slot, count in self.bumps.items():
            if bound[slot] is not None:
                bound[slot].version += count
        leaves = [Tensor.trusted(call.impl(v)) if type(v) is View else v for v in self.out_leaves]
        if self.outputs is pytree.LEAF:
            return leaves[0]
        return pytree.unflatten(self.outputs, leaves)

    @property
    def peak_bytes(self) -> int:
        """The most bytes of intermediates alive at once (outputs and inputs not counted)."""
        keep = {v.buffer for v in self.out_leaves if type(v) is View}
        alive: set[int] = set()
        peak = 0
        for step, release in zip(self.steps, self.release):
            for v in _views(step):
                if self.slots[v.buffer].kind == FRESH and v.buffer not in keep:
                    alive.add(v.buffer)
            peak = max(peak, sum(self.slots[b].nbytes for b in alive))
            alive.difference_update(release)
        return peak


def _views(step) -> list[View]:
    if type(step) is KernelCall:
        return step.outs + step.ins
    if type(step) is ExternCall:
        return [v for v in step.leaves if type(v) is View] + [
            s[0] for s in step.out_leaves if type(s) is tuple
        ]
    return []
