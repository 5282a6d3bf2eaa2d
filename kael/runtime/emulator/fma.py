"""Fused multiply-add rounded once, as PTX's fma.rn does, for NumPy arrays without an fma.

float32: a * b is exact in float64, and its sum with c rounded to odd in float64 then to
nearest in float32 is the correctly rounded result (53 >= 24 + 2 bits). float64: Boldo
and Melquiond's emulation (IEEE Trans. Computers, 2008): the exact product as two
doubles, a TwoSum with c, the low parts added rounded to odd, one rounded addition.
Lanes where a step could overflow or underflow are computed exactly with fractions.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's splitter for 53-bit significands


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a):
    c = _SPLIT * a
    hi = c - (c - a)
    return hi, a - hi


def _round_to_odd(s, e):
    """s + e (s the rounded sum, e its exact error) rounded to odd: of the two floats
    around the exact value, the one whose last significand bit is 1."""
    bits = s.view(np.uint64 if s.dtype == np.float64 else np.uint32)
    even = (bits & 1) == 0
    step = np.nextafter(s, np.where(e > 0, np.inf, -np.inf).astype(s.dtype))
    return np.where((e != 0) & even & np.isfinite(s), step, s)


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    dtype = np.result_type(a, b, c)
    with np.errstate(all="ignore"):
        if dtype == np.float32:
            a64, b64, c64 = (np.asarray(x, np.float64) for x in (a, b, c))
            s, e = _two_sum(a64 * b64, c64)
            ok = np.isfinite(s) & np.isfinite(e)
            return np.where(ok, _round_to_odd(s, e), a64 * b64 + c64).astype(np.float32)
        if dtype == np.float16:
            return (np.asarray(a, np.float64) * b + c).astype(np.float16)  # exact, then once
        a, b, c = np.broadcast_arrays(*(np.asarray(x, np.float64) for x in (a, b, c)))
        uh = a * b
        ah, al = _split(a)
        bh, bl = _split(b)
        ul = ((ah * bh - uh) + ah * bl + al * bh) + al * bl
        th, tl = _two_sum(c, uh)
        v = _round_to_odd(*_two_sum(tl, ul))
        out = np.where(v == 0, th, th + v)  # an exact th keeps its sign: fma(-0, 5, -0) = -0
        finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
        mag = np.abs(uh)
        safe = (
            finite
            & (np.abs(a) < 2.0**995)
            & (np.abs(b) < 2.0**995)
            & (np.abs(c) < 2.0**1000)
            & ((a == 0) | (b == 0) | ((mag > 2.0**-900) & (mag < 2.0**1000)))
            & ((out == 0) | (np.abs(out) > 2.0**-900))
        )
        out = np.where(finite, out, a * b + c)
        # a finite product, however large, plus an infinite c is c (a * b may overflow)
        out = np.where(np.isfinite(a) & np.isfinite(b) & np.isinf(c), c, out)
        for k in np.nonzero(finite & ~safe)[0]:
            out.flat[k] = _exact(a.flat[k], b.flat[k], c.flat[k])
        return out


def _exact(a: float, b: float, c: float) -> float:
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        return float(a) * float(b) + float(c)  # the sign of an exact zero, as IEEE gives it
    try:
        return float(exact)
    except OverflowError:
        return float("inf") if exact > 0 else float("-inf")
