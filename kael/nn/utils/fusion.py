"""Folding an eval-mode batch norm into the convolution or linear layer before it, as
torch.nn.utils.fuse_conv_bn_eval and fuse_linear_bn_eval do: one layer, the same outputs."""

from __future__ import annotations

import copy

from kael.frontend import factories
from kael.nn.parameter import Parameter
from kael.runtime.errors import Error, ValueError


def _batch_norm_terms(bn_rm, bn_rv, bn_eps: float, bn_w, bn_b):
    """(scale, shift) of y = x * scale + shift, the eval-mode batch norm."""
    bn_w = factories.ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = factories.zeros_like(bn_rm) if bn_b is None else bn_b
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    return scale, bn_b - bn_rm * scale


def _fused(weight, bias, bn_rm, scale, shift, weight_shape):
    bias = factories.zeros_like(bn_rm) if bias is None else bias
    fused_w = (weight * scale.reshape(weight_shape)).to(weight.dtype)
    fused_b = (bias * scale + shift).to(bias.dtype)
    grads = (getattr(weight, "requires_grad", False), getattr(bias, "requires_grad", False))
    return Parameter(fused_w, grads[0]), Parameter(fused_b, grads[1])


def fuse_conv_bn_weights(
    conv_w, conv_b, bn_rm, bn_rv, bn_eps: float, bn_w, bn_b, transpose: bool = False
) -> tuple[Parameter, Parameter]:
    """The convolution's weight and bias with the batch norm folded in (per output channel:
    dim 0 of the weight, dim 1 when transposed)."""
    scale, shift = _batch_norm_terms(bn_rm, bn_rv, bn_eps, bn_w, bn_b)
    rest = [1] * (conv_w.dim() - 2)
    shape = [1, -1, *rest] if transpose else [-1, 1, *rest]
    return _fused(conv_w, conv_b, bn_rm, scale, shift, shape)


def fuse_linear_bn_weights(
    linear_w, linear_b, bn_rm, bn_rv, bn_eps: float, bn_w, bn_b
) -> tuple[Parameter, Parameter]:
    """The linear layer's weight and bias with the batch norm folded in (per output row)."""
    scale, shift = _batch_norm_terms(bn_rm, bn_rv, bn_eps, bn_w, bn_b)
    if scale.numel() == 1 and linear_w.shape[0] != 1:
        scale, shift = scale.expand(linear_w.shape[0]), shift.expand(linear_w.shape[0])
    return _fused(linear_w, linear_b, bn_rm, scale, shift, [-1, 1])


def _eval_pair(layer, bn) -> None:
    if layer.training or bn.training:
        raise Error("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise Error("Fusion needs a batch norm with running statistics (track_running_stats)")


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A copy of `conv` computing conv then bn (both in eval mode) as one convolution."""
    _eval_pair(conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose,
    )  # fmt: skip
    return fused


def fuse_linear_bn_eval(linear, bn):
    """A copy of `linear` computing linear then bn (both in eval mode) as one linear layer."""
    _eval_pair(linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise ValueError(
            "To fuse, linear.out_features must equal bn.num_features or bn.num_features must be 1"
        )
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias
    )
    return fused
