"""The calling thread's active trace (set by @kael.compile while it records a function),
visible to the runtime so that a hand-written kernel launched under tracing hands its op
back to the tracer instead of running on data that is not there yet."""

from __future__ import annotations

import threading


class NeedsExtern(Exception):  # noqa: N818 - a control-flow signal, never seen by users
    """Raised inside an op under tracing where its result needs host work or a hand-written
    kernel: the tracer rolls the op back and runs it as an extern step."""


class _State(threading.local):
    trace = None  # the frontend's Trace, or None when ops run eagerly


state = _State()
