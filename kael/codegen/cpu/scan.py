"""cumsum, cumprod and logcumsumexp: hand-written LLVM row scans, one module per (op,
input, output dtype).

A scan walks one line of the scanned dimension with its own stride, so any layout works
without moving the dimension last. The batch of lines (every other dimension, merged by
kael/ir/layout.py) is decoded from the work item at run time, so one function serves
every rank. Two functions per module:

- `lines`: a work item is one line, scanned element by element;
- `columns`: when the innermost batch dimension is unit-stride in input and output, a
  work item is a chunk of CHUNK adjacent lines, scanned together in vector registers.

One long line of an exact scan (an integer cumsum, cummax) and, on a GPU, any long line
is scanned in blocks of BLOCK elements instead, the two-pass block scan: `totals`
combines each block alone (a float block element after element, so ties break as in the
line scan), `carries` turns each line's totals into exclusive prefixes in place, and
`blocks` scans each block again from its carry. A block alone can overflow (a product:
underflow) where no prefix of its line does (-1e308, -1e308, 1e308 after a 1e308): a
float sum or product line with a total out of range is scanned whole by one work item
instead (large terms that cancel still round differently: the GPU's block scan, like
PyTorch's, is not the sequential line's). Three launches and a second read of the input,
for a work item per block; the blocks are fixed by the shape, so the bits do not depend
on the thread count.

Accumulation is in int64, float64 or, for float16 and bfloat16, float32 (PyTorch's CPU
choices), one element after another, so floating-point results do not depend on the
thread count.
logcumsumexp adds in log space: max + log1p(exp(-|a - b|)) with kael's vector math
(an infinity added to itself stays itself, NaN propagates).
Integer arithmetic wraps.
A pair scan (complex logcumsumexp) reads each element as two values of src's float dtype
at its offset and the next (a complex tensor's real and imaginary parts: the caller passes
the real parts' view) and combines in a <2 x double> with a `PairStep`, elementwise
expressions the caller builds from kael's complex math; lines only, element after element
as PyTorch's CPU loop (a GPU too: a thread a line).
The argument block is
[src, dst, n, src_step, dst_step, cols, rank, totals, blocks, sizes[rank],
src_strides[rank], dst_strides[rank]], every word an int64 (totals: the block kernels'
scratch of `blocks` accumulators a line).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from llvmlite import ir

from kael.codegen.cpu import handwritten
from kael.codegen.cpu.loops import LoopBuilder
from kael.codegen.emitters import UNARY_EMITTERS
from kael.codegen.lowering import (
    ExprEmitter,
    i64,
    memory_type,
    narrow,
    scalar_type,
    value_type,
    widen,
)
from kael.ir import layout
from kael.ir.expr import Expr
from kael.runtime.dtypes import INT64_MAX, DType, bool_, float32, float64, int64
from kael.runtime.errors import ValueError
from kael.runtime.tensor_impl import TensorImpl, ptr_on

I64 = ir.IntType(64)
OPS = ("cumsum", "cumprod", "logcumsumexp", "cummax", "cummin")
INT64_MIN = -INT64_MAX - 1
IDENTITY = {"cumsum": 0, "cumprod": 1, "logcumsumexp": -math.inf}
# cummax and cummin start from the accumulator's least (greatest) value; NaN, once met, stays
EXTREMES = {"cummax": (-math.inf, INT64_MIN), "cummin": (math.inf, INT64_MAX)}
LANES = 8  # one 64-byte vector of the 8-byte accumulator
UNROLL = 4  # independent vector accumulators per chunk
CHUNK = LANES * UNROLL  # adjacent lines per work item of the `columns` kernel
HEADER = 9  # words before the batch sizes
BLOCK = 4096  # elements a work item of the block scan


class PairStep(NamedTuple):
    """A pair scan's combine: `exprs` (the new real and imaginary parts) over float64
    loads, load k standing for operand positions[k] of (acc real, acc imag, x real, x
    imag); `name` names its kernels (one step per name); `identity` the accumulator's
    start; `rare` (when, real, imaginary): where `when` holds, those parts instead, on a
    branch of their own (the common step does not compute them)."""

    name: str
    exprs: tuple[Expr, Expr]
    positions: tuple[int, ...]
    identity: tuple[float, float]
    rare: tuple[Expr, Expr, Expr] | tuple = ()


def accumulator(dst: DType) -> DType:
    """The dtype a scan of `dst` results accumulates in: PyTorch's CPU one (float64 for
    float32 and float64, float32 for float16 and bfloat16), so every rounding is its."""
    if dst.is_half:
        return float32
    return float64 if dst.is_floating_point else int64


def module_name(op: str, src: DType, dst: DType) -> str:
    """The module (and symbol prefix) of one scan: `kael_scan_cumsum_int64_int64`."""
    return f"kael_scan_{op}_{src}_{dst}"


class _Scan:
    """Emits loads, the combine step and stores of one (op, src, dst) scan at a width."""

    def __init__(self, b: ir.IRBuilder, op: str, src: DType, dst: DType, width: int):
        self.b, self.op, self.src, self.dst, self.width = b, op, src, dst, width
        self.acc = accumulator(dst)
        self.em = ExprEmitter(b, width, None, None, None)

    def identity(self) -> ir.Value:
        if self.op in EXTREMES:
            floating, integer = EXTREMES[self.op]
            return self.em.const(self.acc, floating if self.acc.is_floating_point else integer)
        return self.em.const(self.acc, IDENTITY[self.op])

    def load(self, ptr: ir.Value) -> ir.Value:
        """The element(s) at `ptr`, converted to dst then widened to the accumulator."""
        b, em = self.b, self.em
        if self.width > 1:
            ptr = b.bitcast(ptr, memory_type(self.src, self.width).as_pointer())
        v = widen(b, b.load(ptr, align=self.src.itemsize), self.src)
        if self.src.is_bool:  # foreign bool bytes may hold values other than 0 and 1
            v = em.i1_to_bool(em.truth(v, bool_))
        return em.convert(em.convert(v, self.src, self.dst), self.dst, self.acc)

    def combine(self, acc: ir.Value, x: ir.Value) -> ir.Value:
        b, floating = self.b, self.acc.is_floating_point
        if self.op == "cumsum":
            return b.fadd(acc, x) if floating else b.add(acc, x)
        if self.op == "logcumsumexp":
            return self._log_add_exp(acc, x)
        if self.op in EXTREMES:
            return self._extreme(acc, x)
        return b.fmul(acc, x) if floating else b.mul(acc, x)

    def _extreme(self, acc: ir.Value, x: ir.Value) -> ir.Value:
        """PyTorch's running max (min): x where it is NaN or, while acc is not NaN, at least
        (at most) acc."""
        b = self.b
        op = ">=" if self.op == "cummax" else "<="
        if not self.acc.is_floating_point:
            return b.select(b.icmp_signed(op, x, acc), x, acc)
        takes = b.or_(
            b.fcmp_unordered("uno", x, x),
            b.and_(b.fcmp_ordered("ord", acc, acc), b.fcmp_ordered(op, x, acc)),
        )
        return b.select(takes, x, acc)

    def _log_add_exp(self, a: ir.Value, x: ir.Value) -> ir.Value:
        """log(e^a + e^x) in the accumulator's precision."""
        b, em = self.b, self.em
        top = b.select(
            b.fcmp_unordered("uno", a, x), b.fadd(a, x), b.select(b.fcmp_ordered(">", a, x), a, x)
        )
        gap = b.fneg(em.intrinsic("llvm.fabs", b.fsub(a, x)))
        grown = UNARY_EMITTERS["log1p"](em, UNARY_EMITTERS["exp"](em, gap, self.acc), self.acc)
        same_infinity = b.and_(
            b.fcmp_ordered("==", a, x),
            b.fcmp_ordered("==", em.intrinsic("llvm.fabs", a), em.const(self.acc, math.inf)),
        )
        return b.select(same_infinity, a, b.fadd(top, grown))

    def store(self, acc: ir.Value, ptr: ir.Value) -> None:
        b = self.b
        if self.width > 1:
            ptr = b.bitcast(ptr, memory_type(self.dst, self.width).as_pointer())
        value = narrow(b, self.em.convert(acc, self.acc, self.dst), self.dst)
        b.store(value, ptr, align=self.dst.itemsize)

    def slot_type(self) -> ir.Type:
        return scalar_type(self.acc)


class _PairScan(_Scan):
    """A pair scan (`step`): elements are (first, second) values at ptr and ptr + 1, the
    accumulator a <2 x acc>, combined by the step's expressions."""

    def __init__(self, b: ir.IRBuilder, step: PairStep, src: DType, dst: DType):
        super().__init__(b, step.name, src, dst, 1)
        self.step = step

    def slot_type(self) -> ir.Type:
        return ir.VectorType(scalar_type(self.acc), 2)

    def _pair(self, first: ir.Value, second: ir.Value) -> ir.Value:
        b = self.b
        pair = ir.Constant(self.slot_type(), ir.Undefined)
        return b.insert_element(b.insert_element(pair, first, i64(0)), second, i64(1))

    def _parts(self, pair: ir.Value) -> list[ir.Value]:
        return [self.b.extract_element(pair, i64(k)) for k in range(2)]

    def identity(self) -> ir.Value:
        return self._pair(*(self.em.const(self.acc, v) for v in self.step.identity))

    def load(self, ptr: ir.Value) -> ir.Value:
        return self._pair(super().load(ptr), super().load(self.b.gep(ptr, [i64(1)])))

    def combine(self, acc: ir.Value, x: ir.Value) -> ir.Value:
        b, step = self.b, self.step
        operands = self._parts(acc) + self._parts(x)
        at = step.positions
        entry = ExprEmitter(b, 1, lambda k: operands[at[k]], None, None)
        if not step.rare:
            return self._pair(*(entry.emit(e) for e in step.exprs))
        when, *rare = step.rare
        taken = entry.truth(entry.emit(when), when.dtype)
        results = []
        with b.if_else(taken, likely=False) as (then, otherwise):
            for arm, exprs in ((then, rare), (otherwise, step.exprs)):
                with arm:
                    em = ExprEmitter(b, 1, entry.load, None, None)
                    em.memo = dict(entry.memo)  # values of the entry block only
                    results.append((self._pair(*(em.emit(e) for e in exprs)), b.block))
        merged = b.phi(self.slot_type())
        for value, block in results:
            merged.add_incoming(value, block)
        return merged

    def store(self, acc: ir.Value, ptr: ir.Value) -> None:
        first, second = self._parts(acc)
        super().store(first, ptr)
        super().store(second, self.b.gep(ptr, [i64(1)]))


class _Words:
    """The argument block's fixed words, loaded in the entry block, and the batch decoder."""

    def __init__(self, b: ir.IRBuilder, block: ir.Value, src: DType, dst: DType):
        self.b, self.block = b, block
        word = [b.load(b.gep(block, [i64(i)])) for i in range(HEADER)]
        self.src = b.inttoptr(word[0], memory_type(src).as_pointer(), name="src")
        self.dst = b.inttoptr(word[1], memory_type(dst).as_pointer(), name="dst")
        self.n, self.src_step, self.dst_step, self.cols, self.rank = word[2:7]
        acc = scalar_type(accumulator(dst)).as_pointer()
        self.totals, self.blocks = b.inttoptr(word[7], acc, name="totals"), word[8]
        self.rem = b.alloca(I64, name="rem")
        self.src_off = b.alloca(I64, name="src_off")
        self.dst_off = b.alloca(I64, name="dst_off")

    def batch(self, d: ir.Value, which: int) -> ir.Value:
        """Word `which` (0 size, 1 src stride, 2 dst stride) of batch dimension d."""
        b = self.b
        at = b.add(i64(HEADER), b.add(b.mul(self.rank, i64(which)), d))
        return b.load(b.gep(self.block, [at]))

    def offsets(self, line: ir.Value) -> tuple[ir.Value, ir.Value]:
        """The src and dst element offsets of batch position `line` (row-major; rank >= 1).

        The outermost index needs no division: one batch dim costs none.
        """
        b = self.b
        b.store(line, self.rem)
        b.store(i64(0), self.src_off)
        b.store(i64(0), self.dst_off)

        def add(d, i):
            b.store(b.add(b.load(self.src_off), b.mul(i, self.batch(d, 1))), self.src_off)
            b.store(b.add(b.load(self.dst_off), b.mul(i, self.batch(d, 2))), self.dst_off)

        def dim(k):
            d = b.sub(b.sub(self.rank, i64(1)), k)
            size, rem = self.batch(d, 0), b.load(self.rem)
            b.store(b.sdiv(rem, size), self.rem)
            add(d, b.srem(rem, size))

        LoopBuilder(b).counted(i64(0), b.sub(self.rank, i64(1)), 1, dim, "dim")
        add(i64(0), b.load(self.rem))
        return b.load(self.src_off), b.load(self.dst_off)


def _scan_line(
    b, scan: _Scan, w: _Words, slots, src_off, dst_off, count=None, start=None, write=True
) -> None:
    """Scan `count` (default n) elements from src_off/dst_off with the step strides, in
    `slots[0]`, from `start` (default the identity); `write=False` only combines."""
    b.store(scan.identity() if start is None else start, slots[0])

    def step(k):
        x = scan.load(b.gep(w.src, [b.add(src_off, b.mul(k, w.src_step))]))
        acc = scan.combine(b.load(slots[0]), x)
        b.store(acc, slots[0])
        if write:
            scan.store(acc, b.gep(w.dst, [b.add(dst_off, b.mul(k, w.dst_step))]))

    LoopBuilder(b).counted(i64(0), w.n if count is None else count, 1, step, "scan")


def _build_lines(
    module: ir.Module, op: str | PairStep, src: DType, dst: DType, symbol: str
) -> None:
    fn, b = handwritten.kernel_function(module, symbol)
    w = _Words(b, fn.args[0], src, dst)
    scan = _PairScan(b, op, src, dst) if type(op) is PairStep else _Scan(b, op, src, dst, 1)
    slots = [b.alloca(scan.slot_type(), name="acc")]

    def line(i):
        src_off, dst_off = w.offsets(i)
        _scan_line(b, scan, w, slots, src_off, dst_off)

    LoopBuilder(b).counted(fn.args[1], fn.args[2], 1, line, "line")
    b.ret_void()


def _build_columns(module: ir.Module, op: str, src: DType, dst: DType, symbol: str) -> None:
    fn, b = handwritten.kernel_function(module, symbol)
    w = _Words(b, fn.args[0], src, dst)
    scalar = _Scan(b, op, src, dst, 1)
    vector = _Scan(b, op, src, dst, LANES)
    slots = [b.alloca(scalar_type(scalar.acc), name="acc")]
    vslots = [b.alloca(value_type(vector.acc, LANES), name=f"vacc{u}") for u in range(UNROLL)]
    chunks = b.sdiv(b.add(w.cols, i64(CHUNK - 1)), i64(CHUNK))

    def item(i):
        src_off, dst_off = w.offsets(b.sdiv(i, chunks))
        j0 = b.mul(b.srem(i, chunks), i64(CHUNK))
        src_off, dst_off = b.add(src_off, j0), b.add(dst_off, j0)
        full = b.icmp_signed("<=", b.add(j0, i64(CHUNK)), w.cols)
        with b.if_else(full) as (whole, edge):
            with whole:
                for slot in vslots:
                    b.store(vector.identity(), slot)

                def step(k):
                    src_row = b.add(src_off, b.mul(k, w.src_step))
                    dst_row = b.add(dst_off, b.mul(k, w.dst_step))
                    for u, slot in enumerate(vslots):
                        x = vector.load(b.gep(w.src, [b.add(src_row, i64(u * LANES))]))
                        acc = vector.combine(b.load(slot), x)
                        b.store(acc, slot)
                        vector.store(acc, b.gep(w.dst, [b.add(dst_row, i64(u * LANES))]))

                LoopBuilder(b).counted(i64(0), w.n, 1, step, "rows")
            with edge:
                LoopBuilder(b).counted(
                    i64(0),
                    b.sub(w.cols, j0),
                    1,
                    lambda j: _scan_line(b, scalar, w, slots, b.add(src_off, j), b.add(dst_off, j)),
                    "col",
                )

    LoopBuilder(b).counted(fn.args[1], fn.args[2], 1, item, "item")
    b.ret_void()


def _block_total(b, scan: _Scan, w: _Words, slots, src_off, count) -> ir.Value:
    """The combination of `count` elements from src_off. Integer scans are exact, so they
    keep UNROLL independent accumulators over interleaved elements (a chain of dependent
    adds would bound the pass at the adder's latency); a float total is one prefix, element
    after element: interleaved partials overflow, cancel or break ties where no prefix does
    (cumprod of [4, 0.25, ...], cummax of -0.0 after 0.0)."""
    if scan.acc.is_floating_point:
        _scan_line(b, scan, w, slots, src_off, None, count, write=False)
        return b.load(slots[0])
    for slot in slots:
        b.store(scan.identity(), slot)
    rounds = b.sdiv(count, i64(UNROLL))

    def step(k):
        for u, slot in enumerate(slots):
            at = b.add(b.mul(k, i64(UNROLL)), i64(u))
            x = scan.load(b.gep(w.src, [b.add(src_off, b.mul(at, w.src_step))]))
            b.store(scan.combine(b.load(slot), x), slot)

    LoopBuilder(b).counted(i64(0), rounds, 1, step, "total")
    done = b.mul(rounds, i64(UNROLL))

    def rest(k):
        x = scan.load(b.gep(w.src, [b.add(src_off, b.mul(k, w.src_step))]))
        b.store(scan.combine(b.load(slots[0]), x), slots[0])

    LoopBuilder(b).counted(done, count, 1, rest, "rest")
    total = b.load(slots[0])
    for slot in slots[1:]:
        total = scan.combine(total, b.load(slot))
    return total


def _fragile(scan: _Scan) -> bool:
    """Whether a block total can overflow (or, for a product, underflow) where no prefix of
    the line does: a float sum or product (a block of -1e308, -1e308, 1e308 after a 1e308)."""
    return scan.acc.is_floating_point and scan.op in ("cumsum", "cumprod")


def _suspect(b, scan: _Scan, total: ir.Value) -> ir.Value:
    """i1: the block total is not finite, or, for a product, below the least normal value
    (NaN too: ordered compares fail on it)."""
    size = scan.em.intrinsic("llvm.fabs", total)
    fine = b.fcmp_ordered("<", size, scan.em.const(scan.acc, math.inf))
    if scan.op == "cumprod":
        tiny = float(np.finfo(scan.acc.name).tiny)  # the accumulator's least normal
        fine = b.and_(fine, b.fcmp_ordered(">=", size, scan.em.const(scan.acc, tiny)))
    return b.not_(fine)


def _build_blocks(module: ir.Module, op: str, src: DType, dst: DType, symbol: str) -> list[str]:
    """The block scan's three kernels: `symbol`_totals and `symbol` (a work item per block
    of a line), `symbol`_carries (a work item per line).

    A float sum or product whose line has a suspect block total is scanned whole, element
    after element, by its first block's work item: `carries` marks it with NaN in the first
    carry (always the identity otherwise), and the other blocks of the line then do nothing."""
    symbols = []
    for role in ("totals", "carries", "scan"):
        name = symbol if role == "scan" else f"{symbol}_{role}"
        fn, b = handwritten.kernel_function(module, name)
        w = _Words(b, fn.args[0], src, dst)
        scan = _Scan(b, op, src, dst, 1)
        slots = [b.alloca(scalar_type(scan.acc), name=f"acc{u}") for u in range(UNROLL)]
        fragile = _fragile(scan)
        if role == "carries":
            suspect = b.alloca(ir.IntType(1), name="suspect")

            def line(i, b=b, w=w, scan=scan, slots=slots, suspect=suspect, fragile=fragile):
                first = b.mul(i, w.blocks)
                b.store(scan.identity(), slots[0])
                b.store(ir.Constant(ir.IntType(1), 0), suspect)

                def carry(k):
                    at = b.gep(w.totals, [b.add(first, k)])
                    total = b.load(at)
                    b.store(b.load(slots[0]), at)
                    b.store(scan.combine(b.load(slots[0]), total), slots[0])
                    if fragile:
                        b.store(b.or_(b.load(suspect), _suspect(b, scan, total)), suspect)

                LoopBuilder(b).counted(i64(0), w.blocks, 1, carry, "carry")
                if fragile:
                    with b.if_then(b.load(suspect)):
                        b.store(scan.em.const(scan.acc, math.nan), b.gep(w.totals, [first]))

            LoopBuilder(b).counted(fn.args[1], fn.args[2], 1, line, "line")
        else:

            def block(i, b=b, w=w, scan=scan, slots=slots, role=role, fragile=fragile):
                line_src, line_dst = w.offsets(b.sdiv(i, w.blocks))
                start = b.mul(b.srem(i, w.blocks), i64(BLOCK))
                left = b.sub(w.n, start)
                count = b.select(b.icmp_signed("<", left, i64(BLOCK)), left, i64(BLOCK))
                src_off = b.add(line_src, b.mul(start, w.src_step))
                dst_off = b.add(line_dst, b.mul(start, w.dst_step))
                at = b.gep(w.totals, [i])
                if role == "totals":
                    b.store(_block_total(b, scan, w, slots, src_off, count), at)
                    return
                if not fragile:
                    _scan_line(b, scan, w, slots, src_off, dst_off, count, b.load(at))
                    return
                mark = b.load(b.gep(w.totals, [b.sub(i, b.srem(i, w.blocks))]))
                with b.if_else(b.fcmp_unordered("uno", mark, mark)) as (whole, part):
                    with whole, b.if_then(b.icmp_signed("==", start, i64(0))):
                        _scan_line(b, scan, w, slots, line_src, line_dst)
                    with part:
                        _scan_line(b, scan, w, slots, src_off, dst_off, count, b.load(at))

            LoopBuilder(b).counted(fn.args[1], fn.args[2], 1, block, "block")
        b.ret_void()
        symbols.append(name)
    return symbols


_BUILDERS = {"lines": _build_lines, "columns": _build_columns, "blocks": _build_blocks}


_specs: dict = {}


def _spec(op: str | PairStep, src: DType, dst: DType, kind: str):
    """One kernel (`lines` or `columns`) of one scan, a module of its own (a first call
    compiles the one it runs): its symbol, which names the module too, and its builder
    (memoized: every scan call asks; a pair scan by its step's name)."""
    name = op.name if type(op) is PairStep else op
    found = _specs.get((name, src, dst, kind))
    if found is not None:
        return found
    symbol = f"{module_name(name, src, dst)}_{kind}"

    def build(module: ir.Module) -> list[str]:
        return _BUILDERS[kind](module, op, src, dst, symbol) or [symbol]

    found = _specs[(name, src, dst, kind)] = (symbol, build)
    return found


def _library(op: str, src: DType, dst: DType, kind: str) -> handwritten.Library:
    return handwritten.compiled(*_spec(op, src, dst, kind))


def ir_text(op: str, src: DType, dst: DType) -> str:
    """The LLVM IR of one scan's kernels, without a target header."""
    return "\n".join(_library(op, src, dst, kind).text for kind in _BUILDERS)


def plan(
    shape: tuple[int, ...],
    src_strides: tuple[int, ...],
    dst_strides: tuple[int, ...],
    dim: int,
    columns: bool = True,
) -> tuple[str, list[int], int]:
    """(kernel kind, argument words after the two pointers, work items) of one scan;
    `columns=False` keeps to lines (a GPU: a thread a line, adjacent threads on adjacent
    columns, where the vector code of `columns` has no PTX for logcumsumexp's math)."""
    batch = [d for d in range(len(shape)) if d != dim]
    lay = layout.plan(
        tuple(shape[d] for d in batch),
        [tuple(dst_strides[d] for d in batch), tuple(src_strides[d] for d in batch)],
    )
    sizes, (dst_batch, src_batch) = list(lay.sizes), [list(s) for s in lay.strides]
    n = shape[dim] if shape else 1
    step_src = src_strides[dim] if shape else 0
    step_dst = dst_strides[dim] if shape else 0
    kind, cols = "lines", 1
    if columns and sizes[-1] >= CHUNK and src_batch[-1] == 1 and dst_batch[-1] == 1:
        kind, cols = "columns", sizes.pop()
        src_batch.pop(), dst_batch.pop()
    if not sizes:  # the kernels decode at least one batch dim
        sizes, src_batch, dst_batch = [1], [0], [0]
    items = math.prod(sizes) * -(-cols // CHUNK)
    words = [n, step_src, step_dst, cols, len(sizes), 0, 0, *sizes, *src_batch, *dst_batch]
    return kind, words, items


def walks_strided(src: TensorImpl, dst: TensorImpl, dim: int) -> bool:
    """Whether the scan would step through memory with a stride other than 1 in src or dst."""
    kind, words, _ = plan(src.shape, src.strides, dst.strides, dim)
    return kind == "lines" and words[0] > 1 and (words[1] != 1 or words[2] != 1)


def run(op: str | PairStep, src: TensorImpl, dst: TensorImpl, dim: int) -> tuple | None:
    """dst = the `op` scan of src along `dim` (dst's dtype: float32, float64 or int64), on
    the device the two are on (the same kernels: codegen/ptx/handwritten.py). Returns
    (kernel, words, work items, bytes moved) where it was one launch on the host (the fast
    door replays those), else None. A PairStep scans pairs: src and dst are the first
    values' views (each element's second value follows it).

    src and dst have one shape; dst may be src itself (same layout), never a partial overlap.
    """
    pairs = type(op) is PairStep
    if not pairs and op not in OPS:
        raise ValueError(f"unknown scan {op!r}: expected one of {OPS}")
    if dst.dtype.is_bool:
        raise ValueError("a scan's output cannot be bool")
    if src.numel() == 0:
        return None
    on_cpu = dst.device.type == "cpu"
    kind, words, items = plan(src.shape, src.strides, dst.strides, dim, on_cpu and not pairs)
    n = words[0]
    if kind == "lines" and not pairs:  # a pair scan keeps to lines (PairStep)
        exact = not dst.dtype.is_floating_point or op in EXTREMES
        kind = "blocks" if blocked(n, items, dst.device, exact) else kind
    symbol, build = _spec(op, src.dtype, dst.dtype, kind)
    moved = src.numel() * (src.dtype.itemsize + dst.dtype.itemsize) * (2 if pairs else 1)
    runner = handwritten.runner_for(dst.device)
    words = [ptr_on(src, dst.device, symbol), ptr_on(dst, dst.device, symbol), *words]
    try:
        if kind != "blocks":
            fn = runner.run(symbol, build, symbol, words, items, moved, align=1)
            return (fn, words, items, moved) if on_cpu else None
        blocks = -(-n // BLOCK)
        words[7:9] = [runner.space(items * blocks), blocks]
        read = src.numel() * src.dtype.itemsize
        runner.run(symbol, build, f"{symbol}_totals", words, items * blocks, read, align=1)
        runner.run(symbol, build, f"{symbol}_carries", words, items, 8 * items * blocks, align=1)
        runner.run(symbol, build, symbol, words, items * blocks, moved, align=1)
        return None
    finally:
        runner.close()


# A GPU takes the block scan for lines of at least 2 BLOCK while they number fewer than this.
DEVICE_LINES = 1 << 16


def blocked(n: int, lines: int, device, exact: bool = True) -> bool:
    """Whether `lines` lines of `n` elements take the block scan: on the CPU one line of at
    least 16 blocks of an `exact` scan (integers; cummax, cummin), where the line scan would
    leave every thread but one idle (decided by the shape alone, so the bits never depend
    on the thread count); a float sum, product or logcumsumexp keeps the line scan there,
    PyTorch's sequential bits: a block's total absorbs small terms a cancelling line keeps
    (1e300, -1e300 a block later, ones elsewhere: 4095 short at the end), and two threads
    gained nothing for them (float64 16M: 18-21 ms either way). On a GPU lines of at least
    2 blocks, unless there are lines enough for its threads."""
    if device is None or device.type == "cpu":
        return exact and lines == 1 and n >= 16 * BLOCK
    return n >= 2 * BLOCK and lines < DEVICE_LINES
