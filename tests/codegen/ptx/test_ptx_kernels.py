"""The PTX backend: every kernel eager.py builds becomes a launchable entry that ptxas accepts."""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
import shutil
import struct
import subprocess
import sys
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from llvmlite import ir

from kael.codegen.ptx import compiler, launch
from kael.codegen.ptx import kernel as ptx_kernel
from kael.frontend import eager
from kael.ir.expr import unary
from kael.ir.kernel import BCAST, CONTIG, STRIDED, Kernel
from kael.runtime import cuda_driver, kernel_cache
from kael.runtime.dtypes import ALL_DTYPES, DType, bool_, float32, float64, int64
from kael.runtime.errors import Error

REPO = Path(__file__).resolve().parents[3]
needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on PATH")
needs_gpu = pytest.mark.gpu  # skipped by conftest where no device is usable

# family -> how eager.py launches it, given stand-ins for (dst, *srcs).
OPS = {
    "copy": lambda dst, src: eager.copy_into(dst, src),
    "fill": lambda dst: eager.fill(dst, 1),
    "arange": lambda dst: eager.arange_into(dst, 0, 1),
    "linspace": lambda dst: eager.linspace_into(dst, 0.0, 1.0),
    "eye": lambda dst: eager.eye_into(dst),
}
# (family, dtypes of dst and srcs, rank): eye reads position 1, so it needs rank 2 or more.
CASES = [("copy", (dst, src)) for src in ALL_DTYPES for dst in ALL_DTYPES]
CASES += [(family, (d,)) for family in ("fill", "arange", "linspace", "eye") for d in ALL_DTYPES]
RANKED = [(f, ds, r) for f, ds in CASES for r in (1, 2, 3) if f != "eye" or r >= 2]


def _case_id(case) -> str:
    family, dtypes, *rank = case
    names = "-from-".join(str(d) for d in dtypes)
    return f"{family}-{names}" + (f"-rank{rank[0]}" if rank else "")


def eager_kernel(family: str, dtypes: tuple[DType, ...]) -> Kernel:
    """The kernel template eager.py launches for `family`, caught before it reaches the CPU."""
    caught: list[Kernel] = []

    def run(entry, outs, ins, scalars=None):
        caught.append(entry.kernel)

    impls = [
        types.SimpleNamespace(dtype=d, numel=lambda: 3, shape=(3,), strides=(1,), offset=0)
        for d in dtypes
    ]
    with mock.patch.object(eager, "run", run):
        OPS[family](*impls)
    (kernel,) = caught
    return kernel


def layout_variants(kernel: Kernel, rank: int) -> list[Kernel]:
    """Every layout class of the output and inputs, plus the streaming and tiled schedules."""
    n_in = len(kernel.inputs)
    variants = [
        kernel.specialize(rank, (out, *ins), False, False)
        for out in (CONTIG, STRIDED)
        for ins in itertools.product((CONTIG, BCAST, STRIDED), repeat=n_in)
    ]
    variants.append(kernel.specialize(rank, (CONTIG,) * (1 + n_in), False, True))
    if rank >= 2 and not kernel.uses_index:
        variants.append(kernel.specialize(rank, (CONTIG, *(STRIDED,) * n_in), True, False))
    return variants


def _ptxas_all(ptxs: list[str]) -> None:
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for done in [pool.submit(compiler.ptxas_check, p) for p in ptxs]:
            done.result()


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A private disk cache and an empty memory cache."""
    monkeypatch.setenv("KAEL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiler, "_memory", kernel_cache.Memo())
    return tmp_path


@needs_ptxas
@pytest.mark.parametrize("case", RANKED, ids=_case_id)
def test_every_eager_kernel_is_a_ptx_entry_that_ptxas_accepts(case, cache_dir):
    family, dtypes, rank = case
    variants = layout_variants(eager_kernel(family, dtypes), rank)
    ptxs = [compiler.ptx_for(k) for k in variants]
    for k, ptx in zip(variants, ptxs):
        assert f".visible .entry {compiler.function_name(k)}(" in ptx
        assert ".func" not in ptx
        assert ".target sm_90" in ptx
    _ptxas_all(ptxs)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_no_module_calls_an_intrinsic_that_aborts_nvptx(case):
    kernel = eager_kernel(*case)
    for k in layout_variants(kernel, 3):
        text = str(compiler.build_module(k))
        assert not re.search(r"@\"?llvm\.(exp|exp10|log|log2|log10|pow|powi)\.", text)
        assert not re.search(r"@\"?llvm\.(sin|cos|tanh)\.f64", text)
        ptx_kernel.check_intrinsics(compiler.build_module(k))


@pytest.mark.parametrize("case", [CASES[1], ("arange", (float32,))], ids=_case_id)
def test_layout_and_schedule_hints_leave_the_ptx_unchanged_but_key_it(case):
    variants = layout_variants(eager_kernel(*case), 2)
    names = [compiler.function_name(k) for k in variants]
    bodies = {compiler.compile_ptx(k).replace(n, "ENTRY") for k, n in zip(variants, names)}
    assert len(bodies) == 1
    assert len(set(names)) == len(variants)


def test_entry_takes_one_u64_per_argument_word_plus_total():
    kernel = eager_kernel("linspace", (float32,)).specialize(2, (STRIDED,), False, False)
    ptx = compiler.compile_ptx(kernel)
    # 1 pointer, 2 sizes, 2 strides, 6 scalars (start, end, step, neg_step, last,
    # halfway), total.
    assert ptx_kernel.param_count(kernel) == 12
    assert ptx.count(".param .u64") == 12
    module = compiler.build_module(kernel)
    assert [a.name for a in module.get_global(compiler.function_name(kernel)).args][-1] == "total"


_COPY_PTX_PROBE = """
import sys
from kael.codegen.ptx import compiler
from kael.ir import graph as g
from kael.ir.kernel import CONTIG, STRIDED
from kael.ir.scheduler import schedule_elementwise
from kael.runtime.dtypes import float32, int64
kernel, _, _ = schedule_elementwise("copy", [g.Cast(int64, (), g.Input(float32, (), "src"))])
sys.stdout.write(compiler.compile_ptx(kernel.specialize(3, (CONTIG, STRIDED), False, False)))
"""


def _run_child(code: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        capture_output=True,
        text=True,
    )


def test_ptx_is_deterministic_across_generations_and_processes():
    kernel = eager_kernel("copy", (int64, float32)).specialize(3, (CONTIG, STRIDED), False, False)
    assert compiler.compile_ptx(kernel) == compiler.compile_ptx(kernel)
    first, second = (_run_child(_COPY_PTX_PROBE, PYTHONHASHSEED=seed) for seed in ("1", "2"))
    assert first.returncode == 0, first.stderr[-2000:]
    assert ".entry" in first.stdout
    assert first.stdout == second.stdout


def test_disk_cache_round_trips_the_ptx(cache_dir, monkeypatch):
    kernel = eager_kernel("fill", (bool_,)).specialize(1, (CONTIG,), False, False)
    ptx = compiler.ptx_for(kernel)
    assert list((cache_dir / compiler.CACHE_KIND).rglob("*.bin"))
    monkeypatch.setattr(compiler, "_memory", kernel_cache.Memo())
    monkeypatch.setattr(compiler, "compile_ptx", mock.Mock(side_effect=AssertionError("LLVM ran")))
    hits = kernel_cache.stats["disk_hits"]
    assert compiler.ptx_for(kernel) == ptx
    assert kernel_cache.stats["disk_hits"] == hits + 1


def test_memory_cache_returns_the_same_ptx_without_llvm(cache_dir, monkeypatch):
    kernel = eager_kernel("fill", (int64,)).specialize(2, (STRIDED,), False, False)
    ptx = compiler.ptx_for(kernel)
    monkeypatch.setattr(compiler, "_load_or_compile", mock.Mock(side_effect=AssertionError))
    assert compiler.ptx_for(kernel) is ptx


def test_corrupt_disk_entry_is_recompiled_not_trusted(cache_dir, monkeypatch):
    kernel = eager_kernel("arange", (int64,)).specialize(1, (CONTIG,), False, False)
    ptx = compiler.ptx_for(kernel)
    (entry,) = (cache_dir / compiler.CACHE_KIND).rglob("*.bin")
    entry.write_bytes(entry.read_bytes()[:-10] + b"0123456789")
    monkeypatch.setattr(compiler, "_memory", kernel_cache.Memo())
    compiled = kernel_cache.stats["compiled"]
    assert compiler.ptx_for(kernel) == ptx
    assert kernel_cache.stats["compiled"] == compiled + 1


def test_cache_key_follows_the_printed_kernel():
    kernel = eager_kernel("copy", (float32, float64))
    a = kernel.specialize(2, (CONTIG, CONTIG), False, False)
    same = kernel.specialize(2, (CONTIG, CONTIG), False, False)
    other = kernel.specialize(2, (CONTIG, CONTIG), True, False)
    assert compiler.cache_key(a) == compiler.cache_key(same)
    assert compiler.cache_key(a) != compiler.cache_key(other)


def test_module_data_layout_is_the_nvptx64_target_machines():
    assert compiler.target_data_layout() == ptx_kernel.DATA_LAYOUT
    module = compiler.build_module(
        eager_kernel("fill", (float32,)).specialize(1, (CONTIG,), False, False)
    )
    assert module.triple == "nvptx64-nvidia-cuda"
    assert module.data_layout == ptx_kernel.DATA_LAYOUT


def _module_calling(name: str, ty: ir.Type, fastmath=()) -> ir.Module:
    module = ir.Module()
    module.triple, module.data_layout = ptx_kernel.TRIPLE, ptx_kernel.DATA_LAYOUT
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ty.as_pointer()]), "k")
    fn.calling_convention = "ptx_kernel"
    b = ir.IRBuilder(fn.append_basic_block())
    callee = ir.Function(module, ir.FunctionType(ty, [ty]), name)
    b.store(b.call(callee, [b.load(fn.args[0])], fastmath=fastmath), fn.args[0])
    b.ret_void()
    return module


@pytest.mark.parametrize(
    ("name", "ty", "fastmath"),
    [
        ("llvm.exp.f32", ir.FloatType(), ("afn",)),
        ("llvm.log.f64", ir.DoubleType(), ()),
        ("llvm.log2.f32", ir.FloatType(), ()),
        ("llvm.pow.f32", ir.FloatType(), ()),
        ("llvm.sin.f32", ir.FloatType(), ()),
        ("llvm.sin.f64", ir.DoubleType(), ("afn",)),
        ("llvm.exp2.f64", ir.DoubleType(), ()),
        ("llvm.tanh.f32", ir.FloatType(), ()),
    ],
)
def test_intrinsics_that_abort_nvptx_raise_kael_error_before_llvm(name, ty, fastmath):
    module = _module_calling(name, ty, fastmath)
    with pytest.raises(Error, match=re.escape(name)):
        ptx_kernel.check_intrinsics(module)
    with pytest.raises(Error, match=re.escape(name)):
        compiler.assemble(module)


def test_f32_approximations_with_afn_pass_the_intrinsic_check():
    for base in ptx_kernel.F32_APPROX_INTRINSICS:
        module = _module_calling(f"llvm.{base}.f32", ir.FloatType(), ("afn",))
        assert ".approx" in compiler.assemble(module)


# Arity of each allowed intrinsic by kind; a new entry in SAFE_INTRINSICS must be added here.
_INT_INTRINSICS = {
    "smax": 2,
    "smin": 2,
    "umax": 2,
    "umin": 2,
    "ctpop": 1,
    "abs": 1,
    "ctlz": 1,
    "cttz": 1,
}
_FLOAT_INTRINSICS = {"fma": 3, "fmuladd": 3, "maxnum": 2, "minnum": 2, "copysign": 2}
_LOWERING_PROBE = """
import sys
from llvmlite import ir
from kael.codegen.ptx import compiler, kernel
ints, floats = eval(sys.argv[1]), eval(sys.argv[2])
module = ir.Module()
module.triple, module.data_layout = kernel.TRIPLE, kernel.DATA_LAYOUT
flag = ir.Constant(ir.IntType(1), 0)
cases = [(n, ir.IntType(64), a) for n, a in ints.items()]
cases += [(n, t, floats.get(n, 1)) for n in kernel.SAFE_INTRINSICS if n not in ints
          for t in (ir.FloatType(), ir.DoubleType())]
for i, (name, ty, arity) in enumerate(cases):
    extra = [flag] if name in ("abs", "ctlz", "cttz") else []
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ty.as_pointer()]), f"k{i}")
    fn.calling_convention = "ptx_kernel"
    b = ir.IRBuilder(fn.append_basic_block())
    suffix = {"float": "f32", "double": "f64", "i64": "i64"}[str(ty)]
    fnty = ir.FunctionType(ty, [ty] * arity + [e.type for e in extra])
    callee = ir.Function(module, fnty, f"llvm.{name}.{suffix}")
    b.store(b.call(callee, [b.load(fn.args[0])] * arity + extra), fn.args[0])
    b.ret_void()
print(compiler.assemble(module).count(".entry"))
"""


def test_every_allowed_intrinsic_lowers_for_nvptx_in_f32_f64_or_i64():
    assert set(_INT_INTRINSICS) <= ptx_kernel.SAFE_INTRINSICS
    # A wrong entry would abort the process, so the probe runs in a child.
    out = _run_child(_LOWERING_PROBE, repr(_INT_INTRINSICS), repr(_FLOAT_INTRINSICS))
    assert out.returncode == 0, out.stderr[-2000:]
    n_float = len(ptx_kernel.SAFE_INTRINSICS) - len(_INT_INTRINSICS)
    assert int(out.stdout) == len(_INT_INTRINSICS) + 2 * n_float


@needs_ptxas
def test_ptxas_check_raises_kael_error_with_ptxas_message():
    with pytest.raises(Error, match="ptxas -arch=sm_90 rejected the PTX: .*kernel.ptx"):
        compiler.ptxas_check(".version 8.0\n.target sm_90\n.address_size 64\nnot ptx;\n")


def test_ptxas_check_without_ptxas_raises_kael_error(monkeypatch):
    monkeypatch.setattr(compiler.shutil, "which", lambda name: None)
    with pytest.raises(Error, match="ptxas is not on PATH"):
        compiler.ptxas_check("")


def test_grid_is_capped_and_never_empty():
    assert launch.grid_blocks(1) == 1
    assert launch.grid_blocks(launch.THREADS_PER_BLOCK + 1) == 2
    assert launch.grid_blocks(10**12) == launch.MAX_BLOCKS


def test_launch_rejects_a_wrong_argument_block_before_touching_cuda():
    kernel = eager_kernel("fill", (float32,)).specialize(1, (CONTIG,), False, False)
    with pytest.raises(Error, match="takes 4 argument words, got 3"):
        launch.launch(kernel, [0, 1, 1], 1)


def _device_array(host: np.ndarray) -> int:
    ptr = cuda_driver.mem_alloc(max(1, host.nbytes))
    cuda_driver.memcpy_htod(ptr, host.ctypes.data, host.nbytes)
    return ptr


def _host_array(ptr: int, like: np.ndarray) -> np.ndarray:
    out = np.empty_like(like)
    cuda_driver.memcpy_dtoh(out.ctypes.data, ptr, out.nbytes)
    return out


@needs_gpu
def test_gpu_transposing_copy_converts_every_element():
    src = np.arange(12, dtype=np.float64).reshape(3, 4) * 1.5 - 4
    kernel = eager_kernel("copy", (int64, float64)).specialize(2, (CONTIG, STRIDED), False, False)
    d_src, d_dst = _device_array(src), _device_array(np.zeros((4, 3), np.int64))
    try:
        launch.launch(kernel, [d_dst, d_src, 4, 3, 3, 1, 1, 4], 12)
        got = _host_array(d_dst, np.zeros((4, 3), np.int64))
    finally:
        cuda_driver.mem_free(d_src)
        cuda_driver.mem_free(d_dst)
    np.testing.assert_array_equal(got, np.trunc(src.T).astype(np.int64))


@needs_gpu
def test_gpu_grid_stride_loop_covers_more_elements_than_threads():
    n = launch.THREADS_PER_BLOCK * launch.MAX_BLOCKS * 3 // 2 + 7
    kernel = eager_kernel("fill", (float32,)).specialize(1, (CONTIG,), False, False)
    d_dst = _device_array(np.zeros(n, np.float32))
    value = struct.unpack("<q", struct.pack("<d", 2.5))[0]
    try:
        launch.launch(kernel, [d_dst, n, 1, value], n)
        got = _host_array(d_dst, np.zeros(n, np.float32))
    finally:
        cuda_driver.mem_free(d_dst)
    assert (got == 2.5).all()


def test_streaming_kernels_are_unrolled_and_long_math_is_not():
    """A flat copy's loop takes UNROLL elements a trip (all their loads first); a kernel
    past UNROLL_BUDGET instructions, or of rank 2 and more, keeps one element a trip."""

    def blocks(kernel: Kernel) -> list[str]:
        return [block.name for block in ptx_kernel.build_module(kernel, "k").get_global("k").blocks]

    copy = eager_kernel("copy", (float32, float64)).specialize(1, (CONTIG, CONTIG), False, False)
    assert {"wide", "packs.wide"} <= set(blocks(copy))
    ptx = compiler.ptx_for(copy)
    assert ptx.count("ld.global.b64 ") == ptx_kernel.UNROLL + 1  # one element a load
    # PACK float64 elements a pack: two 16-byte loads; PACK float32 results: one store
    assert ptx.count("ld.global.v2.b64 ") == 2 * (ptx_kernel.UNROLL + 1)
    assert ptx.count("st.global.v4.b32 ") == ptx_kernel.UNROLL + 1
    sin = dataclasses.replace(copy, exprs=(unary("sin", copy.exprs[0]),))
    assert not {"wide", "packs.wide"} & set(blocks(sin))
    assert not {"wide", "packs.wide"} & set(blocks(dataclasses.replace(copy, rank=2)))


# A grid of 3 blocks (768 threads): each thread takes many elements, so the unrolled trips,
# the one-element rest and their boundaries all run at small sizes.
# Contiguous aligned buffers take PACK elements a load (packs of 4: 3072 of them fill a
# wide trip of 768 threads x UNROLL); a source one element off its alignment, or strided,
# takes the one-element loops.
@needs_gpu
@pytest.mark.parametrize(
    "total", [1, 3, 4, 5, 767, 768, 3071, 3072, 3073, 6144, 9 * 768 + 5, 12287, 12288, 12291,
              4 * (3072 + 768) + 6]
)  # fmt: skip
@pytest.mark.parametrize(("inner", "offset"), [(CONTIG, 0), (CONTIG, 1), (STRIDED, 0)])
def test_gpu_unrolled_trips_and_the_rest_write_every_element_once(
    total, inner, offset, monkeypatch
):
    monkeypatch.setattr(launch, "MAX_BLOCKS", 3)
    kernel = eager_kernel("copy", (float64, float32)).specialize(1, (CONTIG, inner), False, False)
    step = 1 if inner == CONTIG else 2  # a strided source: every other element
    src = np.arange(step * total + offset, dtype=np.float32) * 1.5 - 7
    d_src, d_dst = _device_array(src), _device_array(np.full(total, -1.0))
    src = src[offset:]
    try:
        launch.launch(kernel, [d_dst, d_src + 4 * offset, total, 1, step], total)
        got = _host_array(d_dst, np.zeros(total))
    finally:
        cuda_driver.mem_free(d_src)
        cuda_driver.mem_free(d_dst)
    np.testing.assert_array_equal(got, src[::step].astype(np.float64))
