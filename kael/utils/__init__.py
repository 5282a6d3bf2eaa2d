"""kael.utils: torch.utils' data loading (kael.utils.data), DLPack exchange
(kael.utils.dlpack) and activation checkpointing (kael.utils.checkpoint: without autograd,
a plain call)."""

from kael.utils import checkpoint, data, dlpack

__all__ = ["checkpoint", "data", "dlpack"]
