"""torch's utilities in kael against torch: asarray, frombuffer, typename, is_storage,
set_printoptions, the float32 matmul precision switch, nonzero_static, Tensor.apply_ and
Tensor.map_."""

import array
import math
import threading
import warnings

import numpy as np
import pytest
import torch
from parity_helpers import LAYOUTS, close_to_torch
from parity_helpers import layout_pair as make
from parity_helpers import same as same_values

import kael
from kael.frontend import printing

ALL_DTYPES = [
    kael.float32, kael.float64, kael.float16, kael.bfloat16, kael.int64, kael.int32,
    kael.int16, kael.int8, kael.uint8, kael.bool,
]  # fmt: skip
TORCH = {
    kael.float32: torch.float32, kael.float64: torch.float64, kael.float16: torch.float16,
    kael.bfloat16: torch.bfloat16, kael.int64: torch.int64, kael.int32: torch.int32,
    kael.int16: torch.int16, kael.int8: torch.int8, kael.uint8: torch.uint8,
    kael.bool: torch.bool,
}  # fmt: skip


def same(k, t) -> None:
    """kael's tensor as torch's in shape, dtype and values (bfloat16 exactly too)."""
    if t.dtype is torch.bfloat16:
        close_to_torch(k, t, 0.0)
    else:
        same_values(k, t)


# ---- asarray -----------------------------------------------------------------------------------


def test_asarray_of_a_tensor_is_that_tensor():
    x = kael.arange(3.0)
    assert kael.asarray(x) is x
    assert kael.asarray(x, dtype=kael.float32, copy=False) is x


def test_asarray_copy_true_of_a_tensor_copies():
    x = kael.arange(3.0)
    y = kael.asarray(x, copy=True)
    assert not y.shares_storage(x)
    same(y, torch.asarray(torch.arange(3.0), copy=True))


@pytest.mark.parametrize("dtype", [kael.int64, kael.float64, kael.float16], ids=str)
def test_asarray_converts_a_tensor_to_the_dtype(dtype):
    t = torch.tensor([0.5, 1.5, -2.0])
    same(
        kael.asarray(kael.tensor([0.5, 1.5, -2.0]), dtype=dtype),
        torch.asarray(t, dtype=TORCH[dtype]),
    )


def test_asarray_copy_false_refuses_a_dtype_change():
    with pytest.raises(ValueError, match="can't alias tensor with dtype 'Float' into dtype 'Long'"):
        torch.asarray(torch.arange(3.0), dtype=torch.int64, copy=False)
    with pytest.raises(kael.ValueError, match="dtype 'float32' into dtype 'int64'"):
        kael.asarray(kael.arange(3.0), dtype=kael.int64, copy=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.uint8, np.bool_])
def test_asarray_shares_a_numpy_arrays_memory(dtype):
    a = np.arange(6).astype(dtype).reshape(2, 3)
    k, t = kael.asarray(a), torch.asarray(a)
    same(k, t)
    assert k.data_ptr() == a.ctypes.data == t.data_ptr()


def test_asarray_numpy_writes_show_through():
    a = np.arange(4.0)
    k = kael.asarray(a)
    a[0] = 9.0
    k[1] = 7.0
    assert k.tolist() == [9.0, 7.0, 2.0, 3.0] and a.tolist() == [9.0, 7.0, 2.0, 3.0]


def test_asarray_of_a_strided_numpy_view_keeps_its_strides():
    a = np.arange(12.0).reshape(3, 4)[:, ::2]
    k, t = kael.asarray(a), torch.asarray(a)
    same(k, t)
    assert k.stride() == t.stride()


def test_asarray_numpy_copy_true_copies_and_copy_false_shares():
    a = np.arange(3.0)
    assert kael.asarray(a, copy=True).data_ptr() != a.ctypes.data
    assert kael.asarray(a, copy=False).data_ptr() == a.ctypes.data


def test_asarray_numpy_with_another_dtype_converts_unless_copy_false():
    a = np.arange(3)
    same(kael.asarray(a, dtype=kael.float32), torch.asarray(a, dtype=torch.float32))
    with pytest.raises(ValueError, match="alias"):
        torch.asarray(a, dtype=torch.float32, copy=False)
    with pytest.raises(kael.ValueError, match="dtype 'int64' into dtype 'float32'"):
        kael.asarray(a, dtype=kael.float32, copy=False)


def test_asarray_refuses_negative_numpy_strides():
    a = np.arange(3)[::-1]
    with pytest.raises(ValueError, match="negative"):
        torch.asarray(a)
    with pytest.raises(kael.ValueError, match=r"negative strides \(-8,\)"):
        kael.asarray(a)


def test_asarray_refuses_a_numpy_dtype_kael_lacks():
    with pytest.raises(kael.TypeError, match="unsupported numpy dtype <U1"):
        kael.asarray(np.array(["a"]))


def test_asarray_shares_a_dlpack_producers_memory():
    t = torch.arange(6.0).view(2, 3)
    k = kael.asarray(t)
    same(k, torch.asarray(t))
    assert k.data_ptr() == t.data_ptr()


@pytest.mark.parametrize(
    "data",
    [[1, 2, 3], [1, 2.5], [[True, False]], 3, 2.5, True, [], [[1, 2], [3, 4]], np.float64(2.0)],
    ids=str,
)
def test_asarray_copies_python_data_with_torchs_dtype(data):
    same(kael.asarray(data), torch.asarray(data))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_asarray_of_python_data_in_each_dtype(dtype):
    data = [[0, 1, 2], [3, 0, 1]]
    same(kael.asarray(data, dtype=dtype), torch.asarray(data, dtype=TORCH[dtype]))


@pytest.mark.parametrize("data", [[1, 2], 3.5, np.float32(1.5)], ids=str)
def test_asarray_copy_false_refuses_python_data(data):
    with pytest.raises((ValueError, RuntimeError), match="can't alias"):
        torch.asarray(data, copy=False)
    with pytest.raises(kael.ValueError, match="can't alias (arbitrary sequence|NumPy scalars)"):
        kael.asarray(data, copy=False)


def test_asarray_reads_a_buffer_as_the_default_dtype():
    b = array.array("f", [1.5, -2.0, 3.25])
    k, t = kael.asarray(b), torch.asarray(b)
    same(k, t)
    b[0] = 8.0
    assert k[0].item() == 8.0 == t[0].item()


def test_asarray_reads_a_buffer_as_the_dtype_given():
    b = bytearray(b"abcd")
    same(kael.asarray(b, dtype=kael.uint8), torch.asarray(b, dtype=torch.uint8))


def test_asarray_buffer_not_a_multiple_of_the_element_size_is_refused():
    with pytest.raises(ValueError, match="multiple of element size"):
        torch.asarray(bytearray(3))
    with pytest.raises(kael.ValueError, match=r"buffer length \(3 bytes\).*element size \(4\)"):
        kael.asarray(bytearray(3))


@pytest.mark.parametrize("data", ["abc", object(), [1, "a"]], ids=["str", "object", "mixed"])
def test_asarray_of_non_numbers_is_refused(data):
    with pytest.raises(kael.TypeError):
        kael.asarray(data)


def test_asarray_requires_grad_is_refused_without_autograd():
    assert kael.asarray([1.0]).requires_grad is False
    with pytest.raises(kael.Error, match="requires_grad"):
        kael.asarray([1.0], requires_grad=True)


def test_asarray_copy_must_be_a_bool_or_none():
    with pytest.raises(kael.TypeError, match="'copy' must be bool or None, not int"):
        kael.asarray([1.0], copy=1)


# ---- frombuffer --------------------------------------------------------------------------------

BYTES = bytes(range(1, 17))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_frombuffer_reads_the_bytes_as_the_dtype(dtype):
    # torch reads any nonzero byte as True; kael's bools are the bytes 0 and 1
    data = bytes([0, 1] * 8) if dtype is kael.bool else BYTES
    same(
        kael.frombuffer(bytearray(data), dtype=dtype),
        torch.frombuffer(bytearray(data), dtype=TORCH[dtype]),
    )


@pytest.mark.parametrize(("count", "offset"), [(2, 4), (-1, 8), (1, 12), (4, 0), (-5, 4)])
def test_frombuffer_count_and_offset_pick_the_window(count, offset):
    k = kael.frombuffer(bytearray(BYTES), dtype=kael.int32, count=count, offset=offset)
    t = torch.frombuffer(bytearray(BYTES), dtype=torch.int32, count=count, offset=offset)
    same(k, t)


def test_frombuffer_offset_needs_only_whole_elements_after_it():
    data = bytearray(6)
    same(
        kael.frombuffer(data, dtype=kael.int16, offset=2),
        torch.frombuffer(data, dtype=torch.int16, offset=2),
    )


def test_frombuffer_writes_show_through_both_ways():
    data = bytearray(8)
    k = kael.frombuffer(data, dtype=kael.uint8)
    data[0] = 200
    k[1] = 99
    assert k[0].item() == 200 and data[1] == 99


def test_frombuffer_of_a_read_only_buffer_warns_as_torch():
    with pytest.warns(UserWarning, match="not writable"):
        k = kael.frombuffer(b"abcd", dtype=kael.uint8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(k, torch.frombuffer(b"abcd", dtype=torch.uint8))


def test_frombuffer_of_a_writable_buffer_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kael.frombuffer(bytearray(4), dtype=kael.uint8)


def test_frombuffer_of_other_buffers_matches_torch():
    for data in (array.array("d", [1.5, 2.0]), np.arange(4, dtype=np.int16)):
        dtype = kael.float64 if isinstance(data, array.array) else kael.int16
        same(kael.frombuffer(data, dtype=dtype), torch.frombuffer(data, dtype=TORCH[dtype]))


def both_refuse(torch_error, kael_error, match, data, **kwargs):
    with pytest.raises(torch_error, match=match):
        torch.frombuffer(data, dtype=torch.int32, **kwargs)
    with pytest.raises(kael_error, match=match):
        kael.frombuffer(data, dtype=kael.int32, **kwargs)


@pytest.mark.parametrize("offset", [16, 17, -1])
def test_frombuffer_offset_outside_the_buffer_is_refused(offset):
    match = rf"offset \({offset} bytes\) must be non-negative and no greater than buffer length"
    both_refuse(ValueError, kael.ValueError, match, bytearray(16), offset=offset)


@pytest.mark.parametrize(("count", "offset"), [(5, 0), (4, 4)])
def test_frombuffer_count_beyond_the_buffer_is_refused(count, offset):
    match = rf"requested buffer length \({count} \* 4 bytes\) after offset \({offset} bytes\)"
    both_refuse(ValueError, kael.ValueError, match, bytearray(16), count=count, offset=offset)


def test_frombuffer_count_up_to_the_end_is_allowed():
    data = bytearray(BYTES)
    same(kael.frombuffer(data, dtype=kael.int32, count=3, offset=4),
         torch.frombuffer(data, dtype=torch.int32, count=3, offset=4))  # fmt: skip


@pytest.mark.parametrize(("size", "count"), [(0, -1), (16, 0)])
def test_frombuffer_empty_buffer_or_zero_count_is_refused(size, count):
    match = rf"both buffer length \({size}\) and count \({count}\) must not be 0"
    both_refuse(ValueError, kael.ValueError, match, bytearray(size), count=count)


def test_frombuffer_length_not_a_multiple_of_the_element_size_is_refused():
    match = r"buffer length \(6 bytes\) after offset \(0 bytes\) must be a multiple of element size \(4\)"
    both_refuse(ValueError, kael.ValueError, match, bytearray(6))


def test_frombuffer_of_a_non_buffer_is_refused():
    both_refuse(ValueError, kael.ValueError, "does not implement Python buffer protocol", [1, 2])


def test_frombuffer_of_non_contiguous_memory_is_refused():
    both_refuse(RuntimeError, kael.Error, "could not retrieve buffer from object",
                memoryview(bytearray(16))[::2])  # fmt: skip


def test_frombuffer_offset_and_count_must_be_ints():
    both_refuse(
        TypeError,
        kael.TypeError,
        "argument 'offset' must be int, not float",
        bytearray(16),
        offset=1.5,
    )
    with pytest.raises(kael.TypeError, match="argument 'count' must be int, not str"):
        kael.frombuffer(bytearray(16), dtype=kael.int32, count="2")


def test_frombuffer_misaligned_element_is_refused_where_torch_reads_it():
    torch.frombuffer(bytearray(16), dtype=torch.int32, offset=1, count=1)  # torch reads it
    with pytest.raises(
        kael.ValueError, match=r"offset 1 bytes is not aligned to the element size \(4\)"
    ):
        kael.frombuffer(bytearray(16), dtype=kael.int32, offset=1, count=1)
    kael.frombuffer(bytearray(16), dtype=kael.uint8, offset=1)  # a byte is always aligned


def test_frombuffer_needs_a_dtype_and_refuses_requires_grad():
    with pytest.raises(TypeError):
        kael.frombuffer(bytearray(4))
    with pytest.raises(kael.Error, match="requires_grad"):
        kael.frombuffer(bytearray(4), dtype=kael.float32, requires_grad=True)


# ---- typename and is_storage -------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_typename_of_a_tensor_is_torchs_with_kael_for_torch(dtype):
    expected = torch.typename(torch.zeros(1, dtype=TORCH[dtype])).replace("torch.", "kael.")
    assert kael.typename(kael.zeros(1, dtype=dtype)) == expected


@pytest.mark.parametrize("obj", [3, "a", None, np.zeros(1), int, np.ndarray], ids=repr)
def test_typename_of_other_objects_is_torchs(obj):
    assert kael.typename(obj) == torch.typename(obj)


def test_typename_of_kael_objects_names_their_module():
    assert kael.typename(kael.float32) == "kael.runtime.dtypes.DType"


@pytest.mark.parametrize("obj", [kael.zeros(1), 3, bytearray(2), None], ids=repr)
def test_is_storage_is_false_for_non_storages(obj):
    assert (
        kael.is_storage(obj)
        is False
        is torch.is_storage(torch.zeros(1) if obj is not None else None)
    )


# ---- set_printoptions --------------------------------------------------------------------------


@pytest.fixture
def reset_printing():
    """Both libraries' print options back to their defaults after the test."""
    yield
    torch.set_printoptions(profile="default", sci_mode=None)
    kael.set_printoptions(profile="default")


def expected_text(t: torch.Tensor, dtype: str) -> str:
    """torch's text of t with kael's suffix (shape and dtype) in place of torch's."""
    body = str(t)[len("tensor(") :].split(", dtype=torch.")[0].removesuffix(")")
    body = body.replace("True", "true").replace("False", "false")
    return f"tensor({body}, shape={list(t.shape)}, dtype={dtype})"


def values_of(n: int) -> list[float]:
    return [(i - n / 2) * 0.37 + 0.125 for i in range(n)]


OPTIONS = [
    {"precision": 2},
    {"precision": 6},
    {"precision": 0},
    {"threshold": 5},
    {"threshold": 5, "edgeitems": 1},
    {"edgeitems": 2, "threshold": 10},
    {"linewidth": 30},
    {"linewidth": 200},
    {"profile": "short"},
    {"profile": "full"},
    {"profile": "short", "precision": 3},
    {"sci_mode": True},
    {"sci_mode": True, "precision": 2},
]


@pytest.mark.usefixtures("reset_printing")
@pytest.mark.parametrize("options", OPTIONS, ids=str)
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 2), (40,), (1500,), (12, 12)], ids=str)
def test_printed_floats_follow_the_options_as_torch(options, shape):
    torch.set_printoptions(**{"sci_mode": False, **options})
    kael.set_printoptions(**options)
    values = values_of(math.prod(shape))
    t = torch.tensor(values).view(shape)
    assert repr(kael.tensor(values).view(shape)) == expected_text(t, "float32")


@pytest.mark.usefixtures("reset_printing")
@pytest.mark.parametrize(
    "options", [{"threshold": 5}, {"profile": "full"}, {"linewidth": 40}], ids=str
)
def test_printed_ints_follow_the_options_as_torch(options):
    torch.set_printoptions(**options)
    kael.set_printoptions(**options)
    k, t = kael.arange(-600, 600).view(30, 40), torch.arange(-600, 600).view(30, 40)
    assert repr(k) == expected_text(t, "int64")


@pytest.mark.usefixtures("reset_printing")
def test_sci_mode_prints_nan_and_inf_as_torch():
    values = [1.5, -2.25e-5, math.nan, math.inf]
    torch.set_printoptions(sci_mode=True)
    kael.set_printoptions(sci_mode=True)
    assert repr(kael.tensor(values)) == expected_text(torch.tensor(values), "float32")


@pytest.mark.usefixtures("reset_printing")
def test_options_persist_until_changed_and_profile_default_restores():
    kael.set_printoptions(precision=2)
    kael.set_printoptions(threshold=5)  # precision stays 2, as in torch
    torch.set_printoptions(precision=2, sci_mode=False)
    torch.set_printoptions(threshold=5, sci_mode=False)
    values = values_of(10)
    assert repr(kael.tensor(values)) == expected_text(torch.tensor(values), "float32")
    kael.set_printoptions(profile="default")
    assert repr(kael.tensor([1 / 3])) == "tensor([0.3333], shape=[1], dtype=float32)"


@pytest.mark.usefixtures("reset_printing")
def test_get_printoptions_reports_the_options_as_torch():
    kael.set_printoptions(profile="short", linewidth=100)
    torch.set_printoptions(profile="short", linewidth=100)
    assert printing.get_printoptions() == torch._tensor_str.get_printoptions()


@pytest.mark.usefixtures("reset_printing")
def test_edgeitems_zero_prints_without_crashing():
    kael.set_printoptions(edgeitems=0, threshold=3)
    assert "..." in repr(kael.arange(10.0))


@pytest.mark.usefixtures("reset_printing")
def test_options_set_in_another_thread_apply_here():
    worker = threading.Thread(target=kael.set_printoptions, kwargs={"precision": 1})
    worker.start()
    worker.join()
    assert repr(kael.tensor([0.25])) == "tensor([0.2], shape=[1], dtype=float32)"


@pytest.mark.usefixtures("reset_printing")
@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"precision": 2.5}, kael.TypeError, "precision must be an int, got 2.5"),
        ({"precision": -1}, kael.ValueError, "precision must be non-negative, got -1"),
        ({"edgeitems": -2}, kael.ValueError, "edgeitems must be non-negative, got -2"),
        ({"linewidth": "80"}, kael.TypeError, "linewidth must be an int"),
        ({"threshold": "5"}, kael.TypeError, "threshold must be a number"),
        ({"threshold": math.nan}, kael.TypeError, "threshold must be a number"),
        (
            {"profile": "long"},
            kael.ValueError,
            "profile must be one of default, short, full, got 'long'",
        ),
        ({"sci_mode": 1}, kael.TypeError, "sci_mode must be a bool or None, got 1"),
    ],
    ids=str,
)
def test_bad_print_options_are_refused_and_change_nothing(kwargs, error, match):
    with pytest.raises(error, match=match):
        kael.set_printoptions(**kwargs)
    assert repr(kael.tensor([1 / 3])) == "tensor([0.3333], shape=[1], dtype=float32)"


# ---- float32 matmul precision ------------------------------------------------------------------


@pytest.fixture
def reset_matmul_precision():
    yield
    kael.set_float32_matmul_precision("highest")


def test_matmul_precision_defaults_to_highest_as_torch():
    assert kael.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == "highest"


@pytest.mark.usefixtures("reset_matmul_precision")
@pytest.mark.parametrize("precision", ["highest", "high", "medium"])
def test_matmul_precision_is_stored(precision):
    kael.set_float32_matmul_precision(precision)
    assert kael.get_float32_matmul_precision() == precision


@pytest.mark.usefixtures("reset_matmul_precision")
def test_matmul_stays_full_float32_precision_whatever_the_setting():
    a, b = make((5, 7)), make((7, 3))
    kael.set_float32_matmul_precision("medium")
    same(a[0] @ b[0], a[1] @ b[1])


@pytest.mark.usefixtures("reset_matmul_precision")
@pytest.mark.parametrize("precision", ["low", "HIGH", ""])
def test_unknown_matmul_precision_warns_and_changes_nothing_as_torch(precision):
    kael.set_float32_matmul_precision("high")
    with pytest.warns(
        UserWarning, match=f"{precision} is not one of 'highest', 'high', or 'medium'"
    ):
        kael.set_float32_matmul_precision(precision)
    assert kael.get_float32_matmul_precision() == "high"


def test_matmul_precision_must_be_a_str():
    with pytest.raises(RuntimeError, match="expects a str, but got int"):
        torch.set_float32_matmul_precision(3)
    with pytest.raises(kael.TypeError, match="expects a str, but got int"):
        kael.set_float32_matmul_precision(3)


# ---- nonzero_static ----------------------------------------------------------------------------

MATRIX = [[0, 1, 0], [2, 0, 3]]


@pytest.mark.parametrize("size", [0, 1, 3, 5])
@pytest.mark.parametrize("fill_value", [-1, 7])
def test_nonzero_static_keeps_the_first_size_or_pads(size, fill_value):
    k, t = kael.tensor(MATRIX), torch.tensor(MATRIX)
    same(kael.nonzero_static(k, size=size, fill_value=fill_value),
         torch.nonzero_static(t, size=size, fill_value=fill_value))  # fmt: skip


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_nonzero_static_of_each_dtype(dtype):
    k, t = kael.tensor(MATRIX, dtype=dtype), torch.tensor(MATRIX, dtype=TORCH[dtype])
    same(k.nonzero_static(size=4), t.nonzero_static(size=4))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_nonzero_static_of_each_layout(layout):
    k, t = make((4, 5), layout=layout, low=-1, high=2)
    same(kael.nonzero_static(k, size=9), torch.nonzero_static(t, size=9))


@pytest.mark.parametrize("value", [3.0, 0.0])
def test_nonzero_static_of_a_0d_tensor_has_no_columns(value):
    same(
        kael.nonzero_static(kael.tensor(value), size=2),
        torch.nonzero_static(torch.tensor(value), size=2),
    )


def test_nonzero_static_of_an_empty_tensor_is_all_fill():
    same(
        kael.nonzero_static(kael.zeros(0, 3), size=2),
        torch.nonzero_static(torch.zeros(0, 3), size=2),
    )


def test_nonzero_static_counts_nan_as_nonzero():
    values = [math.nan, 0.0]
    same(
        kael.nonzero_static(kael.tensor(values), size=3),
        torch.nonzero_static(torch.tensor(values), size=3),
    )


def test_nonzero_static_negative_size_is_refused():
    with pytest.raises(RuntimeError, match="'size' must be an non-negative integer"):
        torch.nonzero_static(torch.tensor(MATRIX), size=-1)
    with pytest.raises(kael.ValueError, match="'size' must be an non-negative integer, got -1"):
        kael.nonzero_static(kael.tensor(MATRIX), size=-1)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"size": 2.0}, "argument 'size' must be int, not float"),
    ({"size": 2, "fill_value": 2.5}, "argument 'fill_value' must be int, not float"),
    ({"size": 2, "fill_value": True}, "argument 'fill_value' must be int, not bool"),
])  # fmt: skip
def test_nonzero_static_arguments_must_be_ints(kwargs, match):
    with pytest.raises(TypeError, match=match):
        torch.nonzero_static(torch.tensor(MATRIX), **kwargs)
    with pytest.raises(kael.TypeError, match=match):
        kael.nonzero_static(kael.tensor(MATRIX), **kwargs)


def test_nonzero_static_fill_value_beyond_int64_is_refused():
    with pytest.raises(kael.ValueError, match=str(2**63)):
        kael.nonzero_static(kael.tensor(MATRIX), size=2, fill_value=2**63)
    same(kael.nonzero_static(kael.tensor(MATRIX), size=4, fill_value=2**63 - 1),
         torch.nonzero_static(torch.tensor(MATRIX), size=4, fill_value=2**63 - 1))  # fmt: skip


def test_nonzero_static_size_is_keyword_only_and_input_a_tensor():
    with pytest.raises(TypeError):
        kael.nonzero_static(kael.tensor(MATRIX), 2)
    with pytest.raises(kael.TypeError, match="input must be a Tensor"):
        kael.nonzero_static(MATRIX, size=2)


# ---- apply_ and map_ ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_apply_writes_the_callables_results_into_self(dtype):
    def fn(v):
        return v * 3 + 1 if not isinstance(v, bool) else not v

    k, t = kael.tensor(MATRIX, dtype=dtype), torch.tensor(MATRIX, dtype=TORCH[dtype])
    assert k.apply_(fn) is k
    same(k, t.apply_(fn))


@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16, kael.float32], ids=str)
def test_apply_rounds_a_float_result_to_the_dtype_as_torch(dtype):
    k, t = kael.arange(5.0).to(dtype), torch.arange(5.0).to(TORCH[dtype])
    same(k.apply_(lambda v: v / 3), t.apply_(lambda v: v / 3))


def test_apply_truncates_a_float_result_into_an_int_dtype():
    same(
        kael.arange(-3, 4).apply_(lambda v: v * 2.7), torch.arange(-3, 4).apply_(lambda v: v * 2.7)
    )


@pytest.mark.parametrize("layout", LAYOUTS[:3])
def test_apply_writes_through_views_in_their_layout(layout):
    k, t = make((3, 4), layout=layout)
    k.apply_(lambda v: v * v - 1)
    t.apply_(lambda v: v * v - 1)
    same(k, t)


def test_apply_on_a_view_changes_its_base():
    base_k, base_t = kael.zeros(3, 4), torch.zeros(3, 4)
    base_k.T[1:].apply_(lambda v: v + 5)
    base_t.T[1:].apply_(lambda v: v + 5)
    same(base_k, base_t)


def test_apply_calls_once_per_element_in_row_major_order():
    seen_k, seen_t = [], []
    kael.arange(6.0).view(2, 3).T.apply_(lambda v: seen_k.append(v) or v)
    torch.arange(6.0).view(2, 3).T.apply_(lambda v: seen_t.append(v) or v)
    assert seen_k == seen_t == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]


def test_apply_of_0d_and_empty_tensors():
    same(kael.tensor(2.0).apply_(lambda v: v + 1), torch.tensor(2.0).apply_(lambda v: v + 1))
    same(kael.zeros(0, 3).apply_(lambda v: 1 / 0), torch.zeros(0, 3).apply_(lambda v: 1 / 0))


def test_apply_of_a_uint8_result_out_of_range_is_refused_as_torch():
    same(kael.arange(3).to(kael.uint8).apply_(lambda v: -1),
         torch.arange(3, dtype=torch.uint8).apply_(lambda v: -1))  # fmt: skip
    with pytest.raises(RuntimeError, match="cannot be converted to type uint8 without overflow"):
        torch.arange(3, dtype=torch.uint8).apply_(lambda v: 300)
    with pytest.raises(
        kael.ValueError, match="value 300 cannot be converted to uint8 without overflow"
    ):
        kael.arange(3).to(kael.uint8).apply_(lambda v: 300)


def test_apply_of_an_int64_result_beyond_int64_is_refused():
    for result in (2**70, 1e30):
        with pytest.raises((ValueError, RuntimeError)):
            torch.arange(3).apply_(lambda v, r=result: r)
        with pytest.raises(kael.ValueError, match="int64"):
            kael.arange(3).apply_(lambda v, r=result: r)


def test_apply_of_a_non_number_result_is_refused():
    with pytest.raises(TypeError):
        torch.zeros(2).apply_(lambda v: "a")
    with pytest.raises(kael.TypeError, match="got str"):
        kael.zeros(2).apply_(lambda v: "a")


def test_apply_lets_the_callables_own_error_through_and_leaves_self():
    k = kael.ones(3)

    def boom(v):
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        k.apply_(boom)
    assert k.tolist() == [1.0, 1.0, 1.0]


def test_apply_of_a_non_callable_is_refused():
    with pytest.raises(TypeError):
        kael.zeros(2).apply_(3)


def test_apply_on_an_expanded_tensor_is_refused():
    with pytest.raises(kael.Error, match="single memory location"):
        kael.zeros(3).expand(2, 3).apply_(lambda v: v + 1)


@pytest.fixture
def on_cuda(monkeypatch):
    """Tensors that report a cuda device (the refusal needs no GPU to be checked)."""
    monkeypatch.setattr(kael.Tensor, "device", property(lambda self: kael.device("cuda")))


@pytest.mark.usefixtures("on_cuda")
def test_apply_and_map_refuse_cuda_tensors_as_torch():
    x = kael.zeros(2)
    with pytest.raises(kael.Error, match="apply_ is only implemented on CPU tensors"):
        x.apply_(lambda v: v)
    with pytest.raises(kael.Error, match="map_ is only implemented on CPU tensors"):
        x.map_(x, lambda a, b: a)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_map_writes_callable_of_both_elements(dtype):
    def fn(a, b):
        return a * 2 + b if not isinstance(a, bool) else a != b

    k, t = kael.tensor(MATRIX, dtype=dtype), torch.tensor(MATRIX, dtype=TORCH[dtype])
    ko, to = kael.tensor([1, 0, 2], dtype=dtype), torch.tensor([1, 0, 2], dtype=TORCH[dtype])
    assert k.map_(ko, fn) is k
    same(k, t.map_(to, fn))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_map_broadcasts_the_other_tensor_in_any_layout(layout):
    k, t = make((3, 4))
    ko, to = make((3, 4), layout=layout)
    same(k.map_(ko, lambda a, b: a - 2 * b), t.map_(to, lambda a, b: a - 2 * b))


def test_map_broadcasts_a_0d_and_a_row():
    k, t = make((2, 3))
    same(
        k.map_(kael.tensor(2.0), lambda a, b: a * b), t.map_(torch.tensor(2.0), lambda a, b: a * b)
    )
    same(k.map_(kael.tensor([1.0, 2.0, 3.0]), lambda a, b: a + b),
         t.map_(torch.tensor([1.0, 2.0, 3.0]), lambda a, b: a + b))  # fmt: skip


def test_map_of_empty_tensors():
    same(
        kael.zeros(0, 2).map_(kael.zeros(2), lambda a, b: a),
        torch.zeros(0, 2).map_(torch.zeros(2), lambda a, b: a),
    )


def test_map_other_of_another_dtype_is_refused():
    with pytest.raises(TypeError, match="expected torch.FloatTensor .* \\(got torch.LongTensor\\)"):
        torch.zeros(3).map_(torch.zeros(3, dtype=torch.long), lambda a, b: a)
    with pytest.raises(
        kael.TypeError, match=r"expected kael.FloatTensor .* \(got kael.LongTensor\)"
    ):
        kael.zeros(3).map_(kael.zeros(3, dtype=kael.int64), lambda a, b: a)


@pytest.mark.parametrize("other_shape", [(2,), (2, 3)], ids=str)
def test_map_other_that_does_not_broadcast_to_self_is_refused(other_shape):
    with pytest.raises(RuntimeError):
        torch.zeros(3).map_(torch.zeros(other_shape), lambda a, b: a)
    with pytest.raises(kael.Error):
        kael.zeros(3).map_(kael.zeros(other_shape), lambda a, b: a)


def test_map_other_must_be_a_tensor():
    with pytest.raises(kael.TypeError, match="tensor must be a Tensor, got float"):
        kael.zeros(3).map_(3.0, lambda a, b: a)


def test_map_callable_must_take_two_arguments():
    with pytest.raises(TypeError):
        kael.zeros(2).map_(kael.zeros(2), lambda a: a)


def test_apply_works_under_compile():
    @kael.compile
    def double(x):
        return x.clone().apply_(lambda v: v * 2)

    same(double(kael.arange(3.0)), torch.arange(3.0) * 2)
