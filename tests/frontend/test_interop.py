"""NumPy and DLPack interop: zero-copy both ways, lifetimes, and every unsupported input."""

import gc
import subprocess
import sys
import warnings
import weakref

import numpy as np
import pytest
import torch

import kael
from kael.frontend.tensor import Tensor
from kael.runtime import dtypes
from kael.runtime.device import CUDA
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl

# ---- Tensor -> NumPy ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [(), (slice(None), slice(1, None)), (slice(None, None, 2),), (1,)],
    ids=["whole", "sliced", "stepped", "row"],
)
def test_numpy_is_a_view_with_torchs_byte_strides(key, arange_pair):
    k, t = arange_pair(4, 3, dtype=kael.float64)
    kv, tv = k[key], t[key]
    for kx, tx in ((kv, tv), (kv.T, tv.permute(tuple(reversed(range(tv.ndim)))))):
        arr = kx.numpy()
        expected = tx.numpy()
        assert arr.strides == expected.strides
        assert arr.dtype == expected.dtype
        np.testing.assert_array_equal(arr, expected)
        assert np.shares_memory(arr, k.numpy())


def test_numpy_writes_are_seen_by_the_tensor_and_back():
    k = kael.zeros(2, 3)
    arr = k.numpy()
    arr[1, 2] = 5.0
    assert k[1, 2].item() == 5.0
    k[0, 0] = 7.0
    assert arr[0, 0] == 7.0


def test_numpy_array_keeps_the_storage_alive():
    k = kael.arange(5)
    storage = weakref.ref(k._impl.storage)
    arr = k.numpy()
    del k
    gc.collect()
    assert storage() is not None
    assert arr.tolist() == [0, 1, 2, 3, 4]
    del arr
    gc.collect()
    assert storage() is None


NUMPY_DTYPES = [d for d in dtypes.ALL_DTYPES if d is not kael.bfloat16]


@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=str)
def test_numpy_dtype_matches_torch(dtype, torch_dtype):
    assert (
        kael.zeros(2, dtype=dtype).numpy().dtype
        == torch.zeros(2, dtype=torch_dtype(dtype)).numpy().dtype
    )


def test_numpy_of_0d_and_empty_tensors():
    assert kael.tensor(2.5).numpy().shape == ()
    assert kael.tensor(2.5).numpy().item() == 2.5
    assert kael.zeros(2, 0).numpy().shape == (2, 0)


def _fake_cuda_tensor() -> Tensor:
    """A CUDA-placed tensor whose memory is never touched (no GPU is needed to build it)."""
    storage = Storage.external(0x1000, 16, None, CUDA)
    return Tensor(TensorImpl(storage, (4,), (1,), 0, kael.float32, CUDA))


def test_numpy_of_a_cuda_tensor_says_to_call_cpu():
    with pytest.raises(kael.TypeError, match=r"Use Tensor.cpu\(\)"):
        _fake_cuda_tensor().numpy()


def test_dlpack_device_names_cpu_and_cuda():
    assert kael.zeros(1).__dlpack_device__() == torch.zeros(1).__dlpack_device__()
    assert _fake_cuda_tensor().__dlpack_device__() == (2, 0)


def test_array_protocol_shares_unless_a_copy_or_conversion_is_asked():
    k = kael.arange(4)
    assert np.shares_memory(np.asarray(k), k.numpy())
    assert np.shares_memory(np.array(k, copy=False), k.numpy())
    assert not np.shares_memory(np.array(k, copy=True), k.numpy())
    converted = np.asarray(k, dtype=np.float64)
    assert converted.dtype == np.float64
    assert converted.tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="needs a copy"):
        np.array(k, dtype=np.float64, copy=False)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=str)
def test_torch_reads_a_tensor_through_dlpack_without_a_copy(dtype, torch_dtype):
    k = kael.ones(3, 4, dtype=dtype).T
    t = torch.from_dlpack(k)
    assert t.dtype == torch_dtype(dtype)
    assert t.stride() == k.strides()
    assert t.data_ptr() == k.data_ptr()
    assert t.tolist() == k.tolist()


def test_numpy_reads_a_tensor_through_dlpack_without_a_copy():
    k = kael.arange(6).view(2, 3)
    arr = np.from_dlpack(k)
    arr[0, 0] = 9
    assert k[0, 0].item() == 9


# ---- NumPy -> Tensor ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(12, dtype=np.float32).reshape(3, 4),
        lambda: np.arange(12, dtype=np.float64).reshape(3, 4)[:, ::2],
        lambda: np.arange(12, dtype=np.int64).reshape(3, 4).T,
        lambda: np.array([True, False, True]),
        lambda: np.array(3.5),
        lambda: np.zeros((2, 0)),
    ],
    ids=["float32", "stepped float64", "transposed int64", "bool", "0-d", "empty"],
)
def test_from_numpy_shares_memory_with_torchs_layout(make, like_torch):
    arr = make()
    k = kael.from_numpy(arr)
    like_torch(k, torch.from_numpy(arr))
    if arr.size:
        assert k.data_ptr() == arr.ctypes.data


def test_from_numpy_writes_are_seen_both_ways():
    arr = np.zeros(3)
    k = kael.from_numpy(arr)
    arr[0] = 2.0
    k[1] = 3.0
    assert k.tolist() == [2.0, 3.0, 0.0]
    assert arr.tolist() == [2.0, 3.0, 0.0]


def test_from_numpy_keeps_the_array_alive():
    k = kael.from_numpy(np.arange(4, dtype=np.int64) * 2)
    gc.collect()
    assert k.tolist() == [0, 2, 4, 6]


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.uint64, np.clongdouble, np.float128])
def test_from_numpy_rejects_unsupported_dtypes(dtype):
    with pytest.raises(kael.TypeError, match=f"unsupported numpy dtype {np.dtype(dtype)}"):
        kael.from_numpy(np.zeros(2, dtype=dtype))


def test_from_numpy_rejects_negative_strides():
    with pytest.raises(kael.ValueError, match=r"negative strides \(-8,\)"):
        kael.from_numpy(np.arange(3.0)[::-1])


def test_from_numpy_rejects_strides_that_are_not_element_multiples():
    packed = np.zeros(3, dtype=[("a", np.float32), ("b", np.int8)])["a"]
    with pytest.raises(kael.ValueError, match=r"strides \(5,\) are not multiples of .* size 4"):
        kael.from_numpy(packed)


def test_from_numpy_rejects_non_native_byte_order():
    with pytest.raises(kael.ValueError, match="non-native byte order"):
        kael.from_numpy(np.zeros(2, dtype=">f4"))


def test_from_numpy_warns_for_a_read_only_array():
    arr = np.zeros(2)
    arr.flags.writeable = False
    with pytest.warns(UserWarning, match="not writable"):
        kael.from_numpy(arr)


def test_from_numpy_needs_an_array():
    with pytest.raises(kael.TypeError, match="expected a numpy.ndarray, got list"):
        kael.from_numpy([1, 2])


def test_from_dlpack_shares_memory_with_torch():
    t = torch.arange(6.0).view(2, 3).T
    k = kael.from_dlpack(t)
    assert k.strides() == t.stride()
    t[0, 1] = 42.0
    assert k[0, 1].item() == 42.0


def test_from_dlpack_of_numpy_and_of_kael_share_memory():
    arr = np.arange(3.0)
    assert kael.from_dlpack(arr).data_ptr() == arr.ctypes.data
    k = kael.arange(3)
    assert kael.from_dlpack(k).shares_storage(k)


def test_from_dlpack_needs_a_dlpack_producer():
    with pytest.raises(
        kael.TypeError, match="expects an object with __dlpack__ or a DLPack capsule, got list"
    ):
        kael.from_dlpack([1, 2])


def test_as_tensor_shares_when_nothing_changes():
    arr = np.arange(4.0)
    assert kael.as_tensor(arr).data_ptr() == arr.ctypes.data
    k = kael.zeros(2)
    assert kael.as_tensor(k) is k
    assert kael.as_tensor(k, dtype=kael.float32) is k


def test_as_tensor_copies_when_it_must():
    k = kael.as_tensor(kael.tensor([1.5, -1.5]), dtype=kael.int64)
    assert k.tolist() == [1, -1]
    reversed_ = np.arange(3.0)[::-1]
    assert kael.as_tensor(reversed_).tolist() == [2.0, 1.0, 0.0]
    assert kael.as_tensor([[1, 2]]).dtype is kael.int64


# ---- the dtypes beyond the book ------------------------------------------------------------


@pytest.mark.parametrize(
    ("np_dtype", "dtype"),
    [(np.uint8, kael.uint8), (np.int32, kael.int32), (np.float16, kael.float16)]
    + [(np.int16, kael.int16), (np.int8, kael.int8)],
    ids=str,
)
def test_from_numpy_of_narrow_dtypes_is_zero_copy(np_dtype, dtype):
    image = (np.arange(2 * 3 * 4) % 250).astype(np_dtype).reshape(2, 3, 4)
    k = kael.from_numpy(image)
    assert k.dtype is dtype
    assert k.data_ptr() == image.ctypes.data
    image[1, 2, 3] = 7
    assert k[1, 2, 3].item() == 7
    back = k.numpy()
    assert back.dtype == np_dtype and np.shares_memory(back, image)


def test_uint8_image_converts_to_float_as_torch():
    image = np.random.default_rng(3).integers(0, 256, (4, 5, 3), dtype=np.uint8)
    k = kael.from_numpy(image).permute(2, 0, 1).float() / 255
    t = torch.from_numpy(image).permute(2, 0, 1).float() / 255
    assert k.dtype is kael.float32 and k.shape == tuple(t.shape)
    np.testing.assert_array_equal(k.numpy(), t.numpy())


def test_bfloat16_has_no_numpy_array():
    k = kael.tensor([1.5, -2.0]).bfloat16()
    with pytest.raises(kael.TypeError, match="BFloat16"):
        k.numpy()
    with pytest.raises(kael.TypeError, match="BFloat16"):
        np.asarray(k)
    assert k.tolist() == [1.5, -2.0]
    assert k.float().numpy().tolist() == [1.5, -2.0]


@pytest.mark.parametrize("dtype", dtypes.ALL_DTYPES, ids=str)
def test_dlpack_round_trips_every_dtype_with_torch_without_a_copy(dtype, torch_dtype):
    t = torch.arange(12).view(3, 4).T[1:].to(torch_dtype(dtype))
    k = kael.from_dlpack(t)
    assert k.dtype is dtype
    assert (k.shape, k.strides()) == (tuple(t.shape), t.stride())
    assert k.data_ptr() == t.data_ptr()
    assert k.tolist() == t.tolist()
    back = torch.from_dlpack(k)
    assert back.dtype == t.dtype and back.data_ptr() == t.data_ptr()
    assert back.tolist() == t.tolist()


def test_bfloat16_goes_through_dlpack_both_ways():
    t = torch.tensor([1.5, -2.25, 3.0], dtype=torch.bfloat16)
    k = kael.from_dlpack(t)
    t[0] = 7.0
    assert k.tolist() == [7.0, -2.25, 3.0]
    assert torch.from_dlpack(k * 2).tolist() == [14.0, -4.5, 6.0]


def test_dlpack_export_lives_until_the_consumer_lets_go():
    from kael.frontend import dlpack

    before = len(dlpack._exported)
    k = kael.arange(5)
    consumer = torch.from_dlpack(k)
    unconsumed = k.__dlpack__(max_version=(1, 0))
    del k
    gc.collect()
    assert consumer.tolist() == [0, 1, 2, 3, 4]  # the storage is still alive
    assert len(dlpack._exported) == before + 2
    del consumer, unconsumed
    gc.collect()
    assert len(dlpack._exported) == before


class _Producer:
    """A DLPack producer that is not a kael.Tensor (from_dlpack detaches those directly)."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, **kwargs):
        return self.tensor.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()


def test_dlpack_import_calls_the_producers_deleter_when_done():
    from kael.frontend import dlpack

    before = len(dlpack._exported)
    imported = kael.from_dlpack(_Producer(kael.arange(4)))
    gc.collect()
    assert imported.tolist() == [0, 1, 2, 3]
    assert len(dlpack._exported) == before + 1  # the producer's memory is held
    del imported
    gc.collect()
    assert len(dlpack._exported) == before  # its deleter ran


def test_dlpack_export_refuses_another_device_or_a_stream():
    k = kael.arange(3)
    with pytest.raises(BufferError, match=r"on cpu \(1, 0\), got dl_device \(2, 0\)"):
        k.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match="no stream"):
        k.__dlpack__(stream=1)
    copied = torch.from_dlpack(k.__dlpack__(copy=True))
    assert copied.data_ptr() != k.data_ptr() and copied.tolist() == [0, 1, 2]


def test_a_cuda_capsule_without_a_gpu_is_refused_naming_its_device():
    if kael.cuda.is_available():
        return  # test_gpu_dlpack_shares_cuda_memory_both_ways imports it
    made = _fake_cuda_tensor().__dlpack__(stream=-1)  # -1: no stream to wait for
    with pytest.raises(kael.TypeError, match="where kael has a GPU; got DLPack device type 2"):
        kael.from_dlpack(made)


@pytest.mark.gpu
def test_gpu_dlpack_shares_cuda_memory_both_ways():
    t = kael.arange(6.0, device="cuda")
    for shared in (kael.from_dlpack(t), kael.from_dlpack(kael.utils.dlpack.to_dlpack(t))):
        assert shared.device == t.device and shared.data_ptr() == t.data_ptr()
    shared[0] = 7.0
    assert t[0].item() == 7.0 and t.__dlpack_device__() == (2, 0)
    with pytest.raises(BufferError, match=r"on cuda:0 \(2, 0\), got dl_device \(1, 0\)"):
        t.__dlpack__(dl_device=(1, 0))
    with pytest.raises(BufferError, match="stream=0 is not a CUDA stream for DLPack"):
        t.__dlpack__(stream=0)
    s = kael.cuda.Stream()
    with kael.cuda.stream(s):
        assert kael.from_dlpack(t * 2)[0].item() == 14.0  # t * 2 queued on s, finished first


def test_as_tensor_shares_a_torch_tensors_memory_and_tensor_copies_it():
    t = torch.arange(6.0).reshape(2, 3)
    shared, copied = kael.as_tensor(t), kael.tensor(t)
    t[0, 0] = 100.0
    assert shared[0, 0].item() == 100.0 and copied[0, 0].item() == 0.0
    assert kael.as_tensor(t, dtype=kael.float64).dtype is kael.float64
    np.testing.assert_array_equal(kael.tensor(t.t()).numpy(), t.t().numpy())


def test_tensor_reads_a_torch_tensor_that_requires_grad_and_bfloat16():
    weight = torch.nn.Parameter(torch.ones(2, 2))
    np.testing.assert_array_equal(kael.tensor(weight).numpy(), np.ones((2, 2)))
    half = kael.tensor(torch.tensor([1.5, -2.0], dtype=torch.bfloat16))
    assert half.dtype is kael.bfloat16 and half.tolist() == [1.5, -2.0]


def test_tensor_reads_any_object_numpy_can():
    class Image:
        def __array__(self, dtype=None, copy=None):
            return np.arange(6, dtype=np.uint8).reshape(2, 3)

    image = kael.tensor(Image())
    assert image.dtype is kael.uint8 and image.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert kael.tensor(np.float32(2.0)).dtype is kael.float32


def test_tensor_resolves_torchs_negative_bit_before_reading():
    view = torch.tensor([1 + 2j]).conj().imag  # a float view carrying torch's neg bit
    assert kael.tensor(view).tolist() == view.tolist() == [-2.0]


def test_a_torch_tensor_dlpack_cannot_carry_is_a_typed_error():
    with pytest.raises(kael.TypeError, match="through DLPack"):
        kael.tensor(torch.ones(2).to_sparse())


def test_asarray_and_from_dlpack_read_torch_tensors_as_tensor_does():
    view = torch.tensor([1 + 2j, 3 - 4j]).conj().imag  # the neg bit: true values [-2, 4]
    assert kael.asarray(view).tolist() == [-2.0, 4.0]
    assert kael.asarray(torch.ones(2, requires_grad=True)).tolist() == [1.0, 1.0]
    with pytest.raises(kael.TypeError, match="from_dlpack: cannot read"):
        kael.from_dlpack(torch.ones(2).to_sparse())


def test_freeing_an_export_of_an_imported_export_does_not_deadlock():
    """kael -> torch -> kael -> torch, then freed: the last deleter freed the middle import,
    whose owner ran the first export's deleter, which waited on the lock its own thread
    held (a hang)."""
    script = (
        "import gc, kael, torch\n"
        "a = kael.arange(6.0)\n"
        "t = torch.from_dlpack(a)\n"
        "b = kael.from_dlpack(t)\n"
        "c = torch.from_dlpack(b)\n"
        "del a, t, b\n"
        "gc.collect()\n"
        "del c\n"
        "print('freed')\n"
    )
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert res.returncode == 0 and "freed" in res.stdout, res.stderr


NUMPY_LEFT = {
    "float64 * t": lambda t: np.float64(2.0) * t,
    "float32 < t": lambda t: np.float32(1.5) < t,
    "int64 + t": lambda t: np.int64(1) + t,
    "float32 ** t": lambda t: np.float32(2) ** t,
    "np.sqrt(t)": lambda t: np.sqrt(t),
    "np.isnan(t)": lambda t: np.isnan(t),
}


@pytest.mark.parametrize("call", NUMPY_LEFT.values(), ids=NUMPY_LEFT.keys())
def test_numpy_scalars_and_functions_hand_back_tensors_as_torchs(call):
    """NumPy defers to the tensor's reflected operator (__array_priority__), and a NumPy
    function's result comes back a tensor (__array_wrap__; bool as uint8), as torch's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch's two-argument wrap
        got, want = call(kael.tensor([1.0, 2.0])), call(torch.tensor([1.0, 2.0]))
    assert isinstance(got, kael.Tensor) and str(got.dtype) == str(want.dtype)[6:]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_kael_to_dlpack_is_torchs_top_level_name_for_the_capsule():
    assert kael.to_dlpack is kael.utils.dlpack.to_dlpack
    back = torch.from_dlpack(kael.to_dlpack(kael.arange(3.0)))
    assert back.tolist() == [0.0, 1.0, 2.0] and back.dtype is torch.float32


@pytest.mark.parametrize(
    "call",
    [
        lambda t: kael.ones(2) + t,
        lambda t: kael.exp(t),
        lambda t: kael.nn.functional.relu(t),
        lambda t: kael.matmul(t, kael.ones(2, 2)),
        lambda t: kael.nn.Parameter(t),
    ],
    ids=["binary", "unary", "functional", "matmul", "parameter"],
)
def test_a_torch_tensor_given_to_kael_is_named_as_torchs_with_the_way_to_convert_it(call):
    with pytest.raises(
        kael.TypeError, match=r"got torch\.Tensor \(convert it with kael\.from_dlpack"
    ):
        call(torch.ones(2, 2))


def test_a_capsule_a_consumer_refuses_releases_its_export_and_keeps_the_consumers_error():
    """NumPy drops a bfloat16 capsule with its own error pending: the native destructor
    (codegen/cpu/capsule.py) sets it aside, releases the export, and puts it back (a Python
    destructor turned it into a SystemError and leaked the export)."""
    from kael.frontend import dlpack

    gc.collect()
    before = len(dlpack._exported)
    for _ in range(3):
        with pytest.raises(RuntimeError, match="Unsupported dtype"):
            np.from_dlpack(kael.ones(3, dtype=kael.bfloat16))
    gc.collect()
    assert len(dlpack._exported) == before
    for versioned in (False, True):  # a capsule no one consumed is released too
        capsule = kael.arange(4.0).__dlpack__(max_version=(1, 0) if versioned else None)
        assert len(dlpack._exported) == before + 1
        del capsule
        gc.collect()
        assert len(dlpack._exported) == before
