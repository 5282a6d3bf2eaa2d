"""F.pad in every mode against PyTorch, and the paddings PyTorch refuses."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from kernel_helpers import TORCH_DTYPES
from parity_helpers import door_and_full

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


PAD_DOOR_CALLS = [
    ((4, 16), (1, 1), None),
    ((4, 16), (2, 0, 1, 3), 1.5),
    ((2, 3, 5), (-1, 2, 0, 1), -0.0),
    ((3, 4), (1, 1), 7),
    ((3, 4), (-1, -2), None),
    ((3, 4), (-4, 2), 2.0),  # nothing of the input kept: the fill alone
    ((5,), (3, 3), True),
    ((200, 200), (1, 1, 1, 1), 0.5),  # its copy moves PROMOTE_BYTES and more: still kept
]


@pytest.mark.parametrize("call", PAD_DOOR_CALLS, ids=str)
@pytest.mark.parametrize("dtype", [kael.float32, kael.float64, kael.int64], ids=str)
@pytest.mark.parametrize("transposed", [False, True], ids=["dense", "transposed"])
def test_small_constant_pad_fast_door_replays_the_full_doors_values(call, dtype, transposed):
    """After a small constant pad's first call, its fill and middle copy replay over a
    fresh buffer and each call's input: the full door's values (the door emptied for a
    second run), -0.0 kept apart from 0.0, on new values each time."""
    from kael.frontend import padding

    shape, amounts, value = call
    rng = np.random.default_rng(12)

    def fresh():
        x = kael.tensor(rng.standard_normal(shape) * 5, dtype=dtype)
        return x.T.contiguous().T if transposed and x.ndim == 2 else x

    first = fresh()
    saved = dict(padding._DOOR)
    padding._DOOR.clear()
    KF.pad(first, amounts, value=value)
    kept = dict(padding._DOOR)
    assert len(kept) == 1
    try:
        for _ in range(3):
            x = fresh()
            got, full = door_and_full(
                padding._DOOR, kept, lambda x=x: KF.pad(x, amounts, value=value)
            )
            assert got.shape == full.shape and got.dtype is dtype and got.is_contiguous()
            np.testing.assert_array_equal(got.numpy(), full.numpy())
            assert np.array_equal(np.signbit(got.numpy()), np.signbit(full.numpy()))
            t = torch.from_dlpack(x.contiguous())
            want = TF.pad(t, amounts) if value is None else TF.pad(t, amounts, value=value)
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    finally:
        padding._DOOR.clear()
        padding._DOOR.update(saved)


def test_pad_fast_door_keys_a_float_value_by_its_bits_and_leaves_other_modes():
    from kael.frontend import padding

    x = kael.randn(3, 4)
    zero, negative = (padding._door_key(x, (1, 1), "constant", v) for v in (0.0, -0.0))
    assert zero != negative
    assert padding._door_key(x, (1, 1), "reflect", None) is None
    assert padding._door_key(x, (1.0, 1), "constant", None) is None
    before = dict(padding._DOOR)
    assert KF.pad(x, (-2, -2)).shape == (3, 0)  # an empty result: nothing to replay
    assert before == padding._DOOR
