"""kael.compiler: torch.compiler's switches as programs use them around kael.compile:
is_compiling() says whether a trace is running; disable and the graph hints hand back what
they are given (kael.compile traces the Python it meets); reset forgets nothing kael keeps
per process."""

from __future__ import annotations

from kael.frontend.compiled import compile
from kael.runtime.tracestate import state as _trace_state

__all__ = ["allow_in_graph", "assume_constant_result", "compile", "disable", "is_compiling",
           "is_dynamo_compiling", "reset"]  # fmt: skip


def is_compiling() -> bool:
    """Whether this code runs under a kael.compile trace."""
    return _trace_state.trace is not None


is_dynamo_compiling = is_compiling


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """fn as it is (a decorator with or without arguments)."""
    return fn if fn is not None else (lambda f: f)


def allow_in_graph(fn):
    return fn


def assume_constant_result(fn):
    return fn


def reset() -> None:
    """torch clears its compile caches; kael's are per compiled function and kept."""
