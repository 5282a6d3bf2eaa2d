"""NumPy-style joins, flips, rotations and differences, as PyTorch spells them, built from
kael's cat, flip, transpose, narrow and elementwise ops (so they run where those do):
hstack, vstack (row_stack), column_stack, dstack, fliplr, flipud, rot90 and diff; and the
matrices built from vectors: block_diag, cartesian_prod, combinations (from meshgrid,
masked_select and stack), vander (cumprod) and diagflat (diag)."""

from __future__ import annotations

import math
from collections.abc import Callable

from kael.frontend import elementwise as ew
from kael.frontend import factories, views
from kael.frontend.index_ops import _tensor_list, cat, stack
from kael.frontend.order_statistics import masked_select
from kael.frontend.outputs import bool_arg, copied_out, tensor_arg
from kael.frontend.sequence import cumprod, flip
from kael.frontend.shapes import _at_least, diag, meshgrid
from kael.frontend.tensor import Tensor
from kael.runtime.dtypes import bool_, int64, promote_types, result_type
from kael.runtime.errors import TypeError, ValueError
from kael.runtime.tensor_impl import format_shape

_atleast_1d, _atleast_2d, _atleast_3d = _at_least(1), _at_least(2), _at_least(3)

# ---- the stacks ------------------------------------------------------------------------------


def _stack(name: str, layout: Callable[[list[Tensor]], tuple[list[Tensor], int]]) -> Callable:
    """kael.NAME(tensors, *, out=None): the tensors, laid out by `layout`, joined by cat along
    the dim it gives."""

    def fn(tensors, *, out=None) -> Tensor:
        items = _tensor_list(tensors, name)
        joined, dim = layout(items)
        return copied_out(cat(joined, dim), out, name, cast=True)  # cast as cat's out=

    fn.__name__ = fn.__qualname__ = name
    return fn


def _hstack_layout(items: list[Tensor]) -> tuple[list[Tensor], int]:
    items = list(_atleast_1d(items))
    return items, 0 if items[0].ndim == 1 else 1


def _column(t: Tensor) -> Tensor:
    """A 0-d or 1-d tensor as a column [n, 1]; others as they are."""
    return t.reshape(t.numel(), 1) if t.ndim <= 1 else t


hstack = _stack("hstack", _hstack_layout)
hstack.__doc__ = "1-d tensors (0-d ones as 1-d) joined end to end, others along dim 1."


def _vstack_layout(items: list[Tensor]) -> tuple[list[Tensor], int]:
    return list(_atleast_2d(items)), 0


vstack = _stack("vstack", _vstack_layout)
vstack.__doc__ = "The tensors, each at least 2-d (a vector as a row), joined along dim 0."
row_stack = _stack("row_stack", _vstack_layout)
row_stack.__doc__ = "vstack under its other name."
column_stack = _stack("column_stack", lambda items: ([_column(t) for t in items], 1))
column_stack.__doc__ = "The tensors joined along dim 1, 0-d and 1-d ones as columns."
dstack = _stack("dstack", lambda items: (list(_atleast_3d(items)), 2))
dstack.__doc__ = "The tensors, each at least 3-d (as atleast_3d makes them), joined along dim 2."


# ---- flips and rotations ---------------------------------------------------------------------


def fliplr(input) -> Tensor:
    """A copy with dim 1 reversed (left and right swapped); input must be at least 2-d."""
    x = tensor_arg(input, "fliplr")
    if x.ndim < 2:
        raise ValueError(
            f"fliplr(): input must be >= 2-d, got a {x.ndim}-d tensor of shape "
            f"{format_shape(x.shape)}"
        )
    return flip(x, [1])


def flipud(input) -> Tensor:
    """A copy with dim 0 reversed (up and down swapped); input must be at least 1-d."""
    x = tensor_arg(input, "flipud")
    if x.ndim < 1:
        raise ValueError("flipud(): input must be >= 1-d, got a 0-d tensor")
    return flip(x, [0])


def _int(value, op: str, what: str) -> int:
    """An int argument (a bool is one, as in PyTorch): kael.TypeError for anything else."""
    if isinstance(value, Tensor) or not hasattr(value, "__index__"):
        raise TypeError(f"{op}(): argument '{what}' must be int, not {type(value).__name__}")
    return views.as_int64(value, what)


def rot90(input, k=1, dims=(0, 1)) -> Tensor:
    """input rotated k quarter turns in the plane of dims, from the first dim towards the
    second (k < 0 the other way)."""
    op = "rot90"
    x = tensor_arg(input, op)
    k = _int(k, op, "k")
    if isinstance(dims, Tensor) or not isinstance(dims, (list, tuple)):
        raise TypeError(f"{op}(): dims must be a list or tuple of two ints, got {dims!r}")
    dims = [_int(d, op, "dims") for d in dims]
    if len(dims) != 2:
        raise ValueError(f"{op}(): expected total rotation dims == 2, but got dims = {len(dims)}")
    if x.ndim < 2:
        raise ValueError(f"{op}(): expected total dims >= 2, but got total dims = {x.ndim}")
    d0, d1 = (views.wrap_dim(d, x.ndim) for d in dims)
    if d0 == d1:
        raise ValueError(
            f"{op}(): expected rotation dims to be different, but got dim0 = {dims[0]} and "
            f"dim1 = {dims[1]}"
        )
    turns = k % 4
    if turns == 1:
        return flip(x, [d1]).transpose(d0, d1)
    if turns == 2:
        return flip(x, [d0, d1])
    if turns == 3:
        return flip(x, [d0]).transpose(d0, d1)
    return x.contiguous() if not x.is_contiguous() else x.clone()


# ---- diff ------------------------------------------------------------------------------------


def _edge(t, x: Tensor, dim: int, what: str) -> Tensor | None:
    """prepend or append, checked: a tensor of input's rank and shape outside dim."""
    if t is None:
        return None
    t = tensor_arg(t, "diff", what)
    if t.ndim != x.ndim:
        raise ValueError(
            f"diff(): expects {what} to have the same number of dims as input ({x.ndim}), "
            f"got {t.ndim} (shape {format_shape(t.shape)})"
        )
    for d in range(x.ndim):
        if d != dim and t.shape[d] != x.shape[d]:
            raise ValueError(
                f"diff(): expects the shape of {what} to match input's except along dim {dim}; "
                f"input.size({d}) = {x.shape[d]}, but got {what}.size({d}) = {t.shape[d]}"
            )
    return t


def diff(input, n=1, dim=-1, prepend=None, append=None) -> Tensor:
    """The n-th forward difference along dim (out[i] = x[i + 1] - x[i], n times; != for
    bool), prepend and append joined to input along dim first."""
    op = "diff"
    x = tensor_arg(input, op)
    if x.ndim < 1:
        raise ValueError("diff(): expects input to be at least one-dimensional, got a 0-d tensor")
    n = _int(n, op, "n")
    if n < 0:
        raise ValueError(f"diff(): order must be non-negative but got {n}")
    d = views.wrap_dim(dim, x.ndim)
    edges = [_edge(prepend, x, d, "prepend"), x, _edge(append, x, d, "append")]
    edges = [t for t in edges if t is not None]
    result = cat(edges, d) if len(edges) > 1 else x
    combine = "ne" if result.dtype is bool_ else "sub"
    for _ in range(n):
        length = result.shape[d]
        if length == 0:
            break
        later, earlier = result.narrow(d, 1, length - 1), result.narrow(d, 0, length - 1)
        result = ew.binary(combine, later, earlier)
    return result.clone() if result is x else result


# ---- gradient --------------------------------------------------------------------------------

_GRADIENT = "torch.gradient"


def _gradient_dims(dim) -> list[int] | None:
    """dim as torch.gradient takes it: None, an int or a list of distinct ints."""
    if dim is None:
        return None
    if isinstance(dim, list | tuple):
        return [_strict_int(d, "gradient", "dim") for d in dim]
    return [_strict_int(dim, "gradient", "dim")]


def _gradient_spacing(spacing, op: str) -> list:
    """spacing as a list of scalars or of 1-D coordinate tensors (a bare scalar is one per
    dim, expanded by the caller)."""
    if isinstance(spacing, list | tuple):
        items = list(spacing)
        kinds = {isinstance(s, Tensor) for s in items}
        if len(kinds) > 1 or not all(
            isinstance(s, Tensor) or (isinstance(s, int | float) and not isinstance(s, bool))
            for s in items
        ):
            raise TypeError(
                f"{op}(): argument 'spacing' must be a list of scalars or a list of tensors, "
                f"got {[type(s).__name__ for s in items]}"
            )
        return items
    raise TypeError(
        f"{op}(): argument 'spacing' must be a scalar or a list, not {type(spacing).__name__}"
    )


def _scalar_spacing(spacing):
    """A 0-d tensor spacing as the number it holds (PyTorch's parser reads it as a Number,
    a bool one as 0 or 1); any other spacing as given."""
    if not isinstance(spacing, Tensor) or spacing.ndim != 0:
        return spacing
    value = spacing.item()
    return int(value) if isinstance(value, bool) else value


def _uniform_gradient(x: Tensor, d: int, h, edge_order: int) -> Tensor:
    """PyTorch's gradient_helper_float: central differences over 2h, one-sided at the ends."""
    n = x.shape[d]

    def at(start: int, stop: int) -> Tensor:
        return x.narrow(d, start, stop - start)

    center = ew.binary("div", ew.binary("sub", at(2, n), at(0, n - 2)), h)
    if edge_order == 1:
        first = ew.binary("div", ew.binary("sub", at(1, 2), at(0, 1)), h)
        last = ew.binary("div", ew.binary("sub", at(n - 1, n), at(n - 2, n - 1)), h)
    else:
        first = ew.binary("add", ew.binary("mul", at(0, 1), -1.5), ew.binary("mul", at(1, 2), 2.0))
        first = ew.binary("div", ew.binary("sub", first, ew.binary("mul", at(2, 3), 0.5)), h)
        last = ew.binary("mul", at(n - 3, n - 2), 0.5)
        last = ew.binary("add", last, ew.binary("mul", at(n - 2, n - 1), -2.0))
        last = ew.binary("div", ew.binary("add", last, ew.binary("mul", at(n - 1, n), 1.5)), h)
    return cat([first, ew.binary("div", center, 2), last], d)


def _coordinate_gradient(x: Tensor, d: int, coords: Tensor, edge_order: int) -> Tensor:
    """PyTorch's gradient_helper: second-order differences over uneven coordinates."""
    if coords.ndim != 1:
        raise ValueError(
            f"{_GRADIENT} expected each element of spacing to have one dimension, but got an "
            f"element with {coords.ndim} dimensions!"
        )
    n = x.shape[d]
    if coords.shape[0] != n:
        raise ValueError(
            f"{_GRADIENT} expected the coordinates along dim {d} to have {n} entries (the "
            f"input's size there), got {coords.shape[0]}"
        )
    shape = [1] * x.ndim
    shape[d] = -1
    ax = diff(coords)
    dx1, dx2 = ax.narrow(0, 0, n - 2), ax.narrow(0, 1, n - 2)
    total = dx1 + dx2
    a = (-dx2 / (dx1 * total)).reshape(shape)
    b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
    c = (dx1 / (dx2 * total)).reshape(shape)
    center = a * x.narrow(d, 0, n - 2) + b * x.narrow(d, 1, n - 2) + c * x.narrow(d, 2, n - 2)

    def at(i: int) -> Tensor:
        return x.narrow(d, i, 1)

    h0, h1, hl, hm = ax[0], ax[1 % ax.shape[0]], ax[-1], ax[-2 % ax.shape[0]]
    if edge_order == 1:
        first = (at(1) - at(0)) / h0
        last = (at(n - 1) - at(n - 2)) / hl
    else:
        a = -(2.0 * h0 + h1) / (h0 * (h0 + h1))
        b = (h0 + h1) / (h0 * h1)
        c = -h0 / (h1 * (h0 + h1))
        first = a * at(0) + b * at(1) + c * at(2)
        a = hl / (hm * (hl + hm))
        b = -(hl + hm) / (hl * hm)
        c = (2 * hl + hm) / (hl * (hl + hm))
        last = a * at(n - 3) + b * at(n - 2) + c * at(n - 1)
    return cat([first, center, last], d)


def gradient(input, *, spacing=1, dim=None, edge_order=1) -> tuple[Tensor, ...]:
    """torch.gradient: the derivative along each of dim (every dim by default) by central
    differences inside and one-sided differences of order edge_order (1 or 2) at the ends;
    spacing is one scalar step, a step per dim, or a 1-D coordinate tensor per dim."""
    op = "gradient"
    x = tensor_arg(input, op)
    edge_order = _strict_int(edge_order, op, "edge_order")
    dims = _gradient_dims(dim)
    spacing = _scalar_spacing(spacing)
    if isinstance(spacing, int | float) and not isinstance(spacing, bool):
        steps = [spacing] * (len(dims) if dims is not None else x.ndim)
    else:
        steps = _gradient_spacing(spacing, op)
    if x.dtype is bool_:
        raise TypeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
            "or `logical_xor()` operator instead."
        )
    if x.dtype.name == "uint8":
        raise TypeError(f"{_GRADIENT} does not support uint8 input.")
    if dims is None and len(steps) != x.ndim:
        raise ValueError(
            f"{_GRADIENT} expected spacing to be unspecified, a scalar, or a list of length "
            f"equal to 'self.dim() = {x.ndim}', since dim argument was not given, but got a "
            f"list of length {len(steps)}"
        )
    if dims is not None and len(steps) != len(dims):
        raise ValueError(
            f"{_GRADIENT} expected spacing to be unspecified, a scalar or it's spacing and dim "
            f"arguments to have the same length, but got a spacing argument of length "
            f"{len(steps)} and a dim argument of length {len(dims)}."
        )
    if edge_order not in (1, 2):
        raise ValueError(
            f"{_GRADIENT} only supports edge_order=1 and edge_order=2, got edge_order={edge_order}."
        )
    wrapped = [views.wrap_dim(d, x.ndim) for d in (dims if dims is not None else range(x.ndim))]
    for i, d in enumerate(wrapped):
        if d in wrapped[:i]:
            raise ValueError(f"dim {d} appears multiple times in the list of dims")
    for d in wrapped:
        if x.shape[d] < edge_order + 1:
            raise ValueError(
                f"{_GRADIENT} expected each dimension size to be at least edge_order+1 "
                f"(edge_order = {edge_order}), but dim {d} has size {x.shape[d]}"
            )
    results = []
    for d, step in zip(wrapped, steps):
        if isinstance(step, Tensor):
            results.append(_coordinate_gradient(x, d, step, edge_order))
        else:
            results.append(_uniform_gradient(x, d, step, edge_order))
    return tuple(results)


# ---- matrices built from vectors -------------------------------------------------------------


def _strict_int(value, op: str, what: str) -> int:
    """An int argument as PyTorch's parser takes it here: a bool, float or tensor is refused."""
    if isinstance(value, (bool, Tensor)) or not hasattr(value, "__index__"):
        raise TypeError(f"{op}(): argument '{what}' must be int, not {type(value).__name__}")
    return views.as_int64(value, what)


def block_diag(*tensors) -> Tensor:
    """The tensors as the diagonal blocks of one matrix, zeros elsewhere: a 2-d tensor is
    its own block, a 1-d one a row, a 0-d one a 1 x 1 block; the dtype is the tensors'
    result_type (0-d ones counting less). No tensors give an empty [1, 0]."""
    op = "block_diag"
    if not tensors:
        return factories.empty((1, 0))
    items = _tensor_list(list(tensors), op)
    for i, t in enumerate(items):
        if t.ndim > 2:
            raise ValueError(
                f"{op}(): Input tensors must have 2 or fewer dimensions. Input {i} has "
                f"{t.ndim} dimensions (shape {format_shape(t.shape)})"
            )
    blocks = [t if t.ndim == 2 else t.reshape(1, t.numel()) for t in items]
    rows, cols = sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)
    out = factories.zeros((rows, cols), dtype=result_type(*items), device=items[0].device)
    row = col = 0
    for b in blocks:
        h, w = b.shape
        out.narrow(0, row, h).narrow(1, col, w).copy_(b)
        row, col = row + h, col + w
    return out


def _vector(t, op: str) -> Tensor:
    t = tensor_arg(t, op)
    if t.ndim != 1:
        raise ValueError(f"{op}(): Expect a 1D vector, but got shape {format_shape(t.shape)}")
    return t


def cartesian_prod(*tensors) -> Tensor:
    """Every tuple of one element from each 1-d tensor, in row-major order, as the rows of
    an [N, len(tensors)] matrix (one tensor: that tensor itself, as in PyTorch)."""
    op = "cartesian_prod"
    items = [_vector(t, op) for t in tensors]
    if not items:
        raise ValueError(f"{op}(): meshgrid expects a non-empty TensorList, got no tensors")
    if len(items) == 1:
        return items[0]
    dtypes = [t.dtype for t in items]
    if len(set(dtypes)) > 1:
        raise TypeError(
            f"{op}(): meshgrid expects all tensors to have the same dtype, got "
            f"{', '.join(map(str, dtypes))}"
        )
    return stack([g.reshape(-1) for g in meshgrid(*items, indexing="ij")], 1)


# combinations' grid has r dims (a 1-element input's too): past this many, a typed error.
MAX_GRID_DIMS = 64


def combinations(input, r=2, with_replacement=False) -> Tensor:
    """The r-length combinations of a 1-d tensor's elements (itertools.combinations order;
    combinations_with_replacement's with with_replacement) as the rows of a [C, r] matrix;
    r = 0 gives an empty 1-d tensor."""
    op = "combinations"
    x = _vector(input, op)
    r = _strict_int(r, op, "r")
    bool_arg(with_replacement, op, "with_replacement")
    if r < 0:
        raise ValueError(f"{op}(): Expect a non-negative number, but got {r}")
    if r == 0:
        return factories.empty((0,), dtype=x.dtype, device=x.device)
    n = x.shape[0]
    if r > n and not with_replacement:  # no r distinct elements: no combination
        return factories.empty((0, r), dtype=x.dtype, device=x.device)
    if n > 1 and r * math.log2(n) >= 63 or n == 1 and r > MAX_GRID_DIMS:
        raise ValueError(
            f"{op}(): r = {r} of {n} elements spans a grid of {n}**{r} positions, past int64"
        )
    index = meshgrid(*[factories.arange(n, device=x.device)] * r, indexing="ij")
    mask = factories.ones((n,) * r, dtype=bool_, device=x.device)
    order = "le" if with_replacement else "lt"
    for earlier, later in zip(index, index[1:]):
        mask = mask.logical_and(getattr(earlier, order)(later))
    return stack([masked_select(g, mask) for g in meshgrid(*[x] * r, indexing="ij")], 1)


def vander(x, N=None, increasing=False) -> Tensor:
    """The Vandermonde matrix of a 1-d x: column j is x ** (N - 1 - j) (x ** j when
    increasing), N columns (len(x) by default), as running products; integer and bool x
    give int64."""
    op = "vander"
    x = tensor_arg(x, op)
    if x.ndim != 1:
        raise ValueError(
            f"{op}(): x must be a one-dimensional tensor, got shape {format_shape(x.shape)}"
        )
    n = x.shape[0] if N is None else _strict_int(N, op, "N")
    if n < 0:
        raise ValueError(f"{op}(): N must be non-negative, got N={n}")
    bool_arg(increasing, op, "increasing")
    dtype = promote_types(x.dtype, int64)
    out = factories.ones((x.shape[0], n), dtype=dtype, device=x.device)
    if n > 1:
        powers = out.narrow(1, 1, n - 1)
        powers.copy_(x.unsqueeze(1))
        powers.copy_(cumprod(powers, 1))
    return out if increasing else flip(out, [1])


def diagflat(input, offset=0) -> Tensor:
    """input flattened (row-major) as the diagonal `offset` of a new square matrix."""
    x = tensor_arg(input, "diagflat")
    offset = _strict_int(offset, "diagflat", "offset")
    return diag(x.reshape(-1), offset)


FUNCTIONS: dict[str, Callable] = {
    "hstack": hstack,
    "vstack": vstack,
    "row_stack": row_stack,
    "column_stack": column_stack,
    "dstack": dstack,
    "fliplr": fliplr,
    "flipud": flipud,
    "rot90": rot90,
    "diff": diff,
    "block_diag": block_diag,
    "cartesian_prod": cartesian_prod,
    "combinations": combinations,
    "vander": vander,
    "diagflat": diagflat,
    "gradient": gradient,
}
NOT_METHODS: frozenset[str] = frozenset(
    {"hstack", "vstack", "row_stack", "column_stack", "dstack"}
    | {"block_diag", "cartesian_prod", "combinations", "vander", "gradient"}
)
METHODS: dict[str, Callable] = {}
