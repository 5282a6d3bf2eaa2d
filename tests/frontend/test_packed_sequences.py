"""kael.nn.utils.rnn (PackedSequence, pack_padded_sequence, pad_packed_sequence, pad_sequence,
pack_sequence, unpad_sequence, unpack_sequence) against torch.nn.utils.rnn, and the packed
overload of kael.lstm / gru / rnn_tanh / rnn_relu (data, batch_sizes, hx, params, ...) against
torch's, directly and end to end as nn.LSTM runs a PackedSequence."""

import re

import numpy as np
import pytest
import torch
import torch.nn as nn
from kernel_helpers import KAEL_DTYPES
from parity_helpers import both_refuse, close_to_torch, refused_changed, setter
from recurrent_helpers import MODULES, TOL
from torch.nn.utils import rnn as R

import kael
from kael.nn.utils import rnn as KR

# torch's own note that its oneDNN path has no LSTM projections
pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections")

DATA_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64]


def K(t):
    """A kael tensor over a contiguous copy of torch tensor t (inside tuples and lists too;
    other values as they are)."""
    if isinstance(t, tuple | list):
        return type(t)(K(a) for a in t)
    return kael.from_dlpack(t.detach().contiguous().clone()) if isinstance(t, torch.Tensor) else t


def randn(*shape, dtype=torch.float32, seed=0):
    t = torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
    return (t * 4).round().to(dtype) if not dtype.is_floating_point else t.to(dtype)


def same(k, t):
    """kael's tensor equals torch's exactly: shape, dtype and values."""
    assert isinstance(k, kael.Tensor), type(k)
    assert k.shape == tuple(t.shape) and k.dtype is KAEL_DTYPES[t.dtype]
    assert torch.equal(torch.from_dlpack(k.contiguous()), t)


def same_packed(k, t):
    """A kael PackedSequence equals torch's field by field (None where torch's is None)."""
    assert isinstance(k, KR.PackedSequence)
    for got, want in zip(k, t):
        if want is None:
            assert got is None
        else:
            same(got, want)
    assert k.batch_sizes.device.type == "cpu"


# the same view of a torch base tensor and of kael's copy of it, [T, B, F] from [T, B, F] data
LAYOUTS = {
    "contiguous": (lambda s: s, lambda x: x),
    "transposed": (lambda s: (s[1], s[0], *s[2:]), lambda x: x.transpose(0, 1)),
    "sliced": (lambda s: (*s[:-1], 2 * s[-1]), lambda x: x[..., ::2]),
    "expanded": (lambda s: (s[0], 1, *s[2:]), lambda x: x.expand(x.shape[0], 3, *x.shape[2:])),
}


def laid_out(shape, layout, dtype=torch.float32):
    """(kael, torch) tensors of `shape` as the same view (`layout`) of equal bases."""
    base_shape, view = LAYOUTS[layout]
    base = randn(*base_shape(shape), dtype=dtype, seed=3)
    return view(K(base)), view(base)


# ---- pack_padded_sequence --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DATA_DTYPES)
@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_padded_sequence_matches_torch(dtype, batch_first):
    x = randn(3, 4, 2, dtype=dtype) if batch_first else randn(4, 3, 2, dtype=dtype)
    lengths = [4, 2, 2]
    k = KR.pack_padded_sequence(K(x), lengths, batch_first=batch_first)
    same_packed(k, R.pack_padded_sequence(x, lengths, batch_first=batch_first))


@pytest.mark.parametrize("lengths", [[4, 3, 1], [1, 4, 3], [2, 4, 2], [3, 3, 3]])
@pytest.mark.parametrize("batch_first", [False, True])
def test_unsorted_lengths_are_sorted_with_their_indices(lengths, batch_first):
    """enforce_sorted=False: the batch sorted by length (ties in order), both permutations."""
    x = randn(3, 4, 2) if batch_first else randn(4, 3, 2)
    args = dict(batch_first=batch_first, enforce_sorted=False)
    k = KR.pack_padded_sequence(K(x), lengths, **args)
    same_packed(k, R.pack_padded_sequence(x, lengths, **args))


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_pack_padded_sequence_reads_any_layout(layout):
    k, t = laid_out((4, 3, 2), layout)
    lengths = torch.tensor([3, 4, 1])
    same_packed(
        KR.pack_padded_sequence(k, K(lengths), enforce_sorted=False),
        R.pack_padded_sequence(t, lengths, enforce_sorted=False),
    )


@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 2, 2), (1, 1, 1)])
def test_pack_padded_sequence_trailing_dims(shape):
    x = randn(*shape)
    lengths = list(range(shape[0], shape[0] - shape[1], -1))
    same_packed(KR.pack_padded_sequence(K(x), lengths), R.pack_padded_sequence(x, lengths))


@pytest.mark.parametrize(
    "lengths", [torch.tensor([3.0, 2.7, 1.0]), (3, 2, 1), torch.tensor([3, 2, 1])]
)
def test_lengths_tensor_or_sequence_truncated_to_int(lengths):
    x = randn(3, 3, 2)
    same_packed(KR.pack_padded_sequence(K(x), K(lengths)), R.pack_padded_sequence(x, lengths))


# ---- pad_packed_sequence ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DATA_DTYPES)
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pad_packed_sequence_round_trips_as_torch(dtype, batch_first, enforce_sorted):
    lengths = [4, 2, 1] if enforce_sorted else [2, 4, 1]
    x = randn(4, 3, 2, dtype=dtype)
    t = R.pack_padded_sequence(x, lengths, enforce_sorted=enforce_sorted)
    k = KR.pack_padded_sequence(K(x), lengths, enforce_sorted=enforce_sorted)
    got = KR.pad_packed_sequence(k, batch_first=batch_first)
    want = R.pad_packed_sequence(t, batch_first=batch_first)
    for a, b in zip(got, want):
        same(a, b)


@pytest.mark.parametrize("padding_value", [0.0, -1.5, 7])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_padding_value_fills_past_each_end(padding_value, dtype):
    """An int padded batch takes the value truncated, as PyTorch's full does."""
    x = randn(4, 3, dtype=dtype)
    t = R.pack_padded_sequence(x, [1, 4, 3], enforce_sorted=False)
    k = KR.pack_padded_sequence(K(x), [1, 4, 3], enforce_sorted=False)
    same(
        KR.pad_packed_sequence(k, padding_value=padding_value)[0],
        R.pad_packed_sequence(t, padding_value=padding_value)[0],
    )


@pytest.mark.parametrize("total_length", [None, 4, 6])
@pytest.mark.parametrize("batch_first", [False, True])
def test_total_length_pads_to_at_least_the_longest(total_length, batch_first):
    x = randn(4, 3, 2)
    t = R.pack_padded_sequence(x, [4, 3, 2])
    k = KR.pack_padded_sequence(K(x), [4, 3, 2])
    args = dict(batch_first=batch_first, padding_value=9.0, total_length=total_length)
    for a, b in zip(KR.pad_packed_sequence(k, **args), R.pad_packed_sequence(t, **args)):
        same(a, b)


@pytest.mark.parametrize("total_length", [1, 3])
def test_total_length_below_the_longest_is_refused(total_length):
    x = randn(4, 3, 2)
    t = R.pack_padded_sequence(x, [4, 3, 2])
    k = KR.pack_padded_sequence(K(x), [4, 3, 2])
    with pytest.raises(ValueError, match="total_length"):
        R.pad_packed_sequence(t, total_length=total_length)
    with pytest.raises(kael.ValueError, match=f"total_length={total_length} and max sequence"):
        KR.pad_packed_sequence(k, total_length=total_length)


def test_empty_packed_sequence_is_refused():
    k = KR.PackedSequence(kael.zeros(0, 2), kael.zeros(0, dtype=kael.int64))
    with pytest.raises(kael.ValueError, match="empty batch_sizes"):
        KR.pad_packed_sequence(k)


def test_pad_packed_sequence_needs_a_packed_sequence():
    with pytest.raises(kael.TypeError, match="expected a PackedSequence, got Tensor"):
        KR.pad_packed_sequence(kael.zeros(3, 2))


# ---- pad_sequence and pack_sequence ----------------------------------------------------------


def sequences(dtype=torch.float32, lengths=(2, 4, 1), trailing=(3,)):
    return [randn(n, *trailing, dtype=dtype, seed=i) for i, n in enumerate(lengths)]


@pytest.mark.parametrize("dtype", DATA_DTYPES)
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_matches_torch(dtype, batch_first, side):
    s = sequences(dtype)
    args = (batch_first, 5.0, side)
    same(KR.pad_sequence(K(s), *args), R.pad_sequence(s, *args))


@pytest.mark.parametrize("trailing", [(), (2, 3)])
@pytest.mark.parametrize("lengths", [(3, 1, 2), (0, 2), (0,)])
def test_pad_sequence_shapes_and_empty_sequences(trailing, lengths):
    s = sequences(lengths=lengths, trailing=trailing)
    for side in ("left", "right"):
        same(
            KR.pad_sequence(K(s), padding_value=-1.0, padding_side=side),
            R.pad_sequence(s, padding_value=-1.0, padding_side=side),
        )


def test_pad_sequence_reads_non_contiguous_sequences():
    base = randn(4, 8)
    s = [base[:, ::2], base.t()[:5], base[:1].expand(2, 8)[:, :4]]
    same(KR.pad_sequence(K(s), batch_first=True), R.pad_sequence(s, batch_first=True))


def test_pad_sequence_takes_the_first_dtype():
    """The padded batch has sequences[0]'s dtype; the others are converted into it."""
    s = [randn(2, 3), randn(3, 3, dtype=torch.float64), randn(1, 3, dtype=torch.int64)]
    same(KR.pad_sequence(K(s)), R.pad_sequence(s))


def test_pad_sequence_broadcasts_a_sequence_into_its_slot():
    """PyTorch copies each sequence into a [L_i, *trailing] slot, broadcasting it."""
    s = [randn(2, 3), randn(3), randn(1, 1)]
    same(KR.pad_sequence(K(s)), R.pad_sequence(s))


def test_pad_sequence_int_padding_value_truncated():
    s = sequences(torch.int32)
    same(KR.pad_sequence(K(s), padding_value=2.5), R.pad_sequence(s, padding_value=2.5))


def test_pad_sequence_of_a_tensor_pads_its_rows():
    """An iterable of sequences: a tensor gives its rows (here 3 sequences of length 2)."""
    x = randn(3, 2)
    same(KR.pad_sequence(K(x)), R.pad_sequence(x))


@pytest.mark.parametrize("enforce_sorted,lengths", [(True, (4, 2, 1)), (False, (2, 4, 1))])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_pack_sequence_matches_torch(enforce_sorted, lengths, dtype):
    s = sequences(dtype, lengths)
    same_packed(
        KR.pack_sequence(K(s), enforce_sorted=enforce_sorted),
        R.pack_sequence(s, enforce_sorted=enforce_sorted),
    )


# ---- unpad_sequence and unpack_sequence ------------------------------------------------------


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_unpad_sequence_matches_torch(batch_first, dtype):
    x = randn(3, 4, 2, dtype=dtype)
    lengths = torch.tensor([2, 4, 1]) if batch_first else torch.tensor([3, 1, 2, 3])
    got = KR.unpad_sequence(K(x), K(lengths), batch_first=batch_first)
    want = R.unpad_sequence(x.clone(), lengths, batch_first=batch_first)  # torch transposes x
    assert len(got) == len(want)
    for a, b in zip(got, want):
        same(a, b)


@pytest.mark.parametrize("lengths", [[5, 0], [3, -1], [2, 3]])
def test_unpad_sequence_cuts_lengths_to_the_padded_range(lengths):
    """PyTorch's mask keeps min(length, T) >= 0 steps."""
    x = randn(3, 2, 2)
    got = KR.unpad_sequence(K(x), lengths)
    want = R.unpad_sequence(x.clone(), torch.tensor(lengths))
    assert len(got) == len(want)
    for a, b in zip(got, want):
        same(a, b)


@pytest.mark.parametrize("count", [1, 3])
def test_unpad_sequence_needs_a_length_per_sequence(count):
    x = randn(3, 2, 2)
    with pytest.raises(ValueError):
        R.unpad_sequence(x.clone(), torch.ones(count, dtype=torch.long))
    with pytest.raises(kael.ValueError, match=f"got {count} lengths for 2 sequences"):
        KR.unpad_sequence(K(x), [1] * count)


def test_unpad_sequence_leaves_its_input_alone():
    """PyTorch transposes padded_sequences in place when batch_first is False; kael does not."""
    x = K(randn(3, 2, 2))
    parts = KR.unpad_sequence(x, [3, 1])
    assert x.shape == (3, 2, 2) and [p.shape for p in parts] == [(3, 2), (1, 2)]


@pytest.mark.parametrize("enforce_sorted,lengths", [(True, (4, 2, 2)), (False, (1, 4, 3))])
def test_unpack_sequence_restores_the_sequences(enforce_sorted, lengths):
    s = sequences(lengths=lengths)
    packed = KR.pack_sequence(K(s), enforce_sorted=enforce_sorted)
    got = KR.unpack_sequence(packed)
    want = R.unpack_sequence(R.pack_sequence(s, enforce_sorted=enforce_sorted))
    for a, b in zip(got, want):
        same(a, b)


# ---- PackedSequence --------------------------------------------------------------------------


def test_packed_sequence_infers_unsorted_indices():
    data, sizes, order = randn(4, 2), torch.tensor([2, 2]), torch.tensor([1, 0])
    t = R.PackedSequence(data, sizes, order)
    same_packed(KR.PackedSequence(K(data), K(sizes), K(order)), t)
    same_packed(KR.PackedSequence((K(data), K(sizes))), R.PackedSequence((data, sizes)))


def test_packed_sequence_to_converts_data_only():
    x = randn(3, 2, 2)
    t = R.pack_padded_sequence(x, [1, 3], enforce_sorted=False)
    k = KR.pack_padded_sequence(K(x), [1, 3], enforce_sorted=False)
    same_packed(k.to(kael.float64), t.to(torch.float64))
    assert k.to(kael.float32) is k and not k.is_cuda


def test_packed_sequence_without_batch_sizes_needs_a_pair():
    with pytest.raises(AssertionError):
        R.PackedSequence(randn(2, 2))
    with pytest.raises(kael.TypeError, match=r"\(data, batch_sizes\) pair, got Tensor"):
        KR.PackedSequence(kael.zeros(2, 2))


# ---- the utils' bad inputs -------------------------------------------------------------------


def _both_refuse(call, torch_error, kael_error, match):
    """torch.nn.utils.rnn and kael.nn.utils.rnn both refuse `call(module, to_lib)`."""
    both_refuse(lambda: call(R, lambda t: t), lambda: call(KR, K), torch_error, kael_error, match)


UTILS_ERRORS = {
    "unsorted_lengths": (
        lambda M, c: M.pack_padded_sequence(c(randn(4, 3, 2)), [2, 4, 1]),
        RuntimeError,
        kael.ValueError,
        r"sorted in decreasing order when `enforce_sorted` is True, got \[2, 4, 1\]",
    ),
    "zero_length": (
        lambda M, c: M.pack_padded_sequence(c(randn(4, 3, 2)), [4, 2, 0]),
        RuntimeError,
        kael.ValueError,
        r"greater than 0.*\[4, 2, 0\]",
    ),
    "negative_length_unsorted": (
        lambda M, c: M.pack_padded_sequence(c(randn(4, 3, 2)), [-1, 4, 2], enforce_sorted=False),
        RuntimeError,
        kael.ValueError,
        r"greater than 0.*\[-1, 4, 2\]",
    ),
    "lengths_count": (
        lambda M, c: M.pack_padded_sequence(c(randn(4, 3, 2)), [4, 2]),
        RuntimeError,
        kael.ValueError,
        r"but got 2 \(batch_size=3\)",
    ),
    "lengths_count_batch_first": (
        lambda M, c: M.pack_padded_sequence(c(randn(3, 4, 2)), [4, 2, 1, 1], batch_first=True),
        RuntimeError,
        kael.ValueError,
        r"but got 4 \(batch_size=3\)",
    ),
    "lengths_2d": (
        lambda M, c: M.pack_padded_sequence(c(randn(4, 3, 2)), c(torch.tensor([[4, 2, 1]]))),
        RuntimeError,
        kael.ValueError,
        "should be a 1D tensor, but got 2D",
    ),
    "input_1d": (
        lambda M, c: M.pack_padded_sequence(c(randn(4)), [1]),
        IndexError,
        kael.IndexError,
        r"at least 2 dimensions, got \[4\]",
    ),
    "empty_steps": (
        lambda M, c: M.pack_padded_sequence(c(randn(0, 3, 2)), [1, 1, 1]),
        RuntimeError,
        kael.ValueError,
        r"Cannot pack empty tensors \(input of shape \[0, 3, 2\]\)",
    ),
    "empty_batch": (
        lambda M, c: M.pack_padded_sequence(c(randn(4, 0, 2)), [], enforce_sorted=False),
        RuntimeError,
        kael.ValueError,
        r"Cannot pack empty tensors \(input of shape \[4, 0, 2\]\)",
    ),
    "pad_empty_list": (
        lambda M, c: M.pad_sequence([]),
        RuntimeError,
        kael.ValueError,
        "received an empty list of sequences",
    ),
    "pack_empty_list": (
        lambda M, c: M.pack_sequence([]),
        RuntimeError,
        kael.ValueError,
        "received an empty list of sequences",
    ),
    "trailing_shapes": (
        lambda M, c: M.pad_sequence([c(randn(2, 3)), c(randn(3, 2))]),
        RuntimeError,
        kael.ValueError,
        r"sequences\[1\] of shape \[3, 2\] does not fit the trailing shape \[3\]",
    ),
    "more_dims_than_the_first": (
        lambda M, c: M.pad_sequence([c(randn(2)), c(randn(3, 2))]),
        RuntimeError,
        kael.ValueError,
        r"sequences\[1\] of shape \[3, 2\] does not fit the trailing shape \[\]",
    ),
    "zero_dim_sequence": (
        lambda M, c: M.pad_sequence([c(randn(())), c(randn(3))]),
        RuntimeError,
        kael.ValueError,
        r"sequences\[0\] is 0-d",
    ),
    "padding_side": (
        lambda M, c: M.pad_sequence([c(randn(2)), c(randn(3))], padding_side="middle"),
        (RuntimeError, ValueError),
        kael.ValueError,
        "one of left or right, but got middle",
    ),
    "sequence_not_a_tensor": (
        lambda M, c: M.pad_sequence([c(randn(2)), 3.0]),
        TypeError,
        kael.TypeError,
        r"argument 'sequences\[1\]' must be Tensor, not float",
    ),
    "sequences_not_iterable": (
        lambda M, c: M.pad_sequence(3),
        RuntimeError,
        kael.TypeError,
        "expected an iterable of sequences, got int",
    ),
}


@pytest.mark.parametrize("case", list(UTILS_ERRORS))
def test_bad_utils_arguments_raise_typed_errors(case):
    _both_refuse(*UTILS_ERRORS[case])


@pytest.mark.parametrize("longest", [4, 5])
def test_lengths_beyond_the_input_are_refused(longest):
    """Up to T steps pack as torch; PyTorch reads past the input beyond it, kael refuses."""
    x = randn(4, 2, 2)
    if longest == 4:
        same_packed(KR.pack_padded_sequence(K(x), [4, 1]), R.pack_padded_sequence(x, [4, 1]))
        return
    with pytest.raises(kael.ValueError, match=r"lengths \[5, 1\] exceed the input's 4 time steps"):
        KR.pack_padded_sequence(K(x), [5, 1])


def test_lengths_must_be_numbers():
    with pytest.raises(kael.TypeError, match="lengths must be a tensor or a sequence of ints"):
        KR.pack_padded_sequence(K(randn(2, 2, 2)), ["a", "b"])


# ---- lengths as torch.as_tensor(lengths, dtype=int64) reads them ------------------------------

ACCEPTED_LENGTHS = {
    "numpy_ints": np.array([4, 2, 1]),
    "numpy_floats_truncated": np.array([4.9, 2.2, 1.5]),
    "numpy_uint8": np.array([4, 2, 1], dtype=np.uint8),
    "numpy_bools": np.array([True, True, True]),
    "numpy_int_scalars": [np.int64(4), np.int32(2), np.int8(1)],
    "numpy_float64_scalar": [np.float64(3.5), 2, 1],
    "python_floats": [4, 2.5, 1.0],
    "python_bools": [True, True, True],
    "zero_d_tensors": [torch.tensor(4), torch.tensor(2, dtype=torch.int8), 1],
    "bool_zero_d_tensor": [torch.tensor(3), torch.tensor(True)],
    "one_element_tensor": [torch.tensor([4]), 2, 1],
    "range": range(4, 1, -1),
    **{
        f"tensor_{d}".replace("torch.", ""): torch.tensor([4, 2, 1], dtype=d)
        for d in [torch.int8, torch.int16, torch.int32, torch.uint8, torch.float16, torch.float64]
    },
}


@pytest.mark.parametrize("case", list(ACCEPTED_LENGTHS))
def test_lengths_accepted_as_torch_as_tensor_accepts_them(case):
    lengths = ACCEPTED_LENGTHS[case]
    x = randn(4, 3, 2)
    x = x[:, :2] if case == "bool_zero_d_tensor" else x
    want = R.pack_padded_sequence(x, lengths)
    same_packed(KR.pack_padded_sequence(K(x), K(lengths)), want)


REFUSED_LENGTHS = {
    "numpy_float32_scalar": ([np.float32(1.5)] * 3, TypeError, kael.TypeError, "np.float32"),
    "numpy_bool_scalar": ([np.True_] * 3, TypeError, kael.TypeError, r"np.True_ at lengths\[0\]"),
    "nan": ([float("nan"), 2, 1], RuntimeError, kael.ValueError, "length nan cannot be"),
    "inf": ([float("inf"), 2, 1], RuntimeError, kael.ValueError, "length inf cannot be"),
    "float_beyond_int64": ([1e30, 2, 1], RuntimeError, kael.ValueError, "length 1e.30 cannot"),
    "int_beyond_int64": ([2**63, 2, 1], ValueError, kael.ValueError, f"length {2**63} cannot"),
    "strings": (["4", "2", "1"], ValueError, kael.TypeError, r"got '4' at lengths\[0\]"),
    "nested_lists": ([[4], [2], [1]], RuntimeError, kael.ValueError, r"lengths\[0\] is \[4\]"),
    "ragged": ([4, [2], 1], TypeError, kael.ValueError, r"lengths\[1\] is \[2\]"),
    "string": ("abc", TypeError, kael.TypeError, "got 'abc'"),
    "none": (None, TypeError, kael.TypeError, "got None"),
    "a_number": (4, RuntimeError, kael.TypeError, "sequence of ints, got 4"),
    "complex": ([4 + 0j, 2, 1], TypeError, kael.TypeError, r"got \(4\+0j\)"),
    "float_zero_d_tensor": ([torch.tensor(4.0), 2, 1], TypeError, kael.TypeError, "float32"),
    "two_element_tensor": ([torch.tensor([4, 2]), 1], TypeError, kael.TypeError, r"\[2\]"),
    "numpy_strings": (np.array(["4", "2", "1"]), TypeError, kael.TypeError, "type <U1"),
    "numpy_objects": (np.array([4, 2, 1], dtype=object), TypeError, kael.TypeError, "object"),
    "numpy_2d": (np.array([[4, 2, 1]]), RuntimeError, kael.ValueError, "1D tensor, but got 2D"),
}


@pytest.mark.parametrize("case", list(REFUSED_LENGTHS))
def test_bad_lengths_refused_naming_the_value(case):
    lengths, torch_error, kael_error, match = REFUSED_LENGTHS[case]
    x = randn(4, 3, 2)
    with pytest.raises(torch_error):
        R.pack_padded_sequence(x, lengths)
    with pytest.raises(kael_error, match=match):
        KR.pack_padded_sequence(K(x), K(lengths))


@pytest.mark.parametrize("value", [2**63 - 1, 2**63, 9.2e18, 9.3e18])
def test_lengths_convert_within_int64_only(value):
    """torch.as_tensor holds 2**63 - 1 and 9.2e18 (beyond the 4 steps, so refused after it),
    and refuses 2**63 and 9.3e18 as kael does."""
    x = K(randn(4, 2, 2))
    try:
        torch.as_tensor([value, 1], dtype=torch.int64)
    except (RuntimeError, ValueError):
        with pytest.raises(kael.ValueError, match=re.escape(f"length {value} cannot be converted")):
            KR.pack_padded_sequence(x, [value, 1])
        return
    with pytest.raises(kael.ValueError, match=f"lengths \\[{int(value)}, 1\\] exceed the input's"):
        KR.pack_padded_sequence(x, [value, 1])


# ---- total_length ----------------------------------------------------------------------------


ACCEPTED_TOTAL_LENGTHS = {
    "int": 5,
    "at_the_longest": 4,
    "numpy_int": np.int64(5),
    "zero_d_tensor": torch.tensor(5),
    "zero_d_int8_tensor": torch.tensor(5, dtype=torch.int8),
    "zero_d_uint8_tensor": torch.tensor(4, dtype=torch.uint8),
}


@pytest.mark.parametrize("case", list(ACCEPTED_TOTAL_LENGTHS))
def test_total_length_int_like_accepted_as_torch(case):
    total_length = ACCEPTED_TOTAL_LENGTHS[case]
    x = randn(4, 3, 2)
    t = R.pack_padded_sequence(x, [4, 3, 2])
    k = KR.pack_padded_sequence(K(x), [4, 3, 2])
    got = KR.pad_packed_sequence(k, total_length=K(total_length))
    for a, b in zip(got, R.pad_packed_sequence(t, total_length=total_length)):
        same(a, b)


REFUSED_TOTAL_LENGTHS = {
    "float": (4.0, TypeError, kael.TypeError, r"must be int, not float \(got 4.0\)"),
    "float_below": (2.0, ValueError, kael.TypeError, r"must be int, not float \(got 2.0\)"),
    "string": ("4", TypeError, kael.TypeError, r"must be int, not str \(got '4'\)"),
    "bool": (True, ValueError, kael.TypeError, r"must be int, not bool \(got True\)"),
    "numpy_float": (np.float64(5.0), TypeError, kael.TypeError, "not float64"),
    "float_tensor": (torch.tensor(5.0), TypeError, kael.TypeError, "not Tensor.*5.0"),
    "one_d_tensor": (torch.tensor([5]), TypeError, kael.TypeError, r"not Tensor.*\[5\]"),
    "tensor_below": (torch.tensor(3), ValueError, kael.ValueError, "total_length=3 and max"),
    "beyond_int64": (2**70, ValueError, kael.ValueError, f"total_length {2**70} is out of"),
}


@pytest.mark.parametrize("case", list(REFUSED_TOTAL_LENGTHS))
def test_total_length_not_an_int_refused_naming_it(case):
    total_length, torch_error, kael_error, match = REFUSED_TOTAL_LENGTHS[case]
    x = randn(4, 3, 2)
    with pytest.raises(torch_error):
        R.pad_packed_sequence(R.pack_padded_sequence(x, [4, 3, 2]), total_length=total_length)
    k = KR.pack_padded_sequence(K(x), [4, 3, 2])
    with pytest.raises(kael_error, match=match):
        KR.pad_packed_sequence(k, total_length=K(total_length))


# ---- unpad_sequence's float lengths ----------------------------------------------------------


@pytest.mark.parametrize(
    "lengths",
    [
        torch.tensor([2.5, 0.5, 3.0]),
        torch.tensor([2.0, 2.0001, 1.9999]),
        torch.tensor([float("nan"), float("inf"), -float("inf")]),
        torch.tensor([-0.5, 1e30, 0.0]),
        torch.tensor([2.5, 1.0, 0.25], dtype=torch.float16),
        torch.tensor([2.5, 1.0, 0.25], dtype=torch.float64),
        torch.tensor([True, False, True]),
        torch.tensor([2, 1, 4], dtype=torch.uint8),
    ],
)
def test_unpad_sequence_keeps_the_steps_below_each_length(lengths):
    """PyTorch keeps the rows where arange(T) < length: 2.5 keeps 3, NaN none, inf all."""
    x = randn(3, 3, 2)
    got = KR.unpad_sequence(K(x), K(lengths))
    want = R.unpad_sequence(x.clone(), lengths)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        same(a, b)


# ---- PackedSequence's conversion methods -----------------------------------------------------


def both_packed_sequences(dtype=torch.float32):
    x = randn(3, 2, 2, dtype=dtype)
    t = R.pack_padded_sequence(x, [1, 3], enforce_sorted=False)
    return KR.pack_padded_sequence(K(x), [1, 3], enforce_sorted=False), t


@pytest.mark.parametrize(
    "name", ["double", "float", "half", "long", "int", "short", "char", "byte"]
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_dtype_methods_convert_the_data_only(name, dtype):
    """Each is to(dtype=...): batch_sizes and the indices stay int64; self when data has it."""
    k, t = both_packed_sequences(dtype)
    got, want = getattr(k, name)(), getattr(t, name)()
    same_packed(got, want)
    assert (got is k) == (want is t)


def to_forms(lib):
    """Every form of to() torch's PackedSequence takes, for torch or kael (`lib`)."""
    other = lib.zeros(1, dtype=lib.int32)
    cpu = lib.device("cpu")
    return {
        "dtype": ((lib.float64,), {}),
        "device": (("cpu",), {}),
        "device_object": ((cpu,), {}),
        "device_dtype": (("cpu", lib.float64), {}),
        "device_dtype_non_blocking": (("cpu", lib.float16, True), {}),
        "dtype_non_blocking": ((lib.float64, False), {}),
        "tensor": ((other,), {}),
        "tensor_non_blocking": ((other, True), {}),
        "keywords": ((), {"device": "cpu", "dtype": lib.float16}),
        "non_blocking_keyword": ((lib.float64,), {"non_blocking": True}),
        "preserve_format": ((lib.float32,), {"memory_format": lib.preserve_format}),
        "contiguous_format": ((), {"memory_format": lib.contiguous_format}),
        "nothing": ((), {}),
        "same_dtype": ((lib.float32,), {}),
    }


@pytest.mark.parametrize("form", list(to_forms(torch)))
def test_to_takes_every_torch_form(form):
    k, t = both_packed_sequences()
    args, kwargs = to_forms(torch)[form]
    want = t.to(*args, **kwargs)
    args, kwargs = to_forms(kael)[form]
    got = k.to(*args, **kwargs)
    same_packed(got, want)
    assert (got is k) == (want is t)


def bad_to_forms(lib):
    return {
        "copy_keyword": ((lib.float64,), {"copy": True}),
        "copy_positional": ((lib.float64, False, True), {}),
        "two_dtypes": ((lib.float64, lib.float32), {}),
        "dtype_twice": ((lib.float64,), {"dtype": lib.float32}),
        "unknown_keyword": ((), {"foo": 1}),
        "unknown_device": (("bogus",), {}),
        "channels_last_of_2d_data": ((), {"memory_format": lib.channels_last}),
    }


@pytest.mark.parametrize("form", list(bad_to_forms(torch)))
def test_to_refuses_what_torch_refuses(form):
    k, t = both_packed_sequences()
    args, kwargs = bad_to_forms(torch)[form]
    with pytest.raises((TypeError, RuntimeError)):
        t.to(*args, **kwargs)
    args, kwargs = bad_to_forms(kael)[form]
    with pytest.raises((kael.TypeError, kael.ValueError)):
        k.to(*args, **kwargs)


CPU_CALLS = {
    "plain": lambda lib: ((), {}),
    "device": lambda lib: (("cpu",), {}),
    "dtype": lambda lib: ((lib.float64,), {}),
    "dtype_keyword": lambda lib: ((), {"dtype": lib.float64}),
    "non_blocking": lambda lib: ((), {"non_blocking": True}),
}


@pytest.mark.parametrize("call", list(CPU_CALLS))
def test_cpu_moves_to_the_cpu_with_the_conversions_asked(call):
    k, t = both_packed_sequences()
    args, kwargs = CPU_CALLS[call](torch)
    want = t.cpu(*args, **kwargs)
    args, kwargs = CPU_CALLS[call](kael)
    got = k.cpu(*args, **kwargs)
    same_packed(got, want)
    assert (got is k) == (want is t)


def test_is_pinned_reads_the_data():
    k, t = both_packed_sequences()
    assert k.is_pinned() is t.is_pinned() is False


@pytest.mark.parametrize("method", ["cuda", "pin_memory"])
def test_cuda_and_pin_memory_need_a_gpu(method):
    """This CPU torch refuses both; kael refuses them without a GPU, and with one moves
    data and the indices (batch_sizes stays on the CPU)."""
    k, t = both_packed_sequences()
    with pytest.raises((AssertionError, RuntimeError)):
        getattr(t, method)()
    if not kael.cuda.is_available():
        with pytest.raises(kael.Error, match="CUDA is not available"):
            getattr(k, method)()
        return
    got = getattr(k, method)()
    assert got.batch_sizes is k.batch_sizes
    assert got.is_cuda if method == "cuda" else got.is_pinned()
    same_packed(got.cpu(), t)


# ---- padding_value within the padded dtype ---------------------------------------------------

# (dtype, padding_value): each accepted or refused as PyTorch's checked conversion does
PADDING_VALUES = [
    *[(torch.int64, v) for v in (float("nan"), float("inf"), -float("inf"), 1e19, 9.2e18)],
    *[(torch.int64, v) for v in (-(2**63), 2.7, True, 2**62 + 1)],
    *[(torch.float16, v) for v in (1e6, 65504.0, 65504.5, -65505.0, 100000, 70000)],
    *[(torch.float16, v) for v in (float("inf"), float("nan"))],
    *[(torch.bfloat16, v) for v in (3.3895313892515355e38, 3.39e38, float("inf"))],
    *[(torch.float32, v) for v in (3.4028234663852886e38, 3.4028235e38, float("nan"))],
    *[(torch.float64, v) for v in (1e308, float("inf"))],
    *[(torch.int8, v) for v in (127, 128, -128, -129, 127.9, float("nan"))],
    *[(torch.uint8, v) for v in (255, 256, -1, -255, -256, -1.5)],
    *[(torch.int32, v) for v in (2**31 - 1, 2**31)],
    *[(torch.bool, v) for v in (2.5, float("nan"))],
]


def _padded_both(pad, dtype, value):
    """pad(module, sequences, value) for torch's and kael's sequences of `dtype`: torch's
    result, or the error torch raises (then kael must raise kael.ValueError naming value)."""
    s = sequences(dtype, (2, 1), ())
    try:
        want = pad(R, s, value)
    except RuntimeError as e:
        assert "without overflow" in str(e)
        with pytest.raises(kael.ValueError, match=f"cannot be converted to {KAEL_DTYPES[dtype]}"):
            pad(KR, K(s), value)
        return
    got = pad(KR, K(s), value)
    if dtype.is_floating_point:  # NaN padding equals NaN
        close_to_torch(got, want, 0, equal_nan=True)
    else:
        same(got, want)


# pad_sequence reads padding_value as a double (2**62 + 1 rounds, uint8 refuses -1.0);
# pad_packed_sequence as a Scalar (an int exactly, uint8 takes -1 as 255)
PADDERS = {
    "pad_sequence": lambda M, s, v: M.pad_sequence(s, padding_value=v),
    "pad_packed_sequence": lambda M, s, v: M.pad_packed_sequence(M.pack_sequence(s), False, v)[0],
}


@pytest.mark.parametrize("padder", list(PADDERS))
@pytest.mark.parametrize(
    "dtype,value", PADDING_VALUES, ids=[f"{d}-{v!r}"[6:] for d, v in PADDING_VALUES]
)
def test_padding_value_checked_for_the_dtype(padder, dtype, value):
    _padded_both(PADDERS[padder], dtype, value)


@pytest.mark.parametrize("value", [float("nan"), 1e19, 2**63])
def test_padding_overflow_names_the_value(value):
    s = K(sequences(torch.int64, (2, 1), ()))
    with pytest.raises(kael.ValueError, match=re.escape(f"{value} cannot be converted to int64")):
        KR.pad_packed_sequence(KR.pack_sequence(s), padding_value=value)


@pytest.mark.parametrize(
    "value", [torch.tensor(2.5), np.float32(2.5), np.int64(3), True, np.True_, 7]
)
def test_padding_value_numbers_and_0d_tensors_accepted(value):
    s = sequences(lengths=(2, 1), trailing=())
    same(KR.pad_sequence(K(s), padding_value=K(value)), R.pad_sequence(s, padding_value=value))
    p, kp = R.pack_sequence(s), KR.pack_sequence(K(s))
    same(
        KR.pad_packed_sequence(kp, padding_value=K(value))[0],
        R.pad_packed_sequence(p, padding_value=value)[0],
    )


@pytest.mark.parametrize("value", [torch.tensor([2.5]), "1", None, 2 + 1j])
def test_padding_value_not_a_number_refused(value):
    s = sequences(lengths=(2, 1), trailing=())
    with pytest.raises((TypeError, RuntimeError)):
        R.pad_packed_sequence(R.pack_sequence(s), padding_value=value)
    with pytest.raises(TypeError):
        R.pad_sequence(s, padding_value=value)
    with pytest.raises(kael.TypeError, match="padding_value must be a float"):
        KR.pad_sequence(K(s), padding_value=K(value))
    with pytest.raises(kael.TypeError, match="padding_value must be a float"):
        KR.pad_packed_sequence(KR.pack_sequence(K(s)), padding_value=K(value))


# ---- the packed overload of the recurrent functions ------------------------------------------


def module(name, dtype=torch.float32, **kwargs):
    """A seeded nn.RNN / nn.LSTM / nn.GRU (input size 3, hidden 4) for `name`."""
    torch.manual_seed(0)
    return MODULES[name](3, 4, **kwargs).to(dtype)


def initial(m, batch, dtype=torch.float32, seed=8):
    """Non-zero h0, or (h0, c0), for module m."""
    layers = m.num_layers * (2 if m.bidirectional else 1)
    h0 = randn(layers, batch, m.proj_size or m.hidden_size, dtype=dtype, seed=seed)
    c0 = randn(layers, batch, m.hidden_size, dtype=dtype, seed=seed + 1)
    return (h0, c0) if isinstance(m, nn.LSTM) else h0


def packed_args(name, sizes=(4, 3, 3, 1), dtype=torch.float32, **kwargs):
    """torch.NAME's packed arguments (data, batch_sizes, hx, params, *flags) for a module."""
    m = module(name, dtype, **kwargs)
    data = randn(sum(sizes), 3, dtype=dtype, seed=9)
    flags = [m.bias, m.num_layers, 0.0, False, m.bidirectional]
    return [data, torch.tensor(sizes), initial(m, sizes[0], dtype), m._flat_weights, *flags]


def both_packed(name, args):
    """(kael's, torch's) packed NAME on args."""
    return getattr(kael, name)(*K(args)), getattr(torch, name)(*args)


@pytest.mark.parametrize("name", list(MODULES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_packed_overload_matches_torch(name, dtype, num_layers, bidirectional):
    args = packed_args(name, dtype=dtype, num_layers=num_layers, bidirectional=bidirectional)
    close_to_torch(*both_packed(name, args), TOL[dtype])


@pytest.mark.parametrize("sizes", [(3,), (2, 2, 2), (1, 1, 1, 1), (5, 1), (3, 3, 2, 2, 1)])
@pytest.mark.parametrize("name", ["lstm", "gru"])
def test_packed_batch_sizes_shapes(sizes, name):
    """Sequences that end at every step, at none, one sequence, a single step."""
    args = packed_args(name, sizes, bidirectional=True)
    close_to_torch(*both_packed(name, args), 1e-5)


@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_packed_lstm_projection(num_layers, bidirectional, bias):
    args = packed_args(
        "lstm", num_layers=num_layers, bidirectional=bidirectional, bias=bias, proj_size=2
    )
    close_to_torch(*both_packed("lstm", args), 1e-5)


@pytest.mark.parametrize("name", list(MODULES))
def test_packed_without_biases(name):
    close_to_torch(*both_packed(name, packed_args(name, bias=False, num_layers=2)), 1e-5)


@pytest.mark.parametrize("name", ["lstm", "gru"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_packed_half_types(name, dtype):
    args = packed_args(name, dtype=dtype, bidirectional=True)
    close_to_torch(*both_packed(name, args), 4 * TOL[dtype])


def test_packed_integer_relu_as_torch():
    args = packed_args("rnn_relu", num_layers=2)
    args[0] = args[0].round().long()
    args[2] = torch.zeros(2, 4, 4, dtype=torch.long)
    args[3] = [(p * 3).round().long() for p in args[3]]
    close_to_torch(*both_packed("rnn_relu", args), 0)


def test_packed_integer_tanh_refused():
    args = packed_args("rnn_tanh")
    args[0], args[2] = args[0].long(), args[2].long()
    args[3] = [p.round().long() for p in args[3]]
    with pytest.raises(RuntimeError):
        torch.rnn_tanh(*args)
    with pytest.raises(kael.TypeError, match="floating point input, got int64"):
        kael.rnn_tanh(*K(args))


@pytest.mark.parametrize("layout", ["transposed", "sliced", "expanded"])
def test_packed_data_of_any_layout(layout):
    args = packed_args("gru", bidirectional=True)
    data, args[0] = laid_out((11, 3), layout)
    got = kael.gru(data, *K(args[1:]))
    close_to_torch(got, torch.gru(*args), 1e-5)


def test_packed_full_dropout_between_layers():
    """p = 1 zeroes layer 0's output: deterministic, so compared with torch's values."""
    args = packed_args("lstm", num_layers=2, bidirectional=True)
    args[6], args[7] = 1.0, True
    close_to_torch(*both_packed("lstm", args), 1e-5)


@pytest.mark.parametrize("name", ["lstm", "gru"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths", [[5, 3, 3, 1], [2, 5, 1, 4]])
def test_pack_run_pad_matches_the_module(name, batch_first, lengths):
    """pack_padded_sequence -> kael.NAME(data, batch_sizes, ...) with the module's flat
    weights -> pad_packed_sequence, as nn.LSTM / nn.GRU run a PackedSequence (hx in sorted
    order, h_n back in the batch's)."""
    m = module(name, num_layers=2, bidirectional=True, batch_first=batch_first)
    x = randn(4, 5, 3, seed=5) if batch_first else randn(5, 4, 3, seed=5)
    hx = initial(m, 4)
    packed = R.pack_padded_sequence(x, lengths, batch_first, enforce_sorted=False)
    with torch.no_grad():
        out, state = m(packed, hx)
    want = (*R.pad_packed_sequence(out, batch_first), *(state if name == "lstm" else (state,)))

    kp = KR.pack_padded_sequence(K(x), lengths, batch_first, enforce_sorted=False)
    states = K(hx) if name == "lstm" else (K(hx),)
    sorted_states = tuple(h.index_select(1, kp.sorted_indices) for h in states)
    flags = (True, 2, 0.0, False, True)
    hx_arg = sorted_states if name == "lstm" else sorted_states[0]
    run = getattr(kael, name)(kp.data, kp.batch_sizes, hx_arg, K(m._flat_weights), *flags)
    padded = KR.pad_packed_sequence(KR.PackedSequence(run[0], *kp[1:]), batch_first)
    finals = tuple(h.index_select(1, kp.unsorted_indices) for h in run[1:])
    close_to_torch((*padded, *finals), want, 1e-5)


def test_packed_overload_works_under_compile():
    data, sizes, hx, params, *flags = K(packed_args("lstm", num_layers=2, bidirectional=True))
    fn = kael.compile(lambda d, h, c: kael.lstm(d, sizes, (h, c), params, *flags))
    want = torch.lstm(*packed_args("lstm", num_layers=2, bidirectional=True))
    close_to_torch(fn(data, *hx), want, 1e-5)


def _packed_error(name, change, torch_error, kael_error, match):
    """torch and kael both refuse the packed arguments `change` makes."""
    refused_changed(name, packed_args(name), change, K, torch_error, kael_error, match)


PACKED_ERRORS = {
    "batch_sizes_int32": (
        setter(1, lambda a: a[1].int()),
        kael.TypeError,
        "expected batch_sizes of dtype int64, got int32",
    ),
    "batch_sizes_float": (
        setter(1, lambda a: a[1].float()),
        kael.TypeError,
        "expected batch_sizes of dtype int64, got float32",
    ),
    "batch_sizes_list": (
        setter(1, [4, 3, 3, 1]),
        kael.TypeError,
        "argument 'batch_sizes' must be Tensor, not list",
    ),
    "increasing": (
        setter(1, torch.tensor([1, 3, 3, 4])),
        kael.ValueError,
        r"non-increasing batch_sizes, got \[1, 3, 3, 4\]",
    ),
    "too_many_rows": (
        setter(1, torch.tensor([4, 3, 3, 2])),
        kael.ValueError,
        r"batch_sizes \[4, 3, 3, 2\] sum to 12, but data has 11 rows",
    ),
    "hx_batch": (
        setter(2, lambda a: a[2][:, :3]),
        kael.ValueError,
        r"expected hx\[0\] of shape \[1, 4, 4\], got \[1, 3, 4\]",
    ),
    "data_dtype": (
        setter(0, lambda a: a[0].double()),
        kael.TypeError,
        r"input is float64 and hx\[0\] is float32",
    ),
    "data_input_size": (
        setter(0, lambda a: randn(11, 5)),
        kael.ValueError,
        r"weight_ih_l0 \(params\[0\]\) of shape \[12, 5\], got \[12, 3\]",
    ),
    "data_1d": (
        setter(0, lambda a: a[0][:, 0]),
        kael.IndexError,
        r"expected data to have 2 dimensions, got \[11\]",
    ),
    "data_3d": (
        setter(0, lambda a: a[0].reshape(11, 1, 3)),
        kael.ValueError,
        r"expected data to have 2 dimensions, got \[11, 1, 3\]",
    ),
    "dropout_probability": (
        lambda a: a.__setitem__(slice(5, 8), [2, 1.5, True]),
        kael.ValueError,
        "between 0 and 1, but got 1.5",
    ),
}


@pytest.mark.parametrize("case", list(PACKED_ERRORS))
def test_bad_packed_arguments_raise_typed_errors(case):
    change, error, match = PACKED_ERRORS[case]
    torch_error = TypeError if case == "batch_sizes_list" else RuntimeError
    if case == "dropout_probability":
        args = packed_args("gru", num_layers=2)
        change(args)
        with pytest.raises(torch_error):
            torch.gru(*args)
        with pytest.raises(error, match=match):
            kael.gru(*K(args))
        return
    _packed_error("gru", change, torch_error, error, match)


def test_packed_lstm_needs_a_hidden_state_pair():
    _packed_error(
        "lstm", setter(2, lambda a: a[2][0]), TypeError, kael.TypeError, "tuple of Tensors, not"
    )
    _packed_error(
        "lstm", setter(2, lambda a: a[2][:1]), RuntimeError, kael.ValueError, "two hidden states"
    )


@pytest.mark.parametrize(
    "sizes,match",
    [
        (torch.tensor([4, 3, 0]), r"positive sizes, got \[4, 3, 0\]"),
        (torch.tensor([[4, 3, 3, 1]]), r"batch_sizes to have 1 dimensions, got \[1, 4\]"),
        (torch.tensor([4, 3, 3]), r"sum to 10, but data has 11 rows"),
        (torch.zeros(0, dtype=torch.long), r"positive sizes, got \[\]"),
    ],
)
def test_batch_sizes_torch_does_not_check_are_refused(sizes, match):
    """PyTorch runs these without a check (reading past, ignoring rows, or crashing on an
    empty batch_sizes); kael refuses them, naming the values."""
    args = K(packed_args("gru"))
    args[1] = K(sizes)
    with pytest.raises(kael.ValueError, match=match):
        kael.gru(*args)


@pytest.mark.parametrize("dtype", [kael.int64, kael.int32], ids=str)
def test_invert_permutation_inverts_as_torchs(dtype):
    from kael.nn.utils.rnn import invert_permutation

    perm = np.random.default_rng(0).permutation(50)
    got = invert_permutation(kael.tensor(perm).to(dtype))
    # (torch's scatters an int64 arange into an int32 permutation's copy: it refuses int32)
    want = torch.nn.utils.rnn.invert_permutation(torch.from_numpy(perm))
    assert got.dtype is dtype and got.tolist() == want.tolist()
    assert invert_permutation(None) is None
    assert invert_permutation(kael.tensor([0, 0, 1])).tolist() == [1, 2, -1]  # torch: garbage


def test_invert_permutation_refuses_what_torchs_refuses():
    from kael.nn.utils.rnn import invert_permutation

    with pytest.raises(
        kael.IndexError, match="index 5 is out of bounds for dimension 0 with size 3"
    ):
        invert_permutation(kael.tensor([5, 0, 1]))
    with pytest.raises(kael.TypeError, match="expected dtype int32 or int64 for index"):
        invert_permutation(kael.tensor([0.0, 1.0]))
    with pytest.raises(kael.TypeError, match="argument 'permutation' must be Tensor, not list"):
        invert_permutation([0, 1])
