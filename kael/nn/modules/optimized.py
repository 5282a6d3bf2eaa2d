"""OptimizedModule: what kael.compile(module) returns, as torch.compile does: a Module whose
forward is the compiled module, with the original as its submodule `_orig_mod` (so
state_dict keys carry torch's `_orig_mod.` prefix) and every other attribute read from it."""

from __future__ import annotations

from kael.nn.modules.module import Module


class OptimizedModule(Module):
    """A compiled module (see the module docstring)."""

    def __init__(self, mod: Module, compiled) -> None:
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled", compiled)
        object.__setattr__(self, "__name__", compiled.__name__)  # what inspection prints
        del self.__dict__["training"]  # read from the original module, as torch's wrapper

    def forward(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def train(self, mode: bool = True) -> OptimizedModule:
        """The original module's train(mode): the wrapper's `training` is the original's."""
        self._orig_mod.train(mode)
        return self

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            modules = self.__dict__.get("_modules")
            if modules is None or "_orig_mod" not in modules:
                raise
            return getattr(modules["_orig_mod"], name)

    def __setattr__(self, name: str, value) -> None:
        """Set on the original module (training, weight, ...), as torch's wrapper does."""
        modules = self.__dict__.get("_modules")
        if modules is None or "_orig_mod" not in modules or name == "_orig_mod":
            super().__setattr__(name, value)
        else:
            setattr(modules["_orig_mod"], name, value)

    def __reduce__(self):
        """Copies and pickles rebuild from the original module, compiled afresh."""
        return (_compiled_again, (self._orig_mod,))

    def cache_info(self):
        """The compiled function's plan counts (kael.compile's cache_info)."""
        return self._compiled.cache_info()

    def inspect(self, *args, **kwargs):
        return self._compiled.inspect(*args, **kwargs)


def _compiled_again(mod: Module) -> OptimizedModule:
    from kael.frontend.compiled import compile as compile_module  # it imports kael.nn

    return compile_module(mod)
