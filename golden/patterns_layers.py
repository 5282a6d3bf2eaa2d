"""torch.nn.functional's layers, norms and attention as golden patterns: linear, bilinear,
embedding, one_hot, normalize, rms_norm, pixel_shuffle and pixel_unshuffle, the batch,
instance, group and local response norms, and scaled_dot_product_attention.

Products summed in another order differ in float32's last bits: the float32 inputs of the
matrix products are small integers (kind int64), whose products and sums are exact."""

from __future__ import annotations

from specs import INF, NAN, P, Pattern, spec

# Small integers stored as float: matrix products of them are exact in any summation order.
W = lambda shape, view="none", dtype="float32": spec(shape, dtype, "int64", view)  # noqa: E731
INDEX = lambda shape, high, view="none": spec(shape, kind="index", high=high, view=view)  # noqa: E731

LINEAR_PATTERNS = [
    P("plain", x=W((3, 4)), weight=W((5, 4))),
    P("bias", x=W((3, 4)), weight=W((5, 4)), bias=W((5,))),
    P("one_dim", x=W((4,)), weight=W((5, 4)), bias=W((5,))),
    P("batched", x=W((2, 3, 4)), weight=W((5, 4)), bias=W((5,))),
    P("transposed_weight", x=W((3, 4)), weight=W((4, 5), "transpose:0:1")),
    P("transposed_input", x=W((4, 3), "transpose:0:1"), weight=W((5, 4)), bias=W((1,), "expand:5")),
    P("float64", x=spec((3, 4), "float64"), weight=spec((2, 4), "float64"), bias=spec((2,), "float64")),
    P("bfloat16", x=W((3, 4), dtype="bfloat16"), weight=W((5, 4), dtype="bfloat16"), bias=W((5,), dtype="bfloat16")),
    P("float16", x=W((3, 4), dtype="float16"), weight=W((5, 4), dtype="float16")),
    P("empty_batch", x=W((0, 4)), weight=W((5, 4)), bias=W((5,))),
    P("empty_features", x=W((3, 0)), weight=W((5, 0)), bias=W((5,))),
    P("features_mismatch", x=W((3, 4)), weight=W((5, 3))),
    P("int64", x=spec((3, 4), "int64"), weight=spec((5, 4), "int64")),
]  # fmt: skip
BILINEAR_PATTERNS = [
    P("plain", x=W((2, 3)), input2=W((2, 4)), weight=W((5, 3, 4))),
    P("bias", x=W((2, 3)), input2=W((2, 4)), weight=W((5, 3, 4)), bias=W((5,))),
    P("batched", x=W((2, 2, 3)), input2=W((2, 2, 4)), weight=W((5, 3, 4)), bias=W((5,))),
    P("transposed", x=W((3, 2), "transpose:0:1"), input2=W((2, 4)), weight=W((2, 3, 4))),
    P("float64", x=spec((2, 3), "float64"), input2=spec((2, 4), "float64"), weight=spec((2, 3, 4), "float64")),
    P("empty_batch", x=W((0, 3)), input2=W((0, 4)), weight=W((5, 3, 4))),
    P("weight_mismatch", x=W((2, 3)), input2=W((2, 4)), weight=W((5, 3, 3))),
]  # fmt: skip
EMBEDDING_PATTERNS = [
    P("one_dim", x=INDEX((5,), 7), weight=spec((7, 3))),
    P("two_dim", x=INDEX((2, 3), 7), weight=spec((7, 3))),
    P("zero_d", x=spec((), "int64", values=[4]), weight=spec((7, 3))),
    P("empty", x=spec((0, 2), "int64"), weight=spec((7, 3))),
    P("padding_idx", {"padding_idx": 0}, x=spec((4,), "int64", values=[0, 2, 0, 6]), weight=spec((7, 3))),
    P("negative_padding_idx", {"padding_idx": -1}, x=spec((3,), "int64", values=[6, 1, 6]), weight=spec((7, 3))),
    P("transposed_weight", x=INDEX((4,), 7), weight=spec((3, 7), view="transpose:0:1")),
    P("transposed_index", x=INDEX((3, 2), 5, "transpose:0:1"), weight=spec((5, 2))),
    P("float64_weight", x=INDEX((4,), 5), weight=spec((5, 2), "float64")),
    P("int64_weight", x=INDEX((4,), 5), weight=spec((5, 2), "int64")),
    P("bfloat16_weight", x=INDEX((4,), 5), weight=spec((5, 2), "bfloat16")),
    P("index_out_of_range", x=spec((2,), "int64", values=[1, 7]), weight=spec((7, 3))),
    P("float_index", x=spec((2,)), weight=spec((7, 3))),
    P("one_dim_weight", x=spec((2,), "int64", values=[0, 1]), weight=spec((7,))),
]  # fmt: skip
ONE_HOT_PATTERNS = [
    P("inferred_classes", x=spec((5,), "int64", values=[0, 3, 1, 1, 2])),
    P("given_classes", {"num_classes": 6}, x=INDEX((2, 3), 6)),
    P("zero_d", {"num_classes": 4}, x=spec((), "int64", values=[2])),
    P("transposed", {"num_classes": 5}, x=INDEX((3, 2), 5, "transpose:0:1")),
    P("stepped", {"num_classes": 4}, x=INDEX((8,), 4, "slice:0:1:8:3")),
    P("empty_given_classes", {"num_classes": 3}, x=spec((0,), "int64")),
    P("empty_inferred", x=spec((0,), "int64")),
    P("negative_index", x=spec((2,), "int64", values=[0, -1])),
    P("index_too_large", {"num_classes": 3}, x=spec((2,), "int64", values=[0, 5])),
    P("int32_index", x=spec((3,), "int32", values=[0, 1, 2])),
    P("float_index", x=spec((2,), values=[0.0, 1.0])),
]
ZERO_ROW = [0.0, 0.0, 0.0, 0.0, 1.0, -2.0, 3.0, 0.5, -1.0, 4.0, 0.25, -0.5]
NORMALIZE_PATTERNS = [
    P("p2_dim1", x=spec((3, 4))),
    P("p1_dim0", {"p": 1.0, "dim": 0}, x=spec((3, 4))),
    P("p3_last_dim", {"p": 3.0, "dim": -1}, x=spec((2, 3, 4))),
    P("p_inf", {"p": INF}, x=spec((3, 4))),
    P("zero_row", x=spec((3, 4), values=ZERO_ROW)),
    P("eps", {"eps": 2.0}, x=spec((3, 4))),
    P("transposed", x=spec((4, 3), view="transpose:0:1")),
    P("expanded", {"dim": 0}, x=spec((1, 4), view="expand:3:4")),
    P("one_dim", {"dim": 0}, x=spec((5,))),
    P("float64", {"dim": 1}, x=spec((3, 4), "float64")),
    P("bfloat16", x=spec((3, 4), "bfloat16")),
    P("nan", x=spec((2, 3), values=[1.0, NAN, 2.0, 0.0, 1.0, 2.0])),
    P("empty", x=spec((0, 4))),
    P("dim_out_of_range", {"dim": 2}, x=spec((3, 4))),
]
RMS_NORM_PATTERNS = [
    P("last_dim", {"normalized_shape": (4,)}, x=spec((3, 4))),
    P("two_dims", {"normalized_shape": (3, 4)}, x=spec((2, 3, 4))),
    P("weight", {"normalized_shape": (4,)}, x=spec((3, 4)), weight=spec((4,))),
    P("eps", {"normalized_shape": (4,), "eps": 0.5}, x=spec((3, 4)), weight=spec((4,))),
    P("transposed", {"normalized_shape": (3,)}, x=spec((3, 4), view="transpose:0:1")),
    P("zero_rows", {"normalized_shape": (4,)}, x=spec((3, 4), values=ZERO_ROW)),
    P("float64", {"normalized_shape": (5,)}, x=spec((2, 5), "float64"), weight=spec((5,), "float64")),
    P("float16", {"normalized_shape": (4,)}, x=spec((3, 4), "float16")),
    P("bfloat16", {"normalized_shape": (4,)}, x=spec((3, 4), "bfloat16"), weight=spec((4,), "bfloat16")),
    P("empty_batch", {"normalized_shape": (4,)}, x=spec((0, 4))),
    P("shape_mismatch", {"normalized_shape": (3,)}, x=spec((3, 4))),
    P("weight_mismatch", {"normalized_shape": (4,)}, x=spec((3, 4)), weight=spec((3,))),
]  # fmt: skip
PIXEL_SHUFFLE_PATTERNS = [
    P("batched", {"upscale_factor": 2}, x=spec((2, 8, 2, 3))),
    P("unbatched", {"upscale_factor": 2}, x=spec((4, 3, 2))),
    P("two_batch_dims", {"upscale_factor": 2}, x=spec((2, 1, 4, 2, 2))),
    P("factor_three", {"upscale_factor": 3}, x=spec((1, 9, 2, 1))),
    P("factor_one", {"upscale_factor": 1}, x=spec((1, 3, 2, 2))),
    P("transposed", {"upscale_factor": 2}, x=spec((1, 4, 3, 2), view="transpose:2:3")),
    P("int64", {"upscale_factor": 2}, x=spec((1, 4, 2, 2), "int64")),
    P("bool", {"upscale_factor": 2}, x=spec((1, 4, 1, 2), "bool")),
    P("empty_batch", {"upscale_factor": 2}, x=spec((0, 4, 2, 2))),
    P("channels_not_divisible", {"upscale_factor": 2}, x=spec((1, 6, 2, 2))),
    P("two_dims_refused", {"upscale_factor": 2}, x=spec((4, 4))),
]
PIXEL_UNSHUFFLE_PATTERNS = [
    P("batched", {"downscale_factor": 2}, x=spec((2, 2, 4, 6))),
    P("unbatched", {"downscale_factor": 2}, x=spec((1, 4, 2))),
    P("factor_three", {"downscale_factor": 3}, x=spec((1, 1, 3, 6))),
    P("transposed", {"downscale_factor": 2}, x=spec((1, 2, 6, 4), view="transpose:2:3")),
    P("int64", {"downscale_factor": 2}, x=spec((1, 1, 4, 4), "int64")),
    P("empty_batch", {"downscale_factor": 2}, x=spec((0, 1, 2, 2))),
    P("size_not_divisible", {"downscale_factor": 2}, x=spec((1, 1, 3, 4))),
    P("two_dims_refused", {"downscale_factor": 2}, x=spec((4, 4))),
]

# ---- norms -----------------------------------------------------------------------------------

STATS = {"running_mean": spec((3,)), "running_var": spec((3,), kind="positive")}
AFFINE = {"weight": spec((3,)), "bias": spec((3,))}
BATCH_NORM_PATTERNS = [
    P("eval", x=spec((4, 3)), **STATS),
    P("eval_affine", x=spec((4, 3, 5)), **STATS, **AFFINE),
    P("training", {"training": True}, x=spec((4, 3)), **STATS),
    P("training_affine_4d", {"training": True}, x=spec((2, 3, 2, 2)), **STATS, **AFFINE),
    P("training_momentum_eps", {"training": True, "momentum": 0.3, "eps": 0.01}, x=spec((4, 3, 5)), **STATS),
    P("training_without_stats", {"running_mean": None, "running_var": None, "training": True}, x=spec((4, 3))),
    P("transposed", {"training": True}, x=spec((5, 3, 4), view="transpose:0:2"), **STATS),
    P("float64", {"training": True}, x=spec((4, 3), "float64"), running_mean=spec((3,), "float64"), running_var=spec((3,), "float64", "positive")),
    P("bfloat16_eval", x=spec((4, 3), "bfloat16"), running_mean=spec((3,), "bfloat16"), running_var=spec((3,), "bfloat16", "positive")),
    P("one_value_per_channel", {"training": True}, x=spec((1, 3)), **STATS),
    P("stats_size_mismatch", x=spec((4, 3)), running_mean=spec((2,)), running_var=spec((2,), kind="positive")),
    P("eval_without_stats", {"running_mean": None, "running_var": None}, x=spec((4, 3))),
]  # fmt: skip
INSTANCE_NORM_PATTERNS = [
    P("plain", x=spec((2, 3, 4))),
    P("affine_4d", x=spec((2, 3, 2, 3)), **AFFINE),
    P("running_stats", {"momentum": 0.3}, x=spec((2, 3, 4)), **STATS),
    P("use_running_stats", {"use_input_stats": False}, x=spec((2, 3, 4)), **STATS),
    P("eps", {"eps": 0.5}, x=spec((2, 3, 4))),
    P("transposed", x=spec((4, 3, 2), view="transpose:0:2")),
    P("unbatched", x=spec((3, 5))),
    P("float64", x=spec((2, 3, 4), "float64")),
    P("constant_plane", x=spec((1, 2, 3), values=[2.0, 2.0, 2.0, 1.0, 5.0, -1.0])),
    P("one_spatial_element", x=spec((2, 3, 1))),
]  # fmt: skip
GROUP_NORM_PATTERNS = [
    P("one_group", {"num_groups": 1}, x=spec((2, 6, 4))),
    P("three_groups", {"num_groups": 3}, x=spec((2, 6, 4))),
    P("groups_per_channel", {"num_groups": 6}, x=spec((2, 6, 2, 2))),
    P("affine", {"num_groups": 2}, x=spec((2, 6, 3)), weight=spec((6,)), bias=spec((6,))),
    P("eps", {"num_groups": 2, "eps": 0.5}, x=spec((2, 6, 3))),
    P("two_dims", {"num_groups": 2}, x=spec((3, 6))),
    P("transposed", {"num_groups": 2}, x=spec((4, 6, 2), view="transpose:0:2")),
    P("float64", {"num_groups": 3}, x=spec((2, 6, 4), "float64")),
    P("bfloat16", {"num_groups": 2}, x=spec((2, 4, 3), "bfloat16")),
    P("empty_batch", {"num_groups": 2}, x=spec((0, 6, 3))),
    P("not_divisible", {"num_groups": 4}, x=spec((2, 6, 4))),
]
LRN_PATTERNS = [
    P("size1", {"size": 1}, x=spec((2, 5, 4))),
    P("size2", {"size": 2}, x=spec((2, 5, 4))),
    P("size3_4d", {"size": 3}, x=spec((2, 5, 3, 3))),
    P("size5_params", {"size": 5, "alpha": 0.01, "beta": 0.5, "k": 2.0}, x=spec((2, 5, 4))),
    P("size_above_channels", {"size": 7}, x=spec((1, 3, 4))),
    P("five_dims", {"size": 3}, x=spec((1, 4, 2, 2, 2))),
    P("transposed", {"size": 3}, x=spec((4, 5, 2), view="transpose:0:2")),
    P("float64", {"size": 3, "alpha": 0.1}, x=spec((2, 5, 4), "float64")),
    P("empty_batch", {"size": 3}, x=spec((0, 5, 4))),
    P("two_dims_refused", {"size": 2}, x=spec((3, 4))),
]

# ---- attention -------------------------------------------------------------------------------


def qkv(lq: int = 3, lk: int = 5, e: int = 4, ev: int = 6, heads=(1, 2), dtype="float32") -> dict:
    """query (*heads, lq, e), key (*heads, lk, e) and value (*heads, lk, ev)."""
    h = tuple(heads)
    return {"x": spec(h + (lq, e), dtype), "key": spec(h + (lk, e), dtype), "value": spec(h + (lk, ev), dtype)}  # fmt: skip


ATTENTION_PATTERNS = [
    P("plain", **qkv()),
    P("causal", {"is_causal": True}, **qkv()),
    P("causal_square", {"is_causal": True}, **qkv(4, 4)),
    P("scale", {"scale": 0.3}, **qkv()),
    P("float_mask", **qkv(), attn_mask=spec((3, 5))),
    P("bool_mask", **qkv(), attn_mask=spec((3, 5), "bool")),
    P("broadcast_mask", **qkv(), attn_mask=spec((1, 1, 3, 5))),
    P("minus_infinity_mask", **qkv(2, 3), attn_mask=spec((2, 3), values=[0.0, -INF, 1.0, -INF, -INF, 0.0])),
    P("fully_masked_row", **qkv(2, 3), attn_mask=spec((2, 3), "bool", values=[False] * 3 + [True, False, True])),
    P("three_dims", **qkv(heads=(2,))),
    P("transposed_query", x=spec((1, 2, 4, 3), view="transpose:2:3"), key=spec((1, 2, 5, 4)), value=spec((1, 2, 5, 6))),
    P("grouped_heads", {"enable_gqa": True}, x=spec((1, 4, 3, 4)), key=spec((1, 2, 5, 4)), value=spec((1, 2, 5, 6))),
    P("float64", **qkv(dtype="float64")),
    # positive values: an output is a weighted mean of them, never a cancellation near 0
    P("bfloat16", x=spec((1, 2, 3, 4), "bfloat16"), key=spec((1, 2, 5, 4), "bfloat16"), value=spec((1, 2, 5, 6), "bfloat16", "positive")),
    P("empty_query", **qkv(0, 5)),
    P("mask_and_causal", {"is_causal": True}, **qkv(ev=4), attn_mask=spec((3, 5))),  # both apply
    P("dims_disagree", x=spec((1, 2, 3, 4)), key=spec((1, 2, 5, 3)), value=spec((1, 2, 5, 6))),
    P("int64", x=spec((1, 3, 4), "int64"), key=spec((1, 5, 4), "int64"), value=spec((1, 5, 6), "int64")),
]  # fmt: skip


def layer_table() -> dict[str, list[Pattern]]:
    return {
        "linear": LINEAR_PATTERNS,
        "bilinear": BILINEAR_PATTERNS,
        "embedding": EMBEDDING_PATTERNS,
        "one_hot": ONE_HOT_PATTERNS,
        "normalize": NORMALIZE_PATTERNS,
        "rms_norm": RMS_NORM_PATTERNS,
        "pixel_shuffle": PIXEL_SHUFFLE_PATTERNS,
        "pixel_unshuffle": PIXEL_UNSHUFFLE_PATTERNS,
        "batch_norm": BATCH_NORM_PATTERNS,
        "instance_norm": INSTANCE_NORM_PATTERNS,
        "group_norm": GROUP_NORM_PATTERNS,
        "local_response_norm": LRN_PATTERNS,
        "scaled_dot_product_attention": ATTENTION_PATTERNS,
    }
