"""torch.nn.utils.convert_conv2d/3d_weight_memory_format: a model's convolution weights
re-laid in a memory format (channels-last weights make kael's convolutions, like torch's,
write channels-last results)."""

from __future__ import annotations

from kael.frontend.memory_formats import memory_format
from kael.nn.modules.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d


def _converted(module, kinds: tuple, fmt: memory_format):
    """module with the weight of each of its (and its descendants') `kinds` re-laid in fmt."""
    if isinstance(module, kinds):
        module.weight.data = module.weight.detach().clone(memory_format=fmt)
    for child in module.children():
        _converted(child, kinds, fmt)
    return module


def convert_conv2d_weight_memory_format(module, memory_format: memory_format):
    """Re-lay every Conv2d and ConvTranspose2d weight in `module` in memory_format, in
    place; returns module."""
    return _converted(module, (Conv2d, ConvTranspose2d), memory_format)


def convert_conv3d_weight_memory_format(module, memory_format: memory_format):
    """Re-lay every Conv3d and ConvTranspose3d weight in `module` in memory_format, in
    place; returns module."""
    return _converted(module, (Conv3d, ConvTranspose3d), memory_format)
