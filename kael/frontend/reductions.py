"""Reductions: sum, prod, mean, max, min, amax, amin, argmax, argmin, all, any and
count_nonzero (var, std and norm live in moments.py), each one Reduction kernel per pass
with its elementwise prologue and epilogue fused (kael/ir/reduction.py), launched through
the internal door of reduce_door.py (`reduce`, re-exported here with its dim helpers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from kael.frontend import complex, eager, fastpath
from kael.frontend.elementwise import binary
from kael.frontend.moments import norm, std, var
from kael.frontend.outputs import (
    dtype_from_out,
    float_from_out,
    output,
    tensor_arg,
    unaliased,
)
from kael.frontend.reduce_door import (
    all_dims,
    binop,
    cast_to,
    casting,
    keepdim_arg,
    nonempty,
    nonzero_count,
    out1,
    reduce,
    reduce_axes,
    reduced_count,
    scalar,
)
from kael.frontend.reduce_door import reduced_shape as reduced_shape  # for other op families
from kael.frontend.tensor import Tensor
from kael.frontend.views import as_int
from kael.ir import graph as g
from kael.runtime.dtypes import DType, as_dtype, bool_, float64, int64, uint8
from kael.runtime.errors import IndexError, TypeError
from kael.runtime.tensor_impl import format_shape


class ValuesIndices(NamedTuple):
    """What max(t, dim), min(t, dim), sort, topk and the other ops that return values and
    their indices return, as torch.return_types.max does: a tuple naming its two tensors."""

    values: Tensor
    indices: Tensor


# ---- dtype rules -----------------------------------------------------------------------------


def _float_only(x: Tensor, op: str, dtype: DType | None = None) -> DType:
    target = x.dtype if dtype is None else as_dtype(dtype)
    if not target.is_floating_point:
        raise TypeError(
            f"{op}(): could not infer output dtype. Input dtype must be either a floating"
            f" point or complex dtype. Got: {target}"
        )
    return target


def _sum_dtype(x: Tensor, dtype: DType | None) -> DType:
    if dtype is not None:
        return as_dtype(dtype)
    return x.dtype if x.dtype.is_floating_point else int64


def _acc(dtype: DType) -> DType:
    return float64 if dtype.is_floating_point else int64


# ---- sums and products -----------------------------------------------------------------------


def _to_complex(x: Tensor, dtype) -> Tensor:
    """x converted first where a complex dtype= asks a real x for a complex result."""
    if dtype is not None and not x.dtype.is_complex and as_dtype(dtype).is_complex:
        return x.to(as_dtype(dtype))
    return x


def _sum_like(op: str, x, dim, keepdim, dtype, out) -> Tensor:
    dtype = dtype_from_out(dtype, out)
    x = _to_complex(tensor_arg(x, op), dtype)
    if x.dtype.is_complex:
        if op == "sum":
            return complex.reduce(sum, x, dim, keepdim, dtype, out, op)
        return complex.prod(x, dim, keepdim, dtype, out)
    keepdim = keepdim_arg(keepdim, op)
    target = _sum_dtype(x, dtype)
    acc = _acc(target)
    axes = reduce_axes(x, dim, op)
    return reduce(
        op,
        [x],
        axes,
        keepdim,
        prologue=lambda a: cast_to(cast_to(a, target), acc),
        epilogues=[casting(target)],
        key=("cast_sum", target),
        out=out1(out),
        name=f"{op}_{x.dtype}_to_{target}",
    )[0]


@fastpath.keyed
def sum(
    input: Tensor, dim=None, keepdim: bool = False, *, dtype: DType | None = None, out=None
) -> Tensor:
    """Sum over dim (all by default); floats accumulate in float64 (float32 values with a
    float32 result in short float32 runs first: ir/reduction.py), integers wrap in int64."""
    return _sum_like("sum", input, dim, keepdim, dtype, out)


@fastpath.keyed
def prod(
    input: Tensor, dim=None, keepdim: bool = False, *, dtype: DType | None = None, out=None
) -> Tensor:
    """Product over dim (all by default), accumulated like sum."""
    return _sum_like("prod", input, dim, keepdim, dtype, out)


@fastpath.keyed
def mean(
    input: Tensor, dim=None, keepdim: bool = False, *, dtype: DType | None = None, out=None
) -> Tensor:
    """Sum / count in one kernel (the division is the epilogue); floating dtypes only."""
    x = tensor_arg(input, "mean")
    if dtype is None and isinstance(out, Tensor) and out.dtype.is_complex:
        dtype = out.dtype if x.dtype.is_floating_point else None  # ints: _float_only's error
    x = _to_complex(x, dtype)
    if x.dtype.is_complex:
        return complex.reduce(mean, x, dim, keepdim, dtype, out, "mean")
    keepdim = keepdim_arg(keepdim, "mean")
    target = _float_only(x, "mean", dtype)
    target = float_from_out(target, out, "mean") if dtype is None else target
    axes = reduce_axes(x, dim, "mean")
    return reduce(
        "sum",
        [x],
        axes,
        keepdim,
        prologue=lambda a: cast_to(cast_to(a, target), float64),
        epilogues=[lambda r: cast_to(binop("div", r, scalar("count")), target)],
        key=("mean", target),
        scalars={"count": float(reduced_count(x.shape, axes))},
        out=out1(out),
        name=f"mean_{x.dtype}_to_{target}",
    )[0]


# ---- extremes --------------------------------------------------------------------------------


def _extreme(op: str, x: Tensor, dim, keepdim, out) -> Tensor:
    x = tensor_arg(x, op)
    keepdim = keepdim_arg(keepdim, op)
    base = "max" if op in ("max", "amax") else "min"
    axes = reduce_axes(x, dim, op)
    nonempty(x, axes, op, not all_dims(dim))
    return reduce(base, [x], axes, keepdim, out=out1(out), name=f"{op}_{x.dtype}")[0]


@fastpath.keyed
def amax(input: Tensor, dim=(), keepdim: bool = False, *, out=None) -> Tensor:
    """Largest value over dim (all when empty); NaN propagates."""
    return _extreme("amax", input, dim, keepdim, out)


@fastpath.keyed
def amin(input: Tensor, dim=(), keepdim: bool = False, *, out=None) -> Tensor:
    """Smallest value over dim (all when empty); NaN propagates."""
    return _extreme("amin", input, dim, keepdim, out)


def _values_indices(op: str, x: Tensor, dim, keepdim, out) -> ValuesIndices:
    arg = "argmax" if op == "max" else "argmin"
    axes = reduce_axes(x, as_int(dim, "dim"), op)
    nonempty(x, axes, op, True)
    if out is not None and not (isinstance(out, tuple | list) and len(out) == 2):
        raise TypeError(f"{op}(): out must be a (values, indices) pair of tensors")
    values, indices = reduce(
        arg,
        [x],
        axes,
        keepdim,
        epilogues=[lambda v, i: v, lambda v, i: i],
        key=("pair",),
        out=out,
        name=f"{op}_dim_{x.dtype}",
    )
    return ValuesIndices(values, indices)


def _max_or_min(op: str, x, dim, keepdim, out):
    x = tensor_arg(x, op)
    if isinstance(dim, Tensor):
        return binary("maximum" if op == "max" else "minimum", x, dim, out=out)
    keepdim = keepdim_arg(keepdim, op)
    if dim is None:
        if keepdim:
            raise TypeError(f"{op}(): keepdim needs a dim")
        return _extreme(op, x, None, False, out)
    return _values_indices(op, x, dim, keepdim, out)


def max(input: Tensor, dim=None, keepdim: bool = False, *, out=None) -> Tensor | ValuesIndices:
    """max(t): the largest value; max(t, dim): (values, indices); max(a, b): maximum."""
    return _max_or_min("max", input, dim, keepdim, out)


def min(input: Tensor, dim=None, keepdim: bool = False, *, out=None) -> Tensor | ValuesIndices:
    """min(t): the smallest value; min(t, dim): (values, indices); min(a, b): minimum."""
    return _max_or_min("min", input, dim, keepdim, out)


def _arg(op: str, x, dim, keepdim, out) -> Tensor:
    x = tensor_arg(x, op)
    keepdim = keepdim_arg(keepdim, op)
    if x.dtype.is_bool:
        raise TypeError(f"{op}(): does not support bool input")
    if isinstance(dim, tuple | list):
        raise TypeError(f"{op}(): dim must be an int or None, got {type(dim).__name__}")
    axes = reduce_axes(x, None if dim is None else as_int(dim, "dim"), op)
    if dim is None and x.numel() == 0:
        shape = format_shape(x.shape)
        raise IndexError(f"{op} of an empty dimension in shape {shape} has no result")
    nonempty(x, axes, op, True)
    # With dim None and keepdim, every dim stays as size 1, as in torch.
    return reduce(
        op,
        [x],
        axes,
        keepdim,
        epilogues=[lambda v, i: i],
        key=("index",),
        out=out1(out),
        name=f"{op}_{x.dtype}",
    )[0]


@fastpath.keyed
def argmax(input: Tensor, dim=None, keepdim: bool = False, *, out=None) -> Tensor:
    """Index of the largest value (of the flattened tensor when dim is None).

    Ties take the first index; the first NaN wins.
    """
    return _arg("argmax", input, dim, keepdim, out)


@fastpath.keyed
def argmin(input: Tensor, dim=None, keepdim: bool = False, *, out=None) -> Tensor:
    """Index of the smallest value; ties take the first index, the first NaN wins."""
    return _arg("argmin", input, dim, keepdim, out)


# ---- logic and counting ----------------------------------------------------------------------


def _logic(op: str, x, dim, keepdim, out) -> Tensor:
    x = tensor_arg(x, op)
    keepdim = keepdim_arg(keepdim, op)
    if x.dtype.is_complex:  # nonzero where either part is, as count_nonzero reads it
        x = binary("ne", x, 0)
    # PyTorch keeps uint8 for uint8 inputs (its masks before bool existed), bool otherwise;
    # an out= of either dtype takes the truth values in its own.
    dtype = uint8 if x.dtype is uint8 else bool_
    if isinstance(out, Tensor) and out.dtype is not dtype:
        if out.dtype not in (bool_, uint8):
            raise TypeError(f"{op}(): out must be a bool or uint8 tensor, got {out.dtype}")
        dtype = out.dtype
    if isinstance(dim, tuple | list) and not dim:
        # PyTorch 2.13 reduces over no dim here (every other reduction takes () as all).
        result = output(out, x.shape, dtype, x.device, op)
        eager.copy_into(result._impl, unaliased(x._impl, result._impl))
        return result
    axes = reduce_axes(x, dim, op)
    return reduce(
        op,
        [x],
        axes,
        keepdim,
        prologue=lambda a: cast_to(a, bool_),
        epilogues=(lambda r: cast_to(r, dtype),),
        key=("truth", dtype),
        out=out1(out),
        name=f"{op}_{x.dtype}",
    )[0]


@fastpath.keyed
def all(input: Tensor, dim=None, keepdim: bool = False, *, out=None) -> Tensor:
    """Whether every element is nonzero (NaN counts as nonzero); true when empty."""
    return _logic("all", input, dim, keepdim, out)


@fastpath.keyed
def any(input: Tensor, dim=None, keepdim: bool = False, *, out=None) -> Tensor:
    """Whether some element is nonzero (NaN counts as nonzero); false when empty."""
    return _logic("any", input, dim, keepdim, out)


def count_nonzero(input: Tensor, dim=None, *, out=None) -> Tensor:
    """How many elements are nonzero, over dim (all by default), as int64: one kernel."""
    x = tensor_arg(input, "count_nonzero")
    if x.dtype.is_complex:  # nonzero where either part is
        x = binary("ne", x, 0)
    axes = reduce_axes(x, dim, "count_nonzero")
    return reduce(
        "sum",
        [x],
        axes,
        False,
        prologue=nonzero_count,
        key=("count_nonzero",),
        out=out1(out),
        name=f"count_nonzero_{x.dtype}",
    )[0]


# ---- NaN-skipping sums and paired results ----------------------------------------------------


def _without_nan(a: g.Node) -> g.Node:
    """a with NaN as 0 (the neutral element of the sum)."""
    return g.Where(a.dtype, (), g.Unary(bool_, (), "isnan", a), g.Const(a.dtype, (), 0), a)


def nansum(
    input: Tensor, dim=None, keepdim: bool = False, *, dtype: DType | None = None, out=None
) -> Tensor:
    """sum with NaN counted as 0 (integers: sum)."""
    x = tensor_arg(input, "nansum")
    if x.dtype.is_complex:  # as PyTorch's CPU nansum
        raise TypeError(f"nansum does not support complex inputs, got {x.dtype}")
    into = out.dtype if dtype is None and isinstance(out, Tensor) else None
    if into is not None and x.dtype.is_floating_point and not into.is_floating_point:
        # torch's nansum kernel refuses the dtype it would read from out
        raise TypeError(f"nansum(): a {x.dtype} input has no sum into a {into} out")
    dtype = dtype_from_out(dtype, out)
    if not x.dtype.is_floating_point:
        return sum(x, dim, keepdim, dtype=dtype, out=out)
    keepdim = keepdim_arg(keepdim, "nansum")
    target = _sum_dtype(x, dtype)
    axes = reduce_axes(x, dim, "nansum")
    return reduce(
        "sum",
        [x],
        axes,
        keepdim,
        prologue=lambda a: cast_to(cast_to(_without_nan(a), target), float64),
        epilogues=[casting(target)],
        key=("nansum", target),
        out=out1(out),
        name=f"nansum_{x.dtype}_to_{target}",
    )[0]


def nanmean(
    input: Tensor, dim=None, keepdim: bool = False, *, dtype: DType | None = None, out=None
) -> Tensor:
    """The mean of the values that are not NaN (NaN where there are none)."""
    x = tensor_arg(input, "nanmean")
    target = _float_only(x, "nanmean", dtype)
    target = float_from_out(target, out, "nanmean") if dtype is None else target
    total = nansum(x, dim, keepdim, dtype=target)
    counts = sum(binary("eq", x, x), dim, keepdim)  # NaN alone is not equal to itself
    result = binary("div", total, counts).to(target)
    if out is None:
        return result
    return output(out, result.shape, target, result.device, "nanmean").copy_(result)


class MinMax(NamedTuple):
    """aminmax's result, as PyTorch names its fields."""

    min: Tensor
    max: Tensor


def aminmax(input: Tensor, *, dim=None, keepdim: bool = False) -> MinMax:
    """(amin, amax) over dim (all by default); NaN propagates."""
    axes = () if dim is None else dim
    return MinMax(amin(input, axes, keepdim), amax(input, axes, keepdim))


def _with_mean(op: Callable, name: str) -> Callable:
    def with_mean(
        input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None
    ):
        if type(dim) is bool and unbiased is None:  # torch's (input, unbiased) form
            dim, unbiased = None, dim
        spread = op(input, dim, unbiased, keepdim, correction=correction)
        return spread, mean(input, dim, keepdim)

    with_mean.__name__ = with_mean.__qualname__ = name
    with_mean.__doc__ = (
        f"({op.__name__}, mean) over dim, as torch.{name}; the mean is mean()'s (an infinite"
        " element gives an infinite mean, where torch's Welford pass may give NaN)."
    )
    return with_mean


std_mean = _with_mean(std, "std_mean")
var_mean = _with_mean(var, "var_mean")


# kael.NAME for each entry; also Tensor.NAME unless the name is in NOT_METHODS.
# The reductions whose public function and method are fastpath.keyed's door itself.
FAST = (
    "sum", "prod", "mean", "amax", "amin", "argmax", "argmin", "all", "any", "max", "min",
    "norm", "var", "std",
)  # fmt: skip
# The FAST ops whose calls make several launches the door may keep as one chain: var and
# std's float32 mean then deviations (moments._variance: nothing else writes their result;
# float64's flagged pass never offers its launch, so it is never remembered).
STEPS = {"var": 2, "std": 2}
FUNCTIONS: dict[str, Callable] = {
    f.__name__: f
    for f in (
        sum, prod, mean, var, std, max, min, amax, amin, argmax, argmin, all, any, norm,
        count_nonzero, nansum, nanmean, aminmax, std_mean, var_mean,
    )
}  # fmt: skip
# Tensor-only methods (in-place variants, operators).
METHODS: dict[str, Callable] = {}
NOT_METHODS: frozenset[str] = frozenset({"std_mean", "var_mean"})
