"""Hand-written kernel libraries (codegen/cpu/handwritten.py): compiled once, loaded from
the disk cache by a new process without building the module, rebuilt from a corrupt entry."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from kael.codegen.cpu import handwritten

# A new process: compile one library, run its kernel, print the kernel's result and how
# many times the module was built (then, with "text", after the LLVM text was asked for).
SCRIPT = """
import array, sys
from kael.codegen.cpu import handwritten
from kael.codegen.lowering import i64
calls = []

def build(module):
    calls.append(1)
    fn, b = handwritten.kernel_function(module, "kael_test_store_seven")
    b.store(i64(7), b.inttoptr(b.load(fn.args[0]), handwritten.I64.as_pointer()))
    b.ret_void()
    return ["kael_test_store_seven"]

lib = handwritten.compiled("kael_test_library", build)
target = array.array("q", [0])
words = array.array("q", [target.buffer_info()[0]])
lib["kael_test_store_seven"](words.buffer_info()[0], 0, 1)
built = len(calls)
text = 'define void @"kael_test_store_seven"' in lib.text
print(target[0], built, len(calls), text)
"""


def _new_process(cache_dir) -> list[str]:
    env = dict(os.environ, KAEL_CACHE_DIR=str(cache_dir))
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_a_new_process_loads_the_library_without_building_it(tmp_path):
    assert _new_process(tmp_path) == ["7", "1", "1", "True"]  # built and compiled
    # from the disk: not built, until the LLVM text is asked for
    assert _new_process(tmp_path) == ["7", "0", "1", "True"]


def test_corrupt_library_entry_is_rebuilt(tmp_path):
    _new_process(tmp_path)
    [entry] = (tmp_path / handwritten.LIBRARY_KIND).rglob("*.bin")
    data = bytearray(entry.read_bytes())
    data[-1] ^= 0xFF
    entry.write_bytes(bytes(data))
    assert _new_process(tmp_path) == ["7", "1", "1", "True"]
    assert _new_process(tmp_path) == ["7", "0", "1", "True"]  # the rebuilt entry is good


def test_a_library_kael_vectorized_gets_the_short_pass_list():
    from kael.codegen.cpu import compiler, rows
    from kael.runtime.dtypes import float32

    lib = rows.library("softmax", float32)
    assert lib.optimization() == compiler.KERNEL_PASSES
    assert "vfmadd" in lib.assembly() or "vmul" in lib.assembly()


def test_a_scalar_library_keeps_o3_for_its_loop_vectorizer():
    from kael.codegen.cpu import gather
    from kael.runtime.dtypes import float32

    lib = gather._library("nonzero", float32)
    assert re.search(r"<\d+ x ", lib.text) is None  # no vector code of kael's own
    assert lib.optimization() is None


def test_the_row_driver_asks_for_the_short_pass_list():
    from kael.codegen.cpu import compiler, rowdriver

    assert rowdriver.driver().library.optimization() == compiler.KERNEL_PASSES
