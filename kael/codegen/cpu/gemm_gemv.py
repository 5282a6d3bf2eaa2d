"""Matrix-vector products on the host, and few rows by a large transposed matrix: the
shapes the tiled kernels would waste work (or a packing of B) on.

A tile of mr x nr accumulators computes mostly padding when one side is a vector, and
reads B down its columns at the row stride, which no prefetcher follows. So:

- `cols` (B's columns unit-stride; items: batch x rows x blocks of BLOCK columns; M = 1
  for floats, any M for int64, whose products have no tiled kernel): the block of C is zeroed, then each pass adds a[k] * B[k, block] for KSTEP rows k with
  full-width loads along B's rows, which stream; C's block stays in L1;
- `rows` (N = 1, A's and the vector's k unit-stride; items: batch x groups of RSTEP
  rows): dot products of RSTEP rows with the vector, sharing its loads. With `batches`
  set, the items run the batches innermost (groups x batches): the rows of a product of
  few rows by a transposed matrix (x @ W.T, a linear layer's small batch, as rows of W
  dotted with each row of x) stay in cache (L1 while RSTEP rows fit, about k <= 2K in
  float32) while every row of x passes, so W is read once and never packed.

Both take gemm.INT_ARGS plus `blocks` (column blocks or row groups per batch) and
`batches` (the rows kernel's: 0 for batch-major items; `cols` ignores it).
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.cpu import handwritten
from kael.codegen.cpu.gemm import INT_ARGS, Vectors, begin, divmod_, finish, vector_steps
from kael.codegen.lowering import I64, i64, smin
from kael.runtime.dtypes import DType, float32, int64

ARGS = (*INT_ARGS, "blocks", "batches")
COLS, ROWS = "kael_gemv_cols", "kael_gemv_rows"
BLOCK = 1024  # columns of C one item keeps in L1 (4 or 8 KiB)
KSTEP = 4  # rows of B one pass over C's block adds
RSTEP = 4  # rows of A one item dots with the vector (_fold_rows pairs them twice)
UNROLL = 2  # vector accumulators per row
NARROW = 2  # a column block of at most this many vectors keeps C in registers


def _vectors(module: ir.Module, dtype: DType) -> Vectors:
    if dtype is float32:
        return Vectors(module, ir.FloatType(), 16, 4, "f32")
    if dtype is int64:
        return Vectors(module, ir.IntType(64), 8, 8, "i64")
    return Vectors(module, ir.DoubleType(), 8, 8, "f64")


def _emit_cols(module: ir.Module, vx: Vectors) -> None:
    fn, b, w, loops = begin(module, COLS, ARGS)
    t = vx.elem.as_pointer()
    lanes = vx.lanes
    # narrow blocks: KSTEP accumulators per vector of C, in registers across all of k
    narrow_accs = [[b.alloca(vx.vec, name=f"nacc{v}_{r}") for r in range(KSTEP)]
                   for v in range(NARROW)]  # fmt: skip

    def item(it):
        row, block = divmod_(b, it, w["blocks"])
        batch, r = divmod_(b, row, w["m"])
        j0 = b.mul(block, i64(BLOCK))
        width = smin(b, i64(BLOCK), b.sub(w["n"], j0))
        a = b.gep(b.inttoptr(w["a"], t), [b.add(b.mul(batch, w["asb"]), b.mul(r, w["ars"]))])
        bb = b.gep(b.inttoptr(w["b"], t), [b.add(b.mul(batch, w["bsb"]), j0)])
        c_row = b.add(b.mul(batch, w["csb"]), b.mul(r, w["ldc"]))
        c = b.gep(b.inttoptr(w["c"], t), [b.add(c_row, j0)])
        vectors = b.sdiv(b.add(width, i64(lanes - 1)), i64(lanes))

        def lane_mask(v):
            return vx.mask(b, 0, b.sub(width, b.mul(v, i64(lanes))))

        def zero(j, mask):
            vx.store(b, vx.zero, b.gep(c, [j]), mask)

        def rows(k0, count):
            """C[block] += sum over count rows from k0 of a[k] * B[k, block]."""
            scale = [
                vx.splat(b, b.load(b.gep(a, [b.mul(b.add(k0, i64(i)), w["aks"])])))
                for i in range(count)
            ]
            starts = [b.gep(bb, [b.mul(b.add(k0, i64(i)), w["brs"])]) for i in range(count)]

            def add(off, mask):
                p = b.gep(c, [off])
                acc = vx.load(b, p, mask)
                for s, start in zip(scale, starts, strict=True):
                    acc = vx.madd(b, s, vx.load(b, b.gep(start, [off]), mask), acc)
                vx.store(b, acc, p, mask)

            vector_steps(b, loops, vx, width, add, f"add{count}")

        groups = b.sdiv(w["k"], i64(KSTEP))

        def narrow(count: int):
            """A block of at most `count` vectors (X.T @ v with few columns): each row k
            adds a[k] * B[k, block] into accumulator k % KSTEP, in registers, and C is
            their sum, stored once; the C-in-L1 passes would wait on each store."""
            accs = narrow_accs[:count]
            for row in accs:
                for acc in row:
                    b.store(vx.zero, acc)
            masks = [lane_mask(i64(v)) for v in range(count)]

            def add(k, r):
                scale = vx.splat(b, b.load(b.gep(a, [b.mul(k, w["aks"])])))
                start = b.gep(bb, [b.mul(k, w["brs"])])
                for v, (row, mask) in enumerate(zip(accs, masks, strict=True)):
                    x = vx.load(b, b.gep(start, [i64(v * lanes)]), mask)
                    b.store(vx.madd(b, scale, x, b.load(row[r])), row[r])

            def group(g):
                for r in range(KSTEP):
                    add(b.add(b.mul(g, i64(KSTEP)), i64(r)), r)

            loops.counted(i64(0), groups, 1, group, f"narrow{count}")
            loops.counted(b.mul(groups, i64(KSTEP)), w["k"], 1, lambda k: add(k, 0), "nrest")
            plus = b.add if vx.fma_fn is None else b.fadd
            for v, (row, mask) in enumerate(zip(accs, masks, strict=True)):
                parts = [b.load(acc) for acc in row]
                while len(parts) > 1:  # pairwise: (r0 + r1) + (r2 + r3)
                    parts = [plus(parts[i], parts[i + 1]) for i in range(0, len(parts), 2)]
                vx.store(b, parts[0], b.gep(c, [i64(v * lanes)]), mask)

        def wide():
            vector_steps(b, loops, vx, width, zero, "zero")
            loops.counted(i64(0), groups, 1, lambda g: rows(b.mul(g, i64(KSTEP)), KSTEP), "group")
            loops.counted(b.mul(groups, i64(KSTEP)), w["k"], 1, lambda k: rows(k, 1), "rest")

        # one path per block width: 1 .. NARROW vectors in registers, else C in L1
        bodies = [lambda n=n: narrow(n) for n in range(1, NARROW + 1)] + [wide]
        blocks = [fn.append_basic_block(f"width{n}") for n in range(1, len(bodies) + 1)]
        after = fn.append_basic_block("width.done")
        switch = b.switch(smin(b, vectors, i64(len(bodies))), blocks[-1])
        for n, block in enumerate(blocks[:-1], 1):
            switch.add_case(i64(n), block)
        for block, body in zip(blocks, bodies, strict=True):
            b.position_at_end(block)
            body()
            b.branch(after)
        b.position_at_end(after)

    finish(fn, b, loops, item)


def _fold_rows(b: ir.IRBuilder, totals: list[ir.Value], lanes: int) -> ir.Value:
    """The RSTEP rows' sums as one vector of RSTEP lanes: each level adds the two halves of
    every row's partials, two rows' halves moved side by side by one pair of shuffles, so
    the rows share their shuffles and adds (lanes i and i + half pair as in a halving
    reduction of one row)."""
    i32 = ir.IntType(32)

    def join(x, y, picks_x, picks_y):
        width = len(x.type) if hasattr(x.type, "__len__") else x.type.count
        return b.shuffle_vector(
            x,
            y,
            ir.Constant(
                ir.VectorType(i32, len(picks_x) + len(picks_y)),
                picks_x + [width + p for p in picks_y],
            ),
        )

    # level one: rows 2j and 2j + 1 into one vector of two groups of lanes / 2
    half = lanes // 2
    pairs = []
    for x, y in zip(totals[0::2], totals[1::2], strict=True):
        lo = join(x, y, list(range(half)), list(range(half)))
        hi = join(x, y, list(range(half, lanes)), list(range(half, lanes)))
        pairs.append(b.fadd(lo, hi))
    # level two: the pairs into one vector of RSTEP groups of lanes / 4
    quarter = half // 2
    firsts = [*range(quarter), *range(half, half + quarter)]
    seconds = [*range(quarter, half), *range(half + quarter, lanes)]
    v = b.fadd(join(pairs[0], pairs[1], firsts, firsts), join(pairs[0], pairs[1], seconds, seconds))
    group = quarter  # lanes a row has left, RSTEP groups side by side
    while group > 1:
        h = group // 2
        lo = [g * group + j for g in range(RSTEP) for j in range(h)]
        hi = [g * group + h + j for g in range(RSTEP) for j in range(h)]
        v = b.fadd(join(v, v, lo, []), join(v, v, hi, []))
        group = h
    return v


def _emit_rows(module: ir.Module, vx: Vectors) -> None:
    fn, b, w, loops = begin(module, ROWS, ARGS)
    t = vx.elem.as_pointer()
    lanes = vx.lanes
    accs = [[b.alloca(vx.vec, name=f"acc{r}_{u}") for u in range(UNROLL)] for r in range(RSTEP)]
    every = ir.Constant(vx.mask_ty, [1] * lanes)
    # (outer, inner) of the current item, carried from item to item: a division per item
    # cost as much as the dot products of a short row group. Inner is the row group, or
    # with `batches` set the batch.
    where = [b.alloca(I64, name="outer"), b.alloca(I64, name="inner")]
    batch_inner = b.icmp_signed(">", w["batches"], i64(0))
    inner_count = b.select(batch_inner, w["batches"], w["blocks"])
    inner_count = b.select(b.icmp_signed(">", inner_count, i64(0)), inner_count, i64(1))  # no /0
    for slot, value in zip(where, divmod_(b, fn.args[1], inner_count), strict=True):
        b.store(value, slot)

    def item(it):
        outer, inner = (b.load(slot) for slot in where)
        following = b.add(inner, i64(1))
        wraps = b.icmp_signed("==", following, inner_count)
        b.store(b.select(wraps, b.add(outer, i64(1)), outer), where[0])
        b.store(b.select(wraps, i64(0), following), where[1])
        batch = b.select(batch_inner, inner, outer)
        group = b.select(batch_inner, outer, inner)
        r0 = b.mul(group, i64(RSTEP))
        last = b.sub(w["m"], i64(1))
        base = b.gep(b.inttoptr(w["a"], t), [b.mul(batch, w["asb"])])
        rows = [
            b.gep(base, [b.mul(smin(b, b.add(r0, i64(r)), last), w["ars"])]) for r in range(RSTEP)
        ]
        x = b.gep(b.inttoptr(w["b"], t), [b.mul(batch, w["bsb"])])
        c = b.gep(b.inttoptr(w["c"], t), [b.mul(batch, w["csb"])])
        for row in accs:
            for acc in row:
                b.store(vx.zero, acc)
        step = lanes * UNROLL

        def chunk(s, masked: bool):
            k0 = b.mul(s, i64(step))
            for u in range(UNROLL):
                k = b.add(k0, i64(u * lanes))
                mask = vx.mask(b, 0, smin(b, b.sub(w["k"], k), i64(lanes))) if masked else every
                xv = vx.load(b, b.gep(x, [k]), mask)
                for row, acc in zip(rows, accs, strict=True):
                    av = vx.load(b, b.gep(row, [k]), mask)
                    b.store(vx.madd(b, av, xv, b.load(acc[u])), acc[u])

        full = b.sdiv(w["k"], i64(step))  # whole chunks load unmasked; the tail, masked
        loops.counted(i64(0), full, 1, lambda s: chunk(s, False), "chunk")
        with b.if_then(b.icmp_signed(">", w["k"], b.mul(full, i64(step)))):
            chunk(full, True)
        totals = []
        for acc in accs:
            total = b.load(acc[0])
            for u in range(1, UNROLL):
                total = b.fadd(total, b.load(acc[u]))
            totals.append(total)
        sums = _fold_rows(b, totals, lanes)
        for r in range(RSTEP):
            row = b.add(r0, i64(r))
            with b.if_then(b.icmp_signed("<", row, w["m"])):
                b.store(b.extract_element(sums, i64(r)), b.gep(c, [b.mul(row, w["ldc"])]))

    finish(fn, b, loops, item)


def library(dtype: DType) -> handwritten.Library:
    """The compiled kernels of a dtype, built once (disk-cached): both for floats, `cols`
    alone for int64 (every row of C is a vector @ matrix product, in wrapping arithmetic)."""

    def build(module: ir.Module) -> list[str]:
        vx = _vectors(module, dtype)
        _emit_cols(module, vx)
        if dtype is int64:
            return [COLS]
        _emit_rows(module, vx)
        return [COLS, ROWS]

    return handwritten.compiled(f"kael_gemv_{dtype.name}", build, tiered=False)
