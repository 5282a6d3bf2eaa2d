"""Every op's emitter, by name: arithmetic and logic from arith.py, math from vmath.py."""

from kael.codegen import arith, philox, vmath

UNARY_EMITTERS = {**arith.UNARY, **vmath.UNARY}
BINARY_EMITTERS = {**arith.BINARY, **vmath.BINARY, **philox.BINARY}

# Ops emitted as long instruction sequences (vector math, Philox): a body using one is
# compute-bound, and each copy of it costs real compile time.
LONG_OPS = frozenset(vmath.UNARY) | frozenset(vmath.BINARY) | frozenset(philox.BINARY)
