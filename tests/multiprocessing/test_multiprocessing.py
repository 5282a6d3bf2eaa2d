"""kael.multiprocessing against torch.multiprocessing: the re-exported names, spawn and
start_processes (fn(i, *args) per child, join, failures raised in the parent), sharing
strategies, and kael tensors through queues (by value) and share_memory_ (shared by fork)."""

import importlib
import multiprocessing
import os
import pickle
import signal
import sys
import tempfile

import numpy as np
import pytest
import torch
import torch.multiprocessing as tmp

import kael
import kael.multiprocessing as mp

FORK = "fork"  # the children below need no fresh interpreter: fork starts them fast

# Set in the parent before spawn; a spawned child imports this module afresh and sees "import".
_WHO_SET_THE_MARK = "import"


def _put_spawn_report(i, queue, scale):
    """Child: report the index, the argument, a kael result and what a fresh import sees."""
    queue.put((i, scale, kael.full((2,), float(i)) * scale, _WHO_SET_THE_MARK))


def _write_index(i, shared):
    shared[i] = i + 1


def _wait_for(i, event):
    event.wait()


def _raise_at_one(i, event):
    if i == 1:
        raise ValueError(f"boom {i}")
    event.wait()  # never set: stopped by the parent once child 1 fails


def _exit_with_three(i):
    os._exit(3)


def _kill_self(i):
    os.kill(os.getpid(), signal.SIGKILL)


def _echo(i, inbox, outbox):
    outbox.put(inbox.get())


def _overwrite(i, inbox, done):
    inbox.get().fill_(-1)
    done.put(True)


def _failure(lib, fn, args=(), nprocs=1):
    """The exception `lib`'s start_processes (fork) raises for fn."""
    with pytest.raises(Exception) as info:
        lib.start_processes(fn, args, nprocs=nprocs, start_method=FORK)
    return info.value


# -- the namespace


def test_all_holds_torch_multiprocessing_all():
    assert set(tmp.__all__) <= set(mp.__all__)
    assert all(hasattr(mp, name) for name in mp.__all__)


@pytest.mark.parametrize("name", ["Process", "Pipe", "Pool", "get_context", "cpu_count", "Lock"])
def test_multiprocessing_names_are_pythons_own(name):
    assert getattr(mp, name) == getattr(multiprocessing, name) == getattr(tmp, name)


# -- spawn and start_processes


def test_spawn_runs_fn_with_index_and_args_in_fresh_interpreters(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "_WHO_SET_THE_MARK", "parent")
    queue = multiprocessing.get_context("spawn").SimpleQueue()
    assert mp.spawn(_put_spawn_report, args=(queue, 3.0), nprocs=2) is None
    reports = sorted((queue.get() for _ in range(2)), key=lambda r: r[0])
    for i, (index, scale, result, mark) in enumerate(reports):
        assert (index, scale, mark) == (i, 3.0, "import")
        np.testing.assert_array_equal(result.numpy(), torch.full((2,), float(i) * 3.0).numpy())


def test_spawn_warns_on_another_start_method_and_spawns(monkeypatch):
    calls = []
    module = importlib.import_module("kael.multiprocessing.spawn")
    monkeypatch.setattr(module, "start_processes", lambda *a, **k: calls.append((a, k)))
    with pytest.warns(FutureWarning, match=r"only supports start_method=spawn \(got: fork\)"):
        mp.spawn(_write_index, (None,), 2, start_method=FORK)
    assert calls == [((_write_index, (None,), 2, True, False), {"start_method": "spawn"})]


def test_fork_children_write_into_shared_tensor_as_torchs():
    shared = kael.zeros(4, dtype=kael.float32).share_memory_()
    reference = torch.zeros(4).share_memory_()
    assert shared.is_shared() and reference.is_shared()
    assert mp.start_processes(_write_index, (shared,), nprocs=4, start_method=FORK) is None
    tmp.start_processes(_write_index, (reference,), nprocs=4, start_method=FORK)
    np.testing.assert_array_equal(shared.numpy(), reference.numpy())
    assert shared.dtype is kael.float32 and shared.shape == reference.shape


def test_join_false_gives_a_context_joined_once_all_exit():
    event = multiprocessing.get_context(FORK).Event()
    context = mp.start_processes(_wait_for, (event,), nprocs=2, join=False, start_method=FORK)
    assert isinstance(context, mp.ProcessContext) and len(context.processes) == 2
    assert context.pids() == [p.pid for p in context.processes]
    assert context.join(timeout=0.05) is False  # both still wait
    event.set()
    while not context.join(timeout=10):
        pass
    assert [p.exitcode for p in context.processes] == [0, 0]
    assert context.join() is True  # joining a finished context again


def test_raising_child_gives_process_raised_exception_with_its_traceback(monkeypatch, tmp_path):
    event = multiprocessing.get_context(FORK).Event()
    context = mp.start_processes(_raise_at_one, (event,), nprocs=2, join=False, start_method=FORK)
    with pytest.raises(kael.Error) as info:
        while not context.join():
            pass
    error = info.value
    assert isinstance(error, mp.ProcessRaisedException)
    assert (error.error_index, error.error_pid) == (1, context.processes[1].pid)
    assert "Traceback (most recent call last)" in error.msg and "_raise_at_one" in error.msg
    assert context.processes[0].exitcode == -signal.SIGTERM  # the other child was stopped
    assert not any(os.path.exists(path) for path in context.error_files)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # torch leaves its error file
    want = _failure(tmp, _raise_at_one, (event,), nprocs=2)
    header = "\n\n-- Process 1 terminated with the following error:\nTraceback"
    assert str(error).startswith(header) and str(want).startswith(header)
    assert str(error).endswith("ValueError: boom 1\n") and str(want).endswith(
        "ValueError: boom 1\n"
    )


@pytest.mark.parametrize(
    ("fn", "message", "exit_code", "signal_name"),
    [
        (_exit_with_three, "process 0 terminated with exit code 3", 3, None),
        (_kill_self, "process 0 terminated with signal SIGKILL", -signal.SIGKILL, "SIGKILL"),
    ],
)
def test_child_exit_gives_process_exited_exception_as_torchs(fn, message, exit_code, signal_name):
    got, want = _failure(mp, fn), _failure(tmp, fn)
    assert isinstance(got, mp.ProcessExitedException) and isinstance(got, kael.Error)
    assert type(want).__name__ == type(got).__name__
    for error in (got, want):
        assert (str(error), error.error_index) == (message, 0)
        assert (error.exit_code, error.signal_name) == (exit_code, signal_name)


@pytest.mark.parametrize(
    "error",
    [
        mp.ProcessRaisedException("msg", 1, 123),
        mp.ProcessExitedException("msg", 2, 456, exit_code=-9, signal_name="SIGKILL"),
    ],
)
def test_process_exceptions_pickle_with_their_attributes(error):
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error) and vars(back) == vars(error)


def test_zero_processes_start_nothing_as_torchs():
    assert mp.start_processes(_write_index, (None,), nprocs=0, start_method=FORK) is None
    assert tmp.start_processes(_write_index, (None,), nprocs=0, start_method=FORK) is None


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"nprocs": -1}, kael.ValueError, "nprocs must be non-negative, got -1"),
        ({"nprocs": 2.0}, kael.TypeError, "nprocs must be an int, got float"),
        ({"nprocs": "2"}, kael.TypeError, "nprocs must be an int, got str"),
        ({"nprocs": True}, kael.TypeError, "nprocs must be an int, got bool"),
        ({"start_method": "bogus"}, kael.ValueError, "cannot find context for 'bogus'"),
        ({"fn": 3}, kael.TypeError, "fn must be callable, got int"),
    ],
)
def test_start_processes_rejects_bad_arguments(kwargs, error, match):
    call = {"fn": _write_index, "args": (None,), "start_method": FORK, **kwargs}
    with pytest.raises(error, match=match):
        mp.start_processes(**call)


# -- sharing strategies


@pytest.fixture
def restore_sharing_strategy():
    before = mp.get_sharing_strategy()
    yield
    mp.set_sharing_strategy(before)


def test_sharing_strategies_match_torchs():
    assert mp.get_all_sharing_strategies() == tmp.get_all_sharing_strategies()
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    assert mp.get_sharing_strategy() == tmp.get_sharing_strategy() == "file_descriptor"


@pytest.mark.parametrize("name", ["file_system", "file_descriptor"])
def test_set_sharing_strategy_selects_a_supported_one(name, restore_sharing_strategy):
    mp.set_sharing_strategy(name)
    assert mp.get_sharing_strategy() == name


def test_set_sharing_strategy_rejects_an_unknown_name(restore_sharing_strategy):
    with pytest.raises(kael.ValueError, match="invalid sharing strategy 'bogus'"):
        mp.set_sharing_strategy("bogus")
    with pytest.raises(AssertionError, match="invalid sharing strategy 'bogus'"):
        tmp.set_sharing_strategy("bogus")  # torch's type for it
    assert mp.get_sharing_strategy() == "file_descriptor"


# -- tensors through queues


@pytest.mark.parametrize(
    ("data", "dtype"),
    [
        (np.arange(6, dtype=np.float32).reshape(2, 3), kael.float32),
        (np.arange(-3, 9, dtype=np.int64).reshape(3, 2, 2), kael.int64),
        (np.array([True, False, True]), kael.bool),
        (np.float64(2.5), kael.float64),
    ],
)
def test_tensor_through_a_queue_arrives_equal(data, dtype):
    ctx = multiprocessing.get_context(FORK)
    inbox, outbox = ctx.Queue(), ctx.Queue()
    context = mp.start_processes(_echo, (inbox, outbox), join=False, start_method=FORK)
    inbox.put(kael.tensor(data))
    got = outbox.get(timeout=30)
    while not context.join():
        pass
    want = torch.tensor(data)
    assert got.dtype is dtype and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_queue_sends_a_view_as_its_elements():
    ctx = multiprocessing.get_context(FORK)
    inbox, outbox = ctx.Queue(), ctx.Queue()
    context = mp.start_processes(_echo, (inbox, outbox), join=False, start_method=FORK)
    inbox.put(kael.arange(12, dtype=kael.float32).reshape(3, 4).t()[1:])
    got = outbox.get(timeout=30)
    while not context.join():
        pass
    want = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()[1:]
    assert tuple(got.shape) == (3, 3) and got.is_contiguous()
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize(("lib", "shared"), [(kael, False), (torch, True)])
def test_queue_pickles_kael_tensors_by_value_where_torch_shares(lib, shared):
    ctx = multiprocessing.get_context(FORK)
    inbox, done = ctx.Queue(), ctx.Queue()
    sent = lib.zeros(3)
    context = mp.start_processes(_overwrite, (inbox, done), join=False, start_method=FORK)
    inbox.put(sent)
    assert done.get(timeout=30)
    while not context.join():
        pass
    want = [-1.0] * 3 if shared else [0.0] * 3  # torch's child wrote into the parent's storage
    assert sent.tolist() == want
