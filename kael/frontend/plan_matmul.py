"""The matrix-product step of a compiled plan, and the elementwise epilogue it can take.

A traced matmul is its own step (not an extern): c = a @ b through codegen/cpu/gemm_run;
a traced convolution is the same step with a geometry (c [N, O, P] = conv(a, b) through
codegen/cpu/conv_run, whose launches take an epilogue the same way).
When the kernel right after it reads c only at the positions it writes (a bias add, an
activation, a residual add, a scaling), that kernel becomes the product's epilogue: each
macro work item, having finished a block of c's rows and columns, runs the epilogue over
that block while it is in cache (gemm.py's `epi` words), so c never makes a round trip to
memory between them. The epilogue is the same compiled kernel as when it runs alone,
launched over column slices of its operands, so the bits are the same either way.
"""

from __future__ import annotations

import array
import dataclasses
import math
from dataclasses import dataclass

from kael.codegen.cpu import conv_run, gemm_run
from kael.frontend import eager
from kael.frontend.plan import Alias, Call, KernelCall, Slot, _layout_only
from kael.ir.conv import ConvGeometry
from kael.ir.matmul import Product
from kael.ir.views import View
from kael.runtime.tensor_impl import contiguous_strides
from kael.runtime.threadpool import get_num_threads


@dataclass(frozen=True, slots=True)
class _Block:
    """The epilogue over columns [first, end) of the product: its launch, and per operand
    the bytes from the whole view's address to the slice's."""

    prepared: eager.Prepared
    columns: int
    shifts: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class _Blocks:
    """One launch's epilogue blocks, each `stride` words of `template`: [kernel address or
    0, columns, the kernel's argument words (addresses 0)], and where each block's
    argument words start and end, with its operands' shifts, for `KernelCall.patch`."""

    template: array.array
    stride: int
    patches: tuple[tuple[int, int, tuple[int, ...]], ...]


@dataclass(slots=True)
class MatmulCall:
    """c = a @ b (views over slots), or with `geometry` c = conv(a, b), then `epilogue`
    over c's blocks as they complete."""

    a: View
    b: View
    c: View
    epilogue: KernelCall | None = None
    geometry: ConvGeometry | None = None
    # per thread count: the gemm plan, per launch its epilogue blocks (None: the epilogue
    # runs after the product, as its own launch), a, b and c as (slot, bytes from the
    # slot's address), and the (epilogue output, operand) slots whose storages a call
    # checks for overlap
    prepared: tuple | None = None
    launches_kernels = True

    @property
    def op(self) -> str:
        return "matmul" if self.geometry is None else "conv"

    @property
    def covers(self) -> list[str]:
        return [self.op, *(self.epilogue.covers if self.epilogue is not None else ())]

    @property
    def kernel(self) -> Product:
        epilogue = self.epilogue.kernel if self.epilogue is not None else None
        return Product(self.c.dtype, epilogue, self.op)

    def specialized(self, slots: list[Slot]) -> Product:
        """The product as launched: its kernels are hand-written, not specialized by layout."""
        return self.kernel

    def views(self) -> list[View]:
        extra = self.epilogue.outs + self.epilogue.ins if self.epilogue is not None else []
        return [self.a, self.b, self.c, *extra]

    def ready(self, slots: list[Slot]) -> tuple:
        threads = get_num_threads()
        prepared = self.prepared
        if prepared is None or prepared[0] != threads:
            if self.geometry is not None:
                gp = conv_run.plan_for(self.geometry, self.c.dtype)
            else:
                gp = gemm_run.plan_for(*(_layout_only(v, slots) for v in (self.a, self.b, self.c)))
            blocks, outs = None, ()
            if self.epilogue is not None:
                self.epilogue._ready(slots)  # its operand slots and parameter words
                blocks, outs = self._blocks(gp, slots), self.epilogue.outs
            places = tuple(
                (v.buffer, v.offset * v.dtype.itemsize) for v in (self.a, self.b, self.c)
            )
            apart = tuple((v.buffer, u.buffer) for v in outs for u in (self.a, self.b))
            prepared = self.prepared = (threads, gp, blocks, places, apart)
        return prepared

    def _blocks(self, gp: gemm_run.Plan, slots: list[Slot]) -> list | None:
        """Per launch of the product, its epilogue blocks (None where no block is complete),
        or None when the product's kernels or the slices' layouts cannot run it inside."""
        columns = gemm_run.epilogue_columns(gp)
        if columns is None:
            return None
        epi = self.epilogue
        made: dict[tuple[int, int], _Block | None] = {}
        out = []
        for bounds in columns:
            blocks = []
            for first, end in zip(bounds, bounds[1:]):
                if (first, end) not in made:
                    made[first, end] = _slice(epi, slots, first, end)
                block = made[first, end]
                if block is None and end > first:
                    return None  # a slice the elementwise walk cannot split by rows
                blocks.append(block)
            out.append(_template(epi, blocks) if blocks else None)
        return out

    def run(self, call: Call) -> None:
        _, gp, blocks, places, apart = self.ready(call.plan.slots)
        if blocks is None or _overlaps(call, apart):
            self.run_apart(call)
            return
        epi = self.epilogue
        held, epilogues = [], []
        for launch_blocks in blocks:
            if launch_blocks is None:
                epilogues.append((0, 0))
                continue
            words = launch_blocks.template[:]
            for start, end, shifts in launch_blocks.patches:
                epi.patch(words, call, start, end, shifts)
            held.append(words)
            epilogues.append((words.buffer_info()[0], launch_blocks.stride))
        gemm_run.run(gp, *_addresses(call, places), epilogues)
        del held

    def _product(self, call: Call) -> None:
        _, gp, _, places, _ = self.ready(call.plan.slots)
        gemm_run.run(gp, *_addresses(call, places))

    def run_apart(self, call: Call) -> None:
        """The product, then its epilogue as a launch of its own."""
        self._product(call)
        if self.epilogue is not None:
            self.epilogue.run(call)

    def run_reference(self, call: Call) -> None:
        """The product alone, then the ops its epilogue fuses, one eager kernel each."""
        self._product(call)
        if self.epilogue is not None:
            self.epilogue.run_reference(call)

    def compared(self) -> list[MatmulCall]:
        return [self]

    @property
    def outs(self) -> list[View]:
        """What it writes: c, and the epilogue's outputs."""
        return [self.c, *(self.epilogue.outs if self.epilogue is not None else ())]


def _addresses(call: Call, places: tuple) -> tuple[int, int, int]:
    """a's, b's and c's addresses in this call (`places`: MatmulCall.prepared's)."""
    (a, at_a), (b, at_b), (c, at_c) = places
    storage = call.storage
    return storage(a).ptr + at_a, storage(b).ptr + at_b, storage(c).ptr + at_c


def _overlaps(call: Call, apart: tuple) -> bool:
    """Whether an epilogue output shares memory with a or b (two storages over one array,
    the slot pairs `apart`): other work items still read a and b while an epilogue writes."""
    storage = call.storage
    return any(storage(out).overlaps(storage(operand)) for out, operand in apart)


def _template(epi: KernelCall, blocks: list[_Block | None]) -> _Blocks:
    """One launch's epilogue blocks as a prebuilt template (a None block: no kernel)."""
    rows = [
        [b.prepared.fn.address, b.columns, *epi.template_words(b.prepared)] if b else [0, 0]
        for b in blocks
    ]
    stride = max(len(r) for r in rows)
    patches = tuple(
        (i * stride + 2, i * stride + len(r), b.shifts)
        for i, (r, b) in enumerate(zip(rows, blocks))
        if b is not None
    )
    words = array.array("q", [w for r in rows for w in r + [0] * (stride - len(r))])
    return _Blocks(words, stride, patches)


def _slice(epi: KernelCall, slots: list[Slot], first: int, end: int) -> _Block | None:
    """The epilogue over columns [first, end) of its operands, if its work items are then
    row-major elements (rows of the slice, in order), else None."""
    if end <= first:
        return None
    views = [
        View(v.buffer, (*v.shape[:-1], end - first), v.strides, v.offset, v.dtype)
        for v in epi.outs + epi.ins
    ]
    impls = [_layout_only(v, slots) for v in views]
    n = len(epi.outs)
    prepared = eager.prepare(
        epi.template, impls[:n], impls[n:], None, epi.streaming, optimized=True
    )
    if prepared is None or prepared.walk != eager.ELEMENTS:
        return None
    shifts = tuple(first * v.strides[-1] * v.dtype.itemsize for v in views)
    return _Block(prepared, end - first, shifts)


def fits(m: MatmulCall, k: KernelCall) -> bool:
    """Whether elementwise kernel `k` can run inside product `m` as its epilogue: it walks
    c's shape, writes dense rows other than a's or b's, and reads c only where it writes."""
    c = m.c
    if k.axes is not None or not c.dtype.is_floating_point or not c.shape:
        return False
    if k.template.uses_index:
        return False  # positions (tril, eye): a column slice would count them from its start
    shape = c.shape
    dense = contiguous_strides(shape)
    reads_c = False
    for v in k.outs:
        if v.shape != shape or v.buffer in (m.a.buffer, m.b.buffer):
            return False
        if not v.same_positions(View(v.buffer, shape, dense, v.offset, v.dtype)):
            return False  # rows not dense: its work items would not follow c's rows
        if v.buffer == c.buffer and not v.same_positions(c):
            return False
    for v in k.ins:
        if v.shape != shape:
            return False
        if v.buffer == c.buffer:
            if not v.same_positions(c):
                return False
            reads_c = True
    return reads_c


def join_epilogue(m: MatmulCall, steps: list) -> list:
    """`m` and the steps after it, with the first kernel among them as m's epilogue where it
    fits (the buffer reuses before it then come first: the epilogue may write over c, never
    over a or b, which other work items still read)."""
    i = 0
    while i < len(steps) and type(steps[i]) is Alias:
        if steps[i].src in (m.a.buffer, m.b.buffer):
            return [m, *steps]
        i += 1
    if m.epilogue is None and i < len(steps) and type(steps[i]) is KernelCall:
        k = steps[i] if m.geometry is None else _in_product_shape(steps[i], m.c.shape)
        if k is not None and fits(m, k):
            m.epilogue, m.prepared = k, None
            return [*steps[:i], m, *steps[i + 1 :]]
    return [m, *steps]


def _in_product_shape(k: KernelCall, shape: tuple[int, ...]) -> KernelCall | None:
    """A convolution's next kernel with its views of [N, O, *out] seen as the product's
    [N, O, P] (the spatial dims merged: same positions), or None where a view's spatial
    strides do not merge."""
    merged = [_merge_spatial(v, shape) for v in k.outs + k.ins]
    if any(v is None for v in merged):
        return None
    n = len(k.outs)
    return dataclasses.replace(k, outs=merged[:n], ins=merged[n:], prepared=None)


def _merge_spatial(v: View, shape: tuple[int, ...]) -> View | None:
    """v [N, O, *spatial] as [N, O, prod(spatial)] (v itself when already that shape)."""
    if v.shape == shape:
        return v
    if len(v.shape) < 3 or v.shape[:2] != shape[:2] or math.prod(v.shape[2:]) != shape[2]:
        return None
    dims = [(n, st) for n, st in zip(v.shape[2:], v.strides[2:]) if n != 1]
    for (_, outer), (inner_n, inner) in zip(dims, dims[1:]):
        if outer != inner * inner_n:
            return None
    stride = dims[-1][1] if dims else 1
    return View(v.buffer, shape, (*v.strides[:2], stride), v.offset, v.dtype)
