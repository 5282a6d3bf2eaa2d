"""Reductions: sum, prod, mean, var, std, max, min, amax, amin, argmax, argmin, all, any,
norm and count_nonzero, each one Reduction kernel per pass with its elementwise prologue
and epilogue fused (kael/ir/reduction.py). `reduce` is the internal door other op
families use (the softmax family: amax, sum with keepdim, a fused sum(exp(x - m)))."""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

from kael.frontend import eager
from kael.frontend.elementwise import binary, broadcast_shapes
from kael.frontend.outputs import bool_arg, output, scalar_arg, tensor_arg, unaliased
from kael.frontend.tensor import Tensor, empty_impl
from kael.frontend.views import as_int, broadcast_view, wrap_dim
from kael.ir import graph as g
from kael.ir.reduction import ARG_OPS, OPS
from kael.runtime.dtypes import DType, as_dtype, bool_, float64, int64
from kael.runtime.errors import Error, IndexError, TypeError, ValueError
from kael.runtime.tensor_impl import format_shape

Build = Callable[..., g.Node]


class ValuesIndices(NamedTuple):
    """What max(t, dim) and min(t, dim) return, as torch.return_types.max does."""

    values: Tensor
    indices: Tensor


# ---- the internal door -----------------------------------------------------------------------


def reduce_axes(x: Tensor, dim, op: str) -> tuple[int, ...]:
    """dim (None, an int, or a tuple or list of ints; empty means all) as sorted axes of x.

    A 0-d tensor accepts 0 and -1 and has nothing to reduce; a repeated dim is a ValueError.
    """
    if dim is None:
        return tuple(range(x.ndim))
    dims = (dim,) if not isinstance(dim, tuple | list) else tuple(dim)
    if not dims:
        return tuple(range(x.ndim))
    axes: list[int] = []
    for d in dims:
        try:
            a = wrap_dim(d, x.ndim)
        except IndexError as e:
            raise IndexError(f"{op}: {e} for a tensor of rank {x.ndim}") from None
        if a in axes:
            raise ValueError(f"{op}: dimension {a} appears more than once in reduction")
        axes.append(a)
    return tuple(sorted(axes)) if x.ndim else ()


def reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdim: bool) -> tuple[int, ...]:
    if keepdim:
        return tuple(1 if d in axes else s for d, s in enumerate(shape))
    return tuple(s for d, s in enumerate(shape) if d not in axes)


def _identity(*nodes: g.Node) -> g.Node:
    return nodes[0]


def reduce(
    op: str,
    inputs: Sequence[Tensor],
    axes: tuple[int, ...],
    keepdim: bool = False,
    *,
    prologue: Build = _identity,
    epilogues: Sequence[Build] = (_identity,),
    key: tuple = (),
    scalars: dict | None = None,
    out: Sequence[Tensor | None] | None = None,
    name: str = "",
) -> list[Tensor]:
    """Reduce `prologue(*inputs)` with `op` over `axes` of the inputs' broadcast shape.

    `prologue` gets one shape-() graph node per input and returns the per-element value
    (its dtype is the accumulator's). Each epilogue gets the reduced value node (for
    argmax/argmin: the value and the int64 index nodes) and returns an output node.
    Scalars named by g.Scalar nodes come from `scalars`. `key` must identify what the
    callables build (they run once per key and input dtypes). One launch per call.
    """
    if op not in OPS:
        raise ValueError(f"unknown reduction '{op}', expected one of {', '.join(OPS)}")
    custom = prologue is not _identity or builtins.any(f is not _identity for f in epilogues)
    if custom and not key:
        raise ValueError(f"reduce('{op}'): a custom prologue or epilogue needs a key naming it")
    device = inputs[0].device
    for t in inputs[1:]:
        if t.device is not device:
            raise Error(
                f"{op}: expected all tensors on one device, but found {device} and {t.device}"
            )
    shape = broadcast_shapes(*(t.shape for t in inputs))
    dtypes = tuple(t.dtype for t in inputs)

    def build():
        leaves = [g.Input(d, (), f"x{i}") for i, d in enumerate(dtypes)]
        x = prologue(*leaves)
        if op in ARG_OPS:
            value = g.Reduce(x.dtype, (), ARG_OPS[op], x, axes)
            index = g.Reduce(int64, (), op, x, axes)
            outs = [f(value, index) for f in epilogues]
        else:
            r = g.Reduce(x.dtype, (), op, x, axes)
            outs = [f(r) for f in epilogues]
        return name or f"{op}_{'_'.join(d.name for d in dtypes)}", outs

    entry = eager.reduction_template(("reduce", op, key, dtypes, len(epilogues)), build)
    kernel = entry.kernel
    result_shape = reduced_shape(shape, axes, keepdim)
    outs = list(out) if out is not None else [None] * len(kernel.outputs)
    results = [
        output(o, result_shape, buf.dtype, device, name or op)
        for o, buf in zip(outs, kernel.outputs)
    ]
    ins = [broadcast_view(t._impl, shape) for t in inputs]
    storages = {id(t._impl.storage) for t in inputs}
    # An out= sharing memory with an input is written only after the kernel has read it.
    targets = [
        Tensor(empty_impl(r.shape, r.dtype, device)) if id(r._impl.storage) in storages else r
        for r in results
    ]
    eager.run_reduction(entry, [r._impl for r in targets], ins, axes, keepdim, scalars)
    for r, t in zip(results, targets):
        if r is not t:
            eager.copy_into(r._impl, t._impl)
    return results


def reduced_count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    n = 1
    for a in axes:
        n *= shape[a]
    return n


# ---- graph helpers ---------------------------------------------------------------------------


def _cast(x: g.Node, dtype: DType) -> g.Node:
    return x if x.dtype is dtype else g.Cast(dtype, (), x)


def _bin(op: str, a: g.Node, b: g.Node) -> g.Node:
    dtype = bool_ if op in ("ne", "eq") else a.dtype
    return g.Binary(dtype, (), op, a, b)


def _un(op: str, x: g.Node) -> g.Node:
    return g.Unary(x.dtype, (), op, x)


def _scalar(name: str) -> g.Node:
    return g.Scalar(float64, (), name)


def _casting(dtype: DType) -> Build:
    return lambda r: _cast(r, dtype)


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


def keepdim_arg(keepdim, op: str) -> bool:
    """keepdim as a bool; kael.TypeError for anything else (an int, a string), as in torch."""
    return bool_arg(keepdim, op, "keepdim")


def _all_dims(dim) -> bool:
    """Whether dim names no dim in particular: None, or an empty tuple or list."""
    return dim is None or (isinstance(dim, tuple | list) and not dim)


def _nonempty(x: Tensor, axes: tuple[int, ...], op: str, dim_given: bool) -> None:
    """max, min and their arg forms have no identity: an empty reduced dim has no result.

    Without a dim (the whole tensor) this is a kael.Error, with one a kael.IndexError,
    as in PyTorch.
    """
    empty = [a for a in axes if x.shape[a] == 0]
    if not empty:
        return
    shape = format_shape(x.shape)
    if not dim_given:
        raise Error(f"{op} of an empty dimension in shape {shape} has no result")
    raise IndexError(f"{op} of an empty dimension (dim {empty[0]}) in shape {shape} has no result")


def _out1(out) -> list | None:
    return None if out is None else [out]


# ---- sums and products -----------------------------------------------------------------------


def _sum_like(op: str, x, dim, keepdim, dtype, out) -> Tensor:
    x = tensor_arg(x, op)
    keepdim = keepdim_arg(keepdim, op)
    target = _sum_dtype(x, dtype)
    acc = _acc(target)
    axes = reduce_axes(x, dim, op)
    return reduce(
        op,
        [x],
        axes,
        keepdim,
        prologue=lambda a: _cast(_cast(a, target), acc),
        epilogues=[_casting(target)],
        key=("cast_sum", target),
        out=_out1(out),
        name=f"{op}_{x.dtype}_to_{target}",
    )[0]


def sum(
    input: Tensor, dim=None, keepdim: bool = False, *, dtype: DType | None = None, out=None
) -> Tensor:
    """Sum over dim (all by default); floats accumulate in float64, integers wrap in int64."""
    return _sum_like("sum", input, dim, keepdim, dtype, out)


def prod(
    input: Tensor, dim=None, keepdim: bool = False, *, dtype: DType | None = None, out=None
) -> Tensor:
    """Product over dim (all by default), accumulated like sum."""
    return _sum_like("prod", input, dim, keepdim, dtype, out)


def mean(
    input: Tensor, dim=None, keepdim: bool = False, *, dtype: DType | None = None, out=None
) -> Tensor:
    """Sum / count in one kernel (the division is the epilogue); floating dtypes only."""
    x = tensor_arg(input, "mean")
    keepdim = keepdim_arg(keepdim, "mean")
    target = _float_only(x, "mean", dtype)
    axes = reduce_axes(x, dim, "mean")
    return reduce(
        "sum",
        [x],
        axes,
        keepdim,
        prologue=lambda a: _cast(_cast(a, target), float64),
        epilogues=[lambda r: _cast(_bin("div", r, _scalar("count")), target)],
        key=("mean", target),
        scalars={"count": float(reduced_count(x.shape, axes))},
        out=_out1(out),
        name=f"mean_{x.dtype}_to_{target}",
    )[0]


def _variance(op: str, x, dim, correction, keepdim, out) -> Tensor:
    """Two passes: the float64 mean, then sum((x - mean)^2) / max(N - correction, 0)."""
    x = tensor_arg(x, op)
    keepdim = keepdim_arg(keepdim, op)
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}(): std and var only support floating point dtypes, got {x.dtype}")
    correction = scalar_arg(correction, op, "correction")
    axes = reduce_axes(x, dim, op)
    n = reduced_count(x.shape, axes)
    (m,) = reduce(
        "sum",
        [x],
        axes,
        True,
        prologue=lambda a: _cast(a, float64),
        epilogues=[lambda r: _bin("div", r, _scalar("count"))],
        key=("mean64",),
        scalars={"count": float(n)},
        name=f"mean64_{x.dtype}",
    )

    def square(a, mu):
        d = _bin("sub", _cast(a, float64), mu)
        return _bin("mul", d, d)

    def finish(r):
        v = _bin("div", r, _scalar("divisor"))
        return _cast(_un("sqrt", v) if op == "std" else v, x.dtype)

    return reduce(
        "sum",
        [x, m],
        axes,
        keepdim,
        prologue=square,
        epilogues=[finish],
        key=(op,),
        scalars={"divisor": float(builtins.max(n - correction, 0))},
        out=_out1(out),
        name=f"{op}_{x.dtype}",
    )[0]


def _unbiased(op: str, dim, unbiased, correction) -> tuple:
    """(dim, correction) from torch's call forms: var(t, True), var(t, dim, unbiased, keepdim)
    and correction=; unbiased and correction together are refused, as in torch."""
    if isinstance(dim, bool):  # var(t, False): the legacy (input, unbiased) overload
        if unbiased is not None:
            raise TypeError(f"{op}(): unbiased given twice ({dim} and {unbiased})")
        dim, unbiased = None, dim
    if unbiased is None:
        return dim, 1 if correction is None else correction
    if correction is not None:
        raise TypeError(f"{op}(): pass unbiased={unbiased} or correction={correction}, not both")
    if not isinstance(unbiased, bool):
        raise TypeError(f"{op}(): unbiased must be a bool, got {type(unbiased).__name__}")
    return dim, int(unbiased)


def var(
    input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None, out=None
) -> Tensor:
    """Variance with `correction` (default 1; unbiased=False is 0), two-pass so a large mean
    loses nothing."""
    dim, correction = _unbiased("var", dim, unbiased, correction)
    return _variance("var", input, dim, correction, keepdim, out)


def std(
    input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None, out=None
) -> Tensor:
    """sqrt(var): the square root is the second pass's epilogue."""
    dim, correction = _unbiased("std", dim, unbiased, correction)
    return _variance("std", input, dim, correction, keepdim, out)


# ---- extremes --------------------------------------------------------------------------------


def _extreme(op: str, x: Tensor, dim, keepdim, out) -> Tensor:
    x = tensor_arg(x, op)
    keepdim = keepdim_arg(keepdim, op)
    base = "max" if op in ("max", "amax") else "min"
    axes = reduce_axes(x, dim, op)
    _nonempty(x, axes, op, not _all_dims(dim))
    return reduce(base, [x], axes, keepdim, out=_out1(out), name=f"{op}_{x.dtype}")[0]


def amax(input: Tensor, dim=(), keepdim: bool = False, *, out=None) -> Tensor:
    """Largest value over dim (all when empty); NaN propagates."""
    return _extreme("amax", input, dim, keepdim, out)


def amin(input: Tensor, dim=(), keepdim: bool = False, *, out=None) -> Tensor:
    """Smallest value over dim (all when empty); NaN propagates."""
    return _extreme("amin", input, dim, keepdim, out)


def _values_indices(op: str, x: Tensor, dim, keepdim, out) -> ValuesIndices:
    arg = "argmax" if op == "max" else "argmin"
    axes = reduce_axes(x, as_int(dim, "dim"), op)
    _nonempty(x, axes, op, True)
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
    _nonempty(x, axes, op, True)
    # With dim None and keepdim, every dim stays as size 1, as in torch.
    return reduce(
        op,
        [x],
        axes,
        keepdim,
        epilogues=[lambda v, i: i],
        key=("index",),
        out=_out1(out),
        name=f"{op}_{x.dtype}",
    )[0]


def argmax(input: Tensor, dim=None, keepdim: bool = False, *, out=None) -> Tensor:
    """Index of the largest value (of the flattened tensor when dim is None).

    Ties take the first index; the first NaN wins.
    """
    return _arg("argmax", input, dim, keepdim, out)


def argmin(input: Tensor, dim=None, keepdim: bool = False, *, out=None) -> Tensor:
    """Index of the smallest value; ties take the first index, the first NaN wins."""
    return _arg("argmin", input, dim, keepdim, out)


# ---- logic and counting ----------------------------------------------------------------------


def _logic(op: str, x, dim, keepdim, out) -> Tensor:
    x = tensor_arg(x, op)
    keepdim = keepdim_arg(keepdim, op)
    if isinstance(dim, tuple | list) and not dim:
        # PyTorch 2.13 reduces over no dim here (every other reduction takes () as all).
        result = output(out, x.shape, bool_, x.device, op)
        eager.copy_into(result._impl, unaliased(x._impl, result._impl))
        return result
    axes = reduce_axes(x, dim, op)
    return reduce(
        op,
        [x],
        axes,
        keepdim,
        prologue=lambda a: _cast(a, bool_),
        key=("truth",),
        out=_out1(out),
        name=f"{op}_{x.dtype}",
    )[0]


def all(input: Tensor, dim=None, keepdim: bool = False, *, out=None) -> Tensor:
    """Whether every element is nonzero (NaN counts as nonzero); true when empty."""
    return _logic("all", input, dim, keepdim, out)


def any(input: Tensor, dim=None, keepdim: bool = False, *, out=None) -> Tensor:
    """Whether some element is nonzero (NaN counts as nonzero); false when empty."""
    return _logic("any", input, dim, keepdim, out)


def _nonzero_count(a: g.Node) -> g.Node:
    return _cast(_bin("ne", a, g.Const(a.dtype, (), False if a.dtype.is_bool else 0)), int64)


def count_nonzero(input: Tensor, dim=None, *, out=None) -> Tensor:
    """How many elements are nonzero, over dim (all by default), as int64: one kernel."""
    x = tensor_arg(input, "count_nonzero")
    axes = reduce_axes(x, dim, "count_nonzero")
    return reduce(
        "sum",
        [x],
        axes,
        False,
        prologue=_nonzero_count,
        key=("count_nonzero",),
        out=_out1(out),
        name=f"count_nonzero_{x.dtype}",
    )[0]


# ---- norms -----------------------------------------------------------------------------------


def _norm_order(p) -> float:
    if isinstance(p, str):
        if p != "fro":
            raise TypeError(f"norm(): p must be a number or 'fro', got {p!r}")
        return 2.0
    return float(scalar_arg(p, "norm", "p"))


def norm(input: Tensor, p=2, dim=None, keepdim: bool = False, *, out=None) -> Tensor:
    """The vector p-norm over dim (all by default): one kernel, the root in its epilogue.

    p = 2 sums squares, 1 sums magnitudes, inf / -inf take the largest / smallest
    magnitude, 0 counts nonzeros, any other p is sum(|x|^p)^(1/p).
    """
    x = tensor_arg(input, "norm")
    keepdim = keepdim_arg(keepdim, "norm")
    if not x.dtype.is_floating_point:
        raise TypeError(f"norm(): expected a floating point tensor as input, got {x.dtype}")
    order = _norm_order(p)
    axes = reduce_axes(x, dim, "norm")
    dt = x.dtype

    def magnitude(a):
        return _un("abs", _cast(a, float64))

    op, kind, scalars = "sum", "p", {"p": order, "inv": 1.0 / order if order else 0.0}
    if order == 2.0:
        kind = "2"
        prologue = lambda a: _bin("mul", _cast(a, float64), _cast(a, float64))  # noqa: E731
        epilogue = lambda r: _cast(_un("sqrt", r), dt)  # noqa: E731
    elif order == 1.0:
        kind, prologue, epilogue = "1", magnitude, _casting(dt)
    elif order == 0.0:
        kind, epilogue = "0", _casting(dt)
        prologue = lambda a: _cast(_nonzero_count(a), float64)  # noqa: E731
    elif math.isinf(order):
        op, kind = ("max", "inf") if order > 0 else ("min", "-inf")
        prologue = lambda a: _un("abs", a)  # noqa: E731
        epilogue = _identity
        _nonempty(x, axes, "norm", not _all_dims(dim))
    else:
        prologue = lambda a: _bin("pow", magnitude(a), _scalar("p"))  # noqa: E731
        epilogue = lambda r: _cast(_bin("pow", r, _scalar("inv")), dt)  # noqa: E731
    return reduce(
        op,
        [x],
        axes,
        keepdim,
        prologue=prologue,
        epilogues=[epilogue],
        key=("norm", kind),
        scalars=scalars if kind == "p" else None,
        out=_out1(out),
        name=f"norm{kind.replace('-', 'neg')}_{dt}",
    )[0]


# kael.NAME for each entry; also Tensor.NAME unless the name is in NOT_METHODS.
FUNCTIONS: dict[str, Callable] = {
    f.__name__: f
    for f in (
        sum, prod, mean, var, std, max, min, amax, amin, argmax, argmin, all, any, norm,
        count_nonzero,
    )
}  # fmt: skip
# Tensor-only methods (in-place variants, operators).
METHODS: dict[str, Callable] = {}
NOT_METHODS: frozenset[str] = frozenset()
