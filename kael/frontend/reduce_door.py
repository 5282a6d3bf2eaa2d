"""The internal door of every reduction: `reduce` launches one Reduction kernel (kael/ir/
reduction.py) with its elementwise prologue and epilogues fused, over the inputs' broadcast
shape. The reduction families (reductions.py, moments.py) and other op families (the
softmax family: amax, sum with keepdim, a fused sum(exp(x - m))) build on it, with the
dims, shapes and graph helpers below."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence

from kael.frontend import eager, fastpath
from kael.frontend.elementwise import broadcast_shapes
from kael.frontend.outputs import bool_arg, device_of, output
from kael.frontend.tensor import Tensor, empty_impl
from kael.frontend.views import broadcast_view, wrap_dim
from kael.ir import graph as g
from kael.ir.reduction import ARG_OPS, OPS
from kael.runtime.dtypes import DType, bool_, float64, int64
from kael.runtime.errors import Error, IndexError, ValueError
from kael.runtime.tensor_impl import format_shape

Build = Callable[..., g.Node]


# ---- dims and shapes -------------------------------------------------------------------------


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


def identity(*nodes: g.Node) -> g.Node:
    return nodes[0]


class Results(list):
    """reduce's results, a list of tensors, with `flagged`: whether an epilogue's "flag" op
    saw a true value for some output."""

    flagged: bool = False


def reduce(
    op: str,
    inputs: Sequence[Tensor],
    axes: tuple[int, ...],
    keepdim: bool = False,
    *,
    prologue: Build = identity,
    epilogues: Sequence[Build] = (identity,),
    key: tuple = (),
    scalars: dict | None = None,
    out: Sequence[Tensor | None] | None = None,
    name: str = "",
) -> Results:
    """Reduce `prologue(*inputs)` with `op` over `axes` of the inputs' broadcast shape.

    `prologue` gets one shape-() graph node per input and returns the per-element value
    (its dtype is the accumulator's), or for a sum a pair of values of one dtype, summed
    side by side in one pass. Each epilogue gets the reduced value node (for argmax/argmin:
    the value and the int64 index nodes; for a pair, both sums) and returns an output node.
    Scalars named by g.Scalar nodes come from `scalars`. `key` must identify what the
    callables build (they run once per key and input dtypes). One launch per call.
    Returns the results, flagged where an epilogue's "flag" op saw a true value.
    """
    if op not in OPS:
        raise ValueError(f"unknown reduction '{op}', expected one of {', '.join(OPS)}")
    custom = prologue is not identity or builtins.any(f is not identity for f in epilogues)
    if custom and not key:
        raise ValueError(f"reduce('{op}'): a custom prologue or epilogue needs a key naming it")
    device = device_of(inputs, op, cpu_scalars=0)
    shape = broadcast_shapes(*(t.shape for t in inputs))
    dtypes = tuple(t.dtype for t in inputs)

    def build():
        leaves = [g.Input(d, (), f"x{i}") for i, d in enumerate(dtypes)]
        x = prologue(*leaves)
        if op in ARG_OPS:
            value = g.Reduce(x.dtype, (), ARG_OPS[op], x, axes)
            index = g.Reduce(int64, (), op, x, axes)
            outs = [f(value, index) for f in epilogues]
        elif isinstance(x, tuple):
            sums = [g.Reduce(v.dtype, (), op, v, axes) for v in x]
            outs = [f(*sums) for f in epilogues]
        else:
            r = g.Reduce(x.dtype, (), op, x, axes)
            outs = [f(r) for f in epilogues]
        return name or f"{op}_{'_'.join(d.name for d in dtypes)}", outs

    entry = eager.reduction_template(("reduce", op, key, dtypes, len(epilogues)), build)
    kernel = entry.kernel
    result_shape = reduced_shape(shape, axes, keepdim)
    outs = list(out) if out is not None else [None] * len(kernel.outputs)
    results = Results(
        [
            output(o, result_shape, buf.dtype, device, name or op, reads=inputs)
            for o, buf in zip(outs, kernel.outputs)
        ]
    )
    ins = [broadcast_view(t._impl, shape) for t in inputs]
    storages = {id(t._impl.storage) for t in inputs}
    # An out= sharing memory with an input is written only after the kernel has read it.
    targets = [
        Tensor(empty_impl(r.shape, r.dtype, device)) if id(r._impl.storage) in storages else r
        for r in results
    ]
    impls = [r._impl for r in targets]
    flagged = eager.run_reduction(entry, impls, ins, axes, keepdim, scalars)
    if not flagged and targets[0] is results[0]:
        fastpath.capture(entry, impls, ins, axes, keepdim, scalars)
    for r, t in zip(results, targets):
        if r is not t:
            eager.copy_into(r._impl, t._impl)
    if flagged:
        results.flagged = True
    return results


def reduced_count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    n = 1
    for a in axes:
        n *= shape[a]
    return n


# ---- graph helpers ---------------------------------------------------------------------------


def cast_to(x: g.Node, dtype: DType) -> g.Node:
    return x if x.dtype is dtype else g.Cast(dtype, (), x)


def binop(op: str, a: g.Node, b: g.Node) -> g.Node:
    dtype = bool_ if op in ("ne", "eq") else a.dtype
    return g.Binary(dtype, (), op, a, b)


def unop(op: str, x: g.Node) -> g.Node:
    return g.Unary(x.dtype, (), op, x)


def scalar(name: str) -> g.Node:
    return g.Scalar(float64, (), name)


def casting(dtype: DType) -> Build:
    return lambda r: cast_to(r, dtype)


def nonzero_count(a: g.Node) -> g.Node:
    return cast_to(binop("ne", a, g.Const(a.dtype, (), False if a.dtype.is_bool else 0)), int64)


# ---- arguments -------------------------------------------------------------------------------


def keepdim_arg(keepdim, op: str) -> bool:
    """keepdim as a bool; kael.TypeError for anything else (an int, a string), as in torch."""
    return bool_arg(keepdim, op, "keepdim")


def all_dims(dim) -> bool:
    """Whether dim names no dim in particular: None, or an empty tuple or list."""
    return dim is None or (isinstance(dim, tuple | list) and not dim)


def nonempty(x: Tensor, axes: tuple[int, ...], op: str, dim_given: bool) -> None:
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


def out1(out) -> list | None:
    return None if out is None else [out]
