"""Convolution modules, 1-3 spatial dims, plain and transposed, with PyTorch's settings,
checks, padding modes and output_size for the transposed forms."""

from __future__ import annotations

import math

from kael.frontend.factories import empty
from kael.nn import functional as F
from kael.nn.modules.linear import reset_affine
from kael.nn.modules.module import Module
from kael.nn.modules.utils import ntuple
from kael.nn.parameter import Parameter
from kael.runtime.errors import ValueError

PADDING_MODES = ("zeros", "reflect", "replicate", "circular")
_FUNCTIONS = {
    (1, False): F.conv1d, (2, False): F.conv2d, (3, False): F.conv3d,
    (1, True): F.conv_transpose1d, (2, True): F.conv_transpose2d, (3, True): F.conv_transpose3d,
}  # fmt: skip


class _ConvNd(Module):
    dims: int
    transposed: bool

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
        output_padding=0,
    ) -> None:
        super().__init__()
        n = self.dims
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(
                    f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}"
                )
            if padding == "same" and any(s != 1 for s in ntuple(n, stride)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in PADDING_MODES:
            raise ValueError(
                f"padding_mode must be one of {list(PADDING_MODES)}, but got "
                f"padding_mode='{padding_mode}'"
            )
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = ntuple(n, kernel_size)
        self.stride, self.dilation = ntuple(n, stride), ntuple(n, dilation)
        self.padding = padding if isinstance(padding, str) else ntuple(n, padding)
        self.output_padding = ntuple(n, output_padding)
        self.padding_mode = padding_mode
        self._reversed_padding_repeated_twice = self._edge_padding()
        made = {"device": device, "dtype": dtype}
        channels = (
            (in_channels, out_channels // groups)
            if self.transposed
            else (out_channels, in_channels // groups)
        )
        self.weight = Parameter(empty((*channels, *self.kernel_size), **made))
        self.register_parameter("bias", Parameter(empty(out_channels, **made)) if bias else None)
        self.reset_parameters()

    def _edge_padding(self) -> list[int]:
        """F.pad's argument for a non-zero padding mode: last dim first, both sides."""
        if self.padding == "valid":
            return [0, 0] * self.dims
        if self.padding == "same":
            pads = []
            for d, k in zip(reversed(self.dilation), reversed(self.kernel_size), strict=True):
                total = d * (k - 1)
                pads += [total // 2, total - total // 2]
            return pads
        return [p for p in reversed(self.padding) for _ in range(2)]

    def reset_parameters(self) -> None:
        fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
        reset_affine(self.weight, self.bias, fan_in)

    def extra_repr(self) -> str:
        n = self.dims
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    transposed = False

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
            padding_mode, device, dtype,
        )  # fmt: skip

    def forward(self, input):
        conv = _FUNCTIONS[self.dims, False]
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return conv(
            input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )


class _ConvTranspose(_ConvNd):
    transposed = True

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        bias: bool = True,
        dilation=1,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
            padding_mode, device, dtype, output_padding,
        )  # fmt: skip

    def _output_padding(self, input, output_size) -> tuple[int, ...]:
        """output_padding, or what makes the output `output_size` (PyTorch's rule: each size
        between the smallest output and that plus stride - 1)."""
        if output_size is None:
            return self.output_padding
        n = self.dims
        leading = 2 if input.dim() == n + 2 else 1
        output_size = list(output_size)
        if len(output_size) == leading + n:
            output_size = output_size[leading:]
        if len(output_size) != n:
            raise ValueError(
                f"ConvTranspose{n}D: for {input.dim()}D input, output_size must have {n} or "
                f"{leading + n} elements (got {len(output_size)})"
            )
        smallest = [
            (input.shape[leading + d] - 1) * self.stride[d]
            - 2 * self.padding[d]
            + self.dilation[d] * (self.kernel_size[d] - 1)
            + 1
            for d in range(n)
        ]
        largest = [low + s - 1 for low, s in zip(smallest, self.stride, strict=True)]
        for size, low, high in zip(output_size, smallest, largest, strict=True):
            if not low <= size <= high:
                raise ValueError(
                    f"requested an output size of {output_size}, but valid sizes range from "
                    f"{smallest} to {largest} (for an input of {list(input.shape[leading:])})"
                )
        return tuple(size - low for size, low in zip(output_size, smallest, strict=True))

    def forward(self, input, output_size=None):
        extra = self._output_padding(input, output_size)
        return _FUNCTIONS[self.dims, True](
            input, self.weight, self.bias, self.stride, self.padding, extra, self.groups,
            self.dilation,
        )  # fmt: skip


class Conv1d(_Conv):
    dims = 1


class Conv2d(_Conv):
    dims = 2


class Conv3d(_Conv):
    dims = 3


class ConvTranspose1d(_ConvTranspose):
    dims = 1


class ConvTranspose2d(_ConvTranspose):
    dims = 2


class ConvTranspose3d(_ConvTranspose):
    dims = 3
