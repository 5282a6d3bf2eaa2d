"""torch.nn.utils.spectral_norm (the hook form) and the power iteration it shares with
parametrizations.spectral_norm: a weight divided by its largest singular value sigma,
estimated from persistent vectors u and v refined by power iterations in training mode
(GAN discriminators; their checkpoints carry weight_orig, weight_u and weight_v)."""

from __future__ import annotations

from kael.frontend.linalg import dot
from kael.frontend.products import mv
from kael.nn.functional import normalize
from kael.nn.parameter import Parameter
from kael.runtime.errors import Error, ValueError


def transposed_dim(module) -> int:
    """The output-channel dim of module's weight: 1 for ConvTranspose layers, else 0."""
    from kael.nn.modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

    return 1 if isinstance(module, ConvTranspose1d | ConvTranspose2d | ConvTranspose3d) else 0


def as_matrix(weight, dim: int):
    """weight as a matrix whose rows are its slices along `dim` (moved first)."""
    if dim != 0:
        weight = weight.permute(dim, *(d for d in range(weight.dim()) if d != dim))
    return weight.reshape(weight.shape[0], -1)


def power_iterate(matrix, u, v, iterations: int, eps: float, u_first: bool = False) -> None:
    """Refine u and v in place toward matrix's top singular vectors: each iteration v from
    u, then u from v (the hook form's order; the parametrization's, u_first, is u then v)."""
    for _ in range(iterations):
        if u_first:
            normalize(mv(matrix, v), dim=0, eps=eps, out=u)
        normalize(mv(matrix.t(), u), dim=0, eps=eps, out=v)
        if not u_first:
            normalize(mv(matrix, v), dim=0, eps=eps, out=u)


def check_iterations(n_power_iterations: int) -> None:
    if n_power_iterations <= 0:
        raise ValueError(
            "Expected n_power_iterations to be positive, but got "
            f"n_power_iterations={n_power_iterations}"
        )


class SpectralNorm:
    """The forward pre-hook that recomputes `name` as name_orig / sigma."""

    def __init__(self, name: str, n_power_iterations: int, dim: int, eps: float) -> None:
        check_iterations(n_power_iterations)
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def compute_weight(self, module, do_power_iteration: bool):
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        matrix = as_matrix(weight, self.dim)
        if do_power_iteration:
            power_iterate(matrix, u, v, self.n_power_iterations, self.eps)
        return weight / dot(u, mv(matrix, v))

    def __call__(self, module, inputs) -> None:
        object.__setattr__(module, self.name, self.compute_weight(module, module.training))


def spectral_norm(
    module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim=None
):
    """Divide module.`name` by its spectral norm before each forward: the weight becomes
    parameter name_orig, with buffers name_u and name_v (random unit vectors at first);
    returns the module."""
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            raise Error(f"Cannot register two spectral_norm hooks on the same parameter {name}")
    dim = transposed_dim(module) if dim is None else dim
    fn = SpectralNorm(name, n_power_iterations, dim, eps)
    weight = module._parameters[name]
    rows, cols = as_matrix(weight, dim).shape
    u = normalize(weight.new_empty(rows).normal_(0, 1), dim=0, eps=eps)
    v = normalize(weight.new_empty(cols).normal_(0, 1), dim=0, eps=eps)
    del module._parameters[name]
    module.register_parameter(name + "_orig", weight)
    object.__setattr__(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(fn)
    return module


def remove_spectral_norm(module, name: str = "weight"):
    """Undo spectral_norm: module.`name` becomes a plain parameter (its current value)."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            weight = hook.compute_weight(module, do_power_iteration=False)
            del module._forward_pre_hooks[key]
            del module._parameters[name + "_orig"]
            del module._buffers[name + "_u"], module._buffers[name + "_v"]
            if name in module.__dict__:
                object.__delattr__(module, name)
            module.register_parameter(name, Parameter(weight.detach()))
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
