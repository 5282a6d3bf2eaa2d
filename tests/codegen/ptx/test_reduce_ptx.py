"""Reductions on the PTX backend: every op's kernel lowers to NVPTX with warp shuffles,
shared memory and barriers, and ptxas -arch=sm_90 accepts it. No GPU runs them here."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import kael
from kael.codegen.cpu.reduce import word_count
from kael.codegen.ptx import compiler
from kael.codegen.ptx import reduce as ptx_reduce
from kael.frontend.inspection import kernel_stage, record_launches
from kael.ir.reduction import plan_reduction
from kael.runtime import kernel_cache

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on PATH")
needs_gpu = pytest.mark.gpu  # skipped by conftest where no device is usable

# name -> (op call, input dtype, shape): the kernels the frontend launches for them.
CASES = {
    "sum_f32_inner": (lambda x: kael.sum(x, 1), kael.float32, (4, 40)),
    "sum_f32_outer": (lambda x: kael.sum(x, 0), kael.float32, (40, 64)),
    "sum_i64_all": (lambda x: kael.sum(x), kael.int64, (5, 6)),
    "sum_bool": (lambda x: kael.sum(x, 0), kael.bool, (5, 6)),
    "prod_f64": (lambda x: kael.prod(x, 1), kael.float64, (3, 9)),
    "mean_f32": (lambda x: kael.mean(x, (0, 2)), kael.float32, (3, 4, 5)),
    "var_f64": (lambda x: kael.var(x, 1), kael.float64, (3, 9)),
    "std_f32": (lambda x: kael.std(x), kael.float32, (3, 9)),
    "amax_f32": (lambda x: kael.amax(x, 1), kael.float32, (3, 9)),
    "amin_i64": (lambda x: kael.amin(x, 0), kael.int64, (3, 9)),
    "amax_bool": (lambda x: kael.amax(x), kael.bool, (3, 9)),
    "max_dim_f64": (lambda x: kael.max(x, 1), kael.float64, (3, 9)),
    "argmin_i64": (lambda x: kael.argmin(x), kael.int64, (3, 9)),
    "argmax_f32": (lambda x: kael.argmax(x, 0, keepdim=True), kael.float32, (3, 9)),
    "all_f32": (lambda x: kael.all(x, 1), kael.float32, (3, 9)),
    "any_bool": (lambda x: kael.any(x), kael.bool, (3, 9)),
    "norm2_f32": (lambda x: kael.norm(x), kael.float32, (3, 9)),
    "norm3_f64": (lambda x: kael.norm(x, 3, 1), kael.float64, (3, 9)),
    "norm_inf_f32": (lambda x: kael.norm(x, float("inf"), 0), kael.float32, (3, 9)),
    "count_nonzero_i64": (lambda x: kael.count_nonzero(x, 1), kael.int64, (3, 9)),
}


def kernels_of(name: str):
    fn, dtype, shape = CASES[name]
    x = kael.arange(int(np.prod(shape))).to(dtype).view(shape)
    _, launches = record_launches(fn, x)
    assert launches
    return [launch.kernel for launch in launches]


@needs_ptxas
@pytest.mark.parametrize("name", list(CASES))
def test_reduction_ptx_is_accepted_by_ptxas(name):
    for kernel in kernels_of(name):
        ptx = ptx_reduce.ptx_for(kernel)
        compiler.ptxas_check(ptx)
        entry = ptx_reduce.function_name(kernel)
        assert f".entry {entry}(" in ptx


@pytest.mark.parametrize("name", ["sum_f32_inner", "max_dim_f64", "any_bool", "argmin_i64"])
def test_reduction_ptx_uses_warp_shuffles_shared_memory_and_barriers(name):
    (kernel,) = kernels_of(name)
    ptx = ptx_reduce.ptx_for(kernel)
    assert "shfl.sync.bfly.b32" in ptx
    assert ".shared" in ptx
    assert "bar.sync" in ptx or "barrier.sync" in ptx
    assert kernel_stage(kernel, "ptx") == ptx


def test_double_and_int64_values_cross_lanes_in_two_32_bit_halves():
    (kernel,) = kernels_of("prod_f64")
    ptx = ptx_reduce.ptx_for(kernel)
    # five butterfly steps, two halves each, in the warp fold and again across warps
    assert ptx.count("shfl.sync.bfly.b32") >= 2 * 5 * 2


def test_ptx_parameters_are_the_cpu_words():
    (kernel,) = kernels_of("var_f64")[1:]
    module = ptx_reduce.build_module(kernel, "k")
    fn = module.get_global("k")
    assert len(fn.args) == word_count(kernel)
    assert fn.calling_convention == "ptx_kernel"


@pytest.mark.parametrize("name", list(CASES))
def test_float_sums_and_products_run_in_the_hosts_order_and_the_rest_fast(name):
    # order shows in float sums (sum, mean, var, std, norm) and products only
    (kernel, *_) = kernels_of(name)
    order_free = kernel.op not in ("sum", "prod") or not kernel.acc.is_floating_point
    assert ptx_reduce.in_host_order(kernel) is not order_free


@needs_ptxas
@pytest.mark.parametrize("name", ["sum_f32_inner", "sum_f32_outer", "var_f64", "prod_f64"])
def test_the_hosts_reduction_functions_are_ptx_ptxas_accepts(name):
    from kael.codegen.ptx import handwritten

    for kernel in kernels_of(name):
        if ptx_reduce.in_host_order(kernel):
            compiler.ptxas_check(handwritten.ptx(*ptx_reduce.host_order_spec(kernel)))


@needs_gpu
def test_cuda_reductions_match_the_cpu():
    x = kael.arange(1000, dtype=kael.float32).view(10, 100)
    for fn in (lambda t: kael.sum(t, 1), lambda t: kael.argmax(t, 0), lambda t: kael.std(t)):
        np.testing.assert_allclose(fn(x.cuda()).cpu().numpy(), fn(x).numpy(), rtol=1e-6)


def test_launch_runs_one_cta_per_output_with_the_cpu_words(monkeypatch):
    calls = []
    monkeypatch.setattr(ptx_reduce, "_loaded", kernel_cache.Memo())  # keep the fake out
    monkeypatch.setattr(ptx_reduce.cuda_driver, "load_function", lambda ptx, name: ("m", name))
    monkeypatch.setattr(
        ptx_reduce.cuda_driver, "launch_kernel", lambda *args, **_: calls.append(args)
    )
    (kernel,) = kernels_of("amax_f32")  # an order-free op: the fast kernel
    plan = plan_reduction((3, 9), (1,), [(1,)], [(9, 1)])
    words = list(range(word_count(kernel)))
    ptx_reduce.launch(kernel, words, plan)
    [(function, blocks, threads, passed)] = calls
    assert function == ptx_reduce.function_name(kernel)
    assert (blocks, threads, passed) == (3, ptx_reduce.THREADS, words)
    with pytest.raises(kael.Error, match=r"takes \d+ argument words, got 3"):
        ptx_reduce.launch(kernel, [1, 2, 3], plan)
