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
        self.training = mod.training

    def forward(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)

    def cache_info(self):
        """The compiled function's plan counts (kael.compile's cache_info)."""
        return self._compiled.cache_info()

    def inspect(self, *args, **kwargs):
        return self._compiled.inspect(*args, **kwargs)
