"""A thin, checked layer over cuda.bindings.driver: one cached probe, then plain calls.

Without a driver, `cuInit` raises (cuda.pathfinder's DynamicLibNotFoundError) instead
of returning an error code, and later calls into CUDA can misbehave, so the probe runs
once, catches everything, and after a failed probe nothing else of CUDA is touched.
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading
import time

from kael.runtime import cubin, launches, sync
from kael.runtime.errors import Error, OutOfMemoryError

_UNAVAILABLE = "CUDA is not available: no NVIDIA driver or GPU was found"

_probe_lock = sync.lock()
_probed = False
_available = False
_reason = ""  # why the probe failed, appended to the error message
_driver = None  # the cuda.bindings.driver module, set only by a successful probe
_context = None  # the primary context of device 0
_device = None  # device 0's handle
_thread = threading.local()  # .bound: the context is current on this thread
_forked = False  # this process was forked from one that had initialized CUDA


def _probe() -> None:
    """Initialize CUDA once: cuInit, device 0, its primary context; remember any failure."""
    global _probed, _available, _reason, _driver, _context, _device
    with _probe_lock:
        if _probed:
            return
        try:
            driver = _driver_module()
            _call(driver, "cuInit", driver.cuInit(0))
            (count,) = _call(driver, "cuDeviceGetCount", driver.cuDeviceGetCount())
            if count < 1:
                raise Error("no CUDA device")
            (device,) = _call(driver, "cuDeviceGet", driver.cuDeviceGet(0))
            (context,) = _call(
                driver, "cuDevicePrimaryCtxRetain", driver.cuDevicePrimaryCtxRetain(device)
            )
            _call(driver, "cuCtxSetCurrent", driver.cuCtxSetCurrent(context))
        except Exception as exc:  # no driver, no device, or a driver error: all mean "absent"
            _reason = f"{type(exc).__name__}: {exc}"
        else:
            _driver, _context, _device, _available = driver, context, device, True
            _thread.bound = True
        _probed = True


def emulated() -> bool:
    """Whether KAEL_EMULATE_CUDA=1 asks for the emulated device (runtime/emulator) instead
    of a driver: kael's PTX run on the CPU, for tests on machines without a GPU."""
    return os.environ.get("KAEL_EMULATE_CUDA", "").strip() == "1"


def _driver_module():
    if emulated():
        from kael.runtime.emulator import driver
    else:
        from cuda.bindings import driver
    return driver


def _call(driver, name: str, result: tuple) -> tuple:
    """Check the CUresult that every driver call returns first; return the other values."""
    err = result[0]
    if err != driver.CUresult.CUDA_SUCCESS:
        kind = OutOfMemoryError if err == driver.CUresult.CUDA_ERROR_OUT_OF_MEMORY else Error
        raise kind(f"{name} failed: {_error_text(driver, err)}")
    return result[1:]


def _error_text(driver, err) -> str:
    """'CUDA_ERROR_OUT_OF_MEMORY (out of memory)', as far as the driver can describe it."""
    try:
        name_err, name = driver.cuGetErrorName(err)
        text_err, text = driver.cuGetErrorString(err)
    except Exception:
        return f"error {int(err)}"
    name = name.decode() if name_err == driver.CUresult.CUDA_SUCCESS else f"error {int(err)}"
    if text_err == driver.CUresult.CUDA_SUCCESS:
        return f"{name} ({text.decode()})"
    return name


def is_available() -> bool:
    """Whether a driver and at least one GPU were found (probed once per process)."""
    if not _probed:
        _probe()
    return _available and not _forked


def unavailable_reason() -> str:
    """Why CUDA is not usable here ('' where it is): the probe's failure, or the fork."""
    if not _probed:
        _probe()
    if _forked:
        return "CUDA cannot be used in a process forked after CUDA was initialized"
    if _available:
        return ""
    return f"{_UNAVAILABLE} ({_reason})" if _reason else _UNAVAILABLE


_ATTRIBUTES = {
    "multiprocessors": "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT",
    "major": "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR",
    "minor": "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR",
}


def describe() -> dict[str, object]:
    """Device 0 as the driver reports it: name, memory in bytes, multiprocessors, compute
    capability (major, minor) and the driver's CUDA version (12080: 12.8)."""
    driver = require()
    (name,) = _call(driver, "cuDeviceGetName", driver.cuDeviceGetName(256, _device))
    (memory,) = _call(driver, "cuDeviceTotalMem", driver.cuDeviceTotalMem(_device))
    (version,) = _call(driver, "cuDriverGetVersion", driver.cuDriverGetVersion())
    found = {}
    for key, attribute in _ATTRIBUTES.items():
        which = getattr(driver.CUdevice_attribute, attribute)
        (found[key],) = _call(
            driver, "cuDeviceGetAttribute", driver.cuDeviceGetAttribute(which, _device)
        )
    return {
        "name": bytes(name).split(b"\0")[0].decode(errors="replace"),
        "memory": int(memory),
        "multiprocessors": int(found["multiprocessors"]),
        "capability": (int(found["major"]), int(found["minor"])),
        "driver": int(version),
    }


def require():
    """The driver module with device 0's context current on this thread; kael.Error if absent."""
    if not _probed:
        _probe()
    if _forked or not _available:
        raise Error(unavailable_reason())
    if not getattr(_thread, "bound", False):
        # A context is current per thread: bind the primary context on first use here.
        _call(_driver, "cuCtxSetCurrent", _driver.cuCtxSetCurrent(_context))
        _thread.bound = True
    return _driver


def mem_alloc(nbytes: int) -> int:
    """Device memory of `nbytes` bytes (cuMemAlloc, 256-byte aligned); its address. Out of
    memory is a kael.Error naming the bytes asked for and the bytes the device has free."""
    driver = require()
    result = driver.cuMemAlloc(nbytes)
    if result[0] == driver.CUresult.CUDA_ERROR_OUT_OF_MEMORY:
        free, total = mem_info()
        raise OutOfMemoryError(
            f"cuMemAlloc failed: {_error_text(driver, result[0])}: cannot allocate {nbytes}"
            f" bytes ({gib(nbytes)}); the device has {free} bytes ({gib(free)}) free of"
            f" {total} ({gib(total)})"
        )
    (ptr,) = _call(driver, "cuMemAlloc", result)
    return int(ptr)


def mem_info() -> tuple[int, int]:
    """(free, total) bytes of device memory (cuMemGetInfo)."""
    driver = require()
    free, total = _call(driver, "cuMemGetInfo", driver.cuMemGetInfo())
    return int(free), int(total)


def gib(nbytes: int) -> str:
    """`nbytes` in GiB, for messages."""
    return f"{nbytes / (1 << 30):.2f} GiB"


def host_alloc_pinned(nbytes: int) -> int:
    """Page-locked host memory of `nbytes` bytes (cuMemHostAlloc): copies from it to the
    device can run asynchronously. Its address."""
    driver = require()
    (ptr,) = _call(driver, "cuMemHostAlloc", driver.cuMemHostAlloc(nbytes, 0))
    return int(ptr)


def host_free_pinned(ptr: int) -> None:
    if _forked:
        return  # pinned by the parent's context
    driver = require()
    _call(driver, "cuMemFreeHost", driver.cuMemFreeHost(ptr))


def _recorded(copy):
    """A copy between host and device that reports itself as a launch where launches are
    watched (KAEL_DEBUG, kael.explain): the host's time for it, its bytes, on cuda:0."""

    @functools.wraps(copy)
    def recorded(dst: int, src: int, nbytes: int) -> None:
        if not launches.watched():
            return copy(dst, src, nbytes)
        start = time.perf_counter()
        copy(dst, src, nbytes)
        seconds = time.perf_counter() - start
        launches.report(
            launches.Launch(copy.__name__, None, 1, nbytes, seconds, device="cuda:0", kind="copy")
        )

    return recorded


@_recorded
def memcpy_htod_async(dst: int, src: int, nbytes: int) -> None:
    """Copy from pinned host memory to the device on the current stream, without waiting."""
    driver = require()
    stream = current_stream() or 0
    _call(driver, "cuMemcpyHtoDAsync", driver.cuMemcpyHtoDAsync(dst, src, nbytes, stream))


def mem_free(ptr: int) -> None:
    """Return memory from mem_alloc to the driver."""
    if _forked:
        return  # the block belongs to the parent's context; the child cannot free it
    driver = require()
    _call(driver, "cuMemFree", driver.cuMemFree(ptr))


@_recorded
def memcpy_htod(dst: int, src: int, nbytes: int) -> None:
    """Copy `nbytes` from host address `src` to device address `dst` on the current stream;
    the host memory may be reused on return (from pinned memory the async copy would not
    have finished: the stream is waited for)."""
    driver = require()
    stream = current_stream()
    if stream is None:
        _call(driver, "cuMemcpyHtoD", driver.cuMemcpyHtoD(dst, src, nbytes))
    else:
        _call(driver, "cuMemcpyHtoDAsync", driver.cuMemcpyHtoDAsync(dst, src, nbytes, stream))
        stream_synchronize(stream)


@_recorded
def memcpy_dtoh(dst: int, src: int, nbytes: int) -> None:
    """Copy `nbytes` from device address `src` to host address `dst`, waiting for the current
    stream only (the other streams keep running)."""
    driver = require()
    stream = current_stream()
    if stream is None:
        _call(driver, "cuMemcpyDtoH", driver.cuMemcpyDtoH(dst, src, nbytes))
        return
    _call(driver, "cuMemcpyDtoHAsync", driver.cuMemcpyDtoHAsync(dst, src, nbytes, stream))
    stream_synchronize(stream)


@_recorded
def memcpy_dtod(dst: int, src: int, nbytes: int) -> None:
    """Copy `nbytes` between two device addresses on the current stream."""
    driver = require()
    stream = current_stream()
    if stream is None:
        _call(driver, "cuMemcpyDtoD", driver.cuMemcpyDtoD(dst, src, nbytes))
    else:
        _call(driver, "cuMemcpyDtoDAsync", driver.cuMemcpyDtoDAsync(dst, src, nbytes, stream))


# ---- streams and events ----------------------------------------------------------------------
# A stream is the driver's handle; None is the null (legacy default) stream, which waits for
# the work of every other stream kael makes (they are created blocking) and they for it.


def current_stream():
    """This thread's current stream handle (None: the null stream)."""
    return getattr(_thread, "stream", None)


def stream_key(handle) -> int:
    """A stream handle's identity: the driver's pointer value (cuda-python's CUstream is
    int()-able), else the handle object's (the emulator's); 0 for the null stream."""
    if handle is None:
        return 0
    try:
        return int(handle)
    except (TypeError, ValueError):  # a handle object (the emulator's, a test's)
        return id(handle)


def set_current_stream(stream) -> None:
    _thread.stream = stream


def stream_create():
    driver = require()
    (stream,) = _call(driver, "cuStreamCreate", driver.cuStreamCreate(0))
    return stream


def stream_synchronize(stream) -> None:
    """Wait for the work queued on `stream` (None: the null stream, which waits for all)."""
    if stream is None:
        synchronize()
        return
    driver = require()
    _call(driver, "cuStreamSynchronize", driver.cuStreamSynchronize(stream))


def _done(driver, name: str, result: tuple) -> bool:
    """A query's answer: True when finished, False when not ready, else kael.Error."""
    if result[0] == driver.CUresult.CUDA_ERROR_NOT_READY:
        return False
    _call(driver, name, result)
    return True


def stream_query(stream) -> bool:
    driver = require()
    return _done(driver, "cuStreamQuery", driver.cuStreamQuery(stream or 0))


def event_create(timing: bool = False):
    driver = require()
    flags = 0 if timing else driver.CUevent_flags.CU_EVENT_DISABLE_TIMING
    (event,) = _call(driver, "cuEventCreate", driver.cuEventCreate(flags))
    return event


def event_destroy(event) -> None:
    if _forked or not _available:
        return
    driver = require()
    _call(driver, "cuEventDestroy", driver.cuEventDestroy(event))


def event_record(event, stream) -> None:
    driver = require()
    _call(driver, "cuEventRecord", driver.cuEventRecord(event, stream or 0))


def event_query(event) -> bool:
    driver = require()
    return _done(driver, "cuEventQuery", driver.cuEventQuery(event))


def event_synchronize(event) -> None:
    driver = require()
    _call(driver, "cuEventSynchronize", driver.cuEventSynchronize(event))


def event_elapsed_ms(start, end) -> float:
    """Milliseconds between two recorded, completed timing events."""
    driver = require()
    (ms,) = _call(driver, "cuEventElapsedTime", driver.cuEventElapsedTime(start, end))
    return float(ms)


def stream_wait_event(stream, event) -> None:
    """Work queued on `stream` after this waits for `event`."""
    driver = require()
    _call(driver, "cuStreamWaitEvent", driver.cuStreamWaitEvent(stream or 0, event, 0))


def synchronize() -> None:
    """Wait until all work queued on the device has finished."""
    driver = require()
    _call(driver, "cuCtxSynchronize", driver.cuCtxSynchronize())


def load_function(ptx: str, name: str) -> tuple[object, object]:
    """Load PTX as a module and find its entry `name`: (module, function). On a GPU the
    module is the PTX's cubin from the kernel cache (runtime/cubin.py), linked by the
    driver on first use; the emulated device reads the PTX (up to its terminating NUL)."""
    driver = require()
    text = ptx.encode() + b"\0"
    data = text if emulated() else cubin.image(driver, ptx, _device_text())
    (module,) = _call(driver, "cuModuleLoadData", driver.cuModuleLoadData(data))
    (function,) = _call(
        driver, "cuModuleGetFunction", driver.cuModuleGetFunction(module, name.encode())
    )
    return module, function


@functools.cache
def _device_text() -> str:
    """Device 0 as a cubin's key needs it: 'sm_90 driver 13000'."""
    d = describe()
    major, minor = d["capability"]
    return f"sm_{major}{minor} driver {d['driver']}"


_STATIC_SHARED_LIMIT = 48 * 1024  # what a launch may use without opting in
_shared_lock = sync.lock()
_shared_allowed: dict[int, tuple[object, int]] = {}  # id(function): (function, bytes allowed)


def allow_dynamic_shared(function, nbytes: int) -> None:
    """Let launches of `function` ask for up to `nbytes` of dynamic shared memory: raise its
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (cuFuncSetAttribute) once, the first
    time more than the 48 KB every function may use is asked for; thread-safe."""
    if nbytes <= _STATIC_SHARED_LIMIT:
        return
    found = _shared_allowed.get(id(function))
    if found is not None and found[0] is function and found[1] >= nbytes:
        return
    driver = require()
    with _shared_lock:
        found = _shared_allowed.get(id(function))
        if found is not None and found[0] is function and found[1] >= nbytes:
            return
        attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        _call(driver, "cuFuncSetAttribute", driver.cuFuncSetAttribute(function, attribute, nbytes))
        # the function is held here, so its id names no other while the entry lives
        _shared_allowed[id(function)] = (function, nbytes)


def launch_kernel(
    function,
    blocks: int,
    threads: int,
    words: list[int],
    *,
    shared_bytes: int = 0,
    name: str = "",
    moved: int = 0,
    flops: int = 0,
    kernel=None,
) -> None:
    """cuLaunchKernel on the current stream with one 64-bit parameter per word and
    `shared_bytes` of dynamic shared memory (past 48 KB the function is first allowed as
    much: allow_dynamic_shared). Where launches are watched (KAEL_DEBUG, kael.explain),
    events around it time the kernel alone on the device, and the launch is reported with
    `name`, the bytes it moves and its flops."""
    driver = require()
    if shared_bytes:
        allow_dynamic_shared(function, shared_bytes)
    n = len(words)
    values = (ctypes.c_int64 * n)(*words)
    base = ctypes.addressof(values)
    # cuLaunchKernel copies each parameter from the address in its slot of this array.
    pointers = (ctypes.c_void_p * n)(*(base + 8 * i for i in range(n)))
    stream = current_stream()
    timed = launches.watched()
    if timed:
        start, end = event_create(timing=True), event_create(timing=True)
        event_record(start, stream)
    grid, block = (blocks, 1, 1), (threads, 1, 1)
    args = (*grid, *block, shared_bytes, stream or 0, ctypes.addressof(pointers), 0)
    _call(driver, "cuLaunchKernel", driver.cuLaunchKernel(function, *args))
    if timed:
        event_record(end, stream)
        event_synchronize(end)
        seconds = event_elapsed_ms(start, end) / 1e3
        event_destroy(start)
        event_destroy(end)
        launches.report(
            launches.Launch(
                name or "cuda kernel",
                None,
                blocks * threads,
                moved,
                seconds,
                flops,
                kernel,
                device="cuda:0",
            )
        )


def _after_fork_in_child() -> None:
    """A CUDA context does not survive fork(): refuse CUDA in the child of an initialized parent."""
    global _forked
    if _available:
        _forked = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
