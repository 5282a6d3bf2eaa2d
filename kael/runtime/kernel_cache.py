"""The on-disk half of the kernel cache: compiled code by key under KAEL_CACHE_DIR.

Entries are written atomically (a temporary file, then a rename), so a concurrent
process never sees a torn file, and carry a checksum, so a corrupt or truncated entry
reads as missing and is recompiled rather than trusted.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Hashable
from pathlib import Path

from kael.runtime import sync

_MAGIC = b"KAELOBJ1"
_DIGEST = 32

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


def load(kind: str, key: str) -> bytes | None:
    """The payload stored under `key`, or None when missing, truncated or corrupt."""
    try:
        data = _path(kind, key).read_bytes()
    except OSError:
        return None
    head = len(_MAGIC) + _DIGEST
    payload = data[head:]
    if (
        len(data) < head
        or data[: len(_MAGIC)] != _MAGIC
        or hashlib.sha256(payload).digest() != data[len(_MAGIC) : head]
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
                f.write(_MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass


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
