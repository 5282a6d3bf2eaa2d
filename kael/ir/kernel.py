"""A Kernel: a loop nest over an output index space and the expression of each output element.

Sizes and strides are run-time arguments; what is fixed at compile time is the rank,
each buffer's dtype and innermost layout, and the schedule (tiling, streaming stores).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kael.ir.expr import Expr, any_faults, uses_index
from kael.runtime.dtypes import DType, int64

# Innermost-dimension layout of a buffer: unit stride, stride 0 (broadcast), stride 2 (a
# pool's or a strided slice's every other element: on the CPU an input read as two vectors
# and its even lanes), any stride, or (tiled kernels only) any stride along the last
# dimension but unit along the one before.
CONTIG, BCAST, PAIRS, STRIDED, TRANSPOSED = "contig", "bcast", "pairs", "strided", "transposed"
NO_PREFETCH = -1


@dataclass(frozen=True, slots=True)
class Buffer:
    """A strided buffer the kernel reads or writes."""

    dtype: DType
    inner: str = STRIDED


@dataclass(frozen=True, slots=True)
class Kernel:
    """One compiled unit: outputs[i] = exprs[i] at every point of a rank-`rank` index space.

    `tiled` walks the last two dimensions in square tiles (a transposing copy);
    `nontemporal` streams the output past the caches (large outputs only) and, unless
    `fenced` is False, ends with a fence that publishes those weakly ordered stores to other
    threads (False where the caller fences once after many calls: the row driver); `prefetch`
    names a unit-stride input whose lines are fetched ahead (see `prefetching`), by
    `fetch_ahead` elements fixed in the code, or (0) by the last run-time parameter.
    """

    name: str
    rank: int
    inputs: tuple[Buffer, ...]
    outputs: tuple[Buffer, ...]
    exprs: tuple[Expr, ...]
    params: tuple[DType, ...] = ()
    tiled: bool = False
    nontemporal: bool = False
    fenced: bool = True
    prefetch: int = NO_PREFETCH
    fetch_ahead: int = 0

    @property
    def buffers(self) -> tuple[Buffer, ...]:
        """Outputs then inputs: the order of pointers and strides in the argument block."""
        return self.outputs + self.inputs

    @property
    def may_fault(self) -> bool:
        """Whether the argument block ends with the address of an error word."""
        return any_faults(self.exprs)

    @property
    def uses_index(self) -> bool:
        """Whether an expression reads its position, which pins the dimension order."""
        return any(uses_index(e) for e in self.exprs)

    def specialize(
        self, rank: int, inners: tuple[str, ...], tiled: bool, nontemporal: bool
    ) -> Kernel:
        """This kernel for one rank and layout class; `inners` lists outputs then inputs."""
        n_out = len(self.outputs)
        outs = tuple(dataclasses.replace(b, inner=i) for b, i in zip(self.outputs, inners[:n_out]))
        ins = tuple(dataclasses.replace(b, inner=i) for b, i in zip(self.inputs, inners[n_out:]))
        return dataclasses.replace(
            self, rank=rank, inputs=ins, outputs=outs, tiled=tiled, nontemporal=nontemporal
        )


def prefetching(kernel, input_index: int):
    """`kernel` (a Kernel or a Reduction) fetching input `input_index` ahead of its reads:
    the distance in elements is one more int64 run-time parameter, the last. A row group
    gives it to a later kernel reading the rows its first kernel reads from memory next,
    so the memory reads of one chunk of rows overlap the arithmetic on the one before."""
    return dataclasses.replace(kernel, prefetch=input_index, params=kernel.params + (int64,))
