"""Factories: shapes, dtype inference, values and every rejected input, against PyTorch."""

import array
import math
import re
import warnings

import numpy as np
import pytest
import torch
from kernel_helpers import TORCH_DTYPES

import kael
from kael.runtime.dtypes import INT64_MAX, INT64_MIN


@pytest.mark.parametrize("name", ["empty", "zeros", "ones"])
@pytest.mark.parametrize("size", [(2, 3), ((2, 3),), ([2, 3],), ((),), (0, 4), (5,)])
def test_sized_factories_match_torch_layout(name, size, like_torch):
    k, t = getattr(kael, name)(*size), getattr(torch, name)(*size)
    assert k.dtype is kael.float32
    if name == "empty":
        assert (k.shape, k.strides(), k.storage_offset()) == (t.shape, t.stride(), 0)
    else:
        like_torch(k, t)


@pytest.mark.parametrize("dtype", [kael.float64, kael.int64, kael.bool])
def test_zeros_and_ones_take_a_dtype(dtype, like_torch, torch_dtype):
    like_torch(kael.zeros(2, dtype=dtype), torch.zeros(2, dtype=torch_dtype(dtype)))
    like_torch(kael.ones(2, dtype=dtype), torch.ones(2, dtype=torch_dtype(dtype)))


def test_negative_size_raises_naming_the_shape():
    assert kael.zeros(2, 0).shape == (2, 0)
    with pytest.raises(kael.ValueError, match=r"negative dimension -1: \[2, -1\]"):
        kael.zeros(2, -1)


def test_non_integer_size_raises_type_error():
    with pytest.raises(kael.TypeError, match="got float"):
        kael.zeros(2.0)


def test_byte_count_overflow_raises_value_error():
    with pytest.raises(kael.ValueError, match=r"tensor size in bytes overflows int64"):
        kael.empty(2**61, 2, dtype=kael.float64)
    with pytest.raises(kael.ValueError, match="overflows int64"):
        kael.empty(2**62, 4)


def test_largest_byte_count_is_not_an_overflow():
    # 2**59 float64 values need 2**62 bytes: no int64 overflow, just more memory than exists.
    with pytest.raises(kael.Error) as error:
        kael.empty(2**59, dtype=kael.float64)
    assert "overflows" not in str(error.value)


def test_zero_sized_tensors_allocate_nothing():
    assert kael.zeros(3, 0, 2)._impl.storage.nbytes == 0


@pytest.mark.parametrize("value", [3, 2.5, True, -7])
def test_full_infers_the_dtype_from_the_value_like_torch(value, like_torch):
    like_torch(kael.full((2, 2), value), torch.full((2, 2), value))


def test_full_converts_the_value_to_an_explicit_dtype():
    assert kael.full((2,), 2.5, dtype=kael.bool).tolist() == [True, True]
    assert kael.full((2,), -2.7, dtype=kael.int64).tolist() == [-2, -2]
    assert kael.full(3, 1.0).shape == (3,)


def test_full_rejects_a_non_number():
    with pytest.raises(kael.TypeError, match="fill_value must be a number, got str"):
        kael.full((2,), "a")


@pytest.mark.parametrize("name", ["empty_like", "zeros_like", "ones_like"])
def test_like_factories_copy_shape_dtype_device_and_a_dense_layout(name, like_torch):
    base, torch_base = kael.arange(6).view(2, 3).T, torch.arange(6).view(2, 3).T
    result = getattr(kael, name)(base)
    assert (result.shape, result.dtype, result.device) == (base.shape, base.dtype, base.device)
    assert result.strides() == getattr(torch, name)(torch_base).stride() == (1, 3)  # preserved
    assert getattr(kael, name)(base, memory_format=kael.contiguous_format).strides() == (2, 1)
    assert not result.shares_storage(base)
    if name != "empty_like":
        like_torch(result, getattr(torch, name)(torch_base))


LIKE_FACTORIES = {
    "empty_like": (),
    "zeros_like": (),
    "ones_like": (),
    "full_like": (3.0,),
    "rand_like": (),
    "randn_like": (),
}


@pytest.mark.parametrize("value", [[1.0, 2.0], None, 2.0, np.zeros(2)], ids=repr)
@pytest.mark.parametrize("name", list(LIKE_FACTORIES))
def test_like_factories_refuse_a_non_tensor_naming_it(name, value):
    with pytest.raises(TypeError):
        getattr(torch, name)(value, *LIKE_FACTORIES[name])
    kind = type(value).__name__
    with pytest.raises(kael.TypeError, match=rf"^{name}\(\): input must be a Tensor, got {kind}$"):
        getattr(kael, name)(value, *LIKE_FACTORIES[name])


@pytest.mark.parametrize("name", list(LIKE_FACTORIES))
def test_like_factories_take_input_by_keyword_like_torch(name):
    extra = {"fill_value": 3.0} if name == "full_like" else {}
    result = getattr(kael, name)(input=kael.zeros(2, 3), **extra)
    assert result.shape == tuple(getattr(torch, name)(input=torch.zeros(2, 3), **extra).shape)


def test_like_factories_take_a_dtype():
    assert kael.zeros_like(kael.zeros(2), dtype=kael.int64).tolist() == [0, 0]
    assert kael.full_like(kael.zeros(2), 7, dtype=kael.int64).tolist() == [7, 7]
    assert kael.full_like(kael.zeros(2, dtype=kael.int64), 2.9).tolist() == [2, 2]


@pytest.mark.parametrize(
    "args",
    [(5,), (0, 5, 2), (0, 6, 2), (5, 0, -1), (-3, 4), (0,), (2, 2), (0.0, 1.0, 0.1), (1.5,)],
)
def test_arange_matches_torch(args, like_torch):
    like_torch(kael.arange(*args), torch.arange(*args))


@pytest.mark.parametrize("dtype", [kael.float32, kael.float64])
def test_arange_float_values_are_start_plus_index_times_step(dtype, torch_dtype):
    k = kael.arange(-5.0, 100.0, 0.1, dtype=dtype)
    t = torch.arange(-5.0, 100.0, 0.1, dtype=torch_dtype(dtype))
    assert k.shape == tuple(t.shape)
    rtol, atol = (1e-5, 1e-6) if dtype is kael.float32 else (1e-12, 1e-14)
    np.testing.assert_allclose(k.numpy(), t.numpy(), rtol=rtol, atol=atol)


def test_arange_infers_int64_only_when_every_bound_is_an_int():
    assert kael.arange(5).dtype is kael.int64
    assert kael.arange(0, 5, 1).dtype is kael.int64
    assert kael.arange(0, 5, 1.0).dtype is kael.float32
    assert kael.arange(5.0).dtype is kael.float32


def test_arange_integer_dtype_truncates_start_and_step_but_counts_untruncated():
    # API.md: the book's rule, where PyTorch 2.13 gives three elements.
    assert kael.arange(0.5, 3.5, 1.5, dtype=kael.int64).tolist() == [0, 1]
    assert kael.arange(-0.5, 2.0, 1.0, dtype=kael.int64).tolist() == [0, 1, 2]


def test_arange_with_exact_ints_counts_exactly_beyond_float_precision():
    start = 2**60
    assert kael.arange(start, start + 3).tolist() == [start, start + 1, start + 2]


@pytest.mark.parametrize(
    "args",
    [(7,), (3, 17, 4), (9, -4, -3), (INT64_MAX - 2, INT64_MAX), (INT64_MIN, INT64_MIN + 5, 2)],
)
def test_arange_of_ints_gives_torchs_values_call_after_call(args):
    first, again = kael.arange(*args), kael.arange(*args)  # again: the fast door's kept launch
    assert first.tolist() == again.tolist() == torch.arange(*args).tolist()
    assert again.dtype is kael.int64 and first.data_ptr() != again.data_ptr()


def _full_door(*args):
    raise AssertionError("the full door ran")


def test_arange_of_ints_skips_the_full_door_up_to_the_inline_size(monkeypatch):
    from kael.frontend import eager, fastpath

    kael.arange(3)  # the door keeps the launch
    limit = fastpath._entries[fastpath._ARANGE].limit  # below streaming stores' size
    inline = fastpath.PARALLEL_BYTES // 8 if kael.get_num_threads() > 1 else limit + 1
    n = min(limit + 1, inline)  # the first count the door leaves to the full door
    monkeypatch.setattr(eager, "arange_into", _full_door)
    np.testing.assert_array_equal(kael.arange(n - 1).numpy(), np.arange(n - 1))
    down = kael.arange(5, -n + 6, -1)  # n - 1 values, counting down
    np.testing.assert_array_equal(down.numpy(), np.arange(5, -n + 6, -1))
    with pytest.raises(AssertionError, match="full door"):
        kael.arange(n)
    with pytest.raises(AssertionError, match="full door"):
        kael.arange(3, dtype=kael.int64)  # a dtype= takes the full door


def test_arange_rejects_bool_dtype():
    with pytest.raises(kael.TypeError, match="arange does not support dtype bool"):
        kael.arange(3, dtype=kael.bool)


@pytest.mark.parametrize("bounds", [(0, math.inf), (-math.inf, 0), (0, math.nan), (0, 1, math.nan)])
def test_arange_rejects_non_finite_values_naming_them(bounds):
    with pytest.raises(kael.ValueError, match=r"arange needs finite values, got start="):
        kael.arange(*bounds)


def test_arange_rejects_a_zero_step():
    with pytest.raises(kael.ValueError, match="step must be non-zero, got step=0"):
        kael.arange(0, 5, 0)


def test_arange_rejects_a_step_pointing_away_from_end():
    assert kael.arange(5, 0, -2).tolist() == torch.arange(5, 0, -2).tolist()
    with pytest.raises(kael.ValueError, match=r"step 1 points away from end: start=5, end=0"):
        kael.arange(5, 0, 1)
    with pytest.raises(kael.ValueError, match=r"step -1 points away from end: start=0, end=5"):
        kael.arange(0, 5, -1)


def test_arange_rejects_non_numbers():
    with pytest.raises(kael.TypeError, match="end must be a number, got str"):
        kael.arange(0, "5")


@pytest.mark.parametrize("args", [(0, 1, 5), (-3.3, 7.1, 13), (3, 7, 1), (0, 1, 0), (5, -5, 4)])
def test_linspace_matches_torch(args):
    k, t = kael.linspace(*args), torch.linspace(*args)
    assert k.dtype is kael.float32
    assert k.shape == tuple(t.shape)
    np.testing.assert_array_equal(k.numpy(), t.numpy())


@pytest.mark.parametrize("dtype", [d for d in TORCH_DTYPES if d is not kael.bool], ids=str)
def test_linspace_computes_from_both_ends_as_torch_bit_for_bit(dtype):
    # PyTorch: start + step * i below steps // 2, end - step * (steps - 1 - i) above, each a
    # fused multiply-add; integers truncate start and end first.
    rng = np.random.default_rng(11)
    for _ in range(40):
        a, b = rng.uniform(-100, 100, 2) if dtype.signed else rng.uniform(0, 250, 2)
        steps = int(rng.choice([2, 3, 7, 400, 1001]))
        k = kael.linspace(a, b, steps, dtype=dtype)
        t = torch.linspace(a, b, steps, dtype=TORCH_DTYPES[dtype])
        assert k.tolist() == t.tolist(), (a, b, steps)


def test_linspace_of_infinite_ends_is_nan_as_torch():
    k, t = kael.linspace(0, math.inf, 3), torch.linspace(0, math.inf, 3)
    np.testing.assert_array_equal(k.numpy(), t.numpy())


def test_linspace_last_value_is_exactly_end():
    for steps in (2, 7, 13, 1000):
        assert kael.linspace(-3.3, 7.1, steps, dtype=kael.float64)[-1].item() == 7.1


def test_linspace_with_one_step_is_only_start():
    assert kael.linspace(3.0, 7.0, 1).tolist() == [3.0]


def test_linspace_refuses_bool_as_torch():
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        torch.linspace(0, 1, 3, dtype=torch.bool)
    with pytest.raises(kael.TypeError, match="does not support dtype bool"):
        kael.linspace(0, 1, 3, dtype=kael.bool)


def test_linspace_steps_must_be_non_negative():
    assert kael.linspace(0, 1, 0).shape == (0,)
    with pytest.raises(kael.ValueError, match="steps must be non-negative, got -1"):
        kael.linspace(0, 1, -1)


@pytest.mark.parametrize("args", [(3,), (2, 4), (4, 2), (0,), (1, 0)])
def test_eye_matches_torch(args, like_torch):
    like_torch(kael.eye(*args), torch.eye(*args))
    like_torch(kael.eye(*args, dtype=kael.int64), torch.eye(*args, dtype=torch.int64))
    for kd, td in ((kael.complex64, torch.complex64), (kael.complex128, torch.complex128)):
        got = kael.eye(*args, dtype=kd)
        assert got.dtype is kd and got.tolist() == torch.eye(*args, dtype=td).tolist()


@pytest.mark.parametrize("dtype", [None, kael.int32, kael.complex64], ids=str)
def test_eye_writes_out_in_its_dtype_as_torch(dtype):
    """out is resized to n x m and takes the identity in its own dtype (or a matching
    dtype= ); a different dtype= is refused."""
    kind = dtype or kael.float32
    out = kael.empty(1, dtype=kind)
    with pytest.warns(UserWarning, match="resized"):
        assert kael.eye(3, 2, out=out, dtype=dtype) is out
    want = torch.eye(3, 2, dtype=getattr(torch, str(kind).split(".")[-1]))
    assert out.dtype is kind and out.tolist() == want.tolist()
    with pytest.raises(kael.TypeError, match="out has dtype"):
        kael.eye(2, out=kael.empty(2, 2, dtype=kael.float64), dtype=kael.int64)


def test_eye_rejects_negative_sizes():
    with pytest.raises(kael.ValueError, match="n must be greater or equal to 0, got -1"):
        kael.eye(-1)
    with pytest.raises(kael.ValueError, match="m must be greater or equal to 0, got -2"):
        kael.eye(2, -2)


def test_scalar_tensor_is_0d_float32_by_default_like_torch(like_torch):
    like_torch(kael.scalar_tensor(3), torch.scalar_tensor(3))
    like_torch(
        kael.scalar_tensor(2.5, dtype=kael.int64), torch.scalar_tensor(2.5, dtype=torch.int64)
    )


@pytest.mark.parametrize(
    "data",
    [
        [1, 2, 3],
        [1.5, 2],
        [True, False],
        [True, 2],
        [[1, 2], [3, 4]],
        [],
        [[], []],
        3.5,
        7,
        False,
        ((1, 2), (3, 4)),
        [[[0.25]]],
        [np.float32(1.5), np.int64(2)],
    ],
)
def test_tensor_infers_shape_and_dtype_like_torch(data, like_torch):
    like_torch(kael.tensor(data), torch.tensor(data))


@pytest.mark.parametrize(
    "data",
    [
        lambda lib: [lib.tensor(1, dtype=lib.int32)],  # a 0-d tensor keeps its dtype
        lambda lib: [lib.tensor(0.1, dtype=lib.float64)],  # and its value, unrounded
        lambda lib: [lib.tensor(1.0, dtype=lib.float16), 2],
        lambda lib: [lib.tensor(1, dtype=lib.int32), 5],  # int32 with an int: int64
        lambda lib: [lib.tensor(1, dtype=lib.int32), 5.0],
        lambda lib: [lib.tensor([1.0]), lib.tensor([2.0])],  # one-element tensors: scalars
        lambda lib: [lib.tensor([[True]]), lib.tensor([False])],
        lambda lib: range(3),
        lambda lib: [range(2), range(2)],
        lambda lib: array.array("d", [1.5, 2]),  # Python numbers: the default float dtype
        lambda lib: array.array("i", [1, 2]),
    ],
)
def test_tensor_reads_tensors_ranges_and_arrays_in_sequences_as_torch(data, like_torch):
    like_torch(kael.tensor(data(kael)), torch.tensor(data(torch)))


def test_tensor_refuses_a_many_element_tensor_as_an_element():
    with pytest.raises(ValueError, match="only one element tensors"):
        torch.tensor([torch.ones(2)])
    with pytest.raises(kael.ValueError, match=r"only one element.*position \[1\] has shape \[2\]"):
        kael.tensor([kael.ones(1), kael.ones(2)])


@pytest.mark.parametrize("kind", [bool, int, float, complex])
def test_python_types_are_dtypes_as_torch_takes_them(kind):
    for make in (
        lambda lib: lib.zeros(2, dtype=kind),
        lambda lib: lib.arange(3).to(kind),
        lambda lib: lib.tensor([1, 0], dtype=kind),
    ):
        got, want = make(kael), make(torch)
        assert str(got.dtype) == str(want.dtype).removeprefix("torch.")
        assert got.tolist() == want.tolist()
    with pytest.raises(kael.TypeError, match="expected a kael dtype, got <class 'str'>"):
        kael.zeros(2, dtype=str)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.tensor([1j, 2]).sum(dtype=complex),
        lambda lib: lib.tensor([1j, 2]).mean(dtype=complex),
        lambda lib: lib.ones(2, dtype=lib.int32).sum(dtype=complex),
        lambda lib: lib.tensor([[1.0, 2]]).sum(1, dtype=float),
        lambda lib: lib.linalg.norm(lib.tensor([[1.0, 2]]), dtype=float),
        lambda lib: lib.linalg.matrix_norm(lib.tensor([[1.0, 2]]), dtype=float),
        lambda lib: lib.tensor([1 + 1j], dtype=complex),
        lambda lib: lib.ones(2).view(int),
        lambda lib: lib.ones(3).type("torch.ComplexFloatTensor"),
    ],
)
def test_python_types_reach_every_dtype_argument_as_torch(call):
    got, want = call(kael), call(torch)
    assert str(got.dtype) == str(want.dtype).removeprefix("torch.")
    assert got.shape == tuple(want.shape)


def test_finfo_and_iinfo_take_python_types_as_torch():
    assert kael.finfo(float).eps == torch.finfo(float).eps
    assert kael.iinfo(int).max == torch.iinfo(int).max


def test_tensor_reports_a_ragged_sequence_with_its_position():
    with pytest.raises(
        kael.ValueError, match=r"expected sequence of length 2 at dim 1 \(got 1\) at position \[1\]"
    ):
        kael.tensor([[1, 2], [3]])
    with pytest.raises(kael.ValueError, match=r"position \[1\]"):
        kael.tensor([[1, 2], 3])
    with pytest.raises(kael.ValueError, match=r"expected a number at position \[1, 0\]"):
        kael.tensor([[1], [[2]]])


def test_tensor_rejects_non_numbers_naming_the_position():
    with pytest.raises(kael.TypeError, match=r"got str at position \[0, 1\]"):
        kael.tensor([[1, "a"]])
    with pytest.raises(kael.TypeError, match=r"got NoneType at position \[\]"):
        kael.tensor(None)


def test_tensor_accepts_ints_at_the_int64_limits_and_rejects_beyond():
    assert kael.tensor([INT64_MIN, INT64_MAX]).tolist() == [INT64_MIN, INT64_MAX]
    with pytest.raises(kael.ValueError, match=rf"value {INT64_MAX + 1} at position \[1\]"):
        kael.tensor([0, INT64_MAX + 1])
    with pytest.raises(kael.ValueError, match=rf"value {INT64_MIN - 1} at position \[0, 0\]"):
        kael.tensor([[INT64_MIN - 1]])


def _nested(depth: int) -> list:
    data = [1.5]
    for _ in range(depth - 1):
        data = [data]
    return data


def test_tensor_of_data_nested_64_deep_works_and_deeper_is_a_value_error():
    # The walk over nested data recurses once per dim: the rank is checked before it, so
    # data nested thousands deep is a kael.ValueError, not a RecursionError.
    t = kael.tensor(_nested(64))
    assert t.shape == tuple(torch.tensor(_nested(64)).shape) == (1,) * 64
    for depth in (65, 5000):
        with pytest.raises(kael.ValueError, match=f"at most 64 dimensions, got {depth}$"):
            kael.tensor(_nested(depth))


def test_tensor_packs_big_ints_as_floats_when_a_float_is_present_like_torch(like_torch):
    like_torch(kael.tensor([1.5, 2**70]), torch.tensor([1.5, 2**70]))


def test_tensor_conversion_follows_the_kernels_rules():
    assert kael.tensor([2.5, 0.0, math.nan], dtype=kael.bool).tolist() == [True, False, True]
    assert kael.tensor([2, 0, -1], dtype=kael.bool).tolist() == [True, False, True]
    saturated = kael.tensor([1e30, -math.inf, math.nan, -2.7], dtype=kael.int64).tolist()
    assert saturated == [INT64_MAX, INT64_MIN, 0, -2]


def test_tensor_copies_numpy_arrays_and_keeps_their_dtype(like_torch):
    arr = np.arange(6, dtype=np.float64).reshape(2, 3)[:, ::2]
    k = kael.tensor(arr)
    like_torch(k, torch.tensor(arr))
    arr[0, 0] = 99.0
    assert k[0, 0].item() == 0.0


def test_tensor_reads_numpy_layouts_and_dtypes_it_cannot_share(like_torch):
    reversed_ = np.arange(4, dtype=np.float32)[::-1]
    like_torch(kael.tensor(reversed_), torch.tensor(reversed_.copy()))
    for np_dtype in (np.int32, np.int16, np.int8, np.uint8, np.float16):
        arr = np.array([1, 2], dtype=np_dtype)[::-1]
        like_torch(kael.tensor(arr), torch.tensor(arr.copy()))
    uint32 = np.array([1, 7], dtype=np.uint32)  # kael has no uint32 (torch 2.13 does): int64
    assert kael.tensor(uint32).dtype is kael.int64
    assert kael.tensor(uint32).tolist() == [1, 7]


def test_tensor_copies_a_tensor():
    a = kael.ones(3)
    b = kael.tensor(a)
    assert not b.shares_storage(a)
    assert b.tolist() == [1.0, 1.0, 1.0]
    assert kael.tensor(a, dtype=kael.int64).tolist() == [1, 1, 1]


def test_device_keyword_takes_cpu_strings_and_rejects_unknown_names():
    assert kael.zeros(2, device="cpu").device == kael.device("cpu")
    assert kael.tensor([1], device=kael.device("cpu")).device == kael.device("cpu")
    with pytest.raises(kael.ValueError, match="unknown device 'gpu'"):
        kael.ones(2, device="gpu")


@pytest.mark.skipif(kael.cuda.is_available(), reason="checks the no-GPU error")
@pytest.mark.parametrize(
    "make", [lambda: kael.zeros(2, device="cuda"), lambda: kael.empty(0, device="cuda:0")]
)
def test_cuda_factories_without_a_gpu_raise_a_clear_error(make):
    with pytest.raises(kael.Error, match="CUDA is not available"):
        make()


@pytest.mark.parametrize("factory", [kael.empty, kael.zeros, kael.ones])
def test_zero_element_shapes_whose_dims_or_strides_overflow_are_refused(factory):
    # no bytes to allocate, yet the layout is no tensor's: refused on every call
    for _ in range(2):
        with pytest.raises(kael.ValueError, match="overflows int64"):
            factory(0, 2**63)
        with pytest.raises(kael.ValueError, match="int64 overflow in stride"):
            factory(0, 2**40, 2**40)
    assert factory(0, 3).shape == (0, 3)


NUMPY_SCALAR_DATA = [
    np.float64(0.1), np.float32(1.5), np.float16(1.5), np.int8(-1), np.int32(7), np.uint8(3),
    np.bool_(True), [np.int8(1), np.int8(2)], [np.float64(0.1), 2.0], [np.int8(1), 2],
    [1, np.float64(2.0)], [[np.float32(1.0)], [np.float64(2.0)]], [np.int8(1), np.int16(300)],
    [np.uint8(1), np.int8(-1)], [np.float16(1.0), 2], [np.bool_(True), np.float16(2.0)],
]  # fmt: skip


@pytest.mark.parametrize("data", NUMPY_SCALAR_DATA, ids=repr)
def test_tensor_keeps_numpy_scalar_dtypes_promoted_as_torch(data):
    """A NumPy scalar infers its own dtype, as an array does; the leaves of a sequence
    promote together (promote_types), Python numbers counting as the default dtype, int64
    and bool."""
    got, want = kael.tensor(data), torch.tensor(data)
    assert str(got.dtype) == str(want.dtype).removeprefix("torch.")
    assert got.shape == tuple(want.shape)
    np.testing.assert_array_equal(got.to(kael.float64).numpy(), want.double().numpy())


# ---- logspace, empty_strided and the window functions -------------------------------------

LOGSPACE_ARGS = [
    (0, 1, 5),
    (-2, 3, 7),
    (0, 2, 5, 2.0),
    (1, 3, 4, 3.5),
    (0.5, -1.25, 9, 10.0),
    (2, 2, 1),
    (0.1, 0.7, 0),
    (-3.3, 2.9, 50, 1.7),
    (0, 10, 11, 2),
]


@pytest.mark.parametrize("args", LOGSPACE_ARGS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_logspace_matches_torch_bit_for_bit_in_float_dtypes(args, dtype, like_torch):
    k = kael.logspace(*args, dtype=getattr(kael, dtype))
    t = torch.logspace(*args, dtype=getattr(torch, dtype))
    assert k.dtype is getattr(kael, dtype)
    like_torch(k.float() if dtype.endswith("16") else k, t.float() if dtype.endswith("16") else t)


@pytest.mark.parametrize("args", LOGSPACE_ARGS)
def test_logspace_float64_is_within_one_ulp_of_torch(args):
    # the exponents are torch's exactly; kael's float64 pow kernel may differ from glibc's
    # pow by one ulp (float32 and the half types round that away)
    k = kael.logspace(*args, dtype=kael.float64)
    t = torch.logspace(*args, dtype=torch.float64)
    assert (k.shape, k.dtype) == (tuple(t.shape), kael.float64)
    np.testing.assert_array_max_ulp(k.numpy(), t.numpy(), maxulp=1)


@pytest.mark.parametrize("args", [(0, 2, 5), (0, 3, 4, 2.7), (1, 3, 4, 3.5), (0.5, 3.7, 5)])
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_logspace_integer_dtypes_truncate_the_double_power(args, dtype, like_torch):
    like_torch(
        kael.logspace(*args, dtype=getattr(kael, dtype)),
        torch.logspace(*args, dtype=getattr(torch, dtype)),
    )


def test_logspace_takes_the_default_dtype(like_torch):
    like_torch(kael.logspace(0, 3, 4), torch.logspace(0, 3, 4))
    with kael_default(kael.float64):
        assert kael.logspace(0, 1, 3).dtype is kael.float64


def kael_default(dtype):
    class _Default:
        def __enter__(self):
            self.saved = kael.get_default_dtype()
            kael.set_default_dtype(dtype)

        def __exit__(self, *exc):
            kael.set_default_dtype(self.saved)

    return _Default()


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"steps": -1}, kael.ValueError, "number of steps must be non-negative"),
        ({"steps": 3, "dtype": kael.bool}, kael.TypeError, "dtype bool"),
        ({"steps": 2.5}, kael.TypeError, "steps must be an int"),
    ],
)
def test_logspace_refuses_bad_steps_and_bool(kwargs, error, message):
    with pytest.raises(error, match=message):
        kael.logspace(0, 1, **kwargs)


@pytest.mark.parametrize(
    ("size", "stride"),
    [((2, 3), (1, 2)), ((2, 3), (3, 1)), ((4,), (3,)), ((2, 0), (5, 1)), ((), ())],
)
def test_empty_strided_has_torch_layout_and_storage(size, stride):
    k, t = kael.empty_strided(size, stride), torch.empty_strided(size, stride)
    assert (k.shape, k.strides(), k.dtype) == (tuple(t.shape), t.stride(), kael.float32)
    k.fill_(1.5)  # every reachable element is writable
    assert float(k.sum()) == 1.5 * math.prod(size)
    assert kael.empty_strided(size, stride, dtype=kael.int16).dtype is kael.int16


@pytest.mark.parametrize(
    ("size", "stride", "message"),
    [
        ((2, 3), (1,), r"dimensionality of sizes \(2\) must match dimensionality of strides \(1\)"),
        ((2, 3), (-1, 1), "overflowed with sizes=\\[2, 3\\] and strides=\\[-1, 1\\]"),
        ((2, -3), (1, 1), r"negative dimension -3"),
    ],
)
def test_empty_strided_refuses_what_torch_refuses(size, stride, message):
    with pytest.raises(kael.ValueError, match=message):
        kael.empty_strided(size, stride)


WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("length", [0, 1, 2, 5, 8, 17, 64])
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_windows_match_torch_values_to_an_ulp(name, length, periodic, dtype):
    k = getattr(kael, name)(length, periodic, dtype=getattr(kael, dtype))
    t = getattr(torch, name)(length, periodic, dtype=getattr(torch, dtype))
    assert (k.shape, k.dtype) == (tuple(t.shape), getattr(kael, dtype))
    tol = 1e-6 if dtype == "float32" else 1e-14
    np.testing.assert_allclose(k.numpy(), t.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", WINDOWS)
def test_windows_default_to_periodic_and_the_default_dtype(name):
    k, t = getattr(kael, name)(10), getattr(torch, name)(10)
    assert k.dtype is kael.float32
    np.testing.assert_allclose(k.numpy(), t.numpy(), rtol=1e-6, atol=1e-6)
    with kael_default(kael.float64):
        assert getattr(kael, name)(4).dtype is kael.float64


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", WINDOWS)
def test_windows_in_half_dtypes_are_close_to_torch(name, dtype):
    k = getattr(kael, name)(12, dtype=getattr(kael, dtype))
    t = getattr(torch, name)(12, dtype=getattr(torch, dtype))
    assert k.dtype is getattr(kael, dtype)
    np.testing.assert_allclose(k.float().numpy(), t.float().numpy(), rtol=2e-2, atol=1e-2)


# (name, extra arguments): the windows whose half-precision values come from a rounded step.
HALF_EXACT = [("hann_window", ()), ("hamming_window", ()), ("hamming_window", (0.1234, 0.9876)),
              ("blackman_window", ()), ("bartlett_window", ())]  # fmt: skip


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize(("name", "extra"), HALF_EXACT, ids=[f"{n}{a}" for n, a in HALF_EXACT])
def test_half_windows_take_their_step_and_constants_in_the_dtype_as_torch(name, extra, dtype):
    """torch's in-place mul_ and add_ take each Scalar (the step span / (N - 1), beta, the
    constants) in the window's dtype first: bit for bit torch's values, not closer ones."""
    for length in (1, 2, 97, 1000, 4097):
        for periodic in (True, False):
            k = getattr(kael, name)(length, periodic, *extra, dtype=getattr(kael, dtype))
            t = getattr(torch, name)(length, periodic, *extra, dtype=getattr(torch, dtype))
            assert k.dtype is getattr(kael, dtype) and k.shape == tuple(t.shape)
            assert torch.equal(torch.from_dlpack(k), t), (length, periodic)


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [((7, True, 0.6, 0.4), {}), ((7, False, 0.3, 0.7), {"dtype": kael.float64})],
)
def test_hamming_window_takes_alpha_and_beta(args, kwargs):
    k = kael.hamming_window(*args, **kwargs)
    t = torch.hamming_window(*args, dtype=torch.float64 if kwargs else torch.float32)
    np.testing.assert_allclose(k.numpy(), t.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("beta", [0.0, 5.0, 12.0, 30.5])
def test_kaiser_window_takes_beta(beta):
    k, t = kael.kaiser_window(9, False, beta), torch.kaiser_window(9, False, beta)
    np.testing.assert_allclose(k.numpy(), t.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        ((-1,), {}, kael.ValueError, "requires non-negative window_length, got window_length=-1"),
        ((5,), {"dtype": kael.int64}, kael.TypeError, "expects floating point dtypes, got: int64"),
        ((2.0,), {}, kael.TypeError, "window_length must be an int"),
    ],
)
def test_windows_refuse_negative_lengths_and_integer_dtypes(name, args, kwargs, error, message):
    with pytest.raises(error, match=f"{name if 'window_length=' in message else ''}.*{message}"):
        getattr(kael, name)(*args, **kwargs)


@pytest.mark.parametrize(
    "start, end, base, dtype",
    [(5, 2, 2.0, "uint8"), (-100, 100, 1.01, "int8"), (-100, 100, 1.01, "int16")],
)
def test_logspace_of_narrow_integers_takes_end_minus_start_without_wrapping(
    start, end, base, dtype
):
    # C++ promotes int8/uint8/int16 to int for end - start: a negative or wide span stays
    got = kael.logspace(start, end, 4, base=base, dtype=getattr(kael, dtype))
    want = torch.logspace(start, end, 4, base=base, dtype=getattr(torch, dtype))
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize(
    ("name", "args", "dtype"),
    [
        ("logspace", (0, 2, 3), "float32"),
        ("logspace", (-3.3, 2.9, 50, 1.7), "float16"),
        ("logspace", (0.5, 3.7, 5), "int32"),
        ("logspace", (2, 2, 1), "bfloat16"),
        ("logspace", (0.1, 0.7, 0), "float32"),
        ("kaiser_window", (9, False, 5.0), "float32"),
        ("kaiser_window", (8,), "float64"),
        ("kaiser_window", (1,), "float32"),
    ],
)
def test_logspace_and_kaiser_window_with_literal_arguments_trace(name, args, dtype):
    # Their host numbers (ends and centre rounded to the dtype) are worked out in Python:
    # no tensor is read while tracing, and the values keep eager's bits.
    made = lambda lib: getattr(lib, name)(*args, dtype=getattr(lib, dtype))  # noqa: E731
    eager = made(kael)
    compiled = kael.compile(lambda z: made(kael) + z)
    for _ in range(2):
        got = compiled(kael.zeros(eager.shape, dtype=eager.dtype))
        assert (got.shape, got.dtype) == (eager.shape, eager.dtype)
        assert kael.equal(got, eager)
    want = made(torch)
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(got.double().numpy(), want.double().numpy(), rtol=1e-6, atol=1e-7)


# ---- torch's creation keywords: requires_grad=, layout=, pin_memory= ----------------------------

_CREATORS = {
    "tensor": ([1.0],), "zeros": (2,), "ones": (2,), "empty": (2,), "full": ((2,), 1.0),
    "arange": (3,), "linspace": (0, 1, 3), "logspace": (0, 1, 3), "eye": (2,),
    "empty_strided": ((2,), (1,)), "scalar_tensor": (1.0,), "rand": (2,), "randn": (2,),
    "randint": (3, (2,)), "randperm": (3,), "normal": (0.0, 1.0, (2,)), "hann_window": (4,),
    "kaiser_window": (4,), "tril_indices": (3, 3), "zeros_like": ("T",), "ones_like": ("T",),
    "empty_like": ("T",), "full_like": ("T", 1.0), "rand_like": ("T",), "randn_like": ("T",),
    "randint_like": ("T", 3),
}  # fmt: skip


def _create(lib, name, **kwargs):
    args = [lib.ones(2) if a == "T" else a for a in _CREATORS[name]]
    return getattr(lib, name)(*args, **kwargs)


@pytest.mark.parametrize("name", sorted(_CREATORS))
def test_creators_take_torchs_creation_keywords(name):
    """requires_grad=False, layout=strided and pin_memory=False are what torch code passes
    routinely; kael refused them as unknown keywords."""
    for lib in (torch, kael):
        layout = {} if lib is torch and name == "tensor" else {"layout": lib.strided}
        made = _create(lib, name, requires_grad=False, pin_memory=False, **layout)
        assert tuple(made.shape) == tuple(_create(lib, name).shape)
    with pytest.raises(kael.Error, match=f"{name}\\(\\): requires_grad=True: kael has no autograd"):
        _create(kael, name, requires_grad=True)
    with pytest.raises(kael.TypeError, match="argument 'requires_grad' must be bool, not int"):
        _create(kael, name, requires_grad=1)
    with pytest.raises(kael.ValueError, match="all strided, got layout='sparse'"):
        _create(kael, name, layout="sparse")


@pytest.mark.parametrize("method", ["new_zeros", "new_ones", "new_empty"])
def test_new_methods_take_torchs_creation_keywords(method):
    got = getattr(kael.ones(2), method)((3,), requires_grad=False, pin_memory=False)
    assert got.shape == (3,) and got.dtype is kael.float32
    with pytest.raises(kael.Error, match="no autograd"):
        getattr(kael.ones(2), method)((3,), requires_grad=True)


def test_none_creation_keywords_read_as_false():
    """torch takes requires_grad=None and pin_memory=None as their defaults."""
    assert kael.zeros(2, requires_grad=None, pin_memory=None).shape == (2,)
    assert torch.zeros(2, requires_grad=None, pin_memory=None).shape == (2,)


@pytest.mark.parametrize(
    "data",
    [
        lambda: [np.ones(2), np.zeros(2)],
        lambda: [np.ones(2, np.float32), np.zeros(2, np.float32)],
        lambda: [np.arange(4).reshape(2, 2), np.arange(4).reshape(2, 2)],
    ],
)
def test_tensor_of_a_list_of_arrays_keeps_their_dtype_as_torch(data):
    """Batches built from a list of arrays were refused ("expects numbers, got ndarray")."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that this path is slow
        want = torch.tensor(data())
    got = kael.tensor(data())
    assert got.shape == tuple(want.shape) and str(got.dtype) == str(want.dtype)[6:]
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize(
    ("end", "dtype"),
    [(1e308, "float32"), (-1e308, "float32"), (70000, "float16"), (1e39, "bfloat16")],
)
def test_linspace_refuses_an_end_its_dtype_cannot_hold_as_torch(end, dtype):
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.linspace(0, end, 5, dtype=getattr(torch, dtype))
    with pytest.raises(
        kael.ValueError, match=f"{re.escape(str(end))} cannot be converted to {dtype}"
    ):
        kael.linspace(0, end, 5, dtype=getattr(kael, dtype))
    assert kael.linspace(0, 65504, 3, dtype=kael.float16).tolist()[-1] == 65504.0  # it fits
