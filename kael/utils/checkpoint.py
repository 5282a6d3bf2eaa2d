"""torch.utils.checkpoint for the inference code that imports it: activation checkpointing
trades memory for a recomputation in the backward pass, and kael has no autograd, so a
checkpointed function simply runs (its results are the same as torch's forward)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kael.runtime import user_warning
from kael.runtime.errors import ValueError

_EXPLICIT = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
    "use_reentrant=False is recommended."
)


def checkpoint(
    function: Callable,
    *args,
    use_reentrant: bool | None = None,
    context_fn: Callable | None = None,
    determinism_check: str = "default",
    debug: bool = False,
    early_stop: bool = True,
    preserve_rng_state: bool = True,
    **kwargs,
):
    """function(*args, **kwargs), as torch's forward runs it (use_reentrant=True takes no
    keyword arguments for the function, as torch's); warns where use_reentrant is not given."""
    if use_reentrant is None:
        user_warning.warn(_EXPLICIT)
    elif use_reentrant and kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    return function(*args, **kwargs)


def checkpoint_sequential(
    functions: Iterable[Callable], segments: int, input, use_reentrant: bool | None = None, **kwargs
):
    """The functions (an nn.Sequential's modules, or a list of callables) applied in turn to
    `input`; `segments` only decides what torch would recompute."""
    if use_reentrant is None:
        user_warning.warn(_EXPLICIT)
    from kael.nn import Sequential  # kael.nn imports the frontend: looked up when called

    if isinstance(functions, Sequential):
        functions = list(functions.children())
    for fn in functions:
        input = fn(input)
    return input


__all__ = ["checkpoint", "checkpoint_sequential"]
