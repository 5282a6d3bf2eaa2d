"""kael.utils: torch.utils' data loading (kael.utils.data) and DLPack exchange
(kael.utils.dlpack)."""

from kael.utils import data, dlpack

__all__ = ["data", "dlpack"]
