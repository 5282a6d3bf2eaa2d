"""Runs implicit-GEMM convolutions on the host: the blocking and the launches of conv.py's
kernels, as a gemm_run.Plan (weight packing into the plan's buffer, then the product),
so a compiled plan runs and fuses a convolution as it does a matrix product.
"""

from __future__ import annotations

import math

from kael.codegen.cpu import conv, gemm, gemm_run
from kael.codegen.cpu.gemm_run import BUF, A, B, C, Launch, Plan, parallel
from kael.ir.conv import ConvGeometry
from kael.runtime.dtypes import DType
from kael.runtime.threadpool import get_num_threads


def _blocks(total: int, block: int) -> int:
    return -(-total // block)


def plan(g: ConvGeometry, dtype: DType, threads: int) -> Plan:
    """The launches of c = conv(x, w) for contiguous x [N, C, *size], w [O, cg, *kernel]
    and c [N, O, *out] (A, B and C of the plan's addresses)."""
    spec = gemm.host_spec(dtype)
    lib = conv.library(spec)
    mr, nr = spec.mr, spec.nr
    k, p = g.depth, g.positions
    mpanels = _blocks(g.og, mr)
    nk = _blocks(k, conv.kc_max(spec))
    kc = _blocks(k, nk)
    jblocks = _blocks(p, conv.NC)
    nc = min(conv.NC, _blocks(_blocks(p, jblocks), nr) * nr)
    jblocks = _blocks(p, nc)
    # Split the output channels too when images x column blocks cannot busy every thread.
    items = g.batch * g.groups * jblocks
    oblocks = min(mpanels, _blocks(4 * threads, items)) if items < 4 * threads else 1
    mc = _blocks(mpanels, oblocks) * mr
    oblocks = _blocks(g.og, mc)
    pack = (0, 0, g.og, g.cg, g.taps, k, mpanels)
    (d, h, w), (od, oh, ow) = g.size, g.out
    (pd, ph, pw) = g.padding
    corner = (-pd * h - ph) * w - pw
    words = (
        0, 0, 0, g.groups * g.cg * g.plane, g.plane, g.cg, g.og, g.groups, k, kc, p, nc,
        jblocks, mc, oblocks, d, h, w, od, oh, ow, *g.kernel[1:], *g.stride, *g.dilation,
        *g.padding, corner, int(g.unit_walk), 0, 0,
    )  # fmt: skip
    columns = (*range(0, p, nc), p)
    return Plan(
        (
            Launch(
                lib[conv.PACK_W], pack, ((0, B, 0), (1, BUF, 0)), g.groups * mpanels, 0, conv.PACK_W
            ),
            Launch(
                lib[conv.CONV],
                words,
                ((0, A, 0), (1, BUF, 0), (2, C, 0)),
                g.batch * g.groups * oblocks * jblocks,
                parallel(g.flops),
                conv.CONV,
                g.flops,
                columns,
            ),
        ),  # fmt: skip
        g.groups * mpanels * k * mr * dtype.itemsize,
        rows_in_order=True,
    )


_plans: dict[tuple, Plan] = {}
_MAX_PLANS = 256


def plan_for(g: ConvGeometry, dtype: DType) -> Plan:
    """The plan of `g` for the current thread count, from a bounded cache."""
    threads = get_num_threads()
    key = (g, dtype, threads)
    found = _plans.get(key)
    if found is None:
        if len(_plans) >= _MAX_PLANS:
            _plans.clear()
        found = _plans[key] = gemm_run.described(plan(g, dtype, threads))
    return found


def supports(g: ConvGeometry, dtype: DType) -> bool:
    """Whether the implicit-GEMM kernels take `g`: float32 or float64, some work, and
    every input offset a window reaches within 32-bit lane arithmetic."""
    if gemm.host_spec(dtype) is None or not (g.batch and g.og and g.depth and g.positions):
        return False  # nothing to multiply: the general path gives the zeros
    reach = math.prod(s + 2 * p for s, p in zip(g.size, g.padding)) + g.plane
    return reach < (1 << 30)
