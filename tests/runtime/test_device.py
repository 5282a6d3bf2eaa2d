"""Devices: parsing, identity, printing, and the CUDA queries without a GPU."""

import builtins
import copy
import pickle
import re

import numpy as np
import pytest
import torch

import kael
from kael.runtime import cuda_driver
from kael.runtime.device import (
    CPU,
    CUDA,
    Device,
    cuda_is_available,
    cuda_synchronize,
    parse_device,
)
from kael.runtime.errors import Error, TypeError, ValueError


@pytest.mark.parametrize(
    ("name", "expected"), [("cpu", CPU), ("cpu:0", CPU), ("cuda", CUDA), ("cuda:0", CUDA)]
)
def test_parse_device_accepts_the_four_names(name, expected):
    assert parse_device(name) is expected


@pytest.mark.parametrize("device", [CPU, CUDA])
def test_parse_device_passes_devices_through(device):
    assert parse_device(device) is device


@pytest.mark.parametrize("name", ["cpu", "cuda:0"])
def test_str_repr_and_fields_match_torch(name):
    """The CPU's index is None, as torch's (it was 0 and printed `index=0`)."""
    device, reference = parse_device(name), torch.device(name)
    assert str(device) == str(reference) and repr(device) == repr(reference)
    assert device.type == reference.type and device.index == reference.index


def test_cuda_prints_with_its_index():
    assert str(parse_device("cuda")) == str(torch.device("cuda", 0))


def test_equality_and_hash():
    assert parse_device("cuda") == parse_device("cuda:0") == CUDA
    assert hash(parse_device("cuda")) == hash(CUDA)
    assert CPU != CUDA
    assert {CPU: "host", CUDA: "gpu"}[parse_device("cuda:0")] == "gpu"


@pytest.mark.parametrize(
    "duplicate", [copy.copy, copy.deepcopy, lambda d: pickle.loads(pickle.dumps(d))]
)
def test_copies_are_the_same_device(duplicate):
    assert duplicate(CUDA) is CUDA
    assert duplicate(CPU) is CPU


def test_devices_are_immutable():
    with pytest.raises(AttributeError):
        CPU.type = "cuda"


def test_unknown_device_raises_value_error():
    with pytest.raises(ValueError, match=r"^unknown device 'gpu', expected 'cpu' or 'cuda'$"):
        parse_device("gpu")


@pytest.mark.parametrize("name", ["", "CPU", "Cuda", "cuda:", "cuda:x", "cuda:-1", "tpu:0"])
def test_other_names_raise_value_error(name):
    with pytest.raises(ValueError, match=f"unknown device '{name}'"):
        parse_device(name)


@pytest.mark.parametrize("name", ["cuda:1", "cuda:7"])
def test_second_cuda_device_is_rejected(name):
    with pytest.raises(
        ValueError, match=f"device '{name}' is not available: kael has one CUDA device"
    ):
        parse_device(name)


@pytest.mark.parametrize("value", [0, None, 1.5, torch.device("cpu")], ids=repr)
def test_non_names_raise_type_error(value):
    with pytest.raises(TypeError, match="expected a device name"):
        parse_device(value)


def test_device_constructor_validates():
    assert Device("cuda") is CUDA
    with pytest.raises(ValueError):
        Device("gpu")
    with pytest.raises(ValueError, match="one CUDA device"):
        Device("cuda", 1)


def test_cuda_is_available_is_a_cached_bool():
    first = cuda_is_available()
    assert isinstance(first, bool)
    assert cuda_is_available() is first
    assert cuda_driver._probed


@pytest.mark.skipif(cuda_is_available(), reason="checks the error without a GPU")
def test_cuda_synchronize_without_gpu_raises():
    with pytest.raises(Error, match="CUDA is not available: no NVIDIA driver or GPU was found"):
        cuda_synchronize()


def test_device_constructor_accepts_a_full_name_like_torch_device():
    from kael.runtime.device import CUDA, Device

    assert Device("cuda:0") is CUDA
    with pytest.raises(ValueError, match="one CUDA device"):
        Device("cuda:1")


@pytest.mark.parametrize("index", [0, np.int64(0)], ids=repr)
def test_device_of_an_int_is_a_cuda_index_like_torch(index):
    # torch.device(1) is device(type='cuda', index=1); kael has cuda:0 only.
    assert Device(index) is CUDA
    assert Device("cuda", index) is CUDA
    assert Device("cpu", index) is CPU
    assert Device("cuda", None) is CUDA and Device(CPU) is CPU


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((5,), "device 'cuda:5' is not available: kael has one CUDA device"),
        ((-1,), "device index must not be negative, got -1"),
        (("cuda", -2), "device index must not be negative, got -2"),
        (("cuda:0", 0), "device type 'cuda:0' must not include an index because index 0 was"),
        (("cpu", 1), "unknown device 'cpu:1'"),
    ],
    ids=repr,
)
def test_device_bad_indices_are_value_errors_naming_them(args, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Device(*args)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((None,), "device() expects a device name, a kael.device or a CUDA index, got NoneType"),
        ((1.5,), "device() expects a device name, a kael.device or a CUDA index, got float"),
        ((True,), "device() expects a device name, a kael.device or a CUDA index, got bool"),
        (("cuda", "a"), "device index must be an int, got str"),
        (("cuda", True), "device index must be an int, got bool"),
        ((5, 0), "device() expects a device type string, got int"),
    ],
    ids=repr,
)
def test_device_bad_argument_types_are_type_errors_naming_them(args, message):
    if not isinstance(args[0], int | float):  # torch 2.13 without a GPU refuses any int index
        with pytest.raises(builtins.TypeError):
            torch.device(*args)
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        Device(*args)


def test_a_tensor_is_no_device_index():
    """Tensors have __index__ now; kael.device(tensor) became cuda:0 (torch refuses it)."""
    with pytest.raises(kael.TypeError, match="got Tensor"):
        kael.device(kael.tensor(0))
