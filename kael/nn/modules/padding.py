"""Padding modules: F.pad with a mode and PyTorch's padding tuple (an int repeated 2N times)."""

from __future__ import annotations

from kael.nn import functional as F
from kael.nn.modules.declared import REQUIRED, declare
from kael.nn.modules.utils import ntuple


def _padding_tuple(n: int):
    def prepare(module) -> None:
        module.padding = ntuple(2 * n, module.padding)

    return prepare


def _pad(mode: str):
    def pad(input, *, padding, value=None):
        return F.pad(input, padding, mode, value)

    return pad


def _family(kind: str, mode: str, settings=(("padding", REQUIRED),), shown="{padding}"):
    return tuple(
        declare(f"{kind}{n}d", _pad(mode), settings, shown, prepare=_padding_tuple(n))
        for n in (1, 2, 3)
    )


ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = _family("ReflectionPad", "reflect")
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = _family("ReplicationPad", "replicate")
CircularPad1d, CircularPad2d, CircularPad3d = _family("CircularPad", "circular")
ZeroPad1d, ZeroPad2d, ZeroPad3d = _family("ZeroPad", "constant")
ConstantPad1d, ConstantPad2d, ConstantPad3d = _family(
    "ConstantPad",
    "constant",
    (("padding", REQUIRED), ("value", REQUIRED)),
    "padding={padding}, value={value}",
)
