"""The on-disk half of the kernel cache: compiled code by key under KAEL_CACHE_DIR.

Entries are written atomically (a temporary file, then a rename), so a concurrent
process never sees a torn file, and carry a checksum of their key and payload, so a
corrupt or truncated entry, or a valid entry moved to another key's path, reads as
missing and is recompiled rather than trusted. Only regular files are read, opened
without blocking: a FIFO, a device or a directory in an entry's place is not an entry.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Callable, Hashable
from pathlib import Path

from kael.runtime import sync

_MAGIC = b"KAELOBJ2"
_DIGEST = 32
MAX_ENTRY_BYTES = 1 << 28  # far above any kernel's object code; larger is not an entry

# Counters for tests, the tour and KAEL_DEBUG: how each kernel was obtained.
stats = {"compiled": 0, "disk_hits": 0, "memory_hits": 0, "corrupt": 0}


def cache_dir() -> Path:
    """KAEL_CACHE_DIR, or ~/.cache/kael."""
    root = os.environ.get("KAEL_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "kael"


def key_of(*parts: str) -> str:
    """A stable hex key of text parts (kernel text, target, versions)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()


def source_fingerprint(*packages) -> str:
    """A hash of every source file of the given packages: editing any part of a code
    generator (an emitter, the math library, the printer) invalidates its cached kernels."""
    h = hashlib.sha256()
    for package in packages:
        root = Path(package.__file__).parent
        for path in sorted(root.rglob("*.py")):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _path(kind: str, key: str) -> Path:
    return cache_dir() / kind / key[:2] / f"{key}.bin"


def _digest(key: str, payload: bytes) -> bytes:
    return hashlib.sha256(key.encode() + b"\0" + payload).digest()


def _read_regular_file(path: Path) -> bytes | None:
    """The bytes of a regular file at `path`; None if absent, unreadable or anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY_BYTES:
            stats["corrupt"] += 1
            return None
        chunks, left = [], info.st_size
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def load(kind: str, key: str) -> bytes | None:
    """The payload stored under `key`, or None when missing, truncated, corrupt or another
    key's entry."""
    data = _read_regular_file(_path(kind, key))
    if data is None:
        return None
    head = len(_MAGIC) + _DIGEST
    payload = data[head:]
    if (
        len(data) < head
        or data[: len(_MAGIC)] != _MAGIC
        or _digest(key, payload) != data[len(_MAGIC) : head]
    ):
        stats["corrupt"] += 1
        return None
    return payload


def store(kind: str, key: str, payload: bytes) -> None:
    """Write `payload` under `key` atomically; a read-only or full disk only loses the entry."""
    path = _path(kind, key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC + _digest(key, payload) + payload)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass


def writable(kind: str) -> bool:
    """Whether entries of `kind` can be stored (the directory made, and writable)."""
    folder = cache_dir() / kind
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK)


def exists(kind: str, key: str) -> bool:
    """Whether an entry is stored under `key` (not checked: `load` checks it)."""
    return _path(kind, key).is_file()


def fetch(kind: str, key: str, build: Callable[[], bytes]) -> tuple[bytes, str]:
    """The payload under `key` from disk, or built now and stored; with how it was had."""
    payload = load(kind, key)
    if payload is not None:
        stats["disk_hits"] += 1
        return payload, "disk cache"
    payload = build()
    store(kind, key, payload)
    stats["compiled"] += 1
    return payload, "compiled"


class Memo:
    """The in-memory half: `get(key, make)` calls make at most once per key, thread-safely."""

    def __init__(self) -> None:
        self._entries: dict = {}
        self._lock = sync.lock()

    def has(self, key: Hashable) -> bool:
        return key in self._entries

    def get(self, key: Hashable, make: Callable[[], object]):
        value = self._entries.get(key)
        if value is not None:
            stats["memory_hits"] += 1
            return value
        with self._lock:
            value = self._entries.get(key)
            if value is None:
                value = self._entries[key] = make()
        return value
