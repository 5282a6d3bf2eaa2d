"""kael.compiler: torch.compiler's switches as programs use them around kael.compile:
is_compiling() says whether a trace is running; disable makes a function end the trace
where it is called (the graph break torch's gives); the graph hints hand back what they are
given (kael.compile traces the Python it meets); reset forgets nothing kael keeps per
process."""

from __future__ import annotations

import functools

from kael.frontend import tracing
from kael.frontend.compiled import compile
from kael.nn.modules.module import Module
from kael.runtime.errors import Error
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
    fullgraph=True the trace stops with an error naming it (torch's graph break). A
    staticmethod or classmethod stays one; a Module's forward is disabled in place (its
    parameters stay registered); a class is returned as it is."""

    def disabled(f):
        if isinstance(f, staticmethod | classmethod):  # the function inside, rewrapped
            return type(f)(disabled(f.__func__))
        if isinstance(f, type):  # a class: its instances' calls are what a trace meets
            return f
        if isinstance(f, Module):  # its forward, on the module itself (parameters kept)
            f.forward = disabled(f.forward)
            return f

        @functools.wraps(f)
        def call(*args, **kwargs):
            trace = _trace_state.trace
            if trace is not None:
                _break(trace, getattr(f, "__qualname__", type(f).__name__), reason)
            return f(*args, **kwargs)

        return call

    return disabled(fn) if fn is not None else disabled


def _break(trace, name: str, reason: str | None) -> None:
    """End `trace` before a disabled function runs: with fullgraph=False the rest of the
    call runs eagerly (tracing's graph break), with fullgraph=True a kael.Error says so."""
    why = f" ({reason})" if reason else ""
    if trace.fullgraph and not trace.depth:
        raise Error(
            f"{name} is marked kael.compiler.disable{why}, so it runs eagerly, which a"
            f" function compiled with fullgraph=True cannot do midway{tracing.user_line()}:"
            " pass fullgraph=False to run the rest of the call eagerly from there"
        )
    tracing.data_dependent(f"{name}, marked kael.compiler.disable{why},")


def allow_in_graph(fn):
    return fn


def assume_constant_result(fn):
    return fn


def reset() -> None:
    """torch clears its compile caches; kael's are per compiled function and kept."""
