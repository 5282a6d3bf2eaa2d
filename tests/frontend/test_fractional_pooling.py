"""F.fractional_max_pool2d/3d against PyTorch: with given samples the values and indices
equal torch's exactly over dtypes, layouts, batched and unbatched inputs; drawn samples
come from kael's generator; the argument checks."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from kernel_helpers import TORCH_DTYPES

import kael
import kael.nn.functional as KF

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
SHAPES = {  # dims: (input, kernel, output_size)
    2: ((2, 3, 13, 17), (2, 3), (5, 7)),
    3: ((2, 2, 9, 11, 10), (2, 3, 2), (4, 5, 6)),
}


def pair(t: torch.Tensor) -> tuple[kael.Tensor, torch.Tensor]:
    return kael.from_dlpack(t.clone()), t


def laid_out(shape, dtype, layout: str, seed: int = 0) -> torch.Tensor:
    """A random input of `shape`, contiguous, transposed (last two dims) or sliced."""
    gen = torch.Generator().manual_seed(seed)
    if layout == "transposed":
        return (
            torch.randn(*shape[:-2], shape[-1], shape[-2], generator=gen)
            .to(dtype)
            .transpose(-1, -2)
        )
    if layout == "sliced":
        return torch.randn(*shape[:-1], 2 * shape[-1], generator=gen).to(dtype)[..., ::2]
    return torch.randn(*shape, generator=gen).to(dtype)


def exactly(k, t) -> None:
    """kael's (values, indices) equal torch's: shapes, dtypes and every bit of the values."""
    for a, b in zip(k, t):
        assert a.shape == tuple(b.shape) and TORCH_DTYPES[a.dtype] == b.dtype
        got = torch.from_dlpack(a.contiguous())
        assert torch.equal(got.isnan(), b.isnan()) and torch.equal(got.nan_to_num(), b.nan_to_num())


def run_both(dims, x, kernel, samples, **kwargs):
    name = f"fractional_max_pool{dims}d"
    k = getattr(KF, name)(
        pair(x)[0], kernel, return_indices=True, _random_samples=pair(samples)[0], **kwargs
    )
    t = getattr(F, name)(x, kernel, return_indices=True, _random_samples=samples, **kwargs)
    return k, t


def samples_for(x, dims, dtype, seed=1):
    batch = x.shape[0] if x.ndim == dims + 2 else 1
    gen = torch.Generator().manual_seed(seed)
    return torch.rand(batch, x.shape[-dims - 1], dims, generator=gen).to(dtype)


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("batched", [True, False])
def test_given_samples_give_torch_values_and_indices(dims, dtype, layout, batched):
    shape, kernel, out = SHAPES[dims]
    shape = shape if batched else shape[1:]
    x = laid_out(shape, dtype, layout)
    exactly(*run_both(dims, x, kernel, samples_for(x, dims, dtype), output_size=out))


@pytest.mark.parametrize("dtype", DTYPES)
def test_long_dims_place_windows_in_the_input_dtype(dtype):
    """Window starts round as torch's do in float16/bfloat16 (many outputs, odd alpha)."""
    x = laid_out((2, 3, 97, 83), dtype, "contiguous")
    exactly(*run_both(2, x, (3, 2), samples_for(x, 2, dtype), output_size=(61, 67)))


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("ratio", [0.5, (0.3, 0.7, 0.6)])
def test_output_ratio_sizes_match_torch(dims, ratio):
    shape, kernel, _ = SHAPES[dims]
    ratio = ratio if isinstance(ratio, float) else ratio[:dims]
    x = laid_out(shape, torch.float32, "contiguous")
    ratio_arg = (ratio,) * dims if isinstance(ratio, float) else ratio  # torch wants a tuple
    exactly(*run_both(dims, x, kernel, samples_for(x, dims, torch.float32), output_ratio=ratio_arg))


def test_nan_window_takes_its_last_nan():
    x = torch.tensor([[[[1.0, float("nan"), 3.0, 4.0], [float("nan"), 6.0, float("nan"), 8.0]]]])
    samples = torch.tensor([[[0.3, 0.6]]])
    exactly(*run_both(2, x, (2, 2), samples, output_size=(1, 2)))


def test_all_minus_inf_window_indexes_its_first_element():
    x = torch.full((1, 1, 4, 5), -float("inf"))
    exactly(*run_both(2, x, 2, torch.tensor([[[0.7, 0.2]]]), output_size=(2, 3)))


def test_ties_take_the_first_maximum():
    x = torch.zeros(1, 2, 6, 6)
    exactly(*run_both(2, x, 3, torch.rand(1, 2, 2), output_size=3))


@pytest.mark.parametrize("dims", [2, 3])
def test_empty_batch_gives_empty_output(dims):
    shape, kernel, out = SHAPES[dims]
    x = torch.randn(0, *shape[1:])
    exactly(*run_both(dims, x, kernel, torch.rand(0, shape[1], dims), output_size=out))


def test_zero_output_size_gives_empty_output():
    x = torch.randn(2, 3, 5, 6)
    exactly(*run_both(2, x, 2, torch.rand(2, 3, 2), output_size=(0, 3)))


def test_largest_output_for_kernel_is_allowed():
    """out + kernel - 1 = in is the limit's valid side (every start fixed)."""
    x = torch.randn(1, 2, 6, 7)
    exactly(*run_both(2, x, (2, 3), torch.rand(1, 2, 2), output_size=(5, 5)))


def test_extra_sample_rows_are_ignored():
    x = torch.randn(2, 3, 8, 8)
    exactly(*run_both(2, x, 2, torch.rand(4, 3, 2), output_size=4))


def test_samples_past_one_follow_torch():
    x = torch.randn(1, 2, 9, 9)
    exactly(*run_both(2, x, 2, torch.rand(1, 2, 2) + 1, output_size=4))


@pytest.mark.parametrize("dims", [2, 3])
def test_with_indices_names_return_both(dims):
    shape, kernel, out = SHAPES[dims]
    x, s = (
        laid_out(shape, torch.float32, "contiguous"),
        samples_for(laid_out(shape, torch.float32, "contiguous"), dims, torch.float32),
    )
    name = f"fractional_max_pool{dims}d_with_indices"
    k = getattr(KF, name)(pair(x)[0], kernel, out, _random_samples=pair(s)[0])
    exactly(k, getattr(F, name)(x, kernel, out, _random_samples=s))


def test_values_only_without_return_indices():
    x, s = torch.randn(2, 3, 8, 9), torch.rand(2, 3, 2)
    k = KF.fractional_max_pool2d(pair(x)[0], 2, output_size=4, _random_samples=pair(s)[0])
    exactly((k,), (F.fractional_max_pool2d(x, 2, output_size=4, _random_samples=s),))


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.float16])
def test_drawn_samples_come_from_kael_rand(dims, dtype):
    """Without _random_samples the draws are kael.rand(N, C, dims) in the input's dtype:
    reproducible under manual_seed, and the result is torch's for those samples."""
    shape, kernel, out = SHAPES[dims]
    x = laid_out(shape, TORCH_DTYPES[dtype], "contiguous")
    pool = getattr(KF, f"fractional_max_pool{dims}d")
    kael.manual_seed(7)
    first = pool(pair(x)[0], kernel, output_size=out, return_indices=True)
    kael.manual_seed(7)
    again = pool(pair(x)[0], kernel, output_size=out, return_indices=True)
    kael.manual_seed(7)
    drawn = torch.from_dlpack(kael.rand(shape[0], shape[1], dims, dtype=dtype)).clone()
    assert first[0].shape == (*shape[:2], *out) and first[1].dtype is kael.int64
    np.testing.assert_array_equal(first[1].numpy(), again[1].numpy())
    exactly(
        first,
        getattr(F, f"fractional_max_pool{dims}d")(
            x, kernel, output_size=out, return_indices=True, _random_samples=drawn
        ),
    )


X2, S2 = torch.randn(2, 3, 7, 8), torch.rand(2, 3, 2)
BAD = {
    "output_too_big": (
        (X2, 2),
        {"output_size": 7},
        kael.ValueError,
        "pool height 2 too large relative to input height 7",
    ),
    "output_too_wide": (
        (X2, 2),
        {"output_size": (3, 8)},
        kael.ValueError,
        "pool width 2 too large relative to input width 8",
    ),
    "neither_size_nor_ratio": (
        (X2, 2),
        {},
        kael.ValueError,
        "either an output_size or an output_ratio",
    ),
    "both_size_and_ratio": (
        (X2, 2),
        {"output_size": 3, "output_ratio": 0.5},
        kael.ValueError,
        "either an output_size or an output_ratio",
    ),
    "ratio_one": ((X2, 2), {"output_ratio": 1.0}, kael.ValueError, "between 0 and 1 (got 1.0)"),
    "ratio_zero": (
        (X2, 2),
        {"output_ratio": (0.5, 0.0)},
        kael.ValueError,
        "between 0 and 1 (got (0.5, 0.0))",
    ),
    "kernel_zero": ((X2, 0), {"output_size": 3}, kael.ValueError, "kernel_size=[0, 0]"),
    "negative_output": ((X2, 2), {"output_size": -1}, kael.ValueError, "output_size=[-1, -1]"),
    "kernel_three_ints": ((X2, (2, 2, 2)), {"output_size": 3}, kael.ValueError, "[2, 2, 2]"),
    "samples_last_dim": (
        (X2, 2),
        {"output_size": 3, "_random_samples": torch.rand(2, 3, 3)},
        kael.ValueError,
        "size(2) equals to 2; got 3",
    ),
    "samples_rank": (
        (X2, 2),
        {"output_size": 3, "_random_samples": torch.rand(3, 2)},
        kael.ValueError,
        "3 dimensions, got 2",
    ),
    "samples_batch": (
        (X2, 2),
        {"output_size": 3, "_random_samples": torch.rand(1, 3, 2)},
        kael.ValueError,
        "batch size (2), got 1",
    ),
    "samples_channels": (
        (X2, 2),
        {"output_size": 3, "_random_samples": torch.rand(2, 4, 2)},
        kael.ValueError,
        "channel size (3), got 4",
    ),
    "samples_dtype": (
        (X2, 2),
        {"output_size": 3, "_random_samples": S2.double()},
        kael.TypeError,
        "same dtype as input (float32), got float64",
    ),
    "input_rank": (
        (torch.randn(7, 8), 2),
        {"output_size": 3},
        kael.ValueError,
        "Expected 3D or 4D tensor, but got: [7, 8]",
    ),
    "empty_channels": (
        (torch.randn(2, 0, 7, 8), 2),
        {"output_size": 3},
        kael.ValueError,
        "dimension 1 being empty",
    ),
    "empty_height": (
        (torch.randn(2, 3, 0, 8), 2),
        {"output_size": 3},
        kael.ValueError,
        "dimension 2 being empty",
    ),
    "integer_input": ((X2.long(), 2), {"output_size": 3}, kael.TypeError, "int64"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_arguments_raise_typed_errors(case):
    args, kwargs, error, words = BAD[case]
    convert = lambda a: pair(a)[0] if isinstance(a, torch.Tensor) else a  # noqa: E731
    kwargs = {key: convert(v) for key, v in kwargs.items()}
    with pytest.raises(error) as info:
        KF.fractional_max_pool2d(*map(convert, args), **kwargs)
    assert words in str(info.value)


def test_3d_checks_name_time():
    x = pair(torch.randn(1, 2, 5, 7, 8))[0]
    with pytest.raises(kael.ValueError, match="pool time 2 too large relative to input time 5"):
        KF.fractional_max_pool3d(x, 2, output_size=(5, 3, 3))
    with pytest.raises(kael.ValueError, match="Expected 4D or 5D tensor"):
        KF.fractional_max_pool3d(x[0, 0], 2, output_size=3)


@pytest.mark.parametrize(("kernel", "out"), [(3, 2), (2, 3)])
def test_fractional_max_pool3d_refuses_a_window_ending_on_the_last_element_as_torch(kernel, out):
    x = torch.rand(1, 1, 4, 4, 4)
    with pytest.raises(RuntimeError, match="too large relative"):
        torch.nn.functional.fractional_max_pool3d(x, kernel, output_size=out)
    with pytest.raises(kael.ValueError, match=f"pool time {kernel} too large relative"):
        kael.nn.functional.fractional_max_pool3d(kael.tensor(x.numpy()), kernel, output_size=out)
    # 2-d allows it, as torch does
    pooled = kael.nn.functional.fractional_max_pool2d(
        kael.rand(1, 1, 4, 4), kernel, output_size=out
    )
    assert pooled.shape == (1, 1, out, out)
