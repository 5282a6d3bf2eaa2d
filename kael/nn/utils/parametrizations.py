"""torch.nn.utils.parametrizations.weight_norm: weight = g * v / ||v||, as a
parametrization (the state keys "parametrizations.weight.original0" (g) and "original1"
(v) of newer checkpoints; kael.nn.utils.weight_norm is the older hook form)."""

from __future__ import annotations

from kael.nn.modules.module import Module
from kael.nn.utils import parametrize
from kael.nn.utils.weight_norm import norm_except_dim

__all__ = ["weight_norm"]


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
