"""kael.nn: PyTorch's namespace for neural networks: Module and the layers (kael.nn.modules),
Parameter and Buffer, the functional forms (kael.nn.functional), initialisers
(kael.nn.init) and helpers (kael.nn.utils)."""

from kael.nn import attention, functional, init, utils
from kael.nn.modules import *  # noqa: F403  (every layer, as torch.nn exports them)
from kael.nn.modules import __all__ as _layers
from kael.nn.parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = [
    "Buffer",
    "Parameter",
    "UninitializedBuffer",
    "UninitializedParameter",
    "attention",
    "functional",
    "init",
    "utils",
    *_layers,
]
