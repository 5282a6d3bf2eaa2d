"""Shape functions as PyTorch has them: splitting (split, chunk, tensor_split, unbind),
repeating (repeat, tile, repeat_interleave), moving dims (movedim, swapaxes, t),
diagonals (diagonal, diag, diag_embed, tril_indices, triu_indices), broadcasting
(broadcast_to, broadcast_tensors, meshgrid, atleast_Nd), the new_* factories and the
function forms of Tensor's views (kael.reshape, kael.transpose, ...).

Everything that can be a view is one (no kernel launches); a copy (repeat, tile,
repeat_interleave, diag of a vector, diag_embed, tril_indices) runs kael's own copy,
index and nonzero kernels. The pieces of a split are made without narrow's checks (their
bounds are inside the input), and repeat's copy of its expanded view (as flip's of its
reversed one, sequence.py) is the launch remembered for that layout (`dense_copy`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

from kael.frontend import factories, fastpath, index_ops, order_statistics, views
from kael.frontend.elementwise import broadcast_shapes
from kael.frontend.outputs import tensor_arg
from kael.frontend.tensor import Tensor, clone_impl, placed
from kael.frontend.views import narrowed
from kael.runtime.dtypes import as_dtype, int32, int64
from kael.runtime.errors import IndexError, NotImplementedError, TypeError, ValueError
from kael.runtime.tensor_impl import TensorImpl, validate_shape

# ---- layouts made without the full machinery -------------------------------------------------


def dense_copy(impl: TensorImpl, shape: tuple[int, ...] | None = None) -> Tensor:
    """A new row-major tensor of impl's elements (a copy even where impl is row-major), in
    `shape` when given (as many elements, a shape the caller validated): on the host the
    copy remembered for impl's layout (the one Tensor.contiguous keeps, remember_contiguous),
    else clone_impl's, then remembered. impl may be a kernel-only view (flip's negative
    strides)."""
    done = fastpath.contiguous_impl(impl)
    if done is None:
        out = clone_impl(impl)
        fastpath.remember_contiguous(out, impl)
        done = Tensor(out)
    if shape is None or shape == impl.shape:
        return done
    made = done._impl
    strides = fastpath.dense_strides(shape)
    return Tensor.trusted(
        TensorImpl.of_tuples(made.storage, shape, strides, 0, made.dtype, made.device)
    )


# ---- splitting -------------------------------------------------------------------------------


def _pieces(x: Tensor, dim: int, bounds: Sequence[int]) -> tuple[Tensor, ...]:
    """The views of x along dim between consecutive bounds, each in [0, size] (empty where
    a bound goes down, as slicing is)."""
    impl, trusted = x._impl, Tensor.trusted
    return tuple(trusted(narrowed(impl, dim, a, max(b - a, 0))) for a, b in zip(bounds, bounds[1:]))


def _split_dim(x: Tensor, dim, message: str) -> int:
    """dim wrapped against x's rank; a 0-d x has nothing to split, which `message` says."""
    if x.ndim == 0:
        raise ValueError(message)
    return views.wrap_dim(dim, x.ndim)


def _overloaded(op: str, named: dict):
    """The one value given for a parameter torch's overloads name differently (tensor_split's
    indices_or_sections, sections or indices): kael.TypeError naming them when not one."""
    found = [v for v in named.values() if v is not None]
    if len(found) != 1:
        raise TypeError(f"{op}() takes exactly one of {', '.join(named)}, got {len(found)}")
    return found[0]


def _every(step: int, size: int) -> list[int]:
    """Bounds every `step` elements of a dim of `size` (the last piece may be shorter; an
    empty dim is one empty piece)."""
    return [*range(0, size, step), size] if size else [0, 0]


def split(
    tensor: Tensor, split_size_or_sections=None, dim: int = 0, *, split_size=None
) -> tuple[Tensor, ...]:
    """Views of `split_size_or_sections` elements along dim (the last may be shorter), or
    of the given sizes, which must add up to the dim's size (Tensor.split's `split_size`)."""
    x = tensor_arg(tensor, "split")
    d = _split_dim(x, dim, "split expects at least a 1-dimensional tensor")
    size = x.shape[d]
    sections = _overloaded(
        "split", {"split_size_or_sections": split_size_or_sections, "split_size": split_size}
    )
    if isinstance(sections, Tensor) and sections.ndim == 0:
        sections = views.as_int(sections, "split_size")
    if isinstance(sections, int) and not isinstance(sections, bool):
        if sections < 0:
            raise ValueError(
                f"split expects split_size be non-negative, but got split_size={sections}"
            )
        if sections == 0 and size:
            raise ValueError(
                f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}"
            )
        return _pieces(x, d, _every(sections, size))
    sizes = [views.as_int(s, "split_sizes") for s in sections]
    if sum(sizes) != size or any(s < 0 for s in sizes):
        raise ValueError(
            f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size"
            f" at dimension {d}), but got split_sizes={sizes}"
        )
    return _pieces(x, d, [0, *itertools.accumulate(sizes)])


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """At most `chunks` views of ceil(size / chunks) elements along dim."""
    x = tensor_arg(input, "chunk")
    d = _split_dim(x, dim, "chunk expects at least a 1-dimensional tensor")
    chunks = views.as_int(chunks, "chunks")
    if chunks <= 0:
        raise ValueError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    size = x.shape[d]
    step = -(-size // chunks)
    if step == 0:
        return tuple(x.narrow(d, 0, 0) for _ in range(chunks))
    return _pieces(x, d, _every(step, size))


# The most views one split makes: a tuple of 2**24 tensors already takes gigabytes.
MAX_PIECES = 1 << 24


def tensor_split(
    input: Tensor,
    indices_or_sections=None,
    dim: int = 0,
    *,
    sections=None,
    indices=None,
    tensor_indices_or_sections=None,
) -> tuple[Tensor, ...]:
    """`sections` views as even as can be (the first size % sections one longer), or the
    views between the given indices (clamped to the dim, as slicing is); each of torch's
    overloads' keywords names the one argument."""
    x = tensor_arg(input, "tensor_split")
    d = _split_dim(
        x,
        dim,
        "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims",
    )
    size = x.shape[d]
    spec = _overloaded(
        "tensor_split",
        {
            "indices_or_sections": indices_or_sections,
            "sections": sections,
            "indices": indices,
            "tensor_indices_or_sections": tensor_indices_or_sections,
        },
    )
    if isinstance(spec, Tensor):
        if spec.dtype is not int64 or spec.ndim > 1:
            raise ValueError(
                "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or"
                f" one-dimensional tensor of dtype int64, got {spec.ndim}-D {spec.dtype}"
            )
        spec = spec.item() if spec.ndim == 0 else spec.tolist()
    if isinstance(spec, int) and not isinstance(spec, bool):
        if spec <= 0:
            raise ValueError(f"number of sections must be larger than 0, got {spec}")
        if spec > MAX_PIECES:
            raise ValueError(
                f"tensor_split: {spec} sections would be more than {MAX_PIECES} views"
                " (a tuple that large cannot be built)"
            )
        base, extra = divmod(size, spec)
        bounds = [0]
        for i in range(spec):
            bounds.append(bounds[-1] + base + (1 if i < extra else 0))
        return _pieces(x, d, bounds)
    cuts = [min(max(views.as_int(i, "indices") + (size if i < 0 else 0), 0), size) for i in spec]
    return _pieces(x, d, [0, *cuts, size])


def split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple[Tensor, ...]:
    """Views of the given sizes along dim, which must be non-negative and add up to the
    dim's size (a sequence of ints: split's other form, by its own name)."""
    x = tensor_arg(input, "split_with_sizes")
    if not isinstance(split_sizes, list | tuple):
        raise TypeError(
            "split_with_sizes(): argument 'split_sizes' must be tuple of ints, not"
            f" {type(split_sizes).__name__}"
        )
    sizes = [views.as_int(s, "split_sizes") for s in split_sizes]
    d = _split_dim(x, dim, "split expects at least a 1-dimensional tensor")
    if any(s < 0 for s in sizes):
        raise ValueError(
            "split_with_sizes expects split_sizes have only non-negative entries, but got"
            f" split_sizes={sizes}"
        )
    return split(x, sizes, d)


def _directional_split(name: str, min_dim: int, dim: int) -> Callable:
    """hsplit, vsplit or dsplit: tensor_split along `dim` (hsplit: 0 for a 1-d tensor)
    into equal sections (which must divide the dim) or at the given indices."""

    def directional(
        input: Tensor, indices_or_sections=None, *, sections=None, indices=None
    ) -> tuple[Tensor, ...]:
        x = tensor_arg(input, name)
        named = {"indices_or_sections": indices_or_sections, "sections": sections}
        indices_or_sections = _overloaded(name, {**named, "indices": indices})
        if x.ndim < min_dim:
            raise ValueError(
                f"{name} requires a tensor with at least {min_dim} dimension, but got a tensor"
                f" with {x.ndim} dimensions!"
            )
        d = 0 if x.ndim == 1 else dim
        spec = indices_or_sections
        if isinstance(spec, int) and not isinstance(spec, bool):
            size = x.shape[d]
            if spec == 0 or size % spec:
                raise ValueError(
                    f"{name} attempted to split along dimension {d}, but the size of the"
                    f" dimension {size} is not divisible by the split_size {spec}!"
                )
            return tensor_split(x, spec, d)
        if not isinstance(spec, list | tuple):
            raise TypeError(
                f"{name}(): argument 'indices_or_sections' must be an int or a sequence of"
                f" ints, not {type(spec).__name__}"
            )
        return tensor_split(x, list(spec), d)

    directional.__name__ = directional.__qualname__ = name
    directional.__doc__ = (
        f"torch.{name}: tensor_split along dim {dim} into equal sections or at indices."
    )
    return directional


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """Each index of dim, as a view without it."""
    x = tensor_arg(input, "unbind")
    d = views.wrap_dim(dim, x.ndim)
    if x.ndim == 0:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    return tuple(x.select(d, i) for i in range(x.shape[d]))


# ---- repeating -------------------------------------------------------------------------------


def repeat(self: Tensor, *sizes, repeats=None) -> Tensor:
    """Tensor.repeat: the tensor tiled `sizes` (or `repeats`) times (at least its rank; extra
    leading sizes add dims), always a new tensor: one copy of an expanded view of it."""
    x = tensor_arg(self, "repeat")
    if repeats is not None:
        sizes = (*sizes, repeats)
    if not sizes:
        raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
    reps = views.parse_size(sizes, "repeats")
    if len(reps) < x.ndim:
        raise ValueError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions"
            f" of tensor ({len(reps)} < {x.ndim})"
        )
    if any(r < 0 for r in reps):
        raise ValueError(f"Trying to create tensor with negative dimension: {list(reps)}")
    impl = x._impl
    lead = len(reps) - x.ndim
    shape, strides = (1,) * lead + impl.shape, (0,) * lead + impl.strides
    result = tuple(r * s for r, s in zip(reps, shape))
    validate_shape(result)
    return dense_copy(_tiled(impl, reps, shape, strides), result)


def _tiled(impl: TensorImpl, reps, shape, strides) -> TensorImpl:
    """impl read as [r0, s0, r1, s1, ...] (each rep a stride-0 dim before its size; the
    size-1 dims left out, which change no order): its row-major copy is the repeat."""
    tiled_shape, tiled_strides = [], []
    for r, s, st in zip(reps, shape, strides):
        if r != 1:
            tiled_shape.append(r)
            tiled_strides.append(0)
        if s != 1:
            tiled_shape.append(s)
            tiled_strides.append(st)
    return TensorImpl.of_tuples(
        impl.storage, tuple(tiled_shape), tuple(tiled_strides), impl.offset, impl.dtype,
        impl.device,
    )  # fmt: skip


def tile(input: Tensor, *sizes, dims=None) -> Tensor:
    """input repeated `dims` times per dim (a sequence, or Tensor.tile's sizes one by one),
    dims padded with leading 1s to input's rank."""
    x = tensor_arg(input, "tile")
    reps = views.parse_size((*sizes, dims) if dims is not None else sizes, "dims")
    return repeat(x, (1,) * (x.ndim - len(reps)) + reps)


def repeat_interleave(input, repeats=None, dim: int | None = None, *, output_size=None):
    """Each element (or slice along dim) repeated `repeats` times in place: an int, or a
    tensor of per-element counts. With one tensor argument: the indices repeated by it."""
    if repeats is None:  # repeat_interleave(counts): arange(len) repeated by the counts
        counts = _counts(tensor_arg(input, "repeat_interleave", "repeats"))
        if counts.ndim != 1:
            raise ValueError("repeat_interleave only accept 1D vector as repeat")
        positions = factories.arange(counts.numel(), dtype=counts.dtype, device=counts.device)
        return repeat_interleave(positions, counts, 0)
    x = tensor_arg(input, "repeat_interleave")
    if dim is None:
        x, d = x.reshape(-1), 0
    elif x.ndim == 0:
        raise IndexError(f"repeat_interleave: dim {dim} given for a 0-d tensor, which has none")
    else:
        d = views.wrap_dim(dim, x.ndim)
    size = x.shape[d]
    if isinstance(repeats, Tensor) and repeats.numel() == 1 and repeats.ndim <= 1:
        repeats = int(_counts(repeats).item())
    if isinstance(repeats, int) and not isinstance(repeats, bool):
        if repeats < 0:
            raise ValueError(f"repeats can not be negative, got {repeats}")
        shape = list(x.shape)
        y = x.unsqueeze(d + 1).expand((*shape[: d + 1], repeats, *shape[d + 1 :]))
        shape[d] *= repeats
        return dense_copy(y._impl, tuple(shape))  # a new tensor, as torch's, never a view
    counts = _counts(tensor_arg(repeats, "repeat_interleave", "repeats"))
    if counts.ndim != 1:
        raise ValueError(f"repeats must be 0-dim or 1-dim tensor, got {counts.ndim}-dim")
    if counts.numel() != size:
        raise ValueError(
            f"repeats must have the same size as input along dim, but got repeats.size(0) = {counts.numel()} and input.size({d}) = {size}"
        )
    values = counts.tolist()  # the output's size depends on them, as in PyTorch
    if any(v < 0 for v in values):
        raise ValueError("repeats can not be negative")
    if output_size is not None and output_size != sum(values):
        raise ValueError(
            f"repeat_interleave: output_size {output_size} is not the sum of repeats {sum(values)}"
        )
    total = sum(values)
    shape = list(x.shape)
    shape[d] = total
    factories.check_allocatable(tuple(shape), x.dtype, x.device)  # a typed error, not a hang
    # position j reads the element whose running count first exceeds j (a kernel's search,
    # not a Python list of every position)
    ends = factories.tensor(list(itertools.accumulate(values)), dtype=int64, device=x.device)
    index = order_statistics.searchsorted(
        ends, factories.arange(total, dtype=int64, device=x.device), right=True
    )
    return index_ops.index_select(x, d, index)


def _counts(repeats: Tensor) -> Tensor:
    """repeat_interleave's counts: an int32 or int64 tensor, as torch's kernel takes."""
    if repeats.dtype not in (int32, int64):
        raise NotImplementedError(
            f"repeat_interleave: repeats must be an int32 or int64 tensor, got {repeats.dtype}"
        )
    return repeats


# ---- moving dims -----------------------------------------------------------------------------


def movedim(input: Tensor, source, destination) -> Tensor:
    """input with dims `source` moved to `destination` (ints or sequences), the others
    keeping their order: a view."""
    x = tensor_arg(input, "movedim")
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise ValueError(
            f"movedim: Invalid source or destination dims: source ({src} dims) should contain"
            f" the same number of dims as destination ({dst} dims)"
        )
    src = [views.wrap_dim(s, x.ndim) for s in src]
    dst = [views.wrap_dim(s, x.ndim) for s in dst]
    for name, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise ValueError(f"movedim: repeated dim in `{name}` ({dims})")
    order = [None] * x.ndim
    if not order:  # a 0-d tensor: dims 0 and -1 wrap to nothing to move
        return x.permute()
    for s, t in zip(src, dst):
        order[t] = s
    rest = iter(d for d in range(x.ndim) if d not in src)
    return x.permute(*[o if o is not None else next(rest) for o in order])


def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """transpose under NumPy's name."""
    return tensor_arg(input, "swapaxes").transpose(axis0, axis1)


def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """transpose under another name, with its argument names."""
    return tensor_arg(input, "swapdims").transpose(dim0, dim1)


def t(input: Tensor) -> Tensor:
    """The transpose of a matrix; a vector or a scalar as it is."""
    x = tensor_arg(input, "t")
    if x.ndim > 2:
        raise ValueError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return x.transpose(0, 1) if x.ndim == 2 else x.view(x.shape)


def view_as(self: Tensor, other: Tensor) -> Tensor:
    return self.view(tensor_arg(other, "view_as", "other").shape)


def reshape_as(self: Tensor, other: Tensor) -> Tensor:
    return self.reshape(tensor_arg(other, "reshape_as", "other").shape)


# ---- diagonals -------------------------------------------------------------------------------


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of dims dim1 and dim2 (above it for offset > 0) as the last dim of a
    view without them."""
    x = tensor_arg(input, "diagonal")
    d1, d2 = views.wrap_dim(dim1, x.ndim), views.wrap_dim(dim2, x.ndim)
    if d1 == d2:
        raise ValueError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    offset = views.as_int(offset, "offset")
    n1, n2 = x.shape[d1], x.shape[d2]
    length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    strides = x.strides()
    start = x.storage_offset()
    if length:
        start += offset * strides[d2] if offset >= 0 else -offset * strides[d1]
    keep = [d for d in range(x.ndim) if d not in (d1, d2)]
    shape = (*(x.shape[d] for d in keep), length)
    stride = (*(strides[d] for d in keep), strides[d1] + strides[d2])
    return x.as_strided(shape, stride, start)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A vector as the diagonal of a new square matrix (zeros elsewhere), or a matrix's
    diagonal as a new vector."""
    x = tensor_arg(input, "diag")
    k = views.as_int(diagonal, "diagonal")
    if x.ndim == 1:
        n = x.shape[0] + abs(k)
        out = factories.zeros((n, n), dtype=x.dtype, device=x.device)
        globals()["diagonal"](out, k).copy_(x)
        return out
    if x.ndim == 2:
        return globals()["diagonal"](x, k).clone()
    raise ValueError(f"diag(): Supports 1D or 2D tensors. Got {x.ndim}D")


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Each last-dim vector of input as the diagonal of a new matrix in dims dim1, dim2."""
    x = tensor_arg(input, "diag_embed")
    rank = x.ndim + 1
    d1, d2 = views.wrap_dim(dim1, rank), views.wrap_dim(dim2, rank)
    if d1 == d2:
        raise ValueError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = x.shape[-1] + abs(views.as_int(offset, "offset")) if x.ndim else 1
    shape = list(x.shape[:-1])
    for d in sorted((d1, d2)):
        shape.insert(d, n)
    out = factories.zeros(tuple(shape), dtype=x.dtype, device=x.device)
    diagonal(out, offset, d1, d2).copy_(x)
    return out


def _triangle_indices(row: int, col: int, offset: int, dtype, device, lower: bool) -> Tensor:
    row, col, offset = (
        views.as_int(v, n) for v, n in ((row, "row"), (col, "col"), (offset, "offset"))
    )
    if row < 0 or col < 0:
        raise ValueError(f"row and col must be non-negative, got row={row}, col={col}")
    if dtype is not None and as_dtype(dtype).is_complex:  # no complex kernel in PyTorch
        op = "tril_indices" if lower else "triu_indices"
        raise TypeError(f"{op} does not support {as_dtype(dtype)} tensors")
    mask = factories.ones((row, col), dtype=int64, device=device)
    mask = mask.tril(offset) if lower else mask.triu(offset)
    return index_ops.nonzero(mask).transpose(0, 1).to(dtype or int64)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None) -> Tensor:
    """[2, N]: the row and column of each element of a row x col matrix's lower triangle,
    row-major."""
    return _triangle_indices(row, col, offset, dtype, device, True)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None) -> Tensor:
    """[2, N]: the upper triangle's indices, row-major."""
    return _triangle_indices(row, col, offset, dtype, device, False)


# ---- broadcasting ----------------------------------------------------------------------------


def broadcast_to(input: Tensor, size) -> Tensor:
    """expand under NumPy's name (a -1 keeps a dim)."""
    return tensor_arg(input, "broadcast_to").expand(*views.parse_size((size,), "size"))


def _tensors(args, op: str) -> list[Tensor]:
    items = args[0] if len(args) == 1 and isinstance(args[0], list | tuple) else args
    return [tensor_arg(t, op) for t in items]


def broadcast_tensors(*tensors) -> tuple[Tensor, ...]:
    """Each tensor expanded to their broadcast shape (views)."""
    items = _tensors(tensors, "broadcast_tensors")
    if not items:
        return ()
    shape = broadcast_shapes(*(t.shape for t in items))
    return tuple(t.expand(*shape) for t in items)


def meshgrid(*tensors, indexing: str = "ij") -> tuple[Tensor, ...]:
    """Coordinate grids of 1-d (or 0-d) tensors: 'ij' (matrix) or 'xy' (Cartesian: the
    first two dims swapped), each an expanded view."""
    items = _tensors(tensors, "meshgrid")
    if not items:
        raise ValueError("torch.meshgrid: expects a non-empty list of tensors")
    if indexing not in ("ij", "xy"):
        raise ValueError(
            f"torch.meshgrid: indexing must be one of 'xy' or 'ij', but received: {indexing}"
        )
    if any(t.ndim > 1 for t in items):
        raise ValueError("torch.meshgrid: Expected 0D or 1D tensor in the tensor list")
    if len({(t.dtype, t.device) for t in items}) > 1:
        raise ValueError("torch.meshgrid: expects all tensors to have the same dtype and device")
    vectors = [t.reshape(-1) for t in items]
    swap = indexing == "xy" and len(vectors) >= 2
    if swap:
        vectors[0], vectors[1] = vectors[1], vectors[0]
    shape = tuple(v.shape[0] for v in vectors)
    grids = []
    for i, v in enumerate(vectors):
        lead = [1] * len(vectors)
        lead[i] = shape[i]
        grids.append(v.reshape(tuple(lead)).expand(*shape))
    if swap:  # the first two grids back in the arguments' order
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def _at_least(rank: int) -> Callable:
    def at_least(*tensors):
        items = _tensors(tensors, f"atleast_{rank}d")
        out = []
        for t in items:
            if t.ndim >= rank:
                out.append(t)
            elif rank == 3 and t.ndim == 2:
                out.append(t.unsqueeze(-1))
            elif rank == 3 and t.ndim == 1:  # PyTorch's [n] -> [1, n, 1]
                out.append(t.reshape(1, t.shape[0], 1))
            else:
                out.append(t.reshape((1,) * (rank - max(t.ndim, 1)) + (t.shape or (1,))))
        single = len(tensors) == 1 and not isinstance(tensors[0], list | tuple)
        return out[0] if single else tuple(out)

    at_least.__name__ = at_least.__qualname__ = f"atleast_{rank}d"
    at_least.__doc__ = f"Views of the tensors with at least {rank} dims, as PyTorch adds them."
    return at_least


# ---- new_* factories -------------------------------------------------------------------------


def _new(factory: Callable, name: str) -> Callable:
    def method(self: Tensor, *size, dtype=None, device=None, **kwargs) -> Tensor:
        if "size" in kwargs:  # x.new_zeros(size=(2, 3)), as torch takes it
            size = (*size, kwargs.pop("size"))
        return factory(*size, dtype=dtype or self.dtype, device=device or self.device, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Tensor.{name}: a new tensor with this one's dtype and device by default."
    return method


def _new_full(self: Tensor, size, fill_value, *, dtype=None, device=None) -> Tensor:
    return factories.full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device)


def _new_tensor(self: Tensor, data, *, dtype=None, device=None) -> Tensor:
    return factories.tensor(data, dtype=dtype or self.dtype, device=device or self.device)


# ---- the families' tables --------------------------------------------------------------------


def as_strided(input: Tensor, size, stride, storage_offset=None) -> Tensor:
    """kael.as_strided: input.as_strided(...), a layout from the storage's start, so under
    @kael.compile a read of where input lies (Tensor.placed) even inside its op door."""
    x = tensor_arg(input, "as_strided")
    placed(x._impl, "as_strided", always=True)
    return x.as_strided(size, stride, storage_offset)


def method_function(name: str, check: Callable = tensor_arg) -> Callable:
    """kael.NAME(input, ...) for the method Tensor.NAME: input.NAME(...), input checked by
    `check` (the views here; torch_level.py's torch.NAME forms of other methods)."""

    def fn(input: Tensor, *args, **kwargs) -> Tensor:
        return getattr(check(input, name), name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Tensor.{name} as a function: input.{name}(...)."
    return fn


def _permute(input: Tensor, dims) -> Tensor:
    return tensor_arg(input, "permute").permute(*dims)


def _reshape(input: Tensor, shape) -> Tensor:
    return tensor_arg(input, "reshape").reshape(*views.parse_size((shape,), "shape"))


def _query(name: str, prop: bool = False) -> Callable:
    """kael.NAME(input) for Tensor.NAME: a method called, or a property read."""

    def fn(input: Tensor):
        x = getattr(tensor_arg(input, name), name)
        return x if prop else x()

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Tensor.{name} as a function."
    return fn


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether both tensors have one shape."""
    return tensor_arg(input, "is_same_size").is_same_size(other)


# kael.NAME for Tensor's own queries and real-dtype no-ops (torch has them at top level).
_QUERIES = (
    "conj", "resolve_conj", "resolve_neg", "is_conj", "is_neg", "is_nonzero", "is_signed",
    "is_complex", "get_device", "is_floating_point",
)  # fmt: skip

FUNCTIONS: dict[str, Callable] = {
    **{name: _query(name) for name in _QUERIES},
    "real": _query("real", prop=True),
    "imag": _query("imag", prop=True),
    "is_same_size": is_same_size,
    "split_with_sizes": split_with_sizes,
    "hsplit": _directional_split("hsplit", 1, 1),
    "vsplit": _directional_split("vsplit", 2, 0),
    "dsplit": _directional_split("dsplit", 3, 2),
    "split": split,
    "chunk": chunk,
    "tensor_split": tensor_split,
    "unbind": unbind,
    "tile": tile,
    "repeat_interleave": repeat_interleave,
    "movedim": movedim,
    "moveaxis": movedim,
    "swapaxes": swapaxes,
    "swapdims": swapdims,
    "t": t,
    "diagonal": diagonal,
    "diag": diag,
    "diag_embed": diag_embed,
    "tril_indices": tril_indices,
    "triu_indices": triu_indices,
    "broadcast_to": broadcast_to,
    "broadcast_tensors": broadcast_tensors,
    "meshgrid": meshgrid,
    **{f"atleast_{r}d": _at_least(r) for r in (1, 2, 3)},
    "permute": _permute,
    "reshape": _reshape,
    **{
        name: method_function(name)
        for name in (
            "transpose",
            "flatten",
            "squeeze",
            "unsqueeze",
            "narrow",
            "select",
            "unflatten",
        )
    },
    "as_strided": as_strided,
    "ravel": lambda input: tensor_arg(input, "ravel").reshape(-1),
}
# Factory-like functions and the many-tensor ones are not Tensor methods.
NOT_METHODS: frozenset[str] = frozenset(
    {
        *_QUERIES,  # Tensor's own methods and properties (tensor.py)
        "real",
        "imag",
        "is_same_size",
        "tril_indices",
        "triu_indices",
        "broadcast_tensors",
        "meshgrid",
        "atleast_1d",
        "atleast_2d",
        "atleast_3d",
        "permute",
        "reshape",
        "transpose",
        "flatten",
        "squeeze",
        "unsqueeze",
        "narrow",
        "select",
        "unflatten",
        "as_strided",
    }
)
METHODS: dict[str, Callable] = {
    "repeat": repeat,
    "view_as": view_as,
    "reshape_as": reshape_as,
    "new_zeros": _new(factories.zeros, "new_zeros"),
    "new_ones": _new(factories.ones, "new_ones"),
    "new_empty": _new(factories.empty, "new_empty"),
    "new_full": _new_full,
    "new_tensor": _new_tensor,
}
