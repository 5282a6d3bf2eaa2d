"""A Kernel as an LLVM function for the host: `void k(i64* args, i64 begin, i64 end)`.

The argument block holds, as 64-bit words: one pointer per buffer (outputs first), the
sizes of the `rank` dimensions, each buffer's strides in elements, then the run-time
scalar parameters (floats as float64 bits). A call computes
the work items [begin, end): elements in row-major order for a flat kernel, square
tiles of the last two dimensions for a tiled one. Threads call it on disjoint ranges.

Inner loops where every buffer is unit-stride or broadcast are vectorized explicitly
(`WIDTH` lanes, unrolled `UNROLL` times, then one masked vector step for the rest of the
row, or a scalar tail in kernels that report faults), so speed does not hang on
the loop vectorizer; a nontemporal kernel first aligns its output to 64 bytes. A body
running vector math or Philox is not unrolled (`unroll_of`).
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.lowering import (
    I64,
    LONG_OPS,
    ExprEmitter,
    declare,
    decompose,
    element_offset,
    i64,
    mangle,
    memory_type,
    narrow,
    param_from_word,
    prefetch,
    prefetch_steps,
    report_fault,
    splat,
)
from kael.ir import expr as x
from kael.ir.kernel import BCAST, CONTIG, NO_PREFETCH, PAIRS, TRANSPOSED, Kernel
from kael.runtime.dtypes import float16

VECTOR_BYTES = 64
UNROLL = 4
CACHE_LINE = 64


def unroll_of(kernel: Kernel) -> int:
    """Copies of the vector body per loop step. A body running vector math or Philox
    (lowering.LONG_OPS) is compute-bound: its copies hide nothing the out-of-order core
    does not, and only multiply its compile time (randn 310 -> 156 ms, gelu 58 -> 17 ms;
    run times on 4M elements within 2%, float64 erf 16% faster)."""
    return 1 if any(x.uses_ops(e, LONG_OPS) for e in kernel.exprs) else UNROLL


def vector_width(kernel: Kernel) -> int:
    """Lanes per vector: one 64-byte register of the widest element type as computed
    (float16 and bfloat16 in float32: 16 lanes, loaded from 32 bytes)."""
    return max(1, VECTOR_BYTES // max(b.dtype.compute.itemsize for b in kernel.buffers))


class _Args:
    """Typed views of the argument block, loaded once in the entry block."""

    def __init__(self, b: ir.IRBuilder, kernel: Kernel, block: ir.Value):
        n, r = len(kernel.buffers), kernel.rank

        def word(i: int) -> ir.Value:
            return b.load(b.gep(block, [ir.Constant(I64, i)]), name=f"w{i}")

        self.ptrs = [
            b.inttoptr(word(i), memory_type(buf.dtype).as_pointer(), name=f"p{i}")
            for i, buf in enumerate(kernel.buffers)
        ]
        self.sizes = [word(n + d) for d in range(r)]
        self.strides = [[word(n + r + i * r + d) for d in range(r)] for i in range(n)]
        first = n + r + n * r
        self.params = [param_from_word(b, word(first + s), d) for s, d in enumerate(kernel.params)]
        self.error = None
        if kernel.may_fault:
            self.error = b.inttoptr(word(first + len(kernel.params)), I64.as_pointer(), name="err")

    def fault(self, b: ir.IRBuilder, code: int, cond: ir.Value) -> None:
        """Store `code` in the error word when any lane of `cond` holds (rarely taken)."""
        if isinstance(cond.type, ir.VectorType):
            name = f"llvm.vector.reduce.or.{mangle(cond.type)}"
            fnty = ir.FunctionType(ir.IntType(1), [cond.type])
            cond = b.call(declare(b.module, name, fnty), [cond])
        report_fault(b, self.error, code, cond)


class LoopBuilder:
    """Small structured-control-flow helpers over one IRBuilder."""

    def __init__(self, b: ir.IRBuilder):
        self.b = b

    def counted(self, start: ir.Value, stop: ir.Value, step: int, body, name: str) -> ir.Value:
        """for (i = start; i + step <= stop; i += step) body(i); returns the final i."""
        b = self.b
        pre = b.block
        head = b.append_basic_block(f"{name}.head")
        loop = b.append_basic_block(f"{name}.body")
        done = b.append_basic_block(f"{name}.done")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64, name=f"{name}.i")
        i.add_incoming(start, pre)
        limit = b.sub(stop, ir.Constant(I64, step - 1)) if step > 1 else stop
        b.cbranch(b.icmp_signed("<", i, limit), loop, done)
        b.position_at_end(loop)
        body(i)
        nxt = b.add(i, ir.Constant(I64, step))
        i.add_incoming(nxt, b.block)
        b.branch(head)
        b.position_at_end(done)
        return i


def build_function(module: ir.Module, kernel: Kernel, symbol: str) -> ir.Function:
    """Emit `symbol` computing `kernel` into `module`."""
    fnty = ir.FunctionType(ir.VoidType(), [I64.as_pointer(), I64, I64])
    fn = ir.Function(module, fnty, symbol)
    fn.args[0].add_attribute("noalias")
    fn.attributes.add("nounwind")
    entry = fn.append_basic_block("entry")
    b = ir.IRBuilder(entry)
    args = _Args(b, kernel, fn.args[0])
    begin, end = fn.args[1], fn.args[2]
    exit_block = fn.append_basic_block("exit")
    work = fn.append_basic_block("work")
    b.cbranch(b.icmp_signed("<", begin, end), work, exit_block)
    b.position_at_end(work)
    if kernel.tiled:
        _emit_tiled(b, kernel, args, begin, end)
    else:
        _emit_flat(b, kernel, args, begin, end)
    b.branch(exit_block)
    b.position_at_end(exit_block)
    if kernel.nontemporal and kernel.fenced:
        b.fence("seq_cst")  # streaming stores are weakly ordered: publish them before returning
    b.ret_void()
    return fn


def store(b: ir.IRBuilder, ptr: ir.Value, value: ir.Value, align: int, stream: bool) -> None:
    """value to *ptr; `stream`: past the caches (nontemporal, the caller fences)."""
    st = b.store(value, ptr, align=align)
    if stream:
        st.set_metadata("nontemporal", b.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))


# float16 streaming stores: LLVM folds fptrunc into native float16 arithmetic (vaddph) and
# then stores half vectors through the cache, dropping !nontemporal; x86's own conversion
# (an intrinsic LLVM leaves alone) keeps the store streaming.
_CVTPS2PH = {16: "llvm.x86.avx512.mask.vcvtps2ph.512", 8: "llvm.x86.vcvtps2ph.256"}


def _streamed_half(b: ir.IRBuilder, value: ir.Value, ptr: ir.Value) -> tuple | None:
    """(bits, pointer) of a float32 vector rounded to float16 by vcvtps2ph (to nearest,
    ties to even) for a streaming store, or None where the host lacks that instruction."""
    from kael.codegen.cpu import compiler  # it imports this module

    lanes = value.type.count if isinstance(value.type, ir.VectorType) else 1
    if lanes not in _CVTPS2PH or not compiler.has_feature("avx512f" if lanes == 16 else "f16c"):
        return None
    i16s, i32 = ir.VectorType(ir.IntType(16), lanes), ir.IntType(32)
    args = [value, ir.Constant(i32, 0)]
    if lanes == 16:
        args += [ir.Constant(i16s, None), ir.Constant(ir.IntType(16), -1)]
    fn = declare(b.module, _CVTPS2PH[lanes], ir.FunctionType(i16s, [a.type for a in args]))
    return b.call(fn, args), b.bitcast(ptr, i16s.as_pointer())


def _compute(
    b: ir.IRBuilder, kernel: Kernel, args: _Args, width: int, load, index
) -> list[ir.Value]:
    """The value of every output expression in registers (float16/bfloat16 as float32),
    given how to load inputs and positions."""
    from kael.codegen.cpu import compiler  # it imports this module

    emitter = ExprEmitter(
        b,
        width,
        load,
        index,
        lambda slot: args.params[slot],
        lambda c, v: args.fault(b, c, v),
        scalef=compiler.has_avx512f(),
    )
    return [emitter.emit(e) for e in kernel.exprs]


def _emit_body(
    b: ir.IRBuilder,
    kernel: Kernel,
    args: _Args,
    width: int,
    address,
    index,
    align: int = 0,
    stream: bool = False,
    mask: ir.Value | None = None,
    paired: bool = False,
    count: ir.Value | None = None,
) -> None:
    """Compute every output at one position (or `width` consecutive ones) and store it.

    `address(buffer, width)` gives the pointer to load or store; `index(axis)` the position.
    With a `mask` (an i1 per lane, unit-stride and broadcast buffers only) the lanes off it
    neither load nor store: a row's last partial vector, its first `count` lanes.
    `paired`: a PAIRS input's address is its first element, read as 2 * width lanes (the
    contiguous row walk's); else it gives lane pointers like any strided buffer's.
    """
    n_out = len(kernel.outputs)

    def load(i: int) -> ir.Value:
        buf = kernel.inputs[i]
        if width > 1 and buf.inner == BCAST:
            scalar = b.load(address(n_out + i, 1), align=buf.dtype.itemsize)
            return splat(b, scalar, width)
        if width > 1 and buf.inner == PAIRS and paired:  # `address` gives 2 * width lanes
            return even_lanes(b, address(n_out + i, width), buf.dtype.itemsize, mask)
        if width > 1 and buf.inner not in (CONTIG, BCAST):  # `address` gives lane pointers
            return gather(b, address(n_out + i, width), buf.dtype.itemsize)
        if mask is not None:
            return masked_load(b, address(n_out + i, width), buf.dtype.itemsize, mask)
        return b.load(address(n_out + i, width), align=buf.dtype.itemsize)

    values = _compute(b, kernel, args, width, load, index)
    for o, (buf, wide) in enumerate(zip(kernel.outputs, values)):
        half = None
        if stream and buf.dtype is float16:
            half = _streamed_half(b, wide, address(o, width))
        if half is not None:
            store(b, half[1], half[0], align, stream)
            continue
        value = narrow(b, wide, buf.dtype)
        if width > 1 and buf.inner not in (CONTIG, BCAST):
            _scatter(b, value, address(o, width), buf.dtype.itemsize)
        elif mask is not None:
            store_first(b, value, address(o, width), buf.dtype.itemsize, count, mask)
        else:
            store(b, address(o, width), value, align or buf.dtype.itemsize, stream)


def _lane_offsets(width: int) -> ir.Constant:
    return ir.Constant(ir.VectorType(I64, width), list(range(width)))


def _emit_flat(b: ir.IRBuilder, kernel: Kernel, args: _Args, begin: ir.Value, end: ir.Value):
    """Row-major walk of [begin, end): one inner-loop run per row of the last dimension."""
    r = kernel.rank
    inner = r - 1
    start_idx = decompose(b, begin, args.sizes)
    fn = b.function
    # The outer multi-index and the inner start live in allocas; mem2reg makes them SSA.
    entry_b = ir.IRBuilder(fn.entry_basic_block)
    entry_b.position_at_start(fn.entry_basic_block)
    slots = [entry_b.alloca(I64, name=f"idx{d}") for d in range(r)]
    pos_slot = entry_b.alloca(I64, name="pos")
    for d in range(r):
        b.store(start_idx[d], slots[d])
    b.store(begin, pos_slot)

    row = fn.append_basic_block("row")
    after = fn.append_basic_block("rows.done")
    b.branch(row)
    b.position_at_end(row)
    idx = [b.load(s) for s in slots]
    pos = b.load(pos_slot)
    i0 = idx[inner]
    n = b.sub(args.sizes[inner], i0)
    left = b.sub(end, pos)
    n = b.select(b.icmp_signed("<", n, left), n, left)
    bases = [element_offset(b, idx[:inner], st[:inner]) for st in args.strides]

    vectorizable = all(buf.inner == CONTIG for buf in kernel.outputs) and all(
        buf.inner in (CONTIG, BCAST, PAIRS) for buf in kernel.inputs
    )
    if vectorizable:
        _emit_contig_row(b, kernel, args, bases, idx, i0, n)
    else:
        _emit_strided_row(b, kernel, args, bases, idx, i0, n)

    pos = b.add(pos, n)
    b.store(pos, pos_slot)
    more = fn.append_basic_block("rows.next")
    b.cbranch(b.icmp_signed("<", pos, end), more, after)
    b.position_at_end(more)
    b.store(ir.Constant(I64, 0), slots[inner])
    # Carry into the outer dimensions; pos < end guarantees one of them advances.
    carry(b, fn, slots, args.sizes, inner, row)
    b.position_at_end(after)


def carry(b: ir.IRBuilder, fn: ir.Function, slots, sizes, inner: int, resume) -> None:
    """Add one to odometer digits slots[inner - 1], ..., slots[0] (each wrapping at its
    size) until one does not wrap, then branch to `resume`."""
    for d in reversed(range(inner)):
        v = b.add(b.load(slots[d]), ir.Constant(I64, 1))
        wrapped = b.icmp_signed(">=", v, sizes[d])
        b.store(b.select(wrapped, ir.Constant(I64, 0), v), slots[d])
        if d > 0:
            nxt = fn.append_basic_block(f"carry{d}")
            b.cbranch(wrapped, nxt, resume)
            b.position_at_end(nxt)
    b.branch(resume)


def _emit_strided_row(b, kernel: Kernel, args: _Args, bases, idx, i0, n):
    """A run of `n` elements where some buffer has any stride. A long body (unroll_of 1)
    runs `width` lanes at a time, gathering and scattering the strided buffers: LLVM's
    vectorizer gives up on its rarely-taken branches, and one element at a time a strided
    exp took 3x PyTorch's time. Cheap bodies stay scalar (they beat PyTorch already)."""
    inner = kernel.rank - 1
    loops = LoopBuilder(b)
    j = ir.Constant(I64, 0)
    if unroll_of(kernel) == 1:
        width = vector_width(kernel)
        lanes = _lane_offsets(width)

        def lanes_body(j):
            pos = b.add(i0, j)
            at = b.add(splat(b, pos, width), lanes)

            def address(i: int, w: int):
                buf, base = kernel.buffers[i], bases[i]
                if buf.inner == BCAST or w == 1:
                    return b.gep(args.ptrs[i], [base])
                if buf.inner == CONTIG:
                    p = b.gep(args.ptrs[i], [b.add(base, pos)])
                    return b.bitcast(p, memory_type(buf.dtype, w).as_pointer())
                step = splat(b, args.strides[i][inner], w)
                offsets = b.add(splat(b, base, w), b.mul(at, step))
                return lane_pointers(b, args.ptrs[i], offsets, buf.dtype.itemsize)

            def index(axis: int):
                return at if axis == inner else splat(b, idx[axis], width)

            _emit_body(b, kernel, args, width, address, index)

        j = loops.counted(j, n, width, lanes_body, "lanes")

    def body(j):
        pos = b.add(i0, j)
        offsets = [b.add(base, b.mul(pos, st[inner])) for base, st in zip(bases, args.strides)]
        _emit_body(
            b,
            kernel,
            args,
            1,
            lambda i, w: b.gep(args.ptrs[i], [offsets[i]]),
            lambda axis: pos if axis == inner else idx[axis],
        )

    loops.counted(j, n, 1, body, "elem")


def lane_pointers(b: ir.IRBuilder, ptr: ir.Value, offsets: ir.Value, itemsize: int):
    """The vector of `ptr + offsets[lane]` element pointers (offsets in elements)."""
    width = offsets.type.count
    base = splat(b, b.ptrtoint(ptr, I64), width)
    addresses = b.add(base, b.mul(offsets, splat(b, ir.Constant(I64, itemsize), width)))
    return b.inttoptr(addresses, ir.VectorType(ptr.type, width))


def _all_lanes(width: int) -> ir.Constant:
    return ir.Constant(ir.VectorType(ir.IntType(1), width), [1] * width)


def gather(b: ir.IRBuilder, pointers: ir.Value, align: int, mask: ir.Value | None = None):
    """The elements at a vector of pointers; with `mask`, lanes off it read no memory and
    give zero."""
    width, element = pointers.type.count, pointers.type.element.pointee
    vt, i32 = ir.VectorType(element, width), ir.IntType(32)
    fill = ir.Constant(vt, ir.Undefined if mask is None else None)
    mask = _all_lanes(width) if mask is None else mask
    fnty = ir.FunctionType(vt, [pointers.type, i32, mask.type, vt])
    fn = declare(b.module, f"llvm.masked.gather.{mangle(vt)}.v{width}p0", fnty)
    return b.call(fn, [pointers, ir.Constant(i32, align), mask, fill])


def _scatter(b: ir.IRBuilder, value: ir.Value, pointers: ir.Value, align: int) -> None:
    width, i32 = pointers.type.count, ir.IntType(32)
    mask = _all_lanes(width)
    fnty = ir.FunctionType(ir.VoidType(), [value.type, pointers.type, i32, mask.type])
    fn = declare(b.module, f"llvm.masked.scatter.{mangle(value.type)}.v{width}p0", fnty)
    b.call(fn, [value, pointers, ir.Constant(i32, align), mask])


def even_lanes(b: ir.IRBuilder, ptr: ir.Value, align: int, mask: ir.Value | None) -> ir.Value:
    """Elements 0, 2, 4, ... of the 2 * width at ptr (a <width x T>* pointer): one masked
    load of the even lanes only (an odd one past the row's end is never touched), then
    one permute packing them."""
    vt = ptr.type.pointee
    width, i32 = vt.count, ir.IntType(32)
    wide = ir.VectorType(vt.element, 2 * width)
    if mask is None:
        mask = ir.Constant(ir.VectorType(ir.IntType(1), width), [1] * width)
    spread = [i // 2 if i % 2 == 0 else width for i in range(2 * width)]
    off = ir.Constant(ir.VectorType(ir.IntType(1), width), [0] * width)
    evens = b.shuffle_vector(mask, off, ir.Constant(ir.VectorType(i32, 2 * width), spread))
    pair = masked_load(b, b.bitcast(ptr, wide.as_pointer()), align, evens)
    picks = ir.Constant(ir.VectorType(i32, width), [2 * i for i in range(width)])
    return b.shuffle_vector(pair, ir.Constant(wide, ir.Undefined), picks)


def masked_load(b: ir.IRBuilder, ptr: ir.Value, align: int, mask: ir.Value | None) -> ir.Value:
    """The lanes of *ptr on `mask`, zero elsewhere; lanes off the mask read no memory
    (mask None: a plain load of every lane)."""
    if mask is None:
        return b.load(ptr, align=align)
    vt, i32 = ptr.type.pointee, ir.IntType(32)
    fnty = ir.FunctionType(vt, [ptr.type, i32, mask.type, vt])
    fn = declare(b.module, f"llvm.masked.load.{mangle(vt)}.p0", fnty)
    return b.call(fn, [ptr, ir.Constant(i32, align), mask, ir.Constant(vt, None)])


def masked_store(b: ir.IRBuilder, value: ir.Value, ptr: ir.Value, align: int, mask) -> None:
    """`value`'s lanes on `mask` stored to *ptr; lanes off the mask write no memory."""
    i32 = ir.IntType(32)
    fnty = ir.FunctionType(ir.VoidType(), [value.type, ptr.type, i32, mask.type])
    fn = declare(b.module, f"llvm.masked.store.{mangle(value.type)}.p0", fnty)
    b.call(fn, [value, ptr, ir.Constant(i32, align), mask])


def store_first(
    b: ir.IRBuilder, value: ir.Value, ptr: ir.Value, align: int, count: ir.Value, mask: ir.Value
) -> None:
    """The first `count` (< width, an i64) lanes of `value` stored to *ptr, `mask` their
    lane mask. AVX-512 stores under the mask; elsewhere the vector goes to a stack slot
    and is copied out in power-of-two pieces (count's bits): AMD cores up to Zen 3
    microcode AVX2's masked store (~85 cycles a row's tail on Zen 3, 4x a whole row of
    16 float32 lanes)."""
    from kael.codegen.cpu import compiler  # it imports this module

    if compiler.has_avx512f():
        masked_store(b, value, ptr, align, mask)
        return
    vt = value.type
    here = b.block
    entry = b.function.entry_basic_block
    b.position_before(entry.terminator) if entry.is_terminated else b.position_at_end(entry)
    slot = b.alloca(vt, name="tail")
    slot.align = align
    b.position_at_end(here)
    b.store(value, slot, align=align)
    elem = vt.element.as_pointer()
    src, dst = b.bitcast(slot, elem), b.bitcast(ptr, elem)
    done = ir.Constant(I64, 0)
    piece = vt.count // 2
    while piece:
        part = b.and_(count, ir.Constant(I64, piece))
        with b.if_then(b.icmp_unsigned("!=", part, ir.Constant(I64, 0))):
            t = vt.element if piece == 1 else ir.VectorType(vt.element, piece)
            chunk = b.load(b.bitcast(b.gep(src, [done]), t.as_pointer()), align=align)
            b.store(chunk, b.bitcast(b.gep(dst, [done]), t.as_pointer()), align=align)
        done = b.add(done, part)
        piece //= 2


def lanes_below(b: ir.IRBuilder, count: ir.Value, width: int) -> ir.Value:
    """The i1 lane mask of the first `count` (< width, an i64) of `width` lanes."""
    i32 = ir.IntType(32)
    lanes = ir.Constant(ir.VectorType(i32, width), list(range(width)))
    return b.icmp_unsigned("<", lanes, splat(b, b.trunc(count, i32), width))


# Tails of at most this many elements run element by element where masked vectors are
# slow (without AVX-512: ~25 ns a masked step on Zen 3 against ~4.5 ns an element).
SCALAR_TAIL = 4


def _scalar_short_tails(kernel: Kernel) -> bool:
    """Whether short row tails run element by element: cheap bodies (no vector math, whose
    third copy would only add compile time) on hosts without AVX-512's masks."""
    from kael.codegen.cpu import compiler  # it imports this module

    return unroll_of(kernel) > 1 and not compiler.has_avx512f()


def masked_tail(kernel: Kernel) -> bool:
    """Whether a row's last partial vector runs as one masked vector step rather than
    element by element: the lanes off the mask compute on zeros, so never in a kernel
    that reports faults (an integer division by zero would be reported)."""
    return vector_width(kernel) > 1 and not kernel.may_fault


def _emit_contig_row(b, kernel: Kernel, args: _Args, bases, idx, i0, n):
    """A run of `n` elements where each output is unit-stride and each input unit-stride,
    broadcast or of stride 2 (PAIRS: read 2 * width lanes at a time, its even ones kept)."""
    inner = kernel.rank - 1
    width = vector_width(kernel)
    step = {BCAST: 0, PAIRS: 2}
    # Row pointers: base + i0 * stride (a broadcast buffer's stays at base).
    rows = []
    for i, buf in enumerate(kernel.buffers):
        start = b.add(bases[i], b.mul(i0, ir.Constant(I64, step.get(buf.inner, 1))))
        rows.append(b.gep(args.ptrs[i], [start]))

    def address_at(j):
        def address(i: int, w: int):
            buf = kernel.buffers[i]
            if buf.inner == BCAST:
                return rows[i]
            at = b.mul(j, ir.Constant(I64, 2)) if buf.inner == PAIRS else j
            p = b.gep(rows[i], [at])
            return p if w == 1 else b.bitcast(p, memory_type(buf.dtype, w).as_pointer())

        return address

    def index_at(j, w):
        def index(axis: int):
            if axis != inner:
                return idx[axis] if w == 1 else splat(b, idx[axis], w)
            pos = b.add(i0, j)
            return pos if w == 1 else b.add(splat(b, pos, w), _lane_offsets(w))

        return index

    loops = LoopBuilder(b)
    start = ir.Constant(I64, 0)
    stream = kernel.nontemporal
    align = 0
    if stream:
        # Scalar steps until the output reaches a cache-line boundary, then aligned streams.
        out_size = kernel.outputs[0].dtype.itemsize
        addr = b.ptrtoint(rows[0], I64)
        mis = b.and_(b.sub(ir.Constant(I64, 0), addr), ir.Constant(I64, CACHE_LINE - 1))
        peel = b.udiv(mis, ir.Constant(I64, out_size))
        peel = b.select(b.icmp_signed("<", peel, n), peel, n)
        loops.counted(
            start,
            peel,
            1,
            lambda j: _emit_body(b, kernel, args, 1, address_at(j), index_at(j, 1)),
            "peel",
        )
        start = peel
        align = width * out_size if width * out_size <= CACHE_LINE else CACHE_LINE

    unroll = unroll_of(kernel)
    ahead = kernel.prefetch
    if ahead != NO_PREFETCH and kernel.inputs[ahead].inner == CONTIG:
        ahead_row = rows[len(kernel.outputs) + ahead]
        distance = i64(kernel.fetch_ahead) if kernel.fetch_ahead else args.params[-1]
        ahead_steps = prefetch_steps(kernel.inputs[ahead].dtype.itemsize, width, unroll)
    else:
        ahead_steps = []

    def unrolled(j):
        for u in range(unroll):
            ju = b.add(j, ir.Constant(I64, u * width))
            if u in ahead_steps:
                prefetch(b, b.gep(ahead_row, [b.add(ju, distance)]))
            body_at = (address_at(ju), index_at(ju, width))
            _emit_body(b, kernel, args, width, *body_at, align, stream, paired=True)

    j = loops.counted(start, n, width * unroll, unrolled, "vec4")
    if unroll > 1:
        j = loops.counted(
            j,
            n,
            width,
            lambda j: _emit_body(
                b,
                kernel,
                args,
                width,
                address_at(j),
                index_at(j, width),
                align,
                stream,
                paired=True,
            ),
            "vec",
        )

    def scalar_step(j):
        _emit_body(b, kernel, args, 1, address_at(j), index_at(j, 1))

    def scalar_steps(j):
        loops.counted(j, n, 1, scalar_step, "tail")

    if not masked_tail(kernel):
        scalar_steps(j)
        return

    def masked_step():
        count = b.sub(n, j)
        mask = lanes_below(b, count, width)
        at = address_at(j)
        _emit_body(
            b, kernel, args, width, at, index_at(j, width), mask=mask, count=count, paired=True
        )

    with b.if_then(b.icmp_signed("<", j, n)):
        if not _scalar_short_tails(kernel):
            masked_step()
            return
        short = b.icmp_signed("<=", b.sub(n, j), ir.Constant(I64, SCALAR_TAIL))
        with b.if_else(short) as (few, many):
            with few:
                scalar_steps(j)
            with many:
                masked_step()


def tile_size(kernel: Kernel) -> int:
    """Side of the square tiles of a tiled kernel: one vector of the widest element type."""
    return vector_width(kernel)


# AVX-512's two-source permute of each 64-byte element type: (intrinsic suffix, index bits).
_PERMUTES = {("float", 16): ("ps", 32), ("double", 8): ("pd", 64), ("i32", 16): ("d", 32),
             ("i64", 8): ("q", 64)}  # fmt: skip


def transpose(b: ir.IRBuilder, rows: list[ir.Value]) -> list[ir.Value]:
    """Transpose a square of W vectors of W lanes in registers (W log2 W shuffles).

    At half-width h, rows i and i + h swap their off-diagonal h-lane blocks; after the
    levels W/2, W/4, ..., 1 every block is transposed. With AVX-512, each step is the
    permute intrinsic over index vectors loaded from a (writable, so never folded back)
    global: LLVM's shuffle lowering spent half of a tiled kernel's compile time combining
    the 64 generic shuffles (x.T copy 28 -> 16 ms; run time 0.95-1.06x, within noise).
    """
    w = len(rows)
    rows = list(rows)
    levels = []  # (h, the two swapped blocks' masks)
    h = w // 2
    while h >= 1:
        top, bottom = [], []
        for k in range(0, w, 2 * h):
            top += list(range(k, k + h)) + list(range(w + k, w + k + h))
            bottom += list(range(k + h, k + 2 * h)) + list(range(w + k + h, w + k + 2 * h))
        levels.append((h, (top, bottom)))
        h //= 2
    step, masks = _transpose_step(b, rows[0].type, [m for _, pair in levels for m in pair])
    for level, (h, _) in enumerate(levels):
        top_mask, bottom_mask = masks[2 * level], masks[2 * level + 1]
        for i in range(w):
            if (i // h) % 2 == 0:
                upper, lower = rows[i], rows[i + h]
                rows[i], rows[i + h] = step(upper, lower, top_mask), step(upper, lower, bottom_mask)
    return rows


def _transpose_step(b: ir.IRBuilder, vt: ir.VectorType, masks: list[list[int]]):
    """(step(a, c, mask), the masks as its operands): AVX-512's vpermi2var with the masks
    loaded from an internal global, else the generic shuffle with constant masks."""
    from kael.codegen.cpu import compiler  # it imports this module

    form = _PERMUTES.get((str(vt.element), vt.count))
    if form is None or not compiler.has_avx512f():
        constant = ir.VectorType(ir.IntType(32), vt.count)
        return b.shuffle_vector, [ir.Constant(constant, m) for m in masks]
    suffix, bits = form
    ivt = ir.VectorType(ir.IntType(bits), vt.count)
    fn = declare(
        b.module, f"llvm.x86.avx512.vpermi2var.{suffix}.512", ir.FunctionType(vt, [vt, ivt, vt])
    )
    name = f"kael_transpose_{suffix}"
    table = b.module.globals.get(name)
    if table is None:
        table = ir.GlobalVariable(b.module, ir.ArrayType(ivt, len(masks)), name)
        table.linkage = "internal"
        table.initializer = ir.Constant(table.value_type, [ir.Constant(ivt, m) for m in masks])
    i32 = ir.IntType(32)
    loaded = [
        b.load(b.gep(table, [ir.Constant(i32, 0), ir.Constant(i32, i)])) for i in range(len(masks))
    ]
    return (lambda a, c, mask: b.call(fn, [a, mask, c])), loaded


def _vector_ptr(b: ir.IRBuilder, ptr: ir.Value, offset: ir.Value, dtype, width: int) -> ir.Value:
    return b.bitcast(b.gep(ptr, [offset]), memory_type(dtype, width).as_pointer())


def _emit_full_tile(b, kernel: Kernel, args: _Args, bases, outer, r0, c0, width: int):
    """One full W x W tile in vector registers: transposed inputs are transposed in place."""
    rows_dim, cols_dim = kernel.rank - 2, kernel.rank - 1
    n_out = len(kernel.outputs)
    emitter_rows = []
    for k, buf in enumerate(kernel.inputs):
        st, base, ptr = args.strides[n_out + k], bases[n_out + k], args.ptrs[n_out + k]
        at_row = [
            b.add(base, b.mul(b.add(r0, ir.Constant(I64, i)), st[rows_dim])) for i in range(width)
        ]
        if buf.inner == CONTIG:
            vecs = [
                b.load(
                    _vector_ptr(b, ptr, b.add(o, c0), buf.dtype, width), align=buf.dtype.itemsize
                )
                for o in at_row
            ]
        elif buf.inner == TRANSPOSED:
            cols = [
                b.load(
                    _vector_ptr(
                        b,
                        ptr,
                        b.add(b.add(base, r0), b.mul(b.add(c0, ir.Constant(I64, j)), st[cols_dim])),
                        buf.dtype,
                        width,
                    ),
                    align=buf.dtype.itemsize,
                )
                for j in range(width)
            ]
            vecs = transpose(b, cols)
        else:
            vecs = []
            for o in at_row:
                vec = ir.Constant(memory_type(buf.dtype, width), ir.Undefined)
                for j in range(width):
                    off = b.add(o, b.mul(b.add(c0, ir.Constant(I64, j)), st[cols_dim]))
                    vec = b.insert_element(
                        vec,
                        b.load(b.gep(ptr, [off]), align=buf.dtype.itemsize),
                        ir.Constant(I64, j),
                    )
                vecs.append(vec)
        emitter_rows.append(vecs)
    lanes = _lane_offsets(width)
    for i in range(width):
        row = b.add(r0, ir.Constant(I64, i))

        def index(axis: int, row=row):
            if axis == rows_dim:
                return splat(b, row, width)
            if axis == cols_dim:
                return b.add(splat(b, c0, width), lanes)
            return splat(b, outer[axis], width)

        values = _compute(b, kernel, args, width, lambda k, i=i: emitter_rows[k][i], index)
        for o, (buf, v) in enumerate(zip(kernel.outputs, values)):
            st = args.strides[o]
            off = b.add(b.add(bases[o], b.mul(row, st[rows_dim])), c0)
            ptr = _vector_ptr(b, args.ptrs[o], off, buf.dtype, width)
            b.store(narrow(b, v, buf.dtype), ptr, align=buf.dtype.itemsize)


def _emit_tiled(b: ir.IRBuilder, kernel: Kernel, args: _Args, begin: ir.Value, end: ir.Value):
    """Work items are square tiles of the last two dimensions, row-major over all.

    Full tiles run in vector registers when every output is unit-stride along the
    columns; edge tiles walk their elements one by one.
    """
    r = kernel.rank
    rows_dim, cols_dim = r - 2, r - 1
    width = tile_size(kernel)
    tile = ir.Constant(I64, width)
    n_ti = b.sdiv(b.add(args.sizes[rows_dim], ir.Constant(I64, width - 1)), tile)
    n_tj = b.sdiv(b.add(args.sizes[cols_dim], ir.Constant(I64, width - 1)), tile)
    loops = LoopBuilder(b)
    vector_tiles = all(buf.inner == CONTIG for buf in kernel.outputs)

    def per_tile(w):
        item = decompose(b, w, args.sizes[:rows_dim] + [n_ti, n_tj])
        outer = item[:rows_dim]
        bases = [element_offset(b, outer, st[:rows_dim]) for st in args.strides]
        r0 = b.mul(item[rows_dim], tile)
        c0 = b.mul(item[cols_dim], tile)
        r1 = b.add(r0, tile)
        c1 = b.add(c0, tile)
        full = b.and_(
            b.icmp_signed("<=", r1, args.sizes[rows_dim]),
            b.icmp_signed("<=", c1, args.sizes[cols_dim]),
        )
        r1 = b.select(b.icmp_signed("<", r1, args.sizes[rows_dim]), r1, args.sizes[rows_dim])
        c1 = b.select(b.icmp_signed("<", c1, args.sizes[cols_dim]), c1, args.sizes[cols_dim])

        def per_row(i):
            row_bases = [
                b.add(base, b.mul(i, st[rows_dim])) for base, st in zip(bases, args.strides)
            ]

            def per_col(j):
                offs = [
                    b.add(rb, b.mul(j, st[cols_dim])) for rb, st in zip(row_bases, args.strides)
                ]

                def index(axis: int):
                    return i if axis == rows_dim else j if axis == cols_dim else outer[axis]

                _emit_body(b, kernel, args, 1, lambda k, w: b.gep(args.ptrs[k], [offs[k]]), index)

            loops.counted(c0, c1, 1, per_col, "col")

        if not vector_tiles:
            loops.counted(r0, r1, 1, per_row, "trow")
            return
        fn = b.function
        fast, slow, joined = (
            fn.append_basic_block(n) for n in ("tile.full", "tile.edge", "tile.next")
        )
        b.cbranch(full, fast, slow)
        b.position_at_end(fast)
        _emit_full_tile(b, kernel, args, bases, outer, r0, c0, width)
        b.branch(joined)
        b.position_at_end(slow)
        loops.counted(r0, r1, 1, per_row, "trow")
        b.branch(joined)
        b.position_at_end(joined)

    loops.counted(begin, end, 1, per_tile, "tile")
