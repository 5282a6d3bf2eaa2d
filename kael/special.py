"""kael.special: PyTorch's torch.special under its names. The functions that are kael ops
under another name are those ops themselves (expit is kael.sigmoid, gammaln kael.lgamma,
psi kael.digamma, ...); the rest are frontend/special_math.py's formula kernels (the
Bessel functions, the normal distribution's, erfcx, entr, xlog1py, zeta, polygamma,
multigammaln), each through the tracing door as kael.linalg's."""

from kael.frontend import published as _published
from kael.frontend import special_math as _special_math
from kael.frontend.ops import FUNCTIONS as _OPS
from kael.frontend.tracing import op_door as _op_door

# torch.special.NAME: kael.BASE (the same function object).
_ALIASES = {
    "expit": "sigmoid",
    "logit": "logit",
    "erf": "erf",
    "erfc": "erfc",
    "erfinv": "erfinv",
    "exp2": "exp2",
    "expm1": "expm1",
    "log1p": "log1p",
    "gammaln": "lgamma",
    "digamma": "digamma",
    "psi": "digamma",
    "polygamma": "polygamma",
    "i0": "i0",
    "xlogy": "xlogy",
    "round": "round",
    "softmax": "softmax",
    "log_softmax": "log_softmax",
    "logsumexp": "logsumexp",
    "sinc": "sinc",
    "gammainc": "igamma",
    "gammaincc": "igammac",
}
globals().update({name: _OPS[base] for name, base in _ALIASES.items()})
globals().update(
    {name: _op_door(f"special.{name}", fn) for name, fn in _special_math.SPECIAL.items()}
)

__all__ = sorted([*_ALIASES, *_special_math.SPECIAL])
_published.publish(__name__, globals())  # pickle finds each function by this name
