"""kael.backends against torch.backends: the switches programs set at start exist with
torch's defaults, the libraries kael does not use report unavailable, and the float32
matmul switch is kael.set_float32_matmul_precision's."""

import pytest
import torch

import kael

SWITCHES = [
    ("cudnn", "enabled"), ("cudnn", "benchmark"), ("cudnn", "deterministic"),
    ("cudnn", "allow_tf32"), ("mkldnn", "enabled"), ("opt_einsum", "strategy"),
    ("cuda.matmul", "allow_tf32"), ("cuda.matmul", "allow_fp16_reduced_precision_reduction"),
]  # fmt: skip


def _backend(lib, path: str):
    obj = lib.backends
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize(("path", "name"), SWITCHES)
def test_switches_exist_with_torchs_defaults(path, name):
    assert getattr(_backend(kael, path), name) == getattr(_backend(torch, path), name)


@pytest.mark.parametrize("name", ["cudnn", "mps", "mkldnn", "mkl", "openmp"])
def test_libraries_kael_does_not_use_are_unavailable(name):
    assert getattr(kael.backends, name).is_available() is False


def test_switches_can_be_set_as_programs_do():
    before = kael.backends.cudnn.benchmark
    kael.backends.cudnn.benchmark = not before
    assert kael.backends.cudnn.benchmark is (not before)
    kael.backends.cudnn.benchmark = before


def test_allow_tf32_is_the_float32_matmul_precision():
    try:
        kael.backends.cuda.matmul.allow_tf32 = True
        assert kael.get_float32_matmul_precision() == "high"
        kael.set_float32_matmul_precision("highest")
        assert kael.backends.cuda.matmul.allow_tf32 is False
    finally:
        kael.set_float32_matmul_precision("highest")


def test_cuda_is_built_and_cpu_capability_is_torchs_word():
    assert kael.backends.cuda.is_built() is True
    got = kael.backends.cpu.get_cpu_capability()
    assert got in ("AVX512", "AVX2", "DEFAULT")
    assert got == torch.backends.cpu.get_cpu_capability()
