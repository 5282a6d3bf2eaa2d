"""The generated code itself: vector width, streaming stores, no calls in the hot loop."""

import re

import pytest

from kael.codegen.cpu import compiler, loops
from kael.frontend import eager
from kael.ir import graph as g
from kael.ir.kernel import CONTIG, STRIDED, TRANSPOSED
from kael.runtime.dtypes import float32, float64, int64

HAS_AVX512 = "avx512f" in compiler.vector_features()


def _asm(src, dst, inners=(CONTIG, CONTIG), tiled=False, nontemporal=False, rank=1):
    kernel, _ = eager.copy_template(src, dst)
    kernel = kernel.specialize(rank, inners, tiled, nontemporal)
    return compiler.assembly(kernel, "k")


def _vector_register():
    return "zmm" if HAS_AVX512 else "ymm"


def test_contiguous_copy_uses_full_width_vector_registers():
    asm = _asm(float32, float32)
    assert re.search(rf"vmovup[sd]\s.*%{_vector_register()}", asm), asm


def test_contiguous_conversion_is_vectorized():
    asm = _asm(float32, float64)
    assert re.search(rf"vcvtps2pd\s.*%{_vector_register()}", asm), asm


def test_saturating_float_to_int_conversion_is_vectorized():
    if not HAS_AVX512:
        pytest.skip("vector float->int64 conversion needs AVX-512DQ")
    asm = _asm(float64, int64)
    assert re.search(r"vcvttpd2qq\s.*%zmm", asm), asm


def test_generated_loops_call_no_functions():
    for src, dst in [(float32, float32), (float64, int64), (int64, float32)]:
        assert "call" not in _asm(src, dst), (src, dst)


def test_nontemporal_kernel_streams_its_stores():
    asm = _asm(float32, float32, nontemporal=True)
    assert re.search(r"vmovntp[sd]", asm), asm


def test_flat_kernel_does_not_stream():
    assert "movnt" not in _asm(float32, float32)


def test_strided_inner_loop_compiles_to_scalar_or_gather_code():
    asm = _asm(float32, float32, inners=(CONTIG, STRIDED))
    assert "ret" in asm


def test_host_target_reports_its_features():
    t = compiler.host_target()
    assert t["triple"] and t["cpu"] and t["features"].startswith(("+", "-"))
    if HAS_AVX512:
        assert "-prefer-256-bit" in t["features"]


def test_tiled_transpose_shuffles_in_registers():
    asm = _asm(float32, float32, inners=(CONTIG, TRANSPOSED), tiled=True, rank=2)
    assert re.search(r"v(perm|unpck|shuf|insert|extract)", asm), asm
    assert re.search(rf"vmovup[sd]\s+%{_vector_register()}", asm), asm


def test_linking_a_library_name_twice_gives_two_working_libraries():
    # a process forked between another thread's link and its cache store links the kernel
    # again under the same name: the JIT refuses a taken name, so the second gets a new one
    import ctypes

    text = "define i64 @kael_test_seven() {\n  ret i64 7\n}\n"
    obj = compiler.compile_ir_text(text)
    first, keep1 = compiler.load_object_symbols(obj, ("kael_test_seven",), "kael_test_twice")
    second, keep2 = compiler.load_object_symbols(obj, ("kael_test_seven",), "kael_test_twice")
    for addresses in (first, second):
        assert ctypes.CFUNCTYPE(ctypes.c_int64)(addresses["kael_test_seven"])() == 7
    assert first["kael_test_seven"] != second["kael_test_seven"]
    del keep1, keep2


def _module_text(inners) -> str:
    kernel, _ = eager.copy_template(float32, float32)
    return str(compiler.build_module(kernel.specialize(1, inners, False, False), "k"))


def test_kernels_kael_vectorized_get_the_short_pass_list():
    assert compiler.kernel_passes(_module_text((CONTIG, CONTIG))) == compiler.KERNEL_PASSES


def test_kernels_left_scalar_keep_o3_for_its_loop_vectorizer():
    text = _module_text((CONTIG, STRIDED))
    assert compiler.kernel_passes(text) is None
    assert "llvm.loop.isvectorized" in str(compiler._optimized(text, None))


def test_the_short_pass_list_vectorizes_nothing_again(monkeypatch):
    # O3 would vectorize a scalar tail of kael's vector loops once more (and mark it); rows
    # end in a masked vector step unless the kernel reports faults, so one is forced here.
    monkeypatch.setattr(loops, "masked_tail", lambda kernel: False)
    text = _module_text((CONTIG, CONTIG))
    assert "llvm.loop.isvectorized" not in str(compiler._optimized(text, compiler.KERNEL_PASSES))
    assert "llvm.loop.isvectorized" in str(compiler._optimized(text, None))


def test_rows_end_in_one_masked_vector_step_unless_the_kernel_reports_faults():
    # (its store is masked with AVX-512, in pieces elsewhere: loops.store_first)
    assert "llvm.masked.load" in _module_text((CONTIG, CONTIG))
    a, b = (g.Input(int64, (), name) for name in "ab")
    kernel = eager.template(
        ("test_floordiv",), lambda: ("floordiv_int64", [g.Binary(int64, (), "floordiv", a, b)])
    ).kernel
    assert kernel.may_fault
    text = str(compiler.build_module(kernel.specialize(1, (CONTIG,) * 3, False, False), "k"))
    assert "llvm.masked.load" not in text and "llvm.masked.store" not in text


def _object_with_lsr(text: str, passes) -> bytes:
    with compiler._lock:
        return compiler._target_machine().emit_object(compiler._optimized(text, passes))


def test_kael_vectorized_kernels_are_emitted_without_loop_strength_reduction():
    text = _module_text((CONTIG, CONTIG))
    ours = compiler._emit(text, compiler.KERNEL_PASSES)
    assert ours != _object_with_lsr(text, compiler.KERNEL_PASSES)
    with compiler._lock, compiler._codegen_for(compiler.KERNEL_PASSES):
        assert ours == compiler._target_machine().emit_object(
            compiler._optimized(text, compiler.KERNEL_PASSES)
        )


def test_o3_modules_keep_loop_strength_reduction_after_a_kernel_was_emitted():
    text = _module_text((CONTIG, STRIDED))
    before = _object_with_lsr(text, None)
    compiler._emit(_module_text((CONTIG, CONTIG)), compiler.KERNEL_PASSES)  # sets, restores
    assert compiler._emit(text, None) == before == _object_with_lsr(text, None)


def _launched_kernel(fn, *args):
    from kael.frontend.inspection import record_launches

    _, made = record_launches(fn, *args)
    return made[-1].kernel


def test_vector_math_and_random_bodies_are_not_unrolled():
    import kael
    from kael.codegen.cpu import loops

    x = kael.randn(64)
    assert loops.unroll_of(_launched_kernel(kael.tanh, x)) == 1
    assert loops.unroll_of(_launched_kernel(kael.nn.functional.gelu, x)) == 1
    assert loops.unroll_of(_launched_kernel(lambda: kael.randn(64))) == 1
    assert loops.unroll_of(_launched_kernel(kael.add, x, x)) == loops.UNROLL


@pytest.mark.parametrize("n", [1, 15, 16, 17, 31, 33, 64, 65, 100, 1000])
def test_a_body_without_unrolling_covers_every_length(n):
    import numpy as np
    import torch

    import kael

    data = np.linspace(-4, 4, n, dtype=np.float32)
    got = kael.tensor(data).tanh().erf().numpy()
    want = torch.from_numpy(data).tanh().erf().numpy()
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("n", [1, 7, 16, 17, 40, 100])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_long_body_over_strided_buffers_gathers_and_scatters_every_lane(n, dtype):
    import numpy as np
    import torch

    import kael

    data = np.random.default_rng(n).standard_normal((3, 3 * n)).astype(dtype)
    x, t = kael.tensor(data), torch.from_numpy(data)
    np.testing.assert_allclose(x[:, ::3].tanh().numpy(), t[:, ::3].tanh().numpy(), rtol=4e-6)
    out = kael.zeros(3, 2 * n, dtype=getattr(kael, dtype))
    kael.exp(x[:, ::3], out=out[:, ::2])  # strided in, strided out
    want = torch.zeros(3, 2 * n, dtype=getattr(torch, dtype))
    want[:, ::2] = t[:, ::3].exp()
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=4e-6)


def test_a_long_body_over_a_strided_buffer_is_vector_code():
    import kael

    x = kael.randn(8, 96)
    asm = compiler.assembly(_launched_kernel(kael.exp, x[:, ::3]), "k")
    assert re.search(r"vgather|vpgather", asm) or not HAS_AVX512, asm[:2000]


def test_a_stride_two_input_is_read_as_vectors_and_packed_not_gathered():
    """Every other element (a pool's tap, x[:, ::2]) loads 2 * width lanes and keeps the
    even ones: vector loads and a permute, no gather."""
    import kael

    x = kael.randn(8, 64)
    asm = compiler.assembly(_launched_kernel(kael.exp, x[:, ::2]), "k")
    assert not re.search(r"vgather|vpgather", asm), asm[:2000]
    assert re.search(r"vperm", asm) or not HAS_AVX512, asm[:2000]


@pytest.mark.parametrize("src, dst", [(float32, float32), (float64, float64), (int64, float32)])
def test_tiles_transpose_through_the_permute_intrinsic_with_avx512(src, dst):
    asm = _asm(src, dst, inners=(CONTIG, TRANSPOSED), tiled=True, rank=2)
    if not HAS_AVX512:
        assert "vpermi2" not in asm and "vpermt2" not in asm
        return
    assert re.search(r"vperm[it]2[pqd]", asm), asm[:2000]
    assert not re.search(r"vunpck|vshuf", asm), "generic shuffles left in the transpose"
