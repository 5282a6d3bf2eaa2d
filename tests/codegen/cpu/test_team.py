"""Two work items sharing a loop's steps (kael/codegen/cpu/team.py): every step's shared
part is done exactly once, after the step is published and before the leader goes on,
whichever item leads, on one thread or two, and with the items run in either order."""

import array
import threading

import numpy as np
import pytest
from llvmlite import ir

import kael
from kael.codegen.cpu import dense, team
from kael.runtime.launcher import PARALLEL_BYTES, launch

WORDS = ("out", "part", "count", "sync", "jobs")
JOBS = 3000
I64 = ir.IntType(64)


def _steps(d: dense.Dense, item: ir.Value) -> None:
    """The leader: out[j] = j + part[j] for j = 1..jobs, part[j] = out[j - 1] + 1 shared
    (so a part done before the previous step ended, or not at all, shows); count[j]
    counts who did part j: 1 the leader, 1000 the helper."""
    b = d.b
    out, part, count = d.ptr("out"), d.ptr("part"), d.ptr("count", I64)
    t = team.Team(d, d.ptr("sync", I64))

    def shared(job: ir.Value, by: int) -> None:
        previous = d.get(out, b.sub(job, d.i(1)))
        d.put(part, job, d.add(previous, d.f(1.0)))
        b.atomic_rmw("add", b.gep(count, [job]), d.i(by), "monotonic")

    with d.either(t.leads()) as (leader, helper):
        with leader:
            with d.loop(1, b.add(d.w["jobs"], d.i(1))) as job:
                t.share(job, lambda: d.put(out, job, b.sitofp(job, d.t)), lambda: shared(job, 1))
                d.put(out, job, d.add(d.get(out, job), d.get(part, job)))
            t.end()
        with helper:
            t.serve(lambda job: shared(job, 1000))


def _kernel():
    name = "kael_test_team_steps"
    return dense.kernel(
        name, lambda m: dense.per_matrix(m, name, kael.float64, WORDS, _steps), name
    )


def _buffers():
    out, part = np.zeros(JOBS + 1), np.zeros(JOBS + 1)
    count, sync = np.zeros(JOBS + 1, np.int64), np.zeros(team.SIZE, np.int64)
    arrays = (out, part, count, sync)  # kept alive by the caller while the kernel runs
    return arrays, [x.ctypes.data for x in arrays] + [JOBS]


def _check(arrays) -> None:
    out, _, count, _ = arrays
    j = np.arange(JOBS + 1, dtype=np.float64)
    np.testing.assert_array_equal(out, j * (j + 1) / 2 + j)  # out[j] = j + out[j-1] + 1
    assert set(count[1:].tolist()) <= {1, 1000}  # every part done once, by one of the two


@pytest.mark.parametrize("threads", [1, 2])
def test_every_shared_part_runs_once_in_order(threads):
    arrays, words = _buffers()
    saved = kael.get_num_threads()
    kael.set_num_threads(threads)
    try:
        launch(_kernel(), words, 2, PARALLEL_BYTES, 1)
    finally:
        kael.set_num_threads(saved)
    _check(arrays)
    if threads == 1:  # the second item starts after the first has ended: nothing to help
        assert (arrays[2][1:] == 1).all()


def test_the_item_that_starts_first_leads_whatever_its_index():
    """Item 1 run to its end first leads and does every step; item 0 then finds the end."""
    arrays, words = _buffers()
    fn, block = _kernel(), array.array("q", words)
    fn(block.buffer_info()[0], 1, 2)
    fn(block.buffer_info()[0], 0, 1)
    _check(arrays)
    assert (arrays[2][1:] == 1).all()


def test_two_threads_started_in_either_order_share_the_steps():
    for first in (0, 1):
        arrays, words = _buffers()
        fn, block = _kernel(), array.array("q", words)
        other = threading.Thread(target=fn, args=(block.buffer_info()[0], first, first + 1))
        other.start()
        fn(block.buffer_info()[0], 1 - first, 2 - first)
        other.join(timeout=60)
        assert not other.is_alive()
        _check(arrays)
