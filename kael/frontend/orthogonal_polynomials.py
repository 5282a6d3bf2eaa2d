"""torch.special's orthogonal polynomials of (x, n): chebyshev_polynomial_t/u/v/w, their
shifted_ forms, hermite_polynomial_h and _he, laguerre_polynomial_l and legendre_polynomial_p,
each a formula (frontend/formula.py) mirroring PyTorch's (ATen's Math.h) branch for branch:
0 for n < 0, its values at the ends (|x| = 1; the shifted ones' x = 0 and 1; Laguerre's x =
0), Chebyshev's trigonometric closed forms inside (-1, 1) past its n threshold (cos(n acos x)
and the like), n's first two values, else the three-term recurrence, n - 1 steps. x and n
broadcast; either (not both) may be a Number. n is truncated to an integer as PyTorch's cast
does (2.7 gives 2, -0.5 gives 0); NaN, +-inf and |n| >= 2^63 give 0 (that cast's x86 result).

A kernel cannot loop a data-dependent number of times, so the recurrence is unrolled: each
step m computes P_{m+1} from P_m and P_{m-1} and is taken only where m < n (past an element's
n its state stays), so one kernel serves every n up to its step count. The count: for a Number
n it is n - 1, known on the host; for a tensor n (or a Number above UNROLL) one host read
takes the largest n - 1 over the elements that take the recurrence (not the ends, not the
closed forms, not NaN x). Up to UNROLL steps, one kernel unrolls them (rounded up to a power
of two, so few kernels are compiled); past that, chunks of UNROLL steps run as kernels of
their own, carrying the state (P_{m-1}, P_m) in two tensors, the last chunk fused with the
branches: 2 ceil(steps / UNROLL) - 1 kernels. PyTorch's loop stops where its state turns NaN
(past an overflow), so every CHECK_EVERY chunks one more host read ends the chunks once no
element that takes the recurrence both still steps and holds a number. A tensor n makes a call data-dependent: under
@kael.compile it runs as its own step, not fused.

Each computes in its result dtype (float32 or float64, as PyTorch), step for step as PyTorch's
loop, so values past an overflow (inf, then NaN) and Hermite's NaN past n = 128 (float32) or
512 (float64) are PyTorch's. Deliberate departures: PyTorch's U, W, shifted U and W, Laguerre
and Legendre read an uninitialised variable for NaN x and n >= 2 (any value comes out); kael
gives NaN. acos, cos and sin are kael's own (the closed forms' error grows with n, as
PyTorch's does, so the two differ by about n ulps there).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import NamedTuple

from kael.frontend import reductions
from kael.frontend.formula import Value, where
from kael.frontend.math_functions import _acos
from kael.frontend.special_arguments import binary_operands, run
from kael.frontend.special_math import _const
from kael.frontend.tensor import Tensor
from kael.runtime.dtypes import float32
from kael.runtime.errors import ValueError

UNROLL = 32  # recurrence steps one kernel unrolls
CHECK_EVERY = 16  # chunks between the checks that any element still steps
HERMITE_LIMIT = {float32: 128}  # PyTorch's NaN past this n (512 for float64)
INT64_LIMIT = 2.0**63


class Polynomial(NamedTuple):
    """One family as PyTorch computes it: P_1, the step P_{m+1}(m, x, P_{m-1}, P_m), torch's
    branches over the recurrence's P_n, and where those do not take it (n >= 2)."""

    first: Callable[[Value], Value]
    step: Callable[..., Value]
    finish: Callable[[Value, Value, Value], Value]
    direct: Callable[[Value, Value], Value]


def _degree(n: Value) -> Value:
    """n truncated as PyTorch's cast to int64: -1 (so 0 out) for NaN and beyond int64."""
    return where(n.apply("abs") < INT64_LIMIT, n.apply("trunc"), -1.0)


def _sign(d: Value) -> Value:
    """(-1)^d of an integer-valued d."""
    even = ((d * 0.5).apply("floor") * 2).eq(d)
    return where(even, _const(d, 1.0), -1.0)


def _low_degrees(x: Value, d: Value, first: Value, recurrence: Value) -> Value:
    """0 for n < 0, 1 for n = 0, P_1 for n = 1, the recurrence's value beyond."""
    return where(d.eq(0), _const(x, 1.0), where(d.eq(1), first, recurrence))


# ---- Chebyshev's four kinds and their shifted forms -------------------------------------------


# kind: (P_1 as y + y + c (None: y itself), value at y = 1, value at y = -1 over (-1)^n,
# closed form in theta = acos(y), its fallback where theta's half-angle rounds to 0 or pi/2).
def _t_closed(y: Value, d: Value, theta: Value) -> Value:
    return (d * theta).apply("cos")


def _u_closed(y: Value, d: Value, theta: Value) -> Value:
    s = theta.apply("sin")
    angle = (d + 1) * theta
    return where(s.ne(0), angle.apply("sin") / s, (d + 1) * angle.apply("cos") / y)


def _v_closed(y: Value, d: Value, theta: Value) -> Value:
    half = theta / 2.0
    value = ((d + 0.5) * theta).apply("cos") / half.apply("cos")
    return where(half.apply("sin").ne(1), value, _sign(d) * (d + d + 1))


def _w_closed(shifted: bool) -> Callable[[Value, Value, Value], Value]:
    """sin((n + 1/2) theta) / sin(theta / 2); where cos(theta / 2) rounds to 1, PyTorch's
    2n + 1 (shifted: (-1)^n, as its shifted kernel returns there)."""

    def closed(y: Value, d: Value, theta: Value) -> Value:
        half = theta / 2.0
        value = ((d + 0.5) * theta).apply("sin") / half.apply("sin")
        fallback = _sign(d) if shifted else where(y > 0, d + d + 1, _sign(d))
        return where(half.apply("cos").ne(1), value, fallback)

    return closed


class Kind(NamedTuple):
    first: float | None  # P_1 = y + y + first; None: P_1 = y
    at_one: Callable[[Value], Value]  # of n
    at_minus_one: Callable[[Value], Value]  # of n, times (-1)^n
    closed: Callable[[Value, Value, Value], Value]


KINDS = {
    "t": Kind(None, lambda d: _const(d, 1.0), lambda d: _const(d, 1.0), _t_closed),
    "u": Kind(0.0, lambda d: d + 1, lambda d: d + 1, _u_closed),
    "v": Kind(-1.0, lambda d: _const(d, 1.0), lambda d: d + d + 1, _v_closed),
    "w": Kind(1.0, lambda d: d + d + 1, lambda d: _const(d, 1.0), None),
}
# The n past which PyTorch takes the closed form inside (-1, 1): (plain, shifted).
CLOSED_FROM = {"t": (6, 6), "u": (8, 6), "v": (8, 6), "w": (8, 4)}


def _chebyshev(kind: str, shifted: bool) -> Polynomial:
    """Chebyshev's polynomial of the kind in y = x (shifted: 2x - 1, as PyTorch's x + x - 1);
    the ends y = +-1 (shifted: x = 1, 0), the closed form inside past CLOSED_FROM."""
    spec = KINDS[kind]
    closed = spec.closed or _w_closed(shifted)
    threshold = CLOSED_FROM[kind][shifted]

    def arg(x: Value) -> Value:
        return x + x - 1.0 if shifted else x

    def first(x: Value) -> Value:
        y = arg(x)
        return y if spec.first is None else y + y + spec.first

    def step(m, x: Value, p: Value, q: Value) -> Value:
        y = arg(x)
        return (y + y) * q - p

    def direct(x: Value, d: Value) -> Value:
        a = arg(x).apply("abs")
        return a.eq(1) | ((d > threshold) & (a < 1))

    def finish(x: Value, d: Value, q: Value) -> Value:
        y = arg(x)
        value = _low_degrees(x, d, first(x), q)
        value = where((d > threshold) & (y.apply("abs") < 1), closed(y, d, _acos(y)), value)
        ends = where(y.eq(1), spec.at_one(d), _sign(d) * spec.at_minus_one(d))
        return where(d < 0, 0.0, where(y.apply("abs").eq(1), ends, value))

    return Polynomial(first, step, finish, direct)


# ---- Hermite, Laguerre, Legendre --------------------------------------------------------------


def _hermite(physicists: bool) -> Polynomial:
    """H_n (physicists': H_{m+1} = 2x H_m - 2m H_{m-1}) or He_n (x He_m - m He_{m-1}); NaN past
    PyTorch's limit on n (128 in float32, 512 in float64)."""

    def first(x: Value) -> Value:
        return x + x if physicists else x

    def step(m, x: Value, p: Value, q: Value) -> Value:
        return (x + x) * q - (m + m) * p if physicists else x * q - m * p

    def limit(x: Value) -> int:
        return HERMITE_LIMIT.get(x.node.dtype, 512)

    def direct(x: Value, d: Value) -> Value:
        return d > limit(x)

    def finish(x: Value, d: Value, q: Value) -> Value:
        value = where((d > limit(x)) & (d > 1), math.nan, q)
        return where(d < 0, 0.0, _low_degrees(x, d, first(x), value))

    return Polynomial(first, step, finish, direct)


def _laguerre_first(x: Value) -> Value:
    return 1.0 - x


def _laguerre_step(m, x: Value, p: Value, q: Value) -> Value:
    return (((m + m) + (1.0 - x)) * q - m * p) / (m + 1)


def _laguerre_direct(x: Value, d: Value) -> Value:
    return x.eq(0)


def _laguerre_finish(x: Value, d: Value, q: Value) -> Value:
    """1 at x = +-0 (for n >= 0)."""
    value = where(x.eq(0), _const(x, 1.0), _low_degrees(x, d, _laguerre_first(x), q))
    return where(d < 0, 0.0, value)


def _legendre_first(x: Value) -> Value:
    return x


def _legendre_step(m, x: Value, p: Value, q: Value) -> Value:
    return ((m + m + 1) * x * q - m * p) / (m + 1)


def _legendre_direct(x: Value, d: Value) -> Value:
    return x.apply("abs").eq(1)


def _legendre_finish(x: Value, d: Value, q: Value) -> Value:
    """1 at x = 1, (-1)^n at x = -1."""
    ends = where(x > 0, _const(x, 1.0), _sign(d))
    value = where(x.apply("abs").eq(1), ends, _low_degrees(x, d, x, q))
    return where(d < 0, 0.0, value)


POLYNOMIALS: dict[str, Polynomial] = {
    **{f"chebyshev_polynomial_{k}": _chebyshev(k, shifted=False) for k in KINDS},
    **{f"shifted_chebyshev_polynomial_{k}": _chebyshev(k, shifted=True) for k in KINDS},
    "hermite_polynomial_h": _hermite(physicists=True),
    "hermite_polynomial_he": _hermite(physicists=False),
    "laguerre_polynomial_l": Polynomial(
        _laguerre_first, _laguerre_step, _laguerre_finish, _laguerre_direct
    ),
    "legendre_polynomial_p": Polynomial(
        _legendre_first, _legendre_step, _legendre_finish, _legendre_direct
    ),
}


# ---- the unrolled recurrence and its launches ------------------------------------------------


def _advance(poly: Polynomial, x: Value, d: Value, p: Value, q: Value, m0, count: int):
    """count steps from m0 (a number, or a run-time scalar): P_{m+1} where m < n, else the
    state kept."""
    for j in range(count):
        m = m0 + j
        r = poly.step(m, x, p, q)
        going = d > m
        p, q = where(going, q, p), where(going, r, q)
    return p, q


def _start(poly: Polynomial, x: Value) -> tuple[Value, Value]:
    return _const(x, 1.0), poly.first(x)


def _whole(poly: Polynomial, steps: int) -> Callable[[Value, Value], Value]:
    """The value from n and x in one kernel, `steps` steps unrolled."""

    def formula(x: Value, n: Value) -> Value:
        d = _degree(n)
        _, q = _advance(poly, x, d, *_start(poly, x), 1, steps)
        return poly.finish(x, d, q)

    return formula


def _chunk(poly: Polynomial, start: bool, lane: int | None) -> Callable[..., Value]:
    """UNROLL steps from the state (p, q) at run-time step m0 (start: from P_0 and P_1, m0
    being 1): lane 0 gives p, 1 gives q, None the finished value."""

    def formula(x: Value, n: Value, *rest: Value) -> Value:
        d = _degree(n)
        p, q, m0 = (*_start(poly, x), rest[0]) if start else rest
        p, q = _advance(poly, x, d, p, q, m0, UNROLL)
        return poly.finish(x, d, q) if lane is None else (p, q)[lane]

    return formula


def _largest(name: str, tensors: list[Tensor], dtype, formula, params=None) -> float:
    """The largest value of formula over the tensors: one host read (0 when empty)."""
    values = run(name, tensors, dtype, dtype, formula, None, params, ("largest", formula.__name__))
    return reductions.amax(values).item() if values.numel() else 0.0


def _skips(poly: Polynomial, x: Value, d: Value) -> Value:
    """Where the value is not the recurrence's: ends, closed forms, n < 2, NaN x."""
    return poly.direct(x, d) | (d < 2) | x.ne(x)


def _steps_needed(poly: Polynomial) -> Callable[[Value, Value], Value]:
    """n - 1 where the value is the recurrence's, else 0."""

    def steps_needed(x: Value, n: Value) -> Value:
        d = _degree(n)
        return where(_skips(poly, x, d), 0.0, d - 1)

    return steps_needed


def _still_stepping(poly: Polynomial) -> Callable[[Value, Value, Value, Value], Value]:
    """1 where the recurrence's value still steps past m with a number in its state: an
    element that skips the recurrence keeps a number forever, so it must not count."""

    def still_stepping(x: Value, n: Value, q: Value, m: Value) -> Value:
        d = _degree(n)
        done = _skips(poly, x, d) | (d <= m) | q.ne(q)
        return where(done, 0.0, _const(x, 1.0))

    return still_stepping


def _bucket(steps: int) -> int:
    """The unrolled step count serving `steps`: 0, or a power of two from 4."""
    return 0 if steps <= 0 else max(4, 1 << (steps - 1).bit_length())


def _number_steps(n) -> int | None:
    """The steps a Number n needs, known on the host (None when beyond UNROLL)."""
    value = float(n)
    steps = int(math.trunc(value)) - 1 if abs(value) < INT64_LIMIT else 0
    return max(steps, 0) if steps <= UNROLL else None


# The most recurrence steps an evaluation takes where some element still steps (about
# 2 us each on this machine's two cores): a degree of 2**62 would run for ever, as
# torch's does; elements that reach an end or overflow stop the loop sooner.
MAX_STEPS = 1 << 22


def _evaluate(name: str, x, n, out: Tensor | None) -> Tensor:
    """P_n(x) broadcast: one kernel up to UNROLL steps, else the chunks (module docstring)."""
    poly = POLYNOMIALS[name]
    tensors, dtype = binary_operands(x, n, name)
    steps = _number_steps(n) if isinstance(n, numbers.Number) else None
    if steps is None:
        steps = int(_largest(name, tensors, dtype, _steps_needed(poly)))
    if steps <= UNROLL:
        size = _bucket(steps)
        return run(name, tensors, dtype, dtype, _whole(poly, size), out, key=(size,))

    def chunk(state: list[Tensor], m: int, lane: int | None, out=None) -> Tensor:
        formula = _chunk(poly, not state, lane)
        key = ("chunk", bool(state), lane)
        return run(name, [*tensors, *state], dtype, dtype, formula, out, {"m0": m}, key)

    state = [chunk([], 1, lane) for lane in (0, 1)]
    stepping = _still_stepping(poly)
    m = 1 + UNROLL
    while m + UNROLL <= steps:
        check = (m // UNROLL) % CHECK_EVERY == 0
        if check and not _largest(name, [*tensors, state[1]], dtype, stepping, {"m": m}):
            break
        if m > MAX_STEPS:  # still stepping: elements whose recurrence runs all n steps
            raise ValueError(
                f"{name}: degree {steps} needs as many steps of the recurrence for some"
                f" elements, more than kael takes ({MAX_STEPS}, a few seconds); torch's loop"
                " runs them all"
            )
        state = [chunk(state, m, lane) for lane in (0, 1)]
        m += UNROLL
    return chunk(state, m, None, out)


def _function(name: str) -> Callable:
    def fn(x, n, *, out: Tensor | None = None) -> Tensor:
        return _evaluate(name, x, n, out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.special.{name}(x, n), broadcast: one kernel up to {UNROLL} steps."
    return fn


ORTHOGONAL_POLYNOMIALS: dict[str, Callable] = {name: _function(name) for name in POLYNOMIALS}
