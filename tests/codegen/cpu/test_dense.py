"""The dense-kernel builder (codegen/cpu/dense.py): its row operations compute what they
say, and LLVM turns the scalar loops into vector code."""

import ctypes
import re

import numpy as np
import pytest
from llvmlite import ir

from kael.codegen.cpu import compiler, dense, handwritten
from kael.runtime.dtypes import float32, float64

WORDS = ("y", "x0", "x1", "x2", "a0", "a1", "a2", "n")


def _axpys(d: dense.Dense, item: ir.Value) -> None:
    """y += a0 x0 + a1 x1 + a2 x2 over n elements (alphas are float64 bit patterns)."""
    b = d.b
    alphas = [b.bitcast(d.w[w], ir.DoubleType()) for w in ("a0", "a1", "a2")]
    if d.t != ir.DoubleType():
        alphas = [b.fptrunc(a, d.t) for a in alphas]
    xs = [d.ptr(w) for w in ("x0", "x1", "x2")]
    d.axpys(d.ptr("y"), alphas, xs, d.i(0), d.w["n"])


def _name(dtype) -> str:
    return f"kael_test_axpys_{dtype.name}"


def _build(module: ir.Module, dtype) -> list[str]:
    return dense.per_matrix(module, _name(dtype), dtype, WORDS, _axpys)


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 100])
@pytest.mark.parametrize("dtype", [float64, float32])
def test_axpys_adds_every_product_in_one_pass(n, dtype):
    name = _name(dtype)
    fn = handwritten.compiled(name, lambda m: _build(m, dtype), passes=None, tiered=False)[name]
    np_dtype = np.float64 if dtype is float64 else np.float32
    rng = np.random.default_rng(n)
    y, xs = rng.standard_normal(n).astype(np_dtype), rng.standard_normal((3, n)).astype(np_dtype)
    alphas = [0.5, -2.0, 3.25]
    want = y + sum(a * x for a, x in zip(alphas, xs))
    bits = [int(np.float64(a).view(np.int64)) for a in alphas]
    words = [y.ctypes.data, *(x.ctypes.data for x in xs), *bits, n]
    args = (ctypes.c_int64 * len(words))(*words)
    fn(ctypes.addressof(args), 0, 1)
    tol = 1e-5 if dtype is float32 else 1e-13  # fused multiply-adds round differently
    np.testing.assert_allclose(y, want, rtol=tol, atol=tol)


def test_axpys_is_vector_code():
    module = ir.Module("probe")
    _build(module, float64)
    asm = compiler.assembly_of_ir_text(handwritten.ir_text(module))
    # packed multiply-adds on whole vector registers, not one element at a time
    assert re.search(r"vfn?madd\d+pd\s+.*%[yz]mm", asm), asm[:2000]
