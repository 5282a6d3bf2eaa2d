"""The calling convention torch.special's Bessel, Airy and orthogonal-polynomial kernels share
(frontend/bessel.py, frontend/orthogonal_polynomials.py): their operands (tensors; a Number for
one of a polynomial's two), PyTorch's result dtype (integers and bool give the default float;
float16, bfloat16 and complex are refused, as PyTorch's kernels are float and double only),
out= as PyTorch's (any float dtype, resized), and a formula run as one kernel straight into
the result, rounded to the result's dtype inside it."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence

from kael.frontend import factories
from kael.frontend.elementwise import broadcast_shapes
from kael.frontend.formula import Value, launch
from kael.frontend.outputs import device_of, output, tensor_param
from kael.frontend.tensor import Tensor
from kael.ir import graph as g
from kael.runtime.dtypes import (
    COMPLEX_DTYPES,
    DType,
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    result_type,
    uint8,
)
from kael.runtime.errors import NotImplementedError, TypeError

# PyTorch's ScalarType names, which its dtype errors use.
TORCH_NAMES = {
    float16: "Half", bfloat16: "BFloat16", float32: "Float", float64: "Double", int64: "Long",
    int32: "Int", int16: "Short", int8: "Char", uint8: "Byte", bool_: "Bool",
    **{d: "Complex" + ("Float" if d.itemsize == 8 else "Double") for d in COMPLEX_DTYPES},
}  # fmt: skip


def _torch_name(dtype: DType) -> str:
    return TORCH_NAMES.get(dtype, str(dtype))


def result_dtype(dtype: DType, op: str) -> DType:
    """The dtype of `op`'s result over operands promoting to `dtype`: itself for float32 and
    float64, the default float for integers and bool; NotImplementedError for the rest."""
    result = dtype if dtype.is_floating_point or dtype.is_complex else get_default_dtype()
    if result not in (float32, float64):
        raise NotImplementedError(f'"{op}" not implemented for {_torch_name(result)!r}')
    return result


def result_tensor(
    out, shape: tuple[int, ...], result: DType, device, op: str, operands: Sequence = ()
) -> Tensor:
    """A new tensor of `result`, or out checked and resized as PyTorch's out=: any floating
    dtype takes the result (cast), an integral or bool one is refused."""
    if isinstance(out, Tensor) and out.dtype is not result:
        if not out.dtype.is_floating_point:
            raise TypeError(
                f"{op}: result type {_torch_name(result)} can't be cast to the desired output"
                f" type {_torch_name(out.dtype)}"
            )
        return output(out, shape, out.dtype, device, op, operands, result)
    return output(out, shape, result, device, op, operands, result)


def run(
    op: str,
    tensors: list[Tensor],
    result: DType,
    compute: DType,
    formula: Callable[..., Value],
    out: Tensor | None = None,
    params: dict | None = None,
    key: tuple = (),
) -> Tensor:
    """formula over the broadcast tensors as one kernel (in `compute`, rounded to `result`
    in it) into a new tensor or out. `key` names what else shapes the formula."""
    device = device_of(tensors, op)
    shape = broadcast_shapes(*(t.shape for t in tensors))
    target = result_tensor(out, shape, result, device, op, tensors)

    def rounded(*values: Value) -> Value:
        value = formula(*values)
        if result is compute or target.dtype is result:
            return value
        return Value(g.Cast(result, (), value.node))

    launch((op, *key, compute, result), tensors, compute, rounded, params, out=target._impl)
    return target


def unary_operand(x, op: str, what: str) -> tuple[Tensor, DType]:
    """A one-operand function's tensor and result dtype (PyTorch's argument parser's words
    for a non-tensor)."""
    x = tensor_param(x, f"special_{op}", what)
    return x, result_dtype(x.dtype, op)


def binary_operands(x, n, op: str) -> tuple[list[Tensor], DType]:
    """(x, n) as two tensors and the result dtype: one of them may be a Number (made a 0-d
    tensor of the result dtype on the other's device), not both, as PyTorch's overloads."""
    if not (isinstance(x, Tensor | numbers.Number) and isinstance(n, Tensor | numbers.Number)) or (
        not isinstance(x, Tensor) and not isinstance(n, Tensor)
    ):
        raise TypeError(
            f"special_{op}() received an invalid combination of arguments - got"
            f" ({type(x).__name__}, {type(n).__name__}), but expected one of: (Tensor x, Tensor"
            " n), (Number x, Tensor n), (Tensor x, Number n)"
        )
    result = result_dtype(result_type(x, n), op)
    like = x if isinstance(x, Tensor) else n
    pair = [
        v if isinstance(v, Tensor) else factories.full((), v, dtype=result, device=like.device)
        for v in (x, n)
    ]
    return pair, result
