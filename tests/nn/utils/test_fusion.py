"""fuse_conv_bn_eval, fuse_linear_bn_eval and parameters_to_vector against torch's."""

import numpy as np
import pytest
import torch

import kael
from kael.nn.utils import (
    fuse_conv_bn_eval,
    fuse_linear_bn_eval,
    parameters_to_vector,
    vector_to_parameters,
)


def _pair(torch_layer, kael_layer, bn_cls, n):
    theirs_bn = getattr(torch.nn, bn_cls)(n)
    with torch.no_grad():
        theirs_bn.running_mean.uniform_(-1, 1)
        theirs_bn.running_var.uniform_(0.5, 2)
        theirs_bn.weight.uniform_(0.5, 1.5)
        theirs_bn.bias.uniform_(-1, 1)
    ours_bn = getattr(kael.nn, bn_cls)(n)
    ours_bn.load_state_dict(theirs_bn.state_dict())
    kael_layer.load_state_dict(torch_layer.state_dict())
    for m in (torch_layer, theirs_bn, kael_layer, ours_bn):
        m.eval()
    return theirs_bn, ours_bn


@pytest.mark.parametrize("transpose", [False, True])
def test_conv_and_batch_norm_fuse_as_torch(transpose):
    cls = "ConvTranspose2d" if transpose else "Conv2d"
    theirs, ours = getattr(torch.nn, cls)(3, 4, 3), getattr(kael.nn, cls)(3, 4, 3)
    theirs_bn, ours_bn = _pair(theirs, ours, "BatchNorm2d", 4)
    fused = fuse_conv_bn_eval(ours, ours_bn, transpose=transpose)
    x = np.random.default_rng(0).standard_normal((1, 3, 6, 6)).astype(np.float32)
    want = theirs_bn(theirs(torch.tensor(x))).detach().numpy()
    np.testing.assert_allclose(fused(kael.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-5)
    assert isinstance(fused.weight, kael.nn.Parameter) and fused is not ours


def test_linear_and_batch_norm_fuse_as_torch():
    theirs, ours = torch.nn.Linear(5, 3), kael.nn.Linear(5, 3)
    theirs_bn, ours_bn = _pair(theirs, ours, "BatchNorm1d", 3)
    fused = fuse_linear_bn_eval(ours, ours_bn)
    x = np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32)
    want = theirs_bn(theirs(torch.tensor(x))).detach().numpy()
    np.testing.assert_allclose(fused(kael.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-5)


def test_fusion_needs_eval_mode_and_matching_sizes():
    with pytest.raises(kael.Error, match="Fusion only for eval!"):
        fuse_conv_bn_eval(kael.nn.Conv2d(1, 2, 1), kael.nn.BatchNorm2d(2))
    with pytest.raises(kael.ValueError, match="linear.out_features must equal bn.num_features"):
        fuse_linear_bn_eval(kael.nn.Linear(2, 3).eval(), kael.nn.BatchNorm1d(4).eval())


def test_parameters_round_trip_through_one_vector():
    layer = kael.nn.Linear(3, 2)
    vec = parameters_to_vector(layer.parameters())
    want = torch.nn.utils.parameters_to_vector(
        [torch.tensor(p.numpy()) for p in layer.parameters()]
    )
    np.testing.assert_array_equal(vec.numpy(), want.numpy())
    vector_to_parameters(kael.arange(8, dtype=kael.float32), layer.parameters())
    assert layer.weight.reshape(-1).tolist() == [0, 1, 2, 3, 4, 5] and layer.bias.tolist() == [6, 7]
    with pytest.raises(kael.ValueError, match="1-D"):
        vector_to_parameters(kael.ones(2, 4), layer.parameters())


def test_vector_to_parameters_makes_views_of_the_vector_as_torch():
    layer = kael.nn.Linear(2, 1)
    vec = kael.arange(3, dtype=kael.float32)
    vector_to_parameters(vec, layer.parameters())
    vec.add_(10)
    assert layer.weight.tolist() == [[10.0, 11.0]] and layer.bias.tolist() == [12.0]
    with pytest.raises(kael.TypeError, match="vec has dtype int64"):
        vector_to_parameters(kael.arange(3), layer.parameters())
