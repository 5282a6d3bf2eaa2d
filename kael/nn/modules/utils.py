"""What PyTorch's torch/nn/modules/utils.py holds for the layers: one size setting as a
tuple of one value per dim (its _single, _pair, _triple, _quadruple)."""

from __future__ import annotations


def ntuple(n: int, value) -> tuple:
    """A sequence as a tuple; one value repeated n times."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n
