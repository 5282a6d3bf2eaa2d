"""The emulated device behind the calls `runtime/cuda_driver.py` makes of
`cuda.bindings.driver`: each returns (CUresult, values...) as the binding does, so the
same checked layer runs on a GPU and here. KAEL_EMULATE_CUDA=1 selects it."""

from __future__ import annotations

import ctypes
import enum
import time

from kael.runtime import sync
from kael.runtime.emulator import machine, memory, ptx
from kael.runtime.emulator.memory import Fault, Memory

NAME = "kael PTX emulator (sm_90)"
DRIVER_VERSION = 12080


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_INVALID_PTX = 218
    CUDA_ERROR_INVALID_HANDLE = 400
    CUDA_ERROR_NOT_FOUND = 500
    CUDA_ERROR_NOT_READY = 600
    CUDA_ERROR_ILLEGAL_ADDRESS = 700
    CUDA_ERROR_LAUNCH_TIMEOUT = 702
    CUDA_ERROR_ILLEGAL_INSTRUCTION = 715
    CUDA_ERROR_MISALIGNED_ADDRESS = 716
    CUDA_ERROR_LAUNCH_FAILED = 719
    CUDA_ERROR_NOT_SUPPORTED = 801


_DESCRIPTIONS = {
    CUresult.CUDA_SUCCESS: "no error",
    CUresult.CUDA_ERROR_INVALID_VALUE: "invalid argument",
    CUresult.CUDA_ERROR_OUT_OF_MEMORY: "out of memory",
    CUresult.CUDA_ERROR_INVALID_PTX: "a PTX JIT compilation failed",
    CUresult.CUDA_ERROR_NOT_FOUND: "named symbol not found",
    CUresult.CUDA_ERROR_INVALID_HANDLE: "invalid resource handle",
    CUresult.CUDA_ERROR_NOT_READY: "device not ready",
    CUresult.CUDA_ERROR_ILLEGAL_ADDRESS: "an illegal memory access was encountered",
    CUresult.CUDA_ERROR_LAUNCH_TIMEOUT: "the launch timed out and was terminated",
    CUresult.CUDA_ERROR_ILLEGAL_INSTRUCTION: "an illegal instruction was encountered",
    CUresult.CUDA_ERROR_MISALIGNED_ADDRESS: "misaligned address",
    CUresult.CUDA_ERROR_LAUNCH_FAILED: "unspecified launch failure",
    CUresult.CUDA_ERROR_NOT_SUPPORTED: "operation not supported",
}


class CUevent_flags(enum.IntEnum):
    CU_EVENT_DEFAULT = 0
    CU_EVENT_DISABLE_TIMING = 2


class CUdevice_attribute(enum.IntEnum):
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76


_ATTRIBUTES = {
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 4,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: 9,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: 0,
}


class CUfunction_attribute(enum.IntEnum):
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


STATIC_SHARED_LIMIT = 48 * 1024  # a CTA's shared memory without opting in
SHARED_OPTIN_LIMIT = 227 * 1024  # sm_90's most shared memory a CTA may opt in to

OK = CUresult.CUDA_SUCCESS
_memory = Memory()
_lock = sync.lock(reentrant=True)  # one device: launches and copies run one at a time
_last_fault = ""  # the emulator's account of the last failure, for cuGetErrorString


class Module:
    def __init__(self, parsed: ptx.Module) -> None:
        self.parsed = parsed
        self.addresses: dict[str, int] = {}
        for var in parsed.variables.values():  # module variables live in device memory
            at = _memory.alloc(max(var.size, 1))
            _memory.span(at, len(var.init))[:] = memoryview(var.init) if var.init else b""
            self.addresses[var.name] = at


class Function:
    def __init__(self, module: Module, fn: ptx.Function) -> None:
        self.module = module
        self.fn = fn
        # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: at first what fits in 48 KB
        self.max_dynamic_shared = max(0, STATIC_SHARED_LIMIT - fn.shared_bytes)


def _failed(exc: Fault):
    global _last_fault
    _last_fault = str(exc)
    return (CUresult[exc.code],)


def cuInit(flags: int):
    return (OK,)


def cuDeviceGetCount():
    return OK, 1


def cuDeviceGet(ordinal: int):
    return (OK, 0) if ordinal == 0 else (CUresult.CUDA_ERROR_INVALID_VALUE, None)


def cuDevicePrimaryCtxRetain(device):
    return OK, "kael-emulated-context"


def cuCtxSetCurrent(context):
    return (OK,)


def cuCtxSynchronize():
    return (OK,)


def cuGetErrorName(err):
    return OK, CUresult(err).name.encode()


def cuGetErrorString(err):
    text = _DESCRIPTIONS.get(CUresult(err), "error")
    if err != OK and _last_fault:
        text = f"{text}: {_last_fault}"
    return OK, text.encode()


def cuDeviceGetName(length: int, device):
    return OK, NAME.encode()[: length - 1]


def cuDeviceTotalMem(device):
    return OK, memory.TOTAL_BYTES


def cuDriverGetVersion():
    return OK, DRIVER_VERSION


def cuDeviceGetAttribute(attribute, device):
    return OK, _ATTRIBUTES[CUdevice_attribute(attribute)]


def cuMemGetInfo():
    return OK, memory.TOTAL_BYTES - _memory.in_use, memory.TOTAL_BYTES


def cuMemAlloc(nbytes: int):
    with _lock:
        try:
            return OK, _memory.alloc(int(nbytes))
        except Fault as exc:
            return (*_failed(exc), None)


_pinned: dict[int, ctypes.Array] = {}  # page-locked host memory: plain host memory here


def cuMemHostAlloc(nbytes, flags):
    block = (ctypes.c_char * max(1, int(nbytes)))()
    _pinned[ctypes.addressof(block)] = block
    return OK, ctypes.addressof(block)


def cuMemFreeHost(ptr):
    if _pinned.pop(int(ptr), None) is None:
        return _failed(Fault("CUDA_ERROR_INVALID_VALUE", f"cuMemFreeHost of {int(ptr):#x}"))
    return (OK,)


def cuMemFree(ptr):
    with _lock:
        try:
            _memory.free(int(ptr))
        except Fault as exc:
            return _failed(exc)
        return (OK,)


def _copy(how, dst, src, nbytes):
    with _lock:
        try:
            how(int(dst), int(src), int(nbytes))
        except Fault as exc:
            return _failed(exc)
        return (OK,)


def cuMemcpyHtoD(dst, src, nbytes):
    return _copy(_memory.copy_from_host, dst, src, nbytes)


def cuMemcpyDtoH(dst, src, nbytes):
    return _copy(_memory.copy_to_host, dst, src, nbytes)


def cuMemcpyDtoD(dst, src, nbytes):
    return _copy(_memory.copy, dst, src, nbytes)


# The emulated device runs every launch and copy at once, in order: each stream's work is
# done when its call returns, so queries answer "done" and waits return at once.
def cuMemcpyHtoDAsync(dst, src, nbytes, stream):
    return cuMemcpyHtoD(dst, src, nbytes)


def cuMemcpyDtoHAsync(dst, src, nbytes, stream):
    return cuMemcpyDtoH(dst, src, nbytes)


def cuMemcpyDtoDAsync(dst, src, nbytes, stream):
    return cuMemcpyDtoD(dst, src, nbytes)


class Stream:
    pass


class Event:
    def __init__(self, timing: bool) -> None:
        self.timing = timing
        self.at: float | None = None


def cuStreamCreate(flags):
    return OK, Stream()


def cuStreamDestroy(stream):
    return (OK,)


def cuStreamSynchronize(stream):
    return (OK,)


def cuStreamQuery(stream):
    return (OK,)


def cuStreamWaitEvent(stream, event, flags):
    return (OK,)


def cuEventCreate(flags):
    return OK, Event(not int(flags) & CUevent_flags.CU_EVENT_DISABLE_TIMING)


def cuEventDestroy(event):
    return (OK,)


def cuEventRecord(event, stream):
    event.at = time.perf_counter()
    return (OK,)


def cuEventQuery(event):
    return (OK,)


def cuEventSynchronize(event):
    return (OK,)


def cuEventElapsedTime(start, end):
    if not (start.timing and end.timing) or start.at is None or end.at is None:
        return (
            *_failed(
                Fault("CUDA_ERROR_INVALID_HANDLE", "an event without timing or never recorded")
            ),
            None,
        )
    return OK, (end.at - start.at) * 1e3


def cuModuleLoadData(image: bytes):
    text = bytes(image).split(b"\0")[0].decode()
    with _lock:
        try:
            return OK, Module(ptx.parse(text))
        except ptx.PtxSyntaxError as exc:
            return (*_failed(Fault("CUDA_ERROR_INVALID_PTX", str(exc))), None)


def cuModuleGetFunction(module: Module, name: bytes):
    fn = module.parsed.functions.get(name.decode())
    if fn is None:
        return (*_failed(Fault("CUDA_ERROR_NOT_FOUND", f"no entry {name.decode()}")), None)
    return OK, Function(module, fn)


def cuFuncSetAttribute(function: Function, attribute, value):
    """Only the dynamic shared memory a launch may ask for can be set: with the function's
    static shared memory at most the device's SHARED_OPTIN_LIMIT, as on sm_90."""
    try:
        which = CUfunction_attribute(attribute)
    except ValueError:
        return _failed(Fault("CUDA_ERROR_INVALID_VALUE", f"function attribute {attribute}"))
    value = int(value)
    if which is CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        if value < 0 or value + function.fn.shared_bytes > SHARED_OPTIN_LIMIT:
            return _failed(
                Fault(
                    "CUDA_ERROR_INVALID_VALUE",
                    f"{value} bytes of dynamic shared memory with {function.fn.shared_bytes}"
                    f" static: the device has at most {SHARED_OPTIN_LIMIT} a CTA",
                )
            )
        function.max_dynamic_shared = value
    return (OK,)


def cuLaunchKernel(function: Function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
    """Run the launch now (the emulated device has one in-order queue); its parameters are
    read from the array of pointers at `params`, one per declared parameter. `shared`
    bytes of dynamic shared memory back the function's `.extern .shared` arrays, at most
    what cuFuncSetAttribute allowed (48 KB with the static ones, if it was not called)."""
    if (gy, gz, by, bz) != (1, 1, 1, 1) or extra:
        return _failed(Fault("CUDA_ERROR_NOT_SUPPORTED", "only 1-D launches"))
    shared = int(shared)
    if shared < 0 or shared > function.max_dynamic_shared:
        return _failed(
            Fault(
                "CUDA_ERROR_INVALID_VALUE",
                f"{shared} bytes of dynamic shared memory asked for, {function.max_dynamic_shared}"
                " allowed (cuFuncSetAttribute's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)",
            )
        )
    fn = function.fn
    pointers = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
    values = {name: ctypes.string_at(pointers[k], size) for k, (name, size) in enumerate(fn.params)}
    with _lock:
        try:
            machine.launch(fn, _memory, function.module.addresses, int(gx), int(bx), values, shared)
        except Fault as exc:
            return _failed(exc)
    return (OK,)
