"""conv1d/2d/3d, conv_transpose1d/2d/3d, unfold and fold against PyTorch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from parity_helpers import close_to_torch
from parity_helpers import torch_pair as pair

import kael
import kael.nn.functional as KF
from kael.frontend import conv

RNG = np.random.default_rng(41)


def same(k, t, tol=2e-4):
    close_to_torch(k, t, tol)


CONV2D = [
    {},
    {"stride": 2, "padding": 1},
    {"padding": "same", "dilation": 2},
    {"padding": "valid"},
    {"stride": (2, 1), "padding": (0, 2), "dilation": (1, 2)},
    {"groups": 2},
    {"groups": 4, "stride": 3},
]


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("kwargs", CONV2D, ids=str)
def test_conv2d_matches_torch(kwargs, bias):
    groups = kwargs.get("groups", 1)
    kx, tx = pair(RNG.standard_normal((2, 4, 9, 8)))
    kw, tw = pair(RNG.standard_normal((8, 4 // groups, 3, 3)))
    kb, tb = pair(RNG.standard_normal(8)) if bias else (None, None)
    same(KF.conv2d(kx, kw, kb, **kwargs), TF.conv2d(tx, tw, tb, **kwargs))
    same(KF.conv2d(kx[0], kw, kb, **kwargs), TF.conv2d(tx[0], tw, tb, **kwargs))  # unbatched


@pytest.mark.parametrize("dtype", [kael.float64, kael.float16], ids=str)
def test_conv2d_of_other_dtypes_and_layouts(dtype):
    kx, tx = pair(RNG.standard_normal((2, 3, 7, 6)), dtype)
    kw, tw = pair(RNG.standard_normal((5, 3, 2, 3)), dtype)
    tol = 1e-10 if dtype is kael.float64 else 2e-2
    same(KF.conv2d(kx.transpose(2, 3), kw), TF.conv2d(tx.transpose(2, 3), tw), tol)


@pytest.mark.parametrize(
    "kwargs", [{}, {"stride": 3, "padding": 2}, {"padding": "same"}, {"dilation": 3}]
)
def test_conv1d_and_conv3d_match_torch(kwargs):
    kx, tx = pair(RNG.standard_normal((2, 3, 17)))
    kw, tw = pair(RNG.standard_normal((4, 3, 4)))
    same(KF.conv1d(kx, kw, **kwargs), TF.conv1d(tx, tw, **kwargs))
    kx, tx = pair(RNG.standard_normal((1, 2, 7, 9, 8)))
    kw, tw = pair(RNG.standard_normal((3, 2, 2, 3, 2)))
    same(KF.conv3d(kx, kw, **kwargs), TF.conv3d(tx, tw, **kwargs))


TRANSPOSED = [
    {},
    {"stride": 2, "padding": 1, "output_padding": 1},
    {"dilation": 2},
    {"groups": 2, "stride": (1, 2)},
    {"dilation": 3, "output_padding": 2},  # not below the stride, but below the dilation
]


@pytest.mark.parametrize("kwargs", TRANSPOSED, ids=str)
def test_conv_transpose2d_matches_torch(kwargs):
    groups = kwargs.get("groups", 1)
    kx, tx = pair(RNG.standard_normal((2, 4, 5, 6)))
    kw, tw = pair(RNG.standard_normal((4, 6 // groups, 3, 3)))
    kb, tb = pair(RNG.standard_normal(6))
    same(KF.conv_transpose2d(kx, kw, kb, **kwargs), TF.conv_transpose2d(tx, tw, tb, **kwargs))


def test_conv_transpose1d_and_3d_match_torch():
    kx, tx = pair(RNG.standard_normal((2, 3, 9)))
    kw, tw = pair(RNG.standard_normal((3, 2, 4)))
    same(
        KF.conv_transpose1d(kx, kw, stride=3, padding=1),
        TF.conv_transpose1d(tx, tw, stride=3, padding=1),
    )
    kx, tx = pair(RNG.standard_normal((1, 2, 3, 4, 2)))
    kw, tw = pair(RNG.standard_normal((2, 3, 2, 2, 2)))
    same(KF.conv_transpose3d(kx, kw, stride=2), TF.conv_transpose3d(tx, tw, stride=2))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kernel_size": 2},
        {"kernel_size": 3, "padding": 1, "stride": 2},
        {"kernel_size": (2, 3), "dilation": (2, 1)},
    ],
    ids=str,
)
def test_unfold_and_fold_match_torch(kwargs):
    kx, tx = pair(RNG.standard_normal((2, 3, 7, 8)))
    cols_k, cols_t = KF.unfold(kx, **kwargs), TF.unfold(tx, **kwargs)
    same(cols_k, cols_t)
    same(KF.fold(cols_k, (7, 8), **kwargs), TF.fold(cols_t, (7, 8), **kwargs))


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda: KF.conv2d(kael.ones(1, 3, 5, 5), kael.ones(4, 2, 3, 3)),
            kael.ValueError,
            "expected input",
        ),
        (
            lambda: KF.conv2d(kael.ones(1, 4, 5, 5), kael.ones(4, 2, 3, 3), groups=3),
            kael.ValueError,
            "groups=3",
        ),
        (
            lambda: KF.conv2d(
                kael.ones(1, 3, 5, 5), kael.ones(4, 3, 3, 3), stride=2, padding="same"
            ),
            kael.ValueError,
            "strided",
        ),
        (
            lambda: KF.conv2d(kael.ones(1, 3, 5, 5), kael.ones(4, 3, 3, 3), padding="full"),
            kael.ValueError,
            "Invalid padding",
        ),
        (
            lambda: KF.conv2d(kael.ones(1, 3, 2, 2), kael.ones(4, 3, 3, 3)),
            kael.ValueError,
            "smaller than the kernel",
        ),
        (lambda: KF.conv2d(kael.ones(3, 5), kael.ones(4, 3, 3, 3)), kael.ValueError, "3D"),
        (
            lambda: KF.conv2d(
                kael.ones(1, 3, 5, 5, dtype=kael.int64), kael.ones(4, 3, 3, 3, dtype=kael.int32)
            ),
            kael.TypeError,
            "one dtype",
        ),
        (
            lambda: KF.conv2d(
                kael.ones(1, 3, 5, 5, dtype=kael.bool), kael.ones(4, 3, 3, 3, dtype=kael.bool)
            ),
            NotImplementedError,  # torch's type; kael.TypeError too
            "not implemented for bool",
        ),
        (
            lambda: KF.conv_transpose2d(
                kael.ones(1, 3, 5, 5, dtype=kael.int32), kael.ones(3, 2, 3, 3, dtype=kael.int32)
            ),
            kael.Error,
            "not implemented for int32",
        ),
        (
            lambda: KF.conv_transpose2d(
                kael.ones(1, 3, 5, 5), kael.ones(3, 2, 3, 3), stride=2, output_padding=2
            ),
            kael.ValueError,
            "output padding",
        ),
        (lambda: KF.fold(kael.ones(1, 5, 4), (3, 3), 2), kael.ValueError, "divisible"),
    ],
)
def test_bad_convolutions_raise(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_conv_with_bias_and_relu_compiles_into_one_kernel():
    """The bias add and relu run inside the convolution, on each block as it completes."""

    @kael.compile
    def block(x, w, b):
        return kael.relu(KF.conv2d(x, w, b, padding=1))

    kx, tx = pair(RNG.standard_normal((2, 4, 8, 8)))
    kw, tw = pair(RNG.standard_normal((6, 4, 3, 3)))
    kb, tb = pair(RNG.standard_normal(6))
    for _ in range(2):  # the trace, then a replay
        same(block(kx, kw, kb), TF.relu(TF.conv2d(tx, tw, tb, padding=1)))
    plan = block.plan_for(kx, kw, kb)
    assert len(plan.kernel_steps) == 1
    assert "epilogue, run on each block as it completes" in str(block.inspect(kx, kw, kb))


def test_conv_then_a_kernel_reading_it_elsewhere_runs_apart():
    """A kernel reading the convolution at other positions (a flip) cannot join it."""

    @kael.compile
    def block(x, w):
        y = KF.conv2d(x, w, padding=1)
        return y + y.flip(3)

    kx, tx = pair(RNG.standard_normal((2, 4, 8, 8)))
    kw, tw = pair(RNG.standard_normal((6, 4, 3, 3)))
    for _ in range(2):
        ty = TF.conv2d(tx, tw, padding=1)
        same(block(kx, kw), ty + ty.flip(3))
    assert len(block.plan_for(kx, kw).kernel_steps) == 2


@pytest.mark.parametrize("dtype", [kael.int64, kael.int32, kael.int16, kael.int8, kael.uint8])
def test_integer_convolutions_wrap_as_torch(dtype):
    """PyTorch's CPU convolves every integer dtype (products and sums wrap); its transposed
    convolution takes int64 only."""
    kx, tx = pair(RNG.integers(0, 100, (2, 4, 9, 8)), dtype)
    kw, tw = pair(RNG.integers(0, 4, (6, 2, 3, 3)), dtype)
    kb, tb = pair(RNG.integers(0, 5, 6), dtype)
    same(
        KF.conv2d(kx, kw, kb, padding=1, stride=2, groups=2),
        TF.conv2d(tx, tw, tb, padding=1, stride=2, groups=2),
        0,
    )
    if dtype is kael.int64:
        kw, tw = pair(RNG.integers(-3, 4, (4, 3, 3, 3)), dtype)
        same(KF.conv_transpose2d(kx, kw, stride=2), TF.conv_transpose2d(tx, tw, stride=2), 0)


def test_conv_tbc_matches_torch():
    kx, tx = pair(RNG.standard_normal((10, 2, 4)))
    kw, tw = pair(RNG.standard_normal((3, 4, 5)))
    kb, tb = pair(RNG.standard_normal(5))
    same(KF.conv_tbc(kx, kw, kb, 1), TF.conv_tbc(tx, tw, tb, 1))
    with pytest.raises(kael.ValueError, match="disagree"):
        KF.conv_tbc(kx, kw[:, :3], kb)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kernel_size": (0, 2)},
        {"kernel_size": 2, "stride": 0},
        {"kernel_size": 2, "dilation": (1, 0)},
        {"kernel_size": 2, "padding": (-1, 0)},
    ],
    ids=str,
)
def test_unfold_and_fold_refuse_empty_kernels_strides_dilations_and_negative_padding(kwargs):
    kx, tx = pair(np.ones((1, 4, 4, 4)))
    for kael_call, torch_call in (
        (lambda: KF.unfold(kx, **kwargs), lambda: TF.unfold(tx, **kwargs)),
        (lambda: KF.fold(kx[0], (3, 3), **kwargs), lambda: TF.fold(tx[0], (3, 3), **kwargs)),
    ):
        with pytest.raises(RuntimeError) as expected:
            torch_call()
        with pytest.raises(kael.ValueError) as got:
            kael_call()
        assert str(expected.value) in str(got.value)


@pytest.mark.parametrize(
    ("dims", "kwargs"),
    [
        (1, {"stride": 1, "output_padding": 2}),
        (2, {"stride": (2, 3), "output_padding": (1, 3), "dilation": (1, 2)}),
        (3, {"stride": (2, 3, 1), "output_padding": (1, 3, 0), "dilation": (1, 2, 1)}),
    ],
    ids=str,
)
def test_conv_transpose_output_padding_error_names_the_values_as_torch(dims, kwargs):
    kx, tx = pair(np.ones((1, 1) + (3,) * dims))
    kw, tw = pair(np.ones((1, 1) + (2,) * dims))
    with pytest.raises(RuntimeError) as expected:
        getattr(TF, f"conv_transpose{dims}d")(tx, tw, **kwargs)
    with pytest.raises(kael.ValueError) as got:
        getattr(KF, f"conv_transpose{dims}d")(kx, kw, **kwargs)
    assert str(expected.value) in str(got.value)


BAD_TRANSPOSED_ARGS = [
    ({"padding": -1}, "negative padding is not supported"),
    ({"output_padding": -1, "stride": 2}, "negative output_padding is not supported"),
    ({"stride": 0}, "non-positive stride is not supported"),
    ({"stride": -2}, "non-positive stride is not supported"),
    ({"dilation": 0}, "dilation should be greater than zero"),
    ({"dilation": -1}, "dilation should be greater than zero"),
    ({"groups": 0}, "non-positive groups is not supported"),
    ({"groups": -1}, "non-positive groups is not supported"),
]


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize(("kwargs", "message"), BAD_TRANSPOSED_ARGS, ids=str)
def test_conv_transpose_refuses_non_positive_strides_dilations_groups_and_negative_paddings(
    dims, kwargs, message
):
    """As PyTorch does, and naming the value, instead of garbage or an internal error."""
    kx, tx = pair(np.ones((1, 2) + (3,) * dims))
    kw, tw = pair(np.ones((2, 3) + (2,) * dims))
    with pytest.raises(RuntimeError):
        getattr(TF, f"conv_transpose{dims}d")(tx, tw, **kwargs)
    with pytest.raises(kael.ValueError, match=message) as got:
        getattr(KF, f"conv_transpose{dims}d")(kx, kw, **kwargs)
    assert str(next(v for v in kwargs.values() if v <= 0)) in str(got.value)


@pytest.mark.parametrize(
    ("kwargs", "message"), [a for a in BAD_TRANSPOSED_ARGS if "output_padding" not in a[0]], ids=str
)
def test_conv_refuses_what_conv_transpose_refuses(kwargs, message):
    """The convolutions share the transposed ones' checks and messages."""
    kx, tx = pair(np.ones((1, 2, 5, 5)))
    kw, tw = pair(np.ones((2, 2, 2, 2)))
    with pytest.raises(RuntimeError):
        TF.conv2d(tx, tw, **kwargs)
    with pytest.raises(kael.ValueError, match=message):
        KF.conv2d(kx, kw, **kwargs)


@pytest.mark.parametrize("shape", [(1,), (3, 1), (2,)], ids=str)
def test_conv_transpose_refuses_a_bias_not_of_one_value_per_output_channel(shape):
    """A bias [1] or [3, 1] for 3 output channels is not broadcast: PyTorch refuses it."""
    kx, tx = pair(np.ones((1, 2, 4)))
    kw, tw = pair(np.ones((2, 3, 2)))
    kb, tb = pair(np.ones(shape))
    with pytest.raises(RuntimeError, match="expected bias to be 1-dimensional with 3 elements"):
        TF.conv_transpose1d(tx, tw, tb)
    with pytest.raises(kael.ValueError, match="expected bias to be 1-dimensional with 3 elements"):
        KF.conv_transpose1d(kx, kw, kb)


@pytest.mark.parametrize("bias_dtype", [kael.float64, kael.int64, kael.float16], ids=str)
@pytest.mark.parametrize("op", ["conv1d", "conv_transpose1d"])
def test_a_bias_of_another_dtype_than_the_input_is_refused(op, bias_dtype):
    """PyTorch neither promotes the output to a float64 bias nor takes an int64 one ("Input
    type (float) and bias type (double) should be the same"; its transposed convolutions
    refuse them too where oneDNN runs them, and cast the bias where its fallback does)."""
    kx, tx = pair(np.ones((1, 2, 4)))
    kw, tw = pair(np.ones((2, 2, 2)))
    kb, tb = pair(np.ones(2), bias_dtype)
    if op == "conv1d":
        with pytest.raises(RuntimeError, match="should be the same"):
            TF.conv1d(tx, tw, tb)
    with pytest.raises(kael.TypeError, match=f"float32.*{bias_dtype}"):
        getattr(KF, op)(kx, kw, kb)


@pytest.mark.parametrize(
    ("op", "kwargs"),
    [
        ("conv2d", {"stride": np.int64(2), "padding": np.int32(1), "groups": np.int64(2)}),
        ("conv2d", {"stride": (np.int64(2), 1), "dilation": np.int16(2), "groups": 2}),
        ("conv_transpose2d", {"stride": np.int64(2), "output_padding": np.int64(1)}),
        ("conv_transpose2d", {"dilation": np.uint8(2), "padding": (np.int64(1), 0)}),
    ],
    ids=str,
)
def test_numpy_integers_are_taken_as_sizes(op, kwargs):
    kx, tx = pair(RNG.standard_normal((1, 4, 7, 6)))
    kw, tw = pair(RNG.standard_normal((4, 2, 3, 3)))
    same(getattr(KF, op)(kx, kw, **kwargs), getattr(TF, op)(tx, tw, **kwargs))


def test_numpy_integers_are_taken_as_unfold_and_fold_sizes():
    kx, tx = pair(RNG.standard_normal((1, 2, 6, 6)))
    cols_k = KF.unfold(kx, np.int64(2), stride=np.int64(2))
    cols_t = TF.unfold(tx, np.int64(2), stride=np.int64(2))
    same(cols_k, cols_t)
    same(KF.fold(cols_k, np.int64(6), np.int64(2), stride=2), TF.fold(cols_t, 6, 2, stride=2))


def test_tuple_arg_widens_numpy_integers_and_names_what_it_refuses():
    """The size parser every convolution, pool, unfold and fold reads its sizes with."""
    assert conv.tuple_arg(np.int64(2), 3, "stride", "op") == (2, 2, 2)
    assert conv.tuple_arg([np.int32(1), 2], 2, "stride", "op") == (1, 2)
    for bad in (1.5, True, "2", None, (1.0, 2)):
        with pytest.raises(kael.TypeError, match="op: stride"):
            conv.tuple_arg(bad, 2, "stride", "op")
    with pytest.raises(kael.ValueError, match="op: stride"):
        conv.tuple_arg(2**63, 2, "stride", "op")  # PyTorch: "Overflow when unpacking long long"


@pytest.mark.parametrize(
    ("op", "kwargs"),
    [
        ("conv2d", {"padding": 1.5}),
        ("conv2d", {"stride": True}),
        ("conv_transpose2d", {"stride": 2.0}),
    ],
    ids=str,
)
def test_float_and_bool_sizes_raise_a_typed_error_naming_the_argument(op, kwargs):
    kx, kw = kael.ones(1, 2, 5, 5), kael.ones(2, 2, 3, 3)
    with pytest.raises(kael.TypeError, match=next(iter(kwargs))):
        getattr(KF, op)(kx, kw, **kwargs)


@pytest.mark.parametrize(
    "args",
    [((1, 4), (1, 2), 0, (1, 2)), (7,), ((3, 4), (1, 2), (2, 0), (3, 2))],
    ids=str,
)
def test_unfold_refuses_a_geometry_of_no_blocks_as_torch(args):
    kx, tx = pair(np.ones((1, 1, 5, 6)))
    with pytest.raises(RuntimeError) as expected:
        TF.unfold(tx, *args)
    with pytest.raises(kael.ValueError) as got:
        KF.unfold(kx, *args)
    assert str(expected.value) in str(got.value)


def test_fold_refuses_a_geometry_of_no_blocks_as_torch():
    kx, tx = pair(np.ones((2, 12, 1)))
    with pytest.raises(RuntimeError) as expected:
        TF.fold(tx, (0, 0), (2, 2))
    with pytest.raises(kael.ValueError) as got:
        KF.fold(kx, (0, 0), (2, 2))
    assert str(expected.value) in str(got.value)


def test_fold_of_bool_ors_the_overlaps_as_torch():
    kx, tx = pair(RNG.standard_normal((2, 12, 6)) > 0.5, kael.bool)
    same(KF.fold(kx, (3, 4), 2), TF.fold(tx, (3, 4), 2), 0)


@pytest.mark.parametrize(
    "kwargs",
    [{"stride": 2**62}, {"stride": (2**62, 1)}, {"padding": 2**40, "stride": 2**41}],
    ids=str,
)
def test_unfold_and_fold_with_huge_strides_and_paddings_match_torch(kwargs):
    """A stride only one block uses, and padding no block reaches, cost nothing."""
    kx, tx = pair(RNG.standard_normal((2, 3, 5, 6)))
    cols_k, cols_t = KF.unfold(kx, 2, **kwargs), TF.unfold(tx, 2, **kwargs)
    same(cols_k, cols_t)
    same(KF.fold(cols_k, (5, 6), 2, **kwargs), TF.fold(cols_t, (5, 6), 2, **kwargs))


@pytest.mark.parametrize(
    ("dims", "kwargs"),
    [
        (1, {"padding": 2**31, "stride": 2**31}),
        (1, {"padding": 2**40, "stride": 2**40 - 1}),
        (2, {"padding": (2**33, 1), "stride": (2**34, 2), "dilation": (3, 1)}),
        (2, {"padding": (1, 4), "stride": 3}),
    ],
    ids=str,
)
@pytest.mark.parametrize("dtype", [kael.float32, kael.int64], ids=str)  # implicit GEMM, im2col
def test_conv_with_padding_no_window_reaches_matches_torch_without_storing_it(dims, kwargs, dtype):
    """Windows wholly in the padding give zeros (and the bias): only the windows that
    touch the input are computed, over as little padding as they read. (PyTorch's
    float64 and integer paths miscount windows past 2**31, so its float32 result is the
    reference: small integers, exact.)"""
    kx, tx = pair(RNG.integers(-9, 9, (2, 4) + (5,) * dims), dtype)
    kw, tw = pair(RNG.integers(-9, 9, (6, 2) + (3,) * dims), dtype)
    kb, tb = pair(RNG.integers(-9, 9, 6), dtype)
    op = f"conv{dims}d"
    expected = getattr(TF, op)(tx.float(), tw.float(), tb.float(), groups=2, **kwargs)
    same(getattr(KF, op)(kx, kw, kb, groups=2, **kwargs), expected.to(tx.dtype), 0)


def test_bfloat16_conv_transpose_sums_the_overlaps_in_float32():
    """The products and col2im's sums of each offset's run in float32, rounded once, as
    PyTorch's are: the error stays PyTorch's instead of growing with each bfloat16 sum."""
    x, w = RNG.standard_normal((2, 64, 6, 6)), RNG.standard_normal((64, 16, 3, 3))
    kx, tx = pair(x, kael.bfloat16)
    kw, tw = pair(w, kael.bfloat16)
    exact = TF.conv_transpose2d(tx.double(), tw.double())
    torch_error = (TF.conv_transpose2d(tx, tw).double() - exact).abs().max().item()
    got = KF.conv_transpose2d(kx, kw)
    kael_error = (torch.from_dlpack(got.to(kael.float64)) - exact).abs().max().item()
    assert got.dtype is kael.bfloat16
    assert kael_error <= 1.1 * torch_error


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["conv1d", "conv2d", "linear"])
def test_half_results_with_a_bias_round_once_as_torch(op, dtype):
    """The product was rounded to the half type and the bias added after: a second
    rounding (138 of 512 float16 linear outputs differed from torch's)."""
    rng = np.random.default_rng(0)
    shapes = {"conv1d": ((2, 3, 8), (4, 3, 3)), "conv2d": ((2, 3, 8, 8), (4, 3, 3, 3)),
              "linear": ((16, 64), (4, 64))}[op]  # fmt: skip
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in (*shapes, (4,)))
    want = getattr(torch.nn.functional, op)(
        *(torch.tensor(a).to(getattr(torch, dtype)) for a in (x, w, b))
    )
    got = getattr(kael.nn.functional, op)(
        *(kael.tensor(a).to(getattr(kael, dtype)) for a in (x, w, b))
    )
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


@pytest.mark.parametrize(
    ("name", "x_shape", "w_shape"),
    [("conv1d", (1, 2, 5), (3, 2, 0)), ("conv2d", (1, 2, 5, 5), (3, 2, 0, 0)),
     ("conv3d", (1, 2, 5, 5, 5), (3, 2, 1, 0, 1)), ("conv_transpose2d", (1, 2, 5, 5), (2, 3, 0, 0))],
)  # fmt: skip
def test_an_empty_kernel_is_refused_as_torch(name, x_shape, w_shape):
    """A kernel dim of 0 made up an output larger than the input (bias only)."""
    with pytest.raises(RuntimeError, match="kernel size should be greater than zero"):
        getattr(TF, name)(torch.randn(x_shape), torch.randn(w_shape))
    with pytest.raises(
        kael.ValueError, match=r"kernel size should be greater than zero, got kernel="
    ):
        getattr(KF, name)(kael.randn(x_shape), kael.randn(w_shape))


def test_replicate_padding_of_an_empty_dim_is_refused_as_torch():
    with pytest.raises(RuntimeError, match="non-zero dimensions"):
        torch.nn.Conv1d(2, 3, 1, padding=1, padding_mode="replicate")(torch.randn(1, 2, 0))
    with pytest.raises(kael.ValueError, match="replicate padding of an empty dimension"):
        kael.nn.Conv1d(2, 3, 1, padding=1, padding_mode="replicate")(kael.randn(1, 2, 0))


DOOR_CALLS = [
    (KF.conv2d, (1, 3, 8, 8), (4, 3, 3, 3), {"padding": 1}),
    (KF.conv2d, (3, 8, 8), (4, 3, 3, 3), {"padding": "same"}),  # unbatched
    (KF.conv2d, (2, 4, 9, 7), (6, 2, 3, 2), {"stride": (2, 1), "groups": 2}),
    (KF.conv1d, (2, 4, 16), (6, 4, 3), {"padding": 1, "dilation": 2}),
    (KF.conv3d, (1, 2, 5, 5, 5), (3, 2, 2, 2, 2), {}),
]


@pytest.mark.parametrize("call", DOOR_CALLS, ids=lambda c: f"{c[0].__name__}{c[1]}")
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64], ids=str)
@pytest.mark.parametrize("with_bias", [False, True], ids=["no_bias", "bias"])
def test_convolution_fast_door_replays_the_full_doors_bits_on_each_calls_operands(
    call, dtype, with_bias
):
    """After a layout's first call, its GEMM plan replays over each call's own input,
    weight and bias: the same bits as the full door (run again by taking the key out of
    the memo for one call), on new values each time."""
    fn, xs, ws, kwargs = call
    rng = np.random.default_rng(8)
    for _ in range(3):
        x, w = (kael.tensor(rng.standard_normal(s), dtype=dtype) for s in (xs, ws))
        b = kael.tensor(rng.standard_normal(ws[0]), dtype=dtype) if with_bias else None
        got = fn(x, w, b, **kwargs)
        sizes = tuple(kwargs.get(k, d) for k, d in (("stride", 1), ("padding", 0),
                                                   ("dilation", 1), ("groups", 1)))  # fmt: skip
        door = conv._door_key(fn.__name__, x, w, b, sizes)
        assert door in conv._DOOR
        kept = conv._DOOR.pop(door)
        full = fn(x, w, b, **kwargs)
        conv._DOOR[door] = kept
        assert got.shape == full.shape and got.dtype is dtype and got.is_contiguous()
        np.testing.assert_array_equal(got.numpy(), full.numpy())
        tb = None if b is None else torch.from_dlpack(b)
        want = getattr(TF, fn.__name__)(torch.from_dlpack(x), torch.from_dlpack(w), tb, **kwargs)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)


def test_convolution_fast_door_leaves_other_calls_to_the_full_door():
    x, w = kael.randn(1, 3, 8, 8), kael.randn(4, 3, 3, 3)
    assert conv._door_key("conv2d", x, w, None, ([1, 1], 0, 1, 1)) is None  # a list
    assert conv._door_key("conv2d", x, w, None, (1.0, 0, 1, 1)) is None  # a float
    # windows that read padding only are computed apart: no one-launch replay
    before = len(conv._DOOR)
    KF.conv2d(x, w, padding=5)
    assert conv._door_key("conv2d", x, w, None, (1, 5, 1, 1)) not in conv._DOOR
    assert len(conv._DOOR) == before
    # a transposed weight is copied first: not the argument itself, so not kept
    wt = kael.randn(3, 4, 3, 3).transpose(0, 1)
    KF.conv2d(x, wt, padding=1)
    assert conv._door_key("conv2d", x, wt, None, (1, 1, 1, 1)) not in conv._DOOR


def test_convolution_door_keys_the_thread_count_its_plan_was_split_for():
    x, w = kael.randn(1, 3, 8, 8), kael.randn(4, 3, 3, 3)
    saved = kael.get_num_threads()
    try:
        kael.set_num_threads(1)
        one = conv._door_key("conv2d", x, w, None, (1, 1, 1, 1))
        kael.set_num_threads(2)
        two = conv._door_key("conv2d", x, w, None, (1, 1, 1, 1))
    finally:
        kael.set_num_threads(saved)
    assert one != two
