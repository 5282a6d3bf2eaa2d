import ctypes
import os
import threading

import pytest

from kael.runtime import launcher, threadpool
from kael.runtime.errors import ValueError as KaelValueError


@pytest.fixture
def restore_threads():
    saved = threadpool.get_num_threads()
    yield
    threadpool.set_num_threads(saved)


def test_default_thread_count_is_the_usable_cores():
    assert threadpool.get_num_threads() >= 1


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_set_num_threads_rejects_non_positive_ints(bad):
    with pytest.raises(KaelValueError, match="positive int"):
        threadpool.set_num_threads(bad)


@pytest.mark.parametrize("absurd", [threadpool.MAX_THREADS + 1, 2**63])
def test_set_num_threads_refuses_more_than_the_limit(absurd, restore_threads):
    threadpool.set_num_threads(threadpool.MAX_THREADS)  # the limit itself is allowed
    with pytest.raises(KaelValueError, match=f"at most {threadpool.MAX_THREADS}, got {absurd}"):
        threadpool.set_num_threads(absurd)
    assert threadpool.get_num_threads() == threadpool.MAX_THREADS


def test_set_num_threads_accepts_one_and_more(restore_threads):
    threadpool.set_num_threads(1)
    assert threadpool.get_num_threads() == 1
    threadpool.set_num_threads(3)
    assert threadpool.get_num_threads() == 3


def _recording_fn(calls, lock):
    def fn(args, begin, end):
        with lock:
            calls.append((begin, end, threading.get_ident()))

    return fn


def test_python_pool_runs_each_range_once_and_the_first_on_the_caller():
    calls, lock = [], threading.Lock()
    threadpool.python_pool().run(_recording_fn(calls, lock), 0, 25, 1, 3)
    ranges = [(0, 9), (9, 18), (18, 25)]
    assert threadpool.split(25, 3, 1) == ranges
    assert sorted((b, e) for b, e, _ in calls) == ranges
    assert [t for b, _, t in calls if b == 0] == [threading.get_ident()]


def test_python_pool_runs_every_range_when_the_system_refuses_threads(monkeypatch):
    pool = threadpool.ThreadPool()
    started = []

    def start(self):
        if len(started) == 1:
            raise RuntimeError("can't start new thread")
        started.append(self)
        real_start(self)

    real_start = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start", start)
    calls, lock = [], threading.Lock()
    pool.run(_recording_fn(calls, lock), 0, 35, 5, 4)  # ranges [0, 10), ..., [30, 35)
    assert sorted((b, e) for b, e, _ in calls) == [(0, 20), (20, 35)]  # caller + one worker
    assert len(started) == 1


def test_regroup_merges_consecutive_ranges_keeping_their_starts():
    ranges = [(0, 64), (64, 128), (128, 192), (192, 200)]
    assert threadpool.regroup(ranges, 2) == [(0, 128), (128, 200)]
    assert threadpool.regroup(ranges, 3) == [(0, 64), (64, 128), (128, 200)]
    assert threadpool.regroup(ranges, 1) == [(0, 200)]
    assert threadpool.regroup(ranges, 4) == ranges
    assert threadpool.regroup(ranges, 9) == ranges


def test_split_covers_the_range_without_overlap():
    for total in [1, 63, 64, 65, 1000, 12345]:
        for parts in [1, 2, 3, 7]:
            ranges = threadpool.split(total, parts)
            assert ranges[0][0] == 0 and ranges[-1][1] == total
            assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
            assert len(ranges) <= parts


def test_split_aligns_range_starts_when_large_enough():
    assert all(b % 64 == 0 for b, _ in threadpool.split(100000, 3))


def test_small_launches_run_inline(restore_threads):
    threadpool.set_num_threads(4)
    calls = []
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)(
        lambda a, b, e: calls.append((b, e, threading.get_ident()))
    )
    launcher.launch(fn, [0], 100, bytes_moved=400)
    assert calls == [(0, 100, threading.get_ident())]


def test_large_launches_are_split_into_ranges_covering_every_item_once(restore_threads):
    threadpool.set_num_threads(2)
    calls, lock = [], threading.Lock()
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)(
        _recording_fn(calls, lock)
    )
    total = 1 << 20
    launcher.launch(fn, [0], total, bytes_moved=launcher.PARALLEL_BYTES)
    ranges = sorted((b, e) for b, e, _ in calls)
    assert len(ranges) >= 2 and ranges[0][0] == 0 and ranges[-1][1] == total
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_forked_child_gets_a_fresh_pool(restore_threads):
    threadpool.set_num_threads(2)
    threadpool.python_pool().run(lambda a, b, e: None, 0, 2, 1, 2)
    pid = os.fork()
    if pid == 0:
        try:
            done = []
            threadpool.python_pool().run(lambda a, b, e: done.append(b), 0, 2, 1, 2)
            os._exit(0 if sorted(done) == [0, 1] else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
