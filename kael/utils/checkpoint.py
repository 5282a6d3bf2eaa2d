"""torch.utils.checkpoint for the inference code that imports it: activation checkpointing
trades memory for a recomputation in the backward pass, and kael has no autograd, so a
checkpointed function simply runs (its results are the same as torch's forward)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable

from kael.runtime import user_warning
from kael.runtime.errors import ValueError


def _explicit(name: str) -> str:
    return (
        f"torch.utils.{name}: the use_reentrant parameter should be passed explicitly. "
        "use_reentrant=False is recommended."
    )


def noop_context_fn() -> tuple:
    """checkpoint's default context_fn: a context for the forward and one for the
    recomputation, both doing nothing."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint(
    function: Callable,
    *args,
    use_reentrant: bool | None = None,
    context_fn: Callable = noop_context_fn,
    determinism_check: str = "default",
    debug: bool = False,
    early_stop: bool = True,
    preserve_rng_state: bool = True,
    **kwargs,
):
    """function(*args, **kwargs), as torch's forward runs it, inside context_fn's forward
    context; torch's argument checks (use_reentrant=True takes no keyword arguments for the
    function, nor context_fn or debug); warns where use_reentrant is not given."""
    if use_reentrant is None:
        user_warning.warn(_explicit("checkpoint"))
    if determinism_check not in ("default", "none"):
        raise ValueError(
            f"determinism_check should be one of ['default', 'none'], but got {determinism_check}"
        )
    if use_reentrant:
        if context_fn is not noop_context_fn or debug:
            raise ValueError(
                "Passing `context_fn` or `debug` is only supported when use_reentrant=False."
            )
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    forward, _ = context_fn()
    with forward:
        return function(*args, **kwargs)


def checkpoint_sequential(
    functions: Iterable[Callable], segments: int, input, use_reentrant: bool | None = None, **kwargs
):
    """The functions (an nn.Sequential's modules, or a list of callables) applied in turn to
    `input`; `segments` only decides what torch would recompute (preserve_rng_state, the
    one keyword torch takes, changes nothing here)."""
    if use_reentrant is None:
        user_warning.warn(_explicit("checkpoint_sequential"))
    extra = [k for k in kwargs if k != "preserve_rng_state"]
    if extra:
        raise ValueError("Unexpected keyword arguments: " + ",".join(extra))
    from kael.nn import Sequential  # kael.nn imports the frontend: looked up when called

    if isinstance(functions, Sequential):
        functions = list(functions.children())
    for fn in functions:
        input = fn(input)
    return input


__all__ = ["checkpoint", "checkpoint_sequential", "noop_context_fn"]
