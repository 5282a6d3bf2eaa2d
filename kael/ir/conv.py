"""The description of a convolution the implicit-GEMM kernels run: the shapes of input,
weight and output, and the window arithmetic between them.

A convolution with groups G is, per group, the product W[og, K] @ B[K, P]: K = cg * taps
rows (input channel and kernel offset), P output positions. B is never stored: its
element (k, j) is the input at channel c, position j * stride + tap * dilation - padding,
or zero outside the input. Every size is kept as three spatial dims (a 1-d or 2-d
convolution has leading dims of size 1), so one kernel serves conv1d, conv2d and conv3d.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class ConvGeometry:
    """One convolution's shapes: input [N, G * cg, *size], weight [G * og, cg, *kernel],
    output [N, G * og, *out]; stride, dilation and padding (before) per spatial dim."""

    batch: int
    groups: int
    cg: int  # input channels per group
    og: int  # output channels per group
    size: tuple[int, int, int]
    kernel: tuple[int, int, int]
    stride: tuple[int, int, int]
    dilation: tuple[int, int, int]
    padding: tuple[int, int, int]
    out: tuple[int, int, int]

    @staticmethod
    def of(batch, groups, cg, og, size, kernel, stride, dilation, padding, out) -> ConvGeometry:
        """The geometry of 1 to 3 spatial dims, padded to three at the front."""
        lead = 3 - len(size)
        return ConvGeometry(
            batch, groups, cg, og,
            *((1,) * lead + tuple(v) for v in (size, kernel, stride, dilation)),
            (0,) * lead + tuple(padding), (1,) * lead + tuple(out),
        )  # fmt: skip

    @property
    def taps(self) -> int:
        return math.prod(self.kernel)

    @property
    def depth(self) -> int:
        """K: the product's inner size per group."""
        return self.cg * self.taps

    @property
    def positions(self) -> int:
        """P: output positions per image."""
        return math.prod(self.out)

    @property
    def plane(self) -> int:
        """Input elements per channel."""
        return math.prod(self.size)

    @property
    def unit_walk(self) -> bool:
        """Whether output position j reads input j + (a constant per tap): unit strides and
        output rows (and planes, in 3-d) as wide as the input's, so a window row is one
        run of memory and the kernel loads it as a vector, not a gather."""
        _, h, w = self.size
        od, oh, ow = self.out
        return all(s == 1 for s in self.stride) and ow == w and (od == 1 or oh == h)

    @property
    def flops(self) -> int:
        return 2 * self.batch * self.groups * self.og * self.depth * self.positions
