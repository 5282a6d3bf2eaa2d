"""The fused attention kernel for the host: softmax(q k^T * scale + mask) v in one pass
over the keys, never storing the [L, S] scores (FlashAttention's online softmax).

A work item is BQ query rows of one batch-head. It walks the keys in blocks of BK (whole
micro-tile widths; a causal item stops at its last row's diagonal): the scores block is
q rows times the block of k^T (gemm.py's direct micro-kernel, k^T stored [E, S] so its
columns are unit-stride), then per row the scale and the mask, the running max m, the
probabilities p = exp(s - m) (kael's vector exp) and the running sum l, the output rows
rescaled by exp(m_old - m_new); then the output block += p times the block of v (the
same micro-kernel). At the end each row is divided by l; a row the mask leaves nothing
of has l = 0 and gives zeros, as PyTorch's CPU kernel does.

Masks (one kernel each, `kael_attention_KIND`): none; causal (key j kept for query i where j <= i); additive (a float
tensor of the element type added to the scores); keep (a bool tensor: False drops the
key). A mask is read through its strides: batch-head, row, column (0 where broadcast).
"""

from __future__ import annotations

import struct

from llvmlite import ir

from kael.codegen.cpu import compiler, handwritten
from kael.codegen.cpu.gemm import (
    begin,
    divmod_,
    finish,
    host_spec,
    micro_kernel,
    vector_steps,
    vectors,
)
from kael.codegen.cpu.gemm_run import parallel
from kael.codegen.cpu.loops import gather, lane_pointers
from kael.codegen.emitters import UNARY_EMITTERS
from kael.codegen.lowering import ExprEmitter, i64, mangle, smin
from kael.runtime.dtypes import DType
from kael.runtime.launcher import launch
from kael.runtime.tensor_impl import host_ptr

ARGS = (
    "q", "kt", "v", "out", "mask", "scale", "qblocks", "l", "s", "e", "ev", "heads",
    "qsb", "qsh", "qrs", "ktsb", "ktsh", "ktrs", "vsb", "vsh", "vrs", "osb", "osh", "ors",
    "msb", "msh", "mrs", "mcs",
)  # fmt: skip
KINDS = ("none", "causal", "additive", "keep")
BQ = 64  # query rows per work item
BK = 64  # keys per block: a multiple of every micro-tile width (the AVX2 tile is 16 wide)
EV_MAX = 256  # the widest value rows the kernel's output block holds
I1, I8, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(64)


def _no_expr(*_):
    raise AssertionError("the attention kernel emits math on values only")


def symbol(kind: str) -> str:
    return f"kael_attention_{kind}"


def _emit(module: ir.Module, dtype: DType, kind: str, vx, micro) -> None:
    spec = host_spec(dtype)
    fn, b, w, loops = begin(module, symbol(kind), ARGS)
    elem, lanes, bk, nr, mr = vx.elem, spec.lanes, BK, spec.nr, spec.mr
    math = ExprEmitter(b, lanes, _no_expr, _no_expr, _no_expr, scalef=compiler.has_avx512f())
    t = elem.as_pointer()

    def scratch(count: int, name: str) -> ir.Value:
        a = b.alloca(ir.ArrayType(elem, count), name=name)
        a.align = 64
        return b.bitcast(a, t)

    probs = scratch(BQ * bk, "p")  # the scores block, then its probabilities
    acc = scratch(BQ * EV_MAX, "o")  # the output rows, unnormalized
    run_max, run_sum = scratch(BQ, "m"), scratch(BQ, "l")
    q0, kt0, v0, out0 = (b.inttoptr(w[n], t) for n in ("q", "kt", "v", "out"))
    mask_f, mask_b = b.inttoptr(w["mask"], t), b.inttoptr(w["mask"], I8.as_pointer())
    scale = b.bitcast(w["scale"], ir.DoubleType())
    scale = scale if dtype.itemsize == 8 else b.fptrunc(scale, elem)
    zero, neg_inf = ir.Constant(elem, 0.0), ir.Constant(elem, float("-inf"))
    vec_neg_inf = ir.Constant(vx.vec, [neg_inf] * lanes)
    lane_ids = ir.Constant(ir.VectorType(I64, lanes), list(range(lanes)))
    causal = kind == "causal"
    evpanels = b.sdiv(b.add(w["ev"], i64(nr - 1)), i64(nr))

    def splat64(x):
        return vx.splat(b, x, I64)

    def fold(x: ir.Value, combine) -> ir.Value:
        """The lanes of x combined by halves, in a fixed order."""
        width = lanes
        while width > 1:
            width //= 2
            low = b.shuffle_vector(
                x, x, ir.Constant(ir.VectorType(ir.IntType(32), width), list(range(width)))
            )
            high = b.shuffle_vector(
                x,
                x,
                ir.Constant(ir.VectorType(ir.IntType(32), width), list(range(width, 2 * width))),
            )
            x = combine(low, high)
        return b.extract_element(x, i64(0))

    def maxnum(x, y):
        name = f"llvm.maxnum.{mangle(x.type)}"
        f = module.globals.get(name) or ir.Function(
            module, ir.FunctionType(x.type, [x.type] * 2), name
        )
        return b.call(f, [x, y])

    def item(it):
        bh, qb = divmod_(b, it, w["qblocks"])
        batch, head = divmod_(b, bh, w["heads"])

        def matrix(prefix: str) -> ir.Value:  # where an operand's matrix of (batch, head) starts
            return b.add(b.mul(batch, w[f"{prefix}sb"]), b.mul(head, w[f"{prefix}sh"]))

        i0 = b.mul(qb, i64(BQ))
        rows = smin(b, i64(BQ), b.sub(w["l"], i0))
        q = b.gep(q0, [b.add(matrix("q"), b.mul(i0, w["qrs"]))])
        kt = b.gep(kt0, [matrix("kt")])
        v = b.gep(v0, [matrix("v")])
        tiles = b.sdiv(b.add(rows, i64(mr - 1)), i64(mr))

        def reset(r):
            b.store(neg_inf, b.gep(run_max, [r]))
            b.store(zero, b.gep(run_sum, [r]))
            row = b.gep(acc, [b.mul(r, i64(EV_MAX))])
            loops.counted(i64(0), w["ev"], 1, lambda j: b.store(zero, b.gep(row, [j])), "zero")

        loops.counted(i64(0), rows, 1, reset, "reset")
        # keys the item needs: all, or up to its last row's diagonal
        keys = smin(b, w["s"], b.add(i0, rows)) if causal else w["s"]
        kblocks = b.sdiv(b.add(keys, i64(bk - 1)), i64(bk))

        def kblock(kb):
            j0 = b.mul(kb, i64(bk))
            count = smin(b, i64(bk), b.sub(w["s"], j0))

            def scores(ip):
                r = b.mul(ip, i64(mr))
                a = b.gep(q, [b.mul(r, w["qrs"])])
                mvalid = smin(b, i64(mr), b.sub(rows, r))
                for jp in range(bk // nr):  # the block's micro-tile columns
                    width = b.sub(count, i64(jp * nr))
                    with b.if_then(b.icmp_signed(">", width, i64(0))):
                        c = b.gep(probs, [b.add(b.mul(r, i64(bk)), i64(jp * nr))])
                        tail = [i64(bk), w["e"], mvalid, smin(b, i64(nr), width), i64(0)]
                        keys = b.gep(kt, [b.add(j0, i64(jp * nr))])
                        b.call(micro, [a, w["qrs"], i64(1), keys, w["ktrs"], c, *tail])

            loops.counted(i64(0), tiles, 1, scores, "scores")
            loops.counted(i64(0), rows, 1, lambda r: _softmax_row(r, j0, count), "softmax")

            def values(jp):
                c0 = b.mul(jp, i64(nr))
                width = smin(b, i64(nr), b.sub(w["ev"], c0))
                src = b.gep(v, [b.add(b.mul(j0, w["vrs"]), c0)])

                def tile(ip):
                    r = b.mul(ip, i64(mr))
                    a = b.gep(probs, [b.mul(r, i64(bk))])
                    c = b.gep(acc, [b.add(b.mul(r, i64(EV_MAX)), c0)])
                    mvalid = smin(b, i64(mr), b.sub(rows, r))
                    tail = [i64(EV_MAX), count, mvalid, width, i64(1)]
                    b.call(micro, [a, i64(bk), i64(1), src, w["vrs"], c, *tail])

                loops.counted(i64(0), tiles, 1, tile, "pv")

            loops.counted(i64(0), evpanels, 1, values, "values")

        def _softmax_row(r, j0, count):
            i = b.add(i0, r)
            row = b.gep(probs, [b.mul(r, i64(bk))])
            vptr = vx.vec.as_pointer()
            mrow = b.add(matrix("m"), b.mul(i, w["mrs"]))
            blocks = []
            for g in range(bk // lanes):
                cols = b.add(splat64(b.add(j0, i64(g * lanes))), lane_ids)
                keep = b.icmp_signed("<", cols, splat64(b.add(j0, count)))
                if causal:
                    keep = b.and_(keep, b.icmp_signed("<=", cols, splat64(i)))
                s = b.fmul(
                    b.load(b.bitcast(b.gep(row, [i64(g * lanes)]), vptr)), vx.splat(b, scale)
                )
                at = b.add(splat64(mrow), b.mul(cols, splat64(w["mcs"])))
                if kind == "additive":
                    s = b.fadd(
                        s, gather(b, lane_pointers(b, mask_f, at, vx.itemsize), vx.itemsize, keep)
                    )
                elif kind == "keep":
                    flags = gather(b, lane_pointers(b, mask_b, at, 1), 1, keep)
                    keep = b.and_(keep, b.icmp_unsigned("!=", flags, ir.Constant(flags.type, None)))
                blocks.append(b.select(keep, s, vec_neg_inf))
            top = blocks[0]
            for x in blocks[1:]:
                top = maxnum(top, x)
            m_old = b.load(b.gep(run_max, [r]))
            m_new = maxnum(m_old, fold(top, maxnum))
            shift = b.select(b.fcmp_ordered("==", m_new, neg_inf), zero, m_new)
            total = vx.zero
            for g, s in enumerate(blocks):
                p = UNARY_EMITTERS["exp"](math, b.fsub(s, vx.splat(b, shift)), dtype)
                b.store(p, b.bitcast(b.gep(row, [i64(g * lanes)]), vptr))
                total = b.fadd(total, p)
            alpha = b.extract_element(
                UNARY_EMITTERS["exp"](math, vx.splat(b, b.fsub(m_old, shift)), dtype), i64(0)
            )
            sums = b.gep(run_sum, [r])
            b.store(b.fadd(b.fmul(b.load(sums), alpha), fold(total, b.fadd)), sums)
            b.store(m_new, b.gep(run_max, [r]))
            with b.if_then(b.fcmp_unordered("une", m_old, m_new)):
                out = b.gep(acc, [b.mul(r, i64(EV_MAX))])
                _scale_row(out, alpha)

        def _scale_row(out, alpha):
            def step(j):
                p = b.bitcast(b.gep(out, [j]), vx.vec.as_pointer())
                b.store(b.fmul(b.load(p), vx.splat(b, alpha)), p)

            # whole vectors past ev too: the block's rows are EV_MAX wide
            loops.counted(i64(0), b.add(w["ev"], i64(lanes - 1)), lanes, step, "rescale")

        loops.counted(i64(0), kblocks, 1, kblock, "kblock")

        def finish_row(r):
            total = b.load(b.gep(run_sum, [r]))
            inv = b.select(
                b.fcmp_ordered("==", total, zero), zero, b.fdiv(ir.Constant(elem, 1.0), total)
            )
            src = b.gep(acc, [b.mul(r, i64(EV_MAX))])
            dst = b.gep(out0, [b.add(matrix("o"), b.mul(b.add(i0, r), w["ors"]))])

            def step(j, valid):
                x = vx.load(b, b.gep(src, [j]), valid)
                vx.store(b, b.fmul(x, vx.splat(b, inv)), b.gep(dst, [j]), valid)

            vector_steps(b, loops, vx, w["ev"], step, "store")

        loops.counted(i64(0), rows, 1, finish_row, "finish")

    finish(fn, b, loops, item)


def library(dtype: DType) -> handwritten.Library:
    """The compiled attention kernels of `dtype` (float32 or float64), one per mask kind."""

    def build(module: ir.Module) -> list[str]:
        spec = host_spec(dtype)
        vx = vectors(module, spec)
        micro = micro_kernel(module, spec, vx, False)
        for kind in KINDS:
            _emit(module, dtype, kind, vx, micro)
        return [symbol(kind) for kind in KINDS]

    return handwritten.compiled(
        f"kael_attention_{dtype.name}_bq{BQ}_ev{EV_MAX}", build, tiered=False
    )


def words(q, kt, v, out, mask, scale: float, mask_strides) -> list[int]:
    """The kernel's argument block: q's, kt's, v's, out's and the mask's addresses (0 for
    none) first, then the scale, sizes and strides. Operands are [batch, heads, rows, row]
    impls (a matrix per batch and head: two strides, so a [B, L, H, E] layout read as
    [B, H, L, E] needs no copy); mask_strides are the mask's four."""
    length, source = q.shape[2], v.shape[2]
    return [
        *(host_ptr(t, "attention") for t in (q, kt, v, out)),
        host_ptr(mask, "attention") if mask is not None else 0,
        struct.unpack("<q", struct.pack("<d", scale))[0],
        -(-length // BQ), length, source, q.shape[3], v.shape[3], q.shape[1],
        *q.strides[:3], *kt.strides[:3], *v.strides[:3], *out.strides[:3], *mask_strides,
    ]  # fmt: skip


def items(q) -> int:
    """Work items of a launch: blocks of BQ query rows of every matrix."""
    return q.shape[0] * q.shape[1] * -(-q.shape[2] // BQ)


def flops(q, v) -> int:
    return 4 * q.shape[0] * q.shape[1] * q.shape[2] * v.shape[2] * (q.shape[3] + v.shape[3])


def function(dtype: DType, kind: str):
    """The compiled kernel of `dtype` for the mask `kind`."""
    return library(dtype)[symbol(kind)]


def run(q, kt, v, out, mask, kind: str, scale: float, mask_strides) -> None:
    """out [B, H, L, Ev] = attention of q [B, H, L, E] over kt [B, H, E, S] (k transposed)
    and v [B, H, S, Ev] (impls; every row unit-stride, rows and matrices any strides
    apart); `mask` an impl or None with its (batch, head, row, column) strides."""
    work = flops(q, v)
    block = words(q, kt, v, out, mask, scale, mask_strides)
    launch(function(q.dtype, kind), block, items(q), parallel(work), 1, flops=work)
