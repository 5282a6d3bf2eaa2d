"""A Kernel as an NVPTX module: one `ptx_kernel` entry whose threads stride over the elements.

The parameters are the CPU argument block's 64-bit words, one i64 each: a pointer per
buffer (outputs first), the sizes of the `rank` dimensions, each buffer's strides in
elements, the run-time scalars (floats as float64 bits), then `total`, the number of
elements. Thread t of a grid of T threads computes elements t, t + T, t + 2T, ... and
decomposes each into a multi-index with the run-time sizes. A short flat kernel (rank 1,
which is what a streaming op over contiguous or merged dims launches, and at most
UNROLL_BUDGET instructions) takes them UNROLL at a time, t + kT for k < UNROLL, and loads
all their inputs before computing any: a thread then has UNROLL loads of each input in
flight instead of one, what a streaming kernel needs to cover the memory's latency (each
load instruction stays coalesced: a warp's threads read consecutive elements); the
elements left after the last whole trip go one at a time. Where every buffer of such a
kernel is contiguous and 16-byte aligned (checked at run time), a thread takes PACK
consecutive elements a vector load and store instead, UNROLL packs a trip with every load
first, then the packs left one a trip, then the elements after the last whole pack one by
one. Buffers are global-space pointers, so their loads are ld.global. Tiling, streaming
stores and inner layouts are CPU schedule hints that the GPU ignores.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.lowering import (
    I64,
    ExprEmitter,
    decompose,
    element_offset,
    i64,
    memory_type,
    narrow,
    param_from_word,
    report_fault,
)
from kael.ir.kernel import Kernel
from kael.runtime.errors import Error

TRIPLE = "nvptx64-nvidia-cuda"
# NVPTX 64-bit as LLVM 22 states it (a test pins it to the target machine's own).
DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
I32 = ir.IntType(32)
UNROLL = 4  # elements (or packs) a thread loads before it computes them (module docstring)
PACK = 4  # elements of a contiguous buffer one vector load or store moves
GLOBAL = 1  # NVPTX's global address space: the buffers' loads and stores are ld/st.global
# The most LLVM instructions (as kael emits them, before optimization) of a kernel with
# the one-element loop that is unrolled: copies, casts, arithmetic, where, exp (69), log
# and tanh are, as they stream at memory speed; sigmoid (92), erf, gelu, sin and pow,
# bound by their arithmetic, keep one copy of their code (and ptxas's time).
UNROLL_BUDGET = 80

# Intrinsics NVPTX lowers to instructions: floating ones for f32 and f64, integer ones for i64.
SAFE_INTRINSICS = frozenset(
    {
        "fabs", "sqrt", "floor", "ceil", "rint", "trunc", "nearbyint", "fma", "fmuladd",
        "maxnum", "minnum", "copysign", "smax", "smin", "umax", "umin", "abs", "ctpop",
        "ctlz", "cttz",
    }
)  # fmt: skip
# f32-only approximations; the flag says whether the call must carry `afn`.
F32_APPROX_INTRINSICS = {"exp2": False, "sin": True, "cos": True, "tanh": True}


def param_count(kernel: Kernel) -> int:
    """How many i64 parameters the entry takes: the argument block's words plus `total`."""
    n, r = len(kernel.buffers), kernel.rank
    return n + r + n * r + len(kernel.params) + int(kernel.may_fault) + 1


def build_module(kernel: Kernel, symbol: str) -> ir.Module:
    """The kernel as an NVPTX llvmlite module with one entry named `symbol`."""
    module = ir.Module(name=symbol)
    module.triple = TRIPLE
    module.data_layout = DATA_LAYOUT
    build_function(module, kernel, symbol)
    return module


def _name_params(fn: ir.Function, kernel: Kernel) -> None:
    """Readable parameter names in the LLVM IR and PTX (ptr0, size0, stride1_0, param0, total)."""
    n, r = len(kernel.buffers), kernel.rank
    names = [f"ptr{i}" for i in range(n)] + [f"size{d}" for d in range(r)]
    names += [f"stride{i}_{d}" for i in range(n) for d in range(r)]
    names += [f"param{s}" for s in range(len(kernel.params))]
    names += ["error"] * kernel.may_fault + ["total"]
    for arg, name in zip(fn.args, names):
        arg.name = name


def sreg(b: ir.IRBuilder, register: str) -> ir.Value:
    """A PTX special register (tid.x, ntid.x, ctaid.x, nctaid.x) as an i64."""
    name = f"llvm.nvvm.read.ptx.sreg.{register}"
    fn = b.module.globals.get(name)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(I32, []), name)
    return b.zext(b.call(fn, []), I64)


def build_function(module: ir.Module, kernel: Kernel, symbol: str) -> ir.Function:
    """Emit the `ptx_kernel` entry `symbol` computing `kernel` into `module`."""
    n, r = len(kernel.buffers), kernel.rank
    fnty = ir.FunctionType(ir.VoidType(), [I64] * param_count(kernel))
    fn = ir.Function(module, fnty, symbol)
    fn.calling_convention = "ptx_kernel"  # without it the function becomes an unlaunchable .func
    fn.attributes.add("nounwind")
    _name_params(fn, kernel)
    words = list(fn.args)
    entry, rest, one, done = (
        fn.append_basic_block(name) for name in ("entry", "rest", "elem", "exit")
    )
    b = ir.IRBuilder(entry)

    ptrs = [
        b.inttoptr(words[i], memory_type(buf.dtype).as_pointer(GLOBAL), name=f"p{i}")
        for i, buf in enumerate(kernel.buffers)
    ]
    sizes = words[n : n + r]
    strides = [words[n + r + i * r : n + r + (i + 1) * r] for i in range(n)]
    first = n + r + n * r
    params = [param_from_word(b, words[first + s], d) for s, d in enumerate(kernel.params)]
    error = b.inttoptr(words[-2], I64.as_pointer(), name="err") if kernel.may_fault else None
    total = words[-1]
    n_out = len(kernel.outputs)

    def fault(code: int, cond: ir.Value) -> None:
        report_fault(b, error, code, cond)

    def element(linear: ir.Value) -> tuple[list[ir.Value], list[ir.Value], list[ir.Value]]:
        """(multi-index, buffer addresses, loaded inputs) of the element at `linear`."""
        idx = decompose(b, linear, sizes)
        addresses = [b.gep(p, [element_offset(b, idx, st)]) for p, st in zip(ptrs, strides)]
        loaded = [
            b.load(addresses[n_out + i], align=buf.dtype.itemsize)
            for i, buf in enumerate(kernel.inputs)
        ]
        return idx, addresses, loaded

    def results(idx: list[ir.Value], loaded: list[ir.Value]) -> list[ir.Value]:
        """Each output's value at the element with multi-index `idx` and inputs `loaded`."""
        emitter = ExprEmitter(
            b, 1, lambda i: loaded[i], lambda axis: idx[axis], lambda slot: params[slot], fault
        )
        return [
            narrow(b, emitter.emit(e), buf.dtype) for buf, e in zip(kernel.outputs, kernel.exprs)
        ]

    def compute(idx: list[ir.Value], addresses: list[ir.Value], loaded: list[ir.Value]) -> None:
        for buf, value, address in zip(kernel.outputs, results(idx, loaded), addresses):
            b.store(value, address, align=buf.dtype.itemsize)

    def packed(first: ir.Value) -> list[ir.Value]:
        """Load PACK elements of each input from element `first` as one vector each."""
        return [
            b.load(
                b.bitcast(
                    b.gep(ptrs[n_out + i], [first]), memory_type(buf.dtype, PACK).as_pointer(GLOBAL)
                ),
                align=_pack_align(buf.dtype),
            )  # fmt: skip
            for i, buf in enumerate(kernel.inputs)
        ]

    def compute_packed(first: ir.Value, vectors: list[ir.Value]) -> None:
        """The PACK elements from `first` computed lane by lane, stored as one vector each."""
        outs = [ir.Constant(memory_type(buf.dtype, PACK), ir.Undefined) for buf in kernel.outputs]
        for e in range(PACK):
            lane = ir.Constant(I64, e)
            loaded = [b.extract_element(v, lane) for v in vectors]
            values = results([b.add(first, lane)], loaded)
            outs = [b.insert_element(v, x, lane) for v, x in zip(outs, values)]
        for o, (buf, v) in enumerate(zip(kernel.outputs, outs)):
            target = b.bitcast(
                b.gep(ptrs[o], [first]), memory_type(buf.dtype, PACK).as_pointer(GLOBAL)
            )
            b.store(v, target, align=_pack_align(buf.dtype))

    threads = sreg(b, "ntid.x")
    start = b.add(b.mul(sreg(b, "ctaid.x"), threads), sreg(b, "tid.x"), name="start")
    step = b.mul(sreg(b, "nctaid.x"), threads, name="step")
    span = b.mul(step, ir.Constant(I64, UNROLL - 1), name="span")  # a trip's last element
    prologue = b.block

    b.position_at_end(rest)
    left = b.phi(I64, name="left")  # the first element not yet taken; incoming edges below
    b.position_at_end(one)  # one element a trip: the rest of the elements, or all of them
    linear = b.phi(I64, name="i")
    linear.add_incoming(left, rest)
    compute(*element(linear))
    following = b.add(linear, step)
    linear.add_incoming(following, b.block)
    b.cbranch(b.icmp_signed("<", following, total), one, done)

    rest_from = [(start, prologue)]
    if kernel.rank <= 1 and sum(len(bb.instructions) for bb in fn.blocks) <= UNROLL_BUDGET:
        wide = fn.append_basic_block("wide")  # UNROLL elements, all in range: loads first
        b.position_at_end(prologue)
        scalar = fn.append_basic_block("scalar")
        if kernel.rank == 1:  # contiguous, aligned buffers: PACK elements a load
            packs = fn.append_basic_block("packs")
            contiguous = ir.Constant(ir.IntType(1), 1)
            for i, buf in enumerate(kernel.buffers):
                unit = b.icmp_signed("==", strides[i][0], i64(1))
                aligned = b.icmp_unsigned(
                    "==", b.and_(words[i], i64(_pack_align(buf.dtype) - 1)), i64(0)
                )
                contiguous = b.and_(contiguous, b.and_(unit, aligned))
            b.cbranch(contiguous, packs, scalar)
            b.position_at_end(packs)
            count = b.udiv(total, i64(PACK))  # whole packs; the elements after go one by one
            rest_from.append((b.add(b.mul(count, i64(PACK)), start), _packed_loops(
                b, fn, start, step, count, packed, compute_packed)))  # fmt: skip
            b.branch(rest)
        else:
            b.branch(scalar)
        b.position_at_end(scalar)
        prologue = scalar
        rest_from[0] = (start, scalar)
        b.cbranch(b.icmp_signed("<", b.add(start, span), total), wide, rest)
        b.position_at_end(wide)
        base = b.phi(I64, name="base")
        base.add_incoming(start, prologue)
        elements = [element(b.add(base, b.mul(step, ir.Constant(I64, k)))) for k in range(UNROLL)]
        for parts in elements:
            compute(*parts)
        after = b.add(base, b.add(span, step), name="after")
        base.add_incoming(after, b.block)
        rest_from.append((after, b.block))
        b.cbranch(b.icmp_signed("<", b.add(after, span), total), wide, rest)
    else:
        b.position_at_end(prologue)
        b.branch(rest)

    b.position_at_end(rest)
    for value, block in rest_from:
        left.add_incoming(value, block)
    b.cbranch(b.icmp_signed("<", left, total), one, done)

    b.position_at_end(done)
    b.ret_void()
    return fn


def _pack_align(dtype) -> int:
    """A pack's alignment: its size, at most the 16 bytes of one vector load."""
    return min(16, PACK * dtype.itemsize)


def _packed_loops(b, fn, start, step, count, packed, compute_packed) -> ir.Block:
    """Packs start, start + step, ... below `count`: UNROLL of them a trip while they are
    all in range (every load first), then one a trip; returns the block it ends in."""
    pre = b.block
    wide, one, done = (fn.append_basic_block(n) for n in ("packs.wide", "packs.one", "packs.done"))
    tail = fn.append_basic_block("packs.tail")
    span = b.mul(step, i64(UNROLL - 1))
    b.cbranch(b.icmp_signed("<", b.add(start, span), count), wide, tail)
    b.position_at_end(wide)
    base = b.phi(I64, name="pack")
    base.add_incoming(start, pre)
    firsts = [b.mul(b.add(base, b.mul(step, i64(k))), i64(PACK)) for k in range(UNROLL)]
    vectors = [packed(first) for first in firsts]
    for first, loaded in zip(firsts, vectors):
        compute_packed(first, loaded)
    after = b.add(base, b.add(span, step))
    wide_end = b.block
    base.add_incoming(after, wide_end)
    b.cbranch(b.icmp_signed("<", b.add(after, span), count), wide, tail)
    b.position_at_end(tail)
    left = b.phi(I64, name="packs.left")
    left.add_incoming(start, pre)
    left.add_incoming(after, wide_end)
    b.cbranch(b.icmp_signed("<", left, count), one, done)
    b.position_at_end(one)
    p = b.phi(I64, name="pack1")
    p.add_incoming(left, tail)
    first = b.mul(p, i64(PACK))
    compute_packed(first, packed(first))
    following = b.add(p, step)
    p.add_incoming(following, b.block)
    b.cbranch(b.icmp_signed("<", following, count), one, done)
    b.position_at_end(done)
    return done


def check_intrinsics(module: ir.Module) -> None:
    """Refuse intrinsics NVPTX cannot lower: LLVM would abort the whole process on them."""
    for fn in module.functions:
        for block in fn.blocks:
            for inst in block.instructions:
                if isinstance(inst, ir.CallInstr) and isinstance(inst.callee, ir.Function):
                    _check_call(inst)


def _check_call(call: ir.CallInstr) -> None:
    name = call.callee.name
    if not name.startswith("llvm.") or name.startswith("llvm.nvvm."):
        return
    base = name.split(".")[1]
    if base in SAFE_INTRINSICS:
        return
    if base in F32_APPROX_INTRINSICS:
        t = call.type.element if isinstance(call.type, ir.VectorType) else call.type
        if isinstance(t, ir.FloatType) and (
            "afn" in call.fastmath or not F32_APPROX_INTRINSICS[base]
        ):
            return
        need = "float32 with the afn flag" if F32_APPROX_INTRINSICS[base] else "float32"
        raise Error(f"{name} cannot be lowered to PTX: NVPTX has it only for {need}")
    raise Error(
        f"{name} cannot be lowered to PTX (NVPTX has no instruction or libcall for it); "
        "use kael's own math instead"
    )
