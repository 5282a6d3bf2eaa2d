"""torch.nn.functional.ctc_loss: connectionist temporal classification.

The forward (alpha) recursion runs in log space over each sequence's extended labels
(blank, l1, blank, l2, ..., blank: 2S + 1 positions), all sequences and positions at once,
one kernel per time step; a sequence stops updating past its own input length.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from kael.frontend import factories, index_ops, reductions
from kael.frontend.formula import Value, launch, maximum, where
from kael.frontend.losses import check_reduction
from kael.frontend.outputs import tensor_arg
from kael.frontend.tensor import Tensor
from kael.frontend.tracing import op_door
from kael.runtime.dtypes import bool_, float32, float64, int64
from kael.runtime.errors import IndexError, TypeError, UnsupportedDtype, ValueError

NAME = "ctc_loss"


def _lengths(value, name: str) -> list[int]:
    """A lengths argument (an integral tensor of any shape, a sequence of ints or an int)
    as a list of Python ints."""
    if isinstance(value, Tensor):
        if value.dtype.is_floating_point or value.dtype is bool_:
            raise TypeError(f"{NAME}: {name} must be integral, got {value.dtype}")
        return [int(v) for v in value.reshape(-1).tolist()]
    values = [value] if isinstance(value, int) else list(value)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise TypeError(f"{NAME}: {name} must be a tensor or a sequence of ints, got {value!r}")
    return values


def _check_lengths(lengths: list[int], name: str, batch: int, most: int | None) -> None:
    """PyTorch's checks of one lengths argument: one per sequence, each in [0, most]."""
    if len(lengths) != batch:
        raise ValueError(f"{NAME}: {name} must be of size batch_size ({batch}), got {len(lengths)}")
    for v in lengths:
        if v < 0:
            raise ValueError(f"Expected {name} to have value at least 0, but got value {v}")
        if most is not None and v > most:
            raise ValueError(f"Expected {name} to have value at most {most}, but got value {v}")


def _padded_targets(targets: Tensor, lengths: list[int], batch: int) -> Tensor:
    """The targets as [N, max(lengths)] int64 (padding 0): a padded [N, S] is cut to the
    longest target, a concatenated 1-D one is split by `lengths`."""
    longest = max(lengths, default=0)
    if targets.ndim == 2:
        if targets.shape[0] != batch:
            raise ValueError(
                f"Expected targets to have size {batch} at dimension 0, but got size"
                f" {targets.shape[0]}"
            )
        if targets.shape[1] < longest:
            raise ValueError(
                f"Expected targets to have size at least {longest} at dimension 1, but got"
                f" size {targets.shape[1]}"
            )
        return targets[:, :longest].to(int64)
    if targets.shape[0] != sum(lengths):
        raise ValueError(
            f"Expected targets to have size {sum(lengths)} at dimension 0, but got size"
            f" {targets.shape[0]}"
        )
    if not targets.numel():
        return factories.zeros((batch, longest), dtype=int64, device=targets.device)
    device = targets.device
    sizes = factories.tensor(lengths, dtype=int64, device=device).reshape(batch, 1)
    starts = sizes.cumsum(0) - sizes
    index = starts + factories.arange(longest, device=device).reshape(1, longest)
    flat = index.clamp(max=targets.shape[0] - 1).reshape(-1)
    return index_ops.index_select(targets.to(int64), 0, flat).reshape(batch, longest)


def _extended(labels: Tensor, lengths: list[int], blank: int, classes: int) -> Tensor:
    """[N, 2S + 1] int64: blank at even positions, the labels at odd ones (blank past each
    target's length); labels checked to be classes."""
    batch, longest = labels.shape
    valid = _mask(lengths, longest, labels.device)
    bad = (labels < 0).logical_or(labels >= classes).logical_and(valid)
    if labels.numel() and bool(bad.any()):
        first = labels[bad][0].item()
        raise IndexError(f"{NAME}: target labels must be in [0, {classes}), got {first}")
    labels = index_ops.where(valid, labels, blank)
    blanks = factories.full((batch, longest + 1), blank, dtype=int64, device=labels.device)
    pairs = index_ops.stack([blanks[:, :longest], labels], -1).reshape(batch, 2 * longest)
    return index_ops.cat([pairs, blanks[:, longest:]], 1)


def _mask(lengths: list[int], size: int, device) -> Tensor:
    """[N, size] bool: position j of row n is within lengths[n]."""
    positions = factories.arange(size, device=device).reshape(1, size)
    bounds = factories.tensor(lengths, dtype=int64, device=device).reshape(len(lengths), 1)
    return positions < bounds


def _log_add(a: Value, b: Value, c: Value) -> Value:
    """log(e^a + e^b + e^c) around their maximum, as PyTorch (a maximum of -inf counts as
    0, so three -inf give -inf, not NaN)."""
    top = maximum(maximum(a, b), c)
    top = where(top.eq(-math.inf), 0.0, top)
    return ((a - top).apply("exp") + (b - top).apply("exp") + (c - top).apply("exp")).apply(
        "log"
    ) + top


def _step(prev: Value, before: Value, skip_from: Value, skip: Value, emit: Value, live: Value):
    """One time step of alpha at one extended position: the sum over its own, the previous
    and (where allowed) the one-before-previous position, plus the log emission; a sequence
    past its input length keeps its alpha."""
    skipped = where(skip, skip_from, -math.inf)
    return where(live, _log_add(prev, before, skipped) + emit, prev)


def _alphas(emissions: Tensor, skip: Tensor, live: Tensor) -> Tensor:
    """log alpha [N, L] at each sequence's last frame; emissions [T, N, L], live [T, N, 1].
    Two buffers hold alpha behind two -inf columns (the missing predecessors of 0 and 1)."""
    steps, batch, width = emissions.shape
    dtype = emissions.dtype
    buffers = [
        factories.full((batch, width + 2), -math.inf, dtype=dtype, device=emissions.device)
        for _ in range(2)
    ]
    first = index_ops.where(_mask([2] * batch, width, emissions.device), emissions[0], -math.inf)
    buffers[0][:, 2:] = first
    for t in range(1, steps):
        old, new = buffers[(t - 1) % 2], buffers[t % 2]
        operands = [old[:, 2:], old[:, 1:-1], old[:, :-2], skip, emissions[t], live[t]]
        launch(("ctc_alpha",), operands, dtype, _step, out=new[:, 2:]._impl)
    return buffers[(steps - 1) % 2][:, 2:]


def _log_likelihood(alpha: Tensor, targets: list[int], inputs: list[int]) -> Tensor:
    """log p(target | input) [N]: alpha's last blank and last label combined; an empty
    input only produces the empty target."""
    device = alpha.device
    last = factories.tensor([[2 * s, max(2 * s - 1, 0)] for s in targets], device=device)
    ends = index_ops.gather(alpha, 1, last.reshape(len(targets), 2))
    has_label = factories.tensor([[True, s > 0] for s in targets], device=device)
    ends = index_ops.where(has_label.reshape(ends.shape), ends, -math.inf)
    top = reductions.amax(ends, 1, keepdim=True)
    top = index_ops.where(top == -math.inf, 0.0, top)
    total = (reductions.sum((ends - top).exp(), 1, keepdim=True).log() + top).reshape(-1)
    empty = factories.tensor([0.0 if s == 0 else -math.inf for s in targets], device=device)
    return index_ops.where(
        factories.tensor([n == 0 for n in inputs], device=device), empty.to(alpha.dtype), total
    )


def _reduce(loss: Tensor, targets: list[int], reduction: str) -> Tensor:
    """PyTorch's reductions: 'mean' divides each loss by its target length (at least 1)."""
    if reduction == "sum":
        return reductions.sum(loss)
    if reduction == "mean":
        divisors = factories.tensor(
            [max(s, 1) for s in targets], dtype=loss.dtype, device=loss.device
        )
        return reductions.mean(loss / divisors)
    return loss


def _operands(log_probs, targets, blank: int):
    """(log_probs [T, N, C], targets, whether batched), ranks, dtypes and blank checked."""
    lp = tensor_arg(log_probs, NAME, "log_probs")
    tg = tensor_arg(targets, NAME, "targets")
    if lp.dtype not in (float32, float64):
        raise UnsupportedDtype(f"{NAME}: not implemented for {lp.dtype} (float32 or float64)")
    if tg.dtype is bool_:
        raise TypeError(f"{NAME}: targets must be integral, got {tg.dtype}")
    if lp.ndim not in (2, 3):
        raise ValueError(
            f"{NAME}: expected a 2-D or 3-D log_probs, got {lp.ndim}-D {list(lp.shape)}"
        )
    batched = lp.ndim == 3
    lp = lp if batched else lp.unsqueeze(1)
    if not 1 <= tg.ndim <= 2:
        raise ValueError(f"{NAME}: expected 1 to 2 dimensions for targets, got {tg.ndim}-D")
    if not batched and tg.ndim == 1:
        tg = tg.unsqueeze(0)
    if not lp.numel():
        raise ValueError(f"{NAME}: log_probs tensor must not be empty, got {list(lp.shape)}")
    if isinstance(blank, bool) or not 0 <= blank < lp.shape[2]:
        raise ValueError(f"{NAME}: blank must be in label range [0, {lp.shape[2]}), got {blank}")
    return lp, tg, batched


def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths,
    target_lengths,
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """torch.nn.functional.ctc_loss: -log p(target | input) summed over alignments; inf
    where no alignment exists (0 with zero_infinity)."""
    check_reduction(reduction, NAME)
    lp, tg, batched = _operands(log_probs, targets, blank)
    steps, batch, classes = lp.shape
    inputs = _lengths(input_lengths, "input_lengths")
    lengths = _lengths(target_lengths, "target_lengths")
    _check_lengths(inputs, "input_lengths", batch, steps)
    _check_lengths(lengths, "target_lengths", batch, None)
    labels = _extended(_padded_targets(tg, lengths, batch), lengths, blank, classes)
    width = labels.shape[1]
    emissions = index_ops.gather(lp, 2, labels.unsqueeze(0).expand(steps, batch, width))
    previous = index_ops.cat([labels[:, :2], labels[:, :-2]], 1)
    skip = labels != previous
    live = _mask(inputs, steps, lp.device).transpose(0, 1).unsqueeze(-1)
    loss = -_log_likelihood(_alphas(emissions, skip, live), lengths, inputs)
    if zero_infinity:
        loss = index_ops.where(loss == math.inf, 0.0, loss)
    loss = loss if batched else loss.reshape(())
    return _reduce(loss, lengths, reduction)


FUNCTIONS: dict[str, Callable] = {NAME: op_door(NAME, ctc_loss)}
