"""Float sums and products in the CPU's order at the GPU's memory speed: one warp a block.

A float sum's bits depend on the order of its additions, and kael gives the same bits on
both devices (reduce.in_host_order). The CPU (codegen/cpu/reduce.py) cuts an output's
reduced elements into BLOCK-element blocks. In a block, element e of the run goes to
accumulator e mod A (A = W lanes x UNROLL), chunk after chunk of A elements; a float32
sum adds RUN_LENGTH chunks in float32 before widening each run into its float64
accumulator (run_dtype); the whole vectors left over go to lanes 0..W-1 of accumulator
0 and the last elements to a scalar tail. The accumulators are combined pairwise (the
pairs A apart by W, then by 2W), the lanes by halving (W/2 ... 1), the tail last, and
the blocks' partials by a bottom-up pairwise tree.

Here a warp takes a block and lane t owns accumulators t and t + 32 (A is 32 or 64), so
each load instruction reads 32 consecutive elements, a lane issues the loads of several
chunks before adding them, and the accumulators' combining steps are a butterfly of
warp shuffles (xor masks below 32) and an add inside the lane (mask 32). IEEE addition
and multiplication are commutative, so whichever lane of a pair combines it, the bits
are the CPU's.

Launch shapes: where one block covers an output (rows up to BLOCK elements), a CTA's
WARPS warps take WARPS outputs. Otherwise a CTA takes G = WARPS x K consecutive blocks
of one output, warp w blocks w, w + WARPS, ..., and folds their partials by the CPU's
tree, a G-aligned subtree of it; a second kernel, one CTA per output, folds the groups'
values by the same tree: for spans s >= G, the CPU's pairs (i, i + s) are the groups'
pairs (i/G, (i + s)/G), as i + s < blocks exactly when (i + s)/G < ceil(blocks/G).
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.combine import Combiner, identity
from kael.codegen.cpu import reduce as cpu_reduce
from kael.codegen.cpu.loops import LoopBuilder
from kael.codegen.cpu.reduce import no_index, word_count
from kael.codegen.lowering import (
    I64,
    ExprEmitter,
    constant,
    decompose,
    element_offset,
    i64,
    narrow,
    report_fault,
    scalar_type,
    smin,
)
from kael.codegen.ptx import compiler
from kael.codegen.ptx.handwritten import DeviceRunner
from kael.codegen.ptx.kernel import DATA_LAYOUT, TRIPLE, sreg
from kael.codegen.ptx.reduce import cache_key, read_words
from kael.codegen.ptx.warp import WARP, WARPS, barrier, shared_array, shuffle
from kael.ir.printer import format_reduction
from kael.ir.reduction import BLOCK, ROWS, RUN_LENGTH, ReducePlan, Reduction
from kael.runtime import cuda_driver, kernel_cache

THREADS = WARP * WARPS
AHEAD = 8  # chunks whose loads a lane issues before it adds them
MAX_SPREAD = 32  # K: blocks a warp takes in its CTA's group
MAX_GROUPS = 2048  # groups of an output that the second kernel folds in shared memory


def eligible(red: Reduction, plan: ReducePlan) -> bool:
    """Whether `red` runs here: a ROWS reduction over one reduced dim with the CPU's vector
    accumulators, and few enough blocks for the two trees."""
    return (
        red.schedule == ROWS
        and red.reduced == 1
        and red.vector
        and not red.short
        and (not red.paired or red.second_dtype == red.acc)  # paired sums: one type
        and _accumulators(red) in (WARP, 2 * WARP)
        and spread(plan.blocks) <= MAX_SPREAD
    )


def _accumulators(red: Reduction) -> int:
    return cpu_reduce.row_lanes(red) * cpu_reduce.UNROLL


def spread(blocks: int) -> int:
    """K: blocks a warp takes, a power of two, so that an output has at most MAX_GROUPS groups."""
    k = 1
    while -(-blocks // (WARPS * k)) > MAX_GROUPS:
        k *= 2
    return k


class _Kernel:
    """Shared state of one entry: the argument words, typed slots and the combiner."""

    def __init__(self, red: Reduction, module: ir.Module, name: str, extra: int):
        self.red = red
        fnty = ir.FunctionType(ir.VoidType(), [I64] * (word_count(red) + extra))
        self.fn = fn = ir.Function(module, fnty, name)
        fn.calling_convention = "ptx_kernel"
        fn.attributes.add("nounwind")
        self.b = b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.entry = ir.IRBuilder(fn.entry_basic_block)
        self.entry.position_at_start(fn.entry_basic_block)  # slots stay before any branch
        self.loops = LoopBuilder(b)
        self.words = read_words(b, red, fn.args[: word_count(red)])
        self.extra = fn.args[word_count(red) :]
        self.acc_t = scalar_type(red.acc)  # a paired sum's second total too (eligible)
        self.paired = red.paired
        self.combine = Combiner(b, red.op, red.acc)
        self.tid = sreg(b, "tid.x")
        self.lane = b.urem(self.tid, i64(WARP))
        self.warp = b.udiv(self.tid, i64(WARP))

    def slot(self, t: ir.Type, name: str) -> ir.Value:
        return self.entry.alloca(t, name=name)

    def ident(self) -> ir.Value:
        return constant(self.red.acc, identity(self.red.op, self.red.acc), 1)

    def second_ident(self) -> ir.Value:
        return constant(self.red.acc, 0, 1)

    def tree(self, values, seconds, size: int, limit: ir.Value) -> None:
        """The CPU's bottom-up pairwise tree over shared `values[0:limit]` (limit <= size),
        the CTA's threads taking the pairs of a span side by side, a barrier between spans."""
        b, zero = self.b, i64(0)
        s = 1
        while s < size:
            span = i64(s)

            def pair(t, span=span, s=s):
                i = b.mul(t, i64(2 * s))
                with b.if_then(b.icmp_signed("<", b.add(i, span), limit)):
                    at, other = [zero, i], [zero, b.add(i, span)]
                    ia = b.load(b.gep(seconds, at)) if self.paired else None
                    ic = b.load(b.gep(seconds, other)) if self.paired else None
                    v, iv = self.combine(
                        b.load(b.gep(values, at)), ia, b.load(b.gep(values, other)), ic
                    )
                    b.store(v, b.gep(values, at))
                    if self.paired:
                        b.store(iv, b.gep(seconds, at))

            self.across(i64(-(-size // (2 * s))), pair, f"tree{s}")
            barrier(b)
            s *= 2

    def across(self, stop: ir.Value, body, name: str) -> None:
        """body(t) for t = tid, tid + THREADS, ... below `stop`: the CTA's threads side by side."""
        b = self.b
        pre = b.block
        loop, done = self.fn.append_basic_block(name), self.fn.append_basic_block(f"{name}.done")
        b.cbranch(b.icmp_signed("<", self.tid, stop), loop, done)
        b.position_at_end(loop)
        t = b.phi(I64, name=f"{name}.t")
        t.add_incoming(self.tid, pre)
        body(t)
        following = b.add(t, i64(THREADS))
        t.add_incoming(following, b.block)
        b.cbranch(b.icmp_signed("<", following, stop), loop, done)
        b.position_at_end(done)

    def store_epilogue(self, o: ir.Value, value, second) -> None:
        """Output o's epilogues of (value, second)."""
        b, red, w = self.b, self.red, self.words
        kidx = decompose(b, o, w.kept)
        emitter = ExprEmitter(
            b,
            1,
            lambda k: value if k == 0 else second,
            no_index,
            lambda s: w.params[s],
            lambda code, cond: report_fault(b, w.error, code, cond),
        )
        for n, (buf, e) in enumerate(zip(red.outputs, red.epilogues)):
            at = element_offset(b, kidx, w.out_strides[n])
            b.store(narrow(b, emitter.emit(e), buf.dtype), b.gep(w.outs[n], [at]),
                    align=buf.dtype.itemsize)  # fmt: skip


class _Main(_Kernel):
    """The blocks: a warp a block, then the CTA's group tree (module docstring)."""

    def __init__(self, red: Reduction, module: ir.Module, name: str):
        super().__init__(red, module, name, extra=2)
        self.groups, self.spread = self.extra
        self.lanes = cpu_reduce.row_lanes(red)
        self.q = _accumulators(red) // WARP
        n_shared = WARPS * MAX_SPREAD
        self.shared_v = shared_array(module, self.acc_t, "block_values", n_shared)
        self.shared_i = shared_array(module, self.acc_t, "block_seconds", n_shared)

    def emit(self) -> None:
        b, w = self.b, self.words
        outputs = i64(1)
        for size in w.kept:
            outputs = b.mul(outputs, size)
        cta = sreg(b, "ctaid.x")
        with b.if_else(b.icmp_signed("==", w.blocks, i64(1))) as (rows, grouped):
            with rows:  # a warp an output
                o = b.add(b.mul(cta, i64(WARPS)), self.warp)
                with b.if_then(b.icmp_signed("<", o, outputs)):
                    value, second = self.block(o, i64(0))
                    with b.if_then(b.icmp_unsigned("==", self.lane, i64(0))):
                        self.store_epilogue(o, value, second)
            with grouped:
                self.group(cta)
        b.ret_void()

    def group(self, cta: ir.Value) -> None:
        """CTA `cta`: group g of output o, its partials folded by the tree into one value."""
        b, w, zero = self.b, self.words, i64(0)
        o, g = b.sdiv(cta, self.groups), b.srem(cta, self.groups)
        size = b.mul(i64(WARPS), self.spread)
        first = b.mul(g, size)

        def take(k):
            local = b.add(self.warp, b.mul(k, i64(WARPS)))
            blk = b.add(first, local)
            with b.if_then(b.icmp_signed("<", blk, w.blocks)):
                value, second = self.block(o, blk)
                with b.if_then(b.icmp_unsigned("==", self.lane, zero)):
                    b.store(value, b.gep(self.shared_v, [zero, local]))
                    if self.paired:
                        b.store(second, b.gep(self.shared_i, [zero, local]))

        self.loops.counted(zero, self.spread, 1, take, "take")
        barrier(b)
        limit = smin(b, size, b.sub(w.blocks, first))  # the group's blocks that exist
        self.tree(self.shared_v, self.shared_i, WARPS * MAX_SPREAD, limit)
        with b.if_then(b.icmp_unsigned("==", self.tid, zero)):
            value = b.load(b.gep(self.shared_v, [zero, zero]))
            second = b.load(b.gep(self.shared_i, [zero, zero])) if self.paired else None
            with b.if_else(b.icmp_signed("==", self.groups, i64(1))) as (whole, part):
                with whole:
                    self.store_epilogue(o, value, second)
                with part:
                    at = b.add(b.mul(o, self.groups), g)
                    b.store(value, b.gep(w.scratch, [at]))
                    if self.paired:
                        b.store(second, b.gep(w.scratch_index, [at]))

    def block(self, o: ir.Value, blk: ir.Value):
        """Block `blk` of output o summed by the warp in the CPU's order: (value, second),
        right in lane 0."""
        b, w, red = self.b, self.words, self.red
        kidx = decompose(b, o, w.kept)
        k = red.kept
        bases = [element_offset(b, kidx, st[:k]) for st in w.in_strides]
        fixed = red.invariant or (False,) * len(red.inputs)  # var's mean: 0 along the row
        steps = [i64(0) if f else st[k] for st, f in zip(w.in_strides, fixed, strict=True)]
        j0 = b.mul(blk, i64(BLOCK))
        n = b.sub(smin(b, b.add(j0, i64(BLOCK)), w.length), j0)

        def loaded(e: ir.Value) -> list[ir.Value]:
            """Every input at the block's element e."""
            at = b.add(j0, e)
            return [
                b.load(b.gep(p, [b.add(base, b.mul(at, step))]), align=buf.dtype.itemsize)
                for p, base, step, buf in zip(w.ins, bases, steps, red.inputs)
            ]

        def prologue(values: list[ir.Value], run: bool = False):
            emitter = ExprEmitter(b, 1, lambda i: values[i], no_index, lambda s: w.params[s])
            x = emitter.emit(red.prologue.x if run else red.prologue)
            return x, (emitter.emit(red.second) if self.paired else None)

        accs = [self.slot(self.acc_t, f"acc{q}") for q in range(self.q)]
        secs = [self.slot(self.acc_t, f"sec{q}") for q in range(self.q)]
        for q in range(self.q):
            b.store(self.ident(), accs[q])
            b.store(self.second_ident(), secs[q])

        def accumulate(slots, sec_slots, q, x, second):
            cur = b.load(sec_slots[q]) if self.paired else None
            v, i = self.combine(b.load(slots[q]), cur, x, second, red.fma)
            b.store(v, slots[q])
            if self.paired:
                b.store(i, sec_slots[q])

        count = _accumulators(red)

        def chunks(start: ir.Value, stop: ir.Value, slots, sec_slots, run: bool) -> ir.Value:
            """Chunks of `count` elements from `start` while whole before `stop`, element
            lane + 32q of each into slot q, AHEAD chunks' loads issued first; the end."""

            def element(c: ir.Value, q: int) -> ir.Value:
                return b.add(b.add(c, self.lane), i64(WARP * q))

            def ahead(c):
                values = [
                    [loaded(element(b.add(c, i64(u * count)), q)) for q in range(self.q)]
                    for u in range(AHEAD)
                ]
                for u in range(AHEAD):
                    for q in range(self.q):
                        accumulate(slots, sec_slots, q, *prologue(values[u][q], run))

            def one(c):
                for q in range(self.q):
                    accumulate(slots, sec_slots, q, *prologue(loaded(element(c, q)), run))

            c = self.loops.counted(start, stop, AHEAD * count, ahead, "ahead")
            return self.loops.counted(c, stop, count, one, "chunk")

        if red.run_dtype is None:
            j = chunks(i64(0), n, accs, secs, run=False)
        else:
            j = self._runs(n, accs, chunks)

        # The whole vectors left: lanes 0..W-1 of accumulator 0, one vector after another.
        def vector(v):
            with b.if_then(b.icmp_unsigned("<", self.lane, i64(self.lanes))):
                accumulate(accs, secs, 0, *prologue(loaded(b.add(v, self.lane))))

        j = self.loops.counted(j, n, self.lanes, vector, "vector")
        tail = self.slot(self.acc_t, "tail")
        tail_i = self.slot(self.acc_t, "tail_i")
        b.store(self.ident(), tail)
        b.store(self.second_ident(), tail_i)
        with b.if_then(b.icmp_unsigned("==", self.lane, i64(0))):
            self.loops.counted(
                j, n, 1, lambda e: accumulate([tail], [tail_i], 0, *prologue(loaded(e))), "tail"
            )
        value, second = self._fold(accs, secs)
        cur_i = b.load(tail_i) if self.paired else None
        value, second = self.combine(value, second, b.load(tail), cur_i)
        return value, (second if self.paired else None)

    def _runs(self, n: ir.Value, accs, chunks) -> ir.Value:
        """A float32 sum's runs: RUN_LENGTH chunks added in float32, each run's total
        widened into its accumulator; the last (shorter) run always adds, as the CPU's."""
        b, red = self.b, self.red
        run_t = scalar_type(red.run_dtype)
        runs = [self.slot(run_t, f"run{q}") for q in range(self.q)]
        count = _accumulators(red)
        span = count * RUN_LENGTH

        def run(j0, stop):
            for slot in runs:
                b.store(constant(red.run_dtype, identity(red.op, red.run_dtype), 1), slot)
            j = chunks(j0, stop, runs, runs, run=True)
            for slot, acc in zip(runs, accs):
                wide = b.fpext(b.load(slot), self.acc_t)
                b.store(self.combine(b.load(acc), None, wide, None)[0], acc)
            return j

        j = self.loops.counted(i64(0), n, span, lambda j0: run(j0, b.add(j0, i64(span))), "runs")
        return run(j, n)

    def _fold(self, accs, secs):
        """The accumulators' combining steps as xor masks over their index: W (pairs of
        accumulators), 2W, then the lanes' halvings W/2 ... 1."""
        b = self.b
        values = [b.load(s) for s in accs]
        seconds = [b.load(s) for s in secs] if self.paired else [None] * self.q
        w = self.lanes
        masks = [w, 2 * w] + [w >> k for k in range(1, w.bit_length()) if w >> k]
        for mask in masks:
            if mask >= WARP:  # the two accumulators of one lane
                value, second = self.combine(values[0], seconds[0], values[1], seconds[1])
                values, seconds = [value], [second]
                continue
            for q in range(len(values)):
                ov = shuffle(b, values[q], mask)
                oi = shuffle(b, seconds[q], mask) if self.paired else None
                values[q], seconds[q] = self.combine(values[q], seconds[q], ov, oi)
        return values[0], seconds[0]


class _Final(_Kernel):
    """A CTA an output: the groups' values folded by the CPU's tree, then the epilogue."""

    def __init__(self, red: Reduction, module: ir.Module, name: str):
        super().__init__(red, module, name, extra=2)
        self.groups = self.extra[0]
        self.shared_v = shared_array(module, self.acc_t, "group_values", MAX_GROUPS)
        self.shared_i = shared_array(module, self.acc_t, "group_seconds", MAX_GROUPS)

    def emit(self) -> None:
        b, w, zero = self.b, self.words, i64(0)
        o = sreg(b, "ctaid.x")
        base = b.mul(o, self.groups)

        def load(i):
            b.store(b.load(b.gep(w.scratch, [b.add(base, i)])), b.gep(self.shared_v, [zero, i]))
            if self.paired:
                value = b.load(b.gep(w.scratch_index, [b.add(base, i)]))
                b.store(value, b.gep(self.shared_i, [zero, i]))

        self.across(self.groups, load, "load")
        barrier(b)
        self.tree(self.shared_v, self.shared_i, MAX_GROUPS, self.groups)
        with b.if_then(b.icmp_unsigned("==", self.tid, zero)):
            value = b.load(b.gep(self.shared_v, [zero, zero]))
            second = b.load(b.gep(self.shared_i, [zero, zero])) if self.paired else None
            self.store_epilogue(o, value, second)
        b.ret_void()


def symbols(red: Reduction) -> tuple[str, str]:
    stem = f"kael_{red.name}_warps_{cache_key(red)[:16]}"
    return stem, f"{stem}_final"


def build_module(red: Reduction) -> ir.Module:
    """Both entries of `red`: the blocks and the groups' tree."""
    main, final = symbols(red)
    module = ir.Module(name=main)
    module.triple = TRIPLE
    module.data_layout = DATA_LAYOUT
    _Main(red, module, main).emit()
    _Final(red, module, final).emit()
    return module


_ptx = kernel_cache.Memo()
_functions = kernel_cache.Memo()


def ptx_for(red: Reduction) -> str:
    """`red`'s PTX, running LLVM at most once per machine."""
    identity_text = f"warp reduce\n{format_reduction(red)}"
    return _ptx.get(red, lambda: compiler.stored_ptx(identity_text, lambda: build_module(red)))


def _function(red: Reduction, symbol: str):
    return _functions.get((red, symbol), lambda: cuda_driver.load_function(ptx_for(red), symbol))[1]


def launch(red: Reduction, words: list[int], plan: ReducePlan, moved: int) -> None:
    """Run `red` (eligible) on the current stream: the blocks, then, where an output has
    several groups, the groups' tree."""
    main, final = symbols(red)
    blocks = plan.blocks
    k = spread(blocks)
    groups = -(-blocks // (WARPS * k))
    runner = DeviceRunner()
    try:
        words = list(words)
        if groups > 1:
            at = len(red.outputs) + len(red.inputs)
            words[at] = runner.space(plan.outputs * groups)  # 8 bytes hold any accumulator
            words[at + 1] = runner.space(plan.outputs * groups if red.paired else 1)
        ctas = -(-plan.outputs // WARPS) if blocks == 1 else plan.outputs * groups
        cuda_driver.launch_kernel(
            _function(red, main), ctas, THREADS, [*words, groups, k], name=main, moved=moved,
            kernel=red,
        )  # fmt: skip
        if groups > 1:
            cuda_driver.launch_kernel(
                _function(red, final), plan.outputs, THREADS, [*words, groups, k], name=final,
                kernel=red,
            )  # fmt: skip
    finally:
        runner.close()
