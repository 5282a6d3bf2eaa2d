"""Matrix products of float16 and bfloat16 on the GPU's tensor cores (mma.sync, sm_80+).

A CTA of WARPS warps computes a TILE_M x TILE_N tile of C; each warp a 16 x TILE_N strip,
as SUBTILES products of `mma.sync.aligned.m16n8k16.row.col` per step of 16 along K,
accumulating in float32 (as PyTorch's cuBLAS products of half types do by default) and
rounding to the dtype once at the end (kael's `narrow`: to nearest even, the CPU's bits
for the same float32 value). Each lane loads its own fragment elements straight from
global memory in the PTX ISA's layout ("Matrix Fragments for mma.m16n8k16 with floating
point type"), zero past the matrix's edges, so any strides work. Parameters are
codegen/ptx/gemm.py's words; gemm.ptx and gemm.matmul build and launch this kernel for
the half types.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.cpu.loops import LoopBuilder
from kael.codegen.lowering import i64, narrow
from kael.codegen.ptx.gemm import entry_function
from kael.codegen.ptx.kernel import sreg
from kael.runtime.dtypes import DType, bfloat16, float16

I16, I32, I64, F32 = ir.IntType(16), ir.IntType(32), ir.IntType(64), ir.FloatType()
WARPS, SUBTILES = 4, 4
TILE_M, TILE_N, STEP = 16 * WARPS, 8 * SUBTILES, 16
THREADS = 32 * WARPS
DTYPES = (float16, bfloat16)


def symbol(dtype: DType) -> str:
    return f"kael_gemm_mma_{dtype.name}"


def instruction(dtype: DType) -> str:
    """The PTX of one warp's D = A B + C (A 16 x 16 row-major, B 16 x 8 column-major)."""
    t = "f16" if dtype is float16 else "bf16"
    return (
        f"mma.sync.aligned.m16n8k16.row.col.f32.{t}.{t}.f32 "
        "{$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};"
    )


def build_module(dtype: DType) -> ir.Module:
    """The NVPTX module with the `ptx_kernel` entry symbol(dtype)."""
    module, fn, w = entry_function(symbol(dtype))
    outputs = ir.LiteralStructType([F32] * 4)
    mma = ir.InlineAsm(
        ir.FunctionType(outputs, [I32] * 6 + [F32] * 4),
        instruction(dtype),
        "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f",
        side_effect=False,
    )

    b = ir.IRBuilder(fn.append_basic_block("entry"))
    acc = [[b.alloca(F32, name=f"acc{j}_{i}") for i in range(4)] for j in range(SUBTILES)]
    for row in acc:
        for cell in row:
            b.store(ir.Constant(F32, 0.0), cell)
    tid = sreg(b, "tid.x")
    warp, lane = b.udiv(tid, i64(32)), b.urem(tid, i64(32))
    group, member = b.lshr(lane, i64(2)), b.and_(lane, i64(3))
    block = sreg(b, "ctaid.x")
    tiles = b.mul(w["tiles_m"], w["tiles_n"])
    batch, rest = b.udiv(block, tiles), b.urem(block, tiles)
    row0 = b.add(b.mul(b.udiv(rest, w["tiles_n"]), i64(TILE_M)), b.mul(warp, i64(16)))
    col0 = b.mul(b.urem(rest, w["tiles_n"]), i64(TILE_N))
    t = I16.as_pointer()
    a = b.gep(b.inttoptr(w["a"], t), [b.mul(batch, w["asb"])])
    bm = b.gep(b.inttoptr(w["b"], t), [b.mul(batch, w["bsb"])])
    c = b.gep(b.inttoptr(w["c"], t), [b.mul(batch, w["csb"])])
    rows = (b.add(row0, group), b.add(row0, b.add(group, i64(8))))  # the fragments' two rows
    pair = b.mul(member, i64(2))  # the first of this lane's two columns (A, C) or rows (B)

    def element(base, r, col, limit_r, limit_c, rs, cs) -> ir.Value:
        """base[r, col] as 32 bits, 0 outside [0, limit_r) x [0, limit_c): no load there."""
        inside = b.and_(b.icmp_signed("<", r, limit_r), b.icmp_signed("<", col, limit_c))
        at = b.add(b.mul(b.select(inside, r, i64(0)), rs), b.mul(b.select(inside, col, i64(0)), cs))
        return b.zext(b.select(inside, b.load(b.gep(base, [at])), ir.Constant(I16, 0)), I32)

    def packed(low: ir.Value, high: ir.Value) -> ir.Value:
        return b.or_(low, b.shl(high, ir.Constant(I32, 16)))  # element i in the low half

    def kstep(s):
        k0 = b.add(b.mul(s, i64(STEP)), pair)
        a_regs = []
        for extra, r in ((0, rows[0]), (0, rows[1]), (8, rows[0]), (8, rows[1])):
            cols = [b.add(k0, i64(extra + d)) for d in (0, 1)]
            loads = [element(a, r, col, w["m"], w["k"], w["ars"], w["aks"]) for col in cols]
            a_regs.append(packed(*loads))
        for j in range(SUBTILES):
            col = b.add(col0, b.add(i64(8 * j), group))
            b_regs = []
            for extra in (0, 8):
                ks = [b.add(k0, i64(extra + d)) for d in (0, 1)]
                loads = [element(bm, kk, col, w["k"], w["n"], w["brs"], w["bcs"]) for kk in ks]
                b_regs.append(packed(*loads))
            # convergent: no pass may move the warp-wide instruction into divergent code
            d = b.call(mma, [*a_regs, *b_regs, *(b.load(x) for x in acc[j])], attrs=("convergent",))
            for i, cell in enumerate(acc[j]):
                b.store(b.extract_value(d, i), cell)

    ksteps = b.udiv(b.add(w["k"], i64(STEP - 1)), i64(STEP))
    LoopBuilder(b).counted(i64(0), ksteps, 1, kstep, "ks")
    for j in range(SUBTILES):
        for i, cell in enumerate(acc[j]):
            r = rows[i // 2]
            col = b.add(col0, b.add(i64(8 * j), b.add(pair, i64(i % 2))))
            inside = b.and_(b.icmp_signed("<", r, w["m"]), b.icmp_signed("<", col, w["n"]))
            with b.if_then(inside):
                value = narrow(b, b.load(cell), dtype)
                b.store(b.bitcast(value, I16), b.gep(c, [b.add(b.mul(r, w["ldc"]), col)]))
    b.ret_void()
    return module
