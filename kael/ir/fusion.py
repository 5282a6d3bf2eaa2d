"""Fusion of a traced program: each op's kernel becomes one step, and a step that reads a
value another elementwise step computed takes that step's expression in place of the load.

A traced program is a list of Steps over numbered buffers. Each Step is one op's kernel
(an elementwise Kernel or a Reduction, with Load(i) reading `ins[i]`) and the Views it
writes and reads. `fuse` walks the steps in order, keeping a version per buffer: a read
of a version that an elementwise step wrote whole is replaced by that step's expression,
its loads re-based through the reader's view (`compose`), so views cost index arithmetic,
never a copy. A producer none of whose versions must exist in memory is dropped. What
forces a version into memory (a cut) is recorded with its reason, for inspection.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from kael.ir import expr as x
from kael.ir.kernel import Buffer, Kernel
from kael.ir.ops import VMATH_OPS
from kael.ir.reduction import Reduction
from kael.ir.views import View, compose, covers_buffer, dense_order, numel
from kael.runtime.dtypes import DType

# The largest expression (in distinct nodes) a kernel may grow to by inlining: past this
# a value is stored, so one kernel's code stays small enough to compile quickly.
MAX_EXPR_NODES = 400


@dataclass(slots=True)
class Step:
    """One op's kernel and its operands; `params[i]` is the source of the kernel's Param(i)
    (opaque here); `axes` and `keepdim` describe a Reduction's launch; `name` shows in
    inspection."""

    kernel: Kernel | Reduction
    outs: list[View]
    ins: list[View]
    params: list[object]
    name: str
    axes: tuple[int, ...] = ()
    keepdim: bool = False


@dataclass(slots=True)
class Fused:
    """A step of the fused program: its kernel (new when anything was inlined), operands,
    parameter sources, and the names of the ops it covers, in program order."""

    kernel: Kernel | Reduction
    outs: list[View]
    ins: list[View]
    params: list[object]
    covers: list[str]
    axes: tuple[int, ...] = ()
    keepdim: bool = False
    index: int = 0  # the step it stands for


@dataclass(slots=True)
class Cut:
    """A value stored to memory between two steps, and why it could not be inlined."""

    producer: str
    consumer: str
    reason: str


@dataclass(slots=True)
class FusedProgram:
    steps: list[Fused]
    cuts: list[Cut] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    shared: set[tuple[int, int]] = field(default_factory=set)  # costly values worth storing


@dataclass(slots=True)
class _Producer:
    """A value an elementwise step wrote whole: its expression over its own leaves."""

    name: str
    names: list[tuple[int, str]]  # (step index, op name) of every op it covers
    expr: x.Expr
    leaves: list[tuple[View, int]]  # (view, version read)
    params: list[tuple[DType, object]]
    shape: tuple[int, ...]
    uses_index: bool
    size: int
    reduced: bool = False  # it reads a reduction's result: worth folding into its epilogue
    computes: bool = False  # more than loads and casts
    stored: DType | None = None  # the dtype it is stored in (a reader's view may differ)


class _Builder:
    """The leaves and parameters of the kernel being built, each registered once."""

    def __init__(self) -> None:
        self.leaves: list[tuple[View, int]] = []
        self.leaf_slot: dict[tuple[View, int], int] = {}
        self.params: list[tuple[DType, object]] = []
        self.param_slot: dict[tuple, int] = {}
        self.names: list[tuple[int, str]] = []

    @classmethod
    def of(cls, step: Fused) -> _Builder:
        """A builder holding a fused step's leaves and parameters in their slots, to extend."""
        builder = cls()
        for v in step.ins:
            builder.leaf(v, 0)
        for source, dtype in zip(step.params, step.kernel.params):
            builder.param(dtype, source)
        return builder

    def leaf(self, view: View, version: int) -> x.Load:
        key = (view, version)
        slot = self.leaf_slot.get(key)
        if slot is None:
            slot = self.leaf_slot[key] = len(self.leaves)
            self.leaves.append(key)
        return x.Load(view.dtype, slot)

    def param(self, dtype: DType, source: object) -> x.Param:
        key = (dtype, _source_key(source))
        slot = self.param_slot.get(key)
        if slot is None:
            slot = self.param_slot[key] = len(self.params)
            self.params.append((dtype, source))
        return x.Param(dtype, slot)


def _source_key(source: object) -> tuple:
    if isinstance(source, bool | int | float):
        return (type(source), repr(source))
    return ("object", id(source))


def _size(e: x.Expr) -> int:
    return sum(1 for _ in x.walk(e))


def _rebuild(e: x.Expr, leaf, param, index, memo: dict) -> x.Expr:
    """`e` with each Load, Param and Index replaced through the three callables."""
    key = id(e)
    hit = memo.get(key)
    if hit is not None:
        return hit[1]
    if isinstance(e, x.Load):
        out = leaf(e)
    elif isinstance(e, x.Param):
        out = param(e)
    elif isinstance(e, x.Index):
        out = index(e)
    elif isinstance(e, x.Cast):
        out = x.cast(_rebuild(e.x, leaf, param, index, memo), e.dtype)
    elif isinstance(e, x.Unary):
        out = x.Unary(e.dtype, e.op, _rebuild(e.x, leaf, param, index, memo))
    elif isinstance(e, x.Binary):
        a = _rebuild(e.a, leaf, param, index, memo)
        b = _rebuild(e.b, leaf, param, index, memo)
        out = x.Binary(e.dtype, e.op, a, b)
    elif isinstance(e, x.Where | x.Fma):  # constructed from the dtype and the operands
        out = type(e)(e.dtype, *(_rebuild(c, leaf, param, index, memo) for c in x.children(e)))
    else:
        out = e
    memo[key] = (e, out)  # keep e alive so its id is not reused while memo lives
    return out


def costly(e: x.Expr) -> bool:
    """Whether an expression runs vector math (exp, log, tanh, ...): worth storing once."""
    return x.uses_ops(e, VMATH_OPS)


def fuse(steps: list[Step], buffer_bytes: list[int], live: set[int]) -> FusedProgram:
    """The fused program of `steps`. `buffer_bytes[b]` is buffer b's size; the last version
    of every buffer in `live` must be in memory at the end.

    Two passes: the first finds the values that must be stored (outputs, and values some
    reader cannot inline) and the costly values that a reduction and another step both
    read (softmax's exp: stored once, not computed twice); the second has every reader of
    those load them instead of computing them again.
    """
    first, stored = _pass(steps, buffer_bytes, live, set())
    stored |= first.shared
    program = _pass(steps, buffer_bytes, live, stored)[0]
    program.steps = _fold_epilogues(program.steps, buffer_bytes, live)
    program.steps = _merge_siblings(program.steps, buffer_bytes, live)
    program.cuts = list({(c.producer, c.consumer, c.reason): c for c in first.cuts}.values())
    return program


def _pass(
    steps: list[Step], buffer_bytes: list[int], live: set[int], stored: set[tuple[int, int]]
) -> tuple[FusedProgram, set[tuple[int, int]]]:
    version: dict[int, int] = {}
    producers: dict[tuple[int, int], _Producer] = {}
    needed: set[tuple[int, int]] = set()
    built: list[tuple[list, _Builder, bool]] = []
    cuts: list[Cut] = []
    readers: dict[tuple[int, int], set[tuple[int, bool]]] = {}  # (step, is a reduction)
    reduced: set[int] = set()  # buffers a reduction wrote
    for position, step in enumerate(steps):
        builder = _Builder()
        builder.names.append((position, step.name))
        reduction = isinstance(step.kernel, Reduction)
        inlined = False

        def read(
            e: x.Load, step=step, builder=builder, reduction=reduction, position=position
        ) -> x.Expr:
            nonlocal inlined
            view = step.ins[e.buffer]
            key = (view.buffer, version.get(view.buffer, 0))
            producer = producers.get(key)
            if producer is not None:
                readers.setdefault(key, set()).add((position, reduction))
            if producer is not None and key not in stored:
                value, reason = _inline(producer, view, e, step, builder, version, reduction)
                if value is not None:
                    inlined = True
                    return x.cast(value, e.dtype)
                cuts.append(Cut(producer.name, step.name, reason))
            needed.add(key)
            return builder.leaf(view, key[1])

        # each input is read (and its producer inlined) once, however many Loads name it
        loaded: dict[x.Load, x.Expr] = {}

        def load(e: x.Load, loaded=loaded, read=read) -> x.Expr:
            value = loaded.get(e)
            if value is None:
                value = loaded[e] = read(e)
            return value

        def param(e: x.Param, step=step, builder=builder) -> x.Expr:
            return builder.param(e.dtype, step.params[e.slot])

        def index(e: x.Index) -> x.Expr:
            return e

        memo: dict = {}
        k = step.kernel
        if reduction:
            exprs = [_rebuild(k.prologue, load, param, index, memo)]
            if k.second is not None:
                exprs.append(_rebuild(k.second, load, param, index, memo))
            emo: dict = {}
            epilogues = [_rebuild(e, lambda e: e, param, index, emo) for e in k.epilogues]
            exprs += epilogues
        else:
            exprs = [_rebuild(e, load, param, index, memo) for e in k.exprs]
        changed = (
            inlined
            or [v for v, _ in builder.leaves] != step.ins
            or len(builder.params) != len(step.params)
        )
        built.append((exprs, builder, changed))
        nodes = [x.walk(e) for e in exprs]  # one walk each, for every question below
        faulting = any(x.node_faults(n) for ns in nodes for n in ns)
        positions = any(isinstance(n, x.Index) for ns in nodes for n in ns)
        for i, out in enumerate(step.outs):
            b = out.buffer
            before = version.get(b, 0)
            version[b] = before + 1
            order = dense_order(out, buffer_bytes[b])
            whole = order is not None
            if not whole:
                needed.add((b, before))  # a partial write lands on the value before it
            if faulting:
                needed.add((b, before + 1))  # eager raises even when nothing reads it
            flagged = any(isinstance(n, x.Unary) and n.op == "flag" for n in nodes[i])
            in_order = whole and order == tuple(range(len(order)))
            if whole and not reduction and not flagged and (in_order or not positions):
                shape, leaves = out.shape, builder.leaves
                if not in_order:  # the value over its dims in memory order: row-major there
                    shape, leaves = _reordered(order, out.shape, leaves)
                producers[(b, before + 1)] = _Producer(
                    step.name,
                    builder.names,
                    exprs[i],
                    leaves,
                    builder.params,
                    shape,
                    positions,
                    len(nodes[i]),
                    any(v.buffer in reduced for v, _ in builder.leaves),
                    any(isinstance(n, x.Unary | x.Binary | x.Where | x.Fma) for n in nodes[i]),
                    out.dtype,
                )
            if reduction:
                reduced.add(b)
    for b in live:
        if b in version:
            needed.add((b, version[b]))
    program = FusedProgram([], cuts)
    program.shared = {
        key
        for key, seen in readers.items()
        if len(seen) >= 2 and any(r for _, r in seen) and costly(producers[key].expr)
    }
    written: dict[int, int] = {}
    for i, (step, (exprs, builder, changed)) in enumerate(zip(steps, built)):
        keys = []
        for out in step.outs:
            written[out.buffer] = written.get(out.buffer, 0) + 1
            keys.append((out.buffer, written[out.buffer]))
        if not any(key in needed for key in keys):
            program.dropped.append(step.name)
            continue
        kernel = _kernel(step, exprs, builder) if changed else step.kernel
        program.steps.append(
            Fused(
                kernel,
                list(step.outs),
                [v for v, _ in builder.leaves],
                [source for _, source in builder.params],
                [name for _, name in sorted(builder.names)],
                step.axes,
                step.keepdim,
                i,
            )
        )
    return program, needed


def _reordered(order: tuple[int, ...], shape: tuple[int, ...], leaves: list) -> tuple:
    """A producer's shape and leaves with its dims taken in `order` (its output's memory
    order), over which its buffer is row-major, as `compose` reads a produced value."""
    moved = [
        (dataclasses.replace(v, shape=tuple(shape[d] for d in order),
                             strides=tuple(v.strides[d] for d in order)), seen)
        for v, seen in leaves
    ]  # fmt: skip
    return tuple(shape[d] for d in order), moved


def _same_place(a: View, b: View) -> bool:
    """Whether two views read the same elements at every position (size-1 dims' strides
    do not matter)."""
    return (a.buffer, a.shape, a.offset, a.dtype) == (b.buffer, b.shape, b.offset, b.dtype) and all(
        s == 1 or p == q for s, p, q in zip(a.shape, a.strides, b.strides)
    )


def _fold_epilogues(steps: list[Fused], buffer_bytes: list[int], live: set[int]) -> list[Fused]:
    """An elementwise kernel that reads only the outputs of the reduction just before it, at
    their own positions (`rsqrt(var + eps)`), becomes more epilogues of that reduction: it
    is computed once per output, in the reduction's launch. Outputs only it read are then
    not stored."""
    out: list[Fused] = []
    for i, step in enumerate(steps):
        prev = out[-1] if out else None
        if (
            prev is not None
            and isinstance(prev.kernel, Reduction)
            and isinstance(step.kernel, Kernel)
            and not step.kernel.may_fault
            and not step.kernel.uses_index
            and step.ins
            and all(any(_same_place(v, o) for o in prev.outs) for v in step.ins)
            and all(v.shape == prev.outs[0].shape for v in step.outs)
            and not {v.buffer for v in step.outs} & {v.buffer for v in prev.ins + prev.outs}
        ):
            later = {v.buffer for s in steps[i + 1 :] for v in s.ins} | live
            out[-1] = _folded(prev, step, later, buffer_bytes)
            continue
        out.append(step)
    return out


def _folded(red: Fused, step: Fused, later: set[int], buffer_bytes: list[int]) -> Fused:
    k = red.kernel
    builder = _Builder.of(red)

    def param(e: x.Param) -> x.Expr:
        return builder.param(e.dtype, step.params[e.slot])

    def leaf(e: x.Load) -> x.Expr:
        view = step.ins[e.buffer]
        i = next(i for i, o in enumerate(red.outs) if _same_place(view, o))
        return x.cast(k.epilogues[i], e.dtype)

    more = [_rebuild(e, leaf, param, lambda e: e, {}) for e in step.kernel.exprs]
    keep = [
        j
        for j, v in enumerate(red.outs)
        if v.buffer in later or not covers_buffer(v, buffer_bytes[v.buffer])
    ]
    kernel = dataclasses.replace(
        k,
        epilogues=tuple(k.epilogues[j] for j in keep) + tuple(more),
        params=tuple(d for d, _ in builder.params),
    )
    return Fused(
        kernel,
        [red.outs[j] for j in keep] + step.outs,
        red.ins,
        [s for _, s in builder.params],
        red.covers + step.covers,
        red.axes,
        red.keepdim,
        step.index,
    )


def _merge_siblings(steps: list[Fused], buffer_bytes: list[int], live: set[int]) -> list[Fused]:
    """Consecutive elementwise kernels over one output shape as one kernel with several
    outputs (an optimizer's updates of m, v and w; a value returned and used again), each
    element computed once: a later kernel's read of an earlier one's output at the same
    position takes the earlier expression, and that output is no longer stored when it was
    a whole fresh value that nothing else reads."""
    out: list[Fused] = []
    for i, step in enumerate(steps):
        if out:
            later = {v.buffer for s in steps[i + 1 :] for v in s.ins} | live
            merged = _merged(out[-1], step, later, buffer_bytes)
            if merged is not None:
                out[-1] = merged
                continue
        out.append(step)
    return out


def _merged(a: Fused, b: Fused, later: set[int], buffer_bytes: list[int]) -> Fused | None:
    if not (isinstance(a.kernel, Kernel) and isinstance(b.kernel, Kernel)):
        return None
    shape = a.outs[0].shape
    if any(v.shape != shape for v in a.outs + b.outs) or a.kernel.may_fault or b.kernel.may_fault:
        return None
    produced = {(v.buffer, v.strides, v.offset): k for k, v in enumerate(a.outs)}
    writes = a.outs + b.outs
    # every read and write of a buffer the kernel writes must be at that write's place: one
    # loop runs both kernels element by element, so a write to a shifted window would land
    # before a read (or after a write) that eager runs in the other order
    for v in a.ins + b.ins + writes:
        for w in writes:
            if w.buffer == v.buffer and (v.strides, v.offset, v.dtype) != (
                w.strides,
                w.offset,
                w.dtype,
            ):
                return None
    builder = _Builder.of(a)

    def a_leaf(e: x.Load) -> x.Expr:
        return builder.leaf(a.ins[e.buffer], 0)

    def a_param(e: x.Param) -> x.Expr:
        return builder.param(e.dtype, a.params[e.slot])

    first = [_rebuild(e, a_leaf, a_param, lambda e: e, {}) for e in a.kernel.exprs]

    def b_leaf(e: x.Load) -> x.Expr:
        v = b.ins[e.buffer]
        k = produced.get((v.buffer, v.strides, v.offset))
        return first[k] if k is not None else builder.leaf(v, 0)

    def b_param(e: x.Param) -> x.Expr:
        return builder.param(e.dtype, b.params[e.slot])

    second = [_rebuild(e, b_leaf, b_param, lambda e: e, {}) for e in b.kernel.exprs]
    if any(_size(e) > MAX_EXPR_NODES for e in second):
        return None
    # an output of `a` that `b` writes over at the same place, or a whole value that only
    # `b` read, need not be stored
    over = {(v.buffer, v.strides, v.offset) for v in b.outs}
    keep = [
        k
        for k, v in enumerate(a.outs)
        if (v.buffer, v.strides, v.offset) not in over
        and (v.buffer in later or not covers_buffer(v, buffer_bytes[v.buffer]))
    ]
    outs = [a.outs[k] for k in keep] + b.outs
    names = a.covers + b.covers
    kernel = Kernel(
        "_".join(names[:6]) + (f"_{len(names)}ops" if len(names) > 6 else ""),
        0,
        tuple(Buffer(v.dtype) for v, _ in builder.leaves),
        tuple(Buffer(v.dtype) for v in outs),
        tuple([first[k] for k in keep] + second),
        tuple(d for d, _ in builder.params),
    )
    return Fused(
        kernel,
        outs,
        [v for v, _ in builder.leaves],
        [s for _, s in builder.params],
        names,
        index=b.index,
    )


def _inline(
    producer: _Producer, view: View, load: x.Load, step: Step, builder: _Builder, version, reduction
):
    """(the producer's expression read through `view` by `load`, None) or (None, why not)."""
    if reduction and producer.uses_index:
        return None, "a reduction cannot read positions of its input"
    if reduction and not producer.leaves:  # ones(4, 3).sum(0): the reduction would read
        return None, "a reduction walks an input, and the value reads none"  # nothing
    # x.view(int32) of a float32 value, or a copy moving bfloat16 elements as int16 words:
    # the reader takes the value's bits, which only memory holds
    if view.dtype is not producer.stored or load.dtype is not producer.stored:
        return None, "the view reads the value's bytes as another dtype"
    for leaf, seen in producer.leaves:
        if version.get(leaf.buffer, 0) != seen:
            return None, "an input of it was written in between"
    composed = compose(
        view.shape,
        view.strides,
        view.offset,
        producer.shape,
        [(leaf.strides, leaf.offset) for leaf, _ in producer.leaves],
        producer.uses_index,
    )
    if composed is None:
        return None, "the view reads across dims that the producer's inputs do not merge"
    leaves = [
        (dataclasses.replace(leaf, shape=view.shape, strides=st, offset=off), seen)
        for (leaf, seen), st, off in zip(producer.leaves, composed.strides, composed.offsets)
    ]
    for out in step.outs:
        for leaf, _ in leaves:
            if leaf.buffer == out.buffer and (leaf.strides, leaf.offset) != (
                out.strides,
                out.offset,
            ):
                return None, "the reader overwrites what the value reads, in another layout"
    axis_of = None
    if producer.uses_index:
        axis_of = {}
        for axis, (start, steps) in enumerate(composed.axes):
            if start != 0 or len(steps) > 1 or any(a != 1 for a in steps.values()):
                return None, "positions would need index arithmetic"
            axis_of[axis] = next(iter(steps), None)
    if producer.size > MAX_EXPR_NODES:
        return None, f"its expression has over {MAX_EXPR_NODES} nodes"
    if numel(view.shape) > numel(producer.shape) and producer.reduced and producer.computes:
        return None, "it would be computed again for every element it is broadcast to"

    def leaf(e: x.Load) -> x.Expr:
        view_, seen = leaves[e.buffer]
        return builder.leaf(view_, seen)

    def param(e: x.Param) -> x.Expr:
        return builder.param(e.dtype, producer.params[e.slot][1])

    def index(e: x.Index) -> x.Expr:
        d = axis_of[e.axis]
        return x.Const(e.dtype, 0) if d is None else x.Index(e.dtype, d)

    builder.names.extend(n for n in producer.names if n not in builder.names)
    return _rebuild(producer.expr, leaf, param, index, {}), None


def _kernel(step: Step, exprs: list[x.Expr], builder: _Builder) -> Kernel | Reduction:
    names = [name for _, name in sorted(builder.names)]
    name = "_".join(names[:6]) + (f"_{len(builder.names)}ops" if len(builder.names) > 6 else "")
    inputs = tuple(Buffer(v.dtype) for v, _ in builder.leaves)
    params = tuple(d for d, _ in builder.params)
    k = step.kernel
    if isinstance(k, Reduction):
        second = exprs[1] if k.second is not None else None
        epilogues = tuple(exprs[2:] if second is not None else exprs[1:])
        return dataclasses.replace(
            k,
            name=name,
            inputs=inputs,
            prologue=exprs[0],
            second=second,
            epilogues=epilogues,
            params=params,
        )
    return dataclasses.replace(k, name=name, inputs=inputs, exprs=tuple(exprs), params=params)
