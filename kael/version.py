"""kael.version: torch.version's fields. kael is one build for every machine: `cuda` is the
CUDA version of the cuda-python bindings it drives a GPU through (None where they are not
installed), read when first asked; kael has no ROCm, HIP or XPU build and no debug build."""

from __future__ import annotations

import functools
import importlib.metadata

from kael.runtime.version import __version__

# cuda comes from __getattr__: reading the installed version takes ~20 ms, not paid at import
__all__ = ["__version__", "cuda", "debug", "git_version", "hip", "rocm", "xpu"]  # noqa: F822

git_version = __version__  # kael is built from its release, not from a git checkout
debug = False
hip = rocm = xpu = None


@functools.cache
def _cuda() -> str | None:
    try:
        return importlib.metadata.version("cuda-python")
    except importlib.metadata.PackageNotFoundError:
        return None


def __getattr__(name: str):
    if name == "cuda":
        return _cuda()
    raise AttributeError(f"module 'kael.version' has no attribute '{name}'")
