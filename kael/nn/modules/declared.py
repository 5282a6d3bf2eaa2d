"""Modules without state of their own, each declared once as a row: the functional it calls,
its constructor's settings (PyTorch's names, order and defaults) and its repr.

`declare(name, fn, settings, shown)` makes the class: the constructor binds its arguments
as PyTorch's does (positional or keyword; a missing or unknown one is a TypeError), keeps
each setting as an attribute of that name, and forward(*inputs) is
fn(*inputs, **settings), with the module's training flag where the functional takes one.
forward also takes its inputs by name, as PyTorch's does: the names are fn's leading
parameters that are not settings (or the row's `inputs` where fn does not name them).
"""

from __future__ import annotations

import builtins
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

from kael.nn.modules.module import Module
from kael.runtime.errors import TypeError

REQUIRED = inspect.Parameter.empty
POSITIONAL = inspect.Parameter.POSITIONAL_OR_KEYWORD


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
    inputs: tuple[str, ...] | None = None  # forward's parameters, where fn does not name them


class DeclaredModule(Module):
    """A module whose forward calls one functional with its settings (see the module doc)."""

    spec: Declared
    signature: inspect.Signature
    forward_signature: inspect.Signature

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

    def forward(self, *inputs, **named):
        if named:
            inputs = self._bind_inputs(inputs, named)
        spec = self.spec
        names = spec.passed if spec.passed is not None else [n for n, _ in spec.settings]
        kwargs = {name: getattr(self, name) for name in names}
        if spec.training is not None:
            kwargs[spec.training] = self.training
        return spec.fn(*inputs, **kwargs)

    def _bind_inputs(self, inputs: tuple, named: dict) -> tuple:
        """forward's inputs given by name, put in order (PyTorch's forward(input=...))."""
        try:
            return self.forward_signature.bind(*inputs, **named).args
        except builtins.TypeError as e:
            raise TypeError(f"{type(self).__name__}.forward(): {e}") from None

    def extra_repr(self) -> str:
        shown = self.spec.shown
        if callable(shown):
            return shown(self)
        return shown.format(**vars(self))


def _forward_signature(spec: Declared) -> inspect.Signature:
    """forward's inputs: the row's `inputs`, else fn's leading positional parameters up to
    the first setting (or the training keyword), with fn's defaults."""
    if spec.inputs is not None:
        return inspect.Signature([inspect.Parameter(n, POSITIONAL) for n in spec.inputs])
    taken = {n for n, _ in spec.settings} | set(spec.passed or ()) | {spec.training}
    inputs = []
    for p in inspect.signature(spec.fn).parameters.values():
        if p.kind not in (inspect.Parameter.POSITIONAL_ONLY, POSITIONAL) or p.name in taken:
            break
        inputs.append(p.replace(kind=POSITIONAL, annotation=inspect.Parameter.empty))
    return inspect.Signature(inputs)


def declare(
    name: str,
    fn: Callable,
    settings: tuple[tuple[str, object], ...] = (),
    shown: str | Callable = "",
    doc: str = "",
    base: type[DeclaredModule] | None = None,
    **options,
) -> type[DeclaredModule]:
    """The class `name` for one stateless module (see Declared for the options), a subclass
    of `base` where PyTorch's is one (UpsamplingNearest2d of Upsample)."""
    spec = Declared(fn, settings, shown, **options)
    kinds = POSITIONAL, inspect.Parameter.KEYWORD_ONLY
    signature = inspect.Signature(
        [inspect.Parameter(n, kinds[n in spec.keyword_only], default=d) for n, d in settings]
    )
    text = doc or f"Module form of {getattr(fn, '__name__', name)}."
    namespace = {
        "spec": spec,
        "signature": signature,
        "forward_signature": _forward_signature(spec),
        "__doc__": text,
        "__module__": "kael.nn",
    }
    return type(name, (base or DeclaredModule,), namespace)
