"""Matrix products on the GPU: a shared-memory tiled NVPTX kernel, one per element type.

A block of 16 x 16 threads computes a 64 x 64 tile of C; each thread keeps a 4 x 4
register tile (rows ty + 16i, columns tx + 16j, so shared-memory reads are conflict-free
and stores coalesce). K is walked in steps of 16: the block stages a 64 x 16 slice of A
and a 16 x 64 slice of B in shared memory (zero past the edges), synchronizes, and
accumulates with fma (wrapping mul and add for int64). Block b of the 1-d grid is tile
b mod (tiles) of batch b / (tiles). The parameters are 64-bit words: the addresses of
A, B, C, each operand's strides in elements, the sizes and the tile counts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from llvmlite import ir

from kael.codegen.cpu.loops import LoopBuilder
from kael.codegen.lowering import i64
from kael.codegen.ptx import compiler
from kael.codegen.ptx.kernel import DATA_LAYOUT, TRIPLE, sreg
from kael.ir.matmul import batch_dims
from kael.runtime import cuda_driver, sync
from kael.runtime.dtypes import DType, float32, float64, int64
from kael.runtime.tensor_impl import TensorImpl

I64 = ir.IntType(64)
I32 = ir.IntType(32)
TILE, STEP, SUB = 64, 16, 4  # C tile side, K step, register tile side
THREADS = (TILE // SUB) ** 2
ARGS = (
    "a", "b", "c", "ars", "aks", "asb", "brs", "bcs", "bsb", "ldc", "csb",
    "m", "n", "k", "tiles_m", "tiles_n",
)  # fmt: skip
_ELEM = {float32: ir.FloatType(), float64: ir.DoubleType(), int64: I64}


def symbol(dtype: DType) -> str:
    return f"kael_gemm_ptx_{dtype.name}"


def entry_function(name: str) -> tuple[ir.Module, ir.Function, dict[str, ir.Value]]:
    """A new NVPTX module with the `ptx_kernel` entry `name` taking ARGS' words: (module,
    function, its arguments by name)."""
    module = ir.Module(name=name)
    module.triple = TRIPLE
    module.data_layout = DATA_LAYOUT
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64] * len(ARGS)), name)
    fn.calling_convention = "ptx_kernel"
    fn.attributes.add("nounwind")
    for arg, arg_name in zip(fn.args, ARGS, strict=True):
        arg.name = arg_name
    return module, fn, dict(zip(ARGS, fn.args, strict=True))


def build_module(dtype: DType) -> ir.Module:
    """The NVPTX module with the `ptx_kernel` entry symbol(dtype)."""
    elem = _ELEM[dtype]
    module, fn, w = entry_function(symbol(dtype))
    shared = {}
    for name in ("As", "Bs"):
        gv = ir.GlobalVariable(module, ir.ArrayType(elem, TILE * STEP), name, addrspace=3)
        gv.linkage = "internal"
        gv.align = 16
        shared[name] = gv
    barrier = ir.Function(
        module, ir.FunctionType(ir.VoidType(), [I32]), "llvm.nvvm.barrier.cta.sync.aligned.all"
    )
    is_float = dtype.is_floating_point
    fma = (
        ir.Function(
            module,
            ir.FunctionType(elem, [elem] * 3),
            f"llvm.fma.{'f32' if dtype is float32 else 'f64'}",
        )
        if is_float
        else None
    )
    zero = ir.Constant(elem, 0.0 if is_float else 0)

    b = ir.IRBuilder(fn.append_basic_block("entry"))
    acc = [[b.alloca(elem, name=f"acc{i}{j}") for j in range(SUB)] for i in range(SUB)]
    for row in acc:
        for cell in row:
            b.store(zero, cell)
    tid = sreg(b, "tid.x")
    tx, ty = b.urem(tid, i64(TILE // SUB)), b.udiv(tid, i64(TILE // SUB))
    block = sreg(b, "ctaid.x")
    tiles = b.mul(w["tiles_m"], w["tiles_n"])
    batch = b.udiv(block, tiles)
    rest = b.urem(block, tiles)
    row0 = b.mul(b.udiv(rest, w["tiles_n"]), i64(TILE))
    col0 = b.mul(b.urem(rest, w["tiles_n"]), i64(TILE))
    t = elem.as_pointer()
    a = b.gep(b.inttoptr(w["a"], t), [b.mul(batch, w["asb"])])
    bm = b.gep(b.inttoptr(w["b"], t), [b.mul(batch, w["bsb"])])
    c = b.gep(b.inttoptr(w["c"], t), [b.mul(batch, w["csb"])])

    def smem(name: str, index: ir.Value) -> ir.Value:
        return b.gep(shared[name], [i64(0), index])

    def guarded_load(ptr_base, r, col, rows, cols, rs, cs) -> ir.Value:
        inside = b.and_(b.icmp_signed("<", r, rows), b.icmp_signed("<", col, cols))
        safe_r = b.select(inside, r, i64(0))
        safe_c = b.select(inside, col, i64(0))
        x = b.load(b.gep(ptr_base, [b.add(b.mul(safe_r, rs), b.mul(safe_c, cs))]))
        return b.select(inside, x, zero)

    ksteps = b.udiv(b.add(w["k"], i64(STEP - 1)), i64(STEP))

    def kstep(s):
        k0 = b.mul(s, i64(STEP))
        for r in range(TILE * STEP // THREADS):
            lin = b.add(tid, i64(r * THREADS))
            kk, mm = b.urem(lin, i64(STEP)), b.udiv(lin, i64(STEP))
            x = guarded_load(a, b.add(row0, mm), b.add(k0, kk), w["m"], w["k"], w["ars"], w["aks"])
            b.store(x, smem("As", b.add(b.mul(kk, i64(TILE)), mm)))
            nn, kb = b.urem(lin, i64(TILE)), b.udiv(lin, i64(TILE))
            y = guarded_load(bm, b.add(k0, kb), b.add(col0, nn), w["k"], w["n"], w["brs"], w["bcs"])
            b.store(y, smem("Bs", b.add(b.mul(kb, i64(TILE)), nn)))
        b.call(barrier, [ir.Constant(I32, 0)])

        def inner(kk):
            base = b.mul(kk, i64(TILE))
            av = [b.load(smem("As", b.add(base, b.add(ty, i64(16 * i))))) for i in range(SUB)]
            bv = [b.load(smem("Bs", b.add(base, b.add(tx, i64(16 * j))))) for j in range(SUB)]
            for i in range(SUB):
                for j in range(SUB):
                    old = b.load(acc[i][j])
                    if is_float:
                        new = b.call(fma, [av[i], bv[j], old])
                    else:
                        new = b.add(old, b.mul(av[i], bv[j]))
                    b.store(new, acc[i][j])

        LoopBuilder(b).counted(i64(0), i64(STEP), 1, inner, "kk")
        b.call(barrier, [ir.Constant(I32, 0)])

    LoopBuilder(b).counted(i64(0), ksteps, 1, kstep, "ks")
    for i in range(SUB):
        for j in range(SUB):
            r = b.add(row0, b.add(ty, i64(16 * i)))
            col = b.add(col0, b.add(tx, i64(16 * j)))
            inside = b.and_(b.icmp_signed("<", r, w["m"]), b.icmp_signed("<", col, w["n"]))
            with b.if_then(inside):
                b.store(b.load(acc[i][j]), b.gep(c, [b.add(b.mul(r, w["ldc"]), col)]))
    b.ret_void()
    return module


class _Product(NamedTuple):
    """A product kernel: its entry symbol, module builder and CTA (tile sides, threads)."""

    symbol: str
    build: Callable[[DType], ir.Module]
    tile_m: int
    tile_n: int
    threads: int


def _product(dtype: DType) -> _Product:
    """The tensor cores' kernel for the half types (ptx/mma.py), the tiled one else."""
    if dtype.is_half:
        from kael.codegen.ptx import mma  # it imports this module

        return _Product(mma.symbol(dtype), mma.build_module, mma.TILE_M, mma.TILE_N, mma.THREADS)
    return _Product(symbol(dtype), build_module, TILE, TILE, THREADS)


@sync.cached
def ptx(dtype: DType) -> str:
    """The kernel's PTX text, running LLVM at most once per machine (disk cache)."""
    module = _product(dtype).build(dtype)
    return compiler.stored_ptx(str(module), lambda: module)


@sync.cached
def _function(dtype: DType):
    return cuda_driver.load_function(ptx(dtype), _product(dtype).symbol)


def matmul(c: TensorImpl, a: TensorImpl, b: TensorImpl) -> None:
    """c = a @ b on the GPU, with gemm_run.matmul's contract (device addresses); float16
    and bfloat16 (all three operands of the dtype) on the tensor cores (ptx/mma.py)."""
    _, function = _function(c.dtype)
    kernel = _product(c.dtype)
    dims = batch_dims(c.shape[:-2], a.strides[:-2], b.strides[:-2], c.strides[:-2])
    q, (qa, qb, qc) = dims.pop() if dims else (1, (0, 0, 0))
    m, k = a.shape[-2:]
    n = b.shape[-1]
    tm, tn = -(-m // kernel.tile_m), -(-n // kernel.tile_n)
    item = c.dtype.itemsize
    starts = [(0, 0, 0)]
    for size, st in dims:
        starts = [
            tuple(s + i * x for s, x in zip(base, st, strict=True))
            for base in starts
            for i in range(size)
        ]
    for oa, ob, oc in starts:
        words = [
            a.data_ptr() + oa * item, b.data_ptr() + ob * item, c.data_ptr() + oc * item,
            *a.strides[-2:], qa, *b.strides[-2:], qb, c.strides[-2], qc, m, n, k, tm, tn,
        ]  # fmt: skip
        cuda_driver.launch_kernel(
            function, q * tm * tn, kernel.threads, words, name=kernel.symbol,
            moved=q * (m * k + k * n + m * n) * item, flops=2 * q * m * n * k,
        )  # fmt: skip
