"""The op tables of the IR: every unary and binary op name, declared once, with its result kind.

Codegen maps each name to an emitter (kael/codegen/arith.py, kael/codegen/vmath.py);
the frontend maps each to a public function (kael/frontend/elementwise.py). A name
missing from a backend's table fails loudly in tests/codegen.
"""

# Result kinds: "same" keeps the operand dtype, "bool" gives bool (comparisons, predicates).
# Math ops ("float") are only ever built on float32 or float64 operands.
UNARY_OPS: dict[str, str] = {
    "neg": "same",
    "abs": "same",
    "sign": "same",
    "relu": "same",
    "floor": "same",
    "ceil": "same",
    "round": "same",
    "trunc": "same",
    "square": "same",
    "not": "bool",
    "isnan": "bool",
    "isinf": "bool",
    "isfinite": "bool",
    "bitnot": "same",
    "flag": "bool",
    "reciprocal": "float",
    "sqrt": "float",
    "rsqrt": "float",
    "exp": "float",
    "exp2": "float",
    "expm1": "float",
    "log": "float",
    "log2": "float",
    "log1p": "float",
    "sin": "float",
    "cos": "float",
    "cos_bounded": "float",  # internal: cos for |x| < 2**40 only (randn's angle)
    "tan": "float",
    "tanh": "float",
    "sigmoid": "float",
    "silu": "float",
    "erf": "float",
    "erfc": "float",
    "gelu": "float",
    "gelu_tanh": "float",
    "softplus": "float",  # log(1 + e^x): softplus (beta 1), logsigmoid and mish's kernels
    "tanhshrink": "float",  # x - tanh(x), without the cancellation near 0 where tables run
    "mish": "float",  # x tanh(softplus(x)), float32's from a table where tables run
}

BINARY_OPS: dict[str, str] = {
    "add": "same",
    "sub": "same",
    "mul": "same",
    "div": "float",
    "floordiv": "same",
    "rem": "same",
    "pow": "same",
    "max": "same",
    "min": "same",
    "eq": "bool",
    "ne": "bool",
    "lt": "bool",
    "le": "bool",
    "gt": "bool",
    "ge": "bool",
    "and": "bool",
    "or": "bool",
    "xor": "bool",
    "bitand": "same",
    "bitor": "same",
    "bitxor": "same",
    "fmod": "same",  # C's fmod: the remainder takes the dividend's sign
    "truncdiv": "same",  # the quotient rounded toward zero
    "copysign": "float",
    "shl": "same",  # integers only, as the bitwise ops
    "shr": "same",
}

# Transcendental ops: kael's own vector math (kael/codegen/vmath.py), float operands only.
VMATH_OPS = frozenset(
    (
        "exp",
        "exp2",
        "expm1",
        "log",
        "log2",
        "log1p",
        "sin",
        "cos",
        "cos_bounded",
        "tan",
        "tanh",
        "sigmoid",
        "erf",
        "erfc",
        "pow",
    )
)

# Faults a kernel can report through its error word, by code: (op, message).
FAULTS: dict[int, tuple[str, str]] = {
    1: ("floor_divide", "ZeroDivisionError: a divisor is 0 (integer division by zero)"),
    2: ("remainder", "ZeroDivisionError: a divisor is 0 (integer division by zero)"),
    3: ("fmod", "ZeroDivisionError: a divisor is 0 (integer division by zero)"),
    4: ("div", "ZeroDivisionError: a divisor is 0 (integer division by zero)"),
}


# "flag" reports this code wherever its operand is true: a kernel-side "any", read back
# by the caller instead of raised (equal, allclose).
FLAG = 99


def may_fault(op: str, dtype) -> bool:
    """Whether `op` on `dtype` operands writes the error word (a fault, or the flag)."""
    integer_division = op in ("floordiv", "rem", "fmod", "truncdiv")
    return op == "flag" or (integer_division and not dtype.is_floating_point)


REDUCE_OPS = ("sum", "prod", "max", "min")

# Counter-based random bits (kael/codegen/philox.py, which documents the stream layout),
# int64 operands only: philox(counter, key) and philox_hi(counter, key) are the two 64-bit
# halves of one Philox4x32-10 block, philox32(w, key) the 32-bit draw w (eight to a block);
# mulhi_u(a, b) is the high word of the unsigned 128-bit product (a uniform integer below
# b from random bits a; bits >> k is mulhi_u(bits, 2**(64 - k))).
RANDOM_OPS = ("philox", "philox_hi", "philox32", "mulhi_u")
BINARY_OPS.update(dict.fromkeys(RANDOM_OPS, "same"))
