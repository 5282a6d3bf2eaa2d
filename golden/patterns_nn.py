"""torch.nn.functional's activations and losses as golden patterns: layouts, 0-d, empty,
float64, the half floats, special values, each op's parameters and the inputs PyTorch
refuses (recorded as error cases)."""

from __future__ import annotations

from specs import INF, NAN, SPECIAL_VALUES, P, Pattern, Spec, layout_patterns, spec, with_args

# ---- activations -----------------------------------------------------------------------------

# From far below zero to far above, with the points where the activations change branch.
WIDE_VALUES = [-30.0, -6.0, -3.0, -1.0, -0.5, -0.0, 0.0, 0.25, 0.5, 1.0, 3.0, 6.0, 7.0, 30.0]


def activation_patterns(kind: str = "normal") -> list[Pattern]:
    """An elementwise activation's grid, before its parameters: every layout, 0-d, empty, the
    other float dtypes, integers, and the special and branch values."""
    f = lambda shape, dtype: spec(shape, dtype, kind)  # noqa: E731
    return [
        *layout_patterns(kind),
        P("float64", x=f((3, 4), "float64")),
        P("float16", x=f((3, 4), "float16")),
        P("bfloat16", x=f((3, 4), "bfloat16")),
        P("int64", x=spec((3, 4), "int64")),
        P("bool", x=spec((3, 4), "bool")),
        P("special_float32", x=spec((10,), values=SPECIAL_VALUES)),
        P("wide_float64", x=spec((14,), "float64", values=WIDE_VALUES)),
    ]


def with_params(name: str, params: dict, patterns: list[Pattern]) -> list[Pattern]:
    """The grid and two cases of the op's own parameters (by keyword, over wide values)."""
    out = list(patterns)
    if params:
        out.append(P(f"{name}_params", params, x=spec((14,), values=WIDE_VALUES)))
        out.append(P(f"{name}_params_transposed", params, x=spec((5, 3), view="transpose:0:1")))
    return out


# name -> the parameters its `_params` cases pass (empty: the op has none).
ACTIVATION_PARAMS = {
    "elu": {"alpha": 0.5},
    "selu": {},
    "celu": {"alpha": 1.5},
    "leaky_relu": {"negative_slope": 0.2},
    "relu6": {},
    "hardtanh": {"min_val": -2.0, "max_val": 0.5},
    "hardsigmoid": {},
    "hardswish": {},
    "mish": {},
    "softplus": {"beta": 2.0, "threshold": 5.0},
    "softsign": {},
    "logsigmoid": {},
    "tanhshrink": {},
    "hardshrink": {"lambd": 1.5},
    "softshrink": {"lambd": 1.5},
}
ACTIVATION_EXTRA = {
    "hardtanh": [P("min_above_max", {"min_val": 1.0, "max_val": -1.0}, x=spec((3, 4)))],
    "softshrink": [P("negative_lambd", {"lambd": -0.5}, x=spec((3, 4)))],
    "softplus": [P("beta_only", {"beta": 0.5}, x=spec((14,), values=WIDE_VALUES))],
    "leaky_relu": [P("slope_above_one", {"negative_slope": 3.0}, x=spec((3, 4)))],
    "celu": [P("alpha_zero", {"alpha": 0.0}, x=spec((3, 4)))],
}
THRESHOLD_ARGS = {"threshold": 0.5, "value": -1.0}
THRESHOLD_EXTRA = [
    P("nan_passes", {"threshold": 0.0, "value": 7.0}, x=spec((10,), values=SPECIAL_VALUES)),
    P("int64_keeps_dtype", {"threshold": 1, "value": 9}, x=spec((3, 4), "int64")),
    P("missing_value", {"threshold": 0.5}, x=spec((3, 4))),
]

# The in-place spellings: written in self's own layout and dtype.
INPLACE_ACTIVATION_PATTERNS = [
    P("contiguous", x=spec((3, 4))),
    P("transposed_self", x=spec((4, 3), view="transpose:0:1")),
    P("stepped_self", x=spec((3, 8), view="slice:1:0:8:2")),
    P("float64", x=spec((3, 4), "float64")),
    P("zero_d", x=spec(())),
    P("special_float32", x=spec((10,), values=SPECIAL_VALUES)),
    P("int64", x=spec((3, 4), "int64")),
    P("expanded_self_refused", x=spec((1, 4), view="expand:3:4")),
]
INPLACE_ARGS = {
    "elu_": {"alpha": 0.5},
    "celu_": {"alpha": 1.5},
    "selu_": {},
    "leaky_relu_": {"negative_slope": 0.2},
    "hardtanh_": {"min_val": -0.5, "max_val": 0.75},
    "threshold_": THRESHOLD_ARGS,
    "relu_": {},
}

GLU_PATTERNS = [
    P("last_dim", x=spec((3, 4))),
    P("first_dim", {"dim": 0}, x=spec((4, 3))),
    P("middle_dim", {"dim": 1}, x=spec((2, 6, 3))),
    P("transposed", {"dim": -1}, x=spec((6, 3), view="transpose:0:1")),
    P("stepped", {"dim": 1}, x=spec((3, 16), view="slice:1:0:16:2")),
    P("float64", x=spec((2, 8), "float64")),
    P("bfloat16", x=spec((2, 8), "bfloat16")),
    P("special_values", x=spec((2, 10), values=SPECIAL_VALUES * 2)),
    P("empty", x=spec((0, 4))),
    P("odd_size", x=spec((3, 5))),
    P("zero_d", x=spec(())),
    P("int64", x=spec((3, 4), "int64")),
    P("dim_out_of_range", {"dim": 2}, x=spec((3, 4))),
]
PRELU_PATTERNS = [
    P("one_weight", x=spec((3, 4)), weight=spec((1,))),
    P("per_channel", x=spec((2, 3, 4)), weight=spec((3,))),
    P("per_channel_4d", x=spec((2, 3, 2, 2)), weight=spec((3,))),
    P("transposed", x=spec((4, 3), view="transpose:0:1"), weight=spec((4,))),
    P("expanded_weight", x=spec((2, 5, 3)), weight=spec((1,), view="expand:5")),
    P("one_dim", x=spec((6,)), weight=spec((1,))),
    P("zero_d", x=spec(()), weight=spec((1,))),
    P("float64", x=spec((2, 3), "float64"), weight=spec((3,), "float64")),
    P("special_values", x=spec((10,), values=SPECIAL_VALUES), weight=spec((1,))),
    P("empty", x=spec((0, 3)), weight=spec((3,))),
    P("wrong_channels", x=spec((2, 3, 4)), weight=spec((2,))),
    P("int64", x=spec((3, 4), "int64"), weight=spec((1,), "int64")),
]
SOFTMIN_PATTERNS = [
    P("last_dim", {"dim": -1}, x=spec((3, 5))),
    P("first_dim", {"dim": 0}, x=spec((3, 5))),
    P("transposed", {"dim": 1}, x=spec((5, 3), view="transpose:0:1")),
    P("large_values", {"dim": -1}, x=spec((2, 3), values=[1000.0, 1001.0, 999.0, -1000.0, -1001.0, -999.0])),
    P("infinity", {"dim": -1}, x=spec((2, 2), values=[INF, INF, -INF, 1.0])),
    P("float64", {"dim": 1}, x=spec((3, 4), "float64")),
    P("dtype_float64", {"dim": 1, "dtype": "float64"}, x=spec((3, 4))),
    P("bfloat16", {"dim": 1}, x=spec((3, 4), "bfloat16")),
    P("zero_d", {"dim": 0}, x=spec(())),
    P("empty", {"dim": 1}, x=spec((0, 4))),
    P("dim_out_of_range", {"dim": 2}, x=spec((3, 4))),
]  # fmt: skip


def activation_table() -> dict[str, list[Pattern]]:
    table = {}
    for name, params in ACTIVATION_PARAMS.items():
        grid = with_params(name, params, activation_patterns())
        table[name] = grid + ACTIVATION_EXTRA.get(name, [])
    table["threshold"] = with_args(activation_patterns(), **THRESHOLD_ARGS) + THRESHOLD_EXTRA
    for name, args in INPLACE_ARGS.items():
        table[name] = with_args(INPLACE_ACTIVATION_PATTERNS, **args)
    table["glu"] = GLU_PATTERNS
    table["prelu"] = PRELU_PATTERNS
    table["softmin"] = SOFTMIN_PATTERNS
    return table


# ---- losses ----------------------------------------------------------------------------------


def pointwise_loss_patterns(x: str = "normal", target: str = "normal") -> list[Pattern]:
    """A loss of input and target of one shape: the reductions, layouts, broadcasting, 0-d,
    empty, dtypes and the refusals; `x` and `target` are the kinds of the two inputs."""
    a = lambda shape, view="none", dtype="float32": spec(shape, dtype, x, view)  # noqa: E731
    t = lambda shape, view="none", dtype="float32": spec(shape, dtype, target, view)  # noqa: E731
    return [
        P("mean", x=a((3, 4)), target=t((3, 4))),
        P("sum", {"reduction": "sum"}, x=a((3, 4)), target=t((3, 4))),
        P("none", {"reduction": "none"}, x=a((3, 4)), target=t((3, 4))),
        P("transposed", {"reduction": "none"}, x=a((4, 3), "transpose:0:1"), target=t((3, 4))),
        P("stepped_sum", {"reduction": "sum"}, x=a((3, 8), "slice:1:0:8:2"), target=t((3, 4))),
        P("expanded_target", x=a((3, 4)), target=t((1, 4), "expand:3:4")),
        P("broadcast_target", {"reduction": "none"}, x=a((3, 4)), target=t((4,))),
        P("zero_d", x=a(()), target=t(())),
        P("empty_mean", x=a((0, 3)), target=t((0, 3))),
        P("empty_sum", {"reduction": "sum"}, x=a((0, 3)), target=t((0, 3))),
        P("float64", {"reduction": "none"}, x=a((3, 4), dtype="float64"), target=t((3, 4), dtype="float64")),
        P("float64_mean", x=a((2, 5), dtype="float64"), target=t((2, 5), dtype="float64")),
        P("float16", {"reduction": "none"}, x=a((3, 4), dtype="float16"), target=t((3, 4), dtype="float16")),
        P("bfloat16", {"reduction": "none"}, x=a((3, 4), dtype="bfloat16"), target=t((3, 4), dtype="bfloat16")),
        P("int64", x=spec((3, 4), "int64"), target=spec((3, 4), "int64")),
        P("bad_reduction", {"reduction": "avg"}, x=a((3, 4)), target=t((3, 4))),
        P("shapes_do_not_broadcast", x=a((3, 4)), target=t((2, 4))),
    ]  # fmt: skip


SIGNS = [1.0, -1.0, -1.0, 1.0, 1.0, -1.0]
SIGN = lambda n, dtype="float32": spec((n,), dtype, values=SIGNS[:n])  # noqa: E731
LOSS_EXTRA = {
    "smooth_l1_loss": [
        P("beta", {"beta": 0.5, "reduction": "none"}, x=spec((3, 4)), target=spec((3, 4))),
        P("beta_zero", {"beta": 0.0, "reduction": "none"}, x=spec((3, 4)), target=spec((3, 4))),
        P("negative_beta", {"beta": -1.0}, x=spec((3, 4)), target=spec((3, 4))),
    ],
    "huber_loss": [
        P("delta", {"delta": 0.7, "reduction": "none"}, x=spec((3, 4)), target=spec((3, 4))),
        P("delta_sum", {"delta": 2.5, "reduction": "sum"}, x=spec((3, 4)), target=spec((3, 4))),
        P("negative_delta", {"delta": -1.0}, x=spec((3, 4)), target=spec((3, 4))),
    ],
    "binary_cross_entropy": [
        P("weight", {"reduction": "none"}, x=spec((3, 4), kind="unit"), target=spec((3, 4), kind="unit"), weight=spec((3, 4), kind="positive")),
        P("broadcast_weight", {"reduction": "sum"}, x=spec((3, 4), kind="unit"), target=spec((3, 4), kind="unit"), weight=spec((4,), kind="positive")),
        P("zeros_and_ones", {"reduction": "none"}, x=spec((4,), values=[0.0, 1.0, 0.0, 1.0]), target=spec((4,), values=[0.0, 1.0, 1.0, 0.0])),
        P("input_above_one", x=spec((2,), values=[0.5, 1.5]), target=spec((2,), values=[1.0, 0.0])),
        P("target_size_differs", x=spec((3, 4), kind="unit"), target=spec((4,), kind="unit")),
    ],
    "binary_cross_entropy_with_logits": [
        P("weight", {"reduction": "none"}, x=spec((3, 4)), target=spec((3, 4), kind="unit"), weight=spec((3, 4), kind="positive")),
        P("pos_weight", {"reduction": "none"}, x=spec((3, 4)), target=spec((3, 4), kind="unit"), pos_weight=spec((4,), kind="positive")),
        P("both_weights_sum", {"reduction": "sum"}, x=spec((3, 4)), target=spec((3, 4), kind="unit"), weight=spec((3, 1), kind="positive"), pos_weight=spec((4,), kind="positive")),
        P("large_logits", {"reduction": "none"}, x=spec((6,), values=[-100.0, -30.0, 0.0, 30.0, 100.0, 1000.0]), target=spec((6,), values=[1.0, 0.0, 0.5, 1.0, 0.0, 1.0])),
        P("target_size_differs", x=spec((3, 4)), target=spec((4,), kind="unit")),
    ],
    "kl_div": [
        P("batchmean", {"reduction": "batchmean"}, x=spec((3, 4)), target=spec((3, 4), kind="unit")),
        P("log_target", {"reduction": "none", "log_target": True}, x=spec((3, 4)), target=spec((3, 4))),
        P("log_target_sum", {"reduction": "sum", "log_target": True}, x=spec((3, 4)), target=spec((3, 4))),
        P("zero_target", {"reduction": "none"}, x=spec((4,)), target=spec((4,), values=[0.0, 0.5, 0.0, 1.0])),
        P("batch_reduction_refused", {"reduction": "batch"}, x=spec((3, 4)), target=spec((3, 4), kind="unit")),
    ],
    "soft_margin_loss": [
        P("signs", {"reduction": "none"}, x=spec((6,)), target=SIGN(6)),
    ],
}  # fmt: skip
LOSS_KINDS = {  # name -> (input kind, target kind)
    "mse_loss": ("normal", "normal"),
    "l1_loss": ("normal", "normal"),
    "smooth_l1_loss": ("normal", "normal"),
    "huber_loss": ("normal", "normal"),
    "soft_margin_loss": ("normal", "normal"),
    "binary_cross_entropy": ("unit", "unit"),
    "binary_cross_entropy_with_logits": ("normal", "unit"),
    "kl_div": ("normal", "unit"),
}
MARGIN_RANKING_PATTERNS = [
    P("mean", x=spec((6,)), input2=spec((6,)), target=SIGN(6)),
    P("margin_sum", {"margin": 0.3, "reduction": "sum"}, x=spec((6,)), input2=spec((6,)), target=SIGN(6)),
    P("none", {"margin": 0.5, "reduction": "none"}, x=spec((6,)), input2=spec((6,)), target=SIGN(6)),
    P("matrix_transposed", {"reduction": "none"}, x=spec((3, 2), view="transpose:0:1"), input2=spec((2, 3)), target=spec((2, 3), values=SIGNS)),
    P("broadcast_target", {"reduction": "none"}, x=spec((2, 3)), input2=spec((2, 3)), target=SIGN(3)),
    P("float64", {"margin": 0.1}, x=spec((6,), "float64"), input2=spec((6,), "float64"), target=SIGN(6, "float64")),
    P("zero_d", x=spec(()), input2=spec(()), target=spec((), values=[-1.0])),
    P("empty", {"reduction": "sum"}, x=spec((0,)), input2=spec((0,)), target=spec((0,))),
    P("size_mismatch", x=spec((6,)), input2=spec((5,)), target=SIGN(6)),
]  # fmt: skip
HINGE_PATTERNS = [
    P("mean", x=spec((6,)), target=SIGN(6)),
    P("margin_none", {"margin": 0.5, "reduction": "none"}, x=spec((6,)), target=SIGN(6)),
    P("sum", {"reduction": "sum"}, x=spec((2, 3)), target=spec((2, 3), values=SIGNS)),
    P("transposed", {"reduction": "none"}, x=spec((3, 2), view="transpose:0:1"), target=spec((2, 3), values=SIGNS)),
    P("float64", x=spec((6,), "float64"), target=SIGN(6, "float64")),
    P("zero_d", x=spec(()), target=spec((), values=[1.0])),
    P("empty", x=spec((0,)), target=spec((0,))),
    P("float16", {"reduction": "none"}, x=spec((6,), "float16"), target=SIGN(6, "float16")),
]  # fmt: skip
TRIPLET_PATTERNS = [
    P("mean", x=spec((4, 5)), positive=spec((4, 5)), negative=spec((4, 5))),
    P("margin_none", {"margin": 0.4, "reduction": "none"}, x=spec((4, 5)), positive=spec((4, 5)), negative=spec((4, 5))),
    P("p1_swap", {"p": 1.0, "swap": True, "reduction": "none"}, x=spec((4, 5)), positive=spec((4, 5)), negative=spec((4, 5))),
    P("p3_sum", {"p": 3.0, "reduction": "sum"}, x=spec((4, 5)), positive=spec((4, 5)), negative=spec((4, 5))),
    P("transposed_anchor", {"reduction": "none"}, x=spec((5, 4), view="transpose:0:1"), positive=spec((4, 5)), negative=spec((4, 5))),
    P("one_dim", {"reduction": "none"}, x=spec((5,)), positive=spec((5,)), negative=spec((5,))),
    P("float64", {"reduction": "none"}, x=spec((3, 4), "float64"), positive=spec((3, 4), "float64"), negative=spec((3, 4), "float64")),
    P("shape_mismatch", x=spec((4, 5)), positive=spec((4, 5)), negative=spec((4, 6))),
]  # fmt: skip
COSINE_EMBEDDING_PATTERNS = [
    P("mean", x=spec((6, 5)), input2=spec((6, 5)), target=SIGN(6)),
    P("margin_none", {"margin": 0.2, "reduction": "none"}, x=spec((6, 5)), input2=spec((6, 5)), target=SIGN(6)),
    P("sum", {"reduction": "sum"}, x=spec((6, 5)), input2=spec((6, 5)), target=SIGN(6)),
    P("transposed", {"reduction": "none"}, x=spec((5, 6), view="transpose:0:1"), input2=spec((6, 5)), target=SIGN(6)),
    P("one_dim", {"reduction": "none"}, x=spec((5,)), input2=spec((5,)), target=spec((), values=[-1.0])),
    P("float64", {"reduction": "none"}, x=spec((4, 3), "float64"), input2=spec((4, 3), "float64"), target=SIGN(4, "float64")),
    P("zero_vector", {"reduction": "none"}, x=spec((2, 3), values=[0.0] * 3 + [1.0] * 3), input2=spec((2, 3)), target=SIGN(2)),
    P("target_size_mismatch", x=spec((6, 5)), input2=spec((6, 5)), target=SIGN(5)),
]  # fmt: skip


def labels(shape) -> Spec:
    """0/1 labels, a 1 every third class."""
    return spec(shape, values=[float(i % 3 == 0) for i in range(shape[0] * shape[1])])


MULTILABEL_PATTERNS = [
    P("mean", x=spec((3, 4)), target=labels((3, 4))),
    P("none", {"reduction": "none"}, x=spec((3, 4)), target=labels((3, 4))),
    P("sum_weight", {"reduction": "sum"}, x=spec((3, 4)), target=labels((3, 4)), weight=spec((4,), kind="positive")),
    P("transposed", {"reduction": "none"}, x=spec((4, 3), view="transpose:0:1"), target=labels((3, 4))),
    P("probabilities", x=spec((2, 5)), target=spec((2, 5), kind="unit")),
    P("float64", {"reduction": "none"}, x=spec((3, 4), "float64"), target=spec((3, 4), "float64", "unit")),
    P("empty", {"reduction": "none"}, x=spec((0, 4)), target=spec((0, 4))),
]  # fmt: skip
CLASSES = lambda n, c, view="none": spec((n,), kind="index", high=c, view=view)  # noqa: E731
MULTI_MARGIN_PATTERNS = [
    P("mean", x=spec((5, 4)), target=CLASSES(5, 4)),
    P("p2_none", {"p": 2, "reduction": "none"}, x=spec((5, 4)), target=CLASSES(5, 4)),
    P("margin_sum", {"margin": 0.7, "reduction": "sum"}, x=spec((5, 4)), target=CLASSES(5, 4)),
    P("weight", {"reduction": "none"}, x=spec((5, 4)), target=CLASSES(5, 4), weight=spec((4,), kind="positive")),
    P("transposed", {"reduction": "none"}, x=spec((4, 5), view="transpose:0:1"), target=CLASSES(5, 4)),
    P("one_dim", {"reduction": "none"}, x=spec((4,)), target=spec((), "int64", values=[2])),
    P("float64", x=spec((3, 4), "float64"), target=CLASSES(3, 4)),
    P("p3_refused", {"p": 3}, x=spec((5, 4)), target=CLASSES(5, 4)),
    P("target_out_of_range", x=spec((2, 3)), target=spec((2,), "int64", values=[0, 3])),
    P("target_size_mismatch", x=spec((2, 3)), target=spec((3,), "int64", values=[0, 1, 2])),
]  # fmt: skip
IGNORED = [1, -100, 4, 0, 2, -100]
NLL_PATTERNS = [
    P("mean", x=spec((6, 5)), target=CLASSES(6, 5)),
    P("sum", {"reduction": "sum"}, x=spec((6, 5)), target=CLASSES(6, 5)),
    P("none", {"reduction": "none"}, x=spec((6, 5)), target=CLASSES(6, 5)),
    P("weight", x=spec((6, 5)), target=CLASSES(6, 5), weight=spec((5,), kind="positive")),
    P("weight_none", {"reduction": "none"}, x=spec((6, 5)), target=CLASSES(6, 5), weight=spec((5,), kind="positive")),
    P("ignore_index", x=spec((6, 5)), target=spec((6,), "int64", values=IGNORED)),
    P("ignore_index_weight_sum", {"reduction": "sum"}, x=spec((6, 5)), target=spec((6,), "int64", values=IGNORED), weight=spec((5,), kind="positive")),
    P("custom_ignore_index", {"ignore_index": 2}, x=spec((6, 5)), target=spec((6,), "int64", values=[1, 2, 4, 0, 2, 3])),
    P("all_ignored", x=spec((2, 3)), target=spec((2,), "int64", values=[-100, -100])),
    P("spatial", x=spec((2, 5, 3)), target=spec((2, 3), kind="index", high=5)),
    P("spatial_none", {"reduction": "none"}, x=spec((2, 5, 2, 2)), target=spec((2, 2, 2), kind="index", high=5)),
    P("transposed", x=spec((5, 6), view="transpose:0:1"), target=CLASSES(6, 5)),
    P("one_dim", x=spec((5,)), target=spec((), "int64", values=[3])),
    P("float64", {"reduction": "none"}, x=spec((4, 3), "float64"), target=CLASSES(4, 3)),
    P("empty_mean", x=spec((0, 3)), target=spec((0,), "int64")),
    P("target_out_of_range", x=spec((2, 3)), target=spec((2,), "int64", values=[0, 3])),
    P("float_target", x=spec((2, 3)), target=spec((2,), values=[0.0, 1.0])),
    P("target_size_mismatch", x=spec((2, 3)), target=spec((3,), "int64", values=[0, 1, 2])),
]  # fmt: skip
COSINE_SIMILARITY_PATTERNS = [
    P("dim1", x=spec((4, 5)), x2=spec((4, 5))),
    P("dim0", {"dim": 0}, x=spec((4, 5)), x2=spec((4, 5))),
    P("last_dim", {"dim": -1}, x=spec((2, 3, 4)), x2=spec((2, 3, 4))),
    P("broadcast", x=spec((4, 5)), x2=spec((1, 5))),
    P("transposed", x=spec((5, 4), view="transpose:0:1"), x2=spec((4, 5))),
    P("zero_vector", x=spec((2, 3), values=[0.0] * 3 + [1.0, 2.0, 3.0]), x2=spec((2, 3))),
    P("eps", {"eps": 0.5}, x=spec((3, 4)), x2=spec((3, 4))),
    P("one_dim", {"dim": 0}, x=spec((6,)), x2=spec((6,))),
    P("float64", x=spec((3, 4), "float64"), x2=spec((3, 4), "float64")),
    P("empty", x=spec((0, 4)), x2=spec((0, 4))),
    P("dim_out_of_range", {"dim": 2}, x=spec((3, 4)), x2=spec((3, 4))),
    P("shapes_do_not_broadcast", x=spec((3, 4)), x2=spec((2, 4))),
]
PAIRWISE_PATTERNS = [
    P("p2", x=spec((4, 5)), x2=spec((4, 5))),
    P("p1", {"p": 1.0}, x=spec((4, 5)), x2=spec((4, 5))),
    P("p3_5", {"p": 3.5}, x=spec((4, 5)), x2=spec((4, 5))),
    P("p_inf", {"p": INF}, x=spec((4, 5)), x2=spec((4, 5))),
    P("keepdim", {"keepdim": True}, x=spec((4, 5)), x2=spec((4, 5))),
    P("broadcast", x=spec((4, 5)), x2=spec((5,))),
    P("transposed", x=spec((5, 4), view="transpose:0:1"), x2=spec((4, 5))),
    P("eps", {"eps": 0.25}, x=spec((3, 4)), x2=spec((3, 4))),
    P("one_dim", x=spec((6,)), x2=spec((6,))),
    P("float64", x=spec((3, 4), "float64"), x2=spec((3, 4), "float64")),
    P("nan", x=spec((2, 3), values=[1.0, NAN, 2.0, 0.0, 1.0, 2.0]), x2=spec((2, 3))),
    P("p_zero", {"p": 0.0}, x=spec((3, 4)), x2=spec((3, 4))),
    P("empty", x=spec((0, 4)), x2=spec((0, 4))),
]


def loss_table() -> dict[str, list[Pattern]]:
    table = {}
    for name, (x, target) in LOSS_KINDS.items():
        table[name] = pointwise_loss_patterns(x, target) + LOSS_EXTRA.get(name, [])
    table["margin_ranking_loss"] = MARGIN_RANKING_PATTERNS
    table["hinge_embedding_loss"] = HINGE_PATTERNS
    table["triplet_margin_loss"] = TRIPLET_PATTERNS
    table["cosine_embedding_loss"] = COSINE_EMBEDDING_PATTERNS
    table["multilabel_soft_margin_loss"] = MULTILABEL_PATTERNS
    table["multi_margin_loss"] = MULTI_MARGIN_PATTERNS
    table["nll_loss"] = NLL_PATTERNS
    table["cosine_similarity"] = COSINE_SIMILARITY_PATTERNS
    table["pairwise_distance"] = PAIRWISE_PATTERNS
    return table
