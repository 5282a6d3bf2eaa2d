"""torch.nn.utils.parametrize: a module's tensor computed from stored originals by a
chain of modules, on every read. The module's class becomes a Parametrized<Name> subclass
with a property of the tensor's name; the originals live in
module.parametrizations[name] (state keys "parametrizations.<name>.original", or
original0, original1, ... when the first parametrization's right_inverse splits it)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from kael.frontend.tensor import Tensor
from kael.nn.modules.container import ModuleDict, ModuleList
from kael.nn.modules.module import Module
from kael.nn.parameter import Parameter
from kael.runtime.errors import ValueError

__all__ = [
    "ParametrizationList", "cached", "is_parametrized", "register_parametrization",
    "remove_parametrizations", "type_before_parametrizations",
]  # fmt: skip


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, in order, and the originals they start from."""

    def __init__(self, modules, original: Tensor, unsafe: bool = False) -> None:
        super().__init__(modules)
        self.unsafe = unsafe
        value = original
        for module in reversed(list(self)):
            if hasattr(module, "right_inverse"):
                value = module.right_inverse(value)
        self.is_tensor = isinstance(value, Tensor)
        if self.is_tensor:  # the original object kept, holding right_inverse's value
            if value is not original:
                original.data = value
            self.original = original if isinstance(original, Parameter) else Parameter(original)
        else:
            self.ntensors = len(value)
            for i, part in enumerate(value):
                self.register_parameter(f"original{i}", Parameter(part))

    def originals(self) -> tuple:
        if self.is_tensor:
            return (self.original,)
        return tuple(getattr(self, f"original{i}") for i in range(self.ntensors))

    def forward(self) -> Tensor:
        value = self[0](*self.originals())
        for module in list(self)[1:]:
            value = module(value)
        return value

    def right_inverse(self, value: Tensor) -> None:
        """Store `value` as the originals (setting module.<name>), through right_inverse."""
        for module in reversed(list(self)):
            if hasattr(module, "right_inverse"):
                value = module.right_inverse(value)
        parts = (value,) if self.is_tensor else tuple(value)
        for original, part in zip(self.originals(), parts):
            original.copy_(part)


_caching = False
_cache: dict = {}


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """Within the block each parametrized tensor is computed once, at its first read."""
    global _caching
    before, _caching = _caching, True
    try:
        yield
    finally:
        _caching = before
        if not before:
            _cache.clear()


def _property(name: str) -> property:
    def get(self) -> Tensor:
        chain = self.parametrizations[name]
        if not _caching:
            return chain()
        key = (id(self), name)
        if key not in _cache:
            _cache[key] = chain()
        return _cache[key]

    def set_(self, value: Tensor) -> None:
        self.parametrizations[name].right_inverse(value)

    return property(get, set_)


def register_parametrization(
    module: Module, tensor_name: str, parametrization: Module, *, unsafe: bool = False
) -> Module:
    """module.<tensor_name> becomes parametrization(original) (after any earlier ones)."""
    if is_parametrized(module, tensor_name):
        module.parametrizations[tensor_name].append(parametrization)
        return module
    if tensor_name in module._parameters:
        original = module._parameters.pop(tensor_name)
    elif tensor_name in module._buffers:
        original = module._buffers.pop(tensor_name)
    else:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized element"
            f" with name '{tensor_name}'"
        )
    if not is_parametrized(module):
        cls = type(module)
        parametrized = type(f"Parametrized{cls.__name__}", (cls,), {"_unparametrized": cls})
        module.__class__ = parametrized
        module.parametrizations = ModuleDict()
    setattr(type(module), tensor_name, _property(tensor_name))
    module.parametrizations[tensor_name] = ParametrizationList([parametrization], original, unsafe)
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether the module (or its tensor `tensor_name`) has parametrizations."""
    chains = module.__dict__.get("_modules", {}).get("parametrizations")
    if chains is None or not isinstance(chains, ModuleDict):
        return False
    return len(chains) > 0 if tensor_name is None else tensor_name in chains


def type_before_parametrizations(module: Module) -> type:
    """The module's class before register_parametrization changed it."""
    return getattr(type(module), "_unparametrized", type(module))


def remove_parametrizations(
    module: Module, tensor_name: str, leave_parametrized: bool = True
) -> Module:
    """Undo the parametrizations of `tensor_name`: it becomes a plain parameter holding its
    current parametrized value (leave_parametrized) or its original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    chain = module.parametrizations[tensor_name]
    if leave_parametrized:
        value = chain()
    elif chain.is_tensor:
        value = chain.original
    else:
        raise ValueError(
            "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is"
            " parametrized in terms of a sequence of tensors."
        )
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    module.register_parameter(
        tensor_name, value if isinstance(value, Parameter) else Parameter(value)
    )
    if not is_parametrized(module):
        del module.parametrizations
        module.__class__ = type_before_parametrizations(module)
    return module
