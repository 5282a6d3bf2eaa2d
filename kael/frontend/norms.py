"""torch.nn.functional's normalization layers beyond layer_norm and rms_norm: batch_norm
(training statistics, running statistics updated in place, eval), group_norm,
instance_norm and local_response_norm, composed from kael's reductions and elementwise
ops (float16/bfloat16 computed in float32, as PyTorch's kernels do, the affine included:
the result takes the input's dtype, rounded once, whatever the parameters' dtype)."""

from __future__ import annotations

import math

from kael.frontend import eager, factories, fastpath, moments, reductions, views
from kael.frontend import elementwise as ew
from kael.frontend.formula import fma, launch, launch_many
from kael.frontend.outputs import device_of, format_result, tensor_arg
from kael.frontend.tensor import Tensor, empty_impl
from kael.frontend.tracing import op_door
from kael.runtime.dtypes import float32, promote_types
from kael.runtime.errors import UnsupportedDtype, ValueError


def _floating(x, name: str) -> Tensor:
    x = tensor_arg(x, name)
    if not x.dtype.is_floating_point:
        raise UnsupportedDtype(f"{name}: expected a floating point input, got {x.dtype}")
    return x


def _channel_view(t: Tensor | None, x: Tensor, name: str, what: str) -> Tensor | None:
    """A per-channel vector (weight, bias, running stats) shaped to broadcast over x's dim 1."""
    if t is None:
        return None
    t = tensor_arg(t, name, what)
    channels = x.shape[1]
    if t.shape != (channels,):
        raise ValueError(f"{name}: {what} should have {channels} elements, got {list(t.shape)}")
    device_of([x, t], name)
    return t.reshape((channels,) + (1,) * (x.ndim - 2))


def widened(x: Tensor) -> Tensor:
    """x in its compute dtype: float16/bfloat16 statistics are taken in float32."""
    return x.to(float32) if x.dtype.is_half else x


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias per channel (dim 1). Training uses the
    batch's statistics (biased variance) and moves the running ones toward them in place
    (the unbiased variance); eval uses the running statistics."""
    name = "batch_norm"
    x = _floating(input, name)
    if x.ndim < 2:
        raise ValueError(f"{name}: expected at least 2-D input (N, C, ...), got {x.ndim}-D")
    mean_v, var_v = (
        _channel_view(t, x, name, w)
        for t, w in ((running_mean, "running_mean"), (running_var, "running_var"))
    )
    w, b = _channel_view(weight, x, name, "weight"), _channel_view(bias, x, name, "bias")
    dims = (0, *range(2, x.ndim))
    wide = widened(x)
    if training:
        count = math.prod((x.shape[0], *x.shape[2:]))
        if count == 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got input size {list(x.shape)}"
            )
        if count == 0:  # no statistics to take or move: PyTorch returns the empty batch
            return x.clone()
        var, mean = moments.var_with_mean(wide, dims)
        mean = mean.to(var.dtype)
        for stat, batch in ((mean_v, mean), (var_v, var * (count / (count - 1)))):
            if stat is not None:  # running = (1 - momentum) running + momentum batch
                moved = stat * (1 - momentum) + batch.reshape(stat.shape) * momentum
                eager.copy_into(stat._impl, moved._impl)
                stat._impl.storage.bump_version()
    else:
        if mean_v is None or var_v is None:
            raise ValueError(f"{name}: running_mean and running_var must be given in eval mode")
        mean, var = widened(mean_v), widened(var_v)
    return _normalized(x, mean, var, eps, w, b)


def _normalized(
    x: Tensor, mean, var, eps: float, w, b, grid=None, channels=None, centered=False
) -> Tensor:
    """x * alpha + beta in one pass: PyTorch's batch_norm and group_norm kernels, rounded
    as they round (the passes this replaced differed from torch in the last bit of a third
    of float32 elements; batch_norm eval [8, 64, 32, 32], 1 thread: 136 -> 60 us, torch
    89). alpha and beta are made in var's shape, or `grid` (mean, var, weight and bias
    broadcast to it) then viewed in the shape `channels`, to broadcast over x. `centered`
    (group_norm without weight or bias, as torch has it): (x - mean) * rstd instead, so a
    constant group gives 0 exactly."""
    # x's compute dtype or the statistics' where wider (mean may come in float64, var's
    # first pass: read converted)
    compute = promote_types(var.dtype, float32 if x.dtype.is_half else x.dtype)
    shape = var.shape if grid is None else grid
    alpha, beta = (Tensor(empty_impl(shape, compute, var.device)) for _ in range(2))
    params = [widened(t) for t in (w, b) if t is not None]
    key = ("norm_terms", float(eps), w is not None, b is not None, centered)
    terms = _terms(eps, w, b, centered)
    launch_many(key, [mean, var, *params], compute, terms, [alpha, beta])
    if channels is not None:
        alpha, beta = alpha.reshape(channels), beta.reshape(channels)
    out = format_result(x._impl, x.shape, x.dtype)  # torch's: in x's suggested format
    formula = _centered if centered else _scaled
    return launch(("normalized", centered), [x, alpha, beta], compute, formula, out=out)


def _terms(eps: float, w, b, centered: bool):
    """The formula of (alpha, beta) per channel: alpha = 1 / sqrt(var + eps) times the
    weight, each rounded, and beta = fma(-mean, alpha, bias); centered: (rstd, mean)."""

    def formula(mean, var, *params):
        alpha = 1.0 / (var + eps).apply("sqrt")
        if centered:
            return alpha, mean  # rounded to the compute dtype as it is stored
        alpha = alpha * params[0] if w is not None else alpha
        return alpha, fma(-mean, alpha, params[-1] if b is not None else 0.0)

    return formula


def _scaled(x, alpha, beta):
    return fma(x, alpha, beta)


def _centered(x, rstd, mean):
    return (x - mean) * rstd


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """batch_norm of each sample on its own: statistics per (sample, channel) over the
    spatial dims; running statistics (when given) move toward their mean over the batch."""
    name = "instance_norm"
    x = _floating(input, name)
    if x.ndim < 3:
        raise ValueError(f"{name}: expected at least 3-D input (N, C, ...), got {x.ndim}-D")
    if not use_input_stats:
        return batch_norm(x, running_mean, running_var, weight, bias, False, momentum, eps)
    if math.prod(x.shape[2:]) == 1:  # PyTorch's check, on the input rather than the fold
        raise ValueError(
            f"Expected more than 1 spatial element when training, got input size {list(x.shape)}"
        )
    n, c = x.shape[:2]
    folded = x.reshape((1, n * c, *x.shape[2:]))
    stats = [
        None if s is None else factories.zeros(n * c, dtype=s.dtype, device=s.device)
        for s in (running_mean, running_var)
    ]
    for s, full in zip(stats, (running_mean, running_var)):
        if s is not None:
            s.copy_(_tile(full, n))
    w, b = (  # per (sample, channel) of the fold, as PyTorch's instance_norm repeats them
        None if t is None else _tile(_channel_view(t, x, name, what).reshape(-1), n)
        for t, what in ((weight, "weight"), (bias, "bias"))
    )
    y = batch_norm(folded, *stats, w, b, True, momentum, eps).reshape(x.shape)
    for s, full in zip(stats, (running_mean, running_var)):
        if s is not None:  # each channel's moved statistic, averaged over the samples
            full.copy_(reductions.mean(s.reshape(n, c), 0))
    return y


def _tile(t: Tensor, n: int) -> Tensor:
    """t repeated n times end to end (a 1-d tensor)."""
    return t.reshape(1, -1).expand(n, t.shape[0]).reshape(-1)


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Statistics per (sample, group of C / num_groups channels) over those channels and the
    spatial dims, then a per-channel weight and bias."""
    name = "group_norm"
    x = _floating(input, name)
    num_groups = views.as_int(num_groups, "group_norm(): num_groups")
    if x.ndim < 2:
        raise ValueError(f"{name}: expected at least 2-D input (N, C, ...), got {x.ndim}-D")
    n, c = x.shape[:2]
    if num_groups <= 0 or c % num_groups:
        raise ValueError(
            f"Expected number of channels in input to be divisible by num_groups, but got"
            f" input of shape {list(x.shape)} and num_groups={num_groups}"
        )
    grouped = widened(x).reshape(n, num_groups, math.prod(x.shape[1:]) // num_groups)
    var, mean = moments.var_with_mean(grouped, (2,))
    w, b = _channel_view(weight, x, name, "weight"), _channel_view(bias, x, name, "bias")
    # alpha and beta per (sample, group, channel of the group), viewed per channel
    grid, per_channel = (n, num_groups, c // num_groups), (n, c) + (1,) * (x.ndim - 2)
    w, b = (None if t is None else t.reshape(grid[1:]) for t in (w, b))
    centered = w is None and b is None
    return _normalized(x, mean, var, eps, w, b, grid, per_channel, centered)


def local_response_norm(
    input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Tensor:
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta, the window
    zero-padded as PyTorch pads it (size // 2 before, (size - 1) // 2 after)."""
    name = "local_response_norm"
    x = _floating(input, name)
    if x.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {x.ndim} dimensions)")
    if size <= 0:
        raise ValueError(f"{name}: size must be positive, got {size}")
    c = x.shape[1]
    sq = x * x
    before, after = size // 2, (size - 1) // 2
    zeros = factories.zeros(
        (x.shape[0], before + c + after, *x.shape[2:]), dtype=x.dtype, device=x.device
    )
    zeros[:, before : before + c] = sq
    total = zeros[:, 0:c]
    for i in range(1, size):
        total = total + zeros[:, i : i + c]
    div = (total * (alpha / size) + k) ** beta
    return ew.binary("div", x, div)


FUNCTIONS = {
    fn.__name__: op_door(fn.__name__, fn)
    for fn in (batch_norm, instance_norm, group_norm, local_response_norm)
}
# Behind the keyed fast door, replayed by addresses: eval batch_norm's terms and its pass
# (training takes more launches, and updates running statistics in place: never kept),
# group_norm's mean, var, terms and pass (eval batch_norm [8, 64, 32, 32], 1 thread: 97 ->
# 56 us; torch 86).
FUNCTIONS["batch_norm"] = fastpath.keyed(batch_norm, FUNCTIONS["batch_norm"], steps=2)
FUNCTIONS["group_norm"] = fastpath.keyed(group_norm, FUNCTIONS["group_norm"], steps=4)
