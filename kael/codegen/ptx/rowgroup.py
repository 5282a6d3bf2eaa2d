"""The threads that share one row in codegen/ptx/rows.py's kernels: what each holds, how
they fold it.

A *group* is one warp (short rows; a CTA's THREADS // WARP warps take a row each) or a
whole CTA of THREADS threads (long rows). Thread t of a group of G threads owns the
row's vectors t, t + G, t + 2G, ..., a vector being W elements (16 bytes, where the row,
its stride and every pointer allow; else one element), so a warp's loads are consecutive
addresses: coalesced, and 128-bit where W > 1. With `cached` K > 0 a thread loads its K
vectors once into registers and every pass over the row reads them there: rows of
((K - 1) G, K G] vectors cost one read and one write of memory, and only the last vector
may lie past the row (masked: it reads and writes nothing). With K = 0 each pass walks
the row again in a loop, STREAMED vectors a thread a step; the re-reads hit L2.

`Values` are per-element values over the row (x as loaded, exp(x - max), ...), each
computed once per vector (a memo per slot), so a pass reuses what an earlier one made in
registers, and a streamed pass computes everything it needs inside its own loop.

A reduction folds each thread's vectors in order (a vector's W values by a pairwise tree;
cached or streamed alike), then the warp by butterfly shuffles (every lane ends with the
same bits: each step adds the same two operands), then, for a CTA, the warps' totals
through shared memory, every thread folding all WARPS of them in one fixed tree. So a
row's results depend on its length and the launch shape only, never on timing, and
repeat run to run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from llvmlite import ir

from kael.codegen.lowering import i64, memory_type, narrow, widen
from kael.codegen.ptx.kernel import sreg
from kael.codegen.ptx.warp import THREADS, WARP, WARPS, barrier, shared_array, shuffle
from kael.runtime.dtypes import DType

I64 = ir.IntType(64)
VECTOR_BYTES = 16  # the widest global load a thread issues: ld.global.v4.b32
STREAMED = 4  # vectors a thread takes a step of a streamed pass
# Combine (builder, accumulated, new) -> combined, as codegen/cpu/rows.py's fadd, nan_max.
Combine = Callable[[ir.IRBuilder, ir.Value, ir.Value], ir.Value]


@dataclass(frozen=True)
class Shape:
    """How a kernel lays a row over its threads: `group` threads per row (WARP or
    THREADS), `cached` vectors per thread held in registers (0: streamed), `width`
    elements per vector."""

    group: int
    cached: int
    width: int

    @property
    def rows_per_cta(self) -> int:
        return THREADS // self.group

    @property
    def text(self) -> str:
        return f"g{self.group}_k{self.cached}_w{self.width}"


@dataclass(frozen=True)
class Slot:
    """One vector a thread works on: its index among the row's vectors, whether it lies
    inside the row (None: always), and its memo key."""

    index: ir.Value
    valid: ir.Value | None
    key: object


def tree(b: ir.IRBuilder, values: list[ir.Value], combine: Combine) -> ir.Value:
    """values folded pairwise in a fixed order, ((v0 v1) (v2 v3)) ..., depth first: only
    log2(n) partials are alive at once."""
    if len(values) == 1:
        return values[0]
    half = 1 << (len(values) - 1).bit_length() - 1
    return combine(b, tree(b, values[:half], combine), tree(b, values[half:], combine))


class Group:
    """The threads of one row: thread index, the rows this group takes, the reductions."""

    def __init__(self, b: ir.IRBuilder, shape: Shape):
        self.b, self.shape = b, shape
        tid = sreg(b, "tid.x")
        self.lane = b.and_(tid, i64(WARP - 1), name="lane")
        self.warp = b.lshr(tid, i64(5), name="warp")
        per_cta = i64(shape.rows_per_cta)
        if shape.group == WARP:
            self.thread = self.lane
            self.first_row = b.add(b.mul(sreg(b, "ctaid.x"), per_cta), self.warp, name="row0")
        else:
            self.thread = tid
            self.first_row = sreg(b, "ctaid.x")
        self.row_step = b.mul(sreg(b, "nctaid.x"), per_cta, name="row_step")
        self._arrays = 0

    def reduce(self, values: list[ir.Value], combines: list[Combine]) -> list[ir.Value]:
        """Each value folded over the group (all in one pass: one barrier for a CTA); every
        thread gets the same bits."""
        b = self.b
        for mask in (16, 8, 4, 2, 1):
            values = [c(b, v, shuffle(b, v, mask)) for v, c in zip(values, combines)]
        if self.shape.group == WARP:
            return values
        arrays = []
        for v in values:
            self._arrays += 1
            arrays.append(shared_array(b.module, v.type, f"row_partials{self._arrays}"))
        zero = i64(0)
        with b.if_then(b.icmp_unsigned("==", self.lane, zero)):
            for v, array in zip(values, arrays):
                b.store(v, b.gep(array, [zero, self.warp]))
        barrier(b)
        return [
            tree(b, [b.load(b.gep(array, [zero, i64(w)])) for w in range(WARPS)], c)
            for array, c in zip(arrays, combines)
        ]

    def end_row(self) -> None:
        """After a row: a CTA waits for all its threads, so the next row's partials never
        overwrite shared memory another thread still reads."""
        if self.shape.group != WARP:
            barrier(self.b)


class Values:
    """Per-element values of the row, as a thread holds them: `at(slot)` gives the W
    values of one vector (in the compute type), made once per slot."""

    def __init__(self, row: Row, make: Callable[[Slot], list[ir.Value]]):
        self.row, self.make = row, make
        self.memo: dict[object, list[ir.Value]] = {}
        row.values_made.append(self)

    def at(self, slot: Slot) -> list[ir.Value]:
        got = self.memo.get(slot.key)
        if got is None:
            got = self.memo[slot.key] = self.make(slot)
        return got

    def map(self, fn: Callable[[ir.Value], ir.Value]) -> Values:
        """fn of each element."""
        return Values(self.row, lambda s: [fn(v) for v in self.at(s)])

    def zip(self, other: Values, fn: Callable[[ir.Value, ir.Value], ir.Value]) -> Values:
        """fn of each element here and the one at the same column of `other`."""
        return Values(self.row, lambda s: [fn(v, o) for v, o in zip(self.at(s), other.at(s))])


class Row:
    """One row being worked on by a group: its slots, loads, reductions and stores."""

    def __init__(self, group: Group, dtype: DType, cols: ir.Value, out: ir.Value):
        self.group, self.b, self.dtype = group, group.b, dtype
        self.shape, self.out = group.shape, out
        self.vectors = self.b.udiv(cols, i64(self.shape.width), name="vectors")
        self.values_made: list[Values] = []
        self.slots = [self._slot(k) for k in range(self.shape.cached)]  # made up front: they
        # dominate every pass, conditional ones included

    # ---- memory --------------------------------------------------------------------------

    def _pointer(self, base: ir.Value, index: ir.Value) -> ir.Value:
        """The address of vector `index` of the row at `base` (an element pointer)."""
        w = self.shape.width
        at = self.b.gep(base, [self.b.mul(index, i64(w))])
        return at if w == 1 else self.b.bitcast(at, memory_type(self.dtype, w).as_pointer())

    def _align(self) -> int:
        return VECTOR_BYTES if self.shape.width > 1 else self.dtype.itemsize

    def loaded(self, base: ir.Value) -> Values:
        """The row's elements at `base` (x's row, or the weight), in the compute type."""
        return Values(self, lambda s: self._load(base, s))

    def _load(self, base: ir.Value, slot: Slot) -> list[ir.Value]:
        b, w = self.b, self.shape.width
        if slot.valid is None:
            raw = b.load(self._pointer(base, slot.index), align=self._align())
        else:  # a slot past the row reads nothing: zeros, which every user masks off
            pre = b.block
            with b.if_then(slot.valid):
                got = b.load(self._pointer(base, slot.index), align=self._align())
                inside = b.block
            t = got.type
            raw = b.phi(t)
            raw.add_incoming(got, inside)
            raw.add_incoming(ir.Constant(t, None), pre)
        items = [raw] if w == 1 else [b.extract_element(raw, i64(i)) for i in range(w)]
        return [widen(b, v, self.dtype) for v in items]

    def store(self, values: Values) -> None:
        """Each element, rounded once to the row's dtype, into the output row."""
        b, w = self.b, self.shape.width

        def put(slot: Slot) -> None:
            items = [narrow(b, v, self.dtype) for v in values.at(slot)]
            vec = items[0]
            if w > 1:
                vec = ir.Constant(memory_type(self.dtype, w), None)
                for i, v in enumerate(items):
                    vec = b.insert_element(vec, v, i64(i))
            at = self._pointer(self.out, slot.index)
            if slot.valid is None:
                b.store(vec, at, align=self._align())
            else:
                with b.if_then(slot.valid):
                    b.store(vec, at, align=self._align())

        self._each(put)

    # ---- passes --------------------------------------------------------------------------

    def totals(self, parts: list[tuple[Values, ir.Constant, Combine]]) -> list[ir.Value]:
        """Each (values, neutral, combine) folded over the row, in one pass and one group
        reduction (`neutral` has the elements' type); every thread gets the same totals."""
        b = self.b
        if self.shape.cached:  # a slot's lanes by a tree, the slots in order, as streamed
            own: list[ir.Value | None] = [None] * len(parts)
            for slot in self.slots:
                for i, (values, neutral, c) in enumerate(parts):
                    v = self._folded(slot, values, neutral, c)
                    own[i] = v if own[i] is None else c(b, own[i], v)
        else:
            accs = []
            for _, neutral, _ in parts:
                with b.goto_entry_block():  # an entry-block alloca: mem2reg makes it phis
                    accs.append(b.alloca(neutral.type))
                b.store(neutral, accs[-1])

            def step(slot: Slot) -> None:
                for acc, (values, neutral, c) in zip(accs, parts):
                    b.store(c(b, b.load(acc), self._folded(slot, values, neutral, c)), acc)

            self._each(step)
            own = [b.load(acc) for acc in accs]
        return self.group.reduce(own, [c for _, _, c in parts])

    def _folded(self, slot: Slot, values: Values, neutral: ir.Constant, c: Combine) -> ir.Value:
        """A slot's W values folded by a tree; `neutral` where the slot lies past the row."""
        v = tree(self.b, values.at(slot), c)
        return v if slot.valid is None else self.b.select(slot.valid, v, neutral)

    def total(self, values: Values, neutral: ir.Constant, combine: Combine) -> ir.Value:
        return self.totals([(values, neutral, combine)])[0]

    def _slot(self, k: int) -> Slot:
        """Cached slot k: vector t + k G of the row. A kernel holding K vectors a thread
        runs rows of ((K - 1) G, K G] vectors (rows.shape_for), so only the last slot may
        lie past the row: one predicate, not K held through every pass."""
        index = self.b.add(self.group.thread, i64(k * self.shape.group), name=f"v{k}")
        if k < self.shape.cached - 1:
            return Slot(index, None, k)
        return Slot(index, self.b.icmp_signed("<", index, self.vectors, name="inside"), k)

    def _each(self, body: Callable[[Slot], None]) -> None:
        """body over this thread's slots: the cached ones, or a loop over the row taking
        STREAMED of them a step (their loads all in flight before any is used)."""
        if self.shape.cached:
            for slot in self.slots:
                body(slot)
            return
        b, g = self.b, self.shape.group
        pre = b.block
        head, loop, done = (b.append_basic_block(n) for n in ("pass.head", "pass", "pass.done"))
        b.branch(head)
        b.position_at_end(head)
        first = b.phi(I64, name="vec")
        first.add_incoming(self.group.thread, pre)
        b.cbranch(b.icmp_signed("<", first, self.vectors), loop, done)
        b.position_at_end(loop)
        step = object()  # a new key: this pass computes its own values
        for u in range(STREAMED):
            index = b.add(first, i64(u * g))
            inside = None if u == 0 else b.icmp_signed("<", index, self.vectors)
            body(Slot(index, inside, (step, u)))
        first.add_incoming(b.add(first, i64(STREAMED * g)), b.block)
        b.branch(head)
        b.position_at_end(done)

    @contextlib.contextmanager
    def only_if(self, cond: ir.Value) -> Iterator[None]:
        """Code run where the group-uniform `cond` holds (a rare path). Inside, every value
        is made anew, loads included: no value of the row stays alive for it past its last
        use outside (registers), and none it makes is used after it (the memos forget)."""
        kept = [v.memo for v in self.values_made]
        for v in self.values_made:
            v.memo = {}
        with self.b.if_then(cond, likely=False):
            yield
        for v, memo in zip(self.values_made, kept):
            v.memo = memo
