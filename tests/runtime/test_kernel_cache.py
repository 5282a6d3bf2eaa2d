"""The disk half of the kernel cache: atomic, checksummed, shared across processes."""

import json
from pathlib import Path

import pytest
from kernel_helpers import run_python

from kael.runtime import kernel_cache


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KAEL_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_cache_dir_follows_the_environment(cache_dir):
    assert kernel_cache.cache_dir() == cache_dir


def test_default_cache_dir_is_under_home(monkeypatch):
    monkeypatch.delenv("KAEL_CACHE_DIR", raising=False)
    assert kernel_cache.cache_dir() == Path.home() / ".cache" / "kael"


def test_stored_payload_round_trips(cache_dir):
    kernel_cache.store("cpu", "ab" * 32, b"object code")
    assert kernel_cache.load("cpu", "ab" * 32) == b"object code"


def test_missing_entry_reads_as_none(cache_dir):
    assert kernel_cache.load("cpu", "cd" * 32) is None


def test_write_leaves_no_temporary_files(cache_dir):
    kernel_cache.store("cpu", "ef" * 32, b"x" * 1000)
    names = [p.name for p in cache_dir.rglob("*") if p.is_file()]
    assert names == ["ef" * 32 + ".bin"]


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[:-1],
        lambda b: b[:10],
        lambda b: b[:-1] + bytes([b[-1] ^ 1]),
        lambda b: b"junk" + b[4:],
    ],
    ids=["truncated_by_one", "truncated_to_header", "flipped_bit", "bad_magic"],
)
def test_corrupt_entry_reads_as_missing(cache_dir, damage):
    key = "12" * 32
    kernel_cache.store("cpu", key, b"payload bytes")
    path = next(cache_dir.rglob("*.bin"))
    path.write_bytes(damage(path.read_bytes()))
    assert kernel_cache.load("cpu", key) is None


def test_unwritable_cache_dir_only_loses_the_entry(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("KAEL_CACHE_DIR", str(blocker))
    kernel_cache.store("cpu", "34" * 32, b"x")
    assert kernel_cache.load("cpu", "34" * 32) is None


def test_keys_differ_when_any_part_differs():
    assert kernel_cache.key_of("a", "b") != kernel_cache.key_of("a", "c")
    assert kernel_cache.key_of("ab", "c") != kernel_cache.key_of("a", "bc")


_SCRIPT = """
import json
import numpy as np
from kernel_helpers import empty_like_np, impl_of
from kael.frontend import eager
from kael.runtime import kernel_cache
src = np.arange(100, dtype=np.float32).reshape(10, 10)
out, dst = empty_like_np((10, 10), np.int64)
eager.copy_into(dst, impl_of(src.T))
assert out.tolist() == src.T.astype(np.int64).tolist()
print(json.dumps(kernel_cache.stats))
"""


def _run_process(cache_dir) -> dict:
    out = run_python(_SCRIPT, KAEL_CACHE_DIR=str(cache_dir)).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_second_process_runs_a_seen_kernel_without_llvm(cache_dir):
    first = _run_process(cache_dir)
    assert first["compiled"] >= 1
    second = _run_process(cache_dir)
    assert second["compiled"] == 0
    assert second["disk_hits"] == first["compiled"]


def test_corrupt_entry_is_recompiled_not_trusted(cache_dir):
    _run_process(cache_dir)
    for path in cache_dir.rglob("*.bin"):
        path.write_bytes(path.read_bytes()[:-7])
    again = _run_process(cache_dir)
    assert again["corrupt"] >= 1 and again["compiled"] >= 1
    assert _run_process(cache_dir)["compiled"] == 0
