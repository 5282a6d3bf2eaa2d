"""torch.nn.functional.embedding_bag: sums, means and maxima of bags of embedding rows.

The rows are gathered once (index_select); each entry's bag comes from the offsets by a
cumulative count of bag starts, and one segment reduction (index_add_ or scatter_reduce_)
combines them, no loop over bags. Padding entries go to one spare bag that is dropped."""

from __future__ import annotations

import math
from collections.abc import Callable

from kael.frontend import elementwise as ew
from kael.frontend import factories, index_ops
from kael.frontend.layers import embedding_renorm_
from kael.frontend.outputs import device_of, tensor_arg
from kael.frontend.tensor import Tensor
from kael.frontend.tracing import op_door
from kael.runtime.dtypes import float32, int32, int64, result_type
from kael.runtime.errors import Error, IndexError, TypeError, ValueError

MODES = ("sum", "mean", "max")


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """[bags, D]: each bag's rows of weight summed, averaged or maximised (an empty bag
    gives zeros). Bags are the rows of a 2-D input or the runs of a 1-D input that offsets
    start; padding_idx entries are left out; scale_grad_by_freq and sparse only concern
    gradients (kael has none): they are checked, not used."""
    op = "embedding_bag"
    idx, w = tensor_arg(input, op), tensor_arg(weight, op, "weight")
    psw = (
        None
        if per_sample_weights is None
        else tensor_arg(per_sample_weights, op, "per_sample_weights")
    )
    if psw is not None and psw.shape != idx.shape:
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({list(psw.shape)}) is not None, then it"
            f" must have the same shape as the input ({list(idx.shape)})"
        )
    if w.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {w.ndim}")
    idx, offs, include_last_offset = _flat_bags(idx, offsets, include_last_offset)
    _check_mode(mode, scale_grad_by_freq, sparse)
    idx, offs = _index_pair(idx, offs)
    if max_norm is not None:
        embedding_renorm_(w, idx, max_norm, norm_type)
    if psw is not None and mode != "sum":
        raise Error(  # PyTorch's NotImplementedError; kael.Error is a RuntimeError as it is
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only"
            f" supported for mode='sum' (got mode='{mode}'). Please open a feature request on"
            " GitHub."
        )
    _check_weights(w, psw)
    device_of([idx, offs, w] + ([] if psw is None else [psw]), op)
    count = offs.numel() - 1 if include_last_offset else offs.numel()
    if include_last_offset and count < 0:
        raise ValueError("include_last_offset: number of offset should be at least 1")
    _check_offsets(offs, idx.numel(), include_last_offset)
    _check_indices(idx, w.shape[0])
    pad = _padding_row(padding_idx, w.shape[0])
    bag = _bag_of_entries(idx, offs, count, pad)
    rows = index_ops.index_select(w, 0, idx)
    wide = rows.to(float32) if rows.dtype.is_half else rows  # as PyTorch: half types in float32
    if psw is not None:
        wide = wide * psw.reshape(-1, 1).to(wide.dtype)
    return _REDUCE[mode](wide, bag, count)[:count].to(w.dtype)


def _flat_bags(idx: Tensor, offsets, include_last_offset: bool):
    """The 1-D entries and offsets of either form: a 2-D input is bags of its row length."""
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a"
                " mini-batch of fixed length sequences. However, found offsets of type"
                f" {type(offsets).__name__}"
            )
        n, length = idx.shape
        if length == 0:  # torch's arange of the starts takes a step of 0
            raise ValueError(
                f"embedding_bag: 2-D input of shape {list(idx.shape)} has bags of length 0"
                " (PyTorch: step must be nonzero)"
            )
        if idx.dtype.is_bool:
            raise TypeError("embedding_bag: 2-D input of bool indices (PyTorch: arange of bool)")
        starts = factories.arange(0, n * length, length, dtype=idx.dtype, device=idx.device)
        return idx.reshape(-1), starts, False
    if idx.ndim != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {idx.ndim}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    offs = tensor_arg(offsets, "embedding_bag", "offsets")
    if offs.ndim != 1:
        raise ValueError(f"offsets has to be a 1D Tensor, got {offs.ndim}-D")
    return idx, offs, bool(include_last_offset)


def _check_mode(mode: str, scale_grad_by_freq: bool, sparse: bool) -> None:
    if mode not in MODES:
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode!r}")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")


def _index_pair(idx: Tensor, offs: Tensor) -> tuple[Tensor, Tensor]:
    """Entries and offsets as int64, after PyTorch's check that their common dtype is
    int32 or int64."""
    common = result_type(idx, offs)
    if common not in (int32, int64):
        raise TypeError(
            "embedding_bag: expected input and offsets of one of the scalar types Long, Int,"
            f" but their common dtype is {common} (input {idx.dtype}, offsets {offs.dtype})"
        )
    return idx.to(int64), offs.to(int64)


def _check_weights(w: Tensor, psw: Tensor | None) -> None:
    if not w.dtype.is_floating_point:
        raise TypeError(
            "embedding_bag: expected weight of one of the scalar types Half, BFloat16, Float,"
            f" Double, but got {w.dtype}"
        )
    if psw is not None and psw.dtype is not w.dtype:
        raise TypeError(
            f"embedding_bag: expected per_sample_weights of weight's dtype {w.dtype}, but got"
            f" {psw.dtype}"
        )


def _check_offsets(offs: Tensor, n: int, include_last_offset: bool) -> None:
    """PyTorch's rules: the first offset is 0, none passes the input's length, and (where
    its CPU kernel fails unclearly or is inconsistent) they never decrease and a last
    offset (include_last_offset) is the input's length."""
    if not offs.numel():
        return
    first, last = offs[0].item(), offs[-1].item()
    if first != 0:
        raise ValueError(
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start"
            f" from position 0. However, got {first}"
        )
    if last > n:
        raise ValueError(
            f"offsets[-1] can not be greater than input's length {n} but got offsets[-1] of {last}"
        )
    falls = ew.binary("lt", offs[1:], offs[:-1])
    if falls.any().item():
        at = int(index_ops.nonzero(falls)[0, 0].item()) + 1
        raise ValueError(
            f"embedding_bag: offsets must not decrease, but offsets[{at}] ="
            f" {offs[at].item()} < offsets[{at - 1}] = {offs[at - 1].item()}"
        )
    if include_last_offset and last != n:  # torch's sum drops the rest, its mean and max not
        raise ValueError(
            "Your input appears to be incorrect: the last offset value should be the size of"
            f" the indices tensor, but got offsets[-1] of {last} for {n} indices"
        )


def _check_indices(idx: Tensor, rows: int) -> None:
    """Every entry names a row of weight; the first that does not is reported."""
    if not idx.numel():
        return
    bad = ew.binary("lt", idx, 0) | ew.binary("ge", idx, rows)
    if bad.any().item():
        at = int(index_ops.nonzero(bad)[0, 0].item())
        raise IndexError(
            f"embedding_bag: Index {at} of input takes value {idx[at].item()} which is not in"
            f" the valid range [0, {rows})"
        )


def _padding_row(padding_idx: int | None, rows: int) -> int | None:
    """padding_idx as a row of weight (negative counts from the end), checked."""
    if padding_idx is None:
        return None
    if not -rows <= padding_idx < rows:
        raise ValueError(
            f"padding_idx must be within the number of embeddings, {-rows} through {rows - 1},"
            f" but got {padding_idx}"
        )
    return padding_idx % rows


def _bag_of_entries(idx: Tensor, offs: Tensor, count: int, pad: int | None) -> Tensor:
    """Each entry's bag: how many offsets are at or before it, less one; padding entries
    get the spare bag `count`."""
    n = idx.numel()
    starts = factories.zeros(n + 1, dtype=int64, device=idx.device)
    starts.index_add_(0, offs, factories.ones(offs.numel(), dtype=int64, device=idx.device))
    bag = (starts[:n].cumsum(0) - 1).clamp(0, count)
    return bag if pad is None else ew.where(ew.binary("eq", idx, pad), count, bag)


def _sums(rows: Tensor, bag: Tensor, count: int) -> Tensor:
    out = factories.zeros(count + 1, rows.shape[1], dtype=rows.dtype, device=rows.device)
    return out.index_add_(0, bag, rows)


def _means(rows: Tensor, bag: Tensor, count: int) -> Tensor:
    """Sums over the entries counted in each bag (an empty bag divides 0 by 1)."""
    sizes = factories.zeros(count + 1, dtype=rows.dtype, device=rows.device)
    sizes.index_add_(0, bag, factories.ones(bag.numel(), dtype=rows.dtype, device=rows.device))
    return _sums(rows, bag, count) / sizes.clamp(min=1).reshape(-1, 1)


def _maxima(rows: Tensor, bag: Tensor, count: int) -> Tensor:
    """Elementwise maxima over each bag. As PyTorch's CPU loop (a later entry replaces the
    running maximum only when greater), NaN wins only as a bag's first entry."""
    n, width = rows.shape
    out = factories.zeros(count + 1, width, dtype=rows.dtype, device=rows.device)
    if not n:
        return out
    spread = bag.reshape(-1, 1).expand(n, width)
    numbers = ew.where(rows.isnan(), -math.inf, rows)
    out.scatter_reduce_(0, spread, numbers, "amax", include_self=False)
    first = factories.full((count + 1,), n, dtype=int64, device=rows.device)
    position = factories.arange(n, device=rows.device)
    first.scatter_reduce_(0, bag, position, "amin", include_self=True)
    leads = index_ops.index_select(rows, 0, first.clamp(max=n - 1))
    nan_lead = leads.isnan() & ew.binary("lt", first, n).reshape(-1, 1)
    return ew.where(nan_lead, leads, out)


_REDUCE: dict[str, Callable[[Tensor, Tensor, int], Tensor]] = {
    "sum": _sums,
    "mean": _means,
    "max": _maxima,
}

FUNCTIONS: dict[str, Callable] = {"embedding_bag": op_door("embedding_bag", embedding_bag)}
