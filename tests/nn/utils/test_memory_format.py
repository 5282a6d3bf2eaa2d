"""nn.utils.convert_conv2d/3d_weight_memory_format against torch's: which weights move,
their strides, and the convolutions' results after."""

import numpy as np
import pytest
import torch

import kael


def _models(dims: int):
    """The same small model in both libraries, kael's loaded with torch's weights."""

    def build(lib):
        conv = getattr(lib.nn, f"Conv{dims}d")
        transposed = getattr(lib.nn, f"ConvTranspose{dims}d")
        other = getattr(lib.nn, f"Conv{5 - dims}d")  # the other rank: left alone
        return lib.nn.Sequential(
            conv(3, 4, 3), lib.nn.ReLU(), lib.nn.Sequential(transposed(4, 2, 3)), other(2, 2, 1)
        )

    torch.manual_seed(0)
    t = build(torch)
    k = build(kael)
    k.load_state_dict({name: kael.tensor(v.numpy()) for name, v in t.state_dict().items()})
    return k, t


@pytest.mark.parametrize("dims", [2, 3])
def test_convert_conv_weight_memory_format_moves_the_weights_torch_moves(dims):
    k, t = _models(dims)
    fmt = "channels_last" if dims == 2 else "channels_last_3d"
    name = f"convert_conv{dims}d_weight_memory_format"
    assert getattr(kael.nn.utils, name)(k, getattr(kael, fmt)) is k
    getattr(torch.nn.utils, name)(t, getattr(torch, fmt))
    for (kn, kp), (tn, tp) in zip(k.named_parameters(), t.named_parameters(), strict=True):
        assert kn == tn and kp.stride() == tp.stride(), (kn, kp.stride(), tp.stride())
        assert isinstance(kp, kael.nn.Parameter)
    x = np.random.default_rng(1).standard_normal((2, 3) + (6,) * dims).astype(np.float32)
    got, want = k[:3](kael.tensor(x)), t[:3](torch.from_numpy(x))
    assert got.stride() == want.stride()
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-5)
