"""F.ctc_loss against PyTorch: values over reductions, dtypes, target layouts and lengths
given as tensors or sequences; impossible alignments; the argument checks."""

import pytest
import torch
import torch.nn.functional as F
from parity_helpers import close_to_torch

import kael
import kael.nn.functional as KF

TOL = {torch.float32: 1e-5, torch.float64: 1e-10}


def pair(t: torch.Tensor) -> tuple[kael.Tensor, torch.Tensor]:
    return kael.from_dlpack(t.clone()), t


def log_probs(steps, batch, classes, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(steps, batch, classes, generator=gen, dtype=dtype).log_softmax(-1)


def both(lp, targets, inputs, lengths, **kwargs):
    """(kael's loss, torch's) for the same arguments (tensors turned into kael's)."""
    convert = [
        a if not isinstance(a, torch.Tensor) else pair(a)[0] for a in (lp, targets, inputs, lengths)
    ]
    return KF.ctc_loss(*convert, **kwargs), F.ctc_loss(lp, targets, inputs, lengths, **kwargs)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_padded_targets_match_torch(dtype, reduction, zero_infinity):
    lp = log_probs(7, 4, 5, dtype)
    targets = torch.tensor([[1, 2, 2], [3, 1, 0], [4, 4, 4], [2, 0, 0]])
    inputs, lengths = torch.tensor([7, 6, 3, 1]), torch.tensor([3, 2, 3, 0])
    k, t = both(lp, targets, inputs, lengths, reduction=reduction, zero_infinity=zero_infinity)
    close_to_torch(k, t, TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_concatenated_targets_match_torch(dtype):
    lp = log_probs(8, 3, 6, dtype, seed=1)
    targets = torch.tensor([1, 2, 3, 5, 5, 4])
    k, t = both(lp, targets, torch.tensor([8, 5, 7]), torch.tensor([3, 0, 3]), reduction="none")
    close_to_torch(k, t, TOL[dtype])


@pytest.mark.parametrize("kind", [tuple, list])
def test_lengths_as_sequences_of_ints(kind):
    lp = log_probs(6, 2, 4)
    targets = torch.tensor([[1, 2, 3], [3, 3, 0]])
    k = KF.ctc_loss(pair(lp)[0], pair(targets)[0], kind([6, 5]), kind([3, 2]), reduction="none")
    t = F.ctc_loss(lp, targets, (6, 5), (3, 2), reduction="none")
    close_to_torch(k, t, 1e-5)


def test_integer_dtypes_of_targets_and_lengths():
    lp = log_probs(6, 2, 4)
    targets = torch.tensor([[1, 2, 3], [3, 3, 0]], dtype=torch.int32)
    inputs = torch.tensor([6, 4], dtype=torch.int32)
    lengths = torch.tensor([3, 2], dtype=torch.int16)
    close_to_torch(*both(lp, targets, inputs, lengths, reduction="none"), 1e-5)


@pytest.mark.parametrize("layout", ["transposed", "sliced"])
def test_non_contiguous_log_probs(layout):
    base = log_probs(4, 6, 5)  # read as [N, T, C]
    lp = base.transpose(0, 1) if layout == "transposed" else log_probs(6, 8, 5)[:, ::2]
    targets = torch.tensor([[1, 2], [2, 2], [4, 1], [3, 0]])
    lengths = torch.tensor([2, 2, 2, 1])
    close_to_torch(*both(lp, targets, torch.tensor([6, 5, 6, 2]), lengths), 1e-5)


@pytest.mark.parametrize("lengths_kind", ["scalar", "one"])
@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_unbatched_input_gives_unbatched_loss(lengths_kind, reduction):
    lp = log_probs(6, 1, 4)[:, 0]
    targets = torch.tensor([1, 3, 3])
    make = torch.tensor if lengths_kind == "scalar" else lambda v: torch.tensor([v])
    k, t = both(lp, targets, make(6), make(3), reduction=reduction)
    close_to_torch(k, t, 1e-5)


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_target_longer_than_input_gives_inf_or_zero(zero_infinity):
    lp = log_probs(3, 3, 4)
    # 3 labels in 2 frames; a repeat needs a blank between (1, 1, 1 takes 5 frames)
    targets = torch.tensor([[1, 2, 3], [1, 1, 1], [1, 2, 0]])
    inputs, lengths = torch.tensor([2, 3, 2]), torch.tensor([3, 3, 2])
    k, t = both(lp, targets, inputs, lengths, reduction="none", zero_infinity=zero_infinity)
    assert torch.isinf(t[0]) != zero_infinity and t[2].isfinite()
    close_to_torch(k, t, 1e-5)


def test_target_fitting_exactly_is_finite():
    lp = log_probs(5, 1, 3)
    k, t = both(
        lp, torch.tensor([[1, 1, 1]]), torch.tensor([5]), torch.tensor([3]), reduction="none"
    )
    assert t.isfinite().all()
    close_to_torch(k, t, 1e-5)


@pytest.mark.parametrize("blank", [2, 4])
def test_other_blank_index(blank):
    lp = log_probs(7, 2, 5, seed=3)
    targets = torch.tensor([[0, 1, 3], [3, 3, 1]])
    k, t = both(lp, targets, torch.tensor([7, 7]), torch.tensor([3, 3]), blank=blank)
    close_to_torch(k, t, 1e-5)


def test_label_equal_to_blank_follows_torch():
    lp = log_probs(6, 2, 4, seed=4)
    targets = torch.tensor([[0, 1, 1], [1, 0, 1]])
    k, t = both(lp, targets, torch.tensor([6, 6]), torch.tensor([3, 3]), reduction="none")
    close_to_torch(k, t, 1e-5)


def test_empty_targets_and_zero_input_length():
    lp = log_probs(4, 3, 3)
    targets = torch.tensor([[1, 2], [1, 2], [1, 2]])
    inputs, lengths = torch.tensor([4, 0, 0]), torch.tensor([0, 0, 1])
    k, t = both(lp, targets, inputs, lengths, reduction="none")
    close_to_torch(k, t, 1e-5)


def test_mean_divides_by_clamped_target_length():
    lp = log_probs(5, 3, 4, dtype=torch.float64)
    targets = torch.tensor([[1, 2, 3], [2, 0, 0], [1, 0, 0]])
    lengths = torch.tensor([3, 0, 1])
    k, t = both(lp, targets, torch.tensor([5, 5, 4]), lengths, reduction="mean")
    close_to_torch(k, t, 1e-10)


def test_single_time_step():
    lp = log_probs(1, 2, 3)
    k, t = both(
        lp, torch.tensor([[2], [1]]), torch.tensor([1, 1]), torch.tensor([1, 0]), reduction="none"
    )
    close_to_torch(k, t, 1e-5)


LP, TG = log_probs(6, 2, 4), torch.tensor([[1, 2, 3], [3, 3, 0]])
IL, TL = torch.tensor([6, 5]), torch.tensor([3, 2])

BAD = {
    "blank_too_big": (
        (LP, TG, IL, TL),
        {"blank": 4},
        kael.ValueError,
        "blank must be in label range",
    ),
    "blank_negative": ((LP, TG, IL, TL), {"blank": -1}, kael.ValueError, "got -1"),
    "input_length_too_long": (
        (LP, TG, torch.tensor([7, 5]), TL),
        {},
        kael.ValueError,
        "at most 6, but got value 7",
    ),
    "input_length_negative": (
        (LP, TG, torch.tensor([-1, 5]), TL),
        {},
        kael.ValueError,
        "at least 0, but got value -1",
    ),
    "target_length_negative": (
        (LP, TG, IL, torch.tensor([-1, 2])),
        {},
        kael.ValueError,
        "at least 0, but got value -1",
    ),
    "target_length_past_padding": (
        (LP, TG, IL, torch.tensor([4, 2])),
        {},
        kael.ValueError,
        "size at least 4 at dimension 1, but got size 3",
    ),
    "too_few_input_lengths": (
        (LP, TG, torch.tensor([6]), TL),
        {},
        kael.ValueError,
        "input_lengths must be of size batch_size (2), got 1",
    ),
    "too_few_target_lengths": (
        (LP, TG, IL, torch.tensor([3])),
        {},
        kael.ValueError,
        "target_lengths must be of size batch_size (2), got 1",
    ),
    "concatenated_too_short": (
        (LP, torch.tensor([1, 2, 3, 1]), IL, TL),
        {},
        kael.ValueError,
        "size 5 at dimension 0, but got size 4",
    ),
    "targets_batch_differs": (
        (LP, TG[:1], IL, TL),
        {},
        kael.ValueError,
        "size 2 at dimension 0, but got size 1",
    ),
    "float_lengths": (
        (LP, TG, IL.float(), TL),
        {},
        kael.TypeError,
        "input_lengths must be integral",
    ),
    "log_probs_rank": ((LP[None], TG, IL, TL), {}, kael.ValueError, "4-D"),
    "targets_rank": ((LP, TG[None], IL, TL), {}, kael.ValueError, "got 3-D"),
    "integer_log_probs": ((LP.long(), TG, IL, TL), {}, kael.TypeError, "int64"),
    "empty_log_probs": (
        (LP[:, :0], TG[:0], IL[:0], TL[:0]),
        {},
        kael.ValueError,
        "must not be empty",
    ),
    "bad_reduction": ((LP, TG, IL, TL), {"reduction": "avg"}, kael.ValueError, "'avg'"),
    "label_out_of_range": (
        (LP, torch.tensor([[1, 4, 3], [3, 3, 0]]), IL, TL),
        {},
        kael.IndexError,
        "[0, 4)",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_arguments_raise_typed_errors(case):
    args, kwargs, error, words = BAD[case]
    convert = [pair(a)[0] if isinstance(a, torch.Tensor) else a for a in args]
    with pytest.raises(error) as info:
        KF.ctc_loss(*convert, **kwargs)
    assert words in str(info.value)


def test_valid_sides_of_the_limits():
    """The edge values the checks allow: input length = T, target length = padded width,
    blank = C - 1, an unused padded target slot out of the label range."""
    targets = torch.tensor([[1, 2, 0], [2, 1, -5]])
    k, t = both(LP, targets, torch.tensor([6, 6]), torch.tensor([3, 2]), blank=3)
    close_to_torch(k, t, 1e-5)


def test_works_under_compile():
    lp, targets = pair(LP)[0], pair(TG)[0]
    fn = kael.compile(lambda a, b: KF.ctc_loss(a, b, (6, 5), (3, 2)))
    close_to_torch(fn(lp, targets), F.ctc_loss(LP, TG, IL, TL), 1e-5)


def test_a_label_outside_the_classes_is_named():
    log_probs = kael.randn(5, 2, 4).log_softmax(2)
    with pytest.raises(kael.IndexError, match=r"must be in \[0, 4\), got 9"):
        kael.nn.functional.ctc_loss(log_probs, kael.tensor([[1, 9], [1, 2]]), [5, 5], [2, 2])
