"""The tensor-core product of float16 and bfloat16 (codegen/ptx/mma.py): shaped as designed
(ptxas and the entry's words: test_gemm_ptx.py), and on a device, or the emulated one, the
host's values for edges, batches, strides and vectors."""

import re

import numpy as np
import pytest
import torch

import kael
from kael.codegen.ptx import gemm, mma
from kael.runtime.dtypes import bfloat16, float16

DTYPES = [float16, bfloat16]
TORCH = {float16: torch.float16, bfloat16: torch.bfloat16}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_each_warp_runs_one_mma_per_subtile_and_step(dtype):
    kind = "f16" if dtype is float16 else "bf16"
    mmas = re.findall(
        rf"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.{kind}\.{kind}\.f32", gemm.ptx(dtype)
    )
    assert len(mmas) == mma.SUBTILES


def test_warps_cover_the_cta_tile():
    assert mma.THREADS == 32 * mma.WARPS and mma.TILE_M == 16 * mma.WARPS
    assert mma.TILE_N == 8 * mma.SUBTILES


def _close_to_host(got: kael.Tensor, a: kael.Tensor, b: kael.Tensor, dtype) -> None:
    """The device's product against torch's of the same half values in float32, rounded
    once to the dtype: equal up to one unit of the dtype where the float32 sums'
    order differs."""
    want = torch.from_numpy(np.asarray(a.float())) @ torch.from_numpy(np.asarray(b.float()))
    want = want.to(TORCH[dtype]).float().numpy()
    assert got.dtype is dtype and tuple(got.shape) == want.shape
    ulp = 2.0**-10 if dtype is float16 else 2.0**-7
    np.testing.assert_allclose(np.asarray(got.float()), want, rtol=ulp, atol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16], ids=str)
@pytest.mark.parametrize(
    "a_shape, b_shape",
    [((19, 37), (37, 45)), ((3, 70, 33), (33, 65)), ((2, 1, 16, 16), (3, 16, 8)), ((40,), (40, 9))],
    ids=str,
)
def test_cuda_half_matmul_matches_the_host(dtype, a_shape, b_shape):
    rng = np.random.default_rng(7)
    a = kael.tensor(rng.standard_normal(a_shape)).to(dtype)
    b = kael.tensor(rng.standard_normal(b_shape)).to(dtype)
    got = (a.cuda() @ b.cuda()).cpu()
    _close_to_host(got, a, b, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [kael.float16, kael.bfloat16], ids=str)
def test_cuda_half_matmul_reads_strided_operands(dtype):
    rng = np.random.default_rng(8)
    a = kael.tensor(rng.standard_normal((30, 50))).to(dtype)
    b = kael.tensor(rng.standard_normal((21, 25))).to(dtype)
    got = (a.cuda()[:, ::2] @ b.cuda().mT).cpu()  # a column stride of 2, B transposed
    _close_to_host(got, a[:, ::2], b.mT, dtype)
