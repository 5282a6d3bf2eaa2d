"""kael.profiler: torch.profiler's surface over kael's own records: every public op call
(the tracing door: kael.add, x @ w, kael.fft.fft, ... with its input shapes) and every
kernel it launched (runtime/launches.py: symbol, shape, bytes, time), nested as they ran;
record_function ranges; schedule and step for training loops; key_averages().table(),
events() and export_chrome_trace (chrome://tracing, Perfetto).

While a profile records, kernels are timed and ops take the full door (the fast door
skips recording), so a profiled call is slower than an unprofiled one, as in PyTorch.
Times are microseconds of host wall clock; a GPU kernel's time is its launch's (kael
synchronizes the stream it reads).
"""

from __future__ import annotations

import enum
import functools
import gzip
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kael.runtime import launches, profiling, sync
from kael.runtime.errors import ValueError

__all__ = [
    "ProfilerAction", "ProfilerActivity", "profile", "record_function", "schedule",
    "supported_activities", "tensorboard_trace_handler", "FunctionEvent", "EventList",
]  # fmt: skip


class ProfilerActivity(enum.Enum):
    """What to record: kael records host ops and kernels of both kinds either way."""

    CPU = 0
    CUDA = 1


class ProfilerAction(enum.Enum):
    """What a schedule asks of a step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set[ProfilerActivity]:
    return {ProfilerActivity.CPU, ProfilerActivity.CUDA}


def schedule(
    *, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0
) -> Callable[[int], ProfilerAction]:
    """torch.profiler.schedule: after skip_first steps, cycles of `wait` idle, `warmup` and
    `active` recording steps (the last saves the trace), `repeat` times (0: forever)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError("Invalid profiler schedule arguments")
    cycle = wait + warmup + active

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        phase = step % cycle
        if phase < wait:
            return ProfilerAction.NONE
        if phase < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if phase < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


# ---- events -----------------------------------------------------------------------------------


@dataclass
class FunctionEvent:
    """One recorded range: an op call, a kernel launch or a record_function block (times
    in microseconds from the profile's start)."""

    name: str
    kind: str  # "op", "kernel" or "user_annotation"
    start_us: float
    end_us: float | None = None  # None while the range is open
    thread: int = 0
    input_shapes: list = field(default_factory=list)
    device_type: str = "cpu"
    children: list[FunctionEvent] = field(default_factory=list)
    bytes_moved: int = 0
    origin: float = field(default=0.0, repr=False)  # the profile's perf_counter at time 0

    @property
    def cpu_time_total(self) -> float:
        """The range's time; one still open (read while recording, or a trace saved by
        step() inside it) counts as running until now."""
        end = self.end_us
        if end is None:
            end = (time.perf_counter() - self.origin) * 1e6
        return end - self.start_us

    @property
    def self_cpu_time_total(self) -> float:
        """The time not spent in recorded children (kernels included: the self times of a
        trace add up to its total)."""
        nested = sum(c.cpu_time_total for c in self.children)
        return max(self.cpu_time_total - nested, 0.0)

    @property
    def key(self) -> str:
        return self.name


@dataclass
class FunctionEventAvg:
    """The events of one name (and input shapes, when grouped by them) summed."""

    key: str
    count: int = 0
    cpu_time_total: float = 0.0
    self_cpu_time_total: float = 0.0
    input_shapes: str = ""

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / max(self.count, 1)

    def add(self, event: FunctionEvent) -> None:
        self.count += 1
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total


_SORT_KEYS = {
    "cpu_time_total": "cpu_time_total", "self_cpu_time_total": "self_cpu_time_total",
    "cpu_time": "cpu_time", "count": "count", "cuda_time_total": "cpu_time_total",
    "self_cuda_time_total": "self_cpu_time_total", "device_time_total": "cpu_time_total",
    "self_device_time_total": "self_cpu_time_total",
}  # fmt: skip


class EventList(list):
    """Events (or their averages) with torch's table."""

    def table(self, sort_by: str | None = None, row_limit: int = 100, **_ignored) -> str:
        """A text table: name, self and total time (and share), average, calls."""
        rows = list(self)
        if sort_by is not None:
            if sort_by not in _SORT_KEYS:
                raise ValueError(
                    f"table(): unknown sort_by {sort_by!r}, one of {sorted(_SORT_KEYS)}"
                )
            rows.sort(key=lambda e: getattr(e, _SORT_KEYS[sort_by]), reverse=True)
        if row_limit is not None and row_limit >= 0:
            rows = rows[:row_limit]
        shapes = any(getattr(e, "input_shapes", "") for e in rows)
        total = sum(e.self_cpu_time_total for e in self) or 1.0
        width = max([len("Name"), *(len(e.key) for e in rows)]) + 2
        head = ["Name".ljust(width), "Self CPU %", "Self CPU", "CPU total %", "CPU total"]
        head += ["CPU time avg", "# of Calls"] + (["Input Shapes"] if shapes else [])
        line = "-" * (width + 84 + (20 if shapes else 0))
        out = [line, "  ".join(f"{h:>12}" if i else h for i, h in enumerate(head)), line]
        for e in rows:
            cells = [
                e.key.ljust(width),
                f"{100 * e.self_cpu_time_total / total:.2f}%",
                _us(e.self_cpu_time_total),
                f"{100 * e.cpu_time_total / total:.2f}%",
                _us(e.cpu_time_total),
                _us(e.cpu_time_total / max(getattr(e, "count", 1), 1)),
                str(getattr(e, "count", 1)),
            ]
            if shapes:
                cells.append(str(getattr(e, "input_shapes", "")))
            out.append("  ".join(f"{c:>12}" if i else c for i, c in enumerate(cells)))
        out += [line, f"Self CPU time total: {_us(total)}"]
        return "\n".join(out)

    def __str__(self) -> str:
        return self.table()


def _us(value: float) -> str:
    return f"{value / 1000:.3f}ms" if value >= 1000 else f"{value:.3f}us"


def _shapes(args: Iterable) -> list:
    """The shapes of a call's tensor arguments ([] for other arguments), as torch records."""
    from kael.frontend.tensor import Tensor

    return [list(a.shape) if isinstance(a, Tensor) else [] for a in args]


# ---- the profiler -------------------------------------------------------------------------------


class _Stacks(threading.local):
    """The calling thread's open ranges."""

    def __init__(self) -> None:
        self.open: list[FunctionEvent] = []


class profile:  # noqa: N801 (PyTorch's name)
    """torch.profiler.profile: records the ops and kernels run inside it (all threads), as a
    context manager or between start() and stop(); with a schedule, only its recording
    steps, each cycle handed to on_trace_ready."""

    def __init__(
        self,
        *,
        activities: Iterable[ProfilerActivity] | None = None,
        schedule: Callable[[int], ProfilerAction] | None = None,
        on_trace_ready: Callable[[profile], object] | None = None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_flops: bool = False,
        with_modules: bool = False,
        experimental_config=None,
        execution_trace_observer=None,
        acc_events: bool = False,
        use_cuda: bool | None = None,
    ) -> None:
        self.activities = set(activities) if activities is not None else supported_activities()
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.step_num = 0
        self._lock = sync.lock(owner=self)
        self._events: list[FunctionEvent] = []  # top-level events of the trace being made
        self._saved: list[FunctionEvent] = []  # of the last finished trace
        self._stacks = _Stacks()
        self._recording = False
        self._origin = time.perf_counter()
        self._saved_recorder = None

    # -- context and steps --

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _action(self) -> ProfilerAction:
        return ProfilerAction.RECORD if self.schedule is None else self.schedule(self.step_num)

    def start(self) -> None:
        """Begin recording (when the schedule's step records); while recording already, as
        torch, start anew: the events so far are dropped."""
        if self._recording:
            self._end(save=False)
        if self._action() in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._begin()

    def stop(self) -> None:
        if self._recording:
            self._end(save=True)

    def step(self) -> None:
        """The end of one step of a training loop: the schedule's next action."""
        before = self._action()
        self.step_num += 1
        after = self._action()
        if self._recording and (
            before is ProfilerAction.RECORD_AND_SAVE
            or after is ProfilerAction.NONE
            or after is ProfilerAction.WARMUP
        ):
            self._end(save=before is ProfilerAction.RECORD_AND_SAVE)
        if not self._recording and after in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._begin()

    def _begin(self) -> None:
        with _ACTIVE_LOCK:  # two profiles starting at once: one of them raises
            if profiling.active is not None and profiling.active is not self:
                raise ValueError("kael.profiler: another profile is already recording")
            self._events = []
            self._recording = True
            self._saved_recorder = launches.recorder
            launches.recorder = _KernelSink(self)
            profiling.active = self

    def _end(self, save: bool) -> None:
        with _ACTIVE_LOCK:
            if profiling.active is self:  # never another profile's hook
                profiling.active = None
                launches.recorder = self._saved_recorder
        self._recording = False
        with self._lock:
            self._saved = self._events
        if save and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # -- recording --

    def _now(self) -> float:
        return (time.perf_counter() - self._origin) * 1e6

    def _open(self, name: str, kind: str, shapes: list) -> FunctionEvent:
        event = FunctionEvent(
            name, kind, self._now(), None, threading.get_ident(), shapes, origin=self._origin
        )
        self._attach(event)
        self._stacks.open.append(event)
        return event

    def _attach(self, event: FunctionEvent) -> None:
        """event as a child of this thread's innermost open range, else a top-level event."""
        stack = self._stacks.open
        if stack:
            stack[-1].children.append(event)
        else:
            with self._lock:
                self._events.append(event)

    def _close(self, event: FunctionEvent) -> None:
        event.end_us = self._now()
        stack = self._stacks.open
        if stack and stack[-1] is event:
            stack.pop()

    def op(self, name: str, fn: Callable, args: tuple, kwargs: dict):
        """Run one public op call as a recorded range."""
        event = self._open(name, "op", _shapes(args) if self.record_shapes else [])
        try:
            return fn(*args, **kwargs)
        finally:
            self._close(event)

    def kernel(self, launch) -> None:
        """One finished kernel launch, under the range that made it."""
        end = self._now()
        event = FunctionEvent(
            launch.symbol, "kernel", end - launch.seconds * 1e6, end, threading.get_ident(),
            [list(launch.shape)] if launch.shape is not None else [], "cpu",
            bytes_moved=launch.bytes_moved,
        )  # fmt: skip
        self._attach(event)

    # -- results --

    def events(self) -> EventList:
        """Every recorded event of the last trace, parents before their children."""
        flat: list[FunctionEvent] = []

        def walk(events):
            for e in events:
                flat.append(e)
                walk(e.children)

        walk(self._saved if not self._recording else self._events)
        return EventList(flat)

    def key_averages(
        self, group_by_input_shape: bool = False, group_by_stack_n: int = 0
    ) -> EventList:
        """The events averaged by name (and input shapes), as torch's table shows them."""
        groups: dict[tuple, FunctionEventAvg] = {}
        for e in self.events():
            shapes = str(e.input_shapes) if group_by_input_shape else ""
            avg = groups.get((e.name, shapes))
            if avg is None:
                avg = groups[(e.name, shapes)] = FunctionEventAvg(e.name, input_shapes=shapes)
            avg.add(e)
        return EventList(groups.values())

    def export_chrome_trace(self, path: str) -> None:
        """The trace as Chrome's trace event JSON (open in chrome://tracing or Perfetto)."""
        records = [
            {
                "name": e.name, "ph": "X", "ts": e.start_us, "dur": e.cpu_time_total,
                "pid": os.getpid(), "tid": e.thread, "cat": e.kind,
                "args": {"Input Shapes": e.input_shapes, "bytes": e.bytes_moved},
            }
            for e in self.events()
        ]  # fmt: skip
        text = json.dumps({"traceEvents": records, "displayTimeUnit": "ms"})
        opener = gzip.open if str(path).endswith(".gz") else open
        with opener(path, "wt") as f:
            f.write(text)


class _KernelSink(list):
    """launches.recorder while a profile records: each launch goes to the profile."""

    def __init__(self, owner: profile) -> None:
        super().__init__()
        self.owner = owner

    def append(self, launch) -> None:
        self.owner.kernel(launch)


# Guards which profile records (profiling.active and the launch recorder it sets).
_ACTIVE_LOCK = sync.lock()


def _after_fork_in_child() -> None:
    """A forked child (a DataLoader worker) does not record into its copy of the parent's
    profile: it starts with none, free to open its own."""
    if profiling.active is not None:
        if isinstance(launches.recorder, _KernelSink):
            launches.recorder = profiling.active._saved_recorder
        profiling.active = None


os.register_at_fork(after_in_child=_after_fork_in_child)


class record_function:  # noqa: N801 (PyTorch's name)
    """A named range in the profile (a context manager or a decorator); nothing when no
    profile records."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self._event = None

    def __enter__(self) -> record_function:
        owner = profiling.active
        if owner is not None:
            self._event = (owner, owner._open(self.name, "user_annotation", []))
        return self

    def __exit__(self, *exc) -> None:
        if self._event is not None:
            owner, event = self._event
            owner._close(event)
            self._event = None

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with record_function(self.name):
                return fn(*args, **kwargs)

        return wrapped


def tensorboard_trace_handler(
    dir_name: str, worker_name: str | None = None, use_gzip: bool = False
):
    """An on_trace_ready that writes each trace as `{worker}.{ns}.pt.trace.json[.gz]` into
    dir_name (TensorBoard's profiler plugin reads them)."""

    def handler(prof: profile) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))

    return handler
