"""The record of kernel launches: what KAEL_DEBUG=1 prints and kael.explain collects.

runtime/launcher.py reports every CPU launch here, IR kernels and hand-written ones alike;
cuda_driver.launch_kernel every GPU launch and every copy between the host and the GPU (so
an op that runs on the host shows its copies there and back).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kael.runtime import debug


@dataclass(frozen=True)
class Launch:
    """One kernel launch: its symbol, shape or work items, bytes moved and time."""

    symbol: str
    shape: tuple[int, ...] | None  # what the launch covers, where the caller says
    items: int  # work items the launcher split over threads
    bytes_moved: int
    seconds: float
    flops: int = 0  # 0 where unknown
    # the kael IR (Kernel or Reduction, a tuple of them for a row group's driver); None for
    # hand-written kernels
    kernel: object = field(default=None, repr=False)
    library: object = field(default=None, repr=False)  # a hand-written kernel's module
    device: str = "cpu"  # where it ran: an op that runs on the host shows its cpu kernels
    kind: str = "kernel"  # or "copy": between the host and the GPU (memcpy_htod, ...)

    @property
    def llvm(self) -> str | None:
        """A hand-written kernel's LLVM module text (None for IR kernels)."""
        return self.library.text if self.library is not None else None

    @property
    def gbps(self) -> float:
        return self.bytes_moved / max(self.seconds, 1e-9) / 1e9

    @property
    def gflops(self) -> float:
        return self.flops / max(self.seconds, 1e-9) / 1e9

    def __str__(self) -> str:
        rate = f"{self.gflops:.2f} GFLOP/s" if self.flops else f"{self.gbps:.2f} GB/s"
        extent = f"items={self.items}" if self.shape is None else f"shape={list(self.shape)}"
        return (
            f"{self.symbol} on {self.device} {extent} {self.seconds * 1e6:.1f} us"
            f" {self.bytes_moved} bytes {rate}"
        )


# When a list, every launch is appended to it (kael.explain sets it for one call).
recorder: list[Launch] | None = None


def watched() -> bool:
    """Whether launches must be timed: something records them or KAEL_DEBUG prints them."""
    return recorder is not None or debug.level >= 1


def report(launch: Launch) -> None:
    """Hand one finished launch to the recorder and to KAEL_DEBUG level 1."""
    if recorder is not None:
        recorder.append(launch)
    if debug.level >= 1:
        debug.emit(f"[kael] launch {launch}")
