"""TensorImpl: the seven validation rules in order, overflow checks, contiguity, addresses."""

import itertools
import random

import pytest
import torch

from kael.runtime import dtypes, tensor_impl
from kael.runtime.device import CPU, CUDA
from kael.runtime.errors import Error, ValueError
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import (
    TensorImpl,
    checked_add,
    checked_mul,
    contiguous_strides,
    format_shape,
    overlapping,
    read_hazard,
    shape_numel,
    validate_shape,
)

F32, F64, I64, BOOL = dtypes.float32, dtypes.float64, dtypes.int64, dtypes.bool_
INT64_MAX = 2**63 - 1


def make_impl(nbytes, shape, strides, offset=0, dtype=F32, device=CPU, storage_device=CPU):
    """An impl built by hand, as a wrong view would build it."""
    return TensorImpl(Storage(nbytes, storage_device), shape, strides, offset, dtype, device)


def torch_accepts(storage_elements, shape, strides, offset) -> bool:
    """Whether PyTorch lets as_strided reach this layout over a float32 storage."""
    try:
        torch.empty(storage_elements).as_strided(shape, strides, offset)
    except RuntimeError:
        return False
    return True


def test_exactly_at_the_byte_limit_passes():
    make_impl(24, (2, 3), (3, 1)).validate()
    make_impl(48, (4,), (3,), offset=2).validate()
    make_impl(40, (3,), (2,), offset=4).validate()  # reads elements 4, 6 and 8: 36 bytes


def test_one_byte_short_raises():
    with pytest.raises(Error, match="needs 24 bytes but storage has 23$"):
        make_impl(23, (2, 3), (3, 1)).validate()
    with pytest.raises(Error, match="needs 48 bytes but storage has 47$"):
        make_impl(47, (4,), (3,), offset=2).validate()


def test_offset_past_the_end_raises_with_the_full_layout():
    message = (
        "tensor with shape [2, 3], strides [3, 1], offset 1 and dtype float32 "
        "needs 28 bytes but storage has 24"
    )
    with pytest.raises(Error) as info:
        make_impl(24, (2, 3), (3, 1), offset=1).validate()
    assert str(info.value) == message
    assert not isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("elements", "shape", "strides", "offset"),
    [
        (6, (2, 3), (3, 1), 0),
        (6, (2, 3), (3, 1), 1),
        (6, (3, 2), (1, 3), 0),
        (10, (3,), (2,), 4),
        (10, (3,), (2,), 5),
        (12, (4,), (3,), 2),
        (11, (4,), (3,), 2),
        (1, (5, 5), (0, 0), 0),
        (1, (5, 5), (0, 0), 1),
        (4, (2, 1, 2), (2, 99, 1), 0),
        (0, (2, 0, 3), (1, 1, 1), 100),
        (3, (), (), 2),
        (3, (), (), 3),
    ],
)
def test_fit_rule_agrees_with_torch_as_strided(elements, shape, strides, offset):
    impl = make_impl(elements * 4, shape, strides, offset)
    try:
        impl.validate()
        accepted = True
    except Error:
        accepted = False
    assert accepted == torch_accepts(elements, shape, strides, offset)


@pytest.mark.parametrize("shape", [(0,), (2, 0, 3), (0, 5)])
def test_empty_tensor_needs_no_bytes(shape):
    make_impl(0, shape, contiguous_strides(shape)).validate()
    make_impl(0, shape, contiguous_strides(shape), offset=1000).validate()


def test_dtype_size_counts():
    make_impl(48, (2, 3), (3, 1), dtype=F64).validate()
    with pytest.raises(Error, match="dtype float64 needs 48 bytes but storage has 47"):
        make_impl(47, (2, 3), (3, 1), dtype=F64).validate()
    make_impl(6, (2, 3), (3, 1), dtype=BOOL).validate()


def test_view_cannot_reach_into_the_allocator_slack():
    storage = Storage(48)
    assert storage.capacity == 512
    with pytest.raises(Error, match="needs 52 bytes but storage has 48"):
        TensorImpl(storage, (13,), (1,), 0, F32, CPU).validate()


def test_huge_strides_overflow_raises():
    with pytest.raises(ValueError, match=rf"^tensor extent overflows int64 \(2 \* {2**62}\)$"):
        make_impl(4, (3,), (2**62,)).validate()
    with pytest.raises(RuntimeError, match="overflow"):
        torch.empty(1).as_strided((3,), (2**62,))


def test_extent_in_bytes_overflow_raises_only_when_the_bytes_overflow():
    # The last element 2**62 fits in int64; its byte count does for bool, not for float32.
    with pytest.raises(
        ValueError, match=rf"^tensor extent in bytes overflows int64 \({2**62 + 1} \* 4\)$"
    ):
        make_impl(4, (2,), (2**62,)).validate()
    with pytest.raises(Error, match=f"needs {2**62 + 1} bytes but storage has 4$") as info:
        make_impl(4, (2,), (2**62,), dtype=BOOL).validate()
    assert not isinstance(info.value, ValueError)


def test_offset_at_int64_max_overflows():
    with pytest.raises(ValueError, match=rf"^tensor extent overflows int64 \({INT64_MAX} \+ 1\)$"):
        make_impl(4, (1,), (1,), offset=INT64_MAX).validate()


def test_element_count_overflow_raises():
    with pytest.raises(
        ValueError, match=rf"^tensor element count overflows int64 \({2**40} \* {2**40}\)$"
    ):
        make_impl(4, (2**40, 2**40), (0, 0)).validate()
    with pytest.raises(RuntimeError, match="overflow"):
        torch.empty(1).expand(2**40, 2**40).contiguous()


def test_values_beyond_int64_are_rejected():
    with pytest.raises(ValueError, match="dimension 9223372036854775808 in shape"):
        make_impl(0, (2**63, 0), (1, 1)).validate()
    with pytest.raises(
        ValueError, match="int64 overflow in stride 9223372036854775808 at dimension 0"
    ):
        make_impl(4, (1,), (2**63,)).validate()
    with pytest.raises(ValueError, match="int64 overflow in storage offset"):
        make_impl(0, (0,), (1,), offset=2**63).validate()


def test_negative_stride_raises():
    with pytest.raises(ValueError, match=r"^negative stride -1 at dimension 0 in strides \[-1\]$"):
        make_impl(12, (3,), (-1,), offset=2).validate()


def test_negative_offset_raises():
    with pytest.raises(ValueError, match="^negative storage offset -1$"):
        make_impl(12, (2,), (1,), offset=-1).validate()


def test_shape_and_strides_of_different_length_raise():
    with pytest.raises(
        ValueError, match=r"^shape \[2, 3\] and strides \[1\] have different number of dimensions$"
    ):
        make_impl(24, (2, 3), (1,)).validate()


def test_negative_dimension_raises():
    with pytest.raises(ValueError, match=r"^negative dimension -1 in shape \[2, -1\]$"):
        make_impl(24, (2, -1), (1, 1)).validate()


def test_device_mismatch_raises():
    with pytest.raises(Error, match="^tensor device cuda:0 does not match storage device cpu$"):
        make_impl(8, (2,), (1,), device=CUDA).validate()


def test_missing_storage_raises():
    with pytest.raises(Error, match="^tensor has no storage$"):
        TensorImpl(None, (2,), (1,), 0, F32, CPU).validate()


# Each case breaks its own rule and every later one; the earliest rule must be reported.
RULES_IN_ORDER = [
    ("tensor has no storage", dict(storage=None, shape=(2, -1), strides=(1,), offset=-1)),
    ("negative dimension", dict(shape=(2, -1), strides=(1,), offset=-1, device=CUDA)),
    ("different number of dimensions", dict(shape=(2, 2), strides=(-1,), offset=-1, device=CUDA)),
    ("negative stride", dict(shape=(2,), strides=(-1,), offset=-1, device=CUDA)),
    ("negative storage offset", dict(shape=(9,), strides=(1,), offset=-1, device=CUDA)),
    ("does not match storage device", dict(shape=(9,), strides=(1,), offset=0, device=CUDA)),
    ("needs 36 bytes but storage has 4", dict(shape=(9,), strides=(1,), offset=0)),
]


@pytest.mark.parametrize(("message", "fields"), RULES_IN_ORDER, ids=[m for m, _ in RULES_IN_ORDER])
def test_rules_are_checked_in_order(message, fields):
    args = dict(storage=Storage(4), dtype=F32, device=CPU) | fields
    impl = TensorImpl(
        args["storage"],
        args["shape"],
        args["strides"],
        args["offset"],
        args["dtype"],
        args["device"],
    )
    with pytest.raises(Error, match=message):
        impl.validate()


CONTIGUITY_CASES = [
    ((2, 3), (3, 1)),
    ((3, 2), (1, 3)),
    ((2, 1, 3), (3, 99, 1)),
    ((1, 4), (1, 1)),
    ((4, 1), (1, 7)),
    ((2, 3), (4, 1)),
    ((2, 0, 3), (9, 9, 9)),
    ((0,), (5,)),
    ((), ()),
    ((5,), (0,)),
    ((1,), (0,)),
    ((2, 2), (2, 2)),
    ((3, 1, 1), (1, 1, 1)),
]


@pytest.mark.parametrize(("shape", "strides"), CONTIGUITY_CASES, ids=str)
def test_is_contiguous_matches_torch(shape, strides):
    reference = torch.empty_strided(shape, strides)
    impl = TensorImpl(Storage(0), shape, strides, 0, F32, CPU)
    assert impl.is_contiguous() == reference.is_contiguous()


def test_offset_does_not_affect_contiguity():
    impl = make_impl(40, (2, 3), (3, 1), offset=4)
    assert impl.is_contiguous() and torch.empty(10).as_strided((2, 3), (3, 1), 4).is_contiguous()


@pytest.mark.parametrize(
    "shape", [(), (5,), (2, 3), (2, 3, 4), (2, 0, 3), (0,), (1, 1), (7, 1, 5)], ids=str
)
def test_contiguous_strides_match_torch(shape):
    assert contiguous_strides(shape) == torch.empty(shape).stride()


@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (2, 0, 3), (3, 1, 4)], ids=str)
@pytest.mark.parametrize("dtype", dtypes.ALL_DTYPES, ids=str)
def test_numel_dim_nbytes_match_torch(shape, dtype):
    reference = torch.empty(shape, dtype=getattr(torch, dtype.name))
    impl = TensorImpl(Storage(reference.nbytes), shape, contiguous_strides(shape), 0, dtype, CPU)
    impl.validate()
    assert (impl.numel(), impl.dim(), impl.nbytes()) == (
        reference.numel(),
        reference.dim(),
        reference.nbytes,
    )


def test_nbytes_is_the_elements_not_the_storage():
    impl = make_impl(4000, (2,), (1,), offset=10)
    assert impl.nbytes() == torch.empty(1000).as_strided((2,), (1,), 10).nbytes


@pytest.mark.parametrize(("dtype", "offset"), [(F32, 3), (F64, 1), (BOOL, 5), (I64, 0)], ids=str)
def test_data_ptr_respects_offset(dtype, offset):
    impl = make_impl(80, (2,), (1,), offset=offset, dtype=dtype)
    base = torch.empty(10, dtype=getattr(torch, dtype.name))
    view = base.as_strided((2,), (1,), offset)
    assert impl.data_ptr() - impl.storage.ptr == view.data_ptr() - base.data_ptr()


def test_data_ptr_of_an_empty_tensor_is_the_storage_address():
    impl = make_impl(0, (0,), (1,), offset=7)
    assert impl.data_ptr() == impl.storage.ptr == 0
    impl = make_impl(40, (2, 0), (1, 1), offset=100)
    assert impl.data_ptr() == impl.storage.ptr != 0


def test_fields_are_tuples_of_ints():
    impl = TensorImpl(Storage(24), [2, 3], [3, 1], 0, F32, CPU)
    assert impl.shape == (2, 3) and type(impl.shape) is tuple and type(impl.strides) is tuple
    with pytest.raises(AttributeError):
        impl.extra = 1


def test_checked_mul_both_sides_of_the_limit():
    assert checked_mul(2**62, 1, "x") == 2**62
    assert checked_mul(INT64_MAX, 1, "x") == INT64_MAX
    with pytest.raises(ValueError, match=rf"^x overflows int64 \({2**62} \* 2\)$"):
        checked_mul(2**62, 2, "x")
    with pytest.raises(ValueError, match="negative operand"):
        checked_mul(-1, 2, "x")


def test_checked_add_both_sides_of_the_limit():
    assert checked_add(INT64_MAX - 1, 1, "x") == INT64_MAX
    assert checked_add(-(2**63) + 1, -1, "x") == -(2**63)
    with pytest.raises(ValueError, match=rf"^x overflows int64 \({INT64_MAX} \+ 1\)$"):
        checked_add(INT64_MAX, 1, "x")
    with pytest.raises(ValueError, match="overflows int64"):
        checked_add(-(2**63), -1, "x")


def test_shape_numel_both_sides_of_the_limit():
    assert shape_numel(()) == 1
    assert shape_numel((3, 0)) == 0
    assert shape_numel((2**62, 1)) == 2**62
    assert shape_numel((INT64_MAX,)) == INT64_MAX
    with pytest.raises(
        ValueError, match=rf"^tensor element count overflows int64 \({2**62} \* 2\)$"
    ):
        shape_numel((2**62, 2))


def test_shape_numel_checks_every_step_like_torch():
    # A zero after an overflowing prefix still overflows, as in PyTorch's size computation.
    with pytest.raises(ValueError, match="overflows int64"):
        shape_numel((2**40, 2**40, 0))
    with pytest.raises(RuntimeError, match="overflow"):
        torch.empty(2**40, 2**40, 0)
    assert shape_numel((0, 2**40, 2**40)) == torch.Size((0, 2**40, 2**40)).numel()


def test_validate_shape():
    validate_shape((2, 0, 3))
    with pytest.raises(ValueError, match=r"^negative dimension -1 in shape \[2, -1\]$"):
        validate_shape((2, -1))


def test_validate_allows_64_dims_and_refuses_65_first():
    # NumPy's limit, which item, tolist, printing and numpy() go through; checked before the
    # other shape rules, so even an otherwise wrong 65-d layout names the rank.
    make_impl(4, (1,) * 64, (1,) * 64).validate()
    with pytest.raises(ValueError, match="^a tensor can have at most 64 dimensions, got 65$"):
        make_impl(4, (1,) * 65, (1,) * 65).validate()
    with pytest.raises(ValueError, match="at most 64 dimensions, got 70$"):
        make_impl(4, (-1,) * 70, (1,) * 3).validate()
    with pytest.raises(ValueError, match="at most 64 dimensions, got 65$"):
        validate_shape((1,) * 65)


@pytest.mark.parametrize(("dims", "text"), [((2, 3), "[2, 3]"), ((), "[]"), ((5,), "[5]")])
def test_format_shape(dims, text):
    assert format_shape(dims) == text
    assert format_shape(list(dims)) == text


def test_of_tuples_builds_the_same_impl_as_the_constructor():
    s = Storage(48)
    fields = (s, (2, 3), (3, 1), 1, dtypes.float32, CPU)
    made, plain = TensorImpl.of_tuples(*fields), TensorImpl(*fields)
    assert [getattr(made, f) for f in TensorImpl.__slots__] == [
        getattr(plain, f) for f in TensorImpl.__slots__
    ]


# ---- read hazards --------------------------------------------------------------------------------


def _twin(storage: Storage, shift_bytes: int = 0) -> Storage:
    """A second Storage object over `storage`'s memory (as two from_numpy of one array)."""
    return Storage.external(storage.ptr + shift_bytes, storage.nbytes - shift_bytes, storage)


@pytest.mark.parametrize(
    "src_of, expected",
    [
        (lambda s: TensorImpl(s, (4, 4), (4, 1), 0, F32, CPU), False),  # itself: same places
        (lambda s: TensorImpl(s, (4, 4), (1, 4), 0, F32, CPU), True),  # its transpose
        (lambda s: TensorImpl(_twin(s), (4, 4), (4, 1), 0, F32, CPU), False),  # twin, same places
        (lambda s: TensorImpl(_twin(s), (4, 4), (1, 4), 0, F32, CPU), True),  # twin, transposed
        (lambda s: TensorImpl(_twin(s, 4), (3, 4), (4, 1), 0, F32, CPU), True),  # twin, shifted
        (lambda s: TensorImpl(Storage(64), (4, 4), (1, 4), 0, F32, CPU), False),  # apart
    ],
    ids=["self", "transpose", "twin", "twin_transposed", "twin_shifted", "apart"],
)
def test_read_hazard_is_told_by_memory_not_storage_identity(src_of, expected):
    dst = TensorImpl(Storage(64), (4, 4), (4, 1), 0, F32, CPU)
    assert read_hazard(src_of(dst.storage), dst) is expected


def test_a_twin_reaching_the_same_bytes_from_another_start_is_no_hazard():
    storage = Storage(64)
    dst = TensorImpl(storage, (3, 4), (4, 1), 4, F32, CPU)  # rows 1-3
    src = TensorImpl(_twin(storage, 16), (3, 4), (4, 1), 0, F32, CPU)  # the same rows
    assert read_hazard(src, dst) is False
    wider = TensorImpl(_twin(storage, 16), (3, 4), (4, 1), 0, dtypes.float64, CPU)
    assert read_hazard(wider, dst) is True  # other element widths: other places


def _bytes_of(t: TensorImpl) -> set[int]:
    """Every byte of t's elements, from its storage's start: the reference overlap test."""
    size = t.dtype.itemsize
    spans = itertools.product(*(range(n) for n in t.shape))
    starts = {(t.offset + sum(i * s for i, s in zip(at, t.strides))) * size for at in spans}
    return {start + k for start in starts for k in range(size)}


def _view(storage, shape, strides, offset=0, dtype=F32) -> TensorImpl:
    return TensorImpl(storage, shape, strides, offset, dtype, CPU)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (((4,), (2,), 0), ((4,), (2,), 1), False),  # x[::2] and x[1::2]
        (((3,), (2,), 0), ((3,), (2,), 2), True),  # x[0:6:2] and x[2:8:2]
        (((4,), (1,), 0), ((4,), (1,), 4), False),  # x[:4] and x[4:]
        (((4,), (1,), 0), ((4,), (1,), 2), True),  # x[:4] and x[2:6]
        (((3, 2), (4, 1), 0), ((3, 2), (4, 1), 2), False),  # the column halves of [3, 4]
        (((3, 2), (4, 1), 0), ((3, 2), (4, 1), 1), True),  # columns 0-1 and 1-2
        (((3,), (4,), 0), ((3,), (4,), 1), False),  # two columns of [3, 4]
        (((3,), (4,), 0), ((2, 2), (2, 1), 8), True),  # a column, a block with its last
        (((2, 2), (1, 2), 0), ((4,), (1,), 0), True),  # a transpose and its rows
        (((4,), (3,), 0), ((4,), (5,), 1), True),  # 6 = 3 * 2 = 1 + 5 * 1
        (((4,), (3,), 0), ((2,), (6,), 1), False),  # 3i never 1 + 6j
        (((4,), (0,), 5), ((4,), (2,), 0), False),  # expanded element 5 among the evens
    ],
)
def test_overlapping_is_exact_for_strided_views_of_one_storage(a, b, expected):
    storage = Storage(256)
    a, b = _view(storage, *a), _view(storage, *b)
    assert overlapping(a, b) is expected is bool(_bytes_of(a) & _bytes_of(b))
    assert overlapping(b, a) is expected


def test_overlapping_counts_bytes_across_dtypes_and_twin_storages():
    storage = Storage(256)
    halves = _view(storage, (4,), (2,), 1, dtypes.int16)  # bytes 2-3, 6-7, ...
    assert overlapping(halves, _view(storage, (4,), (1,), 0, F32))  # every float32 holds two
    assert not overlapping(halves, _view(storage, (8,), (4,), 0, dtypes.int8))  # bytes 0, 4, ..
    assert overlapping(halves, _view(storage, (8,), (4,), 3, dtypes.int8))  # bytes 3, 7, ...
    twin = _twin(storage, 4)  # its element 0 is storage's element 1
    assert not overlapping(_view(storage, (4,), (2,), 0), _view(twin, (4,), (2,), 0))
    assert overlapping(_view(storage, (4,), (2,), 1), _view(twin, (4,), (2,), 0))


def test_overlapping_agrees_with_the_bytes_of_random_views():
    rng = random.Random(7)
    storage = Storage(1024)

    def view() -> TensorImpl:
        dtype = rng.choice([F32, dtypes.int8, F64, dtypes.int16])
        shape = tuple(rng.randint(0, 4) for _ in range(rng.randint(0, 3)))
        strides = tuple(rng.choice([0, 1, 2, 3, 4, 6, 8, 12]) for _ in shape)
        return _view(storage, shape, strides, rng.randint(0, 24), dtype)

    for _ in range(3000):
        a, b = view(), view()
        assert overlapping(a, b) is bool(_bytes_of(a) & _bytes_of(b)), (a, b)


def test_overlapping_answers_true_when_the_search_runs_out(monkeypatch):
    storage = Storage(64)
    apart = _view(storage, (3,), (5,), 0, dtypes.int8), _view(storage, (3,), (3,), 1, dtypes.int8)
    assert not overlapping(*apart)  # 5i == 1 + 3j has no solution below 3: a search tells
    monkeypatch.setattr(tensor_impl, "OVERLAP_SEARCH_STEPS", 1)
    assert overlapping(*apart)  # conservative: a refusal, never a missed overlap
