"""NEW_DTYPES: the grids of int32, int16, int8, uint8, float16 and bfloat16, added to the
binary, unary, reduction and conversion grids of patterns.py (each function here is called
at its place in that grid), and the dtype cases of matmul, softmax and the nn ops."""

from __future__ import annotations

from specs import HALF_FLOATS, NAN, SMALL_INTS, SPECIAL_VALUES, P, Pattern, spec

# The first grids (int32 .. float16) were written before bfloat16 could be stored; bfloat16
# comes after them so that their manifest lines keep their order.
FIRST_DTYPES = SMALL_INTS + ("float16",)
NEW_DTYPES = FIRST_DTYPES + ("bfloat16",)
# float16 holds the special values but 1000 and -1000 (its 1e-10 is 0); bfloat16 all ten.
SPECIAL_HALF = {"float16": SPECIAL_VALUES[:8], "bfloat16": SPECIAL_VALUES}


def _kind(dtype: str, kind: str, int_kind: str) -> str:
    return kind if dtype in HALF_FLOATS else int_kind


def binary_dtype_patterns(kind: str = "normal", int_kind: str = "int64") -> list[Pattern]:
    """Each new dtype with itself (plain and transposed against a broadcast row), then the
    promotions across them."""
    out = []
    for d in FIRST_DTYPES:
        f = lambda shape, view="none", d=d: spec(shape, d, _kind(d, kind, int_kind), view)  # noqa: E731
        out += [
            P(d, a=f((3, 4)), b=f((3, 4))),
            P(f"{d}_transposed_broadcast", a=f((4, 3), "transpose:0:1"), b=f((4,))),
        ]
    i8, u8 = spec((3, 4), "int8", int_kind), spec((3, 4), "uint8", int_kind)
    h, i32 = spec((3, 4), "float16", kind), spec((3, 4), "int32", int_kind)
    out += [
        P("uint8_and_int8", a=u8, b=i8),
        P("float16_and_float32", a=h, b=spec((3, 4), kind=kind)),
        P("int32_and_float16", a=i32, b=h),
    ]
    return out


def binary_bfloat16_patterns(kind: str = "normal") -> list[Pattern]:
    """bfloat16 with itself, transposed against a broadcast row, and its promotions: with
    float16 to float32, with int64 and float32 as the other dtypes' rules say."""
    b = lambda shape, view="none": spec(shape, "bfloat16", kind, view)  # noqa: E731
    return [
        P("bfloat16", a=b((3, 4)), b=b((3, 4))),
        P("bfloat16_transposed_broadcast", a=b((4, 3), "transpose:0:1"), b=b((4,))),
        P("bfloat16_and_float16", a=b((3, 4)), b=spec((3, 4), "float16", kind)),
        P("bfloat16_and_int64", a=b((3, 4)), b=spec((3, 4), "int64", "nonzero")),
        P("bfloat16_and_float32", a=b((3, 4)), b=spec((3, 4), kind=kind)),
        P("special_bfloat16", a=spec((10, 1), "bfloat16", values=SPECIAL_VALUES), b=spec((1, 10), "bfloat16", values=SPECIAL_VALUES)),
    ]  # fmt: skip


def unary_dtype_patterns(kind: str = "normal") -> list[Pattern]:
    """float16's special values, each small integer dtype and float16."""
    out = [P("special_float16", x=spec((8,), "float16", values=SPECIAL_HALF["float16"]))]
    out += [P(d, x=spec((3, 4), d, _kind(d, kind, "int64"))) for d in FIRST_DTYPES]
    return out


def unary_bfloat16_patterns(kind: str = "normal") -> list[Pattern]:
    return [
        P("bfloat16", x=spec((3, 4), "bfloat16", kind)),
        P("bfloat16_transposed", x=spec((5, 3), "bfloat16", kind, "transpose:0:1")),
        P("special_bfloat16", x=spec((10,), "bfloat16", values=SPECIAL_VALUES)),
    ]


def reduction_dtype_patterns(kind: str = "normal") -> list[Pattern]:
    """Each new dtype reduced along dim 1 (bfloat16 also whole and transposed)."""
    out = [
        P(f"{d}_dim1", {"dim": 1}, x=spec((3, 4), d, _kind(d, kind, "int64"))) for d in NEW_DTYPES
    ]
    b = lambda shape, view="none": spec(shape, "bfloat16", kind, view)  # noqa: E731
    return out + [
        P("bfloat16_all", x=b((3, 4))),
        P("bfloat16_transposed", {"dim": 0}, x=b((5, 3), "transpose:0:1")),
    ]  # fmt: skip


# ---- conversions ---------------------------------------------------------------------------

ALL_DTYPES = ("float32", "float64", "int64", "bool") + NEW_DTYPES
# Floats a conversion to any integer dtype keeps in range (out of range is undefined in C:
# PyTorch's result there depends on the CPU), with truncation both ways.
IN_RANGE = [0.0, -0.0, 1.0, -1.0, 1e-10, 2.75, -2.75, 100.5, -99.9, 0.5, 7.0, -7.0]
FLOATS = ("float32", "float64") + HALF_FLOATS
# int64 values that wrap in every narrower integer dtype, and the edges of each.
WRAPPING = [300, -129, 65537, -32769, 2**31 + 5, -(2**31) - 1, 255, 256, -1, 127, 128, 0]

TO_FIRST_DTYPES = [
    *(P(f"float32_to_{d}", {"dtype": d}, x=spec((3, 4))) for d in FIRST_DTYPES),
    *(P(f"int64_to_{d}", {"dtype": d}, x=spec((3, 4), "int64", view="transpose:0:1")) for d in FIRST_DTYPES),
    *(P(f"{d}_to_float64", {"dtype": "float64"}, x=spec((3, 4), d)) for d in FIRST_DTYPES),
    P("uint8_to_int8", {"dtype": "int8"}, x=spec((3, 4), "uint8")),
    P("int8_to_uint8", {"dtype": "uint8"}, x=spec((3, 4), "int8")),
    P("float16_to_int32", {"dtype": "int32"}, x=spec((3, 4), "float16", view="slice:1:0:4:2")),
]  # fmt: skip


def _to_pattern(src: str, dst: str) -> Pattern:
    """src to dst over (3, 4) in one of three layouts; floats going to uint8 are positive."""
    view = {"float32": "transpose:0:1", "int8": "slice:1:0:4:2"}.get(src, "none")
    kind = "positive" if dst == "uint8" and src in FLOATS else ""
    return P(f"{src}_to_{dst}", {"dtype": dst}, x=spec((3, 4), src, kind, view))


_WRITTEN = {p.name for p in TO_FIRST_DTYPES}
# Every other pair of dtypes involving a new one, bfloat16's included.
TO_EVERY_PAIR = [
    _to_pattern(src, dst)
    for src in ALL_DTYPES
    for dst in ALL_DTYPES
    if src != dst and (src in NEW_DTYPES or dst in NEW_DTYPES)
    if f"{src}_to_{dst}" not in _WRITTEN
]
TO_SPECIAL = [
    *(P(f"special_float32_to_{dst}", {"dtype": dst}, x=spec((10,), values=SPECIAL_VALUES)) for dst in HALF_FLOATS),
    *(P(f"special_bfloat16_to_{dst}", {"dtype": dst}, x=spec((10,), "bfloat16", values=SPECIAL_VALUES))
      for dst in ("float32", "float64", "float16", "bool")),
    *(P(f"special_float16_to_{dst}", {"dtype": dst}, x=spec((8,), "float16", values=SPECIAL_HALF["float16"]))
      for dst in ("float32", "float64", "bfloat16", "bool")),
    *(P(f"in_range_{src}_to_{dst}", {"dtype": dst}, x=spec((12,), src, values=IN_RANGE if dst != "uint8" else [abs(v) for v in IN_RANGE]))
      for src in FLOATS for dst in SMALL_INTS),
    *(P(f"wrapping_int64_to_{dst}", {"dtype": dst}, x=spec((12,), "int64", values=WRAPPING))
      for dst in SMALL_INTS + ("float16", "bfloat16")),
    P("rounding_float32_to_bfloat16", {"dtype": "bfloat16"}, x=spec((6,), values=[1.00390625, 1.01171875, 1.0e38, 3.4e38, -1.005, 1e-40])),
    P("rounding_float64_to_float16", {"dtype": "float16"}, x=spec((6,), "float64", values=[1.00048828125, 1.00146484375, 65520.0, 65519.0, -1.0e-8, 6.0e-8])),
    P("nan_to_bfloat16", {"dtype": "bfloat16"}, x=spec((2,), "float64", values=[NAN, -NAN])),
]  # fmt: skip

# ---- matmul, softmax and the other grids --------------------------------------------------------

MATMUL_DTYPE_PATTERNS = [
    P("int32", a=spec((3, 4), "int32"), b=spec((4, 2), "int32")),
    P("int8_transposed", a=spec((4, 3), "int8", view="transpose:0:1"), b=spec((4, 2), "int8")),
    P("uint8", a=spec((2, 3), "uint8"), b=spec((3, 2), "uint8")),
    P("float16", a=spec((3, 4), "float16"), b=spec((4, 2), "float16")),
    P("bfloat16", a=spec((3, 4), "bfloat16"), b=spec((4, 2), "bfloat16")),
    P(
        "bfloat16_integers",
        a=spec((3, 4), "bfloat16", "int64"),
        b=spec((4, 5), "bfloat16", "int64"),
    ),
    P("float16_and_float32_refused", a=spec((3, 4), "float16"), b=spec((4, 2))),
]
SOFTMAX_DTYPE_PATTERNS = [
    P("float16", {"dim": -1}, x=spec((3, 5), "float16")),
    P("bfloat16", {"dim": 1}, x=spec((3, 5), "bfloat16")),
    P("bfloat16_transposed", {"dim": 0}, x=spec((5, 3), "bfloat16", view="transpose:0:1")),
    P("float16_to_float32", {"dim": -1, "dtype": "float32"}, x=spec((3, 5), "float16")),
    P("bfloat16_to_float64", {"dim": -1, "dtype": "float64"}, x=spec((2, 4), "bfloat16")),
    P("int64_refused", {"dim": -1}, x=spec((3, 4), "int64")),
]
# op -> its dtype cases, added after the op's own grid
OTHER_DTYPE_PATTERNS = {
    "layer_norm": [
        P("float16", {"normalized_shape": (4,)}, x=spec((3, 4), "float16")),
        P("bfloat16_affine", {"normalized_shape": (4,)}, x=spec((3, 4), "bfloat16"), weight=spec((4,), "bfloat16"), bias=spec((4,), "bfloat16")),
    ],
    "cross_entropy": [
        P("bfloat16", logits=spec((4, 5), "bfloat16"), targets=spec((4,), kind="index", high=5)),
        P("float16", logits=spec((4, 5), "float16"), targets=spec((4,), kind="index", high=5)),
    ],
    "where": [
        P("bfloat16", c=spec((3, 4), "bool"), a=spec((3, 4), "bfloat16"), b=spec((3, 4), "bfloat16")),
        P("int8_and_uint8", c=spec((3, 4), "bool"), a=spec((3, 4), "int8"), b=spec((4,), "uint8")),
    ],
    "cat": [
        P("bfloat16_and_float16", {"dim": 0}, a=spec((2, 3), "bfloat16"), b=spec((1, 3), "float16")),
        P("int8_and_uint8", {"dim": 1}, a=spec((2, 3), "int8"), b=spec((2, 2), "uint8")),
    ],
    "sort": [
        P("bfloat16", {"dim": -1, "stable": True}, x=spec((3, 5), "bfloat16")),
        P("uint8", {"dim": -1, "stable": True}, x=spec((3, 6), "uint8")),
    ],
    "cumsum": [
        P("int8", {"dim": 1}, x=spec((3, 4), "int8")),
        P("bfloat16", {"dim": 1}, x=spec((3, 4), "bfloat16", "int64")),
    ],
    "clamp": [
        P("bfloat16", {"min": -0.5, "max": 0.5}, x=spec((3, 4), "bfloat16")),
        P("uint8", {"min": 2, "max": 250}, x=spec((3, 4), "uint8")),
    ],
}  # fmt: skip
