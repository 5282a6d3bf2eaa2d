"""Complex tensors (complex64, complex128) on kael's float kernels.

A complex tensor is interleaved (real, imag) pairs of float32 or float64, and no kernel
ever sees a complex dtype: every op reads and writes the float view (view_as_real: the
shape plus a last dim of 2, the strides doubled plus 1). An elementwise op with a complex
result is one kernel with two outputs, the result's real and imaginary parts as strided
float views, reading its operands' parts as strided views too (a kernel over the pairs
themselves would loop over 2 lanes at a time: 9x slower for a 1M-element add).
Copies and conversions (clone, to, copy_, cat) go through copy_into, sums reduce the
float view, and a complex matmul is one real product: A's float view times B's real form.

What works on complex tensors: creation (tensor, zeros/ones/full/empty, complex, polar,
randn/rand with a complex dtype), NumPy and torch interop, printing, every view,
view_as_real/view_as_complex, real/imag (views), conj (a copy: kael has no lazy conjugate
bit, so is_conj() is False and resolve_conj() returns self), conversions to and from real
dtypes, + - * / and pow (numbers too), neg, abs, angle, sgn, exp, log, sqrt, reciprocal,
square (and their in-place forms), sin, cos, tan, sinh, cosh, tanh (Kahan's), sigmoid,
rsqrt, log2, log10, expm1, log1p, exp2, eq/ne, isnan/isinf/isfinite, isclose/allclose/
equal, sum, mean, prod, cumsum, cumprod, logcumsumexp, var/std (real), norm/vector_norm,
count_nonzero/nonzero, matmul/mm/bmm/@, and kael.fft.
Choices and fills run once per part on the real and imaginary views: where, masked_fill,
index_fill, scatter (src or value, reduce='add'). The index kernels read and write complex
elements themselves (codegen/cpu/gather.py's walks by parts): index_select, gather, take,
take_along_dim, index_copy, index_add, index_put with accumulate, scatter_add and
scatter_reduce's sum and mean. Composed of those: the add*/baddbmm family, logsumexp,
vdot/vecdot, cov, mH/adjoint (a conjugated copy), linspace/logspace. Every other op
refuses a complex tensor with kael.TypeError (the code generator has no type for it:
lowering.py).
exp, sin, cos, sinh, cosh, tanh and sqrt follow glibc's C99 cexp/csin/ccos/csinh/ccosh/
ctanh/csqrt, as torch's CPU kernels call them: rescaled where e^a alone overflows, and
their special values for infinite and NaN parts. pow with a number exponent takes torch's
exact paths (0, 1, 2, 3, -1, -2, 0.5, -0.5).
Deviations: out= is checked as kael's real ops check it, so a complex out of the other
width is refused where torch casts into it; sqrt of a subnormal part keeps about 5 digits.
"""

from __future__ import annotations

import builtins
import functools
import math
from collections.abc import Callable, Sequence

from kael.codegen.cpu import scan
from kael.frontend import eager, formula, views
from kael.frontend.formula import Value, maximum, minimum, where
from kael.frontend.math_functions import _asinh as _real_asinh
from kael.frontend.math_functions import _atan2, _cosh, _hypot, _sinh
from kael.frontend.outputs import cast_back, copied_out, like_result, output, unaliased
from kael.frontend.tensor import Tensor, empty_impl
from kael.ir import graph as g
from kael.ir.scheduler import schedule_elementwise
from kael.runtime import user_warning
from kael.runtime.convert import CHECKED, convert_scalar
from kael.runtime.dtypes import INT64_MIN, UINT64_MAX, DType, as_dtype, bool_, float32, float64
from kael.runtime.errors import TypeError, ValueError
from kael.runtime.tensor_impl import TensorImpl

Part = Tensor | Value | float | None  # a real or imaginary part: None is a known zero


# ---- the float view ----------------------------------------------------------------------------


def float_view(impl: TensorImpl) -> TensorImpl:
    """A complex impl's elements as float pairs: shape + (2,), strides doubled plus 1."""
    return TensorImpl(
        impl.storage,
        (*impl.shape, 2),
        (*(2 * s for s in impl.strides), 1),
        2 * impl.offset,
        impl.dtype.to_real(),
        impl.device,
    )


def _part_impl(impl: TensorImpl, which: int) -> TensorImpl:
    """The real (0) or imaginary (1) parts of a complex impl, a float view of its shape."""
    return TensorImpl(
        impl.storage,
        impl.shape,
        tuple(2 * s for s in impl.strides),
        2 * impl.offset + which,
        impl.dtype.to_real(),
        impl.device,
    )


def view_as_real(input: Tensor) -> Tensor:
    """A complex tensor's elements as a float tensor with a last dim of 2 (no copy)."""
    if not isinstance(input, Tensor) or not input.dtype.is_complex:
        got = input.dtype if isinstance(input, Tensor) else type(input).__name__
        raise TypeError(f"view_as_real is only supported for complex tensors, got {got}")
    return Tensor(float_view(input._impl))


def view_as_complex(input: Tensor) -> Tensor:
    """A float32/float64 tensor whose last dim is (real, imag) pairs as a complex tensor of
    the other dims (no copy): the pair dim must have size 2 and stride 1, every other stride
    and the offset must be even."""
    if not isinstance(input, Tensor):
        raise TypeError(f"view_as_complex expects a Tensor, got {type(input).__name__}")
    impl = input._impl
    if impl.dtype not in (float32, float64):
        raise TypeError(
            "view_as_complex is only supported for float and double tensors, but got a tensor"
            f" of scalar type: {impl.dtype}"
        )
    if not impl.shape:
        raise ValueError("Input tensor must have one or more dimensions")
    if impl.shape[-1] != 2:
        raise ValueError(f"Tensor must have a last dimension of size 2, got {impl.shape[-1]}")
    if impl.strides[-1] != 1:
        raise ValueError(f"Tensor must have a last dimension with stride 1, got {impl.strides[-1]}")
    if any(s % 2 for s in impl.strides[:-1]):
        raise ValueError(
            "Tensor must have a stride divisible by 2 for all but last dimension, got strides"
            f" {impl.strides}"
        )
    if impl.offset % 2:
        raise ValueError(f"Tensor must have a storage_offset divisible by 2, got {impl.offset}")
    return Tensor(
        TensorImpl(
            impl.storage,
            impl.shape[:-1],
            tuple(s // 2 for s in impl.strides[:-1]),
            impl.offset // 2,
            impl.dtype.to_complex(),
            impl.device,
        )
    )


def real(input: Tensor) -> Tensor:
    """The real parts of a complex tensor (a view); a real tensor is its own real part."""
    if not input.dtype.is_complex:
        return input
    return Tensor(_part_impl(input._impl, 0))


def imag(input: Tensor) -> Tensor:
    """The imaginary parts of a complex tensor (a view); refused for a real tensor."""
    if not input.dtype.is_complex:
        raise TypeError(
            f"imag is not implemented for tensors with non-complex dtypes, got {input.dtype}"
        )
    return Tensor(_part_impl(input._impl, 1))


def parts(x) -> tuple[Part, Part]:
    """(real, imag) of a complex or real tensor or a Python number; None for a known zero:
    _sources' parts, views as tensors."""
    if isinstance(x, Tensor) and not x.dtype.is_complex:
        return x, None
    return tuple(Tensor(p) if isinstance(p, TensorImpl) else p for p in _sources(x))


# ---- copies and fills ------------------------------------------------------------------------


def copy_into(dst: TensorImpl, src: TensorImpl) -> None:
    """eager.copy_into where either side is complex: parts to parts, a real source into the
    real parts (imaginary parts zeroed), a complex source into a real tensor by its real
    parts with PyTorch's warning (into bool: nonzero where either part is)."""
    if dst.dtype.is_complex and src.dtype.is_complex:
        eager.copy_into(float_view(dst), float_view(src))
    elif dst.dtype.is_complex:
        eager.copy_into(_part_impl(dst, 0), src)
        eager.fill(_part_impl(dst, 1), 0.0)
    elif dst.dtype is bool_:
        re, im = Tensor(_part_impl(src, 0)), Tensor(_part_impl(src, 1))
        eager.copy_into(dst, re.ne(0).logical_or(im.ne(0))._impl)
    else:
        user_warning.warn_once("Casting complex values to real discards the imaginary part")
        eager.copy_into(dst, _part_impl(src, 0))


def as_complex(value, like: Tensor) -> Tensor:
    """A number or tensor as a complex tensor of `like`'s dtype and device (setitem's value)."""
    if isinstance(value, Tensor):
        return value.to(dtype=like.dtype, device=like.device)
    from kael.frontend.factories import full

    return full((), builtins.complex(value), dtype=like.dtype, device=like.device)


def fill(dst: TensorImpl, value) -> None:
    """eager.fill of a complex tensor: each part with its part of `value`."""
    value = builtins.complex(value)
    eager.fill(_part_impl(dst, 0), value.real)
    eager.fill(_part_impl(dst, 1), value.imag)


# ---- one kernel per complex result ---------------------------------------------------------------


def _launch(
    name: str,
    operands: list,
    result: DType,
    formula_of: Callable[..., tuple[Value | None, Value | None]],
    out: Tensor | None,
    shape: tuple[int, ...],
    device,
    cast: bool = False,
) -> Tensor:
    """formula_of(re0, im0, re1, im1, ...) -> (re, im) over the operands' parts, as one
    kernel into a new complex tensor of `result` (or `out`, checked first: checked_out;
    a `cast` op's out may be of a wider complex dtype): _launch_into with one target."""
    target = checked_out(out, shape, result, device, name, operands, cast)
    formulas = lambda *a: (formula_of(*a),)  # noqa: E731 (the one-target form)
    _launch_into(name, operands, result.to_real(), formulas, [target], fresh=out is None)
    return cast_back(target, out)


def checked_out(
    out,
    shape: tuple[int, ...],
    result: DType,
    device,
    op: str,
    operands: Sequence = (),
    cast: bool = False,
) -> Tensor:
    """A new tensor of `result`, or `out` checked before any kernel writes it: a result of a
    higher category than out's dtype (complex into float) refused in torch's words, else
    outputs.output's checks (the dtype unless the op may `cast`, the device, no expanded
    out, resized to `shape`); a cast op's caller returns cast_back(target, out)."""
    if isinstance(out, Tensor) and result.category > out.dtype.category:
        raise TypeError(
            f"{op}: result type {result} can't be cast to the desired output type {out.dtype}"
        )
    return output(out, shape, result, device, op, operands, cast=cast)


def _sources(x) -> tuple:
    """(real, imag) of an operand as kernel sources: impls (views of a complex tensor's
    parts, a real tensor itself), Python floats (a number's parts), None (a known zero)."""
    if isinstance(x, Tensor):
        impl = x._impl
        if impl.dtype.is_complex:
            return _part_impl(impl, 0), _part_impl(impl, 1)
        return impl, None
    value = builtins.complex(x)
    return value.real, (value.imag if isinstance(x, builtins.complex) else None)


def _launch_into(
    name: str,
    operands: list,
    compute: DType,
    formula_of: Callable,
    targets: list[Tensor],
    fresh: bool = False,
) -> None:
    """formula_of(re0, im0, re1, im1, ...) -> ((re, im) per target) over the operands'
    parts, as one kernel whose outputs are the targets' real and imaginary parts (complex
    tensors of one shape); a part that is a Python number is a run-time parameter, a known
    zero None. Every operand and output is a strided float view, read and written along
    the tensor's own dims (a kernel over the interleaved pairs would loop over 2 lanes)."""
    shape = targets[0].shape
    outs = [_part_impl(t._impl, k) for t in targets for k in (0, 1)]
    ins: list[TensorImpl] = []
    params: dict[str, float] = {}
    slots: list = []  # per part: ("t", index) / ("p", name) / None
    for i, x in enumerate(operands):
        for j, part in enumerate(_sources(x)):
            if part is None:
                slots.append(None)
            elif isinstance(part, TensorImpl):
                slots.append(("t", len(ins)))
                view = views.broadcast_view(part, shape)
                if not fresh:  # an out= target may overlap what it reads
                    for o in outs:
                        view = unaliased(view, o)
                ins.append(view)
            else:
                slots.append(("p", f"p{i}{j}"))
                params[f"p{i}{j}"] = part
    dtypes_in = tuple(t.dtype for t in ins)
    kinds = tuple(None if s is None else s[0] for s in slots)
    key = ("complex", name, kinds, dtypes_in, compute, len(targets))

    def build():
        leaves = [
            Value(g.Cast(compute, (), g.Input(d, (), str(k)))) for k, d in enumerate(dtypes_in)
        ]
        named = {p: Value(g.Scalar(compute, (), p)) for p in params}
        args = [
            None if s is None else (leaves[s[1]] if s[0] == "t" else named[s[1]]) for s in slots
        ]
        zero = Value(g.Const(compute, (), 0.0))
        values = [v for pair in formula_of(*args) for v in pair]
        roots = [g.Cast(compute, (), (zero if v is None else v).node) for v in values]
        _ORDERS[key] = formula.input_order(*roots)
        return f"complex_{name}", roots

    entry = eager.template(key, build)
    words = {p: convert_scalar(v, compute, CHECKED) for p, v in params.items()}
    eager.run(entry, outs, [ins[k] for k in _ORDERS[key]], words)


# Per kernel: which operand part each kernel input is (the scheduler numbers a graph's
# inputs depth first as it meets them, outputs in order).
_ORDERS: dict[tuple, tuple[int, ...]] = {}


# Arithmetic on parts where None is a known zero, so a real operand costs nothing extra.


def _add(x, y):
    return y if x is None else x if y is None else x + y


def _sub(x, y):
    return x if y is None else -y if x is None else x - y


def _mul(x, y):
    return None if x is None or y is None else x * y


def _times(a, b, c, d):
    """(a + bi)(c + di)."""
    return _sub(_mul(a, c), _mul(b, d)), _add(_mul(a, d), _mul(b, c))


def _divided(a, b, c, d):
    """(a + bi) / (c + di) by Smith's scaling (NumPy's and c10::complex's), which keeps
    c^2 + d^2 from overflowing; a real divisor divides each part (a and c are never None:
    every operand has a real part). A known-zero b is a true +0.0 (0 * d is NaN for an
    infinite d), so 1 / (inf j) is -0j as torch's."""
    if d is None:
        return (None if a is None else a / c), (None if b is None else b / c)
    b = 0.0 if b is None else b
    big_c = d.apply("abs") <= c.apply("abs")
    r1 = d / c
    s1 = 1.0 / (c + d * r1)
    r2 = c / d
    s2 = 1.0 / (d + c * r2)
    # both zero: a / |c| and b / |d| give PyTorch's infinities and NaNs
    zero = (c.eq(0.0)) & (d.eq(0.0))
    re = where(big_c, (a + b * r1) * s1, (a * r2 + b) * s2)
    im = where(big_c, (b - a * r1) * s1, (b * r2 - a) * s2)
    return where(zero, a / c.apply("abs"), re), where(zero, b / d.apply("abs"), im)


def _inverse(a, b):
    """1 / z, as torch's complex(1, 0) / z."""
    return _divided(1.0, 0.0, a, b)


_BINARY: dict[str, Callable] = {
    "add": lambda a, b, c, d: (_add(a, c), _add(b, d)),
    "sub": lambda a, b, c, d: (_sub(a, c), _sub(b, d)),
    "mul": _times,
    "div": _divided,
}


def _const(like: Value, value: float) -> Value:
    """The number `value` as a Value of like's dtype (0.0 * like is -0.0 or NaN)."""
    return Value(like._lift(value))


def _unit(a, b):
    """z / |z|, and 0 for z = 0 (sgn)."""
    size = _hypot(a, b)
    zero = size.eq(0.0)
    safe = where(zero, 1.0 + 0.0 * size, size)
    return where(zero, 0.0 * a, a / safe), where(zero, 0.0 * b, b / safe)


# Per float dtype, an even power of two that lifts every subnormal into the normal range.
_TINY_SCALE = {float32: 64, float64: 128}


def _huge(a, b):
    """Whether |a| or |b| passes a quarter of the dtype's largest value, where |a| + |z|
    and |z| itself may overflow: those lanes are scaled by 1/4 first (exactly)."""
    limit = a.node.dtype.largest / 4
    return (a.apply("abs") > limit) | (b.apply("abs") > limit)


def _sqrt(a, b):
    """The principal square root, from t = sqrt((|a| + |z|) / 2) without cancellation:
    (t, b / 2t) for a >= 0, else (|b| / 2t, t with b's sign: -0.0's too, as C's csqrt);
    an infinite b gives (inf, b) whatever a is (C99). Huge operands are scaled by 1/4 and
    the root by 2, as glibc's, so sqrt(3e38 + 1j) stays finite in complex64; tiny ones
    (both parts below 2**-bits, near the subnormals) scaled up by 2**bits, the root down."""
    huge = _huge(a, b)
    bits = _TINY_SCALE[a.node.dtype]  # subnormal operands: scaled up by 2**bits (exact)
    tiny = (a.apply("abs") < 2.0**-bits) & (b.apply("abs") < 2.0**-bits)
    one = 1.0 + 0.0 * a
    scale = where(huge, 0.25, where(tiny, 2.0**bits, one))
    sa, sb = a * scale, b * scale
    t = ((sa.apply("abs") + _hypot(sa, sb)) * 0.5).apply("sqrt")
    zero = t.eq(0.0)
    half = where(zero, 1.0 + 0.0 * t, t + t)
    positive = (-a) <= a  # -0.0 and +inf too
    grow = where(huge, 2.0, where(tiny, 2.0 ** -(bits // 2), one))
    re = where(positive, t, sb.apply("abs") / half) * grow
    im = where(positive, sb / half, t._binary("copysign", b)) * grow
    b_inf = b.apply("abs").eq(math.inf)
    re = where(b_inf, math.inf, where(zero, _const(a, 0.0), re))
    return re, where(zero | b_inf, b, im)


# Per float dtype, C's cexp/csinh constants: t = int((max_exp - 1) ln 2), e^t, the
# largest finite and the smallest normal value.
_EXP_LIMITS = {
    float32: (88.0, math.exp(88.0), float32.largest, 2.0**-126),
    float64: (709.0, math.exp(709.0), float64.largest, 2.0**-1022),
}


def _sincos(b):
    """(sin b, cos b), or (b, 1) for |b| at most the smallest normal (0 too), as C's."""
    tiny = b.apply("abs") <= _EXP_LIMITS[b.node.dtype][3]
    return where(tiny, b, b.apply("sin")), where(tiny, 1.0, b.apply("cos"))


def _grown(x, c, s, half: bool):
    """(e^x c, e^x s) (halved when `half`) for x >= 0 with C's rescaling: e^t taken out
    of x up to twice into c and s, so e^x c stays finite wherever the product is."""
    t, e_t, largest, _ = _EXP_LIMITS[x.node.dtype]
    first = e_t / 2 if half else e_t
    big = x > t
    x, c, s = where(big, x - t, x), where(big, c * first, c), where(big, s * first, s)
    big = x > t
    x, c, s = where(big, x - t, x), where(big, c * e_t, c), where(big, s * e_t, s)
    over = x > t  # beyond 3t: overflows (or 0 where c or s is)
    e = x.apply("exp")
    return where(over, largest * c, e * c), where(over, largest * s, e * s)


def _finite(v):
    return v.apply("abs") < math.inf


def _exp(a, b):
    """C's cexp: e^a (cos b, sin b) rescaled where e^a alone overflows, (e^a, b) exactly
    for b = 0; an infinite or NaN b gives (inf, NaN) for a = inf, (0, +-0) for a = -inf."""
    s, c = _sincos(b)
    re, im = _grown(a, c, s, False)
    im = where(b.eq(0.0), b, im)
    zero_b = _const(a, 0.0)._binary("copysign", b)
    re = where(_finite(b), re, where(a.eq(math.inf), math.inf, where(a.eq(-math.inf), 0.0, re)))
    return re, where(_finite(b), im, where(a.eq(-math.inf), zero_b, im))


def _log(a, b):
    """(log |z|, arg z), log |z| as glibc's clog takes it: near the unit circle (the larger
    part in [0.5, 2]) 0.5 log1p(|z|^2 - 1) with |z|^2 - 1 = (m - 1)^2 + 2 (m - 1) + n^2
    summed without cancellation (log |z| itself cancels: log(1 + 1e-3j) lost its real
    part); huge operands as log |z / 4| + log 4 (|z| may overflow); tiny ones scaled up by
    2**bits first (hypot rounded onto the subnormal grid); else log(hypot(a, b))."""
    bits = _TINY_SCALE[a.node.dtype]
    x, y = a.apply("abs"), b.apply("abs")
    m, n = maximum(x, y), minimum(x, y)
    quarter = _hypot(a * 0.25, b * 0.25).apply("log") + math.log(4.0)
    up = 2.0**bits
    lifted = _hypot(a * up, b * up).apply("log") - bits * math.log(2.0)
    plain = where(m < 2.0**-bits, lifted, _hypot(a, b).apply("log"))
    near = _log1p_of_norm_minus_one(m, n) * 0.5
    near_one = (m > 0.5) & (m < 2.0)
    return where(_huge(a, b), quarter, where(near_one, near, plain)), _atan2(b, a)


def _log1p_of_norm_minus_one(m, n):
    """log1p(m^2 + n^2 - 1) for m in [0.5, 2], n <= m: m - 1 is exact, so m^2 - 1 =
    (m - 1)^2 + 2 (m - 1); float32 parts sum their exact squares in float64, float64 parts
    as double-doubles (Dekker's products)."""
    part = m.node.dtype
    if part is float32:
        m, n = (Value(g.Cast(float64, (), v.node)) for v in (m, n))
        d = m - 1.0
        total = (2.0 * d + n * n) + d * d
        return Value(g.Cast(float32, (), total.apply("log1p").node))
    d = m - 1.0
    dh, dl = _two_square(d)
    nh, nl = _two_square(n)
    total = ((2.0 * d + nh) + dh) + (dl + nl)
    return total.apply("log1p")


def _two_square(v):
    """v^2 = hi + lo exactly (Dekker: Veltkamp's split of v into 26-bit halves)."""
    c = v * 134217729.0  # 2**27 + 1
    hi = c - (c - v)
    lo = v - hi
    square = v * v
    return square, ((hi * hi - square) + 2.0 * hi * lo) + lo * lo


def _sinh_z(a, b):
    """C's csinh: (sinh a cos b, cosh a sin b), past |a| = t from e^|a| / 2 rescaled; the
    special values of C99 (b = 0 kept, an infinite or NaN b NaN but for a = 0 or inf)."""
    x = a.apply("abs")
    s, c = _sincos(b)
    far_re, far_im = _grown(x, c, s, True)
    big = x > _EXP_LIMITS[a.node.dtype][0]
    re = where(big, where(a < 0.0, -far_re, far_re), _sinh(a) * c)
    im = where(b.eq(0.0), b, where(big, far_im, _cosh(a) * s))
    edge_re = where(a.eq(0.0), a, where(x.eq(math.inf), x, math.nan))
    return where(_finite(b), re, edge_re), where(_finite(b), im, math.nan)


def _cosh_z(a, b):
    """C's ccosh: (cosh a cos b, sinh a sin b), past |a| = t from e^|a| / 2 rescaled; the
    special values of C99."""
    x = a.apply("abs")
    s, c = _sincos(b)
    far_re, far_im = _grown(x, c, where(a < 0.0, -s, s), True)
    big = x > _EXP_LIMITS[a.node.dtype][0]
    re = where(big, far_re, _cosh(a) * c)
    im = where(big, far_im, _sinh(a) * s)
    im = where(b.eq(0.0) & a.ne(a), b, im)
    edge_re = where(x.eq(math.inf), x, math.nan)
    edge_im = where(a.eq(0.0), _const(a, 0.0), math.nan)
    return where(_finite(b), re, edge_re), where(_finite(b), im, edge_im)


def _sin(a, b):
    """C's csin: sin z = -i sinh(iz), iz = -b + ia; an infinite b beside an infinite or
    NaN a gives +inf as the imaginary part, as glibc's csin."""
    re, im = _sinh_z(-b, a)
    return im, where(_finite(a) | _finite(b) | b.ne(b), -re, b.apply("abs"))


def _cos(a, b):
    """C's ccos: cos z = cosh(iz), iz = -b + ia."""
    return _cosh_z(-b, a)


def _tanh(a, b):
    """Kahan's tanh: with t = tan b, s = sinh a, rho = sqrt(1 + s^2), d = 1 + (1 + t^2) s^2:
    ((1 + t^2) rho s / d, t / d); past |a| = 22 (every float's tanh is +-1 there) the
    limit (+-1, 4 sin b cos b e^(-2|a|)), as C's ctanh, and its special values: an
    infinite a gives (+-1, +-0), a b = 0 gives z, any other NaN or infinity (a, NaN) for
    a = 0, else NaN."""
    t = b.apply("tan")
    s = _sinh(a)
    beta = 1.0 + t * t
    rho = (1.0 + s * s).apply("sqrt")
    d = 1.0 + beta * s * s
    x = a.apply("abs")
    far = x < 22.0
    sin_cos = b.apply("sin") * b.apply("cos")
    edge = 4.0 * sin_cos * (-2.0 * x).apply("exp")
    one = _const(a, 1.0)._binary("copysign", a)
    re = where(far, beta * rho * s / d, one)
    im = where(far, t / d, edge)
    # the special values: an infinite a, else a NaN or infinite part
    wide = _finite(b) & (b.apply("abs") > 1.0)
    inf_im = _const(a, 0.0)._binary("copysign", where(wide, sin_cos, b))
    odd = _finite(a) & _finite(b)
    odd_re = where(x.eq(math.inf), one, where(b.eq(0.0) | a.eq(0.0), a, math.nan))
    odd_im = where(x.eq(math.inf), inf_im, where(b.eq(0.0), b, math.nan))
    return where(odd, re, odd_re), where(odd, im, odd_im)


def _tan(a, b):
    """tan z = -i tanh(iz), iz = -b + ia."""
    re, im = _tanh(-b, a)
    return im, -re


def _expm1(a, b):
    """exp(z) - 1 without cancellation: (expm1(a) cos b - 2 sin^2(b / 2), e^a sin b)."""
    half = (b * 0.5).apply("sin")
    return a.apply("expm1") * b.apply("cos") - 2.0 * half * half, a.apply("exp") * b.apply("sin")


def _log1p(a, b):
    """log(1 + z): log1p(2a + a^2 + b^2) / 2 (|1 + z|^2 - 1 kept exact near 0), atan2(b, 1 + a);
    far from 0, log(|1 + z|) directly."""
    near = (2.0 * a + a * a + b * b).apply("log1p") * 0.5
    far = _log(1.0 + a, b)[0]  # its scaling where |1 + z| overflows
    small = _hypot(a, b) < 0.5
    return where(small, near, far), _atan2(b, 1.0 + a)


def _kahan_asin(a, b):
    """Kahan's asin of finite z (branch cuts as C's casin, signed zeros kept): with s1 =
    sqrt(1 - z) and s2 = sqrt(1 + z), atan2(a, Re(s1 s2)) + i asinh(Im(conj(s1) s2)): no
    cancellation, no overflow of z^2 ("Branch Cuts for Complex Elementary Functions")."""
    p1, q1 = _sqrt(1.0 - a, -b)
    p2, q2 = _sqrt(1.0 + a, b)
    return _atan2(a, p1 * p2 - q1 * q2), _real_asinh(p1 * q2 - q1 * p2)


def _kahan_acos(a, b):
    """Kahan's acos of finite z: 2 atan2(Re s1, Re s2) + i asinh(Im(conj(s2) s1))."""
    p1, q1 = _sqrt(1.0 - a, -b)
    p2, q2 = _sqrt(1.0 + a, b)
    return 2.0 * _atan2(p1, p2), _real_asinh(p2 * q1 - q2 * p1)


def _kahan_acosh(a, b):
    """Kahan's acosh of finite z: asinh(Re(conj(s1) s2)) + 2i atan2(Im s1, Re s2), s1 =
    sqrt(z - 1) and s2 = sqrt(z + 1)."""
    p1, q1 = _sqrt(a - 1.0, b)
    p2, q2 = _sqrt(a + 1.0, b)
    return _real_asinh(p1 * p2 + q1 * q2), 2.0 * _atan2(q1, p2)


def _finite_atanh(a, b):
    """atanh of finite z, log((1 + z) / (1 - z)) / 2 without cancellation: log1p(4a / ((1 -
    a)^2 + b^2)) / 4 + i atan2(2b, (1 - a)(1 + a) - b^2) / 2 (complex64 in float64: its
    squares stay finite); +-1 gives +-inf."""
    part = a.node.dtype
    if part is float32:
        a, b = (Value(g.Cast(float64, (), v.node)) for v in (a, b))
    m = a.apply("abs")  # the real part is odd in a: from |a|, log1p's argument stays >= 0
    re = ((4.0 * m / ((1.0 - m) * (1.0 - m) + b * b)).apply("log1p") * 0.25)._binary("copysign", a)
    im = _atan2(2.0 * b, (1.0 - a) * (1.0 + a) - b * b) * 0.5
    return tuple(Value(g.Cast(part, (), v.node)) for v in (re, im)) if part is float32 else (re, im)


def _annex_g(finite, infinite, nan):
    """A function of C99's Annex G: `finite`'s value for finite z; `infinite`'s where a part
    is infinite (whatever the other); `nan`'s where a part is NaN and none infinite."""

    def fn(a, b):
        either_inf = (a.apply("abs").eq(math.inf)) | (b.apply("abs").eq(math.inf))
        either_nan = a.ne(a) | b.ne(b)
        values = zip(finite(a, b), infinite(a, b), nan(a, b))
        return tuple(where(either_inf, i, where(either_nan, n, f)) for f, i, n in values)

    return fn


def _rotated(fn):
    """f(z) = -i g(iz) from g (asin from asinh and back, atan from atanh)."""

    def rotated(a, b):
        re, im = fn(-b, a)
        return im, -re

    return rotated


def _nan_but_zero_part(a, b, keep_real: bool):
    """(NaN, NaN), but (NaN, b) where b is 0 (keep_real: (a, NaN) where a is 0)."""
    nan = _const(a, math.nan)
    if keep_real:
        return where(a.eq(0.0), a, nan), nan
    return nan, where(b.eq(0.0), b, nan)


# C's casinh, casin (= -i casinh(iz)), cacos, cacosh, catanh, catan (= -i catanh(iz)).
_asinh = _annex_g(
    _rotated(_kahan_asin),
    lambda a, b: (
        where(a.ne(a), _const(a, math.inf), _const(a, math.inf)._binary("copysign", a)),
        where(b.ne(b), math.nan, _atan2(b, a.apply("abs"))),
    ),
    lambda a, b: _nan_but_zero_part(a, b, keep_real=False),
)


def _with_infinite_real(fn, imag: float):
    """fn, but (re, imag) for an infinite real part beside a NaN imaginary one: torch's
    casin and catan there (C leaves the sign open; not their rotations' sign)."""

    def fixed(a, b):
        re, im = fn(a, b)
        return re, where(a.apply("abs").eq(math.inf) & b.ne(b), _const(a, imag), im)

    return fixed


_asin = _with_infinite_real(_rotated(_asinh), math.inf)


def _acos(a, b):
    """Kahan's acos for finite z; pi/2 - casin(z) carries Annex G's infinities and NaNs."""
    re, im = _asin(a, b)
    special = (math.pi / 2 - re, -im)
    either = (a.apply("abs") < math.inf) & (b.apply("abs") < math.inf)
    return tuple(where(either, f, s) for f, s in zip(_kahan_acos(a, b), special))


_acosh = _annex_g(
    _kahan_acosh,
    lambda a, b: (
        _const(a, math.inf),
        where(a.ne(a) | b.ne(b), math.nan, _atan2(b.apply("abs"), a)._binary("copysign", b)),
    ),
    lambda a, b: (_const(a, math.nan), where(a.eq(0.0), _const(a, math.pi / 2), math.nan)),
)
_atanh = _annex_g(
    _finite_atanh,
    lambda a, b: (
        _const(a, 0.0)._binary("copysign", where(a.ne(a), 1.0, a)),
        where(b.ne(b), math.nan, _const(b, math.pi / 2)._binary("copysign", b)),
    ),
    lambda a, b: _nan_but_zero_part(a, b, keep_real=True),
)


def _sinc(a, b):
    """sin(pi z) / (pi z), 1 at z = 0."""
    pa, pb = a * math.pi, b * math.pi
    zero = a.eq(0.0) & b.eq(0.0)
    re, im = _divided(*_sin(pa, pb), pa, pb)
    return where(zero, 1.0, re), where(zero, 0.0, im)


def _scaled(fn, factor: float):
    def scaled(a, b):
        re, im = fn(a, b)
        return re * factor, im * factor

    return scaled


def _pre_scaled(fn, factor: float):
    return lambda a, b: fn(a * factor, b * factor)


def _sigmoid(a, b):
    """1 / (1 + exp(-z))."""
    er, ei = _exp(-a, -b)
    return _inverse(1.0 + er, ei)


def _rsqrt(a, b):
    return _inverse(*_sqrt(a, b))


def _pow(a, b, c, d):
    """z^w = exp(w log z); 0^w = 1 for w = 0 and 0 for a w of positive real part (NaN
    otherwise, as C's cpow). A real w with a real z computes the same way; a real
    operand's imaginary part is +0.0 (0 * a is -0.0 for a < 0: the conjugate branch)."""
    b = _const(a, 0.0) if b is None else b
    lr, li = _log(a, b)
    d = _const(c, 0.0) if d is None else d
    re, im = _exp(*_times(c, d, lr, li))
    base_zero = _hypot(a, b).eq(0.0)
    w_zero = c.eq(0.0) & d.eq(0.0)
    positive = where(c > 0.0 * a, 0.0, math.nan + 0.0 * a)  # 0^w: 0, or NaN for Re w <= 0
    at_zero = where(w_zero, 1.0, positive)
    return where(base_zero, at_zero, re), where(base_zero, 0.0, im)


_BINARY["pow"] = _pow


# name -> (a, b) -> (re, im), b the imaginary part (a Value: the operand is complex)
_UNARY: dict[str, Callable] = {
    "sin": _sin,
    "cos": _cos,
    "tan": _tan,
    "sinh": _sinh_z,
    "cosh": _cosh_z,
    "tanh": _tanh,
    "sigmoid": _sigmoid,
    "rsqrt": _rsqrt,
    "expm1": _expm1,
    "log1p": _log1p,
    "log2": _scaled(_log, 1.0 / math.log(2.0)),
    "log10": _scaled(_log, 1.0 / math.log(10.0)),
    "exp2": _pre_scaled(_exp, math.log(2.0)),
    "neg": lambda a, b: (-a, -b),
    "conj_physical": lambda a, b: (a, -b),
    "exp": _exp,
    "log": _log,
    "sqrt": _sqrt,
    "reciprocal": _inverse,
    "square": lambda a, b: _times(a, b, a, b),
    "sgn": _unit,
    "asin": _asin,
    "acos": _acos,
    "atan": _with_infinite_real(_rotated(_atanh), 0.0),
    "asinh": _asinh,
    "acosh": _acosh,
    "atanh": _atanh,
    "sinc": _sinc,
}
# name -> (a, b) -> one Value: a real or bool result
_TO_REAL: dict[str, tuple[Callable, bool]] = {
    "abs": (_hypot, False),
    "angle": (lambda a, b: _atan2(b, a), False),
    "isnan": (lambda a, b: a.apply("isnan") | b.apply("isnan"), True),
    "isinf": (lambda a, b: a.apply("isinf") | b.apply("isinf"), True),
    "isfinite": (lambda a, b: a.apply("isfinite") & b.apply("isfinite"), True),
    "logical_not": (lambda a, b: a.eq(0.0) & b.eq(0.0), True),
}
# torch allocates these results by empty_like, and angle's row-major
_LIKE_INPUT, _ROW_MAJOR = frozenset(("abs", "isinf")), frozenset(("angle",))
_COMPARE: dict[str, Callable] = {
    "eq": lambda a, b, c, d: _both_zero_or(a, c, "eq", b, d, True),
    "ne": lambda a, b, c, d: _both_zero_or(a, c, "ne", b, d, False),
}
_LOGICAL = frozenset(("logical_and", "logical_or", "logical_xor"))
COMPLEX_OPS = frozenset((*_BINARY, *_UNARY, *_TO_REAL, *_COMPARE, *_LOGICAL))


def _both_zero_or(a, c, op: str, b, d, both: bool):
    """eq: the real parts equal and the imaginary parts equal; ne: either differs."""
    same_re = getattr(a, op)(c)
    im = (b, d) if b is not None else (d, b)
    same_im = None if im[0] is None else getattr(im[0], op)(0.0 * im[0] if im[1] is None else im[1])
    if same_im is None:
        return same_re
    return (same_re & same_im) if both else (same_re | same_im)


_REFUSALS = {
    "sign": "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use"
    " torch.sgn instead.",
}


def refuse(name: str, dtype: DType):
    """The error of an op with no complex form."""
    return TypeError(_REFUSALS.get(name) or f"{name} does not support {dtype} tensors")


def unary(name: str, x: Tensor, out: Tensor | None = None, cast: bool = False) -> Tensor:
    """The unary op `name` of a complex tensor x: complex, real (abs, angle) or bool; a
    `cast` op (torch's unary float ops) casts into an out= of another dtype."""
    if name in _UNARY:
        return _launch(name, [x], x.dtype, _UNARY[name], out, x.shape, x.device, cast)
    if name not in _TO_REAL:
        raise refuse(name, x.dtype)
    fn, predicate = _TO_REAL[name]
    result = bool_ if predicate else x.dtype.to_real()
    if out is None and name in _LIKE_INPUT:
        target = Tensor(like_result(x._impl, result))
    elif out is None and name in _ROW_MAJOR:
        target = Tensor(empty_impl(x.shape, result, x.device))
    else:
        # torch's complex abs casts its real result into a real out= or one of x's dtype
        cast = cast or (
            name == "abs" and out is not None and out.dtype in (out.dtype.to_real(), x.dtype)
        )
        target = checked_out(out, x.shape, result, x.device, name, (x,), cast)
    key = ("complex", name)
    formula.launch(key, [real(x), imag(x)], x.dtype.to_real(), fn, out=target._impl)
    return cast_back(target, out)


def binary(name: str, a, b, result: DType, out: Tensor | None = None) -> Tensor:
    """The binary op `name` of a and b (tensors or numbers, one of them complex) whose
    promoted dtype is the complex `result`."""
    from kael.frontend.elementwise import broadcast_shapes
    from kael.frontend.outputs import device_of

    tensors = [t for t in (a, b) if isinstance(t, Tensor)]
    for x in (a, b):  # a Python int past int64 and uint64, as the other dtypes refuse it
        if type(x) is int and not INT64_MIN <= x <= UINT64_MAX:
            raise ValueError(f"value {x} is out of the range of int64 and uint64")
    shape = broadcast_shapes(*(t.shape for t in tensors))
    device = device_of(tensors, name)
    exponent = _exponent(name, a, b)
    if exponent in _EXPONENTS:
        return _power(exponent, a, result, out, shape, device)
    if name in _BINARY:
        return _launch(name, [a, b], result, _BINARY[name], out, shape, device, cast=True)
    if name in _LOGICAL:  # on each operand's truth: nonzero where either part is
        from kael.frontend.elementwise import binary as real_binary

        truths = [
            binary("ne", x, 0, x.dtype) if isinstance(x, Tensor) and x.dtype.is_complex else x
            for x in (a, b)
        ]
        return real_binary(name, *truths, out=out)
    if name not in _COMPARE:
        raise refuse(name, result)
    target = checked_out(out, shape, bool_, device, name, (a, b), cast=True)
    operands, slots = [], []
    for x in (a, b):
        for part in parts(x):
            if isinstance(part, Tensor):
                slots.append(len(operands))
                operands.append(part)
            else:
                slots.append(part)  # a number or None
    params = {f"p{i}": v for i, v in enumerate(slots) if isinstance(v, float)}

    def compare(*values):
        named = dict(zip(params, values[len(operands) :]))
        args = [
            values[v] if isinstance(v, int) else named.get(f"p{i}") if v is not None else None
            for i, v in enumerate(slots)
        ]
        return _COMPARE[name](*args)

    kinds = tuple(type(v).__name__ for v in slots)
    formula.launch(
        ("complex", name, kinds), operands, result.to_real(), compare, params, target._impl
    )
    return cast_back(target, out)


def _square(a, b):
    return _times(a, b, a, b)


# torch's exact paths for a number exponent of a complex pow (pow_out and
# pow_tensor_scalar_optimized_kernel): z^2 = z z, z^3 = (z z) z, z^-2 = 1 / (z z), and the
# sqrt, rsqrt and reciprocal kernels; z^0 = 1 and z^1 = z are a fill and a copy.
_EXPONENTS: dict[float, Callable | None] = {
    0.0: None,
    1.0: None,
    2.0: _square,
    3.0: lambda a, b: _times(*_square(a, b), a, b),
    -2.0: lambda a, b: _inverse(*_square(a, b)),
    -1.0: _inverse,
    0.5: _sqrt,
    -0.5: _rsqrt,
}


def _exponent(name: str, a, b) -> float | None:
    """pow's number exponent b (of a tensor base) as a float when it is real (a complex
    number with a zero imaginary part too, as torch's Scalar.equal reads it), else None."""
    if name != "pow" or not isinstance(a, Tensor) or isinstance(b, Tensor | bool):
        return None
    value = builtins.complex(b)
    return value.real if value.imag == 0 else None


def _power(exponent: float, base: Tensor, result: DType, out, shape, device) -> Tensor:
    """base ** exponent by torch's exact path for that exponent (_EXPONENTS), a real base
    made complex first as torch promotes it."""
    base = base if base.dtype is result else base.to(result)
    if exponent == 0.0:
        target = checked_out(out, shape, result, device, "pow", (base,), cast=True)
        fill(target._impl, 1.0)
        return cast_back(target, out)
    if exponent == 1.0:
        name, formula_of = "pow1", lambda a, b: (a, b)
    else:
        name, formula_of = f"pow{exponent}", _EXPONENTS[exponent]
    return _launch(name, [base], result, formula_of, out, shape, device, cast=True)


# ---- reductions and products --------------------------------------------------------------------


def reduce(fn: Callable, x: Tensor, dim, keepdim, dtype, out, op: str) -> Tensor:
    """sum or mean of a complex tensor: `fn` over its float view's dims but the pair dim."""
    from kael.frontend.reduce_door import keepdim_arg, reduce_axes

    keepdim = keepdim_arg(keepdim, op)
    axes = reduce_axes(x, dim, op)
    dtype = None if dtype is None else as_dtype(dtype)
    if dtype is not None and not dtype.is_complex:
        raise TypeError(f"{op}: a {x.dtype} tensor reduces to a complex dtype, not {dtype}")
    part = None if dtype is None else dtype.to_real()
    pairs = view_as_real(x if dtype is None else x.to(dtype))
    if not axes:  # a 0-d input: nothing reduced (dim=() would reduce the pair dim too)
        result = pairs.to(part or pairs.dtype, copy=True)
    else:
        result = fn(pairs, axes, keepdim, dtype=part)
    return copied_out(view_as_complex(result), out, op)


def real_form(b: Tensor) -> Tensor:
    """Complex B [.., K, N] as the real [.., 2K, 2N] with rows (br, bi) and (-bi, br)
    interleaved per k: (ar, ai) pairs times it are (re, im) pairs of A B."""
    from kael.frontend.index_ops import stack

    rows = stack([view_as_real(b), view_as_real(binary("mul", b, 1j, b.dtype))], -3)
    return rows.reshape(*b.shape[:-2], 2 * b.shape[-2], 2 * b.shape[-1])


def matmul(a: Tensor, b: Tensor, result: DType, product: Callable) -> Tensor:
    """a @ b with a complex `result` dtype as one real `product` where b is complex: the
    float view of A [.., M, 2K] times B's real form [2K, 2N], rows (br, bi) and (-bi, br)
    per k, gives C's float view [.., M, 2N] (a real A times B's float view, likewise);
    a complex A times a real b is two products of A's parts."""
    part = result.to_real()
    left = a if a.ndim > 1 else a.unsqueeze(0)  # NumPy's rules: a vector is a row ...
    right = b if b.ndim > 1 else b.unsqueeze(-1)  # ... or a column, dropped after
    if right.dtype.is_complex:
        right = right.to(result)
        if left.dtype.is_complex:
            left, factor = view_as_real(left.to(result)).flatten(-2), real_form(right)
        else:
            left, factor = left.to(part), view_as_real(right).flatten(-2)
        out = view_as_complex(product(left, factor).unflatten(-1, (-1, 2)))
    else:
        re, im = (product(p.to(part), right.to(part)) for p in parts(left))
        out = Tensor(empty_impl(re.shape, result, re.device))
        eager.copy_into(_part_impl(out._impl, 0), re._impl)
        eager.copy_into(_part_impl(out._impl, 1), im._impl)
    if a.ndim == 1:
        out = out.squeeze(-2)
    if b.ndim == 1:
        out = out.squeeze(-1)
    return out


# ---- construction -------------------------------------------------------------------------


def _two_floats(a, b, op: str) -> tuple[Tensor, Tensor]:
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError(f"{op}() expects two tensors")
    if not (a.dtype.is_floating_point and b.dtype.is_floating_point) or a.dtype.is_complex:
        raise TypeError(
            f"{op}(): expected both inputs to be Half, Float or Double tensors but got"
            f" {a.dtype} and {b.dtype}"
        )
    if a.dtype is not b.dtype:
        raise TypeError(f"{op}(): expected both inputs of one dtype, got {a.dtype} and {b.dtype}")
    return a, b


def _made(op: str, a: Tensor, b: Tensor, formula_of, out) -> Tensor:
    from kael.frontend.elementwise import broadcast_shapes
    from kael.frontend.outputs import device_of

    shape = broadcast_shapes(a.shape, b.shape)
    device = device_of([a, b], op)
    return _launch(op, [a, b], a.dtype.to_complex(), formula_of, out, shape, device)


def complex(real: Tensor, imag: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The complex tensor real + i imag (two float tensors of one dtype, broadcast)."""
    real, imag = _two_floats(real, imag, "complex")
    return _made("complex", real, imag, lambda a, _b, c, _d: (a, c), out)


def polar(abs: Tensor, angle: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The complex tensor abs (cos angle + i sin angle)."""
    abs, angle = _two_floats(abs, angle, "polar")

    def on_circle(r, _b, t, _d):
        return r * t.apply("cos"), r * t.apply("sin")

    return _made("polar", abs, angle, on_circle, out)


def conj_physical(input: Tensor) -> Tensor:
    """The conjugate as a new tensor (a real one: its copy)."""
    return input.conj_physical()


FUNCTIONS = {
    "view_as_real": view_as_real,
    "view_as_complex": view_as_complex,
    "complex": complex,
    "polar": polar,
    "conj_physical": conj_physical,
}


# ---- choices and fills by parts ---------------------------------------------------------------
# A choice or a fill moves whole elements, so it runs on the real and the imaginary views
# apart: one real op per part, each writing its half of every element.


def real_number(value, dtype: DType) -> builtins.bool | builtins.int | builtins.float:
    """A complex number stored into a real `dtype`: its real part when the imaginary part is
    0, else refused as PyTorch's checked conversion refuses it."""
    if not isinstance(value, builtins.complex):
        return value
    if value.imag != 0:
        raise TypeError(f"value {value} cannot be converted to type {dtype} without overflow")
    return value.real


def _part_values(value, dtype: DType) -> tuple:
    """(real, imag) of a fill value (a number or a 0-d tensor) for a complex tensor of
    `dtype`: a real value's imaginary part is 0."""
    if isinstance(value, Tensor):
        value = value.to(dtype)
        return real(value), imag(value)
    value = builtins.complex(value)
    return value.real, value.imag


def _fill_parts_(fill_: Callable, self: Tensor, args: tuple, value) -> Tensor:
    """fill_(self, *args, value) (masked_fill_, index_fill_, scatter_'s value): on each
    part of a complex self with its part of value; a real self takes a complex number's
    real part (refused where its imaginary part is not 0)."""
    if not isinstance(self, Tensor) or not self.dtype.is_complex:
        dtype = self.dtype if isinstance(self, Tensor) else float32
        return fill_(self, *args, real_number(value, dtype))
    re, im = _part_values(value, self.dtype)
    fill_(real(self), *args, re)
    fill_(imag(self), *args, im)
    return self


def masked_fill_(self: Tensor, mask: Tensor, value) -> Tensor:
    """masked_fill_ of a complex tensor (or of a complex number into a real one), by parts."""
    from kael.frontend import elementwise

    return _fill_parts_(elementwise.masked_fill_, self, (mask,), value)


def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """masked_fill_ into a copy of input broadcast with the mask."""
    from kael.frontend.elementwise import broadcast_shapes

    if isinstance(mask, Tensor) and mask.shape != input.shape:
        input = input.expand(*broadcast_shapes(input.shape, mask.shape))
    return masked_fill_(input.clone(), mask, value)


def index_fill_(self: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """index_fill_ of a complex tensor, by parts."""
    from kael.frontend import scatters

    return _fill_parts_(scatters.index_fill_, self, (dim, index), value)


def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """index_fill_ into a copy of input."""
    return index_fill_(input.clone(), dim, index, value)


def scatter_(self: Tensor, dim: int, index: Tensor, src=None, value=None, *, reduce=None):
    """scatter_ of a complex tensor, by parts: src a complex tensor of self's dtype, or a
    number; reduce='add' adds part by part ('multiply' has no complex form here)."""
    from kael.frontend import scatters

    if value is None and not isinstance(src, Tensor):
        src, value = None, src
    if not self.dtype.is_complex:  # a complex number or src into a real tensor
        value = None if value is None else real_number(value, self.dtype)
        return scatters.scatter_(self, dim, index, src, value, reduce=reduce)
    if reduce not in (None, "add"):
        raise refuse(f"scatter_ with reduce={reduce!r}", self.dtype)
    if src is None:
        fill = functools.partial(scatters.scatter_, reduce=reduce)
        return _fill_parts_(fill, self, (dim, index), value)
    if src.dtype is not self.dtype:
        raise TypeError(
            f"scatter_(): Expected self.dtype to be equal to src.dtype, got {self.dtype} and"
            f" {src.dtype}"
        )
    scatters.scatter_(real(self), dim, index, real(src), reduce=reduce)
    scatters.scatter_(imag(self), dim, index, imag(src), reduce=reduce)
    return self


def scatter(input: Tensor, dim: int, index: Tensor, src=None, value=None, *, reduce=None):
    """scatter_ into a copy of input."""
    return scatter_(input.clone(), dim, index, src, value, reduce=reduce)


# op -> its complex form, for the calls that take a complex tensor or number (ops.py)
BY_PARTS: dict[str, Callable] = {
    "masked_fill": masked_fill,
    "masked_fill_": masked_fill_,
    "index_fill": index_fill,
    "index_fill_": index_fill_,
    "scatter": scatter,
    "scatter_": scatter_,
}


def takes_complex(input, args: tuple, kwargs: dict) -> bool:
    """Whether a call's input, or a tensor or number it is given, is complex."""
    return any(map(is_complex, (input, *args, *kwargs.values())))


def is_complex(a) -> bool:
    """Whether `a` is a complex number or a complex tensor."""
    return isinstance(a, builtins.complex) or (isinstance(a, Tensor) and a.dtype.is_complex)


def choose(condition: Tensor, input, other, out: Tensor | None = None) -> Tensor:
    """torch.where(condition, input, other) with a complex result: each part chosen apart (a real
    operand's imaginary part is 0)."""
    from kael.frontend.elementwise import where as choose
    from kael.runtime.dtypes import result_type

    part = result_type(input, other).to_real()
    chosen = [
        choose(condition, 0.0 if a is None else a, 0.0 if b is None else b).to(part)
        for a, b in zip(parts(input), parts(other), strict=True)
    ]
    return complex(*chosen, out=out)


def elementwise(name: str, operands: list, result: DType, formula_of, shape, device) -> Tensor:
    """A new complex tensor of `result` from formula_of over the operands' parts (one
    kernel, two outputs): the door for other modules' complex formulas (fft's)."""
    return _launch(name, operands, result, formula_of, None, shape, device)


def cat_last(tensors: list[Tensor]) -> Tensor:
    """Complex tensors joined along their last dim (their float views along the one before)."""
    from kael.frontend.index_ops import cat

    return view_as_complex(cat([view_as_real(t) for t in tensors], -2))


# ---- reductions over the parts -------------------------------------------------------------------


def cumsum(x: Tensor, dim, dtype, out) -> Tensor:
    """Running sums along dim: the parts' running sums (the float view's, dim unchanged)."""
    from kael.frontend.sequence import cumsum as real_cumsum

    if dtype is not None and not as_dtype(dtype).is_complex:
        raise TypeError(f"cumsum: a {x.dtype} tensor sums to a complex dtype, not {dtype}")
    d = views.wrap_dim(dim, x.ndim) if x.ndim else dim
    source = x if dtype is None else x.to(as_dtype(dtype))
    pairs = view_as_real(source if source.ndim else source.reshape(1))
    done = view_as_complex(real_cumsum(pairs, d if x.ndim else 0))
    return copied_out(done if x.ndim else done.reshape(()), out, "cumsum")


def _log1p_of_unit(a, b):
    """log(1 + z) for |z| <= 1 (e^(lo - hi) of the step below) as c10's portable log1p
    takes it: 0.5 log1p(a (2 + a) + b^2) for |z| < 0.5 (a itself where that rounds to 0),
    else log |1 + z|; atan2(b, 1 + a). |1 + z| <= 2 needs none of _log1p's scaling.
    (PyTorch's Linux CPU build takes log(u) z / (u - 1), u = 1 + z, instead: NaN for a
    subnormal z with an imaginary part, so its line turns NaN where kael's stays finite,
    logcumsumexp([-700, 12 + 1j]) for one.)"""
    r = a * (2.0 + a) + b * b
    near = where(r.eq(0.0), a, r.apply("log1p") * 0.5)
    far = _hypot(1.0 + a, b).apply("log")
    return where(_hypot(a, b) < 0.5, near, far), _atan2(b, 1.0 + a)


def _log_add_exp(cr, ci, xr, xi):
    """PyTorch's complex logcumsumexp step, log(e^x + e^cum): with lo and hi the operands
    of lesser and greater real part (cum is lo on a tie), log1p(e^(lo - hi)) + hi; both
    real parts -inf: lo; both +inf: log(e^lo + e^hi); a NaN part anywhere: NaN + NaN j. The
    imaginary part follows hi's, so it may leave (-pi, pi] as PyTorch's does.
    Returns the common step's (re, im) and (when, re, im) of the rare cases (the
    infinities and NaN), which the scan takes on a branch of their own."""
    x_low = xr < cr
    lo_r, lo_i = where(x_low, xr, cr), where(x_low, xi, ci)
    hi_r, hi_i = where(x_low, cr, xr), where(x_low, ci, xi)
    grown_r, grown_i = _log1p_of_unit(*_exp(lo_r - hi_r, lo_i - hi_i))
    lo_er, lo_ei = _exp(lo_r, lo_i)
    hi_er, hi_ei = _exp(hi_r, hi_i)
    both_r, both_i = _log(lo_er + hi_er, lo_ei + hi_ei)
    same_infinity = lo_r.eq(hi_r) & lo_r.apply("abs").eq(math.inf)
    nan = cr.ne(cr) | ci.ne(ci) | xr.ne(xr) | xi.ne(xi)
    low = lo_r < 0.0
    rare_r = where(nan, math.nan, where(low, lo_r, both_r))
    rare_i = where(nan, math.nan, where(low, lo_i, both_i))
    return (grown_r + hi_r, grown_i + hi_i), (same_infinity | nan, rare_r, rare_i)


@functools.cache
def logcumsumexp_step() -> scan.PairStep:
    """_log_add_exp over float64 parts (PyTorch accumulates complex64 in complex128 too)
    as the scan kernel's pair step."""
    names = ("cum_re", "cum_im", "x_re", "x_im")
    common, rare = _log_add_exp(*(Value(g.Input(float64, (), n)) for n in names))
    roots = [v.node for v in (*common, *rare)]
    kernel, inputs, _ = schedule_elementwise("logcumsumexp_complex", roots)
    positions = tuple(names.index(i.name) for i in inputs)
    exprs = kernel.exprs
    return scan.PairStep(kernel.name, exprs[:2], positions, (-math.inf, 0.0), exprs[2:])


def logcumsumexp(x: Tensor, d: int, out) -> Tensor:
    """log(cumsum(exp(x))) along dim d of complex x, element after element in complex128
    as PyTorch's CPU loop (its branch of the imaginary part included); a 0-d x is copied,
    as PyTorch's (-inf + 1j stays itself, where a line's first step gives -inf + 0j)."""
    result = checked_out(out, x.shape, x.dtype, x.device, "logcumsumexp")
    if not x.ndim:
        copy_into(result._impl, x._impl)
    else:
        src = unaliased(x._impl, result._impl)
        scan.run(logcumsumexp_step(), _part_impl(src, 0), _part_impl(result._impl, 0), d)
    if out is not None:
        out._impl.storage.bump_version()
    return result


def variance(op: str, x: Tensor, fn: Callable, dim, correction, keepdim, out) -> Tensor:
    """var (or std) of complex x: the mean squared distance |z - mean|^2, the variances of
    the parts added (a float tensor of the parts' dtype, as torch's)."""
    total = fn("var", real(x), dim, correction, keepdim, None)
    total = total + fn("var", imag(x), dim, correction, keepdim, None)
    result = total.sqrt() if op == "std" else total
    return copied_out(result, out, op)


def isclose(a: Tensor, b: Tensor, rtol: float, atol: float, equal_nan: bool) -> Tensor:
    """|a - b| <= atol + rtol |b| with |a - b| finite, equal values close (infinities),
    NaN close to NaN only with equal_nan: torch's rule for complex."""
    error = (a - b).abs()
    close = (a == b) | ((error <= (b.abs() * rtol + atol)) & error.isfinite())
    return close | (a.isnan() & b.isnan()) if equal_nan else close


def prod(x: Tensor, dim, keepdim, dtype, out) -> Tensor:
    """The product over dim (all by default) of complex x, as a tree of complex multiplies
    (log2 n kernels: halves times halves, an odd one carried), computed in x's dtype (or
    `dtype`); the empty product is 1."""
    from kael.frontend.reduce_door import keepdim_arg, reduce_axes

    keepdim = keepdim_arg(keepdim, "prod")
    if dtype is not None and not as_dtype(dtype).is_complex:
        raise TypeError(f"prod: a {x.dtype} tensor multiplies to a complex dtype, not {dtype}")
    source = x if dtype is None else x.to(as_dtype(dtype))
    axes = reduce_axes(source, dim, "prod")
    others = [d for d in range(source.ndim) if d not in axes]
    size = math.prod(source.shape[d] for d in axes)  # not -1: another dim may be 0
    rows = source.permute(*others, *axes).reshape(*(source.shape[d] for d in others), size)
    while rows.shape[-1] > 1:
        half = rows.shape[-1] // 2
        paired = binary("mul", rows[..., :half], rows[..., half : 2 * half], rows.dtype)
        if rows.shape[-1] % 2:
            from kael.frontend.index_ops import cat

            paired = view_as_complex(cat([view_as_real(paired), view_as_real(rows[..., -1:])], -2))
        rows = paired
    if rows.shape[-1] == 0:
        from kael.frontend.factories import ones

        rows = ones(*rows.shape[:-1], 1, dtype=rows.dtype, device=rows.device)
    result = rows.squeeze(-1)
    if keepdim:
        for d in sorted(axes):
            result = result.unsqueeze(d)
    return copied_out(result, out, "prod")


def cumprod(x: Tensor, dim, dtype, out) -> Tensor:
    """Running products along dim of complex x: Hillis and Steele's scan, log2 n steps of
    one complex multiply each (every prefix product formed by doubling spans)."""
    if dtype is not None and not as_dtype(dtype).is_complex:
        raise TypeError(f"cumprod: a {x.dtype} tensor multiplies to a complex dtype, not {dtype}")
    source = x if dtype is None else x.to(as_dtype(dtype))
    if source.ndim == 0:
        return copied_out(source.clone(), out, "cumprod")
    d = views.wrap_dim(dim, source.ndim)
    run = source.movedim(d, -1).contiguous()
    step = 1
    while step < run.shape[-1]:
        ahead = run.clone()
        ahead[..., step:] = binary("mul", run[..., step:], run[..., :-step], run.dtype)
        run, step = ahead, 2 * step
    return copied_out(run.movedim(-1, d), out, "cumprod")
