"""conv1d/2d/3d, conv_transpose1d/2d/3d, unfold and fold against PyTorch."""

import numpy as np
import pytest
import torch.nn.functional as TF
from parity_helpers import close_to_torch
from parity_helpers import torch_pair as pair

import kael
import kael.nn.functional as KF

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
            kael.TypeError,
            "not bool",
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
