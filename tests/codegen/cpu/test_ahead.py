"""Compiling a plan's new kernels in forked processes (codegen/cpu/ahead.py): a new
process with an empty cache gets the children's kernels from the disk, the same values,
and none of it with KAEL_PARALLEL_COMPILE=0 or 1."""

from __future__ import annotations

import os
import subprocess
import sys

# A fresh process traces softmax from primitives (a row group of four new kernels) and
# prints the children it forked, the kernels it then loaded from the disk, and whether
# the result equals eager's.
SCRIPT = """
import kael
from kael.codegen.cpu import ahead
from kael.runtime import kernel_cache
forks = []
real = ahead._fork_compiling
ahead._fork_compiling = lambda share: forks.append(len(share)) or real(share)

def f(x):
    e = (x - x.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)

x = kael.randn(64, 300)
got = kael.compile(f)(x)
same = kael.equal(got, f(x))
print(len(forks), kernel_cache.stats["disk_hits"] > 0, same)
"""


def _fresh_process(cache_dir, **env) -> list[str]:
    env = dict(os.environ, KAEL_CACHE_DIR=str(cache_dir), **env)
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_children_compile_into_the_cache_this_process_loads(tmp_path):
    assert _fresh_process(tmp_path, KAEL_PARALLEL_COMPILE="2") == ["1", "True", "True"]


def test_parallel_compile_can_be_turned_off(tmp_path):
    assert _fresh_process(tmp_path, KAEL_PARALLEL_COMPILE="0") == ["0", "False", "True"]
    assert _fresh_process(tmp_path / "b", KAEL_PARALLEL_COMPILE="1") == ["0", "False", "True"]


def test_a_warm_cache_forks_nothing(tmp_path):
    _fresh_process(tmp_path, KAEL_PARALLEL_COMPILE="2")
    forks, _, same = _fresh_process(tmp_path, KAEL_PARALLEL_COMPILE="2")
    assert forks == "0" and same == "True"


# A child stuck in its compile (a sleep where LLVM would run) is killed at the deadline, by
# its own alarm even where the process had a Python SIGALRM handler, and this process
# compiles that share itself.
HANGING = """
import os, signal, time
import kael
from kael.codegen.cpu import ahead, compiler

signal.signal(signal.SIGALRM, lambda *a: None)
ahead.CHILD_SECONDS = 1
parent = os.getpid()

def stuck_in_children(compile_object):
    def compile_or_hang(*args, **kwargs):
        if os.getpid() != parent:
            time.sleep(60)
        return compile_object(*args, **kwargs)
    return compile_or_hang

compiler.emit_object = stuck_in_children(compiler.emit_object)  # children compile optimized

def f(x):
    e = (x - x.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)

x = kael.randn(64, 300)
start = time.monotonic()
same = kael.equal(kael.compile(f)(x), f(x))
print(same, time.monotonic() - start < 30)
"""


def test_a_stuck_child_is_killed_and_its_share_compiled_here(tmp_path):
    env = dict(os.environ, KAEL_CACHE_DIR=str(tmp_path), KAEL_PARALLEL_COMPILE="2")
    out = subprocess.run(
        [sys.executable, "-c", HANGING], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"]
