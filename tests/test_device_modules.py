"""kael.cpu, kael.compiler, kael.nn.attention and the attention switches of kael.backends,
as torch's: device-module answers, the deprecated per-device autocast forms, compile-time
queries, and backend selections that change nothing but are checked."""

import pytest
import torch

import kael
from kael.nn.attention import SDPBackend, sdpa_kernel


def test_cpu_module_answers_as_torch():
    assert kael.cpu.is_available() is torch.cpu.is_available() is True
    assert kael.cpu.device_count() == torch.cpu.device_count() == 1
    assert kael.cpu.current_device() == torch.cpu.current_device()
    kael.cpu.synchronize()


def test_per_device_autocast_forms():
    with kael.cpu.amp.autocast():
        assert (kael.ones(2, 2) @ kael.ones(2, 2)).dtype is kael.bfloat16
    with kael.cuda.amp.autocast():
        assert kael.is_autocast_enabled("cuda") and kael.get_autocast_dtype("cuda") is kael.float16
    assert not kael.is_autocast_enabled("cpu") and not kael.is_autocast_enabled("cuda")


def test_compiler_queries_and_decorators():
    assert not kael.compiler.is_compiling()

    @kael.compile
    def scaled(x):
        return x * (2 if kael.compiler.is_compiling() else 3)

    assert scaled(kael.ones(1)).item() == 2
    assert kael.compiler.disable(len)([1, 2]) == kael.compiler.disable()(len)([1]) + 1 == 2
    kael.compiler.reset()


def test_a_disabled_function_breaks_the_graph_where_it_is_called():
    """torch.compiler.disable: the function runs eagerly, never traced. With
    fullgraph=False the call goes on eagerly from there (its .item() works); with kael's
    default fullgraph=True the trace stops with an error naming it."""

    @kael.compiler.disable
    def positives(x):
        assert not kael.compiler.is_compiling()
        return int((x > 0).sum().item())

    def f(x):
        return (x * 2) * positives(x)

    x = kael.tensor([1.0, -2.0, 3.0])
    broken = kael.compile(f, fullgraph=False)
    for _ in range(2):
        assert broken(x).tolist() == [4.0, -8.0, 12.0]
    with pytest.raises(kael.Error, match="positives is marked kael.compiler.disable"):
        kael.compile(f)(x)
    assert positives.__name__ == "positives" and positives(x) == 2


def test_disable_keeps_static_and_class_methods_classes_and_modules_what_they_are():
    class Holder:
        @kael.compiler.disable
        @staticmethod
        def twice(v):
            return v * 2

        @kael.compiler.disable
        @classmethod
        def name(cls):
            return cls.__name__

    assert Holder.twice(3) == Holder().twice(3) == 6 and Holder.name() == "Holder"
    assert kael.compiler.disable(Holder) is Holder
    layer = kael.nn.Linear(2, 2)
    parent = kael.nn.Sequential(kael.compiler.disable(layer))
    assert len(list(parent.parameters())) == 2  # still a module, its parameters kept
    x = kael.ones(1, 2)
    assert kael.compile(parent, fullgraph=False)(x).tolist() == layer(x).tolist()


def test_sdp_backends_are_torchs_and_selections_are_checked():
    assert {k: int(v) for k, v in SDPBackend.__members__.items()} == {
        k: int(v) for k, v in torch.nn.attention.SDPBackend.__members__.items()
    }
    q = kael.ones(1, 2, 4)
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]):
        assert kael.nn.functional.scaled_dot_product_attention(q, q, q).shape == (1, 2, 4)
    with pytest.raises(kael.TypeError, match="expects an SDPBackend"), sdpa_kernel("flash"):
        pass


def test_attention_switches_are_settings_restored_by_sdp_kernel():
    cuda = kael.backends.cuda
    assert cuda.flash_sdp_enabled() == torch.backends.cuda.flash_sdp_enabled()
    with cuda.sdp_kernel(enable_flash=False, enable_math=True):
        assert not cuda.flash_sdp_enabled() and cuda.math_sdp_enabled()
    assert cuda.flash_sdp_enabled()
    cuda.enable_mem_efficient_sdp(False)
    assert not cuda.mem_efficient_sdp_enabled()
    cuda.enable_mem_efficient_sdp(True)
