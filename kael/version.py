"""kael.version: torch.version's fields. kael is one build for every machine: `cuda` is the
CUDA version ("13.4") of the cuda-bindings it drives a GPU through (None where they are not
installed), read when first asked, whether a GPU is present or not (as a CUDA build of
torch answers); kael has no ROCm, HIP or XPU build and no debug build."""

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
    for package in ("cuda-bindings", "cuda-python"):  # the bindings, or their meta-package
        try:
            return ".".join(importlib.metadata.version(package).split(".")[:2])
        except importlib.metadata.PackageNotFoundError:
            pass
    return None


def __getattr__(name: str):
    if name == "cuda":
        return _cuda()
    raise AttributeError(f"module 'kael.version' has no attribute '{name}'")
