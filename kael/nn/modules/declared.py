"""Modules without state of their own, each declared once as a row: the functional it calls,
its constructor's settings (PyTorch's names, order and defaults) and its repr.

`declare(name, fn, settings, shown)` makes the class: the constructor binds its arguments
as PyTorch's does (positional or keyword; a missing or unknown one is a TypeError), keeps
each setting as an attribute of that name, and forward(*inputs) is
fn(*inputs, **settings), with the module's training flag where the functional takes one.
"""

from __future__ import annotations

import builtins
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

from kael.nn.modules.module import Module
from kael.runtime.errors import TypeError

REQUIRED = inspect.Parameter.empty


@dataclass(frozen=True)
class Declared:
    """How one stateless module calls its functional."""

    fn: Callable
    settings: tuple[tuple[str, object], ...]  # (name, default or REQUIRED), in order
    shown: str = ""  # extra_repr: a format over the settings, or a callable of the module
    training: str | None = None  # the functional's keyword for self.training
    passed: tuple[str, ...] | None = None  # settings handed to fn (None: all of them)
    prepare: Callable | None = None  # (module) -> None: checks and normalises settings
    keyword_only: tuple[str, ...] = field(default=())  # settings after PyTorch's `*`


class DeclaredModule(Module):
    """A module whose forward calls one functional with its settings (see the module doc)."""

    spec: Declared
    signature: inspect.Signature

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()
        try:
            bound = self.signature.bind(*args, **kwargs)
        except builtins.TypeError as e:
            raise TypeError(f"{type(self).__name__}(): {e}") from None
        bound.apply_defaults()
        for name, value in bound.arguments.items():
            setattr(self, name, value)
        if self.spec.prepare is not None:
            self.spec.prepare(self)

    def forward(self, *inputs):
        spec = self.spec
        names = spec.passed if spec.passed is not None else [n for n, _ in spec.settings]
        kwargs = {name: getattr(self, name) for name in names}
        if spec.training is not None:
            kwargs[spec.training] = self.training
        return spec.fn(*inputs, **kwargs)

    def extra_repr(self) -> str:
        shown = self.spec.shown
        if callable(shown):
            return shown(self)
        return shown.format(**vars(self))


def declare(
    name: str,
    fn: Callable,
    settings: tuple[tuple[str, object], ...] = (),
    shown: str | Callable = "",
    doc: str = "",
    **options,
) -> type[DeclaredModule]:
    """The class `name` for one stateless module (see Declared for the options)."""
    spec = Declared(fn, settings, shown, **options)
    kinds = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY
    signature = inspect.Signature(
        [inspect.Parameter(n, kinds[n in spec.keyword_only], default=d) for n, d in settings]
    )
    text = doc or f"Module form of {getattr(fn, '__name__', name)}."
    return type(
        name,
        (DeclaredModule,),
        {"spec": spec, "signature": signature, "__doc__": text, "__module__": "kael.nn"},
    )
