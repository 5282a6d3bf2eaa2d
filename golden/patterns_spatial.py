"""torch.nn.functional's ops over spatial dims as golden patterns: pad, the convolutions and
their transposes, unfold and fold, the max, average and adaptive pools, and interpolate.

The convolutions' float32 inputs are small integers (kind int64): their products and sums
are exact, so a different summation order than PyTorch's changes no bit."""

from __future__ import annotations

from specs import NAN, P, Pattern, spec

W = lambda shape, view="none", dtype="float32": spec(shape, dtype, "int64", view)  # noqa: E731

# ---- pad -------------------------------------------------------------------------------------

PAD_PATTERNS = [
    P("constant_last_dim", {"pad": (1, 2)}, x=spec((2, 3))),
    P("constant_two_dims_value", {"pad": (2, 1, 1, 3), "value": 0.5}, x=spec((2, 3, 4))),
    P("constant_negative", {"pad": (-1, 2, 1, -2)}, x=spec((2, 3, 4))),
    P("constant_three_dims", {"pad": (1, 1, 0, 2, 1, 0)}, x=spec((2, 3, 2))),
    P("constant_int64", {"pad": (1, 1), "value": 7}, x=spec((2, 3), "int64")),
    P("constant_bool", {"pad": (0, 2), "value": True}, x=spec((2, 3), "bool")),
    P("constant_transposed", {"pad": (1, 0, 2, 1)}, x=spec((4, 3), view="transpose:0:1")),
    P("constant_zero_d_refused", {"pad": (1, 1)}, x=spec(())),
    P("constant_empty", {"pad": (1, 1)}, x=spec((0, 3))),
    P("reflect_1d", {"pad": (2, 1), "mode": "reflect"}, x=spec((2, 3, 5))),
    P("reflect_2d", {"pad": (1, 2, 2, 1), "mode": "reflect"}, x=spec((1, 2, 3, 4))),
    P("reflect_3d", {"pad": (1, 1, 1, 0, 0, 1), "mode": "reflect"}, x=spec((1, 1, 2, 3, 3))),
    P("reflect_unbatched", {"pad": (1, 1), "mode": "reflect"}, x=spec((3, 4))),
    P("reflect_too_wide", {"pad": (5, 0), "mode": "reflect"}, x=spec((1, 2, 5))),
    P("reflect_value_refused", {"pad": (1, 1), "mode": "reflect", "value": 2.0}, x=spec((1, 2, 5))),
    P("replicate_1d", {"pad": (3, 1), "mode": "replicate"}, x=spec((2, 3, 4))),
    P("replicate_2d_transposed", {"pad": (1, 2, 0, 3), "mode": "replicate"}, x=spec((1, 2, 4, 3), view="transpose:2:3")),
    P("replicate_3d", {"pad": (1, 0, 0, 1, 2, 0), "mode": "replicate"}, x=spec((1, 1, 2, 2, 3))),
    P("replicate_int64", {"pad": (1, 1), "mode": "replicate"}, x=spec((1, 2, 3), "int64")),
    P("circular_1d", {"pad": (2, 1), "mode": "circular"}, x=spec((2, 3, 4))),
    P("circular_2d", {"pad": (1, 1, 2, 0), "mode": "circular"}, x=spec((1, 2, 3, 4))),
    P("circular_more_than_once", {"pad": (6, 0), "mode": "circular"}, x=spec((1, 2, 5))),
    P("float64_reflect", {"pad": (1, 1, 1, 1), "mode": "reflect"}, x=spec((1, 1, 3, 3), "float64")),
    P("odd_pad_length", {"pad": (1,)}, x=spec((2, 3))),
    P("unknown_mode", {"pad": (1, 1), "mode": "mirror"}, x=spec((1, 2, 5))),
]  # fmt: skip

# ---- convolutions ------------------------------------------------------------------------------


def conv_patterns(dims: int) -> list[Pattern]:
    """A convolution over `dims` spatial dims: stride, padding (numbers, 'same', 'valid'),
    dilation, groups, bias, unbatched, views, float64, the half floats and the refusals."""
    s = lambda n: (4, 5, 4, 3)[:dims] if n is None else (n,) * dims  # noqa: E731
    k = (3, 2, 2)[:dims]
    x = lambda c=4, size=None, view="none", dtype="float32": W((2, c) + s(size), view, dtype)  # noqa: E731
    w = lambda out=6, c=4, dtype="float32": W((out, c) + k, dtype=dtype)  # noqa: E731
    return [
        P("plain", x=x(), weight=w()),
        P("bias", x=x(), weight=w(), bias=W((6,))),
        P("stride_padding", {"stride": 2, "padding": 1}, x=x(), weight=w()),
        P("same_dilated", {"padding": "same", "dilation": 2}, x=x(), weight=w()),
        P("valid", {"padding": "valid"}, x=x(), weight=w()),
        P("per_dim", {"stride": (2, 1, 1)[:dims], "padding": (1, 0, 2)[:dims], "dilation": (1, 2, 1)[:dims]}, x=x(size=6), weight=w()),
        P("groups", {"groups": 2}, x=x(), weight=w(c=2), bias=W((6,))),
        P("depthwise", {"groups": 4}, x=x(), weight=w(out=4, c=1)),
        P("unbatched", x=W((4,) + s(None)), weight=w()),
        P("transposed_input", x=W((4, 2) + s(None), "transpose:0:1"), weight=w()),
        P("float64", x=spec((1, 2) + s(None), "float64"), weight=spec((3, 2) + k, "float64")),
        P("bfloat16", x=x(dtype="bfloat16"), weight=w(dtype="bfloat16")),
        P("float16", x=x(dtype="float16"), weight=w(dtype="float16")),
        P("channels_mismatch", x=x(c=3), weight=w()),
        P("groups_do_not_divide", {"groups": 3}, x=x(), weight=w(c=2)),
        P("strided_same_refused", {"stride": 2, "padding": "same"}, x=x(), weight=w()),
        P("input_smaller_than_kernel", x=x(size=1), weight=w()),
        P("int64", x=spec((1, 4) + s(None), "int64"), weight=spec((2, 4) + k, "int64")),
    ]  # fmt: skip


def conv_transpose_patterns(dims: int) -> list[Pattern]:
    """A transposed convolution: stride, padding, output_padding, dilation, groups, bias."""
    s = (3, 4, 2)[:dims]
    k = (3, 2, 2)[:dims]
    x = lambda c=4, dtype="float32": W((2, c) + s, dtype=dtype)  # noqa: E731
    w = lambda c=4, out=3, dtype="float32": W((c, out) + k, dtype=dtype)  # noqa: E731
    return [
        P("plain", x=x(), weight=w()),
        P("bias", x=x(), weight=w(), bias=W((3,))),
        P("stride_padding", {"stride": 2, "padding": 1}, x=x(), weight=w()),
        P("output_padding", {"stride": 2, "output_padding": 1}, x=x(), weight=w()),
        P("dilation", {"dilation": 2}, x=x(), weight=w()),
        P("groups", {"groups": 2}, x=x(), weight=w(out=2), bias=W((4,))),
        P("per_dim", {"stride": (1, 2, 2)[:dims], "padding": (0, 1, 0)[:dims]}, x=x(), weight=w()),
        P("unbatched", x=W((4,) + s), weight=w()),
        P("float64", x=spec((1, 2) + s, "float64"), weight=spec((2, 3) + k, "float64")),
        P("bfloat16", x=x(dtype="bfloat16"), weight=w(dtype="bfloat16")),
        P("channels_mismatch", x=x(c=3), weight=w()),
        P("output_padding_too_large", {"stride": 2, "output_padding": 2}, x=x(), weight=w()),
    ]  # fmt: skip


UNFOLD_PATTERNS = [
    P("kernel2", {"kernel_size": 2}, x=spec((2, 3, 4, 5))),
    P("stride_padding", {"kernel_size": 3, "padding": 1, "stride": 2}, x=spec((2, 3, 5, 4))),
    P("dilation", {"kernel_size": (2, 3), "dilation": (2, 1)}, x=spec((1, 2, 5, 5))),
    P("unbatched", {"kernel_size": 2}, x=spec((2, 3, 3))),
    P("transposed", {"kernel_size": 2}, x=spec((1, 2, 5, 4), view="transpose:2:3")),
    P("float64", {"kernel_size": 2, "stride": (1, 2)}, x=spec((1, 2, 3, 4), "float64")),
    P("int64", {"kernel_size": 2}, x=spec((1, 1, 3, 3), "int64")),
    P("kernel_too_large", {"kernel_size": 5}, x=spec((1, 1, 3, 3))),
    P("three_dims_refused", {"kernel_size": 2}, x=spec((1, 2, 3, 3, 3))),
]
FOLD_PATTERNS = [
    P("kernel2", {"output_size": (4, 5), "kernel_size": 2}, x=W((2, 12, 12))),
    P("stride_padding", {"output_size": (5, 4), "kernel_size": 3, "padding": 1, "stride": 2}, x=W((1, 18, 6))),
    P("dilation", {"output_size": (5, 5), "kernel_size": (2, 3), "dilation": (2, 1)}, x=W((1, 6, 9))),
    P("unbatched", {"output_size": (3, 3), "kernel_size": 2}, x=W((8, 4))),
    P("transposed", {"output_size": (3, 4), "kernel_size": 2}, x=W((1, 6, 4), "transpose:1:2")),
    P("float64", {"output_size": (3, 4), "kernel_size": 2}, x=spec((1, 4, 6), "float64")),
    P("channels_not_divisible", {"output_size": (3, 3), "kernel_size": 2}, x=W((1, 5, 4))),
    P("blocks_mismatch", {"output_size": (3, 3), "kernel_size": 2}, x=W((1, 4, 5))),
]  # fmt: skip

# ---- pools -----------------------------------------------------------------------------------

NAN_PLANE = [1.0, 2.0, NAN, 0.0, 3.0, 3.0, -1.0, 4.0, 0.5, 2.0, 2.0, 1.0, -2.0, 0.0, 7.0, 7.0]
NAN_SHAPES = {1: (16,), 2: (4, 4), 3: (4, 2, 2)}


def pool_input(dims: int):
    """(spatial size, x(view, dtype)): a pool's input [2, 3, *size] of normal floats."""
    size = (7, 6, 5)[:dims]
    return size, lambda view="none", dtype="float32": spec((2, 3) + size, dtype, view=view)


def shared_pool_patterns(dims: int) -> list[Pattern]:
    """The head of every pool's grid: a 2-wide kernel, and a 3-wide one strided and padded."""
    _, x = pool_input(dims)
    return [
        P("kernel2", {"kernel_size": 2}, x=x()),
        P("stride_padding", {"kernel_size": 3, "stride": 2, "padding": 1}, x=x()),
    ]


def max_pool_patterns(dims: int) -> list[Pattern]:
    """A max pool: stride, padding, dilation, ceil_mode, return_indices (two outputs), ties,
    NaN, views, dtypes and the refusals."""
    size, x = pool_input(dims)
    return [
        *shared_pool_patterns(dims),
        P("ceil_mode", {"kernel_size": 3, "stride": 2, "ceil_mode": True}, x=x()),
        P("dilation", {"kernel_size": 2, "dilation": 2}, x=x()),
        P("indices", {"kernel_size": 2, "return_indices": True}, x=x()),
        P("indices_padding_ceil", {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "return_indices": True}, x=x()),
        P("ties_and_nan", {"kernel_size": 2, "return_indices": True}, x=spec((1, 1) + NAN_SHAPES[dims], values=NAN_PLANE)),
        P("unbatched", {"kernel_size": 2}, x=spec((3,) + size)),
        P("transposed", {"kernel_size": 2}, x=x("transpose:0:1")),
        P("float64", {"kernel_size": 2, "stride": 1}, x=x(dtype="float64")),
        P("int64", {"kernel_size": 2}, x=x(dtype="int64")),
        P("bfloat16", {"kernel_size": 2}, x=x(dtype="bfloat16")),
        P("padding_above_half", {"kernel_size": 2, "padding": 2}, x=x()),
        P("kernel_too_large", {"kernel_size": 8}, x=x()),
    ]  # fmt: skip


def avg_pool_patterns(dims: int) -> list[Pattern]:
    """An average pool: stride, padding with and without count_include_pad, ceil_mode,
    divisor_override, views, dtypes and the refusals."""
    size, x = pool_input(dims)
    return [
        *shared_pool_patterns(dims),
        P("exclude_pad", {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False}, x=x()),
        P("ceil_mode", {"kernel_size": 3, "stride": 2, "ceil_mode": True}, x=x()),
        P("ceil_exclude_pad", {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False}, x=x()),
        P("divisor_override", {"kernel_size": 2, "divisor_override": 3}, x=x()),
        P("unbatched", {"kernel_size": 2}, x=spec((3,) + size)),
        P("transposed", {"kernel_size": 2}, x=x("transpose:0:1")),
        P("float64", {"kernel_size": 2, "stride": 1}, x=x(dtype="float64")),
        P("bfloat16", {"kernel_size": 2}, x=x(dtype="bfloat16")),
        P("int64", {"kernel_size": 2}, x=x(dtype="int64")),
        P("padding_above_half", {"kernel_size": 2, "padding": 2}, x=x()),
    ]  # fmt: skip


def adaptive_patterns(dims: int, indices: bool) -> list[Pattern]:
    """An adaptive pool: output sizes that divide, that do not, 1, larger than the input,
    None (keep), views, dtypes and a zero size."""
    size, x = pool_input(dims)
    # torch's 3d adaptive pools sum bfloat16 in bfloat16: small integers keep its sums exact
    half_kind = "int64" if dims == 3 else "normal"
    out = [
        P("divides", {"output_size": tuple(n // 2 if n % 2 == 0 else n for n in size)}, x=x()),
        P("uneven", {"output_size": (3, 4, 2)[:dims]}, x=x()),
        P("one", {"output_size": 1}, x=x()),
        P("larger", {"output_size": (9, 8, 6)[:dims]}, x=x()),
        P("unbatched", {"output_size": (2, 3, 2)[:dims]}, x=spec((3,) + size)),
        P("transposed", {"output_size": 2}, x=x("transpose:0:1")),
        P("float64", {"output_size": (3, 2, 2)[:dims]}, x=x(dtype="float64")),
        P("bfloat16", {"output_size": 2}, x=spec((2, 3) + size, "bfloat16", half_kind)),
        P("zero_size", {"output_size": 0}, x=x()),
    ]
    if dims > 1:
        out.append(P("keep_dim", {"output_size": (None,) + (2,) * (dims - 1)}, x=x()))
    if indices:
        out += [
            P("indices", {"output_size": (3, 4, 2)[:dims], "return_indices": True}, x=x()),
            P("int64", {"output_size": 2}, x=x(dtype="int64")),
        ]
    return out


# ---- interpolate -------------------------------------------------------------------------------

X4 = lambda view="none", dtype="float32": spec((1, 2, 3, 4), dtype, view=view)  # noqa: E731
INTERPOLATE_PATTERNS = [
    P("nearest_size", {"size": (5, 7)}, x=X4()),
    P("nearest_scale", {"scale_factor": 2.0}, x=X4()),
    P("nearest_down", {"size": (2, 3)}, x=X4()),
    P("nearest_exact", {"size": (5, 7), "mode": "nearest-exact"}, x=X4()),
    P("nearest_1d", {"size": 7}, x=spec((2, 3, 4))),
    P("nearest_3d", {"scale_factor": 2.0}, x=spec((1, 1, 2, 3, 2))),
    P("nearest_uint8", {"scale_factor": 2.0}, x=spec((1, 1, 2, 3), "uint8")),
    P("linear", {"size": 7, "mode": "linear"}, x=spec((2, 3, 4))),
    P("linear_align_corners", {"size": 7, "mode": "linear", "align_corners": True}, x=spec((2, 3, 4))),
    P("bilinear", {"size": (5, 7), "mode": "bilinear"}, x=X4()),
    P("bilinear_align_corners", {"size": (5, 7), "mode": "bilinear", "align_corners": True}, x=X4()),
    P("bilinear_scale", {"scale_factor": (0.5, 1.7), "mode": "bilinear"}, x=spec((1, 2, 6, 4))),
    P("bilinear_recompute", {"scale_factor": 2.5, "mode": "bilinear", "recompute_scale_factor": True}, x=X4()),
    P("bilinear_transposed", {"size": (4, 6), "mode": "bilinear"}, x=X4("transpose:2:3")),
    P("bilinear_float64", {"size": (5, 3), "mode": "bilinear"}, x=X4(dtype="float64")),
    P("bilinear_bfloat16", {"size": (5, 7), "mode": "bilinear"}, x=X4(dtype="bfloat16")),
    P("bicubic", {"size": (5, 7), "mode": "bicubic"}, x=X4()),
    P("bicubic_align_corners", {"size": (6, 5), "mode": "bicubic", "align_corners": True}, x=X4()),
    P("bicubic_float64", {"scale_factor": 1.5, "mode": "bicubic"}, x=X4(dtype="float64")),
    P("trilinear", {"scale_factor": 2.0, "mode": "trilinear"}, x=spec((1, 1, 2, 3, 2))),
    P("area", {"size": (2, 3), "mode": "area"}, x=X4()),
    P("size_one", {"size": (1, 1), "mode": "bilinear"}, x=X4()),
    P("size_and_scale", {"size": 4, "scale_factor": 2.0}, x=X4()),
    P("neither_size_nor_scale", x=X4()),
    P("unknown_mode", {"size": (4, 4), "mode": "cubic"}, x=X4()),
    P("nearest_align_corners", {"size": (4, 4), "align_corners": True}, x=X4()),
    P("wrong_rank_size", {"size": (4, 4, 4)}, x=X4()),
    P("trilinear_on_4d", {"size": (4, 4), "mode": "trilinear"}, x=X4()),
]  # fmt: skip


def spatial_table() -> dict[str, list[Pattern]]:
    table: dict[str, list[Pattern]] = {"pad": PAD_PATTERNS}
    for dims in (1, 2, 3):
        table[f"conv{dims}d"] = conv_patterns(dims)
        table[f"conv_transpose{dims}d"] = conv_transpose_patterns(dims)
    table["unfold"] = UNFOLD_PATTERNS
    table["fold"] = FOLD_PATTERNS
    for dims in (1, 2, 3):
        table[f"max_pool{dims}d"] = max_pool_patterns(dims)
        table[f"avg_pool{dims}d"] = avg_pool_patterns(dims)
    for dims in (1, 2, 3):
        table[f"adaptive_avg_pool{dims}d"] = adaptive_patterns(dims, indices=False)
        table[f"adaptive_max_pool{dims}d"] = adaptive_patterns(dims, indices=True)
    table["interpolate"] = INTERPOLATE_PATTERNS
    return table
