"""torch.nn.functional's losses and distances with reduction=('none', 'mean', 'sum').

A pointwise loss is declared once as a formula over one element of its broadcast
operands (frontend/formula.py): one kernel for the losses, then one reduction. The
distances (cosine_similarity, pairwise_distance) and the losses built on them compose
kael's ops; nll_loss gathers each target's log-probability.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from kael.frontend import elementwise as ew
from kael.frontend import factories, index_ops, reductions, views
from kael.frontend.formula import Value, launch, maximum, minimum, where
from kael.frontend.outputs import device_of, tensor_arg
from kael.frontend.tensor import Tensor
from kael.frontend.tracing import op_door
from kael.runtime.dtypes import int64, result_type
from kael.runtime.errors import IndexError, TypeError, ValueError

REDUCTIONS = ("none", "mean", "sum")


def _reduced(loss: Tensor, reduction: str, name: str) -> Tensor:
    if reduction == "none":
        return loss
    if reduction == "sum":
        return reductions.sum(loss)
    if reduction == "mean":
        return reductions.mean(loss)
    raise ValueError(f"{name}: {reduction!r} is not a valid value for reduction")


def _check_reduction(reduction, name: str, allowed: tuple = REDUCTIONS) -> None:
    if reduction not in allowed:
        raise ValueError(
            f"{name}: {reduction!r} is not a valid value for reduction, expected one of {allowed}"
        )


def _operands(input, target, name: str, reduction, allowed: tuple = REDUCTIONS):
    """(input, target) as tensors, with the reduction checked first."""
    _check_reduction(reduction, name, allowed)
    return tensor_arg(input, name), tensor_arg(target, name, "target")


def _floating(tensors: list[Tensor], name: str):
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


def _smooth_l1(x: Value, y: Value, beta: Value) -> Value:
    d = (x - y).apply("abs")
    return where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)


def _huber(x: Value, y: Value, delta: Value) -> Value:
    d = (x - y).apply("abs")
    return where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))


def _log_sigmoid(x: Value) -> Value:
    return minimum(x, 0) - (-x.apply("abs")).apply("exp").apply("log1p")


POINTWISE: dict[str, Pointwise] = {
    "mse_loss": Pointwise(lambda x, y: (x - y) * (x - y)),
    "l1_loss": Pointwise(lambda x, y: (x - y).apply("abs")),
    "smooth_l1_loss": Pointwise(_smooth_l1, (("beta", 1.0),)),
    "huber_loss": Pointwise(_huber, (("delta", 1.0),)),
    "soft_margin_loss": Pointwise(lambda x, y: (-y * x).apply("exp").apply("log1p")),
}


def _pointwise(name: str) -> Callable:
    spec = POINTWISE[name]
    defaults = dict(spec.params)

    def fn(input: Tensor, target: Tensor, *args, reduction: str = "mean", **kwargs) -> Tensor:
        x, y = _operands(input, target, name, reduction)
        values = dict(zip(defaults, args)) | {
            k: kwargs.pop(k) for k in list(kwargs) if k in defaults
        }
        if kwargs:
            raise TypeError(f"{name}() got an unexpected keyword argument {next(iter(kwargs))!r}")
        params = {p: float(values.get(p, d)) for p, d in defaults.items()}
        dtype = _floating([x, y], name)
        kind = name
        if name == "smooth_l1_loss" and params["beta"] == 0:  # PyTorch: beta 0 is l1
            kind, params = "l1_loss", {}
        if any(v < 0 for v in params.values()):
            raise ValueError(f"{name} does not support negative values for {', '.join(params)}")
        loss = launch((kind,), [x, y], dtype, POINTWISE[kind].formula, params)
        return _reduced(loss, reduction, name)

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
    x, y = _operands(input, target, name, reduction)
    if x.shape != y.shape:
        raise ValueError(
            f"Using a target size ({list(y.shape)}) that is different to the input size"
            f" ({list(x.shape)}) is deprecated. Please ensure they have the same size."
        )
    dtype = _floating([x, y], name)
    if x.numel() and bool(ew.binary("logical_or", x < 0, x > 1).any()):
        raise ValueError(f"{name}: all elements of input should be between 0 and 1")
    tensors = [x, y] + ([tensor_arg(weight, name, "weight")] if weight is not None else [])

    def formula(x: Value, y: Value, *w: Value) -> Value:
        log_x = maximum(x.apply("log"), -100.0)
        log_1mx = maximum((-x).apply("log1p"), -100.0)
        loss = (y - 1) * log_1mx - y * log_x
        return loss * w[0] if w else loss

    loss = launch((name, weight is not None), tensors, dtype, formula)
    return _reduced(loss, reduction, name)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """(1 - y) x - log_sigmoid(x), with pos_weight: (1 - y) x + (1 + (pw - 1) y) *
    (log1p(exp(-|x|)) + max(-x, 0)); stable for every x."""
    name = "binary_cross_entropy_with_logits"
    x, y = _operands(input, target, name, reduction)
    if x.shape != y.shape:
        raise ValueError(
            f"Target size ({list(y.shape)}) must be the same as input size ({list(x.shape)})"
        )
    tensors = [x, y]
    if pos_weight is not None:
        tensors.append(tensor_arg(pos_weight, name, "pos_weight"))
    if weight is not None:
        tensors.append(tensor_arg(weight, name, "weight"))
    dtype = _floating(tensors, name)
    has_pos, has_weight = pos_weight is not None, weight is not None

    def formula(x: Value, y: Value, *extra: Value) -> Value:
        if has_pos:
            log_weight = (extra[0] - 1) * y + 1
            tail = (-x.apply("abs")).apply("exp").apply("log1p") + maximum(-x, 0)
            loss = (1 - y) * x + log_weight * tail
        else:
            loss = (1 - y) * x - _log_sigmoid(x)
        return loss * extra[-1] if has_weight else loss

    loss = launch((name, has_pos, has_weight), tensors, dtype, formula)
    return _reduced(loss, reduction, name)


# ---- kl_div and the margin losses -----------------------------------------------------------------


def kl_div(
    input: Tensor, target: Tensor, reduction: str = "mean", log_target: bool = False
) -> Tensor:
    """target (log target - input), with 0 where target is 0 (xlogy); input holds
    log-probabilities. 'batchmean' divides the sum by the batch size."""
    name = "kl_div"
    x, y = _operands(input, target, name, reduction, (*REDUCTIONS, "batchmean"))
    dtype = _floating([x, y], name)

    def formula(x: Value, t: Value) -> Value:
        if log_target:
            return t.apply("exp") * (t - x)
        return where(t.eq(0), 0.0, t * t.apply("log")) - t * x

    loss = launch((name, bool(log_target)), [x, y], dtype, formula)
    if reduction == "batchmean":
        total = reductions.sum(loss)
        return total / loss.shape[0] if loss.ndim else total
    return _reduced(loss, reduction, name)


def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: str = "mean"
) -> Tensor:
    """max(0, -y (x1 - x2) + margin)."""
    name = "margin_ranking_loss"
    tensors = [tensor_arg(t, name) for t in (input1, input2, target)]
    _check_reduction(reduction, name)
    if len({t.ndim for t in tensors}) > 1:
        raise ValueError(
            f"{name}: All input tensors should have same dimension but got sizes: "
            + ", ".join(str(list(t.shape)) for t in tensors)
        )
    dtype = _floating(tensors, name)
    loss = launch(
        (name,),
        tensors,
        dtype,
        lambda a, b, y, m: maximum(-y * (a - b) + m, 0),
        {"margin": float(margin)},
    )
    return _reduced(loss, reduction, name)


def hinge_embedding_loss(
    input: Tensor, target: Tensor, margin: float = 1.0, reduction: str = "mean"
) -> Tensor:
    """x where y is 1, max(0, margin - x) where y is -1 (PyTorch's sum of the two parts)."""
    name = "hinge_embedding_loss"
    x, y = _operands(input, target, name, reduction)
    dtype = _floating([x, y], name)

    def formula(x: Value, y: Value, m: Value) -> Value:
        return where(y.ne(1), maximum(m - x, 0), 0.0) + where(y.ne(-1), x, 0.0)

    loss = launch((name,), [x, y], dtype, formula, {"margin": float(margin)})
    return _reduced(loss, reduction, name)


def multilabel_soft_margin_loss(
    input: Tensor, target: Tensor, weight: Tensor | None = None, reduction: str = "mean"
) -> Tensor:
    """-mean over classes of y log sigmoid(x) + (1 - y) log sigmoid(-x), class-weighted."""
    name = "multilabel_soft_margin_loss"
    x, y = _operands(input, target, name, reduction)
    tensors = [x, y] + ([tensor_arg(weight, name, "weight")] if weight is not None else [])
    dtype = _floating(tensors, name)

    def formula(x: Value, y: Value, *w: Value) -> Value:
        loss = -(y * _log_sigmoid(x) + (1 - y) * _log_sigmoid(-x))
        return loss * w[0] if w else loss

    per_class = launch((name, weight is not None), tensors, dtype, formula)
    per_sample = reductions.mean(per_class, -1) if per_class.ndim else per_class
    return _reduced(per_sample, reduction, name)


def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    reduction: str = "mean",
) -> Tensor:
    """sum over classes i != y of max(0, margin - x[y] + x[i])^p / C, times weight[y]."""
    name = "multi_margin_loss"
    x, t = _operands(input, target, name, reduction)
    _floating([x], name)
    if p not in (1, 2):
        raise ValueError(f"{name}: only p == 1 and p == 2 supported, got {p}")
    if t.dtype is not int64:
        raise TypeError(f"{name}: expected int64 class indices, got {t.dtype}")
    batched = x.ndim == 2
    if x.ndim not in (1, 2) or t.shape != ((x.shape[0],) if batched else ()):
        raise ValueError(
            f"{name}: inconsistent target size {list(t.shape)} for input of size {list(x.shape)}"
        )
    rows = x if batched else x.unsqueeze(0)
    labels = t.reshape(-1, 1)
    classes = rows.shape[1]
    if labels.numel() and (bool((labels < 0).any()) or bool((labels >= classes).any())):
        raise IndexError(f"{name}: target out of range for {classes} classes")
    chosen = index_ops.gather(rows, 1, labels)
    gap = (rows - chosen + margin).clamp(min=0)
    gap = gap * gap if p == 2 else gap
    positions = ew.binary("ne", factories.arange(classes, device=x.device).reshape(1, -1), labels)
    gap = ew.where(positions, gap, 0.0)
    if weight is not None:
        w = tensor_arg(weight, name, "weight").to(x.dtype)
        gap = gap * w[labels]
    per = reductions.sum(gap, 1) / classes
    per = per if batched else per.reshape(())
    return _reduced(per, reduction, name)


# ---- distances and the losses built on them -------------------------------------------------------


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 x2) / (max(|x1|, eps) max(|x2|, eps)) along `dim`, broadcast, as PyTorch
    normalizes each vector by its clamped norm first."""
    name = "cosine_similarity"
    a, b = tensor_arg(x1, name), tensor_arg(x2, name)
    dtype = _floating([a, b], name)
    a, b = a.to(dtype), b.to(dtype)
    shape = ew.broadcast_shapes(a.shape, b.shape)
    a, b = a.expand(shape), b.expand(shape)  # each norm over the broadcast vectors
    d = views.wrap_dim(dim, len(shape))
    norm_a = reductions.sum(a * a, d, keepdim=True).sqrt().clamp(min=eps)
    norm_b = reductions.sum(b * b, d, keepdim=True).sqrt().clamp(min=eps)
    return reductions.sum((a / norm_a) * (b / norm_b), d)


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """The p-norm of x1 - x2 + eps along the last dim, for any p as torch.norm takes it: p = 0
    counts the nonzero differences, p = -inf is the smallest magnitude."""
    name = "pairwise_distance"
    a, b = tensor_arg(x1, name), tensor_arg(x2, name)
    dtype = _floating([a, b], name)
    diff = (a.to(dtype) - b.to(dtype)) + eps
    dim = -1 if diff.ndim else None
    if p == math.inf:
        return reductions.amax(diff.abs(), dim, keepdim=keepdim)
    if p == -math.inf:
        return reductions.amin(diff.abs(), dim, keepdim=keepdim)
    if p == 2:
        return reductions.sum(diff * diff, dim, keepdim=keepdim).sqrt()
    if p == 1:
        return reductions.sum(diff.abs(), dim, keepdim=keepdim)
    if p == 0:
        return reductions.sum((diff != 0).to(dtype), dim, keepdim=keepdim)
    return reductions.sum(diff.abs() ** p, dim, keepdim=keepdim) ** (1.0 / p)


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2.0,
    eps: float = 1e-6,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """max(d(a, p) - d(a, n) + margin, 0), d the pairwise distance; `swap` takes the
    smaller of d(a, n) and d(p, n)."""
    name = "triplet_margin_loss"
    _check_reduction(reduction, name)
    near = pairwise_distance(anchor, positive, p, eps)
    far = pairwise_distance(anchor, negative, p, eps)
    if swap:
        far = ew.binary("minimum", far, pairwise_distance(positive, negative, p, eps))
    return _reduced((near - far + margin).clamp(min=0), reduction, name)


COSINE_EPSILON = 1e-12  # PyTorch's EPSILON in cosine_embedding_loss


def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: str = "mean"
) -> Tensor:
    """1 - cos(x1, x2) where y is 1, max(0, cos - margin) where y is -1; cos as PyTorch
    computes it: sum(x1 x2) / sqrt((sum(x1^2) + 1e-12) (sum(x2^2) + 1e-12))."""
    name = "cosine_embedding_loss"
    _check_reduction(reduction, name)
    a, b = tensor_arg(input1, name), tensor_arg(input2, name)
    y = tensor_arg(target, name, "target")
    dtype = _floating([a, b], name)
    a, b = a.to(dtype), b.to(dtype)
    d = -1 if a.ndim else None
    squares = [reductions.sum(v * v, d) + COSINE_EPSILON for v in (a, b)]
    cos = reductions.sum(a * b, d) / (squares[0] * squares[1]).sqrt()
    loss = ew.where(y == 1, 1 - cos, ew.where(y == -1, (cos - margin).clamp(min=0), 0.0))
    return _reduced(loss, reduction, name)


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
    x, t = _operands(input, target, name, reduction)
    _floating([x], name)
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
        probs = target.to(x.dtype)
        if eps > 0:
            probs = probs * (1 - eps) + eps / classes
        terms = logp * probs if wv is None else logp * probs * wv
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
            margin_ranking_loss,
            hinge_embedding_loss,
            cosine_similarity,
            pairwise_distance,
            triplet_margin_loss,
            cosine_embedding_loss,
            nll_loss,
            multilabel_soft_margin_loss,
            multi_margin_loss,
        )
    }
)
