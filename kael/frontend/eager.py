"""The one door from eager ops into the compiler: graph -> Kernel -> compiled code -> launch.

An op builds a small graph once per signature (its kernel template), and every call
plans the launch layout from the actual shapes and strides, fetches the compiled
kernel for that layout from the cache and runs it. Every byte that a tensor copy,
conversion or fill writes goes through here.
"""

from __future__ import annotations

import ctypes
import dataclasses
import math
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass

from kael.codegen.cpu import jit, native_launch, parallel
from kael.codegen.cpu import reduce as cpu_reduce
from kael.codegen.cpu.loops import tile_size
from kael.codegen.lowering import LONG_OPS
from kael.codegen.ptx.launch import launch as gpu_launch
from kael.ir import expr as x
from kael.ir import graph as g
from kael.ir import layout
from kael.ir.kernel import BCAST, CONTIG, Kernel
from kael.ir.ops import FAULTS, FLAG
from kael.ir.reduction import ARG_OPS, ROWS, ReducePlan, Reduction, plan_reduction
from kael.ir.scheduler import schedule_elementwise, schedule_reduction
from kael.runtime import cuda_driver, debug, launches, staging, sync
from kael.runtime.convert import CHECKED, convert_scalar, to_float32, to_half_precision
from kael.runtime.device import CPU
from kael.runtime.dtypes import (
    FLOAT_CATEGORY,
    DType,
    bfloat16,
    bool_,
    float32,
    float64,
    int16,
    int32,
    int64,
)
from kael.runtime.errors import Error
from kael.runtime.launcher import PROMOTE_BYTES, count_launch, launch, optimize, runs_inline
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl, contiguous_strides
from kael.runtime.threadpool import get_num_threads
from kael.runtime.tracestate import state as _trace_state


def _streaming_threshold() -> int:
    """Outputs at least this large bypass the caches with streaming stores.

    Three quarters of the last-level cache, as glibc's memcpy does: below it the output
    is still cache-resident when read next (measured in benchmarks/bench_copy.py).
    """
    try:
        llc = os.sysconf("SC_LEVEL3_CACHE_SIZE")
    except (ValueError, OSError, AttributeError):
        llc = 0
    return llc * 3 // 4 if llc > 0 else 24 << 20


NONTEMPORAL_BYTES = _streaming_threshold()


def streams(out_bytes: int, moved_bytes: int) -> bool:
    """Whether an output of `out_bytes`, in an op that reads and writes `moved_bytes` in all,
    is stored past the caches: when it is too big to stay cached for the next op, or when
    the op's whole traffic is twice that, so its inputs push it out anyway (int8 a + b of
    16M: 48 MB; its write-allocate reads cost 2.56 -> 1.9 ms on a 32 MB L3)."""
    return out_bytes >= NONTEMPORAL_BYTES or moved_bytes >= 2 * NONTEMPORAL_BYTES


# Rows shorter than this store through the caches however large the output: a streamed row
# peels to a cache line, then writes partial lines (rows of 27 float32 ran at 2 GB/s
# streamed, 20 GB/s through the caches).
STREAM_ROW_BYTES = 4096

parallel.install()
native_launch.install()
_native_launch = native_launch.launcher()


class Template:
    """One op signature's scheduled kernel (a Kernel or a Reduction) and its scalar names.

    Hashed by identity: the launch caches below key by the template object itself, which
    keeps it alive, so no other template can ever take over its key (an `id()` can be
    reused once its object dies). Unpacks as `(kernel, scalar names)`.
    """

    __slots__ = ("kernel", "scalars", "uses_index")

    def __init__(self, kernel: Kernel | Reduction, scalars: list[str]) -> None:
        self.kernel = kernel
        self.scalars = scalars
        self.uses_index = isinstance(kernel, Kernel) and kernel.uses_index

    def __iter__(self):
        return iter((self.kernel, self.scalars))


_templates: dict[tuple, Template] = {}
# (template, rank, inners, tiled, streaming, on cpu) -> (specialized kernel, CPU code).
_specialized: dict[tuple, tuple[Kernel, jit.CompiledKernel | None]] = {}
_templates_lock = sync.lock()


def template(key: tuple, build: Callable[[], tuple[str, list[g.Node]]]) -> Template:
    """The kernel template of one op signature and its scalar names, scheduled once."""
    return _scheduled(_templates, key, build, schedule_elementwise)


def _scheduled(cache: dict, key: tuple, build: Callable, schedule: Callable) -> Template:
    """cache[key], else the template scheduled from `build`'s name and outputs.

    Two threads may both schedule a new signature; the first to store it wins and both
    use that one.
    """
    entry = cache.get(key)
    if entry is None:
        name, outputs = build()
        kernel, _, scalars = schedule(name, outputs)
        with _templates_lock:
            entry = cache.setdefault(key, Template(kernel, scalars))
    return entry


_fused: dict[Kernel | Reduction, Template] = {}


def fused_template(kernel: Kernel | Reduction) -> Template:
    """The one template of a kernel fusion built (compiled plans), whose parameters are
    named p0, p1, ..."""
    entry = _fused.get(kernel)
    if entry is None:
        made = Template(kernel, [f"p{i}" for i in range(len(kernel.params))])
        with _templates_lock:
            entry = _fused.setdefault(kernel, made)
    return entry


def param_word(value, dtype: DType) -> int:
    """A run-time parameter as its int64 argument word (floats as float64 bits)."""
    return _param_word(value, dtype)


def _param_word(value, dtype: DType) -> int:
    if dtype.category == FLOAT_CATEGORY:  # is_floating_point, without the property's call
        return _AS_INT64(_AS_FLOAT64(value))[0]
    return int(value)


_AS_FLOAT64, _AS_INT64 = struct.Struct("<d").pack, struct.Struct("<q").unpack


@dataclass(frozen=True, slots=True)
class _Plan:
    """Everything about a launch that depends only on the kernel, shapes and strides."""

    kernel: Kernel  # specialized for the layout
    compiled: jit.CompiledKernel | None  # None on a GPU
    tail: list[int]  # sizes, then each buffer's strides
    elements: int
    total: int  # work items: elements, or tiles
    align: int
    moved: int  # bytes read and written
    faults: bool  # whether the argument block ends with an error word
    # the inline launch: words (each operand's address, the parameters, the error word's
    # address) into the template; None on a GPU
    native: native_launch.Descriptor | None = None


def _layout(entry: Template, out: TensorImpl, impls, streaming: bool):
    """(the launch layout, whether the output takes streaming stores)."""
    lay = layout.plan(out.shape, [t.strides for t in impls], keep_dims=entry.uses_index)
    out_bytes = out.numel() * out.dtype.itemsize
    read = sum(
        t.numel() * t.dtype.itemsize
        for t, inner in zip(impls[1:], lay.inners[1:], strict=True)
        if inner == CONTIG
    )
    stream = (
        streaming
        and streams(out_bytes, out_bytes + read)
        and lay.sizes[-1] * out.dtype.itemsize >= STREAM_ROW_BYTES
        and not lay.tiled
        and lay.inners[0] == CONTIG
        and all(i in (CONTIG, BCAST) for i in lay.inners)
    )
    return lay, stream


# A streaming elementwise kernel whose body is long (vector math, Philox) fetches its first
# unit-stride input STREAM_FETCH_BYTES ahead: its loads come too far apart for the hardware
# prefetchers alone to keep the memory busy (16M float32 on a 2-core Zen 3: elu 5.3 -> 4.5
# ms, tanhshrink 7.4 -> 6.9, mish and silu 3-5% faster; 4 KiB and 32 KiB measured alike).
STREAM_FETCH_BYTES = 4 << 10
STREAM_FETCH = True  # a switch for in-process A/B measurements


def _specialize(entry: Template, lay, stream: bool, on_cpu: bool) -> Kernel:
    """The elementwise template for this launch layout, its first unit-stride input
    fetched ahead where it streams its output from a long body on the host."""
    kernel = entry.kernel.specialize(lay.rank, lay.inners, lay.tiled, stream)
    if not (STREAM_FETCH and on_cpu and stream) or kernel.prefetch >= 0:
        return kernel
    if not any(x.uses_ops(e, LONG_OPS) for e in kernel.exprs):
        return kernel
    for i, buf in enumerate(kernel.inputs):
        if buf.inner == CONTIG:
            ahead = STREAM_FETCH_BYTES // buf.dtype.itemsize
            return dataclasses.replace(kernel, prefetch=i, fetch_ahead=ahead)
    return kernel


def specialized(entry: Template, outs, ins, axes=None, streaming: bool = True, fetch=True):
    """The Kernel or Reduction a launch over operands of these layouts runs (as `prepare`
    would launch it), without compiling it."""
    if axes is None:
        lay, stream = _layout(entry, outs[0], (*outs, *ins), streaming)
        return _specialize(entry, lay, stream, outs[0].device is CPU)
    reduce_axes, keepdim = axes
    lay = _reduction_layout(outs, ins, ins[0].shape, reduce_axes, keepdim)
    return _launched(entry.kernel.specialize(lay), lay, outs, ins, fetch)


def _plan(
    entry: Template,
    out: TensorImpl,
    impls: tuple[TensorImpl, ...],
    streaming: bool = True,
    compile: bool = True,
    optimized: bool = False,
) -> _Plan:
    """The launch plan; with compile=False its CPU code is left None (not compiled yet),
    with optimized=True a kernel new to the process is linked optimized, not at tier 0."""
    lay, stream = _layout(entry, out, impls, streaming)
    n = out.numel()
    moved = sum(t.numel() * t.dtype.itemsize for t in impls)
    on_cpu = out.device is CPU
    key = (entry, lay.rank, lay.inners, lay.tiled, stream, on_cpu)
    hit = _specialized.get(key)
    if hit is None:
        specialized = _specialize(entry, lay, stream, on_cpu)
        hit = (specialized, None)
        if compile or not on_cpu:
            # a first launch that would promote tier-0 code compiles the optimized at once
            big = optimized or moved >= PROMOTE_BYTES
            hit = _specialized[key] = (specialized, jit.get(specialized, big) if on_cpu else None)
    specialized, compiled = hit
    if optimized and compiled is not None:  # linked at tier 0 by an eager call before
        optimize(compiled.fn)
    tail = list(lay.sizes)
    for st in lay.strides:
        tail += st
    if lay.tiled:
        *outer, rows, cols = lay.sizes
        tile = tile_size(specialized)
        total = -(-rows // tile) * -(-cols // tile)
        for size in outer:
            total *= size
        align = 1
    else:
        total, align = n, 64
    faults = specialized.may_fault
    native = None
    if compiled is not None and total > 0:
        words = [0] * len(impls) + tail + [0] * (len(entry.kernel.params) + faults)
        positions = [*range(len(impls)), *range(len(impls) + len(tail), len(words))]
        native = native_launch.describe(compiled.fn, words, positions, moved // total)
    return _Plan(specialized, compiled, tail, n, total, align, moved, faults, native)


# The fast doors capturing a first call (fastpath.keyed), one entry each: nearly always
# empty, so a launch asks one truth test; while not, `capture` (bound by fastpath, which
# imports this module) is offered each launch (the plan, outputs, inputs, their addresses
# and the parameter words).
capturing: list = []
capture = None

# Launch plans by (template, device, shape, strides of every operand): a repeated call
# skips the layout planning. Bounded, since shapes are unbounded.
_plans: dict[tuple, _Plan] = {}
_MAX_PLANS = 4096


def run(
    entry: Template,
    outs: list[TensorImpl],
    ins: list[TensorImpl],
    scalars: dict | None = None,
) -> bool:
    """Launch a template over the index space of `outs[0]`; every operand has that shape.

    Returns whether a "flag" op in the kernel saw a true value anywhere. A kernel that can
    fault (integer division) and writes over one of its inputs (`a //= b`) runs into a
    temporary first, so an op that raises leaves its operands as they were.
    """
    kernel, names = entry
    out = outs[0]
    device = out.device
    impls = (*outs, *ins)
    for t in impls:
        if t.device is not device:
            ins = _scalars_moved(outs, ins, device)
            impls = (*outs, *ins)
            break
    trace = _trace_state.trace
    if trace is not None:
        return out.numel() != 0 and trace.record(entry, outs, ins, scalars)
    sig = (entry, device, out.shape, *[t.strides for t in impls])
    plan = _plans.get(sig)
    if plan is None:
        if out.numel() == 0:
            return False
        if len(_plans) >= _MAX_PLANS:
            _plans.clear()
        plan = _plans[sig] = _plan(entry, out, impls)
    if plan.faults and any(o.storage.overlaps(t.storage) for o in outs for t in ins):
        return _run_then_copy(entry, outs, ins, scalars)
    words = [t.data_ptr() for t in impls]
    params = [_param_word(scalars[name], d) for name, d in zip(names, kernel.params)]
    error = _ErrorWord(device) if plan.faults else None
    if error is not None:
        params.append(error.address)
    if capturing:  # a keyed door captures this call: offered before it runs, kept after
        capture(plan, outs, ins, words, params)
    native = plan.native
    if (
        native is not None
        and (plan.moved < PROMOTE_BYTES or runs_inline(plan.compiled.fn, plan.moved))
        and launches.recorder is None
        and debug.level < 1
    ):  # launcher.launch without its Python: the descriptor holds every other word
        count_launch(plan.compiled.fn)  # as launch_block counts it
        _native_launch(native.address, plan.total, *words, *params)
        return error is not None and error.check()
    words += plan.tail
    words += params
    if plan.compiled is None:
        gpu_launch(plan.kernel, words, plan.elements)
    else:
        launch(plan.compiled.fn, words, plan.total, plan.moved, plan.align, shape=out.shape)
    return error is not None and error.check()


def _scalars_moved(outs, ins, device) -> list[TensorImpl]:
    """`ins` with each CPU input that reads one element copied to the GPU `device`: a CPU
    0-d tensor, broadcast, which its op reads as a scalar there (outputs.device_of admitted
    it, as PyTorch's TensorIterator admits CPU scalars); kael.Error for any other operand
    on another device."""
    moved = [_scalar_on(t, device) if _cpu_scalar(t, device) else t for t in ins]
    for t in (*outs, *moved):
        if t.device is not device:
            raise Error(f"expected all tensors on one device, but found {device} and {t.device}")
    return moved


def _cpu_scalar(t: TensorImpl, device) -> bool:
    """Whether t is a CPU input that reads one element beside a GPU output."""
    one = all(size == 1 or stride == 0 for size, stride in zip(t.shape, t.strides))
    return one and t.device is CPU and device is not CPU


def _scalar_on(t: TensorImpl, device) -> TensorImpl:
    """t's one element copied to `device`, read at every position of t's shape. Under
    tracing the op runs eagerly instead: a copy made now would freeze the element."""
    trace = _trace_state.trace
    if trace is not None:
        trace.host_read(f"a CPU scalar operand of a kernel on {device}")
    size = t.dtype.itemsize
    storage = Storage(size, device)
    staging.copy_to_device(storage.ptr, t.data_ptr(), size)
    return TensorImpl(storage, t.shape, (0,) * len(t.shape), 0, t.dtype, device)


def _run_then_copy(entry: Template, outs, ins, scalars) -> bool:
    """run() into fresh contiguous outputs, copied over `outs` only once nothing faulted."""
    temps = [
        TensorImpl(
            Storage(o.numel() * o.dtype.itemsize, o.device),
            o.shape,
            contiguous_strides(o.shape),
            0,
            o.dtype,
            o.device,
        )
        for o in outs
    ]
    flag = run(entry, temps, ins, scalars)
    for o, t in zip(outs, temps):
        copy_into(o, t)
    return flag


class _ErrorWord:
    """The int64 a faulting kernel writes a code into (kael.ir.ops.FAULTS); 0 means none."""

    __slots__ = ("device", "cell", "storage")

    def __init__(self, device) -> None:
        self.device = device
        self.cell = ctypes.c_int64(0)
        self.storage = None
        if device is not CPU:
            self.storage = Storage(8, device)
            staging.copy_to_device(self.storage.ptr, ctypes.addressof(self.cell), 8)

    @property
    def address(self) -> int:
        return self.storage.ptr if self.storage is not None else ctypes.addressof(self.cell)

    def check(self) -> bool:
        """Raise the fault a kernel reported; True when it only raised the flag."""
        if self.storage is not None:
            cuda_driver.memcpy_dtoh(ctypes.addressof(self.cell), self.storage.ptr, 8)
        code = self.cell.value
        if code in FAULTS:
            op, message = FAULTS[code]
            raise Error(f"{op}: {message}")
        return code == FLAG


def _scalar(dtype: DType, name: str) -> g.Scalar:
    return g.Scalar(dtype, (), name)


def _position(dtype: DType, axis: int = 0) -> g.Node:
    return g.Position(dtype, (), axis)


def _bin(op: str, a: g.Node, b: g.Node) -> g.Binary:
    return g.Binary(bool_ if op == "eq" else a.dtype, (), op, a, b)


def copy_template(src: DType, dst: DType) -> Template:
    """The converting copy from `src` to `dst` elements."""
    return template(
        ("copy", src, dst),
        lambda: (f"copy_{src}_to_{dst}", [g.Cast(dst, (), g.Input(src, (), "src"))]),
    )


# A same-dtype copy whose inner dim is this many bytes, unit-stride on both sides, copies
# each inner row as one integer word of that width.
_WORDS = {2: int16, 4: int32, 8: int64}


def as_words(dst: TensorImpl, src: TensorImpl) -> tuple[TensorImpl, TensorImpl] | None:
    """dst and src with their inner dim (2 to 8 bytes in all, unit stride in both, every
    other stride and the offsets whole rows) as one integer word: the copy kernel then loops
    over the next dim, not over 2 floats (a transposing copy of [64, 16, 64, 2] float32:
    245 -> 34 us). None where the layouts do not allow it."""
    if not dst.shape or dst.strides[-1] != 1 or src.strides[-1] != 1 or dst.dtype is bool_:
        return None  # (a bool copy writes each byte as 0 or 1, whatever byte it read)
    n = dst.shape[-1]
    word = _WORDS.get(n * dst.dtype.itemsize) if n > 1 else None
    if word is None:
        return None
    views = []
    for t in (dst, src):
        if t.offset % n or any(s % n for s in t.strides[:-1]):
            return None
        strides = tuple(s // n for s in t.strides[:-1])
        views.append(TensorImpl(t.storage, t.shape[:-1], strides, t.offset // n, word, t.device))
    return views[0], views[1]


def copy_into(dst: TensorImpl, src: TensorImpl) -> None:
    """dst[...] = src converted to dst's dtype; src already has dst's shape. A copy within
    one dtype moves bits: bfloat16 as int16 (its float32 round trip would make every NaN
    0x7fc0), small inner rows as one word each (as_words)."""
    if dst.dtype.llvm is None or src.dtype.llvm is None:  # complex: its float view
        from kael.frontend import complex

        return complex.copy_into(dst, src)
    if src.dtype is dst.dtype and _trace_state.trace is None:  # a trace knows no bit views
        words = as_words(dst, src)
        if words is not None:
            return run(copy_template(words[0].dtype, words[0].dtype), [words[0]], [words[1]])
    bits = src.dtype is dst.dtype is bfloat16  # the int16 kernel reads the same two bytes
    run(copy_template(int16, int16) if bits else copy_template(src.dtype, dst.dtype), [dst], [src])


def fill_template(dtype: DType) -> Template:
    """The kernel setting every element to the run-time parameter `value`."""
    return template(("fill", dtype), lambda: (f"fill_{dtype}", [_scalar(dtype, "value")]))


def fill(dst: TensorImpl, value) -> None:
    """Every element of dst set to the Python scalar `value`, converted to dst's dtype (a
    PyTorch Scalar: an int beyond int64 that uint64 holds fills float and bool tensors)."""
    if dst.dtype.llvm is None:  # complex: its parts
        from kael.frontend import complex

        return complex.fill(dst, value)
    run(fill_template(dst.dtype), [dst], [], {"value": convert_scalar(value, dst.dtype, CHECKED)})


def arange_template(dtype: DType) -> Template:
    """The kernel writing start + i * step (run-time parameters in arange_wide(dtype))."""
    wide = arange_wide(dtype)

    def build():
        value = _bin(
            "add", _scalar(wide, "start"), _bin("mul", _position(wide), _scalar(wide, "step"))
        )
        return f"arange_{dtype}", [g.Cast(dtype, (), value)]

    return template(("arange", dtype), build)


def arange_wide(dtype: DType) -> DType:
    """arange's arithmetic: int64 for integer dtypes, else float64 (then rounded)."""
    return float64 if dtype.is_floating_point else int64


def arange_into(dst: TensorImpl, start, step) -> None:
    """dst[i] = start + i * step, in int64 for integer dtypes, else float64 then rounded."""
    wide = arange_wide(dst.dtype)
    k = arange_template(dst.dtype)
    run(k, [dst], [], {"start": convert_scalar(start, wide), "step": convert_scalar(step, wide)})


def linspace_into(dst: TensorImpl, start: float, end: float) -> None:
    """PyTorch's linspace: positions below steps // 2 count up from start, the rest down
    from end (the last is exactly end), each value start + step * i as one fused
    multiply-add (PyTorch's compiled loop contracts it): float32, float64 and the integers
    evaluate it exactly in float64 (an error-free product and sum) and round once;
    float16/bfloat16 round every operation to the dtype, as c10::Half arithmetic does."""
    steps, dtype = dst.numel(), dst.dtype
    if steps == 0:
        return
    if steps == 1:  # PyTorch fills start: step would divide by zero
        fill(dst, start)
        return
    if dtype.is_half:
        _linspace_half(dst, start, end)
        return
    if dtype is float32:
        start, end = to_float32(start), to_float32(end)
        step = to_float32(to_float32(end - start) / to_float32(float(steps - 1)))
    elif not dtype.is_floating_point:  # start and end become the dtype's integers first
        start, end = (float(convert_scalar(v, dtype, CHECKED)) for v in (start, end))
        step = (end - start) / (steps - 1)
    else:
        step = (end - start) / (steps - 1)
    # The split of step * i overflows past here: a plain product and sum instead.
    exact = abs(step) * steps < 1e290 and math.isfinite(step)
    k = template(("linspace", dtype, exact), lambda: _linspace_graph(dtype, exact))
    scalars = {"start": start, "end": end, "step": step, "neg_step": -step, "last": steps - 1}
    run(k, [dst], [], {**scalars, "halfway": steps // 2})


def _linspace_parts() -> tuple[g.Node, g.Node, g.Node]:
    """(base, signed step, count) of each position: (start, step, i) below halfway, else
    (end, -step, steps - 1 - i)."""
    pos = _position(int64)
    up = _bin("lt", pos, _scalar(int64, "halfway"))
    count = g.Where(int64, (), up, pos, _bin("sub", _scalar(int64, "last"), pos))
    base = g.Where(float64, (), up, _scalar(float64, "start"), _scalar(float64, "end"))
    step = g.Where(float64, (), up, _scalar(float64, "step"), _scalar(float64, "neg_step"))
    return base, step, count


def _linspace_graph(dtype: DType, exact: bool) -> tuple[str, list[g.Node]]:
    base, a, count = _linspace_parts()
    k = g.Cast(float64, (), count)
    p = _bin("mul", a, k)
    if not exact:
        return f"linspace_{dtype}", [g.Cast(dtype, (), _bin("add", base, p))]
    # Veltkamp splits give p's rounding error e exactly; Knuth's two-sum gives s's.
    a_hi, a_lo = _split(a)
    k_hi, k_lo = _split(k)
    e = _bin("sub", _bin("mul", a_hi, k_hi), p)
    e = _bin("add", _bin("add", e, _bin("mul", a_hi, k_lo)), _bin("mul", a_lo, k_hi))
    e = _bin("add", e, _bin("mul", a_lo, k_lo))
    s = _bin("add", base, p)
    b_part = _bin("sub", s, base)
    err = _bin("add", _bin("sub", base, _bin("sub", s, b_part)), _bin("sub", p, b_part))
    value = _bin("add", s, _bin("add", err, e))
    return f"linspace_{dtype}", [g.Cast(dtype, (), value)]


def _split(x: g.Node) -> tuple[g.Node, g.Node]:
    """x as hi + lo, each of at most 26 significant bits (Veltkamp, 2**27 + 1)."""
    t = _bin("mul", g.Const(float64, (), 134217729.0), x)
    hi = _bin("sub", t, _bin("sub", t, x))
    return hi, _bin("sub", x, hi)


def _linspace_half(dst: TensorImpl, start: float, end: float) -> None:
    """linspace in float16/bfloat16 arithmetic: every product and sum rounded to the dtype."""
    dtype, steps = dst.dtype, dst.numel()
    start, end = to_half_precision(start, dtype), to_half_precision(end, dtype)
    span = to_half_precision(end - start, dtype)
    step = to_half_precision(span / to_half_precision(float(steps - 1), dtype), dtype)

    def build():
        base, a, count = _linspace_parts()

        def rounded(x: g.Node) -> g.Node:
            return g.Cast(float64, (), g.Cast(dtype, (), x))

        product = rounded(_bin("mul", a, rounded(g.Cast(float64, (), count))))
        return f"linspace_{dtype}", [g.Cast(dtype, (), _bin("add", base, product))]

    k = template(("linspace", dtype), build)
    scalars = {"start": start, "end": end, "step": step, "neg_step": -step, "last": steps - 1}
    run(k, [dst], [], {**scalars, "halfway": steps // 2})


def eye_into(dst: TensorImpl) -> None:
    """dst[i, j] = 1 where i == j, else 0."""

    def build():
        diag = _bin("eq", _position(int64, 0), _position(int64, 1))
        return f"eye_{dst.dtype}", [g.Cast(dst.dtype, (), diag)]

    k = template(("eye", dst.dtype), build)
    run(k, [dst], [])


# ---- reductions ------------------------------------------------------------------------------

_reduction_templates: dict[tuple, Template] = {}
# (template, device, shape, axes, keepdim, threads, strides of every operand) -> plan.
_reduction_plans: dict[tuple, _ReductionPlan] = {}


def reduction_template(key: tuple, build: Callable[[], tuple[str, list[g.Node]]]) -> Template:
    """The reduction kernel of one op signature and its scalar names, scheduled once.

    `build` returns a name and output nodes, each an epilogue over one Reduce node
    whose operand (the prologue) is built on shape-() Input nodes.
    """
    return _scheduled(_reduction_templates, key, build, schedule_reduction)


@dataclass(frozen=True, slots=True)
class _ReductionPlan:
    kernel: Reduction  # specialized for the layout
    compiled: cpu_reduce.CompiledReduction | None  # None on a GPU
    layout: ReducePlan
    tail: list[int]  # sizes, strides, length, blocks, chunks
    moved: int
    paired: bool  # a second accumulator: scratch for its partials too
    faults: bool  # whether the argument block ends with an error word (an epilogue's flag)


def _reduction_layout(outs, ins, shape, axes, keepdim) -> ReducePlan:
    kept_axes = [d for d in range(len(shape)) if d not in axes]
    if keepdim:
        out_strides = [tuple(t.strides[d] for d in kept_axes) for t in outs]
    else:
        out_strides = [t.strides for t in outs]
    threads = get_num_threads()
    return plan_reduction(shape, axes, out_strides, [t.strides for t in ins], threads)


# A ROWS reduction whose unit-stride input is at least FETCH_FROM_BYTES (past the L2s)
# fetches it FETCH_AHEAD_BYTES ahead of its loads: the hardware prefetchers alone left
# kael's sums 1.2-1.4x PyTorch's time on 64 MiB; with it they run at 0.8x (sum over dim 1
# of 4096x4096, float32, 2 threads; distances of 16-64 KiB measured alike, 4 KiB no help).
FETCH_FROM_BYTES = 4 << 20
FETCH_AHEAD_BYTES = 32 << 10


# Host rows an arg op reduces one output per lane while they are shorter than this many of
# its lanes (an index of the extreme is the same whatever order the elements come in):
# float32 argmax of [1000, 20], 43 -> 12 us; of [1000, 64], 49 -> 29. The lanes' setup
# and folds cost more than such rows' elements (rows of ~8 to 14 lanes' worth break even).
ARG_SHORT_LANES = 4


def _shortened(red: Reduction, lay, host: bool) -> Reduction:
    """`red`'s variant for short rows (one output per lane), where this launch has such
    rows in one block: shorter than its lanes, or than ARG_SHORT_LANES of them for an arg
    op on the host. A kernel of its own, so the common one stays small and quick to
    compile."""
    limit = cpu_reduce.row_lanes(red)
    if host and red.op in ARG_OPS:
        limit *= ARG_SHORT_LANES
    if lay.schedule != ROWS or lay.blocks != 1 or lay.length >= limit:
        return red
    return dataclasses.replace(red, short=True)


def _fetching(red: Reduction, ins) -> Reduction:
    """`red` fetching its first input ahead where it streams a large input from memory."""
    source = ins[0]
    big = source.numel() * source.dtype.itemsize >= FETCH_FROM_BYTES
    if not big or red.schedule != ROWS or red.prefetch >= 0 or red.inputs[0].inner != CONTIG:
        return red
    ahead = FETCH_AHEAD_BYTES // source.dtype.itemsize
    return dataclasses.replace(red, prefetch=0, fetch_ahead=ahead)


def _launched(red: Reduction, lay, outs, ins, fetch: bool) -> Reduction:
    """The variant of the specialized `red` this launch runs on the host: for short rows
    (_shortened), fetching a large input ahead (_fetching, unless `fetch` is False)."""
    host = outs[0].device is CPU
    red = _shortened(red, lay, host)  # a GPU too: it sums floats in the host's order
    if not host:
        return red
    return _fetching(red, ins) if fetch else red


def _reduction_plan(
    kernel: Reduction,
    outs,
    ins,
    shape,
    axes,
    keepdim,
    compile: bool = True,
    fetch=True,
    optimized: bool = False,
) -> _ReductionPlan:
    lay = _reduction_layout(outs, ins, shape, axes, keepdim)
    on_cpu = outs[0].device is CPU
    specialized = _launched(kernel.specialize(lay), lay, outs, ins, fetch)
    moved = sum(t.numel() * t.dtype.itemsize for t in (*outs, *ins))
    big = optimized or moved >= PROMOTE_BYTES  # see _plan
    compiled = cpu_reduce.get(specialized, big) if on_cpu and compile else None
    tail = [*lay.kept, *lay.reduced]
    for st in lay.out_strides + lay.in_strides:
        tail += st
    tail += [*lay.index_strides, lay.length, lay.blocks, lay.chunks, lay.columns]
    return _ReductionPlan(
        specialized, compiled, lay, tail, moved, specialized.paired, specialized.may_fault
    )


def _cached_reduction_plan(entry: Template, outs, ins, axes, keepdim) -> _ReductionPlan:
    """The plan run_reduction launches (and the fast door's `prepare` then remembers): one
    layout planning per signature, not one per asker."""
    sig = (entry, outs[0].device, ins[0].shape, axes, keepdim, get_num_threads())
    sig += tuple(t.strides for t in (*outs, *ins))
    plan = _reduction_plans.get(sig)
    if plan is None:
        if len(_reduction_plans) >= _MAX_PLANS:
            _reduction_plans.clear()
        plan = _reduction_plans[sig] = _reduction_plan(
            entry.kernel, outs, ins, ins[0].shape, axes, keepdim
        )
    return plan


def run_reduction(
    entry: Template,
    outs: list[TensorImpl],
    ins: list[TensorImpl],
    axes: tuple[int, ...],
    keepdim: bool = False,
    scalars: dict | None = None,
) -> bool:
    """Reduce the inputs (all of one shape) over `axes` into `outs`, in one launch per pass.

    `outs` have the kept shape, with the reduced dims as size 1 when `keepdim`. Returns
    whether an epilogue's "flag" op saw a true value for some output.
    """
    kernel, names = entry
    device = outs[0].device
    for t in (*outs, *ins):
        if t.device is not device:
            raise Error(f"expected all tensors on one device, but found {device} and {t.device}")
    trace = _trace_state.trace
    if trace is not None:
        return outs[0].numel() != 0 and trace.record(entry, outs, ins, scalars, (axes, keepdim))
    if outs[0].numel() == 0:
        return False
    plan = _cached_reduction_plan(entry, outs, ins, axes, keepdim)
    lay = plan.layout
    held, scratch = None, [0, 0]  # held: the scratch storage, kept until the launches end
    scratch_bytes = _scratch_bytes(plan) if lay.blocks > 1 else None
    if scratch_bytes is not None and device is CPU:
        held, *scratch = scratch_storage(scratch_bytes)
    words = [t.data_ptr() for t in (*outs, *ins)]
    words += scratch
    words += plan.tail
    if names:
        words += [_param_word(scalars[name], d) for name, d in zip(names, plan.kernel.params)]
    error = _ErrorWord(device) if plan.faults else None
    if error is not None:
        words.append(error.address)
    if plan.compiled is None:
        from kael.codegen.ptx.reduce import launch as gpu_reduce

        gpu_reduce(plan.kernel, words, lay)
        return error is not None and error.check()
    fn = plan.compiled
    shape = outs[0].shape
    launch(fn.main, words, lay.work_items, plan.moved, 1, shape=shape)
    if lay.blocks > 1:
        launch(fn.final, words, lay.outputs, scratch_bytes[0], 1, shape=shape)
    return error is not None and error.check()


# ---- prepared launches ---------------------------------------------------------------------------


def _scratch_bytes(plan: _ReductionPlan) -> tuple[int, int]:
    """Bytes of a reduction's partials (one accumulator per output and block) and of its
    index scratch (one int64 per partial for arg ops, else one word)."""
    lay = plan.layout
    partials = lay.outputs * lay.blocks
    return partials * plan.kernel.acc.itemsize, partials * 8 if plan.paired else 8


def scratch_storage(scratch: tuple[int, int]) -> tuple[Storage, int, int]:
    """One host storage for a reduction's partials and index scratch (`Prepared.scratch`
    bytes): (the storage, the partials' address, the indices' address, 64-byte aligned)."""
    partials = -(-scratch[0] // 64) * 64
    storage = Storage.host(partials + scratch[1])
    return storage, storage.ptr, storage.ptr + partials


@dataclass(slots=True)
class Prepared:
    """A CPU launch with every argument word fixed but the operands' addresses and the
    run-time parameters: what a compiled plan replays, per call, without planning."""

    fn: object
    tail: list[int]  # every word after the addresses (and a reduction's scratch)
    params: tuple[DType, ...]
    total: int
    moved: int
    align: int
    shape: tuple[int, ...]
    final: object = None  # a reduction's combining function, when blocks > 1
    outputs: int = 0  # a reduction's outputs
    scratch: tuple[int, int] | None = None  # a reduction's partials and index bytes
    reduction: bool = False
    # How work items map to the output: ELEMENTS (row-major elements, untiled), OUTPUTS (a
    # ROWS reduction: item i reduces block i % blocks of output i // blocks, over `length`
    # elements in all; `final` then combines each output's blocks), or "".
    walk: str = ""
    length: int = 0
    blocks: int = 1
    paired: bool = False  # a reduction whose index scratch holds one word per partial

    def words(
        self, pointers: list[int], params: list[int], scratch: bool = True
    ) -> tuple[list[int], list]:
        """The argument block for `pointers` (operands' addresses) and `params` (parameter
        words), and the scratch storages it points into (keep them until the launch ends);
        `scratch` False leaves a reduction's scratch addresses 0 (a row group's driver
        stores its own)."""
        words = pointers
        scratch = self.scratch if scratch else None
        held = []
        if scratch is not None:
            storage, partials, indices = scratch_storage(scratch)
            held = [storage]
            words += (partials, indices)
        elif self.reduction:
            words += (0, 0)
        words += self.tail
        if params:
            words += params
        return words, held

    def launch(self, pointers: list[int], params: list[int]) -> None:
        """Run it: `pointers` are the operands' addresses, `params` the parameters' words."""
        words, held = self.words(pointers, params)
        launch(self.fn, words, self.total, self.moved, self.align, shape=self.shape)
        if self.final is not None:
            launch(self.final, words, self.outputs, self.scratch[0], 1, shape=self.shape)
        del held


ELEMENTS, OUTPUTS = "elements", "outputs"


def prepare(
    entry: Template,
    outs,
    ins,
    axes=None,
    streaming: bool = True,
    compile: bool = True,
    fetch: bool = True,
    optimized: bool = False,
) -> Prepared | None:
    """The prepared launch of a template over operands of these layouts (impls; their
    storage is not read), or None where it needs eager.run (a GPU, an error word, no work).
    `axes` is a reduction's (axes, keepdim); `streaming` False keeps a large output in the
    caches (a row group's next kernel reads it). With compile=False, only the layout is
    worked out: `fn` and `final` are None (what a plan reads before choosing). `fetch`
    False: a reduction never fetches its input ahead itself (a row group's later member
    does it for it). `optimized`: the code runs optimized (a compiled plan's kernels run
    again and again): linked so at once where it is new, promoted where an eager call
    linked it at tier 0."""
    if outs[0].device is not CPU or outs[0].numel() == 0:
        return None
    if axes is None:
        plan = _plan(entry, outs[0], (*outs, *ins), streaming, compile, optimized)
        if plan.faults:
            return None
        return Prepared(
            plan.compiled.fn if plan.compiled else None, plan.tail, entry.kernel.params, plan.total, plan.moved,
            plan.align, outs[0].shape, walk="" if plan.kernel.tiled else ELEMENTS,
        )  # fmt: skip
    reduce_axes, keepdim = axes
    if compile and fetch and not optimized:  # what run_reduction ran: planned once
        plan = _cached_reduction_plan(entry, outs, ins, reduce_axes, keepdim)
    else:
        plan = _reduction_plan(
            entry.kernel, outs, ins, ins[0].shape, reduce_axes, keepdim, compile, fetch, optimized
        )
    if plan.faults:
        return None
    lay = plan.layout
    compiled = plan.compiled
    blocks = lay.blocks > 1
    scratch = _scratch_bytes(plan) if blocks else None
    return Prepared(
        compiled.main if compiled else None, plan.tail, plan.kernel.params, lay.work_items,
        plan.moved, 1, outs[0].shape, compiled.final if blocks and compiled else None,
        lay.outputs, scratch, True,
        OUTPUTS if lay.schedule == ROWS else "", lay.length, lay.blocks, plan.paired,
    )  # fmt: skip
