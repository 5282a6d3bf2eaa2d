"""Lazy modules: LazyLinear, LazyConv*, LazyConvTranspose*, LazyBatchNorm* and
LazyInstanceNorm*, whose input size (in_features, in_channels, num_features) is read from
their first input. Until then their parameters are UninitializedParameters; the first
forward (or load_state_dict, from the checkpoint's shapes) materializes them, and the first
forward turns the module into its ordinary class (LazyLinear becomes Linear), as in torch.
The first forward also sets the input size after a load_state_dict, where torch's conv and
norm layers keep printing 0. A dtype or device change before the first forward (.to, .cuda,
.double, .half) is kept by the placeholders, which then materialize with it (Module._apply),
as in torch; .bfloat16() works too, where torch refuses it (bfloat16 is not among the
methods its uninitialized tensors allow)."""

from __future__ import annotations

from itertools import chain

from kael.frontend.factories import tensor
from kael.nn.modules import conv, linear, normalization
from kael.nn.parameter import UninitializedBuffer, UninitializedParameter, _Uninitialized
from kael.runtime import sync
from kael.runtime.dtypes import int64
from kael.runtime.errors import Error, ValueError
from kael.runtime.tracestate import untraced


class LazyModuleMixin:
    """What every lazy module shares: the first-forward hook, the uninitialized check and
    materializing from a state dict. Subclasses define initialize_parameters(input)."""

    cls_to_become: type | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters)

    def has_uninitialized_params(self) -> bool:
        """Whether some parameter or buffer still waits for its shape."""
        state = chain(self._parameters.values(), self._buffers.values())
        return any(isinstance(t, _Uninitialized) for t in state)

    def initialize_parameters(self, *args, **kwargs) -> None:
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self)}")

    def _load_local(self, state_dict, prefix: str, assign: bool):
        """Take the checkpoint's shapes for the uninitialized entries first."""
        for name, current in chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if isinstance(current, _Uninitialized) and key in state_dict:
                current.materialize(tuple(state_dict[key].shape))
        return super()._load_local(state_dict, prefix, assign)


# First forwards are rare: one lock serves every lazy module (a forked child gets it free).
_FIRST_FORWARD = sync.lock()


def _infer_parameters(module: LazyModuleMixin, args: tuple) -> None:
    """The first forward's pre-hook: size the parameters from the input, then become the
    ordinary class (the hook removed). Threads calling a new module at once initialize it
    once; under @kael.compile its parameters are made eagerly (a trace's tensors exist only
    once it finishes, and another thread may read the module first), from the input's
    shape alone."""
    with _FIRST_FORWARD:
        if not hasattr(module, "_initialize_hook"):  # another thread's first forward did it
            return
        with untraced():
            module.initialize_parameters(*args)
        if module.has_uninitialized_params():
            raise Error(f"module {type(module).__name__} has not been fully initialized")
        module._initialize_hook.remove()
        del module._initialize_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become


def _placeholder(wanted: bool, device, dtype) -> UninitializedParameter | None:
    return UninitializedParameter(device=device, dtype=dtype) if wanted else None


class LazyLinear(LazyModuleMixin, linear.Linear):
    """Linear with in_features read from the input's last dim."""

    cls_to_become = linear.Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False)
        self.out_features = out_features
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.register_parameter("bias", _placeholder(bias, device, dtype))

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        self.in_features = input.shape[-1]
        if self.has_uninitialized_params():
            self.weight.materialize((self.out_features, self.in_features))
            if self.bias is not None:
                self.bias.materialize((self.out_features,))
            self.reset_parameters()


class _LazyConvMixin(LazyModuleMixin):
    """A convolution whose in_channels is the input's channel dim (dim 0 unbatched)."""

    def __init__(
        self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups=1,
        bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None,
    ) -> None:  # fmt: skip
        settings = {"stride": stride, "padding": padding, "dilation": dilation}
        self._lazy_init(out_channels, kernel_size, groups, bias, padding_mode, device, dtype,
                        settings)  # fmt: skip

    def _lazy_init(self, out_channels, kernel_size, groups, bias, padding_mode, device, dtype,
                   settings) -> None:  # fmt: skip
        super().__init__(0, 0, kernel_size, groups=groups, bias=False,
                         padding_mode=padding_mode, **settings)  # fmt: skip
        self.out_channels = out_channels
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.register_parameter("bias", _placeholder(bias, device, dtype))

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _in_channels(self, input) -> int:
        unbatched = len(self.kernel_size) + 1
        if input.dim() not in (unbatched, unbatched + 1):
            raise ValueError(
                f"Expected {unbatched}D (unbatched) or {unbatched + 1}D (batched) input to"
                f" {type(self).__name__}, but got input of size: {list(input.shape)}"
            )
        return input.shape[0 if input.dim() == unbatched else 1]

    def initialize_parameters(self, input, *args) -> None:
        self.in_channels = self._in_channels(input)
        if not self.has_uninitialized_params():
            return
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        out, grouped = self.out_channels, self.in_channels // self.groups
        if self.transposed:
            shape = (self.in_channels, out // self.groups, *self.kernel_size)
        else:
            shape = (out, grouped, *self.kernel_size)
        self.weight.materialize(shape)
        if self.bias is not None:
            self.bias.materialize((out,))
        self.reset_parameters()


class _LazyNormMixin(LazyModuleMixin):
    """Batch or instance norm whose num_features is the input's feature dim."""

    def __init__(
        self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
        track_running_stats: bool = True, device=None, dtype=None,
    ) -> None:  # fmt: skip
        super().__init__(0, eps, momentum, False, False)
        self.affine, self.track_running_stats = affine, track_running_stats
        made = {"device": device, "dtype": dtype}
        if affine:
            self.weight = UninitializedParameter(**made)
            self.bias = UninitializedParameter(**made)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(**made)
            self.running_var = UninitializedBuffer(**made)
            self.num_batches_tracked = tensor(0, dtype=int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        self.num_features = input.shape[self._feature_dim(input)]
        if not self.has_uninitialized_params():
            return
        for t in (self.weight, self.bias, self.running_mean, self.running_var):
            if isinstance(t, _Uninitialized):
                t.materialize((self.num_features,))
        self.reset_parameters()

    def _feature_dim(self, input) -> int:
        return 1


class _LazyInstanceNormMixin(_LazyNormMixin):
    """Instance norm, whose feature dim is 0 for an unbatched input (torch reads dim 1
    there too, and then refuses the input; kael takes the channels)."""

    def _feature_dim(self, input) -> int:
        return 0 if input.dim() == self.ranks[0] else 1


class _LazyConvTransposeMixin(_LazyConvMixin):
    """A transposed convolution: torch's argument order for it (output_padding third)."""

    def __init__(
        self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
        groups=1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
        dtype=None,
    ) -> None:  # fmt: skip
        settings = {"stride": stride, "padding": padding, "dilation": dilation,
                    "output_padding": output_padding}  # fmt: skip
        self._lazy_init(out_channels, kernel_size, groups, bias, padding_mode, device, dtype,
                        settings)  # fmt: skip


def _lazy(name: str, mixin: type, base: type) -> type:
    """The lazy form of `base` (LazyConv2d of Conv2d ...), which becomes `base`."""
    return type(name, (mixin, base), {"cls_to_become": base, "__module__": __name__})


LazyConv1d = _lazy("LazyConv1d", _LazyConvMixin, conv.Conv1d)
LazyConv2d = _lazy("LazyConv2d", _LazyConvMixin, conv.Conv2d)
LazyConv3d = _lazy("LazyConv3d", _LazyConvMixin, conv.Conv3d)
LazyConvTranspose1d = _lazy("LazyConvTranspose1d", _LazyConvTransposeMixin, conv.ConvTranspose1d)
LazyConvTranspose2d = _lazy("LazyConvTranspose2d", _LazyConvTransposeMixin, conv.ConvTranspose2d)
LazyConvTranspose3d = _lazy("LazyConvTranspose3d", _LazyConvTransposeMixin, conv.ConvTranspose3d)
LazyBatchNorm1d = _lazy("LazyBatchNorm1d", _LazyNormMixin, normalization.BatchNorm1d)
LazyBatchNorm2d = _lazy("LazyBatchNorm2d", _LazyNormMixin, normalization.BatchNorm2d)
LazyBatchNorm3d = _lazy("LazyBatchNorm3d", _LazyNormMixin, normalization.BatchNorm3d)
LazyInstanceNorm1d = _lazy("LazyInstanceNorm1d", _LazyInstanceNormMixin,
                           normalization.InstanceNorm1d)  # fmt: skip
LazyInstanceNorm2d = _lazy("LazyInstanceNorm2d", _LazyInstanceNormMixin,
                           normalization.InstanceNorm2d)  # fmt: skip
LazyInstanceNorm3d = _lazy("LazyInstanceNorm3d", _LazyInstanceNormMixin,
                           normalization.InstanceNorm3d)  # fmt: skip

__all__ = [
    "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d",
    "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
    "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d", "LazyLinear",
    "LazyModuleMixin",
]  # fmt: skip
