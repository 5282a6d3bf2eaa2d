"""Shared checks for the frontend tests: a kael tensor against the PyTorch tensor it mirrors."""

import numpy as np
import pytest
import torch
from kernel_helpers import TORCH_DTYPES

import kael

KAEL_TO_TORCH = TORCH_DTYPES


def assert_like_torch(k: kael.Tensor, t: torch.Tensor) -> None:
    """Same shape, dtype, strides, storage offset, contiguity and values (NaN equals NaN)."""
    assert k.shape == tuple(t.shape)
    assert KAEL_TO_TORCH[k.dtype] == t.dtype
    assert k.strides() == t.stride()
    assert k.storage_offset() == t.storage_offset()
    assert k.is_contiguous() == t.is_contiguous()
    np.testing.assert_array_equal(k.numpy(), t.numpy())


def pair(*shape, dtype=kael.int64):
    """arange(numel) in `shape` as a kael tensor and the equal torch tensor."""
    n = int(np.prod(shape))
    return (
        kael.arange(n, dtype=dtype).view(shape),
        torch.arange(n, dtype=KAEL_TO_TORCH[dtype]).view(shape),
    )


@pytest.fixture
def like_torch():
    return assert_like_torch


@pytest.fixture
def arange_pair():
    return pair


@pytest.fixture
def torch_dtype():
    return KAEL_TO_TORCH.__getitem__
