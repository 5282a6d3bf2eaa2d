"""Every elementwise op of the IR lowers, for every dtype it accepts, to PTX that ptxas takes."""

import shutil

import pytest

from kael.codegen import lowering
from kael.codegen.ptx import compiler
from kael.frontend import eager
from kael.ir import graph as g
from kael.ir.kernel import CONTIG
from kael.ir.ops import BINARY_OPS, RANDOM_OPS, UNARY_OPS
from kael.runtime.dtypes import ALL_DTYPES, INTEGER_DTYPES, bool_, float32, float64, int64

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on PATH")
BITWISE = {"bitand", "bitor", "bitxor", "bitnot"}
SHIFTS = {"shl", "shr"}


def _dtypes(op: str, kind: str):
    if kind == "float":
        return (float32, float64)
    if op in BITWISE:
        return (int64, bool_)
    if op in SHIFTS:
        return INTEGER_DTYPES
    if op in RANDOM_OPS:
        return (int64,)
    return ALL_DTYPES


CASES = [(op, d) for op, kind in UNARY_OPS.items() for d in _dtypes(op, kind) if op != "flag"]
CASES += [(op, d) for op, kind in BINARY_OPS.items() for d in _dtypes(op, kind)]


def test_every_ir_op_has_an_emitter():
    assert set(UNARY_OPS) <= set(lowering.UNARY_EMITTERS)
    assert set(BINARY_OPS) <= set(lowering.BINARY_EMITTERS)


@needs_ptxas
@pytest.mark.parametrize(("op", "dtype"), CASES, ids=[f"{op}-{d}" for op, d in CASES])
def test_op_lowers_to_ptx_that_ptxas_accepts(op, dtype):
    def build():
        a = g.Input(dtype, (), "a")
        if op in BINARY_OPS:
            node = g.Binary(
                bool_ if BINARY_OPS[op] == "bool" else dtype, (), op, a, g.Input(dtype, (), "b")
            )
        else:
            node = g.Unary(bool_ if UNARY_OPS[op] == "bool" else dtype, (), op, a)
        return f"ptx_{op}", [node]

    kernel, _ = eager.template(("ptx-op", op, dtype), build)
    kernel = kernel.specialize(1, (CONTIG,) * len(kernel.buffers), False, False)
    ptx = compiler.ptx_for(kernel)
    assert ".entry" in ptx
    compiler.ptxas_check(ptx)


@needs_ptxas
@pytest.mark.parametrize("dtype", [float32, float64], ids=str)
def test_fma_lowers_to_one_rounding_ptx_fma_that_ptxas_accepts(dtype):
    """llvm.fma is an allowed intrinsic: PTX's fma.rn, a * b + c rounded once."""

    def build():
        a, b, c = (g.Input(dtype, (), name) for name in "abc")
        return "ptx_fma", [g.Fma(dtype, (), a, b, c)]

    kernel, _ = eager.template(("ptx-fma", dtype), build)
    kernel = kernel.specialize(1, (CONTIG,) * len(kernel.buffers), False, False)
    ptx = compiler.ptx_for(kernel)
    assert f"fma.rn.f{dtype.itemsize * 8} " in ptx
    compiler.ptxas_check(ptx)
