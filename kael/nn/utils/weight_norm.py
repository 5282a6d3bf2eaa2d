"""torch.nn.utils.weight_norm (the hook form): a module's `weight` replaced by weight_g and
weight_v, recomputed as g * v / ||v|| before each forward. Checkpoints of vocoders and
TTS models carry these keys; loading them needs the module set up the same way."""

from __future__ import annotations

from kael.frontend.matrix_norms import vector_norm
from kael.nn.parameter import Parameter
from kael.runtime.errors import ValueError


def norm_except_dim(v, dim: int | None):
    """||v|| over every dim but `dim` (kept as size-1 dims), or over all of v (dim None)."""
    if dim is None or dim == -1:
        return vector_norm(v)
    dim = dim % v.dim()
    others = tuple(d for d in range(v.dim()) if d != dim)
    return vector_norm(v, 2, others, keepdim=True) if others else v.abs()


class WeightNorm:
    """The forward pre-hook that recomputes `name` from name_g and name_v."""

    def __init__(self, name: str, dim: int | None) -> None:
        self.name, self.dim = name, dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / norm_except_dim(v, self.dim))

    def __call__(self, module, inputs) -> None:
        object.__setattr__(module, self.name, self.compute_weight(module))


def weight_norm(module, name: str = "weight", dim: int | None = 0):
    """Reparametrize module.`name` as g * v / ||v|| (g: its norms over every dim but `dim`,
    v: its direction), as new parameters name_g and name_v; returns the module."""
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, WeightNorm) and hook.name == name:
            raise ValueError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    weight = getattr(module, name)
    fn = WeightNorm(name, dim)
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, dim)))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    object.__setattr__(module, name, fn.compute_weight(module))
    module.register_forward_pre_hook(fn)
    return module


def remove_weight_norm(module, name: str = "weight"):
    """Undo weight_norm: module.`name` becomes a plain parameter again (its current value)."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            weight = hook.compute_weight(module)
            del module._forward_pre_hooks[key]
            del module._parameters[name + "_g"], module._parameters[name + "_v"]
            if name in module.__dict__:  # the computed weight, a plain attribute
                object.__delattr__(module, name)
            module.register_parameter(name, Parameter(weight.detach()))
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
