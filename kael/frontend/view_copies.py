"""torch's *_copy functions: each view of input (t, narrow, split, ...) made into new
contiguous tensors, or written into out=; with as_strided_scatter and empty_permuted."""

from __future__ import annotations

from collections.abc import Callable

from kael.frontend import factories, shapes, views
from kael.frontend.factories import refuse_grad
from kael.frontend.memory_formats import contiguous_format
from kael.frontend.outputs import check_out_dtype, device_of, int_arg, tensor_param, written_out
from kael.frontend.scatters import _slice_of
from kael.frontend.tensor import Tensor, has_internal_overlap, placed, strided
from kael.frontend.tracing import op_door
from kael.runtime.dtypes import DType
from kael.runtime.errors import IndexError, TypeError, ValueError

# ---- the views the copies are made of, where kael's own take other arguments ---------------


def _expand(input: Tensor, size, *, implicit: bool = False) -> Tensor:
    """Tensor.expand with the sizes as one list (implicit only marks autograd's broadcasts)."""
    return input.expand(size)


def _slice(input: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    """input[start:end:step] along dim, as ATen's slice."""
    return _slice_of(input, dim, start, end, step, "slice_copy")


def _split(input: Tensor, split_size: int, dim: int = 0) -> tuple[Tensor, ...]:
    """split by one size only (split_with_sizes_copy takes the list of sizes)."""
    return shapes.split(input, int_arg(split_size, "split_copy", "split_size"), dim)


def _view(input: Tensor, size=None, *, dtype: DType | None = None) -> Tensor:
    """view by size, or by dtype (given either way); a size the strides cannot view
    reshapes, as ATen's view_copy does."""
    target = dtype if size is None else size
    if target is None:
        raise TypeError("view_copy(): expected a size or a dtype, got neither")
    return input.view(target) if isinstance(target, DType) else input.reshape(target)


# torch.NAME -> the view whose elements it copies: (input, *torch's other arguments)
_VIEWS: dict[str, Callable] = {
    "alias_copy": Tensor.detach,
    "as_strided_copy": shapes.FUNCTIONS["as_strided"],
    "detach_copy": Tensor.detach,
    "diagonal_copy": shapes.diagonal,
    "expand_copy": _expand,
    "narrow_copy": Tensor.narrow,
    "permute_copy": shapes.FUNCTIONS["permute"],
    "select_copy": Tensor.select,
    "slice_copy": _slice,
    "split_copy": _split,
    "split_with_sizes_copy": shapes.split_with_sizes,
    "squeeze_copy": Tensor.squeeze,
    "t_copy": shapes.t,
    "transpose_copy": Tensor.transpose,
    "unbind_copy": shapes.unbind,
    "unfold_copy": Tensor.unfold,
    "unsqueeze_copy": Tensor.unsqueeze,
    "view_copy": _view,
}

# ---- writing the copies: new tensors, or out= -----------------------------------------------


def _filled_silently(out: Tensor, piece: Tensor, op: str) -> Tensor:
    """piece written into out as ATen's narrow_copy out= does: dtype checked first, then out
    resized without the deprecation warning."""
    check_out_dtype(out, piece, op)
    device_of([piece, out], op)
    out.resize_(piece.shape)
    return out.copy_(piece)


def _copied_into(out: Tensor, piece: Tensor, op: str) -> Tensor:
    """piece written into out by copy_ alone (converted and broadcast, never resized), as
    ATen's split_copy out= does."""
    return out.copy_(piece)


# how a *_copy writes each piece into its out= tensor where it is not written_out
_FILLERS: dict[str, Callable[[Tensor, Tensor, str], Tensor]] = {
    "narrow_copy": _filled_silently,
    "split_copy": _copied_into,
}


def _written(view: Tensor, out, op: str) -> Tensor:
    """view's elements in a new contiguous tensor, or written into out as torch's op does."""
    if out is None:
        return view.clone(memory_format=contiguous_format)
    return _FILLERS.get(op, written_out)(tensor_param(out, op, "out"), view, op)


def _written_all(pieces: tuple[Tensor, ...], out, op: str) -> tuple[Tensor, ...] | None:
    """Each piece copied into a new contiguous tensor; or written into its tensor of out (a
    list as long as pieces) in turn as torch's op does, returning None as torch does."""
    if out is None:
        return tuple(p.clone(memory_format=contiguous_format) for p in pieces)
    if not isinstance(out, list | tuple):
        raise TypeError(
            f"{op}(): argument 'out' must be tuple of Tensors, not {type(out).__name__}"
        )
    if len(out) != len(pieces):
        raise ValueError(
            f"{op}(): expected an out= argument of size {len(pieces)}, got size {len(out)}"
        )
    targets = [tensor_param(t, op, "out") for t in out]
    fill = _FILLERS.get(op, written_out)
    for target, piece in zip(targets, pieces, strict=True):
        fill(target, piece, op)
    return None


def _copy_function(name: str, view: Callable) -> Callable:
    """torch.NAME(input, *args, out=None): `view` of input copied (a tuple of copies when
    the view gives several)."""

    def fn(input: Tensor, *args, out=None, **kwargs):
        result = view(tensor_param(input, name), *args, **kwargs)
        if isinstance(result, Tensor):
            return _written(result, out, name)
        return _written_all(result, out, name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}: {name[: -len('_copy')]} of input as new contiguous tensors."
    return fn


# ---- as_strided_scatter and empty_permuted -------------------------------------------------


def _clone_preserving_strides(x: Tensor) -> Tensor:
    """A copy of x's whole storage seen as x is (its strides and offset), so that
    as_strided offsets mean on it what they mean on x; a plain clone when x's elements
    overlap."""
    if has_internal_overlap(x._impl):
        return x.clone()
    impl = x._impl
    whole = x.as_strided((impl.storage.nbytes // impl.dtype.itemsize,), (1,), 0)
    return whole.clone().as_strided(x.shape, impl.strides, impl.offset)


def as_strided_scatter(input: Tensor, src: Tensor, size, stride, storage_offset=None) -> Tensor:
    """A copy of input (its strides and offset kept) with src written over its
    as_strided(size, stride, storage_offset) window."""
    op = "as_strided_scatter"
    x = tensor_param(input, op)
    placed(x._impl, op, always=True)
    s = tensor_param(src, op, "src")
    device_of([x, s], op)
    out = _clone_preserving_strides(x)
    window = out.as_strided(size, stride, storage_offset)
    if window.shape != s.shape:
        raise ValueError(
            f"{op}(): expected src to have a size equal to the slice of self. src size ="
            f" {list(s.shape)}, slice size = {list(window.shape)}"
        )
    window.copy_(s)
    return out


def _physical_order(physical_layout, ndim: int) -> tuple[int, ...]:
    """physical_layout checked to be a permutation of range(ndim), as torch checks it."""
    order = tuple(views.as_int(d, "empty_permuted(): physical_layout") for d in physical_layout)
    if len(order) != ndim:
        raise ValueError(
            "Number of dimensions in size does not match the length of the physical_layout;"
            f" i.e. len(size) = {ndim} is not equal to len(physical_layout) = {len(order)}"
        )
    for i, d in enumerate(order):
        if not 0 <= d < ndim:
            raise IndexError(
                f"Dimension out of range (expected to be between 0 and {ndim - 1}, but got"
                f" {d} at index {i}).  NB: negative dims not currently supported"
            )
    if len(set(order)) != ndim:
        raise ValueError(f"Duplicate dim not allowed: physical_layout {list(order)}")
    return order


def empty_permuted(
    size,
    physical_layout,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """An uninitialised tensor of `size` whose dims lie in memory in physical_layout's
    order (its first the outermost), as torch.empty_permuted."""
    if layout not in (None, strided):
        raise ValueError(f"empty_permuted(): only the strided layout is supported, got {layout}")
    refuse_grad(requires_grad, "empty_permuted")
    shape = views.check_shape(views.parse_size((size,)))
    order = _physical_order(physical_layout, len(shape))
    physical = factories.empty(tuple(shape[d] for d in order), dtype=dtype, device=device)
    return physical.permute(*sorted(range(len(order)), key=order.__getitem__))


def _narrow_copy_method(self: Tensor, dim: int, start: int, length: int) -> Tensor:
    """Tensor.narrow_copy: the narrowed elements in a new contiguous tensor."""
    return FUNCTIONS["narrow_copy"](self, dim, start, length)


_PLAIN: dict[str, Callable] = {
    **{name: _copy_function(name, view) for name, view in _VIEWS.items()},
    "as_strided_scatter": as_strided_scatter,
}

FUNCTIONS: dict[str, Callable] = {
    **{name: op_door(name, fn) for name, fn in _PLAIN.items()},
    "empty_permuted": factories.on_default_device(op_door("empty_permuted", empty_permuted)),
}

_narrow_copy_method.__name__ = "narrow_copy"
_narrow_copy_method.__qualname__ = "Tensor.narrow_copy"
Tensor.narrow_copy = _narrow_copy_method
Tensor.as_strided_scatter = FUNCTIONS["as_strided_scatter"]
