"""Modules that move, resample or compare elements: Identity, Flatten, Unflatten, the
shuffles, Upsample, Fold/Unfold and the two distances."""

from __future__ import annotations

from kael.nn import functional as F
from kael.nn.modules.declared import REQUIRED, declare
from kael.nn.modules.module import Module
from kael.runtime.errors import TypeError


class Identity(Module):
    """Returns its input; takes (and ignores) any constructor arguments, as PyTorch's."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input):
        return input


def _flatten(input, *, start_dim, end_dim):
    return input.flatten(start_dim, end_dim)


def _unflatten(input, *, dim, unflattened_size):
    return input.unflatten(dim, unflattened_size)


def _check_unflattened_size(module) -> None:
    """Unflatten's size: a tuple or list of ints (torch.Size is one), as torch requires."""
    size = module.unflattened_size
    if not isinstance(size, (tuple, list)):
        raise TypeError(
            f"unflattened_size must be a tuple of ints, but found type {type(size).__name__}"
        )
    for i, element in enumerate(size):
        if not isinstance(element, int):
            raise TypeError(
                "unflattened_size must be tuple of ints, but found element of type "
                f"{type(element).__name__} at pos {i}"
            )


def _upsample_settings(module) -> None:
    factor = module.scale_factor
    if isinstance(factor, tuple):
        module.scale_factor = tuple(float(f) for f in factor)
    else:
        module.scale_factor = float(factor) if factor else None


def _upsample_repr(module) -> str:
    if module.scale_factor is not None:
        info = f"scale_factor={module.scale_factor!r}"
    else:
        info = f"size={module.size!r}"
    return info + f", mode={module.mode!r}"


def _fixed_mode(mode: str, align_corners):
    """prepare of the two deprecated Upsample forms, whose mode is their name's."""

    def prepare(module) -> None:
        _upsample_settings(module)
        module.mode, module.align_corners = mode, align_corners

    return prepare


def _rename_p(module) -> None:
    module.norm = module.__dict__.pop("p")  # PyTorch keeps PairwiseDistance's p as norm


def _pairwise_distance(x1, x2, *, norm, eps, keepdim):
    return F.pairwise_distance(x1, x2, norm, eps, keepdim)


Flatten = declare(
    "Flatten",
    _flatten,
    (("start_dim", 1), ("end_dim", -1)),
    "start_dim={start_dim}, end_dim={end_dim}",
)
Unflatten = declare(
    "Unflatten",
    _unflatten,
    (("dim", REQUIRED), ("unflattened_size", REQUIRED)),
    "dim={dim}, unflattened_size={unflattened_size}",
    prepare=_check_unflattened_size,
)
PixelShuffle = declare(
    "PixelShuffle",
    F.pixel_shuffle,
    (("upscale_factor", REQUIRED),),
    "upscale_factor={upscale_factor}",
)
PixelUnshuffle = declare(
    "PixelUnshuffle",
    F.pixel_unshuffle,
    (("downscale_factor", REQUIRED),),
    "downscale_factor={downscale_factor}",
)
ChannelShuffle = declare(
    "ChannelShuffle", F.channel_shuffle, (("groups", REQUIRED),), "groups={groups}"
)
Upsample = declare(
    "Upsample",
    F.interpolate,
    (
        ("size", None),
        ("scale_factor", None),
        ("mode", "nearest"),
        ("align_corners", None),
        ("recompute_scale_factor", None),
    ),
    _upsample_repr,
    prepare=_upsample_settings,
)
_SIZE_OR_SCALE = (("size", None), ("scale_factor", None))
_INTERPOLATE = ("size", "scale_factor", "mode", "align_corners")
UpsamplingNearest2d = declare(
    "UpsamplingNearest2d",
    F.interpolate,
    _SIZE_OR_SCALE,
    _upsample_repr,
    prepare=_fixed_mode("nearest", None),
    passed=_INTERPOLATE,
    base=Upsample,
)
UpsamplingBilinear2d = declare(
    "UpsamplingBilinear2d",
    F.interpolate,
    _SIZE_OR_SCALE,
    _upsample_repr,
    prepare=_fixed_mode("bilinear", True),
    passed=_INTERPOLATE,
    base=Upsample,
)
_WINDOW = (("kernel_size", REQUIRED), ("dilation", 1), ("padding", 0), ("stride", 1))
Fold = declare(
    "Fold",
    F.fold,
    (("output_size", REQUIRED), *_WINDOW),
    "output_size={output_size}, kernel_size={kernel_size}, dilation={dilation}, "
    "padding={padding}, stride={stride}",
)
Unfold = declare(
    "Unfold",
    F.unfold,
    _WINDOW,
    "kernel_size={kernel_size}, dilation={dilation}, padding={padding}, stride={stride}",
)
CosineSimilarity = declare("CosineSimilarity", F.cosine_similarity, (("dim", 1), ("eps", 1e-8)))
PairwiseDistance = declare(
    "PairwiseDistance",
    _pairwise_distance,
    (("p", 2.0), ("eps", 1e-6), ("keepdim", False)),
    prepare=_rename_p,
    passed=("norm", "eps", "keepdim"),
)
LocalResponseNorm = declare(
    "LocalResponseNorm",
    F.local_response_norm,
    (("size", REQUIRED), ("alpha", 1e-4), ("beta", 0.75), ("k", 1.0)),
    "{size}, alpha={alpha}, beta={beta}, k={k}",
)
