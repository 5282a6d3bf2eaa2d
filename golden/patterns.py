"""The golden cases as data: input specs, the chapter's pattern lists, and which op gets which
patterns (op_table). golden/generate.py turns them into files with PyTorch."""

from __future__ import annotations

import golden_ops
from patterns_aliases import alias_table
from patterns_dtypes import (
    MATMUL_DTYPE_PATTERNS,
    OTHER_DTYPE_PATTERNS,
    SOFTMAX_DTYPE_PATTERNS,
    TO_EVERY_PAIR,
    TO_FIRST_DTYPES,
    TO_SPECIAL,
    binary_bfloat16_patterns,
    binary_dtype_patterns,
    reduction_dtype_patterns,
    unary_bfloat16_patterns,
    unary_dtype_patterns,
)
from patterns_excluded import EXCLUDED_NEW
from patterns_layers import layer_table
from patterns_more import more_table
from patterns_nn import activation_table, loss_table
from patterns_spatial import spatial_table
from specs import (
    INF,
    NAN,
    SPECIAL_VALUES,
    P,
    Pattern,
    layout_patterns,
    spec,
)

# ---- binary patterns -------------------------------------------------------------------------


def special_pair(dtype: str = "float32") -> Pattern:
    """Every special value against every other: a (10, 1) column against a (1, 10) row."""
    return P(
        f"special_{dtype}",
        a=spec((10, 1), dtype, values=SPECIAL_VALUES),
        b=spec((1, 10), dtype, values=SPECIAL_VALUES),
    )


def broadcast_patterns(kind: str = "normal", int_kind: str = "int64") -> list[Pattern]:
    """Shapes and layouts of a binary op; `kind` makes the floats, `int_kind` the int64 inputs."""
    f = lambda shape, view="none": spec(shape, kind=kind, view=view)  # noqa: E731
    return [
        P("same_shape", a=f((3, 4)), b=f((3, 4))),
        P("rank_broadcast", a=f((2, 3, 4)), b=f((4,))),
        P("size_one_broadcast", a=f((3, 1)), b=f((1, 4))),
        P("transposed", a=f((4, 3), "transpose:0:1"), b=f((3, 4))),
        P("both_transposed", a=f((9, 17), "transpose:0:1"), b=f((9, 17), "transpose:0:1")),
        P("stepped_slice", a=f((3, 8), "slice:1:1:8:2"), b=f((3, 4))),
        P("stepped_rows", a=f((7, 4), "slice:0:0:7:3"), b=f((3, 1))),
        P("expanded", a=f((1, 4), "expand:3:4"), b=f((3, 4))),
        P("permuted_broadcast", a=f((4, 2, 3), "permute:1:2:0"), b=f((3, 1))),
        P("zero_d_and_tensor", a=f(()), b=f((3, 4))),
        P("tensor_and_zero_d", a=f((3, 4)), b=f(())),
        P("zero_d_and_zero_d", a=f(()), b=f(())),
        P("python_float", {"other": 1.5}, a=f((3, 4))),
        P("empty", a=f((0, 4)), b=f((4,))),
        P("empty_broadcast", a=f((2, 0, 3)), b=f((1, 3))),
        P("odd_sizes", a=f((5, 37)), b=f((5, 37))),
        P("float64", a=spec((3, 4), "float64", kind), b=spec((3, 4), "float64", kind)),
        P("int64", a=spec((3, 4), "int64", int_kind), b=spec((3, 4), "int64", int_kind)),
        P("int64_python_int", {"other": 3}, a=spec((3, 4), "int64", int_kind)),
        P("shapes_do_not_broadcast", a=f((3, 4)), b=f((2, 4))),
    ]


def promotion_patterns(int_kind: str = "int64") -> list[Pattern]:
    """Chapter 02's promotion: categories, 0-d tensors that only promote across categories, and
    Python scalars."""
    i64 = lambda shape: spec(shape, "int64", int_kind)  # noqa: E731
    return [
        P("int64_and_float32", a=i64((3, 4)), b=spec((3, 4))),
        P("float32_and_float64", a=spec((3, 4)), b=spec((3, 4), "float64")),
        P("bool_and_int64", a=spec((3, 4), "bool"), b=i64((3, 4))),
        P("float32_and_zero_d_float64", a=spec((3, 4)), b=spec((), "float64")),
        P("int64_and_zero_d_float32", a=i64((3, 4)), b=spec(())),
        P("bool_and_zero_d_int64", a=spec((3, 4), "bool"), b=i64(())),
        P("zero_d_int64_and_zero_d_float64", a=i64(()), b=spec((), "float64")),
        P("int64_and_python_float", {"other": 2.5}, a=i64((3, 4))),
        P("float64_and_python_float", {"other": 0.1}, a=spec((3, 4), "float64")),
        P("float32_and_python_int", {"other": 3}, a=spec((3, 4))),
        P("int64_and_python_bool", {"other": True}, a=i64((3, 4))),
    ]


BOOL_PATTERNS = [
    P("bool_and_bool", a=spec((3, 4), "bool"), b=spec((3, 4), "bool")),
    P("bool_and_float32", a=spec((3, 4), "bool"), b=spec((3, 4))),
]


def binary_patterns(kind: str = "normal", int_kind: str = "int64", scalars: bool = True):
    """The binary grid; `scalars=False` leaves out Python-number operands, for the ops whose
    PyTorch signature takes tensors only (maximum, minimum, the logical ops)."""
    out = broadcast_patterns(kind, int_kind) + promotion_patterns(int_kind) + BOOL_PATTERNS
    out += binary_dtype_patterns(kind, int_kind)
    out += [special_pair("float32"), special_pair("float64")] + binary_bfloat16_patterns(kind)
    return [p for p in out if scalars or not ({"input", "other"} & set(p.args))]


INTEGER_PATTERNS = [
    P("int64", a=spec((3, 4), "int64"), b=spec((3, 4), "int64")),
    P("int64_transposed", a=spec((4, 3), "int64", view="transpose:0:1"), b=spec((3, 4), "int64")),
    P("int64_broadcast", a=spec((2, 3, 4), "int64"), b=spec((4,), "int64")),
    P("int64_zero_d", a=spec((3, 4), "int64"), b=spec((), "int64")),
    P("int64_python_int", {"other": 6}, a=spec((3, 4), "int64")),
    P("bool_and_bool", a=spec((3, 4), "bool"), b=spec((3, 4), "bool")),
    P("bool_and_int64", a=spec((3, 4), "bool"), b=spec((3, 4), "int64")),
    P("empty", a=spec((0, 4), "int64"), b=spec((4,), "int64")),
    P("float32_refused", a=spec((3, 4)), b=spec((3, 4), "int64")),
]

POW_EXTRA = [
    P(
        "i64_negative_exponent",
        a=spec((5,), "int64", values=[2, 1, -1, -1, 0]),
        b=spec((5,), "int64", values=[-1, -1, -1, -2, -1]),
    ),
    P("i64_python_negative_exponent", {"other": -2}, a=spec((3, 4), "int64")),
    P("float_python_half", {"other": 0.5}, a=spec((3, 4), kind="positive")),
]
DIVISION_EXTRA = [
    P("int64_zero_divisor", a=spec((4,), "int64"), b=spec((4,), "int64", values=[1, 0, 2, -1])),
    P(
        "int64_signs",
        a=spec((8,), "int64", values=[7, -7, 7, -7, 6, -6, 0, 1]),
        b=spec((8,), "int64", values=[2, 2, -2, -2, 3, -3, 5, -4]),
    ),
]

# ---- unary patterns --------------------------------------------------------------------------


def unary_patterns(kind: str = "normal") -> list[Pattern]:
    f = lambda shape, view="none", dtype="float32": spec(shape, dtype, kind, view)  # noqa: E731
    return [
        *layout_patterns(kind),
        P("odd_sizes", x=f((5, 37))),
        P("float64", x=f((3, 4), dtype="float64")),
        P("float64_transposed", x=f((9, 17), "transpose:0:1", "float64")),
        P("int64", x=spec((3, 4), "int64")),
        P("bool", x=spec((3, 4), "bool")),
        P("special_float32", x=spec((10,), values=SPECIAL_VALUES)),
        P("special_float64", x=spec((10,), "float64", values=SPECIAL_VALUES)),
        *unary_dtype_patterns(kind),
        *unary_bfloat16_patterns(kind),
    ]


ROUNDING_EXTRA = [
    P("halves", x=spec((10,), values=[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -0.49, 0.51, 1e20])),
]

# ---- in place --------------------------------------------------------------------------------


def inplace_patterns(kind: str = "normal", int_kind: str = "int64") -> list[Pattern]:
    """Chapter 05's in-place grid: self's layout kept, other broadcast, dtype never changes."""
    f = lambda shape, view="none", dtype="float32": spec(shape, dtype, kind, view)  # noqa: E731
    return [
        P("contiguous", x=f((3, 4)), y=f((3, 4))),
        P("transposed_self", x=f((4, 3), "transpose:0:1"), y=f((3, 4))),
        P("stepped_self", x=f((3, 8), "slice:1:0:8:2"), y=f((3, 4))),
        P("broadcast_other", x=f((3, 4)), y=f((4,))),
        P("zero_d_other", x=f((3, 4)), y=f(())),
        P("python_scalar", {"other": 2.0}, x=f((3, 4))),
        P("zero_d_self", x=f(()), y=f(())),
        P("empty_self", x=f((0, 4)), y=f((4,))),
        P("float64_other_into_float32", x=f((3, 4)), y=f((3, 4), dtype="float64")),
        P("int64_other_into_float32", x=f((3, 4)), y=spec((3, 4), "int64", int_kind)),
        P("int64", x=spec((3, 4), "int64", int_kind), y=spec((3, 4), "int64", int_kind)),
        P("float_into_int64_refused", x=spec((3, 4), "int64", int_kind), y=f((3, 4))),
        P("expanded_self_refused", x=f((1, 4), "expand:3:4"), y=f((3, 4))),
        P("broadcast_self_refused", x=f((1, 4)), y=f((3, 4))),
    ]


CLAMP_PATTERNS = [
    P("both_bounds", {"min": -0.5, "max": 0.5}, x=spec((3, 4))),
    P("min_only", {"min": 0.0}, x=spec((3, 4))),
    P("max_only", {"max": 0.25}, x=spec((5, 3), view="transpose:0:1")),
    P("min_above_max", {"min": 1.0, "max": -1.0}, x=spec((3, 4))),
    P("nan_bound", {"min": NAN}, x=spec((3, 4))),
    P("special_values", {"min": -1.0, "max": 1.0}, x=spec((10,), values=SPECIAL_VALUES)),
    P("int64", {"min": -2, "max": 3}, x=spec((3, 4), "int64")),
    P("int64_float_bound", {"min": -1.5}, x=spec((3, 4), "int64")),
    P("float64_stepped", {"min": -1.0}, x=spec((3, 8), "float64", view="slice:1:0:8:2")),
    P("zero_d", {"max": 0.0}, x=spec(())),
    P("empty", {"min": 0.0}, x=spec((0, 2))),
    P("tensor_bounds", x=spec((3, 4)), min=spec((4,)), max=spec((3, 1), kind="positive")),
    P("bool_refused", {"min": 0}, x=spec((3, 4), "bool")),
    P("no_bounds_refused", x=spec((3, 4))),
]
CLAMP_INPLACE_PATTERNS = [p for p in CLAMP_PATTERNS if p.name != "tensor_bounds"] + [
    P("transposed_self", {"min": -0.5, "max": 0.5}, x=spec((4, 3), view="transpose:0:1")),
    P("int64_float_bound_refused", {"min": 0.5}, x=spec((3, 4), "int64")),
]

WHERE_PATTERNS = [
    P("same_shape", c=spec((3, 4), "bool"), a=spec((3, 4)), b=spec((3, 4))),
    P("broadcast", c=spec((3, 1), "bool"), a=spec((4,)), b=spec((2, 3, 4))),
    P("transposed", c=spec((4, 3), "bool", view="transpose:0:1"), a=spec((3, 4)), b=spec(())),
    P("mixed_dtypes", c=spec((3, 4), "bool"), a=spec((3, 4), "int64"), b=spec((3, 4), "float64")),
    P("python_scalar", {"other": 0.0}, c=spec((3, 4), "bool"), a=spec((3, 4))),
    P("bool_values", c=spec((3, 4), "bool"), a=spec((3, 4), "bool"), b=spec((3, 4), "bool")),
    P("empty", c=spec((0, 4), "bool"), a=spec((0, 4)), b=spec((4,))),
    P("zero_d", c=spec((), "bool"), a=spec(()), b=spec(())),
    P("condition_not_bool_refused", c=spec((3, 4)), a=spec((3, 4)), b=spec((3, 4))),
]

MASKED_FILL_PATTERNS = [
    P("same_shape", {"value": -1.5}, x=spec((3, 4)), mask=spec((3, 4), "bool")),
    P("broadcast_mask", {"value": 0.0}, x=spec((3, 4)), mask=spec((4,), "bool")),
    P("transposed", {"value": 2.0}, x=spec((4, 3), view="transpose:0:1"), mask=spec((3, 4), "bool")),
    P("int64_value_into_float", {"value": 7}, x=spec((3, 4)), mask=spec((3, 4), "bool")),
    P("nan_value", {"value": NAN}, x=spec((3, 4), "float64"), mask=spec((3, 4), "bool")),
    P("int64", {"value": -9}, x=spec((3, 4), "int64"), mask=spec((3, 4), "bool")),
    P("bool", {"value": True}, x=spec((3, 4), "bool"), mask=spec((3, 4), "bool")),
    P("empty", {"value": 1.0}, x=spec((0, 4)), mask=spec((0, 4), "bool")),
    P("zero_d", {"value": 1.0}, x=spec(()), mask=spec((), "bool")),
    P("mask_not_bool_refused", {"value": 1.0}, x=spec((3, 4)), mask=spec((3, 4), "int64")),
]  # fmt: skip
MASKED_FILL_WIDER = [
    P("wider_mask", {"value": 3.0}, x=spec((4,)), mask=spec((3, 4), "bool")),
]

COPY_PATTERNS = [
    P("contiguous", x=spec((3, 4)), y=spec((3, 4))),
    P("transposed_self", x=spec((4, 3), view="transpose:0:1"), y=spec((3, 4))),
    P("transposed_source", x=spec((3, 4)), y=spec((4, 3), view="transpose:0:1")),
    P("stepped_self", x=spec((3, 8), view="slice:1:1:8:2"), y=spec((3, 4))),
    P("broadcast_source", x=spec((3, 4)), y=spec((4,))),
    P("float64_to_float32", x=spec((3, 4)), y=spec((3, 4), "float64")),
    P("int64_to_float32", x=spec((3, 4)), y=spec((3, 4), "int64")),
    P("bool_to_int64", x=spec((3, 4), "int64"), y=spec((3, 4), "bool")),
    P("float32_to_bool", x=spec((3, 4), "bool"), y=spec((3, 4))),
    P("empty", x=spec((0, 4)), y=spec((0, 4))),
    P("zero_d", x=spec(()), y=spec(())),
    P("expanded_self_refused", x=spec((1, 4), view="expand:3:4"), y=spec((3, 4))),
    P("shape_mismatch_refused", x=spec((3, 4)), y=spec((2, 4))),
]
COPY_FLOAT_TO_INT = [
    P("float32_to_int64", x=spec((3, 4), "int64"), y=spec((3, 4))),
    P("special_to_int64", x=spec((10,), "int64"), y=spec((10,), values=SPECIAL_VALUES)),
]

FILL_PATTERNS = [
    P("float", {"value": 2.5}, x=spec((3, 4))),
    P("transposed", {"value": -1.0}, x=spec((4, 3), view="transpose:0:1")),
    P("stepped", {"value": 3.0}, x=spec((3, 8), view="slice:1:0:8:3")),
    P("int_into_float64", {"value": 7}, x=spec((3, 4), "float64")),
    P("float_into_int64", {"value": 2.9}, x=spec((3, 4), "int64")),
    P("into_bool", {"value": 1}, x=spec((3, 4), "bool")),
    P("nan", {"value": NAN}, x=spec((2, 2))),
    P("zero_d", {"value": 4.0}, x=spec(())),
    P("empty", {"value": 4.0}, x=spec((0, 3))),
]
ZERO_PATTERNS = [
    P(p.name, {}, **p.inputs) for p in FILL_PATTERNS if p.name not in ("nan", "int_into_float64")
]

# ---- predicates ------------------------------------------------------------------------------

EQUAL_PATTERNS = [
    P("same_values", a=spec((3, 4), values=[1.0] * 12), b=spec((3, 4), values=[1.0] * 12)),
    P("different_values", a=spec((3, 4)), b=spec((3, 4))),
    P("different_shapes", a=spec((3, 4), values=[1.0] * 12), b=spec((4, 3), values=[1.0] * 12)),
    P("nan_is_not_equal", a=spec((4,), values=[1.0, NAN, 3.0, 4.0]), b=spec((4,), values=[1.0, NAN, 3.0, 4.0])),
    P("transposed_equal", a=spec((2, 2), values=[1.0, 2.0, 2.0, 1.0], view="transpose:0:1"), b=spec((2, 2), values=[1.0, 2.0, 2.0, 1.0])),
    P("int64", a=spec((4,), "int64", values=[1, 2, 3, 4]), b=spec((4,), "int64", values=[1, 2, 3, 4])),
    P("empty", a=spec((0,)), b=spec((0,))),
]  # fmt: skip
ALLCLOSE_PATTERNS = [
    P("within_rtol", a=spec((3,), values=[1.0, 100.0, 1e-9]), b=spec((3,), values=[1.000001, 100.0005, 0.0])),
    P("outside_rtol", a=spec((2,), values=[1.0, 100.0]), b=spec((2,), values=[1.001, 100.0])),
    P("custom_tolerances", {"rtol": 0.1, "atol": 0.5}, a=spec((2,), values=[1.0, 10.0]), b=spec((2,), values=[1.4, 10.9])),
    P("nan_not_close", a=spec((2,), values=[NAN, 1.0]), b=spec((2,), values=[NAN, 1.0])),
    P("nan_close_when_asked", {"equal_nan": True}, a=spec((2,), values=[NAN, 1.0]), b=spec((2,), values=[NAN, 1.0])),
    P("equal_infinities", a=spec((2,), values=[INF, -INF]), b=spec((2,), values=[INF, -INF])),
    P("opposite_infinities", a=spec((1,), values=[INF]), b=spec((1,), values=[-INF])),
    P("broadcast", a=spec((3, 2), values=[1.0, 2.0] * 3), b=spec((2,), values=[1.0, 2.0])),
    P("float64", a=spec((3, 4), "float64"), b=spec((3, 4), "float64")),
]  # fmt: skip

# ---- reductions ------------------------------------------------------------------------------

NAN_ROW = [1.0, NAN, 3.0, -2.0, 0.5, 4.0]


def reduction_patterns(
    kind: str = "normal", dtypes: bool = True, dim_tuples: bool = True, keepdim: bool = True
) -> list[Pattern]:
    """Every dim, negative dims, two dims, keepdim, views, 0-d, empty, NaN; `dim_tuples` and
    `keepdim` off for the ops whose PyTorch signature lacks them (prod, max, count_nonzero)."""
    f = lambda shape, view="none": spec(shape, kind=kind, view=view)  # noqa: E731
    out = [
        P("all", x=f((3, 4))),
        P("dim0", {"dim": 0}, x=f((3, 4))),
        P("dim1", {"dim": 1}, x=f((3, 4))),
        P("negative_dim", {"dim": -1}, x=f((2, 3, 4))),
        P("middle_dim", {"dim": 1}, x=f((2, 3, 4))),
        P("two_dims", {"dim": (0, 2)}, x=f((2, 3, 4))),
        P("keepdim", {"dim": 1, "keepdim": True}, x=f((3, 4))),
        P("keepdim_two", {"dim": (1, 2), "keepdim": True}, x=f((2, 3, 4))),
        P("transposed", {"dim": 1}, x=f((4, 3), "transpose:0:1")),
        P("stepped", {"dim": 0}, x=f((3, 8), "slice:1:1:8:2")),
        P("expanded", {"dim": 0}, x=f((1, 4), "expand:3:4")),
        P("permuted", {"dim": 2}, x=f((4, 2, 3), "permute:1:2:0")),
        P("long_row", {"dim": 1}, x=f((3, 301))),
        P("zero_d", x=f(())),
        P("zero_d_dim0", {"dim": 0}, x=f(())),
        P("nan", {"dim": 0}, x=spec((6,), values=NAN_ROW)),
        P("empty_kept_dim", {"dim": 1}, x=f((0, 3))),
        P("dim_out_of_range", {"dim": 2}, x=f((3, 4))),
    ]
    out += reduction_dtype_patterns(kind)
    out += [P("empty_all", x=f((0, 3))), P("empty_dim", {"dim": 0}, x=f((0, 3)))]
    if dtypes:
        out += [
            P("float64", {"dim": 1}, x=spec((3, 4), "float64", kind)),
            P("int64", {"dim": 0}, x=spec((3, 4), "int64")),
            P("bool", {"dim": 1}, x=spec((3, 4), "bool")),
        ]
    if not dim_tuples:
        out = [p for p in out if not isinstance(p.args.get("dim"), tuple)]
    if not keepdim:
        out = [p for p in out if "keepdim" not in p.args]
    return out


ARG_PATTERNS = [
    P("all", x=spec((3, 4))),
    P("dim0", {"dim": 0}, x=spec((3, 4))),
    P("dim1_keepdim", {"dim": 1, "keepdim": True}, x=spec((3, 4))),
    P("negative_dim", {"dim": -1}, x=spec((2, 3, 4))),
    P("transposed", {"dim": 1}, x=spec((4, 3), view="transpose:0:1")),
    P("ties", {"dim": 1}, x=spec((2, 4), values=[1.0, 3.0, 3.0, 0.0, 2.0, 2.0, 2.0, 2.0])),
    P("nan", {"dim": 1}, x=spec((2, 3), values=[1.0, NAN, NAN, 5.0, 4.0, NAN])),
    P("int64", {"dim": 0}, x=spec((3, 4), "int64")),
    P("float64", {"dim": 1}, x=spec((3, 4), "float64")),
    P("zero_d", x=spec(())),
    P("empty_refused", {"dim": 0}, x=spec((0, 3))),
]

# ---- matmul, indexing, sequence, nn -------------------------------------------------------------

MATMUL_SHAPES = [
    ("vector_vector", (4,), (4,)),
    ("matrix_matrix", (2, 3), (3, 4)),
    ("vector_matrix", (3,), (3, 2)),
    ("matrix_vector", (2, 3), (3,)),
    ("batched", (5, 2, 3), (5, 3, 2)),
    ("broadcast_batches", (2, 1, 3, 4), (5, 4, 2)),
    ("vector_batched", (3,), (5, 3, 2)),
    ("batched_vector", (5, 2, 3), (3,)),
    ("empty_inner", (2, 0), (0, 3)),
    ("empty_batch", (0, 2, 3), (3, 2)),
]
MATMUL_PATTERNS = [P(n, a=spec(sa), b=spec(sb)) for n, sa, sb in MATMUL_SHAPES] + [
    P("transposed", a=spec((3, 2), view="transpose:0:1"), b=spec((4, 3), view="transpose:0:1")),
    P("larger", a=spec((17, 33)), b=spec((33, 9))),
    P("float64", a=spec((4, 5), "float64"), b=spec((5, 3), "float64")),
    P("int64", a=spec((3, 4), "int64"), b=spec((4, 2), "int64")),
    P("shapes_do_not_align", a=spec((2, 3)), b=spec((4, 2))),
]

SOFTMAX_PATTERNS = [
    P("last_dim", {"dim": -1}, x=spec((3, 5))),
    P("first_dim", {"dim": 0}, x=spec((3, 5))),
    P("middle_dim", {"dim": 1}, x=spec((2, 3, 4))),
    P("transposed", {"dim": 1}, x=spec((5, 3), view="transpose:0:1")),
    P("stepped", {"dim": -1}, x=spec((3, 10), view="slice:1:0:10:2")),
    P("large_values", {"dim": -1}, x=spec((2, 3), values=[1000.0, 1001.0, 999.0, -1000.0, -1001.0, -999.0])),
    P("all_minus_infinity", {"dim": -1}, x=spec((2, 2), values=[-INF, -INF, 0.0, 1.0])),
    P("plus_infinity", {"dim": -1}, x=spec((2, 2), values=[INF, 1.0, 0.0, 1.0])),
    P("float64", {"dim": -1}, x=spec((3, 5), "float64")),
    P("long_row", {"dim": -1}, x=spec((2, 300))),
    P("zero_d", {"dim": 0}, x=spec(())),
    P("empty", {"dim": -1}, x=spec((0, 4))),
    P("dim_out_of_range", {"dim": 2}, x=spec((3, 4))),
]  # fmt: skip
LOGSUMEXP_PATTERNS = [p for p in SOFTMAX_PATTERNS if p.name != "zero_d"] + [
    P("keepdim", {"dim": 1, "keepdim": True}, x=spec((3, 4))),
    P("two_dims", {"dim": (0, 1)}, x=spec((3, 4))),
    P("minus_infinity_row", {"dim": -1}, x=spec((1, 3), values=[-INF, 0.0, 1.0])),
]

CROSS_ENTROPY_PATTERNS = [
    P("basic", logits=spec((4, 5)), targets=spec((4,), kind="index", high=5)),
    P("float64", logits=spec((3, 6), "float64"), targets=spec((3,), kind="index", high=6)),
    P("transposed_logits", logits=spec((5, 4), view="transpose:0:1"), targets=spec((4,), kind="index", high=5)),
    P("large_logits", logits=spec((2, 3), values=[1000.0, 0.0, -1000.0, 5.0, 5.0, 5.0]), targets=spec((2,), "int64", values=[2, 0])),
    P("target_out_of_range", logits=spec((2, 3)), targets=spec((2,), "int64", values=[1, 3])),
]  # fmt: skip
LAYER_NORM_PATTERNS = [
    P("last_dim", {"normalized_shape": (4,)}, x=spec((3, 4))),
    P("two_dims", {"normalized_shape": (3, 4)}, x=spec((2, 3, 4))),
    P("affine", {"normalized_shape": (5,)}, x=spec((3, 5)), weight=spec((5,)), bias=spec((5,))),
    P("transposed", {"normalized_shape": (3,)}, x=spec((3, 4), view="transpose:0:1")),
    P("float64", {"normalized_shape": (4,), "eps": 1e-3}, x=spec((3, 4), "float64")),
    P("constant_rows", {"normalized_shape": (4,)}, x=spec((2, 4), values=[3.0] * 8)),
    P("shape_mismatch", {"normalized_shape": (5,)}, x=spec((3, 4))),
]

INDEX = lambda shape, high, view="none": spec(shape, kind="index", high=high, view=view)  # noqa: E731
CAT_PATTERNS = [
    P("dim0", {"dim": 0}, a=spec((2, 3)), b=spec((4, 3))),
    P("dim1", {"dim": 1}, a=spec((2, 3)), b=spec((2, 1)), c=spec((2, 2))),
    P("negative_dim", {"dim": -1}, a=spec((2, 2, 3)), b=spec((2, 2, 2))),
    P("transposed", {"dim": 0}, a=spec((3, 2), view="transpose:0:1"), b=spec((2, 3))),
    P("mixed_dtypes", {"dim": 0}, a=spec((2, 3), "int64"), b=spec((1, 3))),
    P("empty_part", {"dim": 0}, a=spec((0, 3)), b=spec((2, 3))),
    P("shape_mismatch", {"dim": 0}, a=spec((2, 3)), b=spec((2, 4))),
]
STACK_PATTERNS = [
    P("dim0", {"dim": 0}, a=spec((2, 3)), b=spec((2, 3))),
    P("last_dim", {"dim": 2}, a=spec((2, 3)), b=spec((2, 3)), c=spec((2, 3))),
    P("transposed", {"dim": 1}, a=spec((3, 2), view="transpose:0:1"), b=spec((2, 3))),
    P("int64", {"dim": 0}, a=spec((4,), "int64"), b=spec((4,), "int64")),
    P("shape_mismatch", {"dim": 0}, a=spec((2, 3)), b=spec((3, 2))),
]
INDEX_SELECT_PATTERNS = [
    P("dim0", {"dim": 0}, x=spec((4, 3)), index=INDEX((5,), 4)),
    P("dim1", {"dim": 1}, x=spec((3, 6)), index=INDEX((3,), 6)),
    P("transposed", {"dim": 0}, x=spec((3, 4), view="transpose:0:1"), index=INDEX((2,), 4)),
    P("int64", {"dim": 1}, x=spec((3, 4), "int64"), index=INDEX((6,), 4)),
    P("empty_index", {"dim": 0}, x=spec((4, 3)), index=spec((0,), "int64")),
    P("index_out_of_range", {"dim": 0}, x=spec((4, 3)), index=spec((2,), "int64", values=[1, 4])),
]
GATHER_PATTERNS = [
    P("dim0", {"dim": 0}, x=spec((4, 3)), index=INDEX((2, 3), 4)),
    P("dim1", {"dim": 1}, x=spec((3, 5)), index=INDEX((3, 4), 5)),
    P("smaller_index", {"dim": 1}, x=spec((3, 5)), index=INDEX((2, 2), 5)),
    P("transposed", {"dim": 1}, x=spec((5, 3), view="transpose:0:1"), index=INDEX((3, 2), 5)),
    P("float64", {"dim": 0}, x=spec((4, 3), "float64"), index=INDEX((4, 3), 4)),
    P("index_out_of_range", {"dim": 1}, x=spec((2, 3)), index=spec((2, 1), "int64", values=[0, 3])),
]
SCATTER_ADD_PATTERNS = [
    P("dim0", {"dim": 0}, x=spec((3, 4)), index=INDEX((5, 4), 3), src=spec((5, 4))),
    P("dim1", {"dim": 1}, x=spec((3, 4)), index=INDEX((3, 6), 4), src=spec((3, 6))),
    P("int64", {"dim": 1}, x=spec((2, 3), "int64"), index=INDEX((2, 4), 3), src=spec((2, 4), "int64")),
    P("index_out_of_range", {"dim": 0}, x=spec((2, 2)), index=spec((1, 2), "int64", values=[0, 2]), src=spec((1, 2))),
]  # fmt: skip
INDEX_ADD_PATTERNS = [
    P("dim0", {"dim": 0}, x=spec((4, 3)), index=INDEX((6,), 4), src=spec((6, 3))),
    P("dim1", {"dim": 1}, x=spec((3, 4)), index=INDEX((2,), 4), src=spec((3, 2))),
    P("transposed_self", {"dim": 0}, x=spec((3, 4), view="transpose:0:1"), index=INDEX((2,), 4), src=spec((2, 3))),
    P("index_out_of_range", {"dim": 0}, x=spec((2, 2)), index=spec((1,), "int64", values=[5]), src=spec((1, 2))),
]  # fmt: skip
TAKE_ALONG_DIM_PATTERNS = [
    P("dim1", {"dim": 1}, x=spec((3, 5)), indices=INDEX((3, 2), 5)),
    P("dim0", {"dim": 0}, x=spec((4, 3)), indices=INDEX((2, 3), 4)),
]
NONZERO_PATTERNS = [
    P("float", x=spec((3, 4), values=[0.0, 1.0, 0.0, -2.0, NAN, 0.0, 0.0, 3.0, -0.0, 0.0, 5.0, 0.0])),
    P("bool", x=spec((3, 4), "bool")),
    P("int64_transposed", x=spec((4, 3), "int64", view="transpose:0:1")),
    P("none_nonzero", x=spec((2, 3), values=[0.0] * 6)),
    P("one_dim", x=spec((7,), "int64")),
]  # fmt: skip

SCAN_PATTERNS = [
    P("dim0", {"dim": 0}, x=spec((3, 4))),
    P("dim1", {"dim": 1}, x=spec((3, 4))),
    P("negative_dim", {"dim": -1}, x=spec((2, 3, 4))),
    P("transposed", {"dim": 1}, x=spec((5, 3), view="transpose:0:1")),
    P("stepped", {"dim": 1}, x=spec((3, 10), view="slice:1:0:10:3")),
    P("nan", {"dim": 0}, x=spec((6,), values=NAN_ROW)),
    P("float64", {"dim": 1}, x=spec((3, 4), "float64")),
    P("int64", {"dim": 1}, x=spec((3, 4), "int64")),
    P("bool", {"dim": 1}, x=spec((3, 4), "bool")),
    P("zero_d", {"dim": 0}, x=spec(())),
    P("empty", {"dim": 0}, x=spec((0, 3))),
    P("long_row", {"dim": 1}, x=spec((2, 200))),
]
SORT_PATTERNS = [
    P("last_dim", {"dim": -1, "stable": True}, x=spec((3, 5))),
    P("dim0", {"dim": 0, "stable": True}, x=spec((4, 3))),
    P("descending", {"dim": -1, "descending": True, "stable": True}, x=spec((3, 5))),
    P("transposed", {"dim": 1, "stable": True}, x=spec((5, 3), view="transpose:0:1")),
    P("ties_stable", {"dim": -1, "stable": True}, x=spec((8,), values=[2.0, 1.0, 2.0, 0.0, 1.0, 2.0, 0.0, 1.0])),
    P("nan_last", {"dim": -1, "stable": True}, x=spec((6,), values=[1.0, NAN, -INF, 0.0, INF, -1.0])),
    P("int64", {"dim": -1, "stable": True}, x=spec((3, 6), "int64")),
    P("float64", {"dim": -1, "stable": True}, x=spec((3, 5), "float64")),
    P("empty", {"dim": -1, "stable": True}, x=spec((0, 3))),
]  # fmt: skip
TOPK_PATTERNS = [
    P("largest", {"k": 2}, x=spec((3, 5))),
    P("smallest", {"k": 3, "largest": False}, x=spec((3, 5))),
    P("dim0", {"k": 2, "dim": 0}, x=spec((4, 3))),
    P("transposed", {"k": 1}, x=spec((5, 3), view="transpose:0:1")),
    P("k_equals_size", {"k": 5}, x=spec((2, 5))),
    P("int64", {"k": 2}, x=spec((3, 6), values=list(range(18)), dtype="int64")),
    P("k_too_large", {"k": 6}, x=spec((2, 5))),
]
TRIANGLE_PATTERNS = [
    P("square", x=spec((4, 4))),
    P("diagonal_above", {"diagonal": 1}, x=spec((3, 5))),
    P("diagonal_below", {"diagonal": -1}, x=spec((5, 3))),
    P("batched", x=spec((2, 3, 3))),
    P("transposed", x=spec((4, 3), view="transpose:0:1")),
    P("int64", x=spec((3, 3), "int64")),
    P("bool", x=spec((3, 3), "bool")),
    P("one_dim_refused", x=spec((4,))),
]
FLIP_PATTERNS = [
    P("dim0", {"dims": (0,)}, x=spec((3, 4))),
    P("both_dims", {"dims": (0, 1)}, x=spec((3, 4))),
    P("negative_dim", {"dims": (-1,)}, x=spec((2, 3, 4))),
    P("transposed", {"dims": (1,)}, x=spec((4, 3), view="transpose:0:1")),
    P("int64", {"dims": (0,)}, x=spec((5,), "int64")),
    P("empty", {"dims": (0,)}, x=spec((0, 2))),
]
ROLL_PATTERNS = [
    P("flat", {"shifts": 2}, x=spec((3, 4))),
    P("dim1", {"shifts": 1, "dims": 1}, x=spec((3, 4))),
    P("negative_shift", {"shifts": -2, "dims": 0}, x=spec((5, 2))),
    P("two_dims", {"shifts": (1, 2), "dims": (0, 1)}, x=spec((3, 4))),
    P("shift_beyond_size", {"shifts": 7, "dims": 1}, x=spec((2, 3))),
    P("transposed", {"shifts": 1, "dims": 0}, x=spec((4, 3), view="transpose:0:1")),
]

INDEXING_PATTERNS = [
    P("int_rows", x=spec((4, 3)), index=spec((5,), "int64", values=[3, 0, 0, 2, 1])),
    P("negative_rows", x=spec((4, 3)), index=spec((3,), "int64", values=[-1, -4, 2])),
    P("int_matrix_index", x=spec((4, 3), "int64"), index=INDEX((2, 2), 4)),
    P("transposed_source", x=spec((3, 4), view="transpose:0:1"), index=INDEX((3,), 4)),
    P("bool_mask", x=spec((3, 4)), index=spec((3, 4), "bool")),
    P("bool_row_mask", x=spec((3, 4), "float64"), index=spec((3,), "bool", values=[True, False, True])),
    P("empty_index", x=spec((4, 3)), index=spec((0,), "int64")),
    P("index_out_of_range", x=spec((4, 3)), index=spec((2,), "int64", values=[1, 4])),
    P("mask_shape_mismatch", x=spec((3, 4)), index=spec((4,), "bool")),
]  # fmt: skip
SETITEM_PATTERNS = [
    P(p.name, {"value": -7.0 if p.name != "int_matrix_index" else 9}, **p.inputs)
    for p in INDEXING_PATTERNS
    if p.name != "int_rows"  # repeated indices: which write wins is unspecified
]

# ---- the Python operators: a scalar on either side ------------------------------------------------


def operator_patterns(kind: str = "normal", int_kind: str = "int64") -> list[Pattern]:
    f = lambda shape, view="none": spec(shape, kind=kind, view=view)  # noqa: E731
    i64 = lambda shape: spec(shape, "int64", int_kind)  # noqa: E731
    return [
        P("tensors", a=f((3, 4)), b=f((3, 4))),
        P("broadcast_transposed", a=f((4, 3), "transpose:0:1"), b=f((4,))),
        P("python_float_left", {"input": 2.5}, b=f((3, 4))),
        P("python_int_right", {"other": 3}, a=f((3, 4))),
        P("python_int_left_int64", {"input": 3}, b=i64((3, 4))),
        P("python_float_right_int64", {"other": 1.5}, a=i64((3, 4))),
        P("int64_tensors", a=i64((3, 4)), b=i64((2, 3, 4))),
        P("zero_d_left", a=f(()), b=f((3, 4))),
    ]


OPERATOR_INTEGER_PATTERNS = [p for p in INTEGER_PATTERNS if not p.args] + [
    P("python_int_left", {"input": 6}, b=spec((3, 4), "int64")),
    P("python_bool_right_bool", {"other": True}, a=spec((3, 4), "bool")),
]
OPERATOR_INPLACE_PATTERNS = [
    P("tensors", x=spec((3, 4)), y=spec((3, 4))),
    P("transposed_self", x=spec((4, 3), view="transpose:0:1"), y=spec((4,))),
    P("python_scalar", {"other": 2}, x=spec((3, 4), kind="positive")),
    P("int64_tensors", x=spec((3, 4), "int64", "nonzero"), y=spec((3, 4), "int64", "nonzero")),
    P("float_into_int64_refused", x=spec((3, 4), "int64"), y=spec((3, 4))),
]


def operator_table() -> dict[str, list[Pattern]]:
    table = {}
    for name in ("add", "sub", "mul", "truediv", "lt", "le", "gt", "ge", "eq", "ne"):
        table[f"operator_{name}"] = operator_patterns()
    for name in ("floordiv", "mod"):
        table[f"operator_{name}"] = operator_patterns(int_kind="nonzero")
    table["operator_pow"] = operator_patterns("positive", "nonzero")
    table["operator_matmul"] = [p for p in MATMUL_PATTERNS if p.name in MATMUL_OPERATOR_CASES]
    for name in ("and", "or", "xor"):
        table[f"operator_{name}"] = OPERATOR_INTEGER_PATTERNS
    for name in ("neg", "invert", "abs"):
        table[f"operator_{name}"] = [p for p in unary_patterns() if p.name in OPERATOR_UNARY_CASES]
    for name in ("iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow"):
        table[f"operator_{name}"] = OPERATOR_INPLACE_PATTERNS
    return table


MATMUL_OPERATOR_CASES = ("vector_vector", "matrix_matrix", "broadcast_batches", "transposed")
OPERATOR_UNARY_CASES = ("contiguous", "transposed", "zero_d", "int64", "bool", "special_float32")

# ---- views, conversions and factories ----------------------------------------------------------

VIEW_PATTERNS = {
    "transpose": [
        P("matrix", {"dim0": 0, "dim1": 1}, x=spec((3, 4))),
        P("negative_dims", {"dim0": -1, "dim1": 0}, x=spec((2, 3, 4))),
        P("dim_out_of_range", {"dim0": 0, "dim1": 2}, x=spec((3, 4))),
    ],
    "permute": [
        P("three_dims", {"dims": (2, 0, 1)}, x=spec((2, 3, 4))),
        P("repeated_dim", {"dims": (0, 0)}, x=spec((2, 3))),
    ],
    "narrow": [
        P("rows", {"dim": 0, "start": 1, "length": 2}, x=spec((4, 3))),
        P("past_the_end", {"dim": 1, "start": 2, "length": 3}, x=spec((4, 3))),
    ],
    "select": [
        P("row", {"dim": 0, "index": 2}, x=spec((4, 3))),
        P("negative_index", {"dim": 1, "index": -1}, x=spec((4, 3))),
        P("index_out_of_range", {"dim": 1, "index": 3}, x=spec((4, 3))),
    ],
    "unsqueeze": [P("middle", {"dim": 1}, x=spec((3, 4))), P("end", {"dim": -1}, x=spec((3,)))],
    "squeeze": [P("all", x=spec((1, 3, 1))), P("one_dim", {"dim": 0}, x=spec((1, 3, 1)))],
    "flatten": [
        P("all", x=spec((2, 3, 4))),
        P("tail", {"start_dim": 1}, x=spec((2, 3, 4), view="transpose:0:2")),
    ],
    "reshape": [
        P("contiguous", {"shape": (4, 3)}, x=spec((3, 4))),
        P("inferred", {"shape": (-1, 2)}, x=spec((3, 4))),
        P("transposed_copies", {"shape": (12,)}, x=spec((4, 3), view="transpose:0:1")),
        P("wrong_size", {"shape": (5,)}, x=spec((3, 4))),
    ],
    "view": [
        P("contiguous", {"shape": (2, 6)}, x=spec((3, 4))),
        P("transposed_refused", {"shape": (12,)}, x=spec((4, 3), view="transpose:0:1")),
    ],
    "expand": [
        P("new_dims", {"sizes": (2, 3, 4)}, x=spec((3, 1))),
        P("keep_size", {"sizes": (-1, 4)}, x=spec((3, 1))),
        P("not_size_one", {"sizes": (3, 4)}, x=spec((2, 4))),
    ],
    "unflatten": [
        P("middle", {"dim": 1, "sizes": (2, 3)}, x=spec((4, 6))),
        P("inferred", {"dim": -1, "sizes": (-1, 2)}, x=spec((3, 4))),
        P("wrong_sizes", {"dim": 0, "sizes": (2, 2)}, x=spec((3, 4))),
    ],
    "as_strided": [
        P("overlapping_windows", {"size": (3, 2), "stride": (1, 1), "storage_offset": 1}, x=spec((6,))),
        P("transposed_base", {"size": (2, 2), "stride": (2, 1)}, x=spec((3, 4), view="transpose:0:1")),
        P("out_of_bounds", {"size": (4, 4), "stride": (4, 1)}, x=spec((6,))),
    ],
    "expand_as": [
        P("broadcast", x=spec((3, 1)), other=spec((2, 3, 4))),
        P("not_expandable", x=spec((3, 2)), other=spec((3, 4))),
    ],
    "clone": [P("transposed", x=spec((4, 3), view="transpose:0:1")), P("bool", x=spec((3,), "bool"))],
    "contiguous": [
        P("stepped", x=spec((3, 8), view="slice:1:1:8:2")),
        P("expanded", x=spec((3, 1), "int64", view="expand:3:4")),
    ],
}  # fmt: skip

DTYPES = ("float32", "float64", "int64", "bool")
TO_PATTERNS = [
    P(f"{src}_to_{dst}", {"dtype": dst}, x=spec((3, 4), src, view=view))
    for src in DTYPES
    for dst, view in zip(DTYPES, ("none", "transpose:0:1", "none", "slice:1:0:4:2"))
    if src != dst
] + [
    P(f"special_{src}_to_{dst}", {"dtype": dst}, x=spec((10,), src, values=SPECIAL_VALUES))
    for src in ("float32", "float64")
    for dst in ("float64" if src == "float32" else "float32", "bool")
]
# Saturation and NaN: the book's rule, not PyTorch's (see OVERRIDES).
TO_INT64_SPECIAL = [
    P(f"special_{src}_to_int64", {"dtype": "int64"}, x=spec((10,), src, values=SPECIAL_VALUES))
    for src in ("float32", "float64")
] + [
    P("huge_float64_to_int64", {"dtype": "int64"}, x=spec((4,), "float64", values=[9.3e18, -9.3e18, 2.0**62, -(2.0**63)])),
]  # fmt: skip

LIKE_PATTERNS = [
    P("float32", x=spec((3, 4))),
    P("transposed_int64", x=spec((4, 3), "int64", view="transpose:0:1")),
    P("dtype_given", {"dtype": "float64"}, x=spec((2, 2), "bool")),
    P("empty", x=spec((0, 3))),
]
FACTORY_PATTERNS = {
    "arange": [
        P("end_only", {"start": 0, "end": 5}),
        P("float_step", {"start": 0.0, "end": 1.0, "step": 0.25}),
        P("negative_step", {"start": 5, "end": -3, "step": -2}),
        P("float64", {"start": -1.0, "end": 1.0, "step": 0.3, "dtype": "float64"}),
        P("empty", {"start": 3, "end": 3}),
        P("zero_step", {"start": 0, "end": 3, "step": 0}),
    ],
    "linspace": [
        P("five", {"start": 0.0, "end": 1.0, "steps": 5}),
        P("one_step", {"start": 2.0, "end": 3.0, "steps": 1}),
        P("descending_float64", {"start": 3.0, "end": -1.0, "steps": 7, "dtype": "float64"}),
        P("empty", {"start": 0.0, "end": 1.0, "steps": 0}),
    ],
    "eye": [
        P("square", {"n": 3}),
        P("wide_int64", {"n": 2, "m": 4, "dtype": "int64"}),
        P("empty", {"n": 0}),
    ],
    "zeros": [P("matrix", {"size": (2, 3)}), P("int64", {"size": (4,), "dtype": "int64"})],
    "ones": [P("matrix", {"size": (2, 3)}), P("bool", {"size": (3,), "dtype": "bool"})],
    "scalar_tensor": [
        P("float", {"s": (1.5,)}),
        P("int_gives_float32", {"s": (3,)}),
        P("int64", {"s": (-4,), "dtype": "int64"}),
    ],
    "full": [
        P("float", {"size": (2, 3), "fill_value": 1.5}),
        P("int_infers_int64", {"size": (3,), "fill_value": 7}),
        P("bool_infers_bool", {"size": (2,), "fill_value": True}),
    ],
}
# The book counts an integer arange from the untruncated values (see OVERRIDES).
ARANGE_INTEGER_DTYPE = [P("integer_dtype_fractional", {"start": 0.5, "end": 3.5, "step": 1.5, "dtype": "int64"})]  # fmt: skip
# ---- cases left out, with the reason (reported; each is a known difference from PyTorch) -------

EXCLUDED = {
    # PyTorch 2.13's float32 gelu gives NaN at +inf (its float64 gives inf, as does kael).
    ("gelu", "special_float32"): "torch float32 gelu(inf) is nan",
    ("gelu", "special_float16"): "torch float16 gelu(inf) is nan",
    ("gelu", "special_bfloat16"): "torch bfloat16 gelu(inf) is nan",
    # kael's float rule computes these for integer inputs in float32; PyTorch refuses them.
    **{
        (op, dtype): "torch refuses integer input"
        for op in ("silu", "gelu", "gelu_tanh")
        for dtype in ("int64", "bool")
    },
    **EXCLUDED_NEW,
}

# ---- which ops get which patterns ----------------------------------------------------------------

POSITIVE_UNARY = ("sqrt", "rsqrt", "log", "log2", "log1p")
ROUNDING = ("floor", "ceil", "round", "trunc")
FLOAT_BINARY = ("add", "sub", "mul", "div", "maximum", "minimum")
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
LOGICAL_BINARY = ("logical_and", "logical_or", "logical_xor")
TENSOR_ONLY_BINARY = ("maximum", "minimum", *LOGICAL_BINARY)
VAR_PATTERNS_EXTRA = [
    P("correction_zero", {"dim": 1, "correction": 0}, x=spec((3, 4))),
    P("one_element", {"dim": 0}, x=spec((1, 3))),
]


# Launches moving more than 1 MiB split over the thread pool: broadcast or expanded inputs keep
# the files small while the output or the reduced input is large.
BIG = spec((1, 600), view="expand:600:600")
THREADED = {
    "add": [P("threaded_broadcast", a=spec((600, 1)), b=spec((1, 600)))],
    "exp": [P("threaded_expanded", x=BIG)],
    "sum": [P("threaded_dim0", {"dim": 0}, x=BIG), P("threaded_all", x=BIG)],
    "amax": [P("threaded_dim1", {"dim": 1}, x=BIG)],
    "softmax": [P("threaded_rows", {"dim": -1}, x=BIG)],
}


def op_table() -> dict[str, list[Pattern]]:
    """Every golden op with its patterns, including the families that are still being written
    (PENDING keeps those out of the data until kael has them)."""
    table: dict[str, list[Pattern]] = {}
    for name in FLOAT_BINARY + COMPARISONS + LOGICAL_BINARY:
        table[name] = binary_patterns(scalars=name not in TENSOR_ONLY_BINARY)
    for name in ("floor_divide", "remainder"):
        table[name] = binary_patterns(int_kind="nonzero") + DIVISION_EXTRA
    table["pow"] = binary_patterns(kind="positive", int_kind="nonzero") + POW_EXTRA
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        table[name] = INTEGER_PATTERNS
    for name in golden_ops.UNARY_OPS + ("gelu_tanh",):
        table[name] = unary_patterns("positive" if name in POSITIVE_UNARY else "normal")
    for name in ROUNDING:
        table[name] += ROUNDING_EXTRA
    table["clamp"] = CLAMP_PATTERNS
    table["where"] = WHERE_PATTERNS
    table["masked_fill"] = MASKED_FILL_PATTERNS + MASKED_FILL_WIDER
    table["equal"] = EQUAL_PATTERNS
    table["allclose"] = ALLCLOSE_PATTERNS
    for name in ("add_", "sub_", "mul_", "div_"):
        table[name] = inplace_patterns()
    table["pow_"] = inplace_patterns("positive", "nonzero")
    for name in ("floor_divide_", "remainder_"):
        table[name] = inplace_patterns(int_kind="nonzero")
    table["clamp_"] = CLAMP_INPLACE_PATTERNS
    table["masked_fill_"] = MASKED_FILL_PATTERNS
    table["copy_"] = COPY_PATTERNS + COPY_FLOAT_TO_INT
    table["fill_"] = FILL_PATTERNS
    table["zero_"] = ZERO_PATTERNS
    table["to"] = TO_PATTERNS + TO_FIRST_DTYPES + TO_INT64_SPECIAL + TO_EVERY_PAIR + TO_SPECIAL
    table.update(VIEW_PATTERNS)
    for name in ("zeros_like", "ones_like"):
        table[name] = LIKE_PATTERNS
    table["full_like"] = [P(p.name, {**p.args, "fill_value": 2}, **p.inputs) for p in LIKE_PATTERNS]
    table.update(FACTORY_PATTERNS)
    table["arange"] = FACTORY_PATTERNS["arange"] + ARANGE_INTEGER_DTYPE
    # reductions
    for name in ("sum", "mean", "all", "any", "norm", "amax", "amin"):
        table[name] = reduction_patterns()
    table["prod"] = reduction_patterns("positive", dim_tuples=False)
    for name in ("max", "min"):
        table[name] = reduction_patterns(dim_tuples=False)
    table["count_nonzero"] = reduction_patterns(keepdim=False)
    for name in ("var", "std"):
        table[name] = reduction_patterns(dtypes=False) + VAR_PATTERNS_EXTRA
    table["logsumexp"] = LOGSUMEXP_PATTERNS
    for name in ("argmax", "argmin"):
        table[name] = ARG_PATTERNS
    # linear algebra
    table["matmul"] = MATMUL_PATTERNS
    table["mm"] = [p for p in MATMUL_PATTERNS if all(len(s.shape) == 2 for s in p.inputs.values())]
    table["bmm"] = [
        P("batched", a=spec((5, 2, 3)), b=spec((5, 3, 2))),
        P("transposed", a=spec((2, 3, 4), view="transpose:1:2"), b=spec((2, 3, 2))),
        P("batch_mismatch", a=spec((2, 2, 3)), b=spec((3, 3, 2))),
    ]
    table["dot"] = [
        P("float32", a=spec((7,)), b=spec((7,))),
        P("int64_stepped", a=spec((10,), "int64", view="slice:0:0:10:2"), b=spec((5,), "int64")),
        P("empty", a=spec((0,)), b=spec((0,))),
        P("size_mismatch", a=spec((3,)), b=spec((4,))),
    ]
    table["outer"] = [
        P("float32", a=spec((3,)), b=spec((4,))),
        P("float64", a=spec((2,), "float64"), b=spec((5,), "float64")),
    ]
    # indexing
    table["cat"] = CAT_PATTERNS
    table["stack"] = STACK_PATTERNS
    table["index_select"] = INDEX_SELECT_PATTERNS
    table["gather"] = GATHER_PATTERNS
    table["scatter_add"] = SCATTER_ADD_PATTERNS
    table["scatter_add_"] = SCATTER_ADD_PATTERNS
    table["index_add_"] = INDEX_ADD_PATTERNS
    table["index_add"] = INDEX_ADD_PATTERNS
    table["take_along_dim"] = TAKE_ALONG_DIM_PATTERNS
    table["nonzero"] = NONZERO_PATTERNS
    # sequence
    table["cumsum"] = SCAN_PATTERNS
    table["cumprod"] = SCAN_PATTERNS
    table["cumsum_"] = SCAN_PATTERNS
    table["cumprod_"] = SCAN_PATTERNS
    table["sort"] = SORT_PATTERNS
    table["argsort"] = SORT_PATTERNS
    table["topk"] = TOPK_PATTERNS
    table["tril"] = TRIANGLE_PATTERNS
    table["triu"] = TRIANGLE_PATTERNS
    table["tril_"] = TRIANGLE_PATTERNS
    table["triu_"] = TRIANGLE_PATTERNS
    table["flip"] = FLIP_PATTERNS
    table["roll"] = ROLL_PATTERNS
    # nn
    table["softmax"] = SOFTMAX_PATTERNS
    table["log_softmax"] = SOFTMAX_PATTERNS
    table["cross_entropy"] = CROSS_ENTROPY_PATTERNS
    table["layer_norm"] = LAYER_NORM_PATTERNS
    for name, patterns in THREADED.items():
        table[name] = table[name] + patterns
    table["getitem"] = INDEXING_PATTERNS
    table["setitem"] = SETITEM_PATTERNS
    table.update(operator_table())
    # the new dtypes in the other grids
    for name in ("matmul", "mm"):
        table[name] = table[name] + MATMUL_DTYPE_PATTERNS
    for name in ("softmax", "log_softmax"):
        table[name] = table[name] + SOFTMAX_DTYPE_PATTERNS
    for name, patterns in OTHER_DTYPE_PATTERNS.items():
        table[name] = table[name] + patterns
    # torch.nn.functional, then the other spellings
    for part in (activation_table(), loss_table(), layer_table(), spatial_table()):
        table.update(part)
    table.update(more_table())
    table.update(alias_table(table))
    return table


# Ops whose kael implementation does not exist or does not pass its own tests yet: their patterns
# are written above, but no data is generated until they are taken off this list. (At the last
# regeneration every op of the table existed and passed its own tests.)
PENDING: frozenset[str] = frozenset()
