"""Devices: the host ("cpu") and one CUDA GPU ("cuda", "cuda:0")."""

from __future__ import annotations

from kael.runtime import cuda_driver
from kael.runtime.errors import TypeError, ValueError


class Device:
    """Where a storage's bytes live; interned, so `is` and `==` agree and hashing is cheap."""

    __slots__ = ("type", "index")
    _interned: dict[str, Device] = {}

    def __new__(cls, type: str, index: int = 0) -> Device:
        if isinstance(type, str) and ":" in type and index == 0:
            return parse_device(type)  # kael.device("cuda:0"), as torch.device accepts
        if type not in ("cpu", "cuda") or index != 0:
            _reject(type if index == 0 else f"{type}:{index}")
        device = cls._interned.get(type)
        if device is None:
            device = object.__new__(cls)
            object.__setattr__(device, "type", type)
            object.__setattr__(device, "index", 0)
            cls._interned[type] = device
        return device

    def __setattr__(self, name, value):
        raise AttributeError("kael devices are immutable")

    def __str__(self) -> str:
        return "cpu" if self.type == "cpu" else f"cuda:{self.index}"

    def __repr__(self) -> str:
        return f"device(type='{self.type}', index={self.index})"

    def __reduce__(self):
        return (Device, (self.type, self.index))


CPU = Device("cpu")
CUDA = Device("cuda")

_BY_NAME = {"cpu": CPU, "cuda": CUDA, "cuda:0": CUDA}


def parse_device(device: str | Device) -> Device:
    """Accept "cpu", "cuda", "cuda:0" or a Device; ValueError for any other name."""
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
