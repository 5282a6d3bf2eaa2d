"""More torch.NAME forms (frontend/torch_level.py) and Tensor methods (frontend/tensor.py)
against torch: convolution, conv_tbc, the grid_sampler family, range, segment_reduce, angle,
the unsafe_ splits, in-place function forms, PyTorch's settings, and Tensor.set_, new,
dim_order, map2_ and their neighbours."""

import math
import warnings

import numpy as np
import pytest
import torch
from kernel_helpers import TORCH_DTYPES
from parity_helpers import close_to_torch, same

import kael

RNG = np.random.default_rng(8)
FLOATS = [kael.float32, kael.float64]
LAYOUTS = ["contiguous", "transposed", "sliced", "expanded", "empty", "0-d"]


def _pair(values, dtype=kael.float32):
    """A kael tensor and the equal torch tensor over `values`."""
    t = torch.tensor(np.asarray(values)).to(TORCH_DTYPES[dtype])
    return kael.from_dlpack(t.clone()), t


def _laid_out(values: np.ndarray, dtype, layout: str):
    """The kael and torch tensors over `values` (4 x 6), laid out as named."""
    k, t = _pair(values, dtype)
    views = {
        "contiguous": lambda x: x,
        "transposed": lambda x: x.t(),
        "sliced": lambda x: x[1:, ::2],
        "expanded": lambda x: x[:1].expand(3, 6),
        "empty": lambda x: x[:0],
        "0-d": lambda x: x[1, 2],
    }
    return views[layout](k), views[layout](t)


def _raises_like_torch(kael_call, torch_call, kael_error, match: str) -> None:
    """Both refuse: kael with `kael_error` whose message matches, torch with any error."""
    with pytest.raises(kael_error, match=match):
        kael_call()
    with pytest.raises((RuntimeError, TypeError, ValueError, IndexError)):
        torch_call()


# ---- convolution and conv_tbc ------------------------------------------------------------------

# (input shape, weight shape, stride, padding, dilation, transposed, output_padding, groups)
CONVOLUTIONS = {
    "1d": ((2, 4, 7), (6, 2, 3), [1], [1], [1], False, [0], 2),
    "2d_strided": ((1, 3, 6, 5), (4, 3, 3, 2), [2, 1], [1, 0], [1, 2], False, [0, 0], 1),
    "3d": ((1, 2, 4, 4, 3), (2, 2, 2, 2, 2), [1], [0], [1], False, [0], 1),
    "transposed_1d": ((2, 4, 5), (4, 3, 3), [2], [1], [1], True, [1], 1),
    "transposed_2d_groups": ((1, 4, 3, 3), (4, 1, 2, 2), [1, 2], [0, 1], [1], True, [0, 1], 2),
    "transposed_3d": ((1, 2, 2, 3, 2), (2, 1, 2, 2, 2), [1], [0], [1], True, [0], 1),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(CONVOLUTIONS))
@pytest.mark.parametrize("with_bias", [True, False])
def test_convolution_dispatches_on_weight_rank_and_transposed(name, dtype, with_bias):
    shape, wshape, stride, padding, dilation, transposed, out_pad, groups = CONVOLUTIONS[name]
    kx, tx = _pair(RNG.standard_normal(shape), dtype)
    kw, tw = _pair(RNG.standard_normal(wshape), dtype)
    channels = wshape[1] * groups if transposed else wshape[0]
    kb, tb = _pair(RNG.standard_normal(channels), dtype) if with_bias else (None, None)
    args = (stride, padding, dilation, transposed, out_pad, groups)
    close_to_torch(kael.convolution(kx, kw, kb, *args), torch.convolution(tx, tw, tb, *args), 1e-4)


def test_convolution_of_a_transposed_input_reads_its_layout():
    kx, tx = _pair(RNG.standard_normal((2, 5, 4)))
    kw, tw = _pair(RNG.standard_normal((3, 4, 2)))
    args = ([1], [0], [1], False, [0], 1)
    got = kael.convolution(kx.transpose(1, 2), kw, None, *args)
    close_to_torch(got, torch.convolution(tx.transpose(1, 2), tw, None, *args), 1e-5)


def test_convolution_of_an_empty_batch_is_empty():
    kx, tx = _pair(np.zeros((0, 2, 5)))
    kw, tw = _pair(RNG.standard_normal((3, 2, 2)))
    args = ([1], [0], [1], False, [0], 1)
    same(kael.convolution(kx, kw, None, *args), torch.convolution(tx, tw, None, *args))


CONV_ERRORS = {
    "unbatched_input": (lambda x, w: (x[0], w, None, [1], [0], [1], False, [0], 1), "dimensional"),
    "stride_an_int": (lambda x, w: (x, w, None, 1, [0], [1], False, [0], 1), "tuple of ints"),
    "stride_too_long": (lambda x, w: (x, w, None, [1, 1], [0], [1], False, [0], 1), "stride=\\[1, 1\\]"),
    "negative_padding": (lambda x, w: (x, w, None, [1], [-1], [1], False, [0], 1), "negative padding"),
    "zero_groups": (lambda x, w: (x, w, None, [1], [0], [1], False, [0], 0), "groups=0"),
    "transposed_an_int": (lambda x, w: (x, w, None, [1], [0], [1], 1, [0], 1), "transposed"),
    "channels_mismatch": (lambda x, w: (x, w, None, [1], [0], [1], False, [0], 3), "groups"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CONV_ERRORS))
def test_convolution_refuses_bad_arguments_as_torch(case):
    build, match = CONV_ERRORS[case]
    kx, tx = _pair(RNG.standard_normal((2, 6, 5)))
    kw, tw = _pair(RNG.standard_normal((6, 3, 2)))
    kargs, targs = build(kx, kw), build(tx, tw)
    _raises_like_torch(
        lambda: kael.convolution(*kargs), lambda: torch.convolution(*targs), kael.Error, match
    )


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("pad", [0, 1, 2])
def test_conv_tbc_convolves_time_batch_channel_inputs(dtype, pad):
    kx, tx = _pair(RNG.standard_normal((6, 2, 3)), dtype)
    kw, tw = _pair(RNG.standard_normal((3, 3, 4)), dtype)
    kb, tb = _pair(RNG.standard_normal(4), dtype)
    close_to_torch(kael.conv_tbc(kx, kw, kb, pad), torch.conv_tbc(tx, tw, tb, pad), 1e-5)


def test_conv_tbc_refuses_a_non_tensor_input():
    kw, tw = _pair(RNG.standard_normal((3, 3, 4)))
    kb, tb = _pair(RNG.standard_normal(4))
    _raises_like_torch(
        lambda: kael.conv_tbc([1.0], kw, kb), lambda: torch.conv_tbc([1.0], tw, tb),
        kael.TypeError, "must be Tensor",
    )  # fmt: skip


# ---- grid_sampler ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding", [0, 1, 2])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sampler_2d_takes_atens_int_modes(dtype, mode, padding, align):
    kx, tx = _pair(RNG.standard_normal((2, 3, 4, 5)), dtype)
    kg, tg = _pair(RNG.uniform(-1.2, 1.2, (2, 3, 2, 2)), dtype)
    want = torch.grid_sampler_2d(tx, tg, mode, padding, align)
    close_to_torch(kael.grid_sampler_2d(kx, kg, mode, padding, align), want, 1e-5)
    close_to_torch(kael.grid_sampler(kx, kg, mode, padding, align), want, 1e-5)


@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize("padding", [0, 1, 2])
def test_grid_sampler_3d_takes_atens_int_modes(mode, padding):
    kx, tx = _pair(RNG.standard_normal((1, 2, 3, 4, 3)))
    kg, tg = _pair(RNG.uniform(-1.1, 1.1, (1, 2, 2, 2, 3)))
    want = torch.grid_sampler_3d(tx, tg, mode, padding, False)
    close_to_torch(kael.grid_sampler_3d(kx, kg, mode, padding, False), want, 1e-5)
    close_to_torch(kael.grid_sampler(kx, kg, mode, padding, False), want, 1e-5)


def test_grid_sampler_reads_a_transposed_grid():
    kx, tx = _pair(RNG.standard_normal((1, 2, 4, 4)))
    kg, tg = _pair(RNG.uniform(-1, 1, (1, 3, 2, 2)))
    want = torch.grid_sampler(tx, tg.transpose(1, 2), 0, 0, False)
    close_to_torch(kael.grid_sampler(kx, kg.transpose(1, 2), 0, 0, False), want, 1e-5)


SAMPLER_ERRORS = {
    "align_none": ("grid_sampler", (0, 0, None), 4, kael.TypeError, "align_corners"),
    "align_int": ("grid_sampler_2d", (0, 0, 1), 4, kael.TypeError, "align_corners"),
    "bicubic_3d": ("grid_sampler", (2, 0, False), 5, kael.ValueError, "bicubic"),
    "bicubic_3d_named": ("grid_sampler_3d", (2, 0, False), 5, kael.ValueError, "bicubic"),
    "2d_of_5d": ("grid_sampler_2d", (0, 0, False), 5, kael.ValueError, "expected 4D"),
    "3d_of_4d": ("grid_sampler_3d", (0, 0, False), 4, kael.ValueError, "expected 5D"),
}


@pytest.mark.parametrize("case", sorted(SAMPLER_ERRORS))
def test_grid_sampler_refuses_bad_arguments_as_torch(case):
    name, args, ndim, error, match = SAMPLER_ERRORS[case]
    kx, tx = _pair(RNG.standard_normal((1, 2, 3, 3, 3)[:ndim]))
    kg, tg = _pair(RNG.uniform(-1, 1, (1, 2, 2, 2, ndim - 2)[: ndim - 1] + (ndim - 2,)))
    _raises_like_torch(
        lambda: getattr(kael, name)(kx, kg, *args), lambda: getattr(torch, name)(tx, tg, *args),
        error, match,
    )  # fmt: skip


@pytest.mark.parametrize("modes", [(3, 0), (-1, 0), (0, 3)])
def test_grid_sampler_refuses_an_unknown_mode_int(modes):
    # torch does not check (it samples somehow); kael names the value
    kx = kael.zeros(1, 1, 2, 2)
    kg = kael.zeros(1, 1, 1, 2)
    with pytest.raises(kael.ValueError, match=str(max(modes, key=lambda m: m not in (0, 1, 2)))):
        kael.grid_sampler(kx, kg, *modes, False)


# ---- in-place function forms and queries -----------------------------------------------------


def test_is_inference_is_false_as_torchs_outside_inference_mode():
    kx, tx = _pair([1.0, 2.0])
    assert kael.is_inference(kx) is torch.is_inference(tx) is False
    _raises_like_torch(
        lambda: kael.is_inference([1]), lambda: torch.is_inference([1]), kael.TypeError,
        "must be Tensor",
    )  # fmt: skip


def test_resize_as_function_form_resizes_input_and_returns_it():
    k, t = _pair(np.zeros((2, 3)))
    got = kael.resize_as_(k, kael.zeros(3))
    assert got is k and torch.resize_as_(t, torch.zeros(3)) is t
    assert k.shape == tuple(t.shape) == (3,)


def test_as_strided_function_form_restrides_input():
    k, t = _pair(np.arange(6.0))
    assert kael.as_strided_(k, (2, 2), (1, 2), 1) is k
    same(k, torch.as_strided_(t, (2, 2), (1, 2), 1))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_addmv_function_form_writes_input(dtype):
    k, t = _pair(RNG.standard_normal(3), dtype)
    km, tm = _pair(RNG.standard_normal((2, 3)), dtype)
    kv, tv = _pair(RNG.standard_normal(2), dtype)
    assert kael.addmv_(k, km.t(), kv, beta=2.0, alpha=0.5) is k
    same(k, torch.addmv_(t, tm.t(), tv, beta=2.0, alpha=0.5))


# ---- unsafe_ splits ----------------------------------------------------------------------------

SPLITS = {
    "unsafe_chunk": (3, 1),
    "unsafe_split": (2, 1),
    "unsafe_split_with_sizes": ([1, 2, 3], 1),
}


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("name", sorted(SPLITS))
def test_unsafe_splits_are_the_safe_ones(name, layout):
    k, t = _laid_out(RNG.standard_normal((4, 6)), kael.float32, layout)
    arg, dim = SPLITS[name]
    if layout != "contiguous":
        arg = arg if name != "unsafe_split_with_sizes" else [1, 2, t.shape[1] - 3]
    same(getattr(kael, name)(k, arg, dim), getattr(torch, name)(t, arg, dim))
    same(getattr(k, name)(arg, dim), getattr(t, name)(arg, dim))


def test_unsafe_split_with_sizes_refuses_sizes_not_adding_up():
    k, t = _pair(np.arange(10.0))
    _raises_like_torch(
        lambda: kael.unsafe_split_with_sizes(k, [3, 6]),
        lambda: torch.unsafe_split_with_sizes(t, [3, 6]), kael.Error, "10",
    )  # fmt: skip


# ---- range -------------------------------------------------------------------------------------

RANGES = [(0, 5), (5, 0, -2), (3, 3), (0, 4, 1), (0, 4.5, 1.5), (-2.5, 7, 3)]
FRACTIONAL_STEPS = [(0, 1, 0.3), (-1.5, 2.5, 0.5), (1, -1, -0.25)]


@pytest.mark.parametrize("dtype", [None, kael.float64, kael.int64, kael.int32, kael.float16])
@pytest.mark.parametrize("args", RANGES, ids=str)
def test_range_includes_end_in_the_default_float_dtype(args, dtype):
    _same_range(args, dtype)


@pytest.mark.parametrize("dtype", [None, kael.float64, kael.bfloat16])
@pytest.mark.parametrize("args", FRACTIONAL_STEPS, ids=str)
def test_range_takes_fractional_steps_in_float_dtypes(args, dtype):
    _same_range(args, dtype)


def test_range_refuses_an_integer_step_truncated_to_zero():
    # torch divides by the truncated step (a SIGFPE); kael names it
    with pytest.warns(UserWarning), pytest.raises(kael.ValueError, match="step=0 in int64"):
        kael.range(0, 1, 0.3, dtype=kael.int64)


def _same_range(args, dtype) -> None:
    """kael.range against torch.range (its warning silenced) for one dtype."""
    tdtype = None if dtype is None else TORCH_DTYPES[dtype]
    with pytest.warns(UserWarning, match="deprecated"):
        got = kael.range(*args, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.range(*args, dtype=tdtype)
    close_to_torch(got, want, 0.0)


@pytest.mark.parametrize(
    "args,match",
    [((0, 5, 0), "nonzero"), ((5, 0, 1), "inconsistent"), ((0, math.inf), "unsupported range")],
)
def test_range_refuses_what_torch_refuses(args, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _raises_like_torch(
            lambda: kael.range(*args), lambda: torch.range(*args), kael.ValueError, match
        )


# ---- angle -------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [*FLOATS, kael.float16, kael.bfloat16], ids=str)
def test_angle_is_pi_for_negatives_and_keeps_nan(dtype, layout):
    values = RNG.integers(-3, 4, (4, 6)).astype(float)
    values[0, :3] = [math.nan, -math.inf, -0.0]
    k, t = _laid_out(values, dtype, layout)
    close_to_torch(kael.angle(k), torch.angle(t), 0.0, equal_nan=True)
    close_to_torch(k.angle(), t.angle(), 0.0, equal_nan=True)


@pytest.mark.parametrize("dtype", [kael.int64, kael.int32, kael.int8, kael.uint8, kael.bool])
def test_angle_of_integers_is_the_default_float_dtype(dtype):
    k, t = _laid_out(RNG.integers(-3, 4, (4, 6)), dtype, "transposed")
    same(kael.angle(k), torch.angle(t))


def test_angle_refuses_a_non_tensor():
    _raises_like_torch(
        lambda: kael.angle([1.0]), lambda: torch.angle([1.0]), kael.TypeError, "must be Tensor"
    )


# ---- segment_reduce ----------------------------------------------------------------------------

REDUCES = ["sum", "mean", "max", "min", "prod"]


@pytest.mark.parametrize("initial", [None, 2.5])
@pytest.mark.parametrize("how", ["lengths", "offsets"])
@pytest.mark.parametrize("reduce", REDUCES)
def test_segment_reduce_gives_empty_segments_initial_or_the_identity(reduce, how, initial):
    data = RNG.integers(-3, 4, (6, 3)).astype(float)
    data[1, 0] = math.nan
    kd, td = _pair(data)
    given = {"lengths": [2, 0, 3, 1], "offsets": [0, 2, 2, 5, 6]}[how]
    kl, tl = _pair(given, kael.int64)
    got = kael.segment_reduce(kd, reduce, **{how: kl}, initial=initial)
    same(got, torch.segment_reduce(td, reduce, **{how: tl}, initial=initial))


@pytest.mark.parametrize("dtype", [kael.float64, kael.float16, kael.bfloat16], ids=str)
@pytest.mark.parametrize("reduce", REDUCES)
def test_segment_reduce_keeps_floating_dtypes(reduce, dtype):
    kd, td = _pair(RNG.integers(1, 4, (5, 2)), dtype)
    kl, tl = _pair([2, 0, 3], kael.int32)
    close_to_torch(
        kael.segment_reduce(kd, reduce, lengths=kl),
        torch.segment_reduce(td, reduce, lengths=tl), 1e-2, equal_nan=True,
    )  # fmt: skip


@pytest.mark.parametrize("reduce", REDUCES)
def test_segment_reduce_along_a_later_axis_takes_rows_of_lengths(reduce):
    kd, td = _pair(RNG.integers(-3, 4, (2, 5, 3)).astype(float))
    kl, tl = _pair([[2, 0, 3], [1, 1, 3]], kael.int64)
    for axis in (1, -2):
        got = kael.segment_reduce(kd.transpose(0, 1).transpose(0, 1), reduce, lengths=kl, axis=axis)
        same(got, torch.segment_reduce(td, reduce, lengths=tl, axis=axis))


def test_segment_reduce_offsets_may_leave_rows_out():
    kd, td = _pair(RNG.standard_normal((5, 2)))
    for bounds in ([1, 3, 5], [0, 3, 4], [0]):
        ko, to = _pair(bounds, kael.int64)
        same(
            kael.segment_reduce(kd, "sum", offsets=ko), torch.segment_reduce(td, "sum", offsets=to)
        )


def test_segment_reduce_unsafe_skips_the_coverage_check():
    kd, td = _pair(RNG.standard_normal((5, 2)))
    kl, tl = _pair([1, 1], kael.int64)
    got = kael.segment_reduce(kd, "sum", lengths=kl, unsafe=True)
    same(got, torch.segment_reduce(td, "sum", lengths=tl, unsafe=True))


def test_segment_reduce_of_empty_data_with_empty_segments():
    kd, td = _pair(np.zeros((0, 2)))
    kl, tl = _pair([0, 0], kael.int64)
    same(kael.segment_reduce(kd, "sum", lengths=kl), torch.segment_reduce(td, "sum", lengths=tl))


SEGMENT_ERRORS = {
    "lengths_short": (dict(lengths=[2, 2]), kael.ValueError, "sum to"),
    "lengths_long": (dict(lengths=[2, 4]), kael.ValueError, "sum to"),
    "negative_length": (dict(lengths=[2, -1, 4]), kael.ValueError, "negative"),
    "decreasing_offsets": (dict(offsets=[0, 3, 2, 5]), kael.ValueError, "negative"),
    "neither": ({}, kael.ValueError, "Either lengths or offsets"),
    "indices": (dict(indices=[0, 0, 1, 1, 1]), kael.ValueError, "indices"),
    "float_lengths": (dict(lengths=[2.0, 3.0]), kael.TypeError, "integers"),
    "lengths_rank": (dict(lengths=[[2, 3]]), kael.ValueError, "last dimension of lengths"),
    "axis_out_of_range": (dict(lengths=[2, 3], axis=2), kael.IndexError, "range"),
}


@pytest.mark.parametrize("case", sorted(SEGMENT_ERRORS))
def test_segment_reduce_refuses_bad_segments_as_torch(case):
    kwargs, error, match = SEGMENT_ERRORS[case]
    kd, td = _pair(RNG.standard_normal((5, 2)))

    def given(side):
        out = {}
        for key, value in kwargs.items():
            if key == "axis":
                out[key] = value
            else:
                dtype = kael.float32 if isinstance(value[0], float) else kael.int64
                out[key] = _pair(value, dtype)[side]
        return out

    _raises_like_torch(
        lambda: kael.segment_reduce(kd, "sum", **given(0)),
        lambda: torch.segment_reduce(td, "sum", **given(1)), error, match,
    )  # fmt: skip


@pytest.mark.parametrize("dtype", [kael.int64, kael.int32, kael.bool])
def test_segment_reduce_refuses_non_floating_data_as_torch(dtype):
    kd, td = _pair([1, 0, 1], dtype)
    kl, tl = _pair([2, 1], kael.int64)
    _raises_like_torch(
        lambda: kael.segment_reduce(kd, "sum", lengths=kl),
        lambda: torch.segment_reduce(td, "sum", lengths=tl), kael.Error, "not implemented",
    )  # fmt: skip


def test_segment_reduce_refuses_an_unknown_reduce_and_0d_data():
    kd, td = _pair([1.0, 2.0])
    kl, tl = _pair([2], kael.int64)
    _raises_like_torch(
        lambda: kael.segment_reduce(kd, "avg", lengths=kl),
        lambda: torch.segment_reduce(td, "avg", lengths=tl), kael.ValueError, "avg",
    )  # fmt: skip
    _raises_like_torch(
        lambda: kael.segment_reduce(kd[0], "sum", lengths=kl),
        lambda: torch.segment_reduce(td[0], "sum", lengths=tl), kael.ValueError, "dim",
    )  # fmt: skip


# ---- settings ----------------------------------------------------------------------------------


def test_interop_threads_are_stored_and_checked():
    before = kael.get_num_interop_threads()
    assert isinstance(before, int) and before >= 1
    try:
        kael.set_num_interop_threads(3)
        assert kael.get_num_interop_threads() == 3
        with pytest.raises(kael.ValueError, match="positive integer, got 0"):
            kael.set_num_interop_threads(0)
        with pytest.raises(kael.TypeError, match="float"):
            kael.set_num_interop_threads(2.5)
    finally:
        kael.set_num_interop_threads(before)
    with pytest.raises(RuntimeError, match="positive integer"):
        torch.set_num_interop_threads(0)


def test_flush_denormal_is_refused_politely_and_denormals_survive():
    assert kael.set_flush_denormal(True) is False and kael.set_flush_denormal(False) is False
    tiny = kael.tensor([1e-310], dtype=kael.float64) * 1.0
    assert tiny.item() == 1e-310
    _raises_like_torch(
        lambda: kael.set_flush_denormal(1), lambda: torch.set_flush_denormal(1), kael.TypeError,
        "bool",
    )  # fmt: skip


def test_anomaly_switch_is_remembered_with_torchs_defaults():
    assert kael.is_anomaly_enabled() is torch.is_anomaly_enabled() is False
    assert kael.is_anomaly_check_nan_enabled() is torch.is_anomaly_check_nan_enabled() is True
    try:
        for args in [(True, False), (False,)]:
            kael.set_anomaly_enabled(*args)
            torch.set_anomaly_enabled(*args)
            assert kael.is_anomaly_enabled() is torch.is_anomaly_enabled()
            assert kael.is_anomaly_check_nan_enabled() is torch.is_anomaly_check_nan_enabled()
    finally:
        kael.set_anomaly_enabled(False)
        torch.set_anomaly_enabled(False)
    _raises_like_torch(
        lambda: kael.set_anomaly_enabled(1), lambda: torch.set_anomaly_enabled(1), kael.TypeError,
        "must be bool",
    )  # fmt: skip


def test_warn_always_is_remembered():
    assert kael.is_warn_always_enabled() is torch.is_warn_always_enabled() is False
    try:
        kael.set_warn_always(True)
        assert kael.is_warn_always_enabled() is True
    finally:
        kael.set_warn_always(False)
    _raises_like_torch(
        lambda: kael.set_warn_always(1), lambda: torch.set_warn_always(1), kael.TypeError, "bool"
    )


@pytest.mark.parametrize("mode", [0, 1, 2, "default", "warn", "error", True])
def test_deterministic_debug_mode_maps_onto_deterministic_algorithms(mode):
    try:
        kael.set_deterministic_debug_mode(mode)
        torch.set_deterministic_debug_mode(mode)
        assert kael.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode()
        assert (
            kael.are_deterministic_algorithms_enabled()
            is torch.are_deterministic_algorithms_enabled()
        )
        assert (
            kael.is_deterministic_algorithms_warn_only_enabled()
            is torch.is_deterministic_algorithms_warn_only_enabled()
        )
    finally:
        kael.set_deterministic_debug_mode(0)
        torch.set_deterministic_debug_mode(0)


@pytest.mark.parametrize(
    "mode,error,match",
    [(3, kael.ValueError, "but got 3"), ("x", kael.ValueError, "but got x"),
     (1.0, kael.TypeError, "float"), (None, kael.TypeError, "NoneType")],
)  # fmt: skip
def test_deterministic_debug_mode_refuses_what_torch_refuses(mode, error, match):
    _raises_like_torch(
        lambda: kael.set_deterministic_debug_mode(mode),
        lambda: torch.set_deterministic_debug_mode(mode), error, match,
    )  # fmt: skip
    assert kael.get_deterministic_debug_mode() == 0


# ---- Tensor methods ----------------------------------------------------------------------------


def _layout(k, t):
    assert k.shape == tuple(t.shape) and k.stride() == t.stride()
    assert k.storage_offset() == t.storage_offset()


SET_FORMS = {
    "source": lambda s: (s,),
    "sliced_source": lambda s: (s[2:5],),
    "offset_and_size": lambda s: (s, 2, (2, 3)),
    "strides": lambda s: (s, 1, (2, 2), (1, 3)),
    "empty_size": lambda s: (s, 3, (0,)),
}


@pytest.mark.parametrize("form", sorted(SET_FORMS))
def test_set_makes_self_a_view_of_sources_storage(form):
    ks, ts = _pair(np.arange(10.0))
    k, t = kael.zeros(2), torch.zeros(2)
    args = SET_FORMS[form]
    assert k.set_(*args(ks)) is k and t.set_(*args(ts)) is t
    _layout(k, t)
    same(k, t)
    assert k.shares_storage(ks)
    ks.fill_(7.0)
    assert all(v == 7.0 for v in k.reshape(-1).tolist())


def test_set_grows_a_storage_too_small_as_torch():
    ks, ts = kael.arange(10.0), torch.arange(10.0)  # kael's own storage: resizable
    k, t = kael.zeros(2), torch.zeros(2)
    k.set_(ks, 0, (4, 4))
    t.set_(ts, 0, (4, 4))
    _layout(k, t)
    same(k.reshape(-1)[:10], t.reshape(-1)[:10])


def test_set_without_source_empties_self():
    k, t = kael.zeros(2, 3, dtype=kael.float64), torch.zeros(2, 3, dtype=torch.float64)
    assert k.set_() is k
    same(k, t.set_())


SET_ERRORS = {
    "dtype": (lambda s: (s.long(),), kael.TypeError, "type"),
    "negative_offset": (lambda s: (s, -1, (2,)), kael.ValueError, "offset -1"),
    "stride_length": (lambda s: (s, 0, (2,), (1, 2, 3)), kael.ValueError, "\\(1\\).*\\(3\\)"),
    "negative_size": (lambda s: (s, 0, (-1,)), kael.Error, "-1"),
    "not_a_tensor": (lambda s: ([1.0],), kael.TypeError, "list"),
}


@pytest.mark.parametrize("case", sorted(SET_ERRORS))
def test_set_refuses_bad_sources_as_torch(case):
    build, error, match = SET_ERRORS[case]
    ks, ts = _pair(np.arange(10.0))
    _raises_like_torch(
        lambda: kael.zeros(2).set_(*build(ks)), lambda: torch.zeros(2).set_(*build(ts)),
        error, match,
    )  # fmt: skip


def test_is_shared_is_false_and_const_data_ptr_is_data_ptr():
    k, t = _pair(np.arange(6.0))
    assert k.is_shared() is t.is_shared() is False
    assert k[2:].const_data_ptr() == k[2:].data_ptr()
    assert t[2:].const_data_ptr() == t[2:].data_ptr()


DIM_ORDERS = {
    "contiguous": lambda x: x,
    "transposed": lambda x: x.transpose(0, 2),
    "permuted": lambda x: x.permute(1, 2, 0),
    "channels_last": lambda x: x.unsqueeze(0).permute(0, 2, 3, 1),
    "size_one": lambda x: x[:, :1],
    "expanded": lambda x: x[:1].expand(3, 3, 4),
    "0-d": lambda x: x[0, 0, 0],
    "1-d": lambda x: x[0, 0],
    "empty": lambda x: x[:0].transpose(0, 1),
}


@pytest.mark.parametrize("layout", sorted(DIM_ORDERS))
def test_dim_order_sorts_dims_outermost_first_as_torch(layout):
    k, t = _pair(np.zeros((2, 3, 4)))
    view = DIM_ORDERS[layout]
    assert view(k).dim_order() == view(t).dim_order()


def test_dim_order_ambiguity_check_refuses_size_one_dims():
    k, t = _pair(np.zeros((1, 3)))
    _raises_like_torch(
        lambda: k.dim_order(ambiguity_check=True), lambda: t.dim_order(ambiguity_check=True),
        kael.Error, "unique dim order",
    )  # fmt: skip
    assert k.T.dim_order(ambiguity_check=False) == t.T.dim_order(ambiguity_check=False)


@pytest.mark.parametrize(
    ("shape", "strides", "ambiguous"),
    [((2, 3), (0, 3), True), ((3, 2, 3), (6, 3, 6), True), ((2, 3), (1, 2), False)],
)
def test_dim_order_ambiguity_check_refuses_orders_its_sort_cannot_decide(shape, strides, ambiguous):
    k, t = kael.empty_strided(shape, strides), torch.empty_strided(shape, strides)
    if ambiguous:
        _raises_like_torch(
            lambda: k.dim_order(ambiguity_check=True), lambda: t.dim_order(ambiguity_check=True),
            kael.Error, "unique dim order",
        )  # fmt: skip
    else:
        assert k.dim_order(ambiguity_check=True) == t.dim_order(ambiguity_check=True)
    assert k.dim_order() == t.dim_order()


@pytest.mark.parametrize("dtype", [*FLOATS, kael.int64], ids=str)
def test_map2_calls_the_function_per_element_with_broadcast_operands(dtype):
    k, t = _laid_out(RNG.integers(-3, 4, (4, 6)), dtype, "transposed")
    kx, tx = _pair(RNG.integers(-3, 4, (4,)), dtype)
    ky, ty = _pair(RNG.integers(-3, 4, (6, 1)), dtype)
    fn = lambda a, b, c: a * 2 + b - c  # noqa: E731
    assert k.map2_(kx, ky, fn) is k
    same(k, t.map2_(tx, ty, fn))


def test_map2_refuses_operands_of_another_dtype_as_torch():
    k, t = _pair(np.zeros(3))
    ki, ti = _pair([1, 2, 3], kael.int64)
    _raises_like_torch(
        lambda: k.map2_(ki, k, lambda a, b, c: a), lambda: t.map2_(ti, t, lambda a, b, c: a),
        kael.TypeError, "expected",
    )  # fmt: skip


NEW_FORMS = {
    "nothing": (),
    "sizes": (2, 3),
    "zero": (0,),
    "tuple_data": ((2, 3),),
    "list_data": ([1, 2, 3],),
    "nested": ([[1, 2], [3, 4]],),
    "empty_list": ([],),
    "float_data": ([1.5, True],),
}


@pytest.mark.parametrize("dtype", [kael.float64, kael.int32], ids=str)
@pytest.mark.parametrize("form", sorted(NEW_FORMS))
def test_new_is_torchs_legacy_constructor_in_selfs_dtype(form, dtype):
    k, t = _pair(np.zeros(2), dtype)
    args = NEW_FORMS[form]
    got, want = k.new(*args), t.new(*args)
    assert got.shape == tuple(want.shape) and TORCH_DTYPES[got.dtype] == want.dtype
    if form.endswith("data") or form in ("nested", "empty_list"):
        same(got, want)


def test_new_of_a_size_is_uninitialised_of_that_shape():
    k = kael.zeros(2).new(kael.Size([2, 2]))
    assert k.shape == tuple(torch.zeros(2).new(torch.Size([2, 2])).shape)


def test_new_of_a_tensor_aliases_it():
    k, t = _pair(np.arange(3.0))
    assert k.new(k).data_ptr() == k.data_ptr() and t.new(t).data_ptr() == t.data_ptr()


@pytest.mark.parametrize(
    "args,error,match",
    [((-1,), kael.Error, "-1"), (("a",), kael.TypeError, "str"), ((2.5,), kael.TypeError, "float")],
)
def test_new_refuses_what_torch_refuses(args, error, match):
    k, t = _pair(np.zeros(2))
    _raises_like_torch(lambda: k.new(*args), lambda: t.new(*args), error, match)
    ki, ti = _pair([1, 2], kael.int64)
    _raises_like_torch(lambda: k.new(ki), lambda: t.new(ti), kael.TypeError, "int64")


@pytest.mark.parametrize("stride", [(-1,), (-1_000_000,), "a", 3, (1.5,)])
def test_set_refuses_strides_that_are_not_ints_of_at_least_zero(stride):
    with pytest.raises(kael.TypeError, match="stride must be a sequence of ints >= 0"):
        kael.zeros(1).set_(kael.arange(10.0), 0, (3,), stride)
    assert kael.zeros(1).set_(kael.arange(10.0), 0, (3,), (0,)).tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("args", "words"),
    [((0, 1, math.nan), "finite and nonzero"), ((-1e308, 1e308, 1e-300), "too many elements")],
)
def test_range_refuses_a_nan_step_and_too_many_elements(args, words):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(kael.ValueError, match=words):
            kael.range(*args)
