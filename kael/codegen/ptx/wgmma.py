"""Matrix products of float16 and bfloat16 on Hopper's warpgroup tensor cores
(`wgmma.mma_async`, sm_90a): the kernel for operands whose rows lie contiguous along K or
along M/N, which is every plain, transposed or batched matrix PyTorch programs multiply.

A CTA of WARPGROUPS = 2 warpgroups (256 threads) computes a TILE_M x tile_n = 128 x 256
tile of C: warpgroup g its rows 64 g .. 64 g + 63, with one `wgmma.mma_async.sync.aligned.
m64n256k16.f32.{f16,bf16}` per step of 16 along K (tile_n / 2 = 128 float32 accumulators a
thread, rounded to the dtype once at the end as mma.py's kernel does). Both operands come
from shared memory through matrix descriptors; nothing is staged in registers, which is
what lets wgmma keep the tensor cores busy where mma.sync (ptx/mma.py) needs ldmatrix per
product and reaches about half of them on sm_90.

Shared memory holds `stages` K tiles of TILE_K = 64 of both operands, each in the canonical
128-byte-swizzled layout of the PTX ISA ("Matrix Descriptor" and the shared memory layouts
of wgmma; CUTLASS's GMMA atoms): lines of 128 bytes (64 elements), the 16-byte chunk c of
line l stored at chunk c ^ (l % 8), every stage and operand on a multiple of ATOM = 1024
bytes. An operand tile of R rows (of M or N) is R lines either way:
- K-major (the matrix's K elements contiguous, like A row-major and B = W.t()): line r is
  row r's 64 K; descriptor SBO = 1024 (8 rows), and step s of 16 starts 32 s bytes on;
- MN-major (M or N contiguous: B row-major, A transposed): line 64 j + k holds elements
  64 j .. 64 j + 63 of K row k; LBO = 64 lines (between blocks of 64 along M/N), SBO =
  1024 (8 K rows), step s starts 2048 s bytes on, imm-trans 1.
Every thread copies its 16-byte chunks with cp.async (chunk tid % 8 of lines tid / 8 + 32 i:
the same swizzle for all of them), cut by src-size (to zero) past M, N or K, so every size
is exact. The pipeline: before K tile t, `cp.async.wait_group stages - 3`,
`fence.proxy.async` (cp.async writes through the generic proxy, wgmma reads through the
async one) and a barrier; four wgmma, `wgmma.commit_group`, `wgmma.wait_group 1` (tile t - 1
done: each tile's products overlap the next one's issue); then the copies of tile
t + stages - 2 into the stage tile t - 2 used, which every warpgroup finished before the
barrier. CTAs walk the grid GROUP_M tile rows at a time, as mma.py's do.

The host (gemm.matmul) takes this kernel on a device of compute capability 9.0 for operands
`layout` accepts, the mma.sync kernel for any other; both round the same float32 sums.
It is off by default (gemm.wgmma_enabled: KAEL_CUDA_WGMMA=1) until a device has checked
it: the emulated device runs it right, but it models the descriptors' layouts from the
PTX ISA, and no sm_90 has run this kernel yet. benchmarks/bench_gpu_matmul.py checks
every variant's values against PyTorch's on a device and times them.
"""

from __future__ import annotations

from typing import NamedTuple

from llvmlite import ir

from kael.codegen.cpu.loops import LoopBuilder
from kael.codegen.lowering import i64
from kael.codegen.ptx.gemm import entry_function
from kael.codegen.ptx.kernel import sreg
from kael.codegen.ptx.mma import store_c
from kael.codegen.ptx.warp import barrier, grouped_tile, launch_bounds
from kael.runtime.dtypes import DType, float16

I1, I8, I32, I64, F32 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64), ir.FloatType()
ARCH = "sm_90a"  # wgmma is one of sm_90's own instructions: code for exactly that GPU
TILE_M = 128
TILE_N = 256  # the default tile of N: one m64n256 product a warpgroup and step
TILE_K = 64  # K per stage: one 128-byte line of a K-major row
STAGES = 4  # 4 x 48 KB
WARPGROUPS = TILE_M // 64
THREADS = 128 * WARPGROUPS
LINE = 128  # bytes per line of the 128-byte swizzle
CHUNK = 16  # bytes per cp.async copy
ATOM = 8 * LINE  # the swizzle's repeat: stages and operands start on one
BLOCK = LINE // 2  # elements per line
STEP = 16  # K per wgmma
GROUP_M = 8
SHARED = "kael_wgmma_shared"
LINES_PER_PASS = THREADS // (LINE // CHUNK)  # lines one copy of every thread fills: 32


class Layout(NamedTuple):
    """Which of each operand's dimensions is contiguous: K (k_major) or M / N."""

    a_k_major: bool
    b_k_major: bool

    @property
    def name(self) -> str:
        return "".join("k" if x else "mn" for x in self)


class Variant(NamedTuple):
    """One compiled kernel: dtype, operand layout, tile of N and pipeline depth."""

    dtype: DType
    layout: Layout
    tile_n: int = TILE_N
    stages: int = STAGES

    @property
    def symbol(self) -> str:
        return f"kael_gemm_wgmma_{self.dtype.name}_{self.layout.name}_{self.tile_n}x{self.stages}"

    @property
    def shared_bytes(self) -> int:
        """Dynamic shared memory a launch takes: the stages, plus an ATOM to align them."""
        return self.stages * (TILE_M + self.tile_n) * LINE + ATOM


def check_variant(v: Variant) -> None:
    if v.tile_n not in (64, 128, 256) or v.stages < 3:
        raise ValueError(f"no wgmma kernel of N tiles of {v.tile_n} in {v.stages} stages")


def layout(a_strides: tuple[int, int], b_strides: tuple[int, int]) -> Layout | None:
    """The kernel's operand layout for A (M x K) and B (K x N) of these element strides, or
    None where a row of either is not contiguous along K or M/N on 16 bytes."""

    def k_major(k_stride: int, other: int) -> bool | None:
        if k_stride == 1 and other % 8 == 0:
            return True
        if other == 1 and k_stride % 8 == 0:
            return False
        return None

    a = k_major(a_strides[1], a_strides[0])
    b = k_major(b_strides[0], b_strides[1])
    return None if a is None or b is None else Layout(a, b)


class _Operand(NamedTuple):
    """One operand as the copies see it: its (batch's) byte address, bytes between its
    strided lines, extent along M or N, first row or column of the CTA's tile, rows in
    the tile, whether K is contiguous, and its byte offset in a stage."""

    base: ir.Value
    stride: ir.Value
    extent: ir.Value
    origin: ir.Value
    rows: int
    k_major: bool
    offset: int


class _Emitter:
    def __init__(self, module: ir.Module, fn: ir.Function, w: dict, v: Variant) -> None:
        check_variant(v)
        self.module, self.w, self.v = module, w, v
        self.stage_bytes = (TILE_M + v.tile_n) * LINE
        self.b = b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.cells = [b.alloca(F32, name=f"acc{e}") for e in range(v.tile_n // 2)]
        for cell in self.cells:
            b.store(ir.Constant(F32, 0.0), cell)
        self.stage_at = b.alloca(I64, name="stage_at")
        self.tid = tid = sreg(b, "tid.x")
        self.lane = b.urem(tid, i64(32))
        self.group = b.udiv(tid, i64(128))  # the warpgroup
        block = sreg(b, "ctaid.x")
        tiles = b.mul(w["tiles_m"], w["tiles_n"])
        batch, rest = b.udiv(block, tiles), b.urem(block, tiles)
        tile_m, tile_n = grouped_tile(b, rest, w["tiles_m"], w["tiles_n"], GROUP_M)
        self.row0, self.col0 = b.mul(tile_m, i64(TILE_M)), b.mul(tile_n, i64(v.tile_n))
        a = b.add(w["a"], b.mul(batch, b.shl(w["asb"], i64(1))))  # byte addresses
        bm = b.add(w["b"], b.mul(batch, b.shl(w["bsb"], i64(1))))
        self.c = b.add(w["c"], b.mul(batch, b.shl(w["csb"], i64(1))))
        ka, kb = v.layout
        self.a = _Operand(
            a, b.shl(w["ars" if ka else "aks"], i64(1)), w["m"], self.row0, TILE_M, ka, 0
        )
        self.bm = _Operand(
            bm, b.shl(w["bcs" if kb else "brs"], i64(1)), w["n"], self.col0, v.tile_n, kb,
            TILE_M * LINE,
        )  # fmt: skip
        gv = ir.GlobalVariable(module, ir.ArrayType(I8, 0), SHARED, 3)
        gv.linkage = "external"
        gv.align = CHUNK
        self.shared = gv
        raw = b.ptrtoint(gv, I64)
        aligned = b.and_(b.add(raw, i64(ATOM - 1)), i64(-ATOM))
        self.pad = b.sub(aligned, raw)  # from the array's start to the first stage
        self.stages_at = aligned  # the first stage's shared-window address

    def asm(self, text: str, args: list | None = None, types: list | None = None) -> None:
        fn = ir.InlineAsm(ir.FunctionType(ir.VoidType(), types or []), text, "", True)
        self.b.call(fn, args or [], attrs=("convergent",))

    def intrinsic(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name)
        return fn

    # -- the copies ---------------------------------------------------------------------------
    def copier(self, op: _Operand):
        """A function (tile, stage offset) issuing this thread's copies of `op`'s part of K
        tile `tile` into the stage at that byte offset from the first."""
        b, w = self.b, self.w
        copy = self.intrinsic(
            "llvm.nvvm.cp.async.cg.shared.global.16.s", ir.VoidType(),
            [I8.as_pointer(3), I8.as_pointer(1), I32],
        )  # fmt: skip
        chunk = b.urem(self.tid, i64(LINE // CHUNK))
        line0 = b.udiv(self.tid, i64(LINE // CHUNK))
        swizzled = b.mul(b.xor(chunk, b.and_(line0, i64(7))), i64(CHUNK))
        store0 = b.add(b.add(self.pad, i64(op.offset)), b.add(b.mul(line0, i64(LINE)), swizzled))
        copies = op.rows // LINES_PER_PASS
        zero32 = ir.Constant(I32, 0)

        def clamp_bytes(left: ir.Value) -> ir.Value:
            """min(max(left, 0), 8) elements as bytes (i32): a copy's src-size."""
            left = b.select(b.icmp_signed("<", left, i64(0)), i64(0), left)
            left = b.select(b.icmp_signed("<", left, i64(BLOCK // 8)), left, i64(BLOCK // 8))
            return b.trunc(b.shl(left, i64(1)), I32)

        k = w["k"]
        if op.k_major:
            # line i's row origin + line0 + 32 i, its elements k0 + 8 chunk ..
            first, first_k = b.add(op.origin, line0), b.mul(chunk, i64(8))
            src0 = b.add(op.base, b.add(b.mul(first, op.stride), b.shl(first_k, i64(1))))
            left = b.sub(op.extent, first)
            rows_ok = [b.icmp_signed("<", i64(LINES_PER_PASS * i), left) for i in range(copies)]
        else:
            # line i is K row line0 + 32 (i % 2) of block i / 2: elements origin + 64 (i / 2)
            # + 8 chunk .., cut at the extent
            col = b.add(op.origin, b.mul(chunk, i64(8)))
            sizes = [
                clamp_bytes(b.sub(op.extent, b.add(col, i64(BLOCK * (i // 2)))))
                for i in range(copies)
            ]
            src0 = b.add(op.base, b.add(b.mul(line0, op.stride), b.shl(col, i64(1))))

        def issue(tile: ir.Value, offset: ir.Value) -> None:
            k0 = b.mul(tile, i64(TILE_K))
            dst0 = b.add(offset, store0)
            whole = b.icmp_signed("<=", b.add(k0, i64(TILE_K)), k)
            for i in range(copies):
                dst = b.gep(self.shared, [i64(0), b.add(dst0, i64(LINES_PER_PASS * LINE * i))])
                if op.k_major:
                    src = b.add(
                        src0, b.add(b.mul(i64(LINES_PER_PASS * i), op.stride), b.shl(k0, i64(1)))
                    )
                    cut = clamp_bytes(b.sub(k, b.add(k0, first_k)))
                    size = b.select(whole, ir.Constant(I32, CHUNK), cut)
                    size = b.select(rows_ok[i], size, zero32)
                else:
                    kr = b.add(k0, b.add(line0, i64(LINES_PER_PASS * (i % 2))))
                    src = b.add(
                        src0,
                        b.add(
                            b.mul(b.add(k0, i64(LINES_PER_PASS * (i % 2))), op.stride),
                            i64(2 * BLOCK * (i // 2)),
                        ),
                    )
                    size = b.select(b.icmp_signed("<", kr, k), sizes[i], zero32)
                src = b.select(b.icmp_signed("==", size, zero32), op.base, src)  # in the data
                b.call(copy, [dst, b.inttoptr(src, I8.as_pointer(1)), size])

        return issue

    # -- the products -------------------------------------------------------------------------
    def descriptors(self, op: _Operand, row_offset: int) -> tuple[ir.Value, int, int]:
        """(the descriptor of step 0 of the stage at offset 0, minus its address field's
        stage part; bytes per step; bytes per row of 64 along M/N) for `op`'s rows from
        row_offset (a multiple of 64)."""
        if op.k_major:
            lbo, sbo, step, block = CHUNK, ATOM, 2 * STEP, 64 * LINE
        else:
            lbo, sbo, step, block = BLOCK * LINE, ATOM, STEP * LINE, BLOCK * LINE
        high = ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (1 << 62)
        start = op.offset + row_offset // 64 * block
        return high, start, step

    def wgmma(self, desc_a: ir.Value, desc_b: ir.Value) -> None:
        b, v = self.b, self.v
        n = v.tile_n // 2
        kind = "f16" if v.dtype is float16 else "bf16"
        ta, tb = (0 if x else 1 for x in v.layout)
        regs = ",".join(f"${i}" for i in range(n))
        text = (
            f"wgmma.mma_async.sync.aligned.m64n{v.tile_n}k16.f32.{kind}.{kind} "
            f"{{{regs}}}, ${n}, ${n + 1}, ${n + 2}, 1, 1, {ta}, {tb};"
        )
        constraints = ",".join(["=f"] * n + ["l", "l", "b"] + [str(i) for i in range(n)])
        fn = ir.InlineAsm(
            ir.FunctionType(ir.LiteralStructType([F32] * n), [I64, I64, I1] + [F32] * n),
            text, constraints, side_effect=True,
        )  # fmt: skip
        old = [b.load(cell) for cell in self.cells]
        out = b.call(fn, [desc_a, desc_b, ir.Constant(I1, 1), *old], attrs=("convergent",))
        for e, cell in enumerate(self.cells):
            b.store(b.extract_value(out, e), cell)

    def main_loop(self) -> None:
        b, w, v = self.b, self.w, self.v
        stages, stage_bytes = v.stages, self.stage_bytes
        commit = self.intrinsic("llvm.nvvm.cp.async.commit.group", ir.VoidType(), [])
        wait = self.intrinsic("llvm.nvvm.cp.async.wait.group", ir.VoidType(), [I32])
        load_a, load_b = self.copier(self.a), self.copier(self.bm)

        def load(tile: ir.Value, offset: ir.Value) -> None:
            load_a(tile, offset)
            load_b(tile, offset)

        # at least one tile (all zeros where K is 0): the loop always runs, so no path
        # around it merges other values into the accumulators, whose copies before the
        # final wgmma.wait_group would make ptxas serialize every wgmma
        ktiles = b.udiv(b.add(w["k"], i64(TILE_K - 1)), i64(TILE_K))
        ktiles = b.select(b.icmp_signed("<", ktiles, i64(1)), i64(1), ktiles)
        for s in range(stages - 2):  # the prologue: tiles 0 .. stages - 3
            with b.if_then(b.icmp_signed("<", i64(s), ktiles)):
                load(i64(s), i64(s * stage_bytes))
            b.call(commit, [])
        b.store(i64(0), self.stage_at)
        a_high, a_start, a_step = self.descriptors(self.a, 0)
        b_high, b_start, b_step = self.descriptors(self.bm, 0)
        a_rows = b.mul(self.group, i64(64 * LINE if self.a.k_major else BLOCK * LINE))
        a_desc0 = b.add(
            b.or_(i64(a_high), b.lshr(b.add(self.stages_at, a_rows), i64(4))), i64(a_start >> 4)
        )
        b_desc0 = b.add(b.or_(i64(b_high), b.lshr(self.stages_at, i64(4))), i64(b_start >> 4))

        def tile_body(t: ir.Value) -> None:
            b.call(wait, [ir.Constant(I32, stages - 3)])
            self.asm("fence.proxy.async.shared::cta;")
            barrier(b)
            at = b.load(self.stage_at)
            field = b.lshr(at, i64(4))
            self.asm("wgmma.fence.sync.aligned;")
            for s in range(TILE_K // STEP):
                desc_a = b.add(a_desc0, b.add(field, i64(a_step * s >> 4)))
                desc_b = b.add(b_desc0, b.add(field, i64(b_step * s >> 4)))
                self.wgmma(desc_a, desc_b)
            self.asm("wgmma.commit_group.sync.aligned;")
            self.asm("wgmma.wait_group.sync.aligned 1;")
            # refill the stage of tile t - 2 (t + stages - 2 modulo stages)
            back = b.sub(at, i64(2 * stage_bytes))
            target = b.select(
                b.icmp_signed("<", back, i64(0)), b.add(back, i64(stages * stage_bytes)), back
            )
            ahead = b.add(t, i64(stages - 2))
            with b.if_then(b.icmp_signed("<", ahead, ktiles)):
                load(ahead, target)
            b.call(commit, [])
            after = b.add(at, i64(stage_bytes))
            wrap = b.icmp_signed("==", after, i64(stages * stage_bytes))
            b.store(b.select(wrap, i64(0), after), self.stage_at)

        LoopBuilder(b).counted(i64(0), ktiles, 1, tile_body, "kt")
        self.wait_for_accumulators()
        b.call(wait, [ir.Constant(I32, 0)])

    def wait_for_accumulators(self) -> None:
        """`wgmma.wait_group 0` with every accumulator as its tied operand: no pass may
        move the epilogue's reads of them above the wait (CUTLASS's warpgroup_fence_operand
        does the same in C++)."""
        b, n = self.b, len(self.cells)
        fn = ir.InlineAsm(
            ir.FunctionType(ir.LiteralStructType([F32] * n), [F32] * n),
            "wgmma.wait_group.sync.aligned 0;",
            ",".join(["=f"] * n + [str(i) for i in range(n)]),
            side_effect=True,
        )
        out = b.call(fn, [b.load(cell) for cell in self.cells], attrs=("convergent",))
        for e, cell in enumerate(self.cells):
            b.store(b.extract_value(out, e), cell)

    def store(self) -> None:
        b = self.b
        warp = b.urem(b.udiv(self.tid, i64(32)), i64(4))
        row0 = b.add(self.row0, b.add(b.mul(self.group, i64(64)), b.mul(warp, i64(16))))
        frags = self.v.tile_n // 8
        acc = [[self.cells[4 * j : 4 * j + 4] for j in range(frags)]]
        store_c(b, self.w, self.c, acc, (row0, self.col0), self.lane, frags, self.v.dtype)


def build_module(v: Variant) -> ir.Module:
    """The NVPTX module (for ARCH) of the kernel `v`, entry v.symbol: launched with
    v.shared_bytes of dynamic shared memory and THREADS threads a CTA."""
    module, fn, w = entry_function(v.symbol)
    launch_bounds(fn, THREADS, 1)
    e = _Emitter(module, fn, w, v)
    e.main_loop()
    e.store()
    e.b.ret_void()
    return module
