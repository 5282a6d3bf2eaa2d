"""PyTorch's gradient-mode switches, so inference code written for torch runs unchanged:
no_grad, enable_grad, inference_mode and set_grad_enabled work as context managers and as
decorators and keep PyTorch's per-thread flag, which is all they do until kael has
autograd (no tensor requires grad, so nothing is recorded either way)."""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable

from kael.runtime.errors import TypeError

_state = threading.local()


def is_grad_enabled() -> bool:
    """Whether gradient recording is on in this thread (True unless a switch turned it off)."""
    return getattr(_state, "enabled", True)


def is_inference_mode_enabled() -> bool:
    return getattr(_state, "inference", False)


class _Switch:
    """A context manager that sets the thread's flags on entry (None: leaves one as it is)
    and restores them on exit, and a decorator that runs the function (or each step of a
    generator) inside a fresh copy of it."""

    def __init__(self, enabled: bool | None, inference: bool | None = None) -> None:
        self._enabled, self._inference = enabled, inference
        self._saved: list[tuple[bool, bool]] = []

    def __enter__(self) -> None:
        self._saved.append((is_grad_enabled(), is_inference_mode_enabled()))
        if self._enabled is not None:
            _state.enabled = self._enabled
        if self._inference is not None:
            _state.inference = self._inference

    def __exit__(self, *exc) -> None:
        _state.enabled, _state.inference = self._saved.pop()

    def clone(self) -> _Switch:
        """The same switch with its own saved state (one per call of a decorated function)."""
        return _Switch(self._enabled, self._inference)

    def __call__(self, fn: Callable) -> Callable:
        if not callable(fn):
            raise TypeError(f"{type(self).__name__} decorates a function, got {fn!r}")
        if inspect.isgeneratorfunction(fn):

            @functools.wraps(fn)
            def steps(*args, **kwargs):
                gen = fn(*args, **kwargs)
                try:
                    with self.clone():
                        value = next(gen)
                    while True:
                        try:
                            sent = yield value
                        except GeneratorExit:
                            gen.close()
                            raise
                        with self.clone():
                            value = gen.send(sent)
                except StopIteration as done:  # the generator ran out: its return value
                    return done.value

            return steps

        @functools.wraps(fn)
        def run(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return run


class _Bare(_Switch):
    """A switch that also decorates without parentheses (@kael.no_grad, as torch's)."""

    def __new__(cls, orig_func=None, *args, **kwargs):
        if callable(orig_func) and not args and not kwargs:
            return cls()(orig_func)  # the decorated function itself: __init__ is skipped
        return super().__new__(cls)


class no_grad(_Bare):  # noqa: N801 (PyTorch's name)
    """Gradient recording off inside (a no-op for results until kael has autograd)."""

    def __init__(self, orig_func=None) -> None:
        super().__init__(False)


class enable_grad(_Bare):  # noqa: N801
    """Gradient recording on inside, even within no_grad."""

    def __init__(self, orig_func=None) -> None:
        super().__init__(True)


class inference_mode(_Bare):  # noqa: N801
    """no_grad that also marks inference; `mode=False` turns inference mode off and
    gradient recording on (torch's InferenceMode(false))."""

    def __new__(cls, mode=True):
        return super().__new__(cls, None if isinstance(mode, bool) else mode)

    def __init__(self, mode: bool = True) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"inference_mode(): mode must be a bool, got {type(mode).__name__}")
        super().__init__(not mode, mode)


class set_grad_enabled(_Switch):  # noqa: N801
    """Set gradient recording on or off: at once when called (as torch does), and back to
    the previous setting when used as a context manager exits."""

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): mode must be a bool, got {type(mode).__name__}")
        self._before = is_grad_enabled()
        super().__init__(mode)
        _state.enabled = mode

    def __enter__(self) -> None:
        self._saved.append((self._before, is_inference_mode_enabled()))
