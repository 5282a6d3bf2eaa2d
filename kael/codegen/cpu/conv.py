"""Implicit-GEMM convolution kernels for the host, built with llvmlite.

A convolution is per group the product W[og, K] @ B[K, P] (ir/conv.py), whose B is
never stored: each work item packs the block of B it needs straight from the input,
into a buffer on its stack that stays in L2, and runs gemm.py's packed micro-kernel
over it. The im2col matrix (9x the input for a 3x3 kernel) never reaches memory.

- `pack_w` (items: groups x mr-row panels) copies the weight into mr-row panels, k-major,
  with k = tap * cg + channel: the order B's rows are packed in, so one kernel offset's
  lane masks serve a run of channels;
- `conv` (items: image x group x column block) for each k block packs B[k block, its
  columns] (a masked vector load per window row where the output walks the input with
  unit stride, `unit_walk`; a masked gather otherwise; zeros where a window reaches
  into the padding), multiplies the weight's panels into it, and runs the epilogue
  (a compiled plan's fused bias or activation) over its finished columns, as gemm.py's
  macro does.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.cpu import handwritten
from kael.codegen.cpu.gemm import Vectors, begin, divmod_, epilogue, finish, micro_kernel, vectors
from kael.codegen.cpu.loops import gather, lane_pointers, masked_load
from kael.codegen.lowering import i64, smax, smin
from kael.ir.matmul import GemmSpec

I32 = ir.IntType(32)
I64 = ir.IntType(64)
PACK_W, CONV = "kael_conv_pack_w", "kael_conv"
PACK_W_ARGS = ("src", "dst", "og", "cg", "taps", "k", "mpanels")
CONV_ARGS = (
    "x", "w", "c", "xsb", "plane", "cg", "og", "groups", "k", "kc", "p", "nc", "jblocks",
    "mc", "oblocks", "d", "h", "wd", "od", "oh", "ow", "kh", "kw", "sd", "sh", "sw", "dd",
    "dh", "dw", "pd", "ph", "pw", "corner", "unit", "epi", "epi_stride",
)  # fmt: skip
NC = 256  # output positions per work item
BLOCK_BYTES = 256 << 10  # the packed block of B on an item's stack: it stays in L2
OUTSIDE = -(1 << 30)  # a lane past the last position: its window is outside any input


def _emit_pack_w(module: ir.Module, spec: GemmSpec, vx: Vectors) -> None:
    """dst[(g * mpanels + ip) * k * mr + kk * mr + r] = weight[g * og + row, c, tap] with
    kk = tap * cg + c and row = ip * mr + r (rows past og repeat the last: never stored)."""
    fn, b, w, loops = begin(module, PACK_W, PACK_W_ARGS)
    t = vx.elem.as_pointer()
    src, dst = b.inttoptr(w["src"], t), b.inttoptr(w["dst"], t)
    mr = spec.mr
    row_len = b.mul(w["cg"], w["taps"])

    def item(it):
        g, ip = divmod_(b, it, w["mpanels"])
        out = b.gep(dst, [b.mul(it, b.mul(w["k"], i64(mr)))])
        last = b.sub(w["og"], i64(1))
        first = b.mul(ip, i64(mr))
        rows = []
        for r in range(mr):
            row = b.add(b.mul(g, w["og"]), smin(b, b.add(first, i64(r)), last))
            rows.append(b.gep(src, [b.mul(row, row_len)]))

        def step(kk):
            tap, c = divmod_(b, kk, w["cg"])
            at = b.add(b.mul(c, w["taps"]), tap)
            o = b.gep(out, [b.mul(kk, i64(mr))])
            for r in range(mr):
                b.store(b.load(b.gep(rows[r], [at])), b.gep(o, [i64(r)]))

        loops.counted(i64(0), w["k"], 1, step, "k")

    finish(fn, b, loops, item)


class _Lanes:
    """Per output position of an item's column block (NC lanes, i32): where its window
    starts in each spatial dim (OUTSIDE past the last position) and, for gathers, its
    offset in the input plane. Filled once per item by counting, no divisions."""

    def __init__(self, b: ir.IRBuilder, names: tuple[str, ...]):
        self.b = b
        self.arrays = {}
        for name in names:
            a = b.alloca(ir.ArrayType(I32, NC), name=name)
            a.align = 64
            self.arrays[name] = b.bitcast(a, I32.as_pointer())

    def at(self, name: str, lane: ir.Value) -> ir.Value:
        return self.b.gep(self.arrays[name], [lane])

    def vector(self, name: str, first: ir.Value, lanes: int) -> ir.Value:
        vt = ir.VectorType(I32, lanes)
        return self.b.load(self.b.bitcast(self.at(name, first), vt.as_pointer()), align=4 * lanes)


def _fill_lanes(b, loops, w, lanes: _Lanes, j_first, count) -> None:
    """lanes[name][L] for L < NC: the window origin of position j_first + L (or OUTSIDE)."""
    counters = {}
    for name in ("od", "oh", "ow"):
        slot = b.alloca(ir.IntType(64), name=f"{name}.count")
        counters[name] = slot
    rows, ow = divmod_(b, j_first, w["ow"])
    od, oh = divmod_(b, rows, w["oh"])
    for name, v in (("od", od), ("oh", oh), ("ow", ow)):
        b.store(v, counters[name])

    def lane(L):
        inside = b.icmp_signed("<", L, count)
        od, oh, ow = (b.load(counters[n]) for n in ("od", "oh", "ow"))
        origins = {
            "id": b.sub(b.mul(od, w["sd"]), w["pd"]),
            "ih": b.sub(b.mul(oh, w["sh"]), w["ph"]),
            "iw": b.sub(b.mul(ow, w["sw"]), w["pw"]),
        }
        for name, v in origins.items():
            b.store(b.select(inside, b.trunc(v, I32), ir.Constant(I32, OUTSIDE)), lanes.at(name, L))
        offset = b.add(
            b.mul(b.add(b.mul(origins["id"], w["h"]), origins["ih"]), w["wd"]), origins["iw"]
        )
        b.store(b.trunc(offset, I32), lanes.at("offset", L))
        # the next position: ow + 1, carried into oh and od
        ow1 = b.add(ow, i64(1))
        wrap = b.icmp_signed("==", ow1, w["ow"])
        oh1 = b.select(wrap, b.add(oh, i64(1)), oh)
        wrap_h = b.icmp_signed("==", oh1, w["oh"])
        b.store(b.select(wrap, i64(0), ow1), counters["ow"])
        b.store(b.select(wrap_h, i64(0), oh1), counters["oh"])
        b.store(b.select(wrap_h, b.add(od, i64(1)), od), counters["od"])

    loops.counted(i64(0), i64(NC), 1, lane, "lane")


def _emit_conv(module: ir.Module, spec: GemmSpec, vx: Vectors) -> None:
    """Item it = (image * groups + group) * jblocks + column block; see the module doc."""
    fn, b, w, loops = begin(module, CONV, CONV_ARGS)
    micro = micro_kernel(module, spec, vx, True)
    elem, nr, mr = vx.elem, spec.nr, spec.mr
    block = b.alloca(ir.ArrayType(elem, kc_max(spec) * NC), name="bpack")
    block.align = 64
    packed = b.bitcast(block, elem.as_pointer())
    table = _Lanes(b, ("id", "ih", "iw", "offset"))
    t = elem.as_pointer()
    x0, w0, c0 = (b.inttoptr(w[n], t) for n in ("x", "w", "c"))
    mpanels = b.sdiv(b.add(w["og"], i64(mr - 1)), i64(mr))
    has_epilogue = b.icmp_signed("!=", w["epi"], i64(0))
    epilogues = b.inttoptr(w["epi"], ir.IntType(64).as_pointer())

    def item(it):
        rest, jb = divmod_(b, it, w["jblocks"])
        image_group, ob = divmod_(b, rest, w["oblocks"])
        n, g = divmod_(b, image_group, w["groups"])
        j_first = b.mul(jb, w["nc"])
        count = smin(b, w["nc"], b.sub(w["p"], j_first))
        panels = b.sdiv(b.add(count, i64(nr - 1)), i64(nr))
        i0 = b.mul(ob, w["mc"])
        i1 = smin(b, w["og"], b.add(i0, w["mc"]))
        _fill_lanes(b, loops, w, table, j_first, count)
        x = b.gep(x0, [b.add(b.mul(n, w["xsb"]), b.mul(b.mul(g, w["cg"]), w["plane"]))])
        weights = b.gep(w0, [b.mul(b.mul(g, mpanels), b.mul(w["k"], i64(mr)))])
        row0 = b.add(b.mul(n, b.mul(w["groups"], w["og"])), b.mul(g, w["og"]))
        c = b.gep(c0, [b.add(b.mul(row0, w["p"]), j_first)])
        kblocks = b.sdiv(b.add(w["k"], b.sub(w["kc"], i64(1))), w["kc"])

        def kblock(kb):
            p0 = b.mul(kb, w["kc"])
            kcur = smin(b, w["kc"], b.sub(w["k"], p0))
            _pack_block(b, loops, w, vx, spec, table, x, packed, p0, kcur, panels, j_first)
            accumulate = b.zext(b.icmp_signed(">", kb, i64(0)), I64)

            def column(jt):
                bp = b.gep(packed, [b.mul(jt, b.mul(kcur, i64(nr)))])
                nvalid = smin(b, i64(nr), b.sub(count, b.mul(jt, i64(nr))))

                def tile(ip):
                    i = b.mul(ip, i64(mr))
                    a = b.gep(weights, [b.mul(b.add(b.mul(ip, w["k"]), p0), i64(mr))])
                    cp = b.gep(c, [b.add(b.mul(i, w["p"]), b.mul(jt, i64(nr)))])
                    mvalid = smin(b, i64(mr), b.sub(i1, i))
                    tail = [w["p"], kcur, mvalid, nvalid, accumulate]
                    b.call(micro, [a, i64(1), i64(mr), bp, i64(nr), cp, *tail])

                loops.counted(
                    b.sdiv(i0, i64(mr)), b.sdiv(b.add(i1, i64(mr - 1)), i64(mr)), 1, tile, "tile"
                )

            loops.counted(i64(0), panels, 1, column, "column")

        loops.counted(i64(0), kblocks, 1, kblock, "kblock")
        with b.if_then(has_epilogue):
            r0 = b.add(row0, i0)
            epilogue(b, epilogues, b.mul(jb, w["epi_stride"]), r0, b.add(row0, i1))

    finish(fn, b, loops, item)


def _pack_block(b, loops, w, vx: Vectors, spec, table, x, packed, p0, kcur, panels, j_first):
    """packed[jt][kk][0..nr) = B[p0 + kk, j_first + jt * nr + ..] for kk < kcur: per kernel
    offset (tap) in the block, its lane masks once, then a run of channels."""
    lanes, nr = spec.lanes, spec.nr
    vptr = vx.vec.as_pointer()
    unit = b.icmp_signed("!=", w["unit"], i64(0))

    def splat32(v):
        return vx.splat(b, b.trunc(v, I32), I32)

    def tap_run(tap):
        t, rest = divmod_(b, tap, b.mul(w["kh"], w["kw"]))
        r, s = divmod_(b, rest, w["kw"])
        td, tr, ts = b.mul(t, w["dd"]), b.mul(r, w["dh"]), b.mul(s, w["dw"])
        shift = b.add(b.mul(b.add(b.mul(td, w["h"]), tr), w["wd"]), ts)
        k_lo = smax(b, p0, b.mul(tap, w["cg"]))
        k_hi = smin(b, b.add(p0, kcur), b.mul(b.add(tap, i64(1)), w["cg"]))
        c_lo = b.sub(k_lo, b.mul(tap, w["cg"]))

        def panel(jt):
            masks, sources = [], []
            for v in range(spec.vectors):
                first = b.add(b.mul(jt, i64(nr)), i64(v * lanes))
                mask = None
                for name, bound, step in (("id", "d", td), ("ih", "h", tr), ("iw", "wd", ts)):
                    at = b.add(table.vector(name, first, lanes), splat32(step))
                    ok = b.icmp_unsigned("<", at, splat32(w[bound]))
                    mask = ok if mask is None else b.and_(mask, ok)
                masks.append(mask)
                sources.append(b.add(table.vector("offset", first, lanes), splat32(shift)))
            dst0 = b.gep(packed, [b.mul(jt, b.mul(kcur, i64(nr)))])
            # a unit walk reads position j at x[j + corner + shift], corner the offset of
            # window 0's first element (negative: it starts in the padding)
            origin = b.add(b.add(b.add(j_first, b.mul(jt, i64(nr))), shift), w["corner"])

            def rows(load):
                def channel(kk):
                    plane = b.gep(x, [b.mul(b.add(c_lo, b.sub(kk, k_lo)), w["plane"])])
                    dst = b.gep(dst0, [b.mul(b.sub(kk, p0), i64(nr))])
                    for v in range(spec.vectors):
                        out = b.bitcast(b.gep(dst, [i64(v * lanes)]), vptr)
                        b.store(load(plane, v), out, align=vx.itemsize * lanes)

                loops.counted(k_lo, k_hi, 1, channel, "channel")

            def walk(plane, v):
                p = b.bitcast(b.gep(plane, [b.add(origin, i64(v * lanes))]), vptr)
                return masked_load(b, p, vx.itemsize, masks[v])

            def scattered(plane, v):
                offsets = b.sext(sources[v], ir.VectorType(ir.IntType(64), lanes))
                return gather(
                    b, lane_pointers(b, plane, offsets, vx.itemsize), vx.itemsize, masks[v]
                )

            with b.if_else(unit) as (unit_walk, other):
                with unit_walk:
                    rows(walk)
                with other:
                    rows(scattered)

        loops.counted(i64(0), panels, 1, panel, "panel")

    first_tap = b.sdiv(p0, w["cg"])
    last_tap = b.sdiv(b.add(p0, b.sub(kcur, i64(1))), w["cg"])
    loops.counted(first_tap, b.add(last_tap, i64(1)), 1, tap_run, "tap")


def kc_max(spec: GemmSpec) -> int:
    """The most rows of B an item packs at a time (its k block)."""
    return BLOCK_BYTES // (NC * spec.dtype.itemsize)


def library(spec: GemmSpec) -> handwritten.Library:
    """The compiled convolution kernels (PACK_W, CONV) of `spec`'s element type."""

    def build(module: ir.Module) -> list[str]:
        vx = vectors(module, spec)
        _emit_pack_w(module, spec, vx)
        _emit_conv(module, spec, vx)
        return [PACK_W, CONV]

    return handwritten.compiled(
        f"kael_conv_{spec.dtype.name}_{spec.mr}x{spec.nr}_nc{NC}", build, tiered=False
    )
