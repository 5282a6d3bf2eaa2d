"""kael.version answers torch.version's questions (environment printouts read them)."""

import importlib.metadata

import pytest
import torch

import kael


def test_version_has_torchs_fields():
    public = {name for name in dir(torch.version) if not name.startswith("_")} - {"Optional"}
    assert public <= {*dir(kael.version), "cuda"}
    assert kael.version.__version__ == kael.__version__ == kael.version.git_version
    assert kael.version.debug is False and kael.version.hip is None is kael.version.rocm


def test_version_cuda_is_the_bindings_cuda_version():
    major, minor = importlib.metadata.version("cuda-bindings").split(".")[:2]
    assert kael.version.cuda == f"{major}.{minor}"
    with pytest.raises(AttributeError, match="no attribute 'cudnn'"):
        kael.version.cudnn  # noqa: B018
