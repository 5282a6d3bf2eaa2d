"""kael.utils.dlpack: torch.utils.dlpack's exchange, both ways, sharing memory."""

import numpy as np
import pytest
import torch

import kael
from kael.utils.dlpack import from_dlpack, to_dlpack


def test_to_dlpack_shares_memory_with_torch():
    x = kael.arange(6, dtype=kael.float32).reshape(2, 3)
    t = torch.utils.dlpack.from_dlpack(to_dlpack(x))
    assert t.shape == (2, 3) and t.dtype == torch.float32
    x.add_(1)
    np.testing.assert_array_equal(t.numpy(), x.numpy())


def test_from_dlpack_reads_torchs_capsule():
    t = torch.arange(4, dtype=torch.int32)
    x = from_dlpack(torch.utils.dlpack.to_dlpack(t))
    assert x.dtype is kael.int32 and x.tolist() == [0, 1, 2, 3]


def test_to_dlpack_refuses_a_non_tensor():
    with pytest.raises(kael.TypeError, match="to_dlpack"):
        to_dlpack([1, 2])


def test_a_capsule_is_read_once():
    capsule = torch.utils.dlpack.to_dlpack(torch.ones(2))
    assert from_dlpack(capsule).tolist() == [1.0, 1.0]
    with pytest.raises(kael.ValueError, match="unconsumed 'dltensor' capsule"):
        from_dlpack(capsule)
