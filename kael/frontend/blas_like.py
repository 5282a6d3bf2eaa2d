"""PyTorch's BLAS-shaped combinations, each built from kael's own ops (so they run where
those do: the CPU, cuda tensors, @kael.compile): addcmul, addcdiv (input + value * t1 (*
or /) t2), addmm, baddbmm, addbmm, addmv (beta * input + alpha * a product), addr (beta *
input + alpha * the outer product) and trace, with their Tensor methods and in-place forms.

The scalars (value, beta, alpha) are read in the result's dtype as PyTorch reads them: an
integral result truncates a float (addr refuses one, as PyTorch does), a bool one reads
them as truth values, a complex one takes them whole (complex numbers too). beta == 0 ignores input's values (NaN and inf included) but not its
shape; alpha == 0 skips the product of the matrix family (BLAS's rule), not addr's.
float16 and bfloat16 compute in float32 and round once.
"""

from __future__ import annotations

import builtins
import numbers
from collections.abc import Callable

from kael.frontend import elementwise as ew
from kael.frontend import factories, linalg, shapes
from kael.frontend.linalg import _check_rank
from kael.frontend.math_functions import inplace_result
from kael.frontend.outputs import copied_out, tensor_arg
from kael.frontend.reductions import sum as _sum
from kael.frontend.tensor import Tensor
from kael.runtime.convert import CHECKED, convert_scalar
from kael.runtime.dtypes import DType, bool_, float32, float64, int64, result_type
from kael.runtime.errors import TypeError, UnsupportedDtype, ValueError
from kael.runtime.tensor_impl import format_shape

# ---- scalars and the combination -------------------------------------------------------------


def _scalar(value, dtype: DType, op: str, what: str, refuse_float: bool = False):
    """`value` (a number or a 0-d tensor) as a Python number of `dtype`'s kind."""
    if isinstance(value, Tensor):
        if value.ndim:
            raise ValueError(
                f"{op}(): {what} must be a number or a 0-d tensor, got a tensor of shape "
                f"{format_shape(value.shape)}"
            )
        value = value.item()
    traced = hasattr(type(value), "kael_convert")  # a traced function's float argument
    if dtype.is_complex and isinstance(value, numbers.Complex):
        return value if isinstance(value, numbers.Real) else builtins.complex(value)
    if not traced and not isinstance(value, numbers.Real):
        raise TypeError(f"{op}(): {what} must be a real number, got {value!r}")
    if dtype.is_floating_point:
        return convert_scalar(value, float64, CHECKED)
    if refuse_float and isinstance(value, float):
        raise TypeError(
            f"{op}(): for integral input tensors, argument {what} must not be a floating point "
            f"number, got {what}={value!r}"
        )
    if dtype is bool_:
        return convert_scalar(value, bool_, CHECKED)
    return convert_scalar(value, int64, CHECKED)


def _inexact(dtype: DType) -> bool:
    """Whether `dtype` is a floating or a complex one (its scalars are not truncated)."""
    return dtype.is_floating_point or dtype.is_complex


def _compute(dtype: DType) -> DType:
    """The dtype a result of `dtype` is computed in: float32 for float16 and bfloat16."""
    return float32 if dtype.is_half else dtype


def _scaled(x: Tensor, factor) -> Tensor:
    """factor * x (x itself for factor 1; logical and for a bool x)."""
    if x.dtype is bool_:
        return x if factor else factories.zeros_like(x)
    return x if factor == 1 else ew.binary("mul", x, factor)


def _combine(input: Tensor, beta, product: Tensor, alpha, dtype: DType, out, op: str):
    """beta * input + alpha * product in `dtype` (product already in the computing dtype and
    the result's shape); beta == 0 leaves input's values out."""
    term = _scaled(product, alpha)
    if beta:  # the row-major product first: it lays the result out, as torch's gemm's is
        scaled = _scaled(input.to(product.dtype), beta)
        term = ew.binary("logical_or" if dtype is bool_ else "add", term, scaled)
    return copied_out(term.to(dtype), out, op, cast=op == "addr")  # torch's TensorIterator op


def _same_dtype(op: str, tensors: dict[str, Tensor]) -> DType:
    """The one dtype of the matrix family's operands (PyTorch promotes none of them)."""
    (first, a), *rest = tensors.items()
    for name, t in rest:
        if t.dtype is not a.dtype:
            raise TypeError(
                f"{op}(): {first} and {name} must have the same dtype, but got {a.dtype} and "
                f"{t.dtype}"
            )
    if a.dtype is bool_:
        raise UnsupportedDtype(f'{op}(): "{op}" not implemented for dtype bool')
    return a.dtype


def _fits(input: Tensor, shape: tuple[int, ...], op: str) -> None:
    """input must broadcast to the result's shape (expand's rule)."""
    try:
        fits = ew.broadcast_shapes(input.shape, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"{op}(): input of shape {format_shape(input.shape)} cannot be broadcast to the "
            f"result's shape {format_shape(shape)}"
        )


# ---- addcmul, addcdiv ------------------------------------------------------------------------


def _pointwise(name: str, combine: str) -> Callable:
    def fn(input, tensor1, tensor2, *, value=1, out=None) -> Tensor:
        x = tensor_arg(input, name)
        a = tensor_arg(tensor1, name, "tensor1")
        b = tensor_arg(tensor2, name, "tensor2")
        if combine == "div" and not any(_inexact(t.dtype) for t in (a, b)):
            raise TypeError(
                f"{name}(): integer division with addcdiv is not supported (tensor1 is "
                f"{a.dtype} and tensor2 is {b.dtype}); use addcmul with the reciprocal, or "
                "true division with floating point tensors"
            )
        dtype = result_type(x, a, b)
        if dtype is bool_:
            raise UnsupportedDtype(f'{name}(): "{name}" not implemented for dtype bool')
        compute = _compute(dtype)
        v = _scalar(value, dtype, name, "value")
        a, b = a.to(compute), b.to(compute)
        term = ew.binary(combine, ew.binary("mul", a, v) if v != 1 else a, b)
        return copied_out(ew.binary("add", x.to(compute), term).to(dtype), out, name, cast=True)

    fn.__name__ = fn.__qualname__ = name
    sign = "*" if combine == "mul" else "/"
    fn.__doc__ = f"input + value * tensor1 {sign} tensor2, broadcast (value: 1)."
    return fn


addcmul = _pointwise("addcmul", "mul")
addcdiv = _pointwise("addcdiv", "div")


# ---- addmm, baddbmm, addbmm, addmv, addr -----------------------------------------------------


def _in_compute(*tensors: Tensor) -> list[Tensor]:
    return [t.to(_compute(t.dtype)) for t in tensors]


def _matrix_sum(op: str, input, product: Callable, shape: tuple, operands, beta, alpha, out):
    """beta * input + alpha * product(*operands), the product skipped for alpha == 0."""
    x = tensor_arg(input, op)
    dtype = _same_dtype(op, {"input": x, **operands})
    _fits(x, shape, op)
    b, a = _scalar(beta, dtype, op, "beta"), _scalar(alpha, dtype, op, "alpha")
    compute = _compute(dtype)
    if a:
        result = product(*_in_compute(*operands.values()))
    else:
        result = factories.zeros(shape, dtype=compute, device=x.device)
    return _combine(x, b, result, a, dtype, out, op)


def _matrix_vector(op: str, names: tuple[str, str], left, right, right_rank: int) -> Callable:
    """addmm (mat1 @ mat2: [n, p]) or addmv (mat @ vec: [n]), their operands checked."""

    def fn(input, *, beta=1, alpha=1, out=None) -> Tensor:
        a, b = _check_rank(left, 2, op, names[0]), _check_rank(right, right_rank, op, names[1])
        if a.shape[1] != b.shape[0]:
            raise ValueError(
                f"{op}(): {names[0]} {format_shape(a.shape)} and {names[1]} "
                f"{format_shape(b.shape)} cannot be multiplied: {a.shape[1]} columns and "
                f"{b.shape[0]} rows"
            )
        shape = (a.shape[0], *b.shape[1:])
        operands = {names[0]: a, names[1]: b}
        return _matrix_sum(op, input, linalg.matmul, shape, operands, beta, alpha, out)

    return fn


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None) -> Tensor:
    """beta * input + alpha * (mat1 @ mat2); input broadcasts to [n, p]."""
    product = _matrix_vector("addmm", ("mat1", "mat2"), mat1, mat2, 2)
    return product(input, beta=beta, alpha=alpha, out=out)


def _batches(op: str, batch1, batch2) -> tuple[Tensor, Tensor]:
    b1, b2 = _check_rank(batch1, 3, op, "batch1"), _check_rank(batch2, 3, op, "batch2")
    if b1.shape[0] != b2.shape[0]:
        raise ValueError(
            f"{op}(): batch1 and batch2 must have the same number of batches, got "
            f"{b1.shape[0]} and {b2.shape[0]}"
        )
    if b1.shape[2] != b2.shape[1]:
        raise ValueError(
            f"{op}(): batch1 and batch2 shapes cannot be multiplied ({format_shape(b1.shape)} "
            f"and {format_shape(b2.shape)}: {b1.shape[2]} columns and {b2.shape[1]} rows)"
        )
    return b1, b2


def _summed_bmm(b1: Tensor, b2: Tensor) -> Tensor:
    """The sum over the batch of bmm(b1, b2), in their dtype (sum would widen integers)."""
    return _sum(linalg.bmm(b1, b2), 0).to(b1.dtype)


def _batched(op: str, product: Callable, keep_batch: bool) -> Callable:
    """baddbmm (the batch kept: input broadcasts to [b, n, p]) or addbmm (the products
    summed over it: input broadcasts to [n, p])."""

    def fn(input, batch1, batch2, *, beta=1, alpha=1, out=None) -> Tensor:
        b1, b2 = _batches(op, batch1, batch2)
        shape = (b1.shape[0],) * keep_batch + (b1.shape[1], b2.shape[2])
        operands = {"batch1": b1, "batch2": b2}
        return _matrix_sum(op, input, product, shape, operands, beta, alpha, out)

    fn.__name__ = fn.__qualname__ = op
    what = "bmm(batch1, batch2)" if keep_batch else "the batch's sum of bmm(batch1, batch2)"
    fn.__doc__ = f"beta * input + alpha * {what}."
    return fn


baddbmm = _batched("baddbmm", linalg.bmm, keep_batch=True)
addbmm = _batched("addbmm", _summed_bmm, keep_batch=False)


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None) -> Tensor:
    """beta * input + alpha * (mat @ vec); input broadcasts to [n]."""
    product = _matrix_vector("addmv", ("mat", "vec"), mat, vec, 1)
    return product(input, beta=beta, alpha=alpha, out=out)


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None) -> Tensor:
    """beta * input + alpha * outer(vec1, vec2), in the promoted dtype of all three; bool
    tensors combine with or and and. input broadcasts to [n, m]."""
    op = "addr"
    x = tensor_arg(input, op)
    v1, v2 = _check_rank(vec1, 1, op, "vec1"), _check_rank(vec2, 1, op, "vec2")
    dtype = result_type(x, v1, v2)
    shape = (v1.shape[0], v2.shape[0])
    _fits(x, shape, op)
    for what, value in (("beta", beta), ("alpha", alpha)):
        truth = isinstance(value, bool) or (isinstance(value, Tensor) and value.dtype is bool_)
        if truth and dtype is not bool_:
            raise TypeError(
                f"{op}(): a bool {what} ({what}={value!r}) is only supported for a bool result, "
                f"not {dtype}"
            )
    b = _scalar(beta, dtype, op, "beta", refuse_float=True)
    a = _scalar(alpha, dtype, op, "alpha", refuse_float=True)
    compute = _compute(dtype)
    if dtype is bool_:
        product = ew.binary("logical_and", v1.unsqueeze(1), v2.unsqueeze(0))
    else:
        scaled = ew.binary("mul", v1.to(compute), a) if a != 1 else v1.to(compute)
        product = linalg.outer(scaled, v2.to(compute))
    return _combine(x, b, product, 1 if dtype is not bool_ else a, dtype, out, op)


def trace(input) -> Tensor:
    """The sum of a matrix's main diagonal (integers summed in int64, as sum does)."""
    x = tensor_arg(input, "trace")
    if x.ndim != 2:
        raise ValueError(
            f"trace(): expected a matrix, but got a tensor with {x.ndim} dims of shape "
            f"{format_shape(x.shape)}"
        )
    if x.dtype is bool_:
        raise UnsupportedDtype('trace(): "trace" not implemented for dtype bool')
    diagonal = shapes.diagonal(x)
    if x.dtype.is_half:
        return _sum(diagonal.to(float32)).to(x.dtype)
    return _sum(diagonal)


FUNCTIONS: dict[str, Callable] = {
    "addcmul": addcmul,
    "addcdiv": addcdiv,
    "addmm": addmm,
    "baddbmm": baddbmm,
    "addbmm": addbmm,
    "addmv": addmv,
    "addr": addr,
    "trace": trace,
}
NOT_METHODS: frozenset[str] = frozenset()
METHODS: dict[str, Callable] = {
    f"{name}_": inplace_result(f"{name}_", fn) for name, fn in FUNCTIONS.items() if name != "trace"
}
