"""parameters_to_vector and vector_to_parameters: a model's parameters as one flat vector
and back, as torch.nn.utils has them."""

from __future__ import annotations

from collections.abc import Iterable

from kael.frontend import index_ops
from kael.frontend.outputs import tensor_arg
from kael.frontend.tensor import Tensor
from kael.runtime.errors import TypeError, ValueError


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """Every parameter flattened and concatenated, in order (on their common device)."""
    tensors = [tensor_arg(p, "parameters_to_vector", "parameters").reshape(-1) for p in parameters]
    return index_ops.cat(tensors)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Make each parameter, in order, a view of the next slice of `vec` (in its shape)."""
    vec = tensor_arg(vec, "vector_to_parameters", "vec")
    if vec.dim() != 1:
        raise ValueError(f"expected vec to be a 1-D tensor, got {vec.dim()}-D")
    start = 0
    for p in parameters:
        n = p.numel()
        if start + n > vec.numel():
            raise ValueError(
                f"vec has {vec.numel()} elements, fewer than the parameters' {start + n}+"
            )
        if vec.dtype is not p.dtype:
            raise TypeError(
                f"vector_to_parameters: vec has dtype {vec.dtype}, a parameter {p.dtype}"
            )
        p.data = vec[start : start + n].view_as(p)  # a view of vec, as torch makes it
        start += n
