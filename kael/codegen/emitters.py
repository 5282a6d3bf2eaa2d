"""Every op's emitter, by name: arithmetic and logic from arith.py, math from vmath.py."""

from kael.codegen import arith, philox, vmath

UNARY_EMITTERS = {**arith.UNARY, **vmath.UNARY}
BINARY_EMITTERS = {**arith.BINARY, **vmath.BINARY, **philox.BINARY}
