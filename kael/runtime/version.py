"""kael's version; part of every kernel cache key, so a new release never loads stale code."""

__version__ = "0.1.0"
