"""The softmax family: softmax, log_softmax, logsumexp, cross_entropy and layer_norm
(kael.nn.functional re-exports all but logsumexp, which torch.nn.functional lacks).

Rows along the last dimension(s) of a contiguous CPU tensor run the fused row kernels
of codegen/cpu/rows.py. Eager softmax, log_softmax and layer_norm of a cuda tensor whose
rows lie one stride apart run the GPU's (codegen/ptx/rows.py, by frontend/gpu_rows.py),
float16 and bfloat16 rows loaded as they are. Other layouts and devices of softmax,
log_softmax and logsumexp take the book's composed path of kael ops (amax and sum with
keepdim, sub, exp, log, div, where), and so does a trace: under @kael.compile those ops
fuse with the ops around them into one row group. From GENERATED_FROM_BYTES up, an eager
CPU call runs that composition as a compiled plan (faster than the row kernels, but each
new shape costs a trace). cross_entropy and layer_norm copy their rows contiguous first
(the class dim moved last); under a trace they are extern steps (their row kernels keep
numerics the composed ops lack: float64 moments, overflow-free squares). A plain eager
call of either that was seen before replays its launches (their fast doors, below).
Integer and bool inputs become float32 (the book's as_floating); float16 and bfloat16
inputs compute in float32 and round their results once (frontend/opmath.py). A complex
input is refused (kael.TypeError), as PyTorch's kernels refuse it, unless a dtype= converts
it first; logsumexp alone takes one, as PyTorch does: the max of the real parts shifts it.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable

from kael.codegen.cpu import native_launch, rows
from kael.frontend import (
    eager,
    factories,
    fastpath,
    gpu_rows,
    memory_formats,
    plan,
    reductions,
    views,
)
from kael.frontend import elementwise as ew
from kael.frontend.compiled import CompiledFunction
from kael.frontend.opmath import in_float32
from kael.frontend.outputs import copied_out, device_of, float_arg, output, tensor_arg
from kael.frontend.tensor import Tensor, clone_impl, empty_impl
from kael.runtime import user_warning
from kael.runtime.device import CPU
from kael.runtime.dtypes import (
    INT64_MAX,
    as_dtype,
    float32,
    float64,
    get_default_dtype,
    int64,
    uint8,
)
from kael.runtime.errors import IndexError, TypeError, ValueError
from kael.runtime.launcher import replayable
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl, format_shape, host_ptr, shape_numel
from kael.runtime.threadpool import get_num_threads
from kael.runtime.tracestate import state

REDUCTIONS = ("mean", "sum", "none")


# ---- operands --------------------------------------------------------------------------------


def _as_floating(x, op: str, dtype=None) -> Tensor:
    """x as a floating tensor: `dtype` when given, else its own float dtype or float32."""
    x = tensor_arg(x, op, "input")
    if dtype is None and x.dtype.is_complex:
        from kael.frontend.complex import refuse

        raise refuse(op, x.dtype)
    if dtype is not None:
        target = as_dtype(dtype)
        if not target.is_floating_point:
            raise TypeError(f"{op}: dtype must be a floating dtype, got {target}")
    else:
        target = x.dtype if x.dtype.is_floating_point else get_default_dtype()
    return x if x.dtype is target else Tensor(clone_impl(x._impl, target))


def _contiguous(impl: TensorImpl) -> TensorImpl:
    return impl if impl.is_contiguous() else clone_impl(impl)


def _moved_last(impl: TensorImpl, dim: int) -> TensorImpl:
    """impl with `dim` moved last (the others keep their order), contiguous: one compiled
    copy, none when that is already impl's layout."""
    order = tuple(d for d in range(len(impl.shape)) if d != dim) + (dim,)
    if order != tuple(range(len(order))):
        impl = views.permute(impl, order)
    return _contiguous(impl)


def _host_ptr_or_0(impl: TensorImpl | None, op: str) -> int:
    """An optional operand's address for a host row kernel: 0 stands for none."""
    return 0 if impl is None else host_ptr(impl, op)


def _rows_of(impl: TensorImpl, tail: int) -> tuple[int, int]:
    """(rows, cols) of impl seen as [rows, cols], cols the product of its last `tail` sizes."""
    lead = len(impl.shape) - tail
    return math.prod(impl.shape[:lead]), math.prod(impl.shape[lead:])


# ---- softmax, log_softmax and logsumexp ------------------------------------------------------


def _fused(impl: TensorImpl, dims: tuple[int, ...]) -> bool:
    """Whether `dims` are the trailing dims of a contiguous CPU tensor: rows for the kernels.
    Never while tracing: the composed ops are recorded, and fuse with the ops around them
    (a compiled attention's scale and mask join its softmax's row group)."""
    n = len(impl.shape)
    return (
        state.trace is None
        and impl.device is CPU
        and impl.is_contiguous()
        and dims == tuple(range(n - len(dims), n))
    )


def _run_rows(kernel: str, src: TensorImpl, out: TensorImpl, tail: int) -> None:
    """The row kernel over src seen as [rows, cols], cols its last `tail` dims (offered to
    the fast door, which replays it for the next call like this one)."""
    row_count, cols = _rows_of(src, tail)
    if row_count:
        words = [host_ptr(src, kernel), host_ptr(out, kernel), cols]
        fn, moved, align = rows.run_rows(kernel, src.dtype, words, row_count, cols)
        fastpath.capture_rows(fn, words, row_count, moved, align, src, out)


# The composed ops below take the row kernels' arithmetic (codegen/cpu/rows.py): the exps
# summed in float64 and kept so; softmax scales by 1 / sum, log_softmax subtracts log(sum),
# logsumexp adds the shift to log(sum), each taken in float64 and rounded once to the
# input's dtype. A trace, a generated plan and a row kernel give one float32 result; a
# float64 one may differ in its last bit (the float64 sums run in another order).


def _exp_sums(e: Tensor, dims) -> Tensor:
    """The float64 sums (keepdim) of the exps e over dims, unrounded."""
    return reductions.sum(e, dims, keepdim=True, dtype=float64)


def _composed_softmax(x: Tensor, d: int, log: bool = False) -> Tensor:
    """The book's composed softmax: max, sub, exp, the float64 sum (keepdim) and a scale
    by its rounded reciprocal; one exp per element, read by both the sum and the scale (in
    a row group: chunk scratch)."""
    shifted = ew.binary("sub", x, reductions.amax(x, d, keepdim=True))
    e = ew.unary("exp", shifted)
    total = _exp_sums(e, d)
    if log:
        return ew.binary("sub", shifted, ew.unary("log", total).to(x.dtype))
    return ew.binary("mul", e, ew.unary("reciprocal", total).to(x.dtype))


def _softmax_exp_twice(x: Tensor, d: int) -> Tensor:
    """softmax with exp computed twice, in the sum's prologue and in the scale: three
    passes over memory instead of four with the exp stored, where rows are not the row
    driver's ([16, 2^20] float32: 0.6x the time)."""
    shifted = ew.binary("sub", x, reductions.amax(x, d, keepdim=True))
    total = _exp_sums(ew.unary("exp", shifted), d)
    return ew.binary("mul", ew.unary("exp", shifted), ew.unary("reciprocal", total).to(x.dtype))


def _composed_logsumexp(x: Tensor, *dims: int) -> Tensor:
    """log(sum(exp(x - shift))) + shift (keepdim), the shift the max unless it is infinite."""
    top = reductions.amax(x, dims, keepdim=True)
    shift = ew.where(ew.unary("isinf", top), 0.0, top)
    total = _exp_sums(ew.unary("exp", ew.binary("sub", x, shift)), dims)
    return ew.binary("add", ew.unary("log", total), shift).to(x.dtype)


# From this many input bytes, eager softmax, log_softmax and logsumexp on the CPU run their
# composition as a compiled plan: @kael.compile's row group, with streaming stores and the
# next rows fetched ahead (4096x4096 float32: softmax 0.7x, log_softmax 0.75x the row
# kernel's time; logsumexp alike, its whole float64 sum widening every value). Below, the
# row kernels stay: a plan costs a trace for each new shape (1.1-1.3 ms) and its guard on
# the second call (0.3-0.5 ms), where a row kernel call takes 7-70 us.
GENERATED_FROM_BYTES = 16 << 20
_GENERATED = {  # softmax and log_softmax: _composed_softmax with `log` a trace constant
    "softmax": CompiledFunction(_composed_softmax, max_recompiles=None),
    "softmax_long": CompiledFunction(_softmax_exp_twice, max_recompiles=None),
    "log_softmax": CompiledFunction(_composed_softmax, max_recompiles=None),
    "logsumexp": CompiledFunction(_composed_logsumexp, max_recompiles=None),
}


def _generated(impl: TensorImpl) -> bool:
    """Whether an eager call on impl runs the generated plan (see GENERATED_FROM_BYTES)."""
    big = impl.numel() * impl.dtype.itemsize >= GENERATED_FROM_BYTES
    return big and state.trace is None and impl.device is CPU


def _row_group_fits(impl: TensorImpl, d: int) -> bool:
    """Whether softmax over `d` runs as one row group (plan.group_rows): rows along the last
    dim of a contiguous tensor, each at most plan.ROW_BYTES."""
    rank = len(impl.shape)
    cols = impl.shape[d] if rank else 1
    last = rank == 0 or d == rank - 1
    return last and impl.is_contiguous() and cols * impl.dtype.itemsize <= plan.ROW_BYTES


def _generated_softmax(kernel: str, x: Tensor, d: int) -> Tensor:
    """softmax or log_softmax of x over `d` by its compiled plan (exp computed twice where
    the rows are not one row group's)."""
    if kernel == "softmax" and not _row_group_fits(x._impl, d):
        return _GENERATED["softmax_long"](x, d)
    return _GENERATED[kernel](x, d, kernel == "log_softmax")


def _softmax(kernel: str, x, dim, dtype) -> Tensor:
    """softmax or log_softmax over `dim` (see the module): the GPU's row kernel, which loads
    float16 and bfloat16 as they are; else those through float32, rounded once."""
    x = _as_floating(x, kernel, dtype)
    impl = x._impl
    d = views.wrap_dim(dim, x.ndim)
    if impl.numel() == 0:
        return Tensor(empty_impl(impl.shape, impl.dtype, impl.device))
    dims = (d,) if x.ndim else ()  # a 0-d tensor is one row of one element
    if dims == tuple(range(x.ndim - len(dims), x.ndim)) and gpu_rows.takes(impl, len(dims)):
        return Tensor(gpu_rows.softmax(kernel, impl, len(dims)))
    if impl.dtype.is_half:  # in float32, rounded once (frontend/opmath.py)
        return _softmax(kernel, x.float(), d, None).to(impl.dtype)
    if _generated(impl):  # row-major, as torch's kernel lays its result out
        return _generated_softmax(kernel, x, d).contiguous()
    if not _fused(impl, dims):
        return _composed_softmax(x, d, kernel == "log_softmax").contiguous()
    out = empty_impl(impl.shape, impl.dtype, CPU)
    _run_rows(kernel, impl, out, len(dims))
    return Tensor(out)


def implicit_dim(op: str, ndim: int) -> int:
    """torch.nn.functional's dim for a softmax called without one (deprecated, warned):
    0 for 0-, 1- and 3-d inputs, else 1."""
    user_warning.warn(
        f"Implicit dimension choice for {op} has been deprecated. Change the call to include"
        " dim=X as an argument."
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """exp(x - max) / sum(exp(x - max)) along `dim`: no overflow for large entries."""
    return _softmax("softmax", input, dim, dtype)


def log_softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """(x - max) - log(sum(exp(x - max))) along `dim`: exact where log(softmax(x)) is -inf."""
    return _softmax("log_softmax", input, dim, dtype)


@in_float32
def logsumexp(input: Tensor, dim, keepdim: bool = False, *, out: Tensor | None = None) -> Tensor:
    """log(sum(exp(x))) over `dim`, shifted by the max: all -inf (or empty) gives -inf."""
    if dim is None:  # torch's signature: dim is required (an int or a tuple of ints)
        raise TypeError("logsumexp(): dim must be an int or a tuple of ints, got None")
    if isinstance(input, Tensor) and input.dtype.is_complex:
        return _complex_logsumexp(input, dim, keepdim, out)
    x = _as_floating(input, "logsumexp")
    keepdim = reductions.keepdim_arg(keepdim, "logsumexp")
    impl = x._impl
    dims = reductions.reduce_axes(x, dim, "logsumexp")  # () for a 0-d tensor: one row of one
    shape = reductions.reduced_shape(impl.shape, dims, keepdim)
    generated = _generated(impl)
    if out is None and generated:
        return _GENERATED["logsumexp"](x, *dims).reshape(shape)
    if isinstance(out, Tensor) and out.dtype is not impl.dtype:  # torch casts into another
        return copied_out(logsumexp(x, dims, keepdim), out, "logsumexp", cast=True)
    target = output(out, shape, impl.dtype, impl.device, "logsumexp")
    rows_fit = not generated and _fused(impl, dims)
    if impl.numel() == 0:  # the sum of no exponentials is 0: log gives -inf
        eager.fill(target._impl, -math.inf)
    elif rows_fit and target.is_contiguous() and not target.shares_storage(x):
        _run_rows("logsumexp", impl, target._impl, len(dims))
    elif rows_fit:  # through a new result: out is strided or overlaps the input
        result = empty_impl(shape, impl.dtype, CPU)
        _run_rows("logsumexp", impl, result, len(dims))
        eager.copy_into(target._impl, result)
    else:  # the composition, as a compiled plan when generated
        compose = _GENERATED["logsumexp"] if generated else _composed_logsumexp
        eager.copy_into(target._impl, compose(x, *dims).reshape(shape)._impl)
    return target


def _complex_logsumexp(x: Tensor, dim, keepdim, out: Tensor | None) -> Tensor:
    """log(sum(exp(x - m))) + m with m the max of x's real parts (0 where it is infinite),
    PyTorch's shift for complex inputs, by complex ops."""
    keepdim = reductions.keepdim_arg(keepdim, "logsumexp")
    dims = reductions.reduce_axes(x, dim, "logsumexp")
    if x.numel() == 0:  # no max to shift by: the empty sum's log is -inf
        result = reductions.sum(ew.unary("exp", x), dims, keepdim).log()
    else:
        shift = reductions.amax(x.real, dims, True)
        shift = shift.masked_fill(ew.unary("isinf", shift), 0.0)
        total = reductions.sum(ew.unary("exp", ew.binary("sub", x, shift)), dims, keepdim)
        kept = shift if keepdim else shift.reshape(total.shape)
        result = ew.binary("add", total.log(), kept)
    if out is None:
        return result
    return output(out, result.shape, result.dtype, result.device, "logsumexp").copy_(result)


# ---- cross_entropy ---------------------------------------------------------------------------


def _check_target(x: Tensor, target, op: str) -> Tensor:
    """target: int64 class indices shaped like x without its class dim (dim 1, or 0 if 1-d);
    uint8 ones too for an input of at most 2 dims (torch's nll_loss takes Byte, its
    nll_loss2d of more dims does not), read as int64."""
    target = tensor_arg(target, op, "target")
    device_of([x, target], op)
    if target.dtype is uint8 and x.ndim <= 2:
        target = target.to(int64)
    if target.dtype is not int64:
        raise TypeError(
            f"{op}: expected target dtype to be int64 (class indices) or floating point (class"
            f" probabilities), but got {target.dtype}"
        )
    if x.ndim == 0:
        raise ValueError(f"{op}: input must have at least 1 dimension (classes), got a 0-d tensor")
    expected = () if x.ndim == 1 else (x.shape[0], *x.shape[2:])
    if target.shape != expected:
        if x.ndim >= 2 and target.ndim >= 1 and target.shape[0] != x.shape[0]:
            raise ValueError(
                f"Expected input batch_size ({x.shape[0]}) to match target batch_size"
                f" ({target.shape[0]})."
            )
        raise ValueError(
            f"{op}: expected target size {format_shape(expected)} for input of size"
            f" {format_shape(x.shape)}, got {format_shape(target.shape)}"
        )
    return target


def _parameter(param, op: str, name: str, x: Tensor, shape: tuple, mismatch: str):
    """A weight or bias: None, or a tensor of `shape` and x's dtype, made contiguous.

    `mismatch` is the shape error's message, with {got} for the parameter's shape.
    """
    if param is None:
        return None
    param = tensor_arg(param, op, name)
    device_of([x, param], op)
    if param.shape != shape:
        raise ValueError(mismatch.format(got=format_shape(param.shape)))
    if param.dtype is not x.dtype:
        raise TypeError(f"{op}: {name} has dtype {param.dtype} but input has dtype {x.dtype}")
    return _contiguous(param._impl)


def _bad_target(target: Tensor, at: int, classes: int, ignore_index: int):
    value = target.reshape(-1)[at].item()
    raise IndexError(
        f"Target {value} is out of bounds: cross_entropy expects a class in [0, {classes})"
        f" (or ignore_index {ignore_index}), found at flat position {at}"
    )


def _composed_cross_entropy(
    x: Tensor, target: Tensor, w, ignore_index: int, reduction: str, class_dim: int
) -> Tensor:
    """cross_entropy from kael's ops (for devices without the row kernel): log_softmax in
    float64, as the row kernel computes, each sample's class picked by comparing with the
    class index; out-of-range targets are found on the device, and only then is the target
    copied to the host, to name the first one."""
    classes = x.shape[class_dim]
    labels = target.unsqueeze(class_dim) if x.ndim > 1 else target
    valid = labels != ignore_index
    bad = valid & ((labels < 0) | (labels >= classes))
    if bad.any().item():
        at = int(reductions.argmax(bad.cpu().reshape(-1).to(int64)).item())
        _bad_target(target.cpu(), at, classes, ignore_index)
    along = (classes,) + (1,) * (x.ndim - class_dim - 1)  # broadcasts along the class dim
    picked = (factories.arange(classes, device=x.device).view(along) == labels) & valid
    logp = log_softmax(x.to(float64), class_dim)
    # one nonzero per sample: the weight of its class (1 without weights), 0 where ignored
    weights = picked.to(float64)
    if w is not None:
        weights = ew.where(picked, Tensor(w).to(float64).view(along), 0.0)
    losses = -(weights * logp).sum(class_dim)
    sample_weight = weights.sum(class_dim)
    if reduction == "none":
        return losses.to(x.dtype)
    total = losses.sum()
    return (total / sample_weight.sum() if reduction == "mean" else total).to(x.dtype)


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    *,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Mean (or sum, or each) of -w[t] log_softmax(logits)[t] over samples; targets equal to
    ignore_index count for nothing. Logits are [C], [N, C] or [N, C, d1, ...]; a floating
    target shaped like them holds class probabilities. reduction, ignore_index and
    label_smoothing are keyword-only: torch's fourth positional is its deprecated
    size_average. Class indices without smoothing run the fused row kernel."""
    key = _cross_entropy_key(input, target, weight, ignore_index, reduction, label_smoothing)
    kept = None if key is None else _CROSS_ENTROPY_CALLS.get(key)
    if kept is not None and kept is not _UNSERVED:
        out = _replay_cross_entropy(kept, input._impl, target._impl)
        if out is not None:
            return out
    out = _cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing)
    if key is not None and kept is None and len(_CROSS_ENTROPY_CALLS) < _MAX_CALLS:
        _CROSS_ENTROPY_CALLS[key] = _cross_entropy_launches(*key)  # the full door judged it
    return out


# cross_entropy's fast door: per logits dtype and shape, target shape, reduction and
# ignore_index, the launches of a plain call (float32/float64 logits [C] or [N, C] and an
# int64 target, both dense on the host, no weight, no smoothing, rows small enough to run
# inline: the row kernel, then the total or the losses' copy), replayed with this call's
# addresses; a bad target the kernel reports hands the call to the full door, which
# raises. The key holds every shape the full door judged ([4, 16] float32: 17 -> 4 us).
_CROSS_ENTROPY_CALLS: dict[tuple, tuple | object] = {}
_CROSS_ENTROPY_DTYPES = (float32, float64)


def _cross_entropy_key(input, target, weight, ignore_index, reduction, smoothing) -> tuple | None:
    """The door's key of a plain call (see above), or None: the full door takes the rest."""
    if not (
        fastpath._open()
        and type(input) in fastpath.PLAIN
        and type(target) in fastpath.PLAIN
        and weight is None
        and type(smoothing) is float
        and smoothing == 0.0
        and type(ignore_index) is int
        and type(reduction) is str
    ):
        return None
    # fastpath._tensor_key: the dtype of a dense host tensor, else None
    dtype = fastpath._tensor_key(input)
    if dtype not in _CROSS_ENTROPY_DTYPES or fastpath._tensor_key(target) is not int64:
        return None
    shape = input._impl.shape
    if len(shape) not in (1, 2):
        return None
    return (dtype, shape, target._impl.shape, reduction, ignore_index)


def _cross_entropy_launches(dtype, shape, target_shape, reduction, ignore_index) -> tuple | object:
    """The launches of a call the full door ran (and judged) with this key: the row kernel's
    descriptor, then the total's (None for reduction "none"); _UNSERVED where a call
    launches nothing or moves enough bytes to go to the pool (launcher.replayable)."""
    count = shape_numel(target_shape)
    classes = shape[-1]
    moved = count * max(classes, 1) * dtype.itemsize * 2  # rows.run_rows's
    fn = rows.function("cross_entropy", dtype)
    if not count or not replayable(fn, moved):
        return _UNSERVED
    fixed = {"cols": classes, "rows": count, "ignore": ignore_index, "weighted": 0}
    template = [fixed.get(name, 0) for name in rows.CE_ARGS]
    positions = tuple(rows.CE_ARGS.index(name) for name in ("x", "target", "scratch", "error"))
    losses = native_launch.describe(fn, template, positions, moved // count)
    total = None
    if reduction != "none":
        fn = rows.function("cross_entropy_total", dtype)
        total = native_launch.describe(fn, [0, 0, count, int(reduction == "mean")], (0, 1), 0)
    if losses is None or (reduction != "none" and total is None):
        return _UNSERVED
    return (losses, total, count, target_shape, dtype)


def _replay_cross_entropy(kept: tuple, x: TensorImpl, target: TensorImpl) -> Tensor | None:
    """The remembered launches over this call's logits and target: the loss, or None where
    the kernel found a target out of range (the full door then raises for it)."""
    losses, total, count, target_shape, dtype = kept
    size = dtype.itemsize
    scratch = Storage.host(16 * count)  # [2, count] float64: the losses, then the weights
    error = ctypes.c_int64(INT64_MAX)
    words = (x.storage.ptr + x.offset * size, target.storage.ptr + target.offset * 8)
    fastpath._native(losses.address, count, *words, scratch.ptr, ctypes.addressof(error))
    if error.value != INT64_MAX:
        return None
    if total is None:
        return _losses_of(scratch, target_shape, dtype)
    out = Storage.host(size)
    fastpath._native(total.address, 1, scratch.ptr, out.ptr)
    return fastpath.new_tensor(out, (), dtype)


def _losses_of(scratch: Storage, shape: tuple, dtype) -> Tensor:
    """reduction "none"'s result: the scratch's first row, the losses, as a new dense
    tensor of the target's shape in the logits' dtype."""
    row = fastpath.new_tensor(scratch, shape, float64)
    out = fastpath.copy(row) if dtype is float64 else fastpath.cast(row, dtype)
    return Tensor(clone_impl(row._impl, dtype)) if out is None else out


@in_float32(operands=2)
def _cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing) -> Tensor:
    """cross_entropy's full door: every check, then the row kernels (or the composed ops
    off the host, or losses.py's forms for probabilities and smoothing)."""
    op = "cross_entropy"
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    ignore_index = views.as_int64(ignore_index, "ignore_index")
    x = _as_floating(input, op)
    smoothing = float_arg(label_smoothing, op, "label_smoothing")
    if not 0.0 <= smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {smoothing}")
    probabilities = isinstance(target, Tensor) and target.dtype.is_floating_point
    if probabilities or smoothing > 0:
        from kael.frontend import losses

        if not probabilities:
            target = _check_target(x, target, op)
        return losses.cross_entropy_extended(x, target, weight, ignore_index, reduction, smoothing)
    target = _check_target(x, target, op)
    class_dim = 0 if x.ndim == 1 else 1
    classes = x.shape[class_dim]
    w = _parameter(
        weight,
        op,
        "weight",
        x,
        (classes,),
        f"weight tensor should be defined either for all {classes} classes or no classes"
        " but got weight tensor of shape: {got}",
    )
    if x._impl.device is not CPU:
        return _composed_cross_entropy(x, target, w, ignore_index, reduction, class_dim)
    src = _moved_last(x._impl, class_dim)
    labels = _contiguous(target._impl)
    count = labels.numel()
    scratch = empty_impl((2, count), float64, CPU)
    addresses = {
        "x": host_ptr(src, op),
        "target": host_ptr(labels, op),
        "weight": _host_ptr_or_0(w, op),
        "scratch": host_ptr(scratch, op),
    }
    bad = -1
    if count:
        bad = rows.cross_entropy(src.dtype, addresses, count, classes, ignore_index, w is not None)
    if bad >= 0:
        _bad_target(Tensor(labels), bad, classes, ignore_index)
    if reduction == "none":
        losses = clone_impl(views.select(scratch, 0, 0), src.dtype)
        return Tensor(losses).reshape(target.shape)
    out = empty_impl((), src.dtype, CPU)
    rows.cross_entropy_total(
        src.dtype, host_ptr(scratch, op), host_ptr(out, op), count, reduction == "mean"
    )
    return Tensor(out)


# ---- layer_norm ------------------------------------------------------------------------------


def _normalized_shape(normalized_shape) -> tuple[int, ...]:
    if isinstance(normalized_shape, (tuple, list)):
        shape = tuple(
            views.as_int(s, f"normalized_shape element {i}") for i, s in enumerate(normalized_shape)
        )
    else:
        shape = (views.as_int(normalized_shape, "normalized_shape"),)
    if not shape:
        raise ValueError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least"
            " one element, but got normalized_shape = []"
        )
    return shape


def _composed_layer_norm(
    x: Tensor, dims: tuple[int, ...], w: TensorImpl | None, b: TensorImpl | None, eps: float
) -> Tensor:
    """layer_norm from kael's reductions and elementwise ops (for what no row kernel takes:
    a GPU tensor's other layouts and mixed dtypes): moments in float64, as the row kernel takes them for float32 rows, then
    normalized, narrowed, scaled and shifted in the element type."""
    wide = x if x.dtype is float64 else x.to(float64)
    centred = wide - wide.mean(dims, keepdim=True)
    var = (centred * centred).mean(dims, keepdim=True)
    y = (centred * (var + eps).rsqrt()).to(x.dtype)
    if w is not None:
        y = y * Tensor(w)
    return y if b is None else y + Tensor(b)


def layer_norm(
    input: Tensor,
    normalized_shape,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """(x - mean) / sqrt(var + eps) over the trailing `normalized_shape` dims (biased
    variance, two passes), times weight, plus bias."""
    if fastpath._open() and type(input) in fastpath.PLAIN and input._impl.device is CPU:
        key = _layer_norm_key(input._impl, normalized_shape, weight, bias, eps)
        if key is not None:
            kept = _LAYER_NORM_CALLS.get(key)
            if kept is _UNSERVED:
                return _layer_norm(input, normalized_shape, weight, bias, eps)
            if kept is not None:
                return _replay_layer_norm(kept, input._impl, weight, bias)
            out = _layer_norm(input, normalized_shape, weight, bias, eps)
            if len(_LAYER_NORM_CALLS) < _MAX_CALLS:
                _LAYER_NORM_CALLS[key] = _launch_of(key, input._impl, weight, bias, eps)
            return out
    on_device = _layer_norm_on_device(input, normalized_shape, weight, bias, eps)
    if on_device is not None:
        return on_device
    return _layer_norm(input, normalized_shape, weight, bias, eps)


# layer_norm's fast door: per input layout, normalized shape, weight's and bias's layouts,
# eps and thread count, the row launch of a call that ran on its own operands (a contiguous
# float32/float64 input and parameters, inline), replayed with this call's addresses: no
# checks to redo, as the key holds every layout they judged ([4, 16]: 31 -> 4 us).
_LAYER_NORM_CALLS: dict[tuple, tuple | object] = {}
_MAX_CALLS = 1024
_UNSERVED = object()  # a key whose calls the door cannot replay: never judged again


def _layer_norm_key(impl: TensorImpl, normalized_shape, weight, bias, eps) -> tuple | None:
    """The door's key of a call, or None where an argument is not plain (a list of
    tensors, a non-float eps, a tensor subclass): the full door takes those."""
    if type(normalized_shape) is int:
        shape = (normalized_shape,)
    elif type(normalized_shape) in (tuple, list) and all(type(n) is int for n in normalized_shape):
        shape = tuple(normalized_shape)
    else:
        return None
    if type(eps) is not float:
        return None
    params = []
    for p in (weight, bias):
        if p is None:
            params.append(None)
        elif type(p) in fastpath.PLAIN:
            pi = p._impl
            params.append((pi.dtype, pi.device, pi.shape, pi.strides))
        else:
            return None
    return (impl.dtype, impl.shape, impl.strides, shape, *params, eps, get_num_threads())


def _launch_of(key: tuple, impl: TensorImpl, weight, bias, eps: float) -> tuple | object:
    """The call's launch where it was one inline row launch on the operands themselves
    (contiguous float32/float64 input and parameters), else _UNSERVED."""
    params = [None if p is None else p._impl for p in (weight, bias)]
    dense = [t for t in (impl, *params) if t is not None]
    if (
        impl.dtype not in (float32, float64)
        or not all(t.is_contiguous() and t.dtype is impl.dtype for t in dense)
        or not impl.numel()
    ):
        return _UNSERVED
    row_count, cols = _rows_of(impl, len(key[3]))  # key[3]: the normalized shape
    moved = row_count * cols * impl.dtype.itemsize * 2
    variant = rows.AFFINE[(params[0] is not None) + 2 * (params[1] is not None)]
    fn = rows.function(f"layer_norm_{variant}", impl.dtype)
    if not replayable(fn, moved):
        return _UNSERVED
    template = [0, 0, 0, 0, cols, rows.float_word(eps)]
    positions = (1, 0, *(slot for slot, p in ((2, params[0]), (3, params[1])) if p is not None))
    native = native_launch.describe(fn, template, positions, moved // max(1, row_count))
    if native is None:
        return _UNSERVED
    nbytes = impl.numel() * impl.dtype.itemsize
    return (native, row_count, impl.shape, impl.dtype, nbytes)


def _replay_layer_norm(kept: tuple, impl: TensorImpl, weight, bias) -> Tensor:
    native, row_count, shape, dtype, nbytes = kept
    size = dtype.itemsize
    storage = Storage.host(nbytes)
    words = [storage.ptr, impl.storage.ptr + impl.offset * size]
    for p in (weight, bias):
        if p is not None:
            pi = p._impl
            words.append(pi.storage.ptr + pi.offset * size)
    fastpath._native(native.address, row_count, *words)
    return fastpath._result(storage, shape, fastpath._dense_strides(shape), dtype)


def _layer_norm_on_device(input, normalized_shape, weight, bias, eps) -> Tensor | None:
    """layer_norm by the GPU's row kernel (frontend/gpu_rows.py) for a plain call: a cuda
    float input whose trailing dims are normalized_shape, weight and bias None or of
    that shape and the input's dtype and device. None for any other call, which the full
    path checks and runs."""
    if type(input) not in fastpath.PLAIN or input._impl.device is CPU:
        return None
    shape = _normalized_shape(normalized_shape)  # the full path's first checks, as it raises
    eps = float_arg(eps, "layer_norm", "eps")
    impl, k = input._impl, len(shape)
    params = [p for p in (weight, bias) if p is not None]
    plain = (
        impl.shape[max(len(impl.shape) - k, 0) :] == shape
        and all(type(p) in fastpath.PLAIN and p.shape == shape for p in params)
        and gpu_rows.params_fit(impl, *params)
        and gpu_rows.takes(impl, k)
    )
    return Tensor(gpu_rows.layer_norm(impl, k, weight, bias, eps)) if plain else None


@in_float32
def _layer_norm(input: Tensor, normalized_shape, weight, bias, eps) -> Tensor:
    """layer_norm's every call but the GPU rows': checks, then the composed ops."""
    shape = _normalized_shape(normalized_shape)
    eps = float_arg(eps, "layer_norm", "eps")
    x = _as_floating(input, "layer_norm")
    k = len(shape)
    if x.shape[max(x.ndim - k, 0) :] != shape or x.ndim < k:
        raise ValueError(
            f"Given normalized_shape={format_shape(shape)}, expected input with shape"
            f" [*, {', '.join(map(str, shape))}], but got input of size{format_shape(x.shape)}"
        )
    w, b = (
        _parameter(
            param,
            "layer_norm",
            name,
            x,
            shape,
            f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape"
            f" {{got}} and normalized_shape = {format_shape(shape)}",
        )
        for param, name in ((weight, "weight"), (bias, "bias"))
    )
    if x._impl.device is not CPU:
        return _composed_layer_norm(x, tuple(range(x.ndim - k, x.ndim)), w, b, eps)
    variant = rows.AFFINE[(w is not None) + 2 * (b is not None)]
    return Tensor(_norm_rows("layer_norm", variant, x._impl, k, (w, b), eps))


def _norm_rows(
    op: str, variant: str, impl: TensorImpl, tail: int, params, eps: float
) -> TensorImpl:
    """The row kernel of norm `op` (its `variant`: which parameters it applies) over impl's
    rows of its last `tail` dims, into a new row-major result; its words: x, out, each
    parameter's address (contiguous impls, 0 for None), cols, eps."""
    src = _contiguous(impl)
    out = empty_impl(src.shape, src.dtype, CPU)
    row_count, cols = _rows_of(src, tail)
    if src.numel():
        words = [host_ptr(src, op), host_ptr(out, op), *(_host_ptr_or_0(p, op) for p in params)]
        words += [cols, rows.float_word(eps)]
        rows.run_rows(f"{op}_{variant}", src.dtype, words, row_count, cols)
    return out


def rms_norm_rows(x: Tensor, tail: int, weight: Tensor | None, eps: float) -> Tensor | None:
    """rms_norm of a host float32/float64 x over its last `tail` dims by the row kernel
    (codegen/cpu/rows.py: the composition's values), weight None or of x's dtype; None
    where it does not apply (half types, a channels-last layout, another weight dtype, a
    trace: a compiled plan fuses the composition with its neighbours)."""
    impl = x._impl
    if (
        state.trace is not None
        or impl.device is not CPU
        or impl.dtype not in (float32, float64)
        or not impl.numel()
        or memory_formats.suggested(impl) is not memory_formats.contiguous_format
        or (weight is not None and weight.dtype is not impl.dtype)
    ):
        return None
    w = None if weight is None else _contiguous(weight._impl)
    variant = "none" if w is None else "weight"
    return Tensor(_norm_rows("rms_norm", variant, impl, tail, (w,), eps))


# kael.NAME for each entry; also Tensor.NAME unless the name is in NOT_METHODS.
FAST = ("softmax", "log_softmax", "logsumexp")  # behind fastpath.keyed's door
FUNCTIONS: dict[str, Callable] = {
    "softmax": softmax,
    "log_softmax": log_softmax,
    "logsumexp": logsumexp,
    "cross_entropy": cross_entropy,
    "layer_norm": layer_norm,
}
# Tensor-only methods (in-place variants, operators).
METHODS: dict[str, Callable] = {}
NOT_METHODS: frozenset[str] = frozenset({"cross_entropy", "layer_norm"})
