"""Order statistics as PyTorch has them: median, nanmedian, quantile, nanquantile, the
selections masked_select and argwhere, and isin (membership by a sort and a search). Each
slice's ranks are found by kael's radix selection (or its stable sort, for short slices
and many ranks: the same positions); kael's gather kernel then picks them. NaN ranks last, so a slice with NaN has NaN as its median and
quantiles, while the nan- variants count only its other values.
"""

from __future__ import annotations

from kael.codegen.cpu import search
from kael.frontend import elementwise as ew
from kael.frontend import factories, index_ops, math_functions, reductions, sequence, views
from kael.frontend.outputs import bool_arg, device_of, pair_out, tensor_arg, written_out
from kael.frontend.reductions import ValuesIndices
from kael.frontend.tensor import Tensor
from kael.runtime.convert import WRAP, convert_scalar
from kael.runtime.dtypes import bool_, float32, float64, int32, int64, result_type
from kael.runtime.errors import (
    Error,
    IndexError,
    NotImplementedError,
    TypeError,
    UnsupportedDtype,
    ValueError,
)

INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _finish(result: Tensor, d: int, keepdim: bool, dim, ndim: int) -> Tensor:
    """A [..., k] result (k picked per slice) back in place of the reduced dim (a 0-d
    input keeps no dim: it had none)."""
    if dim is None:
        shape = (1,) * ndim if keepdim else ()
        return result.reshape(shape)
    if keepdim and ndim:
        return result.movedim(-1, d)
    return result.squeeze(-1)


def _counts(values: Tensor) -> Tensor:
    """Per slice (the last dim), how many values are not NaN, as int64 [..., 1]."""
    return reductions.sum(ew.binary("eq", values, values), -1, keepdim=True)


def _ranked(x: Tensor, dim, op: str) -> tuple[Tensor, int]:
    """x with `dim` last (all of x flattened when None), contiguous, and dim's position."""
    if dim is None:
        moved, d = x.reshape(-1), 0
    else:
        d = views.wrap_dim(dim, max(x.ndim, 1))
        moved = (x if x.ndim else x.reshape(1)).movedim(d, -1)
    if moved.shape[-1] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    return moved.contiguous(), d


def _positions(xs: Tensor, ranks: list[Tensor]) -> list[Tensor]:
    """For each rank tensor ([..., 1] int64, a rank per slice of xs's last dim), the
    positions of the elements a stable sort puts at those ranks (NaN ranked last): radix
    selection (a few counting reads of each slice a rank) for long slices and few ranks,
    else the stable sort's order; the same positions either way, on every device."""
    if not xs.numel():  # no slices: nothing to order
        order = factories.empty(xs.shape, dtype=int64, device=xs.device)
        return [index_ops.gather(order, -1, r) for r in ranks]
    if len(ranks) <= SELECT_RANKS and index_ops.selects(xs.dtype, xs.shape[-1]):
        return [index_ops.rank_positions(xs, r) for r in ranks]
    order = index_ops.sort(xs, -1, stable=True)[1]
    return [index_ops.gather(order, -1, r) for r in ranks]


QUANTILE_MAX = 1 << 24  # the longest slice torch's quantile takes
SELECT_RANKS = 4  # more ranks a slice: one sort reads less than a selection each


def _median(op: str, skip_nan: bool):
    def median(input: Tensor, dim=None, keepdim: bool = False, *, out=None):
        x = tensor_arg(input, op)
        if out is not None and dim is None:
            raise TypeError(f"{op}(): out= needs a dim (the (values, indices) form)")
        if x.dtype.is_bool:
            raise UnsupportedDtype(f"{op}(): not implemented for bool")
        if dim is None and not x.numel():  # PyTorch's median of nothing: NaN
            return factories.full((), float("nan"), device=x.device).to(x.dtype)
        ndim = x.ndim
        xs, d = _ranked(x, dim, op)
        n = xs.shape[-1]
        floating = x.dtype.is_floating_point
        if skip_nan and floating:
            count = _counts(xs)
            rank = ew.binary("floor_divide", ew.binary("sub", ew.binary("maximum", count, 1), 1), 2)
        else:
            rank = factories.full((*xs.shape[:-1], 1), (n - 1) // 2, dtype=int64, device=x.device)
        (where,) = _positions(xs, [rank])
        picked = index_ops.gather(xs, -1, where)
        if floating and not skip_nan:  # a slice with NaN: NaN, at its first NaN
            nans = ew.binary("ne", xs, xs)
            has_nan = reductions.any(nans, -1, keepdim=True)
            where = ew.where(has_nan, reductions.argmax(nans.to(int64), -1, keepdim=True), where)
            picked = ew.where(has_nan, float("nan"), picked)
        if dim is None:
            return _finish(picked, 0, keepdim, None, ndim)
        result = ValuesIndices(
            _finish(picked, d, keepdim, dim, ndim), _finish(where, d, keepdim, dim, ndim)
        )
        return pair_out(out, result, op)

    median.__name__ = median.__qualname__ = op
    median.__doc__ = (
        f"torch.{op}: the lower median of each slice (all elements when dim is None), with"
        " its index in the slice when dim is given."
    )
    return median


def _quantile_qs(op: str, x: Tensor, q, interpolation) -> list[float]:
    """quantile's q values as floats, after torch's checks in torch's order (a scalar q's
    range, interpolation, a non-empty float or double input, q 1-d of its dtype and device,
    q's values)."""
    if not isinstance(q, Tensor) and not 0 <= float(q) <= 1:
        raise ValueError(f"{op}() q must be in the range [0, 1] but got {float(q)}")
    if interpolation not in INTERPOLATIONS:
        raise ValueError(
            f"{op}() interpolation must be one of {', '.join(INTERPOLATIONS)}. Got {interpolation}"
        )
    if not x.numel():
        raise ValueError(f"{op}() input tensor must be non-empty")
    if isinstance(q, Tensor) and q.ndim > 1:
        raise ValueError(f"{op}() q must be a scalar or 1D tensor")
    if x.dtype not in (float32, float64):
        raise TypeError(f"{op}() input tensor must be either float or double dtype")
    if not isinstance(q, Tensor):
        return [float(q)]
    if q.dtype is not x.dtype:
        raise TypeError(
            f"{op}() q tensor must be same dtype as the input tensor (q is {q.dtype}, input"
            f" is {x.dtype})"
        )
    if q.device is not x.device:
        raise Error(
            f"{op}() q tensor must be on the same device as the input tensor (q on"
            f" {q.device}, input on {x.device})"
        )
    qlist = [float(v) for v in q.reshape(-1).tolist()]
    if any(not 0 <= v <= 1 for v in qlist):
        raise ValueError(f"{op}() q values must be in the range [0, 1]")
    return qlist


def _quantile(op: str, skip_nan: bool):
    def quantile(
        input: Tensor, q, dim=None, keepdim: bool = False, *, interpolation="linear", out=None
    ):
        result = _quantiles(input, q, dim, keepdim, interpolation)
        return result if out is None else written_out(tensor_arg(out, op, "out"), result, op)

    def _quantiles(input, q, dim, keepdim: bool, interpolation):
        x = tensor_arg(input, op)
        scalar_q = not isinstance(q, Tensor) or q.ndim == 0  # no q dim stacked first
        qlist = _quantile_qs(op, x, q, interpolation)
        ndim = x.ndim
        xs, d = _ranked(x, dim, op)
        if xs.shape[-1] > QUANTILE_MAX:  # torch's limit: ranks q (n - 1) stay exact
            raise ValueError(f"{op}() input tensor is too large")
        if not qlist:  # no q: no quantiles, stacked in the result's shape
            shape = _finish(xs[..., :1], d, keepdim, dim, ndim).shape
            return factories.empty((0, *shape), dtype=x.dtype, device=x.device)
        # PyTorch's ranks: q (n - 1) in the data's dtype, n the slice's non-NaN count
        # for the nan- variant
        n = _counts(xs) if skip_nan else xs.shape[-1]
        last = (n - 1).to(xs.dtype) if skip_nan else float(xs.shape[-1] - 1)
        bounds = []  # per q: (its ranks, the rank below, the rank above)
        for v in qlist:
            ranks = factories.full((*xs.shape[:-1], 1), v, dtype=xs.dtype, device=x.device) * last
            if interpolation == "higher":
                ranks = ranks.ceil()
            elif interpolation == "nearest":
                ranks = ranks.round()
            below = ranks.clamp(min=0).to(int64)  # truncation: ranks are not negative
            bounds.append((ranks, below, ranks.ceil().clamp(min=0).to(int64)))
        places = iter(_positions(xs, [r for _, lo, hi in bounds for r in (lo, hi)]))
        any_nan = None if skip_nan else ew.binary("ne", xs, xs).any(-1, keepdim=True)
        results = []
        for ranks, below, _ in bounds:
            below_at, above_at = next(places), next(places)
            value = index_ops.gather(xs, -1, below_at)
            if interpolation in ("linear", "midpoint"):
                upper = index_ops.gather(xs, -1, above_at)
                weight = ranks - below.to(xs.dtype) if interpolation == "linear" else 0.5
                value = math_functions.lerp(value, upper, weight)
            # an all-NaN slice (nan- variants) or any NaN in it: NaN quantiles
            value = ew.where(n == 0 if skip_nan else any_nan, float("nan"), value)
            results.append(_finish(value, d, keepdim, dim, ndim))
        if scalar_q:
            return results[0]
        return index_ops.stack(results, -1).movedim(-1, 0)  # torch's layout: q innermost

    quantile.__name__ = quantile.__qualname__ = op
    quantile.__doc__ = (
        f"torch.{op}: the q-th quantiles of each slice (all elements when dim is None),"
        " interpolated as asked between the sorted values around rank q (n - 1)."
    )
    return quantile


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements of input where the (broadcast) bool mask is True, as a 1-d tensor."""
    x, m = tensor_arg(input, "masked_select"), tensor_arg(mask, "masked_select", "mask")
    device_of([x, m], "masked_select")
    if not m.dtype.is_bool:
        raise TypeError(f"masked_select: expected BoolTensor for mask, got {m.dtype}")
    shape = ew.broadcast_shapes(x.shape, m.shape)
    return x.expand(*shape)[m.expand(*shape)]


def _isin_operand(value, op: str):
    """A Tensor or a Python number (bool refused, as torch's isin refuses Bool)."""
    if isinstance(value, Tensor):
        if value.dtype.is_bool:
            raise TypeError(f"Unsupported input type encountered for {op}(): {value.dtype}")
        return value
    if isinstance(value, bool):
        raise TypeError(f"Unsupported input type encountered for {op}(): bool ({value})")
    if not isinstance(value, int | float):
        raise TypeError(
            f"{op}(): expected a Tensor or a number, got {type(value).__name__} ({value!r})"
        )
    return value


def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """Whether each of elements occurs in test_elements (either may be a number), as a bool
    tensor of elements' shape; both compare in their result_type (NaN is in nothing);
    invert asks where each is not. The test values are sorted (kael's sort), then each
    element's place among them is searched."""
    op = "isin"
    bool_arg(assume_unique, op, "assume_unique")
    invert = bool_arg(invert, op, "invert")
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError(
            f"{op}(): expected elements or test_elements to be a Tensor, got"
            f" {type(elements).__name__} and {type(test_elements).__name__}"
        )
    e, t = _isin_operand(elements, op), _isin_operand(test_elements, op)
    device = (e if isinstance(e, Tensor) else t).device
    if isinstance(e, Tensor) and isinstance(t, Tensor):
        device_of([e, t], op)
    dtype = result_type(e, t)
    e, t = (
        v.to(dtype) if isinstance(v, Tensor) else factories.full((), v, dtype=dtype, device=device)
        for v in (e, t)
    )
    flat = e.reshape(-1).contiguous()
    tests = t.reshape(-1)
    if dtype.is_floating_point:  # NaN matches nothing, and in the sorted values it would
        # sit past every number, where the binary search cannot pass it
        tests = masked_select(tests, ew.binary("eq", tests, tests))
    if not tests.numel() or not flat.numel():
        found = factories.zeros(e.shape, dtype=bool_, device=device)
    else:
        ordered = index_ops.sort(tests, 0)[0]
        place = searchsorted(ordered, flat).clamp(max=tests.numel() - 1)
        found = ew.binary("eq", index_ops.gather(ordered, 0, place), flat).reshape(e.shape)
    return ew.unary("logical_not", found) if invert else found


def argwhere(input: Tensor) -> Tensor:
    """The indices of the nonzero elements, one row each: nonzero's result."""
    return index_ops.nonzero(tensor_arg(input, "argwhere"))


def mode(input: Tensor, dim: int = -1, keepdim: bool = False, *, out=None) -> ValuesIndices:
    """The most frequent value of each slice (the smallest of equally frequent ones; each
    NaN its own value) and the index of its last occurrence. PyTorch's CPU kernel gives
    the last occurrence for slices of up to 16 elements; past that its index comes from an
    unstable sort (an occurrence, not always the last): the values always agree."""
    x = tensor_arg(input, "mode")
    ndim = x.ndim
    xs, d = _ranked(x, dim, "mode")
    n = xs.shape[-1]
    values, order = index_ops.sort(xs, -1, stable=True)
    rows = values.reshape(-1, n)
    starts = factories.ones(rows.shape, dtype=int64, device=x.device)
    if n > 1:
        starts[:, 1:] = ew.binary("ne", rows[:, 1:], rows[:, :-1]).to(int64)
    first_run = factories.arange(rows.shape[0], device=x.device).reshape(-1, 1) * n
    run = sequence.cumsum(starts, 1) - 1 + first_run  # a number per run, over all rows
    flat = run.reshape(-1)
    ones = factories.ones(1, dtype=int64, device=x.device).expand(flat.shape)
    counts = index_ops.scatter_add_(
        factories.zeros(flat.shape, dtype=int64, device=x.device), 0, flat, ones
    )
    sizes = index_ops.gather(counts, 0, flat).reshape(rows.shape)  # each element's run size
    best = reductions.amax(sizes, -1, keepdim=True)
    at = reductions.argmax(ew.binary("eq", sizes, best).to(int64), -1, keepdim=True)  # first
    end = at + best - 1  # the run's last: its value with its index (-0 and +0 tie)
    value = index_ops.gather(rows, -1, end)
    last = index_ops.gather(order.reshape(-1, n), -1, end)
    shape = (*xs.shape[:-1], 1)
    result = ValuesIndices(
        _finish(value.reshape(shape), d, keepdim, dim, ndim),
        _finish(last.reshape(shape), d, keepdim, dim, ndim),
    )
    return pair_out(out, result, "mode")


def kthvalue(
    input: Tensor, k: int, dim: int = -1, keepdim: bool = False, *, out=None
) -> ValuesIndices:
    """The k-th smallest value of each slice along dim (k from 1; NaN the largest, as sort
    orders it) and its index in the slice: the element kael's stable sort puts at k - 1
    (found by radix selection in long slices)."""
    op = "kthvalue"
    x = tensor_arg(input, op)
    k = views.as_int(k, f"{op}(): k")
    keepdim = bool_arg(keepdim, op, "keepdim")
    if x.dtype.is_bool:
        raise UnsupportedDtype(f"{op}(): not implemented for bool")
    ndim = x.ndim
    d = views.wrap_dim(dim, ndim)
    size = x.shape[d] if ndim else 1
    if not size:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    if not 1 <= k <= size:
        raise ValueError(
            f"{op}(): selected number k out of range for dimension {d}: k={k} but the"
            f" dimension has size {size}"
        )
    xs = (x if ndim else x.reshape(1)).movedim(d, -1).contiguous()
    rank = factories.full((*xs.shape[:-1], 1), k - 1, dtype=int64, device=x.device)
    (where,) = _positions(xs, [rank])
    result = ValuesIndices(
        _finish(index_ops.gather(xs, -1, where), d, keepdim, dim, ndim),
        _finish(where, d, keepdim, dim, ndim),
    )
    return pair_out(out, result, op)


def msort(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The elements sorted along dim 0 (NaN last), values only; out= written as torch
    does (resized to the result, its dtype the input's)."""
    values = index_ops.sort(tensor_arg(input, "msort"), 0)[0]
    return values if out is None else written_out(tensor_arg(out, "msort", "out"), values, "msort")


def searchsorted(
    sorted_sequence: Tensor,
    input,
    *,
    out_int32: bool = False,
    right: bool = False,
    side: str | None = None,
    sorter: Tensor | None = None,
    out: Tensor | None = None,
) -> Tensor:
    """Where each value would go in its (last-dim) row of the sorted sequence to keep it
    sorted: the first such place, or the last with right=True (side='right'); into `out`
    (resized as torch resizes it) when given."""
    op = "searchsorted"
    seq = tensor_arg(sorted_sequence, op, "sorted_sequence")
    scalar = not isinstance(input, Tensor)
    # torch's promotion: a number, or a 0-d tensor, beside the sequence takes its dtype
    dtype = result_type(seq, input if scalar else tensor_arg(input, op))
    if dtype.is_bool or dtype.is_complex:  # no order to search (torch has no kernel)
        raise NotImplementedError(f"{op}(): not implemented for {dtype} values and boundaries")
    if scalar:
        number = convert_scalar(input, dtype, WRAP)  # int8 with -1000 wraps, as torch's
        values = factories.full((), number, dtype=dtype, device=seq.device)
    else:
        values = tensor_arg(input, op)
    if sorter is not None:
        sorter = tensor_arg(sorter, op, "sorter")
    device_of([seq, values, *([] if sorter is None else [sorter])], op)
    if side is not None:
        if side not in ("left", "right") or (right and side == "left"):
            raise ValueError(
                f"{op}(): side must be 'left' or 'right' (and agree with right), got {side!r}"
            )
        right = side == "right"
    if seq.ndim == 0:
        raise ValueError(f"{op}(): boundaries tensor should have positive dimension, got 0-d")
    if seq.ndim > 1 and (values.ndim != seq.ndim or values.shape[:-1] != seq.shape[:-1]):
        raise ValueError(
            f"{op}(): boundaries tensor should be 1 dimension or the first N-1 dimensions of"
            f" boundaries tensor and input value tensor must match, but we got boundaries tensor"
            f" {list(seq.shape)} and input value tensor {list(values.shape)}"
        )
    if sorter is not None:
        if sorter.dtype is not int64 or sorter.shape != seq.shape:
            raise ValueError(f"{op}(): sorter must be an int64 tensor of the sequence's shape")
        try:  # gather's kernel checks each index before it reads (take_along_dim would wrap)
            seq = index_ops.gather(seq, -1, sorter)
        except IndexError:
            raise IndexError(f"{op}(): sorter index out of range") from None
    seq = seq.to(dtype).contiguous()
    flat = values.to(dtype).contiguous()
    found = factories.empty(values.shape, dtype=int32 if out_int32 else int64, device=seq.device)
    if found.numel():
        per_row = values.shape[-1] if seq.ndim > 1 else values.numel()
        search.run(seq._impl, flat._impl, found._impl, per_row, bool(right))
    return found if out is None else written_out(tensor_arg(out, op, "out"), found, op)


def bucketize(
    input, boundaries: Tensor, *, out_int32: bool = False, right: bool = False, out=None
) -> Tensor:
    """The bucket of each value among 1-d sorted boundaries: searchsorted's position."""
    edges = tensor_arg(boundaries, "bucketize", "boundaries")
    if edges.ndim != 1:
        raise ValueError(
            f"bucketize(): boundaries tensor must be 1 dimension, but got dim({edges.ndim})"
        )
    if isinstance(input, Tensor):
        device_of([edges, input], "bucketize")
    return searchsorted(edges, input, out_int32=out_int32, right=right, out=out)


FUNCTIONS = {
    "kthvalue": kthvalue,
    "msort": msort,
    "mode": mode,
    "searchsorted": searchsorted,
    "bucketize": bucketize,
    "median": _median("median", False),
    "nanmedian": _median("nanmedian", True),
    "quantile": _quantile("quantile", False),
    "nanquantile": _quantile("nanquantile", True),
    "masked_select": masked_select,
    "argwhere": argwhere,
    "isin": isin,
}
NOT_METHODS: frozenset[str] = frozenset({"searchsorted", "isin"})
METHODS: dict = {}
