"""Checks every op family shares on its operands, arguments and result: out=, devices,
aliasing, and bool, float and Scalar arguments."""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Sequence

from kael.frontend import eager, fastpath
from kael.frontend.memory_formats import (
    Layout,
    contiguous_format,
    converted,
    format_strides,
    is_non_overlapping_and_dense,
    layout_for,
    preserve_format,
    restrided,
    result_strides,
    suggested,
)
from kael.frontend.tensor import Tensor, empty_impl, has_internal_overlap
from kael.runtime import user_warning
from kael.runtime.device import CPU, Device
from kael.runtime.dtypes import INT64_MIN, UINT64_MAX, DType
from kael.runtime.errors import Error, TypeError, ValueError
from kael.runtime.tensor_impl import TensorImpl, read_hazard


def pair_out(out, result: tuple, op: str):
    """A (values, indices) result written into out's pair of tensors as torch's out= does
    for sort, topk and the other ops that return both (each resized to its piece, warning
    when it held elements; dtypes must match), returned as a result of the same type; the
    result itself when out is None."""
    if out is None:
        return result
    if not (isinstance(out, tuple | list) and len(out) == 2):
        raise TypeError(
            f"{op}(): out must be a (values, indices) pair of tensors, got {type(out).__name__}"
        )
    for t in out:
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): out must hold two tensors, got a {type(t).__name__}")
    return type(result)(*(written_out(o, r, op) for o, r in zip(out, result)))


def resize_output(out: Tensor, shape: tuple[int, ...]) -> None:
    """out resized to `shape` when it has another, as torch's out= does: silently when it
    is empty, with torch's deprecation warning when it held elements."""
    if out.shape == shape:
        return
    if out.numel():
        user_warning.warn(
            f"An output with one or more elements was resized since it had shape"
            f" {list(out.shape)}, which does not match the required output shape"
            f" {list(shape)}. This behavior is deprecated, and in a future PyTorch release"
            " outputs will not be resized unless they have zero elements.",
            UserWarning,
        )
    out.resize_(shape)


def check_out_dtype(out: Tensor, piece: Tensor, op: str) -> None:
    """out refused unless it has piece's dtype: these out= forms convert nothing."""
    if out.dtype is not piece.dtype:
        raise TypeError(
            f"{op}(): Expected out tensor to have dtype {piece.dtype}, but got {out.dtype} instead"
        )


def written_out(
    out: Tensor, piece: Tensor, op: str, cast: bool = False, elementwise: bool = False
) -> Tensor:
    """piece written into out as ATen's out= forms do (the *_copy views, and sort's and the
    other (values, indices) ops' pairs: outputs.pair_out): out resized to piece's shape
    (warning when it held elements), then its dtype and device checked. A `cast` op (a
    TensorIterator op in torch) converts piece into any dtype out may take (check_cast);
    an `elementwise` one's resized out takes piece's layout, as torch's iterator lays out
    a resized out as it would a new result (atan2 of transposed inputs: column-major)."""
    resized = out.shape != piece.shape
    if cast and out.dtype is not piece.dtype:
        check_cast(piece.dtype, out.dtype, op)  # before the resize: a refused out is kept
        resize_output(out, piece.shape)
    else:
        resize_output(out, piece.shape)
        check_out_dtype(out, piece, op)
    device_of([piece, out], op)
    if elementwise and resized:
        _laid_out_as(out, piece)
    return out.copy_(piece)


def _laid_out_as(out: Tensor, result: Tensor) -> None:
    """An out= that had to be resized takes the result's dense layout, as torch lays out a
    resized out as it would a new result (atan2 of transposed inputs, a LAPACK factor:
    column-major); one of the right size keeps its own."""
    layout = result._impl
    moved = result.ndim > 1 and layout.strides != out._impl.strides
    if moved and is_non_overlapping_and_dense(layout):
        out.as_strided_(result.shape, layout.strides)


def copied_out(result: Tensor, out, op: str, cast: bool = False) -> Tensor:
    """`result`, or copied into `out`: of its dtype and device, resized to its shape as
    torch's resize_output does (silently when empty, with torch's warning otherwise); a
    `cast` op's out may have any dtype the result casts to (outputs.check_cast); a resized
    out takes the result's layout (_laid_out_as)."""
    if out is None:
        return result
    dtype = result.dtype
    if cast and isinstance(out, Tensor) and out.dtype is not dtype:
        check_cast(dtype, out.dtype, op)
        dtype = out.dtype
    resized = isinstance(out, Tensor) and out.shape != result.shape
    out = output(out, result.shape, dtype, result.device, op)
    if resized:
        _laid_out_as(out, result)
    return out.copy_(result)


def check_cast(result: DType, target: DType, op: str) -> None:
    """torch's canCast between an op's result and its out=: no float into an integral or
    bool out, no complex into a real one, nothing but bool into bool (kael.TypeError in
    torch's words)."""
    if not can_cast(result, target):
        raise TypeError(
            f"{op}: result type {result} can't be cast to the desired output type {target}"
        )


def can_cast(source: DType, target: DType) -> bool:
    """Whether torch casts a value of `source` into a tensor of `target` (canCast): never a
    complex one into a real one, a floating one into an integral or bool one, nor any but
    bool into bool."""
    if source.is_complex and not target.is_complex:
        return False
    if source.is_floating_point and not (target.is_floating_point or target.is_complex):
        return False
    return source.is_bool or not target.is_bool


def dtype_from_out(dtype, out):
    """The dtype a reduction of torch's that reads it from out= (sum, prod, nansum, cumsum,
    cumprod: get_dtype_from_result) computes in: dtype= where given, else out's dtype, else
    None (the op's own rule)."""
    return out.dtype if dtype is None and isinstance(out, Tensor) else dtype


def float_from_out(target: DType, out, op: str) -> DType:
    """The dtype mean and nanmean compute in given out= and no dtype=: a floating out's (a
    float32 mean into a float64 out sums in float64, as torch's), `target` (the input's)
    for any other, whose cast check_cast refuses in torch's words."""
    if not isinstance(out, Tensor) or out.dtype is target:
        return target
    if out.dtype.is_floating_point:
        return out.dtype
    check_cast(target, out.dtype, op)
    return target


def cast_back(target: Tensor, out: Tensor | None) -> Tensor:
    """The op's result: `target` itself, or, where output(cast=True) gave a stand-in of the
    result's dtype for an `out` of another, out with the stand-in cast into it (torch's CPU
    TensorIterator computes in the common dtype and copies into such an out after)."""
    return target if out is None or target is out else out.copy_(target)


def output(
    out: Tensor | None,
    shape: tuple[int, ...],
    dtype: DType,
    device,
    op: str,
    operands: Sequence = (),
    common=None,
    cast: bool = False,
    reads: Sequence = (),
) -> Tensor:
    """A new result tensor, or `out` checked to have the result's dtype and device and
    resized to its shape as torch does (resize_output), unless it shares memory with an
    operand or one of `reads` (tensors the op reads): a resize would change what the op
    reads, so that is refused, as torch's iterator refuses it. An elementwise op passes its
    `operands` (tensors, numbers, or a TensorImpl or memory_formats.Layout standing for a
    tensor, in call order): a new or resized result is then laid
    out as torch's TensorIterator lays it out over them (memory_formats.result_strides),
    reading an operand of another dtype than `common` as its converted copy. A `cast` op
    (one torch builds with cast_common_dtype_to_outputs) takes an out of any dtype the
    result casts to (check_cast): the op then writes a new tensor of `dtype` laid out as
    out, which cast_back copies into it."""
    if out is None:
        return Tensor(new_result(shape, dtype, device, operands, common))
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}: out must be a Tensor, got {type(out).__name__}")
    if out.dtype is not dtype:
        if not cast:
            raise TypeError(f"{op}: out has dtype {out.dtype} but the result has dtype {dtype}")
        check_cast(dtype, out.dtype, op)
        output(out, shape, out.dtype, device, op, operands, common, reads=reads)
        return Tensor(new_result(shape, dtype, device, (out,)))
    if out.device is not device:
        raise Error(f"{op}: out is on {out.device} but the operands are on {device}")
    check_writable(out, op)
    if out.shape != shape:
        _refuse_resizing_an_operand(out, shape, (*operands, *reads), op)
        strides = None if len(shape) < 2 else _result_strides(shape, operands, common)
        resize_output(out, shape)
        if strides is not None and strides != out._impl.strides:
            out.as_strided_(shape, strides)
    return out


def _refuse_resizing_an_operand(out: Tensor, shape: tuple, operands: Sequence, op: str) -> None:
    """kael.ValueError where `out` (to be resized to `shape`) shares memory with an operand:
    its resize would change the operand before the op reads it (new elements read from
    uninitialized memory)."""
    target = out._impl
    size = target.dtype.itemsize
    start = target.offset * size  # resize_ keeps the offset and lays the new shape densely
    end = start + math.prod(shape) * size
    for x in operands:
        impl = x._impl if isinstance(x, Tensor) else x
        if not isinstance(impl, TensorImpl) or impl.storage is not target.storage:
            continue
        low, high = _extent(impl)
        if low < end and start < high:
            raise ValueError(
                f"{op}: output with shape {list(out.shape)} doesn't match the result's shape"
                f" {list(shape)}, and it shares memory with an input, so it cannot be resized"
            )


def _extent(impl: TensorImpl) -> tuple[int, int]:
    """The bytes [low, high) of its storage that `impl`'s elements span."""
    size = impl.dtype.itemsize
    if not impl.numel():
        return impl.offset * size, impl.offset * size
    low = high = impl.offset
    for n, stride in zip(impl.shape, impl.strides):
        if stride > 0:
            high += (n - 1) * stride
        else:
            low += (n - 1) * stride
    return low * size, (high + 1) * size


def new_result(
    shape: tuple[int, ...], dtype: DType, device, operands: Sequence, common=None
) -> TensorImpl:
    """A new elementwise result over `operands` (tensors and numbers, in call order), laid
    out as torch's TensorIterator lays it out (row-major without operands); `common`: the
    dtype the op converts its operands to (see _result_strides)."""
    impl = empty_impl(shape, dtype, device)
    if len(shape) > 1 and not _row_major(operands):
        impl = restrided(impl, _result_strides(shape, operands, common))
    return impl


def _row_major(operands: Sequence) -> bool:
    """Whether every tensor operand is row-major (its own shape's dense strides): their
    result then is too, broadcast or not (the common case, asked first)."""
    for x in operands:
        if isinstance(x, Tensor):
            x = x._impl
        elif not isinstance(x, TensorImpl | Layout):
            continue
        if x.strides != fastpath.dense_strides(x.shape):
            return False
    return True


def like_result(impl: TensorImpl, dtype: DType | None = None) -> TensorImpl:
    """A new result laid out as torch's empty_like(impl) (preserve_format): the ops whose
    torch kernel allocates so (nan_to_num, hardtanh, prelu, frexp) keep even a size-1 dim's
    stride."""
    new = empty_impl(impl.shape, impl.dtype if dtype is None else dtype, impl.device)
    return restrided(new, layout_for(impl, preserve_format))


def format_result(like: TensorImpl, shape: tuple[int, ...], dtype: DType) -> TensorImpl:
    """A new result of `shape` in like's suggested memory format, as torch's kernels that
    allocate by input.suggest_memory_format() lay theirs out (pools, batch_norm,
    group_norm): a channels-last input's result is channels-last, any other row-major."""
    new = empty_impl(shape, dtype, like.device)
    fmt = suggested(like)
    return new if fmt is contiguous_format else restrided(new, format_strides(shape, fmt))


def _result_strides(shape: tuple[int, ...], operands: Sequence, common) -> tuple[int, ...]:
    """result_strides over the tensor operands, the numbers placed after them as torch's
    wrapped numbers are; an operand of another dtype than `common` (a DType, or one per
    operand, None where none is converted) read as its converted copy."""
    targets = common if isinstance(common, tuple) else (common,) * len(operands)
    tensors = []
    for x, target in zip(operands, targets):
        if isinstance(x, Tensor):
            impl = x._impl
            tensors.append(impl if target is None or impl.dtype is target else converted(impl))
        elif isinstance(x, TensorImpl | Layout):  # a layout the caller stands in for one
            tensors.append(x)
    return result_strides(shape, tensors, len(tensors) < len(operands))


def type_name(x) -> str:
    """x's type as an error names it: another library's Tensor (torch's) by its module too,
    with the way to convert it, so "expected a Tensor, got Tensor" never reads."""
    kind = type(x)
    if kind.__name__ != "Tensor" or isinstance(x, Tensor):
        return kind.__name__
    library = kind.__module__.split(".")[0]
    return f"{library}.Tensor (convert it with kael.from_dlpack or kael.tensor)"


def tensor_arg(x, op: str, what: str = "input") -> Tensor:
    """x itself when it is a Tensor, else a kael.TypeError naming the op, the argument and
    the type given."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): {what} must be a Tensor, got {type_name(x)}")
    return x


def tensor_param(value, op: str, what: str = "input") -> Tensor:
    """value itself when it is a Tensor, else a kael.TypeError in PyTorch's argument parser's
    words (torch.NAME's forms and the recurrent layers say it as torch does)."""
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}(): argument '{what}' must be Tensor, not {type_name(value)}")
    return value


def bool_arg(value, op: str, what: str) -> bool:
    """A Python bool argument (keepdim, equal_nan): PyTorch refuses ints, strings and NumPy
    bools there, so kael.TypeError naming the op, the argument and the type given."""
    if not isinstance(value, bool):
        raise TypeError(f"{op}(): {what} must be a bool, got {_type_name(value)}")
    return value


def int_arg(value, op: str, what: str) -> int:
    """A Python int argument (bools refused, as PyTorch's parser refuses them); kael.TypeError
    naming the op, the argument and the type given."""
    if type(value) is not int:
        raise TypeError(f"{op}(): argument '{what}' must be int, not {type(value).__name__}")
    return value


def _type_name(value) -> str:
    """A value's type as a message names it: numpy.bool apart from Python's bool."""
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"


def float_arg(value, op: str, what: str) -> float:
    """A float argument (eps, rtol) as a Python float; ints, bools and NumPy numbers convert
    as in PyTorch. kael.TypeError for a non-number, kael.ValueError for an int no float holds."""
    if not isinstance(value, numbers.Real):
        raise TypeError(f"{op}(): {what} must be a float, got {_type_name(value)}")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{op}(): {what} {value} is too large for a float") from None


def scalar_arg(value, op: str, what: str) -> int | float:
    """A number argument PyTorch reads as a Scalar (var's correction, norm's p): a float, or
    an int that int64 or uint64 holds (beyond, kael.ValueError naming it); bools refused. A
    0-d real tensor gives its value, as torch's parser reads a Scalar from one."""
    if isinstance(value, Tensor) and not value.shape and not value.dtype.is_complex:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{op}(): {what} must be a number, got {_type_name(value)}")
    if not isinstance(value, numbers.Integral):
        return float(value)
    value = int(value)
    if not INT64_MIN <= value <= UINT64_MAX:
        raise ValueError(f"{op}(): {what} {value} is out of the range of int64 and uint64")
    return value


def check_writable(t: Tensor, op: str) -> None:
    """Refuse to write a tensor whose elements share memory (an expanded view)."""
    if has_internal_overlap(t._impl):
        raise Error(
            f"{op}: unsupported operation: more than one element of the written-to tensor refers"
            " to a single memory location. Please clone() the tensor before performing the"
            " operation."
        )


def device_of(tensors: Sequence, op: str, cpu_scalars: int | None = None) -> Device:
    """The one device all `tensors` (Tensors or impls) are on; kael.Error naming two others.
    Beside tensors on a GPU, up to `cpu_scalars` CPU 0-d tensors are admitted, read there
    as scalars as PyTorch's TensorIterator reads them (eager.run copies each over); by
    default as many as the elementwise op `op` admits (_cpu_scalar_limits)."""
    device = tensors[0].device
    for t in tensors[1:]:
        if t.device is not device:
            return _beside_cpu_scalars(tensors, op, cpu_scalars)
    return device


def _beside_cpu_scalars(tensors: Sequence, op: str, cpu_scalars: int | None) -> Device:
    """The device of `tensors` found on two: PyTorch's common device (the first that is
    not the CPU) where every other tensor is a CPU 0-d one, no more of them than `op`
    admits; else kael.Error naming the first two devices met."""
    limit = _cpu_scalar_limits().get(op, 0) if cpu_scalars is None else cpu_scalars
    device = next(t.device for t in tensors if t.device is not CPU)
    others = [t for t in tensors if t.device is not device]
    if len(others) > limit or any(t.device is not CPU or t.shape for t in others):
        first = tensors[0].device
        second = next(t.device for t in tensors if t.device is not first)
        raise Error(f"{op}: expected all tensors on one device, but found {first} and {second}")
    return device


@functools.cache
def _cpu_scalar_limits() -> dict[str, int]:
    """How many CPU 0-d operands each elementwise op reads as scalars beside a GPU's
    tensors, by the name it checks its devices under: one for the binary ops in each form
    (x + t, x.add_(t)) and for clamp_min / clamp_max with a Tensor bound (ATen builds them
    as binary ops, which allow_cpu_scalars), any number for where (ATen moves each 0-d
    operand to the result's device). clamp with Tensor bounds admits none: PyTorch checks
    every device of its clamp.Tensor."""
    from kael.frontend.elementwise import BINARY, INTERNAL_BINARY  # it imports this module

    names = (*BINARY, *INTERNAL_BINARY, "clamp_min", "clamp_max")
    return {**{n: 1 for n in names}, **{f"{n}_": 1 for n in names}, "where": 3}


def unaliased(src: TensorImpl, dst: TensorImpl) -> TensorImpl:
    """src, or a copy of it when writing dst could change it before it is read (read_hazard)."""
    if read_hazard(src, dst):
        copy = empty_impl(src.shape, src.dtype, src.device)
        eager.copy_into(copy, src)
        return copy
    return src
