"""Activation modules: each a row over its kael.nn.functional form, plus PReLU (a weight)."""

from __future__ import annotations

from kael.frontend.factories import full
from kael.nn import functional as F
from kael.nn.modules.declared import REQUIRED, declare
from kael.nn.modules.module import Module
from kael.nn.parameter import Parameter
from kael.runtime import user_warning

INPLACE = (("inplace", False),)


def _with_inplace(shown: str = ""):
    """PyTorch's extra_repr of an activation with `inplace`: shown, then inplace=True if so."""

    def extra_repr(module) -> str:
        text = shown.format(**vars(module))
        if module.inplace:
            text += ", inplace=True" if text else "inplace=True"
        return text

    return extra_repr


ReLU = declare("ReLU", F.relu, INPLACE, _with_inplace())
SELU = declare("SELU", F.selu, INPLACE, _with_inplace())
SiLU = declare("SiLU", F.silu, INPLACE, _with_inplace())
Mish = declare("Mish", F.mish, INPLACE, _with_inplace())
Hardsigmoid = declare("Hardsigmoid", F.hardsigmoid, INPLACE)
Hardswish = declare("Hardswish", F.hardswish, INPLACE)
ELU = declare("ELU", F.elu, (("alpha", 1.0), *INPLACE), _with_inplace("alpha={alpha}"))
CELU = declare("CELU", F.celu, (("alpha", 1.0), *INPLACE), _with_inplace("alpha={alpha}"))
LeakyReLU = declare(
    "LeakyReLU",
    F.leaky_relu,
    (("negative_slope", 0.01), *INPLACE),
    _with_inplace("negative_slope={negative_slope}"),
)
Hardtanh = declare(
    "Hardtanh",
    F.hardtanh,
    (("min_val", -1.0), ("max_val", 1.0), *INPLACE),
    _with_inplace("min_val={min_val}, max_val={max_val}"),
)
ReLU6 = declare("ReLU6", F.relu6, INPLACE, _with_inplace())
RReLU = declare(
    "RReLU",
    F.rrelu,
    (("lower", 1.0 / 8), ("upper", 1.0 / 3), *INPLACE),
    _with_inplace("lower={lower}, upper={upper}"),
    training="training",
)
Threshold = declare(
    "Threshold",
    F.threshold,
    (("threshold", REQUIRED), ("value", REQUIRED), *INPLACE),
    _with_inplace("threshold={threshold}, value={value}"),
)
GELU = declare("GELU", F.gelu, (("approximate", "none"),), "approximate={approximate!r}")
Softplus = declare(
    "Softplus",
    F.softplus,
    (("beta", 1.0), ("threshold", 20.0)),
    "beta={beta}, threshold={threshold}",
)
Softshrink = declare("Softshrink", F.softshrink, (("lambd", 0.5),), "{lambd}")
Hardshrink = declare("Hardshrink", F.hardshrink, (("lambd", 0.5),), "{lambd}")
GLU = declare("GLU", F.glu, (("dim", -1),), "dim={dim}")


def _implicit_dim(fn):
    """fn(input, dim) where dim None means PyTorch's legacy choice (0 for a 0-, 1- or 3-d
    input, else 1), with its deprecation warning."""

    def along(input, *, dim):
        if dim is None:
            user_warning.warn(
                f"Implicit dimension choice for {fn.__name__} has been deprecated. Change the "
                "call to include dim=X as an argument."
            )
            dim = 0 if input.dim() in (0, 1, 3) else 1
        return fn(input, dim)

    return along


Softmax = declare("Softmax", _implicit_dim(F.softmax), (("dim", None),), "dim={dim}")
Softmin = declare("Softmin", _implicit_dim(F.softmin), (("dim", None),), "dim={dim}")
LogSoftmax = declare("LogSoftmax", _implicit_dim(F.log_softmax), (("dim", None),), "dim={dim}")
Softsign = declare("Softsign", F.softsign)
Tanhshrink = declare("Tanhshrink", F.tanhshrink)
LogSigmoid = declare("LogSigmoid", F.logsigmoid)
Sigmoid = declare("Sigmoid", F.sigmoid)
Tanh = declare("Tanh", F.tanh)


def _softmax_2d(input):
    return F.softmax(input, -3)


Softmax2d = declare(
    "Softmax2d", _softmax_2d, doc="softmax over the channels of (C, H, W) or (N, C, H, W)."
)


class PReLU(Module):
    """max(0, x) + weight * min(0, x) with a learned slope per channel (or one for all)."""

    def __init__(
        self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None
    ) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(full((num_parameters,), init, device=device, dtype=dtype))

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"
