"""Hand-written index kernels: gather, put, scatter_add, index offsets, nonzero and the
masked compaction.

Every kernel walks a rank-generic index space with an odometer: the rank, the sizes
and each operand's strides (in elements) are run-time words after the fixed ones, so
one compiled function per dtype serves every shape and layout. Walk kernels have
three operands: `dense` is read or written at the walked position, `index` holds
the index values, and `table` is read or written at its own walked offset plus
index * stride (the indexed dim's stride is 0 in the walk). An index is mapped by the
`mode` word (STRICT, WRAP negatives once, or MODULO) and checked against `size`
inside the kernel; a bad one lowers the error word to its walk position with an
atomic min and writes nothing, so the caller can name the first bad index.

A complex walk of a gather, put or sum goes over the float parts instead: one more dim of
size 2, the pair (_as_parts); a product or an extreme of complex numbers is not partwise.

scatter_atomic is scatter_add for a GPU: every element its own work item, added with an
atomic add (float32, float64, int64, int32), in whatever order the hardware serializes.
scatter_add's work items are lines along the indexed dim (the walk puts that dim
last): two lines never write one element of a table without internal overlap, so the
split over threads is race-free and each element sums in index order. A thread walks
its lines one by one, or, when the indexed dim is not the source's fastest (index_add_
of rows), loops over the indexed dim outside and its lines' other coordinates inside.
A scatter with fewer lines than threads (the 1-d scatter_reduce of a long source into a
short table) splits the walk into chunks instead: each combines into its own private
table, filled with the reduction's identity first, and a second kernel folds the tables
into the destination in chunk order, element-parallel. Nothing reaches the destination
before every index has passed its check. Both ways, a run with unit source and index
strides prefetches the table element PREFETCH_AHEAD places on: a long scatter into a table
larger than L2 waits on its random read-modify-writes (16M into 1M float32: 0.75x the time).
Such a run whose probed indices mostly repeat their predecessor (sorted segment ids)
combines each stretch of one index in a register instead, in the same order: a
read-modify-write chain through memory waits on store forwarding (16M sorted into 1K
places: 28 -> 7.4 ms; into 1M: 15.5 -> 9.4 ms; random places unchanged). Other runs check
their indices CHECK_BLOCK at a time, and a block with none bad combines its elements without
a branch each (16M at random into 1M places on 2 threads, ~15 ms, is what the same loop
written in C takes: the read-modify-writes into L3 bound it). The fold of a unit-stride run
combines one table at a time into blocks that stay in L1, a vectorized loop. Gather's and
put's unit-stride runs check their blocks the same way and move a clean one unchecked (16M at
random from 1M float32: gather on 2 threads 48 -> 29 ms, what the same loop in C takes; from
64K 13 -> 8; a put, on one thread so that the last write wins, 181 -> 115 ms).
nonzero counts the nonzeros of fixed-size blocks in parallel, scans the counts in
place, then each block writes its coordinates from its start: the order is row-major
whatever the split, the result [count, rank] column-major as torch's (the write reads
count from the scan, so each coordinate's column is contiguous). The compaction (x[mask], masked_select) is the same listing with a
second operand: each block copies the values' rows where its mask holds, one-element rows
stored unconditionally so that a random mask costs no mispredicted branch (x[x > 0] of 16M
float32 on 2 threads: 44 -> 6.6 ms, against nonzero's coordinates and a gather).
"""

from __future__ import annotations

import ctypes
import functools
import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

from llvmlite import ir

from kael.codegen.cpu import handwritten, native_launch
from kael.codegen.cpu.loops import LoopBuilder
from kael.codegen.lowering import declare, i64, memory_type, narrow, targets_gpu, widen
from kael.runtime import launches
from kael.runtime.dtypes import INT64_MAX, DType, bool_, float32, float64, int32, int64
from kael.runtime.errors import UnsupportedDtype
from kael.runtime.launcher import count_launch, replayable

I64 = ir.IntType(64)

# How an index value becomes a position along the indexed dim.
STRICT, WRAP, MODULO = 0, 1, 2
# Walk kernels: what they do with the element the index selects.
KINDS = (
    "gather", "put", "scatter_add", "scatter_prod", "scatter_amax", "scatter_amin", "offsets",
    "scatter_atomic",
)  # fmt: skip
# The scatter reductions: line-owning walks that combine into the table.
SCATTERS = ("scatter_add", "scatter_prod", "scatter_amax", "scatter_amin")
# scatter_atomic's element types: a sum of one of these is one atomic add on a GPU.
ATOMIC_DTYPES = (float32, float64, int64, int32)
WALK_WORDS = (
    "dense", "table", "index", "error", "size", "stride", "mode", "write", "order", "total",
    "chunk", "share", "rank",
)  # fmt: skip
# A scatter's ways through its elements: whole lines, the indexed dim outside the others
# (both: work items are lines, the same result), or chunks of the walk into private tables.
ORDER_LINES, ORDER_OUTER, ORDER_PRIVATE = 0, 1, 2
# The fold of private tables into the destination (the scatters' second symbol).
FOLD_WORDS = ("table", "privates", "parts", "share", "rank")
NONZERO_WORDS = ("input", "counts", "out", "total", "rank")
# A listing's kernels: each block's count, each block's write, the scan of the counts.
STEPS = ("count", "write", "scan")
# The compaction's (x[mask], masked_select): the mask is the input, each hit copies a row.
COMPACT_WORDS = (*NONZERO_WORDS, "values", "row", "row_stride")
# Elements per nonzero (and compaction) work item: large enough that the scan over blocks is
# negligible.
NONZERO_BLOCK = 4096
# How many elements ahead a scatter's unit-stride run prefetches the table element it will
# combine into: enough reads in flight to hide L3's latency (16 and 64 were slower; 24 and
# 48 no faster in the blocked loop).
PREFETCH_AHEAD = 32
# A scatter's unit-stride run is judged by RUN_PROBES spots spread over it of RUN_PROBE
# indices each (two cache lines): at least RUN_SHARE[0] / RUN_SHARE[1] of their indices
# repeating their predecessor (stretches of 4 and longer, as sorted segment ids give) combine
# each stretch of one index in a register.
RUN_PROBES = 8
RUN_PROBE = 16
RUN_SHARE = (3, 4)
# Indices a scatter's unit-stride run checks at once: one vector compare and one branch a
# block, whose elements then combine unchecked (16M float32 at random into 1K places: 7.9 ->
# 7.3 ms on 2 threads; 1 thread's write pass into 1M places 38 -> 29 ms, into 1K 25 -> 13 ms).
# The IR stays scalar (LLVM's SLP makes the compare one vector instruction): a vector type
# in the module would take it off O3 (compiler.kernel_passes), and the check-only pass would
# lose its vectorization (16M indices: 4.4 -> 9.5 ms).
CHECK_BLOCK = 8
# Elements of a unit-stride run the fold combines one table at a time into: a loop LLVM
# vectorizes, over a block that stays in L1 (8 KiB of float32). 16M float32 into 1M places on
# 2 threads: the fold 0.58 -> 0.22 ms; 512 and 8192 no better.
FOLD_BLOCK = 2048


class _Walk:
    """Emits the odometer over [start, stop) of a rank-generic space with `operands` stride sets.

    `body(pos, offsets, inner)` runs once per element: its flat position, each operand's
    element offset and its coordinate along the last dim (the others are in `coord`).
    """

    def __init__(
        self,
        b: ir.IRBuilder,
        args: ir.Value,
        first: int,
        rank: ir.Value,
        operands: int,
        span: ir.Value | None = None,
    ):
        """`span`: the length of each stride array in the words (the rank unless the walk
        covers only the leading dims of a larger space)."""
        self.b, self.args, self.first, self.rank = b, args, first, rank
        self.span = rank if span is None else span
        self.loops = LoopBuilder(b)
        self.coord = b.alloca(I64, size=rank, name="coord")
        self.offs = [b.alloca(I64, name=f"off{k}") for k in range(operands)]
        self.rem = b.alloca(I64, name="rem")
        self.pos = b.alloca(I64, name="pos")
        self.dim = b.alloca(I64, name="dim")

    def word(self, i: ir.Value) -> ir.Value:
        return self.b.load(self.b.gep(self.args, [i]))

    def size(self, d: ir.Value) -> ir.Value:
        return self.word(self.b.add(i64(self.first), d))

    def stride(self, k: int, d: ir.Value) -> ir.Value:
        b = self.b
        return self.word(b.add(b.add(i64(self.first), b.mul(self.span, i64(k + 1))), d))

    def at(self, d: ir.Value) -> ir.Value:
        return self.b.gep(self.coord, [d])

    def add_to(self, var: ir.Value, delta: ir.Value) -> None:
        self.b.store(self.b.add(self.b.load(var), delta), var)

    def __call__(
        self,
        start: ir.Value,
        stop: ir.Value,
        body: Callable,
        uniform: tuple | None = None,
        origins: Sequence[ir.Value] | None = None,
        fixed: tuple[Sequence[int], Callable] | None = None,
    ) -> None:
        """Walk [start, stop), each operand's offsets counted from its origin (default 0).
        With `fixed` = (an inner stride per operand, run_body), a run whose strides are
        those goes to run_body(pos, bases, run), which may take them as constants. With
        `uniform` = (k, run_body), another run along the last dim where operand k's stride
        is 0 goes to run_body(pos, bases, inner strides, run) instead."""
        b, rank = self.b, self.rank
        for k, off in enumerate(self.offs):
            b.store(i64(0) if origins is None else origins[k], off)
        b.store(start, self.rem)

        def decompose(j):
            d = b.sub(b.sub(rank, i64(1)), j)
            size, rem = self.size(d), b.load(self.rem)
            c = b.srem(rem, size)
            b.store(b.sdiv(rem, size), self.rem)
            b.store(c, self.at(d))
            for k, off in enumerate(self.offs):
                self.add_to(off, b.mul(c, self.stride(k, d)))

        self.loops.counted(i64(0), rank, 1, decompose, "decompose")
        last = b.sub(rank, i64(1))
        inner_size = self.size(last)
        inner = [self.stride(k, last) for k in range(len(self.offs))]
        b.store(start, self.pos)
        head, run_block, done = (b.append_basic_block(f"walk.{n}") for n in ("head", "run", "done"))
        b.branch(head)
        b.position_at_end(head)
        pos = b.load(self.pos)
        b.cbranch(b.icmp_signed("<", pos, stop), run_block, done)
        b.position_at_end(run_block)
        c = b.load(self.at(last))
        left_in_dim, left = b.sub(inner_size, c), b.sub(stop, pos)
        run = b.select(b.icmp_signed("<", left_in_dim, left), left_in_dim, left)
        bases = [b.load(off) for off in self.offs]

        def loop(strides):
            def element(j):
                offsets = [b.add(base, b.mul(j, st)) for base, st in zip(bases, strides)]
                body(b.add(pos, j), offsets, b.add(c, j))

            self.loops.counted(i64(0), run, 1, element, "run")

        def general():
            if uniform is None:
                loop(inner)
                return
            k, run_body = uniform
            with b.if_else(b.icmp_signed("==", inner[k], i64(0))) as (same, varying):
                with same:
                    run_body(pos, bases, inner, run)
                with varying:
                    loop(inner)

        if fixed is None:
            general()
        else:
            steps, fixed_body = fixed
            match = [b.icmp_signed("==", st, i64(k)) for st, k in zip(inner, steps)]
            with b.if_else(_all(b, match), likely=True) as (constant, varying):
                with constant:
                    fixed_body(pos, bases, run)
                with varying:
                    general()
        b.store(b.add(pos, run), self.pos)
        b.store(b.add(c, run), self.at(last))
        for base, st, off in zip(bases, inner, self.offs):
            b.store(b.add(base, b.mul(run, st)), off)
        self.carry(last)
        b.branch(head)
        b.position_at_end(done)

    def carry(self, last: ir.Value) -> None:
        """Roll every full dim over into the one before it, from the last dim up."""
        b = self.b
        b.store(last, self.dim)
        head, check, roll, done = (
            b.append_basic_block(f"carry.{n}") for n in ("head", "check", "roll", "done")
        )
        b.branch(head)
        b.position_at_end(head)
        d = b.load(self.dim)
        b.cbranch(b.icmp_signed(">", d, i64(0)), check, done)
        b.position_at_end(check)
        size = self.size(d)
        b.cbranch(b.icmp_signed(">=", b.load(self.at(d)), size), roll, done)
        b.position_at_end(roll)
        outer = b.sub(d, i64(1))
        b.store(i64(0), self.at(d))
        self.add_to(self.at(outer), i64(1))
        for k, off in enumerate(self.offs):
            self.add_to(off, b.sub(self.stride(k, outer), b.mul(size, self.stride(k, d))))
        b.store(outer, self.dim)
        b.branch(head)
        b.position_at_end(done)


def _all(b: ir.IRBuilder, conditions: Sequence[ir.Value]) -> ir.Value:
    result = conditions[0]
    for c in conditions[1:]:
        result = b.and_(result, c)
    return result


def _prefetch_write(b: ir.IRBuilder, ptr: ir.Value) -> None:
    """Ask for the cache line at `ptr` into L1 to be written (never faults: the address
    may be anything)."""
    i32 = ir.IntType(32)
    fnty = ir.FunctionType(ir.VoidType(), [ir.IntType(8).as_pointer(), i32, i32, i32])
    fn = declare(b.module, "llvm.prefetch.p0", fnty)
    b.call(fn, [b.bitcast(ptr, fn.args[0].type), *(ir.Constant(i32, v) for v in (1, 3, 1))])


def _any(b: ir.IRBuilder, conditions: Sequence[ir.Value]) -> ir.Value:
    return functools.reduce(b.or_, conditions)


def _words(b: ir.IRBuilder, args: ir.Value, names: Sequence[str]) -> dict[str, ir.Value]:
    return {name: b.load(b.gep(args, [i64(i)]), name=name) for i, name in enumerate(names)}


def _ptr(b: ir.IRBuilder, word: ir.Value, t: ir.Type) -> ir.Value:
    return b.inttoptr(word, t.as_pointer())


def _combine(kind: str, b: ir.IRBuilder, dtype: DType, x: ir.Value, y: ir.Value) -> ir.Value:
    """x combined with y by scatter `kind`: add (_add), multiply, or the larger (smaller)
    with NaN winning, in the dtype's arithmetic (half types through float32)."""
    if kind == "scatter_add":
        return _add(b, dtype, x, y)
    wide = dtype.is_half
    a, c = (widen(b, x, dtype), widen(b, y, dtype)) if wide else (x, y)
    if kind == "scatter_prod":
        if dtype.is_floating_point:
            r = b.fmul(a, c)
        else:
            r = b.and_(a, c) if dtype is bool_ else b.mul(a, c)
    elif dtype.is_floating_point:
        op = ">" if kind == "scatter_amax" else "<"
        takes = b.or_(b.fcmp_ordered(op, c, a), b.fcmp_unordered("uno", c, c))
        r = b.select(b.fcmp_unordered("uno", a, a), a, b.select(takes, c, a))
    else:
        op = ">" if kind == "scatter_amax" else "<"
        bigger = b.icmp_signed(op, c, a) if dtype.signed else b.icmp_unsigned(op, c, a)
        r = b.select(bigger, c, a)
    return narrow(b, r, dtype) if wide else r


def _add(b: ir.IRBuilder, dtype: DType, x: ir.Value, y: ir.Value) -> ir.Value:
    """x + y as the dtype adds: float (float16/bfloat16 in float32, rounded back), wrapping
    integers, or logical or for bool."""
    if dtype.is_half:
        return narrow(b, b.fadd(widen(b, x, dtype), widen(b, y, dtype)), dtype)
    if dtype.is_floating_point:
        return b.fadd(x, y)
    return b.or_(x, y) if dtype is bool_ else b.add(x, y)


def _walk_function(module: ir.Module, kind: str, dtype: DType) -> str:
    """Emit one walk kernel: `kind` of KINDS for elements of `dtype`; returns its symbol."""
    symbol = f"kael_{kind}_{dtype.name}"
    fn, b = handwritten.kernel_function(module, symbol)
    w = _words(b, fn.args[0], WALK_WORDS)
    t = memory_type(dtype)
    dense, table = _ptr(b, w["dense"], t), _ptr(b, w["table"], t)
    index, error = _ptr(b, w["index"], I64), _ptr(b, w["error"], I64)
    value = b.alloca(I64, name="value")
    repeats, cursor = b.alloca(I64, name="repeats"), b.alloca(I64, name="cursor")
    pairs = b.alloca(I64, name="pairs")
    walk = _Walk(b, fn.args[0], len(WALK_WORDS), w["rank"], 3)
    writes = b.icmp_signed("!=", w["write"], i64(0))
    gpu = targets_gpu(module)

    def element(pos, offs, _inner):
        od, ot, oi = offs
        _mapped_index(b, w, b.load(b.gep(index, [oi])), value)
        v = b.load(value)
        ok = b.icmp_unsigned("<", v, w["size"])
        with b.if_else(ok, likely=True) as (good, bad):
            with good, b.if_then(writes, likely=True):
                at = b.gep(table, [b.add(ot, b.mul(v, w["stride"]))])
                here = b.gep(dense, [od])
                if kind == "gather":
                    b.store(b.load(at), here)
                elif kind == "put":
                    b.store(b.load(here), at)
                elif kind in SCATTERS:
                    b.store(_combine(kind, b, dtype, b.load(at), b.load(here)), at)
                elif kind == "scatter_atomic":
                    add = "fadd" if dtype.is_floating_point else "add"
                    b.atomic_rmw(add, at, b.load(here), "monotonic")
                else:  # offsets: dense accumulates index * stride over several indices
                    b.store(b.add(b.load(here), b.mul(v, w["stride"])), here)
            with bad:
                b.atomic_rmw("min", error, pos, "monotonic")

    def same_index(pos, bases, inner, run):
        """A run with one index value (index_select, t[rows]): one check, then a plain copy
        that LLVM vectorizes when both strides turn out to be 1."""
        od, ot, oi = bases
        _mapped_index(b, w, b.load(b.gep(index, [oi])), value)
        v = b.load(value)
        with b.if_else(b.icmp_unsigned("<", v, w["size"]), likely=True) as (good, bad):
            with good, b.if_then(writes, likely=True):
                first = b.add(ot, b.mul(v, w["stride"]))

                def copy(j):
                    at = b.gep(table, [b.add(first, b.mul(j, inner[1]))])
                    here = b.gep(dense, [b.add(od, b.mul(j, inner[0]))])
                    if kind == "gather":
                        b.store(b.load(at), here)
                    else:
                        b.store(b.load(here), at)

                walk.loops.counted(i64(0), run, 1, copy, "copy")
            with bad:
                b.atomic_rmw("min", error, pos, "monotonic")

    begin, end = fn.args[1], fn.args[2]

    def check(pos, offs, _inner):
        bad = b.icmp_unsigned(">=", b.load(b.gep(index, [offs[2]])), w["size"])
        here = b.select(bad, pos, i64(INT64_MAX))
        old = b.load(first_bad)
        b.store(b.select(b.icmp_signed("<", here, old), here, old), first_bad)

    def step(j):
        origins = [b.mul(j, walk.stride(0, last)), i64(0), b.mul(j, walk.stride(2, last))]

        def at_j(pos, offs, inner):
            element(b.add(b.mul(pos, line), j), offs, inner)

        outer(begin, end, at_j, origins=origins)

    def into_private(pos, offs, _inner):
        """element() for a private table: the index STRICT, the table's stride 1."""
        od, ot, oi = offs
        v = b.load(b.gep(index, [oi]))
        with b.if_else(b.icmp_unsigned("<", v, w["size"]), likely=True) as (good, bad):
            with good:
                at = b.gep(table, [b.add(ot, v)])
                b.store(_combine(kind, b, dtype, b.load(at), b.load(b.gep(dense, [od]))), at)
            with bad:
                b.atomic_rmw("min", error, pos, "monotonic")

    def unit_runs(body, stride, mapped):
        """walk()'s `fixed` for runs of `body` with unit source and index strides, on the
        CPU (`mapped`: the mode maps each index, as in element(); else it is STRICT, as in
        into_private()). A run whose probes (RUN_PROBES spots of RUN_PROBE indices) mostly
        repeat their predecessor (sorted segments) combines each stretch of one index in a
        register: one load and one store a stretch instead of a read-modify-write chain
        through memory, combined in the same order (the same bits). Other runs go element by
        element, each first prefetching for a write the table element of the index
        PREFETCH_AHEAD places on (the run's last near its end): a long scatter's cost is its
        random read-modify-writes into a table larger than L2. (Judging blocks of 256 apart
        cost random places 1.2-1.45x the time: the loop's pipeline restarts each block.)"""

        def run_body(pos, bases, run):
            od, ot, oi = bases
            b.store(i64(0), repeats)
            b.store(i64(0), pairs)

            def probe(spot):
                begin = b.sdiv(b.mul(run, spot), i64(RUN_PROBES))
                end = b.add(begin, i64(RUN_PROBE))
                end = b.select(b.icmp_signed("<", end, run), end, run)

                def count(j):
                    prev, here = (
                        b.load(b.gep(index, [b.add(oi, k)])) for k in (b.sub(j, i64(1)), j)
                    )
                    same = b.zext(b.icmp_signed("==", prev, here), I64)
                    b.store(b.add(b.load(repeats), same), repeats)
                    b.store(b.add(b.load(pairs), i64(1)), pairs)

                walk.loops.counted(b.add(begin, i64(1)), end, 1, count, "repeats")

            walk.loops.counted(i64(0), i64(RUN_PROBES), 1, probe, "probe")
            seen = b.load(pairs)
            segments = b.icmp_signed(
                ">=", b.mul(b.load(repeats), i64(RUN_SHARE[1])), b.mul(seen, i64(RUN_SHARE[0]))
            )
            with b.if_else(b.and_(segments, b.icmp_signed(">", seen, i64(0)))) as (runs, lone):
                with runs:
                    in_registers(bases, pos, i64(0), run, stride, mapped)
                with lone:
                    in_blocks(body, bases, pos, run, stride)

        return None if gpu else ((1, 0, 1), run_body)

    def in_blocks(body, bases, pos, run, stride):
        """A unit-stride run in blocks of CHECK_BLOCK indices checked together: a block with
        none out of range (which every mode maps to itself) moves its elements unchecked;
        the others, and the run's last elements, go element by element through `body`. A
        scatter first prefetches for a write the table element of the index PREFETCH_AHEAD
        places on (the run's last near its end). A gather's reads are independent and need
        no prefetch (in C, 16M at random from 1M float32: none, 16, 32 and 64 ahead alike);
        a put's stores neither (16M into 1M float32, one thread: 115 ms, 147 prefetched)."""
        od, ot, oi = bases
        ahead_by = PREFETCH_AHEAD if kind in SCATTERS else 0
        last = b.sub(run, i64(1))

        def prefetch(j):
            ahead = b.load(b.gep(index, [b.add(oi, j)]))
            _prefetch_write(b, b.gep(table, [b.add(ot, b.mul(ahead, stride))]))

        def one(j):
            if ahead_by:
                ahead = b.add(j, i64(ahead_by))
                prefetch(b.select(b.icmp_signed("<", ahead, last), ahead, last))
            body(b.add(pos, j), (b.add(od, j), ot, b.add(oi, j)), None)

        def move(j):
            v = b.load(b.gep(index, [b.add(oi, j)]))
            at = b.gep(table, [b.add(ot, b.mul(v, stride))])
            here = b.gep(dense, [b.add(od, j)])
            if kind == "gather":
                b.store(b.load(at), here)
            elif kind == "put":
                b.store(b.load(here), at)
            else:
                b.store(_combine(kind, b, dtype, b.load(at), b.load(here)), at)

        def block(j):
            got = [b.load(b.gep(index, [b.add(oi, b.add(j, i64(k)))])) for k in range(CHECK_BLOCK)]
            bad = _any(b, [b.icmp_unsigned(">=", v, w["size"]) for v in got])
            if kind not in SCATTERS:  # a scatter's runs are its write pass's
                bad = b.or_(bad, b.not_(writes))
            with b.if_else(bad, likely=False) as (checked, unchecked):
                with checked:
                    walk.loops.counted(j, b.add(j, i64(CHECK_BLOCK)), 1, one, "checked")
                with unchecked:
                    # Each index loaded again: reusing the check's loads, LLVM left the
                    # check eight compares and branches, not one vector compare.
                    for k in range(CHECK_BLOCK):
                        jk = b.add(j, i64(k))
                        if ahead_by:
                            prefetch(b.add(jk, i64(ahead_by)))
                        move(jk)

        # Blocks while their prefetches read inside the run.
        done = walk.loops.counted(i64(0), b.sub(run, i64(ahead_by)), CHECK_BLOCK, block, "blocks")
        walk.loops.counted(done, run, 1, one, "tail")

    def in_registers(bases, pos, start, stop, stride, mapped):
        """[start, stop) of a unit-stride run, each run of one index value combined in a
        register from the table's value on: checked once, one load, one store."""
        od, ot, oi = bases
        b.store(start, cursor)
        head, body_block, done = (
            b.append_basic_block(f"runs.{n}") for n in ("head", "body", "done")
        )
        b.branch(head)
        b.position_at_end(head)
        j = b.load(cursor)
        b.cbranch(b.icmp_signed("<", j, stop), body_block, done)
        b.position_at_end(body_block)
        raw = b.load(b.gep(index, [b.add(oi, j)]))
        ok, v = locate(raw, mapped)
        with b.if_else(ok, likely=True) as (good, bad):
            with good:
                at = b.gep(table, [b.add(ot, b.mul(v, stride))])
                entry = b.block
                loop, check, end = (
                    b.append_basic_block(f"run.{n}") for n in ("loop", "check", "end")
                )
                first = b.load(at)
                b.branch(loop)
                b.position_at_end(loop)
                k, acc = b.phi(I64), b.phi(first.type)
                k.add_incoming(j, entry)
                acc.add_incoming(first, entry)
                acc_next = _combine(kind, b, dtype, acc, b.load(b.gep(dense, [b.add(od, k)])))
                k_next = b.add(k, i64(1))
                b.cbranch(b.icmp_signed("<", k_next, stop), check, end)
                b.position_at_end(check)
                same = b.icmp_signed("==", b.load(b.gep(index, [b.add(oi, k_next)])), raw)
                k.add_incoming(k_next, check)
                acc.add_incoming(acc_next, check)
                b.cbranch(same, loop, end)
                b.position_at_end(end)
                b.store(acc_next, at)
                b.store(k_next, cursor)
            with bad:
                b.atomic_rmw("min", error, b.add(pos, j), "monotonic")
                b.store(b.add(j, i64(1)), cursor)
        b.branch(head)
        b.position_at_end(done)

    def locate(raw, mapped):
        """The index `raw` as the walk maps it (`mapped`) and whether it is in range."""
        if mapped:
            _mapped_index(b, w, raw, value)
            raw = b.load(value)
        return b.icmp_unsigned("<", raw, w["size"]), raw

    def private(item):
        """Chunk `item` of the walk into table number `item`, the identity beforehand."""
        origin = b.mul(item, w["share"])
        identity = _identity(kind, b, dtype)
        walk.loops.counted(
            i64(0), w["share"], 1, lambda j: b.store(identity, b.gep(table, [b.add(origin, j)])),
            "fill",
        )  # fmt: skip
        start = b.mul(item, w["chunk"])
        stop = b.add(start, w["chunk"])
        stop = b.select(b.icmp_signed("<", stop, w["total"]), stop, w["total"])
        origins = [i64(0), origin, i64(0)]
        walk(
            start, stop, into_private, origins=origins, fixed=unit_runs(into_private, i64(1), False)
        )

    if kind not in SCATTERS:
        fixed = None
        if kind in ("gather", "put") and not gpu:
            fixed = (
                (1, 0, 1),
                lambda pos, bases, run: in_blocks(element, bases, pos, run, w["stride"]),
            )
        same = (2, same_index) if kind in ("gather", "put") else None
        walk(begin, end, element, same, fixed=fixed)
        b.ret_void()
        return symbol
    # Work items are lines of the last (indexed) dim: each owns its destination elements.
    # ORDER_LINES walks each line whole; ORDER_OUTER loops over the indexed dim outside and
    # walks the items' range of the other dims inside (for a source whose indexed dim is
    # not its fastest). The check-only pass (STRICT indices) keeps its first bad position
    # in a register: a branch-free loop.
    last = b.sub(w["rank"], i64(1))
    line = walk.size(last)
    first_bad = b.alloca(I64, name="first_bad")
    outer = _Walk(b, fn.args[0], len(WALK_WORDS), last, 3, span=w["rank"])
    order = w["order"]
    by_lines = b.icmp_signed("==", order, i64(ORDER_LINES))
    chunks = b.and_(writes, b.icmp_signed("==", order, i64(ORDER_PRIVATE)))
    with b.if_else(chunks) as (split, lines):
        with split:
            walk.loops.counted(begin, end, 1, private, "private")
        with lines, b.if_else(b.and_(writes, b.not_(by_lines))) as (across, whole):
            with across:
                walk.loops.counted(i64(0), line, 1, step, "across")
            with whole:
                start, stop = b.mul(begin, line), b.mul(end, line)
                with b.if_else(writes) as (write, check_only):
                    with write:
                        walk(start, stop, element, fixed=unit_runs(element, w["stride"], True))
                    with check_only:
                        b.store(i64(INT64_MAX), first_bad)
                        walk(start, stop, check)
                        found = b.load(first_bad)
                        with b.if_then(b.icmp_signed("<", found, i64(INT64_MAX))):
                            b.atomic_rmw("min", error, found, "monotonic")
    b.ret_void()
    return symbol


def _identity(kind: str, b: ir.IRBuilder, dtype: DType) -> ir.Value:
    """The element x with combine(y, x) == y for every y under scatter `kind`, as stored:
    -0.0 for a float sum (a -0.0 stays -0.0), 1, or the dtype's lowest (highest) value."""
    t = memory_type(dtype)
    if dtype.is_floating_point:
        value = {
            "scatter_add": -0.0, "scatter_prod": 1.0, "scatter_amax": -math.inf,
            "scatter_amin": math.inf,
        }[kind]  # fmt: skip
        return (
            narrow(b, ir.Constant(ir.FloatType(), value), dtype)
            if dtype.is_half
            else (ir.Constant(t, value))
        )
    if dtype is bool_:
        low, high = 0, 1
    else:
        low, high = dtype.min, dtype.max
    value = {"scatter_add": 0, "scatter_prod": 1, "scatter_amax": low, "scatter_amin": high}[kind]
    return ir.Constant(t, dtype.wrap(value))


def _fold_function(module: ir.Module, kind: str, dtype: DType) -> str:
    """table[e] combined with privates[k * share + e] for k = 0, 1, ..., parts - 1, over the
    walked elements e of the table (each a work item)."""
    symbol = f"kael_{kind}_{dtype.name}_fold"
    fn, b = handwritten.kernel_function(module, symbol)
    w = _words(b, fn.args[0], FOLD_WORDS)
    t = memory_type(dtype)
    table, privates = _ptr(b, w["table"], t), _ptr(b, w["privates"], t)
    acc = b.alloca(t, name="acc")
    walk = _Walk(b, fn.args[0], len(FOLD_WORDS), w["rank"], 2)

    def element(_pos, offs, _inner):
        at = b.gep(table, [offs[0]])
        b.store(b.load(at), acc)

        def part(k):
            mine = b.load(b.gep(privates, [b.add(offs[1], b.mul(k, w["share"]))]))
            b.store(_combine(kind, b, dtype, b.load(acc), mine), acc)

        walk.loops.counted(i64(0), w["parts"], 1, part, "part")
        b.store(b.load(acc), at)

    def unit_run(_pos, bases, run):
        """A run with unit strides (on the CPU), FOLD_BLOCK elements at a time: each table in
        turn combines into the block (each element in the same order; the block stays in
        L1), a loop the vectorizer takes."""
        ot, op = bases

        def block(q):
            start = b.mul(q, i64(FOLD_BLOCK))
            stop = b.add(start, i64(FOLD_BLOCK))
            stop = b.select(b.icmp_signed("<", stop, run), stop, run)

            def part(k):
                origin = b.add(op, b.mul(k, w["share"]))

                def each(j):
                    at = b.gep(table, [b.add(ot, j)])
                    mine = b.load(b.gep(privates, [b.add(origin, j)]))
                    b.store(_combine(kind, b, dtype, b.load(at), mine), at)

                walk.loops.counted(start, stop, 1, each, "fold.unit")

            walk.loops.counted(i64(0), w["parts"], 1, part, "fold.part")

        blocks = b.sdiv(b.add(run, i64(FOLD_BLOCK - 1)), i64(FOLD_BLOCK))
        walk.loops.counted(i64(0), blocks, 1, block, "fold.block")

    fixed = None if targets_gpu(module) else ((1, 1), unit_run)
    walk(fn.args[1], fn.args[2], element, fixed=fixed)
    b.ret_void()
    return symbol


def _mapped_index(b: ir.IRBuilder, w: dict[str, ir.Value], v: ir.Value, out: ir.Value) -> None:
    """Store into `out` the index v as the mode maps it; the caller checks 0 <= it < size."""
    size, mode = w["size"], w["mode"]
    negative = b.icmp_signed("<", v, i64(0))
    wrapped = b.select(negative, b.add(v, size), v)
    b.store(b.select(b.icmp_signed("==", mode, i64(WRAP)), wrapped, v), out)
    modulo = b.and_(b.icmp_signed("==", mode, i64(MODULO)), b.icmp_signed(">", size, i64(0)))
    with b.if_then(modulo, likely=False):
        r = b.srem(v, size)
        b.store(b.select(b.icmp_signed("<", r, i64(0)), b.add(r, size), r), out)


def _build_walk(kind: str, dtype: DType) -> Callable[[ir.Module], list[str]]:
    def build(module: ir.Module) -> list[str]:
        symbols = [_walk_function(module, kind, dtype)]
        return symbols + [_fold_function(module, kind, dtype)] if kind in SCATTERS else symbols

    return build


def _is_nonzero(b: ir.IRBuilder, dtype: DType, x: ir.Value) -> ir.Value:
    x = widen(b, x, dtype)
    if dtype.is_floating_point:
        return b.fcmp_unordered("!=", x, ir.Constant(x.type, 0.0))  # NaN counts as nonzero
    return b.icmp_unsigned("!=", x, ir.Constant(x.type, 0))


def _listing_function(module: ir.Module, dtype: DType, write: bool, item: int = 0) -> str:
    """Count (or, with `write`, list) the nonzeros of each block: nonzero's coordinates, or
    with `item` (bytes) the compaction's rows of values where a bool mask holds (COMPACT_WORDS:
    `row` elements `row_stride` apart from each hit's place in the values operand). A block
    writes exactly the places its count gave it (the next block's start bounds them; places
    it no longer finds get zeros): an input another thread changes between the two launches
    gives wrong places, never a write past them or stale memory."""
    symbol = _listing_symbol(dtype, "write" if write else "count", item)
    fn, b = handwritten.kernel_function(module, symbol)
    names = COMPACT_WORDS if item else NONZERO_WORDS
    w = _words(b, fn.args[0], names)
    rank = w["rank"]
    data = _ptr(b, w["input"], memory_type(dtype))
    counts = _ptr(b, w["counts"], I64)
    found, limit = b.alloca(I64, name="found"), b.alloca(I64, name="limit")
    walk = _Walk(b, fn.args[0], len(names), rank, 2 if item else 1)
    last = b.sub(rank, i64(1))
    if item:
        word = ir.IntType(8 * item)
        out, values = _ptr(b, w["out"], word), _ptr(b, w["values"], word)
        width, spare = w["row"], b.alloca(word, name="spare")

        def put(place, offs, _inner):
            row, first = b.gep(out, [b.mul(place, width)]), b.gep(values, [offs[1]])

            def copy(r):
                b.store(b.load(b.gep(first, [b.mul(r, w["row_stride"])])), b.gep(row, [r]))

            walk.loops.counted(i64(0), width, 1, copy, "r")

        def clear(place):
            row = b.gep(out, [b.mul(place, width)])
            walk.loops.counted(i64(0), width, 1, lambda r: b.store(word(0), b.gep(row, [r])), "z")

    else:  # [count, rank] column-major, as torch's: coordinate d of place p at d * count + p
        out = _ptr(b, w["out"], I64)
        blocks = b.sdiv(b.add(w["total"], i64(NONZERO_BLOCK - 1)), i64(NONZERO_BLOCK))
        column = b.load(b.gep(counts, [blocks])) if write else None  # the scanned count

        def put(place, _offs, inner):
            row = b.gep(out, [place])
            walk.loops.counted(
                i64(0), last, 1,
                lambda d: b.store(b.load(walk.at(d)), b.gep(row, [b.mul(d, column)])), "coord",
            )  # fmt: skip
            b.store(inner, b.gep(row, [b.mul(last, column)]))

        def clear(place):
            row = b.gep(out, [place])
            walk.loops.counted(
                i64(0), rank, 1, lambda d: b.store(i64(0), b.gep(row, [b.mul(d, column)])), "z"
            )

    def element(_pos, offs, inner):
        hit = _is_nonzero(b, dtype, b.load(b.gep(data, [offs[0]])))
        if not write:
            b.store(b.add(b.load(found), b.zext(hit, I64)), found)
            return
        free = b.icmp_signed("<", b.load(found), b.load(limit))
        if not item:
            listed(hit, free, offs, inner)
            return
        # one-element rows are stored whether hit or not (where the next hit overwrites
        # them, or into `spare` past the limit): no branch to mispredict on a random mask
        with b.if_else(b.icmp_signed("==", width, i64(1)), likely=True) as (single, rows):
            with single:
                at = b.select(free, b.gep(out, [b.load(found)]), spare)
                b.store(b.load(b.gep(values, [offs[1]])), at)
                b.store(b.add(b.load(found), b.zext(hit, I64)), found)
            with rows:
                listed(hit, free, offs, inner)

    def listed(hit, free, offs, inner):
        with b.if_then(b.and_(hit, free)):
            put(b.load(found), offs, inner)
            b.store(b.add(b.load(found), i64(1)), found)

    def block(index):
        start = b.mul(index, i64(NONZERO_BLOCK))
        stop = b.add(start, i64(NONZERO_BLOCK))
        stop = b.select(b.icmp_signed("<", stop, w["total"]), stop, w["total"])
        b.store(b.load(b.gep(counts, [index])) if write else i64(0), found)
        if write:
            b.store(b.load(b.gep(counts, [b.add(index, i64(1))])), limit)
        walk(start, stop, element)
        if not write:
            b.store(b.load(found), b.gep(counts, [index]))
        else:  # places the count gave but the walk no longer found: zeros, not stale memory
            walk.loops.counted(b.load(found), b.load(limit), 1, clear, "unfound")

    walk.loops.counted(fn.args[1], fn.args[2], 1, block, "block")
    b.ret_void()
    return symbol


def _listing_symbol(dtype: DType, step: str, item: int = 0) -> str:
    """The symbol of a listing's `step` ("count", "write" or "scan"): nonzero's per dtype
    (its scan one for all), the compaction's per row width."""
    if item:
        return f"kael_compact_{step}_{8 * item}"
    return "kael_nonzero_scan" if step == "scan" else f"kael_nonzero_{step}_{dtype.name}"


def _scan_function(module: ir.Module, symbol: str) -> str:
    """counts[0..n] := the exclusive prefix sums of counts[0..n), the total last (one work item)."""
    fn, b = handwritten.kernel_function(module, symbol)
    args = fn.args[0]
    counts = _ptr(b, b.load(args), I64)
    blocks = b.load(b.gep(args, [i64(1)]))
    acc = b.alloca(I64, name="acc")
    b.store(i64(0), acc)

    def step(i):
        at = b.gep(counts, [i])
        count = b.load(at)
        b.store(b.load(acc), at)
        b.store(b.add(b.load(acc), count), acc)

    LoopBuilder(b).counted(i64(0), blocks, 1, step, "scan")
    b.store(b.load(acc), b.gep(counts, [blocks]))
    b.ret_void()
    return symbol


def _build_listing(dtype: DType, item: int = 0) -> Callable[[ir.Module], list[str]]:
    """nonzero's module for `dtype` (item 0), or the compaction's for `item`-byte values:
    the count, the write and the scan."""

    def build(module: ir.Module) -> list[str]:
        symbols = [_listing_function(module, dtype, write, item) for write in (False, True)]
        return [*symbols, _scan_function(module, _listing_symbol(dtype, "scan", item))]

    return build


_specs: dict = {}


def _spec(kind: str, dtype: DType) -> tuple[str, Callable[[ir.Module], list[str]]]:
    """The module name and builder of one family's kernels of one dtype: a first call
    compiles only what it runs (nonzero of one dtype ~0.1 s, where every dtype's took 0.4 s).
    Memoized: small index ops ask for it on every call."""
    found = _specs.get((kind, dtype))
    if found is None:
        if kind == "compact":  # keyed by the values' width: a mask's rows are copied as bits
            spec = (f"kael_compact_{8 * dtype.itemsize}", _build_listing(bool_, dtype.itemsize))
        elif kind == "nonzero":
            spec = (f"kael_nonzero_{dtype.name}", _build_listing(dtype))
        else:
            spec = (f"kael_{kind}_{dtype.name}", _build_walk(kind, dtype))
        found = _specs[(kind, dtype)] = spec
    return found


def _library(kind: str, dtype: DType) -> handwritten.Library:
    return handwritten.compiled(*_spec(kind, dtype))


def function(kind: str, dtype: DType) -> handwritten.KernelFn:
    """The compiled walk kernel of `kind` for `dtype` (built or loaded once per process)."""
    return _library(kind, dtype)[f"kael_{kind}_{dtype.name}"]


def ir_text(kind: str, dtype: DType) -> str:
    """The LLVM IR of one kernel family ("nonzero", "compact" or one of KINDS) for `dtype`,
    without a target header."""
    return _library(kind, dtype).text


# ---- running ---------------------------------------------------------------------------------


class Operand(NamedTuple):
    """A buffer as a kernel sees it: the address of its element 0 and its walk strides."""

    address: int
    strides: tuple[int, ...]


def walk(
    kind: str,
    dtype: DType,
    sizes: Sequence[int],
    dense: Operand,
    table: Operand,
    index: Operand,
    size: int,
    stride: int,
    mode: int = STRICT,
    write: bool = True,
    parallel: bool = True,
    order: int = ORDER_LINES,
    device=None,
    split: tuple[int, int] | None = None,
    record: list | None = None,
) -> int | None:
    """Run a walk kernel over `sizes`; None, or the first bad index value (nothing was
    written for it). `record` (a list) gets (kernel, words, work items, bytes moved) of a
    gather's one host launch, for the fast door to replay (its words: WALK_WORDS first).
    scatter_add needs its indexed dim last in `sizes` and at least one
    other dim; its check-only pass (write=False) takes indices as STRICT. `parallel=False`
    keeps a put with repeated offsets on one thread, so the last write wins. `device`: where
    the operands' addresses point (None: the CPU). `split` = (address, parts): a scatter
    (STRICT) in `parts` chunks of the walk, each into its own table at the address
    (`parts` * private_size(sizes, size) elements), folded into `table` in chunk order once
    every index was good; the CPU only."""
    total = math.prod(sizes)
    if total == 0:
        return None
    sizes, dense, table, index = _ranked(kind, sizes, dense, table, index)
    if dtype.is_complex:
        dtype, sizes, dense, table, index, scale = _as_parts(
            kind, dtype, sizes, dense, table, index
        )
        total, stride = math.prod(sizes), scale * stride
    fixed = {
        "dense": dense.address,
        "table": table.address,
        "index": index.address,
        "size": size,
        "stride": stride,
        "mode": mode,
        "write": int(write),
        "order": order,
        "total": total,
        "chunk": 0,
        "share": 0,
        "rank": len(sizes),
    }
    if split is not None:
        return _split(kind, dtype, fixed, (sizes, dense, table, index), *split)
    moved = total * (2 * dtype.itemsize + 8)
    typed = int64 if kind == "offsets" else dtype
    name, build = _spec(kind, typed)
    symbol = f"kael_{kind}_{typed.name}"
    runner = handwritten.runner_for(device)
    try:
        fixed["error"] = error = runner.scratch([INT64_MAX])
        words = [fixed[name] for name in WALK_WORDS]
        words += [*sizes, *dense.strides, *table.strides, *index.strides]
        if kind in SCATTERS:
            runner.run(name, build, symbol, words, total // sizes[-1], moved, align=1)
        else:
            fn = runner.run(name, build, symbol, words, total, moved, serial=not parallel)
            if record is not None and fn is not None and parallel:
                record.append((fn, words, total, moved))
        (bad,) = runner.read(error, 1)
        return None if bad == INT64_MAX else _value_at(runner, index, sizes, bad)
    finally:
        runner.close()


def _split(
    kind: str, dtype: DType, fixed: dict, operands: tuple, privates: int, parts: int
) -> int | None:
    """walk's `split`: the chunks into private tables (one work item each), then the fold."""
    sizes, dense, table, index = operands
    size, stride = fixed["size"], fixed["stride"]
    region = (*sizes[:-1], size)
    share = math.prod(region)
    own = _contiguous(region)
    fixed |= {"table": privates, "stride": own[-1], "mode": STRICT, "write": 1}
    fixed |= {"order": ORDER_PRIVATE, "chunk": -(-fixed["total"] // parts), "share": share}
    name, build = _spec(kind, dtype)
    runner = handwritten.HostRunner()
    try:
        fixed["error"] = error = runner.scratch([INT64_MAX])
        words = [fixed[name] for name in WALK_WORDS]
        words += [*sizes, *dense.strides, *own[:-1], 0, *index.strides]
        moved = fixed["total"] * (dtype.itemsize + 8) + parts * share * dtype.itemsize
        runner.run(name, build, f"kael_{kind}_{dtype.name}", words, parts, moved, align=1)
        (bad,) = runner.read(error, 1)
        if bad != INT64_MAX:
            return _value_at(runner, index, sizes, bad)
        words = [table.address, privates, parts, share, len(region), *region]
        words += [*table.strides[:-1], stride, *own]
        moved = share * (parts + 2) * dtype.itemsize
        runner.run(name, build, f"kael_{kind}_{dtype.name}_fold", words, share, moved)
        return None
    finally:
        runner.close()


# The walks whose complex elements move (or add) part by part: a complex number is its two
# float parts, a walk over them one dim longer (a scatter's product or extremes are not).
PARTWISE = ("gather", "put", "scatter_add", "scatter_atomic")


def _as_parts(kind: str, dtype: DType, sizes, dense: Operand, table: Operand, index: Operand):
    """The walk of complex `dtype` as one over its float parts: a pair dim of size 2 (dense's
    and table's stride 1, index's 0) first, or, for a scatter whose indexed dim must stay
    last, just before that; dense's and table's strides doubled. A complex64 gather or put moves each
    element whole, as int64. kael.TypeError for a walk that does not go by parts (a product
    or an extreme of complex numbers). The last item: the factor of the indexed stride."""
    if kind not in PARTWISE:
        raise UnsupportedDtype(f'"{kind}" not implemented for {dtype}')
    if kind in ("gather", "put") and dtype.itemsize == int64.itemsize:  # a move of 8 bytes
        return int64, sizes, dense, table, index, 1  # whole: the block and row paths apply
    # a scatter's pair dim goes before its indexed dim (which must stay last); a move's first,
    # so that its runs stay as long as they were (2M complex128 at random from 64K: the pair
    # dim last 13.7 ms, first 11.6, two float64 gathers and a join 11.0)
    at = len(sizes) - 1 if kind in SCATTERS else 0

    def paired(operand: Operand, scale: int) -> Operand:
        """`operand` over the parts: its strides scaled, the pair dim's stride scale // 2."""
        strides = [scale * s for s in operand.strides]
        return Operand(operand.address, (*strides[:at], scale // 2, *strides[at:]))

    sizes = (*sizes[:at], 2, *sizes[at:])
    return dtype.to_real(), sizes, paired(dense, 2), paired(table, 2), paired(index, 1), 2


def private_size(sizes: Sequence[int], size: int) -> int:
    """The elements of one private table of a split walk: the walked lines, each `size`
    long."""
    return math.prod(sizes[:-1]) * size


def _contiguous(sizes: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(sizes):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _ranked(kind: str, sizes, dense: Operand, table: Operand, index: Operand) -> tuple:
    """The walk's operands with rank >= 1, and >= 2 for a scatter (a leading line dim)."""
    if not sizes:
        sizes, dense, table, index = (1,), _scalar(dense), _scalar(table), _scalar(index)
    if kind in SCATTERS and len(sizes) == 1:  # a leading size-1 dim: one line
        sizes, dense, table, index = (1, *sizes), _lead(dense), _lead(table), _lead(index)
    return tuple(sizes), dense, table, index


def nonzero(
    dtype: DType, sizes: Sequence[int], data: Operand, allocate: Callable[[int], int], device=None
) -> int:
    """Write the coordinates of data's nonzeros, in row-major order of the elements, to
    `allocate(count)` ([count, rank] int64 column-major, strides (1, count), as torch lays
    nonzero's out: an address on `device`); returns the count."""
    total = math.prod(sizes)
    if total == 0:
        allocate(0)
        return 0
    listed = bool(sizes)  # a 0-d input has no coordinates to write
    if not listed:
        sizes, data = (1,), _scalar(data)
    words = [data.address, 0, 0, total, len(sizes), *sizes, *data.strides]
    key = ("nonzero", dtype, tuple(sizes), tuple(data.strides), listed)
    listing = _Listing("nonzero", dtype, 0, key, total * dtype.itemsize, listed)
    return listing.run(words, allocate, device)


def compact(
    dtype: DType,
    sizes: Sequence[int],
    mask: Operand,
    values: Operand,
    row: tuple[int, int],
    allocate: Callable[[int], int],
    device=None,
) -> int:
    """Copy the rows of `values` where the bool `mask` holds, both walked over `sizes`, in
    row-major order to `allocate(count)` (count * row[0] contiguous elements of dtype's
    width); each hit's row is row[0] elements row[1] apart from its place. Returns the
    count (x[mask] and masked_select in one pass, no coordinates in between)."""
    total = math.prod(sizes)
    if total == 0:
        allocate(0)
        return 0
    if not sizes:
        sizes, mask, values = (1,), _scalar(mask), _scalar(values)
    words = [mask.address, 0, 0, total, len(sizes), values.address, *row]
    words += [*sizes, *mask.strides, *values.strides]
    key = ("compact", dtype.itemsize, tuple(sizes), mask.strides, values.strides, row)
    moved = total * (1 + dtype.itemsize * row[0])
    return _Listing("compact", dtype, dtype.itemsize, key, moved, row[0] > 0).run(
        words, allocate, device, (values.address,)
    )


class _Listing(NamedTuple):
    """One call of a listing family (nonzero, compact): count per block, scan the counts,
    allocate, then (`write`, and something was found) write each block's places."""

    kind: str
    dtype: DType
    item: int
    key: tuple
    moved: int
    write: bool

    def run(self, words: list[int], allocate: Callable, device, extra: tuple = ()) -> int:
        """`words` with the counts and output words (1, 2) left for this to fill; `extra`:
        the per-call addresses after the first three (compact's values) for a replay."""
        host = device is None or device.type == "cpu"
        kept = _LISTING_KEPT.get(self.key) if host and not launches.watched() else None
        if kept is not None:
            return _listing_replay(kept, words[0], extra, allocate)
        name, build = _spec(self.kind, self.dtype)
        counting, writing, scanning = (_listing_symbol(self.dtype, s, self.item) for s in STEPS)
        blocks = -(-words[3] // NONZERO_BLOCK)
        runner = handwritten.runner_for(device)
        try:
            words[1] = counts = runner.scratch([0] * (blocks + 1))
            counter = runner.run(name, build, counting, words, blocks, self.moved, align=1)
            scan = runner.run(name, build, scanning, [counts, blocks], 1, 0, align=1)
            (count,) = runner.read(counts + 8 * blocks, 1)
            out = allocate(count)
            if count and self.write:
                words[2] = out
                writer = runner.run(name, build, writing, words, blocks, self.moved, align=1)
                fns = (counter, scan, writer)
                if host and all(replayable(f, self.moved) for f in fns):
                    self._keep(fns, words, blocks, len(extra))
            return count
        finally:
            runner.close()

    def _keep(self, fns: tuple, words: list[int], blocks: int, extras: int) -> None:
        """Keep the launches for replays by addresses (the input's, the counts', the
        output's and `extras` more from word 5 on supplied per call)."""
        if len(_LISTING_KEPT) >= 1024:
            return
        per_item = max(1, self.moved // blocks)
        template = [0, 0, 0, words[3], words[4], *([0] * extras), *words[5 + extras :]]
        count = native_launch.describe(fns[0], template, (0, 1), per_item)
        scan = native_launch.describe(fns[1], [0, blocks], (0,), 1)
        places = (0, 1, 2, *range(5, 5 + extras))
        write = native_launch.describe(fns[2], template, places, per_item)
        if None not in (count, scan, write):
            _LISTING_KEPT[self.key] = (fns, count, scan, write, blocks)


# A listing's three launches per (family, dtype, sizes, strides) of a small host input seen
# with something found, replayed by addresses: the count per block into zeroed host words,
# their scan, then (the count read and the output allocated) the places (nonzero of [4, 16],
# 1 thread, one run on a loaded machine: 20.8 -> 6.3 us, torch 1.6).
_LISTING_KEPT: dict[tuple, tuple] = {}


def _listing_replay(kept: tuple, data: int, extra: tuple, allocate: Callable[[int], int]) -> int:
    """A listing's kept launches over the input at `data` (and the `extra` addresses): the
    count of what it found."""
    fns, count, scan, write, blocks = kept
    for fn in fns:
        count_launch(fn)  # replays count toward the optimized code
    counts = (ctypes.c_int64 * (blocks + 1))()
    at = ctypes.addressof(counts)
    launch = native_launch.launcher()
    launch(count.address, blocks, data, at)
    launch(scan.address, 1, at)
    found = counts[blocks]
    out = allocate(found)
    if found:
        launch(write.address, blocks, data, at, out, *extra)
    return found


def _scalar(operand: Operand) -> Operand:
    """A 0-d operand as the one element of a rank-1 walk."""
    return Operand(operand.address, (0,))


def _lead(operand: Operand) -> Operand:
    return Operand(operand.address, (0, *operand.strides))


def _value_at(runner, index: Operand, sizes: Sequence[int], position: int) -> int:
    """The index value at flat walk `position` (the error report reads it from memory)."""
    offset = 0
    for size, stride in zip(reversed(sizes), reversed(index.strides)):
        position, c = divmod(position, size)
        offset += c * stride
    return runner.read(index.address + 8 * offset, 1)[0]
