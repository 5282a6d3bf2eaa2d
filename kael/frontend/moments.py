"""var, std and norm: the reductions whose float64 sums need care (ARCHITECTURE.md,
Reductions).

var and std take the corrected two-pass algorithm. Pass 1 is the float64 mean
m = sum(x) / n; pass 2 sums d = x - m and d^2 side by side (one paired-sum kernel), and its
epilogue gives var = (sum(d^2) - sum(d) * (sum(d) / n)) / (n - correction). The sum(d)
term removes what the mean's rounding error adds to a plain second pass: on data spread
over a few ulps every d is a small multiple of one ulp, so both sums are exact and a
constant slice gives 0 exactly, whatever the order of the terms. The divisor is torch's:
0 unless n > correction, a NaN correction included (_divisor).

Overflow: a float64 sum of x or of d^2 (norm: of x^2 or |x|^p) can pass the largest
double where the result does not. These kernels' epilogues raise the flag (ops.FLAG) where
a sum is not finite; only then is the whole reduction redone on scaled data, as BLAS's
nrm2 scales: one pass takes each output's largest |x| (smallest for p < 0), M, as its
unit u, the passes run on x / u and one elementwise kernel multiplies by u (twice for
var). var's unit is the power of two 2^floor(log2 M), so x / u is exact (no bits change
where nothing over- or underflows: narrow data stays exact); a norm's unit is M itself,
so the largest (smallest) term is exactly 1 and sum(|x / u|^p) lies in [1, n] for any p.
Inputs holding inf or NaN also take this path and get the unscaled answer (u = 1 where M
is not finite). float32 data accumulates in float64, where its sums and squares stay far
from overflow; only |x|^p for |p| beyond about 7 can pass it, so float32 flags only
general-p norms.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from kael.frontend import complex, eager
from kael.frontend.outputs import copied_out, output, scalar_arg, tensor_arg
from kael.frontend.reduce_door import (
    Results,
    all_dims,
    binop,
    cast_to,
    casting,
    identity,
    keepdim_arg,
    nonempty,
    nonzero_count,
    out1,
    reduce,
    reduce_axes,
    reduced_count,
    reduced_shape,
    scalar,
    unop,
)
from kael.frontend.tensor import Tensor
from kael.ir import graph as g
from kael.runtime.dtypes import as_dtype, bool_, float64
from kael.runtime.errors import TypeError

# var's power-of-two unit stays where 2^e and 2^-e are normal numbers.
MAX_UNIT_EXPONENT = 1022


# ---- graph helpers ---------------------------------------------------------------------------


def _const(value: float) -> g.Node:
    return g.Const(float64, (), value)


def _value(a: g.Node, *unit: g.Node) -> g.Node:
    """An element as float64, divided by its output's unit when there is one."""
    v = cast_to(a, float64)
    return binop("div", v, unit[0]) if unit else v


def _flag_unless_finite(total: g.Node, result: g.Node) -> g.Node:
    """`result`, raising the kernel's flag where the accumulated `total` is inf or NaN."""
    bad = g.Unary(bool_, (), "flag", unop("not", g.Unary(bool_, (), "isfinite", total)))
    return g.Where(result.dtype, (), bad, result, result)


def _unit_of(m: g.Node, power_of_two: bool) -> g.Node:
    """m, or 2^floor(log2 m) clamped to normal numbers; 1 where m is 0, inf or NaN."""
    unit = m
    if power_of_two:
        e = unop("floor", unop("log2", m))
        e = binop("min", binop("max", e, _const(-MAX_UNIT_EXPONENT)), _const(MAX_UNIT_EXPONENT))
        unit = unop("exp2", e)
    usable = binop(
        "and", g.Unary(bool_, (), "isfinite", m), g.Binary(bool_, (), "gt", m, _const(0.0))
    )
    return g.Where(float64, (), usable, unit, _const(1.0))


def _units(x: Tensor, axes: tuple[int, ...], kind: str) -> Tensor:
    """Each output's unit (float64, keepdim shape) from its magnitudes: "pow2" (the power
    of two at or below the largest), "max" (the largest) or "min" (the smallest)."""
    (u,) = reduce(
        "min" if kind == "min" else "max",
        [x],
        axes,
        True,
        prologue=lambda a: unop("abs", cast_to(a, float64)),
        epilogues=[lambda m: _unit_of(m, kind == "pow2")],
        key=("unit", kind),
        name=f"unit_{kind}_{x.dtype}",
    )
    return u


def _unscale(target: Tensor, scaled: Tensor, u: Tensor, times: int) -> None:
    """target = scaled * u (`times` times, one product at a time), converted to target's
    dtype; the operands have the keepdim shape, target the result's."""

    def build():
        r, k = g.Input(float64, (), "r"), g.Input(float64, (), "u")
        v = r
        for _ in range(times):
            v = binop("mul", v, k)
        return f"unscale{times}_to_{target.dtype}", [cast_to(v, target.dtype)]

    entry = eager.template(("unscale", times, target.dtype), build)
    views = [t.reshape(target.shape)._impl for t in (scaled, u)]
    eager.run(entry, [target._impl], views)


def _into(out: Tensor, x: Tensor, shape, op: str, run: Callable[[Tensor | None], Tensor]):
    """run(None) copied over out, which shares x's memory: a scaled retry reads x again
    after the first pass has written its result, and x is read before out (x itself,
    norm(x, out=x)) is resized."""
    result = run(None)
    target = output(out, shape, x.dtype, x.device, op)
    eager.copy_into(target._impl, result._impl)
    return target


# ---- var and std -----------------------------------------------------------------------------


def _mean64(x: Tensor, axes, n: int, unit: Tensor | None) -> Tensor:
    """The float64 mean of x (or of x / unit), keepdim: the first pass."""
    (m,) = reduce(
        "sum",
        [x] if unit is None else [x, unit],
        axes,
        True,
        prologue=_value,
        epilogues=[lambda r: binop("div", r, scalar("count"))],
        key=("mean64", unit is not None),
        scalars={"count": float(n)},
        name=f"mean64_{x.dtype}" + ("_scaled" if unit is not None else ""),
    )
    return m


def _deviations(op: str, x: Tensor, axes, keepdim, n, divisor, unit, out, m=None) -> Results:
    """The second pass, var (or std) in its epilogue: float64 data sums d and d^2 together
    (the corrected two-pass algorithm) and raises the flag where sum(d^2) is not finite;
    float32 data sums d^2 only, its float64 mean being exact to far below float32's
    precision. Unscaled: the result in x's dtype. Scaled: the float64 var (or std) of
    x / unit, keepdim. `m`: the first pass's mean where the caller took it (unscaled).
    """
    m = _mean64(x, axes, n, unit) if m is None else m
    corrected = x.dtype is float64
    flags = unit is None and corrected

    def deviations(a, *rest):  # (mean) or (unit, mean): the inputs in the order met here
        d = binop("sub", _value(a, *rest[:-1]), rest[-1])
        return (d, binop("mul", d, d)) if corrected else binop("mul", d, d)

    def finish(*sums):
        squares = spread = sums[-1]
        if corrected:
            total = sums[0]
            spread = binop(
                "sub", squares, binop("mul", total, binop("div", total, scalar("count")))
            )
        v = binop("max", binop("div", spread, scalar("divisor")), _const(0.0))
        v = unop("sqrt", v) if op == "std" else v
        if flags:
            v = _flag_unless_finite(squares, v)
        return v if unit is not None else cast_to(v, x.dtype)

    return reduce(
        "sum",
        [x, m] if unit is None else [x, unit, m],
        axes,
        keepdim if unit is None else True,
        prologue=deviations,
        epilogues=[finish],
        key=(op, "flags" if flags else "scaled" if unit is not None else "plain"),
        scalars={"count": float(n), "divisor": divisor},
        out=out1(out),
        name=f"{op}_{x.dtype}" + ("_scaled" if unit is not None else ""),
    )


def _divisor(n: int, correction: float) -> float:
    """torch's n - correction, or 0 unless n exceeds it: a NaN correction divides by 0 (inf,
    NaN for a constant slice), -inf by inf (0), and an empty slice stays NaN (0 / 0)."""
    return float(n - correction) if n > correction and n else 0.0


def _variance(op: str, x, dim, correction, keepdim, out) -> Tensor:
    """The corrected two-pass var (or std), redone scaled where float64 sums overflowed."""
    x = tensor_arg(x, op)
    keepdim = keepdim_arg(keepdim, op)
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}(): std and var only support floating point dtypes, got {x.dtype}")
    correction = scalar_arg(correction, op, "correction")
    axes = reduce_axes(x, dim, op)
    n = reduced_count(x.shape, axes)
    divisor = _divisor(n, correction)

    def run(target: Tensor | None) -> Tensor:
        return _spread(op, x, axes, keepdim, n, divisor, target)

    if out is not None and tensor_arg(out, op, "out").dtype is not x.dtype:
        if out.dtype.is_complex:  # torch's kernel refuses the complex dtype it would read
            raise TypeError(f"{op}(): a {x.dtype} input has no {op} into a {out.dtype} out")
        return copied_out(run(None), out, op, cast=True)  # else it casts into another
    if out is not None and out.shares_storage(x):
        return _into(out, x, reduced_shape(x.shape, axes, keepdim), op, run)
    return run(out)


def _spread(op: str, x, axes, keepdim, n, divisor, target, m=None) -> Tensor:
    """var (or std) by the two passes, redone scaled where the float64 sums overflowed."""
    results = _deviations(op, x, axes, keepdim, n, divisor, None, target, m)
    if results.flagged:
        u = _units(x, axes, "pow2")
        (scaled,) = _deviations(op, x, axes, keepdim, n, divisor, u, None)
        _unscale(results[0], scaled, u, 1 if op == "std" else 2)
    return results[0]


def var_with_mean(x: Tensor, axes: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    """(the biased var of floating x over `axes` in x's dtype, its first pass's float64
    mean), both keepdim: a normalization's statistics in two passes over x, where var and
    mean apart take three."""
    n = reduced_count(x.shape, axes)
    m = _mean64(x, axes, n, None)
    return _spread("var", x, axes, True, n, _divisor(n, 0), None, m), m


def _unbiased(op: str, dim, unbiased, correction) -> tuple:
    """(dim, correction) from torch's call forms: var(t, True), var(t, dim, unbiased, keepdim)
    and correction=; unbiased and correction together are refused, as in torch."""
    if isinstance(dim, bool):  # var(t, False): the legacy (input, unbiased) overload
        if unbiased is not None:
            raise TypeError(f"{op}(): unbiased given twice ({dim} and {unbiased})")
        dim, unbiased = None, dim
    if unbiased is None:
        return dim, 1 if correction is None else correction
    if correction is not None:
        raise TypeError(f"{op}(): pass unbiased={unbiased} or correction={correction}, not both")
    if not isinstance(unbiased, bool):
        raise TypeError(f"{op}(): unbiased must be a bool, got {type(unbiased).__name__}")
    return dim, int(unbiased)


def var(
    input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None, out=None
) -> Tensor:
    """Variance with `correction` (default 1; unbiased=False is 0): the corrected two-pass
    algorithm, exact for a constant slice, finite wherever the variance is."""
    dim, correction = _unbiased("var", dim, unbiased, correction)
    if isinstance(input, Tensor) and input.dtype.is_complex:
        return complex.variance("var", input, _variance, dim, correction, keepdim, out)
    return _variance("var", input, dim, correction, keepdim, out)


def std(
    input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None, out=None
) -> Tensor:
    """sqrt(var): the square root is the second pass's epilogue."""
    dim, correction = _unbiased("std", dim, unbiased, correction)
    if isinstance(input, Tensor) and input.dtype.is_complex:
        return complex.variance("std", input, _variance, dim, correction, keepdim, out)
    return _variance("std", input, dim, correction, keepdim, out)


# ---- norms -----------------------------------------------------------------------------------


def _norm_order(p) -> float:
    if isinstance(p, str):
        if p != "fro":
            raise TypeError(f"norm(): p must be a number, 'fro' or 'nuc', got {p!r}")
        return 2.0
    return float(scalar_arg(p, "norm", "p"))


def _powered(order: float, x: Tensor, axes, keepdim, unit, out) -> Results:
    """sum(|x|^p)^(1/p) (p = 2: sqrt(sum(x^2))), of x / unit when given (float64,
    keepdim), else in x's dtype with the flag raised where the sum is inf."""
    two = order == 2.0
    flags = unit is None and (x.dtype is float64 or not two)

    def powers(a, *s):
        v = _value(a, *s)
        return binop("mul", v, v) if two else binop("pow", unop("abs", v), scalar("p"))

    def root(r):
        v = unop("sqrt", r) if two else binop("pow", r, scalar("inv"))
        if flags:
            v = _flag_unless_finite(r, v)
        return v if unit is not None else cast_to(v, x.dtype)

    kind = "2" if two else "p"
    return reduce(
        "sum",
        [x] if unit is None else [x, unit],
        axes,
        keepdim if unit is None else True,
        prologue=powers,
        epilogues=[root],
        key=("norm", kind, "flags" if flags else "scaled" if unit is not None else "plain"),
        scalars=None if two else {"p": order, "inv": 1.0 / order},
        out=out1(out),
        name=f"norm{kind}_{x.dtype}" + ("_scaled" if unit is not None else ""),
    )


def _simple_norm(order: float, x: Tensor, dim, axes, keepdim, out) -> Tensor:
    """p = 1 (sum of magnitudes), 0 (count of nonzeros), inf and -inf (largest and smallest
    magnitude): nothing to scale."""
    dt = x.dtype
    if order == 1.0:
        op, kind, epilogue = "sum", "1", casting(dt)
        prologue = lambda a: unop("abs", cast_to(a, float64))  # noqa: E731
    elif order == 0.0:
        op, kind, epilogue = "sum", "0", casting(dt)
        prologue = lambda a: cast_to(nonzero_count(a), float64)  # noqa: E731
    else:
        op, kind = ("max", "inf") if order > 0 else ("min", "-inf")
        prologue, epilogue = (lambda a: unop("abs", a)), identity
        nonempty(x, axes, "norm", not all_dims(dim))
    return reduce(
        op,
        [x],
        axes,
        keepdim,
        prologue=prologue,
        epilogues=[epilogue],
        key=("norm", kind),
        out=out1(out),
        name=f"norm{kind.replace('-', 'neg')}_{dt}",
    )[0]


def norm(input: Tensor, p=2, dim=None, keepdim: bool = False, *, out=None, dtype=None) -> Tensor:
    """The vector p-norm over dim (all by default): one kernel, the root in its epilogue.

    p = 2 sums squares, 1 sums magnitudes, inf / -inf take the largest / smallest
    magnitude, 0 counts nonzeros, any other p is sum(|x|^p)^(1/p). Sums of squares and
    powers that overflow are redone scaled, so a finite norm is finite. p = 'nuc' is the
    matrix norm over dim (the last two by default); dtype= computes in that float dtype.
    """
    x = tensor_arg(input, "norm")
    keepdim = keepdim_arg(keepdim, "norm")
    if dtype is not None:
        dtype = as_dtype(dtype)
        if not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(f"norm(): dtype should be floating point or complex, but got {dtype}")
        x = x.to(dtype)
    if isinstance(p, str) and p == "nuc":  # the matrix norm's (torch.norm passes it there)
        from kael.frontend.matrix_norms import matrix_norm

        axes = (-2, -1) if dim is None else dim
        return matrix_norm(
            x, "nuc", tuple(axes) if isinstance(axes, list) else axes, keepdim, out=out
        )
    if x.dtype.is_complex:  # the norm of the magnitudes
        x = x.abs()
    if not x.dtype.is_floating_point:
        raise TypeError(f"norm(): expected a floating point tensor as input, got {x.dtype}")
    order = _norm_order(p)
    axes = reduce_axes(x, dim, "norm")
    if order in (0.0, 1.0) or math.isinf(order):
        return _simple_norm(order, x, dim, axes, keepdim, out)

    def run(target: Tensor | None) -> Tensor:
        results = _powered(order, x, axes, keepdim, None, target)
        if results.flagged:
            u = _units(x, axes, "min" if order < 0 else "max")
            (scaled,) = _powered(order, x, axes, keepdim, u, None)
            _unscale(results[0], scaled, u, 1)
        return results[0]

    if out is not None and out.shares_storage(x):
        return _into(out, x, reduced_shape(x.shape, axes, keepdim), "norm", run)
    return run(out)
