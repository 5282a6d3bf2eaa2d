"""torch.nn.utils.parametrize: a module's tensor computed from stored originals by a
chain of modules, on every read. The module's class becomes a Parametrized<Name> subclass
with a property of the tensor's name; the originals live in
module.parametrizations[name] (state keys "parametrizations.<name>.original", or
original0, original1, ... when the first parametrization's right_inverse splits it). A
parametrized parameter's originals are parameters, a parametrized buffer's buffers, and
removal registers the tensor back as the same kind."""

from __future__ import annotations

import builtins
import contextlib
from collections.abc import Iterator, Sequence

from kael.frontend.tensor import Size, Tensor
from kael.nn.modules.container import ModuleDict, ModuleList
from kael.nn.modules.module import Module
from kael.nn.parameter import Parameter
from kael.runtime.errors import Error, ValueError

__all__ = [
    "ParametrizationList", "cached", "is_parametrized", "register_parametrization",
    "remove_parametrizations", "type_before_parametrizations",
]  # fmt: skip


def _register_parameter_or_buffer(module: Module, name: str, tensor: Tensor) -> None:
    """Enter `tensor` as a parameter if it is one, else as a buffer (torch's rule)."""
    if isinstance(tensor, Parameter):
        module.register_parameter(name, tensor)
    else:
        module.register_buffer(name, tensor)


def _right_inverse(module: Module, value):
    """module.right_inverse(value); the identity where the module has none or it raises
    NotImplementedError (torch's rule at registration)."""
    if not hasattr(module, "right_inverse"):
        return value
    try:
        return module.right_inverse(value)
    except builtins.NotImplementedError:
        return value


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, in order, and the originals they start from:
    a Parameter stays a parameter and a buffer a buffer, under "original" (the object
    itself, holding right_inverse's value) or "original0", "original1", ..."""

    def __init__(self, modules, original: Tensor, unsafe: bool = False) -> None:
        modules = list(modules)
        if not modules:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_like = original.detach()  # its shape and dtype, before right_inverse
        value = original
        for module in reversed(modules):
            value = _right_inverse(module, value)
        if not isinstance(value, (Tensor, Sequence)):
            raise ValueError(
                "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                f"Got {type(value).__name__}"
            )
        self.is_tensor = isinstance(value, Tensor)
        self.ntensors = 1 if self.is_tensor else len(value)
        if self.is_tensor:
            if value.dtype != original_like.dtype:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original_like.dtype!r}\n"
                    f"right_inverse(original).dtype: {value.dtype!r}"
                )
            if value is not original:
                original.data = value
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, part in enumerate(value):
                if not isinstance(part, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors "
                        f"(list, tuple...). Got element {i} of the sequence with type "
                        f"{type(part).__name__}."
                    )
                if isinstance(original, Parameter):
                    part = Parameter(part, original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", part)
        if not unsafe:
            _check_unchanged(self(), original_like, "unparametrized {}", "parametrized {}")

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
            if not hasattr(module, "right_inverse"):
                raise Error(
                    f"parametrization {type(module).__name__} does not implement right_inverse."
                )
            value = module.right_inverse(value)
        parts = (value,) if self.is_tensor else tuple(value)
        for original, part in zip(self.originals(), parts):
            original.copy_(part)


def _first_change(original: Tensor, value: Tensor) -> tuple | None:
    """(what, before, after) for the first of dtype and shape that `value` changes."""
    for what, was, now in (
        ("dtype", original.dtype, value.dtype),
        ("shape", Size(original.shape), Size(value.shape)),
    ):
        if was != now:
            return what, was, now
    return None


def _check_unchanged(value, original: Tensor, before: str, after: str, the: str = "") -> None:
    """torch's check (unless unsafe) that a parametrization keeps its tensor's dtype and
    shape; `before` and `after` label the two sides ("{}" for the property's name)."""
    if not isinstance(value, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(value).__name__}.")
    change = _first_change(original, value)
    if change is not None:
        what, was, now = change
        raise ValueError(
            f"Registering a parametrization may not change the {what} of the tensor, "
            f"unless {the}`unsafe` flag is enabled.\n"
            f"{before.format(what)}: {was!r}\n{after.format(what)}: {now!r}"
        )


def _check_appended(module: Module, name: str, parametrization: Module) -> None:
    """torch's checks of a parametrization added to a parametrized tensor: it, and its
    right_inverse if it has one, keep module.<name>'s dtype and shape."""
    current = getattr(module, name)
    new = parametrization(current)
    _check_unchanged(
        new, current, f"module.{name}.{{}}", f"parametrization(module.{name}).{{}}", the="the "
    )
    back = _right_inverse(parametrization, new)  # new itself where there is none
    if not isinstance(back, Tensor):
        raise ValueError(
            f"parametrization.right_inverse must return a tensor. Got: {type(back).__name__}"
        )
    change = _first_change(current, back)
    if change is not None:
        what, was, now = change
        raise ValueError(
            "The tensor returned by parametrization.right_inverse must have the same "
            f"{what} as module.{name}, unless the `unsafe` flag is enabled.\n"
            f"module.{name}.{what}: {was!r}\nreturned {what}: {now!r}"
        )


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
    """module.<tensor_name> becomes parametrization(original) (after any earlier ones);
    unless `unsafe`, the parametrization must keep the tensor's shape and dtype."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_appended(module, tensor_name, parametrization)
        chain = module.parametrizations[tensor_name]
        chain.append(parametrization)
        chain.unsafe |= unsafe
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized element"
            f" with name '{tensor_name}'"
        )
    chain = ParametrizationList([parametrization], getattr(module, tensor_name), unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        cls = type(module)
        parametrized = type(f"Parametrized{cls.__name__}", (cls,), {"_unparametrized": cls})
        module.__class__ = parametrized
        module.parametrizations = ModuleDict()
    setattr(type(module), tensor_name, _property(tensor_name))
    module.parametrizations[tensor_name] = chain
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
    """Undo the parametrizations of `tensor_name`: it becomes a parameter or buffer again
    (the original object, as torch keeps it) holding its current parametrized value
    (leave_parametrized) or its original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    chain = module.parametrizations[tensor_name]
    if chain.is_tensor:
        original = chain.original
        if leave_parametrized:
            original.data = chain()
    elif leave_parametrized:
        # torch: a Parameter where the value requires grad (some original does), else a buffer
        value = chain()
        trained = any(isinstance(t, Parameter) and t.requires_grad for t in chain.originals())
        original = Parameter(value) if trained else value
    else:
        raise ValueError(
            "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is"
            " parametrized in terms of a sequence of tensors."
        )
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        del module.parametrizations
        module.__class__ = type_before_parametrizations(module)
    return module
