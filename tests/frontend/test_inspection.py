import pytest

import kael
from kael.frontend.inspection import explain, kernel_stage, launch_stage, record_launches
from kael.ir.kernel import Kernel
from kael.ir.reduction import Reduction


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
    assert "kernel 0: kael_copy_float32_to_float32_" in out and " on cpu shape=[4, 4] " in out
    assert "out0 = in0" in out and "GB/s" in out


@pytest.mark.gpu
def test_an_op_that_runs_on_the_host_shows_its_copies_and_cpu_kernels():
    """linalg.det of a cuda matrix runs on the host: the record says so, a copy to the host,
    kernels on the cpu, a copy back; a device op's kernels run on cuda:0."""
    a = (kael.eye(3) * 2).cuda()
    det, made = record_launches(kael.linalg.det, a)
    assert det.device.type == "cuda" and det.item() == 8.0
    first, *middle, last = made
    assert (first.symbol, first.device, first.bytes_moved) == ("memcpy_dtoh", "cuda:0", 36)
    assert (last.symbol, last.device, last.bytes_moved) == ("memcpy_htod", "cuda:0", 4)
    assert middle and {launch.device for launch in middle} == {"cpu"}
    assert str(first).startswith("memcpy_dtoh on cuda:0 items=1 ") and first.kind == "copy"
    assert (
        launch_stage(first, "llvm")
        == "(memcpy_dtoh: a memory copy to, from or on cuda:0, no kernel)"
    )
    _, made = record_launches(a.sum)  # its argument words go up staged: a queued copy
    assert {launch.device for launch in made} == {"cuda:0"}
    assert any(launch.symbol.startswith("kael_sum") for launch in made)
    assert any(launch.symbol == "memcpy_htod_async" for launch in made)
    _, made = record_launches(a.nonzero)  # its count is read back
    assert any(launch.symbol == "memcpy_dtoh" for launch in made)


# ---- hand-written kernels go through the same launcher, so they are recorded too ----------


def _only(launches, prefix):
    found = [launch for launch in launches if launch.symbol.startswith(prefix)]
    assert len(found) == 1, [launch.symbol for launch in launches]
    return found[0]


def test_a_row_kernel_launch_is_recorded_with_rows_and_cols():
    x = kael.ones(6, 9, dtype=kael.float32)
    _, launches = record_launches(kael.softmax, x, 1)
    row = _only(launches, "kael_rows_softmax_float32")
    assert row.shape == (6, 9) and row.bytes_moved == 6 * 9 * 4 * 2
    assert row.kernel is None and 'define void @"kael_rows_softmax_float32"' in row.llvm
    assert "kael_rows_softmax_float32:" in launch_stage(row, "asm")  # its assembly, too


@kael.compile
def _softmax_from_primitives(x):
    e = (x - x.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


def test_a_row_group_launch_shows_the_driver_and_every_member():
    x = kael.ones(6, 9, dtype=kael.float32)
    _softmax_from_primitives(x)  # traced here: the recorded call runs the plan
    _, launches = record_launches(_softmax_from_primitives, x)
    driver = _only(launches, "kael_row_driver")
    assert driver.shape == (6,) and len(launches) == 1  # one launch: the rows
    assert driver.bytes_moved == 2 * 6 * 9 * 4  # x in, the result out: exp stays in cache
    kinds = [type(k) for k in driver.kernel]
    assert kinds == [Reduction, Kernel, Reduction, Kernel]  # amax, exp, sum, divide
    kael_text = launch_stage(driver, "kael")
    assert "acc = max(in0)" in kael_text and "exp(sub(in0, in1))" in kael_text
    llvm = launch_stage(driver, "llvm")
    assert 'define void @"kael_row_driver"' in llvm and llvm.count("define void") >= 5
    assert "kael_row_driver:" in launch_stage(driver, "asm")
    assert ".visible .entry" in launch_stage(driver, "ptx")  # each member's PTX


def test_a_scan_launch_is_recorded_with_its_work_items():
    x = kael.ones(5, 7, dtype=kael.float64)
    _, launches = record_launches(kael.cumsum, x, 1)
    scan = _only(launches, "kael_scan_cumsum_float64_float64")
    assert scan.bytes_moved == 5 * 7 * 16 and scan.seconds > 0


def test_a_gather_launch_is_recorded():
    x = kael.ones(4, 3, dtype=kael.float32)
    index = kael.zeros(4, 2, dtype=kael.int64)
    _, launches = record_launches(kael.gather, x, 1, index)
    assert _only(launches, "kael_gather").gbps >= 0


def test_a_matmul_launch_is_recorded_with_its_flop_rate():
    a = kael.ones(64, 32, dtype=kael.float32)
    b = kael.ones(32, 48, dtype=kael.float32)
    _, launches = record_launches(kael.matmul, a, b)
    flops = [launch for launch in launches if launch.flops]
    assert sum(launch.flops for launch in flops) == 2 * 64 * 32 * 48
    assert all("GFLOP/s" in str(launch) for launch in flops)


def test_a_reduction_records_its_ir_kernel():
    x = kael.ones(10, 10)
    _, [launch] = record_launches(kael.sum, x, 1)
    assert launch.shape == (10,) and launch_stage(launch, "kael").startswith("reduction")
    assert f'define void @"{launch.symbol}_final"' in launch_stage(launch, "llvm")


def test_explain_shows_a_hand_written_kernel_by_symbol_and_its_llvm_on_request(capsys):
    x = kael.ones(3, 4)
    explain(kael.cumsum, x, 1, stages=("kael", "llvm"))
    out = capsys.readouterr().out
    assert "kernel 0: kael_scan_cumsum_float32_float32" in out
    assert "no kael stage" in out and 'define void @"kael_scan_cumsum_float32_float32' in out


def test_launch_stage_rejects_an_unknown_stage_of_a_hand_written_kernel():
    _, launches = record_launches(kael.cumsum, kael.ones(3), 0)
    with pytest.raises(kael.ValueError, match="'wat'.*kael, llvm, asm, ptx"):
        launch_stage(launches[0], "wat")


def test_nothing_is_recorded_outside_record_launches():
    from kael.runtime import launches

    assert launches.recorder is None
    kael.cumsum(kael.ones(3), 0)
    assert launches.recorder is None


def test_a_reduction_over_several_blocks_records_the_launch_combining_them():
    _, launches = record_launches(kael.sum, kael.ones(40000))  # 16384-element blocks
    assert [launch.symbol.endswith("_final") for launch in launches] == [False, True]
    assert launches[0].kernel is launches[1].kernel
