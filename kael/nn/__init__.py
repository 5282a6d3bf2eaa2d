"""kael.nn: PyTorch's namespace for neural-network functions (kael.nn.functional)."""

from kael.nn import functional

__all__ = ["functional"]
