"""PyTorch's special functions erfinv, lgamma and digamma, each one formula
(frontend/formula.py) over kael's own math in float64 (float32 and the half types round
once at the end), so one kernel, fused under @kael.compile; erfc is an elementwise op
(codegen/vmath.py). The in-place methods erfc_, erfinv_, lgamma_ and digamma_ too.

Accuracy (tests/frontend/test_special_math.py measures it against 40-digit mpmath):
float32 within 0.5 ulp plus a hair for all four (lgamma and digamma for x > 0: the
reflection below); float64 erfc 3 ulp, erfinv 2, lgamma 6 (at its minimum near 1.46, where
log x cancels with the core), digamma 3, for x > 0. For x < 0 lgamma and
digamma reflect, as PyTorch does, so near their negative zeros the error is absolute: within
2 (lgamma) and 20 (digamma) ulps of the reflection's larger term (PyTorch's: 1 and 1146).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from kael.frontend import elementwise as ew
from kael.frontend.formula import Value, where
from kael.frontend.math_functions import _signed, _unary, horner
from kael.frontend.tensor import Tensor

# erfinv(y) = y C(w - 3.125) for w = -log((1 - y)(1 + y)) < 6.25, T(sqrt(w) - 4.275) beyond:
# Halley's start, to 1e-9 (benchmarks/fit_vmath.py "erfinv_center" and "erfinv_tail").
ERFINV_CENTER = (
    1.6536545628114128, 0.24015817881562515, -0.006033672021490903, -0.0007406917910451712,
    0.00018673587956574537, -1.3891704449749757e-05, -1.3663666877137808e-06,
    4.268825693480685e-07, -2.8849436120547362e-08, -4.742215194507951e-09,
    1.02627942770552e-09, 5.295273169981122e-12, -1.2221848388126145e-11,
)  # fmt: skip
ERFINV_TAIL = (
    4.117473293569521, 1.010012982841518, 0.0006671271596384955, -0.0005849800459045455,
    0.00020053195191756742, -5.571930704821848e-05, 1.3738485009096849e-05,
    -3.0797468622949346e-06, 7.245411639903878e-07, -1.232964163232036e-07,
    -6.03309755212072e-08, 4.350508255826101e-08, -7.33115207777602e-09,
)  # fmt: skip
SQRT_PI_2 = 0.886226925452758  # sqrt(pi) / 2: 1 / erf'(0)


def _erfinv(y: Value) -> Value:
    """The fitted start r, then one Halley step on erf(r) = |y| (erfc(r) = 1 - |y|, exact,
    from 1/2: no cancellation near 1); +-inf at +-1, NaN beyond, y's sign (and -0.0)."""
    a = y.apply("abs")
    w = -((1 - a) * (1 + a)).apply("log")
    r = where(
        w < 6.25, a * horner(w - 3.125, ERFINV_CENTER), horner(w.apply("sqrt") - 4.275, ERFINV_TAIL)
    )
    f = where(a < 0.5, r.apply("erf") - a, (1 - a) - r.apply("erfc"))
    step = f * SQRT_PI_2 * (r * r).apply("exp")
    r = r - step / (1 + r * step)
    return _signed(where(a.eq(1), math.inf, where(a > 1, math.nan, r)), y)


# lgamma(2 + t) = t L(t), |t| <= 1/2 ("lgamma", relative error).
LGAMMA_CORE = (
    0.42278433509846713, 0.3224670334241133, -0.06735230105319576, 0.02058080842776597,
    -0.007385551028925263, 0.0028905103318415445, -0.0011927539013274822,
    0.0005096694951088071, -0.00022315497229609722, 9.945794428343097e-05,
    -4.4923771583858556e-05, 2.0503543166180497e-05, -9.456080789604674e-06,
    4.393523868784523e-06, -1.9748210549468715e-06, 8.998968299136094e-07,
    -5.806184229062503e-07, 2.977081398369071e-07,
)  # fmt: skip
# Stirling's series past STIRLING: B_2k / (2k (2k - 1)) and digamma's B_2k / 2k, k = 1..9.
LGAMMA_SERIES = (
    0.08333333333333333, -0.002777777777777778, 0.0007936507936507937, -0.0005952380952380953,
    0.0008417508417508417, -0.0019175269175269176, 0.00641025641025641, -0.029550653594771242,
    0.17964437236883057,
)  # fmt: skip
DIGAMMA_SERIES = (
    0.08333333333333333, -0.008333333333333333, 0.003968253968253968, -0.004166666666666667,
    0.007575757575757576, -0.021092796092796094, 0.08333333333333333, -0.4432598039215686,
    3.0539543302701198,
)  # fmt: skip
STIRLING = 10.0
HALF_LOG_2PI_MINUS_HALF = 0.4189385332046727
LOG_PI = 1.1447298858494002
SHIFTS = 8  # below STIRLING, x - m lands in the core after at most 8 integer steps


def _lgamma_positive(a: Value) -> Value:
    """lgamma(a), a > 0: t = a - m (m = round(a), exact) in the core, lgamma(a) = t L(t) +
    log((a - 1) ... (a - m + 2)) (or minus log a, and log1p a, for m < 2); Stirling beyond."""
    m = (a + 0.5).apply("floor")
    t = a - m
    prod = 1 + a * 0
    for j in range(1, SHIFTS + 1):
        prod = prod * where(m > j + 1, a - j, 1.0)
    below_two = a.apply("log") + where(m < 1, a.apply("log1p"), 0.0)
    near = t * horner(t, LGAMMA_CORE) - where(m < 2, below_two, -prod.apply("log"))
    z = 1 / (a * a)
    far = (a - 0.5) * (a.apply("log") - 1) + (
        HALF_LOG_2PI_MINUS_HALF + horner(z, LGAMMA_SERIES) / a
    )
    return where(a < STIRLING, near, far)


def _sin_pi_fraction(x: Value) -> tuple[Value, Value]:
    """(r, pi r) with r = x - round(x) in [-1/2, 1/2], exact: sin and tan of pi x have it."""
    r = x - x.apply("round")
    return r, r * math.pi


def _lgamma(x: Value) -> Value:
    """lgamma, for x < 0 by reflection: log pi - log|sin(pi x)| - log|x| - lgamma(|x|);
    +inf at 0, the negative integers and +-inf."""
    a = x.apply("abs")
    positive = _lgamma_positive(a)
    r, angle = _sin_pi_fraction(x)
    reflected = LOG_PI - (angle.apply("sin").apply("abs").apply("log") + a.apply("log") + positive)
    value = where(x < 0, reflected, positive)
    return where(a.eq(math.inf) | (r.eq(0) & (x <= 0)), math.inf, value)


# digamma(x) = (x - x0) D(x - 3/2) on [1, 2], x0 = X0[0] + X0[1] its root ("digamma").
DIGAMMA_CORE = (
    0.9510558760318328, -0.4236274212814606, 0.24054248424078728, -0.14840492305388092,
    0.0949887244528419, -0.06192213327548572, 0.040760833943803206, -0.02697579665990325,
    0.017907248224567525, -0.011908220104468391, 0.007927023501256162, -0.005279937253876989,
    0.003518086963753443, -0.002345494946516913, 0.001563514806341969, -0.0010364564131017924,
    0.0006902333022199518, -0.0004859599718373566, 0.00032601261240211777,
    -0.00014478444144584395, 9.309119396087553e-05, -0.00017823907680395286,
    0.00012131102236853006,
)  # fmt: skip
X0 = (1.4616321449683622, 9.549995429965697e-17)


def _digamma_positive(x: Value) -> Value:
    """digamma(x), x > 0: the core at u = x - (m - 1) in [1, 2) (m = floor(x), exact) plus
    1/(x - j) for j < m, minus 1/x below 1; the asymptotic series past STIRLING."""
    m = x.apply("floor")
    u = x - where(m < 1, -1.0, m - 1)
    core = ((u - X0[0]) - X0[1]) * horner(u - 1.5, DIGAMMA_CORE)
    steps = x * 0
    for j in range(1, SHIFTS + 1):
        steps = steps + where(m > j, 1 / (x - j), 0.0)
    near = core + where(m < 1, -1 / x, steps)
    z = 1 / (x * x)
    far = x.apply("log") - (0.5 / x + z * horner(z, DIGAMMA_SERIES))
    return where(x < STIRLING, near, far)


def _digamma(x: Value) -> Value:
    """digamma, for x < 0 by reflection: digamma(1 - x) - pi / tan(pi x); -inf at +0 and
    +inf at -0 (PyTorch's), NaN at the negative integers and -inf."""
    negative = x < 0
    positive = _digamma_positive(where(negative, 1 - x, x))
    r, angle = _sin_pi_fraction(x)
    value = where(negative, positive - math.pi / angle.apply("tan"), positive)
    value = where(negative & r.eq(0), math.nan, value)
    return where(x.eq(0), -1 / x, value)


UNARY = {
    "erfinv": _unary("erfinv", _erfinv, wide=True),
    "lgamma": _unary("lgamma", _lgamma, wide=True),
    "digamma": _unary("digamma", _digamma, wide=True),
}


def _inplace(name: str, fn: Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    """Tensor.NAME_: fn's result written into self (a float dtype's; PyTorch's dtype error
    for integer and bool tensors)."""

    def method(self: Tensor) -> Tensor:
        result = fn(self)
        ew._check_inplace(self, result.dtype, result.shape, f"{name}_")
        return self.copy_(result)

    method.__name__ = f"{name}_"
    method.__qualname__ = f"Tensor.{name}_"
    method.__doc__ = f"torch.Tensor.{name}_: {name} written into self."
    return method


FUNCTIONS: dict[str, Callable] = {**UNARY}
NOT_METHODS: frozenset[str] = frozenset()
METHODS: dict[str, Callable] = {
    f"{name}_": _inplace(name, fn)
    for name, fn in {**UNARY, "erfc": lambda x: ew.unary("erfc", x)}.items()
}
