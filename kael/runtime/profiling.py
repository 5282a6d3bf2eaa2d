"""The hook kael.profiler sets: while a profile records, every public op call (the tracing
door) and every kernel launch (runtime/launches.py's recorder) reports here. One global
read per op call when nothing profiles."""

from __future__ import annotations

# The recording kael.profiler.profile, or None. Its `op(name, fn, args, kwargs)` runs one
# public op call and records it.
active = None
