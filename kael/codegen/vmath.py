"""kael's vector math: transcendental functions as range reduction plus polynomials.

Emitted lane-generically through the ExprEmitter, so CPU loops stay vectorized (no
libm calls) and the GPU needs no libdevice; only intrinsics that every backend lowers
(fma, floor, rint, fabs, sqrt, copysign, bit casts) are used.
"""

from __future__ import annotations

from kael.codegen import arith

UNARY: dict = {}
BINARY: dict = {"pow": arith.INT_POW}
