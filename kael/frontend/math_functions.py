"""Math functions PyTorch programs call beside the elementwise tables' ops, each one
formula (frontend/formula.py) over kael's own math, so one kernel, fused under
@kael.compile and run on cuda tensors: deg2rad, rad2deg, frac, sgn, log10, sinh, cosh,
asinh, acosh, atanh, nan_to_num, xlogy, logaddexp, logaddexp2, hypot, lerp, isclose,
logit, and clamp_min / clamp_max (clamp with one bound); signbit, isposinf, isneginf,
isreal, positive, fmax, fmin, heaviside, ldexp, float_power, sinc, nextafter, frexp (two
kernels: mantissa and exponent), gcd and lcm (Euclid's loop unrolled to the dtype's
longest chain).

Accuracy (measured against float64 references in tests/frontend/test_math_functions.py):
log10 1.8 ulp, hypot 1.9 (scaled by the larger magnitude: no overflow or underflow before
the result's own), the hyperbolic functions (float64 inside for float32) 0.5 ulp; logaddexp and logaddexp2 within 2.2 ulps of the larger operand (the
formula, PyTorch's too, cancels where the result is near 0). Against mpmath: sinc 0.5 ulp
in float32 (float64 inside), 2.0 ulp in float64 (sin(pi r), r = x - round(x): exact zeros
at the integers, where PyTorch's sin(pi x) / (pi x) loses everything for large x);
float_power 1 ulp. Exact: signbit, nextafter, frexp, ldexp with an integer exponent, gcd,
lcm, fmax, fmin, heaviside.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from typing import NamedTuple

from kael.frontend import eager, factories
from kael.frontend import elementwise as ew
from kael.frontend.formula import Value, fma, launch, maximum, minimum, where
from kael.frontend.memory_formats import Layout
from kael.frontend.outputs import (
    bool_arg,
    cast_back,
    like_result,
    new_result,
    output,
    tensor_arg,
)
from kael.frontend.tensor import Tensor
from kael.ir import graph as g
from kael.runtime.convert import CHECKED, ROUNDED, convert_scalar
from kael.runtime.dtypes import (
    DType,
    bfloat16,
    bool_,
    float32,
    float64,
    get_default_dtype,
    int32,
    result_type,
    uint8,
)
from kael.runtime.errors import TypeError, UnsupportedDtype, ValueError
from kael.runtime.tensor_impl import contiguous_strides

LN10, LN2 = math.log(10.0), math.log(2.0)


def _float_result(dtype: DType) -> DType:
    """PyTorch's dtype for a float function of `dtype`: the default float for integers."""
    return dtype if dtype.is_floating_point else get_default_dtype()


def _compute(dtype: DType) -> DType:
    """Half types compute in float32 and round once."""
    return float32 if dtype.is_half else dtype


def _unary(
    name: str, formula: Callable[[Value], Value], floats_only: bool = False, wide: bool = False
):
    """A public unary function of `formula`; `wide`: float32 and the half types compute
    in float64 and round once (the hyperbolic functions: within an ulp that way)."""

    def fn(input: Tensor, *, out: Tensor | None = None) -> Tensor:
        x = tensor_arg(input, name)
        if x.dtype.is_complex:  # complex.py's form, or its refusal
            from kael.frontend import complex

            return complex.unary(name, x, out, cast=not floats_only)
        if floats_only and not x.dtype.is_floating_point:
            raise UnsupportedDtype(f'"{name}" not implemented for {x.dtype} (floating point only)')
        result = _float_result(x.dtype)
        compute = float64 if wide else _compute(result)
        if out is None:
            return launch((name, compute), [x], compute, formula, dtype=result)
        # torch's frac keeps its dtype (no cast); the others are unary float ops, which cast
        target = output(out, x.shape, result, x.device, name, (x,), cast=not floats_only)
        launch((name, compute), [x], compute, formula, out=target._impl)
        return cast_back(target, out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}, elementwise (into out= if given): one kernel."
    return fn


def _operands(a, b, name: str) -> tuple[list[Tensor], DType]:
    """Both operands as tensors of the promoted float dtype of the result, as PyTorch casts
    them to it before its kernel widens them (an int 70000 beside float16 is inf, a float64
    0-d 1.0001 is 1). A Python number becomes a 0-d tensor of that dtype straight away:
    beside an integer tensor it is never first cast to the integer dtype (xlogy(uint8
    tensor, -3) reads -3, not 253; int8 beside 1000 is no overflow)."""
    tensors = [x for x in (a, b) if isinstance(x, Tensor)]
    if not tensors:
        raise TypeError(f"{name}: expected at least one tensor operand")
    for x in tensors:
        if x.dtype.is_complex:  # (the cast below would drop the imaginary part)
            raise TypeError(f"{name}: this operation does not support {x.dtype} tensors")
    out = _float_result(result_type(a, b))
    like = tensors[0]
    pair = [
        (x if x.dtype is out else x.to(out))
        if isinstance(x, Tensor)
        else factories.full((), x, dtype=out, device=like.device)
        for x in (a, b)
    ]
    return pair, out


def _binary(
    name: str, formula: Callable[[Value, Value], Value], floats_only: bool = False, wide=False
):
    def fn(input, other) -> Tensor:
        pair, out = _operands(input, other, name)
        if floats_only and not result_type(input, other).is_floating_point:
            raise UnsupportedDtype(
                f'"{name}" not implemented for integer inputs (floating point only)'
            )
        compute = float64 if wide else _compute(out)
        return launch((name, compute), pair, compute, formula, common=out, dtype=out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}, elementwise and broadcast: one kernel."
    return fn


def _xlogy(x: Value, y: Value) -> Value:
    """x log(y), 0 where x is 0 (unless y is NaN)."""
    return where(x.eq(0) & y.eq(y), 0.0, x * y.apply("log"))


def _logaddexp(exp: str, log1p_scale: float):
    """log(e^a + e^b) (base 2 with exp2): the larger plus log1p of the smaller's ratio,
    scaled; an infinity added to itself is that infinity (the gap would be NaN)."""

    def formula(a: Value, b: Value) -> Value:
        gap = -(a - b).apply("abs")
        total = maximum(a, b) + gap.apply(exp).apply("log1p") * log1p_scale
        return where(a.eq(b) & a.apply("abs").eq(math.inf), a, total)

    return formula


def _hypot(a: Value, b: Value) -> Value:
    """sqrt(a^2 + b^2) as m sqrt(1 + (n / m)^2), m the larger magnitude; inf if either is."""
    x, y = a.apply("abs"), b.apply("abs")
    big, small = maximum(x, y), minimum(x, y)
    ratio = small / big
    scaled = big * (1 + ratio * ratio).apply("sqrt")
    either_inf = x.eq(math.inf) | y.eq(math.inf)  # even with a NaN, as C's hypot
    return where(either_inf, math.inf, where(big.eq(0), 0.0, scaled))


def nan_to_num(input: Tensor, nan: float = 0.0, posinf=None, neginf=None, *, out=None) -> Tensor:
    """NaN, +inf and -inf replaced (see _nan_to_num); into `out` (checked, resized) if given."""
    result = _nan_to_num(input, nan, posinf, neginf)
    if out is None:
        return result
    target = output(out, result.shape, result.dtype, result.device, "nan_to_num")
    eager.copy_into(target._impl, result._impl)
    return target


def _nan_to_num(input: Tensor, nan: float = 0.0, posinf=None, neginf=None) -> Tensor:
    """NaN, +inf and -inf replaced by nan, posinf and neginf (the dtype's largest and
    smallest finite values by default); integers unchanged; complex numbers part by part
    (with the real dtype's values), as PyTorch."""
    x = tensor_arg(input, "nan_to_num")
    nan = 0.0 if nan is None else nan  # torch's None: the default
    if x.dtype.is_complex:
        from kael.frontend import complex as cx

        parts = _nan_to_num(cx.view_as_real(x), nan, posinf, neginf)
        return cx.view_as_complex(parts)
    if not x.dtype.is_floating_point:
        return x.clone()
    hi = x.dtype.largest if posinf is None else posinf
    lo = -x.dtype.largest if neginf is None else neginf
    params = {
        "nan": convert_scalar(nan, x.dtype, CHECKED),
        "posinf": convert_scalar(hi, x.dtype, CHECKED),
        "neginf": convert_scalar(lo, x.dtype, CHECKED),
    }

    def formula(v: Value, nan: Value, posinf: Value, neginf: Value) -> Value:
        return where(v.ne(v), nan, where(v.eq(math.inf), posinf, where(v.eq(-math.inf), neginf, v)))

    return launch(("nan_to_num",), [x], x.dtype, formula, params, like_result(x._impl))


def lerp(input: Tensor, end: Tensor, weight) -> Tensor:
    """input + weight (end - input), as PyTorch evaluates it: from the nearer end (weight
    below 0.5 from input, else from end), so weight 1 gives end exactly."""
    name = "lerp"
    a, b = tensor_arg(input, name), tensor_arg(end, name, "end")
    if a.dtype is b.dtype and a.dtype.is_complex:
        return _complex_lerp(a, b, weight)
    if a.dtype is not b.dtype or not a.dtype.is_floating_point:
        raise UnsupportedDtype(
            f"lerp: expected input and end of one floating dtype, got {a.dtype} and {b.dtype}"
        )

    def formula(s: Value, e: Value, w: Value) -> Value:
        d = e - s
        return where(w.apply("abs") < 0.5, s + w * d, e - d * (1 - w))

    if isinstance(weight, Tensor):
        if weight.dtype is not a.dtype:
            raise TypeError(f"lerp: expected weight of dtype {a.dtype}, got {weight.dtype}")
        return launch((name, "tensor"), [a, b, weight], _compute(a.dtype), formula).to(a.dtype)
    w = {"weight": float(weight)}
    return launch(
        (name, "scalar"), [a, b], _compute(a.dtype), lambda s, e, w: formula(s, e, w), w
    ).to(a.dtype)


def _complex_lerp(a: Tensor, b: Tensor, weight) -> Tensor:
    """lerp of complex tensors: PyTorch's two-sided formula (|weight| below 0.5 from a, else
    from b) in kael's complex arithmetic, the weight a number or a tensor of a's dtype."""
    d = b - a
    if not isinstance(weight, Tensor):
        return a + weight * d if abs(weight) < 0.5 else b - d * (1 - weight)
    if weight.dtype is not a.dtype:
        raise TypeError(f"lerp: expected weight of dtype {a.dtype}, got {weight.dtype}")
    from kael.frontend import index_ops  # where of complex values (by parts)

    return index_ops.where(weight.abs() < 0.5, a + weight * d, b - d * (1 - weight))


def _one_bound(op: str, bound, what: str):
    if bound is None:
        raise TypeError(f"{op}(): {what} must be a number or a Tensor, got None")
    return bound


def clamp_min(input: Tensor, min, *, out: Tensor | None = None) -> Tensor:
    """clamp with a lower bound only."""
    return ew.clamp_as("clamp_min", input, _one_bound("clamp_min", min, "min"), None, out)


def clamp_max(input: Tensor, max, *, out: Tensor | None = None) -> Tensor:
    """clamp with an upper bound only."""
    return ew.clamp_as("clamp_max", input, None, _one_bound("clamp_max", max, "max"), out)


def clamp_min_(self: Tensor, min) -> Tensor:
    """clamp_ with a lower bound only."""
    return ew.clamp_as_("clamp_min_", self, _one_bound("clamp_min_", min, "min"), None)


def clamp_max_(self: Tensor, max) -> Tensor:
    """clamp_ with an upper bound only."""
    return ew.clamp_as_("clamp_max_", self, None, _one_bound("clamp_max_", max, "max"))


def logit(input: Tensor, eps=None) -> Tensor:
    """log(z / (1 - z)), z = input limited to [eps, 1 - eps] when eps is given and not
    negative (NaN stays NaN); integers and bool give the default float dtype."""
    x = tensor_arg(input, "logit")
    out = _float_result(x.dtype)
    compute = _compute(out)
    if eps is not None and (isinstance(eps, (bool, complex)) or not hasattr(eps, "__float__")):
        raise TypeError(f"logit(): eps must be a float or None, got {eps!r}")
    if eps is None or float(eps) < 0:
        return launch(("logit",), [x], compute, _logit).to(out)
    lo, hi = float(eps), 1 - float(eps)
    if out.is_half:  # PyTorch's bounds are of the input's dtype: rounded to it
        lo = convert_scalar(lo, out, ROUNDED)
        hi = convert_scalar(1 - convert_scalar(lo, float32), out, ROUNDED)
    bounds = {"lo": lo, "hi": hi}

    def clamped(v: Value, lo: Value, hi: Value) -> Value:
        return _logit(where(v < lo, lo, where(v > hi, hi, v)))

    return launch(("logit", "eps"), [x], compute, clamped, bounds).to(out)


def _logit(z: Value) -> Value:
    return (z / (1 - z)).apply("log")


def inplace_result(name: str, fn: Callable, same_dtype: bool = False) -> Callable:
    """Tensor.NAME_ for an op without a kernel of its own: fn(self, ...) written into self,
    checked as the in-place ops check it (the result's dtype must cast to self's: a float
    result is refused for integers; its shape must be self's). `same_dtype`: the result's
    dtype must be self's exactly (PyTorch's float_power_, which computes in float64)."""

    def method(self: Tensor, *args, **kwargs) -> Tensor:
        result = fn(tensor_arg(self, name), *args, **kwargs)
        if same_dtype and result.dtype is not self.dtype:
            raise TypeError(
                f"the base given to {name} has dtype {self.dtype} but the operation's result"
                f" requires dtype {result.dtype}"
            )
        ew._check_inplace(self, result.dtype, result.shape, name)
        return self.copy_(result)

    method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"
    method.__doc__ = f"{fn.__name__} written into self."
    return method


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-5, atol: float = 1e-8, equal_nan=False):
    """|input - other| <= atol + rtol |other| per element (broadcast), equal values
    (infinities) close, NaN close to NaN only with equal_nan: a bool tensor."""
    a, b = tensor_arg(input, "isclose"), tensor_arg(other, "isclose", "other")
    if a.dtype is not b.dtype:
        raise TypeError(
            f"isclose(): input has dtype {a.dtype} but other has dtype {b.dtype}; they must match"
        )
    if a.dtype.is_complex:
        from kael.frontend import complex

        return complex.isclose(a, b, float(rtol), float(atol), bool(equal_nan))
    for value, what in ((rtol, "rtol"), (atol, "atol")):
        if not float(value) >= 0:
            raise ValueError(
                f"isclose(): {what} must be greater than or equal to zero, got {value}"
            )
    equal_nan = bool_arg(equal_nan, "isclose", "equal_nan")
    compute = a.dtype if a.dtype.is_floating_point else float64
    if not (a.dtype.is_floating_point or rtol or atol):  # integers or bools, no tolerance:
        return a.eq(b)  # equality, exact beyond float64's 2**53 (torch's too)

    def formula(x: Value, y: Value, rtol: Value, atol: Value) -> Value:
        diff = (x - y).apply("abs")
        close = (diff <= atol + rtol * y.apply("abs")) & (diff < math.inf)
        ok = close | x.eq(y)  # equal infinities
        return ok | (x.ne(x) & y.ne(y)) if equal_nan else ok

    params = {"rtol": float(rtol), "atol": float(atol)}
    key = ("isclose", equal_nan)
    return launch(key, [a, b], _compute(compute), formula, params).to(bool_)


def _sinh(x: Value) -> Value:
    """sinh: (t + t / (t + 1)) / 2 with t = expm1(|x|) (no cancellation near 0), beyond 1
    h^2 / 2 - 1 / (2 h^2) with h = exp(|x| / 2) (no overflow before the result's own)."""
    a = x.apply("abs")
    t = a.apply("expm1")
    near = 0.5 * (t + t / (t + 1))
    h = (a * 0.5).apply("exp")
    far = (h * 0.5) * h - (0.5 / h) / h
    return _signed(where(a < 1, near, far), x)


def _signed(magnitude: Value, x: Value) -> Value:
    """magnitude with x's sign (-0.0 and NaN pass through as x)."""
    return where(x < 0, -magnitude, where(x.eq(0), x, magnitude))


def _cosh(x: Value) -> Value:
    """cosh: h^2 / 2 + 1 / (2 h^2) with h = exp(|x| / 2): no overflow before the result's."""
    h = (x.apply("abs") * 0.5).apply("exp")
    return (h * 0.5) * h + (0.5 / h) / h


def _asinh(x: Value) -> Value:
    """asinh: log1p(a + a^2 / (1 + sqrt(1 + a^2))) with x's sign; past 2^28, log(a) + ln 2."""
    a = x.apply("abs")
    square = a * a
    near = (a + square / (1 + (1 + square).apply("sqrt"))).apply("log1p")
    far = a.apply("log") + LN2
    return _signed(where(a < 2.0**28, near, far), x)


def _acosh(x: Value) -> Value:
    """acosh: log1p(t + sqrt(2t + t^2)) with t = x - 1 below 2; log(2x - 1 / (x + sqrt(x^2 -
    1))) up to 2^28; log(x) + ln 2 beyond; NaN below 1."""
    t = x - 1
    near = (t + (t + t + t * t).apply("sqrt")).apply("log1p")
    middle = (x + x - 1 / (x + (x * x - 1).apply("sqrt"))).apply("log")
    far = x.apply("log") + LN2
    value = where(x < 2, near, where(x < 2.0**28, middle, far))
    return where(x < 1, math.nan, value)


def _atanh(x: Value) -> Value:
    """atanh: log1p(2a / (1 - a)) / 2 with x's sign (log1p(t + t a / (1 - a)), t = 2a, below
    1/2); +-inf at +-1, NaN beyond."""
    a = x.apply("abs")
    t = a + a
    near = 0.5 * (t + t * a / (1 - a)).apply("log1p")
    far = 0.5 * (t / (1 - a)).apply("log1p")
    value = where(a < 0.5, near, far)
    return where(a > 1, math.nan, _signed(value, x))


# atan(v) = v + v z A(z) for |v| <= tan(pi/8): benchmarks/fit_vmath.py's "atan" (float64,
# 0.02 eps; float32 computes in float64).
ATAN_POLY = (
    -0.333333333333332, 0.1999999999995399, -0.14285714280238657, 0.11111110785621375,
    -0.09090897821017631, 0.07692061353781932, -0.06663117075652461, 0.05847984280665393,
    -0.05039732227605092, 0.03807539020445764, -0.01791901708877154,
)  # fmt: skip
TAN_PI_8, TAN_3PI_8 = 0.41421356237309503, 2.414213562373095
# pi/4 and pi/2 as a double's head and the rest (added last, so the sum rounds once)
PI_4 = (0.7853981633974483, 3.061616997868383e-17)
PI_2 = (1.5707963267948966, 6.123233995736766e-17)


def horner(v: Value, coefs: tuple[float, ...]) -> Value:
    """sum(coefs[i] * v**i) by Horner's rule with fused multiply-adds (coefficients lowest
    degree first): a rounding a step, not two, and half the instructions (a formula's
    products and sums are not contracted otherwise)."""
    poly = _const(v, coefs[-1])
    for c in reversed(coefs[:-1]):
        poly = fma(poly, v, c)
    return poly


def _atan_ratio(ay: Value, ax: Value) -> Value:
    """atan(ay / ax) for ay, ax >= 0 with one division: by where the ratio lies, v = ay / ax
    (up to tan(pi/8)), (ay - ax) / (ay + ax) (pi/4 past it: exact for float32's operands in
    float64; halved above 1, so no sum overflows) or -ax / ay (pi/2 past tan(3 pi/8)), then
    the odd polynomial. 0/0 and inf/inf give NaN: the callers decide them. The division is
    the cost (float64 inside for float32): asin on 256K, 1 thread, 1261 -> ~400 us."""
    # an infinite ay is past tan(3 pi/8) ax even where that product overflows (not ay *
    # TAN_PI_8 > ax: that underflows for subnormal ay)
    near, far = ay <= TAN_PI_8 * ax, (ay > TAN_3PI_8 * ax) | ay.eq(math.inf)
    half = where(ax > 1, _const(ax, 0.5), 1.0)
    num = where(near, ay, where(far, -ax, ay * half - ax * half))
    v = num / where(near, ax, where(far, ay, ay * half + ax * half))
    z = v * v
    core = v + v * z * horner(z, ATAN_POLY)
    hi, lo = (where(far, _const(v, p2), p4) for p2, p4 in zip(PI_2, PI_4))
    return where(near, core, hi + (core + lo))


def _atan(x: Value) -> Value:
    return _signed(_atan_ratio(x.apply("abs"), _const(x, 1.0)), x)


def _atan2(y: Value, x: Value) -> Value:
    """The angle of (x, y): atan(|y| / |x|), mirrored where x's sign bit is set (-0 too)
    and given y's sign; both infinite: pi/4 or 3 pi/4; both zero: 0 or pi; NaN in, NaN out."""
    ay, ax = y.apply("abs"), x.apply("abs")
    angle = _atan_ratio(ay, ax)
    both_inf = ay.eq(math.inf) & ax.eq(math.inf)
    angle = where(both_inf, PI_4[0], where(ay.eq(0) & ax.eq(0), 0.0, angle))
    angle = where(_signbit(x), 2 * PI_2[0] + (2 * PI_2[1] - angle), angle)
    return where(y.ne(y) | x.ne(x), math.nan, angle)._binary("copysign", y)


def _asin(x: Value) -> Value:
    """asin(x) = atan2(x, sqrt((1 - x)(1 + x))): no cancellation near +-1; NaN past them."""
    return _atan2(x, ((1 - x) * (1 + x)).apply("sqrt"))


def _acos(x: Value) -> Value:
    """acos(x) = 2 atan2(sqrt(1 - x), sqrt(1 + x))."""
    return 2 * _atan2((1 - x).apply("sqrt"), (1 + x).apply("sqrt"))


# ---- predicates, NaN-ignoring extrema, heaviside ------------------------------------------------


def _compute_any(dtype: DType) -> DType:
    """A formula's compute dtype for any input: half types in float32, bool as uint8."""
    return uint8 if dtype is bool_ else _compute(dtype)


def _const(v: Value, value) -> Value:
    """`value` as a constant of v's dtype."""
    return Value(g.Const(v.node.dtype, (), value))


def _input_as(v: Value, dtype: DType) -> Value:
    """A launch leaf's tensor converted to `dtype` first, then to the formula's compute dtype:
    the rounding (or integer wrap) of PyTorch's own conversion to `dtype`."""
    raw = v.node.x  # launch's leaf: Cast(compute, Input)
    return Value(g.Cast(v.node.dtype, (), g.Cast(dtype, (), raw)))


def _launch_as(
    key: tuple,
    tensors: list[Tensor],
    compute: DType,
    out: DType,
    formula,
    params=None,
    layout: Sequence | None = None,
) -> Tensor:
    """launch into a new tensor of `out` (the formula's result rounded once, one kernel),
    laid out as an elementwise result over `layout` (by default the tensors; () row-major)
    whose operands convert to `out`."""
    shape = ew.broadcast_shapes(*(t.shape for t in tensors))
    operands = tensors if layout is None else layout
    target = new_result(shape, out, tensors[0].device, operands, out)
    return launch(key, tensors, compute, formula, params, out=target)


def _predicate(name: str, float_formula: Callable[[Value], Value], int_value: bool | None):
    """A bool-valued unary function: `float_formula` for floats; integers and bool give
    `int_value` everywhere (None: the float formula for them too)."""

    def fn(input: Tensor) -> Tensor:
        x = tensor_arg(input, name)
        formula = float_formula
        if not x.dtype.is_floating_point and int_value is not None:
            formula = _always if int_value else _never
        return _launch_as((name,), [x], _compute_any(x.dtype), bool_, formula)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}, elementwise: a bool tensor, one kernel."
    return fn


def _always(x: Value) -> Value:
    return x.eq(x) | x.ne(x)


def _never(x: Value) -> Value:
    return x.ne(x) & x.eq(x)


def _signbit(x: Value) -> Value:
    """The sign bit: copysign(1, x) < 0, so -0.0 and a NaN with its sign bit set count."""
    if not x.node.dtype.is_floating_point:
        return x < 0
    return _const(x, 1.0)._binary("copysign", x) < 0


signbit = _predicate("signbit", _signbit, None)
isposinf = _predicate("isposinf", lambda x: x.eq(math.inf), False)
isneginf = _predicate("isneginf", lambda x: x.eq(-math.inf), False)
isreal = _predicate("isreal", _always, True)


def positive(input: Tensor) -> Tensor:
    """input itself (unary +); bool refused as PyTorch refuses it."""
    x = tensor_arg(input, "positive")
    if x.dtype is bool_:
        raise TypeError("positive(): the `+` operator, on a bool tensor is not supported")
    return x


def _tensor_pair(input, other, name: str, what: str = "other") -> tuple[Tensor, Tensor]:
    return tensor_arg(input, name), tensor_arg(other, name, what)


def _extremum(name: str, larger: bool):
    """fmax / fmin: the larger / smaller, a NaN losing to a number (NaN where both are), the
    first operand on a tie (0.0 and -0.0), as PyTorch's."""

    def fn(input: Tensor, other: Tensor) -> Tensor:
        a, b = _tensor_pair(input, other, name)
        out = result_type(a, b)

        def formula(x: Value, y: Value) -> Value:
            better = y > x if larger else y < x
            return where(x.ne(x), y, where(y.ne(y), x, where(better, y, x)))

        return _launch_as((name,), [a, b], _compute_any(out), out, formula)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}, elementwise and broadcast: NaN loses to a number; one kernel."
    return fn


fmax = _extremum("fmax", larger=True)
fmin = _extremum("fmin", larger=False)


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """0 where input < 0 (and NaN), values where input == 0, 1 where input > 0; input and
    values of one dtype (PyTorch refuses mixed ones), broadcast."""
    a, v = _tensor_pair(input, values, "heaviside", "values")
    if a.dtype is not v.dtype:
        raise TypeError(
            "heaviside is not yet implemented for tensors with different dtypes: input is"
            f" {a.dtype}, values is {v.dtype}"
        )

    def formula(x: Value, value: Value) -> Value:
        return where(x.eq(0), value, where(x > 0, _const(x, 1), 0))

    return _launch_as(("heaviside",), [a, v], _compute_any(a.dtype), a.dtype, formula)


# ---- the binary floating-point format: ldexp, frexp, nextafter ----------------------------------


def _format(dtype: DType) -> tuple[int, int, int]:
    """(significand digits, smallest normal exponent, largest exponent) of a float dtype."""
    if dtype is bfloat16:
        return 8, -126, 127
    return {2: (11, -14, 15), 4: (24, -126, 127), 8: (53, -1022, 1023)}[dtype.itemsize]


def _exponent(a: Value) -> Value:
    """floor(log2(a)) for finite a > 0 (subnormals included), exactly: log2's floor moved by
    one either way where exp2 (exact at integers) says it is off."""
    e = a.apply("log2").apply("floor")
    e = where(e.apply("exp2") > a, e - 1, e)
    return where((e + 1).apply("exp2") <= a, e + 1, e)


def _scaled(x: Value, n: Value, compute: DType) -> Value:
    """x * 2**n for an integer-valued n, rounded once: the scale applied in steps that stay
    exact while n is past the exponent range (C's scalbn), then one rounding multiply."""
    digits, emin, emax = _format(compute)
    down = emin + digits  # a step down that keeps every finite x normal
    for _ in range(2):
        high, low = n > emax, n < emin
        x = where(high, x * 2.0**emax, where(low, x * 2.0**down, x))
        n = where(high, n - emax, where(low, n - down, n))
    return x * minimum(maximum(n, float(emin)), float(emax)).apply("exp2")


def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """input * 2**other, broadcast. A float input's integer exponent (PyTorch's: converted to
    int32, so wrapping) scales exactly, rounding once (0 * 2**5000 is 0); otherwise, as
    PyTorch, input times exp2(other) rounded to other's float dtype (the default float for
    an integer exponent). Integer inputs give the default float dtype; a bool exponent is
    refused for float inputs, as PyTorch refuses it."""
    a, b = _tensor_pair(input, other, "ldexp")
    if a.dtype.is_floating_point and b.dtype is bool_:
        raise UnsupportedDtype(f'"ldexp" not implemented for a bool exponent with {a.dtype} input')
    out = _float_result(result_type(a, b))
    compute = _compute(out)
    layout = (a, Layout(b.shape, contiguous_strides(b.shape)))  # torch's a * pow(2, b)
    if not (a.dtype.is_floating_point and not b.dtype.is_floating_point):
        # PyTorch's 2**other is of other's float dtype (else the default one): rounded to it
        exponent = _float_result(b.dtype)

        def power(x: Value, e: Value) -> Value:
            p = e.apply("exp2").node
            return x * Value(g.Cast(compute, (), g.Cast(exponent, (), p)))

        return _launch_as(("ldexp", "float"), [a, b], compute, out, power, layout=layout)

    def formula(x: Value, e: Value) -> Value:
        return _scaled(x, _input_as(e, int32), compute)

    return _launch_as(("ldexp", "int"), [a, b], compute, out, formula, layout=layout)


class Frexp(NamedTuple):
    """What frexp returns, as torch.return_types.frexp."""

    mantissa: Tensor
    exponent: Tensor


def frexp(input: Tensor) -> Frexp:
    """(mantissa, exponent) with input = mantissa * 2**exponent, |mantissa| in [0.5, 1) of
    input's dtype and exponent int32; 0, inf and NaN give themselves and exponent 0. Two
    kernels (one per result)."""
    x = tensor_arg(input, "frexp")
    if not x.dtype.is_floating_point:
        raise TypeError(f"frexp(): only supports floating-point dtypes, got {x.dtype}")
    compute = _compute(x.dtype)

    def regular(v: Value) -> Value:
        a = v.apply("abs")
        return v.ne(0) & (a < math.inf)

    def mantissa(v: Value) -> Value:
        m = v / _exponent(v.apply("abs")).apply("exp2") * 0.5
        return where(regular(v), m, v)

    def exponent(v: Value) -> Value:
        return where(regular(v), _exponent(v.apply("abs")) + 1, 0.0)

    # torch allocates both by empty_like
    m = launch(("frexp", "mantissa"), [x], compute, mantissa, out=like_result(x._impl))
    e = launch(("frexp", "exponent"), [x], compute, exponent, out=like_result(x._impl, int32))
    return Frexp(m, e)


def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next value of the promoted float dtype after input toward other, exactly (bit for
    bit as C's nextafter): other where they are equal, the smallest subnormal from +-0,
    the largest finite from an infinity; NaN where either is NaN."""
    a, b = _tensor_pair(input, other, "nextafter")
    out = result_type(a, b)
    if not out.is_floating_point:
        raise UnsupportedDtype(
            f'"nextafter" not implemented for {out} (floating point only): input is {a.dtype},'
            f" other is {b.dtype}"
        )
    digits, emin, _ = _format(out)
    tiny, largest = 2.0 ** (emin - digits + 1), out.largest

    def formula(x: Value, y: Value) -> Value:
        x, y = _input_as(x, out), _input_as(y, out)
        ax = x.apply("abs")
        e = maximum(_exponent(ax), float(emin))  # subnormals: one fixed spacing
        up = (e - (digits - 1)).apply("exp2")  # the spacing above |x|
        down = where(ax.eq(e.apply("exp2")) & (e > emin), up * 0.5, up)  # below a power of 2
        away = ((x > 0) & (y > x)) | ((x < 0) & (y < x))
        step = where(away, ax + up, ax - down)._binary("copysign", x)
        step = where(ax.eq(math.inf), _const(x, largest)._binary("copysign", x), step)
        step = where(x.eq(0), where(y > 0, _const(x, tiny), -tiny), step)
        step = where(x.eq(y), y, step)
        return where(x.ne(x), x + x, where(y.ne(y), y + y, step))  # quieted, as C's x + y

    return _launch_as(("nextafter",), [a, b], _compute(out), out, formula)


# ---- float_power, sinc --------------------------------------------------------------------------


def _number(value, name: str, what: str) -> float:
    if isinstance(value, complex) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name}(): {what} must be a Tensor or a real number, got {type(value).__name__}"
        )
    return float(value)


def float_power(input, exponent) -> Tensor:
    """input ** exponent computed in float64, a float64 result whatever the dtypes; either may
    be a Python number (not both), broadcast."""
    name = "float_power"
    pow64 = float64

    def formula(x: Value, e: Value) -> Value:
        return x._binary("pow", e)

    if isinstance(input, Tensor) and isinstance(exponent, Tensor):
        return _launch_as((name,), [input, exponent], pow64, pow64, formula)
    if isinstance(input, Tensor):
        params = {"exponent": _number(exponent, name, "exponent")}
        return _launch_as((name, "exponent"), [input], pow64, pow64, formula, params)
    if isinstance(exponent, Tensor):
        params = {"base": _number(input, name, "input")}
        return _launch_as(  # row-major, as torch's pow of a number base
            (name, "base"), [exponent], pow64, pow64, lambda e, x: formula(x, e), params, ()
        )
    raise TypeError(
        f"float_power(): expected a Tensor input or exponent, got {type(input).__name__} and"
        f" {type(exponent).__name__}"
    )


def _sinc(x: Value) -> Value:
    """sin(pi x) / (pi x), 1 at 0: sin(pi r) of r = x - round(x) (exact, |r| <= 1/2) signed
    by round(x)'s parity, so exact zeros at the integers and no loss for large x."""
    n = x.apply("round")
    r = x - n
    odd = (n - 2 * (n * 0.5).apply("floor")).eq(1)
    s = (r * math.pi).apply("sin")
    value = where(odd, -s, s) / (x * math.pi)
    return where(x.eq(0), 1.0, value)


# ---- gcd, lcm -----------------------------------------------------------------------------------


def _euclid_steps(dtype: DType) -> int:
    """Enough steps of Euclid's loop for every pair of `dtype` (consecutive Fibonacci numbers
    take the most, by Lame's theorem), plus the loop's first swap and a spare."""
    top = dtype.max
    a, b, steps = 1, 1, 0
    while a + b <= top + 1:
        a, b, steps = b, a + b, steps + 1
    return steps + 3


def _gcd(x: Value, y: Value, steps: int) -> Value:
    """PyTorch's loop unrolled: a, b = |x|, |y|; while a != 0: a, b = b % a, a; b."""
    a, b = x.apply("abs"), y.apply("abs")
    for _ in range(steps):
        live = a.ne(0)
        r = b._binary("fmod", where(live, a, 1))
        a, b = where(live, r, 0), where(live, a, b)
    return b


def _integer_pair(input, other, name: str) -> tuple[Tensor, Tensor, DType]:
    a, b = _tensor_pair(input, other, name)
    out = result_type(a, b)
    if out.is_floating_point or out is bool_:
        raise UnsupportedDtype(
            f'"{name}" not implemented for {out} (integer dtypes only): input is {a.dtype},'
            f" other is {b.dtype}"
        )
    return a, b, out


def gcd(input: Tensor, other: Tensor) -> Tensor:
    """The greatest common divisor, elementwise and broadcast, of integer tensors: gcd(0, 0)
    = 0, non-negative (but for the most negative value, whose |x| wraps, as in PyTorch)."""
    a, b, out = _integer_pair(input, other, "gcd")
    steps = _euclid_steps(out)
    return _launch_as(("gcd", steps), [a, b], out, out, lambda x, y: _gcd(x, y, steps))


def _as_int(v: Value, dtype: DType) -> Value:
    """v converted to the integer dtype (narrowing wraps, as a C++ cast does)."""
    return v if v.node.dtype is dtype else Value(g.Cast(dtype, (), v.node))


def lcm(input: Tensor, other: Tensor) -> Tensor:
    """The least common multiple |x / gcd * y| (0 where gcd is 0), of integer tensors. As
    in PyTorch's C++ kernel, int8 and int16 operands promote to int32 for the division,
    product and abs, and the result wraps back to the dtype (so an overflow keeps its sign)."""
    a, b, out = _integer_pair(input, other, "lcm")
    steps = _euclid_steps(out)
    wide = int32 if out.itemsize < 4 else out

    def formula(x: Value, y: Value) -> Value:
        d = _gcd(x, y, steps)
        zero = d.eq(0)
        divisor = _as_int(where(zero, _const(d, 1), d), wide)
        multiple = (_as_int(x, wide)._binary("truncdiv", divisor) * _as_int(y, wide)).apply("abs")
        return where(zero, _const(d, 0), _as_int(multiple, out))

    return _launch_as(("lcm", steps), [a, b], out, out, formula)


UNARY = {
    "deg2rad": _unary("deg2rad", lambda x: x * (math.pi / 180)),
    "rad2deg": _unary("rad2deg", lambda x: x * (180 / math.pi)),
    "frac": _unary("frac", lambda x: x - x.apply("trunc"), floats_only=True),
    "log10": _unary("log10", lambda x: x.apply("log") / LN10),
    "sinh": _unary("sinh", _sinh, wide=True),
    "cosh": _unary("cosh", _cosh, wide=True),
    "asinh": _unary("asinh", _asinh, wide=True),
    "acosh": _unary("acosh", _acosh, wide=True),
    "atanh": _unary("atanh", _atanh, wide=True),
    "atan": _unary("atan", _atan, wide=True),
    "asin": _unary("asin", _asin, wide=True),
    "acos": _unary("acos", _acos, wide=True),
    "sinc": _unary("sinc", _sinc, wide=True),
}
BINARY = {
    "xlogy": _binary("xlogy", _xlogy),
    "logaddexp": _binary("logaddexp", _logaddexp("exp", 1.0), floats_only=True),
    "logaddexp2": _binary("logaddexp2", _logaddexp("exp2", 1 / LN2), floats_only=True),
    "hypot": _binary("hypot", _hypot, floats_only=True),
    "atan2": _binary("atan2", _atan2, wide=True),
}


def _is_complex(x) -> bool:
    return isinstance(x, Tensor) and x.dtype.is_complex


def sgn(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """z / |z| (0 at 0) of a complex tensor, sign of a real one, into out= if given."""
    return ew.unary("sgn" if _is_complex(input) else "sign", input, out)


FUNCTIONS: dict[str, Callable] = {
    **UNARY,
    **BINARY,
    "sgn": sgn,
    "nan_to_num": nan_to_num,
    "lerp": lerp,
    "isclose": isclose,
    "clamp_min": clamp_min,
    "clamp_max": clamp_max,
    "logit": logit,
    "signbit": signbit,
    "isposinf": isposinf,
    "isneginf": isneginf,
    "isreal": isreal,
    "positive": positive,
    "fmax": fmax,
    "fmin": fmin,
    "heaviside": heaviside,
    "ldexp": ldexp,
    "frexp": frexp,
    "nextafter": nextafter,
    "float_power": float_power,
    "gcd": gcd,
    "lcm": lcm,
}
NOT_METHODS: frozenset[str] = frozenset()
METHODS: dict[str, Callable] = {
    "clamp_min_": clamp_min_,
    "clamp_max_": clamp_max_,
    "logit_": inplace_result("logit_", logit),
}
