"""A Reduction as an NVPTX kernel: one CTA per output, warp shuffles, then shared memory.

The parameters are the CPU argument block's words (kael/codegen/cpu/reduce.py; the
scratch words are unused). CTA c reduces outputs c, c + grid, ...: its THREADS threads
stride over the output's reduced elements, each warp folds its lanes with butterfly
shuffles (llvm.nvvm.shfl.sync.bfly), lane 0 of each warp writes shared memory
(addrspace(3), set in-kernel: initializers on shared globals are dropped), and after a
barrier warp 0 folds the warps' values and thread 0 stores the epilogue. A paired
reduction's second accumulator (argmax's index, a paired sum's second total) travels
with the value through every step; an epilogue's flag goes to the error word, the last
parameter. The order is fixed by the launch shape, so results repeat run to run. Float
sums and products, whose bits depend on the order, take the CPU's order instead:
warp_reduce.py where the rows allow, else the host's own functions (launch, below).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

from llvmlite import ir

from kael.codegen.combine import Combiner, identity
from kael.codegen.cpu import reduce as cpu_reduce
from kael.codegen.cpu.reduce import no_index, word_count
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
    report_fault,
    scalar_type,
)
from kael.codegen.ptx import compiler
from kael.codegen.ptx.handwritten import DeviceRunner
from kael.codegen.ptx.kernel import DATA_LAYOUT, TRIPLE, sreg
from kael.codegen.ptx.warp import THREADS, WARP, WARPS, barrier, shared_array, shuffle
from kael.ir.kernel import NO_PREFETCH
from kael.ir.printer import format_reduction
from kael.ir.reduction import COLS, ReducePlan, Reduction
from kael.runtime import cuda_driver, kernel_cache
from kael.runtime.dtypes import INT64_MAX
from kael.runtime.errors import Error

MAX_BLOCKS = 8192


def build_module(red: Reduction, symbol: str) -> ir.Module:
    """The NVPTX module of `red` with one `ptx_kernel` entry named `symbol`."""
    module = ir.Module(name=symbol)
    module.triple = TRIPLE
    module.data_layout = DATA_LAYOUT
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64] * word_count(red)), symbol)
    fn.calling_convention = "ptx_kernel"
    fn.attributes.add("nounwind")
    _Body(red, fn).emit()
    return module


class Words(NamedTuple):
    """The CPU argument block's words (codegen/cpu/reduce.py), typed for a GPU kernel."""

    outs: list[ir.Value]  # typed pointers
    ins: list[ir.Value]
    scratch: ir.Value  # the partials' values (accumulator-typed pointer)
    scratch_index: ir.Value  # their second values or indices
    kept: list[ir.Value]
    reduced: list[ir.Value]
    out_strides: list[list[ir.Value]]
    in_strides: list[list[ir.Value]]
    index_strides: list[ir.Value]
    length: ir.Value
    blocks: ir.Value
    params: list[ir.Value]
    error: ir.Value | None


def read_words(b: ir.IRBuilder, red: Reduction, args) -> Words:
    """`args` (a kernel's i64 parameters, the argument block's words in order) as Words."""
    it = iter(args)
    outs = [b.inttoptr(next(it), memory_type(o.dtype).as_pointer()) for o in red.outputs]
    ins = [b.inttoptr(next(it), memory_type(i.dtype).as_pointer()) for i in red.inputs]
    scratch = b.inttoptr(next(it), scalar_type(red.acc).as_pointer())
    scratch_index = b.inttoptr(next(it), scalar_type(red.second_dtype).as_pointer())
    k, r = red.kept, red.reduced
    kept = [next(it) for _ in range(k)]
    reduced = [next(it) for _ in range(r)]
    out_st = [[next(it) for _ in range(k)] for _ in red.outputs]
    in_st = [[next(it) for _ in range(k + r)] for _ in red.inputs]
    index_st = [next(it) for _ in range(r)]
    length, blocks = next(it), next(it)
    next(it), next(it)  # chunks, columns: the CPU's COLS schedule
    params = [param_from_word(b, next(it), d) for d in red.params]
    error = b.inttoptr(next(it), I64.as_pointer()) if red.may_fault else None
    return Words(outs, ins, scratch, scratch_index, kept, reduced, out_st, in_st, index_st,
                 length, blocks, params, error)  # fmt: skip


class _Body:
    def __init__(self, red: Reduction, fn: ir.Function):
        self.red, self.fn = red, fn
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.paired = red.paired
        self.acc_t = scalar_type(red.acc)
        self.sec_t = scalar_type(red.second_dtype)
        self.combine = Combiner(self.b, red.op, red.acc)

    def ident(self):
        return constant(self.red.acc, identity(self.red.op, self.red.acc), 1)

    def second_ident(self):
        """No index yet (arg ops), or 0 (a paired sum)."""
        if self.red.second is None:
            return i64(INT64_MAX)
        return constant(self.red.acc, 0, 1)

    def fold_warp(self, v, i):
        for mask in (16, 8, 4, 2, 1):
            ov = shuffle(self.b, v, mask)
            oi = shuffle(self.b, i, mask) if self.paired else None
            v, i = self.combine(v, i, ov, oi)
        return v, i

    def emit(self) -> None:
        b, red, fn = self.b, self.red, self.fn
        w = read_words(b, red, fn.args)
        outs, ins, kept, reduced, params = w.outs, w.ins, w.kept, w.reduced, w.params
        out_st, in_st, index_st, length = w.out_strides, w.in_strides, w.index_strides, w.length
        self.error = w.error
        shared_v = shared_array(b.module, self.acc_t, "warp_values")
        shared_i = shared_array(b.module, self.sec_t, "warp_indices")
        tid = sreg(b, "tid.x")
        lane = b.urem(tid, i64(WARP))
        warp = b.udiv(tid, i64(WARP))
        outputs = i64(1)
        for s in kept:
            outputs = b.mul(outputs, s)
        start = sreg(b, "ctaid.x")
        step = sreg(b, "nctaid.x")
        head = fn.append_basic_block("out.head")
        body = fn.append_basic_block("out.body")
        done = fn.append_basic_block("exit")
        entry = b.block
        b.branch(head)
        b.position_at_end(head)
        o = b.phi(I64, name="o")
        o.add_incoming(start, entry)
        b.cbranch(b.icmp_signed("<", o, outputs), body, done)
        b.position_at_end(body)

        kidx = decompose(b, o, kept)
        bases = [element_offset(b, kidx, st[: red.kept]) for st in in_st]
        # Each thread: elements tid, tid + THREADS, ... of the reduced range.
        pre = b.block
        loop = fn.append_basic_block("elem")
        after = fn.append_basic_block("elem.done")
        b.cbranch(b.icmp_signed("<", tid, length), loop, after)
        b.position_at_end(loop)
        j = b.phi(I64, name="j")
        v = b.phi(self.acc_t, name="v")
        i = b.phi(self.sec_t, name="i")
        j.add_incoming(tid, pre)
        v.add_incoming(self.ident(), pre)
        i.add_incoming(self.second_ident(), pre)
        ridx = decompose(b, j, reduced)
        offs = [
            b.add(base, element_offset(b, ridx, st[red.kept :])) for base, st in zip(bases, in_st)
        ]

        def load(k: int) -> ir.Value:
            return b.load(b.gep(ins[k], [offs[k]]), align=red.inputs[k].dtype.itemsize)

        emitter = ExprEmitter(b, 1, load, no_index, lambda s: params[s])
        x = emitter.emit(red.prologue)
        if red.second is not None:
            second = emitter.emit(red.second)
        else:
            second = element_offset(b, ridx, index_st) if red.is_arg else None
        nv, ni = self.combine(v, i, x, second, red.fma)  # the CPU's fma rule: same bits
        nj = b.add(j, i64(THREADS))
        j.add_incoming(nj, b.block)
        v.add_incoming(nv, b.block)
        i.add_incoming(ni if self.paired else i, b.block)
        b.cbranch(b.icmp_signed("<", nj, length), loop, after)
        last = b.block

        b.position_at_end(after)
        tv = b.phi(self.acc_t, name="tv")
        ti = b.phi(self.sec_t, name="ti")
        tv.add_incoming(self.ident(), pre)
        ti.add_incoming(self.second_ident(), pre)
        tv.add_incoming(nv, last)
        ti.add_incoming(ni if self.paired else i, last)

        # Shared memory starts as the identity (set here, not by an initializer).
        zero = i64(0)
        with b.if_then(b.icmp_unsigned("<", tid, i64(WARPS))):
            b.store(self.ident(), b.gep(shared_v, [zero, tid]))
            b.store(self.second_ident(), b.gep(shared_i, [zero, tid]))
        barrier(b)
        wv, wi = self.fold_warp(tv, ti)
        with b.if_then(b.icmp_unsigned("==", lane, zero)):
            b.store(wv, b.gep(shared_v, [zero, warp]))
            b.store(wi if self.paired else self.second_ident(), b.gep(shared_i, [zero, warp]))
        barrier(b)
        with b.if_then(b.icmp_unsigned("==", warp, zero)):
            inside = b.icmp_unsigned("<", lane, i64(WARPS))
            slot = b.select(inside, lane, zero)
            sv = b.select(inside, b.load(b.gep(shared_v, [zero, slot])), self.ident())
            si = b.select(inside, b.load(b.gep(shared_i, [zero, slot])), self.second_ident())
            fv, fi = self.fold_warp(sv, si)
            with b.if_then(b.icmp_unsigned("==", lane, zero)):
                emitter = ExprEmitter(
                    b,
                    1,
                    lambda k: fv if k == 0 else fi,
                    no_index,
                    lambda s: params[s],
                    lambda code, cond: report_fault(b, self.error, code, cond),
                )
                for n, (buf, e) in enumerate(zip(red.outputs, red.epilogues)):
                    at = element_offset(b, kidx, out_st[n])
                    value = narrow(b, emitter.emit(e), buf.dtype)
                    b.store(value, b.gep(outs[n], [at]), align=buf.dtype.itemsize)
        barrier(b)  # shared memory is reused by the next output
        o.add_incoming(b.add(o, step), b.block)
        b.branch(head)
        b.position_at_end(done)
        b.ret_void()


_memory = kernel_cache.Memo()
_loaded = kernel_cache.Memo()


def cache_key(red: Reduction) -> str:
    return kernel_cache.key_of(
        format_reduction(red),
        TRIPLE,
        compiler.ARCH,
        compiler.FEATURES,
        compiler.llvm_version(),
        CODEGEN_SCHEMA,
    )


def function_name(red: Reduction) -> str:
    return f"kael_{red.name}_{cache_key(red)[:16]}"


def ptx_for(red: Reduction) -> str:
    """The PTX of `red`, running LLVM at most once per machine."""

    def make() -> str:
        return compiler.stored_ptx(
            format_reduction(red), lambda: build_module(red, function_name(red))
        )

    return _memory.get(red, make)


def in_host_order(red: Reduction) -> bool:
    """Whether `red`'s result depends on the order of its combining steps (float sums and
    products: sum, mean, var, std, norm, prod): those run the host's own functions."""
    return red.op in ("sum", "prod") and red.acc.is_floating_point


def host_order_spec(red: Reduction):
    """(symbol, builder) of `red`'s host functions (codegen/cpu/reduce.py: the blocks and
    the tree over their partials) for the GPU, without the host's prefetches."""
    gpu_red = dataclasses.replace(red, prefetch=NO_PREFETCH, fetch_ahead=0)
    symbol = f"kael_{red.name}_host_order_{cache_key(gpu_red)[:16]}"

    def build(module: ir.Module) -> list[str]:
        cpu_reduce.fill_module(module, gpu_red, symbol)
        return [symbol, f"{symbol}_final"]

    return symbol, build


def _launch_in_host_order(red: Reduction, words: list[int], plan: ReducePlan, moved: int) -> None:
    """The host's work items, one a thread, then its tree where an output spans several
    blocks: the CPU's blocks, lanes and combining order, so the same bits on both devices
    whatever the thread counts (partials in device scratch, as the CPU keeps them in host
    scratch). The fast kernel above stays for the ops whose order cannot show."""
    symbol, build = host_order_spec(red)
    runner = DeviceRunner()
    try:
        words = list(words)
        items = plan.work_items
        if plan.schedule == COLS:  # one column a work item (see codegen/cpu/reduce._emit_cols)
            at = word_count(red) - len(red.params) - int(red.may_fault)
            words[at - 2], words[at - 1] = plan.kept[-1], 1  # chunks, columns
            items = plan.outputs * plan.blocks
        if plan.blocks > 1:
            partials = plan.outputs * plan.blocks
            at = len(red.outputs) + len(red.inputs)
            words[at] = runner.scratch([0] * partials)  # 8 bytes hold any accumulator
            words[at + 1] = runner.scratch([0] * (partials if red.paired else 1))
        runner.run(symbol, build, symbol, words, items, moved, kernel=red)
        if plan.blocks > 1:
            runner.run(symbol, build, f"{symbol}_final", words, plan.outputs, 0, kernel=red)
    finally:
        runner.close()


def launch(red: Reduction, words: list[int], plan: ReducePlan) -> None:
    """Run `red` on the GPU: one CTA per output (up to MAX_BLOCKS, then grid-stride), or,
    where the order of its steps shows in the result, the host's functions (above)."""
    expected = word_count(red)
    if len(words) != expected:
        raise Error(f"reduction {red.name} takes {expected} argument words, got {len(words)}")
    if plan.outputs == 0:
        return
    _, function = _loaded.get(
        red, lambda: cuda_driver.load_function(ptx_for(red), function_name(red))
    )
    blocks = max(1, min(MAX_BLOCKS, plan.outputs))
    reduced = 1
    for size in plan.reduced:
        reduced *= size
    moved = plan.outputs * (
        reduced * sum(b.dtype.itemsize for b in red.inputs)
        + sum(b.dtype.itemsize for b in red.outputs)
    )
    if in_host_order(red):
        from kael.codegen.ptx import warp_reduce  # it imports this module

        if warp_reduce.eligible(red, plan):
            warp_reduce.launch(red, words, plan, moved)
        else:
            _launch_in_host_order(red, words, plan, moved)
        return
    cuda_driver.launch_kernel(
        function, blocks, THREADS, words, name=function_name(red), moved=moved, kernel=red
    )
