"""Names PyTorch has at torch.NAME with torch's own signatures: the function forms of
in-place methods (torch.abs_, torch.zero_, ...) and of nn.functional's layers."""

from __future__ import annotations

import math
from collections.abc import Callable

from kael.frontend import eager, factories, layers, margins, noise, view_copies, views
from kael.frontend.noise import channel_shape, kept_mask
from kael.frontend.norms import widened
from kael.frontend.order_statistics import searchsorted
from kael.frontend.outputs import device_of, tensor_param
from kael.frontend.shapes import method_function
from kael.frontend.tensor import Layout, Tensor, strided
from kael.frontend.tracing import op_door
from kael.nn import functional as F
from kael.runtime import determinism, sync, user_warning
from kael.runtime.dtypes import as_dtype, bool_, get_default_dtype, int64
from kael.runtime.errors import Error, TypeError, ValueError
from kael.runtime.threadpool import get_num_threads

# ---- the function forms of Tensor's in-place methods ------------------------------------------

# torch.NAME(input, *args) is input.NAME(*args) for each of these (kael's Tensor has them all)
_INPLACE_METHODS = (
    "abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_",
    "clamp_min_", "clip_", "cos_", "cosh_", "deg2rad_", "erf_", "erfc_", "exp2_", "exp_",
    "expm1_", "fix_", "floor_", "frac_", "gcd_", "i0_", "lcm_", "ldexp_", "log10_", "log1p_",
    "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_",
    "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_",
    "tanh_", "trunc_", "xlogy_", "zero_", "fill_", "detach_",
)  # fmt: skip


# torch.NAME(input, *args) is input.NAME(*args) for these too; they return what the method does
_METHOD_FUNCTIONS = (
    "is_inference", "resize_as_", "as_strided_", "addmv_", "angle", "unsafe_chunk",
    "unsafe_split", "unsafe_split_with_sizes",
)  # fmt: skip


def fill(input: Tensor, value) -> Tensor:
    """A new tensor of input's shape and dtype with every element `value` (a number or a
    0-d tensor)."""
    x = tensor_param(input, "fill")
    if isinstance(value, Tensor) and value.ndim:
        raise ValueError(
            f"fill only supports 0-dimension value tensor but got tensor with {value.ndim}"
            " dimensions."
        )
    return factories.empty_like(x).fill_(value)


def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose (Tensor.adjoint: a copy for a complex tensor, which kael
    cannot conjugate lazily)."""
    return tensor_param(input, "adjoint").adjoint()


# ---- dropouts: torch.dropout(input, p, train) and its family ----------------------------------


def _feature_noise(input, p, train, name: str) -> tuple[Tensor, float, bool]:
    """input, p and train checked as torch's feature dropouts check them (2 dims at least)."""
    x = tensor_param(input, name)
    if x.ndim < 2:
        raise ValueError("Feature dropout requires at least 2 dimensions in the input")
    return x, p, train


def feature_dropout(input: Tensor, p: float, train: bool, inplace: bool = False) -> Tensor:
    """Whole channels (dim 1 of each sample) zeroed with probability p, the rest scaled by
    1 / (1 - p)."""
    x, p, train = _feature_noise(input, p, train, "feature_dropout")
    # F.dropout checks p, the dtype and train; it returns x itself when nothing is dropped
    if F.dropout(x, p, train) is x:
        return x
    if p == 1.0:
        noise = factories.zeros((), dtype=x.dtype, device=x.device)
    else:
        noise = kept_mask(channel_shape(x, True), p, x) / (1.0 - p)
    return x.mul_(noise) if inplace else x * noise


def feature_alpha_dropout(input: Tensor, p: float, train: bool, inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels (dim 1 of each sample)."""
    x, p, train = _feature_noise(input, p, train, "feature_alpha_dropout")
    return F.feature_alpha_dropout(x, p, train, inplace)


def native_dropout(input: Tensor, p: float, train: bool | None) -> tuple[Tensor, Tensor]:
    """(input * mask / (1 - p), mask): the bool mask of the kept elements; when not training
    a copy of input and an all-true mask."""
    x = tensor_param(input, "native_dropout")
    if train is not None and not train:
        return x.clone(), factories.ones(x.shape, dtype=bool_, device=x.device)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"bernoulli_ expects p to be in [0, 1], but got p={1 - p}")
    scaled = F.dropout(factories.ones(x.shape, dtype=x.dtype, device=x.device), p, True)
    return x * scaled, scaled != 0


def _dropouts() -> dict[str, Callable]:
    """torch's four dropouts (input, p, train) and their in-place _ forms."""
    forms = {
        "dropout": lambda x, p, train, inplace: F.dropout(x, p, train, inplace),
        "alpha_dropout": lambda x, p, train, inplace: F.alpha_dropout(x, p, train, inplace),
        "feature_dropout": feature_dropout,
        "feature_alpha_dropout": feature_alpha_dropout,
    }
    table = {}
    for name, form in forms.items():
        for suffix, inplace in (("", False), ("_", True)):

            def fn(input: Tensor, p, train, _form=form, _inplace=inplace, _name=name + suffix):
                return _form(tensor_param(input, _name), p, train, _inplace)

            fn.__name__ = fn.__qualname__ = name + suffix
            fn.__doc__ = f"torch.{name}{suffix}(input, p, train): nn.functional's {name}."
            table[name + suffix] = fn
    return table


def rrelu(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    generator=None,
    inplace: bool = False,
) -> Tensor:
    """Negative values times a slope from U(lower, upper) (training, from `generator` when
    given) or times (lower + upper) / 2."""
    x = tensor_param(input, "rrelu_" if inplace else "rrelu")
    return noise.randomized_leaky_relu(x, lower, upper, training, inplace, generator)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None) -> Tensor:
    """rrelu written into input."""
    return rrelu(input, lower, upper, training, generator, inplace=True)


# ---- normalisations with torch's argument order and their statistics --------------------------


def batch_norm(
    input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled
) -> Tensor:
    """nn.functional.batch_norm in torch.batch_norm's argument order (cudnn_enabled unused)."""
    x = tensor_param(input, "batch_norm")
    return F.batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(
    input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled
) -> Tensor:
    """nn.functional.instance_norm in torch.instance_norm's argument order."""
    x = tensor_param(input, "instance_norm")
    return F.instance_norm(
        x, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
    )


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True) -> Tensor:
    """nn.functional.group_norm with torch.group_norm's extra cudnn_enabled (unused)."""
    return F.group_norm(tensor_param(input, "group_norm"), num_groups, weight, bias, eps)


def _statistics(x: Tensor, dims, eps: float, keepdim: bool) -> tuple[Tensor, Tensor]:
    """The mean and 1 / sqrt(biased variance + eps) of x over dims, taken in float32 for the
    half types."""
    wide = widened(x)
    mean = wide.mean(dims, keepdim=keepdim)
    rstd = (wide.var(dims, correction=0, keepdim=keepdim) + eps).rsqrt()
    return mean, rstd


def native_layer_norm(input, normalized_shape, weight, bias, eps) -> tuple[Tensor, Tensor, Tensor]:
    """(layer_norm, mean, rstd): the statistics over the normalized dims, kept as size 1."""
    x = tensor_param(input, "native_layer_norm")
    out = F.layer_norm(x, normalized_shape, weight, bias, eps)
    dims = tuple(range(x.ndim - len(tuple(normalized_shape)), x.ndim))
    mean, rstd = _statistics(x, dims, eps, keepdim=True)
    return out, mean.to(x.dtype), rstd.to(x.dtype)


def native_batch_norm(
    input, weight, bias, running_mean, running_var, training, momentum, eps
) -> tuple[Tensor, Tensor, Tensor]:
    """(batch_norm, save_mean, save_invstd): the batch's per-channel statistics when
    training (empty in eval), in running_mean's dtype when it is given."""
    x = tensor_param(input, "native_batch_norm")
    out = F.batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)
    dtype = x.dtype if running_mean is None else running_mean.dtype
    if not training:
        empty = factories.empty(0, dtype=dtype, device=x.device)
        return out, empty, empty.clone()
    mean, invstd = _statistics(x, (0, *range(2, x.ndim)), eps, keepdim=False)
    return out, mean.to(dtype), invstd.to(dtype)


def native_group_norm(input, weight, bias, N, C, HxW, group, eps) -> tuple[Tensor, Tensor, Tensor]:
    """(group_norm, mean, rstd): statistics per (sample, group), shaped (N, group)."""
    x = tensor_param(input, "native_group_norm")
    if x.numel() != N * C * HxW:
        raise ValueError(f"Expected X.numel() == N * C * HxW, got {x.numel()} != {N} * {C} * {HxW}")
    out = F.group_norm(x, group, weight, bias, eps)
    mean, rstd = _statistics(x.reshape(N, group, -1), -1, eps, keepdim=False)
    return out, mean.to(x.dtype), rstd.to(x.dtype)


# ---- losses with the reduction as torch's enum int ------------------------------------------

# at::Reduction: 1 Mean, 2 Sum; ATen reduces any other int as None does
_REDUCTIONS = {1: "mean", 2: "sum"}


def _reduction(reduction, name: str) -> str:
    """nn.functional's reduction string for torch's int."""
    if isinstance(reduction, bool) or not isinstance(reduction, int):
        raise TypeError(
            f"{name}(): argument 'reduction' must be int, not {type(reduction).__name__}"
        )
    return _REDUCTIONS.get(reduction, "none")


# torch's own forms of the losses (torch.kl_div, torch.triplet_margin_loss...) take the
# reduction as an int, and called without one give each element's loss, as reduction 0.


def kl_div(input, target, reduction: int = 0, *, log_target: bool = False) -> Tensor:
    """nn.functional.kl_div with reduction as an int."""
    return F.kl_div(input, target, _reduction(reduction, "kl_div"), log_target)


def binary_cross_entropy_with_logits(
    input, target, weight=None, pos_weight=None, reduction: int = 0
) -> Tensor:
    """nn.functional.binary_cross_entropy_with_logits in torch's order, reduction an int."""
    mode = _reduction(reduction, "binary_cross_entropy_with_logits")
    return F.binary_cross_entropy_with_logits(input, target, weight, mode, pos_weight)


def hinge_embedding_loss(input, target, margin: float = 1.0, reduction: int = 0) -> Tensor:
    """nn.functional.hinge_embedding_loss with reduction as an int."""
    mode = _reduction(reduction, "hinge_embedding_loss")
    return F.hinge_embedding_loss(input, target, margin, mode)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction: int = 0) -> Tensor:
    """nn.functional.cosine_embedding_loss with reduction as an int."""
    mode = _reduction(reduction, "cosine_embedding_loss")
    return F.cosine_embedding_loss(input1, input2, target, margin, mode)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction: int = 0) -> Tensor:
    """nn.functional.margin_ranking_loss with reduction as an int."""
    mode = _reduction(reduction, "margin_ranking_loss")
    return F.margin_ranking_loss(input1, input2, target, margin, mode)


def triplet_margin_loss(
    anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction: int = 0
) -> Tensor:
    """nn.functional.triplet_margin_loss with reduction as an int."""
    mode = _reduction(reduction, "triplet_margin_loss")
    return margins.triplet_margins(anchor, positive, negative, margin, p, eps, swap, mode)


def poisson_nll_loss(input, target, log_input, full, eps, reduction) -> Tensor:
    """nn.functional.poisson_nll_loss, every argument given, reduction an int."""
    mode = _reduction(reduction, "poisson_nll_loss")
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=mode)


def ctc_loss(
    log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0, zero_infinity=False
) -> Tensor:
    """nn.functional.ctc_loss with reduction as an int; called without one, torch.ctc_loss
    gives each sequence's loss (what reduction 0 gives)."""
    mode = _reduction(reduction, "ctc_loss")
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, mode, zero_infinity)


# ---- layers with torch-level spellings --------------------------------------------------------


def embedding(
    weight, indices, padding_idx: int = -1, scale_grad_by_freq=False, sparse=False
) -> Tensor:
    """weight's rows at indices; padding_idx, scale_grad_by_freq and sparse change only the
    gradient, so the forward ignores them as torch's does."""
    return F.embedding(indices, weight)


def constant_pad_nd(input, pad, value=0) -> Tensor:
    """nn.functional.pad in constant mode: negative pads crop."""
    return F.pad(tensor_param(input, "constant_pad_nd"), pad, "constant", value)


def adaptive_max_pool1d(input, output_size) -> tuple[Tensor, Tensor]:
    """(values, indices) of nn.functional.adaptive_max_pool1d."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def max_pool1d_with_indices(
    input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False
) -> tuple[Tensor, Tensor]:
    """(values, indices) of nn.functional.max_pool1d; an empty stride is the kernel size."""
    stride = None if stride in ((), []) else stride
    return F.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


# ---- convolution and grid sampling with torch's ATen-level arguments --------------------------

_CONVOLUTIONS = {
    (False, 1): F.conv1d, (False, 2): F.conv2d, (False, 3): F.conv3d,
    (True, 1): F.conv_transpose1d, (True, 2): F.conv_transpose2d, (True, 3): F.conv_transpose3d,
}  # fmt: skip


def _int_list(value, name: str, position: int, dims: int) -> tuple[int, ...]:
    """A list or tuple of ints with one entry or `dims` of them, as torch.convolution takes
    stride, padding, dilation and output_padding."""
    if not isinstance(value, list | tuple) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise TypeError(
            f"convolution(): argument '{name}' (position {position}) must be tuple of ints,"
            f" not {type(value).__name__}"
        )
    if len(value) not in (1, dims):
        raise ValueError(
            f"expected {name} to be a single integer value or a list of {dims} values to match"
            f" the convolution dimensions, but got {name}={list(value)}"
        )
    return tuple(value) * (dims // len(value))


def convolution(
    input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
) -> Tensor:
    """ATen's convolution: conv{1,2,3}d or conv_transpose{1,2,3}d by the weight's rank and
    `transposed`; every argument given, the input batched."""
    x = tensor_param(input, "convolution")
    w = tensor_param(weight, "convolution")
    dims = w.ndim - 2
    if x.ndim != w.ndim or not 1 <= dims <= 3:
        raise ValueError(
            f"Expected {w.ndim}-dimensional input for {w.ndim}-dimensional weight"
            f" {list(w.shape)}, but got {x.ndim}-dimensional input of size {list(x.shape)} instead"
        )
    named = ("stride", stride), ("padding", padding), ("dilation", dilation)
    stride, padding, dilation = (
        _int_list(v, name, i, dims) for i, (name, v) in enumerate(named, start=4)
    )
    output_padding = _int_list(output_padding, "output_padding", 8, dims)
    if not isinstance(transposed, bool):
        raise TypeError(
            "convolution(): argument 'transposed' (position 7) must be bool, not"
            f" {type(transposed).__name__}"
        )
    if any(p < 0 for p in padding):
        raise ValueError(f"negative padding is not supported, got padding={list(padding)}")
    if groups <= 0:
        raise ValueError(f"non-positive groups is not supported, got groups={groups}")
    conv = _CONVOLUTIONS[transposed, dims]
    if transposed:
        return conv(x, w, bias, stride, padding, output_padding, groups, dilation)
    return conv(x, w, bias, stride, padding, dilation, groups)


def conv_tbc(input, weight, bias, pad: int = 0) -> Tensor:
    """nn.functional.conv_tbc: a 1-d convolution of a (time, batch, channel) input."""
    return F.conv_tbc(tensor_param(input, "conv_tbc"), weight, bias, pad)


# ATen's GridSamplerInterpolation and GridSamplerPadding enums
_SAMPLER_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_SAMPLER_PADDINGS = {0: "zeros", 1: "border", 2: "reflection"}


def _sampler_enum(value, table: dict, name: str, op: str) -> str:
    """nn.functional.grid_sample's string for torch's enum int."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{op}(): argument '{name}' must be int, not {type(value).__name__}")
    if value not in table:
        raise ValueError(f"{op}(): expected {name} in {sorted(table)}, but got {value}")
    return table[value]


def _grid_sampler(
    input, grid, interpolation_mode, padding_mode, align_corners, op: str, ndim=None
) -> Tensor:
    """grid_sample with the modes as ATen's ints; `ndim` the rank input and grid must have."""
    x, g = tensor_param(input, op), tensor_param(grid, op)
    mode = _sampler_enum(interpolation_mode, _SAMPLER_MODES, "interpolation_mode", op)
    padding = _sampler_enum(padding_mode, _SAMPLER_PADDINGS, "padding_mode", op)
    if not isinstance(align_corners, bool):
        raise TypeError(
            f"{op}(): argument 'align_corners' (position 5) must be bool, not"
            f" {type(align_corners).__name__}"
        )
    if mode == "bicubic" and x.ndim != 4:
        raise ValueError("grid_sampler(): bicubic interpolation only supports 4D input")
    if ndim is not None and (x.ndim != ndim or g.ndim != ndim):
        raise ValueError(
            f"grid_sampler(): expected {ndim}D input and grid with same number of dimensions,"
            f" but got input with sizes {list(x.shape)} and grid with sizes {list(g.shape)}"
        )
    return F.grid_sample(x, g, mode, padding, align_corners)


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners) -> Tensor:
    """nn.functional.grid_sample of a 4-d or 5-d input with ATen's int modes (interpolation
    0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection)."""
    args = (interpolation_mode, padding_mode, align_corners)
    return _grid_sampler(input, grid, *args, "grid_sampler")


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners) -> Tensor:
    """grid_sampler of a 4-d input and grid."""
    args = (interpolation_mode, padding_mode, align_corners)
    return _grid_sampler(input, grid, *args, "grid_sampler_2d", 4)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners) -> Tensor:
    """grid_sampler of a 5-d input and grid (no bicubic, as in PyTorch)."""
    args = (interpolation_mode, padding_mode, align_corners)
    return _grid_sampler(input, grid, *args, "grid_sampler_3d", 5)


# ---- ranges and segment reductions -------------------------------------------------------------


def range_(start, end, step=1, *, dtype=None, device=None) -> Tensor:
    """torch.range: start, start + step, ... up to end INCLUDED (deprecated, as PyTorch warns;
    use arange); the default float dtype unless told otherwise."""
    user_warning.warn(
        "kael.range is deprecated and will be removed in a future release because its behavior"
        " is inconsistent with Python's range builtin. Instead, use kael.arange, which produces"
        " values in [start, end).",
        UserWarning,
    )
    start, end, step = (
        factories.as_number(v, n) for v, n in ((start, "start"), (end, "end"), (step, "step"))
    )
    if not all(math.isfinite(v) for v in (start, end)):
        raise ValueError(f"unsupported range: {start} -> {end}")
    dtype = get_default_dtype() if dtype is None else as_dtype(dtype)
    if not dtype.is_floating_point:  # PyTorch takes the bounds and step as integers first
        start, end, step = int(start), int(end), int(step)
    if step == 0 or not math.isfinite(step):
        raise ValueError(f"step must be finite and nonzero, got step={step} in {dtype}")
    if (end - start) * step < 0:
        raise ValueError(
            f"upper bound and lower bound inconsistent with step sign: start={start},"
            f" end={end}, step={step}"
        )
    count = (end - start) / step + 1
    if not count < 2**62:  # inf too, where end - start overflows
        raise ValueError(f"range from {start} to {end} by {step} has too many elements")
    out = factories.empty(int(count), dtype=dtype, device=device)
    eager.arange_into(out._impl, start, step)
    return out


# reduce -> (scatter_reduce's name, its identity: what an empty segment holds without
# `initial`; a mean's 0 / 0 makes it NaN)
_SEGMENT_REDUCES = {
    "sum": ("sum", 0.0),
    "mean": ("sum", 0.0),
    "max": ("amax", -math.inf),
    "min": ("amin", math.inf),
    "prod": ("prod", 1.0),
}


def _segment_bounds(data: Tensor, axis: int, lengths, offsets, unsafe: bool) -> Tensor:
    """The int64 bounds [..., segments + 1] of the segments along axis (lengths' running
    sums from 0, or `offsets` as given; lengths win when both are), checked unless `unsafe`."""
    given = tensor_param(lengths if lengths is not None else offsets, "segment_reduce")
    device_of([data, given], "segment_reduce")
    if given.dtype.is_floating_point or given.dtype.is_bool:
        raise TypeError(
            f"segment_reduce(): lengths and offsets must be integers, not {given.dtype}"
        )
    if given.ndim != axis + 1 or given.shape[:axis] != data.shape[:axis]:
        raise ValueError(
            f"segment_reduce(): Expected axis to be the last dimension of lengths but got {axis}."
        )
    given = given.to(int64)
    bounds = given if lengths is None else F.pad(given.cumsum(-1), (1, 0))
    if bounds.shape[-1] == 0:
        raise ValueError("segment_reduce(): offsets must hold at least one bound, got none")
    if not unsafe:
        _check_segments(bounds, data.shape[axis], lengths is not None)
    return bounds


def _check_segments(bounds: Tensor, size: int, exact: bool) -> None:
    """PyTorch's checks: no segment of negative length; lengths (`exact`) cover the axis's
    `size` exactly; offsets stay within it."""
    sizes = bounds.diff(dim=-1)
    if sizes.numel() and bool((sizes < 0).any()):
        raise ValueError(f"segment_reduce(): lengths contains negative value: {sizes.tolist()}")
    last = bounds[..., -1]
    if exact and bool((last != size).any()):
        raise ValueError(
            "segment_reduce(): Expected all rows of lengths along axis to sum to"
            f" data.size(axis) = {size} when !unsafe, got {last.tolist()}"
        )
    if bool(((bounds < 0) | (bounds > size)).any()):
        raise ValueError(f"segment_reduce(): offsets {bounds.tolist()} outside [0, {size}]")


def _segment_ids(bounds: Tensor, data: Tensor, axis: int) -> Tensor:
    """Each position along axis's segment (data's shape): one past the last segment for a
    position no segment holds."""
    segments = bounds.shape[-1] - 1
    size = data.shape[axis]
    positions = factories.arange(size, device=data.device).expand(*data.shape[:axis], size)
    ids = searchsorted(bounds, positions, right=True) - 1
    ids = ids.where(ids >= 0, segments)
    return ids.reshape(ids.shape + (1,) * (data.ndim - axis - 1)).expand(data.shape)


def segment_reduce(
    data,
    reduce: str,
    *,
    lengths=None,
    indices=None,
    offsets=None,
    dim=0,
    unsafe=False,
    initial=None,
) -> Tensor:
    """Each segment along dim (PyTorch's `axis`, which the op door passes as dim; given by
    lengths, or by offsets' bounds) reduced by sum, mean, max, min or prod; an empty segment
    is `initial` or the reduction's own value (0, NaN, -inf, inf, 1), and `initial` joins
    every segment's reduction (a mean divides by the segment's length only, as PyTorch's)."""
    x = tensor_param(data, "segment_reduce")
    if reduce not in _SEGMENT_REDUCES:
        raise ValueError(
            "segment_reduce(): reduce argument must be either sum, prod, mean, max or min,"
            f" got {reduce}"
        )
    if lengths is None and offsets is None:
        what = "indices based reduction is not supported yet" if indices is not None else None
        raise ValueError(
            f"segment_reduce(): {what or 'Either lengths or offsets must be defined'}."
        )
    if not x.dtype.is_floating_point:
        raise Error(f"segment_reduce(): not implemented for {x.dtype}")
    if x.ndim == 0:
        raise ValueError("segment_reduce(): Expected data.dim() >= lengths.dim(), got 0-d data")
    axis = views.wrap_dim(dim, x.ndim)
    bounds = _segment_bounds(x, axis, lengths, offsets, unsafe)
    name, identity = _SEGMENT_REDUCES[reduce]
    start = identity if initial is None else initial
    segments = bounds.shape[-1] - 1
    shape = (*x.shape[:axis], segments + 1, *x.shape[axis + 1 :])
    base = factories.full(shape, start, dtype=x.dtype, device=x.device)
    out = base.scatter_reduce(axis, _segment_ids(bounds, x, axis), x, name)
    out = out.narrow(axis, 0, segments)
    return out if reduce != "mean" else _segment_mean(out, bounds, axis, initial)


def _segment_mean(total: Tensor, bounds: Tensor, axis: int, initial) -> Tensor:
    """The segments' sums over their lengths; an empty segment NaN, or `initial` when given."""
    counts = bounds.diff(dim=-1)
    counts = counts.reshape(counts.shape + (1,) * (total.ndim - axis - 1))
    mean = total / counts
    return mean if initial is None else mean.where(counts != 0, initial)


# ---- process-wide settings PyTorch has ---------------------------------------------------------

_SETTINGS_LOCK = sync.lock()  # a forked child gets it unlocked
# interop_threads: stored only (kael runs no inter-op pool); anomaly: (enabled, check_nan),
# remembered only (kael has no autograd to watch)
_SETTINGS: dict = {"interop_threads": None, "anomaly": (False, True)}


def _setting(name: str):
    with _SETTINGS_LOCK:
        return _SETTINGS[name]


def _set(name: str, value) -> None:
    with _SETTINGS_LOCK:
        _SETTINGS[name] = value


def _flag(value, message: str) -> bool:
    """A Python bool; kael.TypeError with `message` (naming the type given) otherwise."""
    if not isinstance(value, bool):
        raise TypeError(f"{message}, but got {type(value).__name__}")
    return value


def get_num_interop_threads() -> int:
    """The inter-op thread count set_num_interop_threads stored (kael's intra-op count until
    then); kael runs ops one after another, so nothing reads it."""
    stored = _setting("interop_threads")
    return get_num_threads() if stored is None else stored


def set_num_interop_threads(n: int) -> None:
    """Store the inter-op thread count (a positive int); it changes nothing in kael."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"set_num_interop_threads expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise ValueError(f"set_num_interop_threads expects a positive integer, got {n}")
    _set("interop_threads", n)


def set_flush_denormal(mode: bool) -> bool:
    """False: kael leaves the FPU's denormal mode alone (PyTorch's answer where it cannot
    set it), so subnormal floats keep their values."""
    _flag(mode, "flush_denormal expects a bool")
    return False


def is_anomaly_enabled() -> bool:
    """Whether set_anomaly_enabled(True) was called (remembered; kael has no autograd)."""
    return _setting("anomaly")[0]


def is_anomaly_check_nan_enabled() -> bool:
    """set_anomaly_enabled's check_nan (True by default, as PyTorch's)."""
    return _setting("anomaly")[1]


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Remember autograd's anomaly switch: with no backward pass in kael it watches nothing."""
    _flag(enabled, "set_anomaly_enabled(): argument 'enabled' (position 1) must be bool")
    _flag(check_nan, "set_anomaly_enabled(): argument 'check_nan' (position 2) must be bool")
    _set("anomaly", (enabled, check_nan))


def is_warn_always_enabled() -> bool:
    """set_warn_always's flag."""
    return user_warning.always


def set_warn_always(b: bool) -> None:
    """Whether the warnings PyTorch gives once (user_warning.warn_once) repeat every time."""
    user_warning.always = _flag(b, "setWarnOnlyOnce expects a bool")


# debug mode -> use_deterministic_algorithms' (mode, warn_only)
_DEBUG_MODES = {0: (False, False), 1: (True, True), 2: (True, False)}
_DEBUG_NAMES = {"default": 0, "warn": 1, "error": 2}


def get_deterministic_debug_mode() -> int:
    """0 when nondeterministic kernels are allowed, 1 when kael only warns, 2 when it holds
    to deterministic ones (use_deterministic_algorithms and its warn_only)."""
    if not determinism.are_deterministic_algorithms_enabled():
        return 0
    return 1 if determinism.is_deterministic_algorithms_warn_only_enabled() else 2


def set_deterministic_debug_mode(debug_mode: int | str) -> None:
    """use_deterministic_algorithms by PyTorch's debug mode: 0 or 'default' off, 1 or 'warn'
    on with warn_only, 2 or 'error' on."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_NAMES:
            raise ValueError(
                "invalid value of debug_mode, expected one of `default`, `warn`, `error`, but"
                f" got {debug_mode}"
            )
        debug_mode = _DEBUG_NAMES[debug_mode]
    elif not isinstance(debug_mode, int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in _DEBUG_MODES:
        raise ValueError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    mode, warn_only = _DEBUG_MODES[debug_mode]
    determinism.use_deterministic_algorithms(mode, warn_only=warn_only)


_PLAIN = {
    "fill": fill,
    "adjoint": adjoint,
    "native_dropout": native_dropout,
    "rrelu": rrelu,
    "rrelu_": rrelu_,
    "batch_norm": batch_norm,
    "instance_norm": instance_norm,
    "group_norm": group_norm,
    "native_layer_norm": native_layer_norm,
    "native_batch_norm": native_batch_norm,
    "native_group_norm": native_group_norm,
    "kl_div": kl_div,
    "binary_cross_entropy_with_logits": binary_cross_entropy_with_logits,
    "hinge_embedding_loss": hinge_embedding_loss,
    "cosine_embedding_loss": cosine_embedding_loss,
    "margin_ranking_loss": margin_ranking_loss,
    "triplet_margin_loss": triplet_margin_loss,
    "poisson_nll_loss": poisson_nll_loss,
    "ctc_loss": ctc_loss,
    "embedding": embedding,
    "embedding_renorm_": layers.embedding_renorm_,
    "constant_pad_nd": constant_pad_nd,
    "channel_shuffle": F.channel_shuffle,
    "native_channel_shuffle": F.native_channel_shuffle,
    "adaptive_max_pool1d": adaptive_max_pool1d,
    "max_pool1d_with_indices": max_pool1d_with_indices,
    "convolution": convolution,
    "conv_tbc": conv_tbc,
    "grid_sampler": grid_sampler,
    "grid_sampler_2d": grid_sampler_2d,
    "grid_sampler_3d": grid_sampler_3d,
    "range": range_,
    "segment_reduce": segment_reduce,
    **_dropouts(),
    **{name: method_function(name, tensor_param) for name in _INPLACE_METHODS},
    **{name: method_function(name, tensor_param) for name in _METHOD_FUNCTIONS},
}

# settings: plain functions (no tensors in or out, nothing to trace)
_SETTINGS_FUNCTIONS = (
    get_num_interop_threads, set_num_interop_threads, set_flush_denormal, is_anomaly_enabled,
    is_anomaly_check_nan_enabled, set_anomaly_enabled, is_warn_always_enabled, set_warn_always,
    get_deterministic_debug_mode, set_deterministic_debug_mode,
    factories.get_default_device, factories.set_default_device,
)  # fmt: skip

FUNCTIONS: dict[str, Callable] = {
    **{name: op_door(name, fn) for name, fn in _PLAIN.items()},
    **{fn.__name__: fn for fn in _SETTINGS_FUNCTIONS},
    **view_copies.FUNCTIONS,
    "strided": strided,
    "layout": Layout,
}
