"""kael.jit: torch.jit's names as PyTorch programs use them around inference code. kael
compiles every op already, and whole functions with kael.compile, so `script` hands back
what it is given (its Python runs as written), `trace` is kael.compile (a traced plan per
call signature), and the decorators that steer TorchScript (`ignore`, `unused`, `export`,
`script_if_tracing`) change nothing. TorchScript archives are torch's own format: `load`
refuses them, naming why."""

from __future__ import annotations

from collections.abc import Callable

from kael.frontend.compiled import compile as _compile
from kael.runtime.errors import Error
from kael.runtime.tracestate import state as _trace_state

__all__ = [
    "Final", "annotate", "export", "freeze", "ignore", "is_scripting", "is_tracing", "load",
    "optimize_for_inference", "script", "script_if_tracing", "trace", "unused",
]  # fmt: skip


def script(obj=None, *args, **kwargs):
    """`obj` itself: a function or module runs as written (each op compiled)."""
    return obj


def trace(func, example_inputs=None, *args, **kwargs):
    """kael.compile(func): a plan traced per call signature (example_inputs are not needed:
    the first call traces)."""
    return _compile(func)


def _unchanged(fn: Callable | None = None, **kwargs):
    return fn if fn is not None else (lambda f: f)


ignore = unused = export = script_if_tracing = _unchanged


def freeze(mod, *args, **kwargs):
    return mod


def optimize_for_inference(mod, *args, **kwargs):
    return mod


def annotate(the_type, the_value):
    """the_value (a type hint for TorchScript)."""
    return the_value


Final = object  # a TorchScript attribute annotation; nothing to enforce in Python


def is_scripting() -> bool:
    """False: kael never runs TorchScript."""
    return False


def is_tracing() -> bool:
    """Whether this code runs under a kael.compile (or jit.trace) trace."""
    return _trace_state.trace is not None


def load(f, *args, **kwargs):
    """TorchScript archives are torch's own program format: kael cannot run them."""
    raise Error(
        "kael.jit.load: a TorchScript archive is a compiled torch program, which kael cannot"
        " run; load the model's state_dict (torch.save(model.state_dict())) into the same"
        " architecture written with kael.nn instead"
    )
