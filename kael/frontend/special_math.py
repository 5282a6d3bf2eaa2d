"""PyTorch's special functions, each one formula (frontend/formula.py) over kael's own math
in float64 (float32 and the half types round once at the end), so one kernel, fused under
@kael.compile: erfinv, lgamma, digamma, i0 and polygamma (also kael.NAME and Tensor.NAME),
and torch.special's own i0e, i1, i1e, ndtr, log_ndtr, ndtri, erfcx, entr, xlog1py, zeta
and multigammaln (kael.special, kael/special.py); erfc is an elementwise op
(codegen/vmath.py). The in-place methods erfc_, erfinv_, lgamma_, digamma_, i0_ and
polygamma_ too.

Accuracy (tests/frontend/test_special_math.py measures it against 40-digit mpmath):
float32 within 0.5 ulp plus a hair for all four (lgamma and digamma for x > 0: the
reflection below); float64 erfc 3 ulp, erfinv 2, lgamma 6 (at its minimum near 1.46, where
log x cancels with the core), digamma 3, for x > 0. For x < 0 lgamma and
digamma reflect, as PyTorch does, so near their negative zeros the error is absolute: within
2 (lgamma) and 20 (digamma) ulps of the reflection's larger term (PyTorch's: 1 and 1146).

The rest (tests/frontend/test_special_math.py; PyTorch's float64 error in brackets): float32
0.5 ulp plus a hair for all (PyTorch's float32 kernels: up to 10 ulp, ndtr's and log_ndtr's
lower tails far more). float64 against mpmath: i0 4 ulp, i1 8, i0e 6, i1e 7 (Cephes's
Chebyshev series, PyTorch's own [6 to 10]); erfcx 4 [431 for x < 0: x^2 rounded]; ndtr 5
[nothing in the lower tail: its (1 + erf) / 2 is 0 below -8.3]; log_ndtr 5 [1249 in the
upper tail, erfc(x / sqrt 2) amplifying the rounding of x / sqrt 2]; entr 2; ndtri 3
(Cephes's algorithm, as PyTorch's and SciPy's); zeta 7 for q > 0; polygamma (n >= 1)
within 6 ulp for x > 0 (polygamma(1, x): PyTorch's trigamma is good to 1e-9 only); for
q < 0 (x < 0) zeta and polygamma are within 5 ulps of the largest term (q's distance to
the nearest integer to the -s), which cancels near the function's zeros, as PyTorch's
sum cancels; but for odd x with q near a half-integer, whose two largest terms cancel, the
pairs are summed as differences: within 8 ulps of the value (zeta(5, -1e6 - 1/2) = 2.5e-25,
where PyTorch's sum does not end).

igamma and igammac (P(a, x), Q(a, x); also Tensor methods, igamma_ / igammac_, and
kael.special.gammainc / gammaincc): float64 against mpmath within 22 ulp where the result is
above 0.01 (most exact), and within 34 |log result| ulps below (the exp of a rounded
exponent); float32 within 6e-8 relative of the exact value of its inputs. PyTorch's: 8e6 ulp
in float64 (its Temme term takes pi as a float), 3e-3 relative in float32.

Deliberate departures from PyTorch: i0 and i1 of float32 stay finite past 88.7 (PyTorch's
float32 exp overflows there); polygamma(1, x) is +inf at the negative integers (its poles;
PyTorch's trigamma gives pi^2 / sin(pi x)^2 of a rounded sine, about 1e32 in float64);
zeta's integral term does not underflow (polygamma(1, 1e300) = 1e-300, as PyTorch's
trigamma, where its zeta gives 0); log_ndtr, ndtri and erfcx take float16 and bfloat16
(PyTorch has no half kernels for them).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

from kael.frontend import elementwise as ew
from kael.frontend import factories, reductions
from kael.frontend.formula import Value, where
from kael.frontend.math_functions import _binary, _signed, _unary, horner, inplace_result
from kael.frontend.outputs import tensor_arg
from kael.frontend.tensor import Tensor
from kael.runtime.dtypes import bool_, get_default_dtype
from kael.runtime.errors import TypeError, ValueError

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


# ---- the modified Bessel functions i0, i0e, i1, i1e (Cephes, as PyTorch's kernels) ------------

# Chebyshev coefficients of exp(-x) I0(x) on [0, 8] and exp(-x) sqrt(x) I0(x) on [8, inf)
# (in 32/x - 2), the same for I1 (exp(-x) I1(x) / x on [0, 8]): Cephes's, highest first.
I0E_A = (
    -4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
    1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
    -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
    9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
    -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7,
    1.11738753912010371815e-6, -4.41673835845875056359e-6, 1.64484480707288970893e-5,
    -5.75419501008210370398e-5, 1.88502885095841655729e-4, -5.76375574538582365885e-4,
    1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
    -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2,
    1.71620901522208775349e-1, -3.04682672343198398683e-1, 6.76795274409476084995e-1,
)  # fmt: skip
I0E_B = (
    -7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
    3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
    1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
    -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
    7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
    -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
    3.39623202570838634515e-9, 2.26666899049817806459e-8, 2.04891858946906374183e-7,
    2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
    8.04490411014108831608e-1,
)  # fmt: skip
I1E_A = (
    2.77791411276104639959e-18, -2.11142121435816608115e-17, 1.55363195773620046921e-16,
    -1.10559694773538630805e-15, 7.60068429473540693410e-15, -5.04218550472791168711e-14,
    3.22379336594557470981e-13, -1.98397439776494371520e-12, 1.17361862988909016308e-11,
    -6.66348972350202774223e-11, 3.62559028155211703701e-10, -1.88724975172282928790e-9,
    9.38153738649577178388e-9, -4.44505912879632808065e-8, 2.00329475355213526229e-7,
    -8.56872026469545474066e-7, 3.47025130813767847674e-6, -1.32731636560394358279e-5,
    4.78156510755005422638e-5, -1.61760815825896745588e-4, 5.12285956168575772895e-4,
    -1.51357245063125314899e-3, 4.15642294431288815669e-3, -1.05640848946261981558e-2,
    2.47264490306265168283e-2, -5.29459812080949914269e-2, 1.02643658689847095384e-1,
    -1.76416518357834055153e-1, 2.52587186443633654823e-1,
)  # fmt: skip
I1E_B = (
    7.51729631084210481353e-18, 4.41434832307170791151e-18, -4.65030536848935832153e-17,
    -3.20952592199342395980e-17, 2.96262899764595013876e-16, 3.30820231092092828324e-16,
    -1.88035477551078244854e-15, -3.81440307243700780478e-15, 1.04202769841288027642e-14,
    4.27244001671195135429e-14, -2.10154184277266431302e-14, -4.08355111109219731823e-13,
    -7.19855177624590851209e-13, 2.03562854414708950722e-12, 1.41258074366137813316e-11,
    3.25260358301548823856e-11, -1.89749581235054123450e-11, -5.58974346219658380687e-10,
    -3.83538038596423702205e-9, -2.63146884688951950684e-8, -2.51223623787020892529e-7,
    -3.88256480887769039346e-6, -1.10588938762623716291e-4, -9.76109749136146840777e-3,
    7.78576235018280120474e-1,
)  # fmt: skip


def _const(like: Value, c: float) -> Value:
    """The number c as a Value of like's dtype."""
    return Value(like._lift(c))


def _chbevl(y: Value, coefs: tuple[float, ...]) -> Value:
    """Cephes's chbevl: the Chebyshev series sum' coefs[i] T_i(y / 2) by Clenshaw's
    recurrence, highest coefficient first (PyTorch's loop, step for step)."""
    b0, b1, b2 = _const(y, coefs[0]), _const(y, 0.0), _const(y, 0.0)
    for c in coefs[1:]:
        b2, b1 = b1, b0
        b0 = y * b1 - b2 + c
    return 0.5 * (b0 - b2)


def _bessel(order: int, scaled: bool) -> Callable[[Value], Value]:
    """I_order(x) (exp(-|x|) I_order(x) when scaled) as PyTorch's calc_i0 ... calc_i1e:
    the [0, 8] series in |x| / 2 - 2, the far one in 32 / |x| - 2 over sqrt(|x|); odd for
    order 1 (negative x: the negated value, -0.0 kept as +0.0, as PyTorch)."""
    near_coefs, far_coefs = (I0E_A, I0E_B) if order == 0 else (I1E_A, I1E_B)

    def formula(x: Value) -> Value:
        a = x.apply("abs")
        near = _chbevl(a / 2 - 2, near_coefs)
        far = _chbevl(32 / a - 2, far_coefs)
        if scaled:
            near = near * a if order else near
            value = where(a <= 8, near, far / a.apply("sqrt"))
        else:
            e = a.apply("exp")
            near = e * a * near if order else e * near
            value = where(a <= 8, near, e * far / a.apply("sqrt"))
        return where(x < 0, -value, value) if order else value

    return formula


# ---- the normal distribution: ndtr, log_ndtr, ndtri, erfcx ------------------------------------

SQRT1_2 = 0.7071067811865476
INV_SQRT_PI = 0.5641895835477563
EXP_RANGE = 746.0  # exp has overflowed to inf or underflowed to 0 past this |argument|
ERFCX_FAR = 12.0  # erfcx's asymptotic series from here (in float64 to 1e-19 by 14 terms)
ERFCX_SERIES = tuple((-1) ** k * math.prod(range(1, 2 * k, 2)) for k in range(15))


def _square(x: Value) -> tuple[Value, Value]:
    """x^2 as h + l exactly (Dekker's product over Veltkamp's split of x into 26-bit
    halves); l is 0 where h is not finite (the split overflows past 1e300)."""
    c = 134217729.0 * x
    hi = c - (c - x)
    lo = x - hi
    h = x * x
    low = ((hi * hi - h) + 2 * hi * lo) + lo * lo
    return h, where(h < 1e300, low, 0.0)


def _exp_square(x: Value, scale: float) -> Value:
    """exp(scale x^2) without the error of rounding x^2 (its low part taken to first
    order: exp(scale h) (1 + scale l)); none past exp's range, where l can pass 1 and turn
    the inf or 0 negative."""
    h, low = _square(x)
    power = h * scale
    correction = where(power.apply("abs") < EXP_RANGE, low * scale, 0.0)
    return power.apply("exp") * (1 + correction)


def _erfcx(x: Value) -> Value:
    """exp(x^2) erfc(x): below ERFCX_FAR exp(x^2) erfc(x) (x^2 not rounded: _exp_square);
    past it 1 / (x sqrt(pi)) times the asymptotic series in 1 / (2 x^2). inf where exp(x^2)
    overflows (x below -26.6), 0 at +inf."""
    near = _exp_square(x, 1.0) * x.apply("erfc")
    z = 0.5 / (x * x)
    far = INV_SQRT_PI / x * horner(z, ERFCX_SERIES)
    return where(x < ERFCX_FAR, near, far)


def _ndtr_lower(x: Value) -> Value:
    """ndtr(x) for x < -1 as erfcx(u) exp(-x^2 / 2) / 2, u = -x / sqrt 2: erfcx is well
    conditioned, so rounding u costs nothing (erfc(u) would amplify it 2 u^2 times), and
    x^2 / 2 is not rounded (_exp_square)."""
    return 0.5 * _erfcx(-x * SQRT1_2) * _exp_square(x, -0.5)


def _ndtr(x: Value) -> Value:
    """The normal distribution function: erfc(-x / sqrt 2) / 2, below -1 _ndtr_lower: also
    accurate in the lower tail, where PyTorch's (1 + erf(x / sqrt 2)) / 2 is 0 (below
    about -8.3)."""
    return where(x < -1, _ndtr_lower(x), 0.5 * (-x * SQRT1_2).apply("erfc"))


def _log_ndtr(x: Value) -> Value:
    """log(ndtr(x)): below -1 log(erfcx(-t) / 2) - x^2 / 2 (t = x / sqrt 2, as PyTorch and
    SciPy, with x^2 / 2 not rounded), above 1 log1p(-ndtr(-x)) (_ndtr_lower: no loss in
    the upper tail), between log1p(-erfc(t) / 2)."""
    t = x * SQRT1_2
    h, low = _square(x)
    lower = (_erfcx(-t) / 2).apply("log") - (h * 0.5 + low * 0.5)
    upper = (-_ndtr_lower(-x)).apply("log1p")
    middle = (-t.apply("erfc") / 2).apply("log1p")
    return where(x < -1, lower, where(x > 1, upper, middle))


# Cephes's ndtri: y - 1/2 over [exp(-2), 1 - exp(-2)] (P0 / Q0), beyond in z = 1 / sqrt(-2 log
# y) (P1 / Q1 for z > 1/8, P2 / Q2 below); highest degree first, as Cephes lists them.
NDTRI_P0 = (-5.99633501014107895267e1, 9.80010754185999661536e1, -5.66762857469070293439e1,
            1.39312609387279679503e1, -1.23916583867381258016e0)  # fmt: skip
NDTRI_Q0 = (1.0, 1.95448858338141759834e0, 4.67627912898881538453e0, 8.63602421390890590575e1,
            -2.25462687854119370527e2, 2.00260212380060660359e2, -8.20372256168333339912e1,
            1.59056225126211695515e1, -1.18331621121330003142e0)  # fmt: skip
NDTRI_P1 = (4.05544892305962419923e0, 3.15251094599893866154e1, 5.71628192246421288162e1,
            4.40805073893200834700e1, 1.46849561928858024014e1, 2.18663306850790267539e0,
            -1.40256079171354495875e-1, -3.50424626827848203418e-2,
            -8.57456785154685413611e-4)  # fmt: skip
NDTRI_Q1 = (1.0, 1.57799883256466749731e1, 4.53907635128879210584e1, 4.13172038254672030440e1,
            1.50425385692907503408e1, 2.50464946208309415979e0, -1.42182922854787788574e-1,
            -3.80806407691578277194e-2, -9.33259480895457427372e-4)  # fmt: skip
NDTRI_P2 = (3.23774891776946035970e0, 6.91522889068984211695e0, 3.93881025292474443415e0,
            1.33303460815807542389e0, 2.01485389549179081538e-1, 1.23716634817820021358e-2,
            3.01581553508235416007e-4, 2.65806974686737550832e-6,
            6.23974539184983293730e-9)  # fmt: skip
NDTRI_Q2 = (1.0, 6.02427039364742014255e0, 3.67983563856160859403e0, 1.37702099489081330271e0,
            2.16236993594496635890e-1, 1.34204006088543189037e-2, 3.28014464682127739104e-4,
            2.89247864745380683936e-6, 6.79019408009981274425e-9)  # fmt: skip
EXP_MINUS_2 = 0.13533528323661269189
SQRT_2PI = 2.50662827463100050242


def _polevl(v: Value, coefs: tuple[float, ...]) -> Value:
    """Cephes's polevl: coefficients highest degree first."""
    return horner(v, tuple(reversed(coefs)))


def _ndtri(p: Value) -> Value:
    """The inverse of ndtr, Cephes's (PyTorch's calc_ndtri): -inf at 0, +inf at 1, NaN
    outside [0, 1]."""
    upper = p > 1 - EXP_MINUS_2
    y = where(upper, 1 - p, p)
    c = y - 0.5
    c2 = c * c
    center = (c + c * (c2 * _polevl(c2, NDTRI_P0) / _polevl(c2, NDTRI_Q0))) * SQRT_2PI
    x = (-2 * y.apply("log")).apply("sqrt")
    z = 1 / x
    tail = where(
        x < 8,
        z * _polevl(z, NDTRI_P1) / _polevl(z, NDTRI_Q1),
        z * _polevl(z, NDTRI_P2) / _polevl(z, NDTRI_Q2),
    )
    tail = x - x.apply("log") / x - tail
    value = where(y > EXP_MINUS_2, center, where(upper, tail, -tail))
    value = where(p.eq(0), -math.inf, where(p.eq(1), math.inf, value))
    return where((p < 0) | (p > 1), math.nan, value)


def _entr(x: Value) -> Value:
    """-x log x: 0 at 0, -inf below 0, NaN stays NaN."""
    value = where(x > 0, -x * x.apply("log"), where(x.eq(0), _const(x, 0.0), -math.inf))
    return where(x.ne(x), x, value)


def _xlog1py(x: Value, y: Value) -> Value:
    """x log1p(y), 0 where x is 0 (unless y is NaN)."""
    return where(x.eq(0) & y.eq(y), 0.0, x * y.apply("log1p"))


# ---- the Hurwitz zeta function and polygamma (Cephes's zeta, as PyTorch's) ----------------------

# (2k)! / B_2k: the Euler-Maclaurin tail's divisors.
ZETA_A = (
    12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
    -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
    1.8152105401943546773e17, -7.1661652561756670113e18,
)  # fmt: skip
MACHEP = 1.11022302462515654042e-16


def _zeta_positive(x: Value, q: Value, shift: tuple[Value, Value] | None = None) -> Value:
    """Cephes's zeta(x, q) for q > 0, step for step as PyTorch's loop runs it (its 9 direct
    terms past q^-x, then 12 Euler-Maclaurin terms at w = q + 9, each stop where a term
    drops below MACHEP of the sum kept as a mask), but for the integral's term w^(1 - x) /
    (x - 1), a power of its own (PyTorch's w^-x w underflows where the result does not:
    polygamma(1, 1e300) is 1e-300). With shift = (h, mask): where mask holds, the same sum
    of zeta(x, q + h) - zeta(x, q), each power t^e taken as t^e expm1(e log1p(h / t)) so
    that no two close powers cancel."""

    def small(term: Value, total: Value) -> Value:
        return (-MACHEP * total < term) & (term < MACHEP * total)

    def scaled(power: Value, t: Value, offset: float) -> Value:
        """power = t^e for e = offset - x, or (t + h)^e - t^e where the mask holds."""
        if shift is None:
            return power
        h, mask = shift
        e = offset - x
        return power * where(mask, (e * (h / t).apply("log1p")).apply("expm1"), 1.0)

    s = scaled(q._binary("pow", -x), q, 0.0)
    a, b, done = q, None, None
    for _ in range(9):
        a = a + 1
        power = a._binary("pow", -x)
        term = scaled(power, a, 0.0)
        step = s + term
        if done is None:
            s, b, done = step, power, small(term, step)
        else:
            s, b = where(done, s, step), where(done, b, power)
            done = done | small(term, step)
    w = a
    # PyTorch's b w / (x - 1): no underflow
    tail = s + scaled(w._binary("pow", 1 - x), w, 1.0) / (x - 1)
    tail = tail - 0.5 * scaled(b, w, 0.0)
    factor, k, stop = _const(x, 1.0), 0.0, None
    for divisor in ZETA_A:
        factor = factor * (x + k)
        b = b / w
        t = factor * scaled(b, w, -(k + 1)) / divisor
        grown = tail + t
        tail = grown if stop is None else where(stop, tail, grown)
        small_t = (t / grown).apply("abs") < MACHEP
        stop = small_t if stop is None else stop | small_t
        k += 1
        factor = factor * (x + k)
        b = b / w
        k += 1
    return where(done, s, tail)


def _parity_sign(n: Value) -> Value:
    """(-1)^n for an integer-valued n."""
    return where((n - 2 * (n * 0.5).apply("floor")).eq(1), _const(n, -1.0), 1.0)


def _zeta(x: Value, q: Value) -> Value:
    """The Hurwitz zeta function sum_k (q + k)^-x: +inf at x = 1 and at q a non-positive
    integer, NaN for x < 1, at q = +inf and for q < 0 with x not an integer (PyTorch's). For
    q < 0 (x an integer), with m = -floor(q) and f = q + m, the m negative terms' magnitudes
    are r, r + 1, .., r + m - 1 for r = -(q + m - 1) in (0, 1] (exact: Sterbenz, or m = 1
    and r = -q), so zeta(x, q) = f^-x + (-1)^x r^-x + zeta(x, f + 1) + (-1)^x (zeta(x, r + 1)
    - zeta(x, r + m)): the two largest terms, which cancel near q = -1/2, each one power;
    for odd x with f and r close, zeta(x, f) - zeta(x, r) is one sum of paired differences,
    so that no two large terms cancel. Where the two largest terms' sum is infinite it is
    the value (PyTorch's loop returns it; zeta(x, f + 1) is NaN past x = 1e14), and
    zeta(inf, q) is +inf there (a term below 1 in magnitude), as in PyTorch."""
    negative = q < 0
    m = -q.apply("floor")
    f, r = q + m, -(q + (m - 1))
    sign = _parity_sign(x)
    # odd x, |x (f - r)| < 1/4 (f^-x, r^-x within a factor 2): their differences, pair by pair
    h = 2 * q + (2 * m - 1)  # f - r, exact (Sterbenz) for |h| < 1/2
    paired = negative & (sign < 0) & ((x * h).apply("abs") < 0.25)
    base = _zeta_positive(x, where(negative, f + 1, q))
    near = _zeta_positive(x, where(negative, where(paired, r, r + 1), 1.0), (h, paired))
    far = _zeta_positive(x, where(negative, r + m, 1.0))
    largest = f._binary("pow", -x) + sign * r._binary("pow", -x)
    value = where(negative, largest + (base + sign * (near - far)), base)
    value = where(paired, near + far, value)
    value = where(negative & largest.apply("abs").eq(math.inf), largest, value)
    value = where(negative & x.eq(math.inf), math.inf, value)
    non_positive = q <= 0
    value = where(non_positive & x.ne(x.apply("floor")), math.nan, value)
    value = where(non_positive & q.eq(q.apply("floor")), math.inf, value)
    value = where(q.eq(math.inf), math.nan, value)  # PyTorch's (its 0 * inf), so polygamma's
    return where(x.eq(1), math.inf, where(x < 1, math.nan, value))


# ---- the regularized incomplete gamma functions: igamma P(a, x), igammac Q(a, x) -------------

INCOMPLETE_TERMS = 100  # P's series and Q's continued fraction: 1e-16 over their zones
SMALL_X_TERMS = 25  # Q's series for x <= 1.1: 1.1^n / n! below 1e-17
TEMME_FROM, TEMME_RATIO = 20.0, 0.3  # Temme's expansion for a > 20 and |x - a| < 0.3 a
# Temme's coefficients d[k][n] of eta^n a^-k (DLMF 8.12.3 and 8.12.4; Cephes's igam_asy
# table, as PyTorch's), each row cut where its terms stay below 1e-20 for a > 20.
IGAMMA_TEMME = (
    (
        -0.3333333333333333, 0.08333333333333333, -0.014814814814814815, 0.0011574074074074073,
        0.0003527336860670194, -0.0001787551440329218, 3.919263178522438e-05,
        -2.1854485106799924e-06, -1.85406221071516e-06, 8.296711340953087e-07,
        -1.7665952736826078e-07, 6.707853543401498e-09, 1.0261809784240309e-08,
        -4.382036018453353e-09, 9.14769958223679e-10, -2.551419399494625e-11,
        -5.830772132550426e-11, 2.4361948020667415e-11, -5.0276692801141755e-12,
        1.1004392031956135e-13
    ),
    (
        -0.001851851851851852, -0.003472222222222222, 0.0026455026455026454,
        -0.0009902263374485596, 0.00020576131687242798, -4.018775720164609e-07,
        -1.8098550334489977e-05, 7.64916091608111e-06, -1.6120900894563446e-06,
        4.647127802807434e-09, 1.378633446915721e-07, -5.752545603517705e-08,
        1.1951628599778148e-08, -1.7543241719747647e-11, -1.0091543710600413e-09,
        4.162792991842583e-10, -8.56390702649298e-11, 6.067215101604758e-14
    ),
    (
        0.004133597883597883, -0.0026813271604938273, 0.0007716049382716049,
        2.0093878600823047e-06, -0.00010736653226365161, 5.2923448829120125e-05,
        -1.2760635188618728e-05, 3.423578734096138e-08, 1.3721957309062932e-06,
        -6.298992138380055e-07, 1.4280614206064242e-07, -2.0477098421990866e-10,
        -1.409252991086752e-08, 6.228974084922022e-09, -1.3670488396617112e-09,
        9.428356159014678e-13
    ),
    (
        0.0006494341563786008, 0.00022947209362139917, -0.0004691894943952557,
        0.00026772063206283885, -7.561801671883977e-05, -2.396505113867297e-07,
        1.1082654115347302e-05, -5.6749528269915965e-06, 1.4230900732435883e-06,
        -2.7861080291528143e-11, -1.6958404091930278e-07, 8.099464905388083e-08,
        -1.9111168485973655e-08, 2.3928620439808118e-12, 2.0620131815488797e-09,
        -9.460496661855133e-10
    ),
    (
        -0.0008618882909167117, 0.0007840392217200666, -0.0002990724803031902,
        -1.4638452578843418e-06, 6.641498215465122e-05, -3.968365047179435e-05,
        1.1375726970678419e-05, 2.507497226237533e-10, -1.6954149536558305e-06,
        8.907507532205309e-07, -2.292934834000805e-07, 2.956794137544049e-11,
        2.8865829742708783e-08, -1.4189739437803219e-08, 3.4463580499464896e-09
    ),
    (
        -0.00033679855336635813, -6.972813758365858e-05, 0.0002772753244959392,
        -0.00019932570516188847, 6.797780477937208e-05, 1.419062920643967e-07,
        -1.3594048189768693e-05, 8.018470256334202e-06, -2.291481176508095e-06,
        -3.252473551298454e-10, 3.4652846491085265e-07, -1.8447187191171344e-07,
        4.8240967037894184e-08, -1.7989466721743514e-14
    ),
    (
        0.0005313079364639922, -0.0005921664373536939, 0.0002708782096718045,
        7.902353232660328e-07, -8.153969367561969e-05, 5.61168275310625e-05,
        -1.8329116582843375e-05, -3.0796134506033047e-09, 3.465155368803609e-06,
        -2.0291327396058603e-06, 5.788792863149004e-07, 2.338630673826657e-13
    ),
    (
        0.00034436760689237765, 5.171790908260592e-05, -0.00033493161081142234,
        0.0002812695154763237, -0.00010976582244684731, -1.2741009095484485e-07,
        2.7744451511563645e-05, -1.8263488805711332e-05, 5.7876949497350525e-06,
        4.93875893393627e-10, -1.0595367014026043e-06, 6.166714376110408e-07
    ),
    (
        -0.0006526239185953094, 0.0008394987206720873, -0.000438297098541721,
        -6.969091458420552e-07, 0.00016644846642067547, -0.00012783517679769218,
        4.629953263691304e-05, 4.557909867922708e-09, -1.0595271125805195e-05,
        6.783342904865167e-06, -2.1075476666258803e-06
    ),
    (
        -0.0005967612901927463, -7.204895416020011e-05, 0.0006782308837667328,
        -0.0006401475260262758, 0.00027750107634328704, 1.819700838046515e-07,
        -8.479507117068503e-05, 6.105192082501531e-05, -2.1073920183404862e-05
    ),
    (
        0.0013324454494800656, -0.0019144384985654776, 0.0011089369134596636,
        9.9324041226423e-07, -0.0005087450129309319, 0.00042735056665392886,
        -0.000168588537679108, -8.1301893922785e-09
    ),
    (
        0.001579727660730835, 0.00016251626278391583, -0.0020633421035543276,
        0.00213896861856891, -0.0010108559391263003, -3.99127055299192e-07
    ),
    (
        -0.004072512119514016, 0.00640336283380807, -0.004041016108167662,
        -2.183732802866233e-06
    ),
    (
        -0.0059475779383993, -0.0005401647678926045, 0.00879104135507679, -0.009857631558785612
    ),
    (
        0.01740202778752271, -0.029527880945699123
    ),
)  # fmt: skip


def _log1pmx(s: Value) -> Value:
    """log(1 + s) - s without cancellation: for |s| < 1/2, 2 (u^3/3 + u^5/5 + ...) - s u
    with u = s / (2 + s) (|u| <= 1/3); log1p(s) - s beyond."""
    u = s / (2 + s)
    u2 = u * u
    near = u2 * u * horner(u2, tuple(2.0 / (2 * j + 3) for j in range(16))) - s * u
    return where(s.apply("abs") < 0.5, near, s.apply("log1p") - s)


def _lgamma1p(a: Value) -> Value:
    """lgamma(1 + a) for a >= 0 without rounding 1 + a below 3/2: the core at a or a - 1."""
    near = a * horner(a, LGAMMA_CORE) - a.apply("log1p")
    middle = (a - 1) * horner(a - 1, LGAMMA_CORE)
    return where(a <= 0.5, near, where(a < 1.5, middle, _lgamma_positive(a + 1)))


def _log_power(a: Value, x: Value) -> Value:
    """log(x^a e^-x / Gamma(a + 1)); from STIRLING on a log1pmx((x - a) / a) - log(2 pi a) / 2
    minus Stirling's series, so that a log x and x do not cancel."""
    direct = a * x.apply("log") - x - _lgamma1p(a)
    z = 1 / (a * a)
    far = a * _log1pmx((x - a) / a) - 0.5 * (2 * math.pi * a).apply("log")
    return where(a < STIRLING, direct, far - horner(z, LGAMMA_SERIES) / a)


def _lower_series(a: Value, x: Value) -> Value:
    """sum_n x^n / ((a + 1) ... (a + n)): P(a, x) is x^a e^-x / Gamma(a + 1) times it."""
    term = 1 + x * 0
    total = term
    for n in range(1, INCOMPLETE_TERMS):
        term = term * x / (a + n)
        total = total + term
    return total


def _upper_fraction(a: Value, x: Value) -> Value:
    """Legendre's continued fraction 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - ...)) of
    Gamma(a, x) e^x x^-a, evaluated from depth INCOMPLETE_TERMS back."""
    t = x * 0
    for n in range(INCOMPLETE_TERMS, 0, -1):
        t = n * (n - a) / (x + (2 * n + 1) - a - t)
    return 1 / (x + 1 - a - t)


def _upper_small_x(a: Value, x: Value) -> Value:
    """Q(a, x) for x <= 1.1 (Cephes's igamc_series): 1 - x^a / Gamma(a + 1) - x^a / Gamma(a)
    sum_{n >= 1} (-x)^n / (n! (a + n)), the first difference by expm1."""
    factor, total = 1 + x * 0, x * 0
    for n in range(1, SMALL_X_TERMS):
        factor = factor * -x / n
        total = total + factor / (a + n)
    head = a * x.apply("log") - _lgamma1p(a)
    return -head.apply("expm1") - a * head.apply("exp") * total


def _temme(a: Value, x: Value) -> tuple[Value, Value]:
    """(P, Q) by Temme's uniform expansion: erfc(-+eta sqrt(a / 2)) / 2 -+ exp(-a eta^2 / 2)
    / sqrt(2 pi a) sum_k C_k(eta) a^-k, eta^2 / 2 = (x - a) / a - log(x / a)."""
    half_square = -_log1pmx((x - a) / a)
    root = (2 * half_square).apply("sqrt")
    eta = where(x < a, -root, root)
    rows = [horner(eta, row) for row in IGAMMA_TEMME]
    inverse = 1 / a
    total = rows[-1]
    for row in reversed(rows[:-1]):
        total = total * inverse + row
    scaled = eta * (a * 0.5).apply("sqrt")
    correction = (-a * half_square).apply("exp") * total / (2 * math.pi * a).apply("sqrt")
    return 0.5 * (-scaled).apply("erfc") - correction, 0.5 * scaled.apply("erfc") + correction


def _incomplete_edges(a: Value, x: Value, value: Value, upper: bool) -> Value:
    """PyTorch's special values, in its order of checks: NaN for a < 0 or x < 0, for a = 0
    the value at x = inf if x > 0 (else NaN), the value at x = 0 there, for a = inf the value
    at x = 0 (NaN if x = inf too), the limit at x = inf; NaN through the rest."""
    at_zero, at_inf = (1.0, 0.0) if upper else (0.0, 1.0)
    value = where(a.ne(a) | x.ne(x), math.nan, value)
    value = where(x.eq(math.inf), at_inf, value)
    value = where(a.eq(math.inf) & x.eq(math.inf), math.nan, where(a.eq(math.inf), at_zero, value))
    value = where(x.eq(0), at_zero, value)
    value = where(a.eq(0) & (x > 0), at_inf, where(a.eq(0), math.nan, value))
    return where((a < 0) | (x < 0), math.nan, value)


def _incomplete_gamma(upper: bool) -> Callable[[Value, Value], Value]:
    """P(a, x) (Q with `upper`) as PyTorch's calc_igamma / calc_igammac choose: Temme's
    expansion near the transition x = a for a > 20, Q's continued fraction for x > 1.1 and
    x > a, Q's small-x series where PyTorch takes it, P's series elsewhere, the other one
    as 1 minus it."""

    def formula(a: Value, x: Value) -> Value:
        power = _log_power(a, x).apply("exp")
        lower = power * _lower_series(a, x)
        fraction = a * power * _upper_fraction(a, x)
        temme_p, temme_q = _temme(a, x)
        temme = (a > TEMME_FROM) & ((x - a).apply("abs") < TEMME_RATIO * a)
        use_fraction = (x > 1.1) & (a < x)
        if upper:
            small_x = (x <= 1.1) & (a <= where(x <= 0.5, -0.4 / x.apply("log"), 1.1 * x))
            value = where(small_x, _upper_small_x(a, x), 1 - lower)
            value = where(temme, temme_q, where(use_fraction, fraction, value))
        else:
            value = where(temme, temme_p, where(use_fraction, 1 - fraction, lower))
        return _incomplete_edges(a, x, value, upper)

    return formula


def _incomplete_gamma_op(name: str, upper: bool) -> Callable[[Tensor, Tensor], Tensor]:
    """torch.NAME(input, other): two tensors (integers and bool promoted with a float one;
    two integer tensors are refused, as PyTorch's kernel is float only), broadcast."""
    kernel = _binary(name, _incomplete_gamma(upper), floats_only=True, wide=True)

    def fn(input: Tensor, other: Tensor) -> Tensor:
        return kernel(tensor_arg(input, name), tensor_arg(other, name, "other"))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = kernel.__doc__
    return fn


INCOMPLETE_GAMMA = {
    "igamma": _incomplete_gamma_op("igamma", upper=False),
    "igammac": _incomplete_gamma_op("igammac", upper=True),
}


def _polygamma(n: int) -> Callable[[Value], Value]:
    """The n-th derivative of digamma, n >= 1: (-1)^(n + 1) n! zeta(n + 1, x) (n! exact;
    PyTorch's exp(lgamma(n + 1))). For n = 1, PyTorch's trigamma: 0 at +inf, NaN at -inf."""
    scale = (1.0 if n % 2 else -1.0) * _factorial(n)

    def formula(x: Value) -> Value:
        value = _zeta(_const(x, float(n + 1)), x) * scale
        if n == 1:
            value = where(x.eq(math.inf), 0.0, where(x.eq(-math.inf), math.nan, value))
        return value

    return formula


# The largest n whose n! is finite in float64 (171! overflows): past it n! is inf without
# computing the exact integer (math.factorial(2**31) runs for minutes).
_LAST_FINITE_FACTORIAL = 170


def _factorial(n: int) -> float:
    return float(math.factorial(n)) if n <= _LAST_FINITE_FACTORIAL else math.inf


def polygamma(n: int, input: Tensor) -> Tensor:
    """torch.polygamma: the n-th derivative of digamma (digamma itself for n = 0), n a
    non-negative int; integers and bool give the default float dtype."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"polygamma(): argument 'n' must be int, not {type(n).__name__}")
    n = int(n)
    if n < 0:
        raise ValueError(f"polygamma(n, x) does not support negative n, got n = {n}")
    if n == 0:
        return UNARY["digamma"](input)
    return _unary(f"polygamma{n}", _polygamma(n), wide=True)(tensor_arg(input, "polygamma"))


def multigammaln(input: Tensor, p: int, *, op: str = "multigammaln") -> Tensor:
    """The multivariate log-gamma function of dimension p: sum_j lgamma(x - j / 2), j < p,
    plus p (p - 1) / 4 log(pi), as PyTorch composes it (x + arange, lgamma, a sum over the
    last dimension: kael's kernels); p >= 1, no bool input. As PyTorch (2.x) there is no
    domain check: x <= (p - 1) / 2 gives lgamma's values there (+inf at its poles)."""
    x = tensor_arg(input, op)
    if isinstance(p, bool) or not isinstance(p, numbers.Integral):
        raise TypeError(f"{op}(): argument 'p' must be int, not {type(p).__name__}")
    if x.dtype is bool_:
        raise TypeError(f"{op}(): the input tensor may not be a boolean tensor")
    if x.dtype.is_complex:  # PyTorch's arange of the shifts has no complex form
        raise TypeError(f"{op} does not support {x.dtype} tensors")
    if p < 1:
        raise ValueError(f"{op}(): p has to be greater than or equal to 1, got p = {p}")
    dtype = x.dtype if x.dtype.is_floating_point else get_default_dtype()
    shifts = factories.arange(0.5 - p * 0.5, 0.5, 0.5, dtype=dtype, device=x.device)
    terms = UNARY["lgamma"](ew.binary("add", shifts, x.to(dtype).unsqueeze(-1)))
    return ew.binary("add", reductions.sum(terms, -1), p * (p - 1) / 4 * LOG_PI)


UNARY = {
    "erfinv": _unary("erfinv", _erfinv, wide=True),
    "lgamma": _unary("lgamma", _lgamma, wide=True),
    "digamma": _unary("digamma", _digamma, wide=True),
    "i0": _unary("i0", _bessel(0, scaled=False), wide=True),
}
# torch.special's own functions (kael.special.NAME; kael/special.py adds the aliases).
SPECIAL: dict[str, Callable] = {
    "i0e": _unary("i0e", _bessel(0, scaled=True), wide=True),
    "i1": _unary("i1", _bessel(1, scaled=False), wide=True),
    "i1e": _unary("i1e", _bessel(1, scaled=True), wide=True),
    "ndtr": _unary("ndtr", _ndtr, wide=True),
    "log_ndtr": _unary("log_ndtr", _log_ndtr, wide=True),
    "ndtri": _unary("ndtri", _ndtri, wide=True),
    "erfcx": _unary("erfcx", _erfcx, wide=True),
    "entr": _unary("entr", _entr, wide=True),
    "xlog1py": _binary("xlog1py", _xlog1py, wide=True),
    "zeta": _binary("zeta", _zeta, wide=True),
    "multigammaln": multigammaln,
}


def _polygamma_method(self: Tensor, n: int) -> Tensor:
    """torch.Tensor.polygamma: polygamma(n, self)."""
    return polygamma(n, self)


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """torch.mvlgamma (and Tensor.mvlgamma): torch.special.multigammaln under its old name."""
    return multigammaln(input, p, op="mvlgamma")


FUNCTIONS: dict[str, Callable] = {
    **UNARY,
    **INCOMPLETE_GAMMA,
    "polygamma": polygamma,
    "mvlgamma": mvlgamma,
}
NOT_METHODS: frozenset[str] = frozenset({"polygamma"})  # the method takes n after self
METHODS: dict[str, Callable] = {
    **{
        f"{name}_": inplace_result(f"{name}_", fn)
        for name, fn in {**UNARY, "erfc": lambda x: ew.unary("erfc", x)}.items()
    },
    "polygamma": _polygamma_method,
    "polygamma_": inplace_result("polygamma_", _polygamma_method),
    "mvlgamma_": inplace_result("mvlgamma_", mvlgamma),
    **{f"{name}_": inplace_result(f"{name}_", fn) for name, fn in INCOMPLETE_GAMMA.items()},
}
