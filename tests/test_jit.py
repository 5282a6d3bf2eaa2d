"""kael.jit: torch.jit's names around inference code: script and the decorators change
nothing, trace is kael.compile, is_tracing sees kael's traces, load refuses TorchScript."""

import pytest

import kael


def test_script_and_decorators_leave_code_as_written():
    @kael.jit.script
    def double(x):
        return x * 2

    @kael.jit.ignore
    def same(x):
        return x

    @kael.jit.unused(drop=True)
    def other(x):
        return x

    layer = kael.nn.Linear(2, 2)
    assert kael.jit.script(layer) is layer and kael.jit.freeze(layer) is layer
    assert double(kael.ones(2)).tolist() == [2.0, 2.0] and same(3) == 3 and other(4) == 4
    assert kael.jit.annotate(list, [1]) == [1] and not kael.jit.is_scripting()


def test_trace_compiles_and_is_tracing_sees_the_trace():
    traced = kael.jit.trace(lambda x: x + 1, kael.ones(2))
    assert traced(kael.ones(2)).tolist() == [2.0, 2.0] and traced.cache_info().traces == 1

    @kael.compile
    def scaled(x):
        return x * (2 if kael.jit.is_tracing() else 3)

    assert scaled(kael.ones(1)).item() == 2 and not kael.jit.is_tracing()


def test_load_refuses_torchscript_archives_naming_why():
    with pytest.raises(kael.Error, match="TorchScript archive .* cannot run"):
        kael.jit.load("model.pt")
