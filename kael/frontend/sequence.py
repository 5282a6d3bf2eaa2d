"""Sequence ops along one dimension: cumsum, cumprod, tril, triu, flip, roll.

Scans run kael/codegen/cpu/scan.py's row kernels over any layout. tril and triu are
elementwise kernels that compare the row and column positions, so they compile for CPU
and PTX alike. flip copies from a view with negated strides and roll copies narrowed
views into the matching narrowed outputs: every byte comes from a compiled copy. On the
host a repeated call (same dtype, layout and arguments) replays the launches the first
one ran (fastpath.shaped_launch): tril's and triu's, flip's copy, each of roll's blocks.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from kael.codegen.cpu import scan
from kael.frontend import eager, factories, fastpath, views
from kael.frontend import elementwise as ew
from kael.frontend.memory_formats import (
    Layout,
    contiguous_format,
    copy_with,
    format_strides,
    layout_for,
    preserve_format,
    restrided,
    suggested,
)
from kael.frontend.outputs import (
    check_writable,
    dtype_from_out,
    output,
    pair_out,
    tensor_arg,
    unaliased,
)
from kael.frontend.reductions import ValuesIndices
from kael.frontend.shapes import dense_copy
from kael.frontend.tensor import Tensor, empty_impl
from kael.frontend.views import narrowed
from kael.ir import graph as g
from kael.runtime.device import CPU
from kael.runtime.dtypes import DType, as_dtype, bool_, int64, uint8
from kael.runtime.errors import Error, NotImplementedError, TypeError, UnsupportedDtype
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl, contiguous_strides


def _ints(value, what: str) -> tuple[int, ...]:
    """An int or a tuple/list of int64 ints as a tuple; TypeError naming `what` otherwise."""
    if isinstance(value, (tuple, list)):
        return tuple(views.as_int64(v, f"{what} element {i}") for i, v in enumerate(value))
    return (views.as_int64(value, what),)


# ---- cumsum, cumprod -------------------------------------------------------------------------


def _scan_dtype(x: Tensor, dtype, op: str) -> DType:
    """The result dtype: `dtype` if given, else x's float dtype, else int64."""
    if dtype is not None:
        result = as_dtype(dtype)
        if result is bool_:
            raise TypeError(f"{op}: dtype bool is not supported, use int64")
        return result
    return x.dtype if x.dtype.is_floating_point else int64


# From this many elements a scan whose layouts differ goes through a buffer in src's layout.
STAGE_ELEMENTS = 1 << 16


def _in_layout_of(impl: TensorImpl, dtype: DType) -> TensorImpl:
    """A new dense impl whose dims are ordered in memory like impl's (by its strides)."""
    order = sorted(range(impl.dim()), key=lambda d: -impl.strides[d])
    strides, step = [0] * impl.dim(), 1
    for d in reversed(order):
        strides[d] = step
        step *= max(impl.shape[d], 1)
    storage = Storage(impl.numel() * dtype.itemsize, impl.device)
    return TensorImpl(storage, impl.shape, strides, 0, dtype, impl.device)


def _scan_on_cpu(op: str, src: TensorImpl, dst: TensorImpl, dim: int) -> None:
    """The scan, staged in src's layout and then copied when dst's layout would make it
    walk memory with a large stride (a transposed input into a contiguous result); a scan
    in one launch from src to dst is offered to the fast door (fastpath.keyed)."""
    read = unaliased(src, dst)
    if read.numel() >= STAGE_ELEMENTS and scan.walks_strided(read, dst, dim):
        staged = _in_layout_of(read, dst.dtype)
        if not scan.walks_strided(read, staged, dim):
            scan.run(op, read, staged, dim)
            eager.copy_into(dst, staged)
            return
    launched = scan.run(op, read, dst, dim)
    if launched is not None and read is src and fastpath.capturing():
        fn, words, items, moved = launched
        fastpath.capture_launch(fn, words, items, moved, 1, (src,), (dst,), (1, 0))


def _run_scan(op: str, src: TensorImpl, dst: TensorImpl, dim: int) -> None:
    """dst = scan of src: on the CPU staged where a layout would make it walk memory with a
    large stride; on a GPU the same kernels, one work item a thread."""
    if dst.device is CPU:
        _scan_on_cpu(op, src, dst, dim)
        return
    scan.run(op, unaliased(src, dst), dst, dim)


def _scan(op: str, input: Tensor, dim, dtype, out: Tensor | None) -> Tensor:
    x = tensor_arg(input, op)
    d = views.wrap_dim(dim, x.ndim)
    result = output(out, x.shape, _scan_dtype(x, dtype, op), x.device, op)
    _run_scan(op, x._impl, result._impl, d)
    if out is not None:
        out._impl.storage.bump_version()
    return result


def _scan_(op: str, self: Tensor, dim, dtype) -> Tensor:
    name = f"{op}_"
    tensor_arg(self, name)
    d = views.wrap_dim(dim, self.ndim)
    if self.dtype.is_bool:  # a 0-d or empty one is itself, as torch's (no kernel runs)
        if (not self.ndim or not self.numel()) and dtype is None:
            return self
        raise NotImplementedError(f"\"{op}_out_cpu\" not implemented for 'Bool'")
    # in place, a scan keeps self's dtype (int8 wraps), as PyTorch's
    result = self.dtype if dtype is None else _scan_dtype(self, dtype, name)
    if result is not self.dtype:
        raise TypeError(
            f"{name}: bad in-place call: input tensor dtype {self.dtype} and output tensor dtype"
            f" {result} should match"
        )
    check_writable(self, name)
    _run_scan(op, self._impl, self._impl, d)
    self._impl.storage.bump_version()
    return self


def _complex_dtype(dtype) -> bool:
    return dtype is not None and as_dtype(dtype).is_complex


def cumsum(input: Tensor, dim, *, dtype=None, out: Tensor | None = None) -> Tensor:
    """Running sums along `dim`; int and bool inputs give int64 (wrapping), floats keep theirs."""
    dtype = dtype_from_out(dtype, out)
    if isinstance(input, Tensor) and (input.dtype.is_complex or _complex_dtype(dtype)):
        from kael.frontend import complex

        if not input.dtype.is_complex:  # a complex dtype= for a real input: converted first
            input, dtype = input.to(as_dtype(dtype)), None
        return complex.cumsum(input, dim, dtype, out)
    return _scan("cumsum", input, dim, dtype, out)


def cumprod(input: Tensor, dim, *, dtype=None, out: Tensor | None = None) -> Tensor:
    """Running products along `dim`, with cumsum's dtype rule."""
    dtype = dtype_from_out(dtype, out)
    if isinstance(input, Tensor) and (input.dtype.is_complex or _complex_dtype(dtype)):
        from kael.frontend import complex

        if not input.dtype.is_complex:  # a complex dtype= for a real input: converted first
            input, dtype = input.to(as_dtype(dtype)), None
        return complex.cumprod(input, dim, dtype, out)
    return _scan("cumprod", input, dim, dtype, out)


def logcumsumexp(input: Tensor, dim, *, out: Tensor | None = None) -> Tensor:
    """log(cumsum(exp(input))) along `dim` without overflow: running sums in log space,
    in float64 (complex128 for complex inputs; floating and complex inputs only, as
    PyTorch)."""
    x = tensor_arg(input, "logcumsumexp")
    if x.dtype.is_complex:
        from kael.frontend import complex

        return complex.logcumsumexp(x, views.wrap_dim(dim, x.ndim), out)
    if not x.dtype.is_floating_point:
        raise UnsupportedDtype(
            f'"logcumsumexp" not implemented for {x.dtype} (floating point and complex only)'
        )
    return _scan("logcumsumexp", x, dim, None, out)


def _running_extreme(op: str):
    def running(input: Tensor, dim, *, out=None) -> ValuesIndices:
        x = tensor_arg(input, op)
        d = views.wrap_dim(dim, x.ndim)
        if out is not None:  # torch's out= pair
            return pair_out(out, running(x, d), op)
        if x.dtype.is_bool:  # a running or / and: the scan of its 0/1 bytes
            values, indices = running(x.to(uint8), d)
            return ValuesIndices(values.to(x.dtype), indices)
        values = _scan(op, x, d, x.dtype, None)
        # index: the last position taken (x equal to the running value, or NaN), running
        taken = ew.binary("eq", x, values)
        if x.dtype.is_floating_point:
            taken = ew.binary("logical_or", taken, ew.binary("ne", x, x))
        n = x.shape[d] if x.ndim else 1
        shape = [1] * max(x.ndim, 1)
        shape[d if x.ndim else 0] = n
        positions = factories.arange(n, device=x.device).reshape(tuple(shape) if x.ndim else ())
        marked = ew.where(taken, positions, 0)
        return ValuesIndices(values, _scan("cummax", marked, d, int64, None))

    running.__name__ = running.__qualname__ = op
    running.__doc__ = (
        f"torch.{op}: the running {'max' if op == 'cummax' else 'min'} along dim and the index"
        " it was taken at (a later equal value, and any NaN, takes over; NaN then stays)."
    )
    return running


cummax = _running_extreme("cummax")
cummin = _running_extreme("cummin")


def cumsum_(self: Tensor, dim, *, dtype=None) -> Tensor:
    """cumsum written into self; the result dtype must be self's."""
    return _scan_("cumsum", self, dim, dtype)


def cumprod_(self: Tensor, dim, *, dtype=None) -> Tensor:
    """cumprod written into self; the result dtype must be self's."""
    return _scan_("cumprod", self, dim, dtype)


# ---- tril, triu ------------------------------------------------------------------------------


def _triangle(name: str, x: Tensor, diagonal, out: Tensor, fast: tuple | None = None) -> None:
    """out = x where (column - row) is on the kept side of `diagonal`, else 0; the launch
    remembered under the fast door's key `fast` when one is given. A complex x: each
    part's triangle, written through the float views."""
    if x.dtype.is_complex:
        x, out, fast = _parts(x), _parts(out), None
    upper = name.startswith("triu")
    rank, dtype = x.ndim, x.dtype

    def build():
        row, col = g.Position(int64, (), rank - 2), g.Position(int64, (), rank - 1)
        offset = g.Binary(int64, (), "sub", col, row)
        keep = g.Binary(bool_, (), "ge" if upper else "le", offset, g.Scalar(int64, (), "diag"))
        value = g.Where(dtype, (), keep, g.Input(dtype, (), "x"), g.Const(dtype, (), 0))
        return f"{'triu' if upper else 'tril'}_{dtype}_{rank}d", [value]

    entry = eager.template(("triangle", upper, dtype, rank), build)
    # Past either edge every diagonal keeps all or nothing: clamp into int64 safely.
    edge = max(x.shape[-2:]) + 1
    diag = max(-edge, min(edge, diagonal))
    read = unaliased(x._impl, out._impl)
    eager.run(entry, [out._impl], [read], {"diag": diag})
    if fast is not None:
        fastpath.remember(fast, entry, (), (), out._impl, (read,), {"diag": diag})


def _check_matrix(x: Tensor, op: str) -> None:
    if x.ndim < 2:
        raise Error(f"{op}: input tensor must have at least 2 dimensions, got {x.ndim}")


def _parts(x: Tensor) -> Tensor:
    """A complex x's float view [..., 2, m, n]: the real and imaginary matrices."""
    from kael.frontend.complex import view_as_real

    return view_as_real(x).movedim(-1, -3)


def _triangle_key(name: str, impl: TensorImpl, diagonal: int) -> tuple:
    """The fast door's key of a new tril or triu of impl: its dtype, layout and diagonal."""
    return (fastpath.SHAPED, "triangle", name, impl.dtype, impl.shape, impl.strides, diagonal)


def _triangle_op(name: str) -> Callable:
    def fn(input: Tensor, diagonal=0, *, out: Tensor | None = None) -> Tensor:
        x = tensor_arg(input, name)
        _check_matrix(x, name)
        diagonal = views.as_int64(diagonal, "diagonal")
        impl = x._impl
        fast = None
        if out is None and impl.device is CPU:  # a new result: the launch keyed by layout
            fast = _triangle_key(name, impl, diagonal)
            done = fastpath.shaped_launch(fast, (impl,))
            if done is not None:
                return done
        result = output(out, x.shape, x.dtype, x.device, name)
        _triangle(name, x, diagonal, result, fast)
        if out is not None:
            out._impl.storage.bump_version()
        return result

    fn.__name__ = fn.__qualname__ = name  # Python's argument errors name the op
    part = "lower" if name == "tril" else "upper"
    fn.__doc__ = f"The {part} triangle of the last two dims (from `diagonal`); zeros elsewhere."
    return fn


def _triangle_inplace(name: str) -> Callable:
    def method(self: Tensor, diagonal=0) -> Tensor:
        _check_matrix(tensor_arg(self, f"{name}_"), f"{name}_")
        diagonal = views.as_int64(diagonal, "diagonal")
        check_writable(self, f"{name}_")
        _triangle(name, self, diagonal, self)
        self._impl.storage.bump_version()
        return self

    method.__name__ = f"{name}_"
    method.__qualname__ = f"Tensor.{name}_"
    method.__doc__ = f"{name} written into self."
    return method


tril = _triangle_op("tril")
triu = _triangle_op("triu")


# ---- flip, roll ------------------------------------------------------------------------------


def _dims(dims, ndim: int, op: str) -> list[int]:
    """Wrapped dims, each at most once."""
    wrapped = [views.wrap_dim(d, ndim) for d in _ints(dims, "dims")]
    for d in wrapped:
        if wrapped.count(d) > 1:
            raise Error(f"{op}: dim {d} appears multiple times in the list of dims {list(dims)}")
    return wrapped


def flip(input: Tensor, dims) -> Tensor:
    """A copy with the order of elements reversed along each of `dims`."""
    x = tensor_arg(input, "flip")
    if dims is None:
        raise TypeError("flip: dims must be an int or a tuple of ints, got None")
    wrapped = _dims(dims, x.ndim, "flip")  # a 0-d tensor accepts 0 and -1, and has no dim to flip
    flipped = set(wrapped) if x.ndim else set()
    impl = x._impl
    if impl.numel() == 0:
        return Tensor(empty_impl(x.shape, x.dtype, x.device))
    strides, offset = list(impl.strides), impl.offset
    for d in flipped:
        offset += (impl.shape[d] - 1) * strides[d]
        strides[d] = -strides[d]
    # Negative strides are for this copy only: such a view never becomes a Tensor.
    flipped = views.derive(impl, impl.shape, strides, offset)
    layout = layout_for(impl, preserve_format)  # torch's result is empty_like(input)
    if layout == contiguous_strides(impl.shape):
        return dense_copy(flipped)
    return Tensor(copy_with(flipped, layout))


def _roll_shifts(x: Tensor, shifts, dims) -> list[tuple[int, int]]:
    """(dim, shift) pairs in the order given, dims wrapped."""
    shift_list = _ints(shifts, "shifts")
    if not shift_list:
        raise Error("roll: `shifts` required")
    if dims is None:
        if len(shift_list) != 1:
            raise Error(
                f"roll: shifts and dimensions must align. shifts: {len(shift_list)}, dims: 0"
            )
        return [(0, shift_list[0])]
    dim_list = _ints(dims, "dims")
    if len(shift_list) != len(dim_list):
        raise Error(
            f"roll: shifts and dimensions must align. shifts: {len(shift_list)},"
            f" dims: {len(dim_list)}"
        )
    return [(views.wrap_dim(d, x.ndim, wrap_scalar=False), s) for s, d in zip(shift_list, dim_list)]


def _roll_format(x: TensorImpl, steps: list[tuple[int, int]]):
    """The format of torch's roll result: it cats two slices per dim in turn, and cat
    keeps channels-last only while every slice suggests it (a shift by a multiple of the
    size makes an empty slice, which suggests row-major)."""
    fmt = suggested(x)
    for d, s in steps:
        if fmt is contiguous_format:
            break
        n = x.shape[d]
        start = (n - s) % n
        strides = format_strides(x.shape, fmt)
        for size in (n - start, start):
            part = Layout((*x.shape[:d], size, *x.shape[d + 1 :]), strides)
            if suggested(part) is not fmt:
                fmt = contiguous_format
    return fmt


def roll(input: Tensor, shifts, dims=None) -> Tensor:
    """A copy with elements moved `shifts` places along `dims`, wrapping around the end.

    Without dims the tensor is rolled as if flattened, then given back its shape.
    """
    x = tensor_arg(input, "roll")
    steps = _roll_shifts(x, shifts, dims)
    total: dict[int, int] = {}  # repeated dims add up
    for d, s in steps:
        total[d] = total.get(d, 0) + s
    src = x._impl if dims is not None else x.reshape(-1)._impl
    if dims is None:
        strides = contiguous_strides(src.shape)
    elif src.numel():
        strides = format_strides(src.shape, _roll_format(src, steps))
    else:  # torch clones an empty input in its own layout
        strides = layout_for(src, preserve_format)
    out = restrided(empty_impl(src.shape, src.dtype, src.device), strides)
    if out.numel() > 0:
        # Each moving dim splits into two blocks: out[s:] = src[:n - s], out[:s] = src[n - s:].
        parts = []
        for d, s in total.items():
            n = src.shape[d]
            s %= n
            if s:
                parts.append([(d, s, 0, n - s), (d, 0, n - s, s)])
        for blocks in itertools.product(*parts):
            dst_view, src_view = out, src
            for d, dst_start, src_start, length in blocks:
                dst_view = narrowed(dst_view, d, dst_start, length)
                src_view = narrowed(src_view, d, src_start, length)
            fastpath.copy_remembered(dst_view, src_view)
    result = Tensor.trusted(out)  # empty_impl's layout: valid by making
    return result if dims is not None else result.view(x.shape)


# The scans whose public function and method are fastpath.keyed's door itself.
FAST = ("cumsum", "cumprod", "logcumsumexp")
FUNCTIONS: dict[str, Callable] = {
    "cumsum": cumsum,
    "cumprod": cumprod,
    "logcumsumexp": logcumsumexp,
    "cummax": cummax,
    "cummin": cummin,
    "tril": tril,
    "triu": triu,
    "flip": flip,
    "roll": roll,
}


def _flip_method(self: Tensor, *dims, **kwargs) -> Tensor:
    """Tensor.flip(0, 1) as well as flip((0, 1)) and flip(dims=...), as in torch."""
    if not dims:
        return flip(self, **kwargs)
    return flip(self, dims[0] if len(dims) == 1 else dims, **kwargs)


METHODS: dict[str, Callable] = {
    "flip": _flip_method,
    "cumsum_": cumsum_,
    "cumprod_": cumprod_,
    "tril_": _triangle_inplace("tril"),
    "triu_": _triangle_inplace("triu"),
}
NOT_METHODS: frozenset[str] = frozenset()
