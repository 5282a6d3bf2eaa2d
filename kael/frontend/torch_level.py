"""Names PyTorch has at torch.NAME with torch's own signatures: the function forms of
in-place methods (torch.abs_, torch.zero_, ...) and of nn.functional's layers."""

from __future__ import annotations

from collections.abc import Callable

from kael.frontend import factories, layers
from kael.frontend.noise import _channels, _kept
from kael.frontend.norms import _wide
from kael.frontend.tensor import Layout, Tensor, strided
from kael.frontend.tracing import op_door
from kael.nn import functional as F
from kael.runtime.dtypes import bool_
from kael.runtime.errors import TypeError, ValueError

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


def _tensor(input, name: str) -> Tensor:
    """input itself when it is a Tensor; kael.TypeError as PyTorch words it otherwise."""
    if not isinstance(input, Tensor):
        raise TypeError(
            f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
        )
    return input


def _method_form(name: str) -> Callable:
    """torch.NAME(input, *args, **kwargs): Tensor.NAME called on input."""

    def method_form(input: Tensor, *args, **kwargs) -> Tensor:
        return getattr(_tensor(input, name), name)(*args, **kwargs)

    method_form.__name__ = method_form.__qualname__ = name
    method_form.__doc__ = f"torch.{name}(input, ...): input.{name}(...), which returns input."
    return method_form


def fill(input: Tensor, value) -> Tensor:
    """A new tensor of input's shape and dtype with every element `value` (a number or a
    0-d tensor)."""
    x = _tensor(input, "fill")
    if isinstance(value, Tensor) and value.ndim:
        raise ValueError(
            f"fill only supports 0-dimension value tensor but got tensor with {value.ndim}"
            " dimensions."
        )
    return factories.empty_like(x).fill_(value)


def adjoint(input: Tensor) -> Tensor:
    """The last two dims swapped (the conjugate transpose of real matrices)."""
    return _tensor(input, "adjoint").adjoint()


# ---- dropouts: torch.dropout(input, p, train) and its family ----------------------------------


def _feature_noise(input, p, train, name: str) -> tuple[Tensor, float, bool]:
    """input, p and train checked as torch's feature dropouts check them (2 dims at least)."""
    x = _tensor(input, name)
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
        noise = _kept(_channels(x, True), p, x) / (1.0 - p)
    return x.mul_(noise) if inplace else x * noise


def feature_alpha_dropout(input: Tensor, p: float, train: bool, inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels (dim 1 of each sample)."""
    x, p, train = _feature_noise(input, p, train, "feature_alpha_dropout")
    return F.feature_alpha_dropout(x, p, train, inplace)


def native_dropout(input: Tensor, p: float, train: bool | None) -> tuple[Tensor, Tensor]:
    """(input * mask / (1 - p), mask): the bool mask of the kept elements; when not training
    a copy of input and an all-true mask."""
    x = _tensor(input, "native_dropout")
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
                return _form(_tensor(input, _name), p, train, _inplace)

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
    x = _tensor(input, "rrelu_" if inplace else "rrelu")
    if lower > upper:
        raise ValueError("Lower bound should be less than or equal to the upper bound")
    if generator is None or not training:
        return F.rrelu(x, lower, upper, training, inplace)
    slopes = factories.empty_like(x).uniform_(lower, upper, generator=generator)
    out = (x * slopes).where(x < 0, x)
    return x.copy_(out) if inplace else out


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None) -> Tensor:
    """rrelu written into input."""
    return rrelu(input, lower, upper, training, generator, inplace=True)


# ---- normalisations with torch's argument order and their statistics --------------------------


def batch_norm(
    input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled
) -> Tensor:
    """nn.functional.batch_norm in torch.batch_norm's argument order (cudnn_enabled unused)."""
    x = _tensor(input, "batch_norm")
    return F.batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(
    input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled
) -> Tensor:
    """nn.functional.instance_norm in torch.instance_norm's argument order."""
    x = _tensor(input, "instance_norm")
    return F.instance_norm(
        x, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
    )


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True) -> Tensor:
    """nn.functional.group_norm with torch.group_norm's extra cudnn_enabled (unused)."""
    return F.group_norm(_tensor(input, "group_norm"), num_groups, weight, bias, eps)


def _statistics(x: Tensor, dims, eps: float, keepdim: bool) -> tuple[Tensor, Tensor]:
    """The mean and 1 / sqrt(biased variance + eps) of x over dims, taken in float32 for the
    half types."""
    wide = _wide(x)
    mean = wide.mean(dims, keepdim=keepdim)
    rstd = (wide.var(dims, correction=0, keepdim=keepdim) + eps).rsqrt()
    return mean, rstd


def native_layer_norm(input, normalized_shape, weight, bias, eps) -> tuple[Tensor, Tensor, Tensor]:
    """(layer_norm, mean, rstd): the statistics over the normalized dims, kept as size 1."""
    x = _tensor(input, "native_layer_norm")
    out = F.layer_norm(x, normalized_shape, weight, bias, eps)
    dims = tuple(range(x.ndim - len(tuple(normalized_shape)), x.ndim))
    mean, rstd = _statistics(x, dims, eps, keepdim=True)
    return out, mean.to(x.dtype), rstd.to(x.dtype)


def native_batch_norm(
    input, weight, bias, running_mean, running_var, training, momentum, eps
) -> tuple[Tensor, Tensor, Tensor]:
    """(batch_norm, save_mean, save_invstd): the batch's per-channel statistics when
    training (empty in eval), in running_mean's dtype when it is given."""
    x = _tensor(input, "native_batch_norm")
    out = F.batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)
    dtype = x.dtype if running_mean is None else running_mean.dtype
    if not training:
        empty = factories.empty(0, dtype=dtype, device=x.device)
        return out, empty, empty.clone()
    mean, invstd = _statistics(x, (0, *range(2, x.ndim)), eps, keepdim=False)
    return out, mean.to(dtype), invstd.to(dtype)


def native_group_norm(input, weight, bias, N, C, HxW, group, eps) -> tuple[Tensor, Tensor, Tensor]:
    """(group_norm, mean, rstd): statistics per (sample, group), shaped (N, group)."""
    x = _tensor(input, "native_group_norm")
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


def kl_div(input, target, reduction: int = 1, *, log_target: bool = False) -> Tensor:
    """nn.functional.kl_div with reduction as an int."""
    return F.kl_div(input, target, _reduction(reduction, "kl_div"), log_target)


def binary_cross_entropy_with_logits(
    input, target, weight=None, pos_weight=None, reduction: int = 1
) -> Tensor:
    """nn.functional.binary_cross_entropy_with_logits in torch's order, reduction an int."""
    mode = _reduction(reduction, "binary_cross_entropy_with_logits")
    return F.binary_cross_entropy_with_logits(input, target, weight, mode, pos_weight)


def hinge_embedding_loss(input, target, margin: float = 1.0, reduction: int = 1) -> Tensor:
    """nn.functional.hinge_embedding_loss with reduction as an int."""
    mode = _reduction(reduction, "hinge_embedding_loss")
    return F.hinge_embedding_loss(input, target, margin, mode)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction: int = 1) -> Tensor:
    """nn.functional.cosine_embedding_loss with reduction as an int."""
    mode = _reduction(reduction, "cosine_embedding_loss")
    return F.cosine_embedding_loss(input1, input2, target, margin, mode)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction: int = 1) -> Tensor:
    """nn.functional.margin_ranking_loss with reduction as an int."""
    mode = _reduction(reduction, "margin_ranking_loss")
    return F.margin_ranking_loss(input1, input2, target, margin, mode)


def triplet_margin_loss(
    anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction: int = 1
) -> Tensor:
    """nn.functional.triplet_margin_loss with reduction as an int."""
    mode = _reduction(reduction, "triplet_margin_loss")
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, mode)


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
    return F.pad(_tensor(input, "constant_pad_nd"), pad, "constant", value)


def adaptive_max_pool1d(input, output_size) -> tuple[Tensor, Tensor]:
    """(values, indices) of nn.functional.adaptive_max_pool1d."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def max_pool1d_with_indices(
    input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False
) -> tuple[Tensor, Tensor]:
    """(values, indices) of nn.functional.max_pool1d; an empty stride is the kernel size."""
    stride = None if stride in ((), []) else stride
    return F.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


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
    **_dropouts(),
    **{name: _method_form(name) for name in _INPLACE_METHODS},
}

FUNCTIONS: dict[str, Callable] = {
    **{name: op_door(name, fn) for name, fn in _PLAIN.items()},
    "strided": strided,
    "layout": Layout,
}
