"""F.interpolate on uint8 in bilinear and bicubic, antialiased or not: PyTorch's fixed-point
separable passes bit for bit, over sizes, scales, align_corners and layouts; its refusals."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from parity_helpers import same

import kael
import kael.nn.functional as KF

RNG = np.random.default_rng(11)
# C = 3 takes PyTorch's AVX2 kernel, C = 5 its generic one: both must agree with kael
SHAPES = [(1, 3, 7, 9), (2, 5, 6, 11)]
SIZES = [
    {"size": (5, 6)},
    {"size": (14, 20)},
    {"size": (1, 2)},
    {"scale_factor": 1.7},
    {"scale_factor": (0.5, 2.0)},
    {"scale_factor": 0.3},
    {"scale_factor": (2.5, 1.3), "recompute_scale_factor": True},
    {"scale_factor": (1.1, 0.6), "recompute_scale_factor": False},
]
MODES = [
    {"mode": m, "antialias": aa, "align_corners": ac}
    for m in ("bilinear", "bicubic")
    for aa in (False, True)
    for ac in (False, True)
]
LAYOUTS = {
    "contiguous": lambda x: x,
    "channels_last": lambda x: x.contiguous(memory_format=x_format(x)),
    "sliced": lambda x: x[:, 1:, 1:, ::2],
}


def x_format(x):
    return kael.channels_last if isinstance(x, kael.Tensor) else torch.channels_last


def images(shape):
    """A random uint8 batch as a torch tensor and a kael tensor over a copy of its bytes."""
    t = torch.from_numpy(RNG.integers(0, 256, shape, dtype=np.uint8))
    return kael.from_dlpack(t.clone()), t


@pytest.mark.parametrize("modes", MODES, ids=str)
@pytest.mark.parametrize("sizes", SIZES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_uint8_resize_matches_torch_bit_for_bit(shape, sizes, modes):
    kx, tx = images(shape)
    same(KF.interpolate(kx, **sizes, **modes), TF.interpolate(tx, **sizes, **modes))


@pytest.mark.parametrize("modes", MODES, ids=str)
@pytest.mark.parametrize("layout", ["channels_last", "sliced"])
def test_uint8_resize_reads_strided_layouts_as_torch(layout, modes):
    kx, tx = images((2, 4, 9, 14))
    kx, tx = LAYOUTS[layout](kx), LAYOUTS[layout](tx)
    for sizes in ({"size": (5, 17)}, {"scale_factor": 0.45}):
        same(KF.interpolate(kx, **sizes, **modes), TF.interpolate(tx, **sizes, **modes))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_uint8_wide_antialiased_downscale_matches_torch(mode):
    kx, tx = images((1, 3, 121, 97))
    same(
        KF.interpolate(kx, size=(6, 11), mode=mode, antialias=True),
        TF.interpolate(tx, size=(6, 11), mode=mode, antialias=True),
    )


@pytest.mark.parametrize("modes", MODES[::3], ids=str)
def test_uint8_unchanged_dim_skips_its_pass_whatever_the_scale(modes):
    kx, tx = images((1, 3, 7, 9))
    # floor(7 * 1.1) = 7: the height pass is skipped though its scale is not 1
    same(
        KF.interpolate(kx, scale_factor=(1.1, 1.5), **modes),
        TF.interpolate(tx, scale_factor=(1.1, 1.5), **modes),
    )
    k = KF.interpolate(kx, size=(7, 9), **modes)
    same(k, TF.interpolate(tx, size=(7, 9), **modes))
    k[0, 0, 0, 0] = 255 - int(kx[0, 0, 0, 0].item())
    assert kx[0, 0, 0, 0].item() != k[0, 0, 0, 0].item()  # a copy, not the input


def test_uint8_bicubic_is_not_the_rounded_float_result():
    kx, tx = images((1, 3, 16, 16))
    k = KF.interpolate(kx, scale_factor=2.5, mode="bicubic")
    rounded = TF.interpolate(tx.double(), scale_factor=2.5, mode="bicubic").round().clamp(0, 255)
    same(k, TF.interpolate(tx, scale_factor=2.5, mode="bicubic"))
    assert (torch.from_dlpack(k).double() - rounded).abs().max() > 1


@pytest.mark.parametrize("antialias", [False, True])
@pytest.mark.parametrize(("shape", "size"), [((1, 6, 5, 8), (9, 1)), ((2, 3, 7, 9), (1, 1))])
def test_uint8_where_torch_channels_first_fails_kael_gives_its_channels_last_result(
    shape, size, antialias
):
    # PyTorch's generic kernel repeats row 0 in a height pass to width 1 (C > 4 here), and its
    # AVX2 kernel asserts on C = 3 to 1 x 1; both work in channels_last (interpolate_uint8.py)
    kx, tx = images(shape)
    kw = {"size": size, "mode": "bicubic", "antialias": antialias}
    theirs = TF.interpolate(tx.contiguous(memory_format=torch.channels_last), **kw)
    same(KF.interpolate(kx, **kw), theirs)


def test_uint8_empty_batch_gives_empty_result():
    kx, tx = images((0, 3, 4, 5))
    same(
        KF.interpolate(kx, size=(3, 4), mode="bicubic"),
        TF.interpolate(tx, size=(3, 4), mode="bicubic"),
    )


@pytest.mark.parametrize(
    ("shape", "kwargs", "theirs", "error", "message"),
    [
        (
            (2, 0, 5, 6),
            {"size": (3, 4)},
            RuntimeError,
            kael.Error,
            r"Non-empty 4D .*\[2, 0, 5, 6\]",
        ),
        (
            (1, 3, 0, 5),
            {"size": (3, 4)},
            RuntimeError,
            kael.Error,
            r"greater than 0.*\(H: 0, W: 5\)",
        ),
        ((1, 3, 5), {"scale_factor": 2}, NotImplementedError, kael.ValueError, "needs 4D input"),
        ((1, 1, 3, 5, 5), {"scale_factor": 2}, NotImplementedError, kael.ValueError, "needs 4D"),
    ],
)
def test_uint8_bad_shapes_raise(shape, kwargs, theirs, error, message):
    kx, tx = images(shape)
    with pytest.raises(theirs):
        TF.interpolate(tx, mode="bilinear", **kwargs)
    with pytest.raises(error, match=message):
        KF.interpolate(kx, mode="bilinear", **kwargs)


@pytest.mark.parametrize(("mode", "shape"), [("linear", (1, 2, 5)), ("trilinear", (1, 1, 3, 4, 5))])
def test_uint8_other_interpolating_modes_still_refuse(mode, shape):
    kx, tx = images(shape)
    with pytest.raises(NotImplementedError, match="not implemented for 'Byte'"):
        TF.interpolate(tx, scale_factor=2, mode=mode)
    with pytest.raises(kael.TypeError, match=f"{mode} is not implemented for uint8"):
        KF.interpolate(kx, scale_factor=2, mode=mode)
