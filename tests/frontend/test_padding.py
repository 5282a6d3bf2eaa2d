"""F.pad in every mode against PyTorch, and the paddings PyTorch refuses."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from kernel_helpers import TORCH_DTYPES

import kael
import kael.nn.functional as KF

X = np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5) - 50
PADS = [(1, 2), (2, 1, 1, 3), (0, 0, 3, 0), (3, 3, 2, 2), (1, 1, 1, 1, 1, 1), (-1, 2, 1, -2)]


def outcome(fn):
    try:
        return fn()
    except (RuntimeError, ValueError, NotImplementedError) as e:
        return e


@pytest.mark.parametrize("dtype", [kael.float32, kael.int64, kael.float16, kael.bool], ids=str)
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("pad", PADS, ids=str)
@pytest.mark.parametrize("rank", [3, 4])
def test_pad_matches_torch(rank, pad, mode, dtype):
    x = X if rank == 4 else X[0]
    t = torch.tensor(x).to(TORCH_DTYPES[dtype])
    k = kael.from_dlpack(t.clone())
    want = outcome(lambda: TF.pad(t, pad, mode=mode))
    if isinstance(want, Exception):
        with pytest.raises(kael.Error):
            KF.pad(k, pad, mode=mode)
        return
    got = KF.pad(k, pad, mode=mode)
    assert got.shape == tuple(want.shape) and TORCH_DTYPES[got.dtype] == want.dtype
    assert torch.equal(torch.from_dlpack(got.contiguous()), want)


@pytest.mark.parametrize("value", [0.5, -3, True])
def test_constant_value_and_views(value):
    t = torch.tensor(X).float().transpose(1, 3)
    k = kael.from_dlpack(torch.tensor(X).float()).transpose(1, 3)
    got = KF.pad(k, (1, 0, 2, 1), value=value)
    assert torch.equal(torch.from_dlpack(got.contiguous()), TF.pad(t, (1, 0, 2, 1), value=value))


@pytest.mark.parametrize(
    ("pad", "mode", "message"),
    [
        ((1,), "constant", "divisible by 2"),
        ((5, 0), "reflect", "less than the corresponding input"),
        ((6, 0), "circular", "more than once"),
        ((1, 1), "mirror", "mode must be one of"),
        ((0, -6), "constant", "negative output size"),
    ],
)
def test_bad_paddings_raise(pad, mode, message):
    with pytest.raises(kael.ValueError, match=message):
        KF.pad(kael.ones(1, 2, 5), pad, mode=mode)
    with pytest.raises(kael.ValueError, match="doesn't take in value"):
        KF.pad(kael.ones(1, 2, 5), (1, 1), mode="reflect", value=2.0)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("pad", [(-2, -3, 0, 1), (-5, 0, 1, 1), (-1, -4, 1, 0)], ids=str)
def test_negative_padding_may_empty_a_dim_as_torch(pad, mode):
    t = torch.tensor(X[:, :, :2]).float()
    got = KF.pad(kael.from_dlpack(t.clone()), pad, mode=mode)
    want = TF.pad(t, pad, mode=mode)
    assert got.shape == tuple(want.shape) and got.numel() == 0


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_negative_padding_past_the_whole_dim_raises(mode):
    with pytest.raises(RuntimeError):
        TF.pad(torch.ones(1, 2, 5), (-3, -3), mode=mode)
    with pytest.raises(kael.ValueError, match="negative output size"):
        KF.pad(kael.ones(1, 2, 5), (-3, -3), mode=mode)


@pytest.mark.parametrize("columns", [4094, 4095])  # 65520 and 65536 bytes: both sides
def test_constant_pads_below_and_above_the_fill_everything_size_match_torch(columns):
    x = np.random.default_rng(2).standard_normal((4, columns)).astype(np.float32)
    for pads, value in (((1, 1), 0.0), ((2, -1, 1, 0), -3.5)):
        for _ in range(2):
            got = kael.nn.functional.pad(kael.tensor(x), pads, value=value)
            want = torch.nn.functional.pad(torch.from_numpy(x), pads, value=value)
            assert got.shape == tuple(want.shape)
            np.testing.assert_array_equal(got.numpy(), want.numpy())
