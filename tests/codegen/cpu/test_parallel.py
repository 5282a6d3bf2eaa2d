"""The compiled thread pool: installed, correct for any thread count, fork- and thread-safe."""

import ctypes
import os
import platform
import threading

import numpy as np
import pytest
from kernel_helpers import empty_like_np, impl_of, run_python

from kael.codegen.cpu import parallel
from kael.frontend import eager
from kael.runtime import launcher, threadpool

SUPPORTED = platform.system() == "Linux" and platform.machine() in ("x86_64", "aarch64")
needs_native = pytest.mark.skipif(not SUPPORTED, reason="the compiled pool needs Linux futexes")


@pytest.fixture
def threads():
    saved = threadpool.get_num_threads()
    yield threadpool.set_num_threads
    threadpool.set_num_threads(saved)


def _big_copy() -> tuple[np.ndarray, np.ndarray]:
    n = launcher.PARALLEL_BYTES  # float64 in and out: well past the parallel threshold
    src = np.arange(n, dtype=np.float64)
    out, dst = empty_like_np((n,), np.float64)
    eager.copy_into(dst, impl_of(src))
    return out, src


@needs_native
def test_the_compiled_pool_is_installed():
    assert isinstance(threadpool.pool(), parallel.NativePool)


@needs_native
@pytest.mark.parametrize("n", [1, 2, 3, 8])
def test_any_thread_count_gives_the_same_bytes(threads, n):
    threads(n)
    out, src = _big_copy()
    np.testing.assert_array_equal(out, src)


@needs_native
def test_back_to_back_launches_never_lose_a_range(threads):
    threads(2)
    for k in range(50):
        out, dst = empty_like_np((1 << 18,), np.float64)
        eager.fill(dst, float(k))
        assert (out == k).all(), k


@needs_native
def test_concurrent_python_threads_launch_safely(threads):
    threads(2)
    errors = []

    def work():
        try:
            for _ in range(5):
                out, src = _big_copy()
                np.testing.assert_array_equal(out, src)
        except AssertionError as exc:
            errors.append(exc)

    workers = [threading.Thread(target=work) for _ in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert not errors and not any(w.is_alive() for w in workers)


@needs_native
def test_forked_child_starts_its_own_workers(threads):
    threads(2)
    _big_copy()  # the parent's workers exist now
    pid = os.fork()
    if pid == 0:
        try:
            out, src = _big_copy()
            os._exit(0 if np.array_equal(out, src) else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


@needs_native
def test_workers_started_later_never_rerun_an_old_job(threads):
    # New workers once took the last published job for a new one and hung the caller.
    for k in range(60):
        threads(1 + k % 9)
        out, src = _big_copy()
        assert np.array_equal(out, src), k


@needs_native
def test_pool_runs_with_the_threads_the_system_lets_start():
    # Under an address-space limit most of 400 worker stacks cannot be mapped: the pool once
    # counted the failed pthread_create as a worker and waited for it forever.
    res = run_python(
        """
import resource
import numpy as np
import kael
x = kael.ones(1 << 22, dtype=kael.float64)
float(x.sum())  # kernels compiled, memory in place, before the limit
with open("/proc/self/status") as f:
    vm = next(int(line.split()[1]) for line in f if line.startswith("VmSize")) * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + (256 << 20), resource.RLIM_INFINITY))
kael.set_num_threads(400)
print("sum", float((x * 3.0).sum()), float(kael.cumsum(x, 0)[-1]))
"""
    )
    assert f"sum {3.0 * (1 << 22)} {float(1 << 22)}" in res.stdout


def _kernel(calls, lock, before=None):
    """A launchable callback recording (begin, end, thread); `before(begin)` runs first."""

    def fn(args, begin, end):
        if before is not None:
            before(begin)
        with lock:
            calls.append((begin, end, threading.get_ident()))

    return ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)(fn)


@needs_native
def test_a_launch_runs_each_of_its_ranges_once(threads):
    threads(2)
    calls, lock = [], threading.Lock()
    total = 1 << 20
    launcher.launch(_kernel(calls, lock), [0], total, bytes_moved=launcher.PARALLEL_BYTES)
    want = threadpool.split(total, 2 * parallel.RANGES_PER_THREAD)
    assert len(want) == 2 * parallel.RANGES_PER_THREAD
    assert sorted((b, e) for b, e, _ in calls) == want


@needs_native
def test_workers_run_ranges_of_a_launch(threads):
    # the caller's ranges wait until a worker has run one (a worker may run them all)
    threads(2)
    calls, lock, worked = [], threading.Lock(), threading.Event()

    def before(begin):
        if threading.get_ident() != caller:
            worked.set()
        else:
            worked.wait(timeout=10)

    caller = threading.get_ident()
    launcher.launch(_kernel(calls, lock, before), [0], 1 << 20, bytes_moved=1 << 20)
    assert worked.is_set()
    assert any(t != caller for _, _, t in calls)


@needs_native
def test_the_caller_takes_the_ranges_of_a_late_worker(threads):
    # a worker stuck in its first range until the caller runs a range of the worker's share
    threads(2)
    calls, lock, stolen = [], threading.Lock(), threading.Event()
    total = 1 << 20

    def before(begin):
        if threading.get_ident() != caller:
            stolen.wait(timeout=10)
        elif begin >= total // 2:
            stolen.set()

    caller = threading.get_ident()
    launcher.launch(_kernel(calls, lock, before), [0], total, bytes_moved=1 << 20)
    assert stolen.is_set()
    assert any(b >= total // 2 for b, _, t in calls if t == caller)  # the worker's share
    assert sorted((b, e) for b, e, _ in calls) == threadpool.split(
        total, 2 * parallel.RANGES_PER_THREAD
    )
