"""kael.set_default_device / get_default_device against torch's: factories called without
device= create on the default (checked on kael's emulated CUDA device, in a subprocess),
*_like factories follow their input, and the default is per thread."""

import threading

import pytest
import torch
from kernel_helpers import run_python

import kael


@pytest.fixture(autouse=True)
def _reset_default():
    yield
    kael.set_default_device(None)
    torch.set_default_device(None)


def test_default_device_is_the_cpu_until_set():
    assert str(kael.get_default_device()) == str(torch.get_default_device()) == "cpu"


def test_set_default_device_none_restores_the_cpu():
    kael.set_default_device("cpu")
    kael.set_default_device(None)
    assert str(kael.get_default_device()) == "cpu"
    assert kael.zeros(2).device.type == "cpu"


def test_default_device_is_per_thread_as_torchs():
    kael.set_default_device("cuda")  # a device name is enough: nothing is created
    torch.set_default_device("meta")
    seen = []
    worker = threading.Thread(
        target=lambda: seen.append(
            (str(kael.get_default_device()), str(torch.get_default_device()))
        )
    )
    worker.start()
    worker.join()
    assert seen == [("cpu", "cpu")]


def test_bad_default_device_is_a_kael_error():
    with pytest.raises(kael.Error, match="bogus"):
        kael.set_default_device("bogus")
    with pytest.raises(RuntimeError, match="bogus"):
        torch.set_default_device("bogus")


FACTORIES_ON_DEFAULT = """
import kael
kael.set_default_device("cuda")
assert str(kael.get_default_device()) == "cuda:0", kael.get_default_device()
made = {
    "empty": kael.empty(2, 3), "zeros": kael.zeros(2), "ones": kael.ones((2, 2)),
    "full": kael.full((2,), 1.5), "arange": kael.arange(4), "linspace": kael.linspace(0, 1, 5),
    "eye": kael.eye(3), "tensor": kael.tensor([1.0, 2.0]), "as_tensor": kael.as_tensor([1, 2]),
    "scalar_tensor": kael.scalar_tensor(3.0), "rand": kael.rand(3), "randn": kael.randn(2, 2),
    "randint": kael.randint(0, 5, (4,)), "randperm": kael.randperm(4),
    "empty_strided": kael.empty_strided((2, 2), (1, 2)), "tril_indices": kael.tril_indices(3, 3),
    "range": kael.range(0, 3),
}
for name, t in made.items():
    assert t.device.type == "cuda", (name, t.device)
assert kael.zeros(2).cpu().tolist() == [0.0, 0.0]
assert kael.arange(4).cpu().tolist() == [0, 1, 2, 3]
assert kael.tensor([1.0, 2.0]).cpu().tolist() == [1.0, 2.0]
# explicit devices and *_like factories are not defaulted
assert kael.zeros(2, device="cpu").device.type == "cpu"
host = kael.ones(2, device="cpu")
assert kael.zeros_like(host).device.type == "cpu"
assert kael.tensor(host).device.type == "cuda"  # as torch's device context moves it
# ops on host tensors keep their working tensors on the host (kael's own factory calls are
# not defaulted): factorizations, counts, the generator's state
a = kael.tensor([[4.0, 1.0], [2.0, 3.0]], device="cpu")
assert kael.linalg.lu_factor(a)[0].device.type == "cpu"
q, r = kael.linalg.qr(a)
assert (q @ r - a).abs().max().item() < 1e-5 and q.device.type == "cpu"
assert kael.linalg.inv(a).device.type == "cpu" and kael.linalg.svd(a)[1].device.type == "cpu"
assert kael.bincount(kael.tensor([0, 2, 2], device="cpu")).tolist() == [1, 0, 2]
assert kael.linalg.vander(kael.tensor([1.0, 2.0], device="cpu")).tolist() == [[1, 1], [1, 2]]
assert kael.get_rng_state().device.type == "cpu"
kael.set_default_device(None)
assert kael.zeros(2).device.type == "cpu" and kael.rand(2).device.type == "cpu"
print("ok")
"""


def test_factories_without_device_create_on_the_default_device():
    assert "ok" in run_python(FACTORIES_ON_DEFAULT, KAEL_EMULATE_CUDA="1").stdout


def test_torchs_factories_follow_its_default_device_the_same_way():
    torch.set_default_device("meta")
    host = torch.ones(2, device="cpu")
    assert torch.zeros(2).device.type == "meta" and torch.arange(3).device.type == "meta"
    assert torch.zeros_like(host).device.type == "cpu"
    assert torch.zeros(2, device="cpu").device.type == "cpu"
