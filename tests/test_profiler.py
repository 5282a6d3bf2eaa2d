"""kael.profiler against torch.profiler's surface: ops and their kernels recorded and
nested, record_function ranges, input shapes, key_averages tables, Chrome traces,
torch's schedule step for step, on_trace_ready per cycle, and recording from threads."""

import json
import multiprocessing
import os
import threading

import pytest
import torch

import kael
from kael.profiler import ProfilerAction, profile, record_function, schedule


def _names(prof) -> list[str]:
    return [e.name for e in prof.events()]


def test_ops_and_their_kernels_are_recorded_nested_under_ranges():
    x, w = kael.randn(16, 16), kael.randn(16, 16)
    with profile(record_shapes=True) as prof:
        with record_function("layer"):
            y = kael.relu(x @ w)
        kael.softmax(y, -1)
    top = [e for e in prof.events() if e.name == "layer"][0]
    assert [c.name for c in top.children] == ["__matmul__", "relu"]
    assert all(c.children and c.children[0].kind == "kernel" for c in top.children)
    relu = top.children[1]
    assert relu.input_shapes == [[16, 16]]
    assert (
        relu.start_us <= relu.children[0].start_us + 1
        and relu.children[0].end_us <= relu.end_us + 1
    )
    assert "softmax" in _names(prof)
    assert top.cpu_time_total >= sum(c.cpu_time_total for c in top.children)


def test_nothing_is_recorded_outside_a_profile_and_record_function_is_a_no_op():
    with profile() as prof:
        pass
    kael.relu(kael.ones(3))
    with record_function("idle"):
        kael.relu(kael.ones(3))
    assert prof.events() == []


def test_key_averages_count_calls_and_the_table_shows_them():
    x = kael.randn(8)
    with profile(record_shapes=True) as prof:
        for _ in range(3):
            kael.exp(x)
        kael.exp(kael.randn(4))
    by_name = {e.key: e for e in prof.key_averages()}
    assert by_name["exp"].count == 4
    shaped = {(e.key, e.input_shapes) for e in prof.key_averages(group_by_input_shape=True)}
    assert ("exp", "[[8]]") in shaped and ("exp", "[[4]]") in shaped
    text = prof.key_averages().table(sort_by="count", row_limit=2)
    assert "exp" in text and "# of Calls" in text and "Self CPU time total" in text
    assert len([line for line in text.splitlines() if "exp" in line or "kael_" in line]) <= 2
    with pytest.raises(kael.ValueError, match="unknown sort_by"):
        prof.key_averages().table(sort_by="bogus")


def test_self_times_add_up_to_the_top_level_total():
    with profile() as prof, record_function("outer"):
        kael.randn(1000).sum()
    events = prof.events()
    total = sum(e.cpu_time_total for e in events if e.name == "outer")
    assert abs(sum(e.self_cpu_time_total for e in events) - total) < 1e-6 * max(total, 1)


def test_chrome_trace_is_valid_json_with_every_event(tmp_path):
    with profile() as prof:
        kael.matmul(kael.randn(4, 4), kael.randn(4, 4))
    for name in ("trace.json", "trace.json.gz"):
        prof.export_chrome_trace(str(tmp_path / name))
    records = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    assert [r["name"] for r in records] == _names(prof)
    assert all(r["ph"] == "X" and r["dur"] >= 0 for r in records)


@pytest.mark.parametrize(
    "args",
    [
        {"wait": 1, "warmup": 1, "active": 2},
        {"wait": 0, "warmup": 0, "active": 1, "repeat": 2},
        {"wait": 2, "warmup": 1, "active": 3, "repeat": 1, "skip_first": 3},
    ],
)
def test_schedule_matches_torch_step_for_step(args):
    ours, theirs = schedule(**args), torch.profiler.schedule(**args)
    assert [ours(s).name for s in range(20)] == [theirs(s).name for s in range(20)]


def test_schedule_refuses_invalid_arguments():
    with pytest.raises(kael.ValueError, match="Invalid profiler schedule arguments"):
        schedule(wait=0, warmup=0, active=0)


def test_on_trace_ready_gets_each_active_cycle():
    traces = []
    plan = schedule(wait=1, warmup=1, active=2, repeat=2)
    with profile(schedule=plan, on_trace_ready=lambda p: traces.append(_names(p))) as prof:
        for step in range(10):
            with record_function(f"step{step}"):
                kael.relu(kael.ones(2))
            prof.step()
    assert [[n for n in t if n.startswith("step")] for t in traces] == [
        ["step2", "step3"],
        ["step6", "step7"],
    ]
    assert plan(3) is ProfilerAction.RECORD_AND_SAVE


def test_tensorboard_trace_handler_writes_a_trace_per_cycle(tmp_path):
    handler = kael.profiler.tensorboard_trace_handler(str(tmp_path), worker_name="w")
    with profile(
        schedule=schedule(wait=0, warmup=0, active=1, repeat=2), on_trace_ready=handler
    ) as prof:
        for _ in range(3):
            kael.exp(kael.ones(2))
            prof.step()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 2 and all(
        f.startswith("w.") and f.endswith(".pt.trace.json") for f in files
    )


def test_ops_of_other_threads_are_recorded_safely():
    def work():
        for _ in range(20):
            kael.exp(kael.ones(16))

    with profile() as prof:
        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sum(1 for e in prof.events() if e.name == "exp") == 60


def test_a_second_profile_cannot_record_at_the_same_time():
    with profile(), pytest.raises(kael.ValueError, match="already recording"):
        profile().start()


def _torch_op_names(prof) -> list[str]:
    return [e.name.removeprefix("aten::") for e in prof.events()]


@pytest.mark.parametrize("again", ["start", "with"])
def test_starting_a_recording_profile_again_restarts_it_as_torch(again):
    from kael.runtime import launches

    before = launches.recorder
    recorded = {}
    for lib, prof in ((kael, profile()), (torch, torch.profiler.profile())):
        prof.start()
        lib.sin(lib.ones(4))
        if again == "start":
            prof.start()
            lib.exp(lib.ones(4))
            prof.stop()
        else:
            with prof:
                lib.exp(lib.ones(4))
        recorded[lib] = _torch_op_names(prof) if lib is torch else _names(prof)
    assert "exp" in recorded[torch] and "sin" not in recorded[torch]
    assert "exp" in recorded[kael] and "sin" not in recorded[kael]
    assert launches.recorder is before  # the profile's kernel sink is gone after stop
    count = len(recorded[kael])
    kael.exp(kael.ones(4))
    with profile() as other:  # and another profile may record now
        kael.exp(kael.ones(4))
    assert "exp" in _names(other) and count == len(recorded[kael])


def test_an_open_range_counts_as_running_until_now():
    with profile() as prof, record_function("open"):
        kael.exp(kael.ones(4))
        event = prof.events()[0]
        first = event.cpu_time_total
        assert event.name == "open" and event.end_us is None and first >= 0
        assert event.self_cpu_time_total >= 0
        kael.exp(kael.ones(4))
        assert event.cpu_time_total >= first
        assert "-" not in prof.key_averages().table().split("open", 1)[1].splitlines()[0]
    assert event.end_us is not None and event.cpu_time_total == event.end_us - event.start_us


def test_a_trace_saved_inside_an_open_range_has_no_negative_time(tmp_path):
    durations = []

    def ready(prof):
        prof.export_chrome_trace(str(tmp_path / "trace.json"))
        records = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
        durations.extend(r["dur"] for r in records if r["name"] == "loop")

    plan = schedule(wait=0, warmup=0, active=1, repeat=1)
    with profile(schedule=plan, on_trace_ready=ready) as prof, record_function("loop"):
        kael.exp(kael.ones(4))
        prof.step()  # the trace ends while "loop" is open
    assert len(durations) == 1 and durations[0] >= 0


def _child_profiles(parent: profile, queue) -> None:
    """In a child forked mid-profile: its own profile opens, and its ops do not land in
    its copy of the parent's."""
    x = kael.ones(4)
    before = len(parent._events)
    with profile() as own:
        x + 1
    for _ in range(20):
        x * 2
    queue.put((len(own.events()) > 0, len(parent._events) - before))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_child_forked_while_profiling_records_nothing_into_the_parents_profile():
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    with profile() as parent:
        kael.ones(3) + 1
        child = context.Process(target=_child_profiles, args=(parent, queue))
        child.start()
        own_recorded, grown = queue.get(timeout=60)
        child.join(60)
    assert child.exitcode == 0 and own_recorded and grown == 0
    assert "add" in [e.name for e in parent.events()]


def test_two_profiles_starting_at_once_never_both_record():
    """One of two profiles opened at once raises; the one that records keeps its events
    even when the other closes first."""
    barrier, outcomes = threading.Barrier(2), []

    def run():
        p = profile()
        barrier.wait()
        try:
            with p:
                (kael.ones(8, 8) @ kael.ones(8, 8)).relu()
            outcomes.append(len(p.events()))
        except kael.ValueError as error:
            outcomes.append(str(error))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    recorded = [o for o in outcomes if isinstance(o, int)]
    assert recorded and all(n > 0 for n in recorded)
    assert all("already recording" in o for o in outcomes if isinstance(o, str))
