"""kael.nn: PyTorch's namespace for neural-network functions (kael.nn.functional) and helpers
(kael.nn.utils)."""

from kael.nn import functional, utils

__all__ = ["functional", "utils"]
