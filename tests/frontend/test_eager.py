import numpy as np
import pytest
from kernel_helpers import impl_of

import kael
from kael.frontend import eager
from kael.runtime.device import CUDA
from kael.runtime.storage import Storage
from kael.runtime.tensor_impl import TensorImpl


def test_operands_on_two_devices_are_refused_before_any_launch():
    host = np.zeros(4, np.float32)
    fake_gpu = TensorImpl(
        Storage.external(host.ctypes.data, 16, host, CUDA), (4,), (1,), 0, kael.float32, CUDA
    )
    with pytest.raises(kael.Error, match="one device, but found cpu and cuda:0"):
        eager.copy_into(impl_of(np.empty(4, np.float32)), fake_gpu)


def test_one_template_serves_every_fill_value():
    a, b = np.empty(3, np.float64), np.empty(3, np.float64)
    eager.fill(impl_of(a), 1.25)
    before = len(eager._specialized)
    eager.fill(impl_of(b), -7.5)
    assert len(eager._specialized) == before
    assert a.tolist() == [1.25] * 3 and b.tolist() == [-7.5] * 3
