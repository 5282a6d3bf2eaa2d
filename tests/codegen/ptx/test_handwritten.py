"""codegen/cpu's hand-written kernels compiled for the GPU: every family's module is PTX that
ptxas accepts, each function behind one launchable grid entry; run on the emulated device
by the `gpu` tests (tests/frontend/test_cuda.py)."""

import re
import shutil

import pytest

from kael.codegen.cpu import gather, radix, rank, scan, sort, top
from kael.codegen.ptx import compiler
from kael.codegen.ptx import handwritten as gpu
from kael.frontend.complex import logcumsumexp_step
from kael.runtime.dtypes import bool_, complex128, float32, float64, int16, int64

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on PATH")
DTYPES = [float32, float64, int64, bool_]
FAMILIES = [(kind, d) for kind in ("gather", "put", "scatter_add", "nonzero") for d in DTYPES]
FAMILIES += [("offsets", int64)] + [("scatter_atomic", d) for d in gather.ATOMIC_DTYPES]
FAMILIES += [("compact", d) for d in (bool_, int16, float32, float64, complex128)]  # 1 to 16 bytes
SPECS = [gather._spec(kind, d) for kind, d in FAMILIES] + [sort.spec(d) for d in DTYPES]
SPECS += [spec(width) for spec in (radix.spec, top.spec, rank.spec) for width in (8, 16, 32, 64)]
SPECS += [
    scan._spec(op, d, d, kind)
    for op, d in (("cumsum", int64), ("cumprod", float64), ("logcumsumexp", float32))
    for kind in ("lines", "blocks")  # the vector `columns` kernel is the CPU's alone
]
# complex logcumsumexp: a pair scan over float parts, lines only
SPECS += [scan._spec(logcumsumexp_step(), d, d, "lines") for d in (float32, float64)]


@needs_ptxas
@pytest.mark.parametrize("spec", SPECS, ids=[name for name, _ in SPECS])
def test_every_hand_written_family_is_ptx_ptxas_accepts(spec):
    compiler.ptxas_check(gpu.ptx(*spec))


@pytest.mark.parametrize("spec", SPECS, ids=[name for name, _ in SPECS])
def test_each_function_is_internal_behind_one_grid_entry(spec):
    text = gpu.ptx(*spec)
    entries = re.findall(r"\.visible \.entry (\w+)\(", text)
    assert entries and all(name.endswith("_grid") for name in entries)
    assert ".func" not in text  # the CPU-shaped functions were inlined into their entries


@pytest.mark.parametrize("dtype", gather.ATOMIC_DTYPES, ids=str)
def test_scatter_atomic_adds_with_one_atomic_instruction(dtype):
    text = gpu.ptx(*gather._spec("scatter_atomic", dtype))
    kind = {float32: "f32", float64: "f64", int64: "u64"}.get(dtype, "u32")
    assert len(re.findall(rf"atom(?:\.global)?\.add\.{kind}", text)) == 1
