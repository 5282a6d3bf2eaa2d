"""The public op API: kael.add, Tensor.add, Tensor.add_ and the Python operators, generated
from elementwise.py's tables, plus each op family's registry (FUNCTIONS, METHODS).

Importing this module installs the methods on Tensor (tensor.py cannot import the ops
without a cycle); kael/__init__.py imports it.
"""

from __future__ import annotations

import functools
import math

from kael.frontend import (
    blas_like,
    complex,
    contractions,
    factorizations,
    fastpath,
    formula,
    index_ops,
    indexing,
    linalg,
    linalg_extras,
    math_functions,
    matrix_norms,
    nn,
    order_statistics,
    orthogonal,
    products,
    reductions,
    scatters,
    sequence,
    shapes,
    singular,
    special_math,
    spectral,
    stacking,
    statistics,
    views,
)
from kael.frontend import elementwise as ew
from kael.frontend.math_functions import inplace_result
from kael.frontend.outputs import output, tensor_arg
from kael.frontend.tensor import Tensor
from kael.frontend.tracing import op_door
from kael.runtime.convert import to_float32
from kael.runtime.dtypes import bool_, float64, int32, int64
from kael.runtime.errors import IndexError, TypeError, ValueError
from kael.runtime.tracestate import state as trace_state

_INDEX_DTYPES = (int64, int32)  # the index tensors x[i] reads as positions (not masks)


def _binary_function(name: str):
    op = ew.BINARY[name]

    def fn(input, other, *, out: Tensor | None = None) -> Tensor:
        ew.check_tensor_args(op, input, other)  # kael's own code calls ew.binary, unchecked
        return ew.binary(name, input, other, out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} of two tensors or a tensor and a number, broadcast."
    return fn


def _unit_alpha(alpha) -> bool:
    """Whether alpha is the default 1 (an int: 1.0 is checked against an integral result)."""
    return type(alpha) is int and alpha == 1


def _alpha_function(name: str):
    """add or sub with PyTorch's keyword alpha: input (+ or -) alpha * other."""
    plain = _binary_function(name)

    def fn(input, other, *, alpha=1, out: Tensor | None = None) -> Tensor:
        if _unit_alpha(alpha):
            return plain(input, other, out=out)
        return ew.scaled(name, input, other, alpha, out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"input {'+' if name == 'add' else '-'} alpha * other, broadcast (alpha: 1)."
    return fn


def _unary_function(name: str):
    def fn(input, *, out: Tensor | None = None) -> Tensor:
        return ew.unary(name, input, out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name}."
    return fn


def _round(input, *, decimals: int = 0, out: Tensor | None = None) -> Tensor:
    """Elementwise rounding half to even; with `decimals`, to that many decimal places as
    PyTorch computes it: round(x * 10**d) / 10**d (for d < 0, round(x / 10**-d) * 10**-d),
    in float32 for float32 and the half types (rounded once at the store), float64 for
    float64."""
    if type(decimals) is not int:
        given, decimals = decimals, views.index_or_none(decimals)
        if decimals is None:
            raise TypeError(f"round(): argument 'decimals' must be int, not {type(given).__name__}")
    if decimals == 0:
        return ew.unary("round", input, out)
    x = tensor_arg(input, "round")
    if not x.dtype.is_floating_point:
        raise TypeError(f"round(): decimals={decimals} is not implemented for {x.dtype}")
    scale = float(10 ** abs(decimals)) if abs(decimals) < 400 else math.inf
    compute = x.dtype.compute
    if compute is not float64:
        scale = to_float32(scale)

    def up(v, p):
        return (v * p).apply("round") / p

    def down(v, p):
        return (v / p).apply("round") * p

    target = output(out, x.shape, x.dtype, x.device, "round", (x,))
    fn = up if decimals > 0 else down
    formula.launch((f"round_{fn.__name__}",), [x], compute, fn, {"p": scale}, target._impl)
    return target


def _pow(input, exponent, *, out: Tensor | None = None) -> Tensor:
    """Elementwise input ** exponent, broadcast (torch names pow's second operand exponent)."""
    return ew.binary("pow", input, exponent, out)


_pow.__name__ = _pow.__qualname__ = "pow"

ROUNDING_MODES = {None: "div", "trunc": "div_trunc", "floor": "floor_divide"}


def _rounding(rounding_mode) -> str:
    """The binary op of div's rounding_mode."""
    if rounding_mode not in ROUNDING_MODES:
        raise ValueError(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found"
            f" {rounding_mode!r}"
        )
    return ROUNDING_MODES[rounding_mode]


def _div(input, other, *, rounding_mode=None, out: Tensor | None = None) -> Tensor:
    """input / other: true division, or rounded toward zero ('trunc') or down ('floor')."""
    name = _rounding(rounding_mode)
    ew.check_tensor_args(ew.binary_op(name), input, other)
    return ew.binary(name, input, other, out)


FUNCTIONS = {name: _binary_function(name) for name in ew.BINARY}
FUNCTIONS["div"] = _div
FUNCTIONS.update(add=_alpha_function("add"), sub=_alpha_function("sub"))
FUNCTIONS.update({name: _unary_function(name) for name in ew.UNARY}, pow=_pow, round=_round)
FUNCTIONS.update(
    where=index_ops.where,
    clamp=ew.clamp,
    gelu=ew.gelu,
    masked_fill=ew.masked_fill,
    equal=ew.equal,
    allclose=ew.allclose,
)
# PyTorch's other names for the same ops.
ALIASES = {
    "subtract": "sub",
    "multiply": "mul",
    "divide": "div",
    "true_divide": "div",
    "negative": "neg",
    "absolute": "abs",
    "clip": "clamp",
    "greater": "gt",
    "greater_equal": "ge",
    "less": "lt",
    "less_equal": "le",
    "not_equal": "ne",
    "fix": "trunc",
    "arcsin": "asin",
    "arccos": "acos",
    "arctan": "atan",
    "arcsinh": "asinh",
    "arccosh": "acosh",
    "arctanh": "atanh",
    "arctan2": "atan2",
}

# Every other op family declares its own functions and Tensor methods.
FAMILIES = (
    reductions,
    linalg,
    index_ops,
    sequence,
    nn,
    shapes,
    math_functions,
    contractions,
    order_statistics,
    scatters,
    factorizations,
    orthogonal,
    spectral,
    singular,
    special_math,
    products,
    blas_like,
    stacking,
    statistics,
    matrix_norms,
    linalg_extras,
)
NOT_METHODS: set[str] = set()
for _family in FAMILIES:
    FUNCTIONS.update(_family.FUNCTIONS)
    NOT_METHODS.update(_family.NOT_METHODS)


def _complex_aware(name: str, fn):
    """fn, or its complex form (complex.BY_PARTS) where a complex tensor or number comes in."""
    form = complex.BY_PARTS[name]

    @functools.wraps(fn)
    def dispatch(input, *args, **kwargs):
        if complex.takes_complex(input, args, kwargs):
            return form(input, *args, **kwargs)
        return fn(input, *args, **kwargs)

    return dispatch


FUNCTIONS.update(
    {name: _complex_aware(name, FUNCTIONS[name]) for name in complex.BY_PARTS if name in FUNCTIONS}
)
# Each public op goes through the tracing door (recorded, or an extern step, under compile);
# a unary op asks the fast door before it (which serves nothing while tracing).
FUNCTIONS = {name: op_door(name, fn) for name, fn in FUNCTIONS.items()}
FUNCTIONS.update({name: fastpath.unary_first(name, FUNCTIONS[name], True) for name in ew.UNARY})


def _keyed_door(name: str, family=reductions):
    """A reduction's or row kernel's fast door (fastpath.keyed) as its outermost frame: the
    op door (over the complex dispatch where the op has a complex form) runs every call
    the fast one does not serve; an op of several launches keeps them as one chain
    (family.STEPS)."""
    fn = family.FUNCTIONS[name]
    full = _complex_aware(name, fn) if name in complex.BY_PARTS else fn
    steps = getattr(family, "STEPS", {}).get(name, 1)
    return fastpath.keyed(fn, op_door(name, full), steps)


FUNCTIONS.update({name: _keyed_door(name) for name in reductions.FAST})
FUNCTIONS.update({name: _keyed_door(name, nn) for name in nn.FAST})
FUNCTIONS.update({name: _keyed_door(name, sequence) for name in sequence.FAST})
FUNCTIONS.update({name: _keyed_door(name, index_ops) for name in index_ops.FAST})
FUNCTIONS.update({alias: FUNCTIONS[name] for alias, name in ALIASES.items()})

# Tensor's own methods that may launch kernels (views need no door: they launch nothing).
TRACED_TENSOR_METHODS = (
    "to", "cpu", "cuda", "float", "double", "long", "bool", "clone", "contiguous", "copy_",
    "fill_", "zero_", "reshape", "__getitem__", "__setitem__",
)  # fmt: skip

INPLACE_BINARY = (
    "add", "sub", "mul", "div", "pow", "floor_divide", "remainder", "bitwise_and", "bitwise_or",
    "bitwise_xor", "fmod", "copysign", "bitwise_left_shift", "bitwise_right_shift",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
)  # fmt: skip

# Tensor.NAME_ of a unary function: NAME_(self) runs ew.UNARY's kernel (INPLACE_KERNEL names
# the kernel of a function that is not itself a table row) straight into self, in self's
# dtype and layout; a function outside the table, or a call with arguments (nan_to_num_'s
# nan, posinf, neginf; round_'s decimals where kael.round takes them), computes the
# function's result, checks it as the in-place ops do and copies it into self.
INPLACE_UNARY = (
    "abs", "neg", "sign", "sgn", "floor", "ceil", "round", "trunc", "square", "reciprocal",
    "logical_not", "bitwise_not", "sqrt", "rsqrt", "exp", "exp2", "expm1", "log", "log2",
    "log10", "log1p", "sin", "cos", "tan", "tanh", "sigmoid", "erf", "asin", "acos", "atan",
    "sinh", "cosh", "asinh", "acosh", "atanh", "frac", "deg2rad", "rad2deg", "nan_to_num",
    "sinc",
)  # fmt: skip
INPLACE_KERNEL = {"sgn": "sign"}
# Tensor.NAME_ of a function of more operands, computed, checked and copied into self: the
# arguments PyTorch's method takes only as Tensors (no Number overload).
INPLACE_COMPUTED = {
    "atan2": ("other",), "hypot": ("other",), "xlogy": (), "lerp": ("end",),
    "heaviside": ("values",), "gcd": ("other",), "lcm": ("other",), "ldexp": ("other",),
    "nextafter": ("other",), "float_power": (),
}  # fmt: skip
# Each alias's in-place method is its base's (absolute_ is abs_, subtract_ is sub_, ...).


# torch's reflected add and mul are self.add(other) and self.mul(other): the number is the
# second operand, which a float16/bfloat16 mul reads unrounded (1e5 * h is not inf).
COMMUTATIVE = ("add", "mul")


def _reflected(name: str, dunder: str):
    if name in COMMUTATIVE:

        def method(self, other):
            return ew.binary(name, self, other)
    else:

        def method(self, other):
            return ew.binary(name, other, self)

    _name_method(method, f"__r{dunder}__")
    return op_door(name, method)


def _rtruediv(self, other):
    """other / self as PyTorch's operator computes it: self.reciprocal() * other, two
    roundings (one division can differ in the last bit), the number read as mul reads it."""
    if isinstance(other, Tensor) or ew.number_of(other) is None:
        return ew.binary("div", other, self)  # a tensor divides; anything else is refused
    return ew.binary("mul", ew.unary("reciprocal", self), other)


def _inplace(name: str):
    tensors_only = "other" in ew.BINARY[name].tensors  # logical_and_(Tensor) only

    def method(self, other):
        if tensors_only:
            tensor_arg(other, f"{name}_", "other")
        return ew.binary_(name, self, other)

    _name_method(method, f"{name}_")
    return op_door(f"{name}_", method)


def _unary_inplace(name: str):
    """Tensor.NAME_ of the unary function NAME (INPLACE_UNARY)."""
    written = inplace_result(f"{name}_", FUNCTIONS[name])
    op = ew.UNARY.get(INPLACE_KERNEL.get(name, name))

    def method(self, *args, **kwargs):
        if name == "abs" and complex.takes_complex(self, (), {}):  # a real result
            raise TypeError("In-place abs is not supported for complex tensors.")
        if op is None or args or kwargs or complex.takes_complex(self, (), {}):
            return written(self, *args, **kwargs)  # a complex self: complex.unary's result
        compute, result = ew._unary_dtypes(op, self)
        ew._check_inplace(self, result, self.shape, f"{name}_")
        ew._launch_unary(op.name, op.ir, self, compute, self)  # self read where it is written
        self._impl.storage.bump_version()
        return self

    _name_method(method, f"{name}_")
    method.__doc__ = f"torch.Tensor.{name}_: {name} written into self (self returned)."
    return op_door(f"{name}_", method)


def _computed_inplace(name: str, tensors: tuple[str, ...]):
    """Tensor.NAME_ of a function of more operands (INPLACE_COMPUTED)."""
    # float_power computes in float64: PyTorch writes it only into a float64 self
    written = inplace_result(f"{name}_", FUNCTIONS[name], same_dtype=name == "float_power")

    def method(self, *args, **kwargs):
        for what, value in zip(tensors, args, strict=False):
            tensor_arg(value, f"{name}_", what)
        return written(self, *args, **kwargs)

    _name_method(method, f"{name}_")
    method.__doc__ = f"torch.Tensor.{name}_: {name} written into self (self returned)."
    return op_door(f"{name}_", method)


def _fast(name: str, slow, reflected: bool = False, inplace: bool = False):
    """The operator method `slow`, asking the fast door (fastpath.py) first when called
    without out=: a Python operator on dense tensors skips the door's frames as well as the
    full door. An out= call is `slow`'s to judge; Python's own argument errors name the
    method (an operator passes exactly one operand: no *args or **kwargs to build)."""
    door = fastpath.binary_ if inplace else fastpath.binary
    key = f"{name}_" if inplace else name  # the in-place door's keys name the in-place op

    def method(self, other, *, out=None):
        if out is None:
            done = door(key, other, self) if reflected else door(key, self, other)
            return slow(self, other) if done is None else done
        return slow(self, other, out=out)

    _name_method(method, slow.__name__)
    method.__doc__ = slow.__doc__
    return method


def _alpha_inplace(name: str, plain):
    """add_ or sub_ taking alpha: `plain` (the fast door's) unless alpha is given."""

    def with_alpha(self, other, alpha):
        return ew.scaled_(name, self, other, alpha)

    door = op_door(f"{name}_", with_alpha)

    def method(self, other, *, alpha=1):
        if _unit_alpha(alpha):
            return plain(self, other)
        return door(self, other, alpha)

    _name_method(method, f"{name}_")
    return method


def _fast_matmul(slow):
    """`a @ b` asking the fast door (a remembered product of these layouts) first."""
    door = fastpath.matmul

    @functools.wraps(slow)
    def method(self, other):
        done = door(self, other)
        return slow(self, other) if done is None else done

    return method


def _fast_getitem(slow):
    """Tensor.__getitem__ asking the view memo first (it is closed while tracing): a repeated
    basic index skips the door's frames too. x[i] of an integer index tensor on x's device
    is index_select's fast door along dim 0; a negative or bad index takes the full path,
    which wraps or raises, and so do later calls of that layout pair (`wrapped`). x[mask]
    of a bool mask of x's leading dims is one compaction (indexing.masked_rows)."""
    select = FUNCTIONS["index_select"]
    wrapped: set = set()  # (x's layout, the index's) that met a negative index

    def __getitem__(self, key):
        if type(key) is Tensor:
            impl, own = key._impl, self._impl
            if impl.device is not own.device or trace_state.trace is not None:
                return slow(self, key)
            lead = len(impl.shape)
            if impl.dtype is bool_ and lead:
                rows = indexing.masked_rows(own, impl)
                if rows is not None:
                    return Tensor.trusted(rows)
            elif impl.dtype in _INDEX_DTYPES and impl.shape and own.shape:
                pair = (own.shape, own.strides, impl.shape, impl.strides)
                if pair in wrapped:
                    return slow(self, key)
                try:
                    picked = select(self, 0, key if len(impl.shape) == 1 else key.reshape(-1))
                except IndexError:  # negative places wrap there, or it raises its own error
                    if len(wrapped) >= 1024:
                        wrapped.clear()
                    wrapped.add(pair)
                    picked = None
                if picked is None:  # outside the handler: slow's error is not chained to it
                    return slow(self, key)
                if len(impl.shape) == 1:
                    return picked
                return picked.view(*impl.shape, *self._impl.shape[1:])
        done = indexing.remembered_view(self, key)
        return slow(self, key) if done is None else done

    __getitem__.__doc__ = slow.__doc__
    return __getitem__


def _name_method(method, name: str) -> None:
    """Name a generated method as Tensor.NAME, so Python's argument errors say which it is."""
    method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"


def _method(fn):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    _name_method(method, fn.__name__)
    method.__doc__ = fn.__doc__
    return method


# What torch's comparison operators meet with NotImplemented (its argument parser refuses
# them): Python then falls back to identity, so `t == None` is False and `t != [1]` True.
_NOT_COMPARED = (type(None), str, bytes, list, tuple, dict, set)


def _compared(fn):
    """A comparison operator: NotImplemented for _NOT_COMPARED operands, as torch's (`t < None`
    is then Python's TypeError); else the op."""

    def method(self, other):
        if isinstance(other, _NOT_COMPARED):
            return NotImplemented
        return fn(self, other)

    _name_method(method, fn.__name__)
    method.__doc__ = fn.__doc__
    return method


def _install() -> None:
    """Every function as a Tensor method, the in-place variants and the operators."""
    fastpath.bind(Tensor)
    # the door itself as the method: no frame in between
    for family in (reductions, nn, sequence, index_ops):
        for name in family.FAST:
            method = _keyed_door(name, family)
            _name_method(method, name)
            setattr(Tensor, name, method)
    for name, fn in FUNCTIONS.items():
        if not hasattr(Tensor, name) and name not in NOT_METHODS:
            fast = name in ew.UNARY or ALIASES.get(name) in ew.UNARY
            setattr(
                Tensor,
                name,
                fastpath.unary_first(ALIASES.get(name, name), _method(fn)) if fast else _method(fn),
            )
    for name in INPLACE_UNARY:
        setattr(Tensor, f"{name}_", _unary_inplace(name))
    for name, tensors in INPLACE_COMPUTED.items():
        setattr(Tensor, f"{name}_", _computed_inplace(name, tensors))
    for family in FAMILIES:
        for name, fn in family.METHODS.items():
            aware = _complex_aware(name, fn) if name in complex.BY_PARTS else fn
            setattr(Tensor, name, op_door(name, aware))
    Tensor.__matmul__ = _fast_matmul(Tensor.__matmul__)
    for name in INPLACE_BINARY:
        setattr(Tensor, f"{name}_", _fast(name, _inplace(name), inplace=True))
    for name in ("add", "sub"):
        setattr(Tensor, f"{name}_", _alpha_inplace(name, getattr(Tensor, f"{name}_")))
    Tensor.clamp_ = Tensor.clip_ = op_door("clamp_", ew.clamp_)
    plain_div_ = Tensor.div_

    def div_(self, other, *, rounding_mode=None):
        if rounding_mode is None:
            return plain_div_(self, other)
        return ew.binary_(_rounding(rounding_mode), self, other)

    _name_method(div_, "div_")
    Tensor.div_ = Tensor.divide_ = op_door("div_", div_)
    Tensor.masked_fill_ = op_door("masked_fill_", _complex_aware("masked_fill_", ew.masked_fill_))
    for alias, name in ALIASES.items():
        if hasattr(Tensor, f"{name}_") and not hasattr(Tensor, f"{alias}_"):
            setattr(Tensor, f"{alias}_", getattr(Tensor, f"{name}_"))
    for name in TRACED_TENSOR_METHODS:
        setattr(Tensor, name, op_door(f"Tensor.{name}", getattr(Tensor, name)))
    Tensor.__getitem__ = _fast_getitem(Tensor.__getitem__)
    operators = {
        "add": "add",
        "sub": "sub",
        "mul": "mul",
        "truediv": "div",
        "floordiv": "floor_divide",
        "mod": "remainder",
        "pow": "pow",
        "and": "bitwise_and",
        "or": "bitwise_or",
        "xor": "bitwise_xor",
        "lshift": "bitwise_left_shift",
        "rshift": "bitwise_right_shift",
    }
    for dunder, name in operators.items():
        setattr(Tensor, f"__{dunder}__", _fast(name, _method(FUNCTIONS[name])))
        reflected = name not in COMMUTATIVE
        setattr(Tensor, f"__r{dunder}__", _fast(name, _reflected(name, dunder), reflected))
        if name in INPLACE_BINARY:
            setattr(Tensor, f"__i{dunder}__", _fast(name, _inplace(name), inplace=True))
    _name_method(_rtruediv, "__rtruediv__")
    Tensor.__rtruediv__ = op_door("div", _rtruediv)
    for dunder in ("eq", "ne", "lt", "le", "gt", "ge"):  # input is self: always a Tensor
        setattr(Tensor, f"__{dunder}__", _fast(dunder, _compared(FUNCTIONS[dunder])))
    Tensor.__hash__ = object.__hash__  # defining __eq__ would otherwise make tensors unhashable
    Tensor.__neg__ = fastpath.unary_first("neg", _method(FUNCTIONS["neg"]))
    Tensor.__abs__ = fastpath.unary_first("abs", _method(FUNCTIONS["abs"]))
    Tensor.__invert__ = fastpath.unary_first("bitwise_not", _method(FUNCTIONS["bitwise_not"]))
    Tensor.__pos__ = lambda self: self


_install()
