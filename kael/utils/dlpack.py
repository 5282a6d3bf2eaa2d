"""kael.utils.dlpack: torch.utils.dlpack's two functions. from_dlpack reads any producer
(kael.from_dlpack); to_dlpack gives a kael tensor's DLPack capsule, sharing its memory."""

from __future__ import annotations

from kael.frontend.factories import from_dlpack
from kael.frontend.outputs import tensor_arg
from kael.frontend.tensor import Tensor

__all__ = ["from_dlpack", "to_dlpack"]


def to_dlpack(tensor: Tensor):
    """A DLPack capsule over the tensor's memory (consumed once, by any DLPack reader)."""
    return tensor_arg(tensor, "to_dlpack", "tensor").__dlpack__()
