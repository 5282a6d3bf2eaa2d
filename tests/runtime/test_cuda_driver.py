"""cuda_driver against a scripted fake of cuda.bindings.driver: probe, context, checked calls."""

import ctypes
import enum
import threading

import cuda.bindings
import pytest

from kael.runtime import cuda_driver
from kael.runtime.allocator import allocator_for, memory_stats
from kael.runtime.errors import Error
from kael.runtime.storage import Storage


class FakeResult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_INVALID_VALUE = 1


OK = FakeResult.CUDA_SUCCESS


class FakeDriver:
    """Answers like the driver API: every call returns (CUresult, values...)."""

    CUresult = FakeResult

    def __init__(self, devices=1, init_raises=None):
        self.devices = devices
        self.init_raises = init_raises
        self.calls: list[str] = []
        self.bound_threads: set[int] = set()
        self.next_ptr = 1 << 40
        self.memory_left = 1 << 20
        self.sizes: dict[int, int] = {}

    def cuInit(self, flags):
        self.calls.append("cuInit")
        if self.init_raises:
            raise self.init_raises
        return (OK,)

    def cuDeviceGetCount(self):
        return (OK, self.devices)

    def cuDeviceGet(self, ordinal):
        return (OK, f"device{ordinal}")

    def cuDevicePrimaryCtxRetain(self, device):
        self.calls.append("cuDevicePrimaryCtxRetain")
        return (OK, f"context of {device}")

    def cuCtxSetCurrent(self, context):
        self.bound_threads.add(threading.get_ident())
        return (OK,)

    def cuMemAlloc(self, nbytes):
        self.calls.append("cuMemAlloc")
        if nbytes > self.memory_left:
            return (FakeResult.CUDA_ERROR_OUT_OF_MEMORY, None)
        self.memory_left -= nbytes
        ptr, self.next_ptr = self.next_ptr, self.next_ptr + nbytes
        self.sizes[ptr] = nbytes
        return (OK, ptr)

    def cuMemGetInfo(self):
        return (OK, self.memory_left, 1 << 20)

    def cuMemFree(self, ptr):
        self.calls.append("cuMemFree")
        self.memory_left += self.sizes.pop(ptr)
        return (OK,)

    def cuMemcpyHtoD(self, dst, src, nbytes):
        return (OK,)

    def cuMemcpyDtoH(self, dst, src, nbytes):
        return (FakeResult.CUDA_ERROR_INVALID_VALUE,)

    def cuMemcpyDtoD(self, dst, src, nbytes):
        return (OK,)

    def cuCtxSynchronize(self):
        self.calls.append("cuCtxSynchronize")
        return (OK,)

    class CUdevice_attribute(enum.IntEnum):
        CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76

    def cuDeviceGetName(self, length, device):
        return (OK, b"Fake H200" + b"\0" * (length - 9))

    def cuDeviceTotalMem(self, device):
        return (OK, 141 << 30)

    def cuDriverGetVersion(self):
        return (OK, 13000)

    def cuDeviceGetAttribute(self, attribute, device):
        values = {16: 132, 75: 9, 76: 0}
        return (OK, values[attribute])

    class CUfunction_attribute(enum.IntEnum):
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8

    def cuFuncSetAttribute(self, function, attribute, value):
        self.calls.append(("cuFuncSetAttribute", function, int(attribute), value))
        return (OK,)

    def cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self.calls.append(("cuLaunchKernel", function, shared))
        return (OK,)

    def cuGetErrorName(self, err):
        return (OK, FakeResult(err).name.encode())

    def cuGetErrorString(self, err):
        return (
            OK,
            FakeResult(err).name.removeprefix("CUDA_ERROR_").lower().replace("_", " ").encode(),
        )


def install(monkeypatch, driver):
    """A fresh, unprobed cuda_driver that will find `driver`."""
    state = {
        "_probed": False,
        "_available": False,
        "_reason": "",
        "_driver": None,
        "_context": None,
        "_device": None,
    }
    for name, value in state.items():
        monkeypatch.setattr(cuda_driver, name, value)
    monkeypatch.setattr(cuda_driver, "_thread", threading.local())
    monkeypatch.setattr(cuda_driver, "_forked", False)
    monkeypatch.setattr(cuda.bindings, "driver", driver, raising=False)
    return driver


@pytest.fixture
def gpu(monkeypatch):
    driver = install(monkeypatch, FakeDriver())
    yield driver
    allocator_for("cuda").empty_cache()  # while the fake is still installed


def test_probe_initializes_once_and_retains_the_primary_context(gpu):
    assert cuda_driver.is_available() and cuda_driver.is_available()
    assert gpu.calls == ["cuInit", "cuDevicePrimaryCtxRetain"]
    assert gpu.bound_threads == {threading.get_ident()}


def test_failed_probe_is_cached_and_touches_nothing_else(monkeypatch):
    driver = install(monkeypatch, FakeDriver(init_raises=RuntimeError("libcuda.so not found")))
    assert cuda_driver.is_available() is False
    assert cuda_driver.is_available() is False
    with pytest.raises(
        Error, match=r"^CUDA is not available: no NVIDIA driver or GPU was found .*libcuda"
    ):
        cuda_driver.mem_alloc(16)
    assert driver.calls == ["cuInit"]


def test_no_device_means_unavailable(monkeypatch):
    install(monkeypatch, FakeDriver(devices=0))
    assert cuda_driver.is_available() is False
    with pytest.raises(Error, match="CUDA is not available"):
        cuda_driver.synchronize()


def test_each_thread_binds_the_context_before_its_first_call(gpu):
    cuda_driver.synchronize()
    worker = threading.Thread(target=cuda_driver.synchronize)
    worker.start()
    worker.join()
    assert gpu.bound_threads == {threading.get_ident(), worker.ident}


def test_error_codes_raise_naming_the_call_and_the_error(gpu):
    with pytest.raises(Error, match="^cuMemcpyDtoH failed: CUDA_ERROR_INVALID_VALUE"):
        cuda_driver.memcpy_dtoh(0x1000, 0x2000, 8)
    cuda_driver.memcpy_htod(0x2000, 0x1000, 8)
    cuda_driver.memcpy_dtod(0x2000, 0x3000, 8)


def test_cuda_storage_uses_the_cuda_allocator(gpu):
    before = memory_stats("cuda")
    s = Storage(100, "cuda")
    assert s.ptr >= 1 << 40 and s.capacity == 512
    del s
    again = Storage(200, "cuda")  # the cached block comes back: one cuMemAlloc in total
    assert gpu.calls.count("cuMemAlloc") == 1
    assert memory_stats("cuda")["hits"] == before["hits"] + 1
    del again
    allocator_for("cuda").empty_cache()
    assert gpu.calls.count("cuMemFree") == 1


def test_cuda_out_of_memory_empties_the_cache_and_retries(gpu):
    gpu.memory_left = 1 << 17
    big = Storage(1 << 17, "cuda")
    del big  # cached: the fake device is now full
    small = Storage(600, "cuda")
    assert small.capacity == 1024
    assert gpu.calls.count("cuMemFree") == 1


def test_cuda_out_of_memory_names_the_bytes_asked_for_and_free(gpu):
    gpu.memory_left = 1000
    with pytest.raises(
        Error, match=r"cannot allocate 4096 bytes .*has 1000 bytes .* free of 1048576"
    ):
        cuda_driver.mem_alloc(4096)


def test_forked_child_refuses_cuda(gpu, monkeypatch):
    assert cuda_driver.is_available()
    monkeypatch.setattr(cuda_driver, "_probe_lock", cuda_driver._probe_lock)
    cuda_driver._after_fork_in_child()
    assert cuda_driver.is_available() is False
    with pytest.raises(Error, match="forked after CUDA was initialized"):
        cuda_driver.synchronize()
    cuda_driver.mem_free(12345)  # the parent's block: nothing to do, no error
    assert "cuMemFree" not in gpu.calls


def test_describe_reports_what_the_driver_says(gpu):
    assert cuda_driver.describe() == {
        "name": "Fake H200",
        "memory": 141 << 30,
        "multiprocessors": 132,
        "capability": (9, 0),
        "driver": 13000,
    }


def test_unavailable_reason_names_the_probes_failure(monkeypatch):
    install(monkeypatch, FakeDriver(init_raises=RuntimeError("libcuda.so not found")))
    reason = cuda_driver.unavailable_reason()
    assert reason.startswith("CUDA is not available") and "libcuda.so not found" in reason
    with pytest.raises(Error, match="libcuda.so not found"):
        cuda_driver.describe()


def test_unavailable_reason_is_empty_with_a_device_and_names_a_fork(gpu, monkeypatch):
    assert cuda_driver.unavailable_reason() == ""
    monkeypatch.setattr(cuda_driver, "_forked", True)
    assert "forked" in cuda_driver.unavailable_reason()


def test_dynamic_shared_memory_past_48_kb_is_allowed_once_per_function(gpu, monkeypatch):
    monkeypatch.setattr(cuda_driver, "_shared_allowed", {})
    wide, narrow = object(), object()

    def run(function, nbytes):
        cuda_driver.launch_kernel(function, 1, 128, [1, 2], shared_bytes=nbytes)

    threads = [threading.Thread(target=run, args=(wide, 96 * 1024)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    run(wide, 64 * 1024)  # less than already allowed: no call
    run(narrow, 16 * 1024)  # within the 48 KB every function has: no call
    run(narrow, 0)
    sets = [c for c in gpu.calls if c[0] == "cuFuncSetAttribute"]
    assert sets == [("cuFuncSetAttribute", wide, 8, 96 * 1024)]
    launches = [c for c in gpu.calls if c[0] == "cuLaunchKernel"]
    assert [c[2] for c in launches] == [96 * 1024] * 8 + [64 * 1024, 16 * 1024, 0]


class LinkingDriver(FakeDriver):
    """A driver with the JIT linker: a PTX module links to 'CUBIN <ptx>'."""

    class CUjitInputType(enum.IntEnum):
        CU_JIT_INPUT_PTX = 1

    def __init__(self):
        super().__init__()
        self.loaded: list[bytes] = []
        self._images = []

    def cuLinkCreate(self, count, options, values):
        self.calls.append("cuLinkCreate")
        return (OK, "state")

    def cuLinkAddData(self, state, kind, data, size, name, count, options, values):
        self._images.append(ctypes.create_string_buffer(b"CUBIN " + data.rstrip(b"\0")))
        return (OK,)

    def cuLinkComplete(self, state):
        image = self._images[-1]
        return (OK, ctypes.addressof(image), len(image.value))

    def cuLinkDestroy(self, state):
        return (OK,)

    def cuModuleLoadData(self, data):
        self.loaded.append(bytes(data))
        return (OK, f"module {len(self.loaded)}")

    def cuModuleGetFunction(self, module, name):
        return (OK, (module, name))


def test_modules_load_the_cubin_linked_once_per_device(monkeypatch, tmp_path):
    monkeypatch.setenv("KAEL_CACHE_DIR", str(tmp_path))
    cuda_driver._device_text.cache_clear()
    driver = install(monkeypatch, LinkingDriver())
    ptx = ".version 8.0\n.target sm_90\n"
    module, function = cuda_driver.load_function(ptx, "k")
    assert function == (module, b"k") and driver.loaded == [b"CUBIN " + ptx.encode()]
    cuda_driver.load_function(ptx, "k")  # a later load: the stored cubin, no link
    assert driver.loaded[1] == driver.loaded[0] and driver.calls.count("cuLinkCreate") == 1
    assert cuda_driver._device_text() == "sm_90 driver 13000"
    cuda_driver._device_text.cache_clear()
