"""embedding_bag (sum, mean and max bags of embedding rows) and embedding's max_norm
against PyTorch: values, dtype and shape over dtypes and layouts, and typed errors."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from kernel_helpers import TORCH_DTYPES
from parity_helpers import LAYOUTS, close_to_torch, layout_pair

import kael
import kael.nn.functional as KF

MODES = ["sum", "mean", "max"]
FLOATS = [kael.float32, kael.float64]
ALL_FLOATS = [kael.float32, kael.float64, kael.float16, kael.bfloat16]
RNG = np.random.default_rng(41)


def to_kael(value):
    """A torch tensor as a kael tensor over a copy of its bytes (other values as they are)."""
    return kael.from_dlpack(value.clone()) if isinstance(value, torch.Tensor) else value


def index(values, dtype=torch.int64) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


def tolerance(dtype) -> float:
    return {kael.float16: 2e-3, kael.bfloat16: 1e-2}.get(dtype, 1e-6)


def same_bags(weights, args: tuple, **kw) -> None:
    """embedding_bag of (kael weight, torch weight) and the torch args against each other."""
    kw_k = {name: to_kael(value) for name, value in kw.items()}
    got = KF.embedding_bag(to_kael(args[0]), weights[0], *map(to_kael, args[1:]), **kw_k)
    want = TF.embedding_bag(args[0], weights[1], *args[1:], **kw)
    close_to_torch(got, want, tolerance(got.dtype), equal_nan=True)


# ---- values --------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_FLOATS, ids=str)
@pytest.mark.parametrize("mode", MODES)
def test_bags_reduce_rows_as_torch(mode, dtype, layout):
    weights = layout_pair((7, 4), dtype, layout)
    entries = index([3, 0, 6, 6, 2, 1, 5, 4, 0])
    same_bags(weights, (entries, index([0, 2, 2, 5, 8])), mode=mode)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("mode", MODES)
def test_2d_input_is_fixed_size_bags(mode, dtype):
    weights = layout_pair((6, 3), dtype)
    same_bags(weights, (index(RNG.integers(0, 6, (4, 3))).flip(1)[:, ::2],), mode=mode)
    same_bags(weights, (index(RNG.integers(0, 6, (3, 4))).T,), mode=mode)
    same_bags(weights, (index(np.zeros((0, 2))),), mode=mode)


@pytest.mark.parametrize("mode", MODES)
def test_empty_bag_gives_zeros(mode):
    weights = layout_pair((5, 3), kael.float32)
    entries = index([1, 2, 3])
    same_bags(weights, (entries, index([0, 0, 1, 1, 3, 3])), mode=mode)
    same_bags(weights, (index([]), index([0, 0])), mode=mode)


@pytest.mark.parametrize("mode", MODES)
def test_no_offsets_give_no_bags(mode):
    """torch 2.13's max mode crashes the process on this input: kael's gives what its sum
    and mean give."""
    weights = layout_pair((5, 3), kael.float32)
    got = KF.embedding_bag(kael.tensor([1, 2, 3]), weights[0], kael.tensor([], dtype=kael.int64))
    want = TF.embedding_bag(index([1, 2, 3]), weights[1], index([]), mode="sum")
    close_to_torch(got, want, 0)


@pytest.mark.parametrize("mode", MODES)
def test_zero_width_and_zero_row_weights_give_empty_rows(mode):
    same_bags(layout_pair((5, 0), kael.float64), (index([1, 2]), index([0, 1])), mode=mode)
    same_bags(layout_pair((0, 2), kael.float64), (index([]), index([0])), mode=mode)


@pytest.mark.parametrize("layout", ["contiguous", "sliced", "expanded"])
@pytest.mark.parametrize("dtype", ALL_FLOATS, ids=str)
def test_per_sample_weights_scale_each_row_of_a_sum(dtype, layout):
    weights = layout_pair((6, 3), dtype)
    k_psw, t_psw = layout_pair((7,), dtype, layout)
    entries, offsets = index([5, 0, 1, 1, 4, 2, 3]), index([0, 3, 3])
    got = KF.embedding_bag(
        to_kael(entries), weights[0], to_kael(offsets), mode="sum", per_sample_weights=k_psw
    )
    want = TF.embedding_bag(entries, weights[1], offsets, mode="sum", per_sample_weights=t_psw)
    close_to_torch(got, want, tolerance(dtype))


@pytest.mark.parametrize("padding_idx", [0, 3, -1, -6])
@pytest.mark.parametrize("mode", MODES)
def test_padding_entries_are_left_out_and_not_counted(mode, padding_idx):
    weights = layout_pair((6, 2), kael.float64)
    entries = index([0, 0, 3, 5, 3, 3, 1, 0])
    same_bags(weights, (entries, index([0, 2, 3, 6])), mode=mode, padding_idx=padding_idx)


def test_padding_entries_get_no_per_sample_weight():
    weights = layout_pair((6, 2), kael.float32)
    args = (index([1, 2, 1, 4]), index([0, 2]))
    same_bags(weights, args, mode="sum", padding_idx=1, per_sample_weights=torch.arange(4.0))


@pytest.mark.parametrize("mode", MODES)
def test_include_last_offset_ends_the_last_bag(mode):
    weights = layout_pair((6, 2), kael.float32)
    entries = index([0, 1, 2, 3, 4, 5])
    for offsets in ([0, 2, 6], [0, 6, 6], [0, 0, 6], [0, 6]):
        same_bags(weights, (entries, index(offsets)), mode=mode, include_last_offset=True)
    same_bags(weights, (index([]), index([0])), mode=mode, include_last_offset=True)


@pytest.mark.parametrize("mode", MODES)
def test_last_offset_short_of_the_input_is_refused(mode):
    """torch's sum drops the entries past a short last offset, its mean still counts them
    and its max takes them (its documented rule: the last offset is the input's length)."""
    entries, offsets = kael.tensor([0, 1, 2, 3]), kael.tensor([0, 1, 2])
    with pytest.raises(kael.ValueError, match="offsets\\[-1\\] of 2 for 4 indices"):
        KF.embedding_bag(entries, kael.ones(5, 2), offsets, mode=mode, include_last_offset=True)


@pytest.mark.parametrize(
    ("entries_dtype", "offsets_dtype"),
    [
        (torch.int32, torch.int32),
        (torch.int32, torch.int64),
        (torch.int64, torch.int32),
        (torch.int16, torch.int64),
        (torch.uint8, torch.int64),
    ],
)
def test_indices_of_a_common_int32_or_int64_dtype_are_taken(entries_dtype, offsets_dtype):
    weights = layout_pair((6, 2), kael.float32)
    args = (index([5, 1, 2, 0], entries_dtype), index([0, 1], offsets_dtype))
    same_bags(weights, args, mode="sum")


def test_2d_int32_input_is_taken():
    same_bags(layout_pair((6, 2), kael.float32), (index([[5, 1], [2, 0]], torch.int32),))


def test_max_bag_takes_nan_only_as_its_first_entry():
    table = torch.tensor([[math.nan, 1.0], [2.0, math.nan], [-math.inf, -math.inf]])
    weights = (to_kael(table), table)
    args = (index([0, 1, 1, 0, 2, 2, 0]), index([0, 2, 4, 6]))
    same_bags(weights, args, mode="max")
    same_bags(weights, args, mode="max", padding_idx=1)


@pytest.mark.parametrize("mode", MODES)
def test_bags_work_under_compile(mode):
    weights = layout_pair((6, 3), kael.float32)
    entries, offsets = index([4, 0, 3, 3, 5]), index([0, 1, 1])

    @kael.compile
    def bags(i, o, w):
        return KF.embedding_bag(i, w, o, mode=mode) * 2

    want = TF.embedding_bag(entries, weights[1], offsets, mode=mode) * 2
    for _ in range(2):
        close_to_torch(bags(to_kael(entries), to_kael(offsets), weights[0]), want, 1e-6)


# ---- max_norm ------------------------------------------------------------------------------


def renorm_pair(dtype, layout: str = "contiguous"):
    """A (kael, torch) weight [5, 3] whose rows have norms on both sides of 2."""
    table = torch.tensor(
        [[3.0, 4.0, 0.0], [0.5, 0.5, 0.5], [1.0, -1.0, 2.0], [0.0, 0.0, 0.0], [6.0, 0.0, -8.0]]
    ).to(TORCH_DTYPES[dtype])
    if layout == "transposed":
        table = table.T.contiguous().T
    return kael.from_dlpack(table.clone()), table


def same_weights(k_weight, t_weight, dtype) -> None:
    close_to_torch(k_weight, t_weight, tolerance(dtype))


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("dtype", ALL_FLOATS, ids=str)
@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 0.0, 3.5, -1.0])
def test_embedding_max_norm_renormalizes_named_rows_in_place(norm_type, dtype, layout):
    kw, tw = renorm_pair(dtype, layout)
    entries = index([[0, 2], [4, 0]])
    got = KF.embedding(to_kael(entries), kw, max_norm=2.0, norm_type=norm_type)
    want = TF.embedding(entries, tw, max_norm=2.0, norm_type=norm_type)
    close_to_torch(got, want, tolerance(dtype))
    same_weights(kw, tw, dtype)


@pytest.mark.parametrize("max_norm", [0.0, -1.0, 5.0, 5.1])
def test_max_norm_scales_only_rows_above_it(max_norm):
    kw, tw = renorm_pair(kael.float64)
    entries = index([0, 1, 3])
    got = KF.embedding(to_kael(entries), kw, max_norm=max_norm)
    close_to_torch(got, TF.embedding(entries, tw, max_norm=max_norm), 1e-12)
    same_weights(kw, tw, kael.float64)


def test_max_norm_of_no_indices_changes_nothing():
    kw, tw = renorm_pair(kael.float32)
    got = KF.embedding(to_kael(index([])), kw, max_norm=1.0)
    close_to_torch(got, TF.embedding(index([]), tw, max_norm=1.0), 0)
    same_weights(kw, tw, kael.float32)


@pytest.mark.parametrize("mode", MODES)
def test_embedding_bag_max_norm_renormalizes_before_reducing(mode):
    kw, tw = renorm_pair(kael.float32)
    entries, offsets = index([0, 4, 1, 2, 0]), index([0, 2])
    got = KF.embedding_bag(to_kael(entries), kw, to_kael(offsets), max_norm=2.5, mode=mode)
    close_to_torch(got, TF.embedding_bag(entries, tw, offsets, max_norm=2.5, mode=mode), 1e-6)
    same_weights(kw, tw, kael.float32)


def test_max_norm_refuses_integer_weights():
    with pytest.raises(RuntimeError, match="floating point"):
        TF.embedding(index([0]), torch.ones(3, 2, dtype=torch.int64), max_norm=1.0)
    with pytest.raises(kael.TypeError, match="floating point.*int64"):
        KF.embedding(kael.tensor([0]), kael.ones(3, 2, dtype=kael.int64), max_norm=1.0)


def test_max_norm_refuses_a_weight_whose_rows_share_memory():
    with pytest.raises(RuntimeError, match="single memory location"):
        TF.embedding(index([0]), torch.tensor([[3.0], [4.0]]).expand(2, 2), max_norm=1.0)
    with pytest.raises(kael.Error, match="single memory location"):
        KF.embedding(kael.tensor([0]), kael.tensor([[3.0], [4.0]]).expand(2, 2), max_norm=1.0)


@pytest.mark.parametrize("bad", [3, -4])
def test_max_norm_refuses_indices_outside_weight(bad):
    with pytest.raises(IndexError):
        TF.embedding(index([0, bad]), torch.ones(3, 2), max_norm=1.0)
    with pytest.raises(kael.IndexError, match=str(bad)):
        KF.embedding(kael.tensor([0, bad]), kael.ones(3, 2), max_norm=1.0)


# ---- errors --------------------------------------------------------------------------------


def bag_call(entries=(0, 1, 2), weight=(6, 2), offsets=(0, 1), **kw):
    """embedding_bag's arguments for torch: entries, a float weight of shape `weight`, offsets."""
    table = torch.arange(math.prod(weight), dtype=torch.float32).reshape(weight)
    entries = entries if isinstance(entries, torch.Tensor) else index(entries)
    offsets = offsets if offsets is None or isinstance(offsets, torch.Tensor) else index(offsets)
    return (entries, table, offsets), kw


ERRORS = {
    "first offset not 0": (bag_call(offsets=(1, 2)), kael.ValueError, r"offsets\[0\] .* got 1"),
    "offset past the end": (bag_call(offsets=(0, 4)), kael.ValueError, "length 3 .* of 4"),
    "offsets decrease": (bag_call(offsets=(0, 2, 1)), kael.ValueError, r"offsets\[2\] = 1"),
    "offsets 2-D": (bag_call(offsets=index([[0]])), kael.ValueError, "1D"),
    "offsets missing": (bag_call(offsets=None), kael.ValueError, "got None"),
    "2-D input with offsets": (
        bag_call(entries=index([[0, 1]])),
        kael.ValueError,
        "offsets has to be None",
    ),
    "3-D input": (bag_call(entries=index([[[0]]]), offsets=None), kael.ValueError, "dimension 3"),
    "0-d input": (bag_call(entries=index(0)), kael.ValueError, "dimension 0"),
    "index too large": (bag_call(entries=(0, 6)), kael.IndexError, "value 6 .*0, 6"),
    "index negative": (bag_call(entries=(-1, 0)), kael.IndexError, "value -1"),
    "float indices": (
        bag_call(entries=index([0.0], torch.float32), offsets=(0,)),
        kael.TypeError,
        "float32",
    ),
    "int16 indices and offsets": (
        bag_call(entries=index([0], torch.int16), offsets=index([0], torch.int16)),
        kael.TypeError,
        "int16",
    ),
    "float indices with max_norm": (
        bag_call(entries=index([0.0], torch.float32), offsets=(0,), max_norm=1.0),
        kael.TypeError,
        "float32",
    ),
    "2-D bool indices": (
        bag_call(entries=index([[True]], torch.bool), offsets=None),
        kael.TypeError,
        "bool",
    ),
    "bad mode": (bag_call(mode="min"), kael.ValueError, "'min'"),
    "max with scale_grad_by_freq": (
        bag_call(mode="max", scale_grad_by_freq=True),
        kael.ValueError,
        "frequency",
    ),
    "max with sparse": (bag_call(mode="max", sparse=True), kael.ValueError, "sparse"),
    "weights with mean": (
        bag_call(per_sample_weights=torch.ones(3)),
        kael.Error,
        "mode='mean'",
    ),
    "weights shape": (
        bag_call(mode="sum", per_sample_weights=torch.ones(2)),
        kael.ValueError,
        r"\[2\].*\[3\]",
    ),
    "weights dtype": (
        bag_call(mode="sum", per_sample_weights=torch.ones(3, dtype=torch.float64)),
        kael.TypeError,
        "float64",
    ),
    "padding_idx too large": (bag_call(padding_idx=6), kael.ValueError, "-6 through 5, but got 6"),
    "padding_idx too small": (bag_call(padding_idx=-7), kael.ValueError, "got -7"),
    "include_last_offset without offsets": (
        bag_call(offsets=index([]), include_last_offset=True),
        kael.ValueError,
        "at least 1",
    ),
    "2-D input of empty rows": (
        bag_call(entries=index(np.zeros((2, 0))), offsets=None),
        kael.ValueError,
        r"\[2, 0\]",
    ),
}


@pytest.mark.parametrize("case", ERRORS, ids=list(ERRORS))
def test_bad_bags_raise_typed_errors_as_torch(case):
    (args, kw), error, message = ERRORS[case]
    with pytest.raises((RuntimeError, ValueError, NotImplementedError)):
        TF.embedding_bag(*args, **kw)
    kael_kw = {name: to_kael(value) for name, value in kw.items()}
    with pytest.raises(error, match=message):
        KF.embedding_bag(*map(to_kael, args), **kael_kw)


def test_weight_must_be_2d_and_floating():
    for table in (torch.ones(6), torch.ones(6, 2, dtype=torch.int64)):
        with pytest.raises((RuntimeError, ValueError)):
            TF.embedding_bag(index([0]), table, index([0]))
    with pytest.raises(kael.ValueError, match="dimension 1"):
        KF.embedding_bag(kael.tensor([0]), kael.ones(6), kael.tensor([0]))
    with pytest.raises(kael.TypeError, match="int64"):
        KF.embedding_bag(kael.tensor([0]), kael.ones(6, 2, dtype=kael.int64), kael.tensor([0]))


@pytest.mark.parametrize(
    ("entries", "offsets", "padding_idx"),
    [([0, 5], [0, 2], 5), ([0, 5], [0, 2], -6), ([5, 0], [0, 0], None)],
)
def test_limits_just_inside_are_taken(entries, offsets, padding_idx):
    """The other side of the error limits: the last row, the last padding row, the most
    negative padding row and an offset at the input's length are all fine."""
    weights = layout_pair((6, 2), kael.float32)
    same_bags(weights, (index(entries), index(offsets)), mode="mean", padding_idx=padding_idx)
