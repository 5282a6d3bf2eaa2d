"""Linear and Bilinear: affine maps with PyTorch's default initialisation (uniform within
1/sqrt(fan_in), Kaiming's with a = sqrt(5))."""

from __future__ import annotations

import math

from kael.frontend.factories import empty
from kael.nn import functional as F
from kael.nn import init
from kael.nn.modules.module import Module
from kael.nn.parameter import Parameter


def reset_affine(weight, bias, fan_in: int) -> None:
    """PyTorch's default initialisation of a linear or convolution layer."""
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(bias, -bound, bound)


class Linear(Module):
    """y = x W^T + b, W of shape (out_features, in_features)."""

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None
    ) -> None:
        super().__init__()
        made = {"device": device, "dtype": dtype}
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(empty((out_features, in_features), **made))
        self.register_parameter("bias", Parameter(empty(out_features, **made)) if bias else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        reset_affine(self.weight, self.bias, self.in_features)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class Bilinear(Module):
    """y_k = x1^T A_k x2 + b_k, A of shape (out_features, in1_features, in2_features)."""

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        made = {"device": device, "dtype": dtype}
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in1_features, in2_features), **made))
        self.register_parameter("bias", Parameter(empty(out_features, **made)) if bias else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1]) if self.weight.shape[1] else 0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )
