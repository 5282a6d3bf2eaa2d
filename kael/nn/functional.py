"""kael.nn.functional: PyTorch's functional layer API under its names: the activations,
dropout, the losses and distances, and the softmax family."""

from kael.frontend import activations as _activations
from kael.frontend import attention as _attention
from kael.frontend import autocast as _autocast
from kael.frontend import bags as _bags
from kael.frontend import conv as _conv
from kael.frontend import ctc as _ctc
from kael.frontend import fractional_pooling as _fractional_pooling
from kael.frontend import grids as _grids
from kael.frontend import interpolate as _interpolate
from kael.frontend import layers as _layers
from kael.frontend import losses as _losses
from kael.frontend import margins as _margins
from kael.frontend import nn as _nn
from kael.frontend import noise as _noise
from kael.frontend import norms as _norms
from kael.frontend import padding as _padding
from kael.frontend import pooling as _pooling
from kael.frontend import published as _published
from kael.frontend import random as _random
from kael.frontend.ops import FUNCTIONS as _FUNCTIONS
from kael.frontend.tensor import Tensor as _Tensor
from kael.frontend.tracing import op_door as _op_door

_ACTIVATIONS = ("gelu", "sigmoid", "tanh")  # relu and silu (inplace=) are activations.py's
# torch.nn.functional has no logsumexp: it stays kael.logsumexp and Tensor.logsumexp only.
_NN = {name: _FUNCTIONS[name] for name in _nn.FUNCTIONS if name != "logsumexp"}

globals().update({name: _FUNCTIONS[name] for name in _ACTIVATIONS})
globals().update(_NN)
globals().update(_activations.FUNCTIONS)
globals().update(_losses.FUNCTIONS)
globals().update(_margins.FUNCTIONS)
globals().update(_layers.FUNCTIONS)
globals().update(_norms.FUNCTIONS)
globals().update(_noise.FUNCTIONS)
globals().update(_attention.FUNCTIONS)
globals().update(_padding.FUNCTIONS)
globals().update(_conv.FUNCTIONS)
globals().update(_pooling.FUNCTIONS)
globals().update(_interpolate.FUNCTIONS)
globals().update(_grids.FUNCTIONS)
globals().update(_bags.FUNCTIONS)
globals().update(_ctc.FUNCTIONS)
globals().update(_fractional_pooling.FUNCTIONS)
dropout = _op_door("dropout", _random.dropout)


def _implicit(name: str):
    """torch.nn.functional.NAME, whose dim may be left out (torch picks one and warns;
    torch.NAME requires it)."""
    fn = globals()[name]

    def with_dim(input, dim=None, _stacklevel=3, dtype=None, **kwargs):
        if dim is None and isinstance(input, _Tensor):
            dim = _nn.implicit_dim(name, input.ndim)
        if dtype is None and not kwargs:  # the op's fast door takes (input, dim) alone
            return fn(input, dim)
        return fn(input, dim, dtype=dtype, **kwargs)

    with_dim.__name__ = with_dim.__qualname__ = name
    with_dim.__doc__ = fn.__doc__
    return with_dim


softmax, log_softmax, softmin = (_implicit(n) for n in ("softmax", "log_softmax", "softmin"))

_autocast.install(globals(), "functional")  # linear, conv2d, the losses, ... under autocast

# every public name above: the families all land in this namespace
__all__ = sorted(name for name in globals() if not name.startswith("_"))
_published.publish(__name__, globals())  # pickle finds F.relu and the rest by these names
