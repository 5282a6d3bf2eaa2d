"""Matrix products of float16 and bfloat16 on the GPU's tensor cores (mma.sync, sm_80+).

A CTA of WARPS = 4 warps (2 x 2) computes a TILE_M x TILE_N = 128 x 128 tile of C, each
warp a WARP_M x WARP_N = 64 x 64 quarter as FRAG_M x FRAG_N = 4 x 8 products of
`mma.sync.aligned.m16n8k16.row.col` per step of 16 along K, accumulating in float32 (as
PyTorch's cuBLAS products of half types do by default; 128 accumulators a thread) and
rounding to the dtype once at the end (kael's `narrow`: to nearest even, the CPU's bits for
the same float32 value). The shape of CUTLASS's sm80 kernels 128x128_64x3 (warp 64x64x16):
64 x 64 per warp is what keeps the tensor cores, not shared memory, the bound (8 ldmatrix
per 32 mma); it fits in 255 registers without spilling, so an SM holds two CTAs.

The fast path, for operands contiguous along their inner dimension (A's columns, B's
columns of its K x N rows) with rows and bases on 16 bytes, walks K in tiles of TILE_K = 64
through a STAGES = 3 deep pipeline (both parameters of build_module: K tiles of 32, 64 or
128, 2 or more stages) in DYNAMIC shared memory: one `.extern .shared` array of
shared_bytes() = 2 x 3 x 16 KB = 96 KB, A's stages then B's, past the 48 KB static limit,
so the launch passes it as cuLaunchKernel's sharedMemBytes and the function's
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES is raised first (cuda_driver.launch_kernel's
`shared_bytes`); two CTAs still fit an SM's 228 KB. Against K tiles of 32 it halves the
barriers and waits per mma and keeps twice the bytes in flight. Each thread copies 16-byte
pieces of the tiles ahead with `cp.async.cg.shared.global` (8 of A's 128 x 64 and 8 of B's
64 x 128 a tile; past M, N or K the src-size operand shrinks, to 0 for whole pieces, and
the copy fills zeros, so every size is exact), A's in a tile's first step of 16 and B's
halfway through it (fewer copy addresses live at once: 252-254 registers, no spills), one
`cp.async.commit_group` per tile, and `cp.async.wait_group STAGES - 2` then a barrier
before a tile is read; the barrier also tells that every warp finished the stage the next
copies refill. Warps read their fragments with `ldmatrix.sync.aligned.m8n8.x4.shared.b16`
(A, row-major as mma takes it) and its `.trans` form (B: K x N row-major in memory,
column-major in the mma), each step's fragments loaded while the previous step's products
run, the next tile's first ones right after its barrier. Shared memory is XOR-swizzled in
16-byte chunks so that each 8-lane phase of an ldmatrix and each quarter-warp of cp.async
stores covers the 8 bank groups of a 128-byte line once: A's row r (128 bytes, 8 chunks)
keeps chunk c at c ^ (r % 8) (with K tiles of 32: 64 bytes, c ^ ((r / 2) % 4)), B's row k
(256 bytes, 16 chunks) at c ^ (k % 8); a step's chunks are the first step's XOR 2 s, so one
read address a tile serves every step. CTAs go down the columns GROUP_M tile rows at a time
(Triton's grouped order), so those running together share their panels of A and B in L2.

Any other layout takes the fallback in the same kernel, chosen per CTA by a uniform
branch (a batch's alignment may differ from another's): each lane loads its fragment
elements straight from global memory in the PTX ISA's layout ("Matrix Fragments for
mma.m16n8k16 with floating point type"), zero past the edges, any strides, in
DIRECT_PASSES strips of the warp's columns. C is stored two elements (4 bytes) at a time
where its alignment allows. The parameters are codegen/ptx/gemm.py's words; gemm.ptx and
gemm.matmul build and launch this kernel (a 1-d grid of batches x tiles of THREADS
threads) for the half types.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.cpu.loops import LoopBuilder
from kael.codegen.lowering import i64, narrow
from kael.codegen.ptx.gemm import entry_function
from kael.codegen.ptx.kernel import sreg
from kael.codegen.ptx.warp import barrier, grouped_tile
from kael.runtime.dtypes import DType, bfloat16, float16

I1, I8, I16, I32, I64, F32 = (
    ir.IntType(1), ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64), ir.FloatType(),
)  # fmt: skip
TILE_M, TILE_N = 128, 128  # the CTA's tile of C
TILE_K = 64  # K per pipeline stage (the builder's default; 32, 64 or 128)
WARPS_M, WARPS_N = 2, 2  # the warps' grid over the CTA's tile
WARP_M, WARP_N = TILE_M // WARPS_M, TILE_N // WARPS_N  # each warp's tile of C
FRAG_M, FRAG_N = WARP_M // 16, WARP_N // 8  # m16n8k16 products per warp and step of 16
WARPS = WARPS_M * WARPS_N
THREADS = 32 * WARPS
STAGES = 3  # tiles of A and B in shared memory: STAGES - 1 in flight while one is read
STEP = 16  # K per mma
CHUNK = 16  # bytes per cp.async copy and ldmatrix row: 8 elements
B_ROW = TILE_N * 2  # bytes per row of B's stages
GROUP_M = 8  # tile rows per group in the CTAs' order
DIRECT_PASSES = 2  # the fallback's strips of a warp's columns
DTYPES = (float16, bfloat16)
SHARED = "kael_mma_shared"  # the `.extern .shared` array: the launch's dynamic shared memory
SHARED_ALIGN = 128  # the swizzle's lines of 128 bytes start on one


def a_row(tile_k: int = TILE_K) -> int:
    """Bytes per row of A's stages."""
    return tile_k * 2


def stage_bytes(tile_k: int = TILE_K) -> int:
    """A's bytes per stage, and B's (tile_k rows of B_ROW)."""
    return TILE_M * a_row(tile_k)


def _check_shape(tile_k: int, stages: int) -> None:
    if tile_k not in (32, 64, 128) or stages < 2:
        raise ValueError(f"no mma pipeline of K tiles of {tile_k} in {stages} stages")
    assert TILE_M == TILE_N and stage_bytes(tile_k) == tile_k * B_ROW
    assert stage_bytes(tile_k) // CHUNK % THREADS == 0


STAGE_BYTES = stage_bytes()  # the default's
A_ROW = a_row()


def symbol(dtype: DType) -> str:
    return f"kael_gemm_mma_{dtype.name}"


def instruction(dtype: DType) -> str:
    """The PTX of one warp's D = A B + C (A 16 x 16 row-major, B 16 x 8 column-major)."""
    t = "f16" if dtype is float16 else "bf16"
    return (
        f"mma.sync.aligned.m16n8k16.row.col.f32.{t}.{t}.f32 "
        "{$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};"
    )


def shared_bytes(tile_k: int = TILE_K, stages: int = STAGES) -> int:
    """The CTA's dynamic shared memory (the launch's sharedMemBytes): `stages` tiles of A
    and of B, all of A's stages first."""
    return 2 * stages * stage_bytes(tile_k)


class _Emitter:
    """The kernel's IR: its indices, the two main loops and the store of C."""

    def __init__(
        self,
        module: ir.Module,
        fn: ir.Function,
        w: dict,
        dtype: DType,
        tile_k: int = TILE_K,
        stages: int = STAGES,
    ) -> None:
        _check_shape(tile_k, stages)
        self.module, self.w, self.dtype = module, w, dtype
        self.tile_k, self.stages = tile_k, stages
        self.b = b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.acc = [
            [[b.alloca(F32, name=f"acc{i}_{j}_{e}") for e in range(4)] for j in range(FRAG_N)]
            for i in range(FRAG_M)
        ]
        for cell in self._cells():
            b.store(ir.Constant(F32, 0.0), cell)
        # the fast path's loop-carried values (here: mem2reg promotes only the entry's allocas)
        self.held = [b.alloca(I32, name=f"frag{e}") for e in range(4 * FRAG_M + 2 * FRAG_N)]
        self.read_at = b.alloca(I64, name="read_at")
        outputs = ir.LiteralStructType([F32] * 4)
        self.mma_asm = ir.InlineAsm(
            ir.FunctionType(outputs, [I32] * 6 + [F32] * 4),
            instruction(dtype),
            "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f",
            side_effect=False,
        )
        tid = sreg(b, "tid.x")
        warp, self.lane = b.udiv(tid, i64(32)), b.urem(tid, i64(32))
        self.tid = tid
        self.group, self.member = b.lshr(self.lane, i64(2)), b.and_(self.lane, i64(3))
        block = sreg(b, "ctaid.x")
        tiles = b.mul(w["tiles_m"], w["tiles_n"])
        batch, rest = b.udiv(block, tiles), b.urem(block, tiles)
        tile_m, tile_n = grouped_tile(self.b, rest, self.w["tiles_m"], self.w["tiles_n"], GROUP_M)
        self.row0 = b.mul(tile_m, i64(TILE_M))  # the CTA's first row and column of C
        self.col0 = b.mul(tile_n, i64(TILE_N))
        self.warp_m = b.udiv(warp, i64(WARPS_N))
        self.warp_n = b.urem(warp, i64(WARPS_N))
        self.wrow0 = b.add(self.row0, b.mul(self.warp_m, i64(WARP_M)))  # the warp's
        self.wcol0 = b.add(self.col0, b.mul(self.warp_n, i64(WARP_N)))
        self.a = b.add(w["a"], b.mul(batch, b.shl(w["asb"], i64(1))))  # byte addresses
        self.bm = b.add(w["b"], b.mul(batch, b.shl(w["bsb"], i64(1))))
        self.c = b.add(w["c"], b.mul(batch, b.shl(w["csb"], i64(1))))

    def _cells(self):
        return (cell for row in self.acc for frag in row for cell in frag)

    def intrinsic(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name)
        return fn

    def mma(self, a_regs: list, b_regs: list, i: int, j: int) -> None:
        b = self.b
        cells = self.acc[i][j]
        # convergent: no pass may move the warp-wide instruction into divergent code
        d = b.call(
            self.mma_asm, [*a_regs, *b_regs, *(b.load(x) for x in cells)], attrs=("convergent",)
        )
        for e, cell in enumerate(cells):
            b.store(b.extract_value(d, e), cell)

    # -- the fast path: cp.async, ldmatrix ----------------------------------------------------
    def fast_condition(self) -> ir.Value:
        """Whether the operands suit the pipeline: unit inner strides, rows and bases on 16
        bytes (uniform over the CTA: the batch offsets are in the bases)."""
        b, w = self.b, self.w
        ok = [b.icmp_signed("==", w["aks"], i64(1)), b.icmp_signed("==", w["bcs"], i64(1))]
        for word in (w["ars"], w["brs"]):
            ok.append(b.icmp_signed("==", b.and_(word, i64(7)), i64(0)))
        for address in (self.a, self.bm):
            ok.append(b.icmp_signed("==", b.and_(address, i64(CHUNK - 1)), i64(0)))
        out = ok[0]
        for x in ok[1:]:
            out = b.and_(out, x)
        return out

    def fast(self) -> None:
        b, w = self.b, self.w
        tile_k, stages = self.tile_k, self.stages
        a_row_bytes_s, stage = a_row(tile_k), stage_bytes(tile_k)  # shared memory's
        # one external array of 0 bytes, no initializer: `.extern .shared`, sized at launch
        gv = self.module.globals.get(SHARED)
        if gv is None:
            gv = ir.GlobalVariable(self.module, ir.ArrayType(I8, 0), SHARED, 3)
            gv.linkage = "external"
            gv.align = SHARED_ALIGN
        b_first = stages * stage  # B's stages after A's
        shared_ptr = I8.as_pointer(3)
        copy = self.intrinsic(
            "llvm.nvvm.cp.async.cg.shared.global.16.s", ir.VoidType(),
            [shared_ptr, I8.as_pointer(1), I32],
        )  # fmt: skip
        commit = self.intrinsic("llvm.nvvm.cp.async.commit.group", ir.VoidType(), [])
        wait = self.intrinsic("llvm.nvvm.cp.async.wait.group", ir.VoidType(), [I32])
        quad = ir.LiteralStructType([I32] * 4)
        ldmatrix = self.intrinsic("llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16", quad, [shared_ptr])
        ldmatrix_t = self.intrinsic(
            "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16", quad, [shared_ptr]
        )
        tid, lane = self.tid, self.lane
        m, n, k = w["m"], w["n"], w["k"]

        def at(operand: str, offset: ir.Value) -> ir.Value:
            if operand == "b":
                offset = b.add(offset, i64(b_first))
            return b.gep(gv, [i64(0), offset])

        def swizzle(row: ir.Value) -> ir.Value:
            """The chunk XOR of A's row: (row / rows per 128-byte line) % chunks per line."""
            if a_per_row >= 8:
                return b.and_(row, i64(7))
            shift = (8 // a_per_row).bit_length() - 1
            return b.and_(b.lshr(row, i64(shift)), i64(a_per_row - 1))

        def clamp_bytes(left: ir.Value) -> ir.Value:
            """min(max(left, 0), 8) elements as bytes (i32): a copy's src-size."""
            left = b.select(b.icmp_signed("<", left, i64(0)), i64(0), left)
            left = b.select(b.icmp_signed("<", left, i64(8)), left, i64(8))
            return b.trunc(b.shl(left, i64(1)), I32)

        # Copies: thread t takes A's chunk t % c of rows t / c + 128 i / c (c = tile_k / 8
        # chunks a row), and B's chunk t % 16 of rows t / 16 + 8 i (i < tile_k / 8); each
        # quarter-warp stores a whole 128-byte line of shared memory.
        a_per_row, b_per_row = a_row_bytes_s // CHUNK, B_ROW // CHUNK
        copies = TILE_M * a_per_row // THREADS
        a_chunk, a_row0 = b.urem(tid, i64(a_per_row)), b.udiv(tid, i64(a_per_row))
        a_store = b.add(
            b.mul(a_row0, i64(a_row_bytes_s)),
            b.mul(b.xor(a_chunk, swizzle(a_row0)), i64(CHUNK)),
        )
        a_step = THREADS // a_per_row * a_row_bytes_s  # bytes between copy i and i + 1
        a_first = b.add(self.row0, a_row0)
        a_left = b.sub(m, a_first)  # rows of A from copy 0's: copy i's is inside below it

        def a_ok(i: int) -> ir.Value:
            return b.icmp_signed("<", i64(THREADS // a_per_row * i), a_left)

        a_row_bytes = b.shl(w["ars"], i64(1))
        a_src = b.add(self.a, b.add(b.mul(a_first, a_row_bytes), b.mul(a_chunk, i64(CHUNK))))
        a_next = b.mul(a_row_bytes, i64(THREADS // a_per_row))  # from copy i's row to i + 1's
        b_chunk, b_row = b.urem(tid, i64(b_per_row)), b.udiv(tid, i64(b_per_row))
        b_store = b.add(
            b.mul(b_row, i64(B_ROW)),
            b.mul(b.xor(b_chunk, b.and_(b_row, i64(7))), i64(CHUNK)),
        )
        b_step = THREADS // b_per_row * B_ROW
        b_col = b.add(self.col0, b.mul(b_chunk, i64(8)))
        b_bytes = clamp_bytes(b.sub(n, b_col))  # the same for every row
        zero32 = ir.Constant(I32, 0)
        b_col = b.select(b.icmp_signed("==", b_bytes, zero32), i64(0), b_col)  # in the data
        b_row_bytes = b.shl(w["brs"], i64(1))
        b_src = b.add(b.add(self.bm, b.shl(b_col, i64(1))), b.mul(b_row, b_row_bytes))
        b_next = b.mul(b_row_bytes, i64(THREADS // b_per_row))  # bytes from copy i to i + 1

        def issue(dst, src, size):
            b.call(copy, [dst, b.inttoptr(src, I8.as_pointer(1)), size])

        def load_a(tile: ir.Value, offset: ir.Value) -> None:
            """Issue the copies of A's part of K tile `tile` into the stage at byte offset
            `offset`: each copy from inside A, its src-size cut (to zero) past M and K."""
            k0 = b.mul(tile, i64(tile_k))
            a_at = at("a", b.add(offset, a_store))
            dst = [b.gep(a_at, [i64(a_step * i)]) for i in range(copies)]  # [%rd+imm]
            inside = b.icmp_signed("<=", b.add(k0, i64(tile_k)), k)
            with b.if_else(inside) as (whole, edge):
                with whole:  # every K of the tile: rows past M zeros, from A's first element
                    src = b.add(a_src, b.shl(k0, i64(1)))
                    for i in range(copies):
                        ok = a_ok(i)
                        size = b.select(ok, ir.Constant(I32, CHUNK), zero32)
                        issue(dst[i], b.select(ok, src, self.a), size)
                        src = b.add(src, a_next)
                with edge:  # the last tile, past K: pieces of the rows cut
                    a_bytes = clamp_bytes(b.sub(k, b.add(k0, b.mul(a_chunk, i64(8)))))
                    src = b.add(a_src, b.shl(k0, i64(1)))
                    for i in range(copies):
                        size = b.select(a_ok(i), a_bytes, zero32)
                        issue(
                            dst[i], b.select(b.icmp_signed("==", size, zero32), self.a, src), size
                        )
                        src = b.add(src, a_next)

        def load_b(tile: ir.Value, offset: ir.Value) -> None:
            """The same for B's part: columns past N and rows past K cut."""
            k0 = b.mul(tile, i64(tile_k))
            b_at = at("b", b.add(offset, b_store))
            dst = [b.gep(b_at, [i64(b_step * i)]) for i in range(copies)]
            inside = b.icmp_signed("<=", b.add(k0, i64(tile_k)), k)
            src = b.add(b_src, b.mul(k0, b_row_bytes))
            with b.if_else(inside) as (whole, edge):
                with whole:  # every K of the tile: the sizes are the columns'
                    at_i = src
                    for i in range(copies):
                        issue(dst[i], at_i, b_bytes)
                        at_i = b.add(at_i, b_next)
                with edge:  # the last tile: rows past K cut
                    at_i = src
                    b_left = b.sub(k, b.add(k0, b_row))  # rows of B from copy 0's
                    for i in range(copies):
                        ok = b.icmp_signed("<", i64(THREADS // b_per_row * i), b_left)
                        issue(dst[i], b.select(ok, at_i, self.bm), b.select(ok, b_bytes, zero32))
                        at_i = b.add(at_i, b_next)

        def load_tile(tile: ir.Value, offset: ir.Value) -> None:
            load_a(tile, offset)
            load_b(tile, offset)

        # ldmatrix addresses: lane l gives row l % 8 + 8 ((l / 8) % 2) of the 16 x 16 block,
        # at its chunk (l / 16) (A: of K, B: of N); the swizzle is the row's, as stored.
        lo8, hi = b.and_(lane, i64(7)), b.lshr(lane, i64(4))
        frag_row = b.add(lo8, b.mul(b.and_(b.lshr(lane, i64(3)), i64(1)), i64(8)))
        a_base = b.mul(b.add(b.mul(self.warp_m, i64(WARP_M)), frag_row), i64(a_row_bytes_s))
        a_swz = swizzle(frag_row)  # the row's: 16-row blocks start on a multiple of 8 rows
        # Step s's chunk (hi + 2 s) ^ swizzle is (hi ^ swizzle) ^ 2 s (hi is bit 0): the
        # reads of a step are the first step's with 32 s XORed into the bytes, which stay
        # within the row (and a stage and a row start on a multiple of a row's bytes), so
        # one address a tile serves every step: none held across the loop for each.
        a_read = b.add(a_base, b.mul(b.xor(hi, a_swz), i64(CHUNK)))
        b_base = b.add(b.mul(frag_row, i64(B_ROW)), b.mul(self.warp_n, i64(WARP_N // 8 * CHUNK)))
        b_read = b.add(b_base, b.mul(b.xor(hi, lo8), i64(CHUNK)))  # pair p: XOR 32 p

        def fragments(offset: ir.Value, s: int) -> tuple[list, list]:
            """Step s's A (FRAG_M x 4 words) and B (FRAG_N x 2 words) from the stage at
            `offset`."""
            a_regs, b_regs = [], []
            a_step = b.xor(b.add(offset, a_read), i64(2 * CHUNK * s))
            for i in range(FRAG_M):
                ptr = at("a", b.add(a_step, i64(16 * a_row_bytes_s * i)))
                q = b.call(ldmatrix, [ptr])
                a_regs.append([b.extract_value(q, e) for e in range(4)])
            b_stage = b.add(offset, b_read)
            for p in range(FRAG_N // 2):
                ptr = at("b", b.add(b.xor(b_stage, i64(2 * CHUNK * p)), i64(STEP * B_ROW * s)))
                q = b.call(ldmatrix_t, [ptr])
                words = [b.extract_value(q, e) for e in range(4)]
                b_regs += [words[:2], words[2:]]
            return a_regs, b_regs

        def next_stage(offset: ir.Value) -> ir.Value:
            after = b.add(offset, i64(stage))
            wrap = b.icmp_signed("==", after, i64(stages * stage))
            return b.select(wrap, i64(0), after)

        ktiles = b.udiv(b.add(k, i64(tile_k - 1)), i64(tile_k))
        for s in range(stages - 1):  # the prologue: tiles 0 .. stages - 2
            with b.if_then(b.icmp_signed("<", i64(s), ktiles)):
                load_tile(i64(s), i64(s * stage))
            b.call(commit, [])
        b.call(wait, [ir.Constant(I32, stages - 2)])
        barrier(b)
        held, read_at = self.held, self.read_at  # step 0's fragments, the stage read

        def flat(a_regs, b_regs) -> list:
            return [x for r in a_regs for x in r] + [x for r in b_regs for x in r]

        def unflat(values) -> tuple[list, list]:
            a_part, b_part = values[: 4 * FRAG_M], values[4 * FRAG_M :]
            return (
                [a_part[4 * i : 4 * i + 4] for i in range(FRAG_M)],
                [b_part[2 * j : 2 * j + 2] for j in range(FRAG_N)],
            )

        for cell, value in zip(held, flat(*fragments(i64(0), 0)), strict=True):
            b.store(value, cell)
        b.store(i64(0), read_at)
        steps = tile_k // STEP
        # the refill: A's copies in step 0, B's halfway through the tile (not in its last
        # step, which starts the next tile), so fewer of their addresses live at once
        refill = {0: load_a, steps // 2: load_b} if steps > 2 else {0: load_tile}

        def tile_body(t: ir.Value) -> None:
            reading = b.load(read_at)
            current = unflat([b.load(x) for x in held])
            for s in range(steps):
                if s + 1 < steps:
                    upcoming = fragments(reading, s + 1)
                else:  # the next tile's first step: once its copies are in, after a barrier
                    b.call(wait, [ir.Constant(I32, stages - 2)])
                    barrier(b)
                    reading = next_stage(reading)
                    b.store(reading, read_at)
                    upcoming = fragments(reading, 0)
                if s in refill:  # refill the stage every warp finished reading before the
                    # barrier: the one before the stage read (read_at is not moved on yet)
                    first = b.icmp_signed("==", b.load(read_at), i64(0))
                    target = b.select(
                        first, i64((stages - 1) * stage), b.sub(b.load(read_at), i64(stage))
                    )
                    ahead = b.add(t, i64(stages - 1))
                    with b.if_then(b.icmp_signed("<", ahead, ktiles)):
                        refill[s](ahead, target)
                    if s == max(refill):
                        b.call(commit, [])
                a_regs, b_regs = current
                for i in range(FRAG_M):
                    for j in range(FRAG_N):
                        self.mma(a_regs[i], b_regs[j], i, j)
                current = upcoming
            for cell, value in zip(held, flat(*current), strict=True):
                b.store(value, cell)

        LoopBuilder(b).counted(i64(0), ktiles, 1, tile_body, "kt")
        b.call(wait, [zero32])  # nothing left in flight at the exit

    # -- the fallback: fragments straight from global memory ----------------------------------
    def direct(self) -> None:
        """The warp's tile in DIRECT_PASSES strips of columns, each its own walk along K and
        store of C: fewer accumulators live at once, for the loads' addresses."""
        b, w = self.b, self.w
        t = I16.as_pointer()
        a = b.inttoptr(self.a, t)
        bm = b.inttoptr(self.bm, t)
        pair = b.mul(self.member, i64(2))
        frags = FRAG_N // DIRECT_PASSES

        def element(base, r, col, limit_r, limit_c, rs, cs) -> ir.Value:
            """base[r, col] as 32 bits, 0 outside [0, limit_r) x [0, limit_c): no load there."""
            inside = b.and_(b.icmp_signed("<", r, limit_r), b.icmp_signed("<", col, limit_c))
            at = b.add(
                b.mul(b.select(inside, r, i64(0)), rs), b.mul(b.select(inside, col, i64(0)), cs)
            )
            return b.zext(b.select(inside, b.load(b.gep(base, [at])), ir.Constant(I16, 0)), I32)

        def packed(low: ir.Value, high: ir.Value) -> ir.Value:
            return b.or_(low, b.shl(high, ir.Constant(I32, 16)))  # element i in the low half

        def strip(index: ir.Value) -> None:
            col0 = b.add(self.wcol0, b.mul(index, i64(8 * frags)))
            for i in range(FRAG_M):
                for j in range(frags):
                    for cell in self.acc[i][j]:
                        b.store(ir.Constant(F32, 0.0), cell)

            def kstep(s):
                k0 = b.add(b.mul(s, i64(STEP)), pair)
                a_regs = []
                for i in range(FRAG_M):
                    rows = [b.add(self.wrow0, b.add(self.group, i64(16 * i + h))) for h in (0, 8)]
                    regs = []
                    for extra, r in ((0, rows[0]), (0, rows[1]), (8, rows[0]), (8, rows[1])):
                        cols = [b.add(k0, i64(extra + d)) for d in (0, 1)]
                        regs.append(
                            packed(
                                *(
                                    element(a, r, c, w["m"], w["k"], w["ars"], w["aks"])
                                    for c in cols
                                )
                            )
                        )
                    a_regs.append(regs)
                for j in range(frags):
                    col = b.add(col0, b.add(self.group, i64(8 * j)))
                    b_regs = []
                    for extra in (0, 8):
                        ks = [b.add(k0, i64(extra + d)) for d in (0, 1)]
                        b_regs.append(
                            packed(
                                *(
                                    element(bm, x, col, w["k"], w["n"], w["brs"], w["bcs"])
                                    for x in ks
                                )
                            )
                        )
                    for i in range(FRAG_M):
                        self.mma(a_regs[i], b_regs, i, j)

            ksteps = b.udiv(b.add(w["k"], i64(STEP - 1)), i64(STEP))
            LoopBuilder(b).counted(i64(0), ksteps, 1, kstep, "ks")
            self.store(frags, col0)

        LoopBuilder(b).counted(i64(0), i64(DIRECT_PASSES), 1, strip, "strip")

    # -- C ------------------------------------------------------------------------------------
    def store(self, frags: int, col0: ir.Value) -> None:
        store_c(self.b, self.w, self.c, self.acc, (self.wrow0, col0), self.lane, frags, self.dtype)


def store_c(
    b: ir.IRBuilder,
    w: dict,
    c_address: ir.Value,
    acc: list,
    origin: tuple[ir.Value, ir.Value],
    lane: ir.Value,
    frags: int,
    dtype: DType,
) -> None:
    """C from a warp's accumulator cells acc[i][j][0..3] in the m16n8 layout (mma.sync's,
    and each warp's quarter of a wgmma's): fragment (i, j) covers rows origin[0] + 16 i +
    lane / 4 (+ 8) and columns origin[1] + 8 j + 2 (lane % 4) (+ 1), for j < `frags`. Each
    value is rounded to the dtype, two at once (4 bytes) where C allows it."""
    row0, col0 = origin
    c = b.inttoptr(c_address, I16.as_pointer(1))
    c_pairs = b.inttoptr(c_address, I32.as_pointer(1))
    pairs_ok = b.icmp_signed(
        "==", b.and_(b.or_(c_address, b.shl(w["ldc"], i64(1))), i64(3)), i64(0)
    )
    group, pair = b.lshr(lane, i64(2)), b.mul(b.and_(lane, i64(3)), i64(2))

    def bits(value: ir.Value) -> ir.Value:
        return b.bitcast(narrow(b, value, dtype), I16)

    for i, row_cells in enumerate(acc):
        for h in (0, 1):
            r = b.add(row0, b.add(group, i64(16 * i + 8 * h)))
            with b.if_then(b.icmp_signed("<", r, w["m"])):
                line = b.mul(r, w["ldc"])
                for j in range(frags):
                    col = b.add(col0, b.add(pair, i64(8 * j)))
                    low_cell, high_cell = row_cells[j][2 * h : 2 * h + 2]
                    at = b.add(line, col)
                    both = b.and_(pairs_ok, b.icmp_signed("<", b.add(col, i64(1)), w["n"]))
                    with b.if_else(both) as (whole, parts):
                        with whole:
                            low = b.zext(bits(b.load(low_cell)), I32)
                            high = b.zext(bits(b.load(high_cell)), I32)
                            word = b.or_(low, b.shl(high, ir.Constant(I32, 16)))
                            b.store(word, b.gep(c_pairs, [b.ashr(at, i64(1))]), align=4)
                        with parts:
                            for d, cell in ((0, low_cell), (1, high_cell)):
                                inside = b.icmp_signed("<", b.add(col, i64(d)), w["n"])
                                with b.if_then(inside):
                                    target = b.gep(c, [b.add(at, i64(d))])
                                    b.store(bits(b.load(cell)), target, align=2)


def build_module(dtype: DType, tile_k: int = TILE_K, stages: int = STAGES) -> ir.Module:
    """The NVPTX module with the `ptx_kernel` entry symbol(dtype), walking K in tiles of
    `tile_k` through `stages` stages: launched with shared_bytes(tile_k, stages) of
    dynamic shared memory."""
    module, fn, w = entry_function(symbol(dtype))
    e = _Emitter(module, fn, w, dtype, tile_k, stages)
    b = e.b
    with b.if_else(e.fast_condition()) as (fast, direct):
        with fast:
            e.fast()
            e.store(FRAG_N, e.wcol0)
        with direct:
            e.direct()
    b.ret_void()
    return module
