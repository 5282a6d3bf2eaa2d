"""PyTorch's other spellings of ops the main grids cover (divide, greater, absolute, clip,
...), the dtype-named casts (x.byte(), x.half(), ...), the in-place bitwise methods, the
transposing properties, item, tensor from nested lists, and dtype promotion itself
(result_type, promote_types)."""

from __future__ import annotations

from specs import SPECIAL_VALUES, P, Pattern, spec

# alias -> the op whose grid it takes a sample of
ALIASES = {
    "divide": "div", "multiply": "mul", "subtract": "sub", "true_divide": "div",
    "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le", "not_equal": "ne",
    "absolute": "abs", "negative": "neg", "clip": "clamp", "clip_": "clamp_",
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
    "arccosh": "acosh", "arctanh": "atanh", "arctan2": "atan2",
}  # fmt: skip
ALIAS_CASES = (
    "same_shape", "transposed", "python_float", "int64", "int64_and_float32", "float16",
    "bfloat16", "special_float32", "shapes_do_not_broadcast", "empty", "zero_d", "contiguous",
    "uint8", "int8_transposed_broadcast", "both_bounds", "min_only", "tensor_bounds",
    "special_values", "no_bounds_refused", "transposed_self", "bool_refused",
)  # fmt: skip

# ---- casts and properties --------------------------------------------------------------------

# Positive floats (truncated by the integer casts, and in every integer dtype's range).
CAST_PATTERNS = [
    P("float32", x=spec((3, 4), kind="positive")),
    P("float64_transposed", x=spec((4, 3), "float64", "positive", "transpose:0:1")),
    P("int64", x=spec((3, 4), "int64")),
    P("int32_stepped", x=spec((3, 8), "int32", view="slice:1:0:8:2")),
    P("bool", x=spec((3, 4), "bool")),
    P("bfloat16", x=spec((3, 4), "bfloat16", "positive")),
    P("float16_expanded", x=spec((1, 4), "float16", "positive", "expand:3:4")),
    P("zero_d", x=spec((), kind="positive")),
    P("empty", x=spec((0, 3))),
]
FLOAT_CASTS = ("half", "float", "double", "bfloat16")
SPECIAL_CAST = [P("special_float32", x=spec((10,), values=SPECIAL_VALUES))]
CASTS = ("byte", "char", "short", "int", "long", "bool") + FLOAT_CASTS

BITWISE_INPLACE_PATTERNS = [
    P("int64", x=spec((3, 4), "int64"), y=spec((3, 4), "int64")),
    P("transposed_self", x=spec((4, 3), "int64", view="transpose:0:1"), y=spec((3, 4), "int64")),
    P("broadcast_other", x=spec((3, 4), "int64"), y=spec((4,), "int64")),
    P("python_int", {"other": 6}, x=spec((3, 4), "int64")),
    P("bool", x=spec((3, 4), "bool"), y=spec((3, 4), "bool")),
    P("int32", x=spec((3, 4), "int32"), y=spec((3, 4), "int32")),
    P("uint8_and_bool", x=spec((3, 4), "uint8"), y=spec((3, 4), "bool")),
    P("int64_into_int8_refused", x=spec((3, 4), "int8"), y=spec((3, 4), "int64")),
    P("float_refused", x=spec((3, 4)), y=spec((3, 4))),
    P("broadcast_self_refused", x=spec((1, 4), "int64"), y=spec((3, 4), "int64")),
]
TRANSPOSE_PROPERTY_PATTERNS = [
    P("matrix", x=spec((3, 4))),
    P("transposed_matrix", x=spec((4, 3), view="transpose:0:1")),
    P("three_dims", x=spec((2, 3, 4))),
    P("int64", x=spec((2, 5), "int64")),
    P("bfloat16", x=spec((2, 3), "bfloat16")),
    P("empty", x=spec((0, 3))),
    P("one_dim", x=spec((5,))),
    P("zero_d", x=spec(())),
]
ITEM_PATTERNS = [
    P("float32", x=spec((1,))),
    P("float64_zero_d", x=spec((), "float64")),
    P("int64", x=spec((1, 1), "int64")),
    P("bool", x=spec((), "bool")),
    P("uint8", x=spec((1,), "uint8")),
    P("float16", x=spec((), "float16")),
    P("bfloat16", x=spec((1,), "bfloat16")),
    P("nan", x=spec((1,), values=[float("nan")])),
    P("stepped", x=spec((5,), view="slice:0:2:3:1")),
    P("two_elements_refused", x=spec((2,))),
    P("empty_refused", x=spec((0,))),
]
TENSOR_PATTERNS = [
    P("float32_infers_float32", x=spec((3, 4))),
    P("int64_infers_int64", x=spec((3, 4), "int64")),
    P("bool_infers_bool", x=spec((2, 3), "bool")),
    P("transposed", x=spec((4, 3), view="transpose:0:1")),
    P("dtype_given", {"dtype": "float64"}, x=spec((2, 3), "int64")),
    P("int8_infers_int64", x=spec((2, 3), "int8")),
    P("zero_d", x=spec(())),
    P("three_dims", x=spec((2, 2, 3), "int64")),
    P("special_values", x=spec((10,), "float64", values=SPECIAL_VALUES)),
]
RESULT_TYPE_PATTERNS = [
    P("int64_and_float32", a=spec((3,), "int64"), b=spec((3,))),
    P("uint8_and_int8", a=spec((3,), "uint8"), b=spec((3,), "int8")),
    P("float16_and_bfloat16", a=spec((3,), "float16"), b=spec((3,), "bfloat16")),
    P("int32_and_zero_d_int64", a=spec((3,), "int32"), b=spec((), "int64")),
    P("int8_and_zero_d_float64", a=spec((3,), "int8"), b=spec((), "float64")),
    P("bool_and_python_int", {"other": 3}, a=spec((3,), "bool")),
    P("int16_and_python_float", {"other": 2.5}, a=spec((3,), "int16")),
    P("bfloat16_and_python_float", {"other": 2.5}, a=spec((3,), "bfloat16")),
    P("zero_d_int64_and_zero_d_int8", a=spec((), "int64"), b=spec((), "int8")),
]
PROMOTE_TYPES_PAIRS = [
    ("uint8", "int8"), ("float16", "bfloat16"), ("bool", "int32"), ("int64", "float16"),
    ("int16", "uint8"), ("float64", "bfloat16"), ("bool", "bool"), ("int8", "float32"),
]  # fmt: skip


def alias_table(table: dict[str, list[Pattern]]) -> dict[str, list[Pattern]]:
    """The ops of this module; `table` is the main grid table the aliases take samples of."""
    out = {alias: [p for p in table[op] if p.name in ALIAS_CASES] for alias, op in ALIASES.items()}
    for name in CASTS:
        out[name] = CAST_PATTERNS + (SPECIAL_CAST if name in FLOAT_CASTS else [])
    for name in ("bitwise_and_", "bitwise_or_", "bitwise_xor_"):
        out[name] = BITWISE_INPLACE_PATTERNS
    out["T"] = TRANSPOSE_PROPERTY_PATTERNS
    out["mT"] = TRANSPOSE_PROPERTY_PATTERNS
    out["item"] = ITEM_PATTERNS
    out["tensor"] = TENSOR_PATTERNS
    out["result_type"] = RESULT_TYPE_PATTERNS
    out["promote_types"] = [P(f"{a}_{b}", {"a": a, "b": b}) for a, b in PROMOTE_TYPES_PAIRS]
    return out
