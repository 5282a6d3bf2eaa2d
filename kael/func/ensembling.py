"""torch.func.stack_module_state: the parameters and buffers of M models of one class,
each stacked along a new first dim, for running the ensemble as one model under vmap
with functional_call. kael has no autograd: the stacked tensors are plain tensors (torch
makes them new leaves requiring grad where the originals did)."""

from __future__ import annotations

from collections.abc import Sequence

from kael.frontend.index_ops import stack
from kael.frontend.tensor import Tensor
from kael.runtime.errors import Error, KeyError

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
        _require_names(each, named.removeprefix("named_"))
        out = {}
        for name in each[0]:
            flags = {bool(getattr(d[name], "requires_grad", False)) for d in each}
            if len(flags) > 1:
                raise Error(f"Expected {name} from each model to have the same .requires_grad")
            out[name] = stack([d[name] for d in each])
        return out

    return stacked("named_parameters"), stacked("named_buffers")


def _require_names(each: list[dict], kind: str) -> None:
    """Every model holds each of the first model's names (torch's KeyError otherwise), named."""
    for i, named in enumerate(each[1:], 1):
        missing = [name for name in each[0] if name not in named]
        if missing:
            raise KeyError(
                f"stack_module_state: model {i} has no {kind} {missing}, which model 0 has"
            )
