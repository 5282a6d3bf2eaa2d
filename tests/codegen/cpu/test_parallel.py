"""The compiled thread pool: installed, correct for any thread count, fork- and thread-safe."""

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
