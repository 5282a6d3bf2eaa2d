"""torch.nn.functional.pad: constant, reflect, replicate and circular padding of the last
len(pad) // 2 dims. Constant padding fills a new tensor and copies the input into its
middle; the other modes gather each padded dim's rows by an index vector (the positions
are host arithmetic on sizes; the data moves through kael's index kernels)."""

from __future__ import annotations

import math

from kael.frontend import eager, factories, fastpath, index_ops, memory_formats, views
from kael.frontend.outputs import tensor_arg
from kael.frontend.tensor import Tensor
from kael.frontend.tracing import op_door
from kael.frontend.views import narrowed
from kael.runtime.device import CPU
from kael.runtime.dtypes import int64
from kael.runtime.errors import TypeError, UnsupportedDtype, ValueError
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl

MODES = ("constant", "reflect", "replicate", "circular")
# A constant pad of at most this many bytes fills the whole result, then copies the middle
# in (two launches, which the door replays while each stays inline); a bigger one fills
# only the padding (a launch per side), so the middle is written once. Filling the middle
# too costs less than the launches it saves up to here ([256, 256] padded by 1 on every
# side, 1 thread: 58 -> 12 us; torch 13).
SMALL_BYTES = 1 << 19


def _source(i: int, size: int, mode: str) -> int:
    """The input position padded position i (relative to the input's start) reads."""
    if mode == "replicate":
        return min(max(i, 0), size - 1)
    if mode == "circular":
        return i % size
    period = 2 * (size - 1)  # reflect: ... 2 1 | 0 1 2 3 | 2 1 ...
    i = abs(i) % period if period else 0
    return period - i if i >= size else i


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """`input` padded: pad = (left of the last dim, right of it, left of the one before,
    ...); negative amounts crop. value fills constant padding (0 by default)."""
    door = _door_key(input, pad, mode, value)
    if door is not None:
        kept = _DOOR.get(door)
        if kept is not None:
            return _replay(kept, input._impl)
    x = tensor_arg(input, "pad")
    amounts = tuple(views.as_int(p, "pad") for p in pad)
    if len(amounts) % 2:
        raise ValueError(f"Padding length must be divisible by 2, got {len(amounts)}")
    dims = len(amounts) // 2
    if dims > x.ndim:
        raise ValueError(f"Padding length {len(amounts)} is too large for a {x.ndim}-D input")
    if mode not in MODES:
        raise ValueError(f"pad: mode must be one of {MODES}, got {mode!r}")
    if mode != "constant" and value not in (None, 0, 0.0):
        raise ValueError(f"Padding mode {mode!r} doesn't take in value argument")
    sides = [(amounts[2 * i], amounts[2 * i + 1]) for i in range(dims)]  # last dim first
    if mode == "constant":
        return _constant(x, sides, 0 if value is None else value, door)
    if dims > 3 or x.ndim not in (dims + 1, dims + 2):  # PyTorch's supported combinations
        raise ValueError(
            f"Padding size {len(amounts)} is not supported for {x.ndim}D input tensor"
            f" ({mode} padding of k dims takes a (k + 1)-D or (k + 2)-D input, k <= 3)"
        )
    if x.dtype.is_bool and mode in ("reflect", "replicate"):
        raise UnsupportedDtype(f"pad: {mode} padding is not implemented for bool (as in PyTorch)")
    if mode != "circular" and x.numel() and min(amounts) >= 0:
        for k, (left, right) in enumerate(sides):
            _check_side(mode, x, x.ndim - 1 - k, x.shape[-1 - k], left, right)
        return _by_copies(x, sides, mode)

    def padded(out: Tensor, first: int) -> Tensor:  # x's dim d is out's dim d - 2 + first
        for k, (left, right) in enumerate(sides):
            d = x.ndim - 1 - k
            at = d - 2 + first
            _check_size(out.shape[at], left, right, d)
            if mode == "circular" and (left < 0 or right < 0):  # PyTorch crops, then wraps
                start, stop = max(-left, 0), out.shape[at] - max(-right, 0)
                out = out.narrow(at, start, max(stop - start, 0))
                left, right = max(left, 0), max(right, 0)
            size = out.shape[at]
            _check_side(mode, x, d, size, left, right)
            positions = [_source(i, size, mode) for i in range(-left, size + right)]
            index = factories.tensor(positions, dtype=int64, device=x.device)  # may be empty
            out = index_ops.index_select(out, at, index)
        return out

    # torch's circular result is row-major; its others keep a channels-last input's format
    if mode == "circular" or x.ndim != dims + 2:
        return padded(x, 2)
    return memory_formats.in_memory_order(x, padded)


def _check_side(mode: str, x: Tensor, d: int, size: int, left: int, right: int) -> None:
    """PyTorch's limits on padding dim d of x, `size` long, by (left, right)."""
    if mode == "replicate" and not size and (left > 0 or right > 0):
        raise ValueError(
            f"pad: replicate padding of an empty dimension has nothing to repeat: dimension"
            f" {d} of input {list(x.shape)} (torch: other non-zero dimensions expected)"
        )
    if mode == "reflect" and (left >= size or right >= size):
        raise ValueError(
            f"Argument #4: Padding size should be less than the corresponding input"
            f" dimension, but got: padding ({left}, {right}) at dimension {d} of input"
            f" {list(x.shape)}"
        )
    if mode == "circular" and (left > size or right > size):
        raise ValueError(
            f"Padding value causes wrapping around more than once: ({left}, {right}) for"
            f" dimension {d} of size {size}"
        )


def _by_copies(x: Tensor, sides: list[tuple[int, int]], mode: str) -> Tensor:
    """reflect or replicate padding by amounts >= 0 of a nonempty x: x copied into the
    middle of a new tensor in its suggested format (torch keeps channels-last), then each
    padded dim's two borders copied from the tensor itself, read backwards (reflect) or
    repeated (replicate) by the source view's stride. The last dim goes first, and each
    later dim's borders span the earlier ones' whole padded extent, so the corners come
    right. One read of x and one write of the result, each copy one kernel (a gather per
    dim read every element of every pass before: [8, 64, 56, 56] by 2, 8.3 -> 1.3 ms)."""
    shape = list(x.shape)
    for k, (left, right) in enumerate(sides):
        shape[-1 - k] += left + right
    fmt = memory_formats.suggested(x._impl)
    out = factories.empty(tuple(shape), dtype=x.dtype, device=x.device, memory_format=fmt)._impl
    window = [(0, n) for n in shape]  # (start, stop) of each dim written so far
    for k, (left, _) in enumerate(sides):
        window[-1 - k] = (left, left + x.shape[-1 - k])
    eager.copy_into(_part(out, window), x._impl)
    for k, (left, right) in enumerate(sides):
        d, size = x.ndim - 1 - k, x.shape[-1 - k]
        last = left + size - 1  # the middle's last position along d
        if mode == "reflect":  # position j reads 2 left - j, and 2 last - j past the end
            borders = ((0, left, 2 * left, -1), (last + 1, right, last - 1, -1))
        else:  # replicate: the edge repeated
            borders = ((0, left, left, 0), (last + 1, right, last, 0))
        for start, count, source, step in borders:
            if count:
                window[d] = (start, start + count)
                target = _part(out, window)
                window[d] = (source, source + 1)
                edge = _part(out, window)
                strides = list(edge.strides)
                strides[d] *= step
                eager.copy_into(target, views.derive(edge, target.shape, strides, edge.offset))
        window[d] = (0, shape[d])
    return Tensor(out)


def _part(impl: TensorImpl, window: list[tuple[int, int]]) -> TensorImpl:
    """The box of impl between each dim's (start, stop)."""
    for d, (start, stop) in enumerate(window):
        impl = narrowed(impl, d, start, stop - start)
    return impl


def _check_size(size: int, left: int, right: int, d: int) -> int:
    """Dim d's padded size, refused where negative amounts make it negative."""
    if size + left + right < 0:
        raise ValueError(
            f"The input size {size}, plus negative padding {left} and {right} resulted in a"
            f" negative output size, which is invalid. Check dimension {d} of your input."
        )
    return size + left + right


def _constant(x: Tensor, sides: list[tuple[int, int]], value, door=None) -> Tensor:
    """A new tensor of the padded shape filled with value, x (cropped where an amount is
    negative) copied into its middle; a small one's launches are kept for `door`."""
    shape = list(x.shape)
    src = [slice(None)] * x.ndim
    dst = [slice(None)] * x.ndim
    for k, (left, right) in enumerate(sides):
        d = x.ndim - 1 - k
        size = x.shape[d]
        shape[d] = _check_size(size, left, right, d)
        src[d] = slice(max(-left, 0), size - max(-right, 0))
        dst[d] = slice(max(left, 0), max(left, 0) + max(size - max(-left, 0) - max(-right, 0), 0))
    if not isinstance(value, (bool, int, float)):
        raise TypeError(f"pad: value must be a number, got {type(value).__name__}")
    shape = tuple(shape)
    middle = all(s.stop > s.start for s in src if s.start is not None) and x.numel()
    fmt = memory_formats.suggested(x._impl)  # channels-last stays so, as torch's pad keeps it
    if math.prod(shape) * x.dtype.itemsize <= SMALL_BYTES:  # two launches, not one a side
        out = factories.full(shape, value, dtype=x.dtype, device=x.device)
        if fmt is not memory_formats.contiguous_format:  # (a fill has no layout to follow)
            out = Tensor(
                memory_formats.restrided(out._impl, memory_formats.format_strides(shape, fmt))
            )
        if middle:
            inner, part = out[tuple(dst)], x[tuple(src)]
            inner.copy_(part)
            if door is not None:
                _keep(door, x, out, value, (inner._impl, part._impl))
        elif door is not None:
            _keep(door, x, out, value, None)
        return out
    out = factories.empty(shape, dtype=x.dtype, device=x.device, memory_format=fmt)
    if middle:
        out[tuple(dst)] = x[tuple(src)]
    for d, inner in enumerate(dst):  # only the padding is filled: one pass over the middle
        if inner.start is None:  # a dim without padding
            continue
        for part in (slice(0, inner.start), slice(inner.stop, shape[d])):
            if part.stop > part.start:
                out[(slice(None),) * d + (part,)] = value
    return out


# The fast door of a small constant pad (a host input, the fill and the middle's copy
# each one inline launch), keyed by the input's dtype and layout, the amounts and the
# value (a float by its bits): the fill, then the copy of the input's kept part into the
# middle, replayed over a fresh buffer ([4, 16], (1, 1), 1 thread, one run on a loaded
# machine: 18 -> 2.8 us; torch 3.1).
_DOOR: dict[tuple, tuple] = {}
_DOOR_MAX = 1024


def _door_key(input, amounts, mode, value) -> tuple | None:
    """The door's key of a constant pad of a plain tensor by ints, or None."""
    if mode != "constant" or type(input) not in fastpath.PLAIN or not fastpath._open():
        return None
    if type(amounts) not in (tuple, list) or any(type(a) is not int for a in amounts):
        return None
    if value is not None and type(value) not in (int, float, bool):
        return None
    x = input._impl
    if x.device is not CPU:
        return None
    number = value.hex() if type(value) is float else value  # -0.0 is not 0.0
    return (x.dtype, x.shape, x.strides, tuple(amounts), type(value), number)


def _keep(door: tuple, x: Tensor, out: Tensor, value, copied: tuple | None) -> None:
    """Keep the fill of `out` and the copy of x's part into its middle (`copied`: the
    middle's and the part's impls, or None) where both run inline."""
    o = out._impl
    n = o.numel()
    fill = fastpath.inline_fill(o.dtype, value, n)
    if fill is None or len(_DOOR) >= _DOOR_MAX:
        return
    copy = None
    if copied is not None:
        inner, part = copied
        found = fastpath.inline_copy(o.dtype, inner.shape, inner.strides, part.strides)
        if found is None or part.storage is not x._impl.storage:
            return
        size = o.dtype.itemsize
        copy = (*found, inner.offset * size, (part.offset - x._impl.offset) * size)
    _DOOR[door] = (fill, n, copy, o.shape, o.strides, o.dtype)


def _replay(kept: tuple, x) -> Tensor:
    """The remembered fill and copy over a fresh buffer and this call's input (an impl)."""
    (fill, word), n, copy, shape, strides, dtype = kept
    storage = Storage.host(n * dtype.itemsize)
    fastpath._native(fill.address, n, storage.ptr, n, word)
    if copy is not None:
        native, total, into, distance = copy
        source = x.storage.ptr + x.offset * x.dtype.itemsize + distance
        fastpath._native(native.address, total, storage.ptr + into, source)
    return fastpath._result(storage, shape, strides, dtype)


FUNCTIONS = {"pad": op_door("pad", pad)}
