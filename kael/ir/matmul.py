"""The description of a matrix-product kernel: element type, micro-tile and cache blocking.

A GemmSpec is everything the code generator and the driver need to know about one
matrix-product kernel family; its printed text names the compiled module and so keys
the caches (a new tile shape or blocking is a new kernel, never a stale one).
`batch_dims` is the batch layout both backends launch over.
"""

from __future__ import annotations

from dataclasses import dataclass

from kael.ir.kernel import Kernel
from kael.runtime.dtypes import DType, float32, float64, int64


@dataclass(frozen=True)
class GemmSpec:
    """C[mr x nr] += A[mr x kc] B[kc x nr] micro-tiles inside MC x KC x NC cache blocks,
    for vector registers of `vector_bytes`.

    `nr` is a multiple of the vector width `lanes`; mr * nr / lanes accumulators plus
    nr / lanes B vectors and an A broadcast must fit the vector registers (32 of 64 bytes
    with AVX-512, 16 of 32 bytes with AVX2).
    """

    dtype: DType
    mr: int
    nr: int
    mc: int
    kc: int
    nc: int
    vector_bytes: int = 64

    @property
    def lanes(self) -> int:
        return self.vector_bytes // self.dtype.itemsize

    @property
    def vectors(self) -> int:
        """Vectors per micro-tile row."""
        return self.nr // self.lanes

    def text(self) -> str:
        """The stable printed form: the kernel's name and cache key."""
        blocks = f"{self.mr}x{self.nr}_mc{self.mc}_kc{self.kc}_nc{self.nc}"
        return f"kael_gemm_{self.dtype.name}_{blocks}_v{self.vector_bytes}"

    def __str__(self) -> str:
        return self.text()


@dataclass(frozen=True)
class Product:
    """A compiled plan's matrix product (or convolution, `op` conv) as inspection lists
    it: the hand-written kernels of `dtype`, and the elementwise kernel its blocks run as
    they complete, if any."""

    dtype: DType
    epilogue: Kernel | None = None
    op: str = "matmul"

    @property
    def name(self) -> str:
        gemm = f"{self.op}_{self.dtype.name}"
        return gemm if self.epilogue is None else f"{gemm}+{self.epilogue.name}"


def batch_dims(
    shape: tuple[int, ...], *strides: tuple[int, ...]
) -> list[tuple[int, tuple[int, ...]]]:
    """Batch dims as (size, (stride of each operand)), size-1 dims dropped, mergeable dims merged."""
    dims: list[tuple[int, tuple[int, ...]]] = []
    for d, size in enumerate(shape):
        if size == 1:
            continue
        st = tuple(s[d] for s in strides)
        if dims:
            psize, pst = dims[-1]
            if all(p == x * size for p, x in zip(pst, st, strict=True)):
                dims[-1] = (psize * size, st)
                continue
        dims.append((size, st))
    return dims


# The float kernels by the host's vector register bytes (codegen/cpu/gemm.host_spec picks).
# AVX-512: 24 accumulators + 4 B vectors; on a Zen 5 host (one thread, 1024^3) MC 120-480,
# KC 128-384 and NC 1024-2048 were within 3% of each other: ~240 GFLOP/s float32, ~105
# float64. On an Intel host with AVX-512 (2 threads, n^3 float32, best of 5) MC 192 KC 320
# held ~320 GFLOP/s from n = 512 to 3000 where MC 240 KC 256 fell from ~320 to ~260 past
# n = 1536 and MC 120 KC 512 ran ~270 below 2048 (torch ~355); float64 showed no better
# blocking than MC 120 KC 256 (130-160 GFLOP/s by size, torch ~175).
# AVX2: 12 accumulators + 2 B vectors + the A broadcast in 16 registers; on a Zen 3 host (2
# threads, 2048^3 float32) 6x16 ran 110-140 GFLOP/s against 4x24's 116 and 3x32's 62 (it
# spills), MC 144 against 72 and 288 within noise.
SPECS: dict[int, dict[DType, GemmSpec]] = {
    64: {
        float32: GemmSpec(float32, mr=6, nr=64, mc=192, kc=320, nc=1024),
        float64: GemmSpec(float64, mr=6, nr=32, mc=120, kc=256, nc=512),
    },
    32: {
        float32: GemmSpec(float32, mr=6, nr=16, mc=144, kc=256, nc=1024, vector_bytes=32),
        float64: GemmSpec(float64, mr=6, nr=8, mc=72, kc=256, nc=512, vector_bytes=32),
    },
}
# int64 runs an exact wrapping row kernel: no tiles, but one name for its module.
INT64_TEXT = f"kael_gemm_{int64.name}_rows"
