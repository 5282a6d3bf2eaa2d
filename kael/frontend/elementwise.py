"""Elementwise ops, each declared once: public name, IR op, dtype rule and checks.

Functions, Tensor methods, operators and in-place variants all derive from the two
tables below. A call promotes its operands (chapter 02's rank and category rules, with
PyTorch's tiers for 0-d tensors and Python scalars), broadcasts them, and runs one
fused kernel: operands are converted to the compute dtype inside the kernel, and Python
scalars travel as run-time parameters, so `x + 1` and `x + 2` share compiled code. A NumPy
array operand is a tensor over its memory, in the dtype torch's operator gives the pair
(_array_dtype: NumPy's promotion for arithmetic, torch's for == and !=).
"""

from __future__ import annotations

import builtins
import math
from dataclasses import dataclass

import numpy as np

from kael.frontend import eager, factories, fastpath, formula, interop, tracing, views
from kael.frontend.outputs import (
    bool_arg,
    cast_back,
    check_writable,
    device_of,
    float_arg,
    output,
    tensor_arg,
    type_name,
    unaliased,
)
from kael.frontend.tensor import Tensor, empty_impl
from kael.frontend.tracing import SymFloat, SymInt
from kael.ir import graph as g
from kael.runtime import user_warning
from kael.runtime.convert import CHECKED, ROUNDED, WRAP, convert_scalar
from kael.runtime.device import CPU
from kael.runtime.dtypes import (
    INT64_MAX,
    DType,
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    from_numpy_dtype,
    get_default_dtype,
    int64,
    on_default_dtype_change,
    result_type,
    uint8,
)
from kael.runtime.errors import TypeError, UnsupportedDtype, ValueError
from kael.runtime.tensor_impl import TensorImpl, format_shape

# ---- the tables ------------------------------------------------------------------------------


@dataclass(frozen=True)
class BinaryOp:
    """A binary op: `rule` maps the promoted dtype to the compute dtype; `bool_out` ops
    (comparisons, logic) give bool; `refuse_bool` is the message refusing a bool compute.
    `tensors` names the arguments PyTorch's signature takes only as a Tensor (it has no
    Number overload there): the function and method refuse a Python number for them. A
    `scalar_exponent` op reads a number `other` as PyTorch's Scalar: a float32 pow computes
    with it in float64, 0.5 and -0.5 run sqrt and rsqrt (_EXPONENT_KERNELS), and an int pow
    refuses an int beyond int64 (the other ops take such an int modulo 2**64 into int64, as
    PyTorch casts its uint64 Scalar). `arrays` says how torch's Python operator takes a NumPy
    array operand (_array_dtype): "numpy" hands the pair to NumPy (x + np.ones(3): NumPy's
    dtype), "tensor" converts the array as torch.from_numpy does (x == np.ones(3): torch's
    promotion); None refuses one, as torch's < and its functions do."""

    name: str
    ir: str
    rule: str = "promote"  # promote | add | true_div | logical | integral
    bool_out: bool = False
    refuse_bool: str | None = None
    tensors: tuple[str, ...] = ()
    scalar_exponent: bool = False
    arrays: str | None = None  # numpy | tensor


@dataclass(frozen=True)
class UnaryOp:
    """A unary op: `rule` maps x's dtype to the compute dtype; `float_only` ops refuse int and
    bool inputs that the "float" rule would compute in float32 (PyTorch's activations have
    float kernels only)."""

    name: str
    ir: str
    rule: str = "keep"  # keep | float | square | logical | bool_out | integral
    refuse_bool: bool = False
    float_only: bool = False


_SUB_BOOL = (
    "Subtraction, the `-` operator, with a bool tensor is not supported. "
    "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
)

_SHIFT_BOOL = "bit shifts are not implemented for bool"
_TENSORS = ("input", "other")  # maximum(Tensor, Tensor): no Number overload at all
_INPUT = ("input",)  # eq(Tensor, Tensor) and eq(Tensor, Number): never a Number input

BINARY: dict[str, BinaryOp] = {
    op.name: op
    for op in (
        BinaryOp("add", "add", "add", arrays="numpy"),
        BinaryOp("sub", "sub", refuse_bool=_SUB_BOOL, arrays="numpy"),
        BinaryOp("mul", "mul", arrays="numpy"),
        BinaryOp("div", "div", "true_div", arrays="numpy"),
        BinaryOp(
            "floor_divide",
            "floordiv",
            refuse_bool="floor_divide does not support bool",
            arrays="numpy",
        ),
        BinaryOp("remainder", "rem", refuse_bool="remainder does not support bool", arrays="numpy"),
        BinaryOp(
            "pow",
            "pow",
            refuse_bool="pow does not support bool",
            scalar_exponent=True,
            arrays="numpy",
        ),
        BinaryOp("maximum", "max", tensors=_TENSORS),
        BinaryOp("minimum", "min", tensors=_TENSORS),
        BinaryOp("eq", "eq", bool_out=True, tensors=_INPUT, arrays="tensor"),
        BinaryOp("ne", "ne", bool_out=True, tensors=_INPUT, arrays="tensor"),
        BinaryOp("lt", "lt", bool_out=True, tensors=_INPUT),
        BinaryOp("le", "le", bool_out=True, tensors=_INPUT),
        BinaryOp("gt", "gt", bool_out=True, tensors=_INPUT),
        BinaryOp("ge", "ge", bool_out=True, tensors=_INPUT),
        BinaryOp("logical_and", "and", "logical", bool_out=True, tensors=_TENSORS),
        BinaryOp("logical_or", "or", "logical", bool_out=True, tensors=_TENSORS),
        BinaryOp("logical_xor", "xor", "logical", bool_out=True, tensors=_TENSORS),
        BinaryOp("bitwise_and", "bitand", "integral", arrays="numpy"),
        BinaryOp("bitwise_or", "bitor", "integral", arrays="numpy"),
        BinaryOp("bitwise_xor", "bitxor", "integral", arrays="numpy"),
        BinaryOp("fmod", "fmod", refuse_bool="fmod does not support bool", tensors=_INPUT),
        BinaryOp("copysign", "copysign", "true_div", tensors=_INPUT),
        BinaryOp("bitwise_left_shift", "shl", "integral", refuse_bool=_SHIFT_BOOL, arrays="numpy"),
        BinaryOp("bitwise_right_shift", "shr", "integral", refuse_bool=_SHIFT_BOOL, arrays="numpy"),
    )
}
# Binary ops run by name that are no public function of their own: div's
# rounding_mode='trunc' (ops.py's div picks it).
INTERNAL_BINARY: dict[str, BinaryOp] = {
    "div_trunc": BinaryOp(
        "div_trunc", "truncdiv", refuse_bool="div with rounding_mode='trunc' does not support bool"
    ),
}


def binary_op(name: str) -> BinaryOp:
    """The BinaryOp called `name`, public or internal."""
    op = BINARY.get(name)
    return op if op is not None else INTERNAL_BINARY[name]


UNARY: dict[str, UnaryOp] = {
    op.name: op
    for op in (
        UnaryOp("neg", "neg", refuse_bool=True),
        UnaryOp("abs", "abs", refuse_bool=True),
        UnaryOp("sign", "sign"),
        UnaryOp("relu", "relu", refuse_bool=True),
        UnaryOp("floor", "floor", refuse_bool=True),
        UnaryOp("ceil", "ceil", refuse_bool=True),
        UnaryOp("round", "round", refuse_bool=True),
        UnaryOp("trunc", "trunc", refuse_bool=True),
        UnaryOp("square", "square", "square"),
        UnaryOp("reciprocal", "reciprocal", "float"),
        UnaryOp("logical_not", "not", "logical"),
        UnaryOp("bitwise_not", "bitnot", "integral"),
        UnaryOp("isnan", "isnan", "bool_out"),
        UnaryOp("isinf", "isinf", "bool_out"),
        UnaryOp("isfinite", "isfinite", "bool_out"),
        *(
            UnaryOp(name, name, "float")
            for name in (
                "sqrt", "rsqrt", "exp", "exp2", "expm1", "log", "log2", "log1p", "sin", "cos",
                "tan", "tanh", "sigmoid", "erf", "erfc",
            )
        ),
        UnaryOp("silu", "silu", "float", float_only=True),
    )
}  # fmt: skip

_NEG_BOOL = (
    "Negation, the `-` operator, on a bool tensor is not supported. "
    "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
)


# ---- operands --------------------------------------------------------------------------------


_NOT_NUMBERS = (Tensor, np.ndarray)  # 0-d ones too: number_of reads neither


def number_of(x) -> bool | int | float | complex | None:
    """x as a Python scalar when it is one (NumPy scalars included), else None. A 0-d NumPy
    array is an array, not a number, as torch reads it (torch.add(x, np.array(2.0)) is
    refused; x * np.array(2.0) is NumPy's float64 product, _array_dtype)."""
    kind = type(x)
    if kind is builtins.float or kind is builtins.int or kind is builtins.bool or kind is SymFloat:
        return x
    if kind is builtins.complex:
        return x
    if kind is SymInt:  # a dynamic int of a compiled function's trace, kept past it
        return x.value
    item = getattr(x, "item", None)
    if item is not None and getattr(x, "shape", None) == () and not isinstance(x, _NOT_NUMBERS):
        value = item()
        if isinstance(value, builtins.bool | builtins.int | builtins.float | builtins.complex):
            return value
    return None


def _operand(x, op: str):
    """A Tensor or a Python scalar; TypeError naming the op for anything else."""
    if isinstance(x, Tensor):
        return x
    n = number_of(x)
    if n is None:
        raise TypeError(f"{op}: expected a Tensor or a number, got {type_name(x)}")
    return n


def _binary_operands(op: BinaryOp, a, b) -> tuple:
    """binary's operands: each a Tensor or a number (_operand), or, where one is a NumPy
    array, both as tensors (_array_dtype)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        dtype = _array_dtype(op, a, b)
        return array_operand(a, dtype), array_operand(b, dtype)
    return _operand(a, op.name), _operand(b, op.name)


def _array_dtype(op: BinaryOp, a, b) -> DType | None:
    """The dtype of a Tensor's and a NumPy array's pair as torch's operator gives it. An
    arithmetic one hands them to NumPy: NumPy's promotion (a 0-d array counts as any other:
    x(float32) * np.array(2.0) is float64; true division of integers is float64). == and
    != convert the array as torch.from_numpy: None, each keeps its dtype. TypeError for an
    op torch refuses an array for (x < array), or an array beside no Tensor."""
    array = a if isinstance(a, np.ndarray) else b
    tensor = b if array is a else a
    if op.arrays is None:
        raise TypeError(
            f"{op.name}: a NumPy array operand (dtype {array.dtype}, shape {array.shape}) is "
            "not supported, as in torch; convert it first with kael.from_numpy"
        )
    if not isinstance(tensor, Tensor):
        raise TypeError(
            f"{op.name}: a NumPy array operand needs a Tensor beside it, got "
            f"{type(a).__name__} and {type(b).__name__}"
        )
    if op.arrays == "tensor":
        return None
    dtype = numpy_promotion(tensor, array, op.name)
    if op.rule == "true_div" and not (dtype.is_floating_point or dtype.is_complex):
        return float64
    return dtype


def numpy_promotion(tensor: Tensor, array: np.ndarray, op: str) -> DType:
    """NumPy's common dtype of a tensor's and an array's elements (np.result_type: a dtype
    look-up, no values), the dtype torch's operators return for such a pair; TypeError
    where kael has no such dtype, or NumPy no dtype of the tensor's (bfloat16)."""
    if tensor.dtype is bfloat16:  # its .numpy is the uint16 it is stored as
        raise TypeError(
            f"{op}: a bfloat16 tensor and a NumPy array do not promote: NumPy has no "
            "bfloat16 (torch refuses too); convert one of them first"
        )
    try:
        return from_numpy_dtype(np.result_type(tensor.dtype.numpy, array.dtype))
    except builtins.TypeError:  # NumPy's DTypePromotionError, kael's unsupported dtype
        raise TypeError(
            f"{op}: a {tensor.dtype} tensor and a NumPy array of dtype {array.dtype} have "
            "no common kael dtype"
        ) from None


def array_operand(x, dtype: DType | None) -> Tensor:
    """x, a tensor or a NumPy array, as a tensor of `dtype` (None: its own); an array over
    its own memory where kael can share it (no copy when it already has that dtype)."""
    tensor = x if isinstance(x, Tensor) else _array_tensor(x, dtype)
    return tensor if dtype is None or tensor.dtype is dtype else tensor.to(dtype)


def _array_tensor(array: np.ndarray, dtype: DType | None) -> Tensor:
    """An array as a tensor over its memory. One kael cannot share (negative strides,
    another byte order, uint16/32/64 elements) is copied into `dtype` where one is given
    (NumPy reads any); with none, from_numpy's error, as torch.from_numpy refuses it."""
    shared = interop.numpy_dtype(array) is not None and interop.numpy_problem(array) is None
    if shared or dtype is None:
        return Tensor(interop.from_numpy_impl(array, warn_readonly=False))  # only read
    return factories.tensor(array, dtype=dtype)


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's broadcasting; ValueError naming every shape when they do not broadcast."""
    first = shapes[0]
    if all(s == first for s in shapes):
        return first
    ndim = max(len(s) for s in shapes)
    out = []
    for i in range(ndim):
        size = 1
        for s in shapes:
            d = s[i - ndim + len(s)] if i - ndim + len(s) >= 0 else 1
            if d != 1:
                if size not in (1, d):
                    listed = " and ".join(format_shape(s) for s in shapes)
                    raise ValueError(
                        f"shapes {listed} cannot be broadcast together: size {size} vs {d} "
                        f"at dimension {i} of the broadcast shape"
                    )
                size = d
        out.append(size)
    return tuple(out)


# ---- dtype rules -----------------------------------------------------------------------------


_binary_rules: dict[tuple, tuple[DType, DType]] = {}
on_default_dtype_change(_binary_rules.clear)  # a Python float's tier means another dtype


def _tier(x) -> object:
    """What promotion sees of an operand: dtype and 0-d-ness of a tensor, a scalar's type."""
    return (x.dtype, not x.shape) if isinstance(x, Tensor) else type(x)


def _binary_dtypes(op: BinaryOp, a, b) -> tuple[DType, DType]:
    """(compute dtype, result dtype) of a binary op, memoized by the operands' tiers."""
    key = (op.name, _tier(a), _tier(b))
    hit = _binary_rules.get(key)
    if hit is None:
        hit = _binary_rules[key] = _binary_rule(op, a, b)
    return hit


def _binary_rule(op: BinaryOp, a, b) -> tuple[DType, DType]:
    """(compute dtype, result dtype) of a binary op, with the op's refusals."""
    promoted = result_type(a, b)
    if promoted.is_complex:  # complex.binary refuses the ops it has no form of
        if op.name == "sub" and _has_bool(a, b):
            raise TypeError(_SUB_BOOL)
        return promoted, (bool_ if op.bool_out else promoted)
    rule = op.rule
    if rule == "logical":
        return promoted, bool_
    if rule == "integral" and promoted.is_floating_point:
        raise TypeError(f"{op.name} is only supported for integer and bool dtypes, got {promoted}")
    if rule == "add" and promoted is bool_:
        compute = int64  # the book: bool + bool counts, as int64
    elif rule == "true_div" and not promoted.is_floating_point:
        compute = get_default_dtype()
    else:
        compute = promoted
    if op.refuse_bool and (compute is bool_ or (op.name == "sub" and _has_bool(a, b))):
        raise TypeError(op.refuse_bool)
    return compute, (bool_ if op.bool_out else compute)


def _has_bool(*operands) -> bool:
    return any(
        (x.dtype is bool_) if isinstance(x, Tensor) else isinstance(x, builtins.bool)
        for x in operands
    )


def check_tensor_args(op: BinaryOp, input, other) -> None:
    """PyTorch's signature check of the public function and method: the arguments `op.tensors`
    names must be Tensors (kael.TypeError naming the op and the argument)."""
    for what, value in (("input", input), ("other", other)):
        if what in op.tensors:
            tensor_arg(value, op.name, what)


def _floating_only(name: str, dtype: DType) -> None:
    """Refuse an int or bool input of an op with float kernels only (silu, gelu), as PyTorch
    does even for an empty one."""
    if not dtype.is_floating_point:
        raise UnsupportedDtype(f"{name} is only supported for floating point dtypes, got {dtype}")


def _refuse_bool_with_uint64(name: str, a, b) -> None:
    """PyTorch reads an int beyond int64 as a uint64 Scalar and refuses to promote it with a
    bool tensor (with an int64 one it wraps, with a float one it converts)."""
    tensor, number = (a, b) if isinstance(a, Tensor) else (b, a)
    if tensor.dtype is bool_ and type(number) is builtins.int and number > INT64_MAX:
        raise TypeError(
            f"{name}: a bool tensor and {number}, an int beyond int64 (a uint64 in PyTorch), "
            "do not promote"
        )


def _unary_dtypes(op: UnaryOp, x: Tensor) -> tuple[DType, DType]:
    dtype = x.dtype
    rule = op.rule
    if op.refuse_bool and dtype is bool_:
        raise TypeError(_NEG_BOOL if op.name == "neg" else f"{op.name} does not support bool")
    if op.float_only:
        _floating_only(op.name, dtype)
    if rule == "float":
        compute = dtype if dtype.is_floating_point else get_default_dtype()
        return compute, compute
    if rule == "square":
        return (int64, int64) if dtype is bool_ else (dtype, dtype)
    if rule in ("logical", "bool_out"):
        return dtype, bool_
    if rule == "integral" and dtype.is_floating_point:
        raise TypeError(f"{op.name} is only supported for integer and bool dtypes, got {dtype}")
    return dtype, dtype


def refuse_float_overflow(value, dtype: DType) -> None:
    """PyTorch's checked conversion of a number to a float dtype (c10::overflows), where it
    checks one (a fill value, alpha, a half pow's exponent): a finite number beyond the
    dtype's largest is refused (an infinity or a NaN passes). A traced float argument is
    not read: reading it would specialize the plan to its value."""
    if not dtype.is_floating_point or type(value) is SymFloat:
        return
    if (type(value) is builtins.int or math.isfinite(value)) and abs(value) > dtype.largest:
        raise ValueError(f"value {value} cannot be converted to type {dtype} without overflow")


def _check_pow_exponent(op: BinaryOp, compute: DType, exponent) -> None:
    """PyTorch's refusals of a number exponent: a negative one of an integer power, and for
    float16/bfloat16 a finite one beyond the dtype's range (its checked conversion)."""
    if op.ir != "pow" or not isinstance(exponent, builtins.int | builtins.float):
        return
    if compute.is_half:
        refuse_float_overflow(exponent, compute)
    if not compute.is_floating_point and type(exponent) is builtins.int and exponent < 0:
        raise ValueError(
            f"Integers to negative integer powers are not allowed, got exponent {exponent}"
        )


# ---- outputs ---------------------------------------------------------------------------------


# ---- running ---------------------------------------------------------------------------------


def _leaf(x, dtype_of_scalar: DType, name: str) -> g.Node:
    if isinstance(x, Tensor):
        return g.Input(x.dtype, (), name)
    return g.Scalar(dtype_of_scalar, (), name)


def _run(
    key: tuple,
    operands: list,
    build,
    out: Tensor,
    compute: DType,
    beyond_int64: str = CHECKED,
    fast: tuple | None = None,
) -> bool:
    """Build (once) and launch the kernel of `build` over out's shape; returns the flag. The
    number operands convert to `compute` (an int beyond int64 as `beyond_int64` says).
    `fast`: the fast door's key to remember this launch under (fastpath.remember)."""
    entry = eager.template(key, build)
    shape = out.shape
    ins = [
        unaliased(views.broadcast_view(x._impl, shape), out._impl)
        for x in operands
        if isinstance(x, Tensor)
    ]
    scalars = {
        f"x{i}": convert_scalar(x, compute, beyond_int64)
        for i, x in enumerate(operands)
        if not isinstance(x, Tensor)
    }
    flag = eager.run(entry, [out._impl], ins, scalars)
    if fast is not None:
        dtypes = (out.dtype, *(x.dtype for x in operands if isinstance(x, Tensor)))
        number = [(name, beyond_int64) for name in scalars]
        fastpath.remember(fast, entry, dtypes, tuple(number), out._impl, ins)
    return flag


def _kind(x) -> str | DType:
    return x.dtype if isinstance(x, Tensor) else "scalar"


def binary(name: str, a, b, out: Tensor | None = None) -> Tensor:
    """The binary op `name` of a and b (tensors or scalars), broadcast, into out if given."""
    done = fastpath.binary(name, a, b) if out is None else fastpath.binary_out(name, a, b, out)
    if done is not None:
        return done
    op = binary_op(name)
    a, b = _binary_operands(op, a, b)
    tensors = [x for x in (a, b) if isinstance(x, Tensor)]
    if not tensors:
        raise TypeError(f"{name}: expected at least one Tensor operand, got two numbers")
    compute, result = _binary_dtypes(op, a, b)
    if compute.is_complex:
        from kael.frontend import complex

        return complex.binary(name, a, b, compute, out)
    _check_pow_exponent(op, compute, b)
    device = device_of(tensors, name)
    shape = broadcast_shapes(*(t.shape for t in tensors))
    operands = () if name in _NUMBER_FIRST_ROW_MAJOR and not isinstance(a, Tensor) else (a, b)
    target = output(out, shape, result, device, name, operands, compute, cast=True)
    fast = _remembered(
        fastpath.binary_key(name, a, b, shape), None if out is None else target, tensors
    )
    _launch_binary(op, a, b, compute, target, fast)
    return cast_back(target, out)


# The number exponents PyTorch's float pow computes with another kernel: sqrt's and rsqrt's
# special values are not pow's (sqrt(-0.0) is -0.0 and sqrt(-inf) NaN, where pow gives +0.0
# and inf); x ** 2 is x * x, rounded once, and x ** -1 is 1 / x. float16 takes pow for 0.5
# and -0.5 (torch's float16 kernel has no such shortcut; bfloat16's has).
_EXPONENT_KERNELS = {0.5: "sqrt", -0.5: "rsqrt", 2: "square", -1: "reciprocal"}


# torch's pow(Scalar, Tensor) allocates its result row-major, not in the exponent's layout
_NUMBER_FIRST_ROW_MAJOR = frozenset({"pow"})


def _exponent_key(x) -> tuple | None:
    """What picks pow's kernel of a number exponent, for the fast door's key: its type, the
    kernel its value takes, its sign (integer powers refuse negative exponents) and which
    half dtypes' range it passes (they refuse a finite exponent beyond it)."""
    kind = fastpath.number_key(x)
    if kind is None:
        return None
    size = abs(x)
    reach = (size > float16.largest) + (size > bfloat16.largest) if math.isfinite(x) else 3
    return (kind, _EXPONENT_KERNELS.get(x), x < 0, reach)


fastpath.value_keys.update(pow=_exponent_key, pow_=_exponent_key)


def _launch_binary(
    op: BinaryOp, a, b, compute: DType, target: Tensor, fast: tuple | None = None
) -> None:
    operand_dtype = bool_ if op.rule == "logical" else compute
    _refuse_bool_with_uint64(op.name, a, b)
    number_exponent = op.scalar_exponent and not isinstance(b, Tensor)
    kernel = _EXPONENT_KERNELS.get(b) if number_exponent and compute.is_floating_point else None
    if kernel in ("sqrt", "rsqrt") and compute is float16:  # torch's float16 pow is pow's
        kernel = None
    if kernel is not None:
        _launch_unary(kernel, kernel, a, compute, target, fast)
        return
    wide = _op_dtype(op, operand_dtype, b, number_exponent)
    if op.name in _OPMATH_NUMBER and operand_dtype.is_half and isinstance(b, Tensor) and b.shape:
        fast = None  # the kernel follows b's layout (_one_element), which that key lacks

    def build():
        x = g.Cast(wide, (), g.Cast(operand_dtype, (), _leaf(a, wide, "x0")))
        y = g.Cast(wide, (), _leaf(b, wide, "x1"))
        return f"{op.name}", [g.Cast(target.dtype, (), _binary_node(op, wide, x, y))]

    key = ("binary", op.name, _kind(a), _kind(b), operand_dtype, wide, target.dtype)
    _run(key, [a, b], build, target, wide, _number_mode(op, a, wide, number_exponent), fast)


def _binary_node(op: BinaryOp, dtype: DType, x: g.Node, y: g.Node) -> g.Node:
    """op of x and y, run in `dtype`. A float16/bfloat16 div_trunc divides, rounds the
    quotient to the half type and truncates that, as PyTorch's Half and BFloat16 division
    does (300 / 0.3 in float16: 999.84 rounds to 1000, which stays 1000); its kernels see
    float32 registers only, so the rounding is the graph's (formula.stored's casts)."""
    if op.ir == "truncdiv" and dtype.is_half:
        quotient = g.Binary(dtype, (), "div", x, y)
        rounded = g.Cast(dtype, (), g.Cast(float32, (), quotient))
        return g.Unary(dtype, (), "trunc", rounded)
    return g.Binary(bool_ if op.bool_out else dtype, (), op.ir, x, y)


def _op_dtype(op: BinaryOp, operand_dtype: DType, b, number_exponent: bool) -> DType:
    """The dtype the op itself runs in, wider than its operands' where PyTorch's kernel is:
    a float32 pow's number exponent stays a double (the base, rounded to float32 first as
    PyTorch converts it, is widened and pow runs in float64, rounded to float32 at the end);
    a float16/bfloat16 mul or division (any rounding mode) by one element everywhere on the
    CPU runs in float32, as PyTorch's kernels for a scalar second operand do: they read its
    own value (a 0-d tensor's unrounded, an int's beyond the half range: b * tensor(257) in
    bfloat16 is 772, not 768) and round the float32 result once. Any other half div_trunc
    divides in the half dtype, its quotient rounded to it before the truncation
    (_binary_node), as PyTorch's Vectorized<Half> division does."""
    if number_exponent and operand_dtype is float32:
        return float64
    scalar = _one_element(b) and (not isinstance(b, Tensor) or b.device is CPU)
    if op.name in _OPMATH_NUMBER and operand_dtype.is_half and scalar:
        return float32
    return operand_dtype


def _one_element(b) -> bool:
    """Whether every element of a result reads the same element of b (PyTorch's
    TensorIterator is_scalar): a number, or a tensor each of whose dimensions has size 1 or
    stride 0 (0-d, one element, expanded)."""
    if not isinstance(b, Tensor):
        return True
    return all(size == 1 or stride == 0 for size, stride in zip(b.shape, b._impl.strides))


# PyTorch's CPU kernels that read a float16/bfloat16 op's number operand unrounded (as
# float32, the opmath type): mul's, and the divisor of div (any rounding_mode). Every other
# binary op casts the number to the op's dtype first (2.3125 + 257 in bfloat16 is 258: 257
# rounds to 256), pow's exponent too.
_OPMATH_NUMBER = {"mul": (1,), "div": (1,), "div_trunc": (1,), "floor_divide": (1,)}


def _number_mode(op: BinaryOp, a, wide: DType, number_exponent: bool) -> str:
    """How the number operand converts (convert_scalar's mode): ROUNDED to a half dtype,
    unless its kernel reads it unrounded; else CHECKED for pow's exponent, WRAP otherwise."""
    at = 0 if not isinstance(a, Tensor) else 1  # where the number is, if there is one
    if wide.is_half and at not in _OPMATH_NUMBER.get(op.name, ()):
        return ROUNDED
    return CHECKED if number_exponent else WRAP


def unary(name: str, x, out: Tensor | None = None) -> Tensor:
    """The unary op `name` of tensor x, into out if given."""
    done = fastpath.unary(name, x) if out is None else fastpath.unary_out(name, x, out)
    if done is not None:
        return done
    op = UNARY.get(name)  # sgn, angle, ...: complex forms only
    cast = op is not None and op.rule in _CASTING_RULES
    if isinstance(x, Tensor) and x.dtype.is_complex:
        from kael.frontend import complex

        return complex.unary(name, x, out, cast)
    op = UNARY[name]
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type_name(x)}")
    compute, result = _unary_dtypes(op, x)
    target = output(out, x.shape, result, x.device, name, (x,), compute, cast)
    fast = _remembered(fastpath.unary_key(name, x), None if out is None else target, (x,))
    _launch_unary(op.name, op.ir, x, compute, target, fast)
    return cast_back(target, out)


# The unary rules whose torch ops cast their result into an out= of another dtype (unary
# float ops, square as pow, logical_not); the others (neg, abs, floor, ...) refuse one.
_CASTING_RULES = frozenset({"float", "square", "logical"})


def _remembered(key: tuple | None, out: Tensor | None, tensors) -> tuple | None:
    """The fast door's key to remember this call under, where it may: a new result, or a
    dense out= that shares no memory with an operand (the launch is then the one a new
    result takes; over an operand, the full door may first copy it, and the launch it runs
    reads the copy) under a dense key: a key by exact layouts replays into new results
    laid out as the one it saw, which an out= is not."""
    if key is None or out is None:
        return key
    if key[0] is fastpath.SHAPED:
        return None
    storage = out._impl.storage if fastpath.dense_out(out) else None
    if storage is None or any(t._impl.storage.overlaps(storage) for t in tensors):
        return None
    return key


def _launch_unary(
    name: str, ir_op: str, x: Tensor, compute: DType, target: Tensor, fast: tuple | None = None
) -> None:
    def build():
        value = g.Unary(
            bool_ if ir_op in ("not", "isnan", "isinf", "isfinite") else compute,
            (),
            ir_op,
            g.Cast(compute, (), g.Input(x.dtype, (), "x0")),
        )
        return name, [g.Cast(target.dtype, (), value)]

    key = ("unary", name, x.dtype, compute, target.dtype)
    _run(key, [x], build, target, compute, fast=fast)


# ---- the few ops that are not one table row --------------------------------------------------


GELU_OPS = {"none": "gelu", "tanh": "gelu_tanh"}  # approximate= -> the IR's unary op


def _gelu_op(approximate) -> str:
    """gelu's IR op past the quick look-up, as torch parses approximate: a str (or bytes,
    decoded) names it, any other type is a TypeError, an unknown name a ValueError."""
    name = approximate.decode("latin-1") if isinstance(approximate, bytes) else approximate
    if not isinstance(name, str):
        raise TypeError(
            f"gelu(): argument 'approximate' must be str, not {type(approximate).__name__}"
        )
    if name not in GELU_OPS:
        raise ValueError(f"approximate argument must be either none or tanh, got {approximate!r}")
    return GELU_OPS[name]


def gelu(input: Tensor, approximate: str = "none", out: Tensor | None = None) -> Tensor:
    """GELU: x * Phi(x) exactly ("none") or with the tanh approximation; a remembered call
    takes the fast door, as the table's unary ops do."""
    ir_op = GELU_OPS.get(approximate) if isinstance(approximate, str) else None
    if ir_op is None:
        ir_op = _gelu_op(approximate)
    done = fastpath.unary(ir_op, input) if out is None else fastpath.unary_out(ir_op, input, out)
    if done is not None:
        return done
    x = tensor_arg(input, "gelu")
    _floating_only("gelu", x.dtype)
    target = output(out, x.shape, x.dtype, x.device, "gelu", (x,))
    fast = _remembered(fastpath.unary_key(ir_op, x), out, (x,))
    _launch_unary(ir_op, ir_op, x, x.dtype, target, fast)
    return target


def where(condition: Tensor, input, other, out: Tensor | None = None) -> Tensor:
    """input where condition holds, else other; all three broadcast; dtype from the two."""
    form, tensors, numbers = _where_parts(condition, input, other)
    if out is None:
        done = fastpath.dense(form, tensors, numbers)
        if done is not None:
            return done
    if not isinstance(condition, Tensor):
        raise TypeError(f"where: condition must be a Tensor, got {type(condition).__name__}")
    if condition.dtype is uint8:  # torch's deprecated form: nonzero is True
        user_warning.warn_once(
            "where received a uint8 condition tensor. This behavior is deprecated; use a "
            "boolean condition instead.",
            UserWarning,
        )
        condition = binary("ne", condition, 0)
    if condition.dtype is not bool_:
        raise TypeError(f"where expected condition to be a bool tensor, got {condition.dtype}")
    a, b = _operand(input, "where"), _operand(other, "where")
    tensors = [t for t in (condition, a, b) if isinstance(t, Tensor)]
    device = device_of(tensors, "where")
    dtype = result_type(a, b)
    shape = broadcast_shapes(*(t.shape for t in tensors))
    target = output(out, shape, dtype, device, "where", (condition, a, b), (None, dtype, dtype))

    def build():
        value = g.Where(
            dtype,
            (),
            g.Input(bool_, (), "cond"),
            g.Cast(dtype, (), _leaf(a, dtype, "x1")),
            g.Cast(dtype, (), _leaf(b, dtype, "x2")),
        )
        return "where", [value]

    bool_condition = condition is tensors[0]  # (not a uint8 one, compared above)
    fast = fastpath.dense_key(form, tensors, numbers) if out is None and bool_condition else None
    _run(("where", _kind(a), _kind(b), dtype), [condition, a, b], build, target, dtype, fast=fast)
    return target


def _where_parts(condition, input, other) -> tuple:
    """where's fast-door name (which of input and other are tensors), its tensor operands
    and its numbers, each in the kernel's order."""
    ta, tb = isinstance(input, Tensor), isinstance(other, Tensor)
    if ta and tb:
        return _WHERE_FORMS[True, True], (condition, input, other), ()
    if ta:
        return _WHERE_FORMS[True, False], (condition, input), (other,)
    if tb:
        return _WHERE_FORMS[False, True], (condition, other), (input,)
    return _WHERE_FORMS[False, False], (condition,), (input, other)


_WHERE_FORMS = {(a, b): ("where", a, b) for a in (True, False) for b in (True, False)}


def clamp(input: Tensor, min=None, max=None, out: Tensor | None = None) -> Tensor:
    """input limited to [min, max] (either may be None); a NaN bound gives NaN, min > max gives
    max."""
    return clamp_as("clamp", input, min, max, out)


def clamp_as(op: str, input: Tensor, lo, hi, out: Tensor | None = None) -> Tensor:
    """clamp, its errors naming `op` (clamp_min and clamp_max are clamp with one bound)."""
    given = _CLAMP_GIVEN.get((lo is None, hi is None))
    numbers = (lo, hi) if hi is not None and lo is not None else (hi if lo is None else lo,)
    if out is None and given is not None:
        done = fastpath.dense(given, (input,), numbers)
        if done is not None:
            return done
    x = tensor_arg(input, op)
    bounds, dtype, device, shape = _clamp_bounds(x, lo, hi, op)
    tensor_bounds = [v for v in bounds.values() if isinstance(v, Tensor)]
    tensors_only = len(tensor_bounds) == len(bounds)  # torch's clamp.Tensor: it casts
    operands = (x, *tensor_bounds) if tensors_only else (x,)
    target = output(out, shape, dtype, device, op, operands, dtype, tensors_only)
    fast = fastpath.dense_key(given, (x,), numbers) if out is None and given else None
    _launch_clamp(x, bounds, dtype, target, fast)
    return cast_back(target, out)


# The fast door's names of clamp by which bounds are None (lo, hi): each a kernel of its own.
_CLAMP_GIVEN = {(False, False): "clamp", (False, True): "clamp.min", (True, False): "clamp.max"}


_CLAMP_OPS = {"min": "max", "max": "min"}  # each bound by the op that applies it


def _clamp_bounds(x: Tensor, lo, hi, op: str) -> tuple[dict, DType, object, tuple[int, ...]]:
    """clamp's and clamp_'s bounds by name ("min", "max"; None left out), their computing
    dtype, the device and the broadcast shape, checked as PyTorch's two signatures (Tensor bounds, or Number bounds) check them,
    in place or not: at least one bound; no Tensor with dims beside a number (a 0-d tensor
    there is read as its number); a bool result only from one Tensor bound (PyTorch's bool
    kernels are those of clamp_min and clamp_max with a Tensor)."""
    if lo is None and hi is None:
        raise ValueError(f"{op}: at least one of 'min' or 'max' must not be None")
    bounds = {name: _operand(v, op) for name, v in zip(_CLAMP_OPS, (lo, hi)) if v is not None}
    numbers = not all(isinstance(v, Tensor) for v in bounds.values())
    if numbers:
        bounds = {name: _bound_number(v, name, op) for name, v in bounds.items()}
    dtype = result_type(x, *bounds.values())
    if dtype is bool_ and (numbers or len(bounds) > 1):
        given = "number bounds" if numbers else "two Tensor bounds"
        raise TypeError(f"{op} does not support bool with {given}, only with one Tensor bound")
    tensors = [t for t in (x, *bounds.values()) if isinstance(t, Tensor)]
    device = device_of(tensors, op)
    return bounds, dtype, device, broadcast_shapes(*(t.shape for t in tensors))


def _bound_number(bound, name: str, op: str):
    """A clamp bound beside a number bound: a number, or the number a 0-d tensor holds."""
    if not isinstance(bound, Tensor):
        return bound
    if bound.ndim:
        raise TypeError(
            f"{op}(): {name} must be a number when the other bound is one (Tensor bounds or "
            f"number bounds, not both), got a Tensor of shape {format_shape(bound.shape)}"
        )
    return bound.item()


def _launch_clamp(
    x: Tensor, bounds: dict, dtype: DType, target: Tensor, fast: tuple | None = None
) -> None:
    def build():
        value: g.Node = g.Cast(dtype, (), g.Input(x.dtype, (), "x0"))
        for i, (name, bound) in enumerate(bounds.items(), 1):
            leaf = g.Cast(dtype, (), _leaf(bound, dtype, f"x{i}"))
            value = g.Binary(dtype, (), _CLAMP_OPS[name], value, leaf)
        return "clamp", [g.Cast(target.dtype, (), value)]

    kinds = tuple((name, _kind(bound)) for name, bound in bounds.items())
    key = ("clamp", x.dtype, kinds, dtype, target.dtype)
    _run(key, [x, *bounds.values()], build, target, dtype, fast=fast)


# ---- in place ---------------------------------------------------------------------------------


def _check_inplace(self: Tensor, result: DType, shape: tuple[int, ...], op: str) -> None:
    """The chapter's checks, in order: the dtype fits, self is writable, no shape change."""
    if result.category > self.dtype.category:
        raise TypeError(
            f"{op}: result type {result} can't be cast to the desired output type {self.dtype}"
        )
    check_writable(self, op)
    if shape != self.shape:
        raise ValueError(
            f"{op}: output with shape {format_shape(self.shape)} doesn't match the broadcast "
            f"shape {format_shape(shape)}"
        )


def binary_(name: str, self: Tensor, other) -> Tensor:
    """self = self (op) other, written into self's layout in self's dtype. Its only caller,
    Tensor's in-place methods, asked the fast door already (ops._fast)."""
    op = binary_op(name)
    other = _inplace_operand(op, self, other)
    compute, result = _binary_dtypes(op, self, other)
    if compute.is_complex:  # computed aside, then stored into self's layout
        from kael.frontend import complex

        shape = broadcast_shapes(*(t.shape for t in (self, other) if isinstance(t, Tensor)))
        _check_inplace(self, result, shape, f"{name}_")
        return self.copy_(complex.binary(name, self, other, compute))
    _check_pow_exponent(op, compute, other)
    tensors = [t for t in (self, other) if isinstance(t, Tensor)]
    device_of(tensors, f"{name}_")
    shape = broadcast_shapes(*(t.shape for t in tensors))
    _check_inplace(self, result, shape, f"{name}_")
    fast = fastpath.binary_key(f"{name}_", self, other, shape)
    if isinstance(other, Tensor) and other._impl.storage.overlaps(self._impl.storage):
        fast = None  # served here only when other is self: the door checks its place
    _launch_binary(op, self, other, compute, self, fast)
    self._impl.storage.bump_version()
    return self


def _inplace_operand(op: BinaryOp, self: Tensor, other):
    """binary_'s other: a Tensor or a number, or a NumPy array as a tensor of NumPy's dtype
    for it and self. x += array writes into x, in x's dtype, as x += tensor does (torch's
    operator falls back to NumPy's x = x + array: a new tensor, of NumPy's dtype)."""
    if isinstance(other, np.ndarray):
        return array_operand(other, _array_dtype(op, self, other))
    return _operand(other, f"{op.name}_")


# input (+ or -) alpha * other by whether the compute dtype is a float one: a float one
# computes fma(other, +-alpha, input), rounded once, as torch's vectorized kernel does; an
# integer one wraps.
_SCALED = {
    ("add", True): lambda x, y, w: formula.fma(y, w, x),
    ("sub", True): lambda x, y, w: formula.fma(y, -w, x),
    ("add", False): lambda x, y, w: x + y * w,
    ("sub", False): lambda x, y, w: x - y * w,
}


def _alpha_number(name: str, alpha, result: DType) -> bool | int | float:
    """alpha as the number the kernel scales by, with PyTorch's refusals for the result
    dtype: it converts alpha to that dtype, checked (beyond an integer dtype or a float
    dtype's range: refused), and a half dtype's alpha is rounded to it."""
    number = None if isinstance(alpha, Tensor) else number_of(alpha)
    if number is None:
        raise TypeError(f"{name}(): argument 'alpha' must be a number, not {type(alpha).__name__}")
    if type(number) is builtins.bool and result is not bool_:
        raise TypeError("Boolean alpha only supported for Boolean results.")
    if result.is_complex:  # kept as it is (complex too): each part checked against the range
        for part in (number.real, number.imag):
            refuse_float_overflow(part, result.to_real())
        return number
    if type(number) is builtins.complex:
        raise TypeError(
            "For non-complex input tensors, argument alpha must not be a complex number."
        )
    if type(number) is builtins.float and not result.is_floating_point:
        raise TypeError(
            "For integral input tensors, argument alpha must not be a floating point number."
        )
    refuse_float_overflow(number, result)
    value = convert_scalar(number, result, ROUNDED if result.is_half else CHECKED)
    if name.startswith("sub") and result.is_floating_point and type(number) is builtins.int:
        # sub's formula negates alpha; torch negates the int first, so 0 gives +0.0
        return value if value else -0.0
    return value


def scaled(name: str, input, other, alpha, out: Tensor | None = None) -> Tensor:
    """torch.add and torch.sub with alpha: input + alpha * other (sub: minus), one kernel
    in the result's compute dtype: a float one takes fma(other, +-alpha, input), rounded
    once (float32 for the half types, rounded to them at the store), as torch's vectorized
    kernel does. Its scalar loop (the tail of each contiguous run shorter than two vectors:
    the whole of a short or broadcast row) rounds a half product to the half type first;
    kael does not follow it there (a half product beyond the type's range stays finite
    where torch's scalar loop gives inf, and a sum may differ in its last bit)."""
    op = binary_op(name)
    input, other = _operand(input, name), _operand(other, name)
    _, result = _binary_dtypes(op, input, other)
    number = _alpha_number(name, alpha, result)
    if result.is_complex:  # input (+ or -) (alpha * other), two kernels
        from kael.frontend import complex

        return complex.binary(name, input, _complex_scaled(other, number, result), result, out)
    if not isinstance(other, Tensor) and not result.is_floating_point:  # scaled here, wrapped
        return binary(name, input, _scaled_number(other, number, result), out)
    tensors = [t for t in (input, other) if isinstance(t, Tensor)]
    if not tensors:
        raise TypeError(f"{name}: expected at least one Tensor operand, got two numbers")
    fast = None
    if out is None and len(tensors) == 2 and input.dtype is other.dtype is result:
        done = fastpath.dense(f"{name}_alpha", (input, other), (number,))
        if done is not None:
            return done
        fast = fastpath.dense_key(f"{name}_alpha", (input, other), (number,))
    shape = broadcast_shapes(*(t.shape for t in tensors))
    device = device_of(tensors, name)
    target = output(out, shape, result, device, name, (input, other), result, cast=True)
    _launch_scaled(name, input, other, number, result, target, fast)
    return cast_back(target, out)


def _complex_scaled(other, alpha, result: DType):
    """alpha * other for a complex result, as torch multiplies them: both complex numbers
    of that dtype (a number's product taken here, exactly as its kernel would), other (a
    tensor) in that dtype first: an integer one scaled in its own dtype would wrap (int8
    100 * 2 is not -56)."""
    factor = _complex_number(alpha, result)
    if not isinstance(other, Tensor):
        a, b = _complex_number(other, result), factor
        return builtins.complex(
            a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real
        )
    return binary("mul", other.to(result), factor)


def _complex_number(value, result: DType) -> complex:
    """A number as an element of the complex `result` holds it: each part rounded to its
    precision; an int past int64 and uint64 refused, as every op refuses one."""
    parts = (value.real, value.imag) if type(value) is builtins.complex else (value, 0.0)
    real, imag = (convert_scalar(p, result.to_real(), CHECKED) for p in parts)
    return builtins.complex(real, imag)


def _scaled_number(other, alpha, result: DType):
    """alpha * a number operand of an integer result: wrapped into int64 (the binary op
    then wraps it into the result dtype, as torch scales in that dtype)."""
    product = other * alpha
    if result.is_bool or type(product) is not builtins.int:
        return product
    return (product + 2**63) % 2**64 - 2**63


def _launch_scaled(name: str, a, b, alpha, result: DType, target: Tensor, fast=None):
    """a (+ or -) alpha * b into target, one kernel in `result`'s compute dtype (_SCALED).
    A number operand is a run-time parameter converted to `result` as binary ops convert
    one (wrapped into an integer dtype, rounded to a half one, beyond a float one's range
    an infinity): alpha * b is never taken in b's own dtype first, where it could wrap
    (PyTorch scales in the result dtype). `fast`: the dense door's key for two tensors of
    the result dtype (alpha its number)."""
    compute = result.compute
    scaled_formula = _SCALED[name, compute.is_floating_point]
    if result.is_half:  # each operand rounded to the result dtype first, as torch's
        a, b = (
            t.to(result) if isinstance(t, Tensor) and t.dtype is not result else t for t in (a, b)
        )
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        key, params = (f"{name}_alpha",), {"alpha": alpha}
        formula.launch(key, (a, b), compute, scaled_formula, params, target._impl, fast, ("alpha",))
        return
    _refuse_bool_with_uint64(name, a, b)
    mode = _number_mode(binary_op(name), a, result, False)
    tensor, number, which = (a, b, "other") if isinstance(a, Tensor) else (b, a, "input")
    params = {which: convert_scalar(number, result, mode), "alpha": alpha}
    order = scaled_formula if which == "other" else _number_first(scaled_formula)
    key = (f"number_{which}_{name}_alpha",)
    formula.launch(key, (tensor,), compute, order, params, target._impl)


def _number_first(scaled_formula):
    """The formula of x (op) alpha * y called as launch calls it when x is a parameter:
    the tensor operands come first, then the parameters (x, then alpha)."""
    return lambda y, x, w: scaled_formula(x, y, w)


def scaled_(name: str, self: Tensor, other, alpha) -> Tensor:
    """add_ and sub_ with alpha: self = self (+ or -) alpha * other, in self's dtype."""
    other = _operand(other, f"{name}_")
    _, result = _binary_dtypes(binary_op(name), self, other)
    number = _alpha_number(f"{name}_", alpha, result)
    if result.is_complex:  # self (+ or -) (alpha * other), two kernels
        return binary_(name, self, _complex_scaled(other, number, result))
    if not isinstance(other, Tensor) and not result.is_floating_point:
        return binary_(name, self, _scaled_number(other, number, result))
    shape = broadcast_shapes(*(t.shape for t in (self, other) if isinstance(t, Tensor)))
    _check_inplace(self, result, shape, f"{name}_")
    _launch_scaled(name, self, other, number, result, self)
    self._impl.storage.bump_version()
    return self


def clamp_(self: Tensor, min=None, max=None) -> Tensor:
    """clamp written into self (its dtype never changes)."""
    return clamp_as_("clamp_", self, min, max)


def clamp_as_(op: str, self: Tensor, lo, hi) -> Tensor:
    """clamp_, its errors naming `op` (clamp_min_ and clamp_max_)."""
    bounds, dtype, _, shape = _clamp_bounds(self, lo, hi, op)
    _check_inplace(self, dtype, shape, op)
    _launch_clamp(self, bounds, dtype, self)
    self._impl.storage.bump_version()
    return self


def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """A copy of input with `value` wherever mask (bool) holds, in the broadcast shape of both
    (a mask wider than input widens the result, as in PyTorch), row-major as PyTorch's."""
    plain = type(value) in _NUMBERS and isinstance(input, Tensor) and isinstance(mask, Tensor)
    if plain and mask.dtype is bool_:
        refuse_float_overflow(value, input.dtype)
        done = fastpath.dense("masked_fill", (mask, input), (value,))
        if done is not None:
            return done
    x = tensor_arg(input, "masked_fill")
    value = _masked_value(mask, value)
    device_of([x, mask], "masked_fill_", cpu_scalars=0)  # a CPU mask only beside CPU
    refuse_float_overflow(value, x.dtype)
    target = empty_impl(broadcast_shapes(x.shape, mask.shape), x.dtype, x.device)
    fast = fastpath.dense_key("masked_fill", (mask, x), (value,))
    _masked_kernel(target, mask, x, value, fast)
    return Tensor(target)


_NUMBERS = (builtins.int, builtins.float)


def masked_fill_(self: Tensor, mask: Tensor, value) -> Tensor:
    """self[mask] = value, with the mask broadcast to self's shape. The value (a 0-d
    tensor's too) converts to self's dtype checked, as in PyTorch: a finite float beyond a
    float dtype's range is refused, even where the mask selects nothing."""
    value = _masked_value(mask, value)
    device_of([self, mask], "masked_fill_", cpu_scalars=0)  # a CPU mask only beside CPU
    refuse_float_overflow(value, self.dtype)
    return _masked_store(self, mask, value)


def masked_store_(self: Tensor, mask: Tensor, value) -> Tensor:
    """masked_fill_ without its float range check, for tensor[mask] = value (indexing's
    setitem): PyTorch's setitem stores a float16/bfloat16 value beyond the range as inf."""
    return _masked_store(self, mask, _masked_value(mask, value))


def _masked_value(mask: Tensor, value):
    """masked_fill_'s checks of mask (bool) and value (a number or a 0-d tensor), and the
    value as a number."""
    if not isinstance(mask, Tensor) or mask.dtype is not bool_:
        got = mask.dtype if isinstance(mask, Tensor) else type(mask).__name__
        raise TypeError(f"masked_fill_ only supports a bool mask, got {got}")
    if isinstance(value, Tensor):
        if value.ndim:
            raise ValueError(
                f"masked_fill_ only supports a 0-dim value tensor, got {value.ndim} dimensions"
            )
        value = value.item()
    return _operand(value, "masked_fill_")


def _masked_store(self: Tensor, mask: Tensor, value) -> Tensor:
    """self[mask] = value (a number, converted to self's dtype as in PyTorch), one kernel."""
    shape = broadcast_shapes(self.shape, mask.shape)
    _check_inplace(self, self.dtype, shape, "masked_fill_")
    _masked_kernel(self._impl, mask, self, value)
    self._impl.storage.bump_version()
    return self


def _masked_kernel(
    target: TensorImpl, mask: Tensor, source: Tensor, value, fast: tuple | None = None
) -> None:
    """target = source with `value` (converted to its dtype, checked) where mask holds, both
    broadcast to target's shape; `fast`: the fast door's key for a new target."""
    dtype = source.dtype

    def build():
        value_node = g.Where(
            dtype,
            (),
            g.Input(bool_, (), "mask"),
            g.Scalar(dtype, (), "x2"),
            g.Input(dtype, (), "x0"),
        )
        return "masked_fill", [value_node]

    entry = eager.template(("masked_fill", dtype), build)
    shape = target.shape
    ins = [unaliased(views.broadcast_view(t._impl, shape), target) for t in (mask, source)]
    scalars = {"x2": convert_scalar(value, dtype, CHECKED)}
    eager.run(entry, [target], ins, scalars)
    if fast is not None:
        fastpath.remember(fast, entry, (dtype, bool_, dtype), (("x2", CHECKED),), target, ins)


# ---- whole-tensor predicates ----------------------------------------------------------------


def _any(name: str, operands: list, build, shape, device, compute: DType) -> bool:
    """Whether the bool graph of `build` is true anywhere (a kernel-side any, no reduction)."""
    scratch = Tensor(empty_impl(shape, bool_, device))
    return _run(
        ("any", name, *(_kind(x) for x in operands), compute), operands, build, scratch, compute
    )


def equal(input: Tensor, other: Tensor) -> bool:
    """True when input and other have one shape and equal elements (NaN is never equal)."""
    tracing.data_dependent("a Python bool from the values")
    a, b = _two_tensors(input, other, "equal")
    if a.shape != b.shape:
        return False
    if a.dtype.is_complex or b.dtype.is_complex:
        return not bool(binary("ne", a, b).any())
    compute = result_type(a, b)

    def build():
        x = g.Cast(compute, (), g.Input(a.dtype, (), "x0"))
        y = g.Cast(compute, (), g.Input(b.dtype, (), "x1"))
        return "equal", [g.Unary(bool_, (), "flag", g.Binary(bool_, (), "ne", x, y))]

    return not _any("equal", [a, b], build, a.shape, device_of([a, b], "equal"), compute)


def allclose(
    input: Tensor, other: Tensor, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False
) -> bool:
    """|input - other| <= atol + rtol * |other| everywhere (broadcast), as torch.allclose."""
    tracing.data_dependent("a Python bool from the values")
    a, b = _two_tensors(input, other, "allclose")
    rtol, atol = (_tolerance(v, name) for v, name in ((rtol, "rtol"), (atol, "atol")))
    equal_nan = bool_arg(equal_nan, "allclose", "equal_nan")
    if a.dtype is not b.dtype:  # torch.isclose's check: no promotion (equal promotes)
        raise TypeError(
            f"allclose(): input has dtype {a.dtype} but other has dtype {b.dtype}; they must match"
        )
    if a.dtype.is_complex:
        from kael.frontend import complex

        return bool(complex.isclose(a, b, rtol, atol, equal_nan).all())
    dt = a.dtype if a.dtype.is_floating_point else float64

    def build():
        x = g.Cast(dt, (), g.Input(a.dtype, (), "x0"))
        y = g.Cast(dt, (), g.Input(b.dtype, (), "x1"))
        diff = g.Unary(dt, (), "abs", g.Binary(dt, (), "sub", x, y))
        scaled = g.Binary(dt, (), "mul", g.Scalar(dt, (), "x3"), g.Unary(dt, (), "abs", y))
        close = g.Binary(
            bool_, (), "le", diff, g.Binary(dt, (), "add", g.Scalar(dt, (), "x2"), scaled)
        )
        # An infinite difference is never close, even to an infinite tolerance (1 vs inf).
        close = g.Binary(bool_, (), "and", close, g.Unary(bool_, (), "isfinite", diff))
        ok = g.Binary(bool_, (), "or", close, g.Binary(bool_, (), "eq", x, y))  # equal infinities
        if equal_nan:
            nans = g.Binary(
                bool_, (), "and", g.Unary(bool_, (), "isnan", x), g.Unary(bool_, (), "isnan", y)
            )
            ok = g.Binary(bool_, (), "or", ok, nans)
        return "allclose", [g.Unary(bool_, (), "flag", g.Unary(bool_, (), "not", ok))]

    device = device_of([a, b], "allclose")
    shape = broadcast_shapes(a.shape, b.shape)
    operands = [a, b, atol, rtol]
    return not _any(f"allclose{int(equal_nan)}", operands, build, shape, device, dt)


def _two_tensors(input, other, op: str) -> tuple[Tensor, Tensor]:
    """The two tensors of a whole-tensor predicate, each checked and named if it is not one."""
    return tensor_arg(input, op), tensor_arg(other, op, "other")


def _tolerance(value, name: str) -> float:
    """allclose's rtol or atol: a float >= 0 (NaN refused), as torch checks it."""
    tolerance = float_arg(value, "allclose", name)
    if not tolerance >= 0:
        raise ValueError(f"allclose(): {name} must be greater than or equal to zero, got {value}")
    return tolerance
