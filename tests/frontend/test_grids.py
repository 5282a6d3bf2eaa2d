"""F.affine_grid and F.grid_sample against PyTorch's CPU kernels: every mode, padding mode
and align_corners, grids inside, on the border, far outside and not finite, the dtypes and
layouts PyTorch takes, and the refusals."""

import itertools
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from parity_helpers import close_to_torch

import kael
import kael.nn.functional as KF

RNG = np.random.default_rng(2024)
MODES = ["bilinear", "nearest", "bicubic"]
PADDINGS = ["zeros", "border", "reflection"]
TOL = {torch.float32: 1e-5, torch.float64: 1e-12, torch.float16: 0.0, torch.bfloat16: 0.0}
NAN, INF = float("nan"), float("inf")

# grid coordinates by region: well inside [-1, 1], exactly on it and on pixel edges, far out
REGIONS = {
    "inside": lambda n: RNG.uniform(-0.95, 0.95, n),
    "border": lambda n: RNG.choice([-1.0, 1.0, -0.75, 0.75, -0.5, 0.5, 0.0, -1.0 / 3], n),
    "outside": lambda n: RNG.choice([-1.2, 1.3, -3.7, 7.3, -13.1, 41.9, 1e30, -1e30, 3e9], n),
}


def kael_of(t: torch.Tensor) -> kael.Tensor:
    """A kael tensor over a copy of t's values, laid out contiguously."""
    return kael.from_dlpack(t.contiguous().clone())


def grid_of(region: str, shape: tuple, dtype=torch.float32) -> torch.Tensor:
    return torch.tensor(REGIONS[region](int(np.prod(shape)))).reshape(shape).to(dtype)


def image(shape: tuple, dtype=torch.float32) -> torch.Tensor:
    return torch.tensor(RNG.standard_normal(shape)).to(dtype)


def sample_both(x: torch.Tensor, g: torch.Tensor, kx=None, kg=None, **kw):
    """grid_sample of kael (on kx, kg: default copies of x, g) and of torch, compared."""
    kx = kael_of(x) if kx is None else kx
    kg = kael_of(g) if kg is None else kg
    k = KF.grid_sample(kx, kg, **kw)
    t = TF.grid_sample(x, g, **kw)
    close_to_torch(k, t, TOL[x.dtype], equal_nan=True)
    return k, t


COMBOS = list(itertools.product(MODES, PADDINGS, [False, True]))
COMBOS_3D = [c for c in COMBOS if c[0] != "bicubic"]


# ---- grid_sample values ----------------------------------------------------------------------


@pytest.mark.parametrize("region", list(REGIONS))
@pytest.mark.parametrize(("mode", "padding", "align"), COMBOS)
def test_grid_sample_2d_matches_torch_in_each_region(mode, padding, align, region):
    x = image((2, 3, 4, 5))
    g = grid_of(region, (2, 3, 4, 2))
    sample_both(x, g, mode=mode, padding_mode=padding, align_corners=align)


@pytest.mark.parametrize("region", list(REGIONS))
@pytest.mark.parametrize(("mode", "padding", "align"), COMBOS_3D)
def test_grid_sample_3d_matches_torch_in_each_region(mode, padding, align, region):
    x = image((2, 2, 3, 4, 5))
    g = grid_of(region, (2, 2, 3, 2, 3))
    sample_both(x, g, mode=mode, padding_mode=padding, align_corners=align)


def within_half_reach(g: torch.Tensor) -> torch.Tensor:
    """g, with |coordinates| kept under 1e4 in float16 and bfloat16: PyTorch's kernels for
    those dtypes index through 16-bit integers, and past that an overflowing (or infinite)
    pixel position reads a pixel of the image; kael reads none, see
    test_huge_half_coordinates_sample_as_float32_does."""
    return g.clamp(-1e4, 1e4) if g.dtype in (torch.float16, torch.bfloat16) else g


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize(("mode", "padding", "align"), COMBOS)
def test_grid_sample_dtypes_match_torch_rounding_each_op(mode, padding, align, dtype):
    """float64 to 1e-12; float16 and bfloat16 bit for bit (PyTorch rounds every op there)."""
    x = image((2, 2, 4, 5), dtype)
    g = within_half_reach(torch.cat([grid_of(r, (2, 2, 3, 2), dtype) for r in REGIONS], 1))
    sample_both(x, g, mode=mode, padding_mode=padding, align_corners=align)
    if mode != "bicubic":
        x3 = image((1, 2, 3, 4, 2), dtype)
        g3 = torch.cat([grid_of(r, (1, 2, 2, 1, 3), dtype) for r in REGIONS], 1)
        g3 = within_half_reach(g3)
        sample_both(x3, g3, mode=mode, padding_mode=padding, align_corners=align)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize(("mode", "align"), itertools.product(MODES, [False, True]))
def test_huge_half_coordinates_sample_as_float32_does(mode, align, dtype):
    """Coordinates of 2e4 and more (or infinite once rounded): out of the image, zeros, as
    torch's float32 kernel has them (its 16-bit-index kernels wrap and read pixels)."""
    x = image((1, 2, 3, 4), dtype)
    g = torch.tensor([[1e5, 0.0], [0.0, -3e9], [1e30, 0.25], [-0.5, 2e4]]).reshape(1, 2, 2, 2)
    g = g.to(dtype)
    k = KF.grid_sample(kael_of(x), kael_of(g), mode, "zeros", align)
    t = TF.grid_sample(x.float(), g.float(), mode, "zeros", align).to(dtype)
    close_to_torch(k, t, 0.0, equal_nan=True)


@pytest.mark.parametrize(("mode", "padding", "align"), COMBOS)
def test_nan_and_infinite_coordinates_land_as_in_torch_cpu_kernels(mode, padding, align):
    """4-D (vectorized kernel): NaN clips to 0 and 0 * NaN weights give NaN; 5-D (scalar
    kernel): NaN clips to size - 1 and out-of-range corners are skipped."""
    coords = torch.tensor([NAN, INF, -INF, 0.0, 0.3])
    pairs = torch.tensor(list(itertools.product(coords.tolist(), repeat=2)))
    x = image((1, 2, 3, 4))
    sample_both(x, pairs.reshape(1, 5, 5, 2), mode=mode, padding_mode=padding, align_corners=align)
    if mode != "bicubic":
        triples = torch.tensor(list(itertools.product(coords.tolist(), repeat=3)))
        x3 = image((1, 2, 3, 4, 2))
        g3 = triples.reshape(1, 5, 5, 5, 3)
        sample_both(x3, g3, mode=mode, padding_mode=padding, align_corners=align)


@pytest.mark.parametrize("align", [False, True])
def test_nearest_rounds_half_way_coordinates_to_even(align):
    """Coordinates exactly between two pixels go to the even one (nearbyint)."""
    x = torch.arange(10.0).reshape(1, 1, 2, 5)
    # align=True: x = (g + 1) * 2 -> 0.5, 1.5, 2.5, 3.5; align=False: (g + 1) * 2.5 - 0.5
    g = torch.tensor([-0.75, -0.25, 0.25, 0.75, -0.6, -0.2, 0.2, 0.6])
    grid = torch.stack([g, torch.zeros_like(g)], -1).reshape(1, 1, 8, 2)
    k, t = sample_both(x, grid, mode="nearest", align_corners=align)
    if align:
        assert t.flatten()[:4].tolist() == [0.0, 2.0, 2.0, 4.0]


@pytest.mark.parametrize(("n", "c"), [(1, 1), (1, 4), (3, 1), (3, 2)])
def test_batches_and_channels_sample_independently(n, c):
    x = image((n, c, 3, 4))
    g = grid_of("inside", (n, 2, 5, 2))
    sample_both(x, g, mode="bilinear", align_corners=False)
    sample_both(image((n, c, 2, 3, 2)), grid_of("inside", (n, 1, 2, 3, 3)), align_corners=True)


def test_one_pixel_input_reflects_and_clips_to_it():
    """A size-1 axis: align_corners=True reflects everything onto pixel 0."""
    x = image((1, 2, 1, 1))
    g = grid_of("outside", (1, 3, 3, 2))
    for mode, padding, align in COMBOS:
        sample_both(x, g, mode=mode, padding_mode=padding, align_corners=align)


LAYOUTS = {
    "transposed_input": lambda x, g: (x.transpose(2, 3), g),
    "sliced_input": lambda x, g: (x[:, :, ::2], g),
    "expanded_input": lambda x, g: (x[:1].expand(x.shape), g),
    "channels_last_grid": lambda x, g: (x, g.permute(0, 3, 1, 2).contiguous().permute(0, 2, 3, 1)),
    "sliced_grid": lambda x, g: (x, g[:, ::2, 1:]),
    "expanded_grid": lambda x, g: (x, g[:1].expand(g.shape)),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("mode", MODES)
def test_non_contiguous_input_and_grid_match_torch(layout, mode):
    x, g = image((2, 2, 6, 5)), grid_of("inside", (2, 4, 5, 2)) * 1.3
    tx, tg = LAYOUTS[layout](x, g)
    kx, kg = LAYOUTS[layout](kael_of(x), kael_of(g))
    assert not (kx.is_contiguous() and kg.is_contiguous())
    sample_both(tx, tg, kx=kx, kg=kg, mode=mode, padding_mode="reflection", align_corners=False)


@pytest.mark.parametrize(
    ("x_shape", "g_shape"),
    [
        ((0, 2, 3, 4), (0, 5, 6, 2)),
        ((2, 0, 3, 4), (2, 5, 6, 2)),
        ((2, 3, 3, 4), (2, 0, 6, 2)),
        ((0, 2, 3, 4, 2), (0, 1, 5, 6, 3)),
        ((2, 3, 3, 4, 2), (2, 1, 0, 6, 3)),
    ],
)
def test_empty_batch_channels_or_output_give_empty_result(x_shape, g_shape):
    sample_both(image(x_shape), grid_of("inside", g_shape), align_corners=False)


def test_align_corners_none_warns_and_means_false():
    x, g = image((1, 2, 3, 4)), grid_of("inside", (1, 2, 2, 2))
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        k = KF.grid_sample(kael_of(x), kael_of(g))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        close_to_torch(k, TF.grid_sample(x, g), 1e-5)


def test_grid_sample_inside_compile_matches_eager():
    x, g = kael_of(image((1, 2, 3, 4))), kael_of(grid_of("inside", (1, 2, 2, 2)))

    @kael.compile
    def f(x, g):
        return KF.grid_sample(x, g, mode="bicubic", align_corners=True) * 2

    expected = KF.grid_sample(x, g, mode="bicubic", align_corners=True) * 2
    assert kael.equal(f(x, g), expected)


# ---- grid_sample refusals --------------------------------------------------------------------

BAD_SAMPLES = [
    ((2, 3, 4, 4), (3, 5, 5, 2), {}, kael.ValueError, r"same batch size.*\[2, 3, 4, 4\].*\[3, 5"),
    ((3, 4, 4), (5, 5, 2), {}, kael.ValueError, "same batch size"),
    ((2, 3, 4, 4), (2, 5, 5, 3), {}, kael.ValueError, r"size 2 in last dimension.*\[2, 5, 5, 3\]"),
    ((2, 3, 4, 4, 4), (2, 1, 5, 5, 2), {}, kael.ValueError, "size 3 in last dimension"),
    ((2, 3, 4, 4), (2, 5, 5, 5, 2), {}, kael.ValueError, "expected 4D input and grid"),
    ((2, 3, 4), (2, 5, 1), {}, kael.ValueError, r"expected 5D input.*\[2, 3, 4\]"),
    ((2, 3, 4, 4, 4, 4), (2, 1, 1, 1, 1, 4), {}, kael.ValueError, "expected 5D input and grid"),
    ((2, 3, 0, 4), (2, 5, 5, 2), {}, kael.ValueError, "dimension 2 being empty"),
    ((2, 3, 4, 4), (2, 5, 5, 2), {"mode": "cubic"}, kael.ValueError, "but got: 'cubic'"),
    ((2, 3, 4, 4), (2, 5, 5, 2), {"padding_mode": "wrap"}, kael.ValueError, "got: 'wrap'"),
    ((1, 1, 2, 2, 2), (1, 2, 2, 2, 3), {"mode": "bicubic"}, kael.ValueError, "only supports 4D"),
]


@pytest.mark.parametrize(("x_shape", "g_shape", "kw", "error", "message"), BAD_SAMPLES)
def test_bad_grid_sample_arguments_raise_like_torch(x_shape, g_shape, kw, error, message):
    x, g = image(x_shape), torch.zeros(g_shape)
    with pytest.raises((RuntimeError, ValueError)):
        TF.grid_sample(x, g, align_corners=False, **kw)
    with pytest.raises(error, match=message):
        KF.grid_sample(kael_of(x), kael_of(g), align_corners=False, **kw)


def test_same_shapes_with_the_valid_values_are_accepted():
    """The other side of each limit: matching batch, last dim 2 / 3, bicubic on 4-D."""
    sample_both(image((2, 3, 4, 4)), torch.zeros(2, 5, 5, 2), mode="bicubic", align_corners=False)
    sample_both(image((2, 3, 1, 4, 4)), torch.zeros(2, 1, 5, 5, 3), align_corners=False)


@pytest.mark.parametrize(
    ("x_dtype", "g_dtype", "message"),
    [
        (torch.float32, torch.float64, "same dtype, but got input float32 and grid float64"),
        (torch.int32, torch.int32, "not implemented for int32"),
        (torch.int64, torch.float32, "same dtype"),
    ],
)
def test_mismatched_or_integer_dtypes_raise_type_errors(x_dtype, g_dtype, message):
    x, g = torch.ones(1, 1, 3, 3, dtype=x_dtype), torch.zeros(1, 2, 2, 2, dtype=g_dtype)
    with pytest.raises((RuntimeError, NotImplementedError)):
        TF.grid_sample(x, g, align_corners=False)
    with pytest.raises(kael.TypeError, match=message):
        KF.grid_sample(kael_of(x), kael_of(g), align_corners=False)


def test_non_tensor_input_raises_type_error():
    with pytest.raises(kael.TypeError, match="grid must be a Tensor"):
        KF.grid_sample(kael.ones(1, 1, 2, 2), [[[[0.0, 0.0]]]], align_corners=False)


# ---- affine_grid -----------------------------------------------------------------------------

SIZES = [(2, 3, 4, 5), (1, 1, 1, 6), (3, 2, 1, 1), (2, 3, 2, 4, 5), (1, 1, 1, 1, 3)]


HALVES = (torch.float16, torch.bfloat16)
AFFINE_CASES = [
    (size, dtype)
    for size in SIZES
    for dtype in (torch.float32, torch.float64, *HALVES)
    if dtype not in HALVES or 1 not in size[2:]
]


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize(("size", "dtype"), AFFINE_CASES, ids=str)
def test_affine_grid_matches_torch(size, dtype, align):
    dims = len(size) - 2
    theta = torch.tensor(RNG.standard_normal((size[0], dims, dims + 1))).to(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unit sizes with align_corners=True warn, in both
        k = KF.affine_grid(kael_of(theta), size, align_corners=align)
        t = TF.affine_grid(theta, size, align_corners=align)
    close_to_torch(k, t, TOL[dtype] or 1e-3)


@pytest.mark.parametrize("dtype", HALVES, ids=str)
@pytest.mark.parametrize("size", [(1, 1, 1, 6), (2, 1, 3, 1), (1, 1, 2, 1, 3)], ids=str)
def test_half_affine_grid_with_a_unit_size_is_refused_as_in_torch(size, dtype):
    theta = torch.zeros(size[0], len(size) - 2, len(size) - 1, dtype=dtype)
    with pytest.raises(NotImplementedError, match="tensor_cpu"):
        TF.affine_grid(theta, size, align_corners=False)
    with pytest.raises(kael.TypeError, match="size-1 dimension is not implemented for"):
        KF.affine_grid(kael_of(theta), size, align_corners=False)


def test_affine_grid_takes_transposed_theta_and_list_or_torch_size():
    base = torch.tensor(RNG.standard_normal((2, 3, 2)))
    t = TF.affine_grid(base.transpose(1, 2), [2, 1, 3, 4], align_corners=True)
    k = KF.affine_grid(kael_of(base).transpose(1, 2), torch.Size([2, 1, 3, 4]), align_corners=True)
    close_to_torch(k, t, 1e-12)


def test_identity_affine_grid_samples_the_image_back():
    x = image((2, 3, 4, 5))
    theta = torch.tensor([[1.0, 0, 0], [0, 1, 0]]).expand(2, 2, 3)
    for align in (False, True):
        tg = TF.affine_grid(theta, x.shape, align_corners=align)
        kg = KF.affine_grid(kael_of(theta), x.shape, align_corners=align)
        k, t = sample_both(x, tg, kg=kg, align_corners=align)
        close_to_torch(k, x, 1e-5)


def test_affine_grid_align_corners_none_warns():
    theta = torch.zeros(1, 2, 3)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        k = KF.affine_grid(kael_of(theta), (1, 1, 2, 3))
    close_to_torch(k, TF.affine_grid(theta, (1, 1, 2, 3), align_corners=False), 1e-6)


def test_unit_size_with_align_corners_warns_and_allows_zero_channels():
    """PyTorch only warns for a unit spatial size with align_corners=True, skipping its
    positive-size check; the same size with align_corners=False is refused."""
    theta = torch.zeros(2, 2, 3)
    with pytest.warns(UserWarning, match="unit-size grids"):
        k = KF.affine_grid(kael_of(theta), (2, 0, 1, 3), align_corners=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        close_to_torch(k, TF.affine_grid(theta, (2, 0, 1, 3), align_corners=True), 0.0)
    with pytest.raises(kael.ValueError, match=r"positive output size. Got \(2, 0, 1, 3\)"):
        KF.affine_grid(kael_of(theta), (2, 0, 1, 3), align_corners=False)


BAD_AFFINE = [
    ((2, 2, 3), (2, 1, 3), "only supports 4D and 5D sizes"),
    ((2, 2, 3), (2, 1, 3, 3, 3, 3), "only supports 4D and 5D sizes"),
    ((2, 3, 4), (2, 1, 3, 3), r"shape Nx2x3 for size \(2, 1, 3, 3\). Got \[2, 3, 4\]"),
    ((2, 2, 3), (2, 1, 3, 3, 3), r"shape Nx3x4 .* Got \[2, 2, 3\]"),
    ((2, 3), (2, 1, 3, 3), "shape Nx2x3"),
    ((2, 2, 3), (2, 1, 0, 3), r"positive output size. Got \(2, 1, 0, 3\)"),
    ((2, 2, 3), (2, 1, -1, 3), "positive output size"),
    ((0, 2, 3), (0, 1, 3, 3), "positive output size"),
    ((2, 2, 3), (3, 1, 3, 3), "theta holds 2 matrices but size asks for a batch of 3"),
]


@pytest.mark.parametrize(("theta_shape", "size", "message"), BAD_AFFINE)
def test_bad_affine_grid_arguments_raise_like_torch(theta_shape, size, message):
    theta = torch.zeros(theta_shape)
    with pytest.raises((ValueError, NotImplementedError, RuntimeError)):
        TF.affine_grid(theta, size, align_corners=False)
    with pytest.raises(kael.ValueError, match=message):
        KF.affine_grid(kael_of(theta), size, align_corners=False)


def test_integer_theta_is_refused():
    theta = torch.zeros(1, 2, 3, dtype=torch.int64)
    with pytest.raises(ValueError, match="floating point"):
        TF.affine_grid(theta, (1, 1, 2, 2), align_corners=False)
    with pytest.raises(kael.ValueError, match="floating point type, but got int64"):
        KF.affine_grid(kael_of(theta), (1, 1, 2, 2), align_corners=False)
