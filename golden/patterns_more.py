"""The tensor functions added after the first grids: shape functions (split, tile, diagonal,
meshgrid, ...), more elementwise math (hyperbolic and inverse trigonometric functions, xlogy,
hypot, div's rounding modes, shifts), NaN-aware and order-statistic reductions and scans,
contractions (einsum, tensordot, kron, cdist), scatters, counts and selections, and
torch.linalg (on well-conditioned matrices given by value: the factorizations' outputs are
then PyTorch's to an ulp or two of float64)."""

from __future__ import annotations

from specs import INF, NAN, SPECIAL_VALUES, P, Pattern, layout_patterns, spec

INDEX = lambda shape, high: spec(shape, "int64", "index", high=high)  # noqa: E731
NAN_ROWS = [1.0, NAN, -2.0, 3.0, NAN, 0.5, 2.0, -1.0, NAN, 4.0, 1.5, -3.0]


def unary_math(kind: str = "normal", integers: bool = True) -> list[Pattern]:
    f = lambda shape, view="none", dtype="float32": spec(shape, dtype, kind, view)  # noqa: E731
    out = [
        *layout_patterns(kind),
        P("float64", x=f((3, 4), dtype="float64")),
        P("float64_transposed", x=f((5, 3), "transpose:0:1", "float64")),
        P("special_float32", x=spec((10,), values=SPECIAL_VALUES)),
        P("special_float64", x=spec((10,), "float64", values=SPECIAL_VALUES)),
        P("float16", x=f((3, 4), dtype="float16")),
    ]
    if integers:
        out += [P("int64", x=spec((3, 4), "int64")), P("bool", x=spec((3, 4), "bool"))]
    return out


def binary_math(kind: str = "normal", integers: bool = True, scalar: bool = True) -> list[Pattern]:
    f = lambda shape, view="none", dtype="float32": spec(shape, dtype, kind, view)  # noqa: E731
    out = [
        P("same_shape", a=f((3, 4)), b=f((3, 4))),
        P("broadcast", a=f((2, 3, 4)), b=f((4,))),
        P("transposed", a=f((4, 3), "transpose:0:1"), b=f((3, 4))),
        P("stepped", a=f((3, 8), "slice:1:1:8:2"), b=f((3, 1))),
        P("zero_d", a=f(()), b=f(())),
        P("empty", a=f((0, 4)), b=f((4,))),
        P("float64", a=f((3, 4), dtype="float64"), b=f((3, 4), dtype="float64")),
        P("float32_and_float64", a=f((3, 4)), b=f((3, 4), dtype="float64")),
        P(
            "special_float32",
            a=spec((10, 1), values=SPECIAL_VALUES),
            b=spec((1, 10), values=SPECIAL_VALUES),
        ),
        P("shapes_do_not_broadcast", a=f((3, 4)), b=f((2, 4))),
    ]
    if integers:
        out += [P("int64", a=spec((3, 4), "int64", "nonzero"), b=spec((3, 4), "int64", "nonzero"))]
        out += [P("int64_and_float32", a=spec((3, 4), "int64", "nonzero"), b=f((3, 4)))]
    if scalar:
        out += [P("python_float", {"other": 1.5}, a=f((3, 4)))]
    return out


SHIFT_PATTERNS = [
    P("int64", a=spec((3, 4), "int64"), b=spec((3, 4), "int64", "index", high=5)),
    P("int64_transposed", a=spec((4, 3), "int64", view="transpose:0:1"), b=spec((3, 4), "int64", "index", high=4)),
    P("int32_broadcast", a=spec((2, 3), "int32"), b=spec((3,), "int32", "index", high=4)),
    P("uint8", a=spec((3, 4), "uint8"), b=spec((3, 4), "uint8", "index", high=3)),
    P("python_int", {"other": 2}, a=spec((3, 4), "int64")),
    P("zero_d", a=spec((), "int64"), b=spec((), "int64", values=[3])),
    P("empty", a=spec((0, 3), "int64"), b=spec((3,), "int64", "index", high=3)),
    P("float_refused", a=spec((3, 4)), b=spec((3, 4))),
]  # fmt: skip

LERP_PATTERNS = [
    P("scalar_weight", {"weight": 0.3}, x=spec((3, 4)), end=spec((3, 4))),
    P("tensor_weight", x=spec((3, 4)), end=spec((3, 4)), weight=spec((3, 4), kind="unit")),
    P("broadcast", {"weight": 0.75}, x=spec((2, 3, 4)), end=spec((4,))),
    P("transposed", {"weight": 0.5}, x=spec((4, 3), view="transpose:0:1"), end=spec((3, 4))),
    P("float64", {"weight": 0.25}, x=spec((3, 4), "float64"), end=spec((3, 4), "float64")),
    P("zero_d", {"weight": 0.5}, x=spec(()), end=spec(())),
    P("empty", {"weight": 0.5}, x=spec((0, 4)), end=spec((0, 4))),
    P("special", {"weight": 0.5}, x=spec((10,), values=SPECIAL_VALUES), end=spec((10,))),
    P("dtype_mismatch", {"weight": 0.5}, x=spec((3, 4)), end=spec((3, 4), "float64")),
]  # fmt: skip

NAN_TO_NUM_PATTERNS = [
    P("defaults", x=spec((10,), values=SPECIAL_VALUES)),
    P("given", {"nan": 1.0, "posinf": 2.0, "neginf": -2.0}, x=spec((10,), values=SPECIAL_VALUES)),
    P("float64", {"nan": -1.0}, x=spec((10,), "float64", values=SPECIAL_VALUES)),
    P("float16", x=spec((10,), "float16", values=SPECIAL_VALUES)),
    P("transposed", x=spec((4, 3), view="transpose:0:1")),
    P("int64", x=spec((3, 4), "int64")),
    P("zero_d", x=spec((), values=[NAN])),
    P("empty", x=spec((0, 3))),
]
ISCLOSE_PATTERNS = [
    P("default", a=spec((3, 4)), b=spec((3, 4))),
    P("near", {"atol": 0.5}, a=spec((3, 4)), b=spec((3, 4))),
    P("rtol", {"rtol": 0.5, "atol": 0.0}, a=spec((4, 3), view="transpose:0:1"), b=spec((3, 1))),
    P("special", a=spec((10, 1), values=SPECIAL_VALUES), b=spec((1, 10), values=SPECIAL_VALUES)),
    P("equal_nan", {"equal_nan": True}, a=spec((10, 1), values=SPECIAL_VALUES), b=spec((1, 10), values=SPECIAL_VALUES)),
    P("int64", a=spec((3, 4), "int64"), b=spec((3, 4), "int64")),
    P("float64", {"atol": 1.0}, a=spec((3, 4), "float64"), b=spec((3, 4), "float64")),
    P("empty", a=spec((0, 3)), b=spec((0, 3))),
    P("dtype_mismatch", a=spec((3, 4)), b=spec((3, 4), "float64")),
]  # fmt: skip


# lgamma's and digamma's poles (0, -0 and the negative integers) beside half-integers.
POLES = [0.0, -0.0, -1.0, -2.0, 0.5, -2.5, 1.0, 2.0]


def math_table() -> dict[str, list[Pattern]]:
    t: dict[str, list[Pattern]] = {}
    for name in ("deg2rad", "rad2deg", "sgn", "sinh", "cosh", "asinh", "atan"):
        t[name] = unary_math()
    t["frac"] = unary_math(integers=False) + [P("int64_refused", x=spec((3, 4), "int64"))]
    t["log10"] = unary_math("positive")
    t["acosh"] = [
        P("above_one", x=spec((3, 4), values=[1.0 + i for i in range(12)])),
        *unary_math("unit"),
    ]
    for name in ("atanh", "asin", "acos"):
        t[name] = unary_math("unit") + [
            P("out_of_domain", x=spec((4,), values=[2.0, -2.0, 1.0, -1.0]))
        ]
    t["nan_to_num"] = NAN_TO_NUM_PATTERNS
    t["erfc"] = unary_math()
    t["erfinv"] = unary_math("unit") + [
        P("ends_and_out_of_domain", x=spec((6,), values=[1.0, -1.0, 2.0, -2.0, 0.0, -0.0]))
    ]
    for name in ("lgamma", "digamma"):
        t[name] = unary_math() + [P("poles_and_halves", x=spec((8,), values=POLES))]
    for name in ("clamp_min", "clamp_max"):
        t[name] = [
            P("scalar", {"p0": 0.5}, x=spec((3, 4))),
            P("tensor_bound_transposed", x=spec((4, 3), view="transpose:0:1"), bound=spec((4,))),
            P("int64", {"p0": 2}, x=spec((3, 4), "int64")),
            P("special_values", {"p0": 0.0}, x=spec((10,), values=SPECIAL_VALUES)),
            P("empty", {"p0": 1.0}, x=spec((0, 3))),
        ]
    for name in ("xlogy", "logaddexp", "logaddexp2", "hypot", "atan2", "copysign"):
        t[name] = binary_math(scalar=name == "xlogy")
    t["fmod"] = binary_math() + [
        P("int64_signs", a=spec((8,), "int64", values=[7, -7, 7, -7, 6, -6, 0, 1]), b=spec((8,), "int64", values=[2, 2, -2, -2, 3, -3, 5, -4])),
        P("int64_zero_divisor", a=spec((3,), "int64"), b=spec((3,), "int64", values=[1, 0, 2])),
    ]  # fmt: skip
    t["lerp"] = LERP_PATTERNS
    t["isclose"] = ISCLOSE_PATTERNS
    for name in ("bitwise_left_shift", "bitwise_right_shift"):
        t[name] = SHIFT_PATTERNS
    for mode in ("trunc", "floor"):
        t[f"div_{mode}"] = binary_math(kind="normal") + [
            P("int64_signs", a=spec((8,), "int64", values=[7, -7, 7, -7, 6, -6, 0, 1]), b=spec((8,), "int64", values=[2, 2, -2, -2, 3, -3, 5, -4])),
            P("int64_zero_divisor", a=spec((3,), "int64"), b=spec((3,), "int64", values=[1, 0, 2])),
            P("python_int", {"other": -3}, a=spec((3, 4), "int64")),
        ]  # fmt: skip
    return t


# ---- shape functions -----------------------------------------------------------------------

X34 = spec((3, 4))
XT = spec((4, 3), view="transpose:0:1")


def shape_table() -> dict[str, list[Pattern]]:
    return {
        "split": [
            P("size", {"p0": 2}, x=spec((5, 3))),
            P("sections_dim1", {"p0": (1, 3), "dim": 1}, x=X34),
            P("transposed", {"p0": 2, "dim": 1}, x=XT),
            P("int64", {"p0": 1}, x=spec((3, 2), "int64")),
            P("empty", {"p0": 2, "dim": 1}, x=spec((0, 4))),
            P("sections_wrong_sum", {"p0": (1, 1)}, x=X34),
        ],
        "chunk": [
            P("even", {"p0": 3}, x=spec((6, 2))),
            P("uneven_dim1", {"p0": 3, "dim": 1}, x=spec((2, 7))),
            P("more_than_size", {"p0": 5}, x=spec((3, 2))),
            P("stepped", {"p0": 2, "dim": 1}, x=spec((3, 8), view="slice:1:0:8:2")),
            P("float64", {"p0": 2}, x=spec((4, 3), "float64")),
            P("zero_chunks", {"p0": 0}, x=X34),
        ],
        "tensor_split": [
            P("sections", {"p0": 3}, x=spec((7, 2))),
            P("indices_dim1", {"p0": (1, 3), "dim": 1}, x=X34),
            P("indices_past_end", {"p0": (2, 9)}, x=spec((5,))),
            P("transposed", {"p0": 2, "dim": 0}, x=XT),
            P("int64", {"p0": 2}, x=spec((5,), "int64")),
            P("zero_sections", {"p0": 0}, x=X34),
        ],
        "unbind": [
            P("dim0", x=X34),
            P("dim1", {"dim": 1}, x=XT),
            P("negative_dim", {"dim": -1}, x=spec((2, 3, 2), "int64")),
            P("empty", {"dim": 1}, x=spec((2, 0))),
            P("dim_out_of_range", {"dim": 2}, x=X34),
        ],
        "tile": [
            P("two_dims", {"p0": (2, 3)}, x=spec((2, 2))),
            P("fewer_dims", {"p0": (2,)}, x=spec((2, 3))),
            P("more_dims", {"p0": (2, 1, 2)}, x=spec((3,))),
            P("transposed", {"p0": (1, 2)}, x=XT),
            P("int64", {"p0": (3,)}, x=spec((2,), "int64")),
            P("zero_d", {"p0": (3,)}, x=spec(())),
            P("zero_reps", {"p0": (0, 2)}, x=spec((2, 2))),
        ],
        "repeat": [
            P("two_dims", {"sizes": (2, 3)}, x=spec((2, 2))),
            P("new_dims", {"sizes": (2, 1, 2)}, x=spec((3,))),
            P("transposed", {"sizes": (1, 2)}, x=XT),
            P("bool", {"sizes": (2,)}, x=spec((3,), "bool")),
            P("zero_d", {"sizes": (2,)}, x=spec(())),
            P("too_few_sizes", {"sizes": (2,)}, x=spec((2, 2))),
        ],
        "repeat_interleave": [
            P("flat", {"repeats": 2}, x=X34),
            P("dim1", {"repeats": 3, "dim": 1}, x=XT),
            P("tensor_repeats", {"dim": 0}, x=spec((3, 2)), repeats=spec((3,), "int64", values=[1, 0, 2])),
            P("int64", {"repeats": 2, "dim": 0}, x=spec((2, 3), "int64")),
            P("zero_d", {"repeats": 3}, x=spec(())),
            P("repeats_mismatch", {"dim": 0}, x=spec((3, 2)), repeats=spec((2,), "int64", values=[1, 2])),
        ],
        "movedim": [
            P("one", {"p0": 0, "p1": 2}, x=spec((2, 3, 4))),
            P("two", {"p0": (0, 1), "p1": (2, 0)}, x=spec((2, 3, 4))),
            P("negative", {"p0": -1, "p1": 0}, x=spec((2, 3, 4), view="transpose:0:1")),
            P("repeated", {"p0": (0, 0), "p1": (1, 2)}, x=spec((2, 3, 4))),
        ],
        "moveaxis": [
            P("one", {"p0": 0, "p1": 2}, x=spec((2, 3, 4))),
            P("two_transposed", {"p0": (0, 1), "p1": (1, 0)}, x=XT),
        ],
        "swapdims": [
            P("matrix", {"p0": 0, "p1": 1}, x=X34),
            P("three_int64", {"p0": -1, "p1": 0}, x=spec((2, 3, 4), "int64")),
        ],
        "hsplit": [
            P("sections", {"p0": 2}, x=X34),
            P("indices", {"p0": (1, 3)}, x=spec((2, 10), view="slice:1:0:10:2")),
            P("vector", {"p0": 3}, x=spec((6,), "int64")),
            P("not_dividing", {"p0": 3}, x=X34),
        ],
        "vsplit": [
            P("sections", {"p0": 2}, x=spec((4, 3))),
            P("indices_transposed", {"p0": (1,)}, x=XT),
            P("vector_refused", {"p0": 2}, x=spec((4,))),
        ],
        "dsplit": [
            P("sections", {"p0": 2}, x=spec((2, 3, 4))),
            P("indices", {"p0": (1, 3)}, x=spec((2, 2, 5), "int64")),
            P("matrix_refused", {"p0": 2}, x=X34),
        ],
        "select_scatter": [
            P("row", {"p0": 0, "p1": 1}, x=X34, src=spec((4,))),
            P("column_of_transposed", {"p0": 1, "p1": -1}, x=XT, src=spec((3,))),
            P("int64", {"p0": 0, "p1": 0}, x=spec((2, 3), "int64"), src=spec((3,), "int64")),
            P("wrong_src_shape", {"p0": 0, "p1": 0}, x=X34, src=spec((3,))),
        ],
        "slice_scatter": [
            P("rows", {"dim": 0, "start": 1, "end": 3}, x=X34, src=spec((2, 4))),
            P("stepped_columns", {"dim": 1, "start": 0, "end": 4, "step": 2}, x=X34, src=spec((3, 2))),
            P("whole_int64", {"dim": 0}, x=spec((2, 3), "int64"), src=spec((2, 3), "int64")),
            P("wrong_src_shape", {"dim": 0, "start": 0, "end": 2}, x=X34, src=spec((3, 4))),
        ],
        "diagonal_scatter": [
            P("main", x=spec((3, 3)), src=spec((3,))),
            P("offset", {"offset": 1}, x=X34, src=spec((3,))),
            P("negative_offset_transposed", {"offset": -1}, x=XT, src=spec((2,))),
            P("wrong_src_shape", x=spec((3, 3)), src=spec((2,))),
        ],
        "as_strided_scatter": [
            P("square", {"p0": (2, 2), "p1": (1, 2)}, x=spec((3, 3)), src=spec((2, 2))),
            P("offset", {"p0": (2,), "p1": (3,), "p2": 1}, x=spec((3, 3)), src=spec((2,))),
            P("int64", {"p0": (3,), "p1": (4,)}, x=spec((3, 4), "int64"), src=spec((3,), "int64")),
        ],
        "broadcast_tensors": [
            P("three", a=spec((3, 1)), b=spec((4,)), c=spec(())),
            P("int64_transposed", a=spec((4, 3), "int64", view="transpose:0:1"), b=spec((1, 4), "int64")),
            P("empty", a=spec((0, 1)), b=spec((3,))),
            P("do_not_broadcast", a=spec((2, 3)), b=spec((4,))),
        ],
        "swapaxes": [
            P("matrix", {"p0": 0, "p1": 1}, x=X34),
            P("three", {"p0": -1, "p1": 0}, x=spec((2, 3, 4), "int64")),
            P("out_of_range", {"p0": 0, "p1": 3}, x=X34),
        ],
        "t": [
            P("matrix", x=X34),
            P("transposed", x=XT),
            P("vector", x=spec((4,))),
            P("zero_d", x=spec(())),
            P("three_dims_refused", x=spec((2, 3, 4))),
        ],
        "diagonal": [
            P("main", x=spec((4, 4))),
            P("offset", {"offset": 1}, x=X34),
            P("negative_offset", {"offset": -2}, x=X34),
            P("dims", {"dim1": 1, "dim2": 2}, x=spec((2, 3, 3))),
            P("transposed", x=XT),
            P("past_edge", {"offset": 5}, x=X34),
            P("same_dims", {"dim1": 0, "dim2": 0}, x=X34),
        ],
        "diag": [
            P("vector", x=spec((3,))),
            P("vector_offset", {"diagonal": -1}, x=spec((3,), "int64")),
            P("matrix", x=X34),
            P("matrix_offset", {"diagonal": 1}, x=XT),
            P("empty", x=spec((0,))),
            P("three_dims_refused", x=spec((2, 2, 2))),
        ],
        "diag_embed": [
            P("vector", x=spec((3,))),
            P("batch", {"offset": 1}, x=spec((2, 3))),
            P("dims", {"dim1": 0, "dim2": 2}, x=spec((2, 3), "int64")),
            P("transposed", {"offset": -1}, x=XT),
            P("same_dims", {"dim1": 0, "dim2": 0}, x=spec((2, 3))),
        ],
        **{
            name: [
                P("square", {"p0": 3, "p1": 3}),
                P("wide_offset", {"p0": 3, "p1": 5, "p2": 1}),
                P("negative_offset", {"p0": 4, "p1": 3, "p2": -1}),
                P("empty", {"p0": 0, "p1": 3}),
                P("int32", {"p0": 3, "p1": 2, "dtype": "int32"}),
            ]
            for name in ("tril_indices", "triu_indices")
        },
        "broadcast_to": [
            P("new_dims", {"p0": (2, 3, 4)}, x=spec((3, 1))),
            P("keep", {"p0": (-1, 4)}, x=spec((3, 1), "int64")),
            P("zero_d", {"p0": (2, 2)}, x=spec(())),
            P("transposed", {"p0": (2, 3, 4)}, x=XT),
            P("not_broadcastable", {"p0": (3, 4)}, x=spec((2, 4))),
        ],
        **{
            f"atleast_{d}d": [
                P("zero_d", x=spec(())),
                P("vector", x=spec((3,), "int64")),
                P("matrix", x=XT),
                P("three_dims", x=spec((2, 1, 3))),
                P("two_inputs", x=spec(()), y=spec((2,))),
                P("empty", x=spec((0,))),
            ]
            for d in (1, 2, 3)
        },
        "ravel": [
            P("contiguous", x=X34),
            P("transposed", x=XT),
            P("zero_d", x=spec(())),
            P("int64_stepped", x=spec((3, 8), "int64", view="slice:1:0:8:2")),
            P("empty", x=spec((0, 3))),
        ],
        "meshgrid": [
            P("ij", {"indexing": "ij"}, a=spec((3,)), b=spec((2,))),
            P("xy", {"indexing": "xy"}, a=spec((3,)), b=spec((4,))),
            P("three", {"indexing": "ij"}, a=spec((2,)), b=spec((3,)), c=spec((1,))),
            P("mixed_dtypes_refused", {"indexing": "ij"}, a=spec((2,)), b=spec((3,), "float64")),
            P("int64_stepped", {"indexing": "ij"}, a=spec((6,), "int64", view="slice:0:0:6:2"), b=spec((2,), "int64")),
            P("zero_d", {"indexing": "ij"}, a=spec(()), b=spec((2,))),
            P("matrix_refused", {"indexing": "ij"}, a=spec((2, 2)), b=spec((2,))),
        ],
    }  # fmt: skip


# ---- reductions, scans and order statistics ----------------------------------------------------

NANS = spec((3, 4), values=NAN_ROWS)


def nan_reduction() -> list[Pattern]:
    return [
        P("all", x=NANS),
        P("dim0", {"dim": 0}, x=NANS),
        P("dim1_keepdim", {"dim": 1, "keepdim": True}, x=NANS),
        P("two_dims", {"dim": (0, 1)}, x=spec((2, 3, 2), values=NAN_ROWS)),
        P("no_nans", {"dim": 1}, x=X34),
        P("transposed", {"dim": 1}, x=XT),
        P("all_nan", {"dim": 0}, x=spec((2,), values=[NAN, NAN])),
        P("float64", {"dim": 1}, x=spec((3, 4), "float64", values=NAN_ROWS)),
        P("zero_d", x=spec((), values=[NAN])),
        P("empty", {"dim": 0}, x=spec((0, 3))),
        P("dim_out_of_range", {"dim": 2}, x=X34),
    ]


def moments() -> list[Pattern]:
    return [
        P("all", x=X34),
        P("dim1", {"dim": 1}, x=X34),
        P("two_dims_keepdim", {"dim": (0, 2), "keepdim": True}, x=spec((2, 3, 4))),
        P("correction0", {"dim": 0, "correction": 0}, x=XT),
        P("float64", {"dim": 1}, x=spec((3, 4), "float64")),
        P("nan", {"dim": 1}, x=NANS),
        P("one_element", {"dim": 0}, x=spec((1, 3))),
        P("int64_refused", {"dim": 0}, x=spec((3, 4), "int64")),
    ]


def scan(name: str) -> list[Pattern]:
    out = [
        P("dim0", {"dim": 0}, x=X34),
        P("dim1", {"dim": 1}, x=XT),
        P("negative_dim", {"dim": -1}, x=spec((2, 3, 4), view="permute:2:0:1")),
        P("special", {"dim": 0}, x=spec((10,), values=SPECIAL_VALUES)),
        P("float64", {"dim": 1}, x=spec((3, 4), "float64")),
        P("zero_d", {"dim": 0}, x=spec(())),
        P("empty", {"dim": 1}, x=spec((2, 0))),
        P("dim_out_of_range", {"dim": 2}, x=X34),
    ]
    if name != "logcumsumexp":
        out += [
            P("int64", {"dim": 1}, x=spec((3, 5), "int64")),
            P("bool", {"dim": 0}, x=spec((5,), "bool")),
        ]
    else:
        out += [P("large", {"dim": 0}, x=spec((4,), values=[1000.0, 1000.0, -1000.0, 999.0]))]
    return out


def median_like(nan: bool) -> list[Pattern]:
    out = [
        P("all", x=spec((3, 5))),
        P("dim1", {"dim": 1}, x=spec((3, 5))),
        P("dim0_keepdim", {"dim": 0, "keepdim": True}, x=spec((4, 3), view="transpose:0:1")),
        P("even_count", {"dim": 1}, x=X34),
        P("int64_ties", {"dim": 1}, x=spec((3, 6), "int64")),
        P("float64", {"dim": 0}, x=spec((5, 2), "float64")),
        P("nan_rows", {"dim": 1}, x=spec((3, 4), values=NAN_ROWS)),
        P("nan_all", x=spec((3, 4), values=NAN_ROWS)),
        P("zero_d", x=spec(())),
        P("zero_d_dim", {"dim": 0}, x=spec(())),
        P("dim_out_of_range", {"dim": 2}, x=X34),
    ]
    return out


def quantile_like() -> list[Pattern]:
    return [
        P("all", {"q": 0.3}, x=spec((3, 5))),
        P("dim1", {"q": 0.5, "dim": 1}, x=spec((3, 5))),
        P("keepdim", {"q": 0.75, "dim": 0, "keepdim": True}, x=XT),
        P("tensor_q", {"dim": 1}, x=spec((3, 5)), q=spec((3,), values=[0.0, 0.25, 1.0])),
        *[P(f"interp_{m}", {"q": 0.4, "dim": 1, "interpolation": m}, x=spec((2, 6)))
          for m in ("lower", "higher", "nearest", "midpoint")],
        P("float64", {"q": 0.9}, x=spec((7,), "float64")),
        P("nan_rows", {"q": 0.5, "dim": 1}, x=spec((3, 4), values=NAN_ROWS)),
        P("q_out_of_range", {"q": 1.5}, x=X34),
        P("int64_refused", {"q": 0.5}, x=spec((3, 4), "int64")),
    ]  # fmt: skip


SORTED = spec((6,), values=[-2.0, -1.0, 0.0, 0.5, 0.5, 3.0])
SEARCH_PATTERNS = [
    P("left", s=SORTED, v=spec((3, 4))),
    P("right", {"right": True}, s=SORTED, v=spec((7,), values=[-2.0, 0.5, 3.0, 4.0, -5.0, 0.0, 0.2])),
    P("int32_out", {"out_int32": True}, s=SORTED, v=spec((2, 3))),
    P("int64", s=spec((5,), "int64", values=[0, 2, 2, 4, 9]), v=spec((3, 3), "int64")),
    P("float64", s=spec((4,), "float64", values=[0.0, 1.0, 2.0, 3.0]), v=spec((5,), "float64", kind="positive")),
    P("nan", s=SORTED, v=spec((3,), values=[NAN, INF, -INF])),
    P("empty", s=SORTED, v=spec((0,))),
]  # fmt: skip


def order_table() -> dict[str, list[Pattern]]:
    t: dict[str, list[Pattern]] = {"nansum": nan_reduction(), "nanmean": nan_reduction()}
    t["nansum"] = t["nansum"] + [P("int64", {"dim": 1}, x=spec((3, 4), "int64"))]
    t["aminmax"] = [
        P("all", x=X34),
        P("dim1", {"dim": 1}, x=XT),
        P("keepdim", {"dim": 0, "keepdim": True}, x=spec((2, 3, 4))),
        P("int64", {"dim": 0}, x=spec((3, 4), "int64")),
        P("nan", {"dim": 1}, x=NANS),
        P("float64", x=spec((5,), "float64")),
        P("zero_d", x=spec(())),
        P("empty_refused", x=spec((0, 3))),
    ]
    t["std_mean"] = moments()
    t["var_mean"] = moments()
    for name in ("logcumsumexp", "cummax", "cummin"):
        t[name] = scan(name)
    t["median"] = median_like(False)
    t["nanmedian"] = median_like(True)
    t["quantile"] = quantile_like()
    t["nanquantile"] = quantile_like()
    t["mode"] = [
        P("last_dim", x=spec((3, 6), "int64")),
        P("dim0_keepdim", {"dim": 0, "keepdim": True}, x=spec((5, 3), "int64")),
        P("float_ties", {"dim": 1}, x=spec((2, 5), values=[1.0, 2.0, 2.0, 1.0, 3.0, 0.5, 0.5, 0.5, 4.0, 4.0])),
        P("transposed", {"dim": 1}, x=spec((6, 3), "int64", view="transpose:0:1")),
        P("zero_d", x=spec(())),
        P("dim_out_of_range", {"dim": 2}, x=X34),
    ]  # fmt: skip
    t["searchsorted"] = SEARCH_PATTERNS + [
        P("batched", s=spec((2, 3), values=[0.0, 1.0, 2.0, -1.0, 0.0, 1.0]), v=spec((2, 4))),
        P("side_right", {"side": "right"}, s=SORTED, v=spec((4,), values=[0.5, -1.0, 9.0, 0.0])),
        P("batch_mismatch", s=spec((2, 3)), v=spec((3, 4))),
    ]  # fmt: skip
    t["bucketize"] = [P(p.name, p.args, v=p.inputs["v"], s=p.inputs["s"]) for p in SEARCH_PATTERNS]
    t["bucketize"] += [
        P("zero_d", v=spec(()), s=SORTED),
        P("boundaries_2d_refused", v=spec((3,)), s=spec((2, 3))),
    ]
    return t


# ---- contractions ------------------------------------------------------------------------------

EINSUM = [
    ("matmul", "ij+jk->ik", {"a": (3, 4), "b": (4, 2)}),
    ("batched", "bij+bjk->bik", {"a": (2, 3, 4), "b": (2, 4, 2)}),
    ("trace", "ii", {"a": (3, 3)}),
    ("diagonal", "ii->i", {"a": (4, 4)}),
    ("transpose", "ij->ji", {"a": (3, 4)}),
    ("sum_all", "ij->", {"a": (3, 4)}),
    ("outer", "i+j->ij", {"a": (3,), "b": (4,)}),
    ("dot", "i+i", {"a": (5,), "b": (5,)}),
    ("three_operands", "ij+jk+kl->il", {"a": (2, 3), "b": (3, 4), "c": (4, 2)}),
    ("ellipsis", "...ij+...jk->...ik", {"a": (2, 3, 4), "b": (4, 5)}),
    ("implicit_output", "ij+jk", {"a": (2, 3), "b": (3, 2)}),
    ("broadcast_dim", "ij+ij->ij", {"a": (1, 4), "b": (3, 4)}),
    ("operand_count_wrong", "ij+jk->ik", {"a": (3, 4)}),
    ("size_mismatch", "ij+jk->ik", {"a": (3, 4), "b": (3, 2)}),
]


def contraction_table() -> dict[str, list[Pattern]]:
    t: dict[str, list[Pattern]] = {}
    t["einsum"] = [
        P(n, {"equation": eq}, **{k: spec(s) for k, s in shapes.items()})
        for n, eq, shapes in EINSUM
    ]
    t["einsum"] += [
        P("transposed_input", {"equation": "ij+jk->ik"}, a=XT, b=spec((4, 2))),
        P(
            "float64",
            {"equation": "ij+jk->ik"},
            a=spec((2, 3), "float64"),
            b=spec((3, 2), "float64"),
        ),
        P("int64", {"equation": "ij+j->i"}, a=spec((2, 3), "int64"), b=spec((3,), "int64")),
        P("empty", {"equation": "ij+jk->ik"}, a=spec((2, 0)), b=spec((0, 3))),
    ]
    t["tensordot"] = [
        P("dims2", a=spec((2, 3, 4)), b=spec((3, 4, 2))),
        P("dims1", {"dims": 1}, a=spec((2, 3)), b=spec((3, 4))),
        P("dims0", {"dims": 0}, a=spec((2,)), b=spec((3,))),
        P("dim_lists", {"dims_a": (1, 0), "dims_b": (0, 2)}, a=spec((3, 2, 4)), b=spec((2, 5, 3))),
        P("transposed", {"dims": 1}, a=XT, b=spec((4, 2))),
        P("float64", {"dims": 1}, a=spec((2, 3), "float64"), b=spec((3, 2), "float64")),
        P("int64", {"dims": 1}, a=spec((2, 3), "int64"), b=spec((3, 2), "int64")),
        P("size_mismatch", {"dims": 1}, a=spec((2, 3)), b=spec((4, 2))),
    ]
    t["kron"] = [
        P("matrices", a=spec((2, 3)), b=spec((2, 2))),
        P("vectors", a=spec((3,)), b=spec((2,))),
        P("different_ranks", a=spec((2, 2)), b=spec((3,))),
        P("transposed", a=XT, b=spec((2, 1))),
        P("int64", a=spec((2, 2), "int64"), b=spec((2, 2), "int64")),
        P("float64", a=spec((2, 2), "float64"), b=spec((1, 3), "float64")),
        P("zero_d", a=spec(()), b=spec((2,))),
        P("empty", a=spec((0, 2)), b=spec((2, 2))),
    ]
    t["cdist"] = [
        P("p2", a=spec((3, 4)), b=spec((5, 4))),
        P("p1", {"p": 1.0}, a=spec((3, 4)), b=spec((2, 4))),
        P("p_inf", {"p": INF}, a=spec((3, 4)), b=spec((2, 4))),
        P("p0", {"p": 0.0}, a=spec((3, 2)), b=spec((2, 2))),
        P("p3", {"p": 3.0}, a=spec((3, 2)), b=spec((4, 2))),
        P("batched", a=spec((2, 3, 4)), b=spec((2, 5, 4))),
        P("transposed", a=XT, b=spec((2, 4))),
        P("float64", a=spec((3, 4), "float64"), b=spec((2, 4), "float64")),
        P("empty", a=spec((0, 4)), b=spec((2, 4))),
        P("feature_mismatch", a=spec((3, 4)), b=spec((2, 3))),
        P("int64_refused", a=spec((3, 4), "int64"), b=spec((2, 4), "int64")),
    ]
    return t


# ---- writes, counts and selections --------------------------------------------------------------

REDUCES = ("sum", "prod", "mean", "amax", "amin")


def scatter_reduce_patterns() -> list[Pattern]:
    out = []
    for r in REDUCES:
        for self_ in (True, False):
            tag = f"{r}_{'self' if self_ else 'noself'}"
            args = {"dim": 0, "reduce": r, "include_self": self_}
            out.append(P(tag, args, x=spec((3, 4)), index=INDEX((5, 4), 3), src=spec((5, 4))))
        out.append(
            P(
                f"{r}_int64_dim1",
                {"dim": 1, "reduce": r},
                x=spec((2, 3), "int64"),
                index=INDEX((2, 5), 3),
                src=spec((2, 5), "int64"),
            )
        )
    out += [
        P("transposed_self", {"dim": 1, "reduce": "sum"}, x=XT, index=INDEX((3, 2), 4), src=spec((3, 2))),
        P("float64_nan", {"dim": 0, "reduce": "amax"}, x=spec((2, 2), "float64"), index=INDEX((3, 2), 2), src=spec((3, 2), "float64", values=[NAN, 1.0, 2.0, -INF, 0.5, 3.0])),
        P("index_out_of_range", {"dim": 0, "reduce": "sum"}, x=spec((2, 2)), index=spec((1, 2), "int64", values=[0, 2]), src=spec((1, 2))),
    ]  # fmt: skip
    return out


def writes_table() -> dict[str, list[Pattern]]:
    t: dict[str, list[Pattern]] = {}
    t["scatter"] = [
        P("src_dim0", {"dim": 0}, x=spec((3, 4)), index=spec((2, 4), "int64", values=[0, 1, 2, 0, 2, 0, 1, 1]), src=spec((2, 4))),
        P("src_dim1", {"dim": 1}, x=XT, index=spec((3, 2), "int64", values=[0, 3, 1, 2, 2, 0]), src=spec((3, 5))),
        P("value", {"dim": 1, "value": 2.5}, x=spec((3, 4)), index=INDEX((3, 2), 4)),
        P("value_int64", {"dim": 0, "value": 7}, x=spec((3, 4), "int64"), index=INDEX((1, 4), 3)),
        P("src_int64", {"dim": 0}, x=spec((3, 2), "int64"), index=spec((1, 2), "int64", values=[2, 0]), src=spec((1, 2), "int64")),
        P("float64", {"dim": 0}, x=spec((2, 2), "float64"), index=spec((1, 2), "int64", values=[1, 0]), src=spec((1, 2), "float64")),
        P("empty_index", {"dim": 0}, x=spec((2, 2)), index=spec((0, 2), "int64"), src=spec((0, 2))),
        P("index_out_of_range", {"dim": 0}, x=spec((2, 2)), index=spec((1, 2), "int64", values=[0, 2]), src=spec((1, 2))),
        P("dtype_mismatch", {"dim": 0}, x=spec((2, 2)), index=spec((1, 2), "int64", values=[0, 1]), src=spec((1, 2), "float64")),
    ]  # fmt: skip
    t["scatter_reduce"] = scatter_reduce_patterns()
    t["index_fill"] = [
        P("dim0", {"dim": 0, "value": -1.0}, x=spec((4, 3)), index=spec((2,), "int64", values=[0, 2])),
        P("dim1", {"dim": 1, "value": 3.0}, x=XT, index=spec((2,), "int64", values=[2, 2])),
        P("int64", {"dim": 1, "value": 9}, x=spec((2, 3), "int64"), index=spec((1,), "int64", values=[1])),
        P("negative_index", {"dim": 0, "value": 0.5}, x=spec((3, 2)), index=spec((1,), "int64", values=[-1])),
        P("nan_value", {"dim": 0, "value": NAN}, x=spec((3, 2), "float64"), index=spec((1,), "int64", values=[0])),
        P("zero_d", {"dim": 0, "value": 1.0}, x=spec(()), index=spec((1,), "int64", values=[0])),
        P("index_out_of_range", {"dim": 0, "value": 1.0}, x=spec((3, 2)), index=spec((1,), "int64", values=[3])),
    ]  # fmt: skip
    t["index_copy"] = [
        P("dim0", {"dim": 0}, x=spec((4, 3)), index=spec((2,), "int64", values=[3, 1]), source=spec((2, 3))),
        P("dim1", {"dim": 1}, x=XT, index=spec((2,), "int64", values=[0, 2]), source=spec((3, 2))),
        P("int64", {"dim": 0}, x=spec((3, 2), "int64"), index=spec((1,), "int64", values=[2]), source=spec((1, 2), "int64")),
        P("float64", {"dim": 1}, x=spec((2, 3), "float64"), index=spec((3,), "int64", values=[2, 0, 1]), source=spec((2, 3), "float64")),
        P("index_out_of_range", {"dim": 0}, x=spec((3, 2)), index=spec((1,), "int64", values=[3]), source=spec((1, 2))),
    ]  # fmt: skip
    t["index_put"] = []
    for acc in (False, True):
        a = {"accumulate": acc}
        s = "acc" if acc else "set"
        t["index_put"] += [
            P(f"{s}_one_index", a, x=spec((4, 3)), i0=spec((3,), "int64", values=[0, 2, 0]), v=spec((3, 3))),
            P(f"{s}_two_indices", a, x=spec((3, 4)), i0=spec((2,), "int64", values=[0, 2]), i1=spec((2,), "int64", values=[3, 1]), v=spec((2,))),
            P(f"{s}_repeated", a, x=spec((4,), "int64"), i0=spec((4,), "int64", values=[1, 1, 3, 1]), v=spec((4,), "int64")),
            P(f"{s}_broadcast_value", a, x=XT, i0=spec((2,), "int64", values=[1, -1]), v=spec(())),
            P(f"{s}_bool_mask", a, x=spec((5,), "float64"), i0=spec((5,), "bool"), v=spec((), "float64")),
            P(f"{s}_out_of_range", a, x=spec((3,)), i0=spec((1,), "int64", values=[3]), v=spec((1,))),
        ]  # fmt: skip
    t["bincount"] = [
        P("plain", x=spec((8,), "int64", "index", high=5)),
        P("minlength", {"minlength": 7}, x=spec((5,), "int64", "index", high=3)),
        P("weights", x=spec((6,), "int64", "index", high=4), weights=spec((6,))),
        P("weights_float64", x=spec((6,), "int64", "index", high=4), weights=spec((6,), "float64")),
        P("stepped", x=spec((10,), "int64", "index", high=4, view="slice:0:0:10:3")),
        P("empty", x=spec((0,), "int64")),
        P("negative_refused", x=spec((3,), "int64", values=[0, -1, 2])),
        P("matrix_refused", x=spec((2, 2), "int64", "index", high=3)),
    ]
    t["histc"] = [
        P("range", {"bins": 4, "min": -2.0, "max": 2.0}, x=spec((20,))),
        P("auto_range", {"bins": 5}, x=spec((3, 4))),
        P("out_of_range_ignored", {"bins": 3, "min": 0.0, "max": 1.0}, x=spec((10,))),
        P(
            "float64",
            {"bins": 6, "min": -1.0, "max": 1.0},
            x=spec((4, 3), "float64", view="transpose:0:1"),
        ),
        P(
            "edges",
            {"bins": 4, "min": 0.0, "max": 4.0},
            x=spec((6,), values=[0.0, 1.0, 2.0, 3.0, 4.0, 4.5]),
        ),
        P("empty", {"bins": 3, "min": 0.0, "max": 1.0}, x=spec((0,))),
        P("min_above_max", {"bins": 3, "min": 2.0, "max": 1.0}, x=spec((5,))),
    ]
    t["histogram"] = [
        P("bins", {"bins": 4}, x=spec((20,))),
        P("range", {"bins": 3, "range": (-1.0, 1.0)}, x=spec((4, 5))),
        P("weight", {"bins": 3}, x=spec((6,)), weight=spec((6,), kind="positive")),
        P("density", {"bins": 5, "density": True}, x=spec((12,))),
        P("float64", {"bins": 4}, x=spec((10,), "float64")),
        P("tensor_bins", x=spec((10,)), bins=spec((4,), values=[-1.0, 0.0, 0.5, 2.0])),
        P("int64_refused", {"bins": 3}, x=spec((5,), "int64")),
    ]
    t["unique"] = [
        P("flat", x=spec((10,), "int64")),
        P(
            "inverse_counts",
            {"return_inverse": True, "return_counts": True},
            x=spec((3, 4), "int64"),
        ),
        P("floats", {"return_counts": True}, x=spec((6,), values=[1.5, -1.0, 1.5, 0.0, -0.0, 2.0])),
        P(
            "dim0",
            {"dim": 0, "return_inverse": True},
            x=spec((4, 2), "int64", values=[1, 2, 0, 1, 1, 2, 0, 0]),
        ),
        P("transposed", x=spec((4, 3), "int64", view="transpose:0:1")),
        P("bool", x=spec((5,), "bool")),
        P("empty", {"return_counts": True}, x=spec((0,))),
        P("zero_d", x=spec((), "int64")),
    ]
    t["unique_consecutive"] = [
        P("flat", x=spec((8,), "int64", values=[1, 1, 2, 2, 3, 1, 1, 2])),
        P("inverse_counts", {"return_inverse": True, "return_counts": True}, x=spec((8,), values=[1.0, 1.0, 2.0, 2.0, 3.0, 1.0, 1.0, 2.0])),
        P("matrix_flat", {"return_counts": True}, x=spec((3, 4), "int64", "index", high=2)),
        P("dim0", {"dim": 0, "return_counts": True}, x=spec((4, 2), "int64", values=[1, 2, 1, 2, 0, 0, 1, 2])),
        P("stepped", x=spec((10,), "int64", "index", high=2, view="slice:0:0:10:2")),
        P("empty", x=spec((0,), "int64")),
    ]  # fmt: skip
    t["masked_select"] = [
        P("same_shape", x=spec((3, 4)), mask=spec((3, 4), "bool")),
        P("broadcast_mask", x=spec((3, 4)), mask=spec((4,), "bool")),
        P("broadcast_input", x=spec((4,), "int64"), mask=spec((3, 4), "bool")),
        P("transposed", x=XT, mask=spec((3, 4), "bool")),
        P("zero_d", x=spec(()), mask=spec((), "bool")),
        P("empty", x=spec((0, 4)), mask=spec((4,), "bool")),
        P("int_mask_refused", x=spec((3, 4)), mask=spec((3, 4), "int64")),
        P("shapes_do_not_broadcast", x=spec((3, 4)), mask=spec((2, 4), "bool")),
    ]
    t["argwhere"] = [
        P(
            "float",
            x=spec((3, 4), values=[0.0, 1.0, 0.0, -2.0, NAN, 0.0, 0.0, 3.0, -0.0, 1.0, 0.0, 0.0]),
        ),
        P("bool", x=spec((2, 3, 2), "bool")),
        P("int64_transposed", x=spec((4, 3), "int64", view="transpose:0:1")),
        P("zero_d", x=spec((), values=[2.0])),
        P("empty", x=spec((0, 3))),
        P("vector", x=spec((6,), "int64")),
    ]
    return t


# ---- torch.linalg ---------------------------------------------------------------------------

# Diagonally dominant, unsymmetric (LU pivots on it), and a symmetric positive-definite one.
WELL = (4.0, 1.0, -2.0, 0.5, -1.0, 5.0, 1.0, 2.0, 0.5, -1.5, 6.0, 1.0, 2.0, 0.0, -1.0, 3.0)
PIVOTING = (1.0, 2.0, 0.0, 3.0, 0.5, 1.0, 4.0, -2.0, 2.0, -1.0, 1.0, 1.0, -3.0, 0.0, 2.0, 1.0)
SPD = (6.0, 2.0, 1.0, 0.5, 2.0, 5.0, -1.0, 1.0, 1.0, -1.0, 4.0, 0.0, 0.5, 1.0, 0.0, 3.0)
SINGULAR = (1.0, 2.0, 3.0, 2.0, 4.0, 6.0, 1.0, 0.0, 1.0)


def _matrix(values, dtype="float64", view="none", shape=(4, 4)):
    return spec(shape, dtype, values=values, view=view)


def linalg_table() -> dict[str, list[Pattern]]:
    square = [
        P("float64", A=_matrix(WELL)),
        P("pivoting", A=_matrix(PIVOTING)),
        P("transposed", A=_matrix(WELL, view="transpose:0:1")),
        P("batched", A=spec((2, 4, 4), "float64", values=WELL + PIVOTING)),
        P("float32", A=_matrix(WELL, "float32")),
        P("empty", A=spec((0, 0), "float64")),
        P("not_square", A=spec((3, 4), "float64")),
        P("int64_refused", A=spec((3, 3), "int64")),
    ]
    rhs = spec((4, 2), "float64", values=(1.0, -2.0, 0.5, 3.0, 2.0, 1.0, -1.0, 0.0))
    t: dict[str, list[Pattern]] = {
        "linalg_det": square + [P("singular", A=_matrix(SINGULAR, shape=(3, 3)))],
        "linalg_slogdet": square,  # a singular one's sign is rounding's (LAPACK's tiny pivot)
        "linalg_inv": square + [P("singular", A=_matrix(SINGULAR, shape=(3, 3)))],
        "linalg_solve": [
            P("matrix_rhs", A=_matrix(WELL), B=rhs),
            P(
                "vector_rhs",
                A=_matrix(PIVOTING),
                B=spec((4,), "float64", values=(1.0, 2.0, 3.0, 4.0)),
            ),
            P(
                "left_false",
                {"left": False},
                A=_matrix(WELL),
                B=spec((2, 4), "float64", values=WELL[:8]),
            ),
            P("broadcast", A=spec((2, 4, 4), "float64", values=WELL + SPD), B=rhs),
            P("singular", A=_matrix(SINGULAR, shape=(3, 3)), B=spec((3, 1), "float64")),
            P("dtype_mismatch", A=_matrix(WELL), B=spec((4, 2))),
        ],
        "linalg_cholesky": [
            P("spd", A=_matrix(SPD)),
            P("upper", {"upper": True}, A=_matrix(SPD)),
            P("float32", A=_matrix(SPD, "float32")),
            P("not_positive_definite", A=_matrix(WELL[:8] + (-9.0,) * 8)),
            P("empty", A=spec((0, 0), "float64")),
        ],
        "linalg_lu_factor": [
            P("pivoting", A=_matrix(PIVOTING)),
            P("wide", A=spec((3, 4), "float64", values=WELL[:12])),
        ],
        "linalg_solve_triangular": [
            P("upper", {"upper": True}, A=_matrix(WELL), B=rhs),
            P("lower_unit", {"upper": False, "unitriangular": True}, A=_matrix(WELL), B=rhs),
            P(
                "right",
                {"upper": True, "left": False},
                A=_matrix(WELL),
                B=spec((2, 4), "float64", values=SPD[:8]),
            ),
        ],
        "linalg_qr": [
            P("square", A=_matrix(WELL)),
            P("tall_complete", {"mode": "complete"}, A=spec((4, 3), "float64", values=WELL[:12])),
            P("wide", A=spec((3, 4), "float64", values=PIVOTING[:12])),
            P("r_only", {"mode": "r"}, A=_matrix(PIVOTING)),
        ],
        "linalg_eigvalsh": [P("spd", A=_matrix(SPD)), P("upper", {"UPLO": "U"}, A=_matrix(SPD))],
        "linalg_svdvals": [
            P("square", A=_matrix(WELL)),
            P("wide", A=spec((3, 4), "float64", values=PIVOTING[:12])),
        ],
        "linalg_matrix_rank": [
            P("full", A=_matrix(WELL)),
            P("singular", A=_matrix(SINGULAR, shape=(3, 3))),
        ],
        "linalg_pinv": [
            P("square", A=_matrix(WELL)),
            P("tall", A=spec((4, 3), "float64", values=WELL[:12])),
        ],
        "linalg_matrix_norm": [
            *(
                P(f"ord_{name}", {"ord": o}, A=_matrix(WELL))
                for name, o in (
                    ("fro", "fro"),
                    ("nuc", "nuc"),
                    ("1", 1),
                    ("inf", INF),
                    ("2", 2),
                    ("minus_2", -2),
                )
            ),
            P("float32_dims", {"ord": 1, "dim": (0, 1), "keepdim": True}, A=spec((3, 4))),
            P("order_refused", {"ord": 3}, A=_matrix(WELL)),
        ],
        "linalg_vector_norm": [
            P("two", x=spec((3, 4))),
            P("one_dim", {"ord": 1, "dim": 1}, x=spec((3, 4))),
            P("inf_keepdim", {"ord": INF, "dim": 0, "keepdim": True}, x=spec((3, 4))),
            P("p3_transposed", {"ord": 3.0}, x=spec((5, 3), view="transpose:0:1")),
            P("zero", {"ord": 0}, x=spec((3, 4), "float64")),
            P("int64_refused", x=spec((3, 4), "int64")),
        ],
        "linalg_norm": [
            P("flat", x=spec((3, 4))),
            P("vector_ord_3", {"ord": 3.0}, x=spec((5,), "float64")),
            P("matrix_fro_dims", {"ord": "fro", "dim": (0, 1)}, x=spec((3, 4))),
            P("matrix_nuc", {"ord": "nuc"}, x=_matrix(WELL)),
            P("matrix_inf_transposed", {"ord": INF}, x=_matrix(PIVOTING, view="transpose:0:1")),
            P("vector_dim_keepdim", {"dim": 1, "keepdim": True}, x=spec((3, 4), "float64")),
            P("three_dims_with_ord_refused", {"ord": 2}, x=spec((2, 2, 2))),
        ],
        "linalg_eigh": [
            P("spd", A=_matrix(SPD)),
            P("upper", {"UPLO": "U"}, A=_matrix(SPD)),
            P("batched_float32", A=spec((2, 4, 4), values=SPD + SPD[::-1])),
            P("not_square", A=spec((3, 4), "float64")),
        ],
        "linalg_svd": [
            P("square", A=_matrix(WELL)),
            P(
                "tall_reduced",
                {"full_matrices": False},
                A=spec((4, 3), "float64", values=WELL[:12]),
            ),
            P(
                "wide_reduced",
                {"full_matrices": False},
                A=spec((3, 4), "float64", values=PIVOTING[:12]),
            ),
            P("float32_transposed", A=_matrix(PIVOTING, "float32", view="transpose:0:1")),
        ],
        "linalg_lstsq": [
            P("tall", A=spec((4, 3), "float64", values=WELL[:12]), B=spec((4, 2), "float64")),
            P("square_vector_rhs", A=_matrix(WELL), B=spec((4, 1), "float64")),
            P("rows_mismatch", A=spec((4, 3), "float64"), B=spec((3, 2), "float64")),
        ],
        "linalg_cond": [P("two", A=_matrix(WELL)), P("fro", {"p": "fro"}, A=_matrix(PIVOTING))],
        "linalg_matrix_power": [
            P("cube", {"n": 3}, A=_matrix(WELL)),
            P("inverse_square", {"n": -2}, A=_matrix(WELL)),
            P("zero", {"n": 0}, A=_matrix(WELL)),
            P("int64", {"n": 2}, A=spec((3, 3), "int64")),
            P("not_square", {"n": 2}, A=spec((3, 4), "float64")),
        ],
        "linalg_cross": [
            P("rows", a=spec((4, 3)), b=spec((4, 3))),
            P("broadcast", a=spec((2, 3), "float64"), b=spec((3,), "float64")),
            P("int64", a=spec((2, 3), "int64"), b=spec((2, 3), "int64")),
            P("wrong_size", a=spec((2, 2)), b=spec((2, 2))),
        ],
        "linalg_vecdot": [
            P("rows", x=spec((3, 4)), y=spec((3, 4))),
            P("broadcast", x=spec((3, 4), "float64"), y=spec((4,), "float64")),
        ],
        "linalg_multi_dot": [
            P(
                "chain",
                a=spec((2, 3), "float64"),
                b=spec((3, 4), "float64"),
                c=spec((4, 2), "float64"),
            ),
            P(
                "vectors_at_ends",
                a=spec((3,), "float64"),
                b=spec((3, 4), "float64"),
                c=spec((4,), "float64"),
            ),
            P("mismatch", a=spec((2, 3)), b=spec((2, 3))),
        ],
    }
    return t


def more_table() -> dict[str, list[Pattern]]:
    t: dict[str, list[Pattern]] = {}
    tables = (shape_table(), math_table(), order_table(), contraction_table(), writes_table())
    for part in (*tables, linalg_table()):
        t.update(part)
    return t
