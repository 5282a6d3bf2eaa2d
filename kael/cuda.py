"""kael.cuda: whether a GPU is usable, streams and events, and waiting for the device.

As in PyTorch: every launch and copy goes to the thread's current stream (the null stream
unless a `with kael.cuda.stream(s):` block says otherwise), a read to the host waits for
that stream only, and `Event`s order streams and time their work.
"""

from __future__ import annotations

import builtins
import contextlib
from collections.abc import Iterator

from kael.runtime import cuda_driver
from kael.runtime.allocator import allocator_for
from kael.runtime.device import CUDA
from kael.runtime.device import cuda_is_available as is_available
from kael.runtime.device import cuda_synchronize as synchronize
from kael.runtime.errors import Error, TypeError

__all__ = [
    "Event", "Stream", "current_stream", "default_stream", "is_available", "stream",
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
        self._handle = cuda_driver.stream_create()
        _handles.append(self._handle)

    @classmethod
    def _of(cls, handle) -> Stream:
        s = object.__new__(cls)
        s._handle = handle
        return s

    def synchronize(self) -> None:
        """Wait until the work queued on this stream has finished."""
        cuda_driver.stream_synchronize(self._handle)

    def query(self) -> bool:
        """Whether all work queued on this stream has finished."""
        return cuda_driver.stream_query(self._handle)

    def record_event(self, event: Event | None = None) -> Event:
        """Record `event` (a new one if None) at this point of the stream."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        """Work queued on this stream from now on waits for `event`."""
        _arg(event, Event, "wait_event")
        cuda_driver.stream_wait_event(self._handle, event._handle)

    def wait_stream(self, other: Stream) -> None:
        """Work queued on this stream from now on waits for the work queued on `other` so far."""
        self.wait_event(_arg(other, Stream, "wait_stream").record_event())

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and _key(other._handle) == _key(self._handle)

    def __hash__(self) -> int:
        return hash(("stream", _key(self._handle)))

    def __repr__(self) -> str:
        return (
            "<kael.cuda.Stream null>"
            if self._handle is None
            else f"<kael.cuda.Stream {id(self):#x}>"
        )


_handles: list = []  # every stream made: never destroyed (see Stream)


def _key(handle) -> int:
    """A stream handle's identity: the driver's pointer value (cuda-python's CUstream is
    int()-able), else the handle object (the emulator's); 0 for the null stream."""
    if handle is None:
        return 0
    try:
        return int(handle)
    except builtins.TypeError:  # kael's TypeError shadows the builtin here
        return id(handle)


class Event:
    """A marker in a stream: record it, wait for it, and time the work between two."""

    __slots__ = ("_handle", "_timing", "_recorded")

    def __init__(self, enable_timing: bool = False) -> None:
        if not isinstance(enable_timing, bool):
            raise TypeError(
                f"Event(): enable_timing must be a bool, got {type(enable_timing).__name__}"
            )
        self._handle = cuda_driver.event_create(timing=enable_timing)
        self._timing = enable_timing
        self._recorded = False

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on `stream` (the current stream if None)."""
        stream = current_stream() if stream is None else _arg(stream, Stream, "record")
        cuda_driver.event_record(self._handle, stream._handle)
        self._recorded = True

    def query(self) -> bool:
        """Whether the work before the recorded point has finished (True if never recorded)."""
        return not self._recorded or cuda_driver.event_query(self._handle)

    def synchronize(self) -> None:
        """Wait until the work before the recorded point has finished."""
        if self._recorded:
            cuda_driver.event_synchronize(self._handle)

    def wait(self, stream: Stream | None = None) -> None:
        """Make `stream` (the current one if None) wait for this event."""
        (current_stream() if stream is None else _arg(stream, Stream, "wait")).wait_event(self)

    def elapsed_time(self, end: Event) -> float:
        """Milliseconds from this event to `end`, both recorded with enable_timing=True."""
        _arg(end, Event, "elapsed_time")
        if not (self._timing and end._timing):
            raise Error("elapsed_time(): both events must be created with enable_timing=True")
        if not (self._recorded and end._recorded):
            raise Error("elapsed_time(): both events must be recorded before timing them")
        end.synchronize()
        return cuda_driver.event_elapsed_ms(self._handle, end._handle)

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle is not None:
            cuda_driver.event_destroy(handle)


def _arg(value, cls: type, op: str):
    """`value` itself when it is a `cls` (Stream or Event), else a kael.TypeError."""
    if not isinstance(value, cls):
        raise TypeError(f"{op}(): expected a kael.cuda.{cls.__name__}, got {type(value).__name__}")
    return value


def current_stream() -> Stream:
    """The stream this thread's launches and copies go to."""
    cuda_driver.require()
    return Stream._of(cuda_driver.current_stream())


def default_stream() -> Stream:
    """The null stream."""
    cuda_driver.require()
    return Stream._of(None)


@contextlib.contextmanager
def stream(s: Stream | None) -> Iterator[Stream | None]:
    """Make `s` this thread's current stream inside the block (None: leave it as it is)."""
    if s is None:
        yield None
        return
    _arg(s, Stream, "stream")
    before = cuda_driver.current_stream()
    cuda_driver.set_current_stream(s._handle)
    try:
        yield s
    finally:
        cuda_driver.set_current_stream(before)


def record_stream(tensor, s: Stream) -> None:
    """Mark `tensor`'s memory as used by `s`: the allocator reuses it only after the work
    queued on `s` when the tensor dies has finished (Tensor.record_stream)."""
    _arg(s, Stream, "record_stream")
    storage = tensor._impl.storage
    if storage.device is not CUDA:
        raise Error(f"record_stream(): expected a cuda tensor, got one on {storage.device}")
    if storage.capacity:
        allocator_for(CUDA).record_stream(storage.ptr, s._handle)
