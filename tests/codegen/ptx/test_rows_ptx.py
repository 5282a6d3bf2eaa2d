"""The GPU's row kernels (codegen/ptx/rows.py) without a GPU: the layout each row length
gets, the rows a tensor's layout offers (frontend/gpu_rows.py), and PTX that ptxas
accepts with coalesced 128-bit loads, warp shuffles and, for a CTA, shared memory and
barriers. The kernels run on the emulated device in tests/frontend/test_cuda_rows.py."""

import re
import shutil

import pytest

import kael
from kael.codegen.ptx import compiler, rows
from kael.codegen.ptx.rowgroup import Shape
from kael.frontend.gpu_rows import row_layout
from kael.runtime.dtypes import bfloat16, float16, float32, float64

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on PATH")


@pytest.mark.parametrize(
    "dtype, cols, vectorized, shape",
    [
        (float32, 1, False, Shape(32, 1, 1)),
        (float32, 128, True, Shape(32, 1, 4)),
        (float32, 129, False, Shape(32, 5, 1)),  # 129 elements: 5 a lane, the last masked
        (float32, 1024, True, Shape(32, 8, 4)),  # a warp's last: 8 vectors a lane
        (float32, 1028, True, Shape(256, 2, 4)),  # then the CTA's 256 threads
        (float32, 8192, True, Shape(256, 8, 4)),
        (float32, 16384, True, Shape(256, 16, 4)),  # 64 floats a thread: registers' last
        (float32, 16388, True, Shape(256, 0, 4)),  # then streamed
        (float32, 4096, False, Shape(256, 16, 1)),  # scalar: 16 elements a thread
        (float32, 4097, False, Shape(256, 0, 1)),
        (float64, 8192, True, Shape(256, 16, 2)),
        (float64, 8194, True, Shape(256, 0, 2)),
        (float16, 1024, True, Shape(32, 4, 8)),  # a warp holds 32 floats a lane, from halves
        (float16, 16384, True, Shape(256, 8, 8)),
        (bfloat16, 16392, True, Shape(256, 0, 8)),
    ],
)
def test_each_row_length_gets_a_warp_a_cta_or_a_streaming_cta(dtype, cols, vectorized, shape):
    assert rows.shape_for(dtype, cols, vectorized) == shape


def _impl(shape, view=lambda t: t):
    return view(kael.zeros(shape))._impl


@pytest.mark.parametrize(
    "base, view, tail, layout",
    [
        ((4, 6), lambda t: t, 1, (4, 6, 6)),
        ((4, 6), lambda t: t[:, 1:4], 1, (4, 3, 6)),  # a slice of each row: rows 6 apart
        ((4, 6), lambda t: t[::2], 1, (2, 6, 12)),
        ((1, 6), lambda t: t.expand(5, 6), 1, (5, 6, 0)),  # broadcast rows: one row, read 5x
        ((2, 3, 4, 5), lambda t: t[:, :, 1:3], 2, (6, 10, 20)),
        ((2, 3, 4), lambda t: t[:, 1:], 2, (2, 8, 12)),
        ((3,), lambda t: t, 1, (1, 3, 3)),
        ((), lambda t: t, 0, (1, 1, 1)),
        ((4, 6), lambda t: t.T, 1, None),  # the last dim strided: the composed path
        ((4, 6), lambda t: t[:, ::2], 1, None),
        ((2, 3, 4), lambda t: t.transpose(0, 1), 1, None),  # leading dims not one stride apart
        ((2, 3, 4), lambda t: t[:, :, :2], 2, None),
    ],
)
def test_rows_of_a_layout_are_one_stride_apart_with_contiguous_trailing_dims(
    base, view, tail, layout
):
    assert row_layout(_impl(base, view), tail) == layout


SPECS = [
    rows.RowKernel(op, dtype, affine, rows.shape_for(dtype, cols, vectorized))
    for op, affine in (
        ("softmax", "none"),
        ("log_softmax", "none"),
        ("layer_norm", "both"),
        ("layer_norm", "bias"),
        ("rms_norm", "weight"),
    )
    for dtype in (float32, float64, float16, bfloat16)
    for cols, vectorized in (
        (1024, True),
        (4096, True),
        (16384, True),
        (99999, True),
        (1001, False),
    )
]


@needs_ptxas
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.symbol)
def test_every_row_kernel_is_ptx_ptxas_accepts(spec):
    compiler.ptxas_check(rows.ptx(spec))


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.symbol)
def test_row_kernels_load_whole_vectors_and_fold_rows_in_the_group(spec):
    text = rows.ptx(spec)
    assert re.findall(r"\.visible \.entry (\w+)\(", text) == [spec.symbol]
    assert ".maxntid 256" in text and "shfl.sync.bfly.b32" in text
    if spec.shape.width > 1:  # 128 bits a load and a store
        wide = r"\.global\.(v4\.b32|v2\.b64)"
        assert re.search(rf"ld{wide}", text) and re.search(rf"st{wide}", text)
    if spec.shape.group == 256:
        assert ".shared" in text and "bar.sync" in text
    else:
        assert ".shared" not in text and "bar.sync" not in text
    assert "ld.local" not in text and "st.local" not in text  # no stack: all in registers


def test_layer_norm_converts_the_row_to_float64_once_per_pass():
    # the d pass converts its floats anew (_Math.fresh): LLVM would otherwise keep the sum
    # pass's float64 copies of the row alive, in twice the row's registers
    spec = rows.RowKernel("layer_norm", float32, "none", Shape(32, 8, 4))
    assert rows.ptx(spec).count("cvt.f64.f32") >= 2 * 8 * 4
