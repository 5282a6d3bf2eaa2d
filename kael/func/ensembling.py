"""torch.func.stack_module_state: the parameters and buffers of M models of one class,
each stacked along a new first dim, for running the ensemble as one model under vmap
with functional_call. kael has no autograd: the stacked tensors are plain tensors (torch
makes them new leaves requiring grad where the originals did)."""

from __future__ import annotations

from collections.abc import Sequence

from kael.frontend.index_ops import stack
from kael.frontend.tensor import Tensor
from kael.runtime.errors import Error

__all__ = ["stack_module_state"]


def stack_module_state(models: Sequence) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """(params, buffers): name -> the models' tensors of that name stacked, in the first
    model's state-dict order; the models must share one class and one training mode."""
    if len(models) == 0:
        raise Error("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise Error("stack_module_state: Expected all models to have the same training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise Error("stack_module_state: Expected all models to be of the same class.")

    def stacked(named: str) -> dict[str, Tensor]:
        each = [dict(getattr(m, named)()) for m in models]
        out = {}
        for name in each[0]:
            flags = {bool(getattr(d[name], "requires_grad", False)) for d in each}
            if len(flags) > 1:
                raise Error(f"Expected {name} from each model to have the same .requires_grad")
            out[name] = stack([d[name] for d in each])
        return out

    return stacked("named_parameters"), stacked("named_buffers")
