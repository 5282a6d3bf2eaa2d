"""Which eager calls of softmax, log_softmax, layer_norm and rms_norm on a CUDA tensor run
the GPU's row kernels (codegen/ptx/rows.py), and their launch.

A call qualifies when the input is a cuda tensor of float32, float64, float16 or bfloat16
and its rows lie in memory as the kernels read them: the trailing dims contiguous (one
row), the leading dims one stride apart (a slice of rows and broadcast rows are fine).
Other layouts (a transposed or stepped last dim) keep the composed path of kael ops.
Under @kael.compile a qualifying call is an extern step: the row kernel's one launch
(one read of a row that fits its registers, one write) beats the composed path's four
kernels (softmax: max, exp, sum, divide), even where those fuse an elementwise producer. The
result is a new contiguous tensor of the input's dtype; half types compute in float32
inside the kernel and round once.
"""

from __future__ import annotations

import math

from kael.codegen.cpu.rows import float_word
from kael.codegen.ptx import rows
from kael.frontend.tensor import clone_impl, empty_impl
from kael.runtime.device import CUDA
from kael.runtime.tensor_impl import TensorImpl
from kael.runtime.tracestate import NeedsExtern, state


def row_layout(impl: TensorImpl, tail: int) -> tuple[int, int, int] | None:
    """(rows, cols, row stride) of impl seen as rows of its last `tail` dims, or None where
    those dims are not contiguous or the leading dims are not one stride apart."""
    lead = len(impl.shape) - tail
    expected = 1
    for size, step in zip(reversed(impl.shape[lead:]), reversed(impl.strides[lead:])):
        if size != 1 and step != expected:
            return None
        expected *= size
    cols = math.prod(impl.shape[lead:])
    outer = [(n, step) for n, step in zip(impl.shape[:lead], impl.strides[:lead]) if n != 1]
    if not outer:  # one row
        return 1, cols, cols
    stride = span = outer[-1][1]
    for size, step in reversed(outer):  # innermost first: each steps over the ones inside
        if step != span:
            return None
        span = step * size
    return math.prod(impl.shape[:lead]), cols, stride


def takes(impl: TensorImpl, tail: int) -> bool:
    """Whether the row kernels serve impl's rows of its last `tail` dims (see the module);
    under a trace a call they serve raises NeedsExtern instead: it becomes an extern step."""
    served = (
        impl.device is CUDA and impl.dtype in rows.DTYPES and row_layout(impl, tail) is not None
    )
    if served and state.trace is not None:
        raise NeedsExtern("the GPU's row kernel: one launch")
    return served


def params_fit(impl: TensorImpl, *params) -> bool:
    """Whether each weight or bias (a Tensor, or None) has impl's dtype and device."""
    return all(
        p is None or (p._impl.dtype is impl.dtype and p._impl.device is impl.device) for p in params
    )


def _contiguous(impl: TensorImpl) -> TensorImpl:
    return impl if impl.is_contiguous() else clone_impl(impl)


def _run(op: str, impl: TensorImpl, tail: int, weight=None, bias=None, eps=0.0) -> TensorImpl:
    count, cols, stride = row_layout(impl, tail)
    out = empty_impl(impl.shape, impl.dtype, impl.device)
    terms = [None if p is None else _contiguous(p._impl) for p in (weight, bias)]
    affine = rows.AFFINE[(terms[0] is not None) + 2 * (terms[1] is not None)]
    pointers = (
        impl.data_ptr(),
        out.data_ptr(),
        *(0 if t is None else t.data_ptr() for t in terms),
    )
    rows.run(op, impl.dtype, affine, pointers, count, cols, stride, float_word(float(eps)))
    return out


def softmax(kernel: str, impl: TensorImpl, tail: int) -> TensorImpl:
    """softmax or log_softmax over impl's last `tail` dims (0 or 1)."""
    return _run(kernel, impl, tail)


def layer_norm(impl: TensorImpl, tail: int, weight, bias, eps: float) -> TensorImpl:
    """layer_norm over impl's last `tail` dims; weight and bias Tensors of their shape, or
    None."""
    return _run("layer_norm", impl, tail, weight, bias, eps)


def rms_norm(impl: TensorImpl, tail: int, weight, eps: float) -> TensorImpl:
    """rms_norm over impl's last `tail` dims; weight a Tensor of their shape, or None."""
    return _run("rms_norm", impl, tail, weight, None, eps)
