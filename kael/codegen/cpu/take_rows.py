"""The row-copy kernel of index_select (and embedding) on the host, built with llvmlite.

When the slices index_select picks are runs of at least a cache line (a contiguous
source, the indexed dim not the last), each work item copies one run: out[o, j, :] =
src[o, index[j], :], 64-byte vectors and a masked tail (loops.store_first), any dtype
(it moves bytes). The run a few items ahead is prefetched, since a random row's first
lines would otherwise wait on memory. gather.py's walk kernel does every other layout (and the GPU's).

The streaming variant (STREAM_SYMBOL) is for outputs larger than the caches whose runs
are whole 64-byte lines at 64-byte-aligned addresses: its stores go past the caches, so
no output line is read for ownership first, and are fenced before a range of items
returns.

A bad index (outside [0, size)) copies nothing and lowers the error word to its position
in the index (atomic min), so the caller can name the first bad value.
"""

from __future__ import annotations

from llvmlite import ir

from kael.codegen.cpu import handwritten
from kael.codegen.cpu.gemm import begin, divmod_, finish
from kael.codegen.cpu.loops import lanes_below, masked_load, store, store_first
from kael.codegen.lowering import declare, i64
from kael.runtime.dtypes import INT64_MAX
from kael.runtime.launcher import launch
from kael.runtime.tensor_impl import host_ptr

SYMBOL = "kael_take_rows"
STREAM_SYMBOL = "kael_take_rows_streamed"
ARGS = ("out", "src", "index", "error", "size", "run", "count", "ahead")
I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
VECTOR = 64  # bytes per load and store
AHEAD = 8  # runs prefetched ahead of the one being copied
MIN_RUN = 64  # bytes: shorter runs take the walk kernel


def _emit(module: ir.Module) -> list[str]:
    """Both kernels: the cached one with masked tails and the streaming one."""
    _emit_kernel(module, SYMBOL, stream=False)
    _emit_kernel(module, STREAM_SYMBOL, stream=True)
    return [SYMBOL, STREAM_SYMBOL]


def _emit_kernel(module: ir.Module, symbol: str, stream: bool) -> None:
    """Item it = o * count + j: copy `run` bytes from run index[j] of block o of src;
    `stream`: runs are whole aligned vectors, stored past the caches."""
    fn, b, w, loops = begin(module, symbol, ARGS)
    byte = I8.as_pointer()
    out0, src0 = b.inttoptr(w["out"], byte), b.inttoptr(w["src"], byte)
    index, error = (
        b.inttoptr(w["index"], I64.as_pointer()),
        b.inttoptr(w["error"], I64.as_pointer()),
    )
    vt = ir.VectorType(I8, VECTOR)
    prefetch = declare(
        module, "llvm.prefetch.p0", ir.FunctionType(ir.VoidType(), [byte, I32, I32, I32])
    )
    block = b.mul(w["size"], w["run"])

    def item(it):
        o, j = divmod_(b, it, w["count"])
        base = b.gep(src0, [b.mul(o, block)])
        ahead = b.add(j, w["ahead"])
        with b.if_then(b.icmp_signed("<", ahead, w["count"])):
            later = b.load(b.gep(index, [ahead]))
            with b.if_then(b.icmp_unsigned("<", later, w["size"]), likely=True):
                at = b.gep(base, [b.mul(later, w["run"])])
                b.call(
                    prefetch, [at, ir.Constant(I32, 0), ir.Constant(I32, 3), ir.Constant(I32, 1)]
                )
        v = b.load(b.gep(index, [j]))
        with b.if_else(b.icmp_unsigned("<", v, w["size"]), likely=True) as (good, bad):
            with good:
                src = b.gep(base, [b.mul(v, w["run"])])
                dst = b.gep(out0, [b.mul(it, w["run"])])

                def chunk(k):
                    p = b.bitcast(b.gep(src, [k]), vt.as_pointer())
                    q = b.bitcast(b.gep(dst, [k]), vt.as_pointer())
                    store(b, q, b.load(p, align=1), VECTOR if stream else 1, stream)

                done = loops.counted(i64(0), w["run"], VECTOR, chunk, "copy")
                if not stream:
                    rest = b.sub(w["run"], done)
                    with b.if_then(b.icmp_signed(">", rest, i64(0))):
                        mask = lanes_below(b, rest, VECTOR)
                        p = b.bitcast(b.gep(src, [done]), vt.as_pointer())
                        value = masked_load(b, p, 1, mask)
                        q = b.bitcast(b.gep(dst, [done]), vt.as_pointer())
                        store_first(b, value, q, 1, rest, mask)
            with bad:
                b.atomic_rmw("min", error, j, "monotonic")

    finish(fn, b, loops, item, fence=stream)


def streams(out, run_bytes: int) -> bool:
    """Whether the streaming kernel may write `out` (whole aligned lines a run)."""
    return run_bytes % VECTOR == 0 and host_ptr(out, "take_rows") % VECTOR == 0


def take_rows(
    out, src, index, outer: int, size: int, run_bytes: int, stream: bool = False,
    record: list | None = None,
) -> int | None:  # fmt: skip
    """out[o, j] = src[o, index[j]] for runs of `run_bytes` (impls; src and out contiguous,
    index int64 and contiguous); None, or the first bad index value (nothing was copied
    for it). `stream` (only where `streams` allows it) stores past the caches. `record`
    (a list) gets (kernel, words, work items, bytes moved): out, src, index and the error
    word are its first words."""
    count = index.numel()
    error = handwritten.HostRunner()
    try:
        word = error.scratch([INT64_MAX])
        assert not stream or streams(out, run_bytes)
        symbol = STREAM_SYMBOL if stream else SYMBOL
        fn = handwritten.compiled(SYMBOL, _emit, tiered=False)[symbol]
        words = [
            host_ptr(out, "take_rows"),
            host_ptr(src, "take_rows"),
            host_ptr(index, "take_rows"),
            word,
            size,
            run_bytes,
            count,
            AHEAD,
        ]
        moved = 2 * outer * count * run_bytes
        launch(fn, words, outer * count, moved, 1)
        if record is not None:
            record.append((fn, words, outer * count, moved))
        (bad,) = error.read(word, 1)
        return None if bad == INT64_MAX else error.read(index.data_ptr() + 8 * bad, 1)[0]
    finally:
        error.close()
