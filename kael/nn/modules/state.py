"""What a module's state accepts from outside (tensors of kael, NumPy and DLPack producers)
and how load_state_dict walks the module tree: torch's order of _load_from_state_dict calls,
each child on its own copy of the entries under its prefix, and the load post-hooks."""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

import numpy as np

from kael.frontend.factories import as_tensor
from kael.frontend.tensor import Tensor
from kael.runtime.errors import Error, TypeError


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


class _IncompatibleKeys(NamedTuple):
    """load_state_dict's result: the keys the module missed and the keys it did not know."""

    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        """PyTorch's: a sentence when every key matched, the two lists otherwise."""
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (
            f"{type(self).__name__}(missing_keys={self.missing_keys!r}, "
            f"unexpected_keys={self.unexpected_keys!r})"
        )

    __str__ = __repr__


def quoted(keys: list[str]) -> str:
    """The keys as torch's load_state_dict messages list them: "a", "b"."""
    return ", ".join(f'"{k}"' for k in keys)


def with_metadata(state_dict: OrderedDict, metadata) -> OrderedDict:
    """state_dict carrying a checkpoint's _metadata (each module's version), if any."""
    if metadata is not None:
        state_dict._metadata = metadata
    return state_dict


def load_tree(module, state_dict, prefix: str, metadata, assign: bool, keys) -> None:
    """torch's load(): the module's own entries, then each child's on its own copy of the
    entries under its prefix, then the module's load post-hooks."""
    missing, unexpected, problems = keys
    local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
    if assign:
        local_metadata["assign_to_params_buffers"] = assign
    module._load_from_state_dict(
        state_dict, prefix, local_metadata, True, missing, unexpected, problems
    )
    for name, child in module._modules.items():
        if child is not None:
            below = f"{prefix}{name}."
            entries = OrderedDict((k, v) for k, v in state_dict.items() if k.startswith(below))
            load_tree(child, with_metadata(entries, metadata), below, metadata, assign, keys)
    incompatible = _IncompatibleKeys(missing, unexpected)
    for hook in list(module._load_state_dict_post_hooks.values()):
        if hook(module, incompatible) is not None:
            raise Error(
                "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                "expected to return new values, if incompatible_keys need to be modified, "
                "it should be done inplace."
            )
