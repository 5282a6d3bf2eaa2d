"""Devices: the host ("cpu") and one CUDA GPU ("cuda", "cuda:0")."""

from __future__ import annotations

import numbers

from kael.runtime import cuda_driver
from kael.runtime.errors import TypeError, ValueError


class Device:
    """Where a storage's bytes live; interned, so `is` and `==` agree and hashing is cheap."""

    __slots__ = ("type", "index")

    def __new__(cls, type, index=None) -> Device:
        """kael.device("cuda:0"), ("cuda", 0), a Device, or a bare int as a CUDA index
        (kael.device(0)), as torch.device takes them; typed errors for anything else."""
        if index is None:
            if isinstance(type, (str, Device)):
                return parse_device(type)
            if isinstance(type, bool) or not isinstance(type, numbers.Integral):
                raise TypeError(
                    "device() expects a device name, a kael.device or a CUDA index, got"
                    f" {_type_name(type)}"
                )
            return parse_device(f"cuda:{_device_index(type)}")
        if not isinstance(type, str):
            raise TypeError(f"device() expects a device type string, got {_type_name(type)}")
        index = _device_index(index)
        if ":" in type:
            raise ValueError(
                f"device type '{type}' must not include an index because index {index} was"
                " passed explicitly"
            )
        return CPU if (type, index) == ("cpu", 0) else parse_device(f"{type}:{index}")

    def __setattr__(self, name, value):
        raise AttributeError("kael devices are immutable")

    def __str__(self) -> str:
        return "cpu" if self.type == "cpu" else f"cuda:{self.index}"

    def __repr__(self) -> str:
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{index})"

    def __reduce__(self):
        return (Device, (self.type, self.index))


def _interned(type: str, index: int | None) -> Device:
    """The one Device of a type, made once (Device() itself parses and looks these up); the
    CPU's index is None, as torch's."""
    device = object.__new__(Device)
    object.__setattr__(device, "type", type)
    object.__setattr__(device, "index", index)
    return device


def _type_name(value) -> str:
    return type(value).__name__


def _device_index(index) -> int:
    """A device index: a non-negative int (NumPy ints too, never a bool)."""
    if isinstance(index, bool) or not isinstance(index, numbers.Integral):
        raise TypeError(f"device index must be an int, got {_type_name(index)}")
    index = index.__index__()
    if index < 0:
        raise ValueError(f"device index must not be negative, got {index}")
    return index


CPU = _interned("cpu", None)
CUDA = _interned("cuda", 0)

_BY_NAME = {"cpu": CPU, "cpu:0": CPU, "cuda": CUDA, "cuda:0": CUDA}


def parse_device(device: str | Device) -> Device:
    """Accept "cpu" ("cpu:0"), "cuda", "cuda:0" or a Device; ValueError for any other name."""
    if isinstance(device, Device):
        return device
    if not isinstance(device, str):
        raise TypeError(f"expected a device name or kael.device, got {type(device).__name__}")
    found = _BY_NAME.get(device)
    if found is not None:
        return found
    _reject(device)


def _reject(name: str):
    """Raise the ValueError for a device name kael does not have."""
    kind, sep, index = name.partition(":")
    if sep and kind == "cuda" and index.isdigit():
        raise ValueError(f"device '{name}' is not available: kael has one CUDA device, 'cuda:0'")
    raise ValueError(f"unknown device '{name}', expected 'cpu' or 'cuda'")


def cuda_is_available() -> bool:
    """Whether a CUDA driver and GPU were found; probed once per process."""
    return cuda_driver.is_available()


def cuda_synchronize() -> None:
    """Wait for all queued GPU work; kael.Error when there is no GPU."""
    cuda_driver.synchronize()
