"""kael.cuda: whether a GPU is usable, streams and events, and waiting for the device.

As in PyTorch: every launch and copy goes to the thread's current stream (the null stream
unless a `with kael.cuda.stream(s):` block says otherwise), a read to the host waits for
that stream only, and `Event`s order streams and time their work.
"""

from __future__ import annotations

import contextlib as _contextlib
import types as _types
from collections.abc import Iterator as _Iterator

from kael.frontend import autocast as _autocast
from kael.runtime import cuda_driver as _driver
from kael.runtime.allocator import allocator_for as _allocator_for
from kael.runtime.cuda_driver import stream_key as _stream_key
from kael.runtime.device import CUDA as _CUDA
from kael.runtime.device import Device as _Device
from kael.runtime.device import cuda_is_available as is_available
from kael.runtime.device import cuda_synchronize as synchronize
from kael.runtime.dtypes import float16 as _float16
from kael.runtime.errors import Error as _Error
from kael.runtime.errors import OutOfMemoryError
from kael.runtime.errors import TypeError as _TypeError
from kael.runtime.errors import ValueError as _ValueError

__all__ = [
    "DeviceProperties", "Event", "OutOfMemoryError", "Stream", "amp", "current_device", "current_stream", "default_stream", "device",
    "device_count", "empty_cache", "get_device_capability", "get_device_name", "get_device_properties",
    "get_rng_state", "get_rng_state_all", "initial_seed", "is_available", "is_bf16_supported", "is_initialized",
    "manual_seed", "manual_seed_all", "max_memory_allocated", "max_memory_reserved", "mem_get_info",
    "memory_allocated", "memory_reserved", "memory_stats", "memory_summary", "record_stream",
    "reset_peak_memory_stats", "seed", "seed_all", "set_device", "set_rng_state", "set_rng_state_all", "stream",
    "synchronize",
]  # fmt: skip


class Stream:
    """A queue of device work that runs in order, beside other streams' work.

    `Stream()` makes a new one; `current_stream()` and `default_stream()` return the ones in
    use (the default is the null stream, which waits for every other stream and they for it).
    A stream's handle lives as long as the process (as PyTorch pools its streams): the
    allocator may still record events on it for blocks freed after the Stream object died.
    """

    __slots__ = ("_handle", "__weakref__")

    def __init__(self) -> None:
        self._handle = _driver.stream_create()
        _handles.append(self._handle)

    @classmethod
    def _of(cls, handle) -> Stream:
        s = object.__new__(cls)
        s._handle = handle
        return s

    def synchronize(self) -> None:
        """Wait until the work queued on this stream has finished."""
        _driver.stream_synchronize(self._handle)

    def query(self) -> bool:
        """Whether all work queued on this stream has finished."""
        return _driver.stream_query(self._handle)

    def record_event(self, event: Event | None = None) -> Event:
        """Record `event` (a new one if None) at this point of the stream."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        """Work queued on this stream from now on waits for `event`."""
        _arg(event, Event, "wait_event")
        _driver.stream_wait_event(self._handle, event._handle)

    def wait_stream(self, other: Stream) -> None:
        """Work queued on this stream from now on waits for the work queued on `other` so far."""
        self.wait_event(_arg(other, Stream, "wait_stream").record_event())

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and _stream_key(other._handle) == _stream_key(self._handle)

    def __hash__(self) -> int:
        return hash(("stream", _stream_key(self._handle)))

    def __repr__(self) -> str:
        return (
            "<kael.cuda.Stream null>"
            if self._handle is None
            else f"<kael.cuda.Stream {id(self):#x}>"
        )


_handles: list = []  # every stream made: never destroyed (see Stream)


class Event:
    """A marker in a stream: record it, wait for it, and time the work between two."""

    __slots__ = ("_handle", "_timing", "_recorded")

    def __init__(self, enable_timing: bool = False) -> None:
        if not isinstance(enable_timing, bool):
            raise _TypeError(
                f"Event(): enable_timing must be a bool, got {type(enable_timing).__name__}"
            )
        self._handle = _driver.event_create(timing=enable_timing)
        self._timing = enable_timing
        self._recorded = False

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on `stream` (the current stream if None)."""
        stream = current_stream() if stream is None else _arg(stream, Stream, "record")
        _driver.event_record(self._handle, stream._handle)
        self._recorded = True

    def query(self) -> bool:
        """Whether the work before the recorded point has finished (True if never recorded)."""
        return not self._recorded or _driver.event_query(self._handle)

    def synchronize(self) -> None:
        """Wait until the work before the recorded point has finished."""
        if self._recorded:
            _driver.event_synchronize(self._handle)

    def wait(self, stream: Stream | None = None) -> None:
        """Make `stream` (the current one if None) wait for this event."""
        (current_stream() if stream is None else _arg(stream, Stream, "wait")).wait_event(self)

    def elapsed_time(self, end: Event) -> float:
        """Milliseconds from this event to `end`, both recorded with enable_timing=True."""
        _arg(end, Event, "elapsed_time")
        if not (self._timing and end._timing):
            raise _Error("elapsed_time(): both events must be created with enable_timing=True")
        if not (self._recorded and end._recorded):
            raise _Error("elapsed_time(): both events must be recorded before timing them")
        end.synchronize()
        return _driver.event_elapsed_ms(self._handle, end._handle)

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle is not None:
            _driver.event_destroy(handle)


def _arg(value, cls: type, op: str):
    """`value` itself when it is a `cls` (Stream or Event), else a kael.TypeError."""
    if not isinstance(value, cls):
        raise _TypeError(f"{op}(): expected a kael.cuda.{cls.__name__}, got {type(value).__name__}")
    return value


def current_stream() -> Stream:
    """The stream this thread's launches and copies go to."""
    _driver.require()
    return Stream._of(_driver.current_stream())


def default_stream() -> Stream:
    """The null stream."""
    _driver.require()
    return Stream._of(None)


@_contextlib.contextmanager
def stream(s: Stream | None) -> _Iterator[Stream | None]:
    """Make `s` this thread's current stream inside the block (None: leave it as it is)."""
    if s is None:
        yield None
        return
    _arg(s, Stream, "stream")
    before = _driver.current_stream()
    _driver.set_current_stream(s._handle)
    try:
        yield s
    finally:
        _driver.set_current_stream(before)


def record_stream(tensor, s: Stream) -> None:
    """Mark `tensor`'s memory as used by `s`: the allocator reuses it only after the work
    queued on `s` when the tensor dies has finished (Tensor.record_stream)."""
    _arg(s, Stream, "record_stream")
    storage = tensor._impl.storage
    if storage.device is not _CUDA:
        raise _Error(f"record_stream(): expected a cuda tensor, got one on {storage.device}")
    if storage.capacity:
        _allocator_for(_CUDA).record_stream(storage.ptr, s._handle)


# ---- the device: kael drives one GPU, device 0 ------------------------------------------------


def device_count() -> int:
    """How many GPUs kael can use: 1 when a driver and GPU were found, else 0."""
    return 1 if is_available() else 0


def is_initialized() -> bool:
    """Whether a GPU is usable in this process (kael binds it on first use)."""
    return is_available()


def _is_device_zero(device) -> bool:
    """Whether `device` names device 0 (None, 0, "cuda", "cuda:0", a kael.device);
    kael.ValueError for another device."""
    if device is None or (isinstance(device, int) and device == 0):
        return True
    try:
        found = device if isinstance(device, _Device) else _Device(device)
    except (_TypeError, _ValueError):
        found = None
    if found is not _CUDA:
        raise _ValueError(f"kael drives one GPU, cuda:0; got device {device!r}")
    return True


def _named_device(device, op: str) -> None:
    """Check that `device` names device 0, the error naming `op` (with or without a GPU)."""
    try:
        _is_device_zero(device)
    except _ValueError as e:
        raise _ValueError(f"{op}(): {e}") from None


def _one_device(device, op: str) -> None:
    """Device 0 however named; kael.Error without a GPU, kael.ValueError for another."""
    _driver.require()
    _named_device(device, op)


def current_device() -> int:
    """The index of the GPU in use: always 0; kael.Error without a GPU."""
    _one_device(None, "current_device")
    return 0


def set_device(device) -> None:
    """Select the GPU to use: only device 0 exists for kael (a negative index is a no-op,
    as in torch)."""
    if device is None:
        raise _ValueError(
            "Expected a kael.device with a specified index or an integer, but got:None"
        )
    if isinstance(device, int) and device < 0:
        return
    _one_device(device, "set_device")


class DeviceProperties:
    """torch.cuda.get_device_properties' answer: name, total_memory (bytes),
    multi_processor_count, and the compute capability as major and minor."""

    __slots__ = ("name", "total_memory", "multi_processor_count", "major", "minor")

    def __init__(self, described: dict) -> None:
        self.name = described["name"]
        self.total_memory = described["memory"]
        self.multi_processor_count = described["multiprocessors"]
        self.major, self.minor = described["capability"]

    def __repr__(self) -> str:
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor},"
            f" total_memory={self.total_memory // 2**20}MB,"
            f" multi_processor_count={self.multi_processor_count})"
        )


def get_device_properties(device=None) -> DeviceProperties:
    """Device 0's name, memory, multiprocessor count and compute capability."""
    _one_device(device, "get_device_properties")
    return DeviceProperties(_driver.describe())


def get_device_name(device=None) -> str:
    """The GPU's name as its driver reports it."""
    return get_device_properties(device).name


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the GPU computes in bfloat16: kael's PTX is for sm_90, where bfloat16 is
    native, so whenever a GPU is usable (`including_emulation` is taken for torch's
    signature); False without one."""
    return is_available()


class device:
    """Context manager that selects a GPU for its block, as torch.cuda.device: kael drives
    device 0 alone, so it checks the device named (None or a negative index: no-op)."""

    __slots__ = ("idx",)

    def __init__(self, device) -> None:
        if device is None or (isinstance(device, int) and device < 0):
            self.idx = -1
        else:
            _one_device(device, "device")
            self.idx = 0

    def __enter__(self) -> device:
        return self

    def __exit__(self, *exc) -> None:
        return None


def get_device_capability(device=None) -> tuple[int, int]:
    """The GPU's compute capability (major, minor): (9, 0) for an H100."""
    props = get_device_properties(device)
    return props.major, props.minor


# ---- memory -----------------------------------------------------------------------------------


def empty_cache() -> None:
    """Free the GPU blocks kael's caching allocator holds (nothing without a GPU)."""
    if is_available():
        _allocator_for(_CUDA).empty_cache()


def _stat(device, name: str, op: str) -> int:
    _named_device(device, op)
    return _allocator_for(_CUDA).stats()[name] if is_available() else 0


def memory_allocated(device=None) -> int:
    """Bytes of GPU memory in tensors now (block capacities); 0 without a GPU."""
    return _stat(device, "in_use_bytes", "memory_allocated")


def memory_reserved(device=None) -> int:
    """Bytes of GPU memory the caching allocator holds, in use or cached; 0 without a GPU."""
    return _stat(device, "reserved_bytes", "memory_reserved")


def max_memory_allocated(device=None) -> int:
    """The most bytes of GPU memory in tensors at once since the start or the last
    reset_peak_memory_stats; 0 without a GPU."""
    return _stat(device, "peak_in_use_bytes", "max_memory_allocated")


def max_memory_reserved(device=None) -> int:
    """The most bytes of GPU memory the caching allocator held at once since the start or
    the last reset_peak_memory_stats; 0 without a GPU."""
    return _stat(device, "peak_reserved_bytes", "max_memory_reserved")


def reset_peak_memory_stats(device=None) -> None:
    """Start max_memory_allocated and max_memory_reserved again from the bytes now."""
    _named_device(device, "reset_peak_memory_stats")
    if is_available():
        _allocator_for(_CUDA).reset_peaks()


# torch.cuda.memory_stats' names for the statistics kael keeps under its own
_TORCH_STATS = {
    "allocated_bytes.all.current": "in_use_bytes",
    "allocated_bytes.all.peak": "peak_in_use_bytes",
    "reserved_bytes.all.current": "reserved_bytes",
    "reserved_bytes.all.peak": "peak_reserved_bytes",
}


def memory_stats(device=None) -> dict[str, int]:
    """The GPU allocator's statistics (kael.memory_stats("cuda")): bytes in use, cached,
    reserved and their peaks, hits and misses, and the first four again under torch's
    names ("allocated_bytes.all.peak", ...); {} without a GPU, as torch's."""
    _named_device(device, "memory_stats")
    if not is_available():
        return {}
    stats = _allocator_for(_CUDA).stats()
    return {**stats, **{theirs: stats[ours] for theirs, ours in _TORCH_STATS.items()}}


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """memory_stats as a table, one statistic a line (`abbreviated` is taken for torch's
    signature: kael's table is short already)."""
    stats = memory_stats(device)
    width = max(map(len, stats), default=0)
    lines = [f"{name:<{width}}  {value:>16,}" for name, value in stats.items()]
    return "\n".join(["kael CUDA caching allocator", *(lines or ["no GPU"])])


def mem_get_info(device=None) -> tuple[int, int]:
    """(free, total) bytes of the GPU's memory as its driver counts them; kael.Error
    without a GPU."""
    _one_device(device, "mem_get_info")
    return _driver.mem_info()


# ---- random numbers ---------------------------------------------------------------------------
# kael draws on every device from its one default generator (the same seed gives the same
# values on the CPU and the GPU), so seeding "the GPU's" generator reseeds that one; without
# a GPU these do nothing, as torch's do on a machine without CUDA.


def manual_seed(seed) -> None:
    """Reseed the generator GPU draws use (kael's default one) when a GPU is available;
    the seed is checked either way, as torch's."""
    from kael.frontend import random  # it imports the code generators: not at start

    seed = random.seed_arg(seed)
    if is_available():
        random.manual_seed(seed)


manual_seed_all = manual_seed


def seed() -> None:
    """Reseed the generator GPU draws use from the OS's entropy, when a GPU is available."""
    if is_available():
        from kael.frontend import random

        random.seed()


seed_all = seed


def initial_seed() -> int:
    """The seed of the generator GPU draws use; kael.Error without a GPU."""
    _driver.require()
    from kael.frontend import random

    return random.initial_seed()


def get_rng_state(device="cuda"):
    """The state of the generator GPU draws use (kael's default one), as kael.get_rng_state;
    kael.Error without a GPU."""
    _one_device(device, "get_rng_state")
    from kael.frontend import random

    return random.get_rng_state()


def set_rng_state(new_state, device="cuda") -> None:
    """Restore the generator GPU draws use to a state get_rng_state returned; kael.Error
    without a GPU."""
    _one_device(device, "set_rng_state")
    from kael.frontend import random

    random.set_rng_state(new_state)


def get_rng_state_all() -> list:
    """Each GPU's generator state: kael's one GPU's."""
    return [get_rng_state()]


def set_rng_state_all(new_states) -> None:
    """Restore each GPU's generator from get_rng_state_all's list (one state, kael's one GPU)."""
    states = list(new_states)
    if len(states) != device_count():
        raise _ValueError(
            f"set_rng_state_all(): expected {device_count()} state(s), got {len(states)}"
        )
    for state in states:
        set_rng_state(state)


amp = _types.SimpleNamespace(autocast=_autocast.for_device("cuda", _float16))
