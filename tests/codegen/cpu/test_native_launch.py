"""The native launch builtins (kael/codegen/cpu/native_launch.py): the same kernel call as
ctypes, argument errors raised as Python errors, the GIL released for long launches."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import kael
from kael.codegen.cpu import native_launch
from kael.frontend import eager
from kael.runtime import launcher


def _add_launch():
    """(fn, template words, positions) of the dense float64 add kernel: out, a, b, then n."""
    template = eager.template(
        ("test-native", "add"),
        lambda: _add_graph(),
    )
    probe = [kael.empty(64, dtype=kael.float64)._impl for _ in range(3)]
    plan = eager._plan(template, probe[0], tuple(probe))
    words = [0, 0, 0, *plan.tail]
    return plan.compiled.fn, words, (0, 1, 2, 3)


def _add_graph():
    from kael.ir import graph as g
    from kael.runtime.dtypes import float64

    x, y = g.Input(float64, (), "x0"), g.Input(float64, (), "x1")
    return "add", [g.Binary(float64, (), "add", x, y)]


def _operands(n):
    a = kael.tensor(np.arange(n, dtype=np.float64))
    b = kael.tensor(np.full(n, 0.5))
    return a, b, kael.zeros(n, dtype=kael.float64)


def _ptr(t) -> int:
    return t._impl.storage.ptr


def _described(launch: str):
    """(the launch to test, a Descriptor of the add kernel) for "native" or "python"."""
    fn, words, positions = _add_launch()
    d = native_launch.describe(fn, words, positions, 24)
    return (native_launch.launcher() if launch == "native" else native_launch.python_launch), d


@pytest.mark.parametrize("launch", ["native", "python"])
def test_a_described_launch_runs_the_kernel_over_its_words(launch):
    call, d = _described(launch)
    a, b, out = _operands(100)
    call(d.address, 100, _ptr(out), _ptr(a), _ptr(b), 100)
    np.testing.assert_array_equal(out.numpy(), np.arange(100) + 0.5)
    out.zero_()
    call(d.address, 0, _ptr(out), _ptr(a), _ptr(b), 100)  # no work items: no call
    assert not out.numpy().any()
    call(d.address, 40, _ptr(out), _ptr(a), _ptr(b), 100)  # the first 40 items only
    assert out.numpy()[:40].tolist() == (np.arange(40) + 0.5).tolist()
    assert not out.numpy()[40:].any()


def test_the_builtin_is_built_where_the_c_api_is_present():
    assert native_launch._api_present()
    assert native_launch.native() is not None
    assert type(native_launch.launcher()).__name__ == "builtin_function_or_method"


@pytest.mark.parametrize("launch", ["native", "python"])
def test_wrong_arguments_raise_python_errors(launch):
    call, d = _described(launch)
    a, b, out = _operands(8)
    with pytest.raises(TypeError, match="another word count"):
        call(d.address, 8, _ptr(out), _ptr(a))
    with pytest.raises(TypeError, match="another word count"):
        call(d.address, 8, _ptr(out), _ptr(a), _ptr(b), 8, 0)
    with pytest.raises(TypeError):
        call(d.address, "8", _ptr(out), _ptr(a), _ptr(b), 8)
    with pytest.raises(OverflowError):
        call(d.address, 8, _ptr(out), _ptr(a), _ptr(b), 2**64)
    if launch == "native":
        with pytest.raises(TypeError, match="another word count"):
            call(d.address)
    assert not out.numpy().any()  # nothing ran


def test_descriptors_refuse_blocks_they_cannot_hold():
    fn, words, _ = _add_launch()
    assert native_launch.describe(fn, [0] * (native_launch.MAX_WORDS + 1), (0,), 8) is None
    with pytest.raises(ValueError):
        native_launch.Descriptor(1, words, (len(words),), 1)


def test_the_direct_call_is_installed_and_runs_kernels():
    direct = launcher._direct
    assert direct is not None
    fn, words, _ = _add_launch()
    a, b, out = _operands(16)
    block = np.array([_ptr(out), _ptr(a), _ptr(b), 16, *words[4:]], dtype=np.int64)
    direct(fn.address, block.ctypes.data, 16, False)
    np.testing.assert_array_equal(out.numpy(), np.arange(16) + 0.5)
    with pytest.raises(TypeError, match="another word count"):
        direct(fn.address, block.ctypes.data, 16)


def test_a_long_launch_lets_other_threads_run():
    # the GIL is released from RELEASE_BYTES moved: a thread counting meanwhile advances
    n = 1 << 24
    a = kael.ones(n, dtype=kael.float64)
    out = kael.empty(n, dtype=kael.float64)
    fn, d = _described("native")
    assert n >= d.release_items
    counted = []
    for _ in range(5):
        stop = threading.Event()
        ticks = [0]

        def count(stop=stop, ticks=ticks):
            while not stop.is_set():
                ticks[0] += 1

        t = threading.Thread(target=count)
        t.start()
        time.sleep(0.01)
        before = ticks[0]
        for _ in range(4):
            fn(d.address, n, _ptr(out), _ptr(a), _ptr(a), n)
        counted.append(ticks[0] - before)
        stop.set()
        t.join()
        if counted[-1] > 0:
            break
    assert counted[-1] > 0, counted
    assert out.numpy()[-1] == 2.0


def test_kael_runs_through_ctypes_when_the_builtin_is_switched_off():
    code = (
        "import kael, numpy as np\n"
        "from kael.codegen.cpu import native_launch\n"
        "from kael.runtime import launcher\n"
        "assert native_launch.native() is None and launcher._direct is None\n"
        "a = kael.arange(10.0)\n"
        "for _ in range(2):\n"
        "    assert (a + a).tolist() == [2.0 * i for i in range(10)]\n"
        "    assert (a.reshape(2, 5) + a[:5]).sum().item() == 65.0\n"
    )
    env = dict(os.environ, KAEL_NATIVE_LAUNCH="0")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
