"""What a module's state accepts from outside: tensors of kael, NumPy and DLPack producers."""

from __future__ import annotations

import numpy as np

from kael.frontend.factories import as_tensor
from kael.frontend.tensor import Tensor
from kael.runtime.errors import TypeError


def type_name(value) -> str:
    """A value's type as an error message names it: module.Class, builtins bare."""
    kind = type(value)
    module = kind.__module__.split(".")[0]
    return kind.__name__ if module == "builtins" else f"{module}.{kind.__name__}"


def as_state_tensor(value) -> Tensor:
    """A checkpoint entry as a kael tensor over its memory: a kael tensor, a NumPy array or
    another library's tensor (torch's, through DLPack)."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, np.ndarray) or hasattr(value, "__dlpack__"):
        return as_tensor(value)
    raise TypeError(
        "expected a kael.Tensor or a Tensor-like object (a NumPy array, a torch tensor) "
        f"from checkpoint but received {type_name(value)}"
    )
