import pytest

import kael
from kael.frontend.inspection import explain, kernel_stage, record_launches


def test_record_launches_sees_each_kernel_of_a_call():
    x = kael.ones(100, dtype=kael.float32)
    y, launches = record_launches(x.to, kael.int64)
    assert y.dtype is kael.int64
    assert len(launches) == 1
    launch = launches[0]
    assert launch.shape == (100,)
    assert launch.bytes_moved == 100 * 4 + 100 * 8
    assert launch.seconds > 0 and launch.gbps > 0
    assert launch.kernel.outputs[0].dtype is kael.int64


def test_a_call_without_kernels_records_nothing():
    x = kael.ones(3)
    _, launches = record_launches(x.to, kael.float32)  # same dtype returns self
    assert launches == []


def test_every_stage_prints_for_a_kernel():
    x = kael.ones(10, dtype=kael.float64)
    _, [launch] = record_launches(x.to, kael.float32)
    assert kernel_stage(launch.kernel, "kael").startswith("kernel copy_float64_to_float32")
    assert "fptrunc" in kernel_stage(launch.kernel, "llvm")
    assert "ret" in kernel_stage(launch.kernel, "asm")


def test_unknown_stage_names_the_choices():
    x = kael.ones(10)
    _, [launch] = record_launches(x.to, kael.int64)
    with pytest.raises(kael.ValueError, match="'wat'.*kael, llvm, asm, ptx"):
        kernel_stage(launch.kernel, "wat")


def test_explain_prints_kernel_ir_and_rate(capsys):
    x = kael.ones(4, 4)
    launches = explain(x.T.contiguous)
    out = capsys.readouterr().out
    assert len(launches) == 1
    assert "kernel 0: kael_copy_float32_to_float32" in out and "GB/s" in out
    assert "out0 = in0" in out
