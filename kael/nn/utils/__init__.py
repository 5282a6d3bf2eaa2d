"""kael.nn.utils: PyTorch's torch.nn.utils helpers: packed sequences (rnn), weight and
spectral norm, batch-norm fusion, parameters as one vector, skip_init and convolution
weights' memory format."""

from kael.nn.utils import parametrizations, parametrize, rnn, stateless
from kael.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from kael.nn.utils.fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from kael.nn.utils.init import skip_init
from kael.nn.utils.memory_format import (
    convert_conv2d_weight_memory_format,
    convert_conv3d_weight_memory_format,
)
from kael.nn.utils.spectral_norm import remove_spectral_norm, spectral_norm
from kael.nn.utils.weight_norm import remove_weight_norm, weight_norm

__all__ = [
    "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format",
    "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights",
    "parameters_to_vector", "parametrizations", "parametrize", "remove_spectral_norm", "remove_weight_norm", "rnn", "skip_init", "spectral_norm", "stateless", "vector_to_parameters", "weight_norm",
]  # fmt: skip
