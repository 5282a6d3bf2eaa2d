"""torch.special's Bessel and Airy functions: bessel_j0, bessel_j1, bessel_y0, bessel_y1,
modified_bessel_i0, modified_bessel_i1, modified_bessel_k0, modified_bessel_k1,
scaled_modified_bessel_k0, scaled_modified_bessel_k1, spherical_bessel_j0 and airy_ai, each
one formula (frontend/formula.py) over kael's own math: PyTorch's algorithm (Cephes's rational
and Chebyshev approximations, the coefficients of ATen's Math.h), its branches selected by
`where`, so one kernel per call, fused under @kael.compile. As frontend/special_math.py's,
float32 computes in float64 and rounds once (PyTorch's float32 kernels run the same
algorithm in float32: theirs err more, most for the phases x - pi/4 of large x and the Airy
function's 2/3 (-x)^(3/2) + pi/4, where float32's rounding of the phase alone costs all digits
past |x| ~ 1e4); float64 is PyTorch's own algorithm, step for step.

Deliberate departures from PyTorch: float32 values are finite where only PyTorch's float32
intermediate overflows (modified_bessel_i0 and i1 between 88.7 and their own overflow near
91.9, as kael.i0); airy_ai's power series runs to float64's epsilon for float32 too.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from kael.frontend.formula import Value, where
from kael.frontend.math_functions import _signed, horner
from kael.frontend.special_arguments import run, unary_operand
from kael.frontend.special_math import _bessel, _chbevl, _polevl
from kael.frontend.tensor import Tensor
from kael.runtime.dtypes import float64

# ---- J and Y: Cephes's j0.c, j1.c (highest degree first) ----------------------------------------

# The Hankel expansion past 5: P(z) / Q(z) and R(z) / S(z) in z = 25 / x^2, shared by J_n and Y_n.
J0_PP = (7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e00,
         5.44725003058768775090e00, 8.74716500199817011941e00, 5.30324038235394892183e00,
         9.99999999999999997821e-01)  # fmt: skip
J0_PQ = (9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e00,
         5.47097740330417105182e00, 8.76190883237069594232e00, 5.30605288235394617618e00,
         1.00000000000000000218e00)  # fmt: skip
J0_QP = (-1.13663838898469149931e-02, -1.28252718670509318512e00, -1.95539544257735972385e01,
         -9.32060152123768231369e01, -1.77681167980488050595e02, -1.47077505154951170175e02,
         -5.14105326766599330220e01, -6.05014350600728481186e00)  # fmt: skip
J0_QQ = (6.43178256118178023184e01, 8.56430025976980587198e02, 3.88240183605401609683e03,
         7.24046774195652478189e03, 5.93072701187316984827e03, 2.06209331660327847417e03,
         2.42005740240291393179e02)  # fmt: skip
J1_PP = (7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e00,
         5.11207951146807644818e00, 8.42404590141772420927e00, 5.21451598682361504063e00,
         1.00000000000000000254e00)  # fmt: skip
J1_PQ = (5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e00,
         5.07386386128601488557e00, 8.39985554327604159757e00, 5.20982848682361821619e00,
         9.99999999999999997461e-01)  # fmt: skip
J1_QP = (5.10862594750176621635e-02, 4.98213872951233449420e00, 7.58238284132545283818e01,
         3.66779609360150777800e02, 7.10856304998926107277e02, 5.97489612400613639965e02,
         2.11688757100572135698e02, 2.52070205858023719784e01)  # fmt: skip
J1_QQ = (7.42373277035675149943e01, 1.05644886038262816351e03, 4.98641058337653607651e03,
         9.56231892404756170795e03, 7.99704160447350683650e03, 2.82619278517639096600e03,
         3.36093607810698293419e02)  # fmt: skip
# Up to 5: J0 = (x^2 - r1^2)(x^2 - r2^2) R(x^2), J1 = x (x^2 - r1^2)(x^2 - r2^2) R(x^2) over
# their first two roots r1, r2; Y0 = R(x^2) + 2/pi log(x) J0, Y1 = x R(x^2) + 2/pi (J1 log x - 1/x).
J0_RP = (-4.79443220978201773821e09, 1.95617491946556577543e12, -2.49248344360967716204e14,
         9.70862251047306323952e15)  # fmt: skip
J0_RQ = (4.99563147152651017219e02, 1.73785401676374683123e05, 4.84409658339962045305e07,
         1.11855537045356834862e10, 2.11277520115489217587e12, 3.10518229857422583814e14,
         3.18121955943204943306e16, 1.71086294081043136091e18)  # fmt: skip
J1_RP = (-8.99971225705559398224e08, 4.52228297998194034323e11, -7.27494245221818276015e13,
         3.68295732863852883286e15)  # fmt: skip
J1_RQ = (6.20836478118054335476e02, 2.56987256757748830383e05, 8.35146791431949253037e07,
         2.21511595479792499675e10, 4.74914122079991414898e12, 7.84369607876235854894e14,
         8.95222336184627338078e16, 5.32278620332680085395e18)  # fmt: skip
Y0_YP = (1.55924367855235737965e04, -1.46639295903971606143e07, 5.43526477051876500413e09,
         -9.82136065717911466409e11, 8.75906394395366999549e13, -3.46628303384729719441e15,
         4.42733268572569800351e16, -1.84950800436986690637e16)  # fmt: skip
Y0_YQ = (1.04128353664259848412e03, 6.26107330137134956842e05, 2.68919633393814121987e08,
         8.64002487103935000337e10, 2.02979612750105546709e13, 3.17157752842975028269e15,
         2.50596256172653059228e17)  # fmt: skip
Y1_YP = (1.26320474790178026440e09, -6.47355876379160291031e11, 1.14509511541823727583e14,
         -8.12770255501325109621e15, 2.02439475713594898196e17,
         -7.78877196265950026825e17)  # fmt: skip
Y1_YQ = (5.94301592346128195359e02, 2.35564092943068577943e05, 7.34811944459721705660e07,
         1.87601316108706159478e10, 3.88231277496238566008e12, 6.20557727146953693363e14,
         6.87141087355300489866e16, 3.97270608116560655612e18)  # fmt: skip
J0_SQUARED_ROOTS = (5.78318596294678452118e00, 3.04712623436620863991e01)
J1_SQUARED_ROOTS = (1.46819706421238932572e01, 4.92184563216946036703e01)
SQRT_2_PI = 0.797884560802865355879892119868763737  # sqrt(2 / pi)
TWO_PI = 0.636619772367581343075535053490057448  # 2 / pi
HANKEL = {
    0: (J0_PP, J0_PQ, J0_QP, J0_QQ, 0.785398163397448309615660845819875721),  # pi / 4
    1: (J1_PP, J1_PQ, J1_QP, J1_QQ, 2.356194490192344928846982537459627163),  # 3 pi / 4
}


def _rational(v: Value, num: tuple[float, ...], den: tuple[float, ...]) -> Value:
    return _polevl(v, num) / _polevl(v, den)


def _hankel(x: Value, order: int, second_kind: bool) -> Value:
    """J_order(x) (Y_order with second_kind) for x > 5: sqrt(2 / (pi x)) (P cos(x - phase) -
    5/x Q sin(x - phase)) (Y: P sin + 5/x Q cos), P and Q in 25 / x^2 (order 1 squares 5/x,
    as PyTorch)."""
    pp, pq, qp, qq, phase = HANKEL[order]
    z = 25 / (x * x) if order == 0 else 5 / x * (5 / x)
    p, q = _rational(z, pp, pq), 5 / x * _rational(z, qp, qq)
    angle = x - phase
    cos, sin = angle.apply("cos"), angle.apply("sin")
    value = p * sin + q * cos if second_kind else p * cos - q * sin
    return value * SQRT_2_PI / x.apply("sqrt")


def _j0_near(a: Value) -> Value:
    """J0 up to 5 (a >= 0): 1 - a^2 / 4 below 1e-5, else the roots' product times R."""
    s = a * a
    roots = (s - J0_SQUARED_ROOTS[0]) * (s - J0_SQUARED_ROOTS[1])
    return where(a < 1e-5, 1 - s / 4, roots * _polevl(s, J0_RP) / _polevl(s, J0_RQ))


def _j1_near(x: Value) -> Value:
    s = x * x
    return _rational(s, J1_RP, J1_RQ) * x * (s - J1_SQUARED_ROOTS[0]) * (s - J1_SQUARED_ROOTS[1])


def _j0(x: Value) -> Value:
    """J0, even: the Hankel expansion past 5 (NaN at +-inf, as PyTorch's cos(inf))."""
    a = x.apply("abs")
    return where(a <= 5, _j0_near(a), _hankel(a, 0, False))


def _j1(x: Value) -> Value:
    """J1, odd: J1(-x) = -J1(x), J1(-0.0) = -0.0."""
    a = x.apply("abs")
    return _signed(where(a <= 5, _j1_near(a), _hankel(a, 1, False)), x)


def _y_edges(x: Value, near: Value, far: Value) -> Value:
    """Y_n's branches as PyTorch's: -inf at +-0, NaN below 0 (and at -inf), the series up to
    5, the Hankel expansion beyond (NaN at +inf and NaN)."""
    value = where(x <= 5, near, far)
    return where(x.eq(0), -math.inf, where(x < 0, math.nan, value))


def _y0(x: Value) -> Value:
    near = _rational(x * x, Y0_YP, Y0_YQ) + TWO_PI * x.apply("log") * _j0(x)
    return _y_edges(x, near, _hankel(x, 0, True))


def _y1(x: Value) -> Value:
    near = x * _rational(x * x, Y1_YP, Y1_YQ) + TWO_PI * (_j1(x) * x.apply("log") - 1 / x)
    return _y_edges(x, near, _hankel(x, 1, True))


# ---- K: Cephes's k0.c, k1.c (Chebyshev series, highest first) -----------------------------------

K0_A = (1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11,
        1.90451637722020886025e-09, 2.53479107902614945675e-07, 2.28621210311945178607e-05,
        1.26461541144692592338e-03, 3.59799365153615016266e-02, 3.44289899924628486886e-01,
        -5.35327393233902768720e-01)  # fmt: skip
K0_B = (5.30043377268626276149e-18, -1.64758043015242134646e-17, 5.21039150503902756861e-17,
        -1.67823109680541210385e-16, 5.51205597852431940784e-16, -1.84859337734377901440e-15,
        6.34007647740507060557e-15, -2.22751332699166985548e-14, 8.03289077536357521100e-14,
        -2.98009692317273043925e-13, 1.14034058820847496303e-12, -4.51459788337394416547e-12,
        1.85594911495471785253e-11, -7.95748924447710747776e-11, 3.57739728140030116597e-10,
        -1.69753450938905987466e-09, 8.57403401741422608519e-09, -4.66048989768794782956e-08,
        2.76681363944501510342e-07, -1.83175552271911948767e-06, 1.39498137188764993662e-05,
        -1.28495495816278026384e-04, 1.56988388573005337491e-03, -3.14481013119645005427e-02,
        2.44030308206595545468e00)  # fmt: skip
K1_A = (-7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
        -1.41148839263352776110e-10, -2.21338763073472585583e-08, -2.43340614156596823496e-06,
        -1.73028895751305206302e-04, -6.97572385963986435018e-03, -1.22611180822657148235e-01,
        -3.53155960776544875667e-01, 1.52530022733894777053e00)  # fmt: skip
K1_B = (-5.75674448366501715755e-18, 1.79405087314755922667e-17, -5.68946255844285935196e-17,
        1.83809354436663880070e-16, -6.05704724837331885336e-16, 2.03870316562433424052e-15,
        -7.01983709041831346144e-15, 2.47715442448130437068e-14, -8.97670518232499435011e-14,
        3.34841966607842919884e-13, -1.28917396095102890680e-12, 5.13963967348173025100e-12,
        -2.12996783842756842877e-11, 9.21831518760500529508e-11, -4.19035475934189648750e-10,
        2.01504975519703286596e-09, -1.03457624656780970260e-08, 5.74108412545004946722e-08,
        -3.50196060308781257119e-07, 2.40648494783721712015e-06, -1.93619797416608296024e-05,
        1.95215518471351631108e-04, -2.85781685962277938680e-03, 1.03923736576817238437e-01,
        2.72062619048444266945e00)  # fmt: skip


def _k_near(order: int) -> Callable[[Value], Value]:
    """K_order(x) for 0 < x <= 2: the series in x^2 - 2 and log(x / 2) I_order(x)."""
    i = _bessel(order, scaled=False)

    def near(x: Value) -> Value:
        if order == 0:
            return _chbevl(x * x - 2, K0_A) - (0.5 * x).apply("log") * i(x)
        return (0.5 * x).apply("log") * i(x) + _chbevl(x * x - 2, K1_A) / x

    return near


def _modified_k(order: int, scaled: bool) -> Callable[[Value], Value]:
    """K_order(x) (exp(x) K_order(x) when scaled) as PyTorch's: +inf at +-0, NaN below 0,
    the series up to 2, exp(-x) (scaled: 1) times the series in 8 / x - 2 over sqrt(x)
    beyond (0 at +inf)."""
    near_of = _k_near(order)
    far_coefs = K0_B if order == 0 else K1_B

    def formula(x: Value) -> Value:
        near, far = near_of(x), _chbevl(8 / x - 2, far_coefs)
        if scaled:
            value = where(x <= 2, near * x.apply("exp"), far / x.apply("sqrt"))
        else:
            value = where(x <= 2, near, (-x).apply("exp") * far / x.apply("sqrt"))
        return where(x.eq(0), math.inf, where(x < 0, math.nan, value))

    return formula


# ---- spherical j0 and Airy's Ai ---------------------------------------------------------------

# sin(x) / x below 1/2: its Taylor series in x^2, lowest degree first.
SINC_SERIES = (1.0, -1 / 6, 1 / 120, -1 / 5040, 1 / 362880, -1 / 39916800, 1 / 6227020800)


def _spherical_j0(x: Value) -> Value:
    """sin(x) / x: the series below 1/2, 0 at +-inf."""
    value = where(x.apply("abs") < 0.5, horner(x * x, SINC_SERIES), x.apply("sin") / x)
    return where(x.apply("abs").eq(math.inf), 0.0, value)


# Cephes's airy.c: Ai's asymptotic rationals, for x >= 2.09 in 1 / zeta (AN / AD) and for
# x < -2.09 in z^2, z = 1 / zeta (AFN / AFD, AGN / AGD), zeta = 2/3 |x|^(3/2).
AIRY_AN = (3.46538101525629032477e-01, 1.20075952739645805542e01, 7.62796053615234516538e01,
           1.68089224934630576269e02, 1.59756391350164413639e02, 7.05360906840444183113e01,
           1.40264691163389668864e01, 9.99999999999999995305e-01)  # fmt: skip
AIRY_AD = (5.67594532638770212846e-01, 1.47562562584847203173e01, 8.45138970141474626562e01,
           1.77318088145400459522e02, 1.64234692871529701831e02, 7.14778400825575695274e01,
           1.40959135607834029598e01, 1.00000000000000000470e00)  # fmt: skip
AIRY_AFN = (-1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01,
            -2.79779981545119124951e-01, -4.91900132609500318020e-02, -4.06265923594885404393e-03,
            -1.59276496239262096340e-04, -2.77649108155232920844e-06,
            -1.67787698489114633780e-08)  # fmt: skip
AIRY_AFD = (1.33560420706553243746e01, 3.26825032795224613948e01, 2.67367040941499554804e01,
            9.18707402907259625840e00, 1.47529146771666414581e00, 1.15687173795188044134e-01,
            4.40291641615211203805e-03, 7.54720348287414296618e-05,
            4.51850092970580378464e-07)  # fmt: skip
AIRY_AGN = (1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e00,
            9.39169229816650230044e-01, 3.51465656105547619242e-01, 6.33888919628925490927e-02,
            5.85804113048388458567e-03, 2.82851600836737019778e-04, 6.98793669997260967291e-06,
            8.11789239554389293311e-08, 3.41551784765923618484e-10)  # fmt: skip
AIRY_AGD = (9.30892908077441974853e00, 1.98352928718312140417e01, 1.55646628932864612953e01,
            5.47686069422975497931e00, 9.54293611618961883998e-01, 8.64580826352392193095e-02,
            4.12656523824222607191e-03, 1.01259085116509135510e-04, 1.17166733214413521882e-06,
            4.91834570062930015649e-09)  # fmt: skip
AIRY_C1, AIRY_C2 = 0.355028053887817239260, 0.258819403792806798405  # Ai(0), -Ai'(0)
INV_SQRT_PI = 5.64189583547756286948e-01
AIRY_NEAR = 2.09  # the power series on (-2.09, 2.09)
AIRY_ZERO = 103.892  # Ai is 0 past it
# PyTorch's series stops once a term is below epsilon of f; on (-2.09, 2.09) that takes at
# most 18 steps in float64 (next to f's zero near -1.986), so 24 with the stop as a mask.
AIRY_TERMS = 24
EPSILON = 2.220446049250313e-16


def _airy_series(x: Value) -> Value:
    """Ai(x) = c1 f(x) - c2 g(x), f and g the power series in x^3 summed as PyTorch's loop,
    each step taken while the last term of f was above epsilon of f."""
    f, g, k, m, n, t = 1 + x * 0, x, 1.0, 1 + x * 0, x, 1 + x * 0
    z = x * x * x
    for _ in range(AIRY_TERMS):
        going = t > EPSILON
        m2 = m * z / (k + 1) / (k + 2)
        n2 = n * z / (k + 2) / (k + 3)
        f2, g2 = f + m2, g + n2
        m, n, f, g = (where(going, a, b) for a, b in ((m2, m), (n2, n), (f2, f), (g2, g)))
        t = where(going, (m / f).apply("abs"), t)
        k += 3
    return AIRY_C1 * f - AIRY_C2 * g


def _airy_far_left(x: Value) -> Value:
    """Ai(x), x < -2.09: (sin(t) (1 + z^2 F(z^2)) - cos(t) z G(z^2)) / (sqrt(pi) (-x)^(1/4)),
    t = zeta + pi / 4, z = 1 / zeta."""
    zeta = -2.0 * x * (-x).apply("sqrt") / 3.0
    z = 1.0 / zeta
    z2 = z * z
    f = z2 * _polevl(z2, AIRY_AFN) / _polevl(z2, AIRY_AFD)
    g = z * _polevl(z2, AIRY_AGN) / _polevl(z2, AIRY_AGD)
    t = zeta + 0.25 * math.pi
    wave = t.apply("sin") * (1.0 + f) - t.apply("cos") * g
    return INV_SQRT_PI / (-x).apply("sqrt").apply("sqrt") * wave


def _airy_far_right(x: Value) -> Value:
    """Ai(x), x >= 2.09: A(1 / zeta) / (2 sqrt(pi) x^(1/4) exp(zeta))."""
    zeta = 2.0 * x * x.apply("sqrt") / 3.0
    a = _polevl(1.0 / zeta, AIRY_AN) / _polevl(1.0 / zeta, AIRY_AD)
    return INV_SQRT_PI * a / (2.0 * x.apply("sqrt").apply("sqrt") * zeta.apply("exp"))


def _airy_ai(x: Value) -> Value:
    """Airy's Ai, PyTorch's branches: NaN at +-inf, 0 past 103.892, the asymptotic forms
    beyond +-2.09, the power series between."""
    near = _airy_series(where(x.apply("abs") <= AIRY_NEAR, x, 0.0))
    value = where(x < -AIRY_NEAR, _airy_far_left(x), where(x < AIRY_NEAR, near, _airy_far_right(x)))
    value = where(x > AIRY_ZERO, 0.0, value)
    return where(x.apply("abs").eq(math.inf), math.nan, value)


# name: (formula, PyTorch's name of the argument)
FORMULAS: dict[str, tuple[Callable[[Value], Value], str]] = {
    "bessel_j0": (_j0, "input"),
    "bessel_j1": (_j1, "input"),
    "bessel_y0": (_y0, "input"),
    "bessel_y1": (_y1, "input"),
    "modified_bessel_i0": (_bessel(0, scaled=False), "input"),
    "modified_bessel_i1": (_bessel(1, scaled=False), "input"),
    "modified_bessel_k0": (_modified_k(0, scaled=False), "input"),
    "modified_bessel_k1": (_modified_k(1, scaled=False), "input"),
    "scaled_modified_bessel_k0": (_modified_k(0, scaled=True), "x"),
    "scaled_modified_bessel_k1": (_modified_k(1, scaled=True), "x"),
    "spherical_bessel_j0": (_spherical_j0, "x"),
    "airy_ai": (_airy_ai, "x"),
}


def _function(name: str, formula: Callable[[Value], Value], arg: str) -> Callable:
    """torch.special.NAME(arg, *, out=None): the formula in float64, rounded once."""

    def call(value, out: Tensor | None) -> Tensor:
        x, result = unary_operand(value, name, arg)
        return run(name, [x], result, float64, formula, out)

    def fn_input(input: Tensor, *, out: Tensor | None = None) -> Tensor:
        return call(input, out)

    def fn_x(x: Tensor, *, out: Tensor | None = None) -> Tensor:
        return call(x, out)

    fn = fn_x if arg == "x" else fn_input
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.special.{name}, elementwise: one kernel (float64 inside)."
    return fn


BESSEL: dict[str, Callable] = {
    name: _function(name, formula, arg) for name, (formula, arg) in FORMULAS.items()
}
