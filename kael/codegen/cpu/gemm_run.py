"""Runs matrix products on the host: batch layout, cache blocking, B packing and the launches
of gemm.py's and gemm_gemv.py's kernels, planned once per (dtype, shapes, strides,
threads).

A plan is a list of launches whose argument words are fixed except the addresses of A, B,
C and the packing buffer, so a repeated call does no planning in Python. Batch dims are
passed as strides (a broadcast operand has stride 0 and is never copied); when B is
shared by the batch and A's and C's batches are contiguous row blocks, the batch folds
into the rows of one product, so B is packed once.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from kael.codegen.cpu import conv, gemm, gemm_gemv, many, native_launch, pair
from kael.codegen.cpu.program import Program, Step
from kael.ir.matmul import GemmSpec, batch_dims
from kael.runtime import launches
from kael.runtime.dtypes import int64
from kael.runtime.errors import Error
from kael.runtime.launcher import PARALLEL_BYTES, launch, optimize
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl, host_ptr
from kael.runtime.threadpool import get_num_threads

# B is read in place (not packed) when its columns are unit-stride and it is this small
# (every panel stays in L1/L2, and packing would cost as much as it saves), or when A
# has at most mr rows.
DIRECT_B_BYTES = 64 << 10
# With B packed, the macro kernel reads A in place (its direct micro-kernel) unless one
# panel's walk over k spans more bytes than this (a transposed A with long columns, where
# packing saves the TLB): packing A cost more than it saved everywhere else (1 thread,
# x @ w.T: 64^3 10.1 -> 8.9 us, 512^3 2.83 -> 2.60 ms, 2048x2048x256 23.6 -> 21.2 ms;
# A^T of 256x4096 @ 4096x256 stays packed, 5.8 ms against 6.1).
PACK_A_SPAN = 64 << 10
# A product of at most DIRECT_ROWS rows reads a unit-stride B in place whatever its size,
# while a column panel of it (k x nr) is at most DIRECT_PANEL_BYTES (it stays in L2): its
# few row panels reuse a packed copy too little to pay for the packing ([16, 1024] x
# [1024, 1024] float32, 2 threads: 293 -> 187 us; [64, 512] x [512, 512] 365 -> 312; a
# panel of 512 KiB, float64 k = 2048, was 10% slower read in place).
DIRECT_ROWS = 64
DIRECT_PANEL_BYTES = 256 << 10
# A launch doing fewer multiply-adds runs on the calling thread.
PARALLEL_FLOPS = 1 << 22
# At most this many rows times a transposed matrix (x @ W.T) are dot products of W's rows
# with each row of x in turn, W read once and never packed (the tiled product packs W),
# where W is larger than DIRECT_B_BYTES and k is at least ROW_DEPTH per row of x: a small
# W packs quickly and takes a compiled plan's fused epilogue, which the dot products
# cannot, and a short k leaves their per-item sums a large share of the work.
# [m, 1024] x [1024, 1024]^T, 1 thread: m = 2 380 -> 97 us, 8 514 -> 248, 16 634 -> 460.
FEW_ROWS = 16
ROW_DEPTH = 32
A, B, C, BUF = range(4)  # which address a word slot takes
_call = native_launch.launcher()  # a described launch, called as a builtin


@dataclass(frozen=True, slots=True)
class Launch:
    fn: object
    words: tuple[int, ...]
    slots: tuple[tuple[int, int, int], ...]  # (word index, A|B|C|BUF, byte offset)
    total: int
    moved: int  # what the launcher compares with PARALLEL_BYTES
    name: str = gemm.MACRO
    flops: int = 0  # for KAEL_DEBUG: multiply-adds x 2 (0 for packing)
    # A macro launch that completes its columns (its k block is the last): the first column
    # of each of its column blocks, and the end of the last; () for any other launch.
    columns: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Plan:
    launches: tuple[Launch, ...]
    buffer_bytes: int
    # Whether a macro item's rows i0..i1 of batch q are rows q * m + i0.. of C's [rows, n]
    # (one inner batch of row blocks): then an epilogue kernel can follow each item.
    rows_in_order: bool = False
    # A plan of one inline launch and no buffer (matrix @ vector, small products): that
    # launch as a native call's Descriptor, and per word a call supplies (A|B|C, offset).
    native: tuple[native_launch.Descriptor, tuple[tuple[int, int], ...]] | None = None
    # A plan of a few inline launches through a small buffer (a small product whose B is
    # packed: a Linear layer's x @ w.T): each launch as a native call, (descriptor, words)
    # per launch, the buffer a per-thread scratch.
    chain: tuple | None = None
    # The chain again for a plan that takes epilogues, its macro launches also taking their
    # epilogue's two words per call (a compiled plan's fused product), or None.
    epi_chain: tuple | None = None


def parallel(flops: int) -> int:
    return PARALLEL_BYTES if flops >= PARALLEL_FLOPS else 0


def _blocks(total: int, block: int) -> int:
    return -(-total // block)


def _row_blocks(spec: GemmSpec, m: int, n: int, batches: int, threads: int) -> tuple[int, int]:
    """(rows per block, blocks): about MC rows, whole mr panels, and enough blocks to split
    evenly over the threads when one product is all the work. One product of at most MC
    rows and 2+ column tiles per thread stays one row block: its columns are split instead
    (whole mr panels per thread need no balancing; at m = 64, k = 784, n = 256 on 2 threads
    255 -> 218 us, and up to 35% at m = 24)."""
    if threads > 1 and batches == 1 and m <= spec.mc and _blocks(n, spec.nr) >= 2 * threads:
        return _blocks(m, spec.mr) * spec.mr, 1
    mblocks = _blocks(m, spec.mc)
    if threads > 1 and batches * mblocks < 8 * threads:
        per = _blocks(mblocks * batches, threads) * threads
        mblocks = min(_blocks(m, spec.mr), max(1, per // batches))
    mc = _blocks(_blocks(m, mblocks), spec.mr) * spec.mr
    return mc, _blocks(m, mc)


def _few_rows(m: int, k: int, b_bytes: int) -> bool:
    """Whether m rows times a transposed B of b_bytes are the rows kernel's dot products."""
    return m <= FEW_ROWS and k >= ROW_DEPTH * m and b_bytes > DIRECT_B_BYTES


def _float_plan(spec, a, b, c, batch, outer, threads, packed: bool = False) -> Plan:
    """The float plan (see `plan`); `packed`: the packed macro kernel's whatever the shape
    (one that accumulates into C), not a matrix-vector kernel's."""
    m, k = a.shape[-2:]
    n = b.shape[-1]
    item = spec.dtype.itemsize
    ars, aks = a.strides[-2:]
    brs, bcs = b.strides[-2:]
    bcs = 1 if n == 1 else bcs  # a column (a 1-d right operand has stride 0 there)
    ldc = c.strides[-2]
    q, (qa, qb, qc) = batch
    if q > 1 and qb == 0 and qa == m * ars and qc == m * ldc:
        m, q, qa, qc = m * q, 1, 0, 0
    if not packed:  # the matrix-vector kernels, where the shape is one
        if n == 1 and (k == 1 or (aks == 1 and brs == 1)):  # matrix @ vector
            groups = _blocks(m, gemm_gemv.RSTEP)
            tail = (ars, 1, qa, 1, 1, qb, ldc, qc, m, 1, k, groups, 0)
            matrix = (q if qa else 1) * m * k
            return _gemv(
                spec, gemm_gemv.ROWS, tail, q * groups, outer, 2 * q * m * k, matrix, threads
            )
        if m == 1 and bcs == 1:  # vector @ matrix
            blocks = _blocks(n, gemm_gemv.BLOCK)
            tail = (ars, aks, qa, brs, 1, qb, ldc, qc, 1, n, k, blocks, 0)
            matrix = (q if qb else 1) * n * k
            return _gemv(
                spec, gemm_gemv.COLS, tail, q * blocks, outer, 2 * q * n * k, matrix, threads
            )
        if (q == 1 or m == 1) and _few_rows(m, k, n * k * item) and brs == 1 and aks == 1:
            # few rows @ a transposed matrix (x @ W.T, a linear layer's small batch): each row
            # of C is (W @ x_i^T)^T, B^T's rows dotted with row i of A. One product's rows, or
            # a batch of one-row products by one shared W, run innermost (W read once); one-row
            # products by a W each run batch by batch.
            groups = _blocks(n, gemm_gemv.RSTEP)
            batched = (0, ars, ldc, m) if q == 1 else (qb, qa, qc, 0 if qb else q)
            tail = (bcs, 1, batched[0], 1, 1, batched[1], c.strides[-1], batched[2], n, 1, k)
            total, flops, matrix = m * q * groups, 2 * m * q * n * k, (q if qb else 1) * n * k
            tail = (*tail, groups, batched[3])
            return _gemv(spec, gemm_gemv.ROWS, tail, total, outer, flops, matrix, threads, True)
        if n == 1 and ars == 1 and ldc == 1:  # a transposed matrix @ vector (X.T @ v)
            # as (v^T @ A^T)^T: the vector is the left operand, A^T's columns are unit-stride
            blocks = _blocks(m, gemm_gemv.BLOCK)
            tail = (0, brs, qb, aks, 1, qa, 0, qc, 1, m, k, blocks, 0)
            matrix, flops = (q if qa else 1) * m * k, 2 * q * m * k
            return _gemv(
                spec, gemm_gemv.COLS, tail, q * blocks, outer, flops, matrix, threads, True
            )
    mc, mblocks = _row_blocks(spec, m, n, q, threads)
    # Too few row blocks to busy every thread (a short, wide product): split the columns.
    nblocks = threads if q * mblocks < threads else 1
    launches: list[Launch] = []
    buffer = 0
    macro = gemm.float_library(spec)[gemm.MACRO]
    # Rows of one mr panel use each element of B once: packing it would be pure cost. A
    # few row panels reuse it too little to pay for the packing while a column panel of
    # B stays in L2.
    single = qb != 0 or q == 1
    once = m <= spec.mr and single
    few = m <= DIRECT_ROWS and single and k * spec.nr * item <= DIRECT_PANEL_BYTES
    if bcs == 1 and (k * n * item <= DIRECT_B_BYTES or once or few):
        steps = [(0, n, 0, k, False)]
    else:
        nk = _blocks(k, spec.kc)
        kc = _blocks(k, nk)
        steps = [
            (j0, min(spec.nc, n - j0), p0, min(kc, k - p0), True)
            for j0 in range(0, n, spec.nc)
            for p0 in range(0, k, kc)
        ]
    qpack = q if qb else 1
    for oa, ob, oc in outer:
        for j0, nc, p0, kc, packed in steps:
            tiles = _blocks(_blocks(nc, spec.nr), nblocks)
            a_off = oa + p0 * aks * item
            c_off = oc + j0 * item
            if packed:
                panels = _blocks(nc, spec.nr)
                per_batch = panels * kc * spec.nr
                buffer = max(buffer, qpack * per_batch * item)
                b_off = ob + (p0 * brs + j0 * bcs) * item
                words = (0, 0, brs, bcs, qb, per_batch, kc, nc, panels)
                moved = 2 * qpack * per_batch * item
                slots = ((0, B, b_off), (1, BUF, 0))
                pack = gemm.pack_library(spec)[gemm.PACK_B]
                launches.append(Launch(pack, words, slots, qpack * panels, moved, gemm.PACK_B))
                bsrc, bps, bks, bsb = (BUF, 0), kc * spec.nr, spec.nr, per_batch if qb else 0
            else:
                bsrc, bps, bks, bsb = (B, ob), spec.nr, brs, qb
            words = (
                0, 0, 0, ars, aks, qa, bps, bks, bsb, ldc, qc,
                m, nc, kc, mblocks, mc, int(p0 > 0), int(packed and aks * kc * item > PACK_A_SPAN), nblocks, tiles, 0, 0,
            )  # fmt: skip
            slots = ((0, A, a_off), (1, *bsrc), (2, C, c_off))
            flops = 2 * m * nc * kc * q
            items = q * mblocks * nblocks
            width = tiles * spec.nr
            columns = ()
            if p0 + kc == k:
                columns = (*(min(j0 + i * width, j0 + nc) for i in range(nblocks)), j0 + nc)
            launches.append(
                Launch(macro, words, slots, items, parallel(flops), gemm.MACRO, flops, columns)
            )
    return Plan(tuple(launches), buffer, len(outer) == 1 and (q == 1 or qc == m * ldc))


def _slots(outer, swapped: bool = False) -> list[tuple[tuple[int, int, int], ...]]:
    """The A, B, C address slots (words 0, 1, 2) of each outer batch offset; `swapped`
    gives word 0 B's address and word 1 A's (C^T = B^T A^T)."""
    if swapped:
        return [((0, B, ob), (1, A, oa), (2, C, oc)) for oa, ob, oc in outer]
    return [((0, A, oa), (1, B, ob), (2, C, oc)) for oa, ob, oc in outer]


def _gemv(
    spec: GemmSpec, name: str, tail: tuple, total: int, outer, flops: int, matrix: int,
    threads: int, swapped: bool = False,
) -> Plan:  # fmt: skip
    """One gemm_gemv launch per outer batch offset. Memory-bound: it takes the pool by the
    `matrix` elements it reads as well as by its flops, so one row by a 768 x 768 float32
    weight runs on both threads, each reading its half from its own L2 (2 threads: 52 -> 16
    us; torch 20), and so does a batch of vectors by one shared matrix; on one thread, or
    under both PARALLEL_BYTES and PARALLEL_FLOPS, it runs inline (Plan.native)."""
    fn = gemm_gemv.library(spec.dtype)[name]
    nbytes = matrix * spec.dtype.itemsize
    big = nbytes >= PARALLEL_BYTES or flops >= PARALLEL_FLOPS
    words, moved = (0, 0, 0, *tail), max(nbytes, PARALLEL_BYTES) if threads > 1 and big else 0
    launches = (Launch(fn, words, s, total, moved, name, flops) for s in _slots(outer, swapped))
    return Plan(tuple(launches), 0)


def _int_plan(a, b, c, batch, outer) -> Plan:
    """int64: rows of C as vector @ matrix products when B's columns are unit-stride
    (gemm_gemv's cols kernel), else gemm.py's scalar row kernel."""
    m, k = a.shape[-2:]
    n = b.shape[-1]
    q, (qa, qb, qc) = batch
    brs, bcs = b.strides[-2:]
    ars, aks = a.strides[-2:]
    flops = 2 * q * m * n * k
    if bcs == 1 or n == 1:
        blocks = _blocks(n, gemm_gemv.BLOCK)
        tail = (ars, aks, qa, brs, 1, qb, c.strides[-2], qc, m, n, k, blocks, 0)
        fn, name, total = gemm_gemv.library(int64)[gemm_gemv.COLS], gemm_gemv.COLS, q * m * blocks
    else:
        tail = (ars, aks, qa, brs, bcs, qb, c.strides[-2], qc, m, n, k)
        fn, name, total = gemm.int64_library()[gemm.ROWS_I64], gemm.ROWS_I64, q * m
    words, moved = (0, 0, 0, *tail), parallel(flops)
    return Plan(tuple(Launch(fn, words, s, total, moved, name, flops) for s in _slots(outer)), 0)


def plan(a: TensorImpl, b: TensorImpl, c: TensorImpl, threads: int, packed: bool = False) -> Plan:
    """The launches computing c = a @ b (see `matmul`); `packed`: see _float_plan."""
    dims = batch_dims(c.shape[:-2], a.strides[:-2], b.strides[:-2], c.strides[:-2])
    inner = dims.pop() if dims else (1, (0, 0, 0))
    item = c.dtype.itemsize
    outer = [
        tuple(
            sum(i * st[x] * item for i, (_, st) in zip(index, dims, strict=True)) for x in range(3)
        )
        for index in itertools.product(*(range(size) for size, _ in dims))
    ]
    if c.dtype is int64:
        p = _int_plan(a, b, c, inner, outer)
    else:
        p = _float_plan(gemm.host_spec(c.dtype), a, b, c, inner, outer, threads, packed)
    return described(p)


def described(p: Plan) -> Plan:
    """`p` with its native launch or chain filled in where it has one (Plan.native,
    Plan.chain): what `run` calls without the launcher's Python (matmul's and the
    convolutions' plans alike)."""
    epi_chain = _native_chain(p, True) if epilogue_columns(p) is not None else None
    return dataclasses.replace(
        p, native=_native_call(p), chain=_native_chain(p), epi_chain=epi_chain
    )


# The largest packing buffer a chained plan takes from its thread's scratch.
CHAIN_BUFFER_BYTES = 256 << 10


def _native_chain(p: Plan, epilogues: bool = False) -> tuple | None:
    """Plan.chain of `p`, or None where it is one launch (Plan.native), a launch may run on
    the pool, or its buffer is large: per step (descriptor, work items, its words' sources,
    whether it takes the epilogue's two words). `epilogues`: Plan.epi_chain, whose macro
    steps do."""
    if (len(p.launches) < 2 and not epilogues) or p.buffer_bytes > CHAIN_BUFFER_BYTES:
        return None
    chain = []
    for step in p.launches:
        if step.moved >= PARALLEL_BYTES:
            return None
        flops = max(1, step.flops // max(1, step.total))
        positions = [i for i, _, _ in step.slots]
        epi = EPI.get(step.name) if epilogues else None
        if epi is not None:
            positions += [epi, epi + 1]
        native = native_launch.describe(step.fn, step.words, positions, flops)
        if native is None:
            return None
        sources = tuple((w, o) for _, w, o in step.slots)
        chain.append((native, step.total, sources, epi is not None))
    return tuple(chain)


class _Scratch(threading.local):
    """Each thread's packing buffer for chained plans (grown, never shrunk)."""

    storage: Storage | None = None


_scratch = _Scratch()


def _native_call(p: Plan) -> tuple | None:
    """Plan.native of `p`, or None where its launches take the launcher."""
    if len(p.launches) != 1 or p.buffer_bytes or p.launches[0].moved:
        return None
    step = p.launches[0]
    flops = max(1, step.flops // max(1, step.total))  # the GIL released from 64K flops
    native = native_launch.describe(step.fn, step.words, [i for i, _, _ in step.slots], flops)
    return None if native is None else (native, tuple((w, o) for _, w, o in step.slots))


_plans: dict[tuple, Plan] = {}
_MAX_PLANS = 1024
# The kernels of plans that take an epilogue: the packers, and the products with the
# index of their `epi` word.
EPILOGUE_HOSTS = (gemm.MACRO, gemm.PACK_B, conv.CONV, conv.PACK_W)
EPI = {gemm.MACRO: gemm.MACRO_ARGS.index("epi"), conv.CONV: conv.CONV_ARGS.index("epi")}


def plan_for(
    a: TensorImpl, b: TensorImpl, c: TensorImpl, split: int = 1, packed: bool = False
) -> Plan:
    """The plan of c = a @ b for the current thread count (its work cut as for `split`
    times as many threads; `packed`: see _float_plan), from a bounded cache."""
    threads = get_num_threads() * split
    key = (c.dtype, a.shape, a.strides, b.shape, b.strides, c.strides, threads, packed)
    p = _plans.get(key)
    if p is None:
        if len(_plans) >= _MAX_PLANS:
            _plans.clear()
        p = _plans[key] = plan(a, b, c, threads, packed)
    return p


_ACCUMULATE = gemm.MACRO_ARGS.index("accumulate")
ALONGSIDE_SPLIT = 4  # a product paired with another launch is cut as for 4x the threads


def accumulate_into(c: TensorImpl, a: TensorImpl, b: TensorImpl, subtract: bool = False) -> bool:
    """c += a @ b (c -= a @ b when `subtract`) in the product's own kernel (every k block
    adds to c, the first too, whatever the shape: a matrix-vector one too), as the blocked
    factorizations' trailing updates need; False (nothing done) for int64 (no packed
    kernel) or where c's columns are not unit-stride (the kernels store rows of c: a
    transposed c would be written as if it were not)."""
    if _nothing_to_add(c, a):
        return True
    p = adding_plan(c, a, b, subtract)
    if p is not None:
        run(p, *(host_ptr(t, "matmul") for t in (a, b, c)))
    return p is not None


def _nothing_to_add(c: TensorImpl, a: TensorImpl) -> bool:
    """Whether c += a @ b leaves c as it is: c empty, or an inner dimension of 0."""
    return c.numel() == 0 or a.shape[-1] == 0


def product_steps(into: Program, c: TensorImpl, a: TensorImpl, b: TensorImpl) -> None:
    """c = a @ b (as matmul) as steps of program `into`, packing into its shared buffer."""
    p = plan_for(a, b, c)
    into.add(*_steps(p, _launches_into(p, a, b, c, into.shared(p.buffer_bytes))))


def adding_steps(
    program: Program, c: TensorImpl, a: TensorImpl, b: TensorImpl, subtract: bool, alongside=()
) -> list[Step]:
    """accumulate_into's launches, ready, packing into `program`'s shared buffer (c a
    blocked driver's float block: kael.Error where accumulate_into would return False).
    `alongside`, prepared launches (kernel, words, items) touching none of c, run in order
    as one item of the product's last launch (codegen/cpu/pair.py): on the calling thread
    while the others start on the product, whose items are then cut finer
    (ALONGSIDE_SPLIT) so that thread can take a share."""
    if _nothing_to_add(c, a):
        return pair.in_order(alongside)
    p = _packed(c, a, b, subtract, ALONGSIDE_SPLIT if alongside else 1)
    launches = _launches_into(p, a, b, c, program.shared(p.buffer_bytes))
    steps = _steps(p, launches)
    if alongside:
        steps[-1] = pair.step(alongside, launches[-1])
    return steps


def _launches_into(p: Plan, a: TensorImpl, b: TensorImpl, c: TensorImpl, buffer: int) -> list:
    """Plan `p`'s launches (kernel, words, items) on impls a, b, c, packing at `buffer`."""
    return launches_on(p, (*(host_ptr(t, "matmul") for t in (a, b, c)), buffer))


def _steps(p: Plan, launches: list[tuple]) -> list[Step]:
    """Plan `p`'s `launches` as program steps (each its plan launch's split and flops)."""
    return [
        Step.of(fn, words, items, s.moved, 1, s.flops)
        for s, (fn, words, items) in zip(p.launches, launches, strict=True)
    ]


def launches_on(p: Plan, bases: tuple[int, int, int, int]) -> list[tuple]:
    """Plan `p`'s launches (kernel, words, items) on the A, B, C and buffer addresses
    `bases`, their kernels optimized."""
    steps = []
    for step in p.launches:
        optimize(step.fn)
        steps.append((step.fn, _patched(step, bases), step.total))
    return steps


def products(p: Plan, operands: Sequence[tuple[int, int, int]]) -> None:
    """c = a @ b by plan `p` for each (a, b, c) of addresses laid out as the operands `p`
    was planned for: each launch of the plan once over all of them (codegen/cpu/many.py),
    each product packing into its own part of one buffer."""
    buffer = Storage(p.buffer_bytes * len(operands)) if p.buffer_bytes else None
    each = [
        launches_on(p, (a, b, c, buffer.ptr + k * p.buffer_bytes if buffer else 0))
        for k, (a, b, c) in enumerate(operands)
    ]
    for i, step in enumerate(p.launches):
        moved = max(step.moved * len(operands), parallel(step.flops * len(operands)))
        many.run(step.fn, [launches[i][1] for launches in each], step.total, moved)


def subtracting(program: Program, c: TensorImpl, a: TensorImpl, b: TensorImpl) -> list[tuple]:
    """c -= a @ b as launches (kernel, words, items) for a chain (pair.py) beside the
    program's other products, packing into its buffer for those (Program.shared's
    beside); kael.Error as adding_steps."""
    if _nothing_to_add(c, a):
        return []
    p = _packed(c, a, b, True)
    return _launches_into(p, a, b, c, program.shared(p.buffer_bytes, beside=True))


def _packed(c, a, b, subtract: bool, split: int = 1) -> Plan:
    """adding_plan's plan, which a blocked driver's float blocks always have."""
    p = adding_plan(c, a, b, subtract, split)
    if p is None:
        raise Error(
            f"matmul: no kernel accumulates into {c.dtype} {list(c.shape)} of strides "
            f"{list(c.strides)}"
        )
    return p


def adding_plan(c, a, b, subtract: bool, split: int = 1) -> Plan | None:
    """The plan of c += a @ b (c -= a @ b when `subtract`), or None (see accumulate_into)."""
    if c.shape[-1] != 1 and c.strides[-1] != 1:
        return None
    p = plan_for(a, b, c, split, packed=True)
    if any(s.name not in (gemm.MACRO, gemm.PACK_B) for s in p.launches):
        return None
    mode = gemm.SUBTRACT if subtract else 1
    hit = _adding.get((id(p), mode))
    if hit is None or hit[0] is not p:
        if len(_adding) >= _MAX_PLANS:
            _adding.clear()
        hit = _adding[(id(p), mode)] = (p, _accumulating(p, mode))
    return hit[1]


def _patched(step: Launch, bases: tuple[int, ...]) -> list[int]:
    """The words of `step` with its A, B, C and buffer addresses filled in from `bases`."""
    words = list(step.words)
    for index, which, offset in step.slots:
        words[index] = bases[which] + offset
    return words


# (id of a plan, accumulate word) -> (the plan, its accumulating form): the blocked
# factorizations call the same shapes again and again (the plan is kept: its id stays its own)
_adding: dict[tuple[int, int], tuple[Plan, Plan]] = {}


def _accumulating(p: Plan, mode: int) -> Plan:
    """Plan `p` with its macro kernel's accumulate word set to `mode`."""
    steps = tuple(
        dataclasses.replace(s, words=_with(s.words, _ACCUMULATE, mode))
        if s.name == gemm.MACRO
        else s
        for s in p.launches
    )
    adding = dataclasses.replace(p, launches=steps)
    return described(adding)


def _scratch_for(p: Plan) -> int:
    """The address of this thread's packing buffer, grown to `p`'s."""
    held = _scratch.storage
    if held is None or held.nbytes < p.buffer_bytes:
        held = _scratch.storage = Storage(max(p.buffer_bytes, 4096))
    return held.ptr


def _promoted(p: Plan) -> bool:
    """Whether every kernel of `p` runs its optimized code (tier 0 behind it)."""
    for step in p.launches:  # noqa: SIM110 (all() over a generator: 0.15 us more a call)
        if step.fn.tier0 is not None:
            return False
    return True


def _with(words: tuple[int, ...], index: int, value: int) -> tuple[int, ...]:
    return (*words[:index], value, *words[index + 1 :])


def epilogue_columns(p: Plan) -> list[tuple[int, ...]] | None:
    """Per launch of `p`, the column bounds of the blocks an epilogue follows (see
    Launch.columns), or None when `p` cannot take one (matrix-vector kernels, int64, or
    batches whose rows are not one run of C's rows)."""
    if not p.rows_in_order or any(s.name not in EPILOGUE_HOSTS for s in p.launches):
        return None
    return [s.columns for s in p.launches]


def run(p: Plan, a: int, b: int, c: int, epilogues: list | None = None) -> None:
    """Launch `p` on the operands at these addresses; `epilogues`: per launch, the address
    of its epilogue blocks (0 for none) and the words of one block."""
    native = p.native
    if (
        native is not None
        and p.launches[0].fn.tier0 is None  # promoted: its launches need no counting
        and not (epilogues and epilogues[0][0])
        and not launches.watched()
    ):
        bases = (a, b, c)
        descriptor, sources = native
        _call(descriptor.address, p.launches[0].total, *[bases[w] + o for w, o in sources])
        return
    fused = epilogues and any(e[0] for e in epilogues)
    if fused and p.epi_chain is not None and not launches.watched() and _promoted(p):
        bases = (a, b, c, _scratch_for(p))
        for (descriptor, total, sources, takes), epilogue in zip(
            p.epi_chain, epilogues, strict=True
        ):
            words = [bases[w] + o for w, o in sources]
            if takes:
                words += epilogue
            _call(descriptor.address, total, *words)
        return
    chain = p.chain
    if chain is not None and not fused and not launches.watched() and _promoted(p):
        bases = (a, b, c, _scratch_for(p))
        for descriptor, total, sources, _ in chain:
            if len(sources) == 2:  # a packing step: B and the buffer
                (w0, o0), (w1, o1) = sources
                _call(descriptor.address, total, bases[w0] + o0, bases[w1] + o1)
            else:
                _call(descriptor.address, total, *[bases[w] + o for w, o in sources])
        return
    buffer = Storage(p.buffer_bytes) if p.buffer_bytes else None
    bases = (a, b, c, buffer.ptr if buffer else 0)
    for i, step in enumerate(p.launches):
        words = _patched(step, bases)
        if epilogues is not None and epilogues[i][0]:
            at = EPI[step.name]
            words[at], words[at + 1] = epilogues[i]
        launch(step.fn, words, step.total, step.moved, 1, flops=step.flops)


def matmul(c: TensorImpl, a: TensorImpl, b: TensorImpl) -> None:
    """c = a @ b for [*batch, M, K] @ [*batch, K, N] -> [*batch, M, N] with K > 0.

    One dtype (float32, float64 or int64) and one batch shape for all three (broadcast
    batch dims have stride 0); c's columns must be unit-stride and c must not overlap a or b.
    """
    run(plan_for(a, b, c), *(host_ptr(t, "matmul") for t in (a, b, c)))
