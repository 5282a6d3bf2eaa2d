"""Normalization modules: batch norm (running statistics, updated in place in training),
instance, layer, group and RMS norm, with PyTorch's parameters, buffers and checks."""

from __future__ import annotations

import numbers

from kael.frontend.factories import empty, ones, tensor, zeros
from kael.nn import functional as F
from kael.nn import init
from kael.nn.modules.module import Module
from kael.nn.parameter import Parameter
from kael.runtime import user_warning
from kael.runtime.dtypes import int64
from kael.runtime.errors import ValueError


def _made(wanted: bool, factory, shape, made: dict) -> Parameter | None:
    """A parameter from factory(shape, device=, dtype=) where the layer has one, else None."""
    return Parameter(factory(shape, **made)) if wanted else None


class _NormBase(Module):
    """Batch and instance norm's state: an affine weight and bias per feature, and the
    running mean, variance and batch count when tracking running statistics."""

    _version = 2  # torch's: version 2 state dicts carry num_batches_tracked

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        made = {"device": device, "dtype": dtype}
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.register_parameter("weight", _made(affine, empty, num_features, made))
        self.register_parameter("bias", _made(affine and bias, empty, num_features, made))
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, **made))
            self.register_buffer("running_var", ones(num_features, **made))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=int64, device=device))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _legacy_entry(self, state_dict, prefix: str, name: str):
        """num_batches_tracked, which checkpoints before its version 2 lack: 0, as PyTorch
        fills it in when the state dict carries no newer version for this module."""
        version = getattr(state_dict, "_metadata", {}).get(prefix[:-1], {}).get("version")
        if name == "num_batches_tracked" and (version is None or version < 2):
            return tensor(0, dtype=int64)
        return None

    def _check_input_dim(self, input) -> None:
        ranks = self.ranks
        if input.dim() not in ranks:
            wanted = " or ".join(f"{r}D" for r in ranks)
            raise ValueError(f"expected {wanted} input (got {input.dim()}D input)")

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


class _BatchNorm(_NormBase):
    ranks: tuple[int, ...]

    def forward(self, input):
        """Batch statistics in training (running ones updated with `momentum`, or their
        cumulative average when momentum is None), the running statistics in eval."""
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # 1 / batches as a 0-d float64 tensor: no host read,
                factor = 1.0 / self.num_batches_tracked.double()  # so it compiles too
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if keep else None,
            self.running_var if keep else None,
            self.weight,
            self.bias,
            use_batch,
            factor,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    ranks = (4,)


class BatchNorm3d(_BatchNorm):
    ranks = (5,)


class SyncBatchNorm(_BatchNorm):
    """torch's batch norm synchronized across processes: kael runs in one process, so it is
    the batch norm of any input of 2 or more dims (what torch computes without a process
    group); convert_sync_batchnorm swaps a model's batch norms for it."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 device=None, dtype=None) -> None:  # fmt: skip
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """`module` with every BatchNorm*d in it (itself included) replaced by a
        SyncBatchNorm holding the same parameters, buffers and mode."""
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            sync = cls(module.num_features, module.eps, module.momentum, module.affine,
                       module.track_running_stats, process_group)  # fmt: skip
            for name in ("weight", "bias"):
                if module.affine:
                    setattr(sync, name, getattr(module, name))
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                sync.register_buffer(name, getattr(module, name))
            sync.train(module.training)
            return sync
        for name, child in module.named_children():
            module.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return module


class _InstanceNorm(_NormBase):
    ranks: tuple[int, ...]  # (unbatched, batched)

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )

    def forward(self, input):
        self._check_input_dim(input)
        feature_dim = input.dim() - self.ranks[0]
        if input.shape[feature_dim] != self.num_features:
            message = f"input's size at dim={feature_dim}"
            if self.affine:
                raise ValueError(
                    f"expected {message} to match num_features ({self.num_features}), but "
                    f"got: {input.shape[feature_dim]}."
                )
            user_warning.warn(
                f"{message} does not match num_features. You can silence this warning by "
                "not passing in num_features, which is not used because affine=False"
            )
        unbatched = input.dim() == self.ranks[0]
        x = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            self.momentum if self.momentum is not None else 0.0,
            self.eps,
        )
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    ranks = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    ranks = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    ranks = (4, 5)


def _shape_of(normalized_shape) -> tuple[int, ...]:
    if isinstance(normalized_shape, numbers.Integral):
        return (int(normalized_shape),)
    return tuple(normalized_shape)


class LayerNorm(Module):
    """Normalise over the last dims (normalized_shape), then scale and shift elementwise."""

    def __init__(
        self,
        normalized_shape,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.normalized_shape = _shape_of(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        made = {"device": device, "dtype": dtype}
        shape = self.normalized_shape
        self.register_parameter("weight", _made(elementwise_affine, ones, shape, made))
        self.register_parameter("bias", _made(elementwise_affine and bias, zeros, shape, made))

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


class GroupNorm(Module):
    """Normalise each of num_groups channel groups, then scale and shift per channel."""

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if not num_groups > 0:  # torch divides by it first (a ZeroDivisionError)
            raise ValueError(f"num_groups must be positive, got num_groups={num_groups}")
        if num_channels % num_groups != 0:
            raise ValueError(
                f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})"
            )
        self.num_groups, self.num_channels, self.eps, self.affine = (
            num_groups, num_channels, eps, affine
        )  # fmt: skip
        made = {"device": device, "dtype": dtype}
        self.register_parameter("weight", _made(affine, ones, num_channels, made))
        self.register_parameter("bias", _made(affine and bias, zeros, num_channels, made))

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) over the last dims, times a weight (eps None: the
    computation dtype's machine epsilon)."""

    def __init__(
        self,
        normalized_shape,
        eps: float | None = None,
        elementwise_affine: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.normalized_shape = _shape_of(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        made = {"device": device, "dtype": dtype}
        self.register_parameter(
            "weight", _made(elementwise_affine, ones, self.normalized_shape, made)
        )

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )
