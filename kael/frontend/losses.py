"""torch.nn.functional's losses of values and likelihoods with reduction=('none', 'mean',
'sum'): the pointwise losses, binary cross entropy, kl_div, the Poisson and Gaussian
negative log likelihoods and nll_loss (margins.py has the margin losses and distances).

A pointwise loss is declared once as a formula over one element of its broadcast
operands (frontend/formula.py): one kernel for the losses, then one reduction. nll_loss
gathers each target's log-probability.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from kael.frontend import elementwise as ew
from kael.frontend import factories, index_ops, reductions
from kael.frontend.formula import Value, launch, maximum, minimum, where
from kael.frontend.outputs import device_of, tensor_arg
from kael.frontend.tensor import Tensor
from kael.frontend.tracing import op_door
from kael.runtime.dtypes import int64, result_type, uint8
from kael.runtime.errors import IndexError, TypeError, ValueError

REDUCTIONS = ("none", "mean", "sum")


def reduced(loss: Tensor, reduction: str, name: str) -> Tensor:
    if reduction == "none":
        return loss
    if reduction == "sum":
        return reductions.sum(loss)
    if reduction == "mean":
        return reductions.mean(loss)
    raise ValueError(f"{name}: {reduction!r} is not a valid value for reduction")


def check_reduction(reduction, name: str, allowed: tuple = REDUCTIONS) -> None:
    if reduction not in allowed:
        raise ValueError(
            f"{name}: {reduction!r} is not a valid value for reduction, expected one of {allowed}"
        )


def operands(input, target, name: str, reduction, allowed: tuple = REDUCTIONS):
    """(input, target) as tensors, with the reduction checked first."""
    check_reduction(reduction, name, allowed)
    return tensor_arg(input, name), tensor_arg(target, name, "target")


def floating(tensors: list[Tensor], name: str):
    """The compute dtype of a loss over `tensors`: their promoted floating dtype."""
    dtype = result_type(*tensors)
    if not dtype.is_floating_point:
        raise TypeError(f"{name}: expected floating point inputs, got {dtype}")
    device_of(tensors, name)
    return dtype


@dataclass(frozen=True)
class Pointwise:
    """A loss of (input, target, *extra tensors) elementwise: `formula` of their values and
    the scalar parameters, which have PyTorch's names and defaults."""

    formula: Callable[..., Value]
    params: tuple[tuple[str, float], ...] = ()
    keeps_input_dtype: bool = False  # torch writes the loss into a tensor like the input


def _smooth_l1(x: Value, y: Value, beta: Value) -> Value:
    d = (x - y).apply("abs")
    return where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)


def _huber(x: Value, y: Value, delta: Value) -> Value:
    d = (x - y).apply("abs")
    return where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))


def log_sigmoid(x: Value) -> Value:
    return minimum(x, 0) - (-x.apply("abs")).apply("exp").apply("log1p")


POINTWISE: dict[str, Pointwise] = {
    "mse_loss": Pointwise(lambda x, y: (x - y) * (x - y)),
    "l1_loss": Pointwise(lambda x, y: (x - y).apply("abs")),
    "smooth_l1_loss": Pointwise(_smooth_l1, (("beta", 1.0),)),
    "huber_loss": Pointwise(_huber, (("delta", 1.0),), keeps_input_dtype=True),
    "soft_margin_loss": Pointwise(
        lambda x, y: (-y * x).apply("exp").apply("log1p"), keeps_input_dtype=True
    ),
}


def _pointwise(name: str) -> Callable:
    spec = POINTWISE[name]
    defaults = dict(spec.params)

    def fn(input: Tensor, target: Tensor, *args, reduction: str = "mean", **kwargs) -> Tensor:
        x, y = operands(input, target, name, reduction)
        values = dict(zip(defaults, args)) | {
            k: kwargs.pop(k) for k in list(kwargs) if k in defaults
        }
        if kwargs:
            raise TypeError(f"{name}() got an unexpected keyword argument {next(iter(kwargs))!r}")
        params = {p: float(values.get(p, d)) for p, d in defaults.items()}
        dtype = floating([x, y], name)
        kind = name
        if name == "smooth_l1_loss" and params["beta"] == 0:  # PyTorch: beta 0 is l1
            kind, params = "l1_loss", {}
        if name == "huber_loss" and not params["delta"] > 0:  # torch's: zero too (and NaN)
            raise ValueError(
                f"huber_loss does not support non-positive values for delta, got {params['delta']}"
            )
        if any(not v >= 0 for v in params.values()):
            raise ValueError(f"{name} does not support negative values for {', '.join(params)}")
        loss = launch((kind,), [x, y], dtype, POINTWISE[kind].formula, params)
        if spec.keeps_input_dtype and loss.dtype is not x.dtype:
            loss = loss.to(x.dtype)
        return reduced(loss, reduction, name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.nn.functional.{name}: elementwise, then reduced."
    return fn


# ---- binary cross entropy ------------------------------------------------------------------------


def binary_cross_entropy(
    input: Tensor, target: Tensor, weight: Tensor | None = None, reduction: str = "mean"
) -> Tensor:
    """-(y log x + (1 - y) log(1 - x)), each log clamped at -100 as PyTorch does; input in
    [0, 1] (checked)."""
    name = "binary_cross_entropy"
    x, y = operands(input, target, name, reduction)
    if x.shape != y.shape:
        raise ValueError(
            f"Using a target size ({list(y.shape)}) that is different to the input size"
            f" ({list(x.shape)}) is deprecated. Please ensure they have the same size."
        )
    dtype = floating([x, y], name)
    for what, t in (("input", x), ("target", y)):  # NaN is outside too, as torch reads it
        if t.numel() and not bool(ew.binary("logical_and", t >= 0, t <= 1).all()):
            raise ValueError(f"{name}: all elements of {what} should be between 0 and 1")
    tensors = [x, y] + ([tensor_arg(weight, name, "weight")] if weight is not None else [])

    def formula(x: Value, y: Value, *w: Value) -> Value:
        log_x = maximum(x.apply("log"), -100.0)
        log_1mx = maximum((-x).apply("log1p"), -100.0)
        loss = (y - 1) * log_1mx - y * log_x
        return loss * w[0] if w else loss

    loss = launch((name, weight is not None), tensors, dtype, formula)
    return reduced(loss, reduction, name)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """(1 - y) x - log_sigmoid(x), with pos_weight: (1 - y) x + (1 + (pw - 1) y) *
    (log1p(exp(-|x|)) + max(-x, 0)); stable for every x. In the target's dtype, as torch
    builds it on 1 - target in place (computed in the promoted dtype, rounded once)."""
    name = "binary_cross_entropy_with_logits"
    x, y = operands(input, target, name, reduction)
    if x.shape != y.shape:
        raise ValueError(
            f"Target size ({list(y.shape)}) must be the same as input size ({list(x.shape)})"
        )
    tensors = [x, y]
    if pos_weight is not None:
        tensors.append(tensor_arg(pos_weight, name, "pos_weight"))
    if weight is not None:
        tensors.append(tensor_arg(weight, name, "weight"))
    dtype = floating(tensors, name)
    has_pos, has_weight = pos_weight is not None, weight is not None

    def formula(x: Value, y: Value, *extra: Value) -> Value:
        if has_pos:
            log_weight = (extra[0] - 1) * y + 1
            tail = (-x.apply("abs")).apply("exp").apply("log1p") + maximum(-x, 0)
            loss = (1 - y) * x + log_weight * tail
        else:
            loss = (1 - y) * x - log_sigmoid(x)
        return loss * extra[-1] if has_weight else loss

    loss = launch((name, has_pos, has_weight), tensors, dtype, formula)
    if loss.dtype is not y.dtype:
        loss = loss.to(y.dtype)
    return reduced(loss, reduction, name)


# ---- kl_div and the margin losses -----------------------------------------------------------------


def kl_div(
    input: Tensor, target: Tensor, reduction: str = "mean", log_target: bool = False
) -> Tensor:
    """target (log target - input), with 0 where target is 0 (xlogy); input holds
    log-probabilities. 'batchmean' divides the sum by the batch size."""
    name = "kl_div"
    x, y = operands(input, target, name, reduction, (*REDUCTIONS, "batchmean"))
    dtype = floating([x, y], name)

    def formula(x: Value, t: Value) -> Value:
        if log_target:
            return t.apply("exp") * (t - x)
        return where(t.eq(0), 0.0, t * t.apply("log")) - t * x

    loss = launch((name, bool(log_target)), [x, y], dtype, formula)
    if reduction == "batchmean":
        total = reductions.sum(loss)
        return total / loss.shape[0] if loss.ndim else total
    return reduced(loss, reduction, name)


# ---- Poisson and Gaussian likelihoods -----------------------------------------------------------


def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    size_average=None,
    eps: float = 1e-8,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """exp(x) - y x (log_input), else x - y log(x + eps); `full` adds Stirling's
    approximation of log(y!) where y > 1."""
    name = "poisson_nll_loss"
    x, y = operands(input, target, name, _legacy(size_average, reduce, reduction))
    dtype = floating([x, y], name)

    def formula(x: Value, y: Value, eps: Value) -> Value:
        loss = x.apply("exp") - y * x if log_input else x - y * (x + eps).apply("log")
        if full:
            stirling = y * y.apply("log") - y + 0.5 * (2 * math.pi * y).apply("log")
            loss = loss + where(y > 1, stirling, 0.0)
        return loss

    loss = launch((name, bool(log_input), bool(full)), [x, y], dtype, formula, {"eps": eps})
    return reduced(loss, _legacy(size_average, reduce, reduction), name)


def gaussian_nll_loss(
    input: Tensor,
    target: Tensor,
    var: Tensor | float,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """0.5 (log(max(var, eps)) + (x - y)^2 / max(var, eps)) (+ 0.5 log(2 pi) when full);
    var matches input, lacks its last dim, or has size 1 there (one variance a sample)."""
    name = "gaussian_nll_loss"
    x, y = operands(input, target, name, reduction)
    if isinstance(var, complex) or (isinstance(var, Tensor) and var.dtype.is_complex):
        what = var.dtype if isinstance(var, Tensor) else repr(var)
        raise TypeError(f"{name}: var must be real (a variance), got {what}")
    v = (
        var
        if isinstance(var, Tensor)
        else factories.full(x.shape, float(var), dtype=x.dtype, device=x.device)
    )
    v = tensor_arg(v, name, "var")
    if v.shape != x.shape:
        if x.shape[:-1] == v.shape or (x.shape[:-1] == v.shape[:-1] and v.shape[-1:] == (1,)):
            v = v.reshape((*x.shape[:-1], 1))
        elif not (x.ndim and v.numel() == 1):
            raise ValueError(
                f"{name}: var is of incorrect size {list(v.shape)} for input {list(x.shape)}"
            )
    if v.numel() and bool((v < 0).any()):
        raise ValueError(f"{name}: var has negative entry/entries")
    dtype = floating([x, y, v], name)

    def formula(v: Value, x: Value, y: Value, eps: Value) -> Value:
        v = maximum(v, eps)
        d = x - y
        loss = 0.5 * (v.apply("log") + d * d / v)
        return loss + 0.5 * math.log(2 * math.pi) if full else loss

    # var first, as torch's last op reads log(var) first: it lays the result out
    loss = launch((name, bool(full)), [v, x, y], dtype, formula, {"eps": eps})
    return reduced(loss, reduction, name)


def _legacy(size_average, reduce, reduction: str) -> str:
    """PyTorch's deprecated size_average and reduce, as the reduction they meant."""
    if size_average is None and reduce is None:
        return reduction
    if reduce is False:
        return "none"
    return "mean" if size_average is not False else "sum"


# ---- nll_loss ------------------------------------------------------------------------------------


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> Tensor:
    """-input[n, target[n]] * weight[target[n]] over input [N, C, d...] (or [C]); targets
    equal to ignore_index count 0, and 'mean' divides by the targets' total weight."""
    name = "nll_loss"
    x, t = operands(input, target, name, reduction)
    floating([x], name)
    if t.dtype is uint8 and x.ndim <= 2:  # torch's nll_loss takes Byte; its nll_loss2d not
        t = t.to(int64)
    if t.dtype is not int64:
        raise TypeError(f"{name}: expected target dtype int64 (class indices), got {t.dtype}")
    if x.ndim == 0:
        raise ValueError(f"{name}: input must have at least 1 dimension (classes)")
    batched = x.ndim > 1
    expected = (x.shape[0], *x.shape[2:]) if batched else ()
    if t.shape != expected:
        raise ValueError(
            f"{name}: expected target of shape {list(expected)} for input of shape"
            f" {list(x.shape)}, got {list(t.shape)}"
        )
    classes = x.shape[1] if batched else x.shape[0]
    keep = t != ignore_index
    safe = ew.where(keep, t, 0)
    if safe.numel() and (bool((safe < 0).any()) or bool((safe >= classes).any())):
        bad = int(ew.where(keep, t, 0)[(safe < 0) | (safe >= classes)][0])
        raise IndexError(f"Target {bad} is out of bounds.")
    picked = index_ops.gather(x, 1 if batched else 0, safe.unsqueeze(1 if batched else 0))
    picked = picked.squeeze(1 if batched else 0)
    if weight is not None:
        w = tensor_arg(weight, name, "weight")
        if w.shape != (classes,):
            raise ValueError(f"{name}: weight should have {classes} elements, got {list(w.shape)}")
        wt = ew.where(keep, w.to(x.dtype)[safe], 0.0)
    else:
        wt = keep.to(x.dtype)
    loss = -picked * wt
    if reduction == "none":
        return loss
    total = reductions.sum(loss)
    return total if reduction == "sum" else total / reductions.sum(wt)


def cross_entropy_extended(
    x: Tensor,
    target: Tensor,
    weight: Tensor | None,
    ignore_index: int,
    reduction: str,
    label_smoothing: float,
) -> Tensor:
    """cross_entropy with class-probability targets (target shaped like input) or with
    label smoothing, composed as PyTorch composes it: (1 - eps) * nll + eps / C * the
    smoothing term (-sum of log-probabilities, weighted; ignored targets count 0)."""
    from kael.frontend import nn

    name = "cross_entropy"
    class_dim = 0 if x.ndim == 1 else 1
    classes = x.shape[class_dim]
    logp = nn.log_softmax(x, class_dim)
    shape = [1] * x.ndim
    shape[class_dim] = classes
    wv = None if weight is None else weight.to(x.dtype).reshape(shape)
    eps = float(label_smoothing)
    if target.dtype.is_floating_point:  # class probabilities
        if target.shape != x.shape:
            raise ValueError(
                f"{name}: class-probability targets must have the input's shape"
                f" {list(x.shape)}, got {list(target.shape)}"
            )
        if ignore_index >= 0:  # PyTorch lets its negative default (and any negative) pass
            raise ValueError("ignore_index is not supported for floating point target")
        probs = target  # logp * probs promotes, as torch's
        if eps > 0:
            probs = probs * (1 - eps) + eps / classes
        wp = None if weight is None else weight.reshape(shape)
        terms = logp * probs if wp is None else logp * probs * wp
        per = -reductions.sum(terms, class_dim)
        if reduction == "none":
            return per
        total = reductions.sum(per)
        return total if reduction == "sum" else total / (x.numel() // max(classes, 1))
    nll = nll_loss(logp, target, weight, ignore_index, reduction)
    keep = target != ignore_index
    smooth = -reductions.sum(logp if wv is None else logp * wv, class_dim)
    smooth = ew.where(keep, smooth, 0.0)
    if reduction == "none":
        term = smooth
    elif reduction == "sum":
        term = reductions.sum(smooth)
    elif weight is None:
        term = reductions.sum(smooth) / reductions.sum(keep.to(x.dtype))
    else:
        picked = ew.where(keep, weight.to(x.dtype)[ew.where(keep, target, 0)], 0.0)
        term = reductions.sum(smooth) / reductions.sum(picked)
    return nll * (1 - eps) + term * (eps / classes)


FUNCTIONS = {name: op_door(name, _pointwise(name)) for name in POINTWISE}
FUNCTIONS.update(
    {
        fn.__name__: op_door(fn.__name__, fn)
        for fn in (
            binary_cross_entropy,
            binary_cross_entropy_with_logits,
            kl_div,
            nll_loss,
            poisson_nll_loss,
            gaussian_nll_loss,
        )
    }
)
