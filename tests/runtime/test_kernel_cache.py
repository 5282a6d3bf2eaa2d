"""The disk half of the kernel cache: atomic, checksummed, shared across processes."""

import json
import os
import threading
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
import os
import threading
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


def _load_in_thread(kind: str, key: str):
    """load() on a daemon thread: (finished within 5 s, its result)."""
    result = []
    t = threading.Thread(target=lambda: result.append(kernel_cache.load(kind, key)), daemon=True)
    t.start()
    t.join(5)
    return not t.is_alive(), result[0] if result else "still blocked"


@pytest.mark.parametrize("kind_of_file", ["fifo", "device", "directory"])
def test_entry_that_is_not_a_regular_file_reads_as_missing_without_blocking(
    cache_dir, kind_of_file
):
    key = "56" * 32
    kernel_cache.store("cpu", key, b"payload")
    path = next(cache_dir.rglob("*.bin"))
    path.unlink()
    if kind_of_file == "fifo":
        os.mkfifo(path)  # opening it for reading blocks until a writer comes
    elif kind_of_file == "device":
        path.symlink_to("/dev/zero")  # reading it never ends
    else:
        path.mkdir()
    before = kernel_cache.stats["corrupt"]
    assert _load_in_thread("cpu", key) == (True, None)
    assert kernel_cache.stats["corrupt"] == before + 1


def test_valid_entry_under_another_key_reads_as_missing(cache_dir):
    first, second = "78" * 32, "9a" * 32
    kernel_cache.store("cpu", first, b"code of the first kernel")
    kernel_cache.store("cpu", second, b"code of the second kernel")
    paths = {p.stem: p for p in cache_dir.rglob("*.bin")}
    paths[second].write_bytes(paths[first].read_bytes())  # checksum valid, key wrong
    assert kernel_cache.load("cpu", first) == b"code of the first kernel"
    assert kernel_cache.load("cpu", second) is None


def _swap_every_entry(cache_dir) -> int:
    """Give every entry the bytes of the next one (the thread pool's included)."""
    paths = sorted(cache_dir.rglob("*.bin"))
    contents = [p.read_bytes() for p in paths]
    for path, data in zip(paths, contents[1:] + contents[:1]):
        path.write_bytes(data)
    return len(paths)


def test_swapped_entries_are_recompiled_and_import_still_works(cache_dir):
    _run_process(cache_dir)
    assert _swap_every_entry(cache_dir) >= 2
    again = _run_process(cache_dir)  # imports kael, whose thread pool has a swapped entry
    assert again["corrupt"] >= 2 and again["compiled"] >= 2
    assert _run_process(cache_dir)["compiled"] == 0


def test_fifos_in_place_of_entries_neither_hang_nor_break_a_process(cache_dir):
    _run_process(cache_dir)
    for path in cache_dir.rglob("*.bin"):
        path.unlink()
        os.mkfifo(path)
    again = _run_process(cache_dir)
    assert again["corrupt"] >= 2 and again["compiled"] >= 2
    assert _run_process(cache_dir)["compiled"] == 0
