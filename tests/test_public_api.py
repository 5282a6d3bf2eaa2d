"""kael's public namespace: the public API only, each name as PyTorch spells it where
PyTorch has it at torch.NAME (torch.nn.functional's conv2d, selu_, ... included)."""

import types

import numpy as np
import torch

import kael


def test_the_namespace_is_the_public_api():
    # Runnable modules (kael.check_gpu, kael.__main__) appear once something imports them.
    public = {
        n
        for n in dir(kael)
        if not n.startswith("_") and not isinstance(getattr(kael, n), types.ModuleType)
    }
    assert public == {
        n for n in kael.__all__ if not isinstance(getattr(kael, n), types.ModuleType)
    } - {"__version__"}
    for internal in ("codegen", "frontend", "ir", "runtime"):
        assert not hasattr(kael, internal)


def test_functional_names_at_torch_level_compute_as_torch():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    k, t = kael.tensor(x), torch.tensor(x)
    calls = [
        lambda L, a: L.conv2d(a, L.tensor(w) if L is kael else torch.tensor(w), None, 1, 1),
        lambda L, a: L.max_pool2d(a, 2),
        lambda L, a: L.avg_pool1d(a[0], 3),
        lambda L, a: L.selu(a),
        lambda L, a: L.celu(a, 0.5),
        lambda L, a: L.threshold(a, 0.1, -1.0),
        lambda L, a: L.hardshrink(a, 0.3),
        lambda L, a: a.hardshrink(),
        lambda L, a: L.pixel_shuffle(a[:, :1].expand(1, 4, 6, 6).contiguous(), 2),
    ]
    for call in calls:
        got, want = call(kael, k), call(torch, t)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    relu_in_place = kael.tensor(x)
    assert relu_in_place.relu_() is relu_in_place and relu_in_place.min().item() >= 0


def test_dtype_is_the_class_of_every_dtype():
    """isinstance(x, torch.dtype) is how programs check a dtype argument."""
    for name in ("float32", "float16", "bfloat16", "int8", "uint8", "bool", "long", "half"):
        assert isinstance(getattr(kael, name), kael.dtype)
    assert not isinstance("float32", kael.dtype)
