"""Fits the polynomial coefficients of kael/codegen/vmath.py (not a benchmark; run offline).

Run: python benchmarks/fit_vmath.py [NAME ...]
Each fit is a weighted minimax polynomial found by Lawson's algorithm (iteratively
reweighted least squares in a Chebyshev basis) against an mpmath reference at 40
digits, then rounded to the target precision; it prints the coefficients as pasted
into vmath.py (lowest degree first) and the worst weighted error in units of that
precision's epsilon (2**-24 or 2**-53), measured at 4x as many points.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import mpmath as mp
import numpy as np

from kael.codegen import vmath

mp.mp.dps = 40
EPS = {"f32": 2.0**-24, "f64": 2.0**-53}
PI4 = float(mp.pi / 4)
SMAX = float((mp.sqrt(2) - 1) / (mp.sqrt(2) + 1))  # |s| bound of log's s = f / (2 + f)


@dataclass
class Fit:
    """Fit p(v) ~ target(v) on [lo, hi], minimizing max |weight(v) * (p(v) - target(v))|."""

    target: Callable
    weight: Callable
    lo: float
    hi: float
    degree: dict[str, int]
    center: float = 0.0  # the polynomial is in (v - center)
    zeros: int = 0  # the lowest coefficients held at 0 (an odd function's row at 0)


def _atanh_tail(z):
    s = mp.sqrt(z)
    return (2 * mp.atanh(s) / s - 2) / z if z else mp.mpf(2) / 3


def _pow_tail(z):
    """(2 atanh(s) - 2s - (2/3) s^3) / s^5: pow's log carries 2/3 exactly, in two parts."""
    return (_atanh_tail(z) - mp.mpf(2) / 3) / z if z else mp.mpf(2) / 5


def _erfc_far(v):
    """K(v) with erfc(a) = exp(-a^2) (1 + v K(v)) / (a sqrt(pi)), v = 1/a^2 (gelu's far tail)."""
    if not v:
        return -mp.mpf(1) / 2
    a = 1 / mp.sqrt(v)
    return (mp.sqrt(mp.pi) * a * mp.exp(a * a) * mp.erfc(a) - 1) / v


def _erfinv_of_w(w):
    """erfinv(y) / y at y = sqrt(1 - exp(-w))."""
    if not w:
        return mp.sqrt(mp.pi) / 2
    y = mp.sqrt(-mp.expm1(-w))
    return mp.erfinv(y) / y


DIGAMMA_ROOT = mp.findroot(mp.digamma, mp.mpf("1.4616321449683623"))


def _erfc_relative(hi: float, degree: dict[str, int], center: float) -> Fit:
    """G(a) = exp(a^2) erfc(a) on [0.921875, hi], relative error."""

    def scaled(a):
        return mp.erfc(a) * mp.exp(a * a)

    return Fit(scaled, lambda a: 1 / scaled(a), 0.921875, hi, degree, center=center)


def _erfc_far_fit(hi: float, degree: dict[str, int]) -> Fit:
    """K(v) on [0, hi], relative to 1 + v K(v) (erfc's far tail)."""
    return Fit(_erfc_far, lambda v: v / (1 + v * _erfc_far(v)), 0.0, hi, degree)


def _unit_fit(target: Callable, k: int, degree: int = 7, zeros: int = 0) -> Fit:
    """target on a = k + t, |t| <= 1/2 (a >= 0), relative error."""
    lo, hi = max(0.0, k - 0.5001), k + 0.5001

    def weight(a):
        value = target(a)
        return 1 / value if value else mp.mpf(0)  # an odd function's 0 is its row's exact 0

    return Fit(target, weight, lo, hi, {"f32": degree}, k, zeros)


def _gelu_row_fit(k: int) -> Fit:
    """gelu's Q(a) = Phi(-a) on row k of vmath's rows (a little past both edges: s's
    rounding may pick a neighbour row), relative error, in a - the row's center."""
    lo, hi = vmath.gelu_row_a(k - 0.5), vmath.gelu_row_a(k + 0.5)

    def target(a):
        return mp.erfc(a / mp.sqrt(2)) / 2

    margin = 1e-5 * hi
    center = vmath.GELU_ROW_CENTERS32[k]
    return Fit(
        target, lambda a: 1 / target(a), max(lo - margin, 0.0), hi + margin, {"f32": 7}, center
    )


def _series_safe(f, at0):
    return lambda v: f(v) if v else at0


FITS = {
    # expm1(r) = r + r^2 P(r), |r| <= ln2/2 (plus the shifter's rounding slack).
    "expm1": Fit(
        _series_safe(lambda r: (mp.expm1(r) - r) / r**2, mp.mpf(1) / 2),
        lambda r: r**2 / mp.expm1(r) if r else mp.mpf(0),
        -0.3467,
        0.3467,
        {"f32": 4, "f64": 10},
    ),
    # 2**f = 1 + f Q(f), |f| <= 1/2 (f = y - rint(y) exactly), relative to 2**f.
    "exp2": Fit(
        _series_safe(lambda f: (mp.power(2, f) - 1) / f, mp.log(2)),
        lambda f: f / mp.power(2, f),
        -0.5,
        0.5,
        {"f32": 5, "f64": 10},
    ),
    # log(1 + f) = f - (f^2/2 - s (f^2/2 + z R(z))), s = f / (2 + f), z = s^2.
    "log": Fit(_atanh_tail, lambda z: z / 2, 0.0, SMAX**2, {"f32": 2, "f64": 6}),
    # pow's log(1 + f) = 2s + (2/3) s^3 + s^5 P(z), relative to log(1 + f) ~ 2s.
    "pow": Fit(_pow_tail, lambda z: z * z / 2, 0.0, SMAX**2, {"f64": 6}),
    # log1p(t) = t + t^2 H(t) on [0, 1] (softplus's t = exp(-|x|)), relative to log1p(t).
    "log1p_unit": Fit(
        _series_safe(lambda t: (mp.log1p(t) - t) / t**2, -mp.mpf(1) / 2),
        lambda t: t**2 / mp.log1p(t) if t else mp.mpf(0),
        0.0,
        1.0,
        {"f32": 8},
    ),
    # sin(r) = r + r z S(z), z = r^2, |r| <= pi/4 (and a little: the reduction's rounding).
    "sin": Fit(
        _series_safe(lambda z: (mp.sin(mp.sqrt(z)) / mp.sqrt(z) - 1) / z, -mp.mpf(1) / 6),
        lambda z: z,
        0.0,
        (PI4 * 1.001) ** 2,
        {"f32": 2, "f64": 5},
    ),
    # cos(r) = 1 - z/2 + z^2 C(z).
    "cos": Fit(
        _series_safe(lambda z: (mp.cos(mp.sqrt(z)) - 1 + z / 2) / z**2, mp.mpf(1) / 24),
        lambda z: z**2 / mp.cos(mp.sqrt(z)),
        0.0,
        (PI4 * 1.001) ** 2,
        {"f32": 2, "f64": 5},
    ),
    # tanh(x) = x + x z T(z), |x| < 0.625 (f32) / 0.4 (f64).
    "tanh": Fit(
        _series_safe(lambda z: (mp.tanh(mp.sqrt(z)) / mp.sqrt(z) - 1) / z, -mp.mpf(1) / 3),
        lambda z: z,
        0.0,
        0.625**2,
        {"f32": 4},
    ),
    "tanh64": Fit(
        _series_safe(lambda z: (mp.tanh(mp.sqrt(z)) / mp.sqrt(z) - 1) / z, -mp.mpf(1) / 3),
        lambda z: z,
        0.0,
        0.4**2,
        {"f64": 9},
    ),
    # atan(v) = v + v z A(z), |v| <= tan(pi/8) after atan's reductions (math_functions.py).
    "atan": Fit(
        _series_safe(lambda z: (mp.atan(mp.sqrt(z)) / mp.sqrt(z) - 1) / z, -mp.mpf(1) / 3),
        lambda z: z,
        0.0,
        float(mp.tan(mp.pi / 8) * 1.0001) ** 2,
        {"f64": 10},
    ),
    # erf(x) = x + x E(z), |x| < 0.921875.
    "erf": Fit(
        _series_safe(lambda z: mp.erf(mp.sqrt(z)) / mp.sqrt(z) - 1, 2 / mp.sqrt(mp.pi) - 1),
        lambda z: mp.sqrt(z) / mp.erf(mp.sqrt(z)) if z else mp.mpf(1),
        0.0,
        0.921875**2,
        {"f32": 6, "f64": 11},
    ),
    # erfc(a) = exp(-a^2) G(a) for 0.921875 <= a <= 4 (f32) / 6 (f64). float32: relative
    # error in G (so gelu's erfc tail is accurate too); float64: absolute error in erf.
    "erfc": _erfc_relative(4.0, {"f32": 12}, 2.4609375),
    "erfc64": Fit(
        lambda a: mp.erfc(a) * mp.exp(a * a),
        lambda a: mp.exp(-a * a) / mp.erf(a),
        0.921875,
        6.0,
        {"f64": 23},
        center=3.4609375,
    ),
    # kael.erfc in float64, relative error: exp(-a^2) M(a) for 0.921875 <= a <= 2.75, then
    # exp(-a^2) (1 + v K(v)) / (a sqrt(pi)) with v = 1/a^2 <= 1/2.75^2.
    "erfc_mid64": _erfc_relative(2.75, {"f64": 20}, 1.8),
    "erfc_tail64": _erfc_far_fit(1 / 2.75**2, {"f64": 22}),
    # erfc past erf_big (a > 4 / 6, v <= 1/16 / 1/36), relative to 1 + v K(v).
    "erfc_far": _erfc_far_fit(1 / 16, {"f32": 4}),
    "erfc_far64": _erfc_far_fit(1 / 36, {"f64": 9}),
    # erfinv(y) = y C(w), w = -log((1 - y)(1 + y)) <= 6.25: Halley's start (special_math.py).
    "erfinv_center": Fit(_erfinv_of_w, lambda w: 1, 0.0, 6.25, {"f64": 12}, center=3.125),
    # erfinv(y) = T(s), s = sqrt(w) from 2.5 to float64's last y below 1 (s ~ 6.004).
    "erfinv_tail": Fit(
        lambda s: mp.erfinv(mp.sqrt(-mp.expm1(-s * s))),
        lambda s: 1 / mp.erfinv(mp.sqrt(-mp.expm1(-s * s))),
        2.5,
        6.05,
        {"f64": 12},
        center=4.275,
    ),
    # lgamma(2 + t) = t L(t), |t| <= 1/2, relative error.
    "lgamma": Fit(
        _series_safe(lambda t: mp.loggamma(2 + t) / t, 1 - mp.euler),
        _series_safe(lambda t: t / mp.loggamma(2 + t), 1 / (1 - mp.euler)),
        -0.5,
        0.5,
        {"f64": 17},
    ),
    # digamma(x) = (x - x0) D(x - 3/2) on [1, 2], x0 its root: relative error.
    "digamma": Fit(
        lambda x: mp.digamma(x) / (x - DIGAMMA_ROOT),
        lambda x: (x - DIGAMMA_ROOT) / mp.digamma(x),
        1.0,
        2.0,
        {"f64": 22},
        center=1.5,
    ),
}


# Piecewise tables: one polynomial per interval, printed as a tuple of coefficient rows.
TABLES = {
    # Each on a = k + t (|t| <= 1/2 and the index's rounding slack, a >= 0), k = 0..15: one
    # degree-7 polynomial in t per unit of |x|, 16 rows for AVX-512's one-register vpermps.
    # the logistic's sigmoid(-a): vmath.LOGISTIC_TABLE32.
    "logistic_table": [_unit_fit(lambda a: 1 / (1 + mp.exp(a)), k) for k in range(16)],
    # softplus's log1p(exp(-a)): vmath.SOFTPLUS_TABLE32.
    "softplus_table": [_unit_fit(lambda a: mp.log1p(mp.exp(-a)), k) for k in range(16)],
    # tanh(a) (degree 8: tanh's poles at +-i pi/2 slow the fit near 1), its row at 0 without a
    # constant (tanh is odd): vmath.TANH_TABLE32.
    "tanh_table": [_unit_fit(mp.tanh, k, 8, int(k == 0)) for k in range(16)],
    # tanhshrink's a - tanh(a), its row at 0 from t^3 on (no cancellation near 0); degree 9
    # (degree 8 leaves 3.6 eps in row 0, 1.75 in row 1): vmath.TANHSHRINK_TABLE32.
    "tanhshrink_table": [
        _unit_fit(lambda a: a - mp.tanh(a), k, 9, 3 * (k == 0)) for k in range(16)
    ],
    # mish's tanh(softplus(x)) of a = |x|: rows 0..15 for x <= 0 (tanh(log1p(exp(-a)))),
    # 16..31 for x > 0 (tanh(log1p(exp(a)))), one vpermi2ps a coefficient: vmath.MISH_TABLE32.
    "mish_table": [
        _unit_fit(lambda a, s=s: mp.tanh(mp.log1p(mp.exp(s * a))), k)
        for s in (-1, 1)
        for k in range(16)
    ],
    # gelu's Q(a) = Phi(-a) itself on rows of about equal difficulty (vmath.gelu_row_a), each
    # a polynomial in a - its row's center: vmath.GELU_ROWS32. Degree 7 holds 0.95 eps with
    # float32 coefficients (0.66 before rounding them); quarter units, up to a = 7.75, held
    # 1.8 in their last row.
    "gelu_rows": [_gelu_row_fit(k) for k in range(32)],
}


def lawson(
    fit: Fit,
    degree: int,
    points: int = 1500,
    iterations: int = 150,
    fixed: Sequence[float] = (),
) -> np.ndarray:
    """Monomial coefficients (lowest first) of the weighted minimax fit, the lowest ones
    held at `fixed` (the others fitted around their rounding).

    Residuals are computed in long double from 40-digit targets and the float64 least
    squares solves only for corrections, so the fit is not limited by float64 targets.
    """
    t = np.cos(np.pi * (np.arange(points) + 0.5) / points)
    v = fit.lo + (t + 1) * (fit.hi - fit.lo) / 2
    h = max(abs(fit.lo - fit.center), abs(fit.hi - fit.center))
    u = (np.array([np.longdouble(float(x)) for x in v]) - fit.center) / np.longdouble(h)
    g = np.array([np.longdouble(mp.nstr(fit.target(mp.mpf(x)), 30)) for x in v])
    w = np.array([float(fit.weight(mp.mpf(x))) for x in v])
    vander = np.vander(u.astype(np.float64), degree + 1, increasing=True)
    vander_ld = np.vander(u, degree + 1, increasing=True)
    coef = np.zeros(degree + 1, np.longdouble)
    held = len(fixed)
    for k, c in enumerate(fixed):
        coef[k] = np.longdouble(c) * np.longdouble(h) ** k
    lam = np.full(points, 1.0 / points)
    for _ in range(iterations):
        sw = np.sqrt(lam) * w
        for _ in range(3):  # iterative refinement of the weighted least squares solution
            res = (g - vander_ld @ coef).astype(np.float64)
            free = vander[:, held:] * sw[:, None]
            delta, *_ = np.linalg.lstsq(free, res * sw, rcond=None)
            coef[held:] += delta.astype(np.longdouble)
        err = np.abs(w * (g - vander_ld @ coef).astype(np.float64))
        lam = lam * np.maximum(err, 1e-300)
        lam /= lam.sum()
    return np.array([float(c / np.longdouble(h) ** k) for k, c in enumerate(coef)])


def measured_error(fit: Fit, coefs: list[float], points: int = 6000) -> float:
    """max weighted |p - target| over a 4x denser grid, evaluated exactly in mpmath."""
    worst = mp.mpf(0)
    for x in np.linspace(fit.lo, fit.hi, points):
        v = mp.mpf(x)
        p = mp.mpf(0)
        for c in reversed(coefs):
            p = p * (v - fit.center) + mp.mpf(c)
        worst = max(worst, abs(fit.weight(v) * (p - fit.target(v))))
    return float(worst)


def fitted(fit: Fit, prec: str, degree: int) -> tuple[list[float], float]:
    """(coefficients rounded to the precision, max weighted error in its epsilons). float32
    coefficients are rounded one at a time, lowest first, each refit around the ones
    rounded before it (rounding them all at once loses up to an eps more)."""
    if prec != "f32":
        rounded = [float(c) for c in lawson(fit, degree)]
    else:
        rounded = [0.0] * fit.zeros
        for k in range(fit.zeros, degree + 1):
            rounded.append(float(np.float32(lawson(fit, degree, fixed=rounded)[k])))
    return rounded, measured_error(fit, rounded) / EPS[prec]


def main(names: list[str]) -> None:
    for name in names or [*FITS, *TABLES]:
        for fit in TABLES[name] if name in TABLES else [FITS[name]]:
            for prec, degree in fit.degree.items():
                coefs, err = fitted(fit, prec, degree)
                print(f"{name} [{fit.lo}, {fit.hi}] {prec} degree {degree}: error {err:.3g} eps")
                print("    (" + ", ".join(repr(c) for c in coefs) + "),")


if __name__ == "__main__":
    main(sys.argv[1:])
