"""Matrix-product kernels for the host, built with llvmlite: B packing, the register-blocked
micro-kernels and the macro loop over them, plus a scalar wrapping int64 row kernel.

Every function has the kernel signature `void f(i64* args, i64 begin, i64 end)`, so
runtime/launcher.py splits its work items over the thread pool:

- `pack_b` (items: batch x nr-wide panels) copies B[k0:k0+kc, j0:j0+nc] from any strides
  into panels of kc rows x nr columns, zero-padded past the last column;
- `macro` (items: batch x MC-row blocks x column blocks) walks its mr x nr tiles, column
  panel by column panel: C[tile] (+)= A[rows, :kc] B[:kc, panel]. With B packed, it
  first packs its A block into mr-row panels on its stack and runs the packed
  micro-kernel (constant strides); otherwise the direct one reads A and B in place
  through their strides (B's columns unit-stride), clamping A's rows and masking B's
  loads. Both mask C's loads and stores, so no edge tile reads or writes outside its
  matrices. When `epi` is set (the last k block of a compiled plan's fused product), the
  item then runs an elementwise kernel over the C block it just finished, while the block
  is in cache: `epi` points at one block per column block, each `epi_stride` words
  `[kernel address or 0, columns, the kernel's argument words]`, and the kernel runs over
  the elements of rows batch * m + [i0, i1) of its columns (see gemm_run.epilogue_columns);
- `rows_i64` (items: batch x rows) computes one output row with wrapping i64 arithmetic,
  for any strides.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.cpu import compiler, handwritten
from kael.codegen.cpu.loops import LoopBuilder, masked_load, masked_store, transpose
from kael.codegen.lowering import i64, smin, splat
from kael.ir.matmul import INT64_TEXT, SPECS, GemmSpec
from kael.runtime.dtypes import DType, float32

I64 = ir.IntType(64)
I32 = ir.IntType(32)
I1 = ir.IntType(1)

MACRO_ARGS = (
    "a", "b", "c", "ars", "aks", "asb", "bps", "bks", "bsb", "ldc", "csb",
    "m", "n", "kc", "mblocks", "mc", "accumulate", "pack_a", "nblocks", "tiles",
    "epi", "epi_stride",
)  # fmt: skip
PACK_ARGS = ("src", "dst", "rs", "cs", "sb", "db", "kc", "n", "npanels")
INT_ARGS = (
    "a", "b", "c", "ars", "aks", "asb", "brs", "bcs", "bsb", "ldc", "csb", "m", "n", "k",
)  # fmt: skip
SUBTRACT = 2  # the accumulate word of C -= A B (the blocked factorizations' updates)
MACRO, PACK_B, ROWS_I64 = "kael_gemm_macro", "kael_gemm_pack_b", "kael_gemm_rows_i64"


def host_spec(dtype: DType) -> GemmSpec | None:
    """The float matrix-product kernel family for this host's vector registers; None for
    dtypes without one (int64 runs its row kernel)."""
    return SPECS[compiler.vector_bytes()].get(dtype)


def _words(b: ir.IRBuilder, fn: ir.Function, names: tuple[str, ...]) -> dict[str, ir.Value]:
    return {n: b.load(b.gep(fn.args[0], [i64(i)]), name=n) for i, n in enumerate(names)}


def begin(module: ir.Module, symbol: str, names: tuple[str, ...]):
    """A new kernel `symbol`: (function, builder, its argument words by name, loops)."""
    fn, b = handwritten.kernel_function(module, symbol)
    return fn, b, _words(b, fn, names), LoopBuilder(b)


def divmod_(b: ir.IRBuilder, x: ir.Value, d: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(x / d, x % d) for non-negative x and positive d."""
    q = b.sdiv(x, d)
    return q, b.sub(x, b.mul(q, d))


def finish(fn: ir.Function, b: ir.IRBuilder, loops: LoopBuilder, item, fence=False) -> None:
    """Run `item` over the work items [begin, end) and return; `fence` publishes
    streaming (weakly ordered) stores first."""
    loops.counted(fn.args[1], fn.args[2], 1, item, "item")
    if fence:
        b.fence("seq_cst")
    b.ret_void()


class Vectors:
    """Vector types, masks and the masked-memory intrinsics of one element type, and
    `madd(b, x, y, acc)` = x * y + acc (llvm.fma for floats, wrapping mul and add for i64)."""

    def __init__(self, module: ir.Module, elem: ir.Type, lanes: int, itemsize: int, suffix: str):
        self.elem, self.lanes = elem, lanes
        self.vec = ir.VectorType(elem, lanes)
        self.mask_ty = ir.VectorType(I1, lanes)
        vname = f"v{lanes}{suffix}"
        self.fma_fn = None
        if suffix != "i64":
            fma_ty = ir.FunctionType(self.vec, [self.vec] * 3)
            self.fma_fn = ir.Function(module, fma_ty, f"llvm.fma.{vname}")
        self.zero = ir.Constant(self.vec, None)
        self.align = ir.Constant(I32, itemsize)
        self.itemsize = itemsize
        self.index = ir.IntType(8 * itemsize)

    def madd(self, b: ir.IRBuilder, x: ir.Value, y: ir.Value, acc: ir.Value) -> ir.Value:
        if self.fma_fn is None:
            return b.add(b.mul(x, y), acc)
        return b.call(self.fma_fn, [x, y, acc])

    def mask(self, b: ir.IRBuilder, first: int, valid: ir.Value) -> ir.Value:
        """Lanes first..first+lanes-1 that are below `valid` (compared in lanes of the
        element's width, so one compare fills one mask register)."""
        ty = self.index
        lanes = ir.Constant(ir.VectorType(ty, self.lanes), [first + i for i in range(self.lanes)])
        valid = b.trunc(valid, ty) if ty is not I64 else valid
        return b.icmp_signed("<", lanes, self.splat(b, valid, ty))

    def splat(self, b: ir.IRBuilder, x: ir.Value, elem: ir.Type | None = None) -> ir.Value:
        """x (of type `elem`, the element type by default) in every lane."""
        assert x.type == (elem or self.elem)
        return splat(b, x, self.lanes)

    def load(self, b: ir.IRBuilder, p: ir.Value, mask: ir.Value | None) -> ir.Value:
        """The vector at p, its lanes outside `mask` untouched in memory (all lanes: None)."""
        p = b.bitcast(p, self.vec.as_pointer())
        if mask is None:
            return b.load(p, align=self.itemsize)
        return masked_load(b, p, self.itemsize, mask)

    def store(self, b: ir.IRBuilder, v: ir.Value, p: ir.Value, mask: ir.Value | None) -> None:
        p = b.bitcast(p, self.vec.as_pointer())
        if mask is None:
            b.store(v, p, align=self.itemsize)
        else:
            masked_store(b, v, p, self.itemsize, mask)


def vector_steps(b: ir.IRBuilder, loops: LoopBuilder, vx: Vectors, n: ir.Value, body, name: str):
    """body(j, mask) for j = 0, lanes, 2 lanes, ... below n: whole vectors with mask None,
    then the partial last one masked (AVX2's masked stores are microcoded on AMD: a
    masked step for every vector ran 3x the time)."""
    lanes = i64(vx.lanes)
    whole = b.mul(b.sdiv(n, lanes), lanes)
    loops.counted(i64(0), whole, vx.lanes, lambda j: body(j, None), name)
    with b.if_then(b.icmp_signed("<", whole, n)):
        body(whole, vx.mask(b, 0, b.sub(n, whole)))


def vectors(module: ir.Module, spec: GemmSpec) -> Vectors:
    if spec.dtype is float32:
        return Vectors(module, ir.FloatType(), spec.lanes, 4, "f32")
    return Vectors(module, ir.DoubleType(), spec.lanes, 8, "f64")


def micro_kernel(module: ir.Module, spec: GemmSpec, vx: Vectors, packed: bool) -> ir.Function:
    """C[mvalid x nvalid] (+)= A[mvalid x kc] B[kc x nvalid] with mr x nr accumulators
    (`accumulate` 0: =, 1: +=, SUBTRACT: -=).

    `packed`: A is an mr-row panel (row stride 1, k stride mr) and B a zero-padded panel
    (k stride nr), so the strides are constants and B loads need no mask; otherwise A and
    B are read through their run-time strides, A's rows past mvalid clamped, B masked.
    """
    t = vx.elem.as_pointer()
    params = [t, I64, I64, t, I64, t, I64, I64, I64, I64, I64]
    name = "kael_gemm_micro_packed" if packed else "kael_gemm_micro_direct"
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), params), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    for i in (0, 3, 5):
        fn.args[i].add_attribute("noalias")
    a, ars, aks, bp, bks, c, ldc, kc, mvalid, nvalid, accumulate = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    mr, nv, lanes = spec.mr, spec.vectors, spec.lanes
    if packed:
        ars, aks, bks = i64(1), i64(mr), i64(spec.nr)
        rows = [b.gep(a, [i64(i)]) for i in range(mr)]
    else:
        last = b.sub(mvalid, i64(1))
        rows = [b.gep(a, [b.mul(smin(b, i64(i), last), ars)]) for i in range(mr)]
    masks = [vx.mask(b, v * lanes, nvalid) for v in range(nv)]

    def k_loop(masked: bool, used: int) -> tuple[list[list[ir.Value]], ir.Block]:
        """The accumulators after kc steps over the first `used` vectors of B's rows
        (loads masked or whole; the others stay zero), and the exit block."""
        pre = b.block
        head, body, done = (fn.append_basic_block(f"k{used}.{n}") for n in ("head", "body", "done"))
        b.branch(head)
        b.position_at_end(head)
        k = b.phi(I64, name="k")
        k.add_incoming(i64(0), pre)
        acc = [[b.phi(vx.vec, name=f"acc{i}_{v}") for v in range(used)] for i in range(mr)]
        for row in acc:
            for phi in row:
                phi.add_incoming(vx.zero, pre)
        b.cbranch(b.icmp_signed("<", k, kc), body, done)
        b.position_at_end(body)
        brow = b.gep(bp, [b.mul(k, bks)])
        bvec = [
            vx.load(b, b.gep(brow, [i64(v * lanes)]), masks[v] if masked else None)
            for v in range(used)
        ]
        koff = b.mul(k, aks)
        for i in range(mr):
            s = vx.splat(b, b.load(b.gep(rows[i], [koff])))
            for v in range(used):
                acc[i][v].add_incoming(b.call(vx.fma_fn, [s, bvec[v], acc[i][v]]), body)
        k.add_incoming(b.add(k, i64(1)), body)
        b.branch(head)
        b.position_at_end(done)
        return [row + [vx.zero] * (nv - used) for row in acc], done

    # Full-width tiles load whole vectors of B; an edge tile runs only the vectors its
    # columns reach (an n = 32 product on 64-wide tiles did twice the multiply-adds), its
    # loads whole where the panel is packed (zero-padded) and masked where B is read in
    # place. Case (vectors, masked) by the switch's value: reach, or 0 for a full tile.
    reach = smin(b, b.sdiv(b.add(nvalid, i64(lanes - 1)), i64(lanes)), i64(nv))
    cases = {used: (used, not packed) for used in range(1, nv + 1)}
    if not packed:
        cases[0] = (nv, False)
        reach = b.select(b.icmp_signed(">=", nvalid, i64(spec.nr)), i64(0), reach)
    joined = fn.append_basic_block("k.join")
    blocks = {value: fn.append_basic_block(f"k.case{value}") for value in cases}
    switch = b.switch(reach, blocks[nv])
    ends = []
    for value, (used, masked) in cases.items():
        switch.add_case(i64(value), blocks[value])
        b.position_at_end(blocks[value])
        ends.append(k_loop(masked, used))
        b.branch(joined)
    b.position_at_end(joined)
    acc = [[None] * nv for _ in range(mr)]
    for i in range(mr):
        for v in range(nv):
            phi = acc[i][v] = b.phi(vx.vec, name=f"c{i}_{v}")
            for values, end in ends:
                phi.add_incoming(values[i][v], end)
    adding = b.icmp_signed("!=", accumulate, i64(0))
    subtracting = b.icmp_signed("==", accumulate, i64(SUBTRACT))
    # Full-width tiles store with plain vector moves: masked stores are microcoded on AMD
    # cores (Zen 3: 24 of them a tile cost ~10% of a 1024^3 product).
    whole, edge, end = (fn.append_basic_block(n) for n in ("c.whole", "c.edge", "c.end"))
    b.cbranch(b.icmp_signed(">=", nvalid, i64(spec.nr)), whole, edge)
    for block, masked in ((whole, False), (edge, True)):
        b.position_at_end(block)
        for i in range(mr):
            store = fn.append_basic_block(f"row{i}.store")
            after = fn.append_basic_block(f"row{i}.after")
            b.cbranch(b.icmp_signed("<", i64(i), mvalid), store, after)
            b.position_at_end(store)
            crow = b.gep(c, [b.mul(i64(i), ldc)])
            for v in range(nv):
                p = b.gep(crow, [i64(v * lanes)])
                held = vx.load(b, p, masks[v] if masked else None)
                total = b.select(subtracting, b.fsub(held, acc[i][v]), b.fadd(acc[i][v], held))
                vx.store(b, b.select(adding, total, acc[i][v]), p, masks[v] if masked else None)
            b.branch(after)
            b.position_at_end(after)
        b.branch(end)
    b.position_at_end(end)
    b.ret_void()
    return fn


def _emit_macro(module: ir.Module, spec: GemmSpec, micro: tuple, elem: ir.Type) -> None:
    """Item it = (batch * mblocks + row block) * nblocks + column block: rows [i0, i1)
    times `tiles` nr-column panels; A packed first (B already is) when pack_a is set."""
    fn, b, w, loops = begin(module, MACRO, MACRO_ARGS)
    # The item's A block, packed in mr-row panels (k-major); at most MC x KC elements.
    scratch = b.alloca(ir.ArrayType(elem, spec.mc * spec.kc), name="apack")
    scratch.align = 64
    packed = b.bitcast(scratch, elem.as_pointer())
    t = elem.as_pointer()
    base = {name: b.inttoptr(w[name], t) for name in ("a", "b", "c")}
    ntiles = b.sdiv(b.add(w["n"], i64(spec.nr - 1)), i64(spec.nr))
    mr = i64(spec.mr)
    pack_a = b.icmp_signed("!=", w["pack_a"], i64(0))
    panel_elems = b.mul(mr, w["kc"])
    has_epilogue = b.icmp_signed("!=", w["epi"], i64(0))
    epilogues = b.inttoptr(w["epi"], I64.as_pointer())

    def item(it):
        rows, cols = divmod_(b, it, w["nblocks"])
        first = b.mul(cols, w["tiles"])
        batch, block = divmod_(b, rows, w["mblocks"])
        i0 = b.mul(block, w["mc"])
        i1 = smin(b, w["m"], b.add(i0, w["mc"]))
        a = b.gep(base["a"], [b.mul(batch, w["asb"])])
        bb = b.gep(base["b"], [b.mul(batch, w["bsb"])])
        c = b.gep(base["c"], [b.mul(batch, w["csb"])])
        panels = b.sdiv(b.add(b.sub(i1, i0), i64(spec.mr - 1)), mr)
        with b.if_then(pack_a):
            _pack_a(b, loops, spec, a, w, i0, i1, panels, packed)

        def column(jt):
            j0 = b.mul(jt, i64(spec.nr))
            nvalid = smin(b, i64(spec.nr), b.sub(w["n"], j0))
            panel = b.gep(bb, [b.mul(jt, w["bps"])])

            def tile(ip):
                i = b.add(i0, b.mul(ip, mr))
                mvalid = smin(b, mr, b.sub(i1, i))
                tail = [w["ldc"], w["kc"], mvalid, nvalid, w["accumulate"]]
                cp = b.gep(c, [b.add(b.mul(i, w["ldc"]), j0)])
                with b.if_else(pack_a) as (packed_tile, direct_tile):
                    with packed_tile:
                        src = b.gep(packed, [b.mul(ip, panel_elems)])
                        b.call(micro[0], [src, w["ars"], w["aks"], panel, w["bks"], cp, *tail])
                    with direct_tile:
                        src = b.gep(a, [b.mul(i, w["ars"])])
                        b.call(micro[1], [src, w["ars"], w["aks"], panel, w["bks"], cp, *tail])

            loops.counted(i64(0), panels, 1, tile, "tile")

        loops.counted(first, smin(b, ntiles, b.add(first, w["tiles"])), 1, column, "column")
        with b.if_then(has_epilogue):
            row0 = b.mul(batch, w["m"])
            epilogue(b, epilogues, b.mul(cols, w["epi_stride"]), b.add(row0, i0), b.add(row0, i1))

    finish(fn, b, loops, item)


def epilogue(b: ir.IRBuilder, blocks: ir.Value, at: ir.Value, r0: ir.Value, r1: ir.Value):
    """Call the epilogue block at word `at` (when it has a kernel) on rows [r0, r1)."""
    block = b.gep(blocks, [at])
    address = b.load(block)
    with b.if_then(b.icmp_signed("!=", address, i64(0))):
        columns = b.load(b.gep(block, [i64(1)]))
        fn = b.inttoptr(address, handwritten.KERNEL_TYPE.as_pointer())
        b.call(fn, [b.gep(block, [i64(2)]), b.mul(r0, columns), b.mul(r1, columns)])


def _pack_a(b, loops, spec, a, w, i0, i1, panels, packed) -> None:
    """packed[ip*mr*kc + k*mr + r] = A[i0 + ip*mr + r, k], rows past i1 repeating the last."""
    mr = i64(spec.mr)
    last = b.sub(i1, i64(1))

    def panel(ip):
        first = b.add(i0, b.mul(ip, mr))
        dst = b.gep(packed, [b.mul(ip, b.mul(mr, w["kc"]))])
        rows = [
            b.gep(a, [b.mul(smin(b, b.add(first, i64(r)), last), w["ars"])]) for r in range(spec.mr)
        ]

        def step(k):
            koff = b.mul(k, w["aks"])
            out = b.gep(dst, [b.mul(k, mr)])
            for r in range(spec.mr):
                b.store(b.load(b.gep(rows[r], [koff])), b.gep(out, [i64(r)]))

        loops.counted(i64(0), w["kc"], 1, step, "apack")

    loops.counted(i64(0), panels, 1, panel, "apanel")


def _emit_pack_b(module: ir.Module, spec: GemmSpec, vx: Vectors) -> None:
    """Panel p of batch q: dst[q*db + p*kc*nr + k*nr + jj] = src[q*sb + k*rs + (p*nr+jj)*cs],
    zero where p*nr + jj >= n. Unit-stride rows copy vectors, unit-stride columns (a
    transposed B) transpose lanes x lanes blocks in registers, other layouts go scalar."""
    fn, b, w, loops = begin(module, PACK_B, PACK_ARGS)
    t = vx.elem.as_pointer()
    nr = spec.nr

    def item(it):
        batch, p = divmod_(b, it, w["npanels"])
        j0 = b.mul(p, i64(nr))
        width = smin(b, i64(nr), b.sub(w["n"], j0))
        src = b.gep(b.inttoptr(w["src"], t), [b.add(b.mul(batch, w["sb"]), b.mul(j0, w["cs"]))])
        dst = b.gep(
            b.inttoptr(w["dst"], t),
            [b.add(b.mul(batch, w["db"]), b.mul(p, b.mul(w["kc"], i64(nr))))],
        )
        panel = (b, loops, spec, vx, w, src, dst, width)
        with b.if_else(b.icmp_signed("==", w["cs"], i64(1))) as (unit, other):
            with unit:
                _pack_rows(*panel)
            with other, b.if_else(b.icmp_signed("==", w["rs"], i64(1))) as (columns, strided):
                with columns:
                    _pack_columns(*panel)
                with strided:
                    _pack_scalar(*panel)

    finish(fn, b, loops, item)


def _pack_rows(b, loops, spec, vx, w, src, dst, width) -> None:
    """Unit-stride columns: each row of the panel is nr / lanes masked vector loads."""
    lanes = spec.lanes
    masks = [vx.mask(b, v * lanes, width) for v in range(spec.vectors)]
    vptr = vx.vec.as_pointer()

    def row(k):
        s, d = b.gep(src, [b.mul(k, w["rs"])]), b.gep(dst, [b.mul(k, i64(spec.nr))])
        for v in range(spec.vectors):
            x = vx.load(b, b.gep(s, [i64(v * lanes)]), masks[v])
            b.store(x, b.bitcast(b.gep(d, [i64(v * lanes)]), vptr), align=vx.align.constant)

    loops.counted(i64(0), w["kc"], 1, row, "rows")


def _pack_columns(b, loops, spec, vx, w, src, dst, width) -> None:
    """Unit-stride rows of B^T: load lanes k-values of lanes columns, transpose, store rows.

    Each loaded cache line is used whole, so power-of-two column strides cannot thrash L1.
    """
    lanes, kc = spec.lanes, w["kc"]
    steps = b.sdiv(b.add(kc, i64(lanes - 1)), i64(lanes))
    vptr = vx.vec.as_pointer()
    off = ir.Constant(ir.VectorType(I1, lanes), [0] * lanes)
    on = ir.Constant(ir.VectorType(I1, lanes), [1] * lanes)

    def step(s):
        k = b.mul(s, i64(lanes))
        kmask = vx.mask(b, 0, b.sub(kc, k))
        for g in range(spec.vectors):
            block = []
            for col in range(lanes):
                jj = g * lanes + col
                inside = b.icmp_signed("<", i64(jj), width)
                p = b.gep(src, [b.add(b.mul(i64(jj), w["cs"]), k)])
                block.append(vx.load(b, p, b.select(inside, kmask, off)))
            for kk, vec in enumerate(transpose(b, block)):
                row = b.add(k, i64(kk))
                d = b.bitcast(b.gep(dst, [b.add(b.mul(row, i64(spec.nr)), i64(g * lanes))]), vptr)
                keep = b.select(b.icmp_signed("<", row, kc), on, off)
                masked_store(b, vec, d, vx.itemsize, keep)

    loops.counted(i64(0), steps, 1, step, "columns")


def _pack_scalar(b, loops, spec, vx, w, src, dst, width) -> None:
    """Any strides: one element at a time, columns past the edge read clamped and zeroed."""
    last = b.sub(width, i64(1))

    def row(k):
        s, d = b.gep(src, [b.mul(k, w["rs"])]), b.gep(dst, [b.mul(k, i64(spec.nr))])

        def col(jj):
            x = b.load(b.gep(s, [b.mul(smin(b, jj, last), w["cs"])]))
            inside = b.icmp_signed("<", jj, width)
            b.store(b.select(inside, x, ir.Constant(vx.elem, 0.0)), b.gep(d, [jj]))

        loops.counted(i64(0), i64(spec.nr), 1, col, "col")

    loops.counted(i64(0), w["kc"], 1, row, "scalar")


def build_float(spec: GemmSpec):
    """The builder of `spec`'s product module: micro-kernels and macro loop."""

    def build(module: ir.Module) -> list[str]:
        vx = vectors(module, spec)
        micro = (micro_kernel(module, spec, vx, True), micro_kernel(module, spec, vx, False))
        _emit_macro(module, spec, micro, vx.elem)
        return [MACRO]

    return build


def build_pack(spec: GemmSpec):
    """The builder of `spec`'s B packing module (its own: a product that reads B in place
    never compiles it, ~0.15 s of a first call)."""

    def build(module: ir.Module) -> list[str]:
        _emit_pack_b(module, spec, vectors(module, spec))
        return [PACK_B]

    return build


def _emit_rows_i64(module: ir.Module) -> list[str]:
    """Row r of batch q: C[r, :] = sum_k A[r, k] * B[k, :], wrapping on overflow."""
    fn, b, w, loops = begin(module, ROWS_I64, INT_ARGS)
    t = I64.as_pointer()

    def item(it):
        batch, r = divmod_(b, it, w["m"])
        a = b.gep(b.inttoptr(w["a"], t), [b.add(b.mul(batch, w["asb"]), b.mul(r, w["ars"]))])
        bb = b.gep(b.inttoptr(w["b"], t), [b.mul(batch, w["bsb"])])
        c = b.gep(b.inttoptr(w["c"], t), [b.add(b.mul(batch, w["csb"]), b.mul(r, w["ldc"]))])
        loops.counted(i64(0), w["n"], 1, lambda j: b.store(i64(0), b.gep(c, [j])), "zero")

        def inner(k):
            x = b.load(b.gep(a, [b.mul(k, w["aks"])]))
            brow = b.gep(bb, [b.mul(k, w["brs"])])

            def col(j):
                p = b.gep(c, [j])
                b.store(b.add(b.load(p), b.mul(x, b.load(b.gep(brow, [b.mul(j, w["bcs"])])))), p)

            loops.counted(i64(0), w["n"], 1, col, "col")

        loops.counted(i64(0), w["k"], 1, inner, "k")

    finish(fn, b, loops, item)
    return [ROWS_I64]


def float_library(spec: GemmSpec) -> handwritten.Library:
    """The compiled float product kernel (MACRO) of `spec`, built or loaded once."""
    return handwritten.compiled(spec.text(), build_float(spec), tiered=False)


def pack_library(spec: GemmSpec) -> handwritten.Library:
    """The compiled B packing kernel (PACK_B) of `spec`, built or loaded once."""
    return handwritten.compiled(f"{spec.text()}_pack_b", build_pack(spec), tiered=False)


def int64_library() -> handwritten.Library:
    """The compiled int64 row kernel."""
    return handwritten.compiled(INT64_TEXT, _emit_rows_i64, tiered=False)
