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
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from kael.codegen.cpu import conv_run, gemm_run
from kael.frontend import factories, index_ops, linalg, views
from kael.frontend.outputs import device_of, tensor_arg
from kael.frontend.padding import pad
from kael.frontend.tensor import Tensor, empty_impl
from kael.frontend.tracing import op_door
from kael.ir.conv import ConvGeometry
from kael.runtime.device import CPU
from kael.runtime.dtypes import INTEGER_DTYPES, int64
from kael.runtime.errors import Error, TypeError, ValueError
from kael.runtime.tensor_impl import host_ptr
from kael.runtime.tracestate import state as _trace


def tuple_arg(value, dims: int, name: str, op: str) -> tuple[int, ...]:
    """An int or a sequence of `dims` ints, as a tuple of `dims` ints."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * dims
    values = tuple(views.as_int(v, name) for v in value)
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
    spatial = x.shape[2:]
    out = [
        (s - dl * (k - 1) - 1) // st + 1 for s, k, st, dl in zip(spatial, kernel, stride, dilation)
    ]
    strides = x.strides()
    view_strides = (
        *strides[:2],
        *(strides[2 + i] * stride[i] for i in range(d)),
        *(strides[2 + i] * dilation[i] for i in range(d)),
    )
    return x.as_strided((*x.shape[:2], *out, *kernel), view_strides, x.storage_offset())


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
    if w.dtype is not x.dtype or x.dtype.is_bool:
        raise TypeError(
            f"{op}: expected input and weight of one dtype (not bool), got {x.dtype} and {w.dtype}"
        )
    if not x.dtype.is_floating_point and x.dtype not in integers:
        raise Error(f"{op}: not implemented for {x.dtype}")
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
        x, was_batched, w = _input_and_weight(input, weight, dims, op)
        stride = tuple_arg(stride, dims, "stride", op)
        dilation = tuple_arg(dilation, dims, "dilation", op)
        groups = views.as_int(groups, "groups")
        kernel = w.shape[2:]
        channels, out_channels = x.shape[1], w.shape[0]
        if groups <= 0 or channels % groups or out_channels % groups:
            raise ValueError(
                f"{op}: groups={groups} must divide input channels {channels} and output"
                f" channels {out_channels}"
            )
        if w.shape[1] * groups != channels:
            raise ValueError(
                f"Given groups={groups}, weight of size {list(w.shape)}, expected input"
                f"{list(x.shape)} to have {w.shape[1] * groups} channels, but got {channels}"
                " channels instead"
            )
        if any(v <= 0 for v in (*stride, *dilation)):
            raise ValueError(f"{op}: stride and dilation must be positive")
        before, after = _padding(padding, kernel, dilation, stride, dims, op)
        size = [s + b + a for s, b, a in zip(x.shape[2:], before, after)]
        if any(s < dl * (k - 1) + 1 for s, k, dl in zip(size, kernel, dilation)):
            raise ValueError(
                f"{op}: input size (padded) {list(size)} is smaller than the kernel size"
                f" {list(kernel)} (dilated by {list(dilation)})"
            )
        out = [
            (s - dl * (k - 1) - 1) // st + 1 for s, k, st, dl in zip(size, kernel, stride, dilation)
        ]
        geometry = ConvGeometry.of(
            x.shape[0], groups, channels // groups, out_channels // groups, x.shape[2:], kernel,
            stride, dilation, before, out,
        )  # fmt: skip
        if x.device is CPU and conv_run.supports(geometry, x.dtype):
            y = _implicit_gemm(x, w, geometry, op)
        else:
            y = _im2col(_zero_pad(x, before, after), w, geometry)
        if bias is not None:
            b = tensor_arg(bias, op, "bias")
            if b.shape != (out_channels,):
                raise ValueError(
                    f"{op}: bias should have {out_channels} elements, got {list(b.shape)}"
                )
            y = y + b.reshape((out_channels,) + (1,) * dims)
        return y if was_batched else y.squeeze(0)

    conv.__name__ = conv.__qualname__ = op
    conv.__doc__ = (
        f"torch.nn.functional.{op}: im2col over a window view, then one matmul per group."
    )
    return conv


def _implicit_gemm(x: Tensor, w: Tensor, g: ConvGeometry, op: str) -> Tensor:
    """The convolution by codegen/cpu/conv.py's kernels: the window matrix is packed block
    by block from x itself, never stored; under tracing, a plan step that a bias or an
    activation after it can join as its epilogue. `op` names the public function in a
    device error."""
    xi, wi = x.contiguous()._impl, w.contiguous()._impl
    n, o = x.shape[0], g.groups * g.og
    c = empty_impl((n, o, g.positions), x.dtype, x.device)
    if _trace.trace is not None:
        _trace.trace.matmul(c, xi, wi, geometry=g)
    else:
        addresses = (host_ptr(t, op) for t in (xi, wi, c))
        gemm_run.run(conv_run.plan_for(g, x.dtype), *addresses)
    dims = len(w.shape) - 2
    return Tensor(c).reshape((n, o, *g.out[3 - dims :]))


def _im2col(xp: Tensor, w: Tensor, g: ConvGeometry) -> Tensor:
    """The convolution of the zero-padded input as im2col and one matmul per group (the
    GPU's path and the narrow float types')."""
    dims = len(w.shape) - 2
    kernel, out = w.shape[2:], g.out[3 - dims :]
    win = windows(xp, kernel, g.stride[3 - dims :], g.dilation[3 - dims :])  # [N, C, *out, *k]
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
    if any(p < 0 for p in amounts):
        raise ValueError(f"{op}: negative padding is not supported, got {list(amounts)}")
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
        groups = views.as_int(groups, "groups")
        channels = x.shape[1]
        if w.shape[0] != channels or channels % groups:
            raise ValueError(
                f"{op}: weight {list(w.shape)} does not fit input {list(x.shape)} with"
                f" groups={groups}"
            )
        if any(e >= max(s, d) for e, s, d in zip(extra, stride, dilation)):
            raise ValueError(
                "output padding must be smaller than either stride or dilation, but got"
                f" {_per_dim('output_padding', extra)} {_per_dim('stride', stride)}"
                f" {_per_dim('dilation', dilation)}"
            )
        kernel = w.shape[2:]
        cg, og = channels // groups, w.shape[1]
        n, size = x.shape[0], x.shape[2:]
        taps = math.prod(kernel)
        rows = x.permute((0, *range(2, 2 + dims), 1))  # [N, *size, C]
        parts = []
        for g in range(groups):
            xg = rows.narrow(dims + 1, g * cg, cg).reshape(-1, cg)
            wg = w.narrow(0, g * cg, cg).reshape(cg, og * taps)
            parts.append(linalg.matmul(xg, wg).reshape((n, *size, og, *kernel)))
        cols = parts[0] if groups == 1 else index_ops.cat(parts, dims + 1)
        full = [
            (s - 1) * st + dl * (k - 1) + 1 + e
            for s, st, dl, k, e in zip(size, stride, dilation, kernel, extra)
        ]
        out = col2im(cols, full, stride, dilation, dims)
        crop = [slice(None), slice(None)]
        for p, f in zip(pads, full):
            if f - 2 * p <= 0:
                raise ValueError(f"{op}: padding {list(pads)} leaves an empty output")
            crop.append(slice(p, f - p))
        y = out[tuple(crop)]
        if bias is not None:
            y = y + tensor_arg(bias, op, "bias").reshape((-1,) + (1,) * dims)
        else:
            y = y.contiguous()
        return y if was_batched else y.squeeze(0)

    conv_transpose.__name__ = conv_transpose.__qualname__ = op
    conv_transpose.__doc__ = f"torch.nn.functional.{op}: matmul, then col2im."
    return conv_transpose


def _per_dim(name: str, values: Sequence[int]) -> str:
    """PyTorch's naming of per-dim values: "stride_height: 2 stride_width: 1" (a 1-d op is its
    2-d one over a height of 1)."""
    values = (1 if name != "output_padding" else 0, *values) if len(values) == 1 else values
    dims = ("depth", "height", "width")[-len(values) :]
    return " ".join(f"{name}_{d}: {v}" for d, v in zip(dims, values))


def col2im(cols: Tensor, full: Sequence[int], stride, dilation, dims: int) -> Tensor:
    """Sum each kernel offset's values into the output: cols [N, *size, C, *kernel] ->
    [N, C, *full], out[..., i * stride + k * dilation] += cols[.., i, .., k]."""
    n, size = cols.shape[0], cols.shape[1 : 1 + dims]
    channels, kernel = cols.shape[1 + dims], cols.shape[2 + dims :]
    out = factories.zeros((n, channels, *full), dtype=cols.dtype, device=cols.device)
    per_offset = cols.permute((0, 1 + dims, *range(1, 1 + dims), *range(2 + dims, 2 + 2 * dims)))
    for offset in offsets(kernel):
        target = [slice(None), slice(None)]
        for k, s, st, dl in zip(offset, size, stride, dilation):
            target.append(slice(k * dl, k * dl + (s - 1) * st + 1, st))
        region = out[tuple(target)]
        region += per_offset[(slice(None),) * (2 + dims) + offset]
    return out


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
    """im2col: [N, C, H, W] -> [N, C * kh * kw, L], L the number of windows."""
    op = "unfold"
    x, was_batched = batched(input, 2, op)
    kernel, dilation, pads, stride = _im2col_args(kernel_size, dilation, padding, stride, op)
    win = windows(_zero_pad(x, pads, pads), kernel, stride, dilation)  # [N, C, oh, ow, kh, kw]
    n, c, oh, ow = win.shape[:4]
    cols = win.permute(0, 1, 4, 5, 2, 3).reshape(n, c * kernel[0] * kernel[1], oh * ow)
    return cols if was_batched else cols.squeeze(0)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """col2im, unfold's adjoint: [N, C * kh * kw, L] -> [N, C, H, W], overlaps summed."""
    op = "fold"
    x = tensor_arg(input, op)
    was_batched = x.ndim == 3
    if x.ndim not in (2, 3):
        raise ValueError(f"{op}: expected 2D or 3D input, got {list(x.shape)}")
    x = x if was_batched else x.unsqueeze(0)
    size = tuple_arg(output_size, 2, "output_size", op)
    kernel, dilation, pads, stride = _im2col_args(kernel_size, dilation, padding, stride, op)
    taps = kernel[0] * kernel[1]
    if x.shape[1] % taps:
        raise ValueError(
            f"Expected size of input's dimension 1 to be divisible by the product of"
            f" kernel_size, but got input.size(1)={x.shape[1]} and kernel_size={kernel}"
        )
    blocks = [
        (s + 2 * p - dl * (k - 1) - 1) // st + 1
        for s, p, dl, k, st in zip(size, pads, dilation, kernel, stride)
    ]
    if blocks[0] * blocks[1] != x.shape[2]:
        raise ValueError(
            f"Given output_size={size}, kernel_size={kernel}, dilation={dilation},"
            f" padding={pads}, stride={stride}, expected size of input's dimension 2 to match"
            f" the calculated number of sliding blocks {blocks[0]} * {blocks[1]} ="
            f" {blocks[0] * blocks[1]}, but got input.size(2)={x.shape[2]}."
        )
    n, c = x.shape[0], x.shape[1] // taps
    cols = x.reshape(n, c, *kernel, *blocks).permute(0, 4, 5, 1, 2, 3)  # [N, bh, bw, C, kh, kw]
    full = [s + 2 * p for s, p in zip(size, pads)]
    out = col2im(cols, full, stride, dilation, 2)
    out = out[:, :, pads[0] : pads[0] + size[0], pads[1] : pads[1] + size[1]].contiguous()
    return out if was_batched else out.squeeze(0)


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
