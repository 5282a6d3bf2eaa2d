"""torch.nn.utils.parametrizations: weight_norm (weight = g * v / ||v||: the state keys
"parametrizations.weight.original0" (g) and "original1" (v) of newer checkpoints) and
spectral_norm (weight / sigma: "parametrizations.weight.original" and the power
iteration's "parametrizations.weight.0._u" and "_v"); kael.nn.utils.weight_norm and
spectral_norm are the older hook forms."""

from __future__ import annotations

from kael.frontend.linalg import dot
from kael.frontend.products import mv
from kael.frontend.tensor import Tensor
from kael.nn.functional import normalize
from kael.nn.modules.module import Module
from kael.nn.utils import parametrize
from kael.nn.utils.spectral_norm import as_matrix, check_iterations, power_iterate, transposed_dim
from kael.nn.utils.weight_norm import norm_except_dim
from kael.runtime.errors import IndexError, ValueError

__all__ = ["spectral_norm", "weight_norm"]


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight):
        return norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Parametrize module.`name` by its norms over every dim but `dim` and its direction."""
    return parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)


class _SpectralNorm(Module):
    """weight / sigma for a matrix-like weight (a vector is just normalized); u and v
    start from 15 power iterations and take n_power_iterations more per training forward."""

    def __init__(self, weight, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12):
        super().__init__()
        ndim = weight.dim()
        if not -ndim <= dim < ndim:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}] but"
                f" got {dim})"
            )
        check_iterations(n_power_iterations)
        self.dim = dim % ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            matrix = as_matrix(weight.detach(), self.dim)
            rows, cols = matrix.shape
            self.register_buffer(
                "_u", normalize(matrix.new_empty(rows).normal_(0, 1), dim=0, eps=eps)
            )
            self.register_buffer(
                "_v", normalize(matrix.new_empty(cols).normal_(0, 1), dim=0, eps=eps)
            )
            power_iterate(matrix, self._u, self._v, 15, eps, u_first=True)

    def forward(self, weight):
        if weight.dim() == 1:
            return normalize(weight, dim=0, eps=self.eps)
        matrix = as_matrix(weight, self.dim)
        if self.training:
            iterations, eps = self.n_power_iterations, self.eps
            power_iterate(matrix, self._u, self._v, iterations, eps, u_first=True)
        return weight / dot(self._u, mv(matrix, self._v))

    def right_inverse(self, value):
        return value


def spectral_norm(
    module: Module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> Module:
    """Parametrize module.`name` as itself divided by its spectral norm (power iteration)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    dim = transposed_dim(module) if dim is None else dim
    fn = _SpectralNorm(weight, n_power_iterations, dim, eps)
    return parametrize.register_parametrization(module, name, fn)
