"""A CTA's threads working together in NVPTX: warp shuffles, barriers, shared arrays.

The reductions (reduce.py, warp_reduce.py) and the row kernels (rowgroup.py) fold values
across a warp's lanes with butterfly shuffles and across a CTA's warps through shared
memory between barriers; these are the three pieces they are made of.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.lowering import I64, i64

THREADS = 256  # a CTA's threads in the reductions and row kernels
WARP = 32
WARPS = THREADS // WARP
I32 = ir.IntType(32)
FULL_MASK = -1


def _i32(v: int) -> ir.Constant:
    return ir.Constant(I32, v)


def _declare(module: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    fn = module.globals.get(name)
    return fn if fn is not None else ir.Function(module, fnty, name)


def shuffle(b: ir.IRBuilder, v: ir.Value, lane_mask: int) -> ir.Value:
    """v from lane (lane ^ lane_mask) of the warp, any scalar type via 32-bit pieces."""
    t = v.type
    fnty = ir.FunctionType(I32, [I32, I32, I32, I32])
    shfl = _declare(b.module, "llvm.nvvm.shfl.sync.bfly.i32", fnty)

    def move(word: ir.Value) -> ir.Value:
        return b.call(shfl, [_i32(FULL_MASK), word, _i32(lane_mask), _i32(0x1F)])

    if isinstance(t, ir.IntType) and t.width <= 32:
        return move(v) if t.width == 32 else b.trunc(move(b.zext(v, I32)), t)
    if isinstance(t, ir.FloatType):
        return b.bitcast(move(b.bitcast(v, I32)), t)
    bits = b.bitcast(v, I64) if isinstance(t, ir.DoubleType) else v
    lo = move(b.trunc(bits, I32))
    hi = move(b.trunc(b.lshr(bits, i64(32)), I32))
    joined = b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), i64(32)))
    return b.bitcast(joined, t) if isinstance(t, ir.DoubleType) else joined


def barrier(b: ir.IRBuilder) -> None:
    """bar.sync 0: every thread of the CTA arrives before any goes on."""
    fnty = ir.FunctionType(ir.VoidType(), [I32])
    b.call(_declare(b.module, "llvm.nvvm.barrier.cta.sync.aligned.all", fnty), [_i32(0)])


def shared_array(module: ir.Module, t: ir.Type, name: str, size: int = WARPS) -> ir.GlobalVariable:
    """A CTA's array of `size` values in shared memory (one a warp by default), with no
    initializer: NVPTX drops initializers on shared globals, so kernels write it first."""
    gv = ir.GlobalVariable(module, ir.ArrayType(t, size), name, addrspace=3)
    gv.linkage = "internal"
    gv.initializer = ir.Constant(ir.ArrayType(t, size), ir.Undefined)
    gv.align = 8
    return gv


def launch_bounds(fn: ir.Function, threads: int, ctas_per_sm: int) -> None:
    """`.maxntid threads` and `.minnctapersm ctas_per_sm` on the entry `fn` (LLVM turns the
    nvvm.annotations into its kernel attributes): ptxas keeps each thread within the
    registers that `ctas_per_sm` resident CTAs leave it."""
    module = fn.module
    for key, value in (("maxntidx", threads), ("minctasm", ctas_per_sm)):
        entry = [fn, ir.MetaDataString(module, key), ir.Constant(I32, value)]
        module.add_named_metadata("nvvm.annotations", entry)


def grouped_tile(
    b: ir.IRBuilder, t: ir.Value, tiles_m: ir.Value, tiles_n: ir.Value, group: int
) -> tuple[ir.Value, ir.Value]:
    """Tile t of a tiles_m x tiles_n grid as (tile row, tile column), walked down the
    columns of `group` tile rows at a time (the last group may have fewer): CTAs resident
    together share the operands' rows and columns in L2."""
    per_group = b.mul(tiles_n, i64(group))
    first = b.mul(b.udiv(t, per_group), i64(group))
    left = b.sub(tiles_m, first)
    rows = b.select(b.icmp_unsigned("<", left, i64(group)), left, i64(group))
    within = b.urem(t, per_group)
    return b.add(first, b.urem(within, rows)), b.udiv(within, rows)
