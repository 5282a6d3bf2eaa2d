"""Separable resampling kernels for the host (interpolate's linear, cubic and nearest
modes), built with llvmlite.

One pass resamples one dim of a contiguous [outer, size_in, inner] tensor into
[outer, size_out, inner]: out[o, j, i] = sum over taps t of w[t, j] * x[o, idx[t, j], i],
added in tap order, each product rounded (PyTorch's CPU arithmetic). The tables idx
(int64) and w (the element type) are tap-major, [taps, size_out], so a vector of output
positions loads its indices and weights as vectors.

- `last` (inner 1, items: rows): a row of outputs at a time, the sources of a vector of
  positions gathered from the row (which is in L1);
- `rows` (items: rows x size_out): one output row of `inner` elements, a weighted sum of
  `taps` input rows, unit-stride vectors.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.cpu import handwritten
from kael.codegen.cpu.gemm import Vectors, begin, divmod_, finish, vector_steps
from kael.codegen.cpu.loops import gather, lane_pointers, masked_load
from kael.codegen.lowering import i64
from kael.runtime.dtypes import DType, float32
from kael.runtime.launcher import launch
from kael.runtime.tensor_impl import host_ptr

ARGS = ("x", "out", "idx", "w", "size_in", "size_out", "inner")
TAPS = (1, 2, 4)  # nearest, linear, cubic
I64 = ir.IntType(64)


def symbol(taps: int, last: bool) -> str:
    return f"kael_resample_{taps}_{'last' if last else 'rows'}"


def _vectors(module: ir.Module, dtype: DType) -> Vectors:
    if dtype is float32:
        return Vectors(module, ir.FloatType(), 16, 4, "f32")
    return Vectors(module, ir.DoubleType(), 8, 8, "f64")


def _weighted(b: ir.IRBuilder, terms: list[tuple[ir.Value, ir.Value]]) -> ir.Value:
    """w0 * x0 + w1 * x1 + ..., each product rounded, added in order."""
    total = b.fmul(*terms[0])
    for w, x in terms[1:]:
        total = b.fadd(total, b.fmul(w, x))
    return total


def _emit_last(module: ir.Module, vx: Vectors, taps: int) -> None:
    """Item = row: out[row, j] for every j, lanes j.. at a time."""
    fn, b, w, loops = begin(module, symbol(taps, True), ARGS)
    t = vx.elem.as_pointer()
    x0, out0 = b.inttoptr(w["x"], t), b.inttoptr(w["out"], t)
    idx0, w0 = b.inttoptr(w["idx"], I64.as_pointer()), b.inttoptr(w["w"], t)
    lanes = vx.lanes
    index_vec = ir.VectorType(I64, lanes)

    def item(row):
        x = b.gep(x0, [b.mul(row, w["size_in"])])
        out = b.gep(out0, [b.mul(row, w["size_out"])])

        def step(j, mask):
            terms = []
            for k in range(taps):
                at = b.add(b.mul(i64(k), w["size_out"]), j)
                at_idx = b.bitcast(b.gep(idx0, [at]), index_vec.as_pointer())
                sources = masked_load(b, at_idx, 8, mask)
                weights = vx.load(b, b.gep(w0, [at]), mask)
                pointers = lane_pointers(b, x, sources, vx.itemsize)
                terms.append((weights, gather(b, pointers, vx.itemsize, mask)))
            vx.store(b, _weighted(b, terms), b.gep(out, [j]), mask)

        vector_steps(b, loops, vx, w["size_out"], step, "cols")

    finish(fn, b, loops, item)


def _emit_rows(module: ir.Module, vx: Vectors, taps: int) -> None:
    """Item = (row, j): out[row, j, :] from `taps` rows of x[row]."""
    fn, b, w, loops = begin(module, symbol(taps, False), ARGS)
    t = vx.elem.as_pointer()
    x0, out0 = b.inttoptr(w["x"], t), b.inttoptr(w["out"], t)
    idx0, w0 = b.inttoptr(w["idx"], I64.as_pointer()), b.inttoptr(w["w"], t)
    inner = w["inner"]

    def item(it):
        row, j = divmod_(b, it, w["size_out"])
        x = b.gep(x0, [b.mul(b.mul(row, w["size_in"]), inner)])
        out = b.gep(out0, [b.mul(it, inner)])
        sources = []
        for k in range(taps):
            at = b.add(b.mul(i64(k), w["size_out"]), j)
            weight = vx.splat(b, b.load(b.gep(w0, [at])))
            sources.append((weight, b.gep(x, [b.mul(b.load(b.gep(idx0, [at])), inner)])))

        def step(i, mask):
            terms = [(weight, vx.load(b, b.gep(src, [i]), mask)) for weight, src in sources]
            vx.store(b, _weighted(b, terms), b.gep(out, [i]), mask)

        vector_steps(b, loops, vx, inner, step, "inner")

    finish(fn, b, loops, item)


def library(dtype: DType) -> handwritten.Library:
    """The compiled resampling kernels of `dtype` (float32 or float64)."""

    def build(module: ir.Module) -> list[str]:
        vx = _vectors(module, dtype)
        for taps in TAPS:
            _emit_last(module, vx, taps)
            _emit_rows(module, vx, taps)
        return [symbol(taps, last) for taps in TAPS for last in (True, False)]

    return handwritten.compiled(f"kael_resample_{dtype.name}", build)


def run(x, out, idx, weights, taps: int) -> tuple:
    """out [outer, size_out, inner] = the resampling of x [outer, size_in, inner] (contiguous
    impls) by the tap-major tables idx (int64) and weights ([taps, size_out] impls).
    Returns (kernel, argument words, work items, bytes moved) for a door replaying the
    launch: x's and out's addresses are the first two words."""
    outer, size_in, inner = x.shape
    size_out = out.shape[1]
    last = inner == 1
    fn = library(x.dtype)[symbol(taps, last)]
    words = [
        *(host_ptr(t, "resample") for t in (x, out, idx, weights)), size_in, size_out, inner,
    ]  # fmt: skip
    moved = (x.numel() + out.numel()) * x.dtype.itemsize
    items = outer if last else outer * size_out
    launch(fn, words, items, moved, 1)
    return fn, words, items, moved
