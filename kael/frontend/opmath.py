"""PyTorch's opmath for kernels written for float32 and float64 only (the row kernels):
a float16/bfloat16 tensor argument is widened to float32 by one compiled cast, the op runs
there, and its floating results are rounded back to the argument's dtype once, as PyTorch's
CPU kernels compute these dtypes in float."""

from __future__ import annotations

import functools
from collections.abc import Callable

from kael.frontend.outputs import tensor_arg, written_out
from kael.frontend.tensor import Tensor
from kael.runtime.dtypes import DType, float32, result_type


def in_float32(fn: Callable | None = None, *, operands: int = 1) -> Callable:
    """`fn` with float16/bfloat16 tensor arguments computed in float32 (see the module).
    The result is rounded to the promoted dtype of the floating tensors among the first
    `operands` arguments where that is a half type (the first's alone by default:
    layer_norm(x, w) keeps x's; cross_entropy promotes its logits and a float target)."""
    if fn is None:
        return functools.partial(in_float32, operands=operands)

    @functools.wraps(fn)
    def run(*args, **kwargs):
        out = kwargs.get("out")
        if _half_of(args, kwargs, out) is None or kwargs.get("dtype") is not None:
            return fn(*args, **kwargs)
        leading = [
            a for a in args[:operands] if isinstance(a, Tensor) and a.dtype.is_floating_point
        ]
        half = result_type(*leading) if leading else None
        half = half if half is not None and half.is_half else None
        kwargs.pop("out", None)
        args = tuple(_widened(a) for a in args)
        kwargs = {k: _widened(v) for k, v in kwargs.items()}
        result = fn(*args, **kwargs)
        if out is None:
            return result if half is None else _rounded(result, half)
        # into out as the op's own out= writes: resized, and cast as torch casts into
        # another dtype (logsumexp: a float32 out takes the float32 result unrounded)
        out = tensor_arg(out, fn.__name__, "out")
        if half is not None and (out.dtype is half or not out.dtype.is_floating_point):
            result = _rounded(result, half)
        return written_out(out, result, fn.__name__, cast=True)

    del run.__wrapped__  # doors unwrap to the function they serve: this one, not fn
    return run


def _half_of(args: tuple, kwargs: dict, out) -> DType | None:
    """The first half dtype among the arguments (out= not one of them)."""
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor) and a.dtype.is_half and a is not out:
            return a.dtype
    return None


def _widened(x):
    return x.to(float32) if isinstance(x, Tensor) and x.dtype.is_half else x


def _rounded(result, half: DType):
    if isinstance(result, Tensor):
        return result.to(half) if result.dtype is float32 else result
    if isinstance(result, tuple):
        items = [_rounded(r, half) for r in result]
        return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    return result
