"""kael.nn.functional: the activations and the softmax family under PyTorch's names."""

from kael.frontend import nn as _nn
from kael.frontend.ops import FUNCTIONS as _FUNCTIONS

_ACTIVATIONS = ("relu", "gelu", "silu", "sigmoid", "tanh")

globals().update({name: _FUNCTIONS[name] for name in _ACTIVATIONS})
globals().update(_nn.FUNCTIONS)

__all__ = [*_ACTIVATIONS, *_nn.FUNCTIONS]
