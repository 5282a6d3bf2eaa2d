"""torch.nn.functional's margin losses and distances with reduction=('none', 'mean', 'sum'):
margin_ranking, hinge_embedding, the multilabel and multi-class margins, triplet margins
(with p-norms or any distance function), cosine_embedding, and the distances they build
on (cosine_similarity, pairwise_distance), each composed from kael's ops and formulas.
"""

from __future__ import annotations

from kael.frontend import elementwise as ew
from kael.frontend import factories, index_ops, reductions, sequence, views
from kael.frontend.formula import Value, launch, maximum, where
from kael.frontend.losses import check_reduction, floating, log_sigmoid, operands, reduced
from kael.frontend.matrix_norms import vector_norm
from kael.frontend.outputs import tensor_arg
from kael.frontend.tensor import Tensor
from kael.frontend.tracing import op_door
from kael.runtime.dtypes import int64
from kael.runtime.errors import Error, IndexError, TypeError, ValueError


def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: str = "mean"
) -> Tensor:
    """max(0, -y (x1 - x2) + margin)."""
    name = "margin_ranking_loss"
    tensors = [tensor_arg(t, name) for t in (input1, input2, target)]
    check_reduction(reduction, name)
    if len({t.ndim for t in tensors}) > 1:
        raise ValueError(
            f"{name}: All input tensors should have same dimension but got sizes: "
            + ", ".join(str(list(t.shape)) for t in tensors)
        )
    dtype = floating(tensors, name)
    loss = launch(
        (name,),
        tensors,
        dtype,
        lambda a, b, y, m: maximum(-y * (a - b) + m, 0),
        {"margin": float(margin)},
    )
    return reduced(loss, reduction, name)


def hinge_embedding_loss(
    input: Tensor, target: Tensor, margin: float = 1.0, reduction: str = "mean"
) -> Tensor:
    """x where y is 1, max(0, margin - x) where y is -1 (PyTorch's sum of the two parts)."""
    name = "hinge_embedding_loss"
    x, y = operands(input, target, name, reduction)
    dtype = floating([x, y], name)

    def formula(x: Value, y: Value, m: Value) -> Value:
        return where(y.ne(1), maximum(m - x, 0), 0.0) + where(y.ne(-1), x, 0.0)

    loss = launch((name,), [x, y], dtype, formula, {"margin": float(margin)})
    return reduced(loss, reduction, name)


def multilabel_soft_margin_loss(
    input: Tensor, target: Tensor, weight: Tensor | None = None, reduction: str = "mean"
) -> Tensor:
    """-mean over classes of y log sigmoid(x) + (1 - y) log sigmoid(-x), class-weighted."""
    name = "multilabel_soft_margin_loss"
    x, y = operands(input, target, name, reduction)
    tensors = [x, y] + ([tensor_arg(weight, name, "weight")] if weight is not None else [])
    dtype = floating(tensors, name)

    def formula(x: Value, y: Value, *w: Value) -> Value:
        loss = -(y * log_sigmoid(x) + (1 - y) * log_sigmoid(-x))
        return loss * w[0] if w else loss

    per_class = launch((name, weight is not None), tensors, dtype, formula)
    per_sample = reductions.mean(per_class, -1) if per_class.ndim else per_class
    return reduced(per_sample, reduction, name)


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
    x, t = operands(input, target, name, reduction)
    floating([x], name)
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
        if w.ndim != 1:
            raise ValueError(f"{name}: weight must be one-dimensional, got {list(w.shape)}")
        if w.numel() != classes:
            raise ValueError(
                f"{name}: inconsistent weight size, expected {classes} but got {list(w.shape)}"
            )
        gap = gap * w[labels]
    per = reductions.sum(gap, 1) / classes
    per = per if batched else per.reshape(())
    return reduced(per, reduction, name)


# ---- distances and the losses built on them -------------------------------------------------------


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 x2) / (max(|x1|, eps) max(|x2|, eps)) along `dim`, broadcast, as PyTorch
    normalizes each vector by its clamped norm first."""
    name = "cosine_similarity"
    a, b = tensor_arg(x1, name), tensor_arg(x2, name)
    dtype = floating([a, b], name)
    a, b = a.to(dtype), b.to(dtype)
    shape = ew.broadcast_shapes(a.shape, b.shape)
    a, b = a.expand(shape), b.expand(shape)  # each norm over the broadcast vectors
    if eps < 0:
        raise ValueError(f"{name}: eps must be non-negative, got: {eps}")
    d = views.wrap_dim(dim, len(shape))
    # the norms as linalg.vector_norm's (float32 sums for the half types: no overflow)
    norm_a, norm_b = (vector_norm(v, 2, d, keepdim=True).clamp(min=eps) for v in (a, b))
    return reductions.sum((a / norm_a) * (b / norm_b), d)


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """The p-norm of x1 - x2 + eps along the last dim, for any p as torch.norm takes it: p = 0
    counts the nonzero differences, p = -inf is the smallest magnitude."""
    name = "pairwise_distance"
    a, b = tensor_arg(x1, name), tensor_arg(x2, name)
    dtype = floating([a, b], name)
    diff = (a.to(dtype) - b.to(dtype)) + eps
    return p_norm(diff, p, -1 if diff.ndim else None, keepdim)


def p_norm(x: Tensor, p: float, dim, keepdim: bool = False) -> Tensor:
    """The p-norm of x along dim for any p torch.norm takes (0 counts the nonzeros, inf and
    -inf are the largest and smallest magnitudes): linalg.vector_norm's, whose half-type
    sums run in float32 as torch's."""
    return vector_norm(x, p, dim, keepdim)


def distance(diff: Tensor, p: float) -> Tensor:
    """The p-norm over the last dim of differences as torch's cdist and pdist compute it:
    p = 0 sums min(ceil(|d|), 1), so a NaN stays NaN (p_norm counts it as nonzero), and
    no features give 0 for every p (amax has no identity)."""
    if p == 0:
        return reductions.sum(diff.abs().ceil().clamp(max=1), -1)
    if diff.shape[-1] == 0:
        return reductions.sum(diff, -1)
    return p_norm(diff, p, -1)


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
    if not margin > 0:  # torch.nn.functional's check (torch.triplet_margin_loss has none)
        raise ValueError(f"{name}: margin must be greater than 0, got {margin}")
    return triplet_margins(anchor, positive, negative, margin, p, eps, swap, reduction)


def triplet_margins(anchor, positive, negative, margin, p, eps, swap, reduction) -> Tensor:
    """triplet_margin_loss without its margin check (torch.triplet_margin_loss's form)."""
    name = "triplet_margin_loss"
    check_reduction(reduction, name)
    near = pairwise_distance(anchor, positive, p, eps)
    far = pairwise_distance(anchor, negative, p, eps)
    if swap:
        far = ew.binary("minimum", far, pairwise_distance(positive, negative, p, eps))
    return reduced((near + margin - far).clamp(min=0), reduction, name)  # torch's order


COSINE_EPSILON = 1e-12  # PyTorch's EPSILON in cosine_embedding_loss


def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: str = "mean"
) -> Tensor:
    """1 - cos(x1, x2) where y is 1, max(0, cos - margin) where y is -1; cos as PyTorch
    computes it: sum(x1 x2) / sqrt((sum(x1^2) + 1e-12) (sum(x2^2) + 1e-12))."""
    name = "cosine_embedding_loss"
    check_reduction(reduction, name)
    a, b = tensor_arg(input1, name), tensor_arg(input2, name)
    y = tensor_arg(target, name, "target")
    dtype = floating([a, b], name)
    a, b = a.to(dtype), b.to(dtype)
    d = -1 if a.ndim else None
    squares = [reductions.sum(v * v, d) + COSINE_EPSILON for v in (a, b)]
    cos = reductions.sum(a * b, d) / (squares[0] * squares[1]).sqrt()
    loss = ew.where(y == 1, 1 - cos, ew.where(y == -1, (cos - margin).clamp(min=0), 0.0))
    return reduced(loss, reduction, name)


def multilabel_margin_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """sum over the sample's targets j (its target row up to the first -1) and the classes
    i that are not targets of max(0, 1 - (x[j] - x[i])), over C."""
    name = "multilabel_margin_loss"
    x, t = operands(input, target, name, reduction)
    floating([x], name)
    if t.dtype is not int64:
        raise TypeError(f"{name}: expected int64 targets, got {t.dtype}")
    if x.ndim > 2 or t.shape != x.shape:
        raise ValueError(
            f"{name}: inconsistent target size {list(t.shape)} for input of size {list(x.shape)}"
        )
    rows, labels = (x.reshape(1, -1), t.reshape(1, -1)) if x.ndim < 2 else (x, t)
    classes = rows.shape[1]
    valid = sequence.cumprod((labels != -1).to(int64), 1) != 0  # entries before the first -1
    bad = (labels < -1) | (labels >= classes)  # PyTorch checks every entry, -1s' tail too
    if bad.numel() and bool(bad.any()):
        raise Error(f"{name}: target out of range: entries must be in [-1, {classes})")
    index = ew.where(valid, labels, 0)
    picked = index_ops.gather(rows, 1, index)  # x[j] per target entry
    each = factories.arange(classes, device=x.device)
    hits = (index.unsqueeze(-1) == each) & valid.unsqueeze(-1)  # [N, entry, class]
    is_target = reductions.any(hits, 1)
    gaps = (1 - picked.unsqueeze(-1) + rows.unsqueeze(1)).clamp(min=0)  # [N, entry, class]
    keep = valid.unsqueeze(-1) & ~is_target.unsqueeze(1)
    per = reductions.sum(ew.where(keep, gaps, 0.0), (1, 2)) / classes
    per = per if x.ndim == 2 else per.reshape(())
    return reduced(per, reduction, name)


def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    *,
    distance_function=None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """max(d(a, p) - d(a, n) + margin, 0) for any distance function (pairwise_distance by
    default); `swap` takes the smaller of d(a, n) and d(p, n)."""
    name = "triplet_margin_with_distance_loss"
    check_reduction(reduction, name)
    if margin <= 0:
        raise ValueError(f"{name}: margin must be greater than 0, got {margin}")
    tensors = [tensor_arg(t, name) for t in (anchor, positive, negative)]
    if len({t.ndim for t in tensors}) > 1:
        raise ValueError(
            f"{name}: The anchor, positive, and negative tensors are expected to have the same"
            " number of dimensions, but got: " + ", ".join(f"{t.ndim}D" for t in tensors)
        )
    distance = distance_function if distance_function is not None else pairwise_distance
    a, p, n = tensors
    near, far = distance(a, p), distance(a, n)
    if swap:
        far = ew.binary("minimum", far, distance(p, n))
    return reduced((near + margin - far).clamp(min=0), reduction, name)  # torch's order


FUNCTIONS = {
    fn.__name__: op_door(fn.__name__, fn)
    for fn in (
        margin_ranking_loss,
        hinge_embedding_loss,
        multilabel_soft_margin_loss,
        multi_margin_loss,
        multilabel_margin_loss,
        cosine_similarity,
        pairwise_distance,
        triplet_margin_loss,
        triplet_margin_with_distance_loss,
        cosine_embedding_loss,
    )
}
