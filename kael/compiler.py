"""kael.compiler: torch.compiler's switches as programs use them around kael.compile:
is_compiling() says whether a trace is running; disable makes a function end the trace
where it is called (the graph break torch's gives); the graph hints hand back what they are
given (kael.compile traces the Python it meets); reset forgets nothing kael keeps per
process."""

from __future__ import annotations

import functools

from kael.frontend import tracing
from kael.frontend.compiled import compile
from kael.runtime.tracestate import state as _trace_state

__all__ = ["allow_in_graph", "assume_constant_result", "compile", "disable", "is_compiling",
           "is_dynamo_compiling", "reset"]  # fmt: skip


def is_compiling() -> bool:
    """Whether this code runs under a kael.compile trace."""
    return _trace_state.trace is not None


is_dynamo_compiling = is_compiling


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """fn run eagerly, never traced (a decorator with or without arguments): called while
    kael.compile traces, it ends the trace there as Python needing a tensor's values does,
    so with fullgraph=False it and the rest of the call run eagerly, and with the default
    fullgraph=True the trace stops with an error naming it (torch's graph break)."""

    def disabled(f):
        @functools.wraps(f)
        def call(*args, **kwargs):
            if _trace_state.trace is not None:
                why = f" ({reason})" if reason else ""
                name = getattr(f, "__qualname__", type(f).__name__)
                tracing.data_dependent(f"{name}, marked kael.compiler.disable{why},")
            return f(*args, **kwargs)

        return call

    return disabled(fn) if fn is not None else disabled


def allow_in_graph(fn):
    return fn


def assume_constant_result(fn):
    return fn


def reset() -> None:
    """torch clears its compile caches; kael's are per compiled function and kept."""
