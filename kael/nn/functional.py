"""kael.nn.functional: the activations and the softmax family under PyTorch's names."""

from kael.frontend import nn as _nn
from kael.frontend.ops import FUNCTIONS as _FUNCTIONS

_ACTIVATIONS = ("relu", "gelu", "silu", "sigmoid", "tanh")
# torch.nn.functional has no logsumexp: it stays kael.logsumexp and Tensor.logsumexp only.
_NN = {name: _FUNCTIONS[name] for name in _nn.FUNCTIONS if name != "logsumexp"}

globals().update({name: _FUNCTIONS[name] for name in _ACTIVATIONS})
globals().update(_NN)

__all__ = [*_ACTIVATIONS, *_NN]
