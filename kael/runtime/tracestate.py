"""The calling thread's active trace (set by @kael.compile while it records a function),
visible to the runtime so that a hand-written kernel launched under tracing hands its op
back to the tracer instead of running on data that is not there yet."""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Iterator


class NeedsExtern(Exception):  # noqa: N818 - a control-flow signal, never seen by users
    """Raised inside an op under tracing where its result needs host work or a hand-written
    kernel: the tracer rolls the op back and runs it as an extern step."""


class _State(threading.local):
    trace = None  # the frontend's Trace, or None when ops run eagerly
    extern_call = None  # the plan Call whose extern step runs eagerly now (its trace paused)


state = _State()


@contextlib.contextmanager
def untraced() -> Iterator[None]:
    """Ops inside run eagerly even while this thread traces: for constants built from no
    traced tensor (fft's tables), so that a process-wide cache never holds a tensor of a
    trace that has not finished (other threads and forked children would read it)."""
    trace, state.trace = state.trace, None
    try:
        yield
    finally:
        state.trace = trace


class _Epoch:
    """A number that changes whenever something compiled plans may have read moved: `epoch`
    on any such move (a compiled call compares it alone), `handle_epoch` only when an
    existing tensor handle is moved to other memory or another layout (x.data = y, set_,
    resize_, t_, ...); the other moves are a module some trace read changing its state or
    settings, which each such module also counts itself (a compiled function then asks
    only the modules it read)."""

    value = 0


epoch = _Epoch()
handle_epoch = _Epoch()
_epochs = itertools.count(1)


def bump_epoch() -> None:
    """Mark that a handle moved (each bump gives a new value, atomically under the GIL, so
    concurrent bumps never cancel)."""
    epoch.value = handle_epoch.value = next(_epochs)


def bump_module_epoch() -> None:
    """Mark that a module a trace read changed its state (as bump_epoch)."""
    epoch.value = next(_epochs)
