"""Matrix products: matmul (NumPy's shape rules), mm, bmm, dot, outer and the `@` operator.

matmul promotes both operands to promote_types of their dtypes (bool is refused), treats
a 1-d left operand as a row and a 1-d right operand as a column (removing the added dim
from the result), and broadcasts the batch dims with stride 0, never copying them. The
product runs in kael's kernels: codegen/cpu/gemm*.py on the host, codegen/ptx/gemm.py
on a GPU. mm, bmm and dot are matmul behind PyTorch's rank checks; outer is a
broadcasting multiply.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kael.codegen.cpu import gemm_run
from kael.frontend import complex, eager, fastpath
from kael.frontend.elementwise import array_operand, broadcast_shapes, numpy_promotion
from kael.frontend.elementwise import binary as _binary
from kael.frontend.outputs import output, tensor_arg
from kael.frontend.tensor import Tensor, clone_impl, empty_impl
from kael.frontend.views import broadcast_view
from kael.runtime import dtypes
from kael.runtime.device import CPU
from kael.runtime.dtypes import bool_, promote_types
from kael.runtime.errors import Error, TypeError, UnsupportedDtype, ValueError
from kael.runtime.tensor_impl import TensorImpl, contiguous_strides, format_shape, host_ptr
from kael.runtime.tracestate import state as _trace


def _derive(impl: TensorImpl, shape: tuple, strides: tuple) -> TensorImpl:
    return TensorImpl(impl.storage, shape, strides, impl.offset, impl.dtype, impl.device)


def _shapes(a: Tensor, b: Tensor) -> str:
    return f"{format_shape(a.shape)} and {format_shape(b.shape)}"


def _product(a, b, out: Tensor | None, op: str) -> Tensor:
    """a @ b with NumPy's rules; `op` names the public function in errors."""
    if out is None:
        done = fastpath.matmul(a, b)
        if done is not None:
            return done
    a, b = tensor_arg(a, op, "input"), tensor_arg(b, op, "other")
    ai, bi = a._impl, b._impl
    if not ai.shape or not bi.shape:
        raise ValueError(
            f"both arguments to {op} need to be at least 1D, but they are "
            f"{len(ai.shape)}D and {len(bi.shape)}D"
        )
    if ai.device is not bi.device:
        raise Error(
            f"{op}: expected all tensors on one device, but found {ai.device} and {bi.device}"
        )
    dtype = ai.dtype if ai.dtype is bi.dtype else promote_types(ai.dtype, bi.dtype)
    if dtype.is_complex:
        if out is not None:
            raise TypeError(f"{op}: out= is not supported for complex operands")
        return complex.matmul(a, b, dtype, lambda x, y: _product(x, y, None, op))
    if dtype is bool_:
        raise UnsupportedDtype(f"{op} does not support dtype bool")
    # A 1-d left operand is a row [1, K]; a 1-d right operand a column [K, 1].
    left = ai if len(ai.shape) > 1 else _derive(ai, (1, *ai.shape), (0, *ai.strides))
    right = bi if len(bi.shape) > 1 else _derive(bi, (*bi.shape, 1), (*bi.strides, 0))
    m, k = left.shape[-2:]
    k2, n = right.shape[-2:]
    if k != k2:
        raise ValueError(
            f"{op}: shapes {_shapes(a, b)} cannot be multiplied: the first has {k} columns "
            f"and the second {k2} rows"
        )
    lb, rb = left.shape[:-2], right.shape[:-2]
    if lb == rb:
        batch = lb
    else:
        try:
            batch = broadcast_shapes(lb, rb)
        except ValueError:
            raise ValueError(
                f"{op}: the batch dims of shapes {_shapes(a, b)} cannot be broadcast together"
            ) from None
    shape = batch + (m, n)
    final = batch + ((m,) if len(ai.shape) > 1 else ()) + ((n,) if len(bi.shape) > 1 else ())
    target = output(out, final, dtype, ai.device, op)
    if target._impl.numel() == 0:
        return target
    if k == 0:
        eager.fill(target._impl, 0)  # each element is a sum of no products
        return target
    # float16/bfloat16 on a GPU multiply on the tensor cores, in float32 (ptx/mma.py)
    tensor_cores = dtype.is_half and ai.device is not CPU
    wide = dtype if tensor_cores else _GEMM_DTYPE.get(dtype, dtype)
    if wide is not dtype:  # through the widened product, rounded (or wrapped) once at the end
        result = Tensor(empty_impl(final, wide, ai.device))
        _multiply(_operand(left, wide, batch), _operand(right, wide, batch), result, shape, op)
        eager.copy_into(target._impl, result._impl)
        return target
    plan = _multiply(_operand(left, dtype, batch), _operand(right, dtype, batch), target, shape, op)
    if plan is not None and out is None and ai.dtype is bi.dtype:
        fastpath.remember_matmul(a, b, plan, target)
    return target


# The dtype the matmul kernels multiply a product of these in: float16/bfloat16 in float32
# (PyTorch's CPU accumulation too), the narrow integers in int64, whose products and sums
# wrap to the same low bits.
_GEMM_DTYPE = {
    dtypes.float16: dtypes.float32,
    dtypes.bfloat16: dtypes.float32,
    **{d: dtypes.int64 for d in (dtypes.int32, dtypes.int16, dtypes.int8, dtypes.uint8)},
}


def _operand(impl: TensorImpl, dtype, batch: tuple) -> TensorImpl:
    """impl in the compute dtype, its batch dims broadcast to `batch` with stride 0."""
    if impl.dtype is not dtype:
        impl = clone_impl(impl, dtype)
    return broadcast_view(impl, batch + impl.shape[-2:])


def _multiply(a: TensorImpl, b: TensorImpl, target: Tensor, shape: tuple, op: str):
    """target (viewed in the full [*batch, M, N] shape) = a @ b, through a fresh buffer
    when target's columns are not unit-stride or it shares memory with an operand (the
    same storage, or another over the same bytes). Returns the CPU plan when it wrote
    target directly and eagerly (what the fast door can replay), else None. `op` names the
    public function in a device error."""
    t = target._impl
    if t.shape == shape:
        c = t
    else:  # re-insert the dims a 1-d operand removed; a size-1 dim's stride is free
        c = _derive(t, shape, contiguous_strides(shape)) if t.is_contiguous() else None
    direct = (
        c is not None
        and (shape[-1] == 1 or c.strides[-1] == 1)
        and not t.storage.overlaps(a.storage)
        and not t.storage.overlaps(b.storage)
    )
    if not direct:
        c = empty_impl(shape, t.dtype, t.device)
    plan = None
    if c.device is CPU:
        if _trace.trace is not None:
            _trace.trace.matmul(c, a, b)
        else:
            plan = gemm_run.plan_for(a, b, c)
            gemm_run.run(plan, *(host_ptr(t, op) for t in (a, b, c)))
    else:
        from kael.codegen.ptx import gemm as ptx_gemm

        ptx_gemm.matmul(c, a, b)
    if not direct:
        eager.copy_into(t, _derive(c, t.shape, contiguous_strides(t.shape)))
        return None
    return plan


def matmul(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The matrix product with NumPy's rules: 1-d promotion and broadcast batch dims."""
    return _product(input, other, out, "matmul")


def _check_rank(t, rank: int, op: str, name: str) -> Tensor:
    t = tensor_arg(t, op, name)
    if t.ndim != rank:
        raise ValueError(
            f"{op}: {name} must be a {rank}-D tensor, but got a {t.ndim}-D tensor of shape "
            f"{format_shape(t.shape)}"
        )
    return t


def mm(input: Tensor, mat2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The product of two matrices (2-d and 2-d)."""
    _check_rank(input, 2, "mm", "input")
    _check_rank(mat2, 2, "mm", "mat2")
    return _product(input, mat2, out, "mm")


def bmm(input: Tensor, mat2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Batched matrix products of [B, n, m] and [B, m, p]: equal batch sizes, no broadcast."""
    _check_rank(input, 3, "bmm", "input")
    _check_rank(mat2, 3, "bmm", "mat2")
    if input.shape[0] != mat2.shape[0]:
        raise ValueError(
            f"bmm: batch sizes differ: shapes {_shapes(input, mat2)} "
            f"({input.shape[0]} vs {mat2.shape[0]})"
        )
    return _product(input, mat2, out, "bmm")


def dot(input: Tensor, tensor: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The inner product of two 1-d tensors of equal length: a 0-d tensor."""
    _check_rank(input, 1, "dot", "input")
    _check_rank(tensor, 1, "dot", "tensor")
    if input.shape != tensor.shape:
        raise ValueError(
            f"dot: inconsistent tensor sizes: shapes {_shapes(input, tensor)} differ in length"
        )
    return _product(input, tensor, out, "dot")


def outer(input: Tensor, vec2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """input[i] * vec2[j]: a broadcasting multiply of [n, 1] by [1, m] (kael.mul's dtype rules)."""
    a = _check_rank(input, 1, "outer", "input")
    b = _check_rank(vec2, 1, "outer", "vec2")
    return _binary("mul", a.unsqueeze(1), b.unsqueeze(0), out)


def _rmatmul(self: Tensor, other) -> Tensor:
    return _product(other, self, None, "matmul")


def _matmul_method(self: Tensor, other) -> Tensor:
    """self @ other. A NumPy array other is a tensor of NumPy's dtype for the pair, as torch's
    operator hands it to NumPy's matmul (x @ np.ones(3) is float64); Tensor.matmul, kael.matmul
    and array @ self refuse one, as torch's do."""
    if isinstance(other, np.ndarray):
        dtype = numpy_promotion(self, other, "matmul")
        self, other = array_operand(self, dtype), array_operand(other, dtype)
    return _product(self, other, None, "matmul")


# kael.NAME for each entry; also Tensor.NAME unless the name is in NOT_METHODS.
FUNCTIONS: dict[str, Callable] = {
    "matmul": matmul,
    "mm": mm,
    "bmm": bmm,
    "dot": dot,
    "outer": outer,
}
# Tensor-only methods (in-place variants, operators).
METHODS: dict[str, Callable] = {"__matmul__": _matmul_method, "__rmatmul__": _rmatmul}
NOT_METHODS: frozenset[str] = frozenset()
