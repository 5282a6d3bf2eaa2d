"""Convolutions as torch.nn.functional has them: conv1d/2d/3d (stride, padding with
'same' and 'valid', dilation, groups), conv_transpose1d/2d/3d (output_padding), unfold
(im2col) and fold (col2im).

A float32 or float64 convolution on the CPU is an implicit GEMM (codegen/cpu/conv.py):
the weight [O, C * kernel] times the window matrix, which each work item packs block by
block from the input itself, zeros for the padding included, so neither a padded copy
nor the im2col matrix is ever stored; under @kael.compile it is a plan step whose
bias and activation run inside it. Elsewhere (the GPU, float16 and bfloat16) the
zero-padded input is read through a window view [N, C, *out, *kernel] (strides stride *
s and dilation * s over its storage), im2col copies that view into [N, C * kernel, out]
and the batched matmul contracts the weight with it straight into NCHW order. A
transposed convolution multiplies first and then scatters each kernel offset's products
into the output (col2im: one strided add per offset).

Deviation: an input of zero channels (weight [O, 0, *kernel]) gives the O output channels
(the bias, or zeros) the shapes call for; torch returns 0 channels there.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import NamedTuple

from kael.codegen.cpu import conv_run, gemm_run
from kael.frontend import elementwise as ew
from kael.frontend import factories, fastpath, index_ops, linalg, memory_formats, views
from kael.frontend.outputs import device_of, tensor_arg
from kael.frontend.padding import pad
from kael.frontend.tensor import Tensor, empty_impl
from kael.frontend.tracing import op_door
from kael.ir.conv import ConvGeometry
from kael.runtime.device import CPU
from kael.runtime.dtypes import INTEGER_DTYPES, DType, bool_, float32, int64
from kael.runtime.errors import TypeError, UnsupportedDtype, ValueError
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import host_ptr
from kael.runtime.threadpool import get_num_threads
from kael.runtime.tracestate import state as _trace


def tuple_arg(value, dims: int, name: str, op: str) -> tuple[int, ...]:
    """An int or a sequence of one or `dims` ints, as a tuple of `dims` ints. Every
    convolution, pool, unfold and fold reads its sizes here. An int is anything
    operator.index takes (NumPy's integers too, as PyTorch takes them) within int64; a
    float, a bool or anything else raises kael's TypeError naming `op` and `name`, an int
    beyond int64 its ValueError."""
    what = f"{op}: {name}"
    if not isinstance(value, Sequence) or isinstance(value, str):
        return (views.as_int64(value, what),) * dims
    values = tuple(views.as_int64(v, what) for v in value)
    if len(values) == 1:
        return values * dims
    if len(values) != dims:
        raise ValueError(
            f"{op}: expected {name} to be a single int or {dims} ints, got {list(values)}"
        )
    return values


def windows(
    x: Tensor, kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int]
) -> Tensor:
    """The view [N, C, *out, *kernel] of x [N, C, *size]: window o, offset k reads
    x[..., o * stride + k * dilation]; out = (size - dilation (kernel - 1) - 1) // stride + 1."""
    d = len(kernel)
    out = counts(x.shape[2:], kernel, stride, dilation)
    stride, dilation = _steps(stride, out), _steps(dilation, kernel)
    strides = x.strides()
    view_strides = (
        *strides[:2],
        *(strides[2 + i] * stride[i] for i in range(d)),
        *(strides[2 + i] * dilation[i] for i in range(d)),
    )
    return x.as_strided((*x.shape[:2], *out, *kernel), view_strides, x.storage_offset())


def counts(size, kernel, stride, dilation, before=None, after=None) -> list[int]:
    """Windows per spatial dim over `size` with `before` and `after` zeros (none by
    default): (padded - dilation * (kernel - 1) - 1) // stride + 1, floored as PyTorch's
    div_rtn, so not positive where the kernel outreaches the padded input."""
    before = before or (0,) * len(size)
    after = after or before
    return [
        (s + b + a - dl * (k - 1) - 1) // st + 1
        for s, b, a, k, st, dl in zip(size, before, after, kernel, stride, dilation)
    ]


def _steps(steps: Sequence[int], numbers: Sequence[int]) -> list[int]:
    """`steps` (strides or dilations) with 1 where `numbers` (of windows or taps) is one:
    one never steps, and a stride of 2**62 would overflow a view's strides or a kernel's
    32-bit offsets for nothing."""
    return [st if n > 1 else 1 for st, n in zip(steps, numbers)]


class _Span(NamedTuple):
    """The windows along one spatial dim that read any of its `size` elements: windows lo
    to hi - 1 of `out`, reading elements start to end - 1 (padding below 0 and from `size`
    on). Every other window reads padding only."""

    lo: int
    hi: int
    start: int
    end: int
    size: int
    out: int

    @property
    def near(self) -> int:
        """The zeros these windows read before element 0."""
        return max(0, -self.start)

    @property
    def far(self) -> int:
        """The zeros these windows read after the last element."""
        return max(0, self.end - self.size)


def _spans(size, kernel, stride, dilation, before, out) -> list[_Span] | None:
    """Per spatial dim, the windows (window o starting at element o * stride - before) that
    read the input; None when along some dim none does (or the kernel is empty), so every
    output is zero. The others read zeros only, so the padding they cover need never be
    stored: padding and stride 2**31 make 3 windows over 5 elements, one reading them."""
    spans = []
    for s, k, st, dl, b, o in zip(size, kernel, stride, dilation, before, out):
        extent = dl * (k - 1) + 1
        lo = max(0, -((extent - 1 - b) // st))  # the first to end past element 0
        hi = min(o, -(-(b + s) // st))  # past the last to start before element s
        if s == 0 or k == 0 or lo >= hi:
            return None
        spans.append(_Span(lo, hi, lo * st - b, (hi - 1) * st + extent - b, s, o))
    return spans


def _read_padding(spans: Sequence[_Span]) -> tuple[list[int], list[int]]:
    """The zeros the spans' windows read (before, after) per dim: all the padding that
    need be stored."""
    return [sp.near for sp in spans], [sp.far for sp in spans]


def _skipped(spans: Sequence[_Span]) -> tuple[list[int], list[int]]:
    """The windows (before, after) per dim that read padding only: zeros to pad the
    spans' results with."""
    return [sp.lo for sp in spans], [sp.out - sp.hi for sp in spans]


def _skip_start(x: Tensor, spans: Sequence[_Span], first: int) -> Tensor:
    """x without the elements of its dims first, first + 1, ... before their span's start,
    which no window reads (those before the span read padding only)."""
    for i, span in enumerate(spans):
        if span.start > 0:
            x = x.narrow(first + i, span.start, x.shape[first + i] - span.start)
    return x


def batched(input, dims: int, op: str) -> tuple[Tensor, bool]:
    """input as [N, C, *size] (an unbatched [C, *size] gains N = 1), and whether it was
    batched: the layers with `dims` spatial dims (convolutions, pools) all take both."""
    x = tensor_arg(input, op)
    if x.ndim == dims + 2:
        return x, True
    if x.ndim == dims + 1:
        return x.unsqueeze(0), False
    raise ValueError(
        f"{op}: Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input, but got input"
        f" of size: {list(x.shape)}"
    )


def _input_and_weight(
    input, weight, dims: int, op: str, integers=INTEGER_DTYPES
) -> tuple[Tensor, bool, Tensor]:
    """(input as [N, C, *size], whether it was batched, weight): one device, one dtype
    (floating, or one of `integers`: PyTorch's CPU convolutions take every integer dtype,
    its transposed ones int64 only), the weight's rank that of the input."""
    x, was_batched = batched(input, dims, op)
    w = tensor_arg(weight, op, "weight")
    device_of([x, w], op)
    if w.dtype is not x.dtype:
        raise TypeError(
            f"{op}: expected input and weight of one dtype, got {x.dtype} and {w.dtype}"
        )
    if x.dtype.is_bool or (not x.dtype.is_floating_point and x.dtype not in integers):
        raise UnsupportedDtype(f"{op}: not implemented for {x.dtype}")
    if w.ndim != dims + 2:
        raise ValueError(f"{op}: expected {dims + 2}D weight, got {list(w.shape)}")
    return x, was_batched, w


def _zero_pad(x: Tensor, before: Sequence[int], after: Sequence[int]) -> Tensor:
    """x with zeros around its spatial dims (F.pad's order: last dim first)."""
    if not any(before) and not any(after):
        return x
    amounts: list[int] = []
    for b, a in zip(reversed(before), reversed(after)):
        amounts += [b, a]
    return pad(x, amounts)


# PyTorch's words for a size argument below its least value (ConvParams' checks)
_SIZE_RULES = {
    "padding": (0, "negative padding is not supported"),
    "output_padding": (0, "negative output_padding is not supported"),
    "stride": (1, "non-positive stride is not supported"),
    "dilation": (1, "dilation should be greater than zero"),
    "kernel": (1, "kernel size should be greater than zero"),
}


def _check_sizes(op: str, **sizes: Sequence[int]) -> None:
    """Refuse a negative padding or output_padding, or a stride, dilation or kernel size
    below 1, as PyTorch does, naming the values: a transposed convolution would otherwise
    return garbage or fail deep inside col2im, an empty kernel make up an output."""
    for name, values in sizes.items():
        least, words = _SIZE_RULES[name]
        if min(values) < least:
            raise ValueError(f"{op}: {words}, got {name}={list(values)}")


def _groups(groups, w: Tensor, op: str) -> int:
    """groups as an int, checked as PyTorch does: positive, and dividing the weight's first
    dim (output channels, or a transposed weight's input channels)."""
    groups = views.as_int(groups, f"{op}: groups")
    if groups <= 0:
        raise ValueError(f"{op}: non-positive groups is not supported, got groups={groups}")
    if w.shape[0] < groups or w.shape[0] % groups:
        raise ValueError(
            f"{op}: Given groups={groups}, expected weight to be at least {groups} and"
            f" divisible by {groups} at dimension 0, but got weight of size {list(w.shape)}"
            " instead"
        )
    return groups


def _bias(bias, x: Tensor, w: Tensor, channels: int, op: str, transposed: bool = False):
    """bias as a column [channels, 1, ...] to add to the output (None stays None), checked
    as PyTorch does: one value per output channel (a [1] or [C, 1] is not broadcast), of
    the input's dtype (a float64 or int64 bias does not promote a float32 output)."""
    if bias is None:
        return None
    b = tensor_arg(bias, op, "bias")
    if b.dtype is not x.dtype:
        raise TypeError(
            f"{op}: Input type ({x.dtype}) and bias type ({b.dtype}) should be the same"
        )
    if b.shape != (channels,):
        raise ValueError(
            f"{op}: Given {'transposed=1, ' if transposed else ''}weight of size"
            f" {list(w.shape)}, expected bias to be 1-dimensional with {channels} elements,"
            f" but got bias of size {list(b.shape)} instead"
        )
    device_of([x, b], op)
    return b.reshape((channels,) + (1,) * (x.ndim - 2))


def _conv(dims: int, op: str):
    def conv(
        input: Tensor,
        weight: Tensor,
        bias: Tensor | None = None,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
    ) -> Tensor:
        door = _door_key(op, input, weight, bias, (stride, padding, dilation, groups))
        if door is not None:
            kept = _DOOR.get(door)
            if kept is not None:
                return _replay(kept, input._impl, weight._impl, bias)
        x, was_batched, w = _input_and_weight(input, weight, dims, op)
        stride = tuple_arg(stride, dims, "stride", op)
        dilation = tuple_arg(dilation, dims, "dilation", op)
        groups = _groups(groups, w, op)
        kernel = w.shape[2:]
        _check_sizes(op, stride=stride, dilation=dilation, kernel=kernel)
        if w.shape[1] * groups != x.shape[1]:
            raise ValueError(
                f"Given groups={groups}, weight of size {list(w.shape)}, expected input"
                f"{list(x.shape)} to have {w.shape[1] * groups} channels, but got"
                f" {x.shape[1]} channels instead"
            )
        b = _bias(bias, x, w, w.shape[0], op)
        before, after = _padding(padding, kernel, dilation, stride, dims, op)
        size = [s + p + q for s, p, q in zip(x.shape[2:], before, after)]
        if any(s < dl * (k - 1) + 1 for s, k, dl in zip(size, kernel, dilation)):
            raise ValueError(
                f"{op}: input size (padded) {list(size)} is smaller than the kernel size"
                f" {list(kernel)} (dilated by {list(dilation)})"
            )
        out = counts(x.shape[2:], kernel, stride, dilation, before, after)
        fmt = _result_format(x, w)
        if b is not None and x.dtype.is_half:  # float32 sums and bias, rounded once, as torch
            y = _convolve(x.float(), w.float(), groups, stride, dilation, before, out, op)
            y = _biased(y, b.float(), fmt).to(x.dtype)
        else:
            ran: list = []
            y = _convolve(x, w, groups, stride, dilation, before, out, op, ran)
            if door is not None and ran and len(_DOOR) < _DOOR_MAX:
                _DOOR[door] = (*ran[0], None if b is None else b.shape, was_batched)
            y = _biased(y, b, fmt)
        return y if was_batched else y.squeeze(0)

    conv.__name__ = conv.__qualname__ = op
    conv.__doc__ = (
        f"torch.nn.functional.{op}: im2col over a window view, then one matmul per group."
    )
    return conv


def _result_format(x: Tensor, w: Tensor) -> memory_formats.memory_format:
    """The format torch's convolutions write their result in: channels-last where the
    (batched) input's or the weight's layout suggests it (mkldnn_conv_use_channels_last),
    else row-major."""
    for t in (x, w):
        fmt = memory_formats.suggested(t._impl)
        if fmt is not memory_formats.contiguous_format:
            return fmt
    return memory_formats.contiguous_format


def _biased(y: Tensor, b: Tensor | None, fmt: memory_formats.memory_format) -> Tensor:
    """The row-major convolution y plus the bias column b (None: none), in `fmt`: a
    channels-last result is written by the bias's add (or a copy), one pass either way."""
    if b is None:
        return memory_formats.in_format(y, fmt)
    if fmt is memory_formats.contiguous_format:
        return y + b
    out = factories.empty(y.shape, dtype=y.dtype, device=y.device, memory_format=fmt)
    return ew.binary("add", y, b, out=out)


def _convolve(x: Tensor, w: Tensor, groups: int, stride, dilation, before, out, op: str, ran=None):
    """The convolution [N, O, *out] of x, `before` zeros ahead of each spatial dim (and
    as many after as the windows read). Only the windows that read x are computed, over
    only the padding they read; the others' zeros are padded on after. `ran` (a list)
    gains the implicit GEMM's (plan, shape, dtype) where that one launch over x and w
    themselves made the whole result (the fast door's replay)."""
    spans = _spans(x.shape[2:], w.shape[2:], stride, dilation, before, out)
    if spans is None:
        return factories.zeros((x.shape[0], w.shape[0], *out), dtype=x.dtype, device=x.device)
    whole = _skip_start(x, spans, 2) is x and not any(map(any, _skipped(spans)))
    x = _skip_start(x, spans, 2)
    near, far = _read_padding(spans)
    reached = [sp.hi - sp.lo for sp in spans]
    geometry = ConvGeometry.of(
        x.shape[0], groups, x.shape[1] // groups, w.shape[0] // groups, x.shape[2:],
        w.shape[2:], _steps(stride, reached), _steps(dilation, w.shape[2:]), near, reached,
    )  # fmt: skip
    if x.device is CPU and conv_run.supports(geometry, x.dtype):
        y = _implicit_gemm(x, w, geometry, op, ran if whole else None)
    else:
        y = _im2col(_zero_pad(x, near, far), w, geometry)
    return _zero_pad(y, *_skipped(spans))


def _implicit_gemm(x: Tensor, w: Tensor, g: ConvGeometry, op: str, ran=None) -> Tensor:
    """The convolution by codegen/cpu/conv.py's kernels: the window matrix is packed block
    by block from x itself, never stored; under tracing, a plan step that a bias or an
    activation after it can join as its epilogue. `op` names the public function in a
    device error; `ran`: see _convolve."""
    xi, wi = x.contiguous()._impl, w.contiguous()._impl
    n, o = x.shape[0], g.groups * g.og
    c = empty_impl((n, o, g.positions), x.dtype, x.device)
    dims = len(w.shape) - 2
    shape = (n, o, *g.out[3 - dims :])
    if _trace.trace is not None:
        _trace.trace.matmul(c, xi, wi, geometry=g)
    else:
        plan = conv_run.plan_for(g, x.dtype)
        gemm_run.run(plan, *(host_ptr(t, op) for t in (xi, wi, c)))
        if ran is not None and xi is x._impl and wi is w._impl:
            ran.append((plan, shape, x.dtype))
    return Tensor(c).reshape(shape)


# The fast door of a plain convolution (no skipped windows, input and weight dense and
# read by one implicit GEMM, any bias added after as the full door adds it), keyed by
# the op, both operands' dtype and layout, the bias's and the size arguments as given:
# the GEMM plan, replayed over this call's addresses ([1, 3, 8, 8] x [4, 3, 3, 3],
# padding 1, 1 thread, one run on a loaded machine: 53 -> 8.7 us, torch 7.8; with a
# bias 68 -> 16, torch 9.6).
_DOOR: dict[tuple, tuple] = {}
_DOOR_MAX = 1024
_SIZE_TYPES = (int, tuple, str)


def _door_key(op: str, input, weight, bias, sizes: tuple) -> tuple | None:
    """The door's key of a call with plain tensors and hashable size arguments (ints,
    tuples of ints, 'same'/'valid'), or None: the full door takes it."""
    plain = fastpath.PLAIN
    if not (type(input) in plain and type(weight) in plain and fastpath._open()):
        return None
    if bias is not None and type(bias) not in plain:
        return None
    for v in sizes:
        if type(v) not in _SIZE_TYPES or (type(v) is tuple and any(type(e) is not int for e in v)):
            return None
    x, w = input._impl, weight._impl
    if x.device is not CPU or w.device is not CPU:  # the full door judges devices
        return None
    held = None
    if bias is not None:
        b = bias._impl
        if b.device is not CPU:
            return None
        held = (b.dtype, b.shape, b.strides)
    # the plan splits its work for the thread count (conv_run.plan_for keys by it too)
    threads = get_num_threads()
    return (op, x.dtype, x.shape, x.strides, w.dtype, w.shape, w.strides, held, sizes, threads)


def _replay(kept: tuple, x, w, bias) -> Tensor:
    """The remembered GEMM over this call's input and weight (impls), the bias added."""
    plan, shape, dtype, bias_shape, was_batched = kept
    size = dtype.itemsize
    c = Storage.host(math.prod(shape) * size)
    gemm_run.run(plan, x.storage.ptr + x.offset * size, w.storage.ptr + w.offset * size, c.ptr)
    y = fastpath.new_tensor(c, shape, dtype)
    if bias is not None:  # [O] as [O, 1, ...], added in place: the full door's y + b
        b = bias._impl
        ones = (1,) * (len(bias_shape) - 1)
        y.add_(Tensor(views.derive(b, bias_shape, (b.strides[0], *ones), b.offset)))
    return y if was_batched else y.squeeze(0)


def _im2col(xp: Tensor, w: Tensor, g: ConvGeometry) -> Tensor:
    """The convolution of the zero-padded input as im2col and one matmul per group (the
    GPU's path and the narrow float types')."""
    dims = len(w.shape) - 2
    kernel, out = w.shape[2:], g.out[3 - dims :]
    win = windows(xp, kernel, g.stride[3 - dims :], g.dilation[3 - dims :])  # [N, C, *out, *k]
    for i, o in enumerate(out):  # g steps 1 past a lone window, which xp may hold more of
        win = win.narrow(2 + i, 0, o)
    n, cg, og, taps = xp.shape[0], g.cg, g.og, g.taps
    # im2col as [N, C * kernel, out]: weight @ cols lands in NCHW order, no permute after
    order = (0, 1, *range(2 + dims, 2 + 2 * dims), *range(2, 2 + dims))
    parts = []
    for i in range(g.groups):
        cols = win.narrow(1, i * cg, cg).permute(order).reshape(n, cg * taps, g.positions)
        wg = w.narrow(0, i * og, og).reshape(og, cg * taps)
        parts.append(linalg.matmul(wg, cols))
    y = parts[0] if g.groups == 1 else index_ops.cat(parts, 1)
    return y.reshape((n, g.groups * og, *out))


def _padding(padding, kernel, dilation, stride, dims: int, op: str):
    """(before, after) per spatial dim: ints, or 'valid' (none) and 'same' (the output
    keeps the input's size; an odd total puts the extra zero after, as PyTorch does)."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * dims, (0,) * dims
        if padding != "same":
            raise ValueError(
                f"Invalid padding string {padding!r}, should be one of ('valid', 'same')"
            )
        if any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
        total = [dl * (k - 1) for k, dl in zip(kernel, dilation)]
        before = tuple(t // 2 for t in total)
        return before, tuple(t - b for t, b in zip(total, before))
    amounts = tuple_arg(padding, dims, "padding", op)
    _check_sizes(op, padding=amounts)
    return amounts, amounts


def _conv_transpose(dims: int, op: str):
    def conv_transpose(
        input: Tensor,
        weight: Tensor,
        bias: Tensor | None = None,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        dilation=1,
    ) -> Tensor:
        x, was_batched, w = _input_and_weight(input, weight, dims, op, (int64,))
        stride = tuple_arg(stride, dims, "stride", op)
        pads = tuple_arg(padding, dims, "padding", op)
        extra = tuple_arg(output_padding, dims, "output_padding", op)
        dilation = tuple_arg(dilation, dims, "dilation", op)
        groups = _groups(groups, w, op)
        _check_sizes(op, padding=pads, output_padding=extra, stride=stride, dilation=dilation,
                     kernel=w.shape[2:])  # fmt: skip
        channels = x.shape[1]
        if w.shape[0] != channels:
            raise ValueError(
                f"{op}: Given transposed=1, weight of size {list(w.shape)}, expected input"
                f"{list(x.shape)} to have {w.shape[0]} channels, but got {channels} channels"
                " instead"
            )
        b = _bias(bias, x, w, groups * w.shape[1], op, transposed=True)
        if any(e >= max(s, d) for e, s, d in zip(extra, stride, dilation)):
            raise ValueError(
                "output padding must be smaller than either stride or dilation, but got"
                f" {_per_dim('output_padding', extra)} {_per_dim('stride', stride)}"
                f" {_per_dim('dilation', dilation)}"
            )
        size, kernel = x.shape[2:], w.shape[2:]
        full = [
            (s - 1) * st + dl * (k - 1) + 1 + e
            for s, st, dl, k, e in zip(size, stride, dilation, kernel, extra)
        ]
        crop = [slice(None), slice(None)]
        for p, f in zip(pads, full):
            if f - 2 * p <= 0:
                raise ValueError(f"{op}: padding {list(pads)} leaves an empty output")
            crop.append(slice(p, f - p))
        # float16 and bfloat16 multiply and sum in float32, rounded once at the end
        work = _accumulator(x.dtype)
        cols = _transposed_products(x.to(work), w.to(work), groups)
        y = col2im(cols, full, stride, dilation, dims)[tuple(crop)]
        if b is not None:
            y = y + b
        y = y.to(x.dtype).contiguous(memory_format=_result_format(x, w))
        return y if was_batched else y.squeeze(0)

    conv_transpose.__name__ = conv_transpose.__qualname__ = op
    conv_transpose.__doc__ = f"torch.nn.functional.{op}: matmul, then col2im."
    return conv_transpose


def _transposed_products(x: Tensor, w: Tensor, groups: int) -> Tensor:
    """Each input position's products with every kernel offset, before col2im sums them:
    x [N, C, *size] and w [C, O / groups, *kernel] -> [N, *size, O, *kernel], one matmul
    per group."""
    dims = x.ndim - 2
    n, size, kernel = x.shape[0], x.shape[2:], w.shape[2:]
    cg, og, taps = x.shape[1] // groups, w.shape[1], math.prod(kernel)
    rows = x.permute((0, *range(2, 2 + dims), 1))  # [N, *size, C]
    parts = []
    for g in range(groups):
        xg = rows.narrow(dims + 1, g * cg, cg).reshape(-1, cg)
        wg = w.narrow(0, g * cg, cg).reshape(cg, og * taps)
        parts.append(linalg.matmul(xg, wg).reshape((n, *size, og, *kernel)))
    return parts[0] if groups == 1 else index_ops.cat(parts, dims + 1)


def _per_dim(name: str, values: Sequence[int]) -> str:
    """PyTorch's naming of per-dim values: "stride_height: 2 stride_width: 1" (a 1-d op is its
    2-d one over a height of 1)."""
    values = (1 if name != "output_padding" else 0, *values) if len(values) == 1 else values
    dims = ("depth", "height", "width")[-len(values) :]
    return " ".join(f"{name}_{d}: {v}" for d, v in zip(dims, values))


def col2im(cols: Tensor, full: Sequence[int], stride, dilation, dims: int) -> Tensor:
    """Sum each kernel offset's values into the output: cols [N, *size, C, *kernel] ->
    [N, C, *full], out[..., i * stride + k * dilation] += cols[.., i, .., k]. The sums
    run in _accumulator's dtype and are rounded to cols' once."""
    n, size = cols.shape[0], cols.shape[1 : 1 + dims]
    channels, kernel = cols.shape[1 + dims], cols.shape[2 + dims :]
    total = _accumulator(cols.dtype)
    out = factories.zeros((n, channels, *full), dtype=total, device=cols.device)
    per_offset = cols.permute((0, 1 + dims, *range(1, 1 + dims), *range(2 + dims, 2 + 2 * dims)))
    stride = _steps(stride, size)
    for offset in offsets(kernel):
        target = [slice(None), slice(None)]
        for k, s, st, dl in zip(offset, size, stride, dilation):
            target.append(slice(k * dl, k * dl + (s - 1) * st + 1, st))
        region = out[tuple(target)]
        region += per_offset[(slice(None),) * (2 + dims) + offset]
    return out if total is cols.dtype else out.to(cols.dtype)


def _accumulator(dtype: DType) -> DType:
    """The dtype col2im sums in: float32 for float16 and bfloat16 (each addition rounded
    to 8 bits would grow the error with the overlaps; PyTorch sums in float too), int64
    for bool (a count, nonzero where any is True: PyTorch's or), else dtype itself."""
    if dtype.is_half:
        return float32
    return int64 if dtype is bool_ else dtype


def offsets(kernel: Sequence[int]):
    """Every kernel offset tuple, in row-major order."""
    return itertools.product(*(range(k) for k in kernel))


def _im2col_args(kernel_size, dilation, padding, stride, op: str):
    """unfold's and fold's (kernel, dilation, pads, stride) as pairs, checked as PyTorch's
    im2col_shape_check does."""
    kernel = tuple_arg(kernel_size, 2, "kernel_size", op)
    dilation = tuple_arg(dilation, 2, "dilation", op)
    pads = tuple_arg(padding, 2, "padding", op)
    stride = tuple_arg(stride, 2, "stride", op)
    for values, name, what, rule in (
        (kernel, "kernel size", "kernel", "be greater than zero"),
        (stride, "stride", "stride", "be greater than zero"),
        (dilation, "dilation", "dilation", "be greater than zero"),
        (pads, "padding", "pad", "be non-negative"),
    ):
        if min(values) < (0 if what == "pad" else 1):
            raise ValueError(f"{op}: {name} should {rule}, but got {_per_dim(what, values)}")
    return kernel, dilation, pads, stride


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """im2col: [N, C, H, W] -> [N, C * kh * kw, L], L the number of windows. Windows
    that read padding only are zeros, their padding never stored (as _spans says)."""
    op = "unfold"
    x, was_batched = batched(input, 2, op)
    kernel, dilation, pads, stride = _im2col_args(kernel_size, dilation, padding, stride, op)
    blocks = counts(x.shape[2:], kernel, stride, dilation, pads)
    if min(blocks) < 1:
        raise ValueError(
            f"{op}: Given input with spatial size {tuple(x.shape[2:])}, kernel_size={kernel},"
            f" dilation={dilation}, padding={pads}, calculated shape of the array of sliding"
            f" blocks as {tuple(blocks)}, but its components must be at least one."
        )
    n, c, taps = x.shape[0], x.shape[1], kernel[0] * kernel[1]
    spans = _spans(x.shape[2:], kernel, stride, dilation, pads, blocks)
    if spans is None:
        cols = factories.zeros((n, c * taps, blocks[0] * blocks[1]), dtype=x.dtype, device=x.device)
    else:
        xp = _zero_pad(_skip_start(x, spans, 2), *_read_padding(spans))
        win = windows(xp, kernel, stride, dilation).permute(0, 1, 4, 5, 2, 3)  # [N, C, kh, kw, ..]
        win = _zero_pad(win, *_skipped(spans))
        cols = win.reshape(n, c * taps, blocks[0] * blocks[1])
    return cols if was_batched else cols.squeeze(0)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """col2im, unfold's adjoint: [N, C * kh * kw, L] -> [N, C, H, W], overlaps summed.
    Only the blocks that reach the output are summed, over only the padding they cover."""
    op = "fold"
    x = tensor_arg(input, op)
    was_batched = x.ndim == 3
    if x.ndim not in (2, 3):
        raise ValueError(f"{op}: expected 2D or 3D input, got {list(x.shape)}")
    x = x if was_batched else x.unsqueeze(0)
    size = tuple_arg(output_size, 2, "output_size", op)
    kernel, dilation, pads, stride = _im2col_args(kernel_size, dilation, padding, stride, op)
    blocks = _fold_blocks(x, size, kernel, dilation, pads, stride, op)
    n, c = x.shape[0], x.shape[1] // (kernel[0] * kernel[1])
    spans = _spans(size, kernel, stride, dilation, pads, blocks)
    if spans is None:
        out = factories.zeros((n, c, *size), dtype=x.dtype, device=x.device)
        return out if was_batched else out.squeeze(0)
    out = _fold_spans(x.reshape(n, c, *kernel, *blocks), spans, stride, dilation)
    return out if was_batched else out.squeeze(0)


def _fold_spans(cols: Tensor, spans: Sequence[_Span], stride, dilation) -> Tensor:
    """fold of cols [N, C, kh, kw, *blocks]: col2im of the spans' blocks sums the output's
    elements start to end - 1 (and padding); the output is the part of those inside it,
    zeros elsewhere."""
    for i, sp in enumerate(spans):
        cols = cols.narrow(4 + i, sp.lo, sp.hi - sp.lo)
    cols = cols.permute(0, 4, 5, 1, 2, 3)  # [N, bh, bw, C, kh, kw]
    summed = col2im(cols, [sp.end - sp.start for sp in spans], stride, dilation, 2)
    near, far = _read_padding(spans)
    inside = tuple(slice(a, sp.end - sp.start - b) for a, b, sp in zip(near, far, spans))
    before = [max(0, sp.start) for sp in spans]
    after = [max(0, sp.size - sp.end) for sp in spans]
    return _zero_pad(summed[(slice(None), slice(None), *inside)], before, after).contiguous()


def _fold_blocks(x: Tensor, size, kernel, dilation, pads, stride, op: str) -> list[int]:
    """fold's blocks per spatial dim, checked against x [N, C * kh * kw, L] as PyTorch's
    col2im_shape_check does: C * kh * kw divisible, L their product, each positive."""
    if x.shape[1] % (kernel[0] * kernel[1]):
        raise ValueError(
            f"Expected size of input's dimension 1 to be divisible by the product of"
            f" kernel_size, but got input.size(1)={x.shape[1]} and kernel_size={kernel}"
        )
    blocks = counts(size, kernel, stride, dilation, pads)
    given = (
        f"Given output_size={size}, kernel_size={kernel}, dilation={dilation},"
        f" padding={pads}, stride={stride},"
    )
    if blocks[0] * blocks[1] != x.shape[2]:
        raise ValueError(
            f"{given} expected size of input's dimension 2 to match the calculated number of"
            f" sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got"
            f" input.size(2)={x.shape[2]}."
        )
    if min(blocks) < 1:
        raise ValueError(
            f"{given} calculated shape of the array of sliding blocks as {tuple(blocks)},"
            " which is too small (non-positive)"
        )
    return blocks


CONVOLUTIONS = {f"conv{d}d": _conv(d, f"conv{d}d") for d in (1, 2, 3)}
CONVOLUTIONS |= {
    f"conv_transpose{d}d": _conv_transpose(d, f"conv_transpose{d}d") for d in (1, 2, 3)
}


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """A 1-d convolution of time-batch-channel input [T, B, C] by weight [K, C, O] with
    bias [O]: [T', B, O] (fairseq's layout)."""
    x = tensor_arg(input, "conv_tbc")
    w, b = tensor_arg(weight, "conv_tbc", "weight"), tensor_arg(bias, "conv_tbc", "bias")
    if x.ndim != 3 or w.ndim != 3 or b.ndim != 1:
        raise ValueError(
            f"conv_tbc: expected 3-D input and weight and a 1-D bias, got {list(x.shape)},"
            f" {list(w.shape)} and {list(b.shape)}"
        )
    if w.shape[1] != x.shape[2] or b.shape[0] != w.shape[2]:
        raise ValueError(
            f"conv_tbc: input channels {x.shape[2]}, weight {list(w.shape)} and bias"
            f" {list(b.shape)} disagree"
        )
    y = CONVOLUTIONS["conv1d"](x.permute(1, 2, 0), w.permute(2, 1, 0), b, padding=pad)
    return y.permute(2, 0, 1).contiguous()


FUNCTIONS = {name: op_door(name, fn) for name, fn in CONVOLUTIONS.items()}
FUNCTIONS["conv_tbc"] = op_door("conv_tbc", conv_tbc)
FUNCTIONS |= {"unfold": op_door("unfold", unfold), "fold": op_door("fold", fold)}
