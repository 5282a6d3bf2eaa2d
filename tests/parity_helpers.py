"""The comparison the parity and differential tests share: a kael result against torch's."""

import numpy as np
import torch
from kernel_helpers import KAEL_DTYPES

import kael


def same(k, t) -> None:
    """kael's result against torch's: tensors by shape, dtype and values; tuples item by item."""
    if isinstance(t, torch.Tensor):
        assert isinstance(k, kael.Tensor), type(k)
        assert k.shape == tuple(t.shape)
        assert k.dtype is KAEL_DTYPES[t.dtype]
        if t.dtype.is_floating_point:
            tol = 1e-5 if t.dtype is torch.float32 else 1e-12
            np.testing.assert_allclose(k.numpy(), t.numpy(), rtol=tol, atol=tol, equal_nan=True)
        else:
            np.testing.assert_array_equal(k.numpy(), t.numpy())
        return
    assert isinstance(k, tuple | list) and len(k) == len(t), (type(k), type(t))
    for a, b in zip(k, t):
        same(a, b)
