"""A Reduction as two host functions: the blocks, then the fixed tree over their partials.

`void main(i64* args, i64 begin, i64 end)` runs work items [begin, end) (see
kael/ir/reduction.py for ROWS and COLS items). An output reduced in one block gets its
epilogue stored at once; otherwise each block stores its partial in the scratch buffers
and `void final(...)`, one work item per output, combines the partials in a fixed
bottom-up pairwise tree and stores the epilogue. Inside a block, W-lane accumulators
(unrolled UNROLL times) are combined in a fixed order: accumulators pairwise, then lanes
by halving, then the scalar tail. The order depends on the layout class only.

Argument words: output pointers, input pointers, the value and index scratch pointers,
the kept sizes, the reduced sizes, each output's strides over the kept dims, each
input's strides over kept then reduced dims, each reduced dim's step in the flat
reduced index (arg ops), the reduced length, the block count, the chunk count and
width (COLS), the run-time scalars (floats as float64 bits), then the error word's
address when an epilogue raises the flag.

A paired reduction (arg ops, or a sum with a second value) carries its second
accumulator exactly where argmax carries its index: in every lane, unrolled copy,
scratch partial and tree step, so both totals follow one order. A ROWS sum whose
per-element value is its own product (norm's x * x, var's d * d: Reduction.fma) adds it with one
fma; a product fused in from a producer is added rounded, as eager adds it. An input that does
not move along the reduced dims (var's broadcast mean) gets constant 0 reduced strides,
so its loads hoist out of the reduced loops.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.combine import Combiner, identity
from kael.codegen.cpu import compiler, handwritten, tiers
from kael.codegen.cpu.loops import LoopBuilder, carry
from kael.codegen.lowering import (
    CODEGEN_SCHEMA,
    I64,
    ExprEmitter,
    constant,
    decompose,
    element_offset,
    i64,
    memory_type,
    narrow,
    param_from_word,
    prefetch,
    prefetch_steps,
    report_fault,
    scalar_type,
    smin,
    splat,
    targets_gpu,
    value_type,
)
from kael.ir.kernel import BCAST, CONTIG, NO_PREFETCH, STRIDED
from kael.ir.printer import format_reduction
from kael.ir.reduction import BLOCK, COLS, MAX_COLUMNS, Reduction
from kael.runtime import kernel_cache, sync
from kael.runtime.dtypes import INT64_MAX, DType, int64
from kael.runtime.launcher import optimize
from kael.runtime.version import __version__

VECTOR_BYTES = 64
UNROLL = 4
ROW_GROUP = 4  # COLS: rows folded per pass over a chunk of outputs


def vector_width(red: Reduction) -> int:
    """Lanes per accumulator: one 64-byte vector of the widest of the inputs and accumulator."""
    sizes = [red.acc.itemsize] + [b.dtype.compute.itemsize for b in red.inputs]
    return max(1, VECTOR_BYTES // max(sizes))


class _Args:
    """Typed views of the argument block, loaded once in the entry block."""

    def __init__(self, b: ir.IRBuilder, red: Reduction, block: ir.Value):
        n_out, n_in, k, r = len(red.outputs), len(red.inputs), red.kept, red.reduced
        at = iter(range(1 << 30))

        def word() -> ir.Value:
            i = next(at)
            return b.load(b.gep(block, [ir.Constant(I64, i)]), name=f"w{i}")

        def ptr(dtype: DType) -> ir.Value:
            return b.inttoptr(word(), memory_type(dtype).as_pointer())

        self.outs = [ptr(buf.dtype) for buf in red.outputs]
        self.ins = [ptr(buf.dtype) for buf in red.inputs]
        self.scratch = ptr(red.acc)
        self.scratch_index = ptr(red.second_dtype)
        self.kept = [word() for _ in range(k)]
        self.reduced = [word() for _ in range(r)]
        self.out_strides = [[word() for _ in range(k)] for _ in range(n_out)]
        self.in_strides = [[word() for _ in range(k + r)] for _ in range(n_in)]
        for strides, fixed in zip(self.in_strides, red.invariant):
            if fixed:  # constant 0: its loads hoist out of the reduced loops, once per output
                strides[k:] = [i64(0)] * r
        self.index_strides = [word() for _ in range(r)]
        self.length, self.blocks, self.chunks, self.columns = word(), word(), word(), word()
        self.params = [param_from_word(b, word(), d) for d in red.params]
        self.error = ptr(int64) if red.may_fault else None


def word_count(red: Reduction) -> int:
    n_out, n_in, k, r = len(red.outputs), len(red.inputs), red.kept, red.reduced
    words = n_out + n_in + 2 + k + r + n_out * k + n_in * (k + r) + r + 4 + len(red.params)
    return words + int(red.may_fault)


class _Emitter:
    """Shared state for emitting one function of a reduction."""

    def __init__(self, red: Reduction, fn: ir.Function, b: ir.IRBuilder):
        self.red, self.fn, self.b = red, fn, b
        self.loops = LoopBuilder(b)
        self.args = _Args(b, red, fn.args[0])
        self._combine = Combiner(b, red.op, red.acc)
        self.width = vector_width(red)
        self.entry = ir.IRBuilder(fn.entry_basic_block)
        self.entry.position_at_start(fn.entry_basic_block)

    def combine(self, a, ia, c, ic, fuse: bool = True):
        """`a (+) c`, an fma only for the kernel's own products (Reduction.fma)."""
        return self._combine(a, ia, c, ic, fuse and self.red.fma)

    def slot(self, t: ir.Type, name: str) -> ir.Value:
        """An entry-block alloca: loop-carried state that mem2reg turns into SSA."""
        return self.entry.alloca(t, name=name)

    def note_fault(self, code: int, cond: ir.Value) -> None:
        """An epilogue's fault (the flag) kept in a register where `cond` holds, stored in
        the error word once per call (report_faults): no branch per output, so the loops
        storing outputs stay straight-line (vectorizable) code."""
        b = self.b
        b.store(b.select(cond, i64(code), b.load(self.fault_code)), self.fault_code)

    def report_faults(self) -> None:
        if self.red.may_fault:
            b = self.b
            code = b.load(self.fault_code)
            report_fault(b, self.args.error, 0, b.icmp_signed("!=", code, i64(0)), code)

    def ident(self, width: int) -> ir.Value:
        return constant(self.red.acc, identity(self.red.op, self.red.acc), width)

    def prologue(
        self, width: int, load, index=None, run: bool = False
    ) -> tuple[ir.Value, ir.Value | None]:
        """The per-element value and the second one: a paired sum's second value (sharing
        its subexpressions), else `index()` for arg ops, else None. `run`: the value in the
        reduction's run_dtype, before its widening cast."""
        emitter = ExprEmitter(
            self.b,
            width,
            load,
            no_index,
            lambda s: self.args.params[s],
            # vscalef is the host's: the GPU runs these functions too (ptx/reduce.py)
            scalef=compiler.has_avx512f() and not targets_gpu(self.b.module),
        )
        value = emitter.emit(self.red.prologue.x if run else self.red.prologue)
        if self.red.second is not None:
            return value, emitter.emit(self.red.second)
        return value, (index() if self.red.is_arg else None)

    def second_ident(self, width: int) -> ir.Value:
        """The second accumulator's start: no index yet (arg ops), or 0 (a paired sum)."""
        if self.red.second is None:
            return constant(int64, INT64_MAX, width)
        return constant(self.red.acc, 0, width)

    def load_input(self, i: int, base: ir.Value, width: int, stride=None) -> ir.Value:
        """Input i at element offset `base` (scalar), or `width` lanes from there.

        A STRIDED input's lanes are `stride` elements apart, gathered one by one.
        """
        buf, b = self.red.inputs[i], self.b
        p = b.gep(self.args.ins[i], [base])
        if width == 1:
            return b.load(p, align=buf.dtype.itemsize)
        if buf.inner == BCAST:
            return splat(b, b.load(p, align=buf.dtype.itemsize), width)
        if buf.inner == STRIDED:
            vec = ir.Constant(memory_type(buf.dtype, width), ir.Undefined)
            for lane in range(width):
                q = b.gep(p, [b.mul(stride, i64(lane))]) if lane else p
                vec = b.insert_element(vec, b.load(q, align=buf.dtype.itemsize), i64(lane))
            return vec
        vp = b.bitcast(p, memory_type(buf.dtype, width).as_pointer())
        return b.load(vp, align=buf.dtype.itemsize)

    def store_result(self, offsets: list[ir.Value], value: ir.Value, index) -> None:
        """Each output's epilogue of (value, index) at its element offset."""
        b, args = self.b, self.args
        emitter = ExprEmitter(
            b,
            1,
            lambda i: value if i == 0 else index,
            no_index,
            lambda s: args.params[s],
            self.note_fault,
        )
        for o, (buf, e) in enumerate(zip(self.red.outputs, self.red.epilogues)):
            p = b.gep(self.args.outs[o], [offsets[o]])
            b.store(narrow(b, emitter.emit(e), buf.dtype), p, align=buf.dtype.itemsize)

    def walk_reduced(self, j0: ir.Value, j1: ir.Value, row) -> None:
        """Call row(pos, first, n, offsets, at) for each run of the last reduced dim in [j0, j1).

        `offsets[i]` is input i's element offset of the run's reduced prefix (no kept
        part) and `at` that prefix's flat reduced index.
        """
        b, fn, args = self.b, self.fn, self.args
        r = self.red.reduced
        slots = [self.slot(I64, f"ridx{d}") for d in range(r)]
        pos_slot = self.slot(I64, "rpos")
        start = fn.append_basic_block("runs")
        after = fn.append_basic_block("runs.done")
        b.cbranch(b.icmp_signed("<", j0, j1), start, after)
        b.position_at_end(start)
        for s, v in zip(slots, decompose(b, j0, args.reduced)):
            b.store(v, s)
        b.store(j0, pos_slot)
        run = fn.append_basic_block("run")
        b.branch(run)
        b.position_at_end(run)
        idx = [b.load(s) for s in slots]
        pos = b.load(pos_slot)
        first = idx[-1]
        n = smin(b, b.sub(args.reduced[-1], first), b.sub(j1, pos))
        k = self.red.kept
        offsets = [element_offset(b, idx[:-1], st[k:-1]) for st in args.in_strides]
        at = element_offset(b, idx[:-1], args.index_strides[:-1])
        # The flat reduced index of the run's element j is at + (first + j) * step.
        row(pos, first, n, offsets, at)
        pos = b.add(pos, n)
        b.store(pos, pos_slot)
        more = fn.append_basic_block("runs.next")
        b.cbranch(b.icmp_signed("<", pos, j1), more, after)
        b.position_at_end(more)
        b.store(i64(0), slots[-1])
        carry(b, fn, slots, args.reduced, r - 1, run)
        b.position_at_end(after)

    def fold_lanes(self, v: ir.Value, iv, width: int):
        """One value from `width` lanes: halves combined until one lane is left."""
        b = self.b
        i32 = ir.IntType(32)
        while width > 1:
            h = width // 2
            lo = ir.Constant(ir.VectorType(i32, h), list(range(h)))
            hi = ir.Constant(ir.VectorType(i32, h), list(range(h, width)))
            undef_v = ir.Constant(v.type, ir.Undefined)
            a, c = b.shuffle_vector(v, undef_v, lo), b.shuffle_vector(v, undef_v, hi)
            ia = ic = None
            if iv is not None:
                undef_i = ir.Constant(iv.type, ir.Undefined)
                ia, ic = b.shuffle_vector(iv, undef_i, lo), b.shuffle_vector(iv, undef_i, hi)
            v, iv = self.combine(a, ia, c, ic)
            width = h
        value = b.extract_element(v, i64(0))
        return value, (b.extract_element(iv, i64(0)) if iv is not None else None)


def no_index(axis: int):
    """A reduction prologue's index reader: prologues never read their position."""
    raise NotImplementedError("a reduction prologue cannot read its position")


def row_lanes(red: Reduction) -> int:
    """The lanes of a ROWS reduction's accumulators (1: scalar code)."""
    if red.run_dtype is not None:  # float32 runs: a 64-byte vector of them
        return VECTOR_BYTES // red.run_dtype.itemsize
    gathers = any(buf.inner == STRIDED for buf in red.inputs)
    width = vector_width(red)
    # Gathering more than 8 lanes element by element costs more code than it saves.
    return width if red.vector and not (gathers and width > 8) else 1


def _rows_block(e: _Emitter, j0, j1, bases, short: bool = False):
    """(value, index) of reduced elements [j0, j1) of one output, inputs at `bases`;
    `short`: the block is shorter than the vector, so its scalar code runs alone."""
    red, b = e.red, e.b
    paired = red.paired
    w = 1 if short else row_lanes(e.red)
    acc_t = value_type(red.acc, w)
    idx_t = ir.VectorType(I64, w) if w > 1 else I64
    n_acc = UNROLL if w > 1 else 0
    vec = [e.slot(acc_t, f"acc{u}") for u in range(n_acc)]
    sec_t = value_type(red.second_dtype, w)
    vec_i = [e.slot(sec_t, f"acci{u}") for u in range(n_acc)] if paired else []
    tail = e.slot(scalar_type(red.acc), "tail")
    tail_i = e.slot(scalar_type(red.second_dtype), "taili")
    for s in vec:
        b.store(e.ident(w), s)
    for s in vec_i:
        b.store(e.second_ident(w), s)
    b.store(e.ident(1), tail)
    b.store(e.second_ident(1), tail_i)
    lanes = ir.Constant(idx_t, list(range(w))) if w > 1 else None
    last = red.kept + red.reduced - 1

    def accumulate(slot, islot, value, index):
        cur_i = b.load(islot) if paired else None
        v, i = e.combine(b.load(slot), cur_i, value, index)
        b.store(v, slot)
        if paired:
            b.store(i, islot)

    istep = e.args.index_strides[-1]

    def row(pos, first, n, offsets, prefix):
        starts = [b.add(base, off) for base, off in zip(bases, offsets)]
        run_index = b.add(prefix, b.mul(first, istep))
        strides = [st[last] for st in e.args.in_strides]
        if w > 1:
            heads = [b.add(s, b.mul(first, st)) for s, st in zip(starts, strides)]

            def step(u: int):
                def body(j):
                    at = [b.add(h, b.mul(j, st)) for h, st in zip(heads, strides)]

                    def index():
                        here = splat(b, b.add(run_index, b.mul(j, istep)), w)
                        return b.add(here, b.mul(lanes, splat(b, istep, w)))

                    x, second = e.prologue(
                        w, lambda i: e.load_input(i, at[i], w, strides[i]), index
                    )
                    accumulate(vec[u], vec_i[u] if paired else None, x, second)

                return body

            ahead = red.prefetch
            if ahead != NO_PREFETCH and red.inputs[ahead].inner == CONTIG:
                distance = i64(red.fetch_ahead) if red.fetch_ahead else e.args.params[-1]
                ahead_head = heads[ahead]
                ahead_steps = prefetch_steps(red.inputs[ahead].dtype.itemsize, w, UNROLL)
            else:
                ahead_steps = []

            def unrolled(j, add=None):
                for u in range(UNROLL):
                    ju = b.add(j, i64(u * w))
                    if u in ahead_steps:
                        at = b.add(b.add(ahead_head, ju), distance)
                        prefetch(b, b.gep(e.args.ins[ahead], [at]))
                    if add is None:
                        step(u)(ju)
                    else:
                        add(u, ju)

            if red.run_dtype is None:
                j = e.loops.counted(i64(0), n, w * UNROLL, unrolled, "vec4")
            else:
                j = _runs(e, w, n, unrolled, heads, strides, vec)
            j = e.loops.counted(j, n, w, step(0), "vec")
        else:
            j = i64(0)

        def scalar(j):
            at = [
                b.add(s, b.mul(b.add(first, j), st[last]))
                for s, st in zip(starts, e.args.in_strides)
            ]
            x, second = e.prologue(
                1, lambda i: e.load_input(i, at[i], 1), lambda: b.add(run_index, b.mul(j, istep))
            )
            accumulate(tail, tail_i, x, second)

        e.loops.counted(j, n, 1, scalar, "elem")

    e.walk_reduced(j0, j1, row)
    tail_value, tail_index = b.load(tail), (b.load(tail_i) if paired else None)
    if short:
        # What the vector code gives a block shorter than its lanes: every lane left at the
        # identity, whose fold is the identity again, combined with the tail.
        return e.combine(e.ident(1), e.second_ident(1) if paired else None, tail_value, tail_index)
    if w == 1:
        return tail_value, tail_index
    accs = [b.load(s) for s in vec]
    ids = [b.load(s) for s in vec_i] if paired else [None] * n_acc
    while len(accs) > 1:
        pairs = [
            e.combine(accs[k], ids[k], accs[k + 1], ids[k + 1]) for k in range(0, len(accs), 2)
        ]
        accs, ids = [p[0] for p in pairs], [p[1] for p in pairs]
    value, index = e.fold_lanes(accs[0], ids[0], w)
    return e.combine(value, index, tail_value, tail_index)


def _runs(e: _Emitter, w: int, n: ir.Value, unrolled, heads, strides, accs) -> ir.Value:
    """The unrolled loop of a ROWS sum with a run_dtype over elements [0, n) of a row run:
    each accumulator u adds run_length vectors in float32 (the last run may be shorter),
    then the run's total, widened, into its float64 accumulator `acc{u}`. Returns where
    the single-vector loop takes over. `accs`: the float64 accumulators' slots."""
    red, b = e.red, e.b
    run_t = value_type(red.run_dtype, w)
    zero = constant(red.run_dtype, identity(red.op, red.run_dtype), w)
    runs = [e.slot(run_t, f"run{u}") for u in range(UNROLL)]

    def add(u, j):
        at = [b.add(h, b.mul(j, st)) for h, st in zip(heads, strides)]
        x, _ = e.prologue(w, lambda i: e.load_input(i, at[i], w), run=True)
        b.store(b.fadd(b.load(runs[u]), x), runs[u])

    def run(j0, stop):
        for slot in runs:
            b.store(zero, slot)
        j = e.loops.counted(j0, stop, w * UNROLL, lambda j: unrolled(j, add), "run")
        for slot, acc in zip(runs, accs):
            wide = b.fpext(b.load(slot), value_type(red.acc, w))
            b.store(e.combine(b.load(acc), None, wide, None)[0], acc)
        return j

    span = w * UNROLL * red.run_length
    j = e.loops.counted(i64(0), n, span, lambda j0: run(j0, b.add(j0, i64(span))), "runs")
    return run(j, n)


def _emit_rows(e: _Emitter, w: ir.Value, short: bool = False) -> None:
    """Work item w: one block of one output's reduced elements; `short`: the whole of an
    output shorter than the vector (one block, no lanes)."""
    b, args, red = e.b, e.args, e.red
    nb = args.blocks
    o, blk = (w, i64(0)) if short else (b.sdiv(w, nb), b.srem(w, nb))
    kidx = decompose(b, o, args.kept)
    bases = [element_offset(b, kidx, st[: red.kept]) for st in args.in_strides]
    j0 = b.mul(blk, i64(BLOCK))
    j1 = smin(b, b.add(j0, i64(BLOCK)), args.length)
    value, index = _rows_block(e, j0, j1, bases, short)
    _finish(e, o, blk, kidx, value, index)


def _emit_short_lanes(e: _Emitter, begin: ir.Value, end: ir.Value) -> ir.Value:
    """Outputs of a reduction whose rows are shorter than the vector, as many lanes at a
    time: each lane is one output and walks its row's elements in order from the identity,
    then combines with the identity once, exactly what the scalar code does for one output
    (so the bits are the same); the elements come in lane by lane. Runs the whole chunks in
    [begin, end) and returns where the scalar loop takes over."""
    red, b, args = e.red, e.b, e.args
    lanes = e.width
    paired = red.paired
    acc_t, sec_t = value_type(red.acc, lanes), value_type(red.second_dtype, lanes)
    bases = [e.entry.alloca(I64, size=i64(lanes), name=f"lane_base{i}") for i in red.inputs]
    values = e.entry.alloca(scalar_type(red.acc), size=i64(lanes), name="lane_values")
    indices = e.entry.alloca(scalar_type(red.second_dtype), size=i64(lanes), name="lane_index")
    values.align = indices.align = VECTOR_BYTES  # stored as whole vectors
    acc, acc_i = e.slot(acc_t, "lane_acc"), e.slot(sec_t, "lane_acc_index")
    # the entry builder's allocas went in ahead of b's place in the entry block: go past them
    b.position_at_end(b.block)
    last = red.kept + red.reduced - 1
    istep = args.index_strides[-1]

    def chunk(c0):
        def base(lane):
            kidx = decompose(b, b.add(c0, lane), args.kept)
            for slots, st in zip(bases, args.in_strides):
                b.store(element_offset(b, kidx, st[: red.kept]), b.gep(slots, [lane]))

        e.loops.counted(i64(0), i64(lanes), 1, base, "lanes.base")
        heads = [[b.load(b.gep(slots, [i64(k)])) for k in range(lanes)] for slots in bases]
        b.store(e.ident(lanes), acc)
        if paired:
            b.store(e.second_ident(lanes), acc_i)

        def row(pos, first, n, offsets, prefix):
            def element(j):
                jj = b.add(first, j)
                at = [b.add(off, b.mul(jj, st[last])) for off, st in zip(offsets, args.in_strides)]

                def load(i):
                    vec = ir.Constant(memory_type(red.inputs[i].dtype, lanes), ir.Undefined)
                    for k in range(lanes):
                        p = b.gep(args.ins[i], [b.add(heads[i][k], at[i])])
                        item = b.load(p, align=red.inputs[i].dtype.itemsize)
                        vec = b.insert_element(vec, item, i64(k))
                    return vec

                x, second = e.prologue(
                    lanes, load, lambda: splat(b, b.add(prefix, b.mul(jj, istep)), lanes)
                )
                v, i = e.combine(b.load(acc), b.load(acc_i) if paired else None, x, second)
                b.store(v, acc)
                if paired:
                    b.store(i, acc_i)

            e.loops.counted(i64(0), n, 1, element, "lanes.elem")

        e.walk_reduced(i64(0), args.length, row)
        value, index = e.combine(
            e.ident(lanes), e.second_ident(lanes) if paired else None,
            b.load(acc), b.load(acc_i) if paired else None,
        )  # fmt: skip
        b.store(value, b.bitcast(values, acc_t.as_pointer()))
        if paired:
            b.store(index, b.bitcast(indices, sec_t.as_pointer()))

        def store(lane):
            o = b.add(c0, lane)
            index = b.load(b.gep(indices, [lane])) if paired else None
            _finish(e, o, i64(0), decompose(b, o, args.kept), b.load(b.gep(values, [lane])), index)

        e.loops.counted(i64(0), i64(lanes), 1, store, "lanes.store")

    return e.loops.counted(begin, end, lanes, chunk, "lanes")


def _finish(e: _Emitter, o, blk, kidx, value, index) -> None:
    """Store the epilogue when one block covers the output, else the block's partial."""
    b, args = e.b, e.args
    with b.if_else(b.icmp_signed("==", args.blocks, i64(1))) as (whole, partial):
        with whole:
            offsets = [element_offset(b, kidx, st) for st in args.out_strides]
            e.store_result(offsets, value, index)
        with partial:
            at = b.add(b.mul(o, args.blocks), blk)
            b.store(value, b.gep(args.scratch, [at]))
            if index is not None:
                b.store(index, b.gep(args.scratch_index, [at]))


def _emit_cols(e: _Emitter, w: ir.Value) -> None:
    """One chunk of outputs along the contiguous last kept dim, over one block of rows.

    Each output accumulates its rows in order, four rows per pass over the chunk (eight
    for a paired sum, whose two accumulator rows cost twice the loads and stores).
    """
    b, args, red = e.b, e.args, e.red
    k = red.kept
    item = decompose(b, w, args.kept[:-1] + [args.chunks, args.blocks])
    outer, chunk, blk = item[: k - 1], item[k - 1], item[k]
    width = e.width
    c0 = b.mul(chunk, args.columns)
    cn = smin(b, args.columns, b.sub(args.kept[-1], c0))
    bases = [
        b.add(element_offset(b, outer, st[: k - 1]), b.mul(c0, st[k - 1])) for st in args.in_strides
    ]
    acc_ty = scalar_type(red.acc)
    # A GPU thread takes one column (ptx/reduce.py passes columns = 1): one slot, not 32 KiB
    # of local memory per thread. Each column is its own chain: the same bits either way.
    capacity = 1 if targets_gpu(b.module) else MAX_COLUMNS
    row = e.entry.alloca(acc_ty, size=i64(capacity), name="row")
    row.align = VECTOR_BYTES
    align = red.acc.itemsize
    paired = red.paired
    sec_ty = scalar_type(red.second_dtype)
    rows_i = e.entry.alloca(sec_ty, size=i64(capacity), name="row_index") if paired else None
    if rows_i is not None:
        rows_i.align = VECTOR_BYTES

    def init(c):
        b.store(e.ident(1), b.gep(row, [c]))
        if paired:
            b.store(e.second_ident(1), b.gep(rows_i, [c]))

    e.loops.counted(i64(0), cn, 1, init, "init")
    last = k + red.reduced - 1
    vt = value_type(red.acc, width)

    def at_column(base, c, lanes: int, t: ir.Type):
        p = b.gep(base, [c])
        return p if lanes == 1 else b.bitcast(p, ir.VectorType(t, lanes).as_pointer())

    step = args.index_strides[-1]

    def run(pos, first, n, offsets, prefix):
        def rows(count: int):
            """Fold rows j .. j + count - 1 into the chunk: one load and store per column."""

            def fold(j):
                starts = []
                for r in range(count):
                    jr = b.add(first, b.add(j, i64(r)))
                    starts.append(
                        [
                            b.add(b.add(base, off), b.mul(jr, st[last]))
                            for base, off, st in zip(bases, offsets, args.in_strides)
                        ]
                    )

                def columns(lanes: int):
                    def body(c):
                        p = at_column(row, c, lanes, vt.element)
                        v = b.load(p, align=align)
                        pi = at_column(rows_i, c, lanes, sec_ty) if paired else None
                        i = b.load(pi, align=8) if paired else None
                        for r in range(count):
                            at = [
                                a if buf.inner == BCAST else b.add(a, c)
                                for a, buf in zip(starts[r], red.inputs)
                            ]

                            def index(r=r):
                                here = b.add(prefix, b.mul(b.add(first, b.add(j, i64(r))), step))
                                return here if lanes == 1 else splat(b, here, lanes)

                            x, second = e.prologue(
                                lanes, lambda k, at=at: e.load_input(k, at[k], lanes), index
                            )
                            # No fma here: a column's rows form one chain, an fma
                            # is slower than an add on it.
                            v, i = e.combine(v, i, x, second, fuse=False)
                        b.store(v, p, align=align)
                        if paired:
                            b.store(i, pi, align=8)

                    return body

                def unrolled(c):
                    for u in range(UNROLL):
                        columns(width)(b.add(c, i64(u * width)))

                c = e.loops.counted(i64(0), cn, width * UNROLL, unrolled, "cvec4")
                c = e.loops.counted(c, cn, width, columns(width), "cvec")
                e.loops.counted(c, cn, 1, columns(1), "ctail")

            return fold

        # A paired sum loads and stores two accumulator rows: fold twice the rows per pass.
        group = ROW_GROUP * (2 if red.second is not None else 1)
        j = e.loops.counted(i64(0), n, group, rows(group), "rgroup")
        e.loops.counted(j, n, 1, rows(1), "relem")

    j0 = b.mul(blk, i64(BLOCK))
    j1 = smin(b, b.add(j0, i64(BLOCK)), args.length)
    e.walk_reduced(j0, j1, run)
    outer_flat = b.sdiv(w, b.mul(args.chunks, args.blocks))

    def store(c):
        col = b.add(c0, c)
        o = b.add(b.mul(outer_flat, args.kept[-1]), col)
        index = b.load(b.gep(rows_i, [c])) if paired else None
        _finish(e, o, blk, [*outer, col], b.load(b.gep(row, [c])), index)

    e.loops.counted(i64(0), cn, 1, store, "store")


def _emit_final(e: _Emitter, o: ir.Value) -> None:
    """Combine output o's block partials bottom-up in pairs, then store its epilogue."""
    b, args, fn = e.b, e.args, e.fn
    nb = args.blocks
    base = b.mul(o, nb)
    values = b.gep(args.scratch, [base])
    indices = b.gep(args.scratch_index, [base])
    paired = e.red.paired
    pre = b.block
    head, body, done = (fn.append_basic_block(n) for n in ("tree.head", "tree.level", "tree.done"))
    b.branch(head)
    b.position_at_end(head)
    s = b.phi(I64, name="span")
    s.add_incoming(i64(1), pre)
    b.cbranch(b.icmp_signed("<", s, nb), body, done)
    b.position_at_end(body)

    def pair(i):
        j = b.add(i, s)
        pa, pc = b.gep(values, [i]), b.gep(values, [j])
        ia = b.load(b.gep(indices, [i])) if paired else None
        ic = b.load(b.gep(indices, [j])) if paired else None
        v, iv = e.combine(b.load(pa), ia, b.load(pc), ic)
        b.store(v, pa)
        if paired:
            b.store(iv, b.gep(indices, [i]))

    # for (i = 0; i + s < nb; i += 2s): the loop helper needs a constant step.
    two_s = b.mul(s, i64(2))
    count = b.sdiv(b.add(b.sub(nb, s), b.sub(two_s, i64(1))), two_s)
    e.loops.counted(i64(0), count, 1, lambda t: pair(b.mul(t, two_s)), "tree.pair")
    s.add_incoming(two_s, b.block)
    b.branch(head)
    b.position_at_end(done)
    kidx = decompose(b, o, args.kept)
    offsets = [element_offset(b, kidx, st) for st in args.out_strides]
    value = b.load(values)
    index = b.load(indices) if paired else None
    e.store_result(offsets, value, index)


def _function(module: ir.Module, red: Reduction, symbol: str, body) -> None:
    fn, b = handwritten.kernel_function(module, symbol)
    e = _Emitter(red, fn, b)
    if red.may_fault:
        e.fault_code = e.slot(I64, "fault")
        b.position_at_end(b.block)  # the entry builder inserted above b's last instruction
        b.store(i64(0), e.fault_code)
    begin, end = fn.args[1], fn.args[2]
    if body is _emit_rows and red.short:
        # Outputs shorter than the vector (argmin over [n, 5]): whole chunks of outputs one
        # per lane, the rest in scalar code; the lanes' setup and folds would cost more
        # than such a row's elements
        rest = _emit_short_lanes(e, begin, end)
        e.loops.counted(rest, end, 1, lambda w: _emit_rows(e, w, True), "short")
    else:
        e.loops.counted(begin, end, 1, lambda w: body(e, w), "item")
    e.report_faults()
    b.ret_void()


def fill_module(
    module: ir.Module, red: Reduction, symbol: str, main: bool = True, final: bool = True
) -> None:
    """Emit `symbol` (the blocks, with `main`) and `symbol_final` (the tree, with `final`)
    into `module`."""
    if main:
        _function(module, red, symbol, _emit_cols if red.schedule == COLS else _emit_rows)
    if final:
        _function(module, red, f"{symbol}_final", _emit_final)


def build_module(red: Reduction, symbol: str) -> ir.Module:
    """The module of both functions, without a target (compiler.with_target adds the host's):
    what inspection shows; each function is compiled in a module of its own."""
    module = ir.Module(name=symbol)
    fill_module(module, red, symbol)
    return module


class CompiledReduction:
    """A reduction linked into this process: `main` (the blocks) at once, `final` (the
    fixed tree over several blocks' partials) compiled on first use, as most reductions
    fit one block and never run it (a quarter of a reduction's code and compile time).
    Each is linked at tier 0 or optimized as codegen/cpu/tiers.py decides: the tree
    optimized once `main` runs optimized code."""

    __slots__ = ("reduction", "key", "symbol", "main", "_linked", "_final", "_final_linked")

    def __init__(self, red: Reduction, key: str, symbol: str, linked: tiers.Linked) -> None:
        self.reduction, self.key, self.symbol = red, key, symbol
        self.main = linked.fn(symbol, red)
        self._linked = linked  # unloading the code would free what `main` runs
        self._final = self._final_linked = None

    @property
    def final(self) -> object:
        if self._final is None:
            with _final_lock:
                if self._final is None:
                    name = f"{self.symbol}_final"
                    optimized = self.main.tier0 is None
                    self._final_linked = _linked(self.reduction, final_key(self.key), name,
                                                 self.symbol, True, optimized)  # fmt: skip
                    self._final = self._final_linked.fn(name, self.reduction)
        return self._final


_memory = kernel_cache.Memo()
_final_lock = sync.lock()


def get(red: Reduction, optimized: bool = False) -> CompiledReduction:
    """The compiled reduction, running LLVM at most once per machine and tier (disk cache);
    `optimized`: with its optimized code (one linked at tier 0 is promoted)."""
    compiled = _memory.get(red, lambda: _load_or_compile(red, optimized))
    if optimized:
        optimize(compiled.main)
        optimize(compiled._final)  # None until the tree is first needed
    return compiled


def cache_key(red: Reduction) -> tuple[str, str]:
    """(key, symbol): the disk cache key of `red`'s main object code and its symbol."""
    t = compiler.host_target()
    key = kernel_cache.key_of(
        format_reduction(red), t["triple"], t["cpu"], t["features"], t["llvm"], __version__,
        CODEGEN_SCHEMA,
    )  # fmt: skip
    return key, f"kael_{red.name}_{key[:16]}"


def final_key(key: str) -> str:
    """The disk cache key of a reduction's tree, by its main function's key."""
    return kernel_cache.key_of(key, "final")


def source(red: Reduction, symbol: str, final: bool = False) -> tiers.Source:
    """What tiers.link compiles: `red`'s main function, or its tree (`final`)."""

    def build() -> tuple[list[str], str]:
        module = ir.Module(name=symbol)
        fill_module(module, red, symbol, main=not final, final=final)
        name = f"{symbol}_final" if final else symbol
        return [name], compiler.with_target(handwritten.ir_text(module))

    return build


def optimized_here(red: Reduction) -> bool:
    """Whether `red`'s main function is linked into this process with optimized code."""
    return _memory.has(red) and get(red).main.tier0 is None


def _load_or_compile(red: Reduction, optimized: bool) -> CompiledReduction:
    key, symbol = cache_key(red)
    return CompiledReduction(red, key, symbol, _linked(red, key, symbol, symbol, False, optimized))


def _linked(
    red: Reduction, key: str, name: str, symbol: str, final: bool, optimized: bool
) -> tiers.Linked:
    """`red`'s main function or its tree (`final`) linked as `name`, its object code from
    the disk cache under `key` or compiled."""
    return tiers.link(
        "cpu", key, name, source(red, symbol, final), compiler.kernel_passes, optimized
    )
